"""The extraction queue: back-off 10 m → 30 m → 2 h → 6 h → 12 h and archive_backlog (seed 000),
every-N-messages trigger under seed 002's limits, one writer per scope, crashed workers."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

from memlane.errors import BackendError
from memlane.jobs import ScopeLock
from memlane.models import Scope
from memlane.testing import ManualClock, ScriptedLLM

from .conftest import T0

ADD_TEA = json.dumps({"operations": [{"op": "ADD", "content": "用户喜欢喝白茶"}]}, ensure_ascii=False)




def test_backoff_then_archive_backlog_and_the_job_is_never_dropped(mem):
    backlog = []
    mem.events.subscribe("archive_backlog", backlog.append)
    mem.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    mem.llm.enqueue(BackendError("LLM down"))
    [first] = [r.result for r in mem.end_session("s1", user_id="u1") if r.action == "extract"]
    assert first.status == "retrying"
    waits = [first.next_at - T0]
    for _ in range(5):
        mem.clock.now = mem.store.jobs(status=("queued",))[0].next_at
        assert mem.drain(mem.clock.now - timedelta(seconds=1)) == []  # not due a second early
        mem.llm.enqueue(BackendError("LLM down"))
        [r] = mem.drain()
        waits.append(r.next_at - mem.clock.now)
    # seed 000's whole sequence (12 h included), then the backlog back-off
    assert [w.total_seconds() for w in waits] == [600, 1800, 7200, 21600, 43200, 86400]
    assert [e.payload["attempts"] for e in backlog] == [5, 6]
    assert backlog[0].payload["session_id"] == "s1" and "LLM down" in backlog[0].payload["error"]
    # the turns were never at risk, and the job finally succeeds
    assert [t.content for t in mem.get_turns("s1", user_id="u1")] == ["我喜欢喝白茶"]
    mem.clock.now = mem.store.jobs(status=("queued",))[0].next_at
    mem.llm.enqueue(ADD_TEA)
    [ok] = mem.drain()
    assert ok.status == "done" and [m.content for m in mem.list(user_id="u1")] == ["用户喜欢喝白茶"]


def test_every_n_user_messages_under_seed002_limits(make_memory):
    m = make_memory(clock=ManualClock(T0), extraction={"every_n_user_messages": 1, "max_per_session": 2,
                                               "min_message_chars": 10})
    m.llm = ScriptedLLM()
    m.add_messages("s1", [{"role": "user", "content": "短消息"}], user_id="u1")  # < 10 chars: no call
    assert m.llm.calls == []
    m.llm.enqueue(ADD_TEA, json.dumps({"operations": []}))
    m.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶，每天下午都喝一壶"}], user_id="u1")
    m.add_messages("s1", [{"role": "user", "content": "I usually run every morning before work"}], user_id="u1")
    assert len(m.llm.calls) == 2
    m.add_messages("s1", [{"role": "user", "content": "a third long message that would trigger"}], user_id="u1")
    assert len(m.llm.calls) == 2  # ≤ max_per_session extractions per session
    # the rest of the session is still extracted when it ends
    m.llm.enqueue(json.dumps({"operations": []}))
    m.end_session("s1", user_id="u1")
    calls = [c for c in m.llm.calls if "operations" in c["messages"][0]["content"]]
    assert len(calls) == 3 and "a third long message" in calls[-1]["messages"][1]["content"]
    assert "短消息" not in calls[-1]["messages"][1]["content"]  # a range is extracted once


def test_a_scope_held_by_another_writer_is_left_queued(mem):
    mem.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    other = ScopeLock(mem.store, 60)
    assert other.acquire(Scope.of("u1"), "other-process")
    [r] = [r.result for r in mem.end_session("s1", user_id="u1") if r.action == "extract"]
    assert r.status == "locked" and mem.llm.calls == []
    assert mem.store.jobs(status=("queued",))[0].attempts == 0
    # another scope is not blocked
    mem.llm.enqueue(ADD_TEA)
    mem.add_messages("s2", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u2")
    assert mem.extract("s2", user_id="u2").status == "done"
    other.release(Scope.of("u1"), "other-process")
    mem.llm.enqueue(ADD_TEA)
    [done] = mem.drain()
    assert done.status == "done" and len(mem.list(user_id="u1")) == 1


def test_an_expired_lease_is_taken_over(mem):
    lock = ScopeLock(mem.store, -1)  # a crashed holder whose lease has run out
    assert lock.acquire(Scope.of("u1"), "dead-worker")
    mem.add_messages("s1", [{"role": "user", "content": "hi"}], user_id="u1")
    mem.llm.enqueue(json.dumps({"operations": []}))
    assert mem.extract("s1", user_id="u1").status == "done"


def test_a_job_claimed_by_a_crashed_worker_is_taken_over_at_once(mem):
    mem.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    job = mem.jobs.enqueue(Scope.of("u1"), "s1", T0)
    assert job is not None and mem.store.claim_job(job.id)  # a worker claimed it, then died
    mem.store.update_job(job.id, status="running", attempts=0, next_at=T0 + timedelta(minutes=15), last_error=None)
    # nobody holds the scope's lease, so nobody is working on it: taken over now, and the
    # interruption counts as an attempt (a job that kills its worker every time backs off)
    mem.llm.enqueue(ADD_TEA)
    [r] = mem.drain()
    assert r.status == "done" and len(mem.list(user_id="u1")) == 1
    assert mem.store.jobs(status=("done",))[0].attempts == 2


def test_a_job_claimed_by_a_live_worker_is_left_alone(mem):
    mem.add_messages("s1", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    job = mem.jobs.enqueue(Scope.of("u1"), "s1", T0)
    assert job is not None and mem.store.claim_job(job.id)
    other = ScopeLock(mem.store, 60)
    assert other.acquire(Scope.of("u1"), "live-worker")  # this process: alive
    [r] = mem.drain()
    assert r.status == "locked" and "pid" in (r.error or "") and mem.llm.calls == []


def test_concurrent_workers_on_one_store_run_each_job_once(make_memory, tmp_path):
    home = tmp_path / "shared"
    writer = make_memory(home=home)
    foods = ["花生", "芒果", "海鲜", "牛奶", "鸡蛋", "小麦"]
    for i in range(6):
        writer.add_messages(f"s{i}", [{"role": "user", "content": f"我对{foods[i]}过敏"}], user_id=f"u{i % 3}")
        writer.jobs.enqueue(Scope.of(f"u{i % 3}"), f"s{i}", writer.clock())
    workers = [make_memory(home=home) for _ in range(4)]  # own connections, like processes
    reports: list = []
    barrier = threading.Barrier(len(workers))

    def work(m):
        barrier.wait()
        reports.extend(m.drain())

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = [r for r in reports if r.status == "done"]
    while len(done) < 6:  # jobs skipped because their scope was busy are picked up by a later drain
        done += [r for r in writer.drain() if r.status == "done"]
    assert sorted(r.session_id for r in done) == [f"s{i}" for i in range(6)]
    assert writer.store.raw_count("memories") == 6
    assert writer.store.raw_count("extraction_jobs", "status = 'done'") == 6
