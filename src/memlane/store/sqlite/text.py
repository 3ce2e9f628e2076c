"""The SQLite store's full text: FTS5 tables with a scope column (migration m003), ranked
by the in-process BM25 cache of store/lexindex.py or by FTS5 itself; and keeping a row's
full-text and vector entries in step with the row (`_index`, `_unindex`)."""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memlane.errors import BackendError
from memlane.models import Corpus, Scope
from memlane.store import lexindex, vindex
from memlane.store.fts5 import scope_token
from memlane.store.sqlite.base import FTS
from memlane.store.sqlite.vectors import SQLiteVectors
from memlane.text import index_text


class SQLiteText(SQLiteVectors):
    """Full-text search, and the index entries of each row."""

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
                                         bm25_weights(corpus, weights)[:-1])
        if ranked is None:
            return self.fts5(corpus, scope, lexindex.match_of(terms), limit, weights)
        return self._mine(corpus, scope, ranked)

    def fts5(
        self, corpus: Corpus, scope: Scope, match: str, limit: int, weights: Sequence[float] = (1.0,)
    ) -> list[tuple[int, float]]:
        """`fts` answered by FTS5 itself, whatever the corpus's size: the lexical cache's reference."""
        if not match:
            return []
        fts = FTS[corpus]
        # the last column holds the scope's token (m003): weight 0, ANDed into the MATCH so
        # FTS5 walks only this scope's rows. FTS5 ranks on its own (joining first would probe
        # the base table for every match); the scope is then verified on the top rows only.
        w = ", ".join(str(x) for x in bm25_weights(corpus, weights))
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
            fts = FTS[corpus]
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
        fts = FTS[corpus]
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
        self._conn.execute(f"DELETE FROM {FTS[corpus]} WHERE rowid = ?", (rowid,))
        lexindex.record(self._conn, corpus, [rowid], "del")
        if self._vector_dims is not None:
            owner = self._conn.execute(f"SELECT user_id, agent_id FROM {corpus} WHERE rowid = ?", (rowid,)).fetchall()
            self._conn.execute(f"DELETE FROM vec_{corpus} WHERE rowid = ?", (rowid,))
            gone = [rowid] if self._conn.changes() else []
            if corpus == "turns":
                gone += self._drop_passages(rowid)
            if owner and gone:
                vindex.record(self._conn, corpus, Scope(user_id=owner[0][0], agent_id=owner[0][1]), gone, "del", -len(gone))


def bm25_weights(corpus: Corpus, weights: Sequence[float]) -> list[float]:
    """bm25()'s column weights: the given ones for the text columns (1.0 where missing), 0 for the scope."""
    n_text = len(lexindex.COLUMNS[corpus][1])
    return [*[float(x) for x in list(weights)[:n_text]], *[1.0] * (n_text - len(weights)), 0.0]

