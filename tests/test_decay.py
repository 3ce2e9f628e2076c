"""Conformance tables for scores and ageing: seed 001 §7.3, seed 003's decay rules, seed 002's
retention priorities and thresholds, expiry, max size (issue 6)."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from memlane.policy import expires_at, reinforce, reinforced
from memlane.retrieval.filters import Filters
from memlane.testing import ScriptedLLM
from tests.lifecycle_support import START, Clock, MakeMemory, extracted

SEED001 = ["default", "scored-markdown"]  # the profiles that take seed 001's law unchanged


# ---- seed 001 §7.3 --------------------------------------------------------------------------


@pytest.mark.parametrize("profile", SEED001)
@pytest.mark.parametrize(("importance", "score"), [("high", 0.8), ("medium", 0.6), ("low", 0.4)])
def test_initial_scores(make_memory: MakeMemory, profile: str, importance: str, score: float) -> None:
    mem = make_memory(profile)
    assert extracted(mem, "用户偏好用 pytest 而非 unittest", "preference", importance).score == score


@pytest.mark.parametrize("profile", SEED001)
def test_reinforcement_converges_below_one(make_memory: MakeMemory, profile: str) -> None:
    pol = make_memory(profile).config.policy
    s = 0.6
    seen = []
    for _ in range(3):
        s = reinforce(s, pol)
        seen.append(round(s, 6))
    assert seen == [0.68, 0.744, 0.7952]  # seed 001: 0.6 → 0.68 → 0.744
    for _ in range(60):
        s = reinforce(s, pol)
        assert s < 1.0
    assert s > 0.9999


@pytest.mark.parametrize("profile", SEED001)
@pytest.mark.parametrize("day", [0, 1, 6, 7])
def test_no_decay_within_the_grace_period(make_memory: MakeMemory, profile: str, day: int) -> None:
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    m = extracted(mem, "用户每天早上查看股票行情", "workflow" if profile == "scored-markdown" else "fact", "high")
    clock.at_day(day)
    report = mem.consolidate(user_id="u1")
    assert mem.get(m.id, user_id="u1").score == 0.8
    assert not [a for a in report.actions if a.step == "decay"]


@pytest.mark.parametrize("profile", ["default", "file-archive", "scored-markdown", "progressive", "consolidator"])
@pytest.mark.parametrize("day", [8, 10, 30, 60, 100])
def test_decay_is_0_99_per_day_after_seven(make_memory: MakeMemory, profile: str, day: int) -> None:
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    m = extracted(mem, "用户的公司叫青云科技", mem.config.policy.default_category, "high")
    clock.at_day(day)
    mem.consolidate(user_id="u1")
    got = mem.get(m.id, user_id="u1")
    assert math.isclose(got.score, 0.8 * 0.99 ** (day - 7), rel_tol=1e-12)
    assert got.last_activated == START  # decay never counts as an activation


@pytest.mark.parametrize("profile", SEED001)
def test_daily_runs_equal_one_late_run_and_a_rerun_changes_nothing(make_memory: MakeMemory, profile: str) -> None:
    clock = Clock()
    daily = make_memory(profile, clock=clock)
    m = extracted(daily, "用户喜欢简洁的代码风格", "preference", "medium")
    for day in range(1, 41):
        clock.at_day(day)
        daily.consolidate(user_id="u1")
        again = daily.consolidate(user_id="u1")  # the same day twice: nothing more to do
        assert not again.actions
    assert math.isclose(daily.get(m.id, user_id="u1").score, 0.6 * 0.99 ** 33, rel_tol=1e-9)


@pytest.mark.parametrize("profile", SEED001)
def test_archive_below_0_2_and_only_recall_finds_it(make_memory: MakeMemory, profile: str) -> None:
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    m = extracted(mem, "用户曾尝试用 Vue 写前端", "fact", "low")
    # 0.4 * 0.99^(d-7) < 0.2  ⇔  d - 7 > 68.97
    clock.at_day(75)
    mem.consolidate(user_id="u1")
    assert mem.get(m.id, user_id="u1").status == "active"  # 0.4·0.99^68 = 0.2019
    clock.at_day(76)
    mem.consolidate(user_id="u1")
    got = mem.get(m.id, user_id="u1")
    assert got.status == "archived" and got.score < 0.2
    assert [e.kind for e in mem.history(m.id, user_id="u1")][-1] == "ARCHIVE"
    assert not mem.search("Vue 前端", user_id="u1")
    recalled = mem.search("Vue 前端", user_id="u1", filters=Filters(status="archived"))
    assert [h.id for h in recalled] == [m.id]
    tools = mem.tools(user_id="u1")
    assert m.id in str(tools.call("recall_memory", {"query": "Vue 前端"}))


@pytest.mark.parametrize("profile", SEED001)
def test_delete_below_0_05_with_an_audit_trail(make_memory: MakeMemory, profile: str) -> None:
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    m = extracted(mem, "用户提过一次喜欢爵士乐", "preference", "low")
    # 0.4 * 0.99^(d-7) < 0.05  ⇔  d - 7 > 206.9
    clock.at_day(213)
    mem.consolidate(user_id="u1")
    assert mem.get(m.id, user_id="u1").score >= 0.05
    clock.at_day(214)
    report = mem.consolidate(user_id="u1")
    assert m.id not in {x.id for x in mem.list(user_id="u1")}
    assert [(a.action, a.step) for a in report.actions if a.memory_id == m.id][-1] == ("DELETE", "thresholds")
    last = mem.history(m.id, user_id="u1")[-1]
    assert (last.kind, last.actor) == ("DELETE", "consolidate") and "0.05" in last.reason


@pytest.mark.parametrize("profile", SEED001)
def test_mixed_scenario(make_memory: MakeMemory, profile: str) -> None:
    """New, hit, decayed and deleted entries in one merge (seed 001 §7.3, last row)."""
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    hit = extracted(mem, "用户偏好用 pytest 而非 unittest", "preference", "medium")
    fading = extracted(mem, "用户的主要开发语言是 Python", "fact", "medium")
    doomed = extracted(mem, "用户曾经问过一次天气", "fact", 0.06)
    clock.at_day(30)
    # a hit: the extractor found it again (what jobs do with a duplicate): reinforced, activated now
    with mem.store.transaction():
        mem.store.update_memory(reinforced(hit, mem.config.policy, clock.now), content_changed=False)
    new = extracted(mem, "用户下周三有产品评审会议", "todo" if "todo" in mem.config.policy.categories else "fact",
                    "high")
    report = mem.consolidate(user_id="u1")
    after = {m.id: m for m in mem.list(user_id="u1")}
    assert math.isclose(after[hit.id].score, 0.68) and after[hit.id].activation_count == 1
    assert math.isclose(after[fading.id].score, 0.6 * 0.99 ** 23, rel_tol=1e-12)
    assert after[new.id].score == 0.8
    assert doomed.id not in after
    assert {(a.memory_id, a.action) for a in report.actions} == {
        (fading.id, "DECAY"), (doomed.id, "DECAY"), (doomed.id, "DELETE")}


# ---- seed 003: per-category decay (profile companion) ----------------------------------------


@pytest.mark.parametrize("category", ["system", "core"])
def test_companion_system_and_core_never_decay(make_memory: MakeMemory, category: str) -> None:
    clock = Clock()
    mem = make_memory("companion", clock=clock)
    m = extracted(mem, "主人的生日是三月五日", category, "medium")
    for day in (8, 30, 365):
        clock.at_day(day)
        mem.consolidate(user_id="u1")
    assert mem.get(m.id, user_id="u1").score == 0.6


@pytest.mark.parametrize(("day", "expected"), [(7, 0.6), (8, 0.6 * 0.8), (10, 0.6 * 0.8 ** 3), (13, 0.6 * 0.8 ** 6),
                                               (14, None), (20, None)])
def test_companion_episode_x0_8_a_day_after_7_gone_at_14(make_memory: MakeMemory, day: int,
                                                         expected: float | None) -> None:
    clock = Clock()
    mem = make_memory("companion", clock=clock)
    m = extracted(mem, "[2026-01-01 18:00] 聊了面试、游戏", "episode", "medium")
    clock.at_day(day)
    mem.consolidate(user_id="u1")
    got = {x.id: x.score for x in mem.list(user_id="u1")}
    if expected is None:
        assert m.id not in got
    else:
        assert math.isclose(got[m.id], expected, rel_tol=1e-12)


@pytest.mark.parametrize(("day", "kept"), [(7, True), (8, True), (20, True), (41, True), (43, False)])
def test_companion_fact_x0_95_a_day_after_7_deleted_below_its_threshold(make_memory: MakeMemory, day: int,
                                                                        kept: bool) -> None:
    clock = Clock()
    mem = make_memory("companion", clock=clock)
    floor = mem.config.policy.decay["fact"].delete_below
    assert floor is not None
    m = extracted(mem, "主人喜欢拉面", "fact", "medium")
    clock.at_day(day)
    mem.consolidate(user_id="u1")
    got = {x.id: x.score for x in mem.list(user_id="u1")}
    assert (m.id in got) is kept
    expected = 0.6 * 0.95 ** max(0, day - 7)
    assert (expected >= floor) is kept
    if kept:
        assert math.isclose(got[m.id], expected, rel_tol=1e-12)


def test_companion_retrieval_alone_never_boosts(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("companion", clock=clock)
    m = extracted(mem, "主人喜欢猫", "fact", "medium")
    clock.at_day(3)
    for _ in range(5):
        assert mem.search("猫", user_id="u1")
    got = mem.get(m.id, user_id="u1")
    assert (got.score, got.last_activated, got.activation_count) == (0.6, START, 0)


# ---- protected memories -----------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["default", "scored-markdown", "progressive", "companion", "consolidator"])
@pytest.mark.parametrize("how", ["pinned", "verified", "core"])
def test_pinned_core_and_user_verified_never_decay(make_memory: MakeMemory, profile: str, how: str) -> None:
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    cats = mem.config.policy.categories
    if how == "core" and "core" not in cats:
        pytest.skip(f"{profile} has no core category")
    category = "core" if how == "core" else mem.config.policy.default_category
    m = mem.add("用户对花生过敏", user_id="u1", category=category, importance="low",
                source="user" if how == "verified" else "extractor", pinned=how == "pinned",
                verified=how == "verified")
    for day in (30, 400):
        clock.at_day(day)
        mem.consolidate(user_id="u1")
    got = mem.get(m.id, user_id="u1")
    assert (got.score, got.status) == (0.4, "active")


@pytest.mark.parametrize("profile", ["default", "scored-markdown", "progressive", "companion", "consolidator"])
def test_an_agents_memory_fades_like_an_extracted_one_until_a_person_verifies_it(make_memory: MakeMemory,
                                                                               profile: str) -> None:
    clock = Clock()
    mem = make_memory(profile, clock=clock)
    cat = mem.config.policy.default_category
    tools = mem.tools(user_id="u1")

    def remembered(content: str) -> str:
        return str(tools.call("remember", {"content": content, "category": cat, "importance": "low"})["id"])

    agents = remembered("用户曾尝试用 Vue 写前端")
    twin = extracted(mem, "用户周末常去西湖边跑步", cat, "low").id
    confirmed = remembered("用户的女儿叫小满")
    mem.update(confirmed, user_id="u1", verified=True, actor="web")  # a person confirmed it at once
    later = remembered("用户在学弹尤克里里")

    def now(memory_id: str) -> tuple[float, str] | None:
        got = {m.id: m for m in mem.list(user_id="u1")}.get(memory_id)
        return None if got is None else (round(got.score, 12), got.status)

    seen = []
    for day in (30, 76, 120, 400):
        clock.at_day(day)
        mem.consolidate(user_id="u1")
        assert now(agents) == now(twin), day  # the agent's word weighs what an extractor's does
        seen.append(now(agents))
        assert now(confirmed) == (0.4, "active"), day
        if day == 30:  # a person verifies it after it has faded some: it stays where it is from then on
            mem.update(later, user_id="u1", verified=True, actor="cli")
            held = now(later)
            assert held is not None and held[0] < 0.4
        assert now(later) == held, day
    assert seen[0] is not None and seen[0][0] < 0.4  # decayed ...
    assert seen[-1] is None or seen[-1][1] == "archived"  # ... and archived or deleted by the thresholds
    kinds = [e.kind for e in mem.history(agents, user_id="u1")]
    assert "DECAY" in kinds or "ARCHIVE" in kinds or "DELETE" in kinds


# ---- seed 002: retention priorities, demote and delete (profile progressive) -------------------


@pytest.mark.parametrize(("priority", "days"), [("transient", 1), ("short_term", 3), ("long_term", 30),
                                                ("permanent", None)])
def test_progressive_retention_priorities(make_memory: MakeMemory, priority: str, days: int | None) -> None:
    clock = Clock()
    mem = make_memory("progressive", clock=clock)
    until = expires_at(priority, clock.now, mem.config.policy)
    assert until == (None if days is None else clock.now + timedelta(days=days))
    m = mem.add("用户的代码目录在 D 盘 code 文件夹", user_id="u1", category="fact", importance="high",
                expires_at=until, source="extractor")
    if days is None:  # no expiry; scores still age (seed 002 compute_decay) at 0.99/day
        clock.at_day(60)
        mem.consolidate(user_id="u1")
        assert mem.get(m.id, user_id="u1").expires_at is None
        return
    clock.at_day(days - 0.5)
    mem.consolidate(user_id="u1")
    assert [h.id for h in mem.search("代码目录", user_id="u1")] == [m.id]
    clock.at_day(days)  # expired: never returned, even before the clean-up runs
    assert not mem.search("代码目录", user_id="u1")
    report = mem.consolidate(user_id="u1")
    assert m.id not in {x.id for x in mem.list(user_id="u1")}
    assert [(a.step, a.action) for a in report.actions if a.memory_id == m.id] == [("expire", "DELETE")]


@pytest.mark.parametrize(("score", "outcome"), [(0.09, "deleted"), (0.25, "demoted"), (0.35, "kept")])
def test_progressive_deletes_below_0_1_and_demotes_below_0_3(make_memory: MakeMemory, score: float,
                                                             outcome: str) -> None:
    clock = Clock()
    mem = make_memory("progressive", clock=clock)
    m = extracted(mem, "直接删除文件会导致数据丢失", "error", score)
    mem.consolidate(user_id="u1")
    left = {x.id: x for x in mem.list(user_id="u1")}
    if outcome == "deleted":
        assert m.id not in left
        return
    if outcome == "kept":
        assert left[m.id].expires_at is None
        return
    demoted = left[m.id]
    assert demoted.expires_at == clock.now + timedelta(days=1)
    assert demoted.metadata["priority"] == "transient"
    assert mem.history(m.id, user_id="u1")[-1].kind == "DEMOTE"
    assert not mem.consolidate(user_id="u1").actions  # demoted once, not every run
    clock.advance(days=1)
    mem.consolidate(user_id="u1")
    assert m.id not in {x.id for x in mem.list(user_id="u1")}


# ---- expiry and todos (seed 001 phase 1.5) ------------------------------------------------------


def test_an_expired_todo_is_down_scored_and_archived(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    todo = extracted(mem, "用户下周三有产品评审会议", "todo", "high", expires_at=clock.now + timedelta(days=7))
    fact = extracted(mem, "用户本周在上海出差", "fact", "high", expires_at=clock.now + timedelta(days=7))
    clock.at_day(7)
    mem.consolidate(user_id="u1")
    left = {x.id: x for x in mem.list(user_id="u1")}
    assert fact.id not in left
    assert (left[todo.id].status, left[todo.id].score, left[todo.id].expires_at) == ("archived", 0.4, None)
    assert [h.id for h in mem.search("产品评审", user_id="u1", filters={"status": "archived"})] == [todo.id]


# ---- max size (seed 004 §10.1) ------------------------------------------------------------------


def test_max_size_removes_the_lowest_score_then_the_oldest(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("consolidator", clock=clock, policy={"max_memories": 4})
    ids = []
    for i, (text, score) in enumerate([("用户喜欢喝乌龙茶", 0.5), ("用户住在杭州西湖区", 0.3), ("用户养了一只橘猫", 0.3),
                                       ("用户每周跑步三次", 0.9), ("用户在学习法语", 0.7), ("用户是素食者", 0.3)]):
        clock.at_day(i / 10)
        ids.append(extracted(mem, text, "knowledge", score, pinned=i == 5).id)
    report = mem.consolidate(user_id="u1")
    left = {x.id for x in mem.list(user_id="u1")}
    # six memories, room for four: the two lowest (0.3, oldest first) go; the pinned 0.3 stays
    assert left == {ids[0], ids[3], ids[4], ids[5]}
    assert {a.memory_id for a in report.actions if a.step == "max_size"} == {ids[1], ids[2]}


# ---- issue 30 row 3: seed 003's KEEP keeps; an episode still goes on day 14 -----------------------


def test_companion_a_kept_memory_stays_kept_until_it_decays_again(make_memory: MakeMemory) -> None:
    """Seed 003: a fact is reviewed when its importance falls below 0.5 (of 3) and KEEP resets
    it to 0.5; facts go below 0.3, episodes after 14 days. Run daily for 40 days: each KEEP
    leaves the fact active above the companion's line (0.3 of 3) and starts the seed's rule
    afresh — 7 days' grace, then ×0.95 takes it below 0.5 again, and only then is it asked
    again. No ARCHIVE, no flip, and the third review's DELETE is the end of it. An episode at
    the top of the scale (never decays) and one kept by its review are gone on day 14."""
    clock = Clock()
    mem = make_memory("companion", clock=clock)
    llm = ScriptedLLM()
    mem.llm = llm
    pol = mem.config.policy
    assert (pol.archive_below, pol.decay["fact"].delete_below) == (0.1, 0.1)  # seed 003: 0.3 / 3
    fact = extracted(mem, "主人以前住在杭州", "fact", 0.2)
    top = extracted(mem, "[2026-01-01 18:00] 聊了面试、游戏", "episode", 1.0)
    episode = extracted(mem, "[2026-01-01 21:00] 聊了拉面", "episode", "medium")
    # fact: 0.2 × 0.95^4 < 0.17 on day 11; episode: 0.6 × 0.8^6 < 0.17 on day 13
    # the top episode is due a promotion review at once (≥ 2.5 of 3); kept, it stays an episode
    replies = {1: ["[KEEP] 只是一次聊天"], 11: ["[KEEP] 老家以后还会聊到"], 13: ["[KEEP]"], 19: ["- [KEEP] 还有用"], 27: ["[DELETE] 已经用不上了"]}
    reviewed: dict[int, list[tuple[str, str]]] = {}
    actions: dict[str, list[tuple[int, str]]] = {fact.id: [], top.id: [], episode.id: []}
    for day in range(1, 41):
        clock.at_day(day)
        llm.replies.clear()  # USER.md's refresh asks the LLM too; the reviewer's reply is queued on its day
        llm.enqueue(*replies.get(day, []))
        report = mem.consolidate(user_id="u1")
        assert not report.errors, report.errors
        for a in report.actions:
            actions[a.memory_id].append((day, a.action))
            if a.step == "review":
                reviewed.setdefault(day, []).append((a.memory_id, a.action))
        left = {m.id: m for m in mem.list(user_id="u1")}
        if fact.id in left:
            got = left[fact.id]
            assert got.status == "active" and got.score >= pol.archive_below
            if day in (11, 19):
                assert got.score == pytest.approx(pol.review_below)  # KEEP: back to 0.5 of 3
        if day == 13:
            assert left[top.id].score == 1.0  # importance ≥ 3.0 never decays ...
        if day == 14:
            assert top.id not in left and episode.id not in left  # ... yet an episode goes on day 14
    assert reviewed == {1: [(top.id, "KEEP")], 11: [(fact.id, "KEEP")], 13: [(episode.id, "KEEP")], 19: [(fact.id, "KEEP")],
                        27: [(fact.id, "DELETE")]}
    assert [a for _, a in actions[fact.id]].count("ARCHIVE") == 0
    # after a KEEP the fact rests 7 days (the seed's grace), then decays once and is asked again
    assert [d for d, a in actions[fact.id] if a == "DECAY"] == [8, 9, 10, 11, 19, 27]
    assert actions[top.id] == [(1, "KEEP"), (14, "DELETE")]
    assert actions[episode.id][-1] == (14, "DELETE")
    assert fact.id not in {m.id for m in mem.list(user_id="u1")}
    assert len([c for c in llm.calls if "审核" in c["messages"][0]["content"]]) == 5
