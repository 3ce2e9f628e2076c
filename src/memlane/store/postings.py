"""BM25 postings of one FTS5 table in numpy arrays, and their ranking exactly as FTS5's bm25().

Documents are numbered in (scope, rowid) order, so a scope is one range of document numbers,
and in each term's sorted posting list its rows are one slice, found by binary search. A
query reads only that slice. Newer rows wait in a small delta until `fold` merges them in.

Scores are recomputed as sqlite's fts5_aux.c computes bm25(), operation by operation: idf
is floored at 1e-6, each hit adds its column's weight, ties go by rowid. Two sets of
statistics are kept. "corpus": N, avgdl and each term's document count span the whole
table, as FTS5 counts them (scores equal to the last bit). "scope": they span the query's
scope only, as FTS5 would count them in a table holding just that scope's rows. A memory
engine wants the second: in one user's conversation the speakers' names are in half the
turns (idf near 0 there) but rare across all users, where they would dominate the ranking
(issue 3, LoCoMo R@10 0.787 → 0.809). Per scope, N and the token total are kept as arrays
updated on every change, and a term's count is its slice's length.
The formula is retrieval/bm25.py's, shared with the PostgreSQL store and the file search.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from memlane.retrieval import bm25
from memlane.store.erase import temp_path

_FORMAT = 1  # of the saved file


class Postings:
    """BM25 postings of one FTS5 table: sorted arrays (the base), plus a small delta of newer rows.

    Base documents are numbered in (scope, rowid) order. `doc` holds each term's documents in
    ascending order, term after term (`ptr` marks where each term starts), and `tf` holds
    their hits per text column. A delta row is kept in dicts until `fold` merges it in.
    `scope_docs` and `scope_tokens` count each scope's live documents and their tokens,
    base and delta alike: the N and avgdl of "scope" statistics."""

    def __init__(self, ncols: int) -> None:
        self.ncols = ncols
        self.terms: dict[str, int] = {}
        self.term_names: list[str] = []
        self.scopes: dict[str, int] = {}
        self.scope_names: list[str] = []
        self.rowid = np.zeros(0, np.int64)
        self.scope = np.zeros(0, np.int32)
        self.length = np.zeros(0, np.int32)  # tokens over all columns, the scope's included
        self.alive = np.zeros(0, np.bool_)
        self.scope_ptr = np.zeros(1, np.int64)
        self.scope_docs = np.zeros(0, np.int64)  # by scope id; may be longer than scope_names
        self.scope_tokens = np.zeros(0, np.int64)
        self.ptr = np.zeros(1, np.int64)
        self.doc = np.zeros(0, np.int32)
        self.tf: np.ndarray = np.zeros((ncols, 0), np.uint16)
        self.dead = 0  # base documents deleted or replaced since the last fold
        self._dead_in: dict[tuple[int, int], int] = {}  # (a, b) → dead documents of doc[a:b]
        self._by_rowid: tuple[np.ndarray, np.ndarray] | None = None
        self.d_rowid: list[int] = []
        self.d_scope: list[int] = []
        self.d_len: list[int] = []
        self.d_terms: list[dict[int, list[int]] | None] = []  # None: removed since
        self.d_post: dict[tuple[int, int], list[int]] = {}  # (scope, term) → delta documents
        self.d_df: dict[int, int] = {}
        self.d_at: dict[int, int] = {}  # rowid → its live delta document
        self.n_docs = 0
        self.n_tokens = 0
        self.epoch = ""
        self.seq = 0  # the last change of the log these postings include
        self.unsaved = 0  # changes applied since the copy on disk

    # ---- lookups -------------------------------------------------------------------------

    def term_id(self, token: str) -> int:
        tid = self.terms.get(token)
        if tid is None:
            tid = self.terms[token] = len(self.term_names)
            self.term_names.append(token)
        return tid

    def scope_id(self, token: str) -> int:
        sid = self.scopes.get(token)
        if sid is None:
            sid = self.scopes[token] = len(self.scope_names)
            self.scope_names.append(token)
            if sid >= len(self.scope_docs):  # new scopes come one by one: grow by doubling
                room = np.zeros(max(16, len(self.scope_docs)), np.int64)
                self.scope_docs = np.concatenate((self.scope_docs, room))
                self.scope_tokens = np.concatenate((self.scope_tokens, room))
        return sid

    def df(self, tid: int) -> int:
        """Documents holding the term, all scopes: the n of "corpus" statistics."""
        n = self.d_df.get(tid, 0)
        if tid < len(self.ptr) - 1:
            n += self._live(int(self.ptr[tid]), int(self.ptr[tid + 1]))
        return n

    def scope_df(self, tid: int, sid: int, column: int | None = None) -> int:
        """Documents of scope `sid` holding the term (in `column` only, when given): the n of
        "scope" statistics."""
        a, b = self._slice(tid, sid)
        delta = self.d_post.get((sid, tid), ())
        if column is None:
            return self._live(a, b) + len(delta)
        held = self.tf[column, a:b] > 0
        if self.dead:
            held &= self.alive[self.doc[a:b]]
        return int(np.count_nonzero(held)) + sum(
            1 for j in delta if (counts := self.d_terms[j]) is not None and counts[tid][column] > 0)

    def _slice(self, tid: int, sid: int) -> tuple[int, int]:
        """Where the scope's base documents holding the term are in `doc`: the term's run,
        cut to the scope's range of document numbers by binary search."""
        if tid >= len(self.ptr) - 1 or sid >= len(self.scope_ptr) - 1:
            return 0, 0
        lo, hi = int(self.scope_ptr[sid]), int(self.scope_ptr[sid + 1])
        start, end = int(self.ptr[tid]), int(self.ptr[tid + 1])
        if hi == lo or end == start:
            return 0, 0
        # needles of the haystack's dtype: else numpy converts the whole run first
        i, j = np.searchsorted(self.doc[start:end], np.asarray((lo, hi), self.doc.dtype))
        return start + int(i), start + int(j)

    def _live(self, a: int, b: int) -> int:
        """Live documents of doc[a:b]. Runs of different terms or scopes never overlap, so
        (a, b) names one; their dead counts are kept until the next document dies."""
        if not self.dead or b <= a:
            return b - a
        dead = self._dead_in.get((a, b))
        if dead is None:
            dead = self._dead_in[(a, b)] = b - a - int(np.count_nonzero(self.alive[self.doc[a:b]]))
        return b - a - dead

    def bytes(self) -> int:
        """Memory held by the arrays (the delta's dicts not counted)."""
        arrays = (self.rowid, self.scope, self.length, self.alive, self.scope_ptr, self.scope_docs,
                  self.scope_tokens, self.ptr, self.doc, self.tf)
        return sum(a.nbytes for a in arrays)

    # ---- changes -------------------------------------------------------------------------

    def remove(self, rowid: int) -> None:
        """Drop the row's current version, wherever it is."""
        j = self.d_at.pop(rowid, None)
        if j is not None:
            terms = self.d_terms[j]
            assert terms is not None
            self.d_terms[j] = None
            sid = self.d_scope[j]
            for tid in terms:
                self.d_df[tid] -= 1
                docs = self.d_post[(sid, tid)]
                docs.remove(j)
                if not docs:
                    del self.d_post[(sid, tid)]
            self._count(sid, -1, -self.d_len[j])
            return
        if self._by_rowid is None:
            order = np.argsort(self.rowid, kind="stable")
            self._by_rowid = (self.rowid[order], order)
        keys, order = self._by_rowid
        i = int(np.searchsorted(keys, rowid))
        if i < len(keys) and keys[i] == rowid and self.alive[order[i]]:
            d = int(order[i])
            self.alive[d] = False
            self.dead += 1
            self._dead_in.clear()
            self._count(int(self.scope[d]), -1, -int(self.length[d]))

    def add(self, rowid: int, columns: Sequence[Sequence[str]], scope_tokens: Sequence[str]) -> None:
        """Add a row's new version (call `remove` first) to the delta."""
        # the scope column holds one token (migrations.scope_token); its tokens count in the length
        sid = self.scope_id(scope_tokens[0] if scope_tokens else "")
        counts: dict[int, list[int]] = {}
        for c, tokens in enumerate(columns):
            for t in tokens:
                tid = self.term_id(t)
                hits = counts.get(tid)
                if hits is None:
                    hits = counts[tid] = [0] * self.ncols
                hits[c] += 1
        j = len(self.d_rowid)
        length = sum(len(t) for t in columns) + len(scope_tokens)
        self.d_rowid.append(rowid)
        self.d_scope.append(sid)
        self.d_len.append(length)
        self.d_terms.append(counts)
        for tid in counts:
            self.d_post.setdefault((sid, tid), []).append(j)
            self.d_df[tid] = self.d_df.get(tid, 0) + 1
        self.d_at[rowid] = j
        self._count(sid, 1, length)

    def _count(self, sid: int, docs: int, tokens: int) -> None:
        """A document of scope `sid` came (+1) or went (-1): the table's and the scope's totals."""
        self.n_docs += docs
        self.n_tokens += tokens
        self.scope_docs[sid] += docs
        self.scope_tokens[sid] += tokens

    def fold(self) -> None:
        """Merge the delta into the sorted arrays and drop the removed documents.

        Documents are renumbered (new ones join their scope's range), but kept ones keep their
        order, so each term's base postings stay sorted: the delta's are inserted at the
        places a binary search finds, in a few passes over the arrays (1M rows, 32k new: 0.9 s,
        once per max(2048, rows / 32) changes)."""
        if not self.d_rowid and not self.dead:
            return
        live = [j for j, t in enumerate(self.d_terms) if t is not None]
        keep = np.flatnonzero(self.alive)
        rowid = np.concatenate((self.rowid[keep], np.asarray([self.d_rowid[j] for j in live], np.int64)))
        scope = np.concatenate((self.scope[keep], np.asarray([self.d_scope[j] for j in live], np.int32)))
        length = np.concatenate((self.length[keep], np.asarray([self.d_len[j] for j in live], np.int32)))
        order = np.lexsort((rowid, scope))
        pos = np.empty(len(order), np.int64)
        pos[order] = np.arange(len(order))
        renumber = np.full(len(self.rowid), -1, np.int32)
        renumber[keep] = pos[: len(keep)]
        doc, tf, ptr = renumber[self.doc], self.tf, self.ptr
        if self.dead:
            gone = np.flatnonzero(doc < 0)  # postings of removed documents leave their terms' runs
            ptr = ptr - np.concatenate(([0], np.cumsum(np.bincount(
                np.searchsorted(ptr, gone, side="right") - 1, minlength=len(ptr) - 1))))
            doc, tf = np.delete(doc, gone), np.delete(tf, gone, axis=1)
        ptr = np.concatenate((ptr, np.full(len(self.term_names) + 1 - len(ptr), ptr[-1])))  # new terms: empty
        d_term: list[int] = []
        d_doc: list[int] = []
        d_tf: list[list[int]] = []
        for k, j in enumerate(live):
            counts = self.d_terms[j]
            assert counts is not None
            d_term.extend(counts)
            d_doc.extend([int(pos[len(keep) + k])] * len(counts))
            d_tf.extend(counts.values())
        terms, docs = np.asarray(d_term, np.int64), np.asarray(d_doc, np.int64)
        by = np.lexsort((docs, terms))
        terms, docs = terms[by], docs[by]
        hits = np.asarray(d_tf, np.int64).reshape(-1, self.ncols)[by].T
        at = np.empty(len(terms), np.int64)
        bounds = np.flatnonzero(np.diff(terms)) + 1
        for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(terms)], strict=True):
            if hi > lo:
                t = int(terms[lo])
                a, b = int(ptr[t]), int(ptr[t + 1])
                at[lo:hi] = a + np.searchsorted(doc[a:b], docs[lo:hi].astype(doc.dtype))
        ptr = ptr + np.concatenate(([0], np.cumsum(np.bincount(terms, minlength=len(ptr) - 1))))
        self._set_base(rowid[order], scope[order], length[order], ptr, _insert(doc, at, docs), _insert(tf, at, hits))

    def _set_base(self, rowid: np.ndarray, scope: np.ndarray, length: np.ndarray, ptr: np.ndarray,
                  doc: np.ndarray, tf: np.ndarray) -> None:
        """Install documents in (scope, rowid) order and their postings, term after term
        (`ptr`), each term's sorted by document."""
        self.rowid, self.scope, self.length = rowid.astype(np.int64), scope.astype(np.int32), length.astype(np.int32)
        self.alive = np.ones(len(rowid), np.bool_)
        self.scope_ptr = _offsets(self.scope, len(self.scope_names))
        self._scope_totals()
        self.ptr = ptr.astype(np.int64)
        self.doc = doc.astype(np.int32)
        self.tf = tf.astype(np.uint16 if tf.size == 0 or int(tf.max()) < 2**16 else np.int32)
        self.dead = 0
        self._dead_in.clear()
        self._by_rowid = None
        self.d_rowid, self.d_scope, self.d_len, self.d_terms = [], [], [], []
        self.d_post, self.d_df, self.d_at = {}, {}, {}
        self.n_docs, self.n_tokens = len(rowid), int(self.length.sum(dtype=np.int64))

    def _scope_totals(self) -> None:
        """Each scope's documents and tokens, from the base arrays (no delta, none dead)."""
        self.scope_docs = np.diff(self.scope_ptr).astype(np.int64)
        ends = np.concatenate(([0], np.cumsum(self.length, dtype=np.int64)))
        self.scope_tokens = ends[self.scope_ptr[1:]] - ends[self.scope_ptr[:-1]]

    # ---- ranking -------------------------------------------------------------------------

    def rank(self, sid: int, tids: Sequence[int | None], weights: Sequence[float], limit: int,
             per_scope: bool = False, prune: bool = True) -> list[tuple[int, float]]:
        """[(rowid, bm25)] of scope `sid` best first, as FTS5's `bm25()` scores them.

        `tids` are the query's terms in order (None: a term no row holds); `weights` the text
        columns' weights. The float operations follow fts5_aux.c one by one: equal scores.
        `per_scope`: N, avgdl and the terms' counts of the scope ("scope" statistics), not
        of the table ("corpus").

        A term in most of the scope's rows (idf near 0) would make every one of them a
        candidate. So, as in MaxScore, rows holding only such terms are skipped when even
        their best possible score is below the k-th best of the others. The check is exact;
        if it fails, every row is ranked."""
        if per_scope:
            n_all, n_tokens = (int(self.scope_docs[sid]), int(self.scope_tokens[sid])) if sid < len(
                self.scope_names) else (0, 0)
        else:
            n_all, n_tokens = self.n_docs, self.n_tokens
        if n_all == 0:
            return []
        avgdl = n_tokens / n_all
        terms: list[_Term] = []
        for tid in tids:
            if tid is None:
                continue  # a phrase no row holds adds 0 to every score
            a, b = self._slice(tid, sid)
            delta = self.d_post.get((sid, tid), [])
            n = self._live(a, b) + len(delta) if per_scope else self.df(tid)
            if n == 0:
                continue
            if b > a or delta:
                terms.append(_Term(bm25.idf(n_all, n), tid, a, b, delta))
        if not terms:
            return []
        sizes = [t.b - t.a + len(t.delta) for t in terms]  # postings of each term
        skipped = bm25.skippable([t.idf for t in terms], sizes) if prune and min(weights, default=1.0) >= 0.0 else set()
        held = [None if i in skipped else self._gather(t) for i, t in enumerate(terms)]
        cands = _union([h[0] for h in held if h is not None])
        if skipped and len(cands) < limit:
            return self.rank(sid, tids, weights, limit, per_scope, prune=False)
        score = np.zeros(len(cands))
        for t, h in zip(terms, held, strict=True):
            if h is None:
                at, tf, dl = self._lookup(t, cands)
            else:
                at, tf, dl = np.searchsorted(cands, h[0]), h[1], h[2]
            f = _frequency(tf, weights)
            score[at] += bm25.term_score(t.idf, f, dl, avgdl)
        neg = -score
        if skipped:
            # each term adds less than idf·(k1+1): a row holding only skipped terms scores below
            # `bound`, so it cannot displace the k-th best (float sums of smaller terms stay smaller)
            bound = sum(bm25.max_term_score(terms[i].idf) for i in skipped) * (1 + 1e-9)
            if not -np.partition(neg, limit - 1)[limit - 1] > bound:
                return self.rank(sid, tids, weights, limit, per_scope, prune=False)
        rowids = np.empty(len(cands), np.int64)
        nb = len(self.rowid)
        k = int(np.searchsorted(cands, nb))  # base documents first, then the delta's
        rowids[:k] = self.rowid[cands[:k]]
        if k < len(cands):
            rowids[k:] = np.asarray(self.d_rowid, np.int64)[cands[k:] - nb]
        top = _top(neg, rowids, limit)
        return list(zip(rowids[top].tolist(), neg[top].tolist(), strict=True))

    def _gather(self, t: _Term) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(documents, hits per column, lengths) of the scope's live rows holding the term.
        Documents are numbered globally: base ones as they are, the delta's after them."""
        docs, tf = self.doc[t.a : t.b], self.tf[:, t.a : t.b]
        if self.dead:
            keep = self.alive[docs]
            docs, tf = docs[keep], tf[:, keep]
        dl = self.length[docs].astype(np.float64)
        if not t.delta:
            return docs.astype(np.int64), tf, dl
        nb = len(self.rowid)
        extra = np.asarray([self.d_terms[j][t.tid] for j in t.delta], np.int64).T  # type: ignore[index]
        return (np.concatenate((docs.astype(np.int64), np.asarray(t.delta, np.int64) + nb)),
                np.concatenate((tf, extra), axis=1),
                np.concatenate((dl, np.asarray([self.d_len[j] for j in t.delta], np.float64))))

    def _lookup(self, t: _Term, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions in `cands`, hits per column, lengths) of the candidates holding the term."""
        nb = len(self.rowid)
        k = int(np.searchsorted(cands, nb))
        seg = self.doc[t.a : t.b]
        at = np.searchsorted(seg, cands[:k].astype(seg.dtype))  # same dtype: no copy of the run
        found = np.flatnonzero(seg[np.minimum(at, len(seg) - 1)] == cands[:k]) if len(seg) else np.zeros(0, np.int64)
        tf, dl = self.tf[:, t.a + at[found]], self.length[cands[found]].astype(np.float64)
        if t.delta:
            mine = [(int(p), j) for j in t.delta
                    if (p := np.searchsorted(cands, nb + j)) < len(cands) and cands[p] == nb + j]
            if mine:
                found = np.concatenate((found, np.asarray([p for p, _ in mine], np.int64)))
                extra = np.asarray([self.d_terms[j][t.tid] for _, j in mine], np.int64).T  # type: ignore[index]
                tf = np.concatenate((tf, extra), axis=1)
                dl = np.concatenate((dl, np.asarray([self.d_len[j] for _, j in mine], np.float64)))
        return found, tf, dl

    # ---- files ---------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the folded postings atomically (a temporary file, then a rename)."""
        self.fold()
        self._drop_unused_terms()
        meta = {"format": _FORMAT, "epoch": self.epoch, "seq": self.seq, "ncols": self.ncols,
                "n_tokens": self.n_tokens}
        terms, term_ends = _pack(self.term_names)
        scopes, scope_ends = _pack(self.scope_names)
        tmp = temp_path(path)
        try:
            with open(tmp, "wb") as f:
                np.savez(f, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), rowid=self.rowid,
                         scope=self.scope, length=self.length, scope_ptr=self.scope_ptr, ptr=self.ptr,
                         doc=self.doc, tf=self.tf, terms=terms, term_ends=term_ends, scopes=scopes,
                         scope_ends=scope_ends)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self.unsaved = 0

    def _drop_unused_terms(self) -> None:
        """Forget the terms no document holds any more (call right after `fold`): the words of
        deleted rows must not outlive them in the saved file (forget.py)."""
        counts = np.diff(self.ptr)
        used = counts > 0
        if bool(used.all()):
            return
        self.term_names = [t for t, u in zip(self.term_names, used.tolist(), strict=True) if u]
        self.terms = {t: i for i, t in enumerate(self.term_names)}
        self.ptr = np.concatenate(([0], np.cumsum(counts[used]))).astype(np.int64)

    @classmethod
    def load(cls, path: Path, ncols: int) -> Postings:
        """Read a saved file; ValueError when it is not whole and consistent."""
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            if meta["format"] != _FORMAT or meta["ncols"] != ncols:
                raise ValueError(f"format {meta['format']} with {meta['ncols']} columns")
            p = cls(ncols)
            p.term_names = _unpack(z["terms"], z["term_ends"])
            p.scope_names = _unpack(z["scopes"], z["scope_ends"])
            p.terms = {t: i for i, t in enumerate(p.term_names)}
            p.scopes = {s: i for i, s in enumerate(p.scope_names)}
            rowid, scope, length, doc, tf = z["rowid"], z["scope"], z["length"], z["doc"], z["tf"]
            p.scope_ptr, p.ptr = z["scope_ptr"].astype(np.int64), z["ptr"].astype(np.int64)
        nb = len(rowid)
        consistent = (
            len(scope) == len(length) == nb and tf.shape == (ncols, len(doc))
            and len(p.ptr) == len(p.term_names) + 1 and p.ptr[0] == 0 and p.ptr[-1] == len(doc)
            and len(p.scope_ptr) == len(p.scope_names) + 1 and p.scope_ptr[-1] == nb
            and bool(np.all(np.diff(p.ptr) >= 0)) and bool(np.all(np.diff(p.scope_ptr) >= 0))
            and (len(doc) == 0 or (int(doc.min()) >= 0 and int(doc.max()) < nb))
            and int(length.sum(dtype=np.int64)) == meta["n_tokens"]
        )
        if not consistent:
            raise ValueError("arrays do not fit together")
        p.rowid, p.scope, p.length, p.doc, p.tf = rowid, scope, length, doc, tf
        p.alive = np.ones(nb, np.bool_)
        p._scope_totals()
        p.n_docs, p.n_tokens = nb, int(meta["n_tokens"])
        p.epoch, p.seq = str(meta["epoch"]), int(meta["seq"])
        return p


