"""`memlane serve --workers N`: N server processes on one listening socket, one engine each.

The parent binds the socket, forks the workers (each builds its own app and engine after the
fork: nothing of the engine crosses it) and supervises them: SIGTERM or SIGINT stops them all
gracefully; a worker that dies while serving (SIGKILL, a crash) is started again; a worker
that fails its startup (the lifespan raised: a bad configuration) stops the whole server with
exit code 3, as uvicorn alone would; a worker whose supervisor is killed stops by itself
within a second. Only worker 0 runs the consolidation scheduler (one per
home is enough; the others only serve requests and run their own embedding indexer).

Several processes on one home are the supported case of the store (SQLite WAL with a writer
lease, or PostgreSQL), so the workers need no coordination of their own: the kernel spreads
the connections over them and the database keeps them correct.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

from memlane.config import Config
from memlane.errors import ConfigError

log = logging.getLogger("memlane.server")

STARTUP_FAILED = 3  # uvicorn's own exit code when the lifespan fails
ORPHAN_POLL = 1.0  # seconds between a worker's checks that its supervisor still lives
RESPAWN_PAUSE = 1.0  # seconds before a dead worker is started again: a crash loop stays slow


def _worker(cfg: Config, sock: socket.socket, index: int, bind: str, uvicorn_options: dict[str, Any]) -> int:
    """The body of one forked worker: its app, its engine, uvicorn on the shared socket."""
    import uvicorn

    from memlane.server.app import create_app

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)  # uvicorn installs its own handlers in run()
    app = create_app(cfg, host=bind, scheduler=cfg.server.scheduler and index == 0)
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options))
    parent = os.getppid()

    def orphaned() -> None:  # the supervisor was killed (SIGKILL): stop gracefully, not serve on alone
        while not server.should_exit:
            if os.getppid() != parent:
                log.warning("worker %d: the supervisor (pid %d) is gone; stopping", index, parent)
                server.should_exit = True
                return
            time.sleep(ORPHAN_POLL)

    threading.Thread(target=orphaned, name="memlane-orphan-watch", daemon=True).start()
    server.run(sockets=[sock])
    return 0 if server.started else STARTUP_FAILED


def _spawn(cfg: Config, sock: socket.socket, index: int, bind: str, uvicorn_options: dict[str, Any]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _worker(cfg, sock, index, bind, uvicorn_options)
    except BaseException:  # noqa: BLE001 - a forked child never returns into the parent's code
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(cfg: Config, *, bind: str, port: int, workers: int, **uvicorn_options: Any) -> int:
    """Serve on `bind`:`port` with `workers` processes until SIGTERM / SIGINT; the exit code."""
    import uvicorn

    import memlane.server.app  # noqa: F401 - imported once here, shared by the forked workers

    if not hasattr(os, "fork"):
        raise ConfigError("server.workers > 1 needs fork (Linux, macOS); run one `memlane serve` per port instead")

    sock = uvicorn.Config("memlane", host=bind, port=port).bind_socket()
    stopping = False
    children: dict[int, int] = {}  # pid -> worker index

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    code = 0
    try:
        for i in range(workers):
            children[_spawn(cfg, sock, i, bind, uvicorn_options)] = i
            if stopping:  # a signal between the fork and the line above: this one missed it
                stop(signal.SIGTERM, None)
        log.info("memlane serving on %s:%s with %d worker processes (%s)", bind, port, workers,
                 ", ".join(map(str, children)))
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for clarity
                continue
            index = children.pop(pid, None)
            if index is None:
                continue
            exit_code = os.waitstatus_to_exitcode(status)
            if stopping:
                code = code or max(exit_code, 0)
            elif exit_code == STARTUP_FAILED:
                log.error("worker %d (pid %d) failed to start: stopping the server", index, pid)
                code = STARTUP_FAILED
                stop(signal.SIGTERM, None)
            else:
                log.warning("worker %d (pid %d) exited with %d: starting it again", index, pid, exit_code)
                time.sleep(RESPAWN_PAUSE)
                if not stopping:
                    children[_spawn(cfg, sock, index, bind, uvicorn_options)] = index
                    if stopping:
                        stop(signal.SIGTERM, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    return code
