"""The PostgreSQL + pgvector store: the `Store` protocol for many users and many processes.

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

import contextlib
import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from memlane.errors import BackendError, ValidationError
from memlane.models import (
    Attachment,
    Corpus,
    Episode,
    ExtractionJob,
    MemoryEvent,
    MemoryFacts,
    MemoryRecord,
    Scope,
    Scratchpad,
    Session,
    StoredEvent,
    Turn,
    TurnPlace,
)
from memlane.store import PASSAGE_BASE, PASSAGE_STRIDE, pgtext, vector_owner
from memlane.store.pgschema import CORPORA, PG_MIGRATIONS, SCOPE_TABLES
from memlane.store.rows import (
    EPISODE_COLS,
    MEMORY_COLS,
    TURN_COLS,
    dt_,
    episode_row,
    memory_params,
    memory_row,
    session_row,
    session_rows_sql,
    to_json,
    ts,
    turn_row,
    turn_search_text,
)

_ESC = "\ue000"
_TEXT_COL = {"memories": "content", "turns": "content", "episodes": "summary"}
_IDLE_CHECK_SECONDS = 1.0  # a pooled connection idle longer is pinged before use (not from a seed)
_MIGRATE_LOCK = 0x6D656D6C616E65  # advisory lock key: one process migrates at a time ("memlane")


def _esc(value: Any) -> Any:
    if isinstance(value, str) and ("\x00" in value or _ESC in value):
        return value.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "\ue001")
    return value


def _unesc(value: Any) -> Any:
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
        return {k: _esc(v) for k, v in params.items()}
    return [_esc(v) for v in params]


def _row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_unesc(v) for v in row)


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "<unparsable database URL>"
    host = info.get("host") or "localhost"
    return f"postgresql://{info.get('user') or ''}@{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


class PostgresStore:
    """The `Store` protocol over one PostgreSQL database with pgvector."""

    name = "postgres"

    def __init__(self, url: str, *, connect_timeout: float = 5.0, pool_size: int = 8,
                 statement_timeout_ms: int = 30_000, ann_threshold: int = 5_000, ef_search: int = 128) -> None:
        self.url = url
        self.where = redact(url)
        self._timeout = connect_timeout
        self._ann_threshold = ann_threshold
        self._ef_search = ef_search
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
            loc.conn, loc.held = conn, set()
            try:
                with conn.transaction():
                    yield
            except psycopg.Error as exc:
                raise self._failure(exc, True) from exc
            finally:
                loc.conn, loc.held = None, set()

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
                                        (_esc(key),)).fetchall()[0][0])
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
        loc.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_esc(key),))
        loc.held.add(key)

    def _scope(self, scope: Scope | tuple[str, str]) -> None:
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

    # ---- vectors ----------------------------------------------------------------------

    def ensure_vectors(self, model_id: str, dims: int) -> None:
        """Create the vector tables for this embedder; another embedder than last time drops
        them and marks every row for re-embedding: vectors are a cache of the rows."""
        with self.transaction():
            self._hold("vectors")
            if self.meta("vector_model") != model_id or self.meta("vector_dims") != str(dims):
                for corpus in CORPORA:
                    self._x(f"DROP TABLE IF EXISTS vec_{corpus}")
                    # `ann`: the row's scope is large enough for the HNSW index, which holds only
                    # those rows (a partial index): small scopes are scanned exactly, and their
                    # inserts cost no graph update (1k users × 100: ~200 → thousands of rows/s)
                    self._x(f"CREATE TABLE vec_{corpus}(rowid BIGINT PRIMARY KEY, user_id TEXT NOT NULL, "
                            f"agent_id TEXT NOT NULL, embedding vector({int(dims)}) NOT NULL, "
                            "ann BOOLEAN NOT NULL DEFAULT false)")
                    self._x(f"CREATE INDEX vec_{corpus}_scope ON vec_{corpus}(user_id, agent_id)")
                    self._x(f"CREATE INDEX vec_{corpus}_hnsw ON vec_{corpus} USING hnsw (embedding vector_cosine_ops) "
                            "WHERE ann")
                    self._x(f"UPDATE {corpus} SET embedded = 0")
                self.set_meta("vector_model", model_id)
                self.set_meta("vector_dims", str(dims))
        self._vector_dims = dims

    def reembed_long_turns(self, longer_than: int) -> None:
        """As SQLiteStore.reembed_long_turns."""
        self._x("UPDATE turns SET embedded = 0 WHERE embedded = 1 AND char_length(content) > %s", (int(longer_than),))

    def put_vectors(self, corpus: Corpus, scope: Scope, rowids: Sequence[int], vectors: np.ndarray) -> None:
        with self.transaction():
            self._scope(scope)
            big = self._vector_count(corpus, scope) >= self._ann_threshold
            for rowid, vec in zip(rowids, vectors, strict=True):
                owner = vector_owner(int(rowid))  # a long turn's passage vector belongs to the turn
                if owner == rowid and corpus == "turns":  # a turn embedded anew: its old passages go
                    self._drop_passages([owner])
                # a row deleted (forgotten) while it was embedded gets no vector
                if not self._q(f"SELECT 1 FROM {corpus} WHERE rowid = %s", (owner,)):
                    self._x(f"DELETE FROM vec_{corpus} WHERE rowid = %s", (int(rowid),))
                    continue
                self._x(f"INSERT INTO vec_{corpus}(rowid, user_id, agent_id, embedding, ann) VALUES (%s, %s, %s, %s, %s) "
                        "ON CONFLICT(rowid) DO UPDATE SET embedding = excluded.embedding",
                        (int(rowid), scope.user_id, scope.agent_id, np.asarray(vec, dtype=np.float32), big))
                self._x(f"UPDATE {corpus} SET embedded = 1 WHERE rowid = %s", (owner,))
            if not big:
                self._grow_ann(corpus, scope)

    def _drop_passages(self, rowids: Sequence[int]) -> None:
        """Delete the passage vectors of these turns, in the caller's transaction."""
        self._x("DELETE FROM vec_turns v USING unnest(%s::bigint[]) t(id) WHERE v.rowid BETWEEN "
                f"{PASSAGE_BASE} + t.id * {PASSAGE_STRIDE} + 1 AND {PASSAGE_BASE} + t.id * {PASSAGE_STRIDE} + "
                f"{PASSAGE_STRIDE - 1}", ([int(r) for r in rowids],))

    def _vector_count(self, corpus: str, scope: Scope) -> int:
        """The scope's vectors, counted up to ann_threshold (enough to decide exact or HNSW)."""
        return int(self._q(f"SELECT count(*) FROM (SELECT 1 FROM vec_{corpus} WHERE user_id = %s AND agent_id = %s "
                           "LIMIT %s) s", (scope.user_id, scope.agent_id, self._ann_threshold))[0][0])

    def _grow_ann(self, corpus: str, scope: Scope) -> None:
        """A scope at ann_threshold vectors or more: its rows join the HNSW index."""
        if self._vector_count(corpus, scope) >= self._ann_threshold:
            self._x(f"UPDATE vec_{corpus} SET ann = true WHERE user_id = %s AND agent_id = %s AND NOT ann",
                    (scope.user_id, scope.agent_id))

    def knn(self, corpus: Corpus, scope: Scope, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Nearest rows of this scope by cosine distance: [(rowid, distance)]. A scope under
        `ann_threshold` vectors is scanned exactly (its rows from the scope index); a larger
        one goes through the HNSW index, scanned iteratively until k rows of the scope are found."""
        if self._vector_dims is None or k <= 0:
            return []
        params = {"q": np.asarray(vector, dtype=np.float32), "u": scope.user_id, "a": scope.agent_id,
                  "t": self._ann_threshold, "k": int(k)}
        # one statement: the scope's size decides (a one-time filter) between the exact scan of
        # its rows (no `ann` condition: the partial HNSW index cannot serve it) and the index
        sql = f"""
            WITH n AS MATERIALIZED (SELECT count(*) AS c FROM (SELECT 1 FROM vec_{corpus}
                WHERE user_id = %(u)s AND agent_id = %(a)s LIMIT %(t)s) s)
            (SELECT rowid, embedding <=> %(q)s AS d FROM vec_{corpus}
                WHERE user_id = %(u)s AND agent_id = %(a)s AND (SELECT c FROM n) < %(t)s)
            UNION ALL
            (SELECT rowid, embedding <=> %(q)s AS d FROM vec_{corpus}
                WHERE ann AND user_id = %(u)s AND agent_id = %(a)s AND (SELECT c FROM n) >= %(t)s
                ORDER BY embedding <=> %(q)s LIMIT %(k)s)
            ORDER BY d, rowid LIMIT %(k)s"""
        if k <= self._ef_search:
            rows = self._q(sql, params)
        else:  # a wider beam; past pgvector's bound of 1000 its iterative scan finds the rest
            with self.transaction():
                self._x(f"SET LOCAL hnsw.ef_search = {min(int(k), 1000)}")
                rows = self._q(sql, params)
        # a zero vector has no cosine distance (NaN): it is no neighbour
        return [(int(r[0]), float(r[1])) for r in rows if r[1] is not None and r[1] == r[1]]

    def vectors(self, corpus: Corpus, scope: Scope, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        if self._vector_dims is None or not rowids:
            return {}
        # binary: 100 vectors as text are ~40k floats to parse (~5 ms)
        rows = self._q(f"SELECT rowid, embedding FROM vec_{corpus} WHERE user_id = %s AND agent_id = %s "
                       "AND rowid = ANY(%s)", (scope.user_id, scope.agent_id, [int(r) for r in rowids]), binary=True)
        return {int(r[0]): _array(r[1]) for r in rows}

    def similarities(self, corpus: Corpus, scope: Scope, rowids: Sequence[int],
                     vector: np.ndarray) -> dict[int, float]:
        vecs = self.vectors(corpus, scope, rowids)
        ids = list(vecs)
        return dict(zip(ids, (np.stack([vecs[r] for r in ids]) @ vector).tolist(), strict=True)) if ids else {}

    def unembedded(self, corpus: Corpus, limit: int) -> list[tuple[int, Scope, str]]:
        rows = self._q(f"SELECT rowid, user_id, agent_id, {_TEXT_COL[corpus]} FROM {corpus} "
                       "WHERE embedded = 0 ORDER BY rowid LIMIT %s", (limit,))
        return [(int(r[0]), Scope(user_id=r[1], agent_id=r[2]), r[3]) for r in rows]

    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        rows = self._q("SELECT hash, vector FROM embedding_cache WHERE model = %s AND hash = ANY(%s)",
                       (model, list(hashes)))
        return {h: np.frombuffer(bytes(blob), dtype=np.float32) for h, blob in rows}

    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None:
        self._many("INSERT INTO embedding_cache(model, hash, vector) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                   [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()])

    # ---- full text --------------------------------------------------------------------

    def fts(self, corpus: Corpus, scope: Scope, match: str, limit: int,
            weights: Sequence[float] = (1.0,)) -> list[tuple[int, float]]:
        """BM25 candidates of this scope: [(rowid, bm25)] best first (bm25 is negative), for
        a MATCH built like text.fts_query; other syntax is read as its words, OR-ed."""
        if not match:
            return []
        from memlane.store.lexindex import parse_match
        from memlane.text import fts_terms, keywords

        terms = parse_match(match)
        return self.fts_terms(corpus, scope, terms if terms is not None else fts_terms(keywords(match)), limit, weights)

    def fts_terms(self, corpus: Corpus, scope: Scope, terms: Sequence[str], limit: int,
                  weights: Sequence[float] = (1.0,)) -> list[tuple[int, float]]:
        """`fts` of the OR of `terms`: BM25 with the scope's own statistics, as the SQLite
        store ranks (store/postings.py). Rows holding only the query's commonest words are
        scored only when they could reach the top `limit` (MaxScore, exact, as there)."""
        lex = pgtext.lexemes(terms)
        if not lex or limit <= 0:
            return []
        u, a = scope.user_id, scope.agent_id
        w = [float(x) for x in weights] + [1.0, 1.0]
        # one statement: the scope's totals, and either every hit of a small scope (ranked
        # here) or the documents of each lexeme of a large one (ranked in SQL below) that
        # this process has not counted at the scope's version before
        key = (corpus, u, a)
        version, known = self._doc_counts.get(key, (-1, {}))
        count = [x for x in lex if x not in known]

        def run(count: list[str]) -> list[tuple[Any, ...]]:
            return self._q(pgtext.rank_sql(corpus), {
                "u": u, "a": a, "q": pgtext.tsquery(lex), "terms": lex, "count": count,
                "tqs": [pgtext.tsquery([x]) for x in count], "small": self._ann_threshold})

        got = run(count)
        n_docs, n_tokens, now = next((int(r[1]), int(r[2]), int(r[4])) for r in got if r[0] == "t")
        if n_docs < self._ann_threshold:
            return pgtext.rank_rows([(int(r[1]), int(r[2]), r[3], int(r[4]), int(r[5])) for r in got if r[0] == "h"],
                                    lex, n_docs, n_tokens, w[:2], int(limit))
        if now != version and len(count) < len(lex):  # the scope changed since: count them all
            got, count = run(lex), lex
            n_docs, n_tokens, now = next((int(r[1]), int(r[2]), int(r[4])) for r in got if r[0] == "t")
            known = {}
        docs = {**(known if now == version else {}), **{r[3]: int(r[2]) for r in got if r[0] == "d"}}
        self._keep_counts(key, now, docs)
        kept = [i for i, x in enumerate(lex) if docs.get(x)]
        if not n_docs or not kept:
            return []
        lex, holding = [lex[i] for i in kept], [docs[lex[i]] for i in kept]
        idfs = [pgtext.idf(int(n_docs), n) for n in holding]
        skipped = pgtext.skippable(idfs, holding) if min(w[:2]) >= 0 else set()
        ranked = {"u": u, "a": a, "terms": lex, "idfs": idfs, "avgdl": float(n_tokens) / float(n_docs),
                  "wa": w[0], "wb": w[1], "k": int(limit)}
        if skipped:
            rows = self._q(pgtext.bm25_sql(corpus), {**ranked, "q": pgtext.tsquery(
                [x for i, x in enumerate(lex) if i not in skipped])})
            # each skipped lexeme adds under idf·(k1+1): rows holding only those stay below `bound`
            bound = sum(idfs[i] * (pgtext.K1 + 1.0) for i in skipped) * (1 + 1e-9)
            if len(rows) >= limit and -float(rows[limit - 1][1]) > bound:
                return [(int(r[0]), float(r[1])) for r in rows]
        rows = self._q(pgtext.bm25_sql(corpus), {**ranked, "q": pgtext.tsquery(lex)})
        return [(int(r[0]), float(r[1])) for r in rows]

    def _keep_counts(self, key: tuple[str, str, str], version: int, docs: dict[str, int]) -> None:
        """Keep a scope's lexeme counts read at its fts_stats `version` (`_doc_counts`)."""
        if len(self._doc_counts) >= 256:  # large scopes whose counts are kept: the last few
            with contextlib.suppress(StopIteration, RuntimeError, KeyError):  # another thread's pop
                self._doc_counts.pop(next(iter(self._doc_counts)))
        self._doc_counts[key] = (version, docs if len(docs) <= 4096 else {})

    def scope_documents(self, corpus: Corpus, scope: Scope, terms: Sequence[str], column: int | None = None,
                        min_docs: int = 0, above: float = 1.0, drift: float = 0.0) -> tuple[dict[str, int], int]:
        """({index term: documents of this scope holding it}, documents in the scope); with
        `column` 0, only those holding it in the row's own text (weight A). In a scope of
        fewer than `min_docs` documents the terms go uncounted (0); a term held by more than
        `above` × its documents counts as some number over that. With `drift`, counts read
        while the scope held within `drift` × its documents of what it holds now serve: a
        scope written between searches is then not counted again at each (one row read).

        One statement: the scope's size from fts_stats (one row, not a count of the scope),
        then each term's documents from the GIN index led by the user, with the scope ANDed
        in, counting no further than `above` (three words in every row of 100k: 16 ms, not
        47). Counts over whole rows are kept at the scope's version: the exact ones shared with
        `fts_terms`, which counts the same lexemes to rank a large scope."""
        u, a = scope.user_id, scope.agent_id
        key = (corpus, u, a)
        wanted = [t for t in dict.fromkeys(terms) if t.strip() and pgtext._fits(t)]
        loose = self._doc_loose.get(key) if column is None and drift > 0 else None
        if loose is not None:
            then, seen = loose
            rows = self._q("SELECT docs FROM fts_stats WHERE user_id = %s AND agent_id = %s AND corpus = %s",
                           (u, a, corpus))
            size_now = int(rows[0][0]) if rows else 0
            cap_now = math.floor(size_now * above) + 1
            if size_now >= min_docs and abs(size_now - then) <= drift * size_now \
                    and all(t in seen and (seen[t][1] or seen[t][0] >= cap_now) for t in wanted):
                return {t: seen[t][0] if t in seen else 0 for t in terms}, size_now
        counts, total = self._scope_documents(corpus, scope, wanted, terms, column, min_docs, above)
        if column is None and total >= min_docs:
            then, seen = self._doc_loose.get(key, (total, {}))
            if abs(total - then) > drift * total:
                then, seen = total, {}
            cap = math.floor(total * above) + 1
            seen = {**seen, **{t: (counts[t], counts[t] < cap) for t in wanted}}
            if len(self._doc_loose) >= 256 and key not in self._doc_loose:
                with contextlib.suppress(StopIteration, RuntimeError, KeyError):  # another thread's pop
                    self._doc_loose.pop(next(iter(self._doc_loose)))
            self._doc_loose[key] = (then, seen if len(seen) <= 4096 else {})
        return counts, total

    def _scope_documents(self, corpus: Corpus, scope: Scope, wanted: list[str], terms: Sequence[str],
                         column: int | None, min_docs: int, above: float) -> tuple[dict[str, int], int]:
        """`scope_documents` as the scope is now."""
        u, a = scope.user_id, scope.agent_id
        key = (corpus, u, a)
        version, known = self._doc_counts.get(key, (-1, {})) if column is None else (-1, {})
        weight = "" if column is None else "AB"[column]

        def run(todo: list[str]) -> tuple[int, int, int, dict[str, int]]:
            rows = self._q(
                f"""WITH t AS MATERIALIZED (
                        SELECT COALESCE(max(docs), 0) AS n, COALESCE(max(version), 0) AS v,
                               floor(COALESCE(max(docs), 0) * %(above)s::float8)::bigint + 1 AS cap
                        FROM fts_stats WHERE user_id = %(u)s AND agent_id = %(a)s AND corpus = '{corpus}')
                    SELECT NULL::text, n, v, cap FROM t
                    UNION ALL
                    SELECT q.term, (SELECT count(*) FROM (
                                        SELECT 1 FROM {corpus} WHERE user_id = %(u)s AND agent_id = %(a)s
                                        AND fts @@ q.tq::tsquery LIMIT (SELECT cap FROM t)) c), NULL, NULL
                    FROM unnest(%(terms)s::text[], %(tqs)s::text[]) AS q(term, tq) WHERE (SELECT n FROM t) >= %(min)s""",
                {"u": u, "a": a, "terms": todo, "tqs": [pgtext.tsquery([t], weight) for t in todo], "min": min_docs,
                 "above": float(above)})
            head = next(r for r in rows if r[0] is None)
            return int(head[1]), int(head[2]), int(head[3]), {str(r[0]): int(r[1]) for r in rows if r[0] is not None}

        todo = [t for t in wanted if t not in known]
        total, now, cap, counted = run(todo)
        if total < min_docs:
            return dict.fromkeys(terms, 0), total
        if now != version and known:  # the scope changed since: count them all
            total, now, cap, counted = run(wanted)
            known = {}
        if column is not None:
            return {t: counted.get(t, 0) for t in terms}, total
        exact = {**known, **{t: n for t, n in counted.items() if n < cap}}
        if len(exact) > len(known):
            self._keep_counts(key, now, exact)
        return {t: exact.get(t, counted.get(t, 0)) for t in terms}, total

    def _index(self, corpus: Corpus, rowid: int, text: str, context: str | None = None) -> None:
        """Index a row's text (and a turn's neighbour context, kept as FTS5's column holds it)."""
        indexed = None if context is None else pgtext.body(context)
        vec, n = pgtext.document(pgtext.body(text), *([] if indexed is None else [indexed]))
        extra = "" if indexed is None else ", fts_context = %s"
        self._x(f"UPDATE {corpus} SET fts = %s::tsvector, fts_len = %s{extra} WHERE rowid = %s",
                (vec, n, *([] if indexed is None else [indexed]), rowid))

    # ---- sessions ---------------------------------------------------------------------

    _SESSION_COLS = "id, user_id, agent_id, started_at, ended_at, summary, message_count, extraction_count, metadata"

    def get_session(self, scope: Scope, session_id: str) -> Session | None:
        self._scope(scope)
        rows = self._q(f"SELECT {self._SESSION_COLS} FROM sessions WHERE user_id = %s AND agent_id = %s AND id = %s",
                       (scope.user_id, scope.agent_id, session_id))
        return session_row(rows[0]) if rows else None

    def list_sessions(self, scope: Scope, limit: int = 100) -> list[Session]:
        rows = self._q(f"SELECT {self._SESSION_COLS} FROM sessions WHERE user_id = %s AND agent_id = %s "
                       "ORDER BY started_at DESC LIMIT %s", (scope.user_id, scope.agent_id, limit))
        return [session_row(r) for r in rows]

    def put_session(self, session: Session) -> None:
        self._scope((session.user_id, session.agent_id))
        self._x(
            "INSERT INTO sessions(user_id, agent_id, id, started_at, ended_at, summary, message_count, "
            "extraction_count, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT(user_id, agent_id, id) DO UPDATE SET started_at = excluded.started_at, "
            "ended_at = excluded.ended_at, summary = excluded.summary, "
            "message_count = excluded.message_count, extraction_count = excluded.extraction_count, "
            "metadata = excluded.metadata",
            (session.user_id, session.agent_id, session.id, ts(session.started_at), ts(session.ended_at),
             session.summary, session.message_count, session.extraction_count, to_json(session.metadata)),
        )

    # ---- turns ------------------------------------------------------------------------

    def next_seq(self, scope: Scope, session_id: str) -> int:
        self._scope(scope)
        rows = self._q("SELECT COALESCE(MAX(seq), 0) FROM turns WHERE user_id = %s AND agent_id = %s "
                       "AND session_id = %s", (scope.user_id, scope.agent_id, session_id))
        return int(rows[0][0]) + 1

    def insert_turn(self, turn: Turn, import_key: str | None = None) -> int:
        return self.insert_turns([turn], [import_key])[0]

    def insert_turns(self, turns: Sequence[Turn], import_keys: Sequence[str | None] | None = None) -> list[int]:
        """Insert turns in order: their rowids drawn in one statement, the rows sent in one
        pipeline (executemany), so a batch costs a few round trips, not one per turn."""
        if not turns:
            return []
        docs = [pgtext.document(pgtext.body(turn_search_text(t.content, t.tool_calls, t.role, t.name)))
                for t in turns]
        with self._atomic():
            for t in turns:
                self._scope((t.user_id, t.agent_id))
            rowids = [int(r[0]) for r in self._many(
                f"INSERT INTO turns({TURN_COLS}, import_key, fts, fts_len) VALUES ({', '.join(['%s'] * 14)}, "
                "%s::tsvector, %s) RETURNING rowid",
                [(t.id, t.user_id, t.agent_id, t.session_id, t.seq, t.role, t.content, t.name,
                  to_json(t.tool_calls) if t.tool_calls else None, ts(t.created_at), t.token_count, t.archived,
                  to_json(t.metadata), import_keys[i] if import_keys else None, d[0], d[1])
                 for i, (t, d) in enumerate(zip(turns, docs, strict=True))], returning=True)]
        # what set_turn_context needs of them, which never changes: saves a read per ingested turn
        if len(self._turn_facts) > 10_000:
            self._turn_facts.clear()
        for r, t in zip(rowids, turns, strict=True):
            self._turn_facts[r] = (to_json(t.tool_calls) if t.tool_calls else None, t.role, t.name)
        return rowids

    def turn_import_keys(self, scope: Scope, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        rows = self._q("SELECT import_key FROM turns WHERE user_id = %s AND agent_id = %s AND import_key = ANY(%s)",
                       (scope.user_id, scope.agent_id, [_esc(k) for k in keys]))
        return {r[0] for r in rows}

    def set_turn_context(self, rowid: int, body: str, context: str) -> None:
        """Index a turn: `body` (its content) with its tool calls' words, and `context`."""
        self.set_turn_contexts([(rowid, body, context)])

    def set_turn_contexts(self, items: Sequence[tuple[int, str, str]]) -> None:
        """`set_turn_context` of each (rowid, body, context), the updates in one pipeline."""
        if not items:
            return
        known = self._turn_facts
        missing = [int(r) for r, _, _ in items if r not in known]
        fetched = {int(r[0]): (r[1], r[2], r[3]) for r in self._q(
            "SELECT rowid, tool_calls, role, name FROM turns WHERE rowid = ANY(%s)", (missing,))} if missing else {}
        rows = []
        for rowid, body, context in items:
            fact = known.get(rowid) or fetched.get(rowid)
            if fact is not None and (fact[0] or fact[1] == "tool"):
                body = turn_search_text(body, json.loads(fact[0]) if fact[0] else None, fact[1], fact[2])
            indexed = pgtext.body(context)
            vec, n = pgtext.document(pgtext.body(body), indexed)
            rows.append((vec, n, indexed, rowid))
        self._many("UPDATE turns SET fts = %s::tsvector, fts_len = %s, fts_context = %s WHERE rowid = %s", rows)

    def turn_rows(self, scope: Scope, session_id: str, seq_from: int, seq_to: int) -> list[tuple[int, int, str]]:
        rows = self._q("SELECT rowid, seq, content FROM turns WHERE user_id = %s AND agent_id = %s "
                       "AND session_id = %s AND seq BETWEEN %s AND %s ORDER BY seq",
                       (scope.user_id, scope.agent_id, session_id, seq_from, seq_to))
        return [(int(r[0]), int(r[1]), r[2]) for r in rows]

    def session_rows(self, corpus: Corpus, scope: Scope, session_id: str, limit: int) -> list[int]:
        rows = self._q(session_rows_sql(corpus, "%s"), (scope.user_id, scope.agent_id, session_id, limit))
        return [int(r[0]) for r in rows]

    def turn_windows(self, scope: Scope, rowids: Sequence[int], width: int) -> list[TurnPlace]:
        """Where the given turns and their neighbours within `width` (same session) sit; the
        given turns also with their length, whether they end in a question, time, speaker and role."""
        if not rowids:
            return []
        out: dict[int, TurnPlace] = {}
        for r in self._q(
            "SELECT n.rowid, n.session_id, n.seq, CASE WHEN n.rowid = c.rowid THEN char_length(n.content) END, "
            "CASE WHEN n.rowid = c.rowid THEN right(rtrim(n.content), 1) IN ('?', '？') END, "
            "CASE WHEN n.rowid = c.rowid THEN n.created_at END, "
            "CASE WHEN n.rowid = c.rowid THEN n.name END, CASE WHEN n.rowid = c.rowid THEN n.role END "
            # each candidate's neighbours through the (scope, session, seq) key, in a subquery the
            # planner cannot flatten (LIMIT): before the table's first ANALYZE it planned the
            # plain join as a scan of the scope per candidate (5 s for 5k candidates, not 40 ms)
            "FROM unnest(%s::bigint[]) AS w(rowid) JOIN turns c ON c.rowid = w.rowid "
            "CROSS JOIN LATERAL (SELECT * FROM turns t WHERE t.user_id = c.user_id AND t.agent_id = c.agent_id "
            "AND t.session_id = c.session_id AND t.seq BETWEEN c.seq - %s AND c.seq + %s ORDER BY t.seq LIMIT %s) n "
            "WHERE c.user_id = %s AND c.agent_id = %s",
            ([int(x) for x in rowids], width, width, 2 * width + 1, scope.user_id, scope.agent_id),
        ):
            if r[3] is not None or int(r[0]) not in out:
                out[int(r[0])] = TurnPlace(int(r[0]), r[1], int(r[2]), r[3] or 0, bool(r[4]),
                                           None if r[5] is None else float(r[5]), r[6], r[7])
        return list(out.values())

    def get_turns(self, scope: Scope, *, session_id: str | None = None, since: datetime | None = None,
                  until: datetime | None = None, limit: int | None = None, newest_first: bool = False,
                  rowids: Sequence[int] | None = None, after_seq: int | None = None) -> list[Turn]:
        self._scope(scope)
        where = ["user_id = %s", "agent_id = %s"]
        params: list[Any] = [scope.user_id, scope.agent_id]
        for cond, value in (("session_id = %s", session_id), ("created_at >= %s", ts(since)),
                            ("created_at <= %s", ts(until)),
                            ("seq > %s", None if after_seq is None else int(after_seq))):
            if value is not None:
                where.append(cond)
                params.append(value)
        if rowids is not None:
            if not rowids:
                return []
            where.append("rowid = ANY(%s)")
            params.append([int(r) for r in rowids])
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {TURN_COLS} FROM turns WHERE {' AND '.join(where)} ORDER BY created_at {order}, seq {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [turn_row(r) for r in self._q(sql, params)]

    def turns_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Turn]:
        return {int(r[-1]): turn_row(r) for r in self._by_rowid("turns", TURN_COLS, scope, rowids)}

    def _by_rowid(self, table: str, cols: str, scope: Scope, rowids: Sequence[int]) -> list[tuple[Any, ...]]:
        if not rowids:
            return []
        return self._q(f"SELECT {cols}, rowid FROM {table} WHERE user_id = %s AND agent_id = %s AND rowid = ANY(%s)",
                       (scope.user_id, scope.agent_id, [int(r) for r in rowids]))

    def set_turns_archived(self, scope: Scope, turn_ids: Sequence[str], state: str) -> None:
        with self.transaction():
            self._scope(scope)
            self._x("UPDATE turns SET archived = %s WHERE user_id = %s AND agent_id = %s AND id = ANY(%s)",
                    (state, scope.user_id, scope.agent_id, [_esc(t) for t in turn_ids]))

    # ---- memories ---------------------------------------------------------------------

    def insert_memory(self, memory: MemoryRecord) -> int:
        return self.insert_memories([memory])[0]

    def insert_memories(self, memories: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> list[int]:
        """Insert many memories in one transaction; with `vectors` they are stored as embedded."""
        if not memories:
            return []
        vecs = None
        if vectors is not None:
            vecs = np.ascontiguousarray(vectors, dtype=np.float32)
            if self._vector_dims is None or vecs.shape != (len(memories), self._vector_dims):
                raise ValidationError(
                    "vectors", f"expected shape ({len(memories)}, {self._vector_dims}), got {vecs.shape}")
        docs = [pgtext.document(pgtext.body(m.content)) for m in memories]
        with self.transaction():
            for m in memories:
                self._scope((m.user_id, m.agent_id))
            ids = self._q("SELECT nextval(pg_get_serial_sequence('memories', 'rowid')) FROM generate_series(1, %s)",
                          (len(memories),))
            rowids = [int(r[0]) for r in ids]
            self._many(
                f"INSERT INTO memories(rowid, {MEMORY_COLS}, embedded, fts, fts_len) "
                f"VALUES (%s, {', '.join(['%s'] * 21)}, %s, %s::tsvector, %s)",
                [(r, *memory_params(m), int(vecs is not None), d[0], d[1])
                 for r, m, d in zip(rowids, memories, docs, strict=True)])
            if vecs is not None:
                scopes = {Scope(user_id=m.user_id, agent_id=m.agent_id) for m in memories}
                big = {s for s in scopes if self._vector_count("memories", s) >= self._ann_threshold}
                self._many("INSERT INTO vec_memories(rowid, user_id, agent_id, embedding, ann) VALUES (%s, %s, %s, %s, %s)",
                           [(r, m.user_id, m.agent_id, vecs[i], Scope(user_id=m.user_id, agent_id=m.agent_id) in big)
                            for i, (r, m) in enumerate(zip(rowids, memories, strict=True))])
                for scope in scopes - big:  # those that grew past the threshold now
                    self._grow_ann("memories", scope)
        return rowids

    def update_memory(self, memory: MemoryRecord, *, content_changed: bool) -> int:
        scope = Scope(user_id=memory.user_id, agent_id=memory.agent_id)
        with self.transaction():
            self._scope(scope)
            params = memory_params(memory)
            self._x(
                "UPDATE memories SET content = %s, category = %s, kind = %s, score = %s, confidence = %s, "
                "subject = %s, predicate = %s, created_at = %s, updated_at = %s, last_activated = %s, "
                "activation_count = %s, expires_at = %s, source = %s, verified = %s, source_session = %s, "
                "status = %s, pinned = %s, metadata = %s WHERE user_id = %s AND agent_id = %s AND id = %s",
                (*params[3:], memory.user_id, memory.agent_id, memory.id))
            rowid = self.memory_rowid(scope, memory.id)
            if content_changed and rowid >= 0:
                self._index("memories", rowid, memory.content)
                self._x("UPDATE memories SET embedded = 0 WHERE rowid = %s", (rowid,))
        return rowid

    def memory_rowid(self, scope: Scope, memory_id: str) -> int:
        rows = self._q("SELECT rowid FROM memories WHERE user_id = %s AND agent_id = %s AND id = %s",
                       (scope.user_id, scope.agent_id, memory_id))
        return int(rows[0][0]) if rows else -1

    def get_memory(self, scope: Scope, memory_id: str) -> MemoryRecord | None:
        self._scope(scope)
        rows = self._q(f"SELECT {MEMORY_COLS} FROM memories WHERE user_id = %s AND agent_id = %s AND id = %s",
                       (scope.user_id, scope.agent_id, memory_id))
        return memory_row(rows[0]) if rows else None

    def memories_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, MemoryRecord]:
        return {int(r[-1]): memory_row(r) for r in self._by_rowid("memories", MEMORY_COLS, scope, rowids)}

    def memory_facts(self, scope: Scope, rowids: Sequence[int]) -> MemoryFacts:
        found = {int(r[-1]): r[:-1] for r in self._by_rowid(
            "memories", "score, last_activated, expires_at, created_at, status, category, source_session", scope,
            rowids)}
        return MemoryFacts.of_rows([(r, *found[r]) for r in dict.fromkeys(rowids) if r in found])

    def list_memories(self, scope: Scope, *, category: str | None = None, status: str | None = None,
                      session_id: str | None = None, since: datetime | None = None, until: datetime | None = None,
                      limit: int | None = None, offset: int = 0,
                      order: str = "score DESC, updated_at DESC") -> list[MemoryRecord]:
        self._scope(scope)
        where = ["user_id = %s", "agent_id = %s"]
        params: list[Any] = [scope.user_id, scope.agent_id]
        for cond, value in (("category = %s", category), ("status = %s", status), ("source_session = %s", session_id),
                            ("created_at >= %s", ts(since)), ("created_at <= %s", ts(until))):
            if value is not None:
                where.append(cond)
                params.append(value)
        # SQLite's default order for ties is the rowid: the same here
        sql = f"SELECT {MEMORY_COLS} FROM memories WHERE {' AND '.join(where)} ORDER BY {order}, rowid"
        sql += f" LIMIT {'ALL' if limit is None else int(limit)} OFFSET {int(offset)}"
        return [memory_row(r) for r in self._q(sql, params)]

    def delete_memory(self, scope: Scope, memory_id: str) -> bool:
        with self.transaction():
            self._scope(scope)
            rowid = self.memory_rowid(scope, memory_id)
            if rowid < 0:
                return False
            self._drop_rows("memories", [rowid])
            return True

    def count_memories(self, scope: Scope, status: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM memories WHERE user_id = %s AND agent_id = %s"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if status:
            sql += " AND status = %s"
            params.append(status)
        return int(self._q(sql, params)[0][0])

    # ---- events -----------------------------------------------------------------------

    def add_event(self, scope: Scope, memory_id: str, kind: str, before: dict[str, Any] | None,
                  after: dict[str, Any] | None, actor: str, reason: str, at: datetime) -> None:
        self._x("INSERT INTO memory_events(memory_id, user_id, agent_id, kind, before, after, actor, reason, "
                "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (memory_id, scope.user_id, scope.agent_id, kind, to_json(before) if before is not None else None,
                 to_json(after) if after is not None else None, actor, reason, ts(at)))

    def events(self, scope: Scope, memory_id: str | None = None, limit: int = 1000) -> list[MemoryEvent]:
        sql = ("SELECT id, memory_id, user_id, agent_id, kind, before, after, actor, reason, created_at "
               "FROM memory_events WHERE user_id = %s AND agent_id = %s")
        params: list[Any] = [scope.user_id, scope.agent_id]
        if memory_id is not None:
            sql += " AND memory_id = %s"
            params.append(memory_id)
        params.append(limit)
        return [MemoryEvent(id=r[0], memory_id=r[1], user_id=r[2], agent_id=r[3], kind=r[4],
                            before=json.loads(r[5]) if r[5] else None, after=json.loads(r[6]) if r[6] else None,
                            actor=r[7], reason=r[8], created_at=dt_(r[9]))
                for r in self._q(sql + " ORDER BY id LIMIT %s", params)]

    # ---- episodes ---------------------------------------------------------------------

    def insert_episode(self, episode: Episode) -> int:
        text = " ".join([episode.summary, episode.goal, episode.outcome, " ".join(episode.entities)])
        vec, n = pgtext.document(pgtext.body(text))
        rows = self._q(
            f"INSERT INTO episodes({EPISODE_COLS}, fts, fts_len) VALUES ({', '.join(['%s'] * 13)}, %s::tsvector, %s) "
            "RETURNING rowid",
            (episode.id, episode.user_id, episode.agent_id, episode.session_id, episode.summary, episode.goal,
             episode.outcome, to_json(episode.entities), to_json(episode.tools_used), ts(episode.started_at),
             ts(episode.ended_at), episode.score, ts(episode.created_at), vec, n))
        return int(rows[0][0])

    def list_episodes(self, scope: Scope, *, session_id: str | None = None, limit: int = 100) -> list[Episode]:
        sql = f"SELECT {EPISODE_COLS} FROM episodes WHERE user_id = %s AND agent_id = %s"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            params.append(session_id)
        params.append(limit)
        return [episode_row(r) for r in self._q(sql + " ORDER BY ended_at DESC, rowid LIMIT %s", params)]

    def episodes_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Episode]:
        return {int(r[-1]): episode_row(r) for r in self._by_rowid("episodes", EPISODE_COLS, scope, rowids)}

    def delete_episode(self, scope: Scope, episode_id: str) -> bool:
        with self.transaction():
            self._scope(scope)
            rows = self._q("SELECT rowid FROM episodes WHERE user_id = %s AND agent_id = %s AND id = %s",
                           (scope.user_id, scope.agent_id, episode_id))
            if not rows:
                return False
            self._drop_rows("episodes", [int(rows[0][0])])
            return True

    # ---- scratchpad -------------------------------------------------------------------

    def get_scratchpad(self, scope: Scope) -> Scratchpad | None:
        self._scope(scope)
        rows = self._q("SELECT current_focus, recent_tasks, updated_at FROM scratchpad WHERE user_id = %s "
                       "AND agent_id = %s", (scope.user_id, scope.agent_id))
        if not rows:
            return None
        return Scratchpad(user_id=scope.user_id, agent_id=scope.agent_id, current_focus=rows[0][0],
                          recent_tasks=json.loads(rows[0][1]), updated_at=dt_(rows[0][2]))

    def put_scratchpad(self, pad: Scratchpad) -> None:
        self._x("INSERT INTO scratchpad(user_id, agent_id, current_focus, recent_tasks, updated_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT(user_id, agent_id) DO UPDATE SET "
                "current_focus = excluded.current_focus, recent_tasks = excluded.recent_tasks, "
                "updated_at = excluded.updated_at",
                (pad.user_id, pad.agent_id, pad.current_focus, to_json(pad.recent_tasks), ts(pad.updated_at)))

    # ---- extraction jobs --------------------------------------------------------------

    def enqueue_job(self, scope: Scope, session_id: str, first_seq: int, last_seq: int, at: datetime) -> bool:
        """Queue a turn range; False when that exact range was queued before (idempotency)."""
        return self._x(
            "INSERT INTO extraction_jobs(user_id, agent_id, session_id, first_seq, last_seq, status, attempts, "
            "next_at, created_at) VALUES (%s, %s, %s, %s, %s, 'queued', 0, %s, %s) ON CONFLICT DO NOTHING",
            (scope.user_id, scope.agent_id, session_id, first_seq, last_seq, ts(at), ts(at))) > 0

    def jobs(self, *, scope: Scope | None = None, due_before: datetime | None = None,
             status: Sequence[str] = ("queued",), limit: int = 100) -> list[ExtractionJob]:
        """Jobs by status, oldest due first. Due queued jobs another worker is claiming right
        now (its row locked) are skipped: `FOR UPDATE SKIP LOCKED` lets any number of workers
        list and claim them without waiting on each other."""
        where = ["status = ANY(%s)"]
        params: list[Any] = [list(status)]
        if scope is not None:
            self._scope(scope)
            where += ["user_id = %s", "agent_id = %s"]
            params += [scope.user_id, scope.agent_id]
        if due_before is not None:
            where.append("next_at <= %s")
            params.append(ts(due_before))
        lock = " FOR UPDATE SKIP LOCKED" if due_before is not None else ""
        rows = self._q(
            "SELECT id, user_id, agent_id, session_id, first_seq, last_seq, status, attempts, next_at, last_error, "
            f"created_at FROM extraction_jobs WHERE {' AND '.join(where)} ORDER BY next_at, id LIMIT %s{lock}",
            (*params, limit))
        return [ExtractionJob(id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], first_seq=r[4], last_seq=r[5],
                              status=r[6], attempts=r[7], next_at=dt_(r[8]), last_error=r[9], created_at=dt_(r[10]))
                for r in rows]

    def claim_job(self, job_id: int) -> bool:
        """Mark a queued job running; False when another worker has it or is claiming it
        (its row locked: skipped, not waited for)."""
        return self._x(
            "UPDATE extraction_jobs SET status = 'running' WHERE id = (SELECT id FROM extraction_jobs "
            "WHERE id = %s AND status = 'queued' FOR UPDATE SKIP LOCKED)", (job_id,)) > 0

    def update_job(self, job_id: int, *, status: str, attempts: int, next_at: datetime, last_error: str | None) -> None:
        self._x("UPDATE extraction_jobs SET status = %s, attempts = %s, next_at = %s, last_error = %s WHERE id = %s",
                (status, attempts, ts(next_at), last_error, job_id))

    # ---- forgetting (forget.py decides) ------------------------------------------------

    def _drop_rows(self, corpus: Corpus, rowids: Sequence[int]) -> int:
        """Delete rows of a corpus with their vectors, in the caller's transaction."""
        ids = [int(r) for r in rowids]
        if not ids:
            return 0
        if self._vector_dims is not None:
            self._x(f"DELETE FROM vec_{corpus} WHERE rowid = ANY(%s)", (ids,))
            if corpus == "turns":
                self._drop_passages(ids)
        self._x(f"DELETE FROM {corpus} WHERE rowid = ANY(%s)", (ids,))
        return len(ids)

    def _rowids_of(self, corpus: str, user_id: str, agent_id: str | None, extra: str = "",
                   extra_params: Sequence[Any] = ()) -> list[tuple[int, str]]:
        where, params = _scope_where(user_id, agent_id)
        return [(int(r[0]), str(r[1])) for r in self._q(f"SELECT rowid, agent_id FROM {corpus} WHERE {where}{extra}",
                                                        (*params, *extra_params))]

    def turns_by_id(self, scope: Scope, turn_ids: Sequence[str]) -> list[Turn]:
        return [turn_row(r) for r in self._q(
            f"SELECT {TURN_COLS} FROM turns WHERE user_id = %s AND agent_id = %s AND id = ANY(%s) "
            "ORDER BY session_id, seq", (scope.user_id, scope.agent_id, [_esc(t) for t in turn_ids]))]

    def scope_texts(self, user_id: str, agent_id: str | None) -> list[str]:
        where, params = _scope_where(user_id, agent_id)
        texts = [str(r[0]) for table, col in (("memories", "content"), ("turns", "content"), ("episodes", "summary"))
                 for r in self._q(f"SELECT {col} FROM {table} WHERE {where}", params)]
        for before, after in self._q(f"SELECT before, after FROM memory_events WHERE {where}", params):
            for snap in (before, after):
                try:
                    content = json.loads(snap).get("content") if snap else None
                except (ValueError, AttributeError):
                    content = None
                if isinstance(content, str):
                    texts.append(content)
        return list(dict.fromkeys(texts))

    def delete_turns(self, scope: Scope, turn_ids: Sequence[str]) -> list[tuple[str, int]]:
        with self.transaction():
            self._scope(scope)
            found = self._q("SELECT rowid, session_id, seq FROM turns WHERE user_id = %s AND agent_id = %s "
                            "AND id = ANY(%s)", (scope.user_id, scope.agent_id, [_esc(t) for t in turn_ids]))
            self._drop_rows("turns", [int(r[0]) for r in found])
        return [(str(r[1]), int(r[2])) for r in found]

    def delete_session(self, scope: Scope, session_id: str) -> dict[str, int]:
        with self.transaction():
            self._scope(scope)
            counts = {corpus: self._drop_rows(corpus, [r for r, _ in self._rowids_of(
                corpus, scope.user_id, scope.agent_id, " AND session_id = %s", (session_id,))])
                for corpus in ("turns", "episodes")}
            for table in ("extraction_jobs", "sessions"):
                key = "session_id" if table == "extraction_jobs" else "id"
                counts[table] = self._x(f"DELETE FROM {table} WHERE user_id = %s AND agent_id = %s AND {key} = %s",
                                        (scope.user_id, scope.agent_id, session_id))
            for table, key, value in (("attachments", "session_id", session_id),
                                      ("events", "subject", f"session:{session_id}")):
                n = self._x(f"DELETE FROM {table} WHERE user_id = %s AND agent_id = %s AND {key} = %s",
                            (scope.user_id, scope.agent_id, value))
                if n:
                    counts[table] = n
        return counts

    def delete_scope(self, user_id: str, agent_id: str | None) -> tuple[dict[str, int], list[Scope]]:
        with self.transaction():
            counts: dict[str, int] = {}
            agents: set[str] = set()
            where, params = _scope_where(user_id, agent_id)
            for corpus in CORPORA:
                rows = self._rowids_of(corpus, user_id, agent_id)
                agents.update(a for _, a in rows)
                for a in {a for _, a in rows}:
                    self._scope((user_id, a))
                counts[corpus] = self._drop_rows(corpus, [r for r, _ in rows])  # type: ignore[arg-type]
            if self._vector_dims is not None:
                for corpus in CORPORA:
                    self._x(f"DELETE FROM vec_{corpus} WHERE {where}", params)
            for table in SCOPE_TABLES:
                counts[table] = self._x(f"DELETE FROM {table} WHERE {where}", params)
            lease = f"extract-lock:{user_id}\x1f" + ("" if agent_id is None else agent_id)
            if agent_id is None:
                self._x("DELETE FROM meta WHERE left(key, char_length(%s)) = %s", (lease, lease))
            else:
                self._x("DELETE FROM meta WHERE key = %s", (lease,))
        return counts, [Scope(user_id=user_id, agent_id=a) for a in sorted(agents)]

    def scrub_events(self, scope: Scope, memory_id: str, reason: str) -> list[str]:
        with self.transaction():
            self._scope(scope)
            texts: list[str] = []
            for before, after in self._q("SELECT before, after FROM memory_events WHERE user_id = %s "
                                         "AND agent_id = %s AND memory_id = %s",
                                         (scope.user_id, scope.agent_id, memory_id)):
                for snap in (before, after):
                    content = json.loads(snap).get("content") if snap else None
                    if isinstance(content, str):
                        texts.append(content)
            self._x("UPDATE memory_events SET before = NULL, after = NULL, reason = %s "
                    "WHERE user_id = %s AND agent_id = %s AND memory_id = %s",
                    (reason, scope.user_id, scope.agent_id, memory_id))
        return list(dict.fromkeys(texts))

    def cache_forget(self, hashes: Sequence[str]) -> int:
        if not hashes:
            return 0
        return self._x("DELETE FROM embedding_cache WHERE hash = ANY(%s)", (list(dict.fromkeys(hashes)),))

    def forget_files(self, corpora: Sequence[Corpus], scopes: Sequence[Scope] = ()) -> None:
        """No cache files on PostgreSQL. Deleted rows' old versions stay in the table files
        until VACUUM reclaims them (autovacuum, or the operator's VACUUM)."""

    def mark_forgetting(self) -> None:
        """Nothing to scrub after the commit here (see `forget_files`)."""

    # ---- attachments and persisted events ---------------------------------------------

    _ATT_COLS = ("id, user_id, agent_id, session_id, name, media_type, description, uri, size, sha256, "
                 "created_at, expires_at, metadata")

    def put_attachment(self, att: Attachment) -> None:
        self._x(f"INSERT INTO attachments({self._ATT_COLS}, data) VALUES ({', '.join(['%s'] * 14)})",
                (att.id, att.user_id, att.agent_id, att.session_id, att.name, att.media_type, att.description,
                 att.uri, att.size, att.sha256, ts(att.created_at), ts(att.expires_at), to_json(att.metadata),
                 att.data))

    def get_attachment(self, scope: Scope, attachment_id: str) -> Attachment | None:
        rows = self._q(f"SELECT {self._ATT_COLS}, data FROM attachments WHERE user_id = %s AND agent_id = %s "
                       "AND id = %s", (scope.user_id, scope.agent_id, attachment_id))
        return _attachment(rows[0], with_data=True) if rows else None

    def list_attachments(self, scope: Scope, *, session_id: str | None = None,
                         expired_at: datetime | None = None) -> list[Attachment]:
        sql = f"SELECT {self._ATT_COLS} FROM attachments WHERE user_id = %s AND agent_id = %s"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            params.append(session_id)
        if expired_at is not None:
            sql += " AND expires_at IS NOT NULL AND expires_at <= %s"
            params.append(ts(expired_at))
        return [_attachment(r, with_data=False) for r in self._q(sql + " ORDER BY created_at, rowid", params)]

    def delete_attachments(self, scope: Scope, attachment_ids: Sequence[str]) -> int:
        return self._x("DELETE FROM attachments WHERE user_id = %s AND agent_id = %s AND id = ANY(%s)",
                       (scope.user_id, scope.agent_id, [_esc(i) for i in dict.fromkeys(attachment_ids)]))

    def add_bus_event(self, scope: Scope, type_: str, subject: str, source: str, payload: dict[str, Any],
                      at: datetime, status: str, actions: list[dict[str, Any]]) -> int:
        rows = self._q("INSERT INTO events(user_id, agent_id, type, subject, source, payload, at, status, actions) "
                       "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                       (scope.user_id, scope.agent_id, type_, subject, source, to_json(payload), ts(at), status,
                        to_json(actions)))
        return int(rows[0][0])

    def update_bus_event(self, scope: Scope, event_id: int, status: str, actions: list[dict[str, Any]]) -> None:
        self._x("UPDATE events SET status = %s, actions = %s WHERE user_id = %s AND agent_id = %s AND id = %s",
                (status, to_json(actions), scope.user_id, scope.agent_id, event_id))

    def bus_events(self, scope: Scope, *, status: str | None = None, event_id: int | None = None,
                   limit: int = 1000) -> list[StoredEvent]:
        sql = ("SELECT id, user_id, agent_id, type, subject, source, payload, at, status, actions FROM events "
               "WHERE user_id = %s AND agent_id = %s")
        params: list[Any] = [scope.user_id, scope.agent_id]
        for col, value in (("status", status), ("id", event_id)):
            if value is not None:
                sql += f" AND {col} = %s"
                params.append(value)
        rows = self._q(sql + f" ORDER BY at DESC, id DESC LIMIT {int(limit)}", params)
        return [StoredEvent(id=r[0], user_id=r[1], agent_id=r[2], type=r[3], subject=r[4], source=r[5],
                            payload=json.loads(r[6]), at=dt_(r[7]), status=r[8], actions=json.loads(r[9]))
                for r in rows]

    def delete_bus_events(self, scope: Scope, *, before: datetime | None = None, subject: str | None = None) -> int:
        if before is not None:
            return self._x("DELETE FROM events WHERE user_id = %s AND agent_id = %s AND at < %s "
                           "AND status != 'pending'", (scope.user_id, scope.agent_id, ts(before)))
        return self._x("DELETE FROM events WHERE user_id = %s AND agent_id = %s AND subject = %s",
                       (scope.user_id, scope.agent_id, subject))

    # ---- stats ------------------------------------------------------------------------

    def stats(self, scope: Scope) -> dict[str, Any]:
        u = (scope.user_id, scope.agent_id)
        one = lambda sql: int(self._q(sql, u)[0][0])  # noqa: E731
        w = "WHERE user_id = %s AND agent_id = %s"
        return {
            "memories": one(f"SELECT COUNT(*) FROM memories {w}"),
            "memories_by_category": dict(self._q(f"SELECT category, COUNT(*) FROM memories {w} GROUP BY category", u)),
            "memories_by_status": dict(self._q(f"SELECT status, COUNT(*) FROM memories {w} GROUP BY status", u)),
            "turns": one(f"SELECT COUNT(*) FROM turns {w}"),
            "turns_unembedded": one(f"SELECT COUNT(*) FROM turns {w} AND embedded = 0"),
            "sessions": one(f"SELECT COUNT(*) FROM sessions {w}"),
            "episodes": one(f"SELECT COUNT(*) FROM episodes {w}"),
            "events": one(f"SELECT COUNT(*) FROM memory_events {w}"),
            "jobs_pending": one(f"SELECT COUNT(*) FROM extraction_jobs {w} AND status IN ('queued','running')"),
            "db_path": self.where,
            "db_bytes": int(self._q("SELECT pg_database_size(current_database())")[0][0]),
        }

    def scopes(self) -> list[Scope]:
        rows = self._q("SELECT user_id, agent_id FROM memories UNION SELECT user_id, agent_id FROM turns "
                       "UNION SELECT user_id, agent_id FROM extraction_jobs ORDER BY 1, 2")
        return [Scope(user_id=r[0], agent_id=r[1]) for r in rows]

    def raw_count(self, table: str, where: str = "1", params: Sequence[Any] = ()) -> int:
        """Row count of any table; `where` in SQLite's notation (`?` placeholders, `1`). A
        corpus's full-text entry is part of its row here: `memories_fts` counts `memories`."""
        table = table.removesuffix("_fts") if table.removesuffix("_fts") in CORPORA else table
        cond = "TRUE" if where.strip() == "1" else where.replace("?", "%s")
        return int(self._q(f"SELECT COUNT(*) FROM {table} WHERE {cond}", params)[0][0])


def _array(value: Any) -> np.ndarray:
    """A vector column's value (pgvector's `Vector`, or an array) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def _scope_where(user_id: str, agent_id: str | None) -> tuple[str, tuple[str, ...]]:
    if agent_id is None:
        return "user_id = %s", (user_id,)
    return "user_id = %s AND agent_id = %s", (user_id, agent_id)


def _attachment(r: Sequence[Any], *, with_data: bool) -> Attachment:
    return Attachment(id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], name=r[4], media_type=r[5],
                      description=r[6], uri=r[7], size=r[8], sha256=r[9], created_at=dt_(r[10]),
                      expires_at=None if r[11] is None else dt_(r[11]), metadata=json.loads(r[12]),
                      data=bytes(r[13]) if with_data and r[13] is not None else None)
