"""Full text on PostgreSQL with the tokens and the BM25 of the SQLite store.

SQLite indexes `text.index_text(x)` (CJK runs as unigrams + bigrams) with FTS5's `porter
unicode61` tokenizer: lowercased alphanumeric runs, Porter-stemmed. The same tokenizer
(FTS5's own, through an in-memory apsw connection) makes each row's tsvector here, so both
stores hold the same terms; PostgreSQL's parsers and dictionaries (`simple`, `english`)
never see the text. A tsvector keeps positions, not counts: a term's hits in a row are
written as positions 1..n (weight A in the body, B in a turn's neighbour context), and `n`
is read back as its frequency. `fts_len` is the row's token count with the scope's one
token that FTS5's scope column adds, so BM25's document lengths are FTS5's.

Limits of tsvector, where the two stores differ: a term counts at most 256 hits in one row
(MAXNUMPOS; BM25 saturates long before: at 256 hits k1 = 1.2 leaves < 0.5 % to gain), a
term longer than 2,046 bytes is left out (FTS5 keeps 32 KiB), and a row's tsvector is cut
to 1 MB (the rarest case: ~100k distinct terms in one turn).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

import apsw

from memlane.retrieval import bm25
from memlane.retrieval.bm25 import K1 as K1  # the store takes these from here too
from memlane.retrieval.bm25 import idf as idf
from memlane.store.lexindex import Tokenizer
from memlane.store.pgschema import TERMS_KEPT
from memlane.text import index_text

MAX_LEXEME_BYTES = 2046  # PostgreSQL's MAXSTRLEN
MAX_POSITIONS = 256  # PostgreSQL's MAXNUMPOS: positions kept per lexeme
_MAX_TSVECTOR = 1_000_000  # bytes of literal text; PostgreSQL refuses a tsvector over 1 MB


@functools.lru_cache(maxsize=1)
def tokenizer() -> Tokenizer:
    return Tokenizer(apsw.Connection(":memory:"))


def tokens(indexed: str) -> tuple[str, ...]:
    """The tokens FTS5 stores for a column holding `indexed` (text.index_text's output); a
    short text's are remembered for a while: ingest tokenizes a turn's text as its body,
    then again in its neighbours' context."""
    if len(indexed) <= _CACHED_CHARS:
        return _short_tokens(indexed)
    return tuple(tokenizer().document(indexed))


_CACHED_CHARS = 4_000  # texts of this size or less are cached (4,096 of them: ≤ ~50 MB)


@functools.lru_cache(maxsize=4096)
def _short_tokens(indexed: str) -> tuple[str, ...]:
    return tuple(tokenizer().document(indexed)) if indexed else ()


def query_tokens(term: str) -> list[str]:
    """The tokens of one quoted query term (several when FTS5 would read a phrase)."""
    return [t for t in tokenizer().query(term) if fits(t)]


def fits(token: str) -> bool:
    return len(token) * 4 <= MAX_LEXEME_BYTES or len(token.encode("utf-8")) <= MAX_LEXEME_BYTES


@functools.lru_cache(maxsize=65_536)
def quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@functools.lru_cache(maxsize=4096)
def _positions(a: int, b: int) -> str:
    """A lexeme's positions: 1..a at weight A, then the next b at weight B."""
    return ",".join([f"{i}A" for i in range(1, a + 1)] + [f"{i}B" for i in range(a + 1, a + b + 1)])


def body(text: str) -> str:
    """What FTS5's column holds for a row's text: text.index_text (CJK as 1- and 2-grams)."""
    return index_text(text)


def document(*columns: str) -> tuple[str, int]:
    """(tsvector literal, token count + 1) of a row's text columns as FTS5 holds them
    (`body(text)`): the first at weight A, the second (a turn's neighbour context) at B."""
    counts: dict[str, list[int]] = {}
    total = 1  # the scope column's token (SQLite's m003)
    for col, text in enumerate(columns[:2]):
        toks = tokens(text)
        total += len(toks)
        for tok, n in Counter(toks).items():
            counts.setdefault(tok, [0, 0])[col] = n
    parts: list[str] = []
    size = 0
    for tok, (a, b) in counts.items():
        if not fits(tok):
            continue
        a, b = min(a, MAX_POSITIONS), min(b, MAX_POSITIONS - min(a, MAX_POSITIONS))
        pos = _positions(a, b)
        item = f"{quote(tok)}:{pos}" if pos else quote(tok)
        size += len(item) + 1
        if size > _MAX_TSVECTOR:
            break
        parts.append(item)
    return " ".join(parts), total


def lexemes(terms: Sequence[str]) -> list[str]:
    """The distinct index lexemes of query terms (a phrase term gives each of its tokens)."""
    out: list[str] = []
    for term in terms:
        for tok in query_tokens(term):
            if tok not in out:
                out.append(tok)
    return out


def tsquery(lexemes_: Sequence[str], weight: str = "") -> str:
    """A tsquery OR-ing the lexemes, none normalised again (`::tsquery` applies no dictionary).
    Many lexemes (a pasted page as the query) are OR-ed as a balanced tree: PostgreSQL parses
    and evaluates a tsquery recursively, and a chain of thousands exceeded its stack depth."""
    items = [f"{quote(x)}{':' + weight if weight else ''}" for x in lexemes_]

    def tree(xs: Sequence[str]) -> str:
        if len(xs) <= 64:
            return " | ".join(xs)
        half = len(xs) // 2
        return f"( {tree(xs[:half])} ) | ( {tree(xs[half:])} )"

    return tree(items)


def pairs(lexemes_: Sequence[str]) -> str:
    """A tsquery of the rows holding two of the lexemes or more: the OR of each pair's AND."""
    q = [quote(x) for x in lexemes_]
    return " | ".join(f"( {a} & {b} )" for i, a in enumerate(q) for b in q[i + 1:])


def rank_sql(corpus: str) -> str:
    """One statement for a query's full text in a scope: ('t', N, tokens, version, shortest) the
    scope's documents and tokens (table fts_stats, kept by triggers: pgschema m003, m005) and
    its shortest row's length (index {corpus}_by_len, m010); then, in a
    scope under `small` documents, ('h', rowid, fts_len, lexeme, hits at A, hits at B) for
    every query lexeme of every matching row, which Python ranks (`rank_rows`); in a larger
    one ('d', documents holding it, lexeme) of each lexeme in `count` (`documents`), the statistics `ranked_sql` then ranks with. Parameters: u, a, q (tsquery of every
    lexeme), terms (the lexemes), count (those to count), tqs (a tsquery of each), small."""
    b = "COALESCE(cardinality(array_positions(x.weights, 'B')), 0)"
    return f"""
        WITH t AS MATERIALIZED (
            SELECT COALESCE(max(docs), 0) AS n, COALESCE(max(tokens), 0) AS tok, COALESCE(max(version), 0) AS v,
                   (SELECT min(fts_len) FROM {corpus} WHERE user_id = %(u)s AND agent_id = %(a)s) AS dl
            FROM fts_stats WHERE user_id = %(u)s AND agent_id = %(a)s AND corpus = '{corpus}'),
        m AS MATERIALIZED (
            SELECT rowid, fts, fts_len FROM {corpus}
            WHERE user_id = %(u)s AND agent_id = %(a)s AND fts @@ %(q)s::tsquery),
        x AS (
            SELECT m.rowid, m.fts_len, x.lexeme, COALESCE(cardinality(x.positions), 0) - {b} AS na, {b} AS nb
            FROM m, unnest(m.fts) x WHERE x.lexeme = ANY(%(terms)s::text[]))
        SELECT 't', n, tok, NULL::text, v, dl FROM t
        UNION ALL
        SELECT 'h', rowid, fts_len, lexeme, na, nb FROM x WHERE (SELECT n FROM t) < %(small)s
        UNION ALL
        SELECT 'd', NULL, {documents(corpus, "q.lexeme", "q.tq", "docs")}, q.lexeme, NULL, NULL
        FROM unnest(%(count)s::text[], %(tqs)s::text[]) AS q(lexeme, tq) WHERE (SELECT n FROM t) >= %(small)s
    """


def documents(corpus: str, lexeme: str, tsquery_: str, column: str, cap: str = "") -> str:
    """A SQL expression: the scope's (u, a) documents holding `lexeme` (`column` of
    fts_terms: docs, docs_a, docs_b), read where fts_terms keeps them (pgschema m009), else
    counted from the GIN index with `tsquery_` (the lexeme at that weight), no further than
    `cap` when one is given."""
    if corpus in TERMS_KEPT:
        return (f"COALESCE((SELECT {column} FROM fts_terms WHERE user_id = %(u)s AND agent_id = %(a)s "
                f"AND corpus = '{corpus}' AND lexeme = {lexeme}), 0)")
    limit = f" LIMIT {cap}" if cap else ""
    return (f"(SELECT count(*) FROM (SELECT 1 FROM {corpus} WHERE user_id = %(u)s AND agent_id = %(a)s "
            f"AND fts @@ {tsquery_}::tsquery{limit}) c)")


def rank_rows(hits: Sequence[tuple[int, int, str, int, int]], lexemes_: Sequence[str], n_docs: int,
              n_tokens: int, weights: Sequence[float], limit: int) -> list[tuple[int, float]]:
    """[(rowid, bm25)] best first of the rows holding query lexemes, `hits` being (rowid,
    fts_len, lexeme, hits at A, hits at B) of each: BM25 with the scope's statistics, every
    float operation as store/postings.py does it (fts5_aux.c's order), ties by rowid."""
    if not n_docs:
        return []
    avgdl = n_tokens / n_docs
    rows: dict[int, tuple[int, dict[str, tuple[int, int]]]] = {}
    holding: Counter[str] = Counter()
    for rowid, dl, lexeme, na, nb in hits:
        rows.setdefault(rowid, (dl, {}))[1][lexeme] = (na, nb)
        holding[lexeme] += 1
    idfs = [(x, idf(n_docs, holding[x])) for x in lexemes_ if holding[x]]
    wa, wb = (float(weights[0]) if weights else 1.0), (float(weights[1]) if len(weights) > 1 else 1.0)
    out: list[tuple[float, int]] = []
    for rowid, (dl, tf) in rows.items():
        score = 0.0
        for x, w in idfs:
            if x not in tf:
                continue
            na, nb = tf[x]
            f = 0.0
            if wa == 1.0:
                f = float(na)
            elif wa != 0.0:
                for _ in range(na):
                    f += wa
            if wb != 0.0:
                for _ in range(nb):
                    f += wb
            score += bm25.term_score(w, f, dl, avgdl)
        out.append((-score, rowid))
    out.sort()
    return [(rowid, neg) for neg, rowid in out[:limit]]


def ranked_sql(corpus: str, n_terms: int, *, two_columns: bool = False, repeated: bool = False,
               by_length: bool = False) -> str:
    """BM25 of the scope's rows matching `q` (and, with `repeated`, of those holding a query
    lexeme twice or more: `fts_rep`, pgschema m008, m010), each scored over every query lexeme
    with the scope's statistics computed before (store/postings.py's "scope" statistics), best
    first. With `by_length`, of only the `k` shortest rows matching `q` (index
    {corpus}_by_len, m010) and those holding a query lexeme twice or more: for one lexeme at
    one weight, a row holding it once scores less the longer it is, so the others score less.

    A lexeme's hits in a row are read without unpacking its tsvector: a lexeme's positions
    are consecutive (`document`), so phrase lookups (`@@`) tell one hit from two and at which
    weight, ~1.5 µs a row where `unnest` took ~8 (issue 34: 2,600 rows in 50 ms before); only
    a lexeme held three times or more has its positions counted. The arithmetic is
    `bm25.term_sql`'s, term by term in query order. Parameters: u, a (the scope), q (tsquery
    of the rows to score), qr (tsquery of every lexeme, with `repeated`), avgdl, wa / wb
    (column weights), k, and per lexeme i (`ranked_params`): x{i} (the lexeme), l{i} / la{i}
    (its tsquery, at weight A), p{i} / t{i} (held twice, three times), aa{i} / bb{i} (twice
    at A, at B), idf{i}."""
    avgdl = "%(avgdl)s::float8"
    dl = "fts_len::float8"  # not numeric: BM25's `0.75 * dl` in numeric, cast per row, cost ~15 %
    b = "cardinality(array_positions(x.weights, 'B'))"
    terms = []
    for i in range(n_terms):
        idf = f"%(idf{i})s::float8"
        once = bm25.term_sql(idf, "%(wa)s::float8", dl, avgdl)
        if two_columns:  # held once: in the row's own text (A) or its neighbours' (B)
            once = (f"CASE WHEN fts @@ %(la{i})s::tsquery THEN {once} "
                    f"ELSE {bm25.term_sql(idf, '%(wb)s::float8', dl, avgdl)} END")
        counted = (f"(SELECT {bm25.term_sql(idf, 'f', dl, avgdl)} FROM ("
                   f"SELECT %(wa)s::float8 * (cardinality(x.positions) - {b}) + %(wb)s::float8 * {b} AS f "
                   f"FROM unnest(fts) x WHERE x.lexeme = %(x{i})s) c)")
        # held twice (positions n, n+1 and no n+2: a lexeme's positions are consecutive,
        # `document`): its hits at A and B from phrase lookups, not `unnest`
        twice = bm25.term_sql(idf, "(%(wa)s::float8 * 2 + %(wb)s::float8 * 0)", dl, avgdl)
        if two_columns:
            twice = (f"CASE WHEN fts @@ %(aa{i})s::tsquery THEN {twice} WHEN fts @@ %(bb{i})s::tsquery "
                     f"THEN {bm25.term_sql(idf, '(%(wa)s::float8 * 0 + %(wb)s::float8 * 2)', dl, avgdl)} "
                     f"ELSE {bm25.term_sql(idf, '(%(wa)s::float8 * 1 + %(wb)s::float8 * 1)', dl, avgdl)} END")
        terms.append(f"CASE WHEN NOT fts @@ %(l{i})s::tsquery THEN 0 WHEN NOT fts @@ %(p{i})s::tsquery THEN {once} "
                     f"WHEN NOT fts @@ %(t{i})s::tsquery THEN {twice} ELSE {counted} END")
    rows = "fts @@ %(q)s::tsquery" + (" OR fts_rep @@ %(qr)s::tsquery" if repeated else "")
    if by_length:  # the shortest rows' ids as an array, read once (not a join the planner may loop over)
        rows = (f"fts_rep @@ %(qr)s::tsquery OR rowid = ANY(ARRAY(SELECT rowid FROM {corpus} WHERE user_id = %(u)s "
                "AND agent_id = %(a)s AND fts @@ %(q)s::tsquery ORDER BY fts_len, rowid LIMIT %(k)s))")
    return f"""
        SELECT rowid, -({' + '.join(terms) or '0'}) AS s FROM {corpus}
        WHERE user_id = %(u)s AND agent_id = %(a)s AND ({rows})
        ORDER BY s, rowid LIMIT %(k)s
    """


def ranked_params(lexemes_: Sequence[str], idfs: Sequence[float]) -> dict[str, object]:
    """`ranked_sql`'s per-lexeme parameters."""
    out: dict[str, object] = {}
    for i, (x, w) in enumerate(zip(lexemes_, idfs, strict=True)):
        q, qa, qb = quote(x), f"{quote(x)}:A", f"{quote(x)}:B"
        out |= {f"x{i}": x, f"l{i}": q, f"la{i}": qa, f"p{i}": f"{q} <-> {q}", f"t{i}": f"{q} <2> {q}", f"aa{i}": f"{qa} <-> {qa}",
                f"bb{i}": f"{qb} <-> {qb}", f"idf{i}": float(w)}
    return out


def once_bound(weight: float, avgdl: float, shortest: int | None = None) -> float:
    """What a lexeme held once in a row (not in its `fts_rep`, pgschema m010) can add per unit
    of its idf, at most: one hit at `weight` in the scope's shortest row (`shortest`, its
    `fts_len`: the score falls as rows lengthen), or in the shortest row that can hold it (one
    token, plus the scope's token FTS5 counts) when that is not known."""
    return bm25.term_score(1.0, weight, max(2.0, float(shortest or 0)), avgdl)


def bm25_sql(corpus: str) -> str:
    """The reference of `ranked_sql` (tests/test_bm25.py checks it against FTS5): BM25 of the
    scope's rows matching `q`, each scored over every query lexeme (`unnest`) with the
    scope's statistics computed before (store/postings.py's "scope" statistics). Parameters:
    u, a (the scope), q (tsquery of the rows to score), terms / idfs (lexemes and their idf),
    avgdl, wa / wb (column weights), k."""
    return f"""
        WITH d AS (
            SELECT rowid, fts, fts_len FROM {corpus}
            WHERE user_id = %(u)s AND agent_id = %(a)s AND fts @@ %(q)s::tsquery),
        h AS (
            SELECT d.rowid, d.fts_len, x.lexeme,
                   %(wa)s::float8 * (cardinality(x.positions) - cardinality(array_positions(x.weights, 'B')))
                   + %(wb)s::float8 * cardinality(array_positions(x.weights, 'B')) AS f
            FROM d, unnest(d.fts) x WHERE x.lexeme = ANY(%(terms)s::text[]))
        SELECT h.rowid,
               -sum({bm25.term_sql("i.idf", "h.f", "h.fts_len", "%(avgdl)s::float8")}) AS s
        FROM h JOIN unnest(%(terms)s::text[], %(idfs)s::float8[]) AS i(lexeme, idf) USING (lexeme)
        GROUP BY h.rowid ORDER BY s, h.rowid LIMIT %(k)s
    """
