"""The PostgreSQL store's connections: the pool, transactions and their scope locks,
statements and failures, migrations. The other modules of this package add the `Store`
methods, job by job.

Connections come from a psycopg_pool pool. Outside a transaction each statement runs on a
pooled connection in autocommit; `transaction()` binds one connection to the calling thread
until it ends (nested calls are savepoints). SQLite serialises every write transaction
(BEGIN IMMEDIATE); here a transaction takes a per-scope advisory lock the first time it
touches a scope, so transactions of one scope queue as they do on SQLite while other scopes
run in parallel, and a dead session's locks go with its connection. `meta` keys read inside
a transaction are locked the same way (the writer lease of memlane.lease reads then writes
one). Every query takes the scope first: `WHERE user_id = %s AND agent_id = %s`, and every
index leads with it.

No in-process cache: PostgreSQL's own indexes answer (GIN over the scope and the tsvector,
HNSW over the vectors, btree scope indexes), so other processes' writes are seen at once.
Full text: store/pgtext.py. Text columns cannot hold NUL in PostgreSQL: NUL is stored
escaped (U+E000 U+E001; U+E000 itself as U+E000 U+E000) and read back as it was given.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from memlane.errors import BackendError
from memlane.models import Scope
from memlane.store.pgschema import PG_MIGRATIONS
from memlane.store.shared import SharedSQL

_ESC = "\ue000"
_IDLE_CHECK_SECONDS = 1.0  # a pooled connection idle longer is pinged before use (not from a seed)
_FOLD_JOIN_SECONDS = 5.0  # close() waits this long for the graph's folder to finish its chunk
_MIGRATE_LOCK = 0x6D656D6C616E65  # advisory lock key: one process migrates at a time ("memlane")


def esc(value: Any) -> Any:
    """A value as a text column holds it: NUL escaped."""
    if isinstance(value, str) and ("\x00" in value or _ESC in value):
        return value.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "\ue001")
    return value


def unesc(value: Any) -> Any:
    """A text column's value as it was given (`esc` undone)."""
    if isinstance(value, str) and _ESC in value:
        out, i = [], 0
        while i < len(value):
            ch = value[i]
            if ch == _ESC and i + 1 < len(value):
                out.append("\x00" if value[i + 1] == "\ue001" else _ESC)
                i += 2
                continue
            out.append(ch)
            i += 1
        return "".join(out)
    return value


def _params(params: Sequence[Any] | dict[str, Any]) -> Any:
    if isinstance(params, dict):
        return {k: esc(v) for k, v in params.items()}
    return [esc(v) for v in params]


def _row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(unesc(v) for v in row)


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "<unparsable database URL>"
    host = info.get("host") or "localhost"
    return f"postgresql://{info.get('user') or ''}@{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


@dataclass(frozen=True)
class PgTuning:
    """The sizes at which the store changes method (config: store.postgres_*)."""

    prune_rows: int = 2_048  # full text: rows of a query's words from which common words are pruned
    defer_rows: int = 64  # vectors of one large scope in one call that wait for the graph
    fold_chunk: int = 256  # vectors moved into the graph per transaction
    copy_rows: int = 32  # memories in one call from which COPY replaces the INSERT pipeline
    pair_terms: int = 8  # full text: queries of up to this many lexemes rank the rows holding two first


