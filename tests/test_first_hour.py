"""Issue 18, a new user's first hour: what the offline extractor stores, "remember" stored
once, OpenAI message shapes round-tripping, agent scopes, and tool calls from the SDKs."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from memlane import AsyncMemory, Config, Memory, ValidationError
from memlane.heuristic import HeuristicExtractor
from memlane.models import Turn
from memlane.testing import HashEmbedder

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def extracted(text: str) -> list[str]:
    turns = [Turn(id="t1", user_id="u", session_id="s", seq=1, role="user", content=text, created_at=NOW,
                  token_count=1)]
    return [op.content or "" for op in HeuristicExtractor(Config.load()).extract(turns, now=NOW).operations]


# ---- 1. questions, hypotheticals and negations are not facts ---------------------------------

@pytest.mark.parametrize("text", [
    "我对什么过敏？", "我不吃辣吗？", "我对什么过敏", "我是不是对花生过敏", "我喜欢什么", "我叫什么名字？",
    "如果我对花生过敏怎么办", "假如我喜欢猫，你会推荐什么", "要是我下周要出差呢", "我喜欢橘猫吗",
    "Do I prefer tea or coffee?", "Do I prefer tea or coffee", "what do I like", "Would I like sushi",
    "Am I allergic to peanuts?", "I like tea, right?", "I wonder if I like sushi",
    "if I prefer tea, what should I drink", "Suppose I hate olives.", "I'm not sure whether I prefer tea",
    "my name is not important", "My name is not Bob.", "I like it", "I'm allergic to nothing",
])
def test_a_question_a_hypothetical_or_a_negated_value_is_not_a_fact(text):
    assert extracted(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("我对花生过敏", ["用户对花生过敏"]),
    ("我不吃辣", ["用户不吃辣"]),  # a negated preference is a statement about the user
    ("我对花生过敏，你推荐什么？", ["用户对花生过敏"]),  # the "？" asks in the last clause only
    ("我喜欢橘猫，你觉得呢？", ["用户喜欢橘猫"]),
    ("I prefer tea", ["The user prefers tea."]),
    ("I prefer window seats.", ["The user prefers window seats."]),
    ("I hate olives", ["The user dislikes olives."]),
    ("I don't eat pork.", ["The user does not eat pork."]),
    ("When I fly I prefer window seats.", ["The user prefers window seats."]),
    ("I prefer no sugar in my coffee.", ["The user prefers no sugar in the user's coffee."]),
])
def test_real_statements_still_extract(text, expected):
    assert extracted(text) == expected


@pytest.mark.parametrize(("said", "stored"), [
    ("Remember that I hate olives.", "The user hates olives."),
    ("Remember: I prefer window seats.", "The user prefers window seats."),
    ("remember that I really enjoy jazz", "The user really enjoys jazz."),
    ("Remember I go to the gym and I watch films on Fridays",
     "The user goes to the gym and the user watches films on Fridays."),
    ("Remember that I'm vegetarian and I don't eat eggs.", "The user is vegetarian and the user doesn't eat eggs."),
    ("Remember that I have two kids.", "The user has two kids."),
    ("Remember that I was born in Hangzhou.", "The user was born in Hangzhou."),
    ("Remember that I can't swim.", "The user can't swim."),
    ("Remember that my wife and I love hiking.", "The user's wife and the user love hiking."),
    ("Remember that I need a quiet room.", "The user needs a quiet room."),
    ("Remember that I watch films and I fly often.", "The user watches films and the user flies often."),
    ("记住我每周二和周六早上跑步", "用户每周二和周六早上跑步"),
])
def test_remembered_words_read_grammatically_about_the_user(memory, said, stored):
    memory.add_messages("s1", [{"role": "user", "content": said}], user_id="u1")
    assert [m.content for m in memory.list(user_id="u1")] == [stored]


# ---- 2. "remember" stored once --------------------------------------------------------------

@pytest.mark.parametrize(("said", "by_tool"), [
    ("记住我每周二和周六早上跑步", "用户每周二和周六早上跑步"),
    ("Remember that I hate olives.", "The user hates olives"),
])
@pytest.mark.parametrize("tool_first", [False, True])
def test_the_rule_and_the_remember_tool_store_one_memory(memory, said, by_tool, tool_first):
    tools = memory.tools(user_id="u1", session_id="s1")
    call = {"id": "c1", "type": "function",
            "function": {"name": "remember", "arguments": json.dumps({"content": by_tool}, ensure_ascii=False)}}
    if tool_first:
        memory.add_messages("s1", [{"role": "user", "content": "hi"}], user_id="u1")
        tools.handle(call)
    memory.add_messages("s1", [{"role": "user", "content": said}], user_id="u1")
    if not tool_first:
        result = json.loads(tools.handle(call)["content"])
        assert result["already_known"] is True
    [only] = memory.list(user_id="u1")
    assert only.pinned and only.verified and only.activation_count == 1  # reinforced, not doubled
    assert [e.kind for e in memory.history(only.id, user_id="u1")] == ["ADD", "BOOST"]
    memory.end_session("s1", user_id="u1")
    assert len(memory.list(user_id="u1")) == 1


def test_the_remember_tool_still_adds_what_is_new(memory):
    tools = memory.tools(user_id="u1")
    for content in ("用户对花生过敏", "用户喜欢喝白茶", "用户对花生过敏。"):
        tools.call("remember", {"content": content})
    assert sorted(m.content for m in memory.list(user_id="u1")) == ["用户喜欢喝白茶", "用户对花生过敏"]


# ---- 3. OpenAI message shapes round-trip -----------------------------------------------------

CALL = {"id": "call_1", "type": "function", "function": {"name": "remember", "arguments": '{"content": "用户养猫"}'}}


def test_tool_calls_and_results_come_back_as_openai_messages(memory):
    sent = [
        {"role": "user", "content": [{"type": "text", "text": "看看这张图"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                     {"type": "text", "text": "我养了一只猫"}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"id": "abc"}'},
        {"role": "assistant", "content": "记住了"},
    ]
    memory.add_messages("s1", sent, user_id="u1")
    _, *history = memory.build_context("s1", user_id="u1").messages()
    assert history == [
        {"role": "user", "content": "看看这张图\n[image]\n我养了一只猫"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"id": "abc"}'},
        {"role": "assistant", "content": "记住了"},
    ]
    # the call's arguments are in the traces (seed 002, level 2)
    assert memory.search("用户养猫", user_id="u1", corpus="turns")[0].turn.role == "assistant"  # type: ignore[union-attr]


def test_a_tool_result_without_its_call_in_the_window_is_sent_as_text(make_memory):
    memory = make_memory(context={"history_max_messages": 2, "history_min_messages": 1})
    memory.add_messages("s1", [{"role": "user", "content": "hi"},
                               {"role": "assistant", "content": None, "tool_calls": [CALL]},
                               {"role": "tool", "name": "remember", "tool_call_id": "call_1", "content": "{}"},
                               {"role": "assistant", "content": "ok"}], user_id="u1")
    _, *history = memory.build_context("s1", user_id="u1").messages()
    assert [m["role"] for m in history] == ["user", "assistant"]  # an API would refuse an orphan `tool`


def test_sdk_message_objects_are_accepted(memory):
    class SDKMessage:  # what openai's ChatCompletionMessage offers
        def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
            return {"role": "assistant", "tool_calls": [CALL], "refusal": None} if not exclude_none else {
                "role": "assistant", "tool_calls": [CALL]}

    [turn] = memory.add_messages("s1", [SDKMessage()], user_id="u1")
    assert turn.tool_calls == [CALL]


@pytest.mark.parametrize(("message", "field"), [
    ({"role": "user", "content": [{"text": "no type"}]}, "messages[0].content[0]"),
    ({"role": "user", "content": [{"type": "text", "text": 3}]}, "messages[0].content[0].text"),
    ({"role": "tool", "tool_call_id": 7, "content": "x"}, "messages[0].tool_call_id"),
])
def test_bad_message_shapes_name_the_field(memory, message, field):
    with pytest.raises(ValidationError) as err:
        memory.add_messages("s1", [message], user_id="u1")
    assert err.value.field == field


# ---- 4. an agent reads its user's shared memories, never another user's ----------------------

def test_an_agent_scope_reads_its_users_shared_memories(memory):
    memory.add("用户对花生过敏", user_id="lin", category="fact", importance="high")  # shared: no agent
    memory.add("用户喜欢用 pytest", user_id="lin", agent_id="coder", importance="high")
    memory.add("用户对花生过敏", user_id="other", importance="high")
    bot = {"user_id": "lin", "agent_id": "bot"}
    assert [h.content for h in memory.search("花生过敏", **bot)] == ["用户对花生过敏"]  # lin's, once
    assert memory.search("花生过敏", **bot)[0].memory.user_id == "lin"  # type: ignore[union-attr]
    memory.add_messages("s1", [{"role": "user", "content": "晚饭吃什么"}], **bot)
    ctx = memory.build_context("s1", "晚饭", **bot)
    assert [m.content for m in ctx.core] == ["用户对花生过敏"]  # not the coder agent's, not other's
    def found(**scope: str) -> list[str]:
        return [h.content for h in memory.search("pytest", **scope)]  # type: ignore[arg-type]

    assert "用户喜欢用 pytest" not in found(**bot)  # another agent's own memories stay its own
    assert found(user_id="lin", agent_id="coder")[0] == "用户喜欢用 pytest"
    assert "用户喜欢用 pytest" not in found(user_id="lin")  # the shared scope does not read agents'
    # the agent writes to its own scope; forgetting a shared memory it can see is allowed
    tools = memory.tools(**bot)
    added = tools.call("remember", {"content": "用户周末去钓鱼"})
    assert memory.get(added["id"], **bot).agent_id == "bot"
    assert memory.list(user_id="lin") and memory.list(user_id="other")
    shared_id = memory.list(user_id="lin")[0].id
    assert tools.call("forget", {"memory_id": shared_id})["deleted"] == shared_id
    assert memory.list(user_id="lin") == [] and len(memory.list(user_id="other")) == 1


# ---- 5. tool calls as the SDKs hand them over; the async face --------------------------------

def _openai_call(name: str, args: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(id="call_9", type="function",
                           function=SimpleNamespace(name=name, arguments=json.dumps(args, ensure_ascii=False)))


def _anthropic_block(name: str, args: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(id="toolu_9", type="tool_use", name=name, input=args)


@pytest.mark.parametrize("shape", ["openai-object", "openai-dict", "anthropic-object", "anthropic-dict"])
def test_handle_takes_tool_calls_of_both_sdks_as_objects_or_dicts(memory, shape):
    memory.add("用户对花生过敏", user_id="u1", importance="high")
    tools = memory.tools(user_id="u1")
    args = {"query": "花生"}
    call: Any = {"openai-object": _openai_call("search_memory", args),
                 "openai-dict": {"id": "call_9", "type": "function",
                                 "function": {"name": "search_memory", "arguments": json.dumps(args)}},
                 "anthropic-object": _anthropic_block("search_memory", args),
                 "anthropic-dict": {"id": "toolu_9", "type": "tool_use", "name": "search_memory", "input": args},
                 }[shape]
    out = tools.handle(call)
    if shape.startswith("openai"):
        assert (out["role"], out["tool_call_id"], out["name"]) == ("tool", "call_9", "search_memory")
    else:
        assert (out["type"], out["tool_use_id"]) == ("tool_result", "toolu_9")
    assert json.loads(out["content"])["memories"][0]["content"] == "用户对花生过敏"


def test_anthropic_schemas_beside_openai(memory):
    tools = memory.tools(user_id="u1")
    openai_names = [s["function"]["name"] for s in tools.schemas]
    anthropic = tools.schemas(format="anthropic")
    assert [s["name"] for s in anthropic] == openai_names
    assert anthropic[0]["input_schema"] == tools.schemas[0]["function"]["parameters"]
    with pytest.raises(ValidationError):
        tools.schemas(format="gemini")
    with pytest.raises(ValidationError):
        tools.handle(SimpleNamespace(nothing=True))


class SlowEmbedder(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(0.3)
        return super().embed(texts)


def test_async_memory_is_typed_and_its_tools_do_not_block_the_loop(make_memory):
    assert "__getattr__" not in AsyncMemory.__dict__
    for name in ("add", "search", "add_messages", "end_session", "build_context", "consolidate", "close"):
        assert inspect.iscoroutinefunction(getattr(AsyncMemory, name)), name
    assert "user_id" in inspect.signature(AsyncMemory.search).parameters

    async def main() -> tuple[int, dict[str, Any]]:
        async with AsyncMemory(make_memory(embedder=SlowEmbedder())) as m:
            tools = m.tools(user_id="u1")
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            task = asyncio.create_task(ticker())
            out = await tools.handle(_openai_call("remember", {"content": "用户对花生过敏"}))
            task.cancel()
            assert isinstance(await m.list(user_id="u1"), list)
            return ticks, out

    ticks, out = asyncio.run(main())
    assert ticks >= 10 and json.loads(out["content"])["content"] == "用户对花生过敏"


def test_memory_tools_ahandle(memory):
    out = asyncio.run(memory.tools(user_id="u1").ahandle(_anthropic_block("remember", {"content": "用户养猫"})))
    assert out["type"] == "tool_result" and [m.content for m in memory.list(user_id="u1")] == ["用户养猫"]


def test_memory_is_a_context_manager(tmp_path):
    from tests.conftest import make_config
    with Memory(make_config(tmp_path)) as m:
        m.add("用户养猫", user_id="u1")
    with Memory(make_config(tmp_path)) as again:
        assert [x.content for x in again.list(user_id="u1")] == ["用户养猫"]


def test_two_processes_remembering_the_same_store_it_once(make_memory, tmp_path):
    import threading
    a, b = make_memory(home=tmp_path / "shared"), make_memory(home=tmp_path / "shared")  # two connections
    barrier = threading.Barrier(2)

    def remember(m: Memory) -> None:
        barrier.wait()
        m.tools(user_id="u1").call("remember", {"content": "用户每周二和周六早上跑步"})

    threads = [threading.Thread(target=remember, args=(m,)) for m in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    [only] = a.list(user_id="u1")
    assert only.activation_count == 1


def test_anthropic_content_blocks_are_stored_as_their_text(memory):
    turns = memory.add_messages("s1", [
        {"role": "assistant", "content": [{"type": "text", "text": "查一下"},
                                          {"type": "tool_use", "id": "t1", "name": "search_memory",
                                           "input": {"query": "过敏"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "用户对花生过敏"}]}]},
    ], user_id="u1")
    assert [t.content for t in turns] == ['查一下\nsearch_memory({"query": "过敏"})', "用户对花生过敏"]
