"""Issue 13, "rows that stop short": seed 002's retention and storage, seed 003's top of the
scale, seed 004 §11's persisted events — each from its seed's words."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from memlane import Memory
from memlane.errors import ConfigError, NotFound, ValidationError
from memlane.models import Scope
from memlane.testing import ManualClock, ScriptedLLM

from .conftest import PROFILE_NAMES, T0, ops
from .lifecycle_support import Clock, extracted

MakeMemory = Callable[..., Memory]
LONG = "我这周在做上海到北京的出差安排，高铁票和酒店都要订，顺便记一下我的习惯。"  # ≥ 30 chars (seed 002 §6)


def _extract(make_memory: MakeMemory, profile: str, *items: dict[str, Any], **kw: Any) -> Memory:
    """One session "s1" of user u1 whose extraction answers `items`, at T0."""
    # the scripted replies are the extraction's: progressive's topic judge (its own call each
    # user turn, tests/test_topics.py) is left to the rules here
    kw.setdefault("session", {"topic_llm": False})
    m = make_memory(profile, clock=ManualClock(T0), extraction={"every_n_user_messages": 0}, **kw)
    m.llm = ScriptedLLM(ops(*items))
    m.add_messages("s1", [{"role": "user", "content": LONG}], user_id="u1")
    m.extract("s1", user_id="u1")
    return m


def _by_content(m: Memory) -> dict[str, Any]:
    return {x.content: x for x in m.list(user_id="u1")}


# ---- seed 002 §4 retention ------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize(("duration", "days"), [("short_term", 3), ("SHORT_TERM", 3), ("transient", 1),
                                                ("long_term", 30), ("3d", 3)])
def test_seed002_priorities_set_expires_at(make_memory: MakeMemory, profile: str, duration: str, days: int) -> None:
    """Seed 002: "SHORT_TERM | 3 天 | expires_at = now + 3d" — the answer schema takes the priorities."""
    m = _extract(make_memory, profile, {"op": "ADD", "content": "用户这周在出差", "duration": duration})
    got = _by_content(m)["用户这周在出差"]
    assert got.expires_at == T0 + timedelta(days=days)


RETENTION = [  # category, rule_scope → days (None: permanent)
    ("error", None, 7), ("rule", "task", 1), ("rule", "behaviour", None), ("rule", None, None),
    ("preference", None, None), ("skill", None, None), ("fact", None, None),
]


@pytest.mark.parametrize("profile", ["progressive", "default"])
def test_seed002_default_retention_per_type(make_memory: MakeMemory, profile: str) -> None:
    """Seed 002 §4 默认保留: ERROR 7d, RULE 24h (任务规则) / permanent (行为规则), PREFERENCE
    and SKILL permanent, FACT by the LLM. Only the progressive profile has these defaults."""
    items = [{"op": "ADD", "content": f"memory {i} {cat} {scope}", "category": cat,
              **({"rule_scope": scope} if scope else {})} for i, (cat, scope, _) in enumerate(RETENTION)]
    m = _extract(make_memory, profile, *items)
    got = _by_content(m)
    for i, (cat, scope, days) in enumerate(RETENTION):
        mem = got[f"memory {i} {cat} {scope}"]
        want = T0 + timedelta(days=days) if profile == "progressive" and days else None
        assert mem.expires_at == want, (cat, scope)


@pytest.mark.parametrize("profile", ["progressive", "default"])
def test_seed002_transient_is_cleaned_at_end_session(make_memory: MakeMemory, profile: str) -> None:
    """Seed 002: "TRANSIENT | 1 天 | expires_at = now + 1d，end_session 时清理"."""
    m = _extract(make_memory, profile,
                 {"op": "ADD", "content": "用户现在在高铁上", "duration": "transient"},
                 {"op": "ADD", "content": "用户这周出差", "duration": "short_term"})
    other = m.add("用户在另一个会话里说的临时状态", user_id="u1", session_id="s2", source="extractor",
                  metadata={"priority": "transient"})
    m.end_session("s1", user_id="u1")
    left = set(_by_content(m))
    if profile == "progressive":
        assert left == {"用户这周出差", other.content}  # s2 is still running
        gone = next(e for e in m.history(_deleted_id(m), user_id="u1") if e.kind == "DELETE")
        assert gone.actor == "end_session"
    else:
        assert left == {"用户现在在高铁上", "用户这周出差", other.content}


@pytest.mark.parametrize("profile", ["progressive", "default"])
def test_seed002_short_term_low_score_is_deleted_not_demoted(make_memory: MakeMemory, profile: str) -> None:
    """Seed 002: "SHORT_TERM | 3 天 | … compute_decay 低分直接删除" (a low score below the
    demotion point deletes it; other memories are demoted to TRANSIENT)."""
    m = make_memory(profile)
    short = extracted(m, "用户这两天在赶一个报告", "fact", 0.25, metadata={"priority": "short_term"})
    other = extracted(m, "用户以前用过 Vim", "fact", 0.25)
    m.consolidate(user_id="u1")
    left = {x.id: x for x in m.list(user_id="u1")}
    if profile == "progressive":
        assert short.id not in left and left[other.id].metadata["priority"] == "transient"
    else:  # no demotion in this profile: 0.25 is above archive_below, both stay
        assert set(left) == {short.id, other.id}


def _deleted_id(m: Memory) -> str:
    return next(e.memory_id for e in m.store.events(Scope.of("u1")) if e.kind == "DELETE")


# ---- seed 003: importance ≥ 3.0 never decays; KEEP on the review's own scale ----------------------


@pytest.mark.parametrize("profile", ["companion", "default"])
def test_seed003_top_importance_never_decays(make_memory: MakeMemory, profile: str) -> None:
    """Seed 003 衰减规则: "core / importance≥3.0 | 永不衰减 | 永不删除" (3.0 of 3 is 1.0 here)."""
    clock = Clock()
    m = make_memory(profile, clock=clock)
    top = extracted(m, "主人的生日是五月一日", "fact", 1.0)
    below = extracted(m, "主人喜欢拉面", "fact", 0.95)
    dated = extracted(m, "主人答应周末一起看电影", "fact", 1.0, expires_at=clock.now + timedelta(days=2))
    clock.at_day(40)
    m.consolidate(user_id="u1")
    scores = {x.id: x.score for x in m.list(user_id="u1")}
    if profile == "companion":
        assert scores[top.id] == scores[dated.id] == 1.0  # 永不衰减, 永不删除
    else:
        assert scores[top.id] < 1.0 and dated.id not in scores
    assert scores.get(below.id, 0.0) < 0.95


@pytest.mark.parametrize(("profile", "keep"), [("companion", 0.17), ("default", 0.5)])
def test_seed003_decay_review_keep_resets_to_the_trigger(make_memory: MakeMemory, profile: str, keep: float) -> None:
    """Seed 003 审核: the decay review fires "importance 降到 0.5 以下" and KEEP "重置 importance
    到 0.5" — the same point. On memlane's scale that point is review_below (0.5 / 3)."""
    m = make_memory(profile, lifecycle={"reviewer": True})
    m.llm = ScriptedLLM({"decision": "KEEP", "reason": "还有用"})
    mem = extracted(m, "主人以前住在杭州", "fact", 0.12)
    m.consolidate(user_id="u1")
    got = m.get(mem.id, user_id="u1")
    assert got.score == pytest.approx(keep)
    assert got.score >= m.config.policy.review_below  # no second review until it decays again


