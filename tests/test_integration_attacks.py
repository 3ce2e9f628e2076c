"""Adversarial review of the four framework adapters (issue 33, att33).

Each test is one attack, as a new user or an adversary would make it: the docs pages'
quickstarts run as written; the frameworks' documented usage with the adapter swapped in;
users kept apart through every path; hostile values; concurrent writers. A test that fails
here marks a defect in the adapter (or its page); a passing one guards behaviour worth
keeping. No key and no network: pydantic-ai's FunctionModel, llama_index's MockLLM, and the
OpenAI-compatible stub in tests/stubs.py on 127.0.0.1 for the Agents SDK and LangChain.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from memlane import Memory
from memlane.errors import ValidationError

from .conftest import make_config
from .stubs import openai_stub

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs" / "integrations"
PYTHON = sys.executable


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(make_config(tmp_path)) as m:
        yield m


def nested(depth: int) -> dict[str, Any]:
    """{"a": {"a": … {}}}, `depth` levels deep (built without recursion)."""
    root: dict[str, Any] = {}
    cur = root
    for _ in range(depth):
        cur["a"] = {}
        cur = cur["a"]
    return root


# ---- the docs pages, run as written (the model an OpenAI-compatible stub) -----------------


def _chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sure."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _response(body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 0, "status": "completed", "model": "stub",
            "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Sure.", "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def _either_api(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    return 200, (_response(body) if path.endswith("/responses") else _chat_completion(body))


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


def run_snippet(code: str, home: Path, base_url: str = "http://127.0.0.1:9/v1") -> subprocess.CompletedProcess[str]:
    """A docs snippet in a fresh interpreter, `~` being `home`, the model at `base_url`."""
    env = {**os.environ, "HOME": str(home), "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "stub",
           "MEMLANE_EMBEDDER": "hash", "PYTHONPATH": str(ROOT / "src"), "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    env.pop("MEMLANE_HOME", None)
    return subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=home)


READ_BACK = "\nfrom memlane import open_memory\nprint('TURNS', len(open_memory('~/.memlane').get_turns({sid!r}, user_id='lin')))\n"


@pytest.mark.parametrize("page,session", [("openai-agents.md", "chat-1"), ("pydantic-ai.md", "chat-1")])
def test_docs_quickstart_runs_as_written_and_keeps_the_conversation(tmp_path: Path, page: str, session: str) -> None:
    with openai_stub(_either_api) as (base_url, seen):
        done = run_snippet(python_blocks(page)[0] + READ_BACK.format(sid=session), tmp_path, base_url)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[:2] == ["Sure.", "Sure."]
    assert "TURNS 4" in done.stdout  # two prompts, two replies, in memlane's data directory under ~
    assert len(seen) == 2


def test_docs_langgraph_quickstart_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("langmem")
    pytest.importorskip("langchain_openai")
    with openai_stub(_either_api) as (base_url, seen):
        done = run_snippet(python_blocks("langgraph.md")[0], tmp_path, base_url)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [p for p, _ in seen] == ["/v1/chat/completions"]


def test_docs_llamaindex_quickstart_runs_with_the_openai_llm_swapped_for_mockllm(tmp_path: Path) -> None:
    # llama-index-llms-openai is not in the extra: a stand-in module whose OpenAI is MockLLM
    prelude = ("import sys, types\nfrom llama_index.core.llms import MockLLM\n"
               "mod = types.ModuleType('llama_index.llms.openai'); mod.OpenAI = lambda **kw: MockLLM()\n"
               "sys.modules['llama_index.llms.openai'] = mod\n")
    done = run_snippet(prelude + python_blocks("llamaindex.md")[0] + READ_BACK.format(sid="chat-42"), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TURNS 2" in done.stdout  # flush handed memlane the whole conversation


# ---- importing without the framework ------------------------------------------------------


@pytest.mark.parametrize("module,blocked,extra", [
    ("langgraph", "langgraph", "langgraph"),
    ("llamaindex", "llama_index", "llamaindex"),
    ("openai_agents", "agents", "openai-agents"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
])
def test_import_without_the_framework_is_an_import_error_naming_the_extra(module: str, blocked: str,
                                                                          extra: str) -> None:
    """`try: import memlane.integrations.X except ImportError:` is how an app makes an adapter
    optional; all four adapters should fail that way (two raise ConfigError, a ValueError)."""
    code = (f"import sys\nsys.modules[{blocked!r}] = None\n"
            f"try:\n    import memlane.integrations.{module}\n"
            f"except ImportError as exc:\n    print('IMPORTERROR', exc)\n"
            f"except Exception as exc:\n    print('OTHER', type(exc).__name__, exc)\n")
    done = subprocess.run([PYTHON, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("IMPORTERROR"), done.stdout + done.stderr[-1000:]
    assert f"pip install 'memlane[{extra}]'" in done.stdout


# ---- LangGraph: MemlaneStore ----------------------------------------------------------------

langgraph_store = pytest.importorskip("langgraph.store.base")


def lg_store(memory: Any, **kw: Any) -> Any:
    from memlane.integrations.langgraph import MemlaneStore
    return MemlaneStore(memory, **kw)


@pytest.mark.parametrize("value", [{"when": dt.datetime(2024, 5, 1, 12, 0)}, {"blob": b"\x00\x01"}, {"tags": {"a", "b"}}],
                         ids=["datetime", "bytes", "set"])
def test_lg_a_value_json_cannot_hold_is_refused_as_memlane_validation_error(memory: Memory, value: dict[str, Any]) -> None:
    """LangGraph's InMemoryStore takes any value; memlane keeps JSON. A value JSON cannot hold
    should be refused with ValidationError naming it (today: a bare TypeError from json)."""
    store = lg_store(memory)
    with pytest.raises(ValidationError):
        store.put(("memories", "lin"), "k", value)
    assert store.get(("memories", "lin"), "k") is None


def test_lg_a_value_1000_levels_deep_is_kept_or_refused_cleanly(memory: Memory) -> None:
    store = lg_store(memory)
    deep = nested(1000)
    try:
        store.put(("memories", "lin"), "deep", deep)
    except ValidationError:
        assert store.get(("memories", "lin"), "deep") is None
    else:  # kept: it must read back
        item = store.get(("memories", "lin"), "deep")
        assert item is not None and item.value == deep


def test_lg_a_ten_megabyte_value_is_refused_with_validation_error(memory: Memory) -> None:
    store = lg_store(memory)
    with pytest.raises(ValidationError):
        store.put(("memories", "lin"), "big", {"content": "x" * 10_000_000})
    assert store.get(("memories", "lin"), "big") is None
    assert memory.list(user_id="lin", status=None) == []


def test_lg_namespaces_that_try_to_escape_are_refused_and_unicode_users_are_apart(memory: Memory) -> None:
    store = lg_store(memory)
    store.put(("memories", "lin"), "k", {"content": "Lin's secret is the blue door"})
    hostile: list[tuple[str, ...]] = [(), ("memories",), ("memories", "*"), ("memories", "../lin"),
                                      ("memories", "u" * 10_000), ("memories", "li\ud800n"), ("memories", " ")]
    for ns in hostile:
        with pytest.raises((ValidationError, langgraph_store.InvalidNamespaceError)):
            store.search(ns, query="secret blue door") if ns else store.search(ns)
        with pytest.raises((ValidationError, langgraph_store.InvalidNamespaceError)):
            store.put(ns, "k", {"content": "x"})
    with pytest.raises(ValidationError):
        store.list_namespaces()  # never every user's namespaces
    with pytest.raises(ValidationError):
        store.list_namespaces(prefix=("memories", "*"))
    # unicode user ids are ordinary users, apart from each other and from lin
    store.put(("memories", "林"), "k", {"content": "林 likes jasmine tea"})
    assert store.get(("memories", "林"), "k").value == {"content": "林 likes jasmine tea"}
    assert {i.namespace for i in store.search(("memories", "林"), query="blue door secret", limit=10)} <= {
        ("memories", "林")}
    assert [i.key for i in store.search(("memories", "lin"), query="jasmine tea", limit=10)
            if i.namespace != ("memories", "lin")] == []
    assert store.list_namespaces(prefix=("memories", "lin")) == [("memories", "lin")]
    assert memory.list(user_id="../lin") == [] and memory.list(user_id="*") == []


class SlowListing:
    """A `MemoryAPI` whose listing takes as long as a user with a few thousand items makes it
    (the page measures 65 ms per get at 1,000): the window in which two writers of one key
    both find no item. Everything else is the real `Memory`."""

    def __init__(self, memory: Memory, delay: float = 0.3) -> None:
        self._memory = memory
        self.config = memory.config
        self.delay = delay

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def list(self, **kw: Any) -> Any:
        found = self._memory.list(**kw)
        time.sleep(self.delay)
        return found


def test_lg_two_concurrent_puts_of_one_key_leave_one_item_and_delete_removes_it(memory: Memory) -> None:
    """Two writers (two `aput`s, two workers, two processes) put the same key at once. LangGraph's
    stores keep one item per key; here each writer finds no item and adds its own memory, and a
    later delete removes one of them — the other copy comes back from `get`."""
    store = lg_store(SlowListing(memory))
    ns = ("memories", "lin")

    async def race() -> None:
        await asyncio.gather(store.aput(ns, "k", {"content": "Lin's locker code is 1234"}),
                             store.aput(ns, "k", {"content": "Lin's locker code is 9876"}))

    asyncio.run(race())
    copies = [r for r in memory.list(user_id="lin", status=None) if r.status != "superseded"]
    assert len(copies) == 1, [r.content for r in copies]
    store.delete(ns, "k")
    assert store.get(ns, "k") is None  # a deleted key must stay deleted


def test_lg_consolidate_never_merges_two_keys_into_one(memory: Memory) -> None:
    """A key-value store's keys are not facts to deduplicate: tasks ("t0", "t1", "t2") that all
    hold {"status": "done"}, kept with `pinned=True` as the page advises, must all survive
    memlane's consolidate. Today its dedup step merges them and two keys read as missing."""
    store = lg_store(memory, pinned=True)
    for i in range(3):
        store.put(("tasks", "lin"), f"t{i}", {"status": "done"})
    store.put(("notes", "lin"), "tea", {"content": "Lin likes green tea"})
    store.put(("memories", "lin"), "tea", {"content": "Lin likes green tea"})
    memory.consolidate(user_id="lin")
    assert [store.get(("tasks", "lin"), f"t{i}") is not None for i in range(3)] == [True, True, True]
    assert store.get(("notes", "lin"), "tea") is not None
    assert store.get(("memories", "lin"), "tea") is not None


