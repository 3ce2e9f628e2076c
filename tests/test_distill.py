"""Distillation that happens without a perfect caller (issue 13): idle sessions and imported
conversations are extracted (seed 001 §3.2/5.1, seed 002 §7), a due job runs when due, the
companion's monitor runs after every turn (seed 003), its bracket answers are read (seed 003),
`extract()` reports a waiting job, and a merge decays first (seed 001 §3.4)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memlane import Memory
from memlane.errors import BackendError
from memlane.importers import Conversation
from memlane.lifecycle import Scheduler
from memlane.llm import ChatMessage
from memlane.models import Scope
from memlane.testing import ManualClock, ScriptedLLM

from .conftest import PROFILE_NAMES, T0

MakeMemory = Callable[..., Memory]
NONE = json.dumps({"operations": []})


def _scripted(make_memory: MakeMemory, profile: str, **kw: Any) -> Memory:
    # the scripted replies are the extractor's: progressive's topic judge (its own call each
    # user turn, tests/test_topics.py) is left to the rules here
    kw.setdefault("session", {"topic_llm": False})
    m = make_memory(profile, clock=ManualClock(T0), **kw)
    m.llm = ScriptedLLM()
    return m


def _extractions(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [c for c in llm.calls if "operations" in str(c["messages"][0]["content"])]


# ---- seed 003: "[ADD] 内容 / [UPDATE:mem_id] 内容 / [BOOST:mem_id] / [DELETE:mem_id] / [SKIP]" ----

BRACKETS = {
    "zh": ("主人喜欢寿司", "主人明天要面试", "主人养了一只猫", "主人喜欢拉面", "主人后天下午三点面试",
           "主人: 我后天面试，不是明天。我最近爱吃拉面"),
    "en": ("The user likes sushi", "The user has an interview tomorrow", "The user has a cat",
           "The user likes ramen", "The user's interview is the day after tomorrow at 3pm",
           "My interview is the day after tomorrow, not tomorrow. I have been into ramen lately"),
}


@pytest.mark.parametrize("profile", ["companion", "default"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_monitors_bracket_answer_is_applied_line_by_line(make_memory: MakeMemory, profile: str,
                                                           lang: str) -> None:
    sushi, interview, cat, ramen, moved, said = BRACKETS[lang]
    m = _scripted(make_memory, profile, extraction={"every_n_user_messages": 0})  # the reply is end_session's
    old = {c: m.add(c, user_id="u1", category="fact", importance="medium", source="extractor")
           for c in (sushi, interview, cat)}
    m.add_messages("s1", [{"role": "user", "content": said}], user_id="u1")
    # one operation a line, as seed 003's monitor writes them, with some prose around
    m.llm.enqueue(f"好的：\n[ADD] {ramen}\n[UPDATE:{old[interview].id}] {moved}\n[BOOST:{old[sushi].id}]\n"
                  f"[DELETE:{old[cat].id}]\n[SKIP]\n")
    [report] = [r.result for r in m.end_session("s1", user_id="u1") if r.action == "extract"]
    assert report.status == "done", report.error
    contents = {x.content: x for x in m.list(user_id="u1")}
    assert ramen in contents and moved in contents
    assert interview not in contents and cat not in contents
    assert contents[sushi].score > old[sushi].score and contents[sushi].activation_count == 1
    assert report.skipped == 1


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_bracket_answers_obey_the_same_caps_and_checks(make_memory: MakeMemory, lang: str) -> None:
    sushi, _, _, ramen, _, said = BRACKETS[lang]
    m = _scripted(make_memory, "companion", extraction={"max_adds_per_job": 1, "every_n_user_messages": 0})
    m.add_messages("s1", [{"role": "user", "content": said}], user_id="u1")
    m.llm.enqueue(f"[ADD] {ramen}\n[ADD] {sushi}\n[BOOST:no_such_id]\n")
    [report] = [r.result for r in m.end_session("s1", user_id="u1") if r.action == "extract"]
    assert report.status == "done"
    assert [x.content for x in m.list(user_id="u1")] == [ramen]
    reasons = " ".join(r.reason for r in report.rejected)
    assert "max_adds_per_job" in reasons and "no_such_id" in reasons
    # a reply with neither JSON nor a bracket line is still a failure, retried with back-off
    m.add_messages("s1", [{"role": "user", "content": said + "!"}], user_id="u1")
    m.llm.enqueue("I think nothing here matters.")
    assert m.extract("s1", user_id="u1").status == "retrying"


# ---- seed 001 §3.2 / §5.1: 会话空闲超时自动归档 ------------------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_an_idle_session_is_extracted_by_the_schedulers_poll(make_memory: MakeMemory, profile: str) -> None:
    # offline: no worker, only the scheduler; the in-session trigger is off, to see the idle one
    m = make_memory(profile, clock=ManualClock(T0), extraction={"every_n_user_messages": 0})
    sched = Scheduler(m)
    sched.tick()  # the first run (due at once or at its nightly slot) is out of the way
    # three messages: seed 004 (consolidator) extracts no session shorter than that
    m.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶，每天下午都喝一壶"},
                          {"role": "assistant", "content": "好的"}, {"role": "user", "content": "谢谢"}],
                   user_id="u1")
    idle = m.config.extraction.idle_minutes
    m.clock.advance(minutes=idle - 1)
    assert sched.tick() is None and sched.last_poll is not None and sched.last_poll.sweep.turns == 0
    assert m.store.jobs(status=("queued", "running", "done")) == []  # still being talked to
    m.clock.advance(minutes=1)
    assert sched.tick() is None
    assert sched.last_poll is not None and sched.last_poll.sweep.turns == 3
    assert [j.status for j in m.store.jobs(status=("queued", "running", "done"))] == ["done"]
    assert m.list(user_id="u1"), "the idle session was distilled"
    # queued once: the next poll finds nothing new
    m.clock.advance(minutes=idle)
    sched.tick()
    assert sched.last_poll is not None and sched.last_poll.sweep.turns == 0


def test_with_an_llm_the_worker_finds_the_idle_session(make_memory: MakeMemory) -> None:
    m = make_memory("default", clock=ManualClock(T0), extraction={"wait_for_llm": False})
    m.llm = ScriptedLLM(json.dumps({"operations": [{"op": "ADD", "content": "用户喜欢喝白茶"}]}, ensure_ascii=False))
    m.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    m.clock.advance(minutes=m.config.extraction.idle_minutes)
    assert m.worker.wait_idle(10)
    assert [x.content for x in m.list(user_id="u1")] == ["用户喜欢喝白茶"]


# ---- seed 002 §7 process_unextracted_turns: imported conversations are distilled too ----------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_imported_conversations_are_distilled_by_consolidate_a_slice_per_run(make_memory: MakeMemory,
                                                                           profile: str) -> None:
    m = make_memory(profile, clock=ManualClock(T0), extraction={"sweep_max_turns": 5, "sweep_job_turns": 2})
    day = datetime(2026, 1, 5, 20, 0, tzinfo=UTC)
    convs = [Conversation(f"imp{i}", [
        {"role": "user", "content": text, "created_at": (day + timedelta(days=i)).isoformat()},
        {"role": "assistant", "content": "好的", "created_at": (day + timedelta(days=i, minutes=1)).isoformat()},
        {"role": "user", "content": "谢谢", "created_at": (day + timedelta(days=i, minutes=2)).isoformat()},
    ]) for i, text in enumerate(["我喜欢喝白茶，每天下午都喝一壶", "我对花生过敏，吃了会起疹子",
                                 "I prefer pytest over unittest for every project"])]
    assert m.import_conversations(convs, user_id="u1").turns == 9
    assert m.store.jobs(status=("queued", "running", "done")) == []  # an import never extracts inline
    first = m.consolidate()
    assert first.sweep is not None and (first.sweep.turns, first.sweep.left) == (5, 4)
    assert [j.status for j in first.jobs] == ["done"] * 3  # slices of ≤ 2 turns
    second = m.consolidate()
    assert second.sweep is not None and (second.sweep.turns, second.sweep.left) == (4, 0)
    third = m.consolidate()
    assert third.sweep is not None and third.sweep.turns == 0
    done = m.store.jobs(status=("done",), limit=100)
    covered = {(j.session_id, s) for j in done for s in range(j.first_seq, j.last_seq + 1)}
    assert covered == {(f"imp{i}", s) for i in range(3) for s in (1, 2, 3)}  # every turn, once
    assert m.list(user_id="u1")


def test_a_slow_llm_never_lets_the_sweep_backlog_grow(make_memory: MakeMemory) -> None:
    m = _scripted(make_memory, "default", extraction={"sweep_max_turns": 3, "sweep_job_turns": 2})
    m.import_conversations([Conversation(f"imp{i}", [{"role": "user", "content": f"我喜欢喝白茶 {i}",
                                                      "created_at": "2025-12-01T10:00:00+00:00"}] * 2)
                            for i in range(4)], user_id="u1")
    sched = Scheduler(m)
    for _ in range(3):  # the LLM is down: every poll's jobs fail and wait for their back-off
        m.llm.enqueue(*[BackendError("LLM down")] * 10)
        sched.tick()
        m.clock.advance(minutes=1)
    queued = m.store.jobs(status=("queued",), limit=100)
    assert sum(j.last_seq - j.first_seq + 1 for j in queued) <= 3


def test_the_sweep_keeps_seed_004s_three_message_minimum(make_memory: MakeMemory) -> None:
    m = make_memory("consolidator", clock=ManualClock(T0))
    m.import_conversations([Conversation("short", [{"role": "user", "content": "I prefer tea over coffee"}]),
                            Conversation("long", [{"role": "user", "content": "I prefer pytest over unittest"},
                                                  {"role": "assistant", "content": "Noted"},
                                                  {"role": "user", "content": "thanks"}])], user_id="u1")
    m.clock.advance(hours=1)
    report = m.consolidate()
    assert report.sweep is not None and report.sweep.turns == 3
    assert {j.session_id for j in m.store.jobs(status=("done",))} == {"long"}


def test_the_sweep_with_an_llm_sends_each_imported_turn_once(make_memory: MakeMemory) -> None:
    m = _scripted(make_memory, "default")
    m.import_conversations([Conversation("imp", [{"role": "user", "content": "我对花生过敏",
                                                  "created_at": "2025-12-01T10:00:00+00:00"}])], user_id="u1")
    m.llm.enqueue(json.dumps({"operations": [{"op": "ADD", "content": "用户对花生过敏", "importance": "high"}]},
                             ensure_ascii=False))
    report = m.consolidate()
    assert [j.status for j in report.jobs] == ["done"] and len(_extractions(m.llm)) == 1
    assert [x.content for x in m.list(user_id="u1")] == ["用户对花生过敏"]
    m.consolidate()
    assert len(_extractions(m.llm)) == 1


# ---- "retry in 10 minutes" means 10 minutes, without a worker ---------------------------------


@pytest.mark.parametrize("profile", ["default", "progressive"])
def test_a_backed_off_job_runs_when_due_from_the_schedulers_poll(make_memory: MakeMemory, profile: str) -> None:
    m = _scripted(make_memory, profile)  # wait_for_llm: no worker; the scheduler alone polls
    sched = Scheduler(m)
    sched.tick()
    m.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    m.llm.enqueue(BackendError("LLM down"))
    [failed] = [r.result for r in m.end_session("s1", user_id="u1") if r.action == "extract"]
    assert failed.status == "retrying" and failed.next_at == m.clock.now + timedelta(minutes=10)
    m.clock.advance(minutes=9)
    sched.tick()
    assert sched.last_poll is not None and sched.last_poll.jobs == []
    m.clock.advance(minutes=1)
    m.llm.enqueue(json.dumps({"operations": [{"op": "ADD", "content": "用户喜欢喝白茶"}]}, ensure_ascii=False))
    sched.tick()
    assert sched.last_poll is not None and [r.status for r in sched.last_poll.jobs] == ["done"]
    assert [x.content for x in m.list(user_id="u1")] == ["用户喜欢喝白茶"]


# ---- a failed in-session extraction is reported as waiting, not "empty" ------------------------


@pytest.mark.parametrize("profile", ["progressive", "companion"])
def test_extract_reports_the_job_still_waiting(make_memory: MakeMemory, profile: str) -> None:
    m = _scripted(make_memory, profile)
    m.llm.enqueue(BackendError("LLM down"))
    said = "我喜欢喝白茶，每天下午都要喝上一壶才舒服，周末还会去茶馆坐一坐，顺便看看书"  # ≥ 30 characters
    m.add_messages("s1", [{"role": "user", "content": said}], user_id="u1")
    assert len(m.llm.calls) == 1  # the in-session extraction ran and failed
    report = m.extract("s1", user_id="u1")
    assert report.status == "retrying" and report.attempts == 1 and "LLM down" in (report.error or "")
    assert report.next_at == T0 + timedelta(minutes=10) and (report.first_seq, report.last_seq) == (1, 1)
    assert len(m.llm.calls) == 1  # not due yet: not run again
    m.clock.advance(minutes=10)
    m.llm.enqueue(json.dumps({"operations": [{"op": "ADD", "content": "用户喜欢喝白茶"}]}, ensure_ascii=False))
    again = m.extract("s1", user_id="u1")
    assert again.status == "done" and [x.content for x in again.added] == ["用户喜欢喝白茶"]
    assert m.extract("s1", user_id="u1").status == "empty"  # now there is nothing left


# ---- seed 003: the monitor runs after every turn, no cap a session, never in the caller -------


class _GatedLLM(ScriptedLLM):
    """Replies only once the test opens the gate: a caller that waited on it would hang."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: dict[str, Any] | None = None) -> str:
        assert self.gate.wait(10), "the gate was never opened"
        return super().complete(messages, json_schema=json_schema)