# ---- seed 002 §3 second level: tool arguments and results are searchable ---------------------------

TRAIN_CALL = [{"id": "call_7f3", "type": "function", "function": {
    "name": "search_trains", "arguments": json.dumps({"date": "2026-03-05", "from": "上海", "to": "北京"})}}]
TRIP = [{"role": "user", "content": "帮我看看周四去北京的车"},
        {"role": "assistant", "content": "", "tool_calls": TRAIN_CALL},
        {"role": "assistant", "content": "好的，我查一下。"},
        {"role": "user", "content": "谢谢"}]


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_seed002_traces_find_tool_arguments(make_memory: MakeMemory, profile: str) -> None:
    """Seed 002: search_conversation_traces returns "原始对话记录 (含工具参数/返回值)" — a query
    naming the tool and its argument finds the turn that holds the call."""
    m = make_memory(profile)
    m.add_messages("s1", TRIP, user_id="u1")
    found = m.tools(user_id="u1").call("search_conversation_traces", {"query": "search_trains 2026-03-05"})
    assert found["turns"][0]["tool_calls"] == TRAIN_CALL
    results = [{"role": "assistant", "content": "结果", "tool_calls": [{"id": "c2", "type": "function", "function": {
        "name": "book_hotel", "arguments": "{}"}, "result": {"hotel": "Hanting Xidan", "price": 388}}]}]
    m.add_messages("s1", results, user_id="u1")
    assert m.search("Hanting Xidan 388", user_id="u1", corpus="turns")[0].content == "结果"
    m.add_messages("s1", [{"role": "tool", "name": "get_weather", "content": "晴 12°C"}], user_id="u1")
    assert m.search("get_weather", user_id="u1", corpus="turns")[0].content == "晴 12°C"


