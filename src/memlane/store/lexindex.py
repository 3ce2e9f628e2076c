"""An in-process BM25 cache per FTS5 table: the ranking path of full-text search.

FTS5 computes bm25() for every matching row before it can sort them. For one user holding
100k memories that cost 117 ms p95 a query. Over 1M memories of 1k users, each term's
doclist spans every user, so ANDing in the scope's token still seeks through all of them
(57 ms; issue 3). And FTS5's statistics span the whole table, every user's rows, where a
memory engine wants each scope's own (postings.py). So every corpus holding at least
`SearchConfig.lexical_threshold` rows (0 by default: all) is ranked here, from the postings
of postings.py, with "scope" statistics unless `lexical_statistics` says "corpus".

The tokens are the ones FTS5 stores: the stored column text goes through FTS5's tokenizer
(through apsw). A query is OR-ed quoted terms (text.fts_query). Some are left to FTS5, which
ranks with the table's statistics: a term that FTS5 would read as a phrase of several
tokens, a term that is some scope's token (it would match the scope column), a query made
inside an open write transaction, and a cache that cannot be built.

SQLite stays the source of truth (DESIGN.md, "Scale-out"), as it does for the vector caches
in vindex.py. The first process to build a corpus's cache sets `text_corpora.logged`
(migration m005). From then on, every FTS write of that corpus appends its rowid to
`text_log` inside the writer's transaction. A query first applies the entries after the
cache's own sequence number: it re-reads the row, re-tokenizes it, and replaces any older
version. New rows go to a small delta. The delta is folded into the arrays in batches, so a
stream of single writes stays cheap. The cache of a corpus of 1,000 rows or more is saved
under `<home>/lexindex/` with the sequence number it includes, so a new process loads it
instead of rebuilding; a smaller one is rebuilt, faster than a file is read. A save prunes
the log entries it includes. A missing, stale or damaged file is rebuilt from SQLite.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import apsw
import numpy as np

from memlane.models import Corpus
from memlane.store.fts5 import FTS_TABLES
from memlane.store.postings import Postings, build
from memlane.store.vindex import Access

log = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 32768  # FTS5_MAX_TOKEN_SIZE: FTS5 stores longer tokens cut to this
# corpus → (FTS5 table, its text columns); the scope column always follows them (m003)
COLUMNS: dict[str, tuple[str, tuple[str, ...]]] = {base: (fts, cols) for fts, (base, cols) in FTS_TABLES.items()}
_QUOTED = '"(?:[^"]|"")*"'
_MATCH = re.compile(f"{_QUOTED}(?: OR {_QUOTED})*")
_TERM = re.compile('"((?:[^"]|"")*)"')
_Readers = (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile)
# postings of fewer documents are not saved but rebuilt by each process: 1k memories build
# in ~7 ms, against ~2 ms to read a file and ~2 ms to write it at each save; and a store
# holding a few rows leaves no file behind. Long rows count too: 500 long chat turns
# (LongMemEval, ~20k tokens and more) took 230 ms to build in every new process (issue 14)
_FILE_MIN_DOCS = 1_000
_FILE_MIN_TOKENS = 20_000


def parse_match(match: str) -> list[str] | None:
    """The terms of a MATCH built like text.fts_query (`"a" OR "b"`); None for any other syntax."""
    if not _MATCH.fullmatch(match):
        return None
    return [t.replace('""', '"') for t in _TERM.findall(match)]


def match_of(terms: Sequence[str]) -> str:
    """The FTS5 MATCH OR-ing `terms`, each quoted (the inverse of `parse_match`)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


# ---- the writer's side: called inside the transaction that changes an FTS5 table ----------


def record(conn: Any, corpus: Corpus, rowids: Sequence[int], op: str) -> None:
    """Log `op` ('put' / 'del') of `rowids` when some process keeps a cache of the corpus.
    Runs in the caller's transaction, so the log and the data commit together."""
    logged = conn.execute("SELECT logged FROM text_corpora WHERE corpus = ?", (corpus,)).fetchall()
    if not rowids or not logged or not logged[0][0]:
        return
    conn.executemany("INSERT INTO text_log(corpus, row, op) VALUES (?, ?, ?)", [(corpus, int(r), op) for r in rowids])
    conn.execute("UPDATE text_corpora SET last_seq = (SELECT MAX(seq) FROM text_log) WHERE corpus = ?", (corpus,))


# ---- tokens --------------------------------------------------------------------------------


