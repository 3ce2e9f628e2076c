"""Agent tools: schemas, handlers, and a scripted progressive-disclosure conversation (seed 002 §3)."""

from __future__ import annotations

import json
from typing import Any

from memlane import Memory
from memlane.testing import ScriptedLLM
from memlane.tools import SCHEMAS, TOOL_NAMES, MemoryTools


def call(name: str, args: dict[str, Any], id_: str = "c1") -> dict[str, Any]:
    return {"tool_calls": [{"id": id_, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]}


def agent_turn(llm: ScriptedLLM, tools: MemoryTools, messages: list[dict[str, Any]], rounds: int = 4) -> str:
    """The smallest tool-calling loop: the scripted LLM answers with tool calls (as JSON) or text."""
    for _ in range(rounds):
        raw = llm.complete(messages)  # type: ignore[arg-type]
        try:
            reply = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        messages.append({"role": "assistant", "content": None, "tool_calls": reply["tool_calls"]})
        messages.extend(tools.handle(c) for c in reply["tool_calls"])
    raise AssertionError("the scripted conversation did not finish")


def test_schemas_are_openai_function_tools():
    assert TOOL_NAMES == ("search_memory", "search_conversation_traces", "recall_memory", "remember", "forget",
                          "update_scratchpad")
    for schema in SCHEMAS:
        fn = schema["function"]
        assert schema["type"] == "function" and fn["description"]
        assert fn["parameters"]["type"] == "object"
        assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])


def test_progressive_disclosure_conversation(make_memory):
    memory: Memory = make_memory("progressive")
    memory.add("用户部署时偏好 Cloudflare Workers", user_id="lin", category="preference", importance="high")
    memory.add_messages("old", [
        {"role": "user", "content": "帮我把博客部署到 Cloudflare Workers"},
        {"role": "assistant", "content": "先部署一次。", "tool_calls": [{"id": "d1", "type": "function", "function": {
            "name": "shell", "arguments": '{"cmd": "wrangler deploy --compatibility-date 2026-01-15"}'}}]},
        {"role": "tool", "name": "shell", "content": "部署失败：CPU time limit exceeded (error 1102)"},
        {"role": "assistant", "content": "部署超时了，改用 --minify 后成功。"},
    ], user_id="lin")
    memory.end_session("old", user_id="lin")

    memory.add_messages("new", [{"role": "user", "content": "再部署一次博客，上次是什么报错？"}], user_id="lin")
    ctx = memory.build_context("new", "再部署一次博客，上次是什么报错？", user_id="lin")
    assert ctx.memories == []  # seed 002: nothing injected, the model searches
    tools = memory.tools(user_id="lin", session_id="new")
    llm = ScriptedLLM(
        call("search_memory", {"query": "部署 Cloudflare"}),
        call("search_conversation_traces", {"query": "部署失败 error"}, "c2"),
        "上次报错是 CPU time limit exceeded (1102)，加 --minify 解决。",
    )
    messages = ctx.messages()
    answer = agent_turn(llm, tools, messages)
    assert "1102" in answer

    level1 = json.loads(messages[-3]["content"])
    assert level1["memories"][0]["content"] == "用户部署时偏好 Cloudflare Workers"
    assert level1["episodes"] and level1["episodes"][0]["session_id"] == "old"
    assert "shell" in level1["episodes"][0]["tools_used"]
    level2 = json.loads(messages[-1]["content"])
    assert "turns" in level2, level2
    assert messages[-1]["tool_call_id"] == "c2"
    top = level2["turns"][0]
    assert top["content"] == "部署失败：CPU time limit exceeded (error 1102)"
    assert (top["session_id"], top["role"], top["name"]) == ("old", "tool", "shell")
    # the model saw the tool results in its next prompt
    assert "1102" in json.dumps(llm.calls[2]["messages"], ensure_ascii=False)


def test_recall_memory_reaches_archived_only(memory: Memory):
    active = memory.add("the user's cat is called Miso", user_id="u")
    archived = memory.add("the user's old cat was called Tofu", user_id="u")
    memory.update(archived.id, user_id="u", status="archived")
    tools = memory.tools(user_id="u")
    recalled = tools.call("recall_memory", {"query": "cat called"})
    assert [m["id"] for m in recalled["memories"]] == [archived.id]
    searched = tools.call("search_memory", {"query": "cat called"})
    assert [m["id"] for m in searched["memories"]] == [active.id]


def test_remember_forget_and_scratchpad_tools(memory: Memory):
    tools = memory.tools(user_id="u", session_id="s1")
    added = tools.call("remember", {"content": "用户每天早上九点看A股", "importance": "high"})
    rec = memory.get(added["id"], user_id="u")
    # the model's choice, not the person's word: unconfirmed, and it may fade
    assert (rec.source, rec.verified, rec.pinned, rec.source_session, rec.score) == ("agent", False, False, "s1", 0.8)
    gone = tools.call("forget", {"memory_id": added["id"]})
    assert gone["deleted"] == added["id"] and memory.list(user_id="u") == []
    assert memory.history(added["id"], user_id="u")[-1].actor == "agent"
    pad = tools.call("update_scratchpad", {"current_focus": "写周报"})
    pad = tools.call("update_scratchpad", {"current_focus": "回邮件", "finished_task": "写周报"})
    assert pad["current_focus"] == "回邮件" and [t["task"] for t in pad["recent_tasks"]] == ["写周报"]