def test_old_databases_get_their_tool_calls_indexed(make_memory: MakeMemory, tmp_path: Path, sqlite_only: None) -> None:
    """A database written before migration m011: its stored tool calls become searchable."""
    m = make_memory("default", home=tmp_path / "old")
    m.add_messages("s1", TRIP, user_id="u1")
    path = m.config.db_path
    m.close()
    db = apsw.Connection(str(path))  # as the older code left it: the body is the content alone
    db.execute("UPDATE turns_fts SET body = (SELECT content FROM turns WHERE turns.rowid = turns_fts.rowid);"
               "DROP TABLE attachments; DROP TABLE events;"
               "DELETE FROM migrations WHERE name = 'm011_attachments_events_tool_text'")
    db.close()
    again = make_memory("default", home=tmp_path / "old")
    assert again.search("search_trains 2026-03-05", user_id="u1", corpus="turns")[0].turn.tool_calls == TRAIN_CALL


# ---- seed 002 §8 attachments, nightly clean-up; the session level ----------------------------------


@pytest.mark.parametrize("profile", ["progressive", "default"])
def test_seed002_attachments_and_their_nightly_cleanup(make_memory: MakeMemory, profile: str) -> None:
    """Seed 002: memory.db holds `attachments # 文件/媒体记忆`; the nightly pass ends with
    "清理过期附件" (expired attachments are cleaned, the rest stay)."""
    clock = Clock()
    m = make_memory(profile, clock=clock)
    m.add_messages("s1", [{"role": "user", "content": "车票发你了"}], user_id="u1")
    pdf = b"%PDF-1.7 G2 Shanghai-Beijing 2026-03-05"
    ticket = m.attachments.add("ticket.pdf", user_id="u1", data=pdf, media_type="application/pdf",
                               session_id="s1", description="G2 上海→北京", duration="short_term")
    photo = m.attachments.add("cat.jpg", user_id="u1", uri="file:///photos/cat.jpg", media_type="image/jpeg")
    assert ticket.data is None and ticket.size == len(pdf) and ticket.expires_at == clock.now + timedelta(days=3)
    assert m.attachments.get(ticket.id, user_id="u1").data == pdf
    assert m.attachments.list(user_id="u2") == []  # no other scope sees them
    with pytest.raises(ValidationError, match="data"):
        m.attachments.add("empty", user_id="u1")
    clock.at_day(2)
    assert [a.id for a in m.attachments.list(user_id="u1")] == [ticket.id, photo.id]
    clock.at_day(4)
    report = m.consolidate(user_id="u1")
    for _ in range(100):  # a background job of the add above may hold the scope: the next run takes it
        if not report.locked:
            break
        time.sleep(0.05)
        report = m.consolidate(user_id="u1")
    assert [(a.step, a.memory_id) for a in report.actions if a.action == "DELETE"] == [("expire", ticket.id)], (
        report.locked, report.errors, report.scopes)
    assert [a.id for a in m.attachments.list(user_id="u1")] == [photo.id]
    with pytest.raises(NotFound):
        m.attachments.get(ticket.id, user_id="u1")
    m.purge(user_id="u1")
    assert m.store.raw_count("attachments") == 0