class Tokenizer:
    """FTS5's own `porter unicode61` tokenizer, as the FTS5 tables declare it (m001, m003)."""

    def __init__(self, conn: Any) -> None:
        self._tok = conn.fts5_tokenizer("porter", ["unicode61"])
        self._queries: dict[str, list[str]] = {}

    def document(self, text: Any) -> list[str]:
        """The tokens FTS5 stores for a column value."""
        if text is None or text == "":
            return []
        return [_clip(t) for t in self._tok(str(text).encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                                             include_offsets=False, include_colocated=False)]

    def query(self, term: str) -> list[str]:
        """The tokens of one quoted query term (more than one: FTS5 reads a phrase)."""
        got = self._queries.get(term)
        if got is None:
            if len(self._queries) > 50_000:
                self._queries.clear()
            got = self._queries[term] = list(self._tok(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                                                       include_offsets=False, include_colocated=False))
        return got


def _clip(token: str) -> str:
    if len(token) * 4 <= MAX_TOKEN_BYTES:  # the common case: it cannot be too long
        return token
    raw = token.encode("utf-8")
    return token if len(raw) <= MAX_TOKEN_BYTES else raw[:MAX_TOKEN_BYTES].decode("utf-8", "surrogateescape")


# ---- the reader's side ---------------------------------------------------------------------


@dataclass(frozen=True)
class LexSettings:
    """SearchConfig's lexical_* fields; the store layer takes no Config."""

    threshold: int = 0
    statistics: Literal["scope", "corpus"] = "scope"