class PostgresBase(SharedSQL):
    """The connections to one PostgreSQL database; `PostgresStore` is built on it."""

    name = "postgres"
    _mark = "%s"
    _ties = ", rowid"  # SQLite's order for ties is the rowid: the same here
    _no_limit = "ALL"

    def __init__(self, url: str, *, connect_timeout: float = 5.0, pool_size: int = 8,
                 statement_timeout_ms: int = 30_000, ann_threshold: int = 5_000, ef_search: int = 128,
                 tuning: PgTuning | None = None) -> None:
        self.url = url
        self.where = redact(url)
        self._timeout = connect_timeout
        self._ann_threshold = ann_threshold
        self._ef_search = ef_search
        self._tuning = tuning or PgTuning()
        self._local = threading.local()
        self._locks: dict[tuple[str, str], psycopg.Connection[Any]] = {}  # session locks held (try_session_lock)
        self._locks_guard = threading.Lock()
        self._vector_dims: int | None = None
        # (corpus, user, agent) of a large scope → (fts_stats version, {lexeme: its documents}):
        # counted for BM25 (fts_terms) and for the words a query leaves out (scope_documents)
        self._doc_counts: dict[tuple[str, str, str], tuple[int, dict[str, int]]] = {}
        # every count `scope_documents` read, whatever the version, for a caller that allows the
        # scope to have drifted since: (documents then, {lexeme: (documents, whether exact)})
        self._doc_loose: dict[tuple[str, str, str], tuple[int, dict[str, tuple[int, bool]]]] = {}
        self._turn_facts: dict[int, tuple[str | None, str, str | None]] = {}  # rowid → tool_calls, role, name
        # HNSW searches scan iteratively until k rows of the scope are found; set once per
        # connection (placeholders until pgvector loads), not per query
        kwargs = {"autocommit": True, "connect_timeout": max(1, round(connect_timeout)),
                  "options": f"-c statement_timeout={int(statement_timeout_ms)} -c hnsw.iterative_scan=relaxed_order "
                             f"-c hnsw.ef_search={int(ef_search)}"}
        self._migrate(kwargs)
        self._returned: dict[int, float] = {}  # id(connection) → when it went back to the pool
        self._pool = ConnectionPool(url, min_size=1, max_size=max(1, pool_size), kwargs=kwargs, open=False,
                                    configure=register_vector, check=self._check, reset=self._stamp,
                                    timeout=connect_timeout, name="memlane")
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise BackendError(f"cannot connect to PostgreSQL at {self.where} within {connect_timeout:g} s; "
                               "check that it runs and that store.database_url is right") from exc
        dims = self.meta("vector_dims")
        self._vector_dims = int(dims) if dims else None
        # vectors a bulk insert left out of the HNSW graph are moved in by a thread of the
        # process (PostgresVectors.fold_pending), also those a process gone since left waiting
        self._folder: threading.Thread | None = None
        self._fold_again = False
        self._folder_guard = threading.Lock()
        self._closing = threading.Event()
        if self._q("SELECT EXISTS (SELECT 1 FROM ann_pending)")[0][0]:
            self._committed_deferred()

    # ---- plumbing -------------------------------------------------------------------

    def _migrate(self, kwargs: dict[str, Any]) -> None:
        try:
            conn = psycopg.connect(self.url, **kwargs)
        except psycopg.Error as exc:
            raise BackendError(f"cannot connect to PostgreSQL at {self.where}: {str(exc).strip()}; check that it "
                               "runs and that store.database_url (MEMLANE_DATABASE_URL) is right") from exc
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
                for ext in ("vector", "btree_gin"):
                    try:
                        with conn.transaction():
                            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
                    except psycopg.Error as exc:
                        raise BackendError(
                            f"{self.where}: the PostgreSQL extension {ext!r} is missing or cannot be created "
                            f"({str(exc).strip()}); install pgvector / contrib, or have a superuser run "
                            f"CREATE EXTENSION {ext}") from exc
                conn.execute("CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at FLOAT8 NOT NULL)")
                done = {r[0] for r in conn.execute("SELECT name FROM migrations").fetchall()}
                for step in PG_MIGRATIONS:
                    if step.__name__ not in done:
                        step(conn)
                        conn.execute("INSERT INTO migrations(name, applied_at) VALUES (%s, %s)",
                                     (step.__name__, time.time()))
        except psycopg.Error as exc:
            raise BackendError(f"{self.where}: migrating the schema failed: {str(exc).strip()}") from exc
        finally:
            conn.close()

    def _stamp(self, conn: psycopg.Connection[Any]) -> None:
        self._returned[id(conn)] = time.monotonic()

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """A connection idle in the pool for a while is pinged before use (the server may have
        restarted since); one in steady use is not: a ping per checkout was a round trip per
        statement. A connection that broke in use is discarded by the pool on its return."""
        if time.monotonic() - self._returned.get(id(conn), 0.0) > _IDLE_CHECK_SECONDS:
            ConnectionPool.check_connection(conn)

    def migrations(self) -> list[tuple[str, float]]:
        """[(name, applied_at)] of the migrations this database has run, in order."""
        return [(r[0], float(r[1])) for r in self._q("SELECT name, applied_at FROM migrations ORDER BY name")]

    def settle_text(self) -> None:
        """Nothing: PostgreSQL ranks text itself."""

    def close(self) -> None:
        self._closing.set()
        folder = self._folder
        if folder is not None:  # its chunk in progress commits or rolls back with its connection
            folder.join(timeout=_FOLD_JOIN_SECONDS)
        with self._locks_guard:
            for conn in self._locks.values():
                conn.close()
            self._locks.clear()
        self._pool.close()

    def _failure(self, exc: psycopg.Error, write: bool) -> BackendError:
        # the specific ones first: a deadlock and a cancelled statement are OperationalErrors too
        if isinstance(exc, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure):
            why = "a concurrent transaction conflicted with this one; retry"
        elif isinstance(exc, psycopg.errors.QueryCanceled):
            why = "a statement ran past its timeout; retry"
        elif isinstance(exc, psycopg.OperationalError):
            why = "the database is unreachable or the connection broke; check that PostgreSQL runs, then retry"
        else:
            why = "PostgreSQL refused the statement"
        done = "; nothing of this write was stored" if write else ""
        return BackendError(f"{self.where}: {why} ({type(exc).__name__}: {str(exc).strip()}){done}")

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        try:
            with self._pool.connection(timeout=self._timeout) as c:
                yield c
        except PoolTimeout as exc:
            raise BackendError(f"{self.where}: no database connection within {self._timeout:g} s; "
                               "check that PostgreSQL runs, then retry") from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction; nested calls are savepoints of the outer one. A failure leaves it
        rolled back and surfaces as BackendError: nothing of the transaction was stored."""
        loc = self._local
        if getattr(loc, "conn", None) is not None:
            try:
                with loc.conn.transaction():
                    yield
            except psycopg.Error as exc:
                raise self._failure(exc, True) from exc
            return
        with self._conn() as conn:
            loc.conn, loc.held, loc.deferred = conn, set(), False
            try:
                with conn.transaction():
                    yield
            except psycopg.Error as exc:
                raise self._failure(exc, True) from exc
            finally:
                loc.conn, loc.held = None, set()
        if loc.deferred:  # committed: rows wait for the HNSW graph
            loc.deferred = False
            self._committed_deferred()

    def _committed_deferred(self) -> None:
        """A transaction that left vectors waiting for the HNSW graph has committed."""

    def try_session_lock(self, key: str, owner: str) -> bool:
        """Take the session-level advisory lock of `key` on a connection of its own, kept until
        `session_unlock` (memlane.lease's scope leases); False when another session holds it.
        A holder that dies, on any host, loses its connection and with it the lock."""
        with self._locks_guard:
            if (key, owner) in self._locks:
                return True
            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, round(self._timeout)))
                got = bool(conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 1))",
                                        (esc(key),)).fetchall()[0][0])
            except psycopg.Error as exc:
                raise self._failure(exc, False) from exc
            if got:
                self._locks[(key, owner)] = conn
            else:
                conn.close()
            return got

    def session_unlock(self, key: str, owner: str) -> None:
        with self._locks_guard:
            conn = self._locks.pop((key, owner), None)
        if conn is not None:
            conn.close()  # the session ends, its advisory locks with it

    def _in_tx(self) -> bool:
        return getattr(self._local, "conn", None) is not None

    def _hold(self, key: str) -> None:
        """Inside a transaction: take the advisory lock of `key` until it ends (once)."""
        loc = self._local
        if getattr(loc, "conn", None) is None or key in loc.held:
            return
        loc.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (esc(key),))
        loc.held.add(key)

    def lock_scope(self, scope: Scope) -> None:
        self._lock_scope(scope)

    def _lock_scope(self, scope: Scope | tuple[str, str]) -> None:
        """Inside a transaction: hold the scope until it ends (its writers queue, as on SQLite)."""
        u, a = (scope.user_id, scope.agent_id) if isinstance(scope, Scope) else scope
        self._hold(f"scope:{u}\x1f{a}")

    def _q(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), binary: bool = False) -> list[tuple[Any, ...]]:
        # A read outside a transaction is tried once more on a fresh connection when its
        # connection turns out dead: one returned to the pool just before the server restarted
        # is not pinged (_check), and the pool discards it when it comes back broken.
        retry = getattr(self._local, "conn", None) is None and sql.lstrip()[:6].upper() == "SELECT"
        while True:
            conn: psycopg.Connection[Any] | None = None
            try:
                with self._conn() as conn:
                    cur = conn.execute(sql, _params(params), binary=binary)
                    return [_row(r) for r in cur.fetchall()] if cur.description else []
            except psycopg.OperationalError as exc:
                if retry and conn is not None and conn.broken:
                    retry = False
                    continue
                raise self._failure(exc, self._in_tx()) from exc
            except psycopg.Error as exc:
                raise self._failure(exc, self._in_tx()) from exc

    def _x(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """Execute a write; returns the rows changed."""
        try:
            with self._conn() as conn:
                return conn.execute(sql, _params(params)).rowcount
        except psycopg.Error as exc:
            raise self._failure(exc, True) from exc

    def _many(self, sql: str, rows: Sequence[Sequence[Any]], returning: bool = False) -> list[tuple[Any, ...]]:
        """Execute a statement for each row, in one pipeline; with `returning`, the first row
        each returned, in order."""
        if not rows:
            return []
        try:
            with self._conn() as conn, conn.cursor() as cur:
                cur.executemany(sql, [_params(r) for r in rows], returning=returning)
                if not returning:
                    return []
                out = []
                while True:
                    row = cur.fetchone()
                    if row is not None:
                        out.append(_row(row))
                    if not cur.nextset():
                        return out
        except psycopg.Error as exc:
            raise self._failure(exc, True) from exc

    def _copy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
              types: Sequence[str] | None = None) -> None:
        """Rows into a table in one COPY, text values escaped as `esc` does: one round trip
        however many, where a pipeline of INSERTs is still a statement a row. With `types`,
        binary (vectors: no float text to print and parse); else text, parsed by the columns'
        own input functions (a tsvector literal)."""
        if not rows:
            return
        fmt = " WITH (FORMAT BINARY)" if types is not None else ""
        try:
            with self._conn() as conn, conn.cursor() as cur, cur.copy(
                    f"COPY {table} ({', '.join(columns)}) FROM STDIN{fmt}") as cp:
                if types is not None:
                    cp.set_types(list(types))
                for row in rows:
                    cp.write_row([esc(v) for v in row])
        except psycopg.Error as exc:
            raise self._failure(exc, True) from exc

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """A transaction, or nothing when one is open: a savepoint costs two round trips, and
        a failure here fails the caller's whole transaction anyway (nobody catches it)."""
        if self._in_tx():
            yield
            return
        with self.transaction():
            yield

    def meta(self, key: str) -> str | None:
        self._hold(f"meta:{key}")  # a read-then-write of one key (a lease) is serialised
        rows = self._q("SELECT value FROM meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._x("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value))

    def _rowid_in(self, rowids: Sequence[int]) -> tuple[str, list[Any]]:
        return "rowid = ANY(%s)", [[int(r) for r in rowids]]

    def _location(self) -> tuple[str, int]:
        return self.where, int(self._q("SELECT pg_database_size(current_database())")[0][0])

    def _by_rowid(self, table: str, cols: str, scope: Scope, rowids: Sequence[int]) -> list[tuple[Any, ...]]:
        if not rowids:
            return []
        return self._q(f"SELECT {cols}, rowid FROM {table} WHERE user_id = %s AND agent_id = %s AND rowid = ANY(%s)",
                       (scope.user_id, scope.agent_id, [int(r) for r in rowids]))
