"""The merge policy: seed 001 §7.3 (scoring, reinforcement) and §7.4 (end to end), seed 004 §6
dedup with the real offline embedder, contradiction, one audited event per change, one
transaction per job."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import Config, Memory
from memlane.config import PolicyConfig
from memlane.embeddings import make_embedder
from memlane.policy import reinforce
from memlane.testing import ScriptedLLM

from .conftest import T0, ops


def session(mem, sid: str, text: str, *replies: str) -> None:
    mem.llm.enqueue(*replies)
    mem.add_messages(sid, [{"role": "user", "content": text}], user_id="u1")
    mem.end_session(sid, user_id="u1")


@pytest.mark.parametrize(("importance", "score"), [("high", 0.8), ("medium", 0.6), ("low", 0.4), (0.55, 0.55)])
def test_new_memory_initial_score(mem, importance, score):
    session(mem, "s1", "我喜欢喝白茶", ops({"op": "ADD", "content": "用户喜欢喝白茶", "importance": importance}))
    [m] = mem.list(user_id="u1")
    assert m.score == pytest.approx(score)


def test_reinforcement_updates_score_count_and_time(mem):
    tea = mem.add("用户喜欢喝白茶", user_id="u1", importance="medium")
    mem.clock.now = T0 + timedelta(days=2)
    session(mem, "s1", "又喝白茶了", ops({"op": "BOOST", "id": tea.id}))
    after = mem.get(tea.id, user_id="u1")
    assert after.score == pytest.approx(0.6 + (1 - 0.6) * 0.2)
    assert after.activation_count == 1 and after.last_activated == T0 + timedelta(days=2)
    [_, boost] = mem.history(tea.id, user_id="u1")
    assert boost.kind == "BOOST" and boost.before["score"] == pytest.approx(0.6)
    assert boost.after["score"] == pytest.approx(0.68)


def test_reinforcement_converges_below_one():
    cfg = PolicyConfig()
    s, seen = 0.6, []
    for _ in range(200):
        s = reinforce(s, cfg)
        seen.append(s)
    assert seen[:2] == [pytest.approx(0.68), pytest.approx(0.744)]
    assert all(a <= b <= 1.0 for a, b in zip(seen, seen[1:], strict=False))
    assert all(a < b for a, b in zip(seen[:30], seen[1:30], strict=False))
    assert seen[-1] <= 1.0 and seen[30] < 1.0


def test_companion_boost_adds_seed003_amount(make_memory):
    m = make_memory("companion")
    m.llm = ScriptedLLM()
    fact = m.add("主人喜欢拉面", user_id="u1", category="fact", importance=0.5)
    session(m, "s1", "今天吃了拉面", ops({"op": "BOOST", "id": fact.id}))
    assert m.get(fact.id, user_id="u1").score == pytest.approx(0.6)  # +0.3 on a 0–3 scale


def test_duplicate_add_reinforces_keeping_the_higher_importance(mem):
    tea = mem.add("用户喜欢喝白茶", user_id="u1", importance="low")
    session(mem, "s1", "我喜欢喝白茶", ops({"op": "ADD", "content": "用户喜欢喝白茶", "importance": "high"}))
    [m] = mem.list(user_id="u1")
    assert m.id == tea.id and m.score == pytest.approx(0.8) and m.activation_count == 1


def test_mixed_job_adds_boosts_updates_deletes_and_contradicts_in_one_go(mem):
    a = mem.add("用户住在杭州", user_id="u1", importance="medium", source="extractor")
    b = mem.add("用户喜欢跑步", user_id="u1", importance="medium")
    c = mem.add("用户养狗", user_id="u1", importance="low", source="extractor")
    d = mem.add("用户在学日语", user_id="u1", importance="medium", source="extractor")
    session(mem, "s1", "…", ops(
        {"op": "ADD", "content": "用户搬到了上海", "importance": "high", "contradicts": [a.id]},
        {"op": "BOOST", "id": b.id},
        {"op": "DELETE", "id": c.id, "reason": "wrong"},
        {"op": "UPDATE", "id": d.id, "content": "用户在学日语和韩语"},
        {"op": "SKIP"},
    ))
    by = {m.id: m for m in mem.list(user_id="u1")}
    assert by[a.id].score == pytest.approx(0.6)  # contradicted: flagged for review, not halved (issue 32)
    assert by[b.id].score == pytest.approx(0.68)
    assert c.id not in by
    assert by[d.id].content == "用户在学日语和韩语"
    [new] = [m for m in by.values() if m.id not in (a.id, b.id, d.id)]
    assert (new.content, new.metadata["may_supersede"]["ids"]) == ("用户搬到了上海", [a.id])
    kinds = sorted(e.kind for e in mem.store.events(_scope()) if e.actor.startswith("extract"))
    assert kinds == ["ADD", "BOOST", "DELETE", "UPDATE"]


def _scope():
    from memlane.models import Scope

    return Scope.of("u1")


def test_a_failing_merge_writes_nothing(mem):
    """One transaction per job: an embedder failure halfway leaves memories and events untouched."""
    tea = mem.add("用户喜欢喝白茶", user_id="u1")
    events_before = mem.store.raw_count("memory_events")

    class Broken:
        model_id, dimensions = mem.embedder.model_id, mem.embedder.dimensions

        def embed(self, texts, *, query=False):
            from memlane.errors import BackendError

            raise BackendError("embedder down")

    mem.jobs.embedder = Broken()
    mem.llm.enqueue(ops({"op": "BOOST", "id": tea.id}, {"op": "ADD", "content": "全新的内容 brand new"}))
    mem.add_messages("s1", [{"role": "user", "content": "hi"}], user_id="u1")
    report = mem.extract("s1", user_id="u1")
    assert report.status == "retrying" and "embedder down" in (report.error or "")
    assert mem.get(tea.id, user_id="u1").score == tea.score
    assert mem.store.raw_count("memory_events") == events_before
    assert [m.id for m in mem.list(user_id="u1")] == [tea.id]


def test_end_to_end_sessions_accumulate_and_repeated_memories_rise(mem):
    session(mem, "s1", "我喜欢喝白茶", ops({"op": "ADD", "content": "用户喜欢喝白茶", "importance": "medium"}))
    assert len(mem.list(user_id="u1")) == 1
    results = []
    for i in range(2, 5):
        mem.llm.enqueue(ops({"op": "ADD", "content": "用户喜欢喝白茶"},
                            {"op": "ADD", "content": f"用户第{i}次提到新的事情 topic{i}", "importance": "low"}))
        mem.add_messages(f"s{i}", [{"role": "user", "content": "又是白茶"}], user_id="u1")
        [r] = [r for r in mem.end_session(f"s{i}", user_id="u1") if r.action == "extract"]
        results.append(r.result)
    assert [r.stats for r in results] == [{"new": 1, "updated": 1, "deleted": 0}] * 3
    mems = mem.list(user_id="u1")
    assert len(mems) == 4
    tea = next(m for m in mems if m.content == "用户喜欢喝白茶")
    assert tea.score == pytest.approx(1 - 0.4 * 0.8 ** 3) and tea.activation_count == 3


@pytest.fixture(scope="module")
def e5():
    return make_embedder(Config.load().embedding)


def test_dedup_with_the_real_offline_embedder(tmp_path, e5):
    m = Memory(Config.load(store={"home": str(tmp_path)}, embedding={"background": False}), embedder=e5)
    try:
        m.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
        m.add_messages("s1", [{"role": "user", "content": "我对花生过敏"}], user_id="u1")
        m.end_session("s1", user_id="u1")
        m.llm = ScriptedLLM(ops({"op": "ADD", "content": "用户喜欢喝白茶", "importance": "medium"},
                                {"op": "ADD", "content": "用户喜欢喝绿茶", "importance": "medium"}))
        m.add_messages("s2", [{"role": "user", "content": "我喜欢喝白茶，也喜欢绿茶"}], user_id="u1")
        report = m.end_session("s2", user_id="u1", wait=True)[0].result
        by = {x.content: x for x in m.list(user_id="u1")}
        assert set(by) == {"用户喜欢喝白茶", "用户喜欢喝绿茶", "用户对花生过敏"}
        assert by["用户喜欢喝白茶"].activation_count == 1
        assert by["用户喜欢喝白茶"].score == pytest.approx(0.68)
        assert [x.content for x in report.added] == ["用户喜欢喝绿茶"]  # 0.977 to 白茶: a different fact
    finally:
        m.close()


def test_dedup_decides_on_the_stored_vectors_not_on_knn_distances(mem, monkeypatch):
    """knn may rank by int8 codes or an f16 graph (issue 3): a neighbour it reports as a twin
    is a duplicate only if the stored vectors say so."""
    tea = mem.add("用户喜欢喝白茶", user_id="u1", importance="low")
    real = mem.store.knn
    monkeypatch.setattr(mem.store, "knn", lambda corpus, scope, vector, k: [(r, 0.0) for r, _ in
                                                                             real(corpus, scope, vector, k)])
    session(mem, "s1", "我每天跑步", ops({"op": "ADD", "content": "用户每天跑步", "importance": "high"}))
    assert {m.content for m in mem.list(user_id="u1")} == {"用户喜欢喝白茶", "用户每天跑步"}
    assert mem.get(tea.id, user_id="u1").activation_count == 0
