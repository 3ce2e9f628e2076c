"""Sessions: the window, compaction, episodes and the scratchpad (issue 5; seeds 000, 002, 003, 004)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memlane import Memory
from memlane.errors import NotFound, ValidationError
from memlane.models import Turn
from memlane.sessions import select_window
from memlane.testing import ScriptedLLM

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
EPISODE_ONLY = {"rules": [{"name": "episode_on_session_end", "event_type": "session.ended",
                           "conditions": [{"field": "payload.message_count", "op": ">=", "value": 3}],
                           "actions": ["episode"]}]}


def turn(seq: int, role: str, content: str, at: datetime | None = None) -> Turn:
    return Turn(id=f"t{seq}", user_id="u", session_id="s", seq=seq, role=role, content=content,  # type: ignore[arg-type]
                created_at=at or T0 + timedelta(minutes=seq), token_count=0)


def msgs(n: int, text: str = "message {i} about topic{i:04d}") -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text.format(i=i),
             "created_at": (T0 + timedelta(minutes=i)).isoformat()} for i in range(n)]


# ---- window -----------------------------------------------------------------------------


def test_window_takes_newest_twenty_at_most():
    turns = [turn(i, "user", f"short {i}") for i in range(1, 31)]
    window = select_window(turns, max_tokens=4096)
    assert [m.turn.seq for m in window] == list(range(11, 31))


def test_window_cuts_each_message_at_500_chars_and_keeps_five():
    turns = [turn(i, "user" if i % 2 else "assistant", "长" * 3000) for i in range(1, 11)]
    window = select_window(turns, max_tokens=4096)
    assert len(window) >= 5
    assert all(len(m.content) <= 501 and m.cut for m in window)
    assert sum(m.tokens for m in window) <= 4096


def test_assistant_replies_are_cut_first():
    turns = [turn(i, "user" if i % 2 else "assistant", ("问" if i % 2 else "答") * 500) for i in range(1, 6)]
    window = select_window(turns, max_tokens=1800)
    users = [m for m in window if m.role == "user"]
    replies = [m for m in window if m.role == "assistant"]
    assert len(window) == 5
    assert all(m.content == "问" * 500 and not m.cut for m in users)
    assert all(m.cut and len(m.content) < 200 for m in replies)
    assert sum(m.tokens for m in window) <= 1800


def test_duplicates_with_same_time_and_text_are_dropped():
    at = T0 + timedelta(hours=1)
    turns = [turn(1, "user", "hello there", at), turn(2, "user", "hello there", at), turn(3, "user", "hello there")]
    window = select_window(turns, max_tokens=4096)
    assert [m.turn.seq for m in window] == [1, 3]


def test_budget_wins_when_even_labels_do_not_fit():
    turns = [turn(i, "user", "x" * 400) for i in range(1, 8)]
    window = select_window(turns, max_tokens=6)
    assert sum(m.tokens for m in window) <= 6


# ---- sessions -----------------------------------------------------------------------------


def test_start_session_creates_and_resumes(memory: Memory):
    s = memory.start_session(user_id="u", metadata={"channel": "web"})
    assert s.id and s.metadata == {"channel": "web"} and s.message_count == 0
    memory.add_messages(s.id, msgs(3), user_id="u")
    memory.end_session(s.id, user_id="u")
    again = memory.start_session(s.id, user_id="u")
    assert again.ended_at is None and again.message_count == 3
    with pytest.raises(ValidationError, match="session_id"):
        memory.start_session("", user_id="u")
    with pytest.raises(NotFound):
        memory.get_session("nope", user_id="u")


# ---- compaction ---------------------------------------------------------------------------


def test_compaction_summarises_the_older_half_and_keeps_every_turn_searchable(make_memory):
    memory = make_memory("companion")  # seed 003: working memory of 30 messages
    for i in range(0, 32, 4):
        memory.add_messages("s", msgs(32)[i:i + 4], user_id="u")
    session = memory.get_session("s", user_id="u")
    assert session.metadata["compacted_through"] == 16  # 32 > 30 → the older half, turns 1–16
    assert "topic" in session.summary
    for i in range(32):
        hits = memory.search(f"topic{i:04d}", user_id="u", corpus="turns", limit=3)
        assert hits and hits[0].content == f"message {i} about topic{i:04d}", i
    ctx = memory.build_context("s", user_id="u")
    assert ctx.block("summary").text
    assert all(m.turn.seq > 16 for m in ctx.history)


def test_compaction_uses_the_llm_and_merges_the_previous_summary(make_memory):
    memory = make_memory(session={"compaction_cap": 10})
    # each compaction summarises, then extracts from the compacted turns (seed 002 §6)
    memory.llm = ScriptedLLM("用户在规划杭州旅行。", {"operations": []},
                             "用户在规划杭州旅行，并订了酒店。", {"operations": []})
    memory.add_messages("s", msgs(11), user_id="u")
    assert memory.get_session("s", user_id="u").summary == "用户在规划杭州旅行。"
    memory.add_messages("s", msgs(20)[11:], user_id="u")  # 20 - 5 = 15 uncompacted > 10
    assert memory.get_session("s", user_id="u").summary == "用户在规划杭州旅行，并订了酒店。"
    second_prompt = memory.llm.calls[2]["messages"][1]["content"]
    assert "用户在规划杭州旅行。" in second_prompt  # the earlier summary is merged in
    assert len(memory.get_turns("s", user_id="u")) == 20
    assert [j.last_seq for j in memory.store.jobs(status=["done"])] == [5, 12]  # compacted ranges extracted


def test_compaction_falls_back_to_an_extractive_summary_when_the_llm_fails(make_memory):
    from memlane.errors import BackendError

    memory = make_memory(session={"compaction_cap": 10})
    memory.llm = ScriptedLLM(BackendError("server down"))
    turns = memory.add_messages("s", msgs(11), user_id="u")
    assert len(turns) == 11
    assert "topic" in memory.get_session("s", user_id="u").summary


# ---- episodes -----------------------------------------------------------------------------


def test_episode_after_end_session_is_stored_and_searchable(memory: Memory):
    memory.add_messages("s1", [
        {"role": "user", "content": "帮我规划一下去杭州西湖的周末旅行"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search_hotels", "arguments": "{}"}}]},
        {"role": "tool", "name": "search_hotels", "content": "西湖边有三家酒店"},
        {"role": "assistant", "content": "已为你订好西湖边的酒店，周六出发。"},
    ], user_id="u")
    memory.end_session("s1", user_id="u")
    [ep] = memory.episodes(user_id="u")
    assert ep.session_id == "s1"
    assert ep.tools_used == ["search_hotels"]
    assert "杭州" in ep.goal and "酒店" in ep.outcome
    assert ep.started_at <= ep.ended_at
    assert "西湖" in ep.entities
    hits = memory.search("杭州旅行", user_id="u", corpus="episodes")
    assert [h.id for h in hits] == [ep.id]


def test_episode_from_the_llm(make_memory):
    memory = make_memory(events=EPISODE_ONLY)
    memory.llm = ScriptedLLM({"summary": "User planned a weekend in Hangzhou.", "goal": "plan a trip",
                              "outcome": "hotel booked", "entities": ["Hangzhou"], "tools_used": ["maps"]})
    memory.add_messages("s1", msgs(4, "let us plan the Hangzhou trip, step {i}"), user_id="u")
    memory.end_session("s1", user_id="u")
    [ep] = memory.episodes(user_id="u", session_id="s1")
    assert (ep.summary, ep.goal, ep.outcome, ep.entities, ep.tools_used) == (
        "User planned a weekend in Hangzhou.", "plan a trip", "hotel booked", ["Hangzhou"], ["maps"])
    assert memory.llm.calls[0]["json_schema"]["required"] == ["summary"]


def test_a_malformed_llm_episode_falls_back_to_the_extractive_one(make_memory):
    memory = make_memory(events=EPISODE_ONLY)
    memory.llm = ScriptedLLM("I'd rather not")
    memory.add_messages("s1", msgs(4, "we talked about sourdough baking, step {i}"), user_id="u")
    memory.end_session("s1", user_id="u")
    [ep] = memory.episodes(user_id="u")
    assert "sourdough" in ep.summary


def test_short_sessions_produce_no_episode_and_ending_twice_keeps_one(memory: Memory):
    memory.add_messages("short", msgs(2), user_id="u")
    memory.end_session("short", user_id="u")
    assert memory.episodes(user_id="u") == []
    memory.add_messages("short", msgs(4)[2:], user_id="u")
    memory.end_session("short", user_id="u")
    memory.end_session("short", user_id="u")
    assert len(memory.episodes(user_id="u")) == 1


def test_episodes_stay_in_their_scope(memory: Memory):
    memory.add_messages("s", msgs(4, "secret project falcon {i}"), user_id="alice")
    memory.end_session("s", user_id="alice")
    assert memory.search("falcon", user_id="bob", corpus="episodes") == []
    assert memory.episodes(user_id="bob") == []


# ---- scratchpad ---------------------------------------------------------------------------


def test_scratchpad_focus_switch_archives_and_keeps_last_five(memory: Memory):
    assert memory.scratchpad(user_id="u").current_focus == ""
    for i in range(8):
        memory.update_scratchpad(user_id="u", focus=f"task {i}")
    pad = memory.scratchpad(user_id="u")
    assert pad.current_focus == "task 7"
    assert [t["task"] for t in pad.recent_tasks] == [f"task {i}" for i in range(2, 7)]
    pad = memory.update_scratchpad(user_id="u", done="task 7")
    assert pad.current_focus == "" and pad.recent_tasks[-1]["task"] == "task 7"
    assert memory.scratchpad(user_id="other").recent_tasks == []


def test_companion_episodes_are_also_episode_memories(make_memory):
    memory = make_memory("companion")  # seed 003: episodic layer lives in the knowledge base
    memory.add_messages("s1", msgs(4, "we chatted about the job interview, part {i}"), user_id="u")
    memory.end_session("s1", user_id="u")
    memory.end_session("s1", user_id="u")
    [mem] = memory.list(user_id="u", category="episode")
    assert mem.source == "system" and mem.source_session == "s1"
    assert mem.content.startswith("[2026-03-01 09:00] ") and "interview" in mem.content


# ---- seed 003: the monitor (后台小祥) after every turn, with no cap a session (issue 30, row 1) ----


class _Monitor(ScriptedLLM):
    """Answers each extraction call with the next queued reply; any other call (a summary)
    with a sentence, so only the monitor's calls are counted."""

    def __init__(self, *replies: str | dict) -> None:
        super().__init__(*replies)
        self.extractions = 0

    def complete(self, messages, *, json_schema=None):  # type: ignore[no-untyped-def]
        if "operations" not in str(json_schema or ""):
            return "聊了近况。"
        self.extractions += 1
        return super().complete(messages, json_schema=json_schema)


