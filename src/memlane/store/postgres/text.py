"""The PostgreSQL store's full text: a tsvector in each corpus row holding FTS5's tokens
(store/pgtext.py), ranked by BM25 with each scope's own statistics (`fts_stats`), as the
SQLite store ranks; per-scope document counts kept between queries at the scope's version."""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence
from typing import Any

from memlane.models import Corpus, Scope
from memlane.retrieval import bm25
from memlane.store import pgtext
from memlane.store.lexindex import parse_match
from memlane.store.postgres.vectors import PostgresVectors
from memlane.text import fts_terms, keywords

# a query whose words are held by fewer rows than this is ranked whole: one statement (~1.5
# µs a row, issue 34), not a pruned one that may have to be followed by it


class PostgresText(PostgresVectors):
    """Full-text search, and each row's tsvector."""

    def fts(self, corpus: Corpus, scope: Scope, match: str, limit: int,
            weights: Sequence[float] = (1.0,)) -> list[tuple[int, float]]:
        """BM25 candidates of this scope: [(rowid, bm25)] best first (bm25 is negative), for
        a MATCH built like text.fts_query; other syntax is read as its words, OR-ed."""
        if not match:
            return []
        terms = parse_match(match)
        return self.fts_terms(corpus, scope, terms if terms is not None else fts_terms(keywords(match)), limit, weights)

    def fts_terms(self, corpus: Corpus, scope: Scope, terms: Sequence[str], limit: int,
                  weights: Sequence[float] = (1.0,)) -> list[tuple[int, float]]:
        """`fts` of the OR of `terms`: BM25 with the scope's own statistics, as the SQLite
        store ranks (store/postings.py). In a large scope not every row holding a query word is
        scored (issue 34), each time exactly: first the rows holding two query words (or a
        rare one twice), when no other row can score above their top `limit`; for one word,
        its shortest rows; else the rows holding a rarer word, when those holding only the
        commonest cannot reach the top (MaxScore, as there); else every row."""
        lex = pgtext.lexemes(terms)
        if not lex or limit <= 0:
            return []
        u, a = scope.user_id, scope.agent_id
        w = [float(x) for x in weights] + [1.0, 1.0]
        # one statement: the scope's totals, and either every hit of a small scope (ranked
        # here) or the documents of each lexeme of a large one (ranked in SQL below) that
        # this process has not counted at the scope's version before
        key = (corpus, u, a)
        version, known = self._doc_counts.get(key, (-1, {}))
        count = [x for x in lex if x not in known]

        def run(count: list[str]) -> list[tuple[Any, ...]]:
            return self._q(pgtext.rank_sql(corpus), {
                "u": u, "a": a, "q": pgtext.tsquery(lex), "terms": lex, "count": count,
                "tqs": [pgtext.tsquery([x]) for x in count], "small": self._ann_threshold})

        got = run(count)
        n_docs, n_tokens, now, shortest = next((int(r[1]), int(r[2]), int(r[4]), r[5]) for r in got if r[0] == "t")
        if n_docs < self._ann_threshold:
            return pgtext.rank_rows([(int(r[1]), int(r[2]), r[3], int(r[4]), int(r[5])) for r in got if r[0] == "h"],
                                    lex, n_docs, n_tokens, w[:2], int(limit))
        if now != version and len(count) < len(lex):  # the scope changed since: count them all
            got, count = run(lex), lex
            n_docs, n_tokens, now, shortest = next((int(r[1]), int(r[2]), int(r[4]), r[5]) for r in got if r[0] == "t")
            known = {}
        docs = {**(known if now == version else {}), **{r[3]: int(r[2]) for r in got if r[0] == "d"}}
        self._keep_counts(key, now, docs)
        kept = [i for i, x in enumerate(lex) if docs.get(x)]
        if not n_docs or not kept:
            return []
        lex, holding = [lex[i] for i in kept], [docs[lex[i]] for i in kept]
        idfs = [pgtext.idf(int(n_docs), n) for n in holding]
        avgdl = float(n_tokens) / float(n_docs)
        ranked = {"u": u, "a": a, "avgdl": avgdl, "wa": w[0], "wb": w[1], "k": int(limit),
                  **pgtext.ranked_params(lex, idfs)}
        sql = functools.partial(pgtext.ranked_sql, corpus, len(lex), two_columns=w[0] != w[1])
        # what a row outside the rows ranked first can score, per unit of a lexeme's idf: held
        # once (rows holding it twice or more are ranked first: `fts_rep`), or any number of times
        once = pgtext.once_bound(max(w[:2]), avgdl, shortest) * (1 + 1e-9)
        most = bm25.max_term_score(1.0) * (1 + 1e-9)
        pruning = min(w[:2]) >= 0 and sum(holding) >= self._tuning.prune_rows
        # pairs: rank the rows holding two of the query's lexemes or more (leaving aside those
        # most rows hold: their pairs are most rows), and those holding a rare one twice or
        # more; any other row holds one of the paired lexemes (once, or a common one however
        # often, which scores no more) beside the others, so scores at most `bound`: when the
        # top `limit` score above it, they are the top of all
        paired = [i for i, n in enumerate(holding) if 2 * n <= n_docs]
        if pruning and 2 <= len(paired) <= self._tuning.pair_terms:
            top = max(idfs[i] for i in paired) * once
            rows = self._q(sql(repeated=True), {**ranked, "q": pgtext.pairs([lex[i] for i in paired]),
                                                "qr": pgtext.tsquery([lex[i] for i in paired if idfs[i] * most > top])})
            bound = top + sum(x for i, x in enumerate(idfs) if i not in paired) * most
            if len(rows) >= limit and -float(rows[limit - 1][1]) > bound:
                return [(int(r[0]), float(r[1])) for r in rows]
        if pruning and len(lex) == 1 and w[0] == w[1] > 0:
            # one lexeme: the rows holding it twice or more, and the `limit` shortest holding it
            # (those holding it once score by their length alone: a longer one scores less)
            rows = self._q(sql(by_length=True), {**ranked, "q": pgtext.tsquery(lex), "qr": pgtext.tsquery(lex)})
            return [(int(r[0]), float(r[1])) for r in rows]
        common = _common(idfs, holding, w[:2], avgdl, self._tuning.prune_rows) if pruning else set()
        if common:
            # MaxScore: rank the rows holding a rarer word; a row holding only the common ones
            # scores at most `bound`
            rows = self._q(sql(), {**ranked, "q": pgtext.tsquery([x for i, x in enumerate(lex) if i not in common])})
            bound = sum(idfs[i] for i in common) * most
            if len(rows) >= limit and -float(rows[limit - 1][1]) > bound:
                return [(int(r[0]), float(r[1])) for r in rows]
        rows = self._q(sql(), {**ranked, "q": pgtext.tsquery(lex)})
        return [(int(r[0]), float(r[1])) for r in rows]

    def _keep_counts(self, key: tuple[str, str, str], version: int, docs: dict[str, int]) -> None:
        """Keep a scope's lexeme counts read at its fts_stats `version` (`_doc_counts`)."""
        if len(self._doc_counts) >= 256:  # large scopes whose counts are kept: the last few
            with contextlib.suppress(StopIteration, RuntimeError, KeyError):  # another thread's pop
                self._doc_counts.pop(next(iter(self._doc_counts)))
        self._doc_counts[key] = (version, docs if len(docs) <= 4096 else {})

    def scope_documents(self, corpus: Corpus, scope: Scope, terms: Sequence[str], column: int | None = None,
                        min_docs: int = 0, above: float = 1.0, drift: float = 0.0) -> tuple[dict[str, int], int]:
        """({index term: documents of this scope holding it}, documents in the scope); with
        `column` 0, only those holding it in the row's own text (weight A). In a scope of
        fewer than `min_docs` documents the terms go uncounted (0); a term held by more than
        `above` × its documents counts as some number over that. With `drift`, counts read
        while the scope held within `drift` × its documents of what it holds now serve: a
        scope written between searches is then not counted again at each (one row read).

        One statement: the scope's size from fts_stats (one row, not a count of the scope),
        then each term's documents: of memories and episodes from fts_terms (a row each, kept
        by triggers: pgschema m009; counting a word in every row of 100k took ~60 ms, again
        after each write), of turns from the GIN index led by the user, with the scope ANDed
        in, counting no further than `above` (three words in every row of 100k: 16 ms, not
        47). Counts over whole rows are kept at the scope's version: the exact ones shared with
        `fts_terms`, which counts the same lexemes to rank a large scope."""
        u, a = scope.user_id, scope.agent_id
        key = (corpus, u, a)
        wanted = [t for t in dict.fromkeys(terms) if t.strip() and pgtext.fits(t)]
        loose = self._doc_loose.get(key) if column is None and drift > 0 else None
        if loose is not None:
            then, seen = loose
            rows = self._q("SELECT docs FROM fts_stats WHERE user_id = %s AND agent_id = %s AND corpus = %s",
                           (u, a, corpus))
            size_now = int(rows[0][0]) if rows else 0
            cap_now = math.floor(size_now * above) + 1
            if size_now >= min_docs and abs(size_now - then) <= drift * size_now \
                    and all(t in seen and (seen[t][1] or seen[t][0] >= cap_now) for t in wanted):
                return {t: seen[t][0] if t in seen else 0 for t in terms}, size_now
        counts, total = self._scope_documents(corpus, scope, wanted, terms, column, min_docs, above)
        if column is None and total >= min_docs:
            then, seen = self._doc_loose.get(key, (total, {}))
            if abs(total - then) > drift * total:
                then, seen = total, {}
            cap = math.floor(total * above) + 1
            seen = {**seen, **{t: (counts[t], counts[t] < cap) for t in wanted}}
            if len(self._doc_loose) >= 256 and key not in self._doc_loose:
                with contextlib.suppress(StopIteration, RuntimeError, KeyError):  # another thread's pop
                    self._doc_loose.pop(next(iter(self._doc_loose)))
            self._doc_loose[key] = (then, seen if len(seen) <= 4096 else {})
        return counts, total

    def _scope_documents(self, corpus: Corpus, scope: Scope, wanted: list[str], terms: Sequence[str],
                         column: int | None, min_docs: int, above: float) -> tuple[dict[str, int], int]:
        """`scope_documents` as the scope is now."""
        u, a = scope.user_id, scope.agent_id
        key = (corpus, u, a)
        version, known = self._doc_counts.get(key, (-1, {})) if column is None else (-1, {})
        column_docs = "docs" if column is None else ("docs_a", "docs_b")[column]
        weight = "" if column is None else "AB"[column]

        def run(todo: list[str]) -> tuple[int, int, int, dict[str, int]]:
            rows = self._q(
                f"""WITH t AS MATERIALIZED (
                        SELECT COALESCE(max(docs), 0) AS n, COALESCE(max(version), 0) AS v,
                               floor(COALESCE(max(docs), 0) * %(above)s::float8)::bigint + 1 AS cap
                        FROM fts_stats WHERE user_id = %(u)s AND agent_id = %(a)s AND corpus = '{corpus}')
                    SELECT NULL::text, n, v, cap FROM t
                    UNION ALL
                    SELECT q.term, {pgtext.documents(corpus, "q.term", "q.tq", column_docs, "(SELECT cap FROM t)")},
                           NULL, NULL
                    FROM unnest(%(terms)s::text[], %(tqs)s::text[]) AS q(term, tq) WHERE (SELECT n FROM t) >= %(min)s""",
                {"u": u, "a": a, "terms": todo, "tqs": [pgtext.tsquery([t], weight) for t in todo], "min": min_docs,
                 "above": float(above)})
            head = next(r for r in rows if r[0] is None)
            return int(head[1]), int(head[2]), int(head[3]), {str(r[0]): int(r[1]) for r in rows if r[0] is not None}

        todo = [t for t in wanted if t not in known]
        total, now, cap, counted = run(todo)
        if total < min_docs:
            return dict.fromkeys(terms, 0), total
        if now != version and known:  # the scope changed since: count them all
            total, now, cap, counted = run(wanted)
            known = {}
        if column is not None:
            return {t: counted.get(t, 0) for t in terms}, total
        exact = {**known, **{t: n for t, n in counted.items() if n < cap}}
        if len(exact) > len(known):
            self._keep_counts(key, now, exact)
        return {t: exact.get(t, counted.get(t, 0)) for t in terms}, total

    def _index(self, corpus: Corpus, rowid: int, text: str, context: str | None = None) -> None:
        """Index a row's text (and a turn's neighbour context, kept as FTS5's column holds it)."""
        indexed = None if context is None else pgtext.body(context)
        vec, n = pgtext.document(pgtext.body(text), *([] if indexed is None else [indexed]))
        extra = "" if indexed is None else ", fts_context = %s"
        self._x(f"UPDATE {corpus} SET fts = %s::tsvector, fts_len = %s{extra} WHERE rowid = %s",
                (vec, n, *([] if indexed is None else [indexed]), rowid))


def _common(idfs: Sequence[float], holding: Sequence[int], weights: Sequence[float], avgdl: float,
            prune_rows: int) -> set[int]:
    """The commonest query lexemes whose rows need not all be ranked (MaxScore), as indexes:
    while together, each held at most twice, they add less than the rarest other lexeme held
    once in a short row, and hold most of the rows to rank. None with a negative weight, or
    when every row is cheap to rank anyway."""
    if len(idfs) < 2 or min(weights) < 0 or sum(holding) < prune_rows:
        return set()
    per_idf = bm25.term_score(1.0, 2.0 * max(weights), 3.0, avgdl)  # held twice at most, in the shortest row
    least = bm25.term_score(1.0, min(weights), 2.0, avgdl)  # a rarer lexeme once, in the shortest row
    by_idf = sorted(range(len(idfs)), key=lambda i: idfs[i])
    out: set[int] = set()
    weight = 0.0
    for i, nxt in zip(by_idf, by_idf[1:], strict=False):
        if (weight + idfs[i]) * per_idf >= idfs[nxt] * least:
            break
        weight += idfs[i]
        out.add(i)
    return out if 2 * sum(holding[i] for i in out) >= sum(holding) else set()
