"""Seed 003's MemoryReviewer: PROMOTE / KEEP / DELETE, with up to 3 [SEARCH] rounds (issue 6)."""

from __future__ import annotations

from typing import Any

import pytest

from memlane import Memory
from memlane.errors import BackendError
from memlane.testing import ScriptedLLM
from tests.lifecycle_support import Clock, MakeMemory, extracted


def _reviews(llm: ScriptedLLM) -> list[dict[str, Any]]:
    """The reviewer's calls (USER.md's refresh may ask the LLM too)."""
    return [c for c in llm.calls if "记忆" in c["messages"][0]["content"] and "审核" in c["messages"][0]["content"]]


def _companion(make_memory: MakeMemory, clock: Clock, *replies: Any) -> tuple[Memory, ScriptedLLM]:
    mem = make_memory("companion", clock=clock)
    llm = ScriptedLLM(*replies)
    mem.llm = llm
    return mem, llm


def test_promote_after_a_search_round(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem, llm = _companion(make_memory, clock, {"decision": "SEARCH", "query": "名字"},
                          {"decision": "PROMOTE", "reason": "姓名是长期稳定的事实"})
    name = extracted(mem, "主人的名字叫小林", "fact", 0.9)
    other = extracted(mem, "主人的名字由来是外婆取的", "fact", "medium")
    report = mem.consolidate(user_id="u1")
    got = mem.get(name.id, user_id="u1")
    assert got.category == "core"
    assert [(a.memory_id, a.action) for a in report.actions if a.step == "review"] == [(name.id, "PROMOTE")]
    trail = mem.history(name.id, user_id="u1")
    assert trail[-1].kind == "PROMOTE" and "姓名是长期稳定的事实" in trail[-1].reason
    calls = _reviews(llm)
    assert len(calls) == 2
    second = calls[1]["messages"][1]["content"]
    assert "搜索「名字」的结果" in second and other.content in second
    assert "还剩 3 轮" in calls[0]["messages"][0]["content"] and "还剩 2 轮" in calls[1]["messages"][0]["content"]
    # core never decays and is not reviewed again
    clock.at_day(60)
    mem.consolidate(user_id="u1")
    assert len(_reviews(llm)) == 2 and mem.get(name.id, user_id="u1").score == 0.9


def test_promote_review_keep_is_not_asked_again_until_the_memory_is_used_again(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem, llm = _companion(make_memory, clock, {"decision": "KEEP", "reason": "只是最近常聊"})
    m = extracted(mem, "主人最近在准备面试", "fact", 0.9)
    report = mem.consolidate(user_id="u1")
    assert [a.action for a in report.actions if a.step == "review"] == ["KEEP"]
    got = mem.get(m.id, user_id="u1")
    assert (got.category, got.score, got.metadata["review"]["decision"]) == ("fact", 0.9, "KEEP")
    clock.advance(hours=1)
    mem.consolidate(user_id="u1")
    assert len(_reviews(llm)) == 1
    # used again (a BOOST moves last_activated): worth another look
    from memlane.policy import reinforced

    with mem.store.transaction():
        mem.store.update_memory(reinforced(got, mem.config.policy, clock.now), content_changed=False)
    llm.enqueue({"decision": "PROMOTE"})
    clock.advance(hours=1)
    mem.consolidate(user_id="u1")
    assert len(_reviews(llm)) == 2 and mem.get(m.id, user_id="u1").category == "core"


def test_promote_review_may_delete(make_memory: MakeMemory) -> None:
    mem, _ = _companion(make_memory, Clock(), {"decision": "DELETE", "reason": "临时状态"})
    m = extracted(mem, "主人今天很累", "fact", 0.9)
    mem.consolidate(user_id="u1")
    assert not mem.list(user_id="u1")
    assert mem.history(m.id, user_id="u1")[-1].kind == "DELETE"


def _low(make_memory: MakeMemory, *replies: Any) -> tuple[Memory, ScriptedLLM]:
    """The default profile with the reviewer on: archive < 0.2, review < 0.17, delete < 0.05."""
    mem = make_memory("default", lifecycle={"reviewer": True})
    llm = ScriptedLLM(*replies)
    mem.llm = llm
    return mem, llm


def test_decay_review_keep_resets_to_0_5(make_memory: MakeMemory) -> None:
    mem, llm = _low(make_memory, {"decision": "KEEP", "reason": "still useful"})
    m = extracted(mem, "The user once lived in Lisbon", "fact", 0.1)
    report = mem.consolidate(user_id="u1")
    got = mem.get(m.id, user_id="u1")
    assert (got.score, got.status) == (0.5, "active")
    assert [a.action for a in report.actions if a.memory_id == m.id] == ["ARCHIVE", "KEEP"]
    assert "PROMOTE" not in _reviews_en(llm)[0]["messages"][0]["content"]  # decay mode: KEEP / DELETE only
    assert "KEEP / DELETE" in _reviews_en(llm)[0]["messages"][0]["content"]
    mem.consolidate(user_id="u1")
    assert len(_reviews_en(llm)) == 1


def _reviews_en(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [c for c in llm.calls if "reviewing" in c["messages"][0]["content"]]


def test_decay_review_delete(make_memory: MakeMemory) -> None:
    mem, _ = _low(make_memory, {"decision": "DELETE", "reason": "replaced by a newer memory"})
    m = extracted(mem, "The user once lived in Lisbon", "fact", 0.1)
    report = mem.consolidate(user_id="u1")
    assert not mem.list(user_id="u1")
    assert ("review", "DELETE") in {(a.step, a.action) for a in report.actions if a.memory_id == m.id}


def test_search_rounds_are_bounded(make_memory: MakeMemory) -> None:
    mem, llm = _low(make_memory, *[{"decision": "SEARCH", "query": "Lisbon"}] * 4)
    m = extracted(mem, "The user once lived in Lisbon", "fact", 0.1)
    mem.consolidate(user_id="u1")
    calls = _reviews_en(llm)
    assert len(calls) == mem.config.policy.review_search_rounds + 1 == 4
    assert "search rounds left" not in calls[-1]["messages"][0]["content"]  # the last round must decide
    assert mem.get(m.id, user_id="u1").score == 0.5  # no decision: kept


def test_a_failed_review_leaves_the_memory_for_the_next_run(make_memory: MakeMemory) -> None:
    mem, llm = _low(make_memory, BackendError("timeout"))
    m = extracted(mem, "The user once lived in Lisbon", "fact", 0.1)
    report = mem.consolidate(user_id="u1")
    assert any("timeout" in e for e in report.errors)
    assert mem.get(m.id, user_id="u1").score == 0.1
    llm.enqueue({"decision": "DELETE"})
    mem.consolidate(user_id="u1")
    assert not mem.list(user_id="u1")


@pytest.mark.parametrize("profile", ["companion", "default"])
def test_offline_the_thresholds_decide(make_memory: MakeMemory, profile: str) -> None:
    mem = make_memory(profile, lifecycle={"reviewer": True})
    assert mem.llm is None
    high = extracted(mem, "The user's name is Lin", "fact", 0.9)
    low = extracted(mem, "The user once lived in Lisbon", "fact", 0.1)
    mem.consolidate(user_id="u1")
    left = {m.id: m for m in mem.list(user_id="u1")}
    assert left[high.id].category == "fact" and left[high.id].score == 0.9
    if profile == "default":
        assert (left[low.id].status, left[low.id].score) == ("archived", 0.1)


def test_dry_run_lists_the_reviews_without_asking(make_memory: MakeMemory) -> None:
    mem, llm = _companion(make_memory, Clock())
    m = extracted(mem, "主人的名字叫小林", "fact", 0.9)
    report = mem.consolidate(user_id="u1", dry_run=True)
    assert [(a.memory_id, a.action) for a in report.actions] == [(m.id, "REVIEW")]
    assert not llm.calls


# ---- issue 30 row 2: seed 003's bracket answers are read, as the monitor's are ----------------


def _days(mem: Memory, clock: Clock, first: int, last: int,
          replies: dict[int, list[Any]]) -> dict[int, list[tuple[str, str]]]:
    """Consolidate once a day, the reviewer's `replies` queued on their day (USER.md's refresh
    would take them otherwise); per day, the (memory id, action) of what the review step did."""
    out: dict[int, list[tuple[str, str]]] = {}
    assert isinstance(mem.llm, ScriptedLLM)
    for day in range(first, last + 1):
        clock.at_day(day)
        mem.llm.replies.clear()
        mem.llm.enqueue(*replies.get(day, []))
        report = mem.consolidate(user_id="u1")
        assert not report.errors, report.errors
        out[day] = [(a.memory_id, a.action) for a in report.actions if a.step == "review"]
    return out


@pytest.mark.parametrize(("reply", "kept"), [
    ("[KEEP]", True),
    ("[DELETE]", False),
    ("想了想：主人以前住在杭州，以后聊起老家还用得上。\n\n- [KEEP:{id}] 还有价值\n\n以上。", True),
    ("1. [DELETE:{id}] 已被更新的记忆取代", False),
    ("<think>先看看有没有新的住址 [DELETE]</think>\n最终决策：\n[KEEP] 删掉会忘记老家", True),
    ('{{"decision": "DELETE", "reason": "过时"}}', False),
    ('```json\n{{"decision": "KEEP", "query": null, "reason": "[DELETE] 不合适"}}\n```', True),
])
def test_companion_decay_review_reads_the_seeds_bracket_answers(make_memory: MakeMemory, reply: str,
                                                                kept: bool) -> None:
    """Seed 003 MemoryReviewer: "最终决策：[PROMOTE] / [KEEP] / [DELETE]" — read with ids, list
    markers and prose around them, and JSON alike (a bracket inside JSON is not a line)."""
    clock = Clock()
    mem, llm = _companion(make_memory, clock)
    m = extracted(mem, "主人以前住在杭州", "fact", 0.2)
    days = _days(mem, clock, 1, 12, {11: [reply.format(id=m.id)]})
    # 0.2 × 0.95^(day-7) first falls below review_below (0.5 of 3) on day 11
    assert {d: acts for d, acts in days.items() if acts} == {11: [(m.id, "KEEP" if kept else "DELETE")]}
    assert len(_reviews(llm)) == 1
    left = {x.id: x for x in mem.list(user_id="u1")}
    if kept:
        assert (left[m.id].score, left[m.id].status) == (mem.config.policy.review_below, "active")
        assert mem.history(m.id, user_id="u1")[-1].reason.startswith("review: decay review: KEEP")
    else:
        assert m.id not in left
        assert mem.history(m.id, user_id="u1")[-1].kind == "DELETE"


def test_companion_bracket_search_then_promote(make_memory: MakeMemory) -> None:
    """"[SEARCH:关键词]" is a search round; "[PROMOTE]" after it promotes to core."""
    clock = Clock()
    mem, llm = _companion(make_memory, clock)
    name = extracted(mem, "主人的名字叫小林", "fact", 0.9)
    other = extracted(mem, "主人的名字由来是外婆取的", "fact", "medium")
    days = _days(mem, clock, 1, 3, {1: ["我先查一下有没有相关的记忆。\n[SEARCH:名字]",
                                        "查到了名字的由来，这是长期稳定的事实。\n\n* [PROMOTE] 姓名是长期稳定的事实"]})
    assert days == {1: [(name.id, "PROMOTE")], 2: [], 3: []}
    assert mem.get(name.id, user_id="u1").category == "core"
    calls = _reviews(llm)
    assert len(calls) == 2 and "搜索「名字」的结果" in calls[1]["messages"][1]["content"]
    assert other.content in calls[1]["messages"][1]["content"]


def test_companion_a_bracket_decision_about_another_memory_is_not_applied(make_memory: MakeMemory) -> None:
    """The related memories are shown with their ids; "[DELETE:<theirs>]" does not delete the
    memory under review — the review fails, and the next run asks again."""
    clock = Clock()
    mem, llm = _companion(make_memory, clock)
    m = extracted(mem, "主人以前住在杭州", "fact", 0.2)
    newer = extracted(mem, "主人现在住在上海", "fact", "medium")
    clock.at_day(11)
    llm.enqueue(f"[DELETE:{newer.id}]")
    report = mem.consolidate(user_id="u1")
    assert any(m.id in e and newer.id in e for e in report.errors)
    assert {x.id for x in mem.list(user_id="u1")} >= {m.id, newer.id}
    clock.at_day(12)
    llm.replies.clear()
    llm.enqueue("[DELETE]")
    mem.consolidate(user_id="u1")
    assert m.id not in {x.id for x in mem.list(user_id="u1")} and newer.id in {x.id for x in mem.list(user_id="u1")}