def test_lg_a_correction_made_in_memlane_reaches_the_item(memory: Memory) -> None:
    """The page invites people to see the items in `memlane history` and the web UI. A person
    corrects one there (`Memory.update`, as the CLI and web UI do): search now matches the new
    text but hands LangGraph (and the model) the old value from the metadata."""
    store = lg_store(memory)
    store.put(("memories", "lin"), "food", {"content": "Lin is allergic to peanuts"})
    [rec] = memory.list(user_id="lin")
    memory.update(rec.id, user_id="lin", content="Lin is allergic to shellfish")
    found = store.search(("memories", "lin"), query="shellfish allergy")
    assert [i.value for i in found] == [{"content": "Lin is allergic to shellfish"}]
    assert store.get(("memories", "lin"), "food").value == {"content": "Lin is allergic to shellfish"}


def test_lg_graph_nodes_reach_the_store_through_runtime_get_store_and_entrypoint(memory: Memory) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.config import get_store
    from langgraph.func import entrypoint
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    store = lg_store(memory)

    class State(TypedDict):
        user: str
        text: str
        found: list[str]

    def write(state: State, runtime: Runtime) -> dict[str, Any]:
        assert runtime.store is not None
        runtime.store.put(("memories", state["user"]), "fact", {"content": state["text"]})
        return {}

    def read(state: State) -> dict[str, Any]:
        hits = get_store().search(("memories", state["user"]), query="cello")
        return {"found": [i.value["content"] for i in hits]}

    async def awrite(state: State, runtime: Runtime) -> dict[str, Any]:
        assert runtime.store is not None
        await runtime.store.aput(("memories", state["user"]), "fact2", {"content": state["text"] + " on Sundays"})
        return {}

    async def aread(state: State) -> dict[str, Any]:
        hits = await get_store().asearch(("memories", state["user"]), query="cello")
        return {"found": [i.value["content"] for i in hits]}

    def graph(w: Any, r: Any) -> Any:
        g = StateGraph(State)
        g.add_node("write", w)
        g.add_node("read", r)
        g.add_edge(START, "write")
        g.add_edge("write", "read")
        g.add_edge("read", END)
        return g.compile(store=store, checkpointer=InMemorySaver())

    app = graph(write, read)
    out = app.invoke({"user": "lin", "text": "Lin plays the cello", "found": []}, {"configurable": {"thread_id": "1"}})
    assert out["found"] == ["Lin plays the cello"]
    # another user's thread reads nothing of lin's
    assert graph(lambda s: {}, read).invoke({"user": "bob", "text": "", "found": []},
                                           {"configurable": {"thread_id": "2"}})["found"] == []
    out = asyncio.run(graph(awrite, aread).ainvoke({"user": "lin", "text": "Lin plays the cello", "found": []},
                                                   {"configurable": {"thread_id": "3"}}))
    assert sorted(out["found"]) == ["Lin plays the cello", "Lin plays the cello on Sundays"]

    @entrypoint(store=store)
    def workflow(inputs: dict[str, str]) -> Any:
        get_store().put(("memories", inputs["user"]), "e", {"content": "from an entrypoint"})
        return get_store().get(("memories", inputs["user"]), "e").value

    assert workflow.invoke({"user": "kim"}) == {"content": "from an entrypoint"}


