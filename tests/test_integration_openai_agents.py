"""memlane.integrations.openai_agents against the real OpenAI Agents SDK: the SDK's `Runner`
with a `MemlaneSession` and memlane's tools, its model an OpenAI-compatible stub on 127.0.0.1
(no key, no network)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed: pip install 'memlane[openai-agents]'")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402
from agents.memory import Session  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from memlane import Memory  # noqa: E402
from memlane.errors import MissingExtra, ValidationError  # noqa: E402
from memlane.integrations.openai_agents import (  # noqa: E402
    MemlaneSession,
    memlane_instructions,
    memlane_tools,
)

from .conftest import make_config  # noqa: E402
from .stubs import openai_stub  # noqa: E402

set_tracing_disabled(True)  # traces would go to OpenAI's servers

# one item of each shape the SDK hands a session
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "I moved to Lisbon last spring"},
    {"role": "user", "content": [{"type": "input_text", "text": "What is in this photo?"},
                                 {"type": "input_image", "image_url": "https://example.org/a.png", "detail": "auto"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The user asks about a photo."}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\": \"tram 28\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "Tram 28 runs every 12 minutes"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "It is tram 28 in Alfama.", "annotations": []}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"role": "developer", "content": "Answer in one sentence."},
]


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return completion({"content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(make_config(tmp_path)) as m:
        yield m


def test_session_is_the_sdks_protocol(memory: Memory) -> None:
    assert isinstance(MemlaneSession("s1", memory, user_id="lin"), Session)


def test_items_come_back_exactly_as_added(memory: Memory) -> None:
    async def run() -> None:
        session = MemlaneSession("s1", memory, user_id="lin")
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        assert await session.get_items() == ITEMS
        assert await session.get_items(limit=3) == ITEMS[-3:]
        assert await session.get_items(limit=0) == []
        assert await MemlaneSession("s1", memory, user_id="lin", session_settings={"limit": 2}).get_items() == ITEMS[-2:]

    asyncio.run(run())
    # the turns read as a person reads them: memlane searches and extracts from this text
    turns = memory.get_turns("s1", user_id="lin")
    assert [(t.role, t.content) for t in turns] == [
        ("user", "I moved to Lisbon last spring"),
        ("user", "What is in this photo?\n[image]"),
        ("assistant", "The user asks about a photo."),
        ("assistant", 'lookup({"q": "tram 28"})'),
        ("tool", "Tram 28 runs every 12 minutes"),
        ("assistant", "It is tram 28 in Alfama."),
        ("assistant", "[web_search_call]"),
        ("system", "Answer in one sentence."),
    ]
    assert turns[3].tool_calls == [{"id": "call_1", "type": "function",
                                    "function": {"name": "lookup", "arguments": '{"q": "tram 28"}'}}]
    hits = memory.search("Lisbon", user_id="lin", corpus="turns")
    assert hits[0].content == "I moved to Lisbon last spring"


def test_pop_and_clear_forget_the_turns(memory: Memory) -> None:
    async def run() -> None:
        session = MemlaneSession("s1", memory, user_id="lin")
        await session.add_items(ITEMS[:2])
        await session.add_items([{"role": "user", "content": "My locker code is 4471"}])
        assert await session.pop_item() == {"role": "user", "content": "My locker code is 4471"}
        assert await session.get_items() == ITEMS[:2]
        hits = memory.search("locker code 4471", user_id="lin", corpus="turns")
        assert hits and not any("4471" in h.content for h in hits)
        await session.add_items([{"role": "user", "content": "after the pop"}])  # appended after the rest
        assert (await session.get_items())[-1] == {"role": "user", "content": "after the pop"}
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.clear_session()  # an empty session clears without complaint
        assert memory.search("Lisbon", user_id="lin", corpus="turns") == []  # no turn is left
        assert memory.get_turns("s1", user_id="lin") == []

    asyncio.run(run())


def test_empty_texts_read_back_as_added(memory: Memory) -> None:
    """A turn needs text, so an empty one is described ("[empty user message]"), but the item
    keeps its own field: `get_items` gives back "", "  ", an empty output, as they were."""
    items: list[dict[str, Any]] = [{"role": "user", "content": ""}, {"role": "assistant", "content": " \n "},
                                   {"type": "function_call_output", "call_id": "c1", "output": ""},
                                   {"role": "user", "content": [{"type": "input_text", "text": ""}]}]
    session = MemlaneSession("s1", memory, user_id="lin")
    asyncio.run(session.add_items(items))
    assert asyncio.run(session.get_items()) == items
    assert [t.content for t in memory.get_turns("s1", user_id="lin")] == [
        "[empty user message]", "[empty assistant message]", "[empty tool message]", "[empty user message]"]
    assert asyncio.run(session.pop_item()) == items[-1]


def test_an_item_nested_past_the_metadata_depth_is_refused_by_name(memory: Memory) -> None:
    depth = memory.config.store.max_metadata_depth  # the item is kept one level down in the metadata
    session = MemlaneSession("s1", memory, user_id="lin")

    def nested(levels: int) -> dict[str, Any]:
        item: dict[str, Any] = {"role": "user", "content": "hi"}
        for _ in range(levels - 1):
            item = {"role": "user", "content": "hi", "x": item}
        return item

    asyncio.run(session.add_items([nested(depth - 1)]))  # as deep as it may be: kept
    assert asyncio.run(session.get_items()) == [nested(depth - 1)]
    for levels in (depth, 5_000):  # one level more, and deep enough to overflow a recursive walk
        with pytest.raises(ValidationError, match="store.max_metadata_depth") as err:
            asyncio.run(session.add_items([nested(levels)]))
        assert err.value.field.startswith("items[0].x")
    assert len(asyncio.run(session.get_items())) == 1


def test_pops_from_two_processes_hand_out_each_item_once(tmp_path: Path) -> None:
    """Two processes pop one session at once: each item goes to one of them, and the pops
    past the last find None (the delete is the claim: a turn another caller deleted first is
    NotFound, and the pop takes the next)."""
    with Memory(make_config(tmp_path)) as m:
        asyncio.run(MemlaneSession("shared", m, user_id="lin").add_items(
            [{"role": "user", "content": f"m{i}"} for i in range(30)]))
    child = ("import asyncio, json, sys\nfrom pathlib import Path\nroot, home = sys.argv[1:]\n"
             "sys.path.insert(0, root)\n"
             "from tests.conftest import make_config\nfrom memlane import Memory\n"
             "from memlane.integrations.openai_agents import MemlaneSession\n"
             "with Memory(make_config(Path(home))) as m:\n"
             "    s = MemlaneSession('shared', m, user_id='lin')\n"
             "    async def pops():\n"
             "        return await asyncio.gather(*[s.pop_item() for _ in range(20)])\n"
             "    print(json.dumps(asyncio.run(pops())))\n")
    root = Path(__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    procs = [subprocess.Popen([sys.executable, "-c", child, str(root), str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    popped: list[Any] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        popped += json.loads(out)
    got = [i["content"] for i in popped if i is not None]
    assert sorted(got) == sorted(f"m{i}" for i in range(30))
    assert popped.count(None) == 10
    with Memory(make_config(tmp_path)) as m:
        assert m.get_turns("shared", user_id="lin") == []


def test_sessions_are_scoped(memory: Memory) -> None:
    async def run() -> None:
        await MemlaneSession("s1", memory, user_id="lin").add_items(ITEMS[:1])
        assert await MemlaneSession("s1", memory, user_id="kim").get_items() == []
        assert await MemlaneSession("s1", memory, user_id="lin", agent_id="travel").get_items() == []
        assert await MemlaneSession("s1", memory, user_id="kim").pop_item() is None
        assert await MemlaneSession("s1", memory, user_id="lin").get_items() == ITEMS[:1]

    asyncio.run(run())


def test_a_bad_item_is_refused_whole(memory: Memory) -> None:
    session = MemlaneSession("s1", memory, user_id="lin")
    with pytest.raises(ValidationError) as err:
        asyncio.run(session.add_items([ITEMS[0], "not an item"]))  # type: ignore[list-item]
    assert err.value.field == "items[1]"
    with pytest.raises(ValidationError) as err:
        MemlaneSession("", memory, user_id="lin")
    assert err.value.field == "session_id"
    assert memory.get_turns("s1", user_id="lin") == []


def test_a_runner_remembers_recalls_and_keeps_users_apart(tmp_path: Path) -> None:
    """The agent stores a fact with the remember tool in one session; a new session's prompt
    carries it (build_context) and search_memory finds it; another user gets neither; the
    first session's history survives a new Memory and MemlaneSession on the same database."""
    prompts: list[list[dict[str, Any]]] = []

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        assert path == "/v1/chat/completions"
        msgs = body["messages"]
        prompts.append(msgs)
        assert {t["function"]["name"] for t in body["tools"]} >= {"remember", "search_memory", "forget"}
        last = msgs[-1]
        if last["role"] == "tool":
            result = json.loads(last["content"])
            if "memories" in result:
                found = [m["content"] for m in result["memories"]]
                return 200, completion({"content": "Found: " + "; ".join(found) if found else "Nothing found."})
            return 200, completion({"content": "Noted."})
        text = last["content"] if isinstance(last["content"], str) else json.dumps(last["content"])
        if "FYI" in text:
            return 200, call("call_r", "remember", content="The user is allergic to peanuts", category="fact")
        if "look it up" in text:
            return 200, call("call_s", "search_memory", query="peanuts allergy")
        return 200, completion({"content": "Sure."})

    def agent(memory: Memory, user: str, session: MemlaneSession, model: Any) -> Agent[Any]:
        return Agent(name="Assistant", model=model, tools=memlane_tools(memory, user_id=user, session=session),
                     instructions=memlane_instructions(memory, user_id=user, session=session,
                                                       base="You are a helpful assistant."))

    async def run(base_url: str) -> None:
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini",
                                           openai_client=AsyncOpenAI(base_url=base_url, api_key="test"))
        with Memory(make_config(tmp_path)) as memory:
            first = MemlaneSession("monday", memory, user_id="lin")
            result = await Runner.run(agent(memory, "lin", first, model), "FYI: I am allergic to peanuts.",
                                      session=first)
            assert result.final_output == "Noted."
            stored = memory.list(user_id="lin")
            assert [(m.content, m.source, m.source_session) for m in stored] == [
                ("The user is allergic to peanuts", "agent", "monday")]

            second = MemlaneSession("tuesday", memory, user_id="lin")
            await Runner.run(agent(memory, "lin", second, model), "Which snacks are safe with peanuts?",
                             session=second)
            system = prompts[-1][0]
            assert system["role"] == "system" and "allergic to peanuts" in system["content"]
            assert [m["role"] for m in prompts[-1][1:]] == ["user"]  # a new session: no old history
            result = await Runner.run(agent(memory, "lin", second, model), "Please look it up", session=second)
            assert result.final_output == "Found: The user is allergic to peanuts"

            other = MemlaneSession("tuesday", memory, user_id="kim")
            await Runner.run(agent(memory, "kim", other, model), "Which snacks are safe with peanuts?", session=other)
            assert "peanuts" not in prompts[-1][0]["content"]
            result = await Runner.run(agent(memory, "kim", other, model), "Please look it up", session=other)
            assert result.final_output == "Nothing found."

        with Memory(make_config(tmp_path)) as memory:  # another process, the same database
            again = MemlaneSession("monday", memory, user_id="lin")
            await Runner.run(agent(memory, "lin", again, model), "Thanks!", session=again)
            sent = prompts[-1][1:]
            assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
            assert sent[0]["content"] == "FYI: I am allergic to peanuts."
            assert sent[1]["tool_calls"][0]["id"] == "call_r" and sent[2]["tool_call_id"] == "call_r"
            assert len(await again.get_items()) == 6

    with openai_stub(handler) as (base_url, _seen):
        asyncio.run(run(base_url))


