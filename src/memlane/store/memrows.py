"""What search reads of every memory, as numpy arrays: its owner and the columns it is
ranked and filtered by (`MemoryFacts`), indexed by rowid; the rest of its record as JSON text
(store/packed.py); and each scope's vectors as int8 codes in one contiguous block per scope.

Over 1M memories of 1k users, reading a query's candidates from SQLite is reading one
user's rows scattered over a 2 GB file: the scope index run of their facts, the user's
1.5 MB vec0 chunk (2–7 ms cold on this VM, where the page cache lasts seconds; issue 3) and
the records of the hits. Held here they cost ~590 B a memory on the scale bench: 384 of them
the codes of a 384-d vector (int8 with one scale per row: cosines off by at most ~0.002,
recall@10 of the nearest vectors 0.998 there), ~140 the record, ~60 the columns. A scope's
block is scanned without a gather (1k rows: ~0.1 ms, against ~0.5 ms picking its rows out of
one array of every scope). Scopes holding `limit` vectors or more keep no codes: the HNSW
cache (vindex.py) answers for them (one that shrinks below the limit again is scanned from
vec0 until the arrays are rebuilt). store/memcache.py keeps the arrays exact to SQLite.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlane.models import MemoryFacts
from memlane.store.erase import temp_path
from memlane.store.packed import PackedTexts

FORMAT = 5  # of the saved file
# the columns read per row, in this order, after rowid (MemoryFacts' order from `score` on)
COLUMNS = "user_id, agent_id, score, last_activated, expires_at, status, category, source_session, created_at"
# the rest of a record (rows.MEMORY_COLS), kept as one JSON array a row when records are kept
RECORD_COLUMNS = ("id, content, kind, confidence, subject, predicate, updated_at, activation_count, source, verified, pinned, "
                  "metadata, valid_from, valid_to, superseded_at, superseded_by, supersedes")
_FACTS = ("present", "owner", "score", "last_activated", "expires_at", "created_at", "status", "category", "session")
_EMPTY = {"owner": -1, "expires_at": math.nan, "status": -1, "category": -1, "session": -1}  # else 0


@dataclass(frozen=True)
class ScopeCodes:
    """One scope's vectors: row i is rowids[i] ≈ codes[i] × scale[i]; norm[i] is the norm of
    the float vector itself, for exact cosine denominators. Rowids ascend."""

    rowids: np.ndarray  # int64
    codes: np.ndarray  # int8 (n, dims)
    scale: np.ndarray  # float32
    norm: np.ndarray  # float32

    @classmethod
    def of(cls, rowids: np.ndarray, vectors: np.ndarray) -> ScopeCodes:
        """Quantise float vectors (one a row): each row scaled so its largest value is ±127."""
        v = np.asarray(vectors, dtype=np.float32)
        scale = (np.abs(v).max(axis=1) if v.shape[1] else np.zeros(len(v), np.float32)) / np.float32(127)
        codes = np.rint(v / np.where(scale > 0, scale, 1)[:, None]).astype(np.int8)
        order = np.argsort(rowids, kind="stable")
        return cls(np.asarray(rowids, np.int64)[order], codes[order], scale[order],
                   np.sqrt(np.einsum("ij,ij->i", v, v))[order])

    def __len__(self) -> int:
        return len(self.rowids)

    def knn(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Nearest rows by cosine distance; rows without a direction are no neighbours (as
        vec0 and vindex.ScopeVectors)."""
        q = np.asarray(vector, dtype=np.float32)
        qn = float(np.linalg.norm(q))
        ok = self.norm > 0
        k = min(k, int(ok.sum()))
        if qn == 0 or k <= 0:
            return []
        # the whole block times q, then masked: selecting the rows first would copy the block
        sims = np.where(ok, (self.codes.astype(np.float32) @ q) * (self.scale / np.where(ok, self.norm * qn, 1)),
                        -np.inf)
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return list(zip(self.rowids[top].tolist(), (1.0 - sims[top]).tolist(), strict=True))

    def dots(self, rowids: Sequence[int], vector: np.ndarray) -> dict[int, float]:
        """{rowid: row · vector} of the rowids this scope holds a vector for."""
        want = np.asarray(rowids, dtype=np.int64)
        if not len(self.rowids) or not len(want):
            return {}
        pos = np.minimum(np.searchsorted(self.rowids, want), len(self.rowids) - 1)
        pos = pos[self.rowids[pos] == want]
        sims = (self.codes[pos].astype(np.float32) @ np.asarray(vector, dtype=np.float32)) * self.scale[pos]
        return dict(zip(self.rowids[pos].tolist(), sims.tolist(), strict=True))

    def without(self, rowids: np.ndarray) -> ScopeCodes:
        keep = ~np.isin(self.rowids, rowids)
        return self if keep.all() else ScopeCodes(self.rowids[keep], self.codes[keep], self.scale[keep],
                                                  self.norm[keep])

    def merged(self, other: ScopeCodes) -> ScopeCodes:
        """These rows and `other`'s (new rowids), in rowid order: one copy of the block."""
        if not len(self):
            return other
        rowids = np.concatenate((self.rowids, other.rowids))
        order = np.argsort(rowids, kind="stable")
        return ScopeCodes(rowids[order], np.concatenate((self.codes, other.codes))[order],
                          np.concatenate((self.scale, other.scale))[order],
                          np.concatenate((self.norm, other.norm))[order])