def test_lg_langchain_create_agent_takes_the_store(memory: Memory) -> None:
    """LangGraph 1.x moved create_react_agent to langchain.agents.create_agent (the page shows
    only the deprecated one); the store must work there too."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    store = lg_store(memory)
    store.put(("memories", "lin"), "tea", {"content": "Lin likes green tea"})
    agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("hi")])), tools=[], store=store)
    reply = agent.invoke({"messages": [{"role": "user", "content": "hello"}]})
    assert reply["messages"][-1].content == "hi"
    assert store.search(("memories", "lin"), query="green tea")[0].value == {"content": "Lin likes green tea"}


def test_lg_async_forms_run_concurrently_on_distinct_keys(memory: Memory) -> None:
    store = lg_store(memory)

    async def many() -> list[Any]:
        await asyncio.gather(*[store.aput(("memories", u), f"k{i}", {"content": f"{u} fact {i}"})
                               for u in ("lin", "bob") for i in range(8)])
        return await asyncio.gather(*[store.aget(("memories", u), f"k{i}") for u in ("lin", "bob") for i in range(8)])

    items = asyncio.run(many())
    assert [i.value["content"] for i in items] == [f"{u} fact {i}" for u in ("lin", "bob") for i in range(8)]
    assert len(memory.list(user_id="lin")) == 8 and len(memory.list(user_id="bob")) == 8


def test_lg_items_survive_reopening_the_database(tmp_path: Path) -> None:
    with Memory(make_config(tmp_path)) as m:
        lg_store(m).put(("memories", "lin"), "k", {"content": "kept", "n": [1, {"x": None}]})
    with Memory(make_config(tmp_path)) as m:
        item = lg_store(m).get(("memories", "lin"), "k")
        assert item is not None and item.value == {"content": "kept", "n": [1, {"x": None}]}
        assert lg_store(m).get(("memories", "bob"), "k") is None


# ---- OpenAI Agents SDK: MemlaneSession, memlane_tools ----------------------------------------


def oa() -> Any:
    pytest.importorskip("agents")
    from agents import set_tracing_disabled

    from memlane.integrations import openai_agents
    set_tracing_disabled(True)
    return openai_agents


@pytest.mark.parametrize("item", [{"role": "user", "content": ""}, {"role": "assistant", "content": "   "}],
                         ids=["empty", "blank"])
def test_oa_an_empty_message_reads_back_as_it_was_added(memory: Memory, item: dict[str, Any]) -> None:
    """`get_items` promises each item exactly as added; `Runner.run(agent, "")` adds
    {"role": "user", "content": ""}. It reads back as "[empty user message]" today, a text the
    model then sees as if the user had typed it."""
    session = oa().MemlaneSession("c", memory, user_id="lin")
    asyncio.run(session.add_items([item]))
    assert asyncio.run(session.get_items()) == [item]


def test_oa_concurrent_pops_return_each_item_once(memory: Memory) -> None:
    """SQLiteSession pops atomically. Here two pops can both read the same latest turn; the
    second delete finds it gone without an error, so the same item is returned twice (and
    `pop_item` reports items that another caller already removed)."""
    session = oa().MemlaneSession("c", memory, user_id="lin")
    asyncio.run(session.add_items([{"role": "user", "content": f"m{i}"} for i in range(12)]))

    async def pops() -> list[Any]:
        return await asyncio.gather(*[session.pop_item() for _ in range(16)])

    popped = [p["content"] for p in asyncio.run(pops()) if p is not None]
    assert sorted(popped) == sorted(f"m{i}" for i in range(12)), popped
    assert asyncio.run(session.get_items()) == []


def test_oa_a_deeply_nested_item_is_refused_as_validation_error(memory: Memory) -> None:
    session = oa().MemlaneSession("c", memory, user_id="lin")
    with pytest.raises(ValidationError):
        asyncio.run(session.add_items([{"role": "user", "content": "hi", "extra": nested(1000)}]))
    assert asyncio.run(session.get_items()) == []


def test_oa_hostile_items_are_refused_whole_and_session_edges_hold(memory: Memory) -> None:
    session = oa().MemlaneSession("c", memory, user_id="lin")
    assert asyncio.run(session.pop_item()) is None  # empty session
    asyncio.run(session.clear_session())  # clearing nothing
    for bad in ([{"role": "user", "content": "x", "when": dt.datetime(2024, 1, 1)}],
                [{"role": "user", "content": "a\ud800"}], [{"role": "user", "content": "x" * 10_000_000}],
                [{"role": "user", "content": "fine"}, {"role": "user", "content": b"bytes"}]):
        with pytest.raises(ValidationError):
            asyncio.run(session.add_items(bad))  # type: ignore[arg-type]
    assert asyncio.run(session.get_items()) == []  # nothing of a refused batch was kept
    listed = {"role": "user", "content": [{"type": "input_text", "text": "hello"},
                                          {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}
    asyncio.run(session.add_items([listed, {"role": "assistant", "content": "hi"}]))
    assert asyncio.run(session.get_items(limit=0)) == []
    assert asyncio.run(session.get_items(limit=1)) == [{"role": "assistant", "content": "hi"}]
    assert asyncio.run(session.get_items()) == [listed, {"role": "assistant", "content": "hi"}]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    asyncio.run(session.add_items([{"role": "user", "content": "again"}]))  # a cleared session is reusable
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "again"}]
    # the same session id for another user is another conversation
    assert asyncio.run(oa().MemlaneSession("c", memory, user_id="bob").get_items()) == []


def _sse(text: str) -> bytes:
    chunks = [{"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "stub",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
              {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "stub",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def test_oa_run_sync_streamed_function_calls_and_a_session_shared_by_two_agents(memory: Memory) -> None:
    pytest.importorskip("agents")
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI
    mod = oa()

    sent: list[list[dict[str, Any]]] = []

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        sent.append(body["messages"])
        last = body["messages"][-1]
        if last["role"] == "user" and "weather" in str(last["content"]):
            return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "stub", "choices": [
                {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Lisbon\"}"}}]}}]}
        if body.get("stream"):
            return 200, _sse("streamed")
        reply = _chat_completion(body)
        reply["choices"][0]["message"]["content"] = f"reply {len(body['messages'])}"
        return 200, reply

    @function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    with openai_stub(handler) as (base_url, _):
        model = OpenAIChatCompletionsModel(model="m", openai_client=AsyncOpenAI(base_url=base_url, api_key="k"))
        session = mod.MemlaneSession("shared", memory, user_id="lin")
        a = Agent(name="A", model=model, tools=[weather, *mod.memlane_tools(memory, user_id="lin", session=session)],
                  instructions=mod.memlane_instructions(memory, user_id="lin", session=session, base="Be brief."))
        b = Agent(name="B", model=model, instructions="Another agent.")
        assert Runner.run_sync(a, "hello", session=session).final_output == "reply 2"
        assert Runner.run_sync(a, "what's the weather?", session=session).final_output == "reply 6"
        assert Runner.run_sync(b, "and you?", session=session).final_output == "reply 8"
        assert [m["role"] for m in sent[-1]] == ["system", "user", "assistant", "user", "assistant", "tool",
                                                 "assistant", "user"]

        async def streamed() -> Any:
            run = Runner.run_streamed(a, "stream please", session=session)
            async for _ in run.stream_events():
                pass
            return run.final_output

        assert asyncio.run(streamed()) == "streamed"
    kinds = [i.get("type") or i["role"] for i in asyncio.run(session.get_items())]
    assert kinds == ["user", "message", "user", "function_call", "function_call_output", "message", "user",
                     "message", "user", "message"]
    assert [t.content for t in memory.get_turns("shared", user_id="lin")][-2:] == ["stream please", "streamed"]


def test_oa_tools_of_one_user_cannot_touch_anothers_memories(memory: Memory) -> None:
    mod = oa()
    secret = memory.add("Bob's PIN is 4321", user_id="bob")
    tools = {t.name: t for t in mod.memlane_tools(memory, user_id="lin")}

    def call(name: str, **args: Any) -> Any:
        return json.loads(asyncio.run(tools[name].on_invoke_tool(None, json.dumps(args))))  # type: ignore[arg-type]

    assert "error" in call("forget", memory_id=secret.id)
    assert call("search_memory", query="Bob PIN 4321")["memories"] == []
    assert "error" in call("recall_memory", memory_id=secret.id) or call("recall_memory", memory_id=secret.id).get(
        "memories") == []
    assert memory.get(secret.id, user_id="bob").content == "Bob's PIN is 4321"


def test_oa_two_processes_add_to_one_session_at_once(tmp_path: Path) -> None:
    oa()
    child = ("import asyncio, sys\nfrom pathlib import Path\nroot, home, tag = sys.argv[1:]\n"
             "sys.path.insert(0, root)\n"
             "from tests.conftest import make_config\nfrom memlane import Memory\n"
             "from memlane.integrations.openai_agents import MemlaneSession\n"
             "with Memory(make_config(Path(home))) as m:\n"
             "    s = MemlaneSession('shared', m, user_id='lin')\n"
             "    for i in range(20):\n"
             "        asyncio.run(s.add_items([{'role': 'user', 'content': f'{tag}{i}'}]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [subprocess.Popen([PYTHON, "-c", child, str(ROOT), str(tmp_path), tag], env=env, stderr=subprocess.PIPE, text=True) for tag in "ab"]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read() if p.stderr else ""
    with Memory(make_config(tmp_path)) as m:
        texts = [i["content"] for i in asyncio.run(oa().MemlaneSession("shared", m, user_id="lin").get_items())]
    assert sorted(texts) == sorted(f"{t}{i}" for t in "ab" for i in range(20))
    assert [t for t in texts if t[0] == "a"] == [f"a{i}" for i in range(20)]  # each writer's order kept


# ---- pydantic-ai: MemlaneMemory, store_run ----------------------------------------------------


def pa() -> Any:
    pytest.importorskip("pydantic_ai")
    from memlane.integrations import pydantic_ai
    return pydantic_ai


def test_pa_run_stream_as_the_page_says_stores_each_turn_once(memory: Memory) -> None:
    """The page: "Streaming runs (run_stream) are not tested with MemlaneMemory; store their
    turns with store_run when the stream is done." MemlaneMemory already stores a streamed run
    (after_run runs), so following the page stores every turn twice."""
    mod = pa()
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    async def stream(messages: Any, info: Any) -> Any:
        yield "streamed reply"

    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("x")]), stream_function=stream),
                  capabilities=[mod.MemlaneMemory(memory, user_id="lin", session_id="s")])

    async def run() -> None:
        async with agent.run_stream("stream this") as result:
            assert await result.get_output() == "streamed reply"
        mod.store_run(memory, result, user_id="lin", session_id="s")  # as the page says

    asyncio.run(run())
    texts = [t.content for t in memory.get_turns("s", user_id="lin")]
    assert texts == ["stream this", "streamed reply"], texts


def test_pa_a_streamed_run_is_stored_by_the_capability(memory: Memory) -> None:
    mod = pa()
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    async def stream(messages: Any, info: Any) -> Any:
        yield "streamed "
        yield "reply"

    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("plain")]), stream_function=stream),
                  capabilities=[mod.MemlaneMemory(memory, user_id="lin", session_id="s")])
    first = agent.run_sync("hello")

    async def run() -> None:
        async with agent.run_stream("stream this", message_history=first.all_messages()) as result:
            await result.get_output()

    asyncio.run(run())
    assert [t.content for t in memory.get_turns("s", user_id="lin")] == ["hello", "plain", "stream this",
                                                                           "streamed reply"]


def test_pa_a_large_tool_result_does_not_fail_a_finished_run(memory: Memory) -> None:
    """A tool that returns a web page of 300,000 characters: the model has answered, then
    after_run's store_run raises ValidationError (store.max_turn_chars) and the whole run fails
    — the answer is lost and nothing of the conversation is stored. The page says nothing of
    this limit. The run should finish, and the turn be stored cut (or its text elided)."""
    mod = pa()
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: Any, info: Any) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("The page is about words.")])
        return ModelResponse(parts=[ToolCallPart("fetch", {})])

    agent = Agent(FunctionModel(model), capabilities=[mod.MemlaneMemory(memory, user_id="lin", session_id="s")])

    @agent.tool_plain
    def fetch() -> str:
        """Fetch the page."""
        return "word " * 60_000

    assert agent.run_sync("summarise the page").output == "The page is about words."
    assert [t.role for t in memory.get_turns("s", user_id="lin")][:1] == ["user"]


def test_pa_a_history_from_one_user_carries_none_of_their_memories_to_another(memory: Memory) -> None:
    mod = pa()
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, TextPart
    from pydantic_ai.models.function import FunctionModel

    memory.add("Lin's passport number is X1234567", user_id="lin")
    seen: list[str] = []

    def model(messages: Any, info: Any) -> ModelResponse:
        seen.append(" ".join(str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts
                             if isinstance(p, SystemPromptPart)))
        return ModelResponse(parts=[TextPart("ok")])

    def agent(user: str) -> Agent[None, str]:
        return Agent(FunctionModel(model), capabilities=[mod.MemlaneMemory(memory, user_id=user, session_id="s")])

    lin = agent("lin").run_sync("what is my passport number?")
    assert "X1234567" in seen[-1]
    agent("kim").run_sync("and mine?", message_history=lin.all_messages())
    assert "X1234567" not in seen[-1]  # lin's injected context was taken out, kim's put in
    assert memory.get_turns("s", user_id="kim")[0].content == "and mine?"


# ---- LlamaIndex: MemlaneMemoryBlock ------------------------------------------------------------


def li() -> Any:
    pytest.importorskip("llama_index.core")
    from memlane.integrations import llamaindex
    return llamaindex


def test_li_a_pasted_document_does_not_break_the_chat_or_lose_messages(memory: Memory) -> None:
    """A user pastes a 300,000-character document. LlamaIndex flushes it out of its window to
    the block, which raises ValidationError (store.max_turn_chars) inside `Memory.aput`: the chat
    call fails, and the flushed messages, already archived by LlamaIndex, never reach memlane."""
    mod = li()
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory as ChatMemory

    chat = ChatMemory.from_defaults(session_id="s1", token_limit=40_000,
                                    memory_blocks=[mod.MemlaneMemoryBlock(memory=memory, user_id="lin")])

    async def talk() -> None:
        await chat.aput(ChatMessage(role="user", content="Here is my document: " + "word " * 60_000))
        await chat.aput(ChatMessage(role="assistant", content="Thanks, I read it."))
        await chat.aput(ChatMessage(role="user", content="My sister Mei lives in Kyoto."))

    asyncio.run(talk())  # must not raise
    roles = [t.role for t in memory.get_turns("s1", user_id="lin")]
    assert roles[:2] == ["user", "assistant"], roles  # what LlamaIndex flushed is in memlane


def test_li_the_block_checks_its_user_id_when_made(memory: Memory) -> None:
    """The other adapters refuse a bad scope when they are built; the block takes any string
    and fails later, inside LlamaIndex's Memory.aget, on the first chat."""
    mod = li()
    for bad in ("li\ud800n", "u" * 1_000, "a\nb"):
        with pytest.raises(ValidationError):
            mod.MemlaneMemoryBlock(memory=memory, user_id=bad)


