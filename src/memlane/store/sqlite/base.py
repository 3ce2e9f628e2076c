"""The SQLite store's connection: opening the file, its transactions, its statements and
failures, migrations, and the in-process caches that sit beside it (vindex.py, lexindex.py,
memcache.py). The other modules of this package add the `Store` methods, job by job.

WAL mode and a busy timeout let many threads and processes write; every write is one
`BEGIN IMMEDIATE` transaction so writers queue instead of failing on a lock upgrade.
Every query takes the scope first: `WHERE user_id = ? AND agent_id = ?`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import apsw
import apsw.bestpractice
import sqlite_vec

from memlane.errors import BackendError
from memlane.models import Corpus, Scope
from memlane.store import erase, lexindex, memcache, vindex
from memlane.store.fts5 import scope_token
from memlane.store.migrations import MIGRATIONS
from memlane.store.shared import SharedSQL

R = TypeVar("R")
# corpus → its FTS5 table
FTS: dict[Corpus, str] = {"memories": "memories_fts", "turns": "turns_fts", "episodes": "episodes_fts"}
_SCAN_PER_ROW = 20  # a scope index entry costs ~1/20 of a rowid lookup, warm (~1/50 cold)


class SQLiteBase(SharedSQL):
    """The connection and the caches of one SQLite file; `SQLiteStore` is built on it."""

    name = "sqlite"
    _mark = "?"
    _ties = ""  # SQLite's order for ties is the rowid's
    _no_limit = "-1"

    def __init__(
        self, path: Path | str, *, busy_timeout_ms: int = 30_000, ann: vindex.AnnSettings | None = None,
        lexical: lexindex.LexSettings | None = None, memory: memcache.MemSettings | None = None,
        secure_delete: bool = True,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = apsw.Connection(str(self.path))
            self._conn.enable_load_extension(True)
            self._conn.load_extension(sqlite_vec.loadable_path())
            self._conn.enable_load_extension(False)
        except apsw.Error as exc:
            raise BackendError(f"cannot open database {self.path}: {exc}") from exc
        self._conn.set_busy_timeout(busy_timeout_ms)
        self._busy_timeout_ms = busy_timeout_ms
        self._secure_delete = secure_delete
        self._lock = threading.RLock()
        self._depth = 0
        self._vector_dims: int | None = None
        try:  # the first statements read the file: a file that is no database fails here
            apsw.bestpractice.connection_wal(self._conn)
            self._conn.pragma("synchronous", "NORMAL")
            # freed cells and pages are overwritten with zeros: a deleted text leaves the file (store/erase.py)
            self._conn.pragma("secure_delete", "ON" if secure_delete else "OFF")
            self._migrate(secure_delete)
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            self._conn.close()
            raise BackendError(f"{self.path} is not a memlane database, or it is damaged ({exc}): move it aside "
                               "and start afresh there, or point MEMLANE_HOME (--home) at another directory") from exc
        in_transaction = lambda: self._depth > 0  # noqa: E731
        db = vindex.Access(self._conn, lambda: vindex.read_snapshot(self._conn, self._lock, in_transaction),
                           self.transaction, in_transaction)
        self._scans = vindex.ScopeScans(size=8)  # small scopes' vectors, read whole
        ann = ann or vindex.AnnSettings(threshold=5_000, connectivity=16, expansion_add=64, expansion_search=128,
                                        dtype="f16", threads=2)
        self._ann = vindex.AnnCache(db, self.path.parent / "vindex", self.path.stem, ann)
        # the BM25 cache that ranks full-text queries (store/lexindex.py); public for its counters
        self.lexical = lexindex.LexCache(db, self.path.parent / "lexindex", self.path.stem,
                                         lexical or lexindex.LexSettings())
        # what search reads of every memory, for large memories tables (store/memcache.py)
        for sub in ("lexindex", "memcache", "vindex"):  # a writer killed mid-save left these
            erase.remove_stale_temps(self.path.parent / sub)
        if erase.pending(self._conn):  # a process died between a forgetting commit and its scrub
            erase.unlink_caches(self.path.parent, self.path.stem, list(FTS))
            with self.transaction():
                if secure_delete:
                    erase.optimize_turns(self._conn)
                self._conn.execute("UPDATE meta SET value = '0' WHERE key = ?", (erase.PENDING,))
            erase.checkpoint(self._conn, self._busy_timeout_ms)
        self.memcache = memcache.MemCache(db, lambda: self._vector_dims, self.path.parent / "memcache", self.path.stem,
                                          memory or memcache.MemSettings(vector_limit=ann.threshold))

    # ---- plumbing -------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._ann.close()
            self.lexical.close()
            self.memcache.close()
            self._conn.close()

    def lock_scope(self, scope: Scope) -> None:
        """Nothing to do: a write transaction (BEGIN IMMEDIATE) already holds every scope."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested calls become savepoints of the outer one. SQLite's
        own failures (disk full, I/O, a lock held past busy_timeout_ms) leave it rolled back
        and surface as BackendError: nothing of the transaction was stored."""
        with self._lock:
            depth = self._depth
            try:
                self._conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
            except apsw.Error as exc:
                raise self._failure(exc) from exc
            self._depth += 1
            try:
                yield
            except BaseException as exc:
                self._depth -= 1
                self._rollback(depth)
                if isinstance(exc, apsw.Error):
                    raise self._failure(exc) from exc
                raise
            else:
                self._depth -= 1
                try:
                    self._conn.execute("COMMIT" if depth == 0 else f"RELEASE sp{depth}")
                except apsw.Error as exc:
                    self._rollback(depth)
                    raise self._failure(exc) from exc

    def _rollback(self, depth: int) -> None:
        try:
            if depth == 0:
                if not self._conn.getautocommit():  # a failed COMMIT may have ended it already
                    self._conn.execute("ROLLBACK")
            else:
                self._conn.execute(f"ROLLBACK TO sp{depth}; RELEASE sp{depth}")
        except apsw.Error:  # the outer transaction's own rollback or failure reports it
            pass

    def _failure(self, exc: apsw.Error, *, write: bool = True) -> BackendError:
        """What went wrong in SQLite, and what to do about it."""
        if isinstance(exc, apsw.FullError):
            why = "the disk (or the database's size limit) is full; free some space, then retry"
        elif isinstance(exc, apsw.IOError):
            why = ("a file could not be written or read (a full disk, a file size limit or an I/O "
                   "fault); free some space or check the disk, then retry")
        elif isinstance(exc, apsw.BusyError | apsw.LockedError):
            why = (f"another process held the database for longer than store.busy_timeout_ms "
                   f"({self._busy_timeout_ms} ms); retry, or raise the timeout")
        elif isinstance(exc, apsw.ReadOnlyError | apsw.PermissionsError | apsw.CantOpenError):
            why = "the database file or its directory cannot be written; check its permissions"
        elif isinstance(exc, apsw.CorruptError | apsw.NotADBError):
            why = "the database file is damaged; restore it from a backup or a `memlane export`"
        else:
            why = "SQLite failed"
        done = "; nothing of this write was stored" if write else ""
        return BackendError(f"{self.path}: {why} ({type(exc).__name__}: {exc}){done}")

    def _q(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, params))
            except (apsw.FullError, apsw.IOError, apsw.BusyError, apsw.CorruptError) as exc:
                raise self._failure(exc, write=False) from exc

    def _x(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """Execute a write; returns the rows changed."""
        with self._lock:
            self._conn.execute(sql, params)
            return self._conn.changes()

    def _migrate(self, secure_delete: bool) -> None:
        with self.transaction():
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            done = {r[0] for r in self._conn.execute("SELECT name FROM migrations")}
            for step in MIGRATIONS:
                if step.__name__ not in done:
                    step(self._conn)
                    self._conn.execute(
                        "INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (step.__name__, time.time())
                    )
            erase.fts_secure_delete(self._conn, secure_delete)

    def migrations(self) -> list[tuple[str, float]]:
        """[(name, applied_at)] of the migrations this database has run, in order."""
        return [(str(r[0]), float(r[1])) for r in self._q("SELECT name, applied_at FROM migrations ORDER BY rowid")]

    def meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._x("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def _by_rowid(self, table: Corpus, cols: str, parse: Callable[[Sequence[Any]], R], scope: Scope,
                  rowids: Sequence[int], covered: bool = False) -> dict[int, R]:
        """Rows of this scope by rowid, parsed. One rowid lookup each, reading its table row,
        unless `cols` are in the table's scope index (`covered`) and the scope holds under
        _SCAN_PER_ROW times as many rows: then the scope's run of that index is read, a few
        pages, and checked against the rowids (1M memories of 1k users, 130 rowids: 0.2 ms
        against 0.6 warm, and ~20 times fewer pages to read cold)."""
        if not rowids:
            return {}
        with self._lock:
            size = self.lexical.scope_size(table, scope_token(scope.user_id, scope.agent_id)) if covered else None
        # `+` marks the side SQLite must not search by: the rowids, or the scope index
        where = ("user_id = ? AND agent_id = ? AND +rowid" if size is not None and size <= _SCAN_PER_ROW * len(rowids)
                 else "+user_id = ? AND +agent_id = ? AND rowid")
        rows = self._q(f"SELECT {cols}, rowid FROM {table} WHERE {where} IN (SELECT value FROM json_each(?))",
                       (scope.user_id, scope.agent_id, json.dumps([int(r) for r in rowids])))
        return {int(r[-1]): parse(r) for r in rows}

    def _rowid_in(self, rowids: Sequence[int]) -> tuple[str, list[Any]]:
        return f"rowid IN ({','.join('?' * len(rowids))})", list(rowids)

    def _lock_scope(self, scope: Scope | tuple[str, str]) -> None:
        """Nothing to hold: `BEGIN IMMEDIATE` runs one write transaction at a time."""

    def _location(self) -> tuple[str, int]:
        return str(self.path), sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
