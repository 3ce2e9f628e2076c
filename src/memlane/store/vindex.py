"""An in-process ANN cache per (corpus, scope) for scopes too big for a brute-force scan.

sqlite-vec's vec0 scans a scope's vectors on every query: 73–150 ms over 100k × 384-d
float32 here, far from the 10 ms target (issue 3). A scope holding at least
`SearchConfig.ann_threshold` vectors is therefore searched through a usearch HNSW graph
instead. SQLite stays the source of truth (DESIGN.md, "Scale-out"): the graph is built from
the vec0 rows, persisted next to the database (`<home>/vindex/`) with the last change it
includes, and kept exact across processes by the change log of migration m002: every
vector put / delete of a logged scope appends to `vector_log` in the writer's transaction,
and a query first applies the entries after the cache's own sequence number.

The log of a scope starts when some process first builds its cache (`vector_scopes.logged`),
so the many small scopes never pay for it; a saved cache prunes the entries it includes.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import numpy as np
from usearch.index import Index

from memlane.models import Corpus, Scope
from memlane.store.erase import temp_path

log = logging.getLogger(__name__)


# ---- the writer's side: called inside the transaction that changes vec0 ---------------


def record(conn: Any, corpus: Corpus, scope: Scope, rowids: Sequence[int], op: str, delta: int) -> None:
    """Count `delta` more vectors for the scope and log `op` ('put' / 'del') of `rowids`
    when the scope is logged. Runs in the caller's transaction, so log and data commit together."""
    conn.execute(
        "INSERT INTO vector_scopes(corpus, user_id, agent_id, n) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(corpus, user_id, agent_id) DO UPDATE SET n = n + excluded.n",
        (corpus, scope.user_id, scope.agent_id, delta),
    )
    logged = conn.execute(
        "SELECT logged FROM vector_scopes WHERE corpus = ? AND user_id = ? AND agent_id = ?",
        (corpus, scope.user_id, scope.agent_id),
    ).fetchall()[0][0]
    if not logged or not rowids:
        return
    conn.executemany(
        "INSERT INTO vector_log(corpus, user_id, agent_id, row, op) VALUES (?, ?, ?, ?, ?)",
        [(corpus, scope.user_id, scope.agent_id, int(r), op) for r in rowids],
    )
    conn.execute(
        "UPDATE vector_scopes SET last_seq = (SELECT MAX(seq) FROM vector_log) "
        "WHERE corpus = ? AND user_id = ? AND agent_id = ?",
        (corpus, scope.user_id, scope.agent_id),
    )


def reset(conn: Any) -> None:
    """The vector tables were recreated (a new embedder): every cache is stale."""
    conn.execute("DELETE FROM vector_scopes")
    conn.execute("DELETE FROM vector_log")
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('vector_epoch', lower(hex(randomblob(8)))) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    )


# ---- the reader's side ----------------------------------------------------------------


@dataclass(frozen=True)
class AnnSettings:
    """SearchConfig's ann_* fields; the store layer takes no Config."""

    threshold: int
    connectivity: int
    expansion_add: int
    expansion_search: int
    dtype: str
    threads: int


@dataclass
class _Entry:
    index: Index
    epoch: str
    seq: int  # the last change of the log this graph includes
    saved_seq: int  # the seq of the copy on disk (-1: none)
    unsaved: int = 0  # changes applied since that copy
    # a graph loaded from disk is a read-only view of the file (mapped, not read: a new
    # process's first search over 100k vectors waits ~40 ms instead of ~90, issue 14); the
    # first change to apply makes it an in-memory copy
    viewed: bool = False


