"""An in-process copy of what search reads of every memory (store/memrows.py): owners, ranking
columns, int8 vector codes and, by default, whole records, for a memories table of at least
`memory_cache_threshold` rows.

Without it, a query over 1M memories of 1k users reads its user's scattered rows from disk:
the user's whole vec0 chunk (~4 ms p50), the hits' records (~1 ms) and the candidates' facts
(~0.7 ms) of the ~9 ms p50 measured (issue 3). With it, a search reads none of them, only
the few small pages that hold the caches' log states.

SQLite stays the source of truth (DESIGN.md, "Scale-out"), kept exact as the lexical cache
of lexindex.py is. Triggers of migration m008 append every insert, update and delete of a
memories row to `row_log` once some process keeps a cache (`row_corpora.logged`), marked
'vec' when the row's vector may have changed too (a vector write always sets the row's
`embedded`). A query first applies the entries after the cache's own sequence number,
re-reading each touched row, and its vector when so marked. The arrays are saved under
`<home>/memcache/` with the sequence number they include, so a new process loads them
instead of rebuilding (1M rows: ~590 MB, 1-4 s, against ~17 s to build); a save prunes the
log entries it includes. A missing, stale or damaged file is rebuilt from SQLite, and inside
a write transaction with changes of its own, SQLite answers.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memlane.store import vindex
from memlane.store.memrows import COLUMNS, FORMAT, RECORD_COLUMNS, MemoryRows

log = logging.getLogger(__name__)

_Readers = (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile)
_SAVE_MIN = 5_000  # changes applied before the file is rewritten (and the log pruned)


@dataclass(frozen=True)
class MemSettings:
    """SearchConfig's memory_cache_* fields; the store layer takes no Config."""

    threshold: int = 10_000
    vector_limit: int = 5_000  # a scope with this many vectors is left to the HNSW cache (ann_threshold)
    records: bool = True  # keep whole records too, not only what ranking reads