def build(rows: Iterable[Sequence[Any]], ncols: int, tokenize: Callable[[Any], list[str]]) -> Postings:
    """Postings of rows (rowid, *text columns, scope), read in rowid order; `tokenize` gives
    the tokens FTS5 stores for a column value (lexindex.Tokenizer.document).

    Tokenizing costs most of a build. FTS5's tokenizer never joins tokens across white space,
    so each distinct white-space-separated chunk is tokenized once. On 1M rows that loop took
    2.1 s, against 4.5 s for one tokenizer call per row, and 8.4 s just to read fts5vocab's
    'instance' table; the whole build took 6-7 s."""
    p = Postings(ncols)
    chunks = _Chunks(lambda chunk: tuple(p.term_id(t) for t in tokenize(chunk)))
    rowids: list[int] = []
    owners: list[Any] = []
    flat: list[list[int]] = [[] for _ in range(ncols)]
    counts: list[list[int]] = [[] for _ in range(ncols)]
    ids_of, add_rowid, add_owner = chunks.__getitem__, rowids.append, owners.append  # bound once
    for row in rows:
        add_rowid(row[0])
        add_owner(row[-1])
        for c in range(ncols):
            ids, text = flat[c], row[1 + c]
            before = len(ids)
            if text:  # chunk by chunk, in C: map + chain
                ids.extend(chain.from_iterable(map(ids_of, (text if isinstance(text, str) else str(text)).split())))
            counts[c].append(len(ids) - before)
    # the scope column holds one token (migrations.scope_token); its tokens count in the length
    owner: dict[Any, tuple[int, int]] = {}
    for value in set(owners):
        tokens = tokenize(value)
        owner[value] = (p.scope_id(tokens[0] if tokens else ""), len(tokens))
    doc_scope = [owner[v][0] for v in owners]
    doc_len = np.sum([np.asarray(c, np.int64) for c in counts], axis=0) + np.asarray(
        [owner[v][1] for v in owners], np.int64)
    nb = len(rowids)
    scope = np.asarray(doc_scope, np.int64)
    perm = _stable_order(scope)  # documents by (scope, rowid): rows came in rowid order
    keys: list[np.ndarray] = []
    hits: list[np.ndarray] = []
    for c in range(ncols):
        lens = np.asarray(counts[c], np.int64)
        tid = np.asarray(flat[c], np.int64)[_regroup(lens, perm)]
        doc = np.repeat(np.arange(nb, dtype=np.int64), lens[perm])
        by = _stable_order(tid)  # documents stay ascending within a term
        key = tid[by] * max(1, nb) + doc[by]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else np.zeros(0, np.int64)
        keys.append(key[first])
        hits.append(np.diff(np.append(first, len(key))))
    merged = keys[0] if ncols == 1 else np.unique(np.concatenate(keys))
    tf = np.zeros((ncols, len(merged)), np.int64)
    for c in range(ncols):
        tf[c, np.searchsorted(merged, keys[c])] = hits[c]
    p._set_base(np.asarray(rowids, np.int64)[perm], scope[perm], doc_len[perm],
                _offsets(merged // max(1, nb), len(p.term_names)), merged % max(1, nb), tf)
    return p


class _Chunks(dict[str, tuple[int, ...]]):
    """Term ids of white-space-separated chunks, tokenized on first sight (bounded)."""

    def __init__(self, tokenize: Callable[[str], tuple[int, ...]]) -> None:
        super().__init__()
        self._tokenize = tokenize

    def __missing__(self, chunk: str) -> tuple[int, ...]:
        if len(self) > 2_000_000:
            self.clear()
        got = self[chunk] = self._tokenize(chunk)
        return got


class _Term(NamedTuple):
    """One query term in one scope: its idf, and where its postings are (base slice, delta)."""

    idf: float
    tid: int
    a: int
    b: int
    delta: list[int]


def _insert(arr: np.ndarray, at: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`arr` with `values` inserted before the positions `at` (ascending) of its last axis:
    np.insert without its sort and copies (the fold's hot spot)."""
    if len(at) == 0:
        return arr
    n = arr.shape[-1]
    dtype = np.result_type(arr, np.min_scalar_type(int(values.max())))
    out = np.empty((*arr.shape[:-1], n + len(at)), dtype)
    new = at + np.arange(len(at))
    old = np.ones(n + len(at), np.bool_)
    old[new] = False
    out[..., old] = arr
    out[..., new] = values
    return out


def _union(arrays: list[np.ndarray]) -> np.ndarray:
    """Sorted distinct values of sorted arrays (a stable sort merges sorted runs quickly)."""
    if len(arrays) == 1:
        return arrays[0]
    both = np.sort(np.concatenate(arrays), kind="stable")
    return both[np.concatenate(([True], both[1:] != both[:-1]))] if len(both) else both


def _frequency(tf: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Σ over a row's hits of its column's weight. fts5_aux.c adds the weight hit by hit, in
    column order, so it is added that way here too, and the float sum is the same."""
    f = np.zeros(tf.shape[1])
    for c in range(tf.shape[0]):
        w = float(weights[c]) if c < len(weights) else 1.0
        h = tf[c]
        if w == 0.0 or not h.any():
            continue
        if c == 0 and w == 1.0:
            f = h.astype(np.float64)  # 0 + 1.0 + 1.0 … is exactly h
            continue
        for k in range(1, int(h.max()) + 1):
            f[h >= k] += w
    return f


def _top(neg: np.ndarray, rowids: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the `limit` best by (score, rowid): FTS5's ORDER BY bm25 LIMIT breaks ties
    by rowid, since it yields rows in rowid order and SQLite's sort is stable."""
    if len(neg) > limit:
        kth = np.partition(neg, limit - 1)[limit - 1]
        strict = np.flatnonzero(neg < kth)
        tie = np.flatnonzero(neg == kth)
        need = limit - len(strict)
        if len(tie) > need:
            tie = tie[np.argpartition(rowids[tie], need - 1)[:need]]
        pick = np.concatenate((strict, tie))
    else:
        pick = np.arange(len(neg))
    return pick[np.lexsort((rowids[pick], neg[pick]))]


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """A stable argsort of keys in [0, 2**32), in 16-bit passes: numpy's stable sort is a
    radix sort for 16-bit keys, ~3x faster than comparing 64-bit ones."""
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    if len(keys) and int(keys.max()) >= 2**16:
        order = order[np.argsort((keys[order] >> 16).astype(np.uint16), kind="stable")]
    return order


def _regroup(lens: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Positions in a flat token list whose documents are taken in the order `perm`."""
    starts = (np.cumsum(lens) - lens)[perm]
    moved = lens[perm]
    return np.repeat(starts - (np.cumsum(moved) - moved), moved) + np.arange(int(moved.sum()))


def _offsets(ids: np.ndarray, n: int) -> np.ndarray:
    """Where each id's run starts in `ids` sorted ascending (n + 1 entries)."""
    out = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(ids, minlength=n), out=out[1:])
    return out


def _pack(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = [s.encode("utf-8", "surrogateescape") for s in names]
    return np.frombuffer(b"".join(raw), np.uint8), np.cumsum([len(r) for r in raw], dtype=np.int64)


def _unpack(blob: np.ndarray, ends: np.ndarray) -> list[str]:
    raw = blob.tobytes()
    starts = [0, *ends[:-1].tolist()]
    return [raw[s:e].decode("utf-8", "surrogateescape") for s, e in zip(starts, ends.tolist(), strict=True)]