@pytest.mark.parametrize("wait", [True, False])
def test_companion_monitor_runs_after_every_user_turn(make_memory: MakeMemory, wait: bool) -> None:
    m = make_memory("companion", clock=ManualClock(T0), extraction={"wait_for_llm": wait})
    llm = ScriptedLLM() if wait else _GatedLLM()
    m.llm = llm
    llm.enqueue(*[NONE] * 10)
    said = ["我喜欢拉面", "明天要面试", "有点紧张", "你还记得我养的猫吗", "晚安", "再聊一句", "最后一句"]
    for i, text in enumerate(said):
        m.add_messages("s1", [{"role": "user", "content": text}, {"role": "assistant", "content": f"嗯{i}"}],
                       user_id="u1")
        if wait:
            assert len(_extractions(llm)) == i + 1  # right after this turn, the 6th and 7th too (issue 30)
    if not wait:
        assert llm.calls == []  # add_messages returned while the LLM was still closed
        assert isinstance(llm, _GatedLLM)
        llm.gate.set()
        assert m.worker.wait_idle(10)
    calls = _extractions(llm)
    assert m.config.extraction.max_per_session is None and len(calls) == len(said)
    assert all(said[k] in str(calls[k]["messages"]) for k in range(len(said)))  # each call saw its new turn


