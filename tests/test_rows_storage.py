"""Issue 13, "rows that stop short": seed 002's retention and storage, seed 003's top of the
scale, seed 004 §11's persisted events — each from its seed's words."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from memlane import Memory
from memlane.models import Scope
from memlane.testing import ManualClock, ScriptedLLM

from .conftest import PROFILE_NAMES, T0, ops
from .lifecycle_support import Clock, extracted

MakeMemory = Callable[..., Memory]
LONG = "我这周在做上海到北京的出差安排，高铁票和酒店都要订，顺便记一下我的习惯。"  # ≥ 30 chars (seed 002 §6)


def _extract(make_memory: MakeMemory, profile: str, *items: dict[str, Any], **kw: Any) -> Memory:
    """One session "s1" of user u1 whose extraction answers `items`, at T0."""
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
    clock.at_day(40)
    m.consolidate(user_id="u1")
    scores = {x.id: x.score for x in m.list(user_id="u1")}
    if profile == "companion":
        assert scores[top.id] == 1.0
    else:
        assert scores[top.id] < 1.0
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


def test_old_databases_get_their_tool_calls_indexed(make_memory: MakeMemory, tmp_path: Path) -> None:
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
