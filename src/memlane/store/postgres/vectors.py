"""The PostgreSQL store's vectors: a pgvector table per corpus (a cache of the rows), each
scope scanned exactly until it holds `ann_threshold` vectors, then searched through the
table's partial HNSW index; and the embedding cache."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.models import Corpus, Scope
from memlane.store.pgschema import CORPORA
from memlane.store.postgres.base import PostgresBase
from memlane.store.protocol import PASSAGE_BASE, PASSAGE_STRIDE, PASSAGES_PENDING, vector_owner
from memlane.store.shared import dots


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