# ---- seed 001 §3.4: 每次 Merge 触发时 … 执行指数衰减 -------------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_a_merge_on_day_30_decays_the_memories_it_did_not_touch(make_memory: MakeMemory, profile: str) -> None:
    m = _scripted(make_memory, profile)
    pol = m.config.policy
    cat = "fact" if "fact" in pol.categories else pol.default_category
    hit = m.add("用户喜欢简洁的代码风格", user_id="u1", category=cat, importance="medium", source="extractor")
    idle = m.add("用户曾尝试用 Vue 写前端", user_id="u1", category=cat, importance="medium", source="extractor")
    m.clock.advance(days=30)
    # (queued first: under companion the monitor runs on the turn itself)
    m.llm.enqueue(json.dumps({"operations": [{"op": "BOOST", "id": hit.id}]}))
    m.add_messages("s1", [{"role": "user", "content": "代码还是写简洁一点，别加太多注释"}], user_id="u1")
    m.extract("s1", user_id="u1")
    rule = pol.decay.get(cat) or pol.decay["*"]
    owed = 0.6 * rule.daily_factor ** (30 - rule.grace_days)
    # the hit is activated by this merge, so it is not decayed (seed 001 §7.3 mixed row: 0.6 → 0.68)
    boosted = 0.6 + pol.boost_amount if pol.boost_amount is not None else 0.6 + 0.4 * pol.reinforce_rate
    assert m.get(hit.id, user_id="u1").score == pytest.approx(boosted)
    untouched = m.get(idle.id, user_id="u1").score
    if pol.decay_on_merge:  # seed 001: the whole store decays at each merge
        assert untouched == pytest.approx(owed)
    else:  # seeds 002 / 003 decay in the scheduled pass
        assert untouched == 0.6
    # consolidation the same day decays what was not decayed yet, and nothing twice
    m.consolidate(user_id="u1")
    assert m.get(idle.id, user_id="u1").score == pytest.approx(owed)
    assert m.get(hit.id, user_id="u1").score == pytest.approx(boosted)
    assert m.consolidate(user_id="u1").by_action().get("DECAY", 0) == 0


