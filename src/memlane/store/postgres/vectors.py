"""The PostgreSQL store's vectors: a pgvector table per corpus (a cache of the rows), each
scope scanned exactly until it holds `ann_threshold` vectors, then searched through the
table's partial HNSW index; and the embedding cache."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.errors import BackendError
from memlane.models import Corpus, Scope
from memlane.store.pgschema import CORPORA, vector_indexes
from memlane.store.postgres.base import PostgresBase
from memlane.store.protocol import PASSAGE_BASE, PASSAGE_STRIDE, PASSAGES_PENDING, vector_owner
from memlane.store.shared import dots

log = logging.getLogger(__name__)


class PostgresVectors(PostgresBase):
    """Vectors and the embedding cache."""

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
                    for sql in vector_indexes(corpus):
                        self._x(sql)
                    self._x("DELETE FROM ann_pending WHERE corpus = %s", (corpus,))
                    self._x(f"UPDATE {corpus} SET embedded = 0")
                self.set_meta("vector_model", model_id)
                self.set_meta("vector_dims", str(dims))
            # turns whose passages wait behind every key (issue 34): found without a table scan;
            # looked up first, as CREATE INDEX IF NOT EXISTS locks the table against writers
            if self._q("SELECT to_regclass('turns_passages_pending')")[0][0] is None:
                self._x(f"CREATE INDEX IF NOT EXISTS turns_passages_pending ON turns(rowid) "
                        f"WHERE embedded = {PASSAGES_PENDING}")
        self._vector_dims = dims

    def reembed_long_turns(self, longer_than: int) -> None:
        """As SQLiteStore.reembed_long_turns."""
        self._x("UPDATE turns SET embedded = 0 WHERE embedded <> 0 AND char_length(content) > %s", (int(longer_than),))

    def set_passages_pending(self, rowids: Sequence[int]) -> None:
        """As SQLiteStore.set_passages_pending."""
        self._x(f"UPDATE turns SET embedded = {PASSAGES_PENDING} WHERE rowid = ANY(%s)", ([int(r) for r in rowids],))

    def pending_passages(self, limit: int) -> list[tuple[int, Scope, str]]:
        """As SQLiteStore.pending_passages."""
        rows = self._q(f"SELECT rowid, user_id, agent_id, content FROM turns WHERE embedded = {PASSAGES_PENDING} "
                       "ORDER BY rowid LIMIT %s", (int(limit),))
        return [(int(r[0]), Scope(user_id=r[1], agent_id=r[2]), r[3]) for r in rows]

    def put_vectors(self, corpus: Corpus, scope: Scope, rowids: Sequence[int], vectors: np.ndarray) -> None:
        with self.transaction():
            self._lock_scope(scope)
            in_graph = self._in_graph(corpus, scope)
            ann = in_graph and len(rowids) < self._tuning.defer_rows  # a bulk of them waits for the graph: `_defer`
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
                        (int(rowid), scope.user_id, scope.agent_id, np.asarray(vec, dtype=np.float32), ann))
                self._x(f"UPDATE {corpus} SET embedded = 1 WHERE rowid = %s", (owner,))
            if in_graph and not ann:
                self._defer(corpus, [scope])
            elif not in_graph:
                self._grow_ann(corpus, scope)

    def _insert_vectors(self, corpus: str, rowids: Sequence[int], owners: Sequence[tuple[str, str]],
                        vectors: np.ndarray) -> None:
        """New rows' vectors, in the caller's transaction, in one COPY. A scope in the HNSW
        graph takes a few of them into it at once; more (a bulk insert), or a scope reaching
        ann_threshold with them, wait for the graph (`_defer`)."""
        counts = Counter(owners)
        scopes = sorted(counts)
        state = self._q(
            f"SELECT EXISTS (SELECT 1 FROM vec_{corpus} WHERE ann AND user_id = s.u AND agent_id = s.a), "
            f"(SELECT count(*) FROM (SELECT 1 FROM vec_{corpus} WHERE user_id = s.u AND agent_id = s.a LIMIT %s) c) "
            "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY s(u, a, i) ORDER BY s.i",
            (self._ann_threshold, [u for u, _ in scopes], [a for _, a in scopes]))
        ann = {s: bool(r[0]) and counts[s] < self._tuning.defer_rows for s, r in zip(scopes, state, strict=True)}
        wait = [Scope(user_id=s[0], agent_id=s[1]) for s, r in zip(scopes, state, strict=True)
                if (bool(r[0]) and not ann[s]) or (not r[0] and int(r[1]) + counts[s] >= self._ann_threshold)]
        self._copy(f"vec_{corpus}", ("rowid", "user_id", "agent_id", "embedding", "ann"),
                   [(int(r), u, a, np.asarray(v, dtype=np.float32), ann[(u, a)])
                    for r, (u, a), v in zip(rowids, owners, vectors, strict=True)],
                   types=("int8", "text", "text", "vector", "bool"))
        if wait:
            self._defer(corpus, wait)

    def _drop_passages(self, rowids: Sequence[int]) -> None:
        """Delete the passage vectors of these turns, in the caller's transaction."""
        self._x("DELETE FROM vec_turns v USING unnest(%s::bigint[]) t(id) WHERE v.rowid BETWEEN "
                f"{PASSAGE_BASE} + t.id * {PASSAGE_STRIDE} + 1 AND {PASSAGE_BASE} + t.id * {PASSAGE_STRIDE} + "
                f"{PASSAGE_STRIDE - 1}", ([int(r) for r in rowids],))

    def _vector_count(self, corpus: str, scope: Scope) -> int:
        """The scope's vectors, counted up to ann_threshold (enough to decide exact or HNSW)."""
        return int(self._q(f"SELECT count(*) FROM (SELECT 1 FROM vec_{corpus} WHERE user_id = %s AND agent_id = %s "
                           "LIMIT %s) s", (scope.user_id, scope.agent_id, self._ann_threshold))[0][0])

    def _in_graph(self, corpus: str, scope: Scope) -> bool:
        """Whether the scope's vectors are in the HNSW graph: it has reached ann_threshold."""
        return bool(self._q(f"SELECT EXISTS (SELECT 1 FROM vec_{corpus} WHERE ann AND user_id = %s AND agent_id = %s)",
                            (scope.user_id, scope.agent_id))[0][0])

    def _grow_ann(self, corpus: str, scope: Scope) -> None:
        """A scope at ann_threshold vectors or more: its rows join the HNSW index, by
        `fold_pending` (thousands of graph inserts at once held this caller for seconds)."""
        if self._vector_count(corpus, scope) >= self._ann_threshold:
            self._defer(corpus, [scope])

    def _defer(self, corpus: str, scopes: Sequence[Scope]) -> None:
        """In the caller's transaction: these scopes have rows waiting for the graph, which
        searches scan exactly until `fold_pending` moves them in (after a commit; from the
        next store opened, after a crash)."""
        # an upsert that locks the row, not DO NOTHING: it waits for a folder holding the row,
        # which may be about to delete it as done (it never saw these rows), then inserts anew;
        # a folder never waits on a writer, so the two cannot deadlock
        self._many("INSERT INTO ann_pending(corpus, user_id, agent_id) VALUES (%s, %s, %s) "
                   "ON CONFLICT (corpus, user_id, agent_id) DO UPDATE SET user_id = excluded.user_id",
                   [(corpus, s.user_id, s.agent_id) for s in sorted(scopes, key=lambda s: (s.user_id, s.agent_id))])
        self._local.deferred = True

    def _committed_deferred(self) -> None:
        """Rows wait for the graph: a thread of this process moves them in, one at a time per
        process (others may run in other processes: `fold_pending` skips what they hold)."""
        with self._folder_guard:
            if self._closing.is_set():
                return
            if self._folder is not None and self._folder.is_alive():
                self._fold_again = True
                return
            self._fold_again = False
            self._folder = threading.Thread(target=self._fold_loop, name="memlane-hnsw-fold", daemon=True)
            self._folder.start()

    def _fold_loop(self) -> None:
        while not self._closing.is_set():
            try:
                moved = self.fold_pending(self._tuning.fold_chunk)
            except BackendError as exc:  # the database went away: the next store opened resumes
                log.warning("moving vectors into the HNSW graph stopped: %s", exc)
                moved = 0
            if not moved:
                with self._folder_guard:
                    if not self._fold_again:
                        self._folder = None
                        return
                    self._fold_again = False

    def settle_vectors(self) -> None:
        """Move every vector waiting for the graph in now, in this thread, also those another
        process is moving (waited for): a bulk load's last step before timing searches."""
        while True:
            self.fold_pending()
            if not self._q("SELECT EXISTS (SELECT 1 FROM ann_pending)")[0][0]:
                return
            time.sleep(0.05)

    def fold_pending(self, rows: int = 0) -> int:
        """Move up to `rows` (0: every) vectors waiting for the HNSW graph into it, a chunk a
        transaction, any number of processes at once (rows and scopes taken `SKIP LOCKED`);
        returns how many moved. Each is one graph insert (~2-5 ms on 2 cores): what a bulk
        insert deferred."""
        moved = 0
        while not rows or moved < rows:
            chunk = self._tuning.fold_chunk if not rows else min(self._tuning.fold_chunk, rows - moved)
            with self.transaction():
                got = self._q("SELECT corpus, user_id, agent_id FROM ann_pending ORDER BY corpus, user_id, agent_id "
                              "LIMIT 1 FOR UPDATE SKIP LOCKED")
                if not got:
                    return moved
                corpus, u, a = got[0]
                n = self._x(f"UPDATE vec_{corpus} SET ann = true WHERE rowid IN (SELECT rowid FROM vec_{corpus} "
                            "WHERE NOT ann AND user_id = %s AND agent_id = %s ORDER BY rowid LIMIT %s "
                            "FOR UPDATE SKIP LOCKED)", (u, a, chunk))
                if n < chunk:
                    self._x("DELETE FROM ann_pending WHERE corpus = %s AND user_id = %s AND agent_id = %s",
                            (corpus, u, a))
            moved += n
        return moved

    def knn(self, corpus: Corpus, scope: Scope, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Nearest rows of this scope by cosine distance: [(rowid, distance)]. A scope under
        `ann_threshold` vectors is scanned exactly (its rows from the scope index); a larger
        one goes through the HNSW index, scanned iteratively until k rows of the scope are found."""
        if self._vector_dims is None or k <= 0:
            return []
        params = {"q": np.asarray(vector, dtype=np.float32), "u": scope.user_id, "a": scope.agent_id, "k": int(k)}
        # one statement: the scope's rows outside the graph scanned exactly (a small scope's,
        # or a large one's waiting for it: `fold_pending`), and its rows in the graph through
        # the index, asked only when it has any (a one-time probe of a partial index)
        sql = f"""
            (SELECT rowid, embedding <=> %(q)s AS d FROM vec_{corpus}
                WHERE NOT ann AND user_id = %(u)s AND agent_id = %(a)s ORDER BY d, rowid LIMIT %(k)s)
            UNION ALL
            (SELECT rowid, embedding <=> %(q)s AS d FROM vec_{corpus}
                WHERE ann AND user_id = %(u)s AND agent_id = %(a)s
                AND EXISTS (SELECT 1 FROM vec_{corpus} WHERE ann AND user_id = %(u)s AND agent_id = %(a)s)
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
        return dots(self.vectors(corpus, scope, rowids), vector)

    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        rows = self._q("SELECT hash, vector FROM embedding_cache WHERE model = %s AND hash = ANY(%s)",
                       (model, list(hashes)))
        return {h: np.frombuffer(bytes(blob), dtype=np.float32) for h, blob in rows}

    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None:
        self._many("INSERT INTO embedding_cache(model, hash, vector) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                   [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()])


def _array(value: Any) -> np.ndarray:
    """A vector column's value (pgvector's `Vector`, or an array) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)

