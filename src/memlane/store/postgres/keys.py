"""The API keys in a PostgreSQL database (`api_keys`, migration m004), on one connection of
their own: every `memlane serve` process on any host sharing the database accepts a key
made on one and refuses it once revoked, at its next request."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from memlane.errors import BackendError
from memlane.store.keys import KeySQL
from memlane.store.postgres import PostgresStore
from memlane.store.postgres.base import redact


class PostgresKeys(KeySQL):
    """`KeyTable` over a PostgreSQL database (thread-safe); the connection is made again
    after a failure."""

    _mark = "%s"

    def __init__(self, url: str, *, connect_timeout: float = 5.0) -> None:
        PostgresStore(url, connect_timeout=connect_timeout, pool_size=1).close()  # migrates
        self._url, self._timeout = url, connect_timeout
        self.where = redact(url)
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self._url, autocommit=True,
                                                 connect_timeout=max(1, round(self._timeout)))
                cur = self._conn.execute(sql, params)
                return list(cur.fetchall()) if cur.description else []
            except psycopg.Error as exc:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                raise BackendError(f"{self.where}: reading API keys failed ({type(exc).__name__}: "
                                   f"{str(exc).strip()}); check that PostgreSQL runs, then retry") from exc
