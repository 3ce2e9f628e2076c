"""Seed 003's "was the memory really used?": only memories the reply used are boosted (issue 6)."""

from __future__ import annotations

import pytest

from memlane import Memory
from memlane.errors import BackendError, NotFound, ValidationError
from memlane.testing import ScriptedLLM
from tests.lifecycle_support import Clock, MakeMemory, extracted


def _session(mem: Memory, query: str) -> None:
    mem.add_messages("s1", [{"role": "user", "content": query}], user_id="u1")
    mem.build_context("s1", query, user_id="u1")


def test_offline_only_the_used_memory_is_boosted(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    cat = extracted(mem, "用户喜欢猫，家里养了一只橘猫", "preference", "medium")
    nuts = extracted(mem, "用户对花生过敏", "fact", "medium")
    _session(mem, "周末做点什么好？")
    assert set(mem.get_session("s1", user_id="u1").metadata["injected"]) == {cat.id, nuts.id}
    clock.advance(hours=1)
    hits_before = mem.get(cat.id, user_id="u1").activation_count  # search hits may count (seed 001)
    report = mem.feedback("s1", "你家的橘猫最近怎么样？可以在家陪它玩一天。", user_id="u1")
    assert report.judge == "heuristic"
    assert [m.id for m in report.used] == [cat.id] and report.unused == [nuts.id]
    got = mem.get(cat.id, user_id="u1")
    assert got.score == pytest.approx(0.68) and got.last_activated == clock.now
    assert got.activation_count == hits_before + 1
    assert mem.get(nuts.id, user_id="u1").score == 0.6
    last = mem.history(cat.id, user_id="u1")[-1]
    assert (last.kind, last.actor) == ("BOOST", "feedback")
    # judged once: the same context is not boosted twice
    assert not mem.feedback("s1", "你家的橘猫最近怎么样？", user_id="u1").used


def test_relevant_hits_are_recorded_too(make_memory: MakeMemory) -> None:
    mem = make_memory("default")
    low = extracted(mem, "用户上个月去过一次京都", "fact", "low")  # below the core block's 0.5
    _session(mem, "京都有什么好玩的")
    assert mem.get_session("s1", user_id="u1").metadata["injected"] == [low.id]
    report = mem.feedback("s1", "你上个月刚去过京都，这次可以去岚山。", user_id="u1")
    assert [m.id for m in report.used] == [low.id]


def test_companion_the_llm_judges_and_boost_is_seed_003s(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("companion", clock=clock)
    tense = extracted(mem, "主人最近很紧张", "fact", "medium")
    cats = extracted(mem, "主人喜欢猫", "fact", "medium")
    _session(mem, "明天就要面试了")
    assert mem.get(tense.id, user_id="u1").score == 0.6  # being injected did not boost anything
    mem.llm = ScriptedLLM({"used": [tense.id], "reason": "回复在安抚紧张"})
    report = mem.feedback("s1", "别这么绷着，你准备得很充分了。", user_id="u1")
    assert report.judge == "llm" and [m.id for m in report.used] == [tense.id]
    assert mem.get(tense.id, user_id="u1").score == pytest.approx(0.7)  # +0.3 on seed 003's 0–3 scale
    assert mem.get(cats.id, user_id="u1").score == 0.6
    prompt = mem.llm.calls[0]["messages"][1]["content"]
    assert tense.id in prompt and cats.id in prompt and "明天就要面试了" in prompt


def test_a_bad_llm_answer_is_an_error_not_a_silent_nothing(make_memory: MakeMemory) -> None:
    mem = make_memory("companion")
    m = extracted(mem, "主人最近很紧张", "fact", "medium")
    _session(mem, "明天就要面试了")
    mem.llm = ScriptedLLM("I think it was used")
    with pytest.raises(BackendError):
        mem.feedback("s1", "别这么绷着。", user_id="u1")
    assert mem.get(m.id, user_id="u1").score == 0.6
    assert m.id in mem.get_session("s1", user_id="u1").metadata["injected"]  # can be judged again


def test_nothing_injected_nothing_boosted(make_memory: MakeMemory) -> None:
    mem = make_memory("default")
    mem.add_messages("s1", [{"role": "user", "content": "你好"}], user_id="u1")
    report = mem.feedback("s1", "你好！", user_id="u1")
    assert (report.judge, report.used) == ("none", [])


def test_bad_input(make_memory: MakeMemory) -> None:
    mem = make_memory("default")
    with pytest.raises(NotFound):
        mem.feedback("nope", "reply", user_id="u1")
    mem.add_messages("s1", [{"role": "user", "content": "你好"}], user_id="u1")
    with pytest.raises(ValidationError, match="reply"):
        mem.feedback("s1", "  ", user_id="u1")
