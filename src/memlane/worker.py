"""The background worker: LLM work that callers must not wait for.

With an LLM configured (and `extraction.wait_for_llm` off), `end_session` and `add_messages`
commit what they were given, queue the extraction job (durable, in the store) or hand a
task (an episode, a compaction) to this thread, and return. The thread runs the tasks, then
every due extraction job (after queueing the turns of sessions gone idle), then sleeps until
notified or `extraction.worker_poll_seconds` pass (`loop.Loop`) — so a job backed off for 10
minutes runs 10 minutes later, not at the next nightly pass. Nothing it runs may stop it:
each failure is logged and counted in `status()`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from memlane.loop import Loop
from memlane.parts import Working
from memlane.sweep import sweep_unextracted

if TYPE_CHECKING:
    from memlane.jobs import JobReport


@dataclass
class WorkerStatus:
    """What the worker did so far (a server reports it)."""

    alive: bool
    tasks_run: int
    jobs_run: int
    failures: int
    last_error: str | None
    pending_tasks: int


class JobWorker:
    """A daemon thread on one engine (a `Memory`; its store is shared between threads under a lock)."""

    def __init__(self, memory: Working) -> None:
        self._memory = memory
        self._poll = memory.config.extraction.worker_poll_seconds
        self._tasks: deque[tuple[object, Callable[[], object]]] = deque()
        self._keys: set[object] = set()
        self._guard = threading.Lock()
        self._swept = float("-inf")  # monotonic time of the last idle sweep
        self.tasks_run = self.jobs_run = 0
        self._loop = Loop("memlane-worker", self._pass, every=self._poll)
        self._loop.start()

    def submit(self, task: Callable[[], object], key: object = None) -> None:
        """Run `task` on the worker; a task whose `key` is already waiting is not queued twice."""
        with self._guard:
            if key is None or key not in self._keys:
                self._tasks.append((key, task))
                if key is not None:
                    self._keys.add(key)
        self.notify()

    def notify(self) -> None:
        """Look for due jobs now."""
        self._loop.notify()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the tasks and due jobs are done (tests, `flush`); False on timeout."""
        return self._loop.wait_idle(timeout)

    def status(self) -> WorkerStatus:
        with self._guard:
            pending = len(self._tasks)
        return WorkerStatus(self._loop.alive, self.tasks_run, self.jobs_run, self._loop.failures,
                            self._loop.last_error, pending)

    def stop(self, timeout: float) -> bool:
        """Stop, waiting at most `timeout` s for a call in progress (an LLM call may hang: a
        job it leaves "running" is taken over by the next worker). True when it stopped."""
        return self._loop.stop(timeout)

    def _pass(self) -> None:
        """The idle sweep, then every task and due job, until none is left or a stop is asked."""
        self._loop.guarded(self._sweep)
        while not self._loop.stopping and self._step():
            pass

    def _sweep(self) -> None:
        """Seed 001 §3.2: idle sessions' unextracted turns are queued (then drained below) —
        once a poll interval, not on every wake (each `add_messages` wakes the worker)."""
        if time.monotonic() - self._swept < self._poll:
            return
        self._swept = time.monotonic()
        sweep_unextracted(self._memory, self._memory.clock())

    def _step(self) -> bool:
        """One task, else one drain; True while there may be more to do."""
        with self._guard:
            item = self._tasks.popleft() if self._tasks else None
            if item is not None:
                self._keys.discard(item[0])
        if item is not None:
            self._loop.guarded(item[1])
            self.tasks_run += 1
            return True
        reports = cast("list[JobReport]", self._loop.guarded(lambda: self._memory.drain(limit=20)) or [])
        # a locked scope waits for its holder; an unrecordable failure for the next poll
        ran = [r for r in reports if r.status not in ("locked", "skipped", "error")]
        self.jobs_run += len(ran)
        return bool(ran)


__all__ = ["JobWorker", "WorkerStatus"]
