"""The SQLite store's vectors: sqlite-vec's vec0 tables (a cache of the rows, partitioned by
user), searched through the HNSW caches of store/vindex.py for large scopes and scanned
exactly for small ones; and the embedding cache."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memlane.models import Corpus, Scope
from memlane.store import vindex
from memlane.store.migrations import index_vector_chunks
from memlane.store.protocol import PASSAGES_PENDING, passage_rowids, vector_owner
from memlane.store.shared import chunks, dots
from memlane.store.sqlite.base import FTS, SQLiteBase


class SQLiteVectors(SQLiteBase):
    """Vectors and the embedding cache."""

    def ensure_vectors(self, model_id: str, dims: int) -> None:
        """Create the vector tables for this embedder. A different embedder than last time
        drops them and marks every row for re-embedding: vectors are a cache of the rows."""
        with self.transaction():
            if self.meta("vector_model") != model_id or self.meta("vector_dims") != str(dims):
                for corpus in FTS:
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
            # turns whose passages wait behind every key (issue 34): found without a table scan
            self._conn.execute(f"CREATE INDEX IF NOT EXISTS turns_passages_pending ON turns(embedded) "
                               f"WHERE embedded = {PASSAGES_PENDING}")
        self._vector_dims = dims

    def reembed_long_turns(self, longer_than: int) -> None:
        """Mark turns longer than `longer_than` characters for embedding: their key stays (the
        cache has it), their passages are cut and embedded anew (`put_vectors` drops the old)."""
        with self.transaction():  # a turn waiting for its passages too: its key may have changed
            self._conn.execute("UPDATE turns SET embedded = 0 WHERE embedded <> 0 AND length(content) > ?",
                               (int(longer_than),))

    def set_passages_pending(self, rowids: Sequence[int]) -> None:
        """Mark turns whose key vector is in as waiting for their passages (`put_vectors` of
        key and passages together ends the wait)."""
        with self.transaction():
            for chunk in chunks([int(r) for r in rowids], 500):
                self._conn.execute(f"UPDATE turns SET embedded = {PASSAGES_PENDING} "
                                   f"WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)

    def pending_passages(self, limit: int) -> list[tuple[int, Scope, str]]:
        """Turns searchable by their key whose passages are still to embed, oldest first."""
        rows = self._q(f"SELECT rowid, user_id, agent_id, content FROM turns WHERE embedded = {PASSAGES_PENDING} "
                       "ORDER BY rowid LIMIT ?", (int(limit),))
        return [(int(r[0]), Scope(user_id=r[1], agent_id=r[2]), r[3]) for r in rows]

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
        # one point lookup each: vec0 answers `rowid = ?` from its index but scans every vector
        # for `rowid IN (…)` (6.4 ms against 0.05 ms at 30k vectors, paid for every turn embedded)
        found = [r for r in passage_rowids(rowid)
                 if self._conn.execute("SELECT 1 FROM vec_turns WHERE rowid = ?", (r,)).fetchall()]
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
        for chunk in chunks(list(rowids), 500):
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
        return dots(self.vectors(corpus, scope, rowids) if vecs is None else vecs, vector)

    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for chunk in chunks(list(hashes), 500):
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

