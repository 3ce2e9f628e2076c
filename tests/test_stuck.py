"""Issue 12, "Stuck and poisoned": a dead writer's lease is taken over within seconds, one
bad job or scope fails alone (recorded, backed off), any valid id has a directory, the
scheduler never dies, and no caller waits on an LLM unless it asks to."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.config import LLMConfig
from memlane.errors import BackendError, ValidationError
from memlane.lease import Lease, ScopeLock
from memlane.lifecycle import Scheduler
from memlane.llm.client import OpenAICompatibleLLM
from memlane.markdown import scope_dir
from memlane.models import Scope
from memlane.testing import ManualClock, ScriptedLLM
from tests.stubs import openai_stub

from .conftest import T0

ROOT = Path(__file__).resolve().parents[1]
TEA = "remember that I drink white tea every afternoon"


def completion(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def hanging(release: threading.Event, seconds: float = 30.0) -> Callable[[str, dict[str, Any]], tuple[int, Any]]:
    """A stub LLM handler that hangs until released (or `seconds` pass)."""
    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        release.wait(seconds)
        return 200, completion('{"operations": []}')
    return handler


# ---- a dead holder ---------------------------------------------------------------------------

CHILD = """
import sys
from memlane import Config, Memory
home, url = sys.argv[1], sys.argv[2]
cfg = Config.load("default", store={"home": home}, embedding={"provider": "hash", "background": False},
                  llm={"base_url": url, "model": "m", "timeout_s": 60, "max_retries": 0})
m = Memory(cfg)
import os; print("child", os.getpid(), os.getppid())
m.add_messages("s1", [{"role": "user", "content": "I am allergic to peanuts, please never suggest them"}],
               user_id="u1")
print(m.end_session("s1", user_id="u1", wait=True))  # the LLM hangs with the lease held: killed here
"""


def test_a_writer_killed_mid_extraction_is_taken_over_within_seconds(make_memory, tmp_path):
    home = tmp_path / "data"
    release = threading.Event()
    with openai_stub(hanging(release)) as (url, seen):
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(home), url], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 12  # ~1.5 s on an idle machine
            while not seen and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.05)
            assert seen, f"the child never called the LLM: {child.poll()} {child.communicate()[0][-2000:]}"
            os.kill(child.pid, signal.SIGKILL)
            child.wait(5)
        finally:
            release.set()
            if child.poll() is None:
                child.kill()

    fresh = make_memory(home=home)  # offline: the heuristic extractor
    scope = Scope.of("u1")
    stale = Lease.parse(fresh.store.meta(ScopeLock.key(scope)))
    assert stale is not None and stale.pid == child.pid and stale.until > time.time()  # still "held"
    assert [j.status for j in fresh.store.jobs(status=("queued", "running", "done"))] == ["running"]

    started = time.monotonic()
    [report] = fresh.drain()
    assert report.status == "done" and time.monotonic() - started < 5
    job = fresh.store.jobs(status=("done",))[0]
    assert job.attempts == 2  # the interrupted run counts as an attempt
    # "remember …" and consolidation of that user are not skipped either
    fresh.add_messages("s2", [{"role": "user", "content": TEA}], user_id="u1")
    assert any("white tea" in m.content for m in fresh.list(user_id="u1"))
    assert fresh.consolidate(user_id="u1").locked == []


CONSOLIDATING = """
import sys, time
from memlane import Config, Memory
cfg = Config.load("default", store={"home": sys.argv[1]}, embedding={"provider": "hash", "background": False})
m = Memory(cfg)

def hang(step, scope, report):
    if step == "dedup":  # mid-pass, holding the scope's lease
        print("holding", flush=True)
        time.sleep(60)