class LexCache:
    """The BM25 postings of one SQLite store, one per corpus at or above the threshold."""

    def __init__(self, db: Access, directory: Path, prefix: str, settings: LexSettings) -> None:
        self._conn, self._snapshot, self._transaction = db.conn, db.snapshot, db.transaction
        self._in_transaction = db.in_transaction
        self._dir = directory
        self._prefix = prefix
        self.settings = settings
        self.tokenizer = Tokenizer(db.conn)
        self._entries: dict[Corpus, Postings] = {}
        self.builds = 0  # postings built from SQLite / loaded from a file, by this process
        self.loads = 0
        self._damaged: set[Corpus] = set()  # files that failed to load: the next save replaces them

    def search(self, corpus: Corpus, scope_token: str, terms: Sequence[str], limit: int,
               weights: Sequence[float]) -> list[tuple[int, float]] | None:
        """[(rowid, bm25)] best first of the scope whose FTS5 token is `scope_token`, for the
        OR of `terms`; None when FTS5 must answer (a small corpus, a phrase, a scope's token)."""
        if limit <= 0:
            return None
        p = self._ready(corpus)
        if p is None:
            return None
        scope = self.tokenizer.query(scope_token)
        if len(scope) != 1:
            return None
        tids: list[int | None] = []
        for term in terms:
            tokens = self.tokenizer.query(term)
            if len(tokens) > 1 or any(t in p.scopes or _clip(t) != t for t in tokens):
                return None
            tids.append(p.terms.get(tokens[0]) if tokens else None)
        sid = p.scopes.get(scope[0])
        return [] if sid is None else p.rank(sid, tids, weights, limit, self.settings.statistics == "scope")

    def scope_documents(self, corpus: Corpus, scope_token: str, terms: Sequence[str],
                        column: int | None = None) -> tuple[dict[str, int], int] | None:
        """({index term: documents of the scope holding it}, documents of the scope) for the
        scope whose FTS5 token is `scope_token`; None when FTS5 must answer."""
        p = self._ready(corpus)
        scope = self.tokenizer.query(scope_token)
        if p is None or len(scope) != 1 or any(t in p.scopes for t in terms):
            return None
        sid = p.scopes.get(scope[0])
        if sid is None:
            return dict.fromkeys(terms, 0), 0
        return ({t: (0 if (tid := p.terms.get(t)) is None else p.scope_df(tid, sid, column)) for t in terms},
                int(p.scope_docs[sid]))

    def scope_size(self, corpus: Corpus, scope_token: str) -> int | None:
        """Documents of the scope as the postings in memory count them (changes of other
        processes not yet applied); None when no postings are in memory. Reads no SQL: for
        planning queries (SQLiteStore._by_rowid)."""
        p = self._entries.get(corpus)
        scope = self.tokenizer.query(scope_token) if p is not None else []
        sid = p.scopes.get(scope[0]) if p is not None and len(scope) == 1 else None
        return None if p is None else 0 if sid is None else int(p.scope_docs[sid])

    def catch_up(self, corpus: Corpus) -> None:
        """Apply what changed since the postings were last read (build them if there are none):
        the work a search would otherwise do first."""
        self._ready(corpus)

    def postings(self, corpus: Corpus) -> Postings | None:
        """The corpus's postings held in memory, as last caught up (None: none yet)."""
        return self._entries.get(corpus)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per corpus held in memory: documents, terms, postings and array bytes."""
        return {c: {"documents": p.n_docs, "terms": len(p.term_names), "postings": len(p.doc),
                    "delta": len(p.d_at), "bytes": p.bytes()} for c, p in self._entries.items()}

    def close(self) -> None:
        """Save postings with changes not yet on disk, so the next process starts warm."""
        for corpus, p in list(self._entries.items()):
            if p.unsaved and not self._in_transaction():
                try:
                    # caught up first: rows another process deleted meanwhile must not be
                    # written back to disk with their words (forget.py). When the log no
                    # longer covers them, another process saved newer postings: none to save
                    with self._snapshot():
                        last_seq, pruned, epoch = self._state(corpus)
                        current = p.epoch == epoch and pruned <= p.seq <= last_seq
                        if current and p.seq < last_seq:
                            self._catch_up(corpus, p, last_seq)
                    if current:
                        self._save(corpus, p)
                except (OSError, apsw.Error) as exc:
                    log.warning("cannot save the lexical index of %s: %s", corpus, exc)
        self._entries.clear()

    # ---- internals -----------------------------------------------------------------------

    def _ready(self, corpus: Corpus) -> Postings | None:
        """The corpus's postings, caught up with the log; None below the threshold."""
        p = self._entries.get(corpus)
        if p is None and self.settings.threshold > 0 and self._max_rowid(corpus) < self.settings.threshold:
            return None
        last_seq, _, epoch = self._state(corpus)  # one statement: a consistent read by itself
        if p is not None and (p.seq, p.epoch) == (last_seq, epoch):
            return p if p.n_docs >= self.settings.threshold else None  # nothing new: the common case
        if self._in_transaction():
            return None  # the open write transaction may roll back: leave the postings alone
        for _ in range(3):
            with self._snapshot():
                last_seq, pruned, epoch = self._state(corpus)
                if p is not None and (p.epoch != epoch or not pruned <= p.seq <= last_seq):
                    p = None  # another database under this name, or the log it needs was pruned
                if p is not None and p.seq < last_seq:
                    self._catch_up(corpus, p, last_seq)
            if p is not None:
                self._entries[corpus] = p
                self._tidy(corpus, p)
                return p if p.n_docs >= self.settings.threshold else None
            self._entries.pop(corpus, None)
            p = self._load(corpus, epoch, pruned, last_seq) or self._build(corpus, epoch)
        log.warning("lexical index of %s kept changing under construction; FTS5 answers", corpus)
        return None

    def _max_rowid(self, corpus: Corpus) -> int:
        # O(log n), not COUNT(*): only decides whether a cache is worth building
        return int(self._conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {corpus}").fetchall()[0][0])

    def _state(self, corpus: Corpus) -> tuple[int, int, str]:
        row = self._conn.execute(
            "SELECT last_seq, pruned, (SELECT value FROM meta WHERE key = 'text_epoch') "
            "FROM text_corpora WHERE corpus = ?", (corpus,)).fetchall()[0]
        return int(row[0]), int(row[1]), str(row[2])

    def _catch_up(self, corpus: Corpus, p: Postings, last_seq: int) -> None:
        """Apply the logged changes after `p.seq`; runs inside the read snapshot, which holds
        the newest version of every row: each touched row is replaced once."""
        changes = self._conn.execute(
            "SELECT seq, row FROM text_log WHERE corpus = ? AND seq > ? ORDER BY seq", (corpus, p.seq)).fetchall()
        touched = sorted({int(r) for _, r in changes})
        fts, cols = COLUMNS[corpus]
        for rowid in touched:
            p.remove(rowid)
        for i in range(0, len(touched), 500):
            chunk = touched[i : i + 500]
            for row in self._conn.execute(
                f"SELECT rowid, {', '.join(cols)}, scope FROM {fts} WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
            ):
                p.add(int(row[0]), [self.tokenizer.document(t) for t in row[1:-1]], self.tokenizer.document(row[-1]))
        p.seq = int(changes[-1][0]) if changes else last_seq
        p.unsaved += len(changes)

    def _tidy(self, corpus: Corpus, p: Postings) -> None:
        """Fold a grown delta into the arrays; save after many changes (keeps the log short)."""
        # the delta is scored in Python: a few hundred rows at most (LoCoMo: p95 12 → 8 ms)
        if len(p.d_rowid) >= max(256, len(p.rowid) // 32) or p.dead >= max(2_048, len(p.rowid) // 8):
            p.fold()
        if p.unsaved >= max(5_000, p.n_docs // 10):
            try:
                self._save(corpus, p)
            except OSError as exc:
                log.warning("cannot save the lexical index of %s: %s", corpus, exc)

    def _build(self, corpus: Corpus, epoch: str) -> Postings:
        """Postings from the FTS5 table's rows. The corpus is marked logged first, then the rows
        and the log's position are read in one snapshot: every later change is in the log."""
        if not self._conn.execute("SELECT logged FROM text_corpora WHERE corpus = ?", (corpus,)).fetchall()[0][0]:
            with self._transaction():
                self._conn.execute("UPDATE text_corpora SET logged = 1 WHERE corpus = ?", (corpus,))
        fts, cols = COLUMNS[corpus]
        with self._snapshot():
            seq = self._state(corpus)[0]
            p = build(self._conn.execute(f"SELECT rowid, {', '.join(cols)}, scope FROM {fts}"), len(cols),
                      self.tokenizer.document)
        p.epoch, p.seq = epoch, seq
        self.builds += 1
        if p.n_docs >= _FILE_MIN_DOCS or p.n_tokens >= _FILE_MIN_TOKENS:
            try:
                self._save(corpus, p)
            except OSError as exc:  # postings that cannot be saved still serve this process
                log.warning("cannot save the lexical index of %s: %s", corpus, exc)
        return p

    def _path(self, corpus: Corpus) -> Path:
        return self._dir / f"{self._prefix}-{corpus}.npz"

    def _save(self, corpus: Corpus, p: Postings) -> None:
        """Write the postings unless the file holds newer ones already, then prune the log
        entries they include (other processes reload the file when they need them, or
        rebuild small postings, which have no file)."""
        if p.n_docs >= _FILE_MIN_DOCS or p.n_tokens >= _FILE_MIN_TOKENS:
            self._dir.mkdir(parents=True, exist_ok=True)
            path = self._path(corpus)
            on_disk: dict[str, Any] = {}
            with contextlib.suppress(*_Readers), np.load(path, allow_pickle=False) as z:
                on_disk = json.loads(bytes(z["meta"]).decode())
            # a damaged file's meta may still look current: it is replaced all the same
            if corpus in self._damaged or on_disk.get("epoch") != p.epoch or int(on_disk.get("seq", -1)) < p.seq:
                p.save(path)
                self._damaged.discard(corpus)
                if self._deleted_since(corpus, p.seq):
                    # another process deleted (forgot) rows while these postings were written,
                    # and may have unlinked the old file already: this one holds their words
                    path.unlink(missing_ok=True)
        else:  # shrank below: a file left from before would soon be stale
            self._path(corpus).unlink(missing_ok=True)
        p.fold()
        p.unsaved = 0
        with self._transaction():
            self._conn.execute("DELETE FROM text_log WHERE corpus = ? AND seq <= ?", (corpus, p.seq))
            self._conn.execute("UPDATE text_corpora SET pruned = MAX(pruned, ?) WHERE corpus = ?", (p.seq, corpus))

    def _deleted_since(self, corpus: Corpus, seq: int) -> bool:
        return bool(self._conn.execute("SELECT 1 FROM text_log WHERE corpus = ? AND seq > ? AND op = 'del' LIMIT 1",
                                       (corpus, seq)).fetchall())

    def _load(self, corpus: Corpus, epoch: str, pruned: int, last_seq: int) -> Postings | None:
        """The saved postings, when they are this database's and the log still covers them."""
        path = self._path(corpus)
        if not path.exists():
            return None
        try:
            p = Postings.load(path, len(COLUMNS[corpus][1]))
        except _Readers as exc:
            log.warning("lexical index %s is damaged (%s); rebuilding it from SQLite", path, exc)
            self._damaged.add(corpus)
            return None
        if p.epoch != epoch or not pruned <= p.seq <= last_seq:
            log.warning("lexical index %s is stale (seq %d, log %d..%d); rebuilding it from SQLite",
                        path, p.seq, pruned, last_seq)
            return None
        self.loads += 1
        return p