def test_a_merge_archives_what_decayed_below_the_archive_line(make_memory: MakeMemory) -> None:
    m = _scripted(make_memory, "scored-markdown")
    low = m.add("用户曾尝试用 Vue 写前端，但后来放弃了", user_id="u1", category="fact", importance="low",
                source="extractor")
    m.clock.advance(days=7 + 70)  # 0.4 × 0.99^70 ≈ 0.198 < 0.2
    m.llm.enqueue(NONE)
    m.add_messages("s1", [{"role": "user", "content": "今天聊点别的吧，天气不错"}], user_id="u1")
    m.extract("s1", user_id="u1")
    after = m.get(low.id, user_id="u1")
    assert after.status == "archived" and after.score == pytest.approx(0.4 * 0.99**70)
    assert [e.kind for e in m.history(low.id, user_id="u1")][-1] == "DECAY"


def test_a_session_ended_by_a_process_killed_before_queueing_is_swept_at_the_next_tick(make_memory: MakeMemory) -> None:
    # kill -9 between end_session's commit and the queueing of its extraction: the session is
    # ended, its turns unqueued; the scheduler's next tick queues and runs them, not idleness
    m = make_memory(clock=ManualClock(T0))
    m.add_messages("s1", [{"role": "user", "content": f"I prefer green tea, note {k}"} for k in range(3)], user_id="u1")
    session = m.store.get_session(Scope.of("u1"), "s1")
    assert session is not None
    session.ended_at = m.clock()
    with m.store.transaction():
        m.store.put_session(session)  # what end_session had committed when the process died
    assert m.store.jobs(limit=100) == []
    Scheduler(m).tick()
    assert {j.session_id for j in m.store.jobs(status=("done",), limit=100)} == {"s1"}