def test_tools_are_memlanes_tools(memory: Memory) -> None:
    tools = memlane_tools(memory, user_id="lin", names=["remember", "search_memory", "forget"])
    assert [t.name for t in tools] == ["search_memory", "remember", "forget"]
    assert tools[1].params_json_schema == memory.tools(user_id="lin").schemas[3]["function"]["parameters"]

    async def invoke(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        tool = next(t for t in tools if t.name == name)
        return json.loads(await tool.on_invoke_tool(None, json.dumps(arguments)))  # type: ignore[arg-type]

    saved = asyncio.run(invoke("remember", {"content": "Lin's sister is called Mei"}))
    assert asyncio.run(invoke("search_memory", {"query": "sister Mei"}))["memories"][0]["id"] == saved["id"]
    assert "not found" in asyncio.run(invoke("forget", {"memory_id": "nope"}))["error"]  # the model can fix it
    assert asyncio.run(invoke("forget", {"memory_id": saved["id"]}))["deleted"] == saved["id"]
    assert memory.list(user_id="lin") == []


def test_import_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # as if the SDK were not installed
    monkeypatch.delitem(sys.modules, "memlane.integrations.openai_agents")
    with pytest.raises(MissingExtra, match=r"pip install 'memlane\[openai-agents\]'") as err:
        importlib.import_module("memlane.integrations.openai_agents")
    assert isinstance(err.value, ImportError)  # as every adapter: `except ImportError` makes it optional


EXAMPLE = Path(__file__).parents[1] / "examples" / "openai_agents_memory.py"


def test_the_example_remembers_across_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("openai_agents_memory", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")  # open_memory reads the environment

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return 200, completion({"content": "Noted."})
        if "allergic" in last["content"]:
            return 200, call("call_r", "remember", content="The user is allergic to peanuts")
        assert "allergic to peanuts" in body["messages"][0]["content"]  # recalled into the instructions
        return 200, completion({"content": "Try apple slices: no peanuts."})

    with openai_stub(handler) as (base_url, _seen):
        common = ["--base-url", base_url, "--api-key", "test", "--user", "lin", "--home", str(tmp_path)]
        assert example.main([*common, "--session", "monday", "--message", "I'm allergic to peanuts"]) == 0
        assert example.main([*common, "--session", "tuesday", "--message", "Which peanuts snack is safe?"]) == 0
    assert capsys.readouterr().out == "assistant> Noted.\nassistant> Try apple slices: no peanuts.\n"