FACTS = ["我在杭州上班", "我养了一只橘猫", "我每天早上跑步", "我喜欢喝白茶", "我女儿今年六岁",
         "我对花生过敏", "我下个月要搬家", "我最近在学吉他"]


def test_companion_monitor_keeps_memories_current_past_the_fifth_turn(make_memory) -> None:
    from memlane.testing import ManualClock

    m = make_memory("companion", clock=ManualClock(T0))
    m.llm = _Monitor(*[{"operations": [{"op": "ADD", "content": "用户" + fact[1:], "category": "fact"}]}
                       for fact in FACTS])
    for k, fact in enumerate(FACTS, start=1):
        m.clock.now = T0 + timedelta(minutes=k)
        m.add_messages("s1", [{"role": "user", "content": fact}, {"role": "assistant", "content": "嗯嗯"}],
                       user_id="u1")
        # right after the turn, before any end_session: the 6th, 7th and 8th turns too
        assert m.llm.extractions == k
        assert "用户" + fact[1:] in {x.content for x in m.list(user_id="u1")}
    m.end_session("s1", user_id="u1")
    assert m.llm.extractions == len(FACTS)  # every turn was extracted once, none again at the end
    facts = {x.content for x in m.list(user_id="u1") if x.category == "fact"}
    assert facts == {"用户" + fact[1:] for fact in FACTS}


def test_seed002_extraction_keeps_its_five_a_session(make_memory) -> None:
    m = make_memory("progressive")
    m.llm = _Monitor(*[{"operations": []}] * 10)
    for k in range(8):
        m.add_messages("s1", [{"role": "user", "content": f"a long enough message number {k} about my week"}],
                       user_id="u1")
    assert m.llm.extractions == 5  # seed 002 §6: ≤5 per session; the rest wait for end_session
