"""The scope's writer lease: one writer per scope across threads and processes (seed 001 §6
phase 1.5), and never stuck behind a dead one.

The lease is a row in `meta`, written inside `BEGIN IMMEDIATE`, naming its holder: owner
token, pid, host name and the process's start time (so a reused pid is not mistaken for the
holder). A holder on this host whose process is gone is dead and its lease is taken over at
once; a holder elsewhere is trusted until its lease runs out, which is short
(`extraction.lock_lease_seconds`, 30 s) because a live holder renews it every third of that
while it works (`hold`'s heartbeat thread).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from memlane.models import Scope
from memlane.store import Store

log = logging.getLogger(__name__)


def _host() -> str:
    """This machine, and its pid namespace: containers sharing a host name and a volume each
    see only their own pids, so a pid is only judged where it can be seen."""
    try:
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        ns = ""
    return f"{socket.gethostname()}/{ns}" if ns else socket.gethostname()


HOST = _host()


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux /proc); "" where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return ""
    fields = data[data.rfind(b")") + 2:].split()  # the name in (…) may hold spaces
    return fields[19].decode() if len(fields) > 19 else ""


def process_alive(pid: int, started: str = "") -> bool:
    """Whether `pid` on this host is a running process (and the same one, when `started` is known)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # no cheap, safe probe: trust the lease's expiry
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, run by another user
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        if state in (b"Z", b"X"):  # killed, not reaped yet: it will never release the lease
            return False
    except (OSError, IndexError):
        pass
    current = process_start(pid)
    return not (started and current and current != started)


_SELF_START = process_start(os.getpid())


@dataclass(frozen=True)
class Lease:
    """Who holds a scope and until when (wall time: leases are shared between processes)."""

    owner: str
    until: float
    pid: int = 0
    host: str = ""
    started: str = ""

    @classmethod
    def mine(cls, owner: str, until: float) -> Lease:
        return cls(owner, until, os.getpid(), HOST, _SELF_START)

    @classmethod
    def parse(cls, raw: str | None) -> Lease | None:
        if not raw:
            return None
        if raw.startswith("{"):
            try:
                data = json.loads(raw)
                return cls(str(data["owner"]), float(data["until"]), int(data.get("pid", 0)),
                           str(data.get("host", "")), str(data.get("started", "")))
            except (ValueError, KeyError, TypeError):
                return None  # unreadable: nobody can be said to hold it
        holder, _, until = raw.rpartition("|")  # the format before pids were recorded
        try:
            return cls(holder, float(until or 0)) if holder else None
        except ValueError:
            return None

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    def dead(self) -> bool:
        """Known dead: a process of this host that is gone (or whose pid was reused)."""
        return bool(self.pid) and self.host == HOST and not process_alive(self.pid, self.started)

    def live(self, now: float) -> bool:
        return self.until > now and not self.dead()

    def describe(self) -> str:
        where = f"pid {self.pid} on {self.host}" if self.pid else self.owner
        return f"{where}, lease until {time.strftime('%H:%M:%S', time.localtime(self.until))}"


class ScopeLock:
    """The lease of each scope in `meta`: `acquire`/`release`, or `hold` (with a heartbeat)."""

    def __init__(self, store: Store, lease_seconds: float) -> None:
        self.store = store
        self.lease = lease_seconds

    @staticmethod
    def key(scope: Scope) -> str:
        return f"extract-lock:{scope.user_id}\x1f{scope.agent_id}"

    def holder(self, scope: Scope) -> Lease | None:
        """The live holder of the scope, if any."""
        lease = Lease.parse(self.store.meta(self.key(scope)))
        return lease if lease is not None and lease.live(time.time()) else None

    def acquire(self, scope: Scope, owner: str) -> bool:
        """Take the scope's lease; False while a live holder has it. A store with session
        locks (PostgreSQL: an advisory lock held by a connection, gone with its holder on any
        host) decides who is live: holding it, a leftover lease row is a dead holder's; a
        holder that keeps the lock but let its lease run out is taken over, as on SQLite."""
        now = time.time()
        key = self.key(scope)
        lock = getattr(self.store, "try_session_lock", None)
        taken = False
        try:
            with self.store.transaction():
                held = Lease.parse(self.store.meta(key))
                if lock is not None:
                    taken = bool(lock(key, owner))
                    # not ours: another session holds it; live unless it let its lease run out
                    if not taken and (held is None or held.until > now):
                        return False
                elif held is not None and held.owner != owner and held.live(now):
                    return False
                if held is not None and held.owner != owner and held.until > now:
                    log.warning("scope %s: taking over the lease of dead holder %s", scope.user_id, held.describe())
                self.store.set_meta(key, Lease.mine(owner, now + self.lease).dump())
        except BaseException:
            if taken:
                self.store.session_unlock(key, owner)  # type: ignore[attr-defined]
            raise
        return True

    def renew(self, scope: Scope, owner: str) -> bool:
        """Extend our lease; False when it is no longer ours (taken over after it ran out)."""
        with self.store.transaction():
            held = Lease.parse(self.store.meta(self.key(scope)))
            if held is None or held.owner != owner:
                return False
            self.store.set_meta(self.key(scope), Lease.mine(owner, time.time() + self.lease).dump())
        return True

    def release(self, scope: Scope, owner: str) -> None:
        with self.store.transaction():
            held = Lease.parse(self.store.meta(self.key(scope)))
            if held is not None and held.owner == owner:
                self.store.set_meta(self.key(scope), "")
        unlock = getattr(self.store, "session_unlock", None)
        if unlock is not None:
            unlock(self.key(scope), owner)

    @contextlib.contextmanager
    def hold(self, scope: Scope, owner: str) -> Iterator[bool]:
        """Acquire (yields False when a live holder has the scope), renew while the body
        runs, release after."""
        if not self.acquire(scope, owner):
            yield False
            return
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(scope, owner, stop), name="memlane-lease", daemon=True)
        beat.start()
        try:
            yield True
        finally:
            stop.set()
            beat.join(timeout=5)
            self.release(scope, owner)

    def _beat(self, scope: Scope, owner: str, stop: threading.Event) -> None:
        while not stop.wait(max(self.lease / 3, 0.05)):
            try:
                if not self.renew(scope, owner):
                    log.warning("scope %s: lease lost while working", scope.user_id)
                    return
            except Exception as exc:  # a closed or broken store: the lease simply runs out
                log.warning("scope %s: lease not renewed: %s", scope.user_id, exc)
                return


__all__ = ["Lease", "ScopeLock", "process_alive", "process_start"]
