"""Texts by rowid in one byte buffer, for the memory cache's records (memrows.py).

A Python str per row would cost ~50 B of header each, and a list of 1M of them is one
container the garbage collector walks: a 45 ms pause was measured in the 1M scale bench
(issue 3). Here a row's text is a slice of `buf` (`start`, `size`; size -1: none). Rows
written since the last `pack` wait in a dict; `pack` appends them (the buffer grows by half
again when full, so a build appends in amortised linear time), and rewrites the buffer once
the space of replaced texts outweighs the live ones.
"""

from __future__ import annotations

import numpy as np

_PACK_AT = 4_096  # rows waiting before they are appended: one copy of the buffer a batch
_CHUNK = 16_384  # rows gathered at once when rewriting (an index of ~2 MB per 1k B of text)


class PackedTexts:
    def __init__(self, capacity: int = 0) -> None:
        self.buf = np.empty(0, np.uint8)  # the first `used` bytes are texts, live or replaced
        self.used = 0
        self.start = np.zeros(capacity, np.int64)
        self.size = np.full(capacity, -1, np.int32)
        self.fresh: dict[int, bytes] = {}
        self.garbage = 0  # bytes of buf no row points at

    def __len__(self) -> int:
        return len(self.size)

    @property
    def nbytes(self) -> int:
        return self.buf.nbytes + self.start.nbytes + self.size.nbytes + sum(len(b) + 33 for b in self.fresh.values())

    def get(self, rowid: int) -> str | None:
        raw = self.fresh.get(rowid)
        if raw is None:
            n = int(self.size[rowid])
            if n < 0:
                return None
            s = int(self.start[rowid])
            raw = self.buf[s : s + n].tobytes()
        return raw.decode("utf-8", "surrogatepass")

    def set(self, rowid: int, text: str | None) -> None:
        if self.size[rowid] >= 0:
            self.garbage += int(self.size[rowid])
            self.size[rowid] = -1
        if text is None:
            self.fresh.pop(rowid, None)
            return
        self.fresh[rowid] = text.encode("utf-8", "surrogatepass")
        if len(self.fresh) >= _PACK_AT:
            self.pack()

    def reserve(self, capacity: int) -> None:
        if capacity > len(self.size):
            self.start = np.concatenate((self.start, np.zeros(capacity - len(self.start), np.int64)))
            self.size = np.concatenate((self.size, np.full(capacity - len(self.size), -1, np.int32)))

    def pack(self) -> None:
        """Append the waiting rows; rewrite the buffer when it is mostly replaced texts."""
        if self.fresh:
            rowids = np.fromiter(self.fresh, np.int64, len(self.fresh))
            sizes = np.fromiter((len(b) for b in self.fresh.values()), np.int64, len(self.fresh))
            new = np.frombuffer(b"".join(self.fresh.values()), np.uint8)
            if self.used + len(new) > len(self.buf):
                grown = np.empty(max(self.used + len(new), len(self.buf) * 3 // 2), np.uint8)
                grown[: self.used] = self.buf[: self.used]
                self.buf = grown
            self.buf[self.used : self.used + len(new)] = new
            self.start[rowids] = self.used + np.cumsum(sizes) - sizes
            self.size[rowids] = sizes
            self.used += len(new)
            self.fresh.clear()
        if self.garbage > max(1 << 20, self.used - self.garbage):
            self._rewrite()

    def compact(self) -> None:
        """Drop the replaced texts now (before a save: a forgotten text must not reach the file)."""
        self.pack()
        if self.garbage:
            self._rewrite()

    def _rewrite(self) -> None:
        """The live texts in rowid order, without the replaced ones."""
        live = np.maximum(self.size, 0).astype(np.int64)
        start = np.cumsum(live) - live
        buf = np.empty(int(live.sum()), np.uint8)
        for a in range(0, len(live), _CHUNK):
            b = min(len(live), a + _CHUNK)
            n = live[a:b]
            if not n.any():
                continue
            # byte i of row r comes from old start[r] + i: one gather for the chunk
            offsets = np.repeat(self.start[a:b] - start[a:b], n)
            dest = np.arange(start[a], start[a] + int(n.sum()))
            buf[dest] = self.buf[dest + offsets]
        self.buf, self.start, self.used, self.garbage = buf, start, len(buf), 0

    @classmethod
    def of(cls, buf: np.ndarray, start: np.ndarray, size: np.ndarray) -> PackedTexts:
        """From saved arrays; ValueError when they do not fit together."""
        t = cls()
        ok = size >= 0
        if len(start) != len(size) or (ok.any() and (int((start[ok] + size[ok]).max()) > len(buf)
                                                     or int(start[ok].min()) < 0)):
            raise ValueError("texts out of their buffer")
        t.buf, t.used, t.start, t.size = buf, len(buf), start.astype(np.int64), size.astype(np.int32)
        t.garbage = len(buf) - int(size[ok].sum())
        return t