def test_li_chat_engines_sync_async_and_streaming_recall_and_keep_users_apart(memory: Memory) -> None:
    mod = li()
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import Memory as ChatMemory

    def engine(user: str, session: str) -> tuple[Any, Any]:
        chat = ChatMemory.from_defaults(session_id=session, token_limit=60,
                                        memory_blocks=[mod.MemlaneMemoryBlock(memory=memory, user_id=user)])
        return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=chat), chat

    first, chat = engine("lin", "s1")
    for said in ("Remember that I am allergic to peanuts.", "My sister Mei lives in Kyoto.", "The weather is fine."):
        first.chat(said)

    async def flush_in_a_running_loop() -> int:  # as a web handler would call it
        return chat.memory_blocks[0].flush(chat)

    asyncio.run(flush_in_a_running_loop())
    second, _ = engine("lin", "s2")
    assert "peanuts" in str(second.chat("what am I allergic to?"))  # MockLLM echoes its prompt
    assert "peanuts" in str(asyncio.run(second.achat("peanuts again?")))
    assert "peanuts" in "".join(second.stream_chat("peanuts, streamed?").response_gen)
    _, bobs = engine("bob", "s1")  # the same LlamaIndex session id, another user
    system = [m.content for m in asyncio.run(bobs.aget(input="what am I allergic to? peanuts?")) if m.role == "system"]
    assert "allergic to peanuts" not in " ".join(c or "" for c in system)
    _, lins = engine("lin", "s3")
    system = [m.content for m in asyncio.run(lins.aget(input="what am I allergic to?")) if m.role == "system"]
    assert "allergic to peanuts" in " ".join(c or "" for c in system)