def test_mistakes_come_back_to_the_model_as_errors(memory: Memory):
    tools = memory.tools(user_id="u")
    assert "not found" in tools.call("forget", {"memory_id": "nope"})["error"]
    assert "unknown tool" in tools.call("rm_rf", {})["error"]
    assert "not valid JSON" in tools.call("search_memory", "{oops")["error"]
    assert "limit" in tools.call("search_memory", {"query": "x", "limit": 500})["error"]
    assert "query" in tools.call("search_memory", {"q": "x"})["error"]
    assert "category" in tools.call("remember", {"content": "x", "category": "nonsense"})["error"]
    assert "current_focus" in tools.call("update_scratchpad", {})["error"]
    msg = tools.handle({"id": "z", "function": {"name": "search_memory", "arguments": '{"query": ""}'}})
    assert msg["role"] == "tool" and "error" in json.loads(msg["content"])


def test_tools_never_cross_scopes(memory: Memory):
    memory.add("alice's secret: the vault code is 1234", user_id="alice")
    bob = memory.tools(user_id="bob")
    assert bob.call("search_memory", {"query": "vault code"}) == {"memories": [], "episodes": [], "attachments": []}
    assert bob.call("search_conversation_traces", {"query": "vault"}) == {"turns": []}


def test_remembering_again_reinforces_but_never_confirms(memory: Memory):
    tools = memory.tools(user_id="u", session_id="s1")
    first = tools.call("remember", {"content": "the user waters the orchids on Sundays"})
    again = tools.call("remember", {"content": "the user waters the orchids on Sundays", "importance": "high"})
    assert again["already_known"] is True and again["id"] == first["id"]
    rec = memory.get(first["id"], user_id="u")
    assert (rec.source, rec.verified, rec.pinned, rec.score) == ("agent", False, False, 0.8)
    # a memory a person confirmed stays confirmed when the agent remembers it too
    person = memory.add("the user is allergic to peanuts", user_id="u", verified=True, actor="cli")
    assert tools.call("remember", {"content": "the user is allergic to peanuts"})["id"] == person.id
    assert memory.get(person.id, user_id="u").verified is True


def test_an_agent_cannot_confirm_or_pin_through_a_tool_call(memory: Memory):
    tools = memory.tools(user_id="u")
    for extra in ({"verified": True}, {"pinned": True}, {"source": "user"}):
        out = tools.call("remember", {"content": "the user lives in Hangzhou", **extra})
        assert "unexpected keyword argument" in out["error"], extra
    assert memory.list(user_id="u") == []
    # the same call in an SDK's shape is refused the same way
    msg = tools.handle({"id": "z", "type": "function", "function": {
        "name": "remember", "arguments": json.dumps({"content": "the user lives in Hangzhou", "verified": True})}})
    assert "error" in json.loads(msg["content"]) and memory.list(user_id="u") == []


def test_search_memory_asks_about_another_time_and_says_when_a_fact_held(make_memory):
    """Issue 32: `as_of` finds what held then; a replaced fact's hit says when it held and what
    replaced it; the default search shows only the current fact. In both languages."""
    from datetime import UTC, datetime

    from memlane.testing import ManualClock

    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    memory: Memory = make_memory(clock=clock)
    old = memory.add("用户住在慕尼黑", user_id="lin", category="fact")
    clock.now = datetime(2026, 4, 1, tzinfo=UTC)  # told after the move
    new = memory.supersede(old.id, "用户住在柏林", user_id="lin", valid_from=datetime(2026, 3, 20, tzinfo=UTC))
    tools = memory.tools(user_id="lin")
    assert {"as_of", "include_superseded"} <= set(SCHEMAS[0]["function"]["parameters"]["properties"])

    now = tools.call("search_memory", {"query": "用户住在"})["memories"]
    assert [h["id"] for h in now] == [new.id] and now[0]["valid"] == "since 2026-03-20"
    then = tools.call("search_memory", {"query": "用户住在", "as_of": "2026-03-10"})["memories"]
    assert [h["id"] for h in then] == [old.id]
    assert (then[0]["status"], then[0]["valid"], then[0]["replaced_by"]) == (
        "superseded", "2026-03-01 – 2026-03-20", new.id)
    both = tools.call("search_memory", {"query": "用户住在", "include_superseded": True})["memories"]
    assert {h["id"] for h in both} == {old.id, new.id}
    plain = memory.add("user keeps bees", user_id="lin", category="fact")
    hit = tools.call("search_memory", {"query": "bees"})["memories"][0]
    assert hit["id"] == plain.id and "valid" not in hit and "replaced_by" not in hit  # an unchanged fact: as before
    assert "as_of" in tools.call("search_memory", {"query": "x", "as_of": "last spring"})["error"]
    assert "include_superseded" in tools.call("search_memory", {"query": "x", "include_superseded": "yes"})["error"]
