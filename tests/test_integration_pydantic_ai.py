"""memlane.integrations.pydantic_ai against the real pydantic-ai: an `Agent` with memlane's
toolset and context processor, its model pydantic-ai's own `FunctionModel` (no key, no network)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="pydantic-ai is not installed: pip install 'memlane[pydantic-ai]'")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from memlane import Memory  # noqa: E402
from memlane.errors import MissingExtra  # noqa: E402
from memlane.integrations.pydantic_ai import (  # noqa: E402
    CONTEXT_REF,
    MemlaneMemory,
    memlane_context,
    memlane_toolset,
    store_run,
)

from .conftest import make_config  # noqa: E402
from .stubs import openai_stub  # noqa: E402


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(make_config(tmp_path)) as m:
        yield m


def injected(messages: list[ModelMessage]) -> list[str]:
    """The memlane context parts the model was sent."""
    return [p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, SystemPromptPart) and p.dynamic_ref == CONTEXT_REF]


class Script:
    """A FunctionModel body: remembers what it was sent; calls remember on "FYI", search_memory
    on "look it up", otherwise answers with the memories its context held."""

    def __init__(self) -> None:
        self.sent: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.sent.append(list(messages))
        assert {"remember", "search_memory", "forget"} <= {t.name for t in info.function_tools}
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returned:
            content = returned[0].content
            if isinstance(content, dict) and "memories" in content:
                return ModelResponse(parts=[TextPart("Found: " + "; ".join(m["content"] for m in content["memories"]))])
            return ModelResponse(parts=[TextPart("Noted.")])
        prompt = next(p.content for p in last.parts if isinstance(p, UserPromptPart))
        if "FYI" in str(prompt):
            return ModelResponse(parts=[ToolCallPart("remember", {"content": "The user is allergic to peanuts"},
                                                     tool_call_id="call_r")])
        if "look it up" in str(prompt):
            return ModelResponse(parts=[ToolCallPart("search_memory", {"query": "peanuts allergy"},
                                                     tool_call_id="call_s")])
        return ModelResponse(parts=[TextPart("Context: " + " | ".join(injected(messages)))])


def agent_for(memory: Memory, script: Script, user: str, session: str) -> Agent[None, str]:
    return Agent(FunctionModel(script), instructions="You are a helpful assistant.",
                 toolsets=[memlane_toolset(memory, user_id=user, session_id=session)],
                 capabilities=[ProcessHistory(memlane_context(memory, user_id=user, session_id=session))])


def test_an_agent_remembers_recalls_and_keeps_users_apart(memory: Memory) -> None:
    script = Script()

    async def run() -> None:
        first = await agent_for(memory, script, "lin", "monday").run("FYI: I am allergic to peanuts.")
        assert first.output == "Noted."
        assert [(m.content, m.source, m.source_session) for m in memory.list(user_id="lin")] == [
            ("The user is allergic to peanuts", "agent", "monday")]
        turns = store_run(memory, first, user_id="lin", session_id="monday")
        assert [(t.role, t.content) for t in turns if t.role != "tool"] == [
            ("user", "FYI: I am allergic to peanuts."),
            ("assistant", 'remember({"content":"The user is allergic to peanuts"})'),
            ("assistant", "Noted."),
        ]
        assert json.loads(turns[2].content)["content"] == "The user is allergic to peanuts"  # the tool's result
        assert turns[1].tool_calls and turns[1].tool_calls[0]["id"] == "call_r"
        assert turns[2].metadata["tool_call_id"] == "call_r"

        # a later run, a fresh message history: the memory is in its context
        later = await agent_for(memory, script, "lin", "tuesday").run("Which snacks are safe with peanuts?")
        assert "allergic to peanuts" in later.output
        found = await agent_for(memory, script, "lin", "tuesday").run("Please look it up")
        assert found.output == "Found: The user is allergic to peanuts"

        # another user: neither in the context nor through the tool
        other = await agent_for(memory, script, "kim", "tuesday").run("Which snacks are safe with peanuts?")
        assert "peanuts" not in other.output
        assert (await agent_for(memory, script, "kim", "tuesday").run("Please look it up")).output == "Found: "

        # the history passed on keeps one context part, for the latest prompt
        again = await agent_for(memory, script, "lin", "tuesday").run("And with peanuts in a cake?",
                                                                       message_history=later.all_messages())
        kept = injected(again.all_messages())
        assert len(kept) == 1 and "allergic to peanuts" in kept[0]
        latest = again.all_messages()[-2]
        assert isinstance(latest, ModelRequest)
        assert [type(p) for p in latest.parts] == [SystemPromptPart, UserPromptPart]
        # mid-conversation, pydantic-ai frames a system part as <system> for a model without that channel
        sent = script.sent[-1][-1]
        assert isinstance(sent, ModelRequest) and "allergic to peanuts" in str(sent.parts[0].content)
        assert again.output.startswith("Context: ")

    asyncio.run(run())


def test_one_capability_does_it_all(memory: Memory) -> None:
    """MemlaneMemory: the tools, the context and the turns stored at the end of each run."""
    script = Script()

    def agent(user: str, session: str) -> Agent[None, str]:
        return Agent(FunctionModel(script), capabilities=[MemlaneMemory(memory, user_id=user, session_id=session)])

    async def run() -> None:
        assert (await agent("lin", "monday").run("FYI: I am allergic to peanuts.")).output == "Noted."
        assert [t.role for t in memory.get_turns("monday", user_id="lin")] == ["user", "assistant", "tool", "assistant"]
        later = await agent("lin", "tuesday").run("Which snacks are safe with peanuts?")
        assert "allergic to peanuts" in later.output
        assert [t.content for t in memory.get_turns("tuesday", user_id="lin")][0] == "Which snacks are safe with peanuts?"
        other = await agent("kim", "tuesday").run("Which snacks are safe with peanuts?")
        assert "peanuts" not in other.output
        assert memory.list(user_id="kim") == []
        # one agent for many users: the capability given per run
        shared = Agent(FunctionModel(script))
        mine = await shared.run("Which snacks are safe with peanuts?",
                                capabilities=[MemlaneMemory(memory, user_id="lin", session_id="wednesday")])
        assert "allergic to peanuts" in mine.output
        assert len(memory.get_turns("wednesday", user_id="lin")) == 2

    asyncio.run(run())


def test_store_run_leaves_out_what_is_not_the_conversation(memory: Memory) -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("You are terse."), SystemPromptPart("memlane says", dynamic_ref=CONTEXT_REF),
                            UserPromptPart(["Look at this", "and this"])]),
        ModelResponse(parts=[TextPart("Let me check."), ToolCallPart("lookup", '{"q": "x"}', tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("lookup", "nothing there", tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("Nothing there.")]),
    ]
    turns = store_run(memory, messages, user_id="lin", session_id="s1")
    assert [(t.role, t.content) for t in turns] == [
        ("user", "Look at this\nand this"), ("assistant", "Let me check."), ("tool", "nothing there"),
        ("assistant", "Nothing there.")]
    assert turns[1].tool_calls == [{"id": "c1", "type": "function", "function": {"name": "lookup",
                                                                                 "arguments": '{"q":"x"}'}}]
    assert store_run(memory, [], user_id="lin", session_id="s1") == []


def test_store_run_stores_each_message_of_a_run_once(memory: Memory) -> None:
    """Calling store_run again — on the same result, on `all_messages()` after the next run, or
    after MemlaneMemory already stored the run — adds only what the session lacks."""
    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart(f"reply {len(m)}")])))
    first = agent.run_sync("one")
    assert len(store_run(memory, first, user_id="lin", session_id="s1")) == 2
    assert store_run(memory, first, user_id="lin", session_id="s1") == []
    second = agent.run_sync("two", message_history=first.all_messages())
    assert [t.content for t in store_run(memory, second.all_messages(), user_id="lin", session_id="s1")] == [
        "two", "reply 3"]
    assert store_run(memory, second, user_id="lin", session_id="s1") == []
    # another session (or user) has its own copy; hand-made messages with no run id are stored as given
    assert len(store_run(memory, first, user_id="lin", session_id="s2")) == 2
    assert len(store_run(memory, first, user_id="kim", session_id="s1")) == 2
    plain = [ModelRequest(parts=[UserPromptPart("no run id")])]
    assert len(store_run(memory, plain, user_id="lin", session_id="s1")) == 1
    assert len(store_run(memory, plain, user_id="lin", session_id="s1")) == 1
    assert [t.content for t in memory.get_turns("s1", user_id="lin")] == [
        "one", "reply 1", "two", "reply 3", "no run id", "no run id"]


def test_store_run_fits_what_a_run_said_into_the_stores_limits(tmp_path: Path) -> None:
    """The run has happened: a prompt, a tool result or tool-call arguments over memlane's
    limits are cut and marked, and a run larger than one call takes is stored in parts."""
    limits = {"max_turn_chars": 1_000, "max_call_chars": 2_500, "max_metadata_bytes": 4_096}
    with Memory(make_config(tmp_path, store=limits)) as memory:
        messages: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart("p" * 5_000)]),
            ModelResponse(parts=[ToolCallPart("write", {"text": "\u0001é" * 3_000}, tool_call_id="c1"),
                                 ToolCallPart("write", {"text": "b" * 3_000}, tool_call_id="c2")]),
            ModelRequest(parts=[ToolReturnPart("write", "r" * 999, tool_call_id="c1"),
                                ToolReturnPart("write", "", tool_call_id="c2")]),
            ModelResponse(parts=[TextPart("done")]),
            ModelRequest(parts=[UserPromptPart("  \n")]),
            ModelResponse(parts=[TextPart(" ")]),
        ]
        turns = store_run(memory, messages, user_id="lin", session_id="s1")
        assert [t.role for t in turns] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
        user = turns[0]
        assert len(user.content) == 1_000 and user.content.startswith("p" * 900)
        assert user.content.endswith("…[truncated: 5,000 characters, store.max_turn_chars is the limit]")
        assert user.metadata["truncated_from_chars"] == 5_000
        assert turns[1].tool_calls is not None and len(json.dumps(turns[1].tool_calls).encode()) <= 4_096
        assert all("…[truncated:" in c["function"]["arguments"] for c in turns[1].tool_calls)
        assert turns[2].content == "r" * 999 and "truncated_from_chars" not in turns[2].metadata  # within limits: as is
        assert turns[3].content == "[empty result]"
        assert [t.content for t in memory.get_turns("s1", user_id="lin")][-3:] == [
            "done", "[empty prompt]", "[empty reply]"]  # a turn needs text: blank ones are described


def test_tools_are_memlanes_tools(memory: Memory) -> None:
    toolset = memlane_toolset(memory, user_id="lin", names=["search_memory", "remember"])
    assert sorted(toolset.tools) == ["remember", "search_memory"]
    schema = memory.tools(user_id="lin").schemas[3]["function"]
    assert toolset.tools["remember"].function_schema.json_schema == schema["parameters"]


def test_import_without_pydantic_ai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # as if pydantic-ai were not installed
    monkeypatch.delitem(sys.modules, "memlane.integrations.pydantic_ai")
    with pytest.raises(MissingExtra, match=r"pip install 'memlane\[pydantic-ai\]'") as err:
        importlib.import_module("memlane.integrations.pydantic_ai")
    assert isinstance(err.value, ImportError)  # as every adapter: `except ImportError` makes it optional




EXAMPLE = Path(__file__).parents[1] / "examples" / "pydantic_ai_memory.py"


def test_the_example_remembers_across_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/pydantic_ai_memory.py with pydantic-ai's OpenAI model against a stub on 127.0.0.1."""
    spec = importlib.util.spec_from_file_location("pydantic_ai_memory", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")  # open_memory reads the environment

    def reply(message: dict[str, object]) -> dict[str, object]:
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        msgs = body["messages"]
        if msgs[-1]["role"] == "tool":
            return 200, reply({"content": "Noted."})
        if "allergic" in str(msgs[-1]["content"]):
            args = json.dumps({"content": "The user is allergic to peanuts"})
            return 200, reply({"content": None, "tool_calls": [
                {"id": "call_r", "type": "function", "function": {"name": "remember", "arguments": args}}]})
        assert "allergic to peanuts" in json.dumps(msgs)  # memlane's context reached the prompt
        return 200, reply({"content": "Try apple slices: no peanuts."})

    with openai_stub(handler) as (base_url, _seen):
        common = ["--base-url", base_url, "--api-key", "test", "--user", "lin", "--home", str(tmp_path)]
        assert example.main([*common, "--session", "monday", "--message", "I'm allergic to peanuts"]) == 0
        assert example.main([*common, "--session", "tuesday", "--message", "Which peanuts snack is safe?"]) == 0
    assert capsys.readouterr().out == "assistant> Noted.\nassistant> Try apple slices: no peanuts.\n"
    with Memory(make_config(tmp_path)) as memory:
        assert [t.role for t in memory.get_turns("monday", user_id="lin")] == ["user", "assistant", "tool", "assistant"]