def test_seed002_session_variables_and_current_task(make_memory: MakeMemory) -> None:
    """Seed 002 "Session 级别": 对话历史 messages, 当前任务 current_task, 会话变量 variables."""
    m = make_memory("progressive")
    m.add_messages("s1", [{"role": "user", "content": "帮我订去北京的票"}], user_id="u1")
    m.add_messages("s2", [{"role": "user", "content": "另一个会话"}], user_id="u1")
    state = m.session_state.update("s1", user_id="u1", current_task="订 3 月 5 日去北京的高铁",
                                   variables={"city": "北京", "seats": 2})
    assert (state.current_task, state.variables) == ("订 3 月 5 日去北京的高铁", {"city": "北京", "seats": 2})
    state = m.session_state.update("s1", user_id="u1", variables={"seats": None, "class": "二等座"})
    assert state.variables == {"city": "北京", "class": "二等座"}
    assert m.session_state.get("s2", user_id="u1").variables == {}  # per session
    with pytest.raises(NotFound):
        m.session_state.get("s1", user_id="u2")
    with pytest.raises(ValidationError, match="variables"):
        m.session_state.update("s1", user_id="u1", variables=["not", "a", "dict"])  # type: ignore[arg-type]
    m.attachments.add("seat.png", user_id="u1", data=b"png", session_id="s1")
    m.delete_session("s1", user_id="u1")
    assert m.attachments.list(user_id="u1") == []
    with pytest.raises(NotFound):
        m.session_state.get("s1", user_id="u1")


# ---- seed 004 §11: an events table; action_mode, risk_level, actions of one's own --------------------


@pytest.mark.parametrize("profile", ["consolidator", "default"])
def test_seed004_events_are_persisted_without_their_texts(make_memory: MakeMemory, profile: str) -> None:
    """Seed 004 §11.3: "事件有独立的 events 表" — under the consolidator profile every event is
    kept, its payload without texts; purge removes them."""
    m = make_memory(profile)
    m.add_messages("s1", [{"role": "user", "content": f"第 {i} 条：我们用 PostgreSQL 16"} for i in range(3)],
                   user_id="u1")
    m.end_session("s1", user_id="u1")
    rule = m.add("禁止使用 any 类型", user_id="u1", importance=0.9)
    m.delete(rule.id, user_id="u1", reason="禁止使用 any 类型 is outdated")
    kept = m.events.stored(user_id="u1")
    if profile == "default":
        assert kept == [] and m.store.raw_count("events") == 0
        return
    assert [e.type for e in kept] == ["memory.deleted", "memory.write.important", "session.ended"]
    ended = kept[-1]
    assert ended.payload == {"session_id": "s1", "message_count": 3} and ended.status == "done"
    assert [(a["rule"], a["action"], a["status"]) for a in ended.actions][0] == (
        "extract_on_session_end", "extract", "done")
    assert kept[1].payload == {"memory_id": rule.id, "category": rule.category, "score": 0.9}
    assert "any" not in json.dumps([e.payload for e in kept], ensure_ascii=False)
    assert m.events.stored(user_id="u2") == []
    m.purge(user_id="u1")
    assert m.store.raw_count("events") == 0


@pytest.mark.parametrize(("mode", "risk", "max_risk", "runs"), [
    ("auto", "low", "high", True), ("confirm", "low", "high", False),
    ("auto", "high", "medium", False), ("auto", "medium", "medium", True)])
