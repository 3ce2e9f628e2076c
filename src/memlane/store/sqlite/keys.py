"""The API keys of one SQLite home (`api_keys`, migration m012) on a connection of their own:
the server checks a key on every request without the store's caches."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw

from memlane.errors import BackendError
from memlane.store.keys import KeySQL
from memlane.store.sqlite import SQLiteStore


def _tables(conn: apsw.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


class SQLiteKeys(KeySQL):
    """`KeyTable` over the home's database file (thread-safe)."""

    _mark = "?"

    def __init__(self, db_path: Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = db_path
        self._lock = threading.Lock()
        try:
            # a PostgreSQL home may not exist yet: nothing else of memlane writes to its directory
            db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = apsw.Connection(str(db_path))
            self._conn.set_busy_timeout(busy_timeout_ms)
            tables = _tables(self._conn)
        except (apsw.Error, OSError) as exc:
            raise BackendError(f"cannot open the key table in {db_path}: {exc}") from exc
        if "api_keys" not in tables and not tables:
            # a home whose database does not exist yet: created here, with the schema that holds them
            SQLiteStore(db_path).close()
            tables = _tables(self._conn)
        if "api_keys" not in tables:
            raise BackendError(f"{db_path} has no api_keys table: open the home once with this memlane "
                               "version (any `memlane` command migrates it), then retry")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, params))
            except apsw.Error as exc:
                raise BackendError(f"{self.path}: reading API keys failed ({type(exc).__name__}: {exc})") from exc
