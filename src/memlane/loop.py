"""One wake/wait loop: a daemon thread that runs its work whenever it is woken (`notify`) or
`every` seconds pass, until `stop()`. The embedding indexer (indexing.py), the job worker
(worker.py) and the consolidation scheduler (lifecycle.py) each run on one.

Nothing the work raises ends the thread: the failure is logged and counted (`failures`,
`last_error`) and the loop waits for the next wake-up. `wait_idle` returns once a pass ends
with no wake-up come in meanwhile: what was asked before the call is done.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

log = logging.getLogger(__name__)


class Loop:
    """`work` on a daemon thread named `name`, run on each wake-up. `every`: seconds after
    which a pass runs unwoken (None: only when woken). `around`: what the thread holds while it
    runs, such as a database connection of its own."""

    def __init__(self, name: str, work: Callable[[], object], *, every: float | None = None,
                 around: Callable[[], AbstractContextManager[object]] = nullcontext) -> None:
        self.name = name
        self._work = work
        self._every = every
        self._around = around
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures = 0
        self.last_error: str | None = None

    @property
    def stopping(self) -> bool:
        """Whether `stop()` was asked: work of many steps looks between them."""
        return self._stop.is_set()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, at_once: bool = False) -> None:
        """Start the thread (again, after `stop`): it waits for a wake-up, or with `at_once`
        runs a pass first."""
        if self._thread is not None:
            return
        self._stop.clear()
        if at_once:
            self.notify()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def notify(self) -> None:
        """Run a pass now, or after the one in progress."""
        self._idle.clear()
        self._wake.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wake the loop and block until a pass ends with nothing new asked; False on timeout."""
        self.notify()
        return self._idle.wait(timeout)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop, waiting at most `timeout` s for the pass in progress (an LLM call may hang).
        True when the thread ended."""
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def guarded(self, fn: Callable[[], object]) -> object:
        """`fn()`, or None where it failed: logged and counted, never raised."""
        try:
            return fn()
        except Exception as exc:  # the loop never dies: the failure is logged and counted
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("background work on %s failed", self.name)
            return None

    def _run(self) -> None:
        with self._around():
            while True:
                self._wake.wait(self._every)
                if self._stop.is_set():
                    self._idle.set()
                    return
                self._wake.clear()
                self.guarded(self._work)
                if not self._wake.is_set():
                    self._idle.set()