m.consolidate(user_id="u1", on_step=hang)
"""


def test_a_consolidation_killed_mid_pass_does_not_lock_the_scope(make_memory, tmp_path):
    home = tmp_path / "data"
    m = make_memory(home=home)
    m.add("likes green tea", user_id="u1")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen([sys.executable, "-c", CONSOLIDATING, str(home)], env=env, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        assert m.jobs.lock.holder(Scope.of("u1")) is not None  # the child holds it, alive
        os.kill(child.pid, signal.SIGKILL)
        child.wait(5)
    finally:
        if child.poll() is None:
            child.kill()
    started = time.monotonic()
    report = m.consolidate(user_id="u1")
    assert report.locked == [] and report.scopes == [Scope.of("u1")] and time.monotonic() - started < 5


def test_a_lease_from_another_host_or_a_reused_pid():
    now = time.time()
    mine = Lease.mine("me", now + 30)
    assert not mine.dead() and mine.live(now)
    assert Lease("x", now + 30, os.getpid(), mine.host, "1").dead()  # our pid, another start: reused
    assert Lease("x", now + 30, 2**22 + 12345, mine.host, "").dead()  # no such process
    elsewhere = Lease("x", now + 30, 1, "another-host", "")
    assert elsewhere.live(now) and not elsewhere.live(now + 31)  # trusted until its lease runs out
    assert Lease.parse("old-owner|" + str(now + 30)) == Lease("old-owner", now + 30)  # the pre-pid format


def test_a_live_holder_keeps_its_short_lease_by_heartbeat(memory):
    scope = Scope.of("u1")
    lock, other = ScopeLock(memory.store, 0.3), ScopeLock(memory.store, 0.3)
    with lock.hold(scope, "worker") as held:
        assert held
        time.sleep(1.0)  # three leases long
        assert not other.acquire(scope, "someone-else")
    assert other.acquire(scope, "someone-else")  # released on exit


@pytest.mark.parametrize("later", ["drain", "consolidate", "next command"])
def test_remember_while_the_scope_is_busy_is_applied_later(mem, later):
    scope = Scope.of("u1")
    busy = ScopeLock(mem.store, 60)
    assert busy.acquire(scope, "another-writer")
    mem.add_messages("s1", [{"role": "user", "content": TEA}], user_id="u1")
    assert mem.list(user_id="u1") == []
    busy.release(scope, "another-writer")
    mem.llm.enqueue(json.dumps({"operations": []}))
    if later == "drain":
        assert [r.status for r in mem.drain()] == ["done"]
    elif later == "consolidate":
        assert [j.status for j in mem.consolidate().jobs] == ["done"]
    else:
        mem.add_messages("s1", [{"role": "user", "content": "remember that my cat is called Miso"}], user_id="u1")
        assert any("Miso" in m.content for m in mem.list(user_id="u1"))
    assert [m.content for m in mem.list(user_id="u1") if "white tea" in m.content]


# ---- containment -----------------------------------------------------------------------------


@pytest.mark.parametrize("poison", ["[" * 100_000 + "]" * 100_000, '{"operations": ' + "[" * 50 + "]" * 50 + "}",
                                    RecursionError("maximum recursion depth exceeded"), KeyError("surprise")])
def test_a_poisoned_job_fails_alone_with_backoff(mem, poison):
    mem.add_messages("s1", [{"role": "user", "content": "I like jazz and rainy evenings"}], user_id="u1")
    mem.add_messages("s2", [{"role": "user", "content": "I like jazz and rainy evenings"}], user_id="u2")
    mem.llm.enqueue(poison)
    [bad] = [r.result for r in mem.end_session("s1", user_id="u1") if r.action == "extract"]
    assert bad.status == "retrying" and bad.next_at == T0 + timedelta(seconds=600)
    [job] = mem.store.jobs(scope=Scope.of("u1"), status=("queued", "running"))
    assert (job.status, job.attempts) == ("queued", 1) and job.last_error
    mem.llm.enqueue(json.dumps({"operations": [{"op": "ADD", "content": "User likes jazz"}]}))
    [good] = [r.result for r in mem.end_session("s2", user_id="u2") if r.action == "extract"]
    assert good.status == "done"
    assert mem.drain() == []  # the bad one is not due; nothing raises
    assert mem.consolidate().errors == []


def test_consolidate_all_runs_every_scope_past_a_failing_one(memory):
    long_ids = ["u" * 256, "长" * 100, "A" * 200]
    for uid in ["a-broken", *long_ids, "z-last"]:
        memory.add("likes green tea", user_id=uid)
    (memory.data_dir(user_id="a-broken") / "MEMORY.md").mkdir(parents=True)  # cannot be written
    report = memory.consolidate()
    assert len(report.scopes) == 5
    [err] = report.errors
    assert "a-broken" in err and "files" in err
    for uid in [*long_ids, "z-last"]:
        d = memory.data_dir(user_id=uid)
        assert (d / "MEMORY.md").is_file() and len(d.name.encode()) <= 120
    assert memory.data_dir(user_id="Lin").name == "%4Cin"  # short ids keep their names
    names = {memory.data_dir(user_id="u" * n).name for n in (254, 255, 256)}
    assert len(names) == 3  # cut names stay distinct


def test_the_scheduler_thread_survives_failures(make_memory):
    m = make_memory(lifecycle={"scheduler_poll_seconds": 0.05})

    def boom(report: object) -> None:
        raise RuntimeError("a broken hook")

    sched = Scheduler(m, on_run=boom)
    sched.start()
    try:
        deadline = time.monotonic() + 5
        while sched.status()["failures"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        status = sched.status()
        assert status["failures"] >= 1 and status["alive"] and "broken hook" in status["last_error"]
    finally:
        sched.stop()


# ---- no caller waits on an LLM ---------------------------------------------------------------


def test_ending_a_session_does_not_wait_on_a_hung_llm(make_memory):
    release = threading.Event()
    with openai_stub(hanging(release, 3.0)) as (url, seen):
        m = make_memory(clock=ManualClock(T0), extraction={"wait_for_llm": False},
                        session={"compaction_cap": 4},
                        llm={"base_url": url, "model": "m", "timeout_s": 0.5, "max_retries": 1,
                             "retry_backoff_s": 0.0})
        started = time.monotonic()
        for i in range(6):  # past the compaction cap: compaction goes to the worker too
            m.add_messages("s1", [{"role": "user", "content": f"message {i}: I live in Lisbon and like fado"}],
                           user_id="u1")
        m.build_context("s1", "where do I live", user_id="u1")
        results = {r.action: r.result for r in m.end_session("s1", user_id="u1")}
        elapsed = time.monotonic() - started
        assert elapsed < 1.5, elapsed  # inline, the three LLM calls alone would take ≥ 3 s
        assert results["extract"].status == "queued" and results["episode"] is not None  # extractive, for now
        assert m.worker.wait_idle(9)
        release.set()
    [job] = m.store.jobs(status=("queued",))
    assert job.attempts == 1 and job.next_at == T0 + timedelta(seconds=600)  # backed off, turns kept
    assert len(m.get_turns("s1", user_id="u1")) == 6
    assert m.episodes(user_id="u1")  # the extractive episode, written by the worker


def test_a_retry_runs_when_due_without_anyone_draining(make_memory):
    clock = ManualClock(T0)
    m = make_memory(clock=clock, extraction={"wait_for_llm": False, "worker_poll_seconds": 0.1})
    m.llm = ScriptedLLM(BackendError("LLM down"))
    m.add_messages("s1", [{"role": "user", "content": "I like jazz"}], user_id="u1")
    m.end_session("s1", user_id="u1")
    assert m.worker.wait_idle(5)
    assert m.store.jobs(status=("queued",))[0].attempts == 1
    m.llm.enqueue(json.dumps({"operations": [{"op": "ADD", "content": "User likes jazz"}]}))
    clock.now = T0 + timedelta(seconds=600)  # ten minutes later, the worker's next look runs it
    deadline = time.monotonic() + 5
    while not m.list(user_id="u1") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [x.content for x in m.list(user_id="u1")] == ["User likes jazz"]


def test_close_does_not_wait_on_a_hung_llm_and_the_job_is_taken_over(make_memory, tmp_path):
    release = threading.Event()
    home = tmp_path / "data"
    with openai_stub(hanging(release, 8.0)) as (url, seen):
        m = make_memory(home=home, extraction={"wait_for_llm": False, "worker_stop_seconds": 0.3,
                                               "lock_lease_seconds": 0.5},
                        llm={"base_url": url, "model": "m", "timeout_s": 30, "max_retries": 0})
        m.add_messages("s1", [{"role": "user", "content": "I like jazz and rainy evenings"}], user_id="u1")
        m.end_session("s1", user_id="u1")
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
        m.close()
        assert time.monotonic() - started < 1.0
        time.sleep(0.8)  # the lease of the closed memory's worker runs out (no heartbeat)
        fresh = make_memory(home=home)
        reports = fresh.drain()
        release.set()
    assert [r.status for r in reports] == ["done"]


def test_the_llm_client_bounds_a_call_and_fails_fast_on_refusal():
    with openai_stub(lambda p, b: (200, completion("x"))) as (url, _):
        pass  # nothing listens there now
    llm = OpenAICompatibleLLM(LLMConfig(base_url=url, max_retries=3, retry_backoff_s=1.0))
    started = time.monotonic()
    with pytest.raises(BackendError, match="nothing is listening"):
        llm.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 0.5

    def slow(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(0.5)
        return 200, completion("late")

    with openai_stub(slow) as (url, seen):
        llm = OpenAICompatibleLLM(LLMConfig(base_url=url, timeout_s=0.3, max_retries=10, retry_backoff_s=0.0,
                                            deadline_s=1.0))
        started = time.monotonic()
        with pytest.raises(BackendError, match="deadline_s"):
            llm.complete([{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 1.5 and len(seen) <= 4


def test_the_cli_lists_a_busy_scope(make_memory, tmp_path):
    from tests.test_cli import run

    m = make_memory(home=tmp_path)
    for uid in ("u1", "u2"):
        m.add("likes green tea", user_id=uid)
    assert m.jobs.lock.acquire(Scope.of("u1"), "a-live-writer")  # this process, alive
    report = json.loads(run(tmp_path, "consolidate", "--all", "--json", process=True).stdout)  # another process
    assert [s["user_id"] for s in report["locked"]] == ["u1"]
    assert [s["user_id"] for s in report["scopes"]] == ["u2"]
    assert "skipped u1" in run(tmp_path, "consolidate", "--all", process=True).stderr


def _valid_id(value: str) -> bool:
    try:
        Scope.of(value)
    except ValidationError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=256).filter(_valid_id), min_size=2, max_size=2, unique=True))
def test_every_valid_id_has_its_own_short_directory_name(ids):
    home = Path("/home")
    names = [scope_dir(home, Scope.of(i)).name for i in ids]
    assert all(0 < len(n.encode()) <= 120 and "/" not in n and n not in (".", "..") for n in names)
    assert names[0] != names[1]


def test_a_server_trickling_its_reply_is_cut_at_the_deadline():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):  # a byte every 0.1 s: never a read timeout, 100 s in all
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        llm = OpenAICompatibleLLM(LLMConfig(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                                            timeout_s=0.5, max_retries=0, deadline_s=1.0))
        started = time.monotonic()
        with pytest.raises(BackendError, match="deadline"):
            llm.complete([{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 2.0
    finally:
        server.shutdown()
        server.server_close()