class MemoryRows:
    """The arrays of one memories table. Row r of each fact array is rowid r; `present` marks
    the rows that exist. `owner` indexes `scopes` ((user_id, agent_id) pairs), the string
    columns index `strings`. `vectors` holds each scope's codes, except the scopes in `big`
    (they reached `limit` vectors; 0: no limit) and scopes with no vector. `records`, when
    kept, completes each row to a whole record (~120 B a memory plus its text)."""

    def __init__(self, dims: int, limit: int, records: bool, capacity: int = 0) -> None:
        self.dims = dims
        self.limit = limit
        self.present = np.zeros(capacity, np.bool_)
        self.owner = np.full(capacity, -1, np.int32)
        self.score = np.zeros(capacity, np.float64)
        self.last_activated = np.zeros(capacity, np.float64)
        self.expires_at = np.full(capacity, np.nan, np.float64)  # NaN: never
        self.created_at = np.zeros(capacity, np.float64)
        self.status = np.full(capacity, -1, np.int32)
        self.category = np.full(capacity, -1, np.int32)
        self.session = np.full(capacity, -1, np.int32)  # -1: no source session
        # the rest of each record as JSON text (RECORD_COLUMNS); None: records not kept
        self.records = PackedTexts(capacity) if records else None
        self.scopes: list[tuple[str, str]] = []
        self.scope_ids: dict[tuple[str, str], int] = {}
        self.strings: list[str] = []
        self.string_ids: dict[str, int] = {}
        self._names = np.asarray([None], dtype=object)  # `strings` + [None], for fancy indexing
        self.vectors: dict[int, ScopeCodes] = {}
        self.big: set[int] = set()
        self.count = 0  # rows present
        self.epoch = ""  # the database's row_epoch, the vector tables' vector_epoch
        self.vector_epoch = ""
        self.seq = 0  # the last change of row_log these arrays include
        self.unsaved = 0  # changes applied since the file was written

    # ---- reading -------------------------------------------------------------------------

    def scope_id(self, user_id: str, agent_id: str) -> int | None:
        return self.scope_ids.get((user_id, agent_id))

    def scope_codes(self, sid: int | None) -> ScopeCodes | None:
        """The scope's codes; None when the scope is `big` (the caller asks the ANN cache or vec0)."""
        if sid in self.big:
            return None
        got = None if sid is None else self.vectors.get(sid)
        return got or ScopeCodes(np.empty(0, np.int64), np.empty((0, self.dims), np.int8),
                                 np.empty(0, np.float32), np.empty(0, np.float32))

    def owned(self, sid: int | None, rowids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Which of `rowids` are present rows of the scope."""
        want = np.asarray(rowids, dtype=np.int64)
        ok = (want >= 0) & (want < len(self.present))
        at = np.where(ok, want, 0)
        return ok & self.present[at] & (self.owner[at] == (-2 if sid is None else sid))

    def facts(self, sid: int | None, rowids: Sequence[int]) -> MemoryFacts:
        """The facts of the rowids that are present rows of the scope, in the order given."""
        want = np.asarray(rowids, dtype=np.int64)
        mine = want[self.owned(sid, want)]
        if len(self._names) != len(self.strings) + 1:  # the strings as objects, None last (-1)
            self._names = np.asarray([*self.strings, None], dtype=object)
        return MemoryFacts(mine, self.score[mine], self.last_activated[mine], self.expires_at[mine],
                           self.created_at[mine], self._names[self.status[mine]], self._names[self.category[mine]],
                           self._names[self.session[mine]])

    def record_rows(self, sid: int | None, rowids: Sequence[int]) -> dict[int, tuple[Any, ...]] | None:
        """{rowid: the row as `SELECT {rows.MEMORY_COLS}` reads it} of the rowids that are
        present rows of the scope; None when records are not kept."""
        if self.records is None:
            return None
        want = np.asarray(rowids, dtype=np.int64)
        s, out = self.strings, {}
        for r in want[self.owned(sid, want)].tolist():
            text = self.records.get(r)
            assert text is not None  # every present row has its record
            id_, content, kind, confidence, subject, predicate, updated, count, source, verified, pinned, meta, *times = (
                json.loads(text))
            user, agent = self.scopes[int(self.owner[r])]
            expires, session = float(self.expires_at[r]), int(self.session[r])
            out[r] = (id_, user, agent, content, s[self.category[r]], kind, float(self.score[r]), confidence, subject,
                      predicate, float(self.created_at[r]), updated, float(self.last_activated[r]), count,
                      None if math.isnan(expires) else expires, source, verified, None if session < 0 else s[session],
                      s[self.status[r]], pinned, meta, *times)
        return out

    def bytes(self) -> int:
        """Bytes held by the arrays and the record texts."""
        return ((0 if self.records is None else self.records.nbytes) + sum(getattr(self, name).nbytes for name in _FACTS)
                + sum(c.rowids.nbytes + c.codes.nbytes + c.scale.nbytes + c.norm.nbytes for c in self.vectors.values()))

    # ---- changes -------------------------------------------------------------------------

    def moved(self, rows: Sequence[Sequence[Any]]) -> list[int]:
        """The present rowids among rows read as `SELECT rowid, {COLUMNS}` whose owner changed."""
        return [int(r[0]) for r in rows if r[0] < len(self.present) and self.present[r[0]]
                and self.scope_ids.get((r[1], r[2])) != self.owner[r[0]]]

    def apply(self, rows: Sequence[Sequence[Any]], gone: Iterable[int], revectored: Iterable[int],
              vectors: dict[int, np.ndarray]) -> None:
        """Rows read as `SELECT rowid, {COLUMNS}` (new or changed), rowids no longer there,
        and the rows whose vector may have changed, with the float vectors of those that
        have one: each row's old version is replaced."""
        gone = [r for r in gone if 0 <= r < len(self.present) and self.present[r]]
        stale = np.asarray([*revectored, *gone], np.int64)
        stale = stale[stale < len(self.present)]
        stale = stale[self.present[stale]]
        for sid in np.unique(self.owner[stale]).tolist():  # their vectors, from the scope holding them now
            if sid in self.vectors:
                self.vectors[sid] = self.vectors[sid].without(stale[self.owner[stale] == sid])
        for r in gone:
            self.present[r] = False
            self.owner[r] = -1
            if self.records is not None:
                self.records.set(r, None)
        self.count -= len(gone)
        self.put(rows)
        self.add_vectors(np.asarray(sorted(vectors), np.int64), [vectors[r] for r in sorted(vectors)])

    def put(self, rows: Sequence[Sequence[Any]]) -> None:
        """Write the facts of rows read as `SELECT rowid, {COLUMNS}`, new or replacing."""
        if not rows:
            return
        cols = list(zip(*rows, strict=True))
        rowids = np.asarray(cols[0], dtype=np.int64)
        self._reserve(int(rowids.max()) + 1)
        self.count += int((~self.present[rowids]).sum())
        self.present[rowids] = True
        self.owner[rowids] = [self._scope(u, a) for u, a in zip(cols[1], cols[2], strict=True)]
        self.score[rowids] = cols[3]
        self.last_activated[rowids] = cols[4]
        self.expires_at[rowids] = [math.nan if x is None else x for x in cols[5]]
        self.status[rowids] = [self._string(x) for x in cols[6]]
        self.category[rowids] = [self._string(x) for x in cols[7]]
        self.session[rowids] = [-1 if x is None else self._string(x) for x in cols[8]]
        self.created_at[rowids] = cols[9]
        if self.records is not None:
            dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
            for row in rows:
                self.records.set(int(row[0]), dump(row[10:]))

    def add_vectors(self, rowids: np.ndarray, vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """Add the vectors of present rows that hold none yet, to their owners' codes; vectors
        of rows not present (a vec0 row whose memory is gone) are left out."""
        rowids = np.asarray(rowids, dtype=np.int64)
        if not len(rowids):
            return
        ok = rowids < len(self.present)
        ok[ok] = self.present[rowids[ok]]
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(rowids), self.dims)[ok]
        rowids = rowids[ok]
        owners = self.owner[rowids]
        for sid in np.unique(owners).tolist():
            if sid in self.big:
                continue
            mine = owners == sid
            new = ScopeCodes.of(rowids[mine], matrix[mine])
            old = self.vectors.get(sid)
            merged = new if old is None else old.merged(new)
            if self.limit and len(merged) >= self.limit:
                self.big.add(sid)  # the HNSW cache's from now on
                self.vectors.pop(sid, None)
            else:
                self.vectors[sid] = merged

    def _scope(self, user_id: str, agent_id: str) -> int:
        key = (user_id, agent_id)
        sid = self.scope_ids.get(key)
        if sid is None:
            sid = self.scope_ids[key] = len(self.scopes)
            self.scopes.append(key)
        return sid

    def _string(self, value: str) -> int:
        i = self.string_ids.get(value)
        if i is None:
            i = self.string_ids[value] = len(self.strings)
            self.strings.append(value)
        return i

    def _reserve(self, size: int) -> None:
        """Room for rowids below `size`. Grows by an eighth and 1k rows: each growth copies
        the fact arrays (~60 B a row)."""
        if size <= len(self.present):
            return
        cap = max(size, len(self.present) + len(self.present) // 8 + 1024)
        for name in _FACTS:
            old = getattr(self, name)
            new = np.full(cap, _EMPTY.get(name, 0), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)
        if self.records is not None:
            self.records.reserve(cap)

    # ---- files ---------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the arrays atomically (a temporary file, then a rename). The codes of every
        scope go in one array, written scope by scope: no copy of them all in memory."""
        end = int(np.flatnonzero(self.present)[-1]) + 1 if self.count else 0
        sids = sorted(self.vectors)
        blocks = [self.vectors[s] for s in sids]
        meta = {"format": FORMAT, "epoch": self.epoch, "vector_epoch": self.vector_epoch, "seq": self.seq,
                "dims": self.dims, "limit": self.limit, "scopes": self.scopes, "strings": self.strings,
                "big": sorted(self.big), "records": self.records is not None}
        small = {name: getattr(self, name)[:end] for name in _FACTS}
        small["vector_scopes"] = np.asarray(sids, np.int64)
        small["vector_ends"] = np.cumsum([len(b) for b in blocks], dtype=np.int64)
        for part, dtype in (("rowids", np.int64), ("scale", np.float32), ("norm", np.float32)):
            small[f"vector_{part}"] = np.concatenate([getattr(b, part) for b in blocks] or [np.empty(0, dtype)])
        if self.records is not None:
            self.records.pack()
            self.records.compact()  # replaced and deleted texts stay out of the file (forget.py)
            small["record_start"], small["record_size"] = self.records.start[:end], self.records.size[:end]
            small["record_texts"] = self.records.buf[: self.records.used]
        tmp = temp_path(path)
        try:
            self._write(tmp, meta, small, blocks)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self.unsaved = 0

    def _write(self, tmp: Path, meta: dict[str, Any], small: dict[str, np.ndarray], blocks: list[ScopeCodes]) -> None:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as z:
            z.writestr("meta.npy", _npy(np.frombuffer(json.dumps(meta).encode(), np.uint8)))
            for name, array in small.items():
                z.writestr(f"{name}.npy", _npy(array))
            with z.open("vector_codes.npy", "w", force_zip64=True) as f:
                n = sum(len(b) for b in blocks)
                np.lib.format.write_array_header_1_0(f, {"descr": "|i1", "fortran_order": False, "shape": (n, self.dims)})
                for b in blocks:
                    f.write(np.ascontiguousarray(b.codes).data)

    @classmethod
    def load(cls, path: Path) -> MemoryRows:
        """Read a saved file; ValueError when it is not whole and consistent."""
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            if meta["format"] != FORMAT:
                raise ValueError(f"format {meta['format']}")
            m = cls(int(meta["dims"]), int(meta["limit"]), bool(meta["records"]))
            for name in _FACTS:
                setattr(m, name, z[name])
            if m.records is not None:
                m.records = PackedTexts.of(z["record_texts"], z["record_start"], z["record_size"])
                if len(m.records) != len(m.present) or bool(np.any((m.records.size >= 0) != m.present)):
                    raise ValueError("record texts do not fit the rows")
            sids, ends = z["vector_scopes"], z["vector_ends"]
            rowids, scale, norm, codes = z["vector_rowids"], z["vector_scale"], z["vector_norm"], z["vector_codes"]
        m.scopes = [(str(u), str(a)) for u, a in meta["scopes"]]
        m.scope_ids = {s: i for i, s in enumerate(m.scopes)}
        m.strings = [str(s) for s in meta["strings"]]
        m.string_ids = {s: i for i, s in enumerate(m.strings)}
        m.big = {int(s) for s in meta["big"]}
        n, present = len(m.present), m.present
        consistent = (
            all(len(getattr(m, name)) == n for name in _FACTS)
            and len(m.scope_ids) == len(m.scopes) and len(m.string_ids) == len(m.strings)
            and bool(np.all((m.owner[present] >= 0) & (m.owner[present] < len(m.scopes))))
            and all(bool(np.all((c[present] >= 0) & (c[present] < len(m.strings)))) for c in (m.status, m.category))
            and bool(np.all(m.session[present] < len(m.strings)))
            and len(sids) == len(ends) and codes.shape == (len(rowids), m.dims) and len(scale) == len(norm) == len(rowids)
            and (not len(ends) or ends[-1] == len(rowids)) and bool(np.all(np.diff(ends, prepend=0) >= 0))
            and bool(np.all((rowids >= 0) & (rowids < n))) and bool(np.all(present[rowids]))
        )
        if not consistent:
            raise ValueError("arrays do not fit together")
        starts = [0, *ends.tolist()][: len(ends)]
        for sid, s, e in zip(sids.tolist(), starts, ends.tolist(), strict=True):
            m.vectors[sid] = ScopeCodes(rowids[s:e], codes[s:e], scale[s:e], norm[s:e])  # views: no copy
        m.count = int(present.sum())
        m.epoch, m.vector_epoch, m.seq = str(meta["epoch"]), str(meta["vector_epoch"]), int(meta["seq"])
        return m


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()

