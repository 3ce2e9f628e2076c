"""When memories are extracted from a session's turns, and where (issue 4).

Offline, the heuristics are fast and run in the caller. With an LLM, the work is queued and
the background worker runs it, unless the caller asked to wait (`end_session(wait=True)`,
`extraction.wait_for_llm`): then it runs here, after the session's earlier jobs that are due.

Triggers: the end of a session (the `extract` rule action, seed 004 §11), a command in a
user's turn ("记住…" / "忘掉…", seed 001 §6), and every N user messages during a session, at
most `extraction.max_per_session` times (seed 002 §6; None: after every turn, seed 003).
A finished job says which memories changed and which were deleted (signals.py): MEMORY.md
and the files follow.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

from memlane.events import Event
from memlane.jobs import JobReport, JobRunner
from memlane.models import Hit, MemoryRecord, Scope, Turn
from memlane.parts import Extracting
from memlane.worker import JobWorker

T = TypeVar("T")


class Extraction:
    def __init__(self, engine: Extracting) -> None:
        self.engine = engine
        self._jobs: JobRunner | None = None
        self._worker: JobWorker | None = None  # started on first use, with an LLM (see `background`)
        self._waiting = threading.local()  # a caller waits for the LLM's work, per thread

    # ---- where the work runs ------------------------------------------------------------

    @property
    def waiting(self) -> bool:
        """Whether the caller in this thread waits for the LLM's work (`end_session(wait=True)`)."""
        return bool(getattr(self._waiting, "on", False))

    @contextmanager
    def wait(self, on: bool) -> Iterator[None]:
        """Inside the block, this thread's rule actions run their LLM work here when `on`."""
        self._waiting.on = on
        try:
            yield
        finally:
            self._waiting.on = False

    def background(self, wait: bool | None = None) -> bool:
        """Whether LLM work goes to the worker: an LLM is configured and nobody asked to wait.
        Offline the heuristics are fast and run in the caller."""
        if wait is None:
            wait = self.engine.config.extraction.wait_for_llm
        return self.engine.llm is not None and not wait

    @property
    def worker(self) -> JobWorker:
        """The background worker (started on first use; `stop` stops it)."""
        if self._worker is None:
            self._worker = JobWorker(self.engine)
        return self._worker

    @property
    def jobs(self) -> JobRunner:
        """The extraction queue of this store (created on first use)."""
        if self._jobs is None:
            e = self.engine
            self._jobs = JobRunner(e.store, e.embedder, e.config, e.events, self._retrieve)
            self._jobs.on_change = self._after_job
        return self._jobs

    def status(self) -> dict[str, object] | None:
        return None if self._worker is None else vars(self._worker.status())

    def wait_idle(self, timeout: float) -> bool:
        return self._worker is None or self._worker.wait_idle(timeout)

    def stop(self) -> None:
        """Stop the worker, bounded: a hung LLM call is left to the next worker."""
        if self._worker is not None:
            self._worker.stop(self.engine.config.extraction.worker_stop_seconds)
            self._worker = None

    # ---- triggers -----------------------------------------------------------------------

    def on_session_ended(self, event: Event) -> JobReport | None:
        """The `extract` rule action: queue the session's not-yet-extracted turns as one job
        (a range is queued once) and run it now — or, in the background, let the worker run
        it; a failed run stays queued with back-off (see `drain`)."""
        scope, session_id = event.scope, event.payload["session_id"]
        if self.waiting or not self.background():
            return self.now(scope, session_id, None)
        return self.queue(scope, session_id)

    def offline_first(self, write: Callable[[bool], T | None], key: tuple[object, ...]) -> T | None:
        """A rule action's LLM work (an episode): in the background (see `background`) its
        offline version is written at once and the worker rewrites it with the LLM (if it never
        gets to, the offline one stays); otherwise the LLM's version, here. `write(offline)`."""
        if self.waiting or not self.background():
            return write(False)
        done = write(True)
        if done is not None:
            self.worker.submit(lambda: write(False), key=key)
        return done

    def after_turns(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> JobReport | None:
        """Extract during a session: at once when the user says "remember/forget …"
        (seed 001 §6), else every N user messages of ≥ min_message_chars, at most
        max_per_session times a session (seed 002 §6; None: after every turn, seed 003)."""
        from memlane.heuristic import is_command  # on first use: its grammars compile in ~0.4 s

        e = self.engine
        cfg = e.config.extraction
        users = [t for t in turns if t.role == "user"]
        if any(is_command(t.content[: cfg.offline_turn_chars], cfg.heuristic_max_sentence_chars) for t in users):
            applied = self.jobs.apply_commands(scope, session_id, e.clock())
            if applied is not None and applied.status == "locked" and self.background():
                self.worker.notify()  # queued as a job: the worker applies them once the scope is free
        if cfg.every_n_user_messages <= 0 or not users:
            return None
        qualifying = sum(1 for t in users if len(t.content.strip()) >= cfg.min_message_chars)
        if not qualifying:
            return None
        with e.store.transaction():
            session = e.store.get_session(scope, session_id)
            if session is None:
                return None
            count = int(session.metadata.get("user_messages_since_extract", 0)) + qualifying
            session.metadata["user_messages_since_extract"] = count
            # the cap counts the runs triggered, not only those finished: a busy worker must not
            # let a chatty session queue one job per turn past max_per_session
            triggered = int(session.metadata.get("in_session_extractions", 0))
            capped = cfg.max_per_session is not None and max(triggered, session.extraction_count) >= cfg.max_per_session
            if count < cfg.every_n_user_messages or capped:
                e.store.put_session(session)
                return None
            session.metadata["in_session_extractions"] = triggered + 1
            e.store.put_session(session)
        if self.background():
            return self.queue(scope, session_id)
        return self.now(scope, session_id, None)

    # ---- running ------------------------------------------------------------------------

    def queue(self, scope: Scope, session_id: str) -> JobReport | None:
        job = self.jobs.enqueue(scope, session_id, self.engine.clock())
        self.worker.notify()
        if job is None:
            return None
        return JobReport(session_id, job.first_seq, job.last_seq, job_id=job.id, status="queued",
                         attempts=job.attempts, next_at=job.next_at)

    def now(self, scope: Scope, session_id: str, through_seq: int | None) -> JobReport | None:
        """Queue the session's new turns and run that job here, after the session's earlier
        jobs that are due (left queued while the scope was busy); the new job's report."""
        e = self.engine
        job = self.jobs.enqueue(scope, session_id, e.clock(), through_seq)
        now = e.clock()
        earlier: JobReport | None = None
        for old in e.store.jobs(scope=scope, due_before=now, status=("queued",), limit=100):
            if old.session_id == session_id and (job is None or old.id != job.id):
                earlier = self.jobs.run_contained(old, now, e.llm)
        if job is None:  # nothing new: a job still waiting (backed off), else the one just rerun
            return self.jobs.pending(scope, session_id) or earlier
        report = self.jobs.run_contained(job, e.clock(), e.llm)
        if report.status == "locked" and self.waiting and self._worker is not None:
            # our own worker may have picked the job up: the caller asked to wait, so wait
            self._worker.wait_idle(e.config.llm.deadline_s * 2)
            report = self.jobs.run_contained(job, e.clock(), e.llm)
            if report.status == "skipped":  # the worker finished it
                done = next((j for j in e.store.jobs(scope=scope, status=("done", "queued"), limit=100_000)
                             if j.id == job.id), None)
                if done is not None:
                    report.status = "done" if done.status == "done" else "retrying"
                    report.attempts, report.error, report.next_at = done.attempts, done.last_error, done.next_at
        if report.status == "locked" and self.background():  # the worker retries it when polling
            self.worker.notify()
        return report

    def drain(self, now: datetime, limit: int) -> list[JobReport]:
        """Run every extraction job that is due (queued, or claimed by a worker that died)."""
        return self.jobs.drain(now, self.engine.llm, limit)

    def _after_job(self, scope: Scope, deleted: list[MemoryRecord]) -> None:
        """A finished job: MEMORY.md follows the store (seed 001) and, in every profile, what
        it deleted leaves the files, as `delete` does."""
        self.engine.signals.send("memory.changed", scope)
        if deleted:
            self.engine.signals.send("memory.forgotten", scope, deleted)

    def _retrieve(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        # seed 003: being retrieved for the extractor is not being used; never activates
        return self.engine.search(query, user_id=scope.user_id, agent_id=scope.agent_id or None, limit=limit,
                                  activate=False, min_score=0.0)