def test_seed004_action_mode_and_risk_level(tmp_path: Path, mode: str, risk: str, max_risk: str, runs: bool) -> None:
    """Seed 004 §11.1's rule: {"event_type": "session.ended", "conditions": …, "action_mode":
    "auto", "actions": [{"action_type": "run_agent", "target": …}], "risk_level": "low"} —
    an action of one's own, run at once or held until a person agrees."""
    from .conftest import make_config

    rules = [{"name": "notify_on_session_end", "event_type": "session.ended",
              "conditions": [{"field": "payload.message_count", "op": ">=", "value": 3}],
              "action_mode": mode, "risk_level": risk,
              "actions": [{"action_type": "notify", "target": "slack"}]}]
    sent: list[str] = []
    m = Memory(make_config(tmp_path, "consolidator", events={"rules": rules, "auto_max_risk": max_risk}),
               actions={"notify:slack": lambda e: sent.append(e.subject) or "sent"})
    try:
        m.add_messages("s1", [{"role": "user", "content": f"message {i}"} for i in range(3)], user_id="u1")
        results = m.end_session("s1", user_id="u1")
        assert [(r.action, r.status) for r in results] == [("notify:slack", "done" if runs else "pending")]
        assert sent == (["session:s1"] if runs else [])
        pending = m.events.stored(user_id="u1", status="pending")
        assert len(pending) == (0 if runs else 1)
        if not runs:
            again = m.events.run_pending(pending[0].id, user_id="u1")
            assert [(r.result, r.status) for r in again] == [("sent", "done")] and sent == ["session:s1"]
            assert m.events.stored(user_id="u1")[0].status == "done"
            assert m.events.run_pending(pending[0].id, user_id="u1") == []  # run once
    finally:
        m.close()


def test_seed004_rule_with_an_unregistered_action_says_how_to_register(tmp_path: Path) -> None:
    from .conftest import make_config

    rules = [{"name": "r", "event_type": "session.ended", "actions": [{"action_type": "run_agent", "target": "x"}]}]
    with pytest.raises(ConfigError, match="run_agent:x.*Memory\\(actions="):
        Memory(make_config(tmp_path, events={"rules": rules}))


def test_seed004_a_held_action_that_fails_is_recorded_as_failed(tmp_path: Path) -> None:
    from .conftest import make_config

    rules = [{"name": "r", "event_type": "session.ended", "action_mode": "confirm", "actions": ["boom", "episode"]}]

    def boom(event: Any) -> None:
        raise RuntimeError("webhook down")

    m = Memory(make_config(tmp_path, "consolidator", events={"rules": rules}), actions={"boom": boom})
    try:
        m.add_messages("s1", [{"role": "user", "content": "hello"}], user_id="u1")
        m.end_session("s1", user_id="u1")
        event = m.events.stored(user_id="u1", status="pending")[0]
        with pytest.raises(RuntimeError, match="webhook down"):
            m.events.run_pending(event.id, user_id="u1")
        after = m.events.stored(user_id="u1")[0]
        assert after.status == "failed"
        assert [(a["action"], a["status"]) for a in after.actions] == [("boom", "failed"), ("episode", "pending")]
    finally:
        m.close()


def test_seed002_search_memory_finds_attachments_by_name_description_and_text(make_memory: MakeMemory) -> None:
    """Seed 002's 文件/媒体记忆 are found as memories are: `search_memory` returns the files
    whose name, description or extracted text (metadata "text") hold the query's words, and
    no longer once they expired."""
    clock = Clock()
    m = make_memory("progressive", clock=clock)
    m.add_messages("s1", [{"role": "user", "content": "车票发你了"}], user_id="u1")
    ticket = m.attachments.add("ticket.pdf", user_id="u1", data=b"%PDF", media_type="application/pdf",
                               description="G2 上海→北京 高铁票", duration="short_term")
    scan = m.attachments.add("scan-0412.png", user_id="u1", data=b"png",
                             metadata={"text": "Blood test results: cholesterol 5.2 mmol/L"})
    tools = m.tools(user_id="u1")
    found = tools.call("search_memory", {"query": "去北京的高铁票"})["attachments"]
    assert [a["id"] for a in found] == [ticket.id] and found[0]["score"] >= m.config.search.min_relevance
    assert [a["id"] for a in tools.call("search_memory", {"query": "cholesterol results"})["attachments"]] == [scan.id]
    assert tools.call("search_memory", {"query": "weather in Paris"})["attachments"] == []
    assert m.tools(user_id="u2").call("search_memory", {"query": "高铁票"})["attachments"] == []  # never another scope's
    clock.now += timedelta(days=4)  # short_term: 3 days
    assert tools.call("search_memory", {"query": "去北京的高铁票"})["attachments"] == []