class MemCache:
    """The memories arrays of one SQLite store; `dims()` is the width of the store's vectors
    (None: no vector tables)."""

    def __init__(self, db: vindex.Access, dims: Callable[[], int | None], directory: Path, prefix: str,
                 settings: MemSettings) -> None:
        self._conn, self._snapshot, self._transaction = db.conn, db.snapshot, db.transaction
        self._in_transaction = db.in_transaction
        self._dims = dims
        self._path = directory / f"{prefix}-memories.npz"
        self.settings = settings
        self._rows: MemoryRows | None = None
        self._columns = f"{COLUMNS}, {RECORD_COLUMNS}" if settings.records else COLUMNS
        self.builds = 0  # arrays built from SQLite / loaded from a file, by this process
        self.loads = 0

    def ready(self) -> MemoryRows | None:
        """The arrays, caught up with the log; None when SQLite must answer (a small table,
        an open write transaction with changes not yet in the arrays)."""
        m = self._rows
        if m is None and self.settings.threshold > 0 and self._max_rowid() < self.settings.threshold:
            return None
        dims = self._dims() or 0
        state = self._state()  # one statement: a consistent read by itself
        if m is not None and m.seq == state[0] and self._fits(m, state[2], state[3], dims):
            return m if m.count >= self.settings.threshold else None  # nothing new: the common case
        if self._in_transaction():
            return None  # the open write transaction may roll back: leave the arrays alone
        for _ in range(3):
            with self._snapshot():
                last, pruned, epoch, vector_epoch = self._state()
                if m is not None and (not self._fits(m, epoch, vector_epoch, dims) or not pruned <= m.seq <= last):
                    m = None  # another database, embedder or limit, or the log it needs was pruned
                if m is not None and m.seq < last:
                    self._catch_up(m, last)
            if m is not None:
                self._rows = m
                self._tidy(m)
                return m if m.count >= self.settings.threshold else None
            self._rows = None  # free the old arrays before the new ones are read
            m = self._load(epoch, vector_epoch, dims, pruned, last) or self._build(epoch, vector_epoch, dims)
        log.warning("memory cache kept changing under construction; SQLite answers")
        return None

    def stats(self) -> dict[str, int]:
        """Rows present, scopes and array bytes of the arrays in memory ({} when none)."""
        m = self._rows
        return {} if m is None else {"rows": m.count, "scopes": len(m.scopes), "bytes": m.bytes()}

    def close(self) -> None:
        """Save arrays with many changes not yet on disk, so the next process starts warm; a
        few it applies from the log faster than ~600 MB (1M rows) are written."""
        m = self._rows
        if m is not None and m.unsaved >= _SAVE_MIN and not self._in_transaction():
            try:
                # caught up first: rows another process deleted meanwhile must not be written
                # back to disk with their texts (forget.py). When the log no longer covers
                # them, another process saved newer arrays: none to save
                with self._snapshot():
                    last, pruned, epoch, vector_epoch = self._state()
                    current = self._fits(m, epoch, vector_epoch, self._dims() or 0) and pruned <= m.seq <= last
                    if current and m.seq < last:
                        self._catch_up(m, last)
                if current:
                    self._save(m)
            except (OSError, apsw.Error) as exc:
                log.warning("cannot save the memory cache: %s", exc)
        self._rows = None

    # ---- internals -----------------------------------------------------------------------

    def _fits(self, m: MemoryRows, epoch: str, vector_epoch: str, dims: int) -> bool:
        """Arrays of this database, embedder and vector limit."""
        return (m.epoch, m.vector_epoch, m.dims, m.limit, m.records is not None) == (
            epoch, vector_epoch, dims, self.settings.vector_limit, self.settings.records)

    def _max_rowid(self) -> int:
        # O(log n), not COUNT(*): only decides whether a cache is worth building
        return int(self._conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchall()[0][0])

    def _state(self) -> tuple[int, int, str, str]:
        """(last change logged, pruned up to, row_epoch, vector_epoch)."""
        row = self._conn.execute(
            "SELECT (SELECT MAX(seq) FROM row_log WHERE corpus = 'memories'), pruned, "
            "(SELECT value FROM meta WHERE key = 'row_epoch'), "
            "COALESCE((SELECT value FROM meta WHERE key = 'vector_epoch'), '') "
            "FROM row_corpora WHERE corpus = 'memories'").fetchall()[0]
        pruned = int(row[1])
        return max(pruned, int(row[0] or 0)), pruned, str(row[2]), str(row[3])

    def _catch_up(self, m: MemoryRows, last: int) -> None:
        """Apply the logged changes after `m.seq`; runs inside the read snapshot, which holds
        the newest version of every row: each touched row is read once, its vector only when
        the log says it may have changed (or the row changed owner)."""
        changes = self._conn.execute(
            "SELECT seq, row, op FROM row_log WHERE corpus = 'memories' AND seq > ? ORDER BY seq", (m.seq,)).fetchall()
        touched = sorted({int(r) for _, r, _ in changes})
        revector = {int(r) for _, r, op in changes if op == "vec"}
        for i in range(0, len(touched), 500):
            chunk = touched[i : i + 500]
            rows = self._conn.execute(f"SELECT rowid, {self._columns} FROM memories WHERE rowid IN "
                                      f"({','.join('?' * len(chunk))})", chunk).fetchall()
            found = {int(r[0]) for r in rows}
            again = sorted((revector & found) | set(m.moved(rows)))
            vectors: dict[int, np.ndarray] = {}
            if m.dims and again:
                vectors = {int(r): np.frombuffer(v, np.float32) for r, v in self._conn.execute(
                    f"SELECT rowid, embedding FROM vec_memories WHERE rowid IN ({','.join('?' * len(again))})", again)}
            m.apply(rows, [r for r in chunk if r not in found], again, vectors)
        m.seq = int(changes[-1][0]) if changes else last
        m.unsaved += len(changes)

    def _tidy(self, m: MemoryRows) -> None:
        """Save after many changes: keeps the log short and a restart warm."""
        if m.unsaved >= max(_SAVE_MIN, m.count // 10):
            try:
                self._save(m)
            except OSError as exc:
                log.warning("cannot save the memory cache: %s", exc)

    def _build(self, epoch: str, vector_epoch: str, dims: int) -> MemoryRows:
        """Arrays from the memories rows and their vectors. The table is marked logged first,
        then the rows, the vectors and the log's position are read in one snapshot: every
        later change is in the log."""
        if not self._conn.execute("SELECT logged FROM row_corpora WHERE corpus = 'memories'").fetchall()[0][0]:
            with self._transaction():
                self._conn.execute("UPDATE row_corpora SET logged = 1 WHERE corpus = 'memories'")
        with self._snapshot():
            last = self._state()[0]
            size = self._max_rowid() + 1
            m = MemoryRows(dims, self.settings.vector_limit, self.settings.records, capacity=size + size // 16)
            rows = iter(self._conn.execute(f"SELECT rowid, {self._columns} FROM memories"))
            while part := list(itertools.islice(rows, 50_000)):
                m.put(part)
            if dims:
                self._read_vectors(m, dims)
        m.epoch, m.vector_epoch, m.seq = epoch, vector_epoch, last
        self.builds += 1
        try:
            self._save(m)
        except OSError as exc:  # arrays that cannot be saved still serve this process
            log.warning("cannot save the memory cache: %s", exc)
        return m

    def _read_vectors(self, m: MemoryRows, dims: int) -> None:
        try:
            for rowids, vectors in vindex.scan_corpus(self._conn, "memories", dims):
                m.add_vectors(rowids, vectors)
        except ValueError as exc:  # not sqlite-vec 0.1.x's layout: vec0's own rows
            log.debug("vec0 chunks not readable (%s); scanning vec0", exc)
            m.vectors.clear()
            m.big.clear()
            for rowids, vectors in vindex.scan_corpus(self._conn, "memories", dims, public=True):
                m.add_vectors(rowids, vectors)

    def _save(self, m: MemoryRows) -> None:
        """Write the arrays unless the file holds newer ones already, then prune the log
        entries they include (other processes reload the file when they need them)."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        on_disk: dict[str, Any] = {}
        with contextlib.suppress(*_Readers), np.load(self._path, allow_pickle=False) as z:
            on_disk = json.loads(bytes(z["meta"]).decode())
        mine = {"format": FORMAT, "epoch": m.epoch, "vector_epoch": m.vector_epoch, "limit": m.limit,
                "records": m.records is not None}
        if any(on_disk.get(k) != v for k, v in mine.items()) or int(on_disk.get("seq", -1)) < m.seq:
            m.save(self._path)
            if self._conn.execute(
                "SELECT 1 FROM row_log l WHERE corpus = 'memories' AND seq > ? "
                "AND NOT EXISTS (SELECT 1 FROM memories WHERE rowid = l.row) LIMIT 1", (m.seq,)).fetchall():
                # another process deleted (forgot) rows while the arrays were written, and may
                # have unlinked the old file already: this one holds their texts
                self._path.unlink(missing_ok=True)
        m.unsaved = 0
        with self._transaction():
            self._conn.execute("DELETE FROM row_log WHERE corpus = 'memories' AND seq <= ?", (m.seq,))
            self._conn.execute("UPDATE row_corpora SET pruned = MAX(pruned, ?) WHERE corpus = 'memories'", (m.seq,))

    def _load(self, epoch: str, vector_epoch: str, dims: int, pruned: int, last: int) -> MemoryRows | None:
        """The saved arrays, when they are this database's and embedder's and the log still covers them."""
        if not self._path.exists():
            return None
        try:
            m = MemoryRows.load(self._path)
        except _Readers as exc:
            log.warning("memory cache %s is damaged (%s); rebuilding it from SQLite", self._path, exc)
            with contextlib.suppress(OSError):  # its meta may look current: the rebuild must replace it
                self._path.unlink()
            return None
        if not self._fits(m, epoch, vector_epoch, dims) or not pruned <= m.seq <= last:
            log.warning("memory cache %s is stale (seq %d, log %d..%d); rebuilding it from SQLite",
                        self._path, m.seq, pruned, last)
            return None
        self.loads += 1
        return m
