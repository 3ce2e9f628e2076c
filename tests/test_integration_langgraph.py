"""memlane.integrations.langgraph: `MemlaneStore` behaves as LangGraph's own InMemoryStore where
their semantics agree, keeps users apart, and runs LangGraph's prebuilt agent and LangMem's
memory tools (against an OpenAI-compatible stub on 127.0.0.1) — issue 33."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base", reason="LangGraph is not installed: pip install 'memlane[langgraph]'")

from langgraph.store.base import BaseStore, GetOp, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from memlane import Memory  # noqa: E402
from memlane.errors import MissingExtra, ValidationError  # noqa: E402
from memlane.integrations.langgraph import MemlaneStore  # noqa: E402

from .conftest import make_config  # noqa: E402
from .stubs import openai_stub  # noqa: E402

EXAMPLE = Path(__file__).parents[1] / "examples" / "langgraph_memory.py"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(make_config(tmp_path)) as m:
        yield m


def seed(store: BaseStore) -> None:
    """The same writes, whichever store: two users, nested namespaces, an update, a delete."""
    store.put(("memories", "lin"), "food", {"content": "Lin is allergic to peanuts", "kind": "health", "n": 3})
    store.put(("memories", "lin"), "ui", {"content": "Lin prefers dark mode", "kind": "prefs", "n": 1})
    store.put(("memories", "lin"), "run", {"content": "Lin runs on Tuesdays", "kind": "habit", "n": 5,
                                           "meta": {"place": "park", "tags": ["outdoor", "morning"]}})
    store.put(("memories", "lin", "work"), "lang", {"content": "Lin writes Rust at work", "kind": "prefs", "n": 2})
    store.put(("memories", "bob"), "food", {"content": "Bob loves peanut butter", "kind": "health", "n": 4})
    store.put(("memories", "lin"), "ui", {"content": "Lin prefers light mode now", "kind": "prefs", "n": 1})
    store.put(("memories", "lin"), "tmp", {"content": "scratch"})
    store.delete(("memories", "lin"), "tmp")


def view(items: list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(i.namespace, i.key, i.value) for i in items]


def test_same_results_as_langgraphs_in_memory_store(memory: Memory) -> None:
    ours, theirs = MemlaneStore(memory), InMemoryStore()
    seed(ours)
    seed(theirs)
    for ns, key in [(("memories", "lin"), "food"), (("memories", "lin"), "ui"), (("memories", "lin"), "tmp"),
                    (("memories", "lin", "work"), "lang"), (("memories", "bob"), "food"), (("memories", "bob"), "ui")]:
        a, b = ours.get(ns, key), theirs.get(ns, key)
        assert (a is None) == (b is None), (ns, key)
        if a is not None and b is not None:
            assert (a.namespace, a.key, a.value) == (b.namespace, b.key, b.value)
            assert a.created_at <= a.updated_at
    # listings (search without a query): the same items under each prefix, filtered alike
    for prefix, flt in [(("memories", "lin"), None), (("memories", "lin"), {"kind": "prefs"}),
                        (("memories", "lin"), {"n": {"$gte": 2}}), (("memories", "lin"), {"n": {"$ne": 5, "$lt": 4}}),
                        (("memories", "lin"), {"meta": {"place": "park"}}),
                        (("memories", "lin"), {"meta": {"tags": ["outdoor", "morning"]}}),
                        (("memories", "lin"), {"missing": 1}), (("memories", "lin", "work"), None),
                        (("memories", "bob"), {"kind": "health"})]:
        mine, ref = ours.search(prefix, filter=flt, limit=50), theirs.search(prefix, filter=flt, limit=50)
        assert sorted(view(mine)) == sorted(view(ref)), (prefix, flt)
        assert all(i.score is None for i in mine)
    # within one namespace both list in the order the keys were first put; pages agree
    one = [i for i in theirs.search(("memories", "lin"), limit=50) if i.namespace == ("memories", "lin")]
    assert view(ours.search(("memories", "lin"), filter={"n": {"$ne": 2}}, limit=50)) == \
        view(theirs.search(("memories", "lin"), filter={"n": {"$ne": 2}}, limit=50)) == view(one)
    assert view(ours.search(("memories", "lin"), filter={"n": {"$ne": 2}}, limit=1, offset=1)) == view(one[1:2])
    # namespaces: the same listing, prefix / suffix / wildcards / depth / pages
    for kw in [{"prefix": ("memories", "lin")}, {"prefix": ("memories", "lin"), "max_depth": 2},
               {"prefix": ("memories", "lin"), "suffix": ("work",)}, {"prefix": ("*", "lin")},
               {"prefix": ("memories", "bob")}, {"prefix": ("memories", "lin"), "limit": 1, "offset": 1}]:
        assert ours.list_namespaces(**kw) == theirs.list_namespaces(**kw), kw


def test_batch_runs_gets_puts_and_deletes_in_order(memory: Memory) -> None:
    store = MemlaneStore(memory)
    ns = ("memories", "lin")
    got = store.batch([PutOp(ns, "a", {"content": "one"}), GetOp(ns, "a"), PutOp(ns, "a", {"content": "two"}),
                       GetOp(ns, "a"), PutOp(ns, "a", None), GetOp(ns, "a")])
    assert [None if r is None else r.value for r in got] == [None, {"content": "one"}, None, {"content": "two"},  # type: ignore[union-attr]
                                                             None, None]
    assert memory.list(user_id="lin") == []


def test_query_search_is_memlanes_hybrid_search_with_its_scores(memory: Memory) -> None:
    store = MemlaneStore(memory)
    seed(store)
    hits = store.search(("memories", "lin"), query="peanut allergy")
    assert hits[0].key == "food" and hits[0].namespace == ("memories", "lin")
    assert all(0 < (h.score or 0) <= 1 for h in hits) and [h.score for h in hits] == sorted(
        (h.score for h in hits), reverse=True)
    # the score is memlane's own for that memory
    mem = next(m for m in memory.list(user_id="lin") if "peanuts" in m.content)
    assert hits[0].score == pytest.approx(memory.search("peanut allergy", user_id="lin")[0].score)
    # the indexed text of the whole value: `field: text` lines (a lone field: its own words)
    assert mem.content == "content: Lin is allergic to peanuts\nkind: health\nn: 3"
    # a prefix and a filter narrow a query search too; bob's peanut butter is never lin's
    assert [h.key for h in store.search(("memories", "lin", "work"), query="Rust")] == ["lang"]
    assert store.search(("memories", "lin"), query="peanut", filter={"kind": "prefs"}) == []
    assert all(h.namespace[1] == "lin" for h in store.search(("memories", "lin"), query="peanut butter"))


def test_index_fields_and_index_false(memory: Memory) -> None:
    store = MemlaneStore(memory, index={"dims": 8, "embed": "unused", "fields": ["text"]})
    ns = ("docs", "lin")
    store.put(ns, "d1", {"text": "Quarterly tax report", "note": "giraffe"})
    store.put(ns, "d2", {"text": "Holiday photos", "note": "zebra"}, index=["note"])
    store.put(ns, "d3", {"text": "Passport scan"}, index=False)
    store.put(ns, "d4", {"title": "no text field"})
    assert [h.key for h in store.search(ns, query="tax report")] == ["d1"]
    assert "d1" not in {h.key for h in store.search(ns, query="giraffe")}  # not an indexed field
    assert [h.key for h in store.search(ns, query="zebra")] == ["d2"]  # the put's own index
    assert "d3" not in {h.key for h in store.search(ns, query="passport scan")}  # index=False: never found by a query
    assert store.get(ns, "d3").value == {"text": "Passport scan"}  # type: ignore[union-attr]
    assert {i.key for i in store.search(ns, limit=10)} == {"d1", "d2", "d3", "d4"}
    # what memlane holds: the indexed text as the memory's content; unindexed ones archived
    by_status = {m.content: m.status for m in memory.list(user_id="lin")}
    assert by_status["Quarterly tax report"] == "active" and by_status["zebra"] == "active"
    assert sorted(s for s in by_status.values()) == ["active", "active", "archived", "archived"]
    # an update that makes an item searchable again brings it back
    store.put(ns, "d3", {"text": "Passport scan, renewed"})
    assert [h.key for h in store.search(ns, query="passport renewed")][0] == "d3"


def test_a_user_never_reads_another_users_namespace(memory: Memory) -> None:
    store = MemlaneStore(memory)
    seed(store)
    assert store.get(("memories", "bob"), "run") is None
    assert {i.namespace for i in store.search(("memories", "bob"), limit=50)} == {("memories", "bob")}
    assert [h.key for h in store.search(("memories", "bob"), query="dark mode Tuesdays Rust allergic")] == []
    # a namespace that names no user is refused, never widened to every user
    with pytest.raises(ValidationError, match="names no user"):
        store.search(("memories",), query="peanut")
    with pytest.raises(ValidationError, match="namespace_prefix"):
        store.search((), limit=50)
    with pytest.raises(ValidationError, match="names no user"):
        store.put(("memories",), "k", {"content": "x"})
    with pytest.raises(ValidationError, match="prefix"):
        store.list_namespaces(prefix=("memories",))
    with pytest.raises(ValidationError, match="prefix"):
        store.list_namespaces(suffix=("lin",))
    # the users are memlane's scopes: memlane's own reads agree
    assert [m.content.splitlines()[0] for m in memory.list(user_id="bob")] == ["content: Bob loves peanut butter"]
    # user_at=0 reads (user, ...) namespaces; a store bound to one user maps every namespace to it
    first = MemlaneStore(memory, user_at=0)
    first.put(("ann", "notes"), "k", {"content": "Ann's note"})
    assert [m.content for m in memory.list(user_id="ann")] == ["Ann's note"]
    bound = MemlaneStore(memory, user_id="cy", agent_id="planner")
    bound.put(("prefs",), "k", {"content": "Cy likes trains"})
    assert bound.list_namespaces() == [("prefs",)]
    assert [m.content for m in memory.list(user_id="cy", agent_id="planner")] == ["Cy likes trains"]
    assert memory.list(user_id="cy") == [] and bound.search(("prefs",), query="trains")[0].key == "k"


def test_async_forms(memory: Memory) -> None:
    store = MemlaneStore(memory)
    ns = ("memories", "lin")

    async def run() -> None:
        await store.aput(ns, "a", {"content": "Lin drinks oolong tea"})
        await store.aput(ns, "b", {"content": "Lin visits Kyoto in April"})
        assert (await store.aget(ns, "a")).value == {"content": "Lin drinks oolong tea"}  # type: ignore[union-attr]
        assert [i.key for i in await store.asearch(ns, query="oolong tea")] == ["a"]
        assert await store.alist_namespaces(prefix=ns) == [ns]
        await store.adelete(ns, "a")
        assert await store.aget(ns, "a") is None
        results = await store.abatch([GetOp(ns, "b"), GetOp(ns, "a")])
        assert results[0].key == "b" and results[1] is None  # type: ignore[union-attr]

    asyncio.run(run())


def test_items_outlive_the_process(tmp_path: Path) -> None:
    with Memory(make_config(tmp_path)) as m:
        MemlaneStore(m).put(("memories", "lin"), "k", {"content": "Lin's cat is called Miso", "n": [1, {"x": None}]})
        first = MemlaneStore(m).get(("memories", "lin"), "k")
    with Memory(make_config(tmp_path)) as m:
        again = MemlaneStore(m).get(("memories", "lin"), "k")
    assert again == first and again is not None and again.value == {"content": "Lin's cat is called Miso",
                                                                       "n": [1, {"x": None}]}


def test_import_without_langgraph_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)  # as if LangGraph were not installed
    monkeypatch.delitem(sys.modules, "memlane.integrations.langgraph")
    with pytest.raises(MissingExtra, match=r"pip install 'memlane\[langgraph\]'") as err:
        importlib.import_module("memlane.integrations.langgraph")
    assert isinstance(err.value, ImportError)  # `except ImportError` makes the adapter optional
    monkeypatch.undo()
    importlib.import_module("memlane.integrations.langgraph")


# ---- keys: one memory each, found by id; edits made in memlane; consolidate (issue 33, att33) --


class CountedLists:
    """The real Memory, counting the scope listings the store asks for."""

    def __init__(self, memory: Memory) -> None:
        self._memory, self.config, self.lists = memory, memory.config, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def list(self, **kw: Any) -> Any:
        self.lists += 1
        return self._memory.list(**kw)


def test_get_put_and_delete_find_the_key_without_reading_the_scope(memory: Memory) -> None:
    counted = CountedLists(memory)
    store = MemlaneStore(counted)  # type: ignore[arg-type]
    for i in range(30):
        store.put(("memories", "lin"), f"k{i}", {"content": f"fact number {i}"})
    store.put(("memories", "lin"), "k3", {"content": "fact three, changed"})
    assert store.get(("memories", "lin"), "k3").value == {"content": "fact three, changed"}
    assert store.get(("memories", "lin"), "missing") is None
    store.delete(("memories", "lin"), "k4")
    assert counted.lists == 0  # each a lookup by the key's memory id, whatever the scope holds
    assert len(memory.list(user_id="lin")) == 29


def test_concurrent_puts_of_one_key_from_many_threads_leave_one_memory(memory: Memory) -> None:
    store = MemlaneStore(memory)

    async def race() -> None:
        await asyncio.gather(*[store.aput(("memories", "lin"), "k", {"content": f"version {i}"}) for i in range(8)])

    for _ in range(3):
        asyncio.run(race())
        assert len(memory.list(user_id="lin", status=None)) == 1
        assert store.get(("memories", "lin"), "k").value["content"].startswith("version ")
        store.delete(("memories", "lin"), "k")
        assert store.get(("memories", "lin"), "k") is None and memory.list(user_id="lin", status=None) == []


def test_items_are_never_merged_by_consolidate_and_facts_still_are(memory: Memory) -> None:
    store = MemlaneStore(memory)  # unpinned: dedup leaves items alone anyway
    for i in range(3):
        store.put(("tasks", "lin"), f"t{i}", {"status": "done"})
    memory.add("Lin likes green tea", user_id="lin")
    memory.add("Lin likes green tea.", user_id="lin")
    report = memory.consolidate(user_id="lin")
    assert [store.get(("tasks", "lin"), f"t{i}") is not None for i in range(3)] == [True, True, True]
    assert [a.action for a in report.actions if a.step == "dedup"] == ["MERGE", "DELETE"]  # the two facts


@pytest.mark.parametrize("value,index,edit,expected", [
    ({"content": "Lin is allergic to peanuts"}, None, "Lin is allergic to shellfish",
     {"content": "Lin is allergic to shellfish"}),
    ({"content": "Lin runs", "n": 3}, None, "content: Lin swims\non two lines\nn: 4",
     {"content": "Lin swims\non two lines", "n": 4}),
    ({"doc": {"text": "Lin likes tea"}, "n": 1}, ["doc.text"], "Lin likes coffee",
     {"doc": {"text": "Lin likes coffee"}, "n": 1}),
    ({"count": 3}, None, "4", {"count": 4}),
    ({"a": "Lin likes tea", "b": "Lin likes jazz"}, ["a", "b"], "Lin likes coffee and jazz",
     {"a": "Lin likes tea", "b": "Lin likes jazz"}),  # two fields in one text: cannot be split back
], ids=["one-field", "field-lines", "nested-field", "number", "joined-fields-stay"])
def test_an_edit_made_in_memlane_reaches_the_value(memory: Memory, value: dict[str, Any], index: Any, edit: str,
                                                   expected: dict[str, Any]) -> None:
    store = MemlaneStore(memory)
    store.put(("memories", "lin"), "k", value, index=index)
    [rec] = memory.list(user_id="lin")
    memory.update(rec.id, user_id="lin", content=edit)
    item = store.get(("memories", "lin"), "k")
    assert item is not None and item.value == expected
    assert item.updated_at >= item.created_at
    assert [i.value for i in store.search(("memories", "lin"))] == [expected]
    store.put(("memories", "lin"), "k", {"content": "written again"})  # a put after the edit wins
    assert store.get(("memories", "lin"), "k").value == {"content": "written again"}


def test_a_fact_replaced_in_memlane_is_the_items_value_and_delete_removes_every_version(memory: Memory) -> None:
    store = MemlaneStore(memory)
    store.put(("memories", "lin"), "home", {"content": "Lin lives in Paris"})
    [rec] = memory.list(user_id="lin")
    memory.supersede(rec.id, "Lin lives in Berlin", user_id="lin")
    assert store.get(("memories", "lin"), "home").value == {"content": "Lin lives in Berlin"}
    assert [i.value for i in store.search(("memories", "lin"), query="Berlin", limit=5)] == [
        {"content": "Lin lives in Berlin"}]
    assert [i.value for i in store.search(("memories", "lin"))] == [{"content": "Lin lives in Berlin"}]
    store.put(("memories", "lin"), "home", {"content": "Lin lives in Rome"})
    assert store.get(("memories", "lin"), "home").value == {"content": "Lin lives in Rome"}
    store.delete(("memories", "lin"), "home")  # deleting the current version reopens the old one: not here
    assert store.get(("memories", "lin"), "home") is None
    assert store.search(("memories", "lin")) == []


@pytest.mark.parametrize("value,field", [
    ({"when": __import__("datetime").datetime(2024, 5, 1)}, "value.when"),
    ({"tags": [1, {"raw": b"x"}]}, "value.tags[1].raw"),
    ({"x": float("nan")}, "value.x"),
    ({1: "int key"}, "value"),
])
def test_a_value_that_is_not_json_is_refused_naming_where(memory: Memory, value: dict[Any, Any], field: str) -> None:
    store = MemlaneStore(memory)
    with pytest.raises(ValidationError) as err:
        store.put(("memories", "lin"), "k", value)
    assert err.value.field == field
    assert memory.list(user_id="lin", status=None) == []


def test_values_deeper_than_store_max_value_depth_are_refused(memory: Memory) -> None:
    store = MemlaneStore(memory)

    def nested(depth: int) -> dict[str, Any]:
        root: dict[str, Any] = {}
        cur = root
        for _ in range(depth - 1):
            cur["a"] = {}
            cur = cur["a"]
        return root

    limit = memory.config.store.max_value_depth
    store.put(("memories", "lin"), "ok", nested(limit))
    assert store.get(("memories", "lin"), "ok").value == nested(limit)
    with pytest.raises(ValidationError, match="store.max_value_depth"):
        store.put(("memories", "lin"), "deep", nested(limit + 1))


def test_a_namespace_label_where_the_user_should_be_is_refused_with_the_fix(memory: Memory) -> None:
    """LangGraph's docs also write (user_id, "memories"); with user_at=1 every user would be
    filed under memlane user "memories"."""
    with pytest.raises(ValidationError, match=r"user_at=0"):
        MemlaneStore(memory).put(("lin", "memories"), "k", {"content": "x"})
    with pytest.raises(ValidationError, match=r"user_at=1"):
        MemlaneStore(memory, user_at=0).search(("memories", "lin"), query="x")
    MemlaneStore(memory, user_at=0).put(("lin", "memories"), "k", {"content": "Lin's own"})
    assert memory.list(user_id="memories") == [] and len(memory.list(user_id="lin")) == 1


# ---- LangGraph's prebuilt agent and LangMem's tools, against a stub model -------------------


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def tool_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"id": f"call_{name}", "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}


def agent_model(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """The scripted model: "remember …" → manage_memory, any other question → search_memory,
    a tool's answer → a reply that quotes it."""
    last = body["messages"][-1]
    if last["role"] == "user" and last["content"].lower().startswith("remember"):
        return 200, completion(tool_call("manage_memory", {"content": last["content"][len("remember that "):],
                                                           "action": "create"}))
    if last["role"] == "user":
        return 200, completion(tool_call("search_memory", {"query": last["content"]}))
    found = [m["value"]["content"] for m in json.loads(last["content"])] if last["content"].startswith("[") else []
    return 200, completion({"content": "Noted." if not found and "created" in last["content"]
                            else f"From memory: {'; '.join(found) or 'nothing'}"})


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("langgraph_memory", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.fixture
def stub_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    pytest.importorskip("langmem", reason="LangMem is not installed: pip install 'memlane[langmem]'")
    pytest.importorskip("langchain_openai", reason="langchain-openai is not installed")
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    with openai_stub(agent_model) as (base_url, seen):
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        yield seen


def test_react_agent_with_langmem_tools_remembers_across_threads_and_users(
        stub_env: list[tuple[str, dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example()
    home = str(tmp_path / "home")
    with warnings.catch_warnings():  # create_react_agent's move to langchain.agents is announced, not an error
        warnings.simplefilter("ignore", DeprecationWarning)
        assert example.main(["--user", "lin", "--thread", "t1", "--home", home,
                             "--message", "remember that I am allergic to peanuts"]) == 0
        assert example.main(["--user", "lin", "--thread", "t2", "--home", home,
                             "--message", "what am I allergic to?"]) == 0
        assert example.main(["--user", "bob", "--thread", "t3", "--home", home,
                             "--message", "what am I allergic to?"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["assistant> Noted.", "assistant> From memory: I am allergic to peanuts", "assistant> From memory: nothing"]
    # the new thread began with no messages of the first, yet its prompt held the memory
    lin_t2 = [body for _, body in stub_env if body["messages"][1]["content"] == "what am I allergic to?"][0]
    assert [m["role"] for m in lin_t2["messages"]] == ["system", "user"]
    assert "I am allergic to peanuts" in lin_t2["messages"][0]["content"]
    bob = [body for _, body in stub_env if body["messages"][-1]["content"] == "what am I allergic to?"][-1]
    assert "peanuts" not in bob["messages"][0]["content"]
    # in memlane: one memory in lin's scope, written by the agent through LangMem
    with Memory(make_config(Path(home))) as m:
        [mem] = m.list(user_id="lin")
        assert (mem.content, mem.source) == ("I am allergic to peanuts", "agent")
        assert m.list(user_id="bob") == []


def test_react_agent_with_the_store_in_memory(memory: Memory, stub_env: list[tuple[str, dict[str, Any]]]) -> None:
    """`create_react_agent(model, tools, store=MemlaneStore(...))` as LangGraph documents it,
    and LangMem's tools given the store directly."""
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = MemlaneStore(memory)
    ns = ("memories", "{langgraph_user_id}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(ChatOpenAI(model="stub"), [create_manage_memory_tool(ns), create_search_memory_tool(ns)],
                                   store=store)
    config = {"configurable": {"langgraph_user_id": "lin"}}
    agent.invoke({"messages": [{"role": "user", "content": "remember that my sister is called Mei"}]}, config=config)
    [item] = store.search(("memories", "lin"), limit=10)
    assert item.value == {"content": "my sister is called Mei"}
    reply = agent.invoke({"messages": [{"role": "user", "content": "who is my sister?"}]}, config=config)
    assert reply["messages"][-1].content == "From memory: my sister is called Mei"
    # LangMem's tools outside a graph, the store given to them
    direct = create_search_memory_tool(("memories", "lin"), store=store)
    assert "Mei" in direct.invoke({"query": "sister"})
    manage = create_manage_memory_tool(("memories", "lin"), store=store)
    manage.invoke({"action": "delete", "id": item.key})
    assert store.search(("memories", "lin"), limit=10) == [] and memory.list(user_id="lin") == []