class AnnCache:
    """The ANN graphs of one SQLite store, one per (corpus, scope) above the threshold."""

    def __init__(self, db: Access, directory: Path, prefix: str, settings: AnnSettings) -> None:
        self._conn, self._snapshot, self._transaction = db.conn, db.snapshot, db.transaction
        self._dir = directory
        self._prefix = prefix
        self.settings = settings
        self._entries: dict[tuple[str, str, str], _Entry] = {}

    def search(self, corpus: Corpus, scope: Scope, vector: np.ndarray, k: int) -> list[tuple[int, float]] | None:
        """[(rowid, cosine distance)] best first, or None when the scope is below the
        threshold (the caller scans it exactly)."""
        entry = self._ready((corpus, scope.user_id, scope.agent_id))
        return None if entry is None else _search(entry.index, vector, k, self.settings.expansion_search)

    def vectors(self, corpus: Corpus, scope: Scope, rowids: Sequence[int]) -> dict[int, np.ndarray] | None:
        """The vectors of `rowids` as the graph holds them (f16 → f32), or None below the threshold."""
        entry = self._ready((corpus, scope.user_id, scope.agent_id))
        if entry is None:
            return None
        keys = [int(r) for r in rowids]
        got: Any = entry.index.get(np.asarray(keys, dtype=np.uint64), dtype="f32") if keys else []
        return {r: np.asarray(v, dtype=np.float32) for r, v in zip(keys, got, strict=True) if v is not None}

    def _ready(self, key: tuple[str, str, str]) -> _Entry | None:
        """The scope's graph, caught up with the log; None when the scope is below the threshold."""
        state = self._state(key)  # one statement, a consistent read by itself: the common answers
        if state is None or state[0] < self.settings.threshold:
            self._entries.pop(key, None)  # shrank below: free the memory
            return None
        entry = self._entries.get(key)
        if entry is not None and (entry.epoch, entry.seq) == (state[3], state[1]):
            return entry  # nothing new
        for _ in range(3):
            with self._snapshot():
                state = self._state(key)
                if state is None or state[0] < self.settings.threshold:
                    self._entries.pop(key, None)  # shrank below: free the memory
                    return None
                n, last_seq, pruned, epoch = state
                entry = self._entries.get(key)
                if entry is not None and (entry.epoch != epoch or entry.seq < pruned):
                    entry = None  # a new embedder, or the log it needs was pruned
                if entry is not None and entry.seq < last_seq:
                    self._catch_up(key, entry)
            if entry is not None:
                if entry.unsaved >= max(5_000, n // 10):  # keep the log short and restarts warm
                    with contextlib.suppress(OSError):
                        self._save(key, entry)
                return entry
            self._entries.pop(key, None)
            self._entries[key] = self._load(key, epoch, pruned) or self._build(key, epoch)
        raise RuntimeError(f"vector index of {key} kept changing under construction")

    def close(self) -> None:
        """Persist graphs with changes not yet on disk, so the next process starts warm."""
        for key, entry in list(self._entries.items()):
            if entry.unsaved:
                with contextlib.suppress(OSError):
                    self._save(key, entry)
        self._entries.clear()

    def forget(self, scopes: Sequence[tuple[str, str]]) -> None:
        """Drop the graphs of these (user_id, agent_id) scopes, in memory and on disk (a purge)."""
        for user_id, agent_id in scopes:
            for corpus in ("memories", "turns", "episodes"):
                key = (corpus, user_id, agent_id)
                self._entries.pop(key, None)
                meta_path, stem = self._paths(key)
                for path in [meta_path, *self._dir.glob(f"{stem}.*.usearch")]:
                    with contextlib.suppress(OSError):
                        path.unlink()

    # ---- internals --------------------------------------------------------------------

    def _state(self, key: tuple[str, str, str]) -> tuple[int, int, int, str] | None:
        rows = self._conn.execute(
            "SELECT n, last_seq, pruned, (SELECT value FROM meta WHERE key = 'vector_epoch') "
            "FROM vector_scopes WHERE corpus = ? AND user_id = ? AND agent_id = ?",
            key,
        ).fetchall()
        return (int(rows[0][0]), int(rows[0][1]), int(rows[0][2]), str(rows[0][3])) if rows else None

    def _catch_up(self, key: tuple[str, str, str], entry: _Entry) -> None:
        """Apply the logged changes after `entry.seq`; runs inside the read snapshot."""
        changes = self._conn.execute(
            "SELECT seq, row, op FROM vector_log WHERE corpus = ? AND user_id = ? AND agent_id = ? "
            "AND seq > ? ORDER BY seq",
            (*key, entry.seq),
        ).fetchall()
        if not changes:
            return
        if entry.viewed:
            entry.index, entry.viewed = entry.index.copy(), False
        put = sorted({int(r) for _, r, op in changes if op == "put"})
        vecs: dict[int, np.ndarray] = {}
        for i in range(0, len(put), 500):
            chunk = put[i : i + 500]
            for rowid, blob in self._conn.execute(
                f"SELECT rowid, embedding FROM vec_{key[0]} WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
            ):
                vecs[int(rowid)] = np.frombuffer(blob, dtype=np.float32)
        # the snapshot holds the newest state of every row: apply it once per row
        touched = sorted({int(r) for _, r, _ in changes})
        present = [r for r in touched if entry.index.contains(r)]
        if present:
            entry.index.remove(present)
        add = [r for r in touched if r in vecs and np.any(vecs[r])]
        if add:
            entry.index.add(np.asarray(add, dtype=np.uint64), np.stack([vecs[r] for r in add]), threads=1)
        entry.seq = int(changes[-1][0])
        entry.unsaved += len(changes)

    def _build(self, key: tuple[str, str, str], epoch: str) -> _Entry:
        """A new graph from the vec0 rows. Marking the scope logged and reading its rows in
        one write transaction makes every later change land in the log after `seq`."""
        with self._transaction():
            self._conn.execute(
                "UPDATE vector_scopes SET logged = 1 WHERE corpus = ? AND user_id = ? AND agent_id = ?", key
            )
            seq = int(self._conn.execute(
                "SELECT last_seq FROM vector_scopes WHERE corpus = ? AND user_id = ? AND agent_id = ?", key
            ).fetchall()[0][0])
            rows = self._conn.execute(
                f"SELECT v.rowid, v.embedding FROM vec_{key[0]} v WHERE v.user_id = ? AND v.agent_id = ?",
                key[1:],
            ).fetchall()
        dims = len(rows[0][1]) // 4 if rows else 0
        keys = np.fromiter((r[0] for r in rows), dtype=np.uint64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
        del rows
        nonzero = np.any(vecs != 0, axis=1)
        index = self._new_index(dims)
        if nonzero.any():
            index.add(keys[nonzero], vecs[nonzero], threads=self.settings.threads)
        entry = _Entry(index=index, epoch=epoch, seq=seq, saved_seq=-1)
        try:
            self._save(key, entry)
        except OSError as exc:  # a cache that cannot be saved still serves this process
            log.warning("cannot save vector index %s: %s", key, exc)
        return entry

    def _new_index(self, dims: int) -> Index:
        s = self.settings
        return Index(ndim=dims, metric="cos", dtype=s.dtype, connectivity=s.connectivity,
                     expansion_add=s.expansion_add, expansion_search=s.expansion_search)

    def _paths(self, key: tuple[str, str, str]) -> tuple[Path, str]:
        digest = hashlib.sha1("\x00".join(key).encode("utf-8")).hexdigest()[:20]
        return self._dir / f"{self._prefix}-{key[0]}-{digest}.json", f"{self._prefix}-{key[0]}-{digest}"

    def _save(self, key: tuple[str, str, str], entry: _Entry) -> None:
        """Write the graph under a name holding its seq, then point the .json at it, then
        prune the log entries it includes (other processes reload it when they need them)."""
        self._dir.mkdir(parents=True, exist_ok=True)
        meta_path, stem = self._paths(key)
        name = f"{stem}.{entry.epoch}.{entry.seq}.usearch"
        tmp = temp_path(self._dir / name)
        entry.index.save(str(tmp))
        os.replace(tmp, self._dir / name)
        meta = {"epoch": entry.epoch, "seq": entry.seq, "file": name, "ndim": entry.index.ndim,
                "size": len(entry.index), "scope": list(key)}
        tmp_meta = temp_path(meta_path)
        tmp_meta.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp_meta, meta_path)
        for old in self._dir.glob(f"{stem}.*.usearch"):
            if old.name != name:
                with contextlib.suppress(OSError):
                    old.unlink()
        entry.saved_seq, entry.unsaved = entry.seq, 0
        with self._transaction():
            self._conn.execute(
                "DELETE FROM vector_log WHERE corpus = ? AND user_id = ? AND agent_id = ? AND seq <= ?",
                (*key, entry.seq),
            )
            self._conn.execute(
                "UPDATE vector_scopes SET pruned = MAX(pruned, ?) WHERE corpus = ? AND user_id = ? AND agent_id = ?",
                (entry.seq, *key),
            )

    def _load(self, key: tuple[str, str, str], epoch: str, pruned: int) -> _Entry | None:
        """The graph on disk, when it is of this embedder and the log still covers it."""
        meta_path, _ = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta["epoch"] != epoch or int(meta["seq"]) < pruned or list(meta["scope"]) != list(key):
                return None
            index = Index.restore(str(self._dir / meta["file"]), view=True)
        except (OSError, ValueError, KeyError, RuntimeError):
            return None  # missing, replaced meanwhile or damaged: rebuild from SQLite
        if index is None:
            return None
        index.expansion_search = self.settings.expansion_search  # type: ignore[misc]
        return _Entry(index=index, epoch=epoch, seq=int(meta["seq"]), saved_seq=int(meta["seq"]), viewed=True)


def _search(index: Index, vector: np.ndarray, k: int, expansion: int) -> list[tuple[int, float]]:
    count = min(k, len(index))
    if count <= 0:
        return []
    # HNSW recall needs a beam of at least k
    index.expansion_search = max(expansion, count)  # type: ignore[misc]
    m = index.search(np.asarray(vector, dtype=np.float32), count, threads=1)
    return [(int(key), float(d)) for key, d in zip(m.keys, m.distances, strict=True) if np.isfinite(d)]


@dataclass(frozen=True)
class Access:
    """How the store's in-process caches (HNSW, lexical, memories) reach its database:
    `snapshot()` yields with the store's lock held and one read transaction open;
    `transaction()` is the store's write transaction; `in_transaction()` tells whether one is
    open in this process."""

    conn: Any
    snapshot: Callable[[], AbstractContextManager[None]]
    transaction: Callable[[], AbstractContextManager[None]]
    in_transaction: Callable[[], bool]


@contextlib.contextmanager
def read_snapshot(conn: Any, lock: Any, in_transaction: Callable[[], bool]) -> Iterator[None]:
    """One consistent read of several statements (WAL): BEGIN … COMMIT unless already in one."""
    with lock:
        if in_transaction():
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")


def read_vectors(conn: Any, corpus: Corpus, user_id: str, rowids: Sequence[int], dims: int) -> dict[int, np.ndarray] | None:
    """Vectors of `rowids` (of this user) read straight from vec0's shadow tables.

    A vec0 point lookup costs ~80 µs here, and hybrid search scores every lexical candidate
    densely (~100 a query); reading the slices of the chunk blobs costs a few µs each. The
    layout is sqlite-vec's (0.1.x); None when it is not there, and the caller uses vec0."""
    out: dict[int, np.ndarray] = {}
    width = dims * 4
    try:
        for i in range(0, len(rowids), 500):
            chunk = [int(r) for r in rowids[i : i + 500]]
            places = conn.execute(
                f"SELECT r.rowid, r.chunk_id, r.chunk_offset FROM vec_{corpus}_rowids r "
                f"JOIN vec_{corpus}_chunks c ON c.chunk_id = r.chunk_id "
                f"WHERE r.rowid IN ({','.join('?' * len(chunk))}) AND c.partition00 = ? ORDER BY r.chunk_id",
                (*chunk, user_id),
            ).fetchall()
            blob: Any = None
            blob_chunk = None
            try:
                for rowid, chunk_id, offset in places:
                    if chunk_id != blob_chunk:
                        if blob is not None:
                            blob.close()
                        blob = conn.blob_open("main", f"vec_{corpus}_vector_chunks00", "vectors", chunk_id, False)
                        blob_chunk = chunk_id
                    blob.seek(int(offset) * width)
                    out[int(rowid)] = np.frombuffer(blob.read(width), dtype=np.float32)
            finally:
                if blob is not None:
                    blob.close()
    except Exception as exc:  # noqa: BLE001 - any mismatch of the private layout: use the public way
        log.debug("vec0 shadow tables not readable (%s); using vec0 lookups", exc)
        return None
    return out


def scan_scope(conn: Any, corpus: Corpus, scope: Scope, dims: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(rowids, vectors) of every embedded row of a scope, read from vec0's chunk blobs.

    vec0's own KNN walks the partition vector by vector (~1.2 ms over 600 turns here) and a
    point lookup costs ~80 µs; a chunk's vectors read as one blob, after which both the KNN
    and the candidates' vectors are numpy indexing. The user's chunks are found by their
    partition (indexed, m006); each holds its rowids and a validity bitmap. When the user has
    other agents, the scope's own rows come from the base table's scope index. (Joining each
    row to vec0's rowid table instead cost ~1k random page reads: 3 of the 8 ms a query on
    the 1M bench.)
    Only the run of slots holding the scope's vectors is read: a scope of 10 turns reads
    15 kB, not the chunk's 1.5 MB. sqlite-vec's 0.1.x layout; None when it is not there,
    and the caller uses vec0."""
    width = dims * 4
    ids: list[np.ndarray] = []
    mats: list[np.ndarray] = []
    user, agent = scope.user_id, scope.agent_id
    try:
        mine: np.ndarray | None = None
        if conn.execute(f"SELECT EXISTS(SELECT 1 FROM {corpus} WHERE user_id = ? AND agent_id < ?) OR "
                        f"EXISTS(SELECT 1 FROM {corpus} WHERE user_id = ? AND agent_id > ?)",
                        (user, agent, user, agent)).fetchall()[0][0]:  # two seeks in the scope index
            mine = np.asarray(conn.execute(f"SELECT rowid FROM {corpus} WHERE user_id = ? AND agent_id = ?",
                                           (user, agent)).fetchall(), np.int64).reshape(-1)
        chunks = conn.execute(f"SELECT chunk_id, size, validity, rowids FROM vec_{corpus}_chunks "
                              "WHERE partition00 = ? ORDER BY chunk_id", (user,)).fetchall()
        for chunk_id, size, validity, rowids in chunks:
            slots = np.frombuffer(rowids, np.int64)
            valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[: len(slots)].astype(np.bool_)
            if len(slots) != size or len(valid) != size:
                raise ValueError(f"chunk {chunk_id}: {len(slots)} rowids, {len(valid)} validity bits, size {size}")
            keep = np.flatnonzero(valid if mine is None else valid & np.isin(slots, mine))
            if not len(keep):
                continue
            first, last = int(keep[0]), int(keep[-1]) + 1
            blob = conn.blob_open("main", f"vec_{corpus}_vector_chunks00", "vectors", chunk_id, False)
            try:
                if blob.length() != size * width:
                    raise ValueError(f"chunk {chunk_id}: {blob.length()} bytes of vectors for {size} slots")
                blob.seek(first * width)
                run = np.frombuffer(blob.read((last - first) * width), dtype=np.float32).reshape(-1, dims)
            finally:
                blob.close()
            ids.append(slots[keep])
            mats.append(run if len(keep) == last - first else run[keep - first])  # a run: no copy
    except Exception as exc:  # noqa: BLE001 - any mismatch of the private layout: use the public way
        log.debug("vec0 shadow tables not readable (%s); using vec0", exc)
        return None
    if not ids:
        return np.empty(0, dtype=np.int64), np.empty((0, dims), dtype=np.float32)
    return (ids[0], mats[0]) if len(ids) == 1 else (np.concatenate(ids), np.concatenate(mats))


def scan_corpus(conn: Any, corpus: Corpus, dims: int, public: bool = False,
                batch: int = 10_000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rowids, vectors) of every embedded row of a corpus, a batch at a time: vec0's chunk
    blobs read whole (1M × 384-d: ~1.5 GB in 1k reads), or with `public` vec0's own rows.
    Run inside one read transaction. ValueError when the chunks are not sqlite-vec 0.1.x's
    layout (the caller then scans with `public`)."""
    width = dims * 4
    if public:
        rows = iter(conn.execute(f"SELECT rowid, embedding FROM vec_{corpus}"))
        while part := list(itertools.islice(rows, batch)):
            yield (np.fromiter((r[0] for r in part), np.int64, len(part)),
                   np.frombuffer(b"".join(r[1] for r in part), np.float32).reshape(len(part), dims))
        return
    try:
        chunks = conn.execute(f"SELECT chunk_id, size, validity, rowids FROM vec_{corpus}_chunks ORDER BY chunk_id").fetchall()
    except apsw.SQLError as exc:
        raise ValueError(f"vec0 chunks not readable: {exc}") from exc
    for chunk_id, size, validity, rowids in chunks:
        slots = np.frombuffer(rowids, np.int64)
        valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[: len(slots)].astype(np.bool_)
        if len(slots) != size or len(valid) != size:
            raise ValueError(f"chunk {chunk_id}: {len(slots)} rowids, {len(valid)} validity bits, size {size}")
        keep = np.flatnonzero(valid)
        if not len(keep):
            continue
        try:
            blob = conn.blob_open("main", f"vec_{corpus}_vector_chunks00", "vectors", chunk_id, False)
        except apsw.Error as exc:
            raise ValueError(f"chunk {chunk_id}: {exc}") from exc
        try:
            if blob.length() != size * width:
                raise ValueError(f"chunk {chunk_id}: {blob.length()} bytes of vectors for {size} slots")
            run = np.frombuffer(blob.read((int(keep[-1]) + 1) * width), dtype=np.float32).reshape(-1, dims)
        finally:
            blob.close()
        yield slots[keep], run[keep]


@dataclass
class ScopeVectors:
    """A scope's vectors sorted by rowid, as `scan_scope` read them."""

    rowids: np.ndarray  # int64, ascending
    matrix: np.ndarray  # float32 (n, dims), row i is rowids[i]
    norms: np.ndarray

    @classmethod
    def of(cls, rowids: np.ndarray, matrix: np.ndarray) -> ScopeVectors:
        if len(rowids) > 1 and not bool(np.all(rowids[1:] > rowids[:-1])):  # vec0 fills slots in order: rarely
            order = np.argsort(rowids)
            rowids, matrix = rowids[order], matrix[order]
        return cls(rowids, matrix, np.sqrt(np.einsum("ij,ij->i", matrix, matrix)))  # 2x np.linalg.norm

    def knn(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Exact nearest rows by cosine distance; rows without a direction are no neighbours."""
        q = np.asarray(vector, dtype=np.float32)
        qn = float(np.linalg.norm(q))
        if qn == 0 or len(self.rowids) == 0:
            return []
        ok = self.norms > 0
        # the whole matrix times q, then masked: selecting the rows first would copy the matrix
        sims = np.where(ok, (self.matrix @ q) / np.where(ok, self.norms * qn, 1.0), -np.inf).astype(np.float32)
        k = min(k, int(ok.sum()))
        if k <= 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(self.rowids[i]), float(1.0 - sims[i])) for i in top]

    def dots(self, rowids: Sequence[int], vector: np.ndarray) -> dict[int, float]:
        """{rowid: row · vector} of the rowids this scope holds."""
        want = np.asarray(rowids, dtype=np.int64)
        if len(self.rowids) == 0 or len(want) == 0:
            return {}
        pos = np.minimum(np.searchsorted(self.rowids, want), len(self.rowids) - 1)
        found = self.rowids[pos] == want
        sims = self.matrix[pos[found]] @ np.asarray(vector, dtype=np.float32)
        return dict(zip(want[found].tolist(), sims.tolist(), strict=True))

    def get(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        want = np.asarray(rowids, dtype=np.int64)
        pos = np.searchsorted(self.rowids, want)
        pos[pos >= len(self.rowids)] = 0
        found = self.rowids[pos] == want if len(self.rowids) else np.zeros(len(want), dtype=bool)
        return {int(r): self.matrix[p] for r, p, f in zip(want, pos, found, strict=True) if f}


class ScopeScans:
    """The last few scanned scopes, each valid until anything is written: by this connection
    (`total_changes`) or by another one (`data_version`). A search reads its scope once and
    a run of searches on an unchanged scope reads nothing."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: dict[tuple[str, str, str], tuple[tuple[int, int], ScopeVectors]] = {}

    def get(self, conn: Any, corpus: Corpus, scope: Scope, dims: int) -> ScopeVectors | None:
        key = (corpus, scope.user_id, scope.agent_id)
        token = (conn.total_changes(), conn.data_version())
        hit = self._items.pop(key, None)
        if hit is not None and hit[0] == token:
            self._items[key] = hit  # most recent last
            return hit[1]
        scanned = scan_scope(conn, corpus, scope, dims)
        if scanned is None:
            return None
        found = ScopeVectors.of(*scanned)
        self._items[key] = (token, found)
        while len(self._items) > self._size:
            self._items.pop(next(iter(self._items)))
        return found
