"""The default store: one SQLite file through apsw, FTS5 for words, sqlite-vec for vectors.

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
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import apsw
import apsw.bestpractice
import numpy as np
import sqlite_vec

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
from memlane.store import erase, lexindex, memcache, passage_rowids, vector_owner, vindex
from memlane.store.migrations import MIGRATIONS, index_vector_chunks, scope_token
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
from memlane.text import index_text

R = TypeVar("R")
_FTS = {"memories": "memories_fts", "turns": "turns_fts", "episodes": "episodes_fts"}
_SCAN_PER_ROW = 20  # a scope index entry costs ~1/20 of a rowid lookup, warm (~1/50 cold)


class SQLiteStore:
    """The `Store` protocol over one SQLite file."""

    name = "sqlite"

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
            erase.unlink_caches(self.path.parent, self.path.stem, list(_FTS))
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

    # ---- vectors ----------------------------------------------------------------------

    def ensure_vectors(self, model_id: str, dims: int) -> None:
        """Create the vector tables for this embedder. A different embedder than last time
        drops them and marks every row for re-embedding: vectors are a cache of the rows."""
        with self.transaction():
            if self.meta("vector_model") != model_id or self.meta("vector_dims") != str(dims):
                for corpus in _FTS:
                    self._conn.execute(f"DROP TABLE IF EXISTS vec_{corpus}")
                    self._conn.execute(
                        f"CREATE VIRTUAL TABLE vec_{corpus} USING vec0("
                        f"user_id text partition key, agent_id text, "
                        f"embedding float[{dims}] distance_metric=cosine)"
                    )
                    index_vector_chunks(self._conn, corpus)
                    self._conn.execute(f"UPDATE {corpus} SET embedded = 0")
                vindex.reset(self._conn)
                self.set_meta("vector_model", model_id)
                self.set_meta("vector_dims", str(dims))
        self._vector_dims = dims

    def reembed_long_turns(self, longer_than: int) -> None:
        """Mark turns longer than `longer_than` characters for embedding: their key stays (the
        cache has it), their passages are cut and embedded anew (`put_vectors` drops the old)."""
        with self.transaction():
            self._conn.execute("UPDATE turns SET embedded = 0 WHERE embedded = 1 AND length(content) > ?",
                               (int(longer_than),))

    def put_vectors(self, corpus: Corpus, scope: Scope, rowids: Sequence[int], vectors: np.ndarray) -> None:
        with self.transaction():
            added = 0
            stale: list[int] = []
            for rowid, vec in zip(rowids, vectors, strict=True):
                owner = vector_owner(rowid)
                if owner == rowid and corpus == "turns":  # a turn embedded anew: its old passages go
                    stale += self._drop_passages(rowid)
                self._conn.execute(f"DELETE FROM vec_{corpus} WHERE rowid = ?", (rowid,))
                replaced = self._conn.changes()
                if not self._conn.execute(f"SELECT 1 FROM {corpus} WHERE rowid = ?", (owner,)).fetchall():
                    added -= replaced  # the row was deleted (forgotten) while it was embedded
                    continue
                added += 1 - replaced
                self._conn.execute(
                    f"INSERT INTO vec_{corpus}(rowid, user_id, agent_id, embedding) VALUES (?, ?, ?, ?)",
                    (rowid, scope.user_id, scope.agent_id, np.asarray(vec, dtype=np.float32).tobytes()),
                )
                self._conn.execute(f"UPDATE {corpus} SET embedded = 1 WHERE rowid = ?", (owner,))
            if stale:
                vindex.record(self._conn, corpus, scope, stale, "del", -len(stale))
            vindex.record(self._conn, corpus, scope, rowids, "put", added)

    def _drop_passages(self, rowid: int) -> list[int]:
        """Delete a turn's passage vectors, in the caller's transaction; returns their rows."""
        ids = passage_rowids(rowid)
        rows: list[Any] = self._conn.execute(
            f"SELECT rowid FROM vec_turns WHERE rowid IN ({','.join('?' * len(ids))})", ids).fetchall()
        found = [int(r[0]) for r in rows]
        for r in found:
            self._conn.execute("DELETE FROM vec_turns WHERE rowid = ?", (r,))
        return found

    def knn(self, corpus: Corpus, scope: Scope, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Nearest rows of this scope by cosine distance: [(rowid, distance)].

        A scope holding `ann_threshold` vectors or more is searched through its HNSW cache
        (store/vindex.py, approximate); smaller ones are scanned exactly, from their vec0
        chunk blobs read whole (vindex.scan_scope) or else by vec0 itself."""
        if self._vector_dims is None:
            return []
        with self._lock:
            hits = self._ann.search(corpus, scope, vector, k)
            if hits is not None:
                return hits
            cached = self.memcache.ready() if corpus == "memories" else None
            codes = None if cached is None else cached.scope_codes(cached.scope_id(scope.user_id, scope.agent_id))
            if codes is not None:
                return codes.knn(vector, k)
            scanned = self._scans.get(self._conn, corpus, scope, self._vector_dims)
        if scanned is not None:
            return scanned.knn(vector, k)
        rows = self._q(
            f"SELECT rowid, distance FROM vec_{corpus} WHERE embedding MATCH ? AND k = ? "
            "AND user_id = ? AND agent_id = ? ORDER BY distance",
            (np.asarray(vector, dtype=np.float32).tobytes(), k, scope.user_id, scope.agent_id),
        )
        # a zero vector (text with no features) has no cosine distance: it is no neighbour
        return [(int(r[0]), float(r[1])) for r in rows if r[1] is not None]

    def vectors(self, corpus: Corpus, scope: Scope, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        if self._vector_dims is None or not rowids:
            return {}
        with self._lock:  # a big scope's graph holds them; else its vec0 chunks, read whole
            fast = self._ann.vectors(corpus, scope, rowids)
            if fast is None and (scanned := self._scans.get(self._conn, corpus, scope, self._vector_dims)):
                fast = scanned.get(rowids)
            if fast is None:
                fast = vindex.read_vectors(self._conn, corpus, scope.user_id, rowids, self._vector_dims)
        if fast is not None:
            return fast
        out: dict[int, np.ndarray] = {}
        for chunk in _chunks(list(rowids), 500):
            marks = ",".join("?" * len(chunk))
            for rowid, blob in self._q(
                f"SELECT rowid, embedding FROM vec_{corpus} WHERE user_id = ? AND rowid IN ({marks})",
                (scope.user_id, *chunk),
            ):
                out[int(rowid)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def similarities(self, corpus: Corpus, scope: Scope, rowids: Sequence[int],
                     vector: np.ndarray) -> dict[int, float]:
        """{rowid: dot product with `vector`} of the rows that have a vector: one matrix
        product over a small scope's scan, else over the vectors fetched."""
        if self._vector_dims is None or not rowids:
            return {}
        with self._lock:
            vecs = self._ann.vectors(corpus, scope, rowids)
            cached = self.memcache.ready() if vecs is None and corpus == "memories" else None
            codes = None if cached is None else cached.scope_codes(cached.scope_id(scope.user_id, scope.agent_id))
            if codes is not None:
                return codes.dots(rowids, vector)
            if vecs is None and (scanned := self._scans.get(self._conn, corpus, scope, self._vector_dims)):
                return scanned.dots(rowids, vector)
        if vecs is None:
            vecs = self.vectors(corpus, scope, rowids)
        ids = list(vecs)
        return dict(zip(ids, (np.stack([vecs[r] for r in ids]) @ vector).tolist(), strict=True)) if ids else {}

    def unembedded(self, corpus: Corpus, limit: int) -> list[tuple[int, Scope, str]]:
        """Rows still waiting for a vector, oldest first: [(rowid, scope, text)]."""
        text = {"memories": "content", "turns": "content", "episodes": "summary"}[corpus]
        rows = self._q(
            f"SELECT rowid, user_id, agent_id, {text} FROM {corpus} WHERE embedded = 0 ORDER BY rowid LIMIT ?",
            (limit,),
        )
        return [(int(r[0]), Scope(user_id=r[1], agent_id=r[2]), r[3]) for r in rows]

    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(hashes), 500):
            marks = ",".join("?" * len(chunk))
            for h, blob in self._q(
                f"SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN ({marks})", (model, *chunk)
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self.transaction():
            for h, vec in items.items():
                self._conn.execute(
                    "INSERT OR IGNORE INTO embedding_cache(model, hash, vector) VALUES (?, ?, ?)",
                    (model, h, np.asarray(vec, dtype=np.float32).tobytes()),
                )

    # ---- full text --------------------------------------------------------------------

    def fts(
        self, corpus: Corpus, scope: Scope, match: str, limit: int, weights: Sequence[float] = (1.0,)
    ) -> list[tuple[int, float]]:
        """BM25 candidates of this scope: [(rowid, bm25)] best first (bm25 is negative).

        A corpus of `lexical_threshold` rows or more (by default every one) is ranked by its
        in-process cache (store/lexindex.py: FTS5's tokens and formula, the scope's own
        statistics unless `lexical_statistics` is "corpus"); MATCH syntax other than OR-ed
        quoted terms, and smaller corpora, by FTS5 itself, with the table's statistics."""
        if not match:
            return []
        terms = lexindex.parse_match(match)
        if terms is None:
            return self.fts5(corpus, scope, match, limit, weights)
        return self.fts_terms(corpus, scope, terms, limit, weights)

    def settle_text(self) -> None:
        with self._lock:
            try:
                for corpus in ("memories", "turns", "episodes"):
                    self.lexical.catch_up(corpus)
            except apsw.Error as exc:  # e.g. another process holds the database: a search catches up later
                raise self._failure(exc, write=False) from exc

    def fts_terms(
        self, corpus: Corpus, scope: Scope, terms: Sequence[str], limit: int, weights: Sequence[float] = (1.0,)
    ) -> list[tuple[int, float]]:
        """`fts` of the OR of `terms` (each one quoted, as text.fts_query does)."""
        if not terms:
            return []
        with self._lock:
            ranked = self.lexical.search(corpus, scope_token(scope.user_id, scope.agent_id), terms, limit,
                                         _bm25_weights(corpus, weights)[:-1])
        if ranked is None:
            return self.fts5(corpus, scope, lexindex.match_of(terms), limit, weights)
        return self._mine(corpus, scope, ranked)

    def fts5(
        self, corpus: Corpus, scope: Scope, match: str, limit: int, weights: Sequence[float] = (1.0,)
    ) -> list[tuple[int, float]]:
        """`fts` answered by FTS5 itself, whatever the corpus's size: the lexical cache's reference."""
        if not match:
            return []
        fts = _FTS[corpus]
        # the last column holds the scope's token (m003): weight 0, ANDed into the MATCH so
        # FTS5 walks only this scope's rows. FTS5 ranks on its own (joining first would probe
        # the base table for every match); the scope is then verified on the top rows only.
        w = ", ".join(str(x) for x in _bm25_weights(corpus, weights))
        scoped = f'scope : "{scope_token(scope.user_id, scope.agent_id)}" AND ({match})'
        try:
            ranked = self._q(f"SELECT rowid, bm25({fts}, {w}) AS s FROM {fts} WHERE {fts} MATCH ? ORDER BY s LIMIT ?",
                             (scoped, limit))
        except apsw.SQLError as exc:
            raise BackendError(f"full-text query {match!r} failed: {exc}") from exc
        return self._mine(corpus, scope, [(int(r[0]), float(r[1])) for r in ranked])

    def _mine(self, corpus: Corpus, scope: Scope, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """The ranked rows that belong to the scope: its token is a hash, so it is verified
        (from the scope index alone: every index holds the rowid)."""
        if not ranked:
            return []
        with self._lock:  # a large memories table's cache knows every row's owner
            cached = self.memcache.ready() if corpus == "memories" else None
            if cached is not None:
                owned = cached.owned(cached.scope_id(scope.user_id, scope.agent_id), [r for r, _ in ranked])
                return [x for x, ok in zip(ranked, owned.tolist(), strict=True) if ok]
        mine = self._by_rowid(corpus, "1", lambda r: True, scope, [r for r, _ in ranked], covered=True)
        return [(r, s) for r, s in ranked if r in mine]

    def scope_documents(self, corpus: Corpus, scope: Scope, terms: Sequence[str], column: int | None = None,
                        min_docs: int = 0, above: float = 1.0, drift: float = 0.0) -> tuple[dict[str, int], int]:
        """({index term: documents of this scope holding it}, documents in the scope); with
        `column`, only documents holding it in that text column (0: a turn's own text). In a
        scope of fewer than `min_docs` documents the terms may go uncounted (0); counts are
        exact past `above` too, and as the scope is now whatever `drift` allows (the Protocol
        allows less).

        Terms are index terms (text.index_term). The lexical cache counts them exactly, from
        its postings; else FTS5 does: a `count(*)` per term with the scope's token ANDed in."""
        token = scope_token(scope.user_id, scope.agent_id)
        with self._lock:
            known = self.lexical.scope_documents(corpus, token, terms, column)
            if known is not None:
                return known
            fts = _FTS[corpus]
            scoped = f'scope : "{token}"'
            name = None if column is None else lexindex.COLUMNS[corpus][1][column]

            def count(term: str) -> int:
                if not term.strip():
                    return 0
                if self.lexical.tokenizer.query(term) == [term]:
                    within = "" if name is None else f"{name} : "
                    return int(self._q(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?",
                                       (f"{scoped} AND {within}{lexindex.match_of([term])}",))[0][0])
                # a query term is stemmed again, and porter's stem of a stem may differ
                # ("coffee" → "coffe" → "coff"): find the stored term itself in fts5vocab
                self._conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{fts}_instance "
                                   f"USING fts5vocab(main, {fts}, instance)")
                return int(self._q(f"SELECT count(DISTINCT doc) FROM temp.{fts}_instance WHERE term = ? "
                                   f"AND (? IS NULL OR col = ?) AND doc IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)",
                                   (term, name, name, scoped))[0][0])

            total = int(self._q(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?", (scoped,))[0][0])
            return {t: count(t) if total >= min_docs else 0 for t in terms}, total

    def _index(self, corpus: Corpus, rowid: int, *columns: str) -> None:
        fts = _FTS[corpus]
        marks = ", ".join("?" * len(columns))
        names = "body, context" if len(columns) == 2 else "body"
        with self.transaction():  # the row and its change-log entry (lexindex) commit together
            self._conn.execute(f"DELETE FROM {fts} WHERE rowid = ?", (rowid,))
            owner = self._conn.execute(f"SELECT user_id, agent_id FROM {corpus} WHERE rowid = ?", (rowid,)).fetchall()[0]
            self._conn.execute(
                f"INSERT INTO {fts}(rowid, {names}, scope) VALUES (?, {marks}, ?)",
                (rowid, *[index_text(c) for c in columns], scope_token(str(owner[0]), str(owner[1]))),
            )
            lexindex.record(self._conn, corpus, [rowid], "put")

    def _unindex(self, corpus: Corpus, rowid: int) -> None:
        self._conn.execute(f"DELETE FROM {_FTS[corpus]} WHERE rowid = ?", (rowid,))
        lexindex.record(self._conn, corpus, [rowid], "del")
        if self._vector_dims is not None:
            owner = self._conn.execute(f"SELECT user_id, agent_id FROM {corpus} WHERE rowid = ?", (rowid,)).fetchall()
            self._conn.execute(f"DELETE FROM vec_{corpus} WHERE rowid = ?", (rowid,))
            gone = [rowid] if self._conn.changes() else []
            if corpus == "turns":
                gone += self._drop_passages(rowid)
            if owner and gone:
                vindex.record(self._conn, corpus, Scope(user_id=owner[0][0], agent_id=owner[0][1]), gone, "del", -len(gone))

    # ---- forgetting (forget.py decides, store/erase.py removes) -----------------------

    def _drop_rows(self, corpus: Corpus, user_id: str, rows: Sequence[tuple[int, str]]) -> int:
        """Delete rows [(rowid, agent_id)] of the user with their full-text and vector entries,
        in the caller's transaction; returns how many."""
        ids = [r for r, _ in rows]
        if not ids:
            return 0
        self._conn.executemany(f"DELETE FROM {_FTS[corpus]} WHERE rowid = ?", [(r,) for r in ids])
        lexindex.record(self._conn, corpus, ids, "del")
        if self._vector_dims is not None:
            gone: dict[str, list[int]] = {}
            for r, agent in rows:
                self._conn.execute(f"DELETE FROM vec_{corpus} WHERE rowid = ?", (r,))
                if self._conn.changes():
                    gone.setdefault(agent, []).append(r)
                if corpus == "turns":
                    gone.setdefault(agent, []).extend(self._drop_passages(r))
            for agent, rs in gone.items():
                vindex.record(self._conn, corpus, Scope(user_id=user_id, agent_id=agent), rs, "del", -len(rs))
        self._conn.executemany(f"DELETE FROM {corpus} WHERE rowid = ?", [(r,) for r in ids])
        return len(ids)

    def turns_by_id(self, scope: Scope, turn_ids: Sequence[str]) -> list[Turn]:
        """The scope's turns with these ids (those that exist), in session order."""
        return [turn_row(r) for r in self._q(
            f"SELECT {TURN_COLS}, rowid FROM turns WHERE user_id = ? AND agent_id = ? "
            "AND id IN (SELECT value FROM json_each(?)) ORDER BY session_id, seq",
            (scope.user_id, scope.agent_id, json.dumps(list(turn_ids))))]

    def scope_texts(self, user_id: str, agent_id: str | None) -> list[str]:
        """Every text of a scope (every scope of the user when `agent_id` is None) that may
        have an embedding-cache entry: memories, turns, episodes, and the audit's contents."""
        where, params = erase.scope_where(user_id, agent_id)
        texts = [str(r[0]) for table, col in (("memories", "content"), ("turns", "content"), ("episodes", "summary"))
                 for r in self._q(f"SELECT {col} FROM {table} WHERE {where}", params)]
        texts += [str(r[0]) for r in self._q(
            "SELECT json_extract(snap, '$.content') FROM (SELECT before AS snap FROM memory_events WHERE "
            f"{where} UNION ALL SELECT after FROM memory_events WHERE {where}) WHERE json_valid(snap) "
            "AND json_type(snap, '$.content') = 'text'", (*params, *params))]
        return list(dict.fromkeys(texts))

    def delete_turns(self, scope: Scope, turn_ids: Sequence[str]) -> list[tuple[str, int]]:
        """Delete the scope's turns with these ids, their full-text and vector entries;
        returns (session_id, seq) of each one deleted."""
        with self.transaction():
            found = self._q(
                "SELECT rowid, session_id, seq FROM turns WHERE user_id = ? AND agent_id = ? "
                "AND id IN (SELECT value FROM json_each(?))",
                (scope.user_id, scope.agent_id, json.dumps(list(turn_ids))))
            self._drop_rows("turns", scope.user_id, [(int(r[0]), scope.agent_id) for r in found])
            erase.mark_pending(self._conn)
        return [(str(r[1]), int(r[2])) for r in found]

    def delete_session(self, scope: Scope, session_id: str) -> dict[str, int]:
        """Delete a session with its turns, episodes and extraction jobs; returns counts."""
        extra = " AND session_id = ?"
        with self.transaction():
            counts = {corpus: self._drop_rows(corpus, scope.user_id, erase.rowids_of(
                self._conn, corpus, scope.user_id, scope.agent_id, extra, (session_id,)))
                for corpus in ("turns", "episodes")}
            for table in ("extraction_jobs", "sessions"):
                key = "session_id" if table == "extraction_jobs" else "id"
                counts[table] = self._x(f"DELETE FROM {table} WHERE user_id = ? AND agent_id = ? AND {key} = ?",
                                        (scope.user_id, scope.agent_id, session_id))
            # the session's files and its persisted events go with it (those that happened)
            for table, key, value in (("attachments", "session_id", session_id),
                                      ("events", "subject", f"session:{session_id}")):
                n = self._x(f"DELETE FROM {table} WHERE user_id = ? AND agent_id = ? AND {key} = ?",
                            (scope.user_id, scope.agent_id, value))
                if n:
                    counts[table] = n
            erase.mark_pending(self._conn)
        return counts

    def delete_scope(self, user_id: str, agent_id: str | None) -> tuple[dict[str, int], list[Scope]]:
        """Delete every row of a scope (every scope of the user when `agent_id` is None), in
        every table that has a user_id column; returns (rows per table, the scopes found)."""
        with self.transaction():
            counts: dict[str, int] = {}
            agents: set[str] = set()
            for corpus in _FTS:
                rows = erase.rowids_of(self._conn, corpus, user_id, agent_id)
                agents.update(a for _, a in rows)
                counts[corpus] = self._drop_rows(corpus, user_id, rows)  # type: ignore[arg-type]
            where, params = erase.scope_where(user_id, agent_id)
            agents.update(str(r[0]) for r in self._q(f"SELECT agent_id FROM vector_scopes WHERE {where}", params))
            counts.update(erase.delete_scope_rows(self._conn, user_id, agent_id))
            erase.mark_pending(self._conn)
        return counts, [Scope(user_id=user_id, agent_id=a) for a in sorted(agents)]

    def scrub_events(self, scope: Scope, memory_id: str, reason: str) -> list[str]:
        """Make the memory's audit rows content-free tombstones (kind, actor and time stay);
        returns the contents they held, so their embedding-cache entries can go too."""
        with self.transaction():
            texts: list[str] = []
            for before, after in self._q(
                "SELECT before, after FROM memory_events WHERE user_id = ? AND agent_id = ? AND memory_id = ?",
                (scope.user_id, scope.agent_id, memory_id),
            ):
                for snap in (before, after):
                    content = json.loads(snap).get("content") if snap else None
                    if isinstance(content, str):
                        texts.append(content)
            self._x("UPDATE memory_events SET before = NULL, after = NULL, reason = ? "
                    "WHERE user_id = ? AND agent_id = ? AND memory_id = ?",
                    (reason, scope.user_id, scope.agent_id, memory_id))
        return list(dict.fromkeys(texts))

    def cache_forget(self, hashes: Sequence[str]) -> int:
        """Drop embedding-cache entries of these content hashes, for every model."""
        with self.transaction():
            # the key is (model, hash): each model's entry is one seek (by hash alone, a scan)
            models = [r[0] for r in self._q(
                "WITH RECURSIVE m(model) AS (SELECT MIN(model) FROM embedding_cache UNION ALL "
                "SELECT (SELECT MIN(model) FROM embedding_cache WHERE model > m.model) FROM m "
                "WHERE m.model IS NOT NULL) SELECT model FROM m WHERE model IS NOT NULL")]
            return sum(self._x("DELETE FROM embedding_cache WHERE model = ? AND hash = ?", (model, h))
                       for model in models for h in dict.fromkeys(hashes))

    def forget_files(self, corpora: Sequence[Corpus], scopes: Sequence[Scope] = ()) -> None:
        """After a forgetting commit: remove cache files that may hold its texts (and the
        vector caches of `scopes`), temp files of dead writers, and the old pages in the WAL."""
        with self._lock:
            erase.unlink_caches(self.path.parent, self.path.stem, corpora)
            self._ann.forget([(s.user_id, s.agent_id) for s in scopes])
            with self.transaction():
                if "turns" in corpora and self._secure_delete:
                    erase.optimize_turns(self._conn)
                erase.done_pending(self._conn)
            if self._depth == 0:
                erase.checkpoint(self._conn, self._busy_timeout_ms)

    def mark_forgetting(self) -> None:
        """Count a forgetting call in the caller's transaction, until its `forget_files`."""
        with self.transaction():
            erase.mark_pending(self._conn)

    # ---- sessions ---------------------------------------------------------------------

    def get_session(self, scope: Scope, session_id: str) -> Session | None:
        rows = self._q(
            "SELECT id, user_id, agent_id, started_at, ended_at, summary, message_count, "
            "extraction_count, metadata FROM sessions WHERE user_id = ? AND agent_id = ? AND id = ?",
            (scope.user_id, scope.agent_id, session_id),
        )
        return session_row(rows[0]) if rows else None

    def list_sessions(self, scope: Scope, limit: int = 100) -> list[Session]:
        rows = self._q(
            "SELECT id, user_id, agent_id, started_at, ended_at, summary, message_count, "
            "extraction_count, metadata FROM sessions WHERE user_id = ? AND agent_id = ? "
            "ORDER BY started_at DESC LIMIT ?",
            (scope.user_id, scope.agent_id, limit),
        )
        return [session_row(r) for r in rows]

    def put_session(self, session: Session) -> None:
        self._x(
            "INSERT INTO sessions(user_id, agent_id, id, started_at, ended_at, summary, message_count, "
            "extraction_count, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(user_id, agent_id, id) DO UPDATE SET started_at = excluded.started_at, "
            "ended_at = excluded.ended_at, summary = excluded.summary, "
            "message_count = excluded.message_count, extraction_count = excluded.extraction_count, "
            "metadata = excluded.metadata",
            (session.user_id, session.agent_id, session.id, ts(session.started_at), ts(session.ended_at),
             session.summary, session.message_count, session.extraction_count, to_json(session.metadata)),
        )

    # ---- turns ------------------------------------------------------------------------

    def next_seq(self, scope: Scope, session_id: str) -> int:
        rows = self._q(
            "SELECT COALESCE(MAX(seq), 0) FROM turns WHERE user_id = ? AND agent_id = ? AND session_id = ?",
            (scope.user_id, scope.agent_id, session_id),
        )
        return int(rows[0][0]) + 1

    def insert_turn(self, turn: Turn, import_key: str | None = None) -> int:
        with self._lock:
            self._conn.execute(
                f"INSERT INTO turns({TURN_COLS}, import_key) VALUES ({', '.join('?' * 14)})",
                (turn.id, turn.user_id, turn.agent_id, turn.session_id, turn.seq, turn.role, turn.content,
                 turn.name, to_json(turn.tool_calls) if turn.tool_calls else None, ts(turn.created_at),
                 turn.token_count, turn.archived, to_json(turn.metadata), import_key),
            )
            rowid = self._conn.last_insert_rowid()
            self._index("turns", rowid, turn_search_text(turn.content, turn.tool_calls, turn.role, turn.name), "")
            return rowid

    def insert_turns(self, turns: Sequence[Turn], import_keys: Sequence[str | None] | None = None) -> list[int]:
        """`insert_turn` of each, in order (in the caller's transaction): [rowid]."""
        return [self.insert_turn(t, import_keys[i] if import_keys else None) for i, t in enumerate(turns)]

    def turn_import_keys(self, scope: Scope, keys: Sequence[str]) -> set[str]:
        """Which of these import keys (see `insert_turn`) the scope's turns already hold."""
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            rows = self._q(
                f"SELECT import_key FROM turns WHERE user_id = ? AND agent_id = ? "
                f"AND import_key IN ({', '.join('?' * len(chunk))})",
                (scope.user_id, scope.agent_id, *chunk),
            )
            found.update(r[0] for r in rows)
        return found

    def set_turn_context(self, rowid: int, body: str, context: str) -> None:
        """Index a turn: `body` (its content) with its tool calls' words, and `context`."""
        with self._lock:
            row = self._q("SELECT tool_calls, role, name FROM turns WHERE rowid = ?", (rowid,))
            if row and (row[0][0] or row[0][1] == "tool"):
                body = turn_search_text(body, json.loads(row[0][0]) if row[0][0] else None, row[0][1], row[0][2])
            self._index("turns", rowid, body, context)

    def set_turn_contexts(self, items: Sequence[tuple[int, str, str]]) -> None:
        """`set_turn_context` of each (rowid, body, context)."""
        for rowid, body, context in items:
            self.set_turn_context(rowid, body, context)

    def turn_rows(self, scope: Scope, session_id: str, seq_from: int, seq_to: int) -> list[tuple[int, int, str]]:
        """[(rowid, seq, text)] of a session's turns in a seq range, for neighbour context."""
        rows = self._q(
            "SELECT rowid, seq, content FROM turns WHERE user_id = ? AND agent_id = ? AND session_id = ? "
            "AND seq BETWEEN ? AND ? ORDER BY seq",
            (scope.user_id, scope.agent_id, session_id, seq_from, seq_to),
        )
        return [(int(r[0]), int(r[1]), r[2]) for r in rows]

    def session_rows(self, corpus: Corpus, scope: Scope, session_id: str, limit: int) -> list[int]:
        """Rowids of a session's rows, at most `limit`: its turns in order, its episodes, the
        memories it was the source of."""
        rows = self._q(session_rows_sql(corpus, "?"), (scope.user_id, scope.agent_id, session_id, limit))
        return [int(r[0]) for r in rows]

    def turn_windows(self, scope: Scope, rowids: Sequence[int], width: int) -> list[TurnPlace]:
        """Where the given turns and their neighbours within `width` (same session) sit; the
        given turns also with their length, whether they end in a question, their time,
        speaker and role.
        One query: neighbours come from the (scope, session, seq) index alone."""
        out: dict[int, TurnPlace] = {}
        for chunk in _chunks(list(rowids), 500):
            marks = ",".join("?" * len(chunk))
            for r in self._q(
                "SELECT n.rowid, n.session_id, n.seq, CASE WHEN n.rowid = c.rowid THEN length(n.content) END, "
                "CASE WHEN n.rowid = c.rowid THEN substr(rtrim(n.content), -1) IN ('?', '？') END, "
                "CASE WHEN n.rowid = c.rowid THEN n.created_at END, "
                "CASE WHEN n.rowid = c.rowid THEN n.name END, CASE WHEN n.rowid = c.rowid THEN n.role END "
                "FROM turns c JOIN turns n ON n.user_id = c.user_id "
                "AND n.agent_id = c.agent_id AND n.session_id = c.session_id "
                "AND n.seq BETWEEN c.seq - ? AND c.seq + ? "
                f"WHERE +c.user_id = ? AND +c.agent_id = ? AND c.rowid IN ({marks})",
                (width, width, scope.user_id, scope.agent_id, *chunk),
            ):
                if r[3] is not None or int(r[0]) not in out:  # a given turn's own row has its facts
                    out[int(r[0])] = TurnPlace(int(r[0]), r[1], int(r[2]), r[3] or 0, bool(r[4]),
                                               None if r[5] is None else float(r[5]), r[6], r[7])
        return list(out.values())

    def get_turns(
        self,
        scope: Scope,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = False,
        rowids: Sequence[int] | None = None,
        after_seq: int | None = None,
    ) -> list[Turn]:
        where: list[str] = ["user_id = ?", "agent_id = ?"]
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if after_seq is not None:  # a session's turns past one: read from the (session, seq) index
            where.append("seq > ?")
            params.append(int(after_seq))
        if since is not None:
            where.append("created_at >= ?")
            params.append(ts(since))
        if until is not None:
            where.append("created_at <= ?")
            params.append(ts(until))
        if rowids is not None:
            if not rowids:
                return []
            where.append(f"rowid IN ({','.join('?' * len(rowids))})")
            params.extend(rowids)
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {TURN_COLS}, rowid FROM turns WHERE {' AND '.join(where)} ORDER BY created_at {order}, seq {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [turn_row(r) for r in self._q(sql, params)]

    def turns_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Turn]:
        return self._by_rowid("turns", TURN_COLS, turn_row, scope, rowids)

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

    def set_turns_archived(self, scope: Scope, turn_ids: Sequence[str], state: str) -> None:
        with self.transaction():
            for tid in turn_ids:
                self._conn.execute(
                    "UPDATE turns SET archived = ? WHERE user_id = ? AND agent_id = ? AND id = ?",
                    (state, scope.user_id, scope.agent_id, tid),
                )

    # ---- memories ---------------------------------------------------------------------

    def insert_memory(self, memory: MemoryRecord) -> int:
        with self._lock:
            self._conn.execute(
                f"INSERT INTO memories({MEMORY_COLS}) VALUES ({', '.join('?' * 21)})", memory_params(memory)
            )
            rowid = self._conn.last_insert_rowid()
            self._index("memories", rowid, memory.content)
            return rowid

    def insert_memories(self, memories: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> list[int]:
        """Insert many memories in one transaction (imports, benchmarks); returns their rowids.

        One `executemany` per table. With `vectors` (one row per memory, of the open
        embedder's width) they are stored as embedded; without, they wait for the indexer."""
        if not memories:
            return []
        vecs = None
        if vectors is not None:
            vecs = np.ascontiguousarray(vectors, dtype=np.float32)
            if self._vector_dims is None or vecs.shape != (len(memories), self._vector_dims):
                raise ValidationError(
                    "vectors", f"expected shape ({len(memories)}, {self._vector_dims}), got {vecs.shape}")
        with self.transaction():
            start = int(self._q("SELECT COALESCE(MAX(rowid), 0) FROM memories")[0][0]) + 1
            rowids = list(range(start, start + len(memories)))
            self._conn.executemany(
                f"INSERT INTO memories(rowid, {MEMORY_COLS}, embedded) VALUES (?, {', '.join('?' * 21)}, ?)",
                [(r, *memory_params(m), int(vecs is not None)) for r, m in zip(rowids, memories, strict=True)],
            )
            self._conn.executemany(
                "INSERT INTO memories_fts(rowid, body, scope) VALUES (?, ?, ?)",
                [(r, index_text(m.content), scope_token(m.user_id, m.agent_id))
                 for r, m in zip(rowids, memories, strict=True)],
            )
            lexindex.record(self._conn, "memories", rowids, "put")
            if vecs is not None:
                # grouped by scope: vec0 keeps a chunk per user, and each insert into a cold
                # chunk walks its blob (interleaved users: ~2.5k rows/s, grouped: ~12k)
                order = sorted(range(len(memories)), key=lambda i: (memories[i].user_id, memories[i].agent_id))
                self._conn.executemany(
                    "INSERT INTO vec_memories(rowid, user_id, agent_id, embedding) VALUES (?, ?, ?, ?)",
                    [(rowids[i], memories[i].user_id, memories[i].agent_id, vecs[i].tobytes()) for i in order],
                )
                by_scope: dict[Scope, list[int]] = {}
                for r, m in zip(rowids, memories, strict=True):
                    by_scope.setdefault(Scope(user_id=m.user_id, agent_id=m.agent_id), []).append(r)
                for scope, rows in by_scope.items():
                    vindex.record(self._conn, "memories", scope, rows, "put", len(rows))
        return rowids

    def update_memory(self, memory: MemoryRecord, *, content_changed: bool) -> int:
        """Write every field of `memory`; returns its rowid. Reindexes when content changed."""
        with self._lock:
            params = memory_params(memory)
            self._conn.execute(
                "UPDATE memories SET content = ?, category = ?, kind = ?, score = ?, confidence = ?, "
                "subject = ?, predicate = ?, created_at = ?, updated_at = ?, last_activated = ?, "
                "activation_count = ?, expires_at = ?, source = ?, verified = ?, source_session = ?, "
                "status = ?, pinned = ?, metadata = ? WHERE user_id = ? AND agent_id = ? AND id = ?",
                (*params[3:], memory.user_id, memory.agent_id, memory.id),
            )
            rowid = self.memory_rowid(Scope(user_id=memory.user_id, agent_id=memory.agent_id), memory.id)
            if content_changed:
                self._index("memories", rowid, memory.content)
                self._conn.execute("UPDATE memories SET embedded = 0 WHERE rowid = ?", (rowid,))
            return rowid

    def memory_rowid(self, scope: Scope, memory_id: str) -> int:
        rows = self._q(
            "SELECT rowid FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?",
            (scope.user_id, scope.agent_id, memory_id),
        )
        return int(rows[0][0]) if rows else -1

    def get_memory(self, scope: Scope, memory_id: str) -> MemoryRecord | None:
        rows = self._q(
            f"SELECT {MEMORY_COLS} FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?",
            (scope.user_id, scope.agent_id, memory_id),
        )
        return memory_row(rows[0]) if rows else None

    def memories_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, MemoryRecord]:
        with self._lock:  # a large table's cache may hold whole records (store/memcache.py)
            cached = self.memcache.ready()
            rows = None if cached is None else cached.record_rows(cached.scope_id(scope.user_id, scope.agent_id), rowids)
        if rows is not None:
            return {r: memory_row(row) for r, row in rows.items()}
        return self._by_rowid("memories", MEMORY_COLS, memory_row, scope, rowids)

    def memory_facts(self, scope: Scope, rowids: Sequence[int]) -> MemoryFacts:
        with self._lock:  # a large table's cache holds them (store/memcache.py)
            cached = self.memcache.ready()
            if cached is not None:
                return cached.facts(cached.scope_id(scope.user_id, scope.agent_id), rowids)
        found = self._by_rowid(  # the columns of the memories_scope index (m007)
            "memories", "score, last_activated, expires_at, created_at, status, category, source_session",
            tuple, scope, rowids, covered=True)
        return MemoryFacts.of_rows([(r, *found[r][:-1]) for r in dict.fromkeys(rowids) if r in found])

    def list_memories(
        self,
        scope: Scope,
        *,
        category: str | None = None,
        status: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        order: str = "score DESC, updated_at DESC",
    ) -> list[MemoryRecord]:
        where: list[str] = ["user_id = ?", "agent_id = ?"]
        params: list[Any] = [scope.user_id, scope.agent_id]
        for col, value in (("category", category), ("status", status), ("source_session", session_id)):
            if value is not None:
                where.append(f"{col} = ?")
                params.append(value)
        if since is not None:
            where.append("created_at >= ?")
            params.append(ts(since))
        if until is not None:
            where.append("created_at <= ?")
            params.append(ts(until))
        sql = f"SELECT {MEMORY_COLS} FROM memories WHERE {' AND '.join(where)} ORDER BY {order}"
        sql += f" LIMIT {int(limit) if limit is not None else -1} OFFSET {int(offset)}"
        return [memory_row(r) for r in self._q(sql, params)]

    def delete_memory(self, scope: Scope, memory_id: str) -> bool:
        with self.transaction():
            rowid = self.memory_rowid(scope, memory_id)
            if rowid < 0:
                return False
            self._unindex("memories", rowid)
            self._conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            return True

    def count_memories(self, scope: Scope, status: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND agent_id = ?"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if status:
            sql += " AND status = ?"
            params.append(status)
        return int(self._q(sql, params)[0][0])

    # ---- events -----------------------------------------------------------------------

    def add_event(
        self, scope: Scope, memory_id: str, kind: str, before: dict[str, Any] | None,
        after: dict[str, Any] | None, actor: str, reason: str, at: datetime,
    ) -> None:
        self._x(
            "INSERT INTO memory_events(memory_id, user_id, agent_id, kind, before, after, actor, reason, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (memory_id, scope.user_id, scope.agent_id, kind, to_json(before) if before is not None else None,
             to_json(after) if after is not None else None, actor, reason, ts(at)),
        )

    def events(self, scope: Scope, memory_id: str | None = None, limit: int = 1000) -> list[MemoryEvent]:
        sql = ("SELECT id, memory_id, user_id, agent_id, kind, before, after, actor, reason, created_at "
               "FROM memory_events WHERE user_id = ? AND agent_id = ?")
        params: list[Any] = [scope.user_id, scope.agent_id]
        if memory_id is not None:
            sql += " AND memory_id = ?"
            params.append(memory_id)
        sql += " ORDER BY id LIMIT ?"
        params.append(limit)
        return [
            MemoryEvent(
                id=r[0], memory_id=r[1], user_id=r[2], agent_id=r[3], kind=r[4],
                before=json.loads(r[5]) if r[5] else None, after=json.loads(r[6]) if r[6] else None,
                actor=r[7], reason=r[8], created_at=dt_(r[9]),
            )
            for r in self._q(sql, params)
        ]

    # ---- episodes ---------------------------------------------------------------------

    def insert_episode(self, episode: Episode) -> int:
        with self._lock:
            self._conn.execute(
                f"INSERT INTO episodes({EPISODE_COLS}) VALUES ({', '.join('?' * 13)})",
                (episode.id, episode.user_id, episode.agent_id, episode.session_id, episode.summary,
                 episode.goal, episode.outcome, to_json(episode.entities), to_json(episode.tools_used),
                 ts(episode.started_at), ts(episode.ended_at), episode.score, ts(episode.created_at)),
            )
            rowid = self._conn.last_insert_rowid()
            text = " ".join([episode.summary, episode.goal, episode.outcome, " ".join(episode.entities)])
            self._index("episodes", rowid, text)
            return rowid

    def list_episodes(self, scope: Scope, *, session_id: str | None = None, limit: int = 100) -> list[Episode]:
        sql = f"SELECT {EPISODE_COLS} FROM episodes WHERE user_id = ? AND agent_id = ?"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        sql += " ORDER BY ended_at DESC LIMIT ?"
        params.append(limit)
        return [episode_row(r) for r in self._q(sql, params)]

    def episodes_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Episode]:
        return self._by_rowid("episodes", EPISODE_COLS, episode_row, scope, rowids)

    def delete_episode(self, scope: Scope, episode_id: str) -> bool:
        with self.transaction():
            rows = self._q(
                "SELECT rowid FROM episodes WHERE user_id = ? AND agent_id = ? AND id = ?",
                (scope.user_id, scope.agent_id, episode_id),
            )
            if not rows:
                return False
            self._unindex("episodes", int(rows[0][0]))
            self._conn.execute("DELETE FROM episodes WHERE rowid = ?", (rows[0][0],))
            return True

    # ---- scratchpad -------------------------------------------------------------------

    def get_scratchpad(self, scope: Scope) -> Scratchpad | None:
        rows = self._q(
            "SELECT current_focus, recent_tasks, updated_at FROM scratchpad WHERE user_id = ? AND agent_id = ?",
            (scope.user_id, scope.agent_id),
        )
        if not rows:
            return None
        return Scratchpad(user_id=scope.user_id, agent_id=scope.agent_id, current_focus=rows[0][0],
                          recent_tasks=json.loads(rows[0][1]), updated_at=dt_(rows[0][2]))

    def put_scratchpad(self, pad: Scratchpad) -> None:
        self._x(
            "INSERT INTO scratchpad(user_id, agent_id, current_focus, recent_tasks, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(user_id, agent_id) DO UPDATE SET current_focus = excluded.current_focus, "
            "recent_tasks = excluded.recent_tasks, updated_at = excluded.updated_at",
            (pad.user_id, pad.agent_id, pad.current_focus, to_json(pad.recent_tasks), ts(pad.updated_at)),
        )

    # ---- extraction jobs --------------------------------------------------------------

    def enqueue_job(self, scope: Scope, session_id: str, first_seq: int, last_seq: int, at: datetime) -> bool:
        """Queue a turn range; False when that exact range was queued before (idempotency)."""
        return self._x(
            "INSERT OR IGNORE INTO extraction_jobs(user_id, agent_id, session_id, first_seq, last_seq, "
            "status, attempts, next_at, created_at) VALUES (?, ?, ?, ?, ?, 'queued', 0, ?, ?)",
            (scope.user_id, scope.agent_id, session_id, first_seq, last_seq, ts(at), ts(at)),
        ) > 0

    def jobs(self, *, scope: Scope | None = None, due_before: datetime | None = None,
             status: Sequence[str] = ("queued",), limit: int = 100) -> list[ExtractionJob]:
        where = [f"status IN ({','.join('?' * len(status))})"]
        params: list[Any] = list(status)
        if scope is not None:
            where += ["user_id = ?", "agent_id = ?"]
            params += [scope.user_id, scope.agent_id]
        if due_before is not None:
            where.append("next_at <= ?")
            params.append(ts(due_before))
        rows = self._q(
            "SELECT id, user_id, agent_id, session_id, first_seq, last_seq, status, attempts, next_at, "
            f"last_error, created_at FROM extraction_jobs WHERE {' AND '.join(where)} ORDER BY next_at, id LIMIT ?",
            (*params, limit),
        )
        return [
            ExtractionJob(id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], first_seq=r[4], last_seq=r[5],
                          status=r[6], attempts=r[7], next_at=dt_(r[8]), last_error=r[9], created_at=dt_(r[10]))
            for r in rows
        ]

    def claim_job(self, job_id: int) -> bool:
        """Mark a queued job running; False when another worker got it first."""
        return self._x("UPDATE extraction_jobs SET status = 'running' WHERE id = ? AND status = 'queued'", (job_id,)) > 0

    def update_job(self, job_id: int, *, status: str, attempts: int, next_at: datetime, last_error: str | None) -> None:
        self._x(
            "UPDATE extraction_jobs SET status = ?, attempts = ?, next_at = ?, last_error = ? WHERE id = ?",
            (status, attempts, ts(next_at), last_error, job_id),
        )

    # ---- stats ------------------------------------------------------------------------

    # ---- attachments (seed 002 §8) and persisted events (seed 004 §11.3) --------------------

    _ATT_COLS = ("id, user_id, agent_id, session_id, name, media_type, description, uri, size, sha256, "
                 "created_at, expires_at, metadata")

    def put_attachment(self, att: Attachment) -> None:
        self._x(f"INSERT INTO attachments({self._ATT_COLS}, data) VALUES ({', '.join('?' * 14)})",
                (att.id, att.user_id, att.agent_id, att.session_id, att.name, att.media_type, att.description,
                 att.uri, att.size, att.sha256, ts(att.created_at), ts(att.expires_at), to_json(att.metadata),
                 att.data))

    def get_attachment(self, scope: Scope, attachment_id: str) -> Attachment | None:
        rows = self._q(f"SELECT {self._ATT_COLS}, data FROM attachments WHERE user_id = ? AND agent_id = ? AND id = ?",
                       (scope.user_id, scope.agent_id, attachment_id))
        return _attachment(rows[0], with_data=True) if rows else None

    def list_attachments(self, scope: Scope, *, session_id: str | None = None,
                         expired_at: datetime | None = None) -> list[Attachment]:
        """The scope's attachments without their bytes, oldest first: a session's, or those
        expired at `expired_at`."""
        sql = f"SELECT {self._ATT_COLS} FROM attachments WHERE user_id = ? AND agent_id = ?"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if expired_at is not None:
            sql += " AND expires_at IS NOT NULL AND expires_at <= ?"
            params.append(ts(expired_at))
        return [_attachment(r, with_data=False) for r in self._q(sql + " ORDER BY created_at, rowid", params)]

    def delete_attachments(self, scope: Scope, attachment_ids: Sequence[str]) -> int:
        with self.transaction():
            n = sum(self._x("DELETE FROM attachments WHERE user_id = ? AND agent_id = ? AND id = ?",
                            (scope.user_id, scope.agent_id, i)) for i in dict.fromkeys(attachment_ids))
            if n:
                erase.mark_pending(self._conn)  # the bytes leave the file at the next checkpoint
        return n

    def add_bus_event(self, scope: Scope, type_: str, subject: str, source: str, payload: dict[str, Any],
                      at: datetime, status: str, actions: list[dict[str, Any]]) -> int:
        with self._lock:
            self._conn.execute(
                "INSERT INTO events(user_id, agent_id, type, subject, source, payload, at, status, actions) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (scope.user_id, scope.agent_id, type_, subject, source, to_json(payload), ts(at), status,
                 to_json(actions)))
            return int(self._conn.last_insert_rowid())

    def update_bus_event(self, scope: Scope, event_id: int, status: str, actions: list[dict[str, Any]]) -> None:
        self._x("UPDATE events SET status = ?, actions = ? WHERE user_id = ? AND agent_id = ? AND id = ?",
                (status, to_json(actions), scope.user_id, scope.agent_id, event_id))

    def bus_events(self, scope: Scope, *, status: str | None = None, event_id: int | None = None,
                   limit: int = 1000) -> list[StoredEvent]:
        """The scope's persisted events, newest first."""
        sql = ("SELECT id, user_id, agent_id, type, subject, source, payload, at, status, actions FROM events "
               "WHERE user_id = ? AND agent_id = ?")
        params: list[Any] = [scope.user_id, scope.agent_id]
        for col, value in (("status", status), ("id", event_id)):
            if value is not None:
                sql += f" AND {col} = ?"
                params.append(value)
        rows = self._q(sql + f" ORDER BY at DESC, id DESC LIMIT {int(limit)}", params)
        return [StoredEvent(id=r[0], user_id=r[1], agent_id=r[2], type=r[3], subject=r[4], source=r[5],
                            payload=json.loads(r[6]), at=dt_(r[7]), status=r[8], actions=json.loads(r[9]))
                for r in rows]

    def delete_bus_events(self, scope: Scope, *, before: datetime | None = None, subject: str | None = None) -> int:
        """Delete the scope's persisted events older than `before` (pending ones stay) or about `subject`."""
        if before is not None:
            return self._x("DELETE FROM events WHERE user_id = ? AND agent_id = ? AND at < ? AND status != 'pending'",
                           (scope.user_id, scope.agent_id, ts(before)))
        return self._x("DELETE FROM events WHERE user_id = ? AND agent_id = ? AND subject = ?",
                       (scope.user_id, scope.agent_id, subject))

    def stats(self, scope: Scope) -> dict[str, Any]:
        u = (scope.user_id, scope.agent_id)
        one = lambda sql: int(self._q(sql, u)[0][0])  # noqa: E731
        return {
            "memories": one("SELECT COUNT(*) FROM memories WHERE user_id = ? AND agent_id = ?"),
            "memories_by_category": dict(self._q(
                "SELECT category, COUNT(*) FROM memories WHERE user_id = ? AND agent_id = ? GROUP BY category", u)),
            "memories_by_status": dict(self._q(
                "SELECT status, COUNT(*) FROM memories WHERE user_id = ? AND agent_id = ? GROUP BY status", u)),
            "turns": one("SELECT COUNT(*) FROM turns WHERE user_id = ? AND agent_id = ?"),
            "turns_unembedded": one("SELECT COUNT(*) FROM turns WHERE user_id = ? AND agent_id = ? AND embedded = 0"),
            "sessions": one("SELECT COUNT(*) FROM sessions WHERE user_id = ? AND agent_id = ?"),
            "episodes": one("SELECT COUNT(*) FROM episodes WHERE user_id = ? AND agent_id = ?"),
            "events": one("SELECT COUNT(*) FROM memory_events WHERE user_id = ? AND agent_id = ?"),
            "jobs_pending": one(
                "SELECT COUNT(*) FROM extraction_jobs WHERE user_id = ? AND agent_id = ? AND status IN ('queued','running')"),
            "db_path": str(self.path),
            "db_bytes": sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file()),
        }

    def scopes(self) -> list[Scope]:
        rows = self._q(
            "SELECT user_id, agent_id FROM memories UNION SELECT user_id, agent_id FROM turns "
            "UNION SELECT user_id, agent_id FROM extraction_jobs"
        )
        return [Scope(user_id=r[0], agent_id=r[1]) for r in rows]

    def raw_count(self, table: str, where: str = "1", params: Sequence[Any] = ()) -> int:
        """Row count of any table; for audits and tests of what is left behind."""
        return int(self._q(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)[0][0])


def _attachment(r: Sequence[Any], *, with_data: bool) -> Attachment:
    return Attachment(id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], name=r[4], media_type=r[5],
                      description=r[6], uri=r[7], size=r[8], sha256=r[9], created_at=dt_(r[10]),
                      expires_at=None if r[11] is None else dt_(r[11]), metadata=json.loads(r[12]),
                      data=bytes(r[13]) if with_data and r[13] is not None else None)


def _bm25_weights(corpus: Corpus, weights: Sequence[float]) -> list[float]:
    """bm25()'s column weights: the given ones for the text columns (1.0 where missing), 0 for the scope."""
    n_text = len(lexindex.COLUMNS[corpus][1])
    return [*[float(x) for x in list(weights)[:n_text]], *[1.0] * (n_text - len(weights)), 0.0]


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
