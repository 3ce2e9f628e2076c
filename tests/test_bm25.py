"""One BM25 (retrieval/bm25.py) for its four callers: the SQLite store's postings, the
PostgreSQL store's ranking in Python and in SQL, and seed 000's file search. The same corpus
scored by each agrees with FTS5's own bm25(): the stores' scores to the last bit (SQL to
the float8 sum's order), the file search's term by term (its idf is Lucene's)."""

from __future__ import annotations

import random
from collections import Counter

import apsw
import pytest

from memlane.archive import bm25_scores
from memlane.retrieval import bm25
from memlane.store import pgtext
from memlane.store.lexindex import Tokenizer
from memlane.store.postings import build

WORDS = ["coffee", "espresso", "tokyo", "lisbon", "garden", "piano", "peanut", "deadline", "python", "kitchen"]
SCOPE = "zscope"  # one scope: its statistics are the table's


def corpus(n: int = 80, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    # a few words in most rows (idf near or below 0: the 1e-6 floor), the rest rarer
    return [" ".join(rng.choices(WORDS, weights=[9, 6, 4, 3, 2, 2, 1, 1, 1, 1], k=rng.randint(1, 18)))
            for _ in range(n)]


def fts5_scores(texts: list[str], match: str) -> list[tuple[int, float]]:
    """[(rowid, bm25)] best first, as FTS5 ranks the rows (the scope column weighs 0)."""
    db = apsw.Connection(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, scope, tokenize='porter unicode61')")
    db.executemany("INSERT INTO t(rowid, body, scope) VALUES (?, ?, ?)",
                   [(i, text, SCOPE) for i, text in enumerate(texts, 1)])
    return [(int(r), float(s)) for r, s in db.execute(
        "SELECT rowid, bm25(t, 1.0, 0.0) AS s FROM t WHERE t MATCH ? ORDER BY s, rowid", (match,))]


def documents(texts: list[str]) -> tuple[Tokenizer, list[list[str]]]:
    tokenizer = Tokenizer(apsw.Connection(":memory:"))
    return tokenizer, [tokenizer.document(t) for t in texts]


QUERIES = [["coffee"], ["piano"], ["coffee", "espresso"], ["tokyo", "peanut", "python"],
           ["deadline", "kitchen", "coffee"]]


def match(words: list[str]) -> str:
    return " OR ".join(f'body : "{w}"' for w in words)


def stemmed(words: list[str]) -> list[str]:
    """The query's words as the index holds them (coffee → coffe)."""
    tokenizer = Tokenizer(apsw.Connection(":memory:"))
    return [tokenizer.document(w)[0] for w in words]


@pytest.mark.parametrize("words", QUERIES, ids=" ".join)
def test_the_stores_score_as_fts5_to_the_last_bit(words: list[str]) -> None:
    texts = corpus()
    want = fts5_scores(texts, match(words))
    assert want
    terms = stemmed(words)
    tokenizer, docs = documents(texts)

    postings = build([(i, text, SCOPE) for i, text in enumerate(texts, 1)], 1, tokenizer.document)
    tids = [postings.terms.get(t) for t in terms]
    assert postings.rank(postings.scopes[SCOPE], tids, [1.0], len(texts), per_scope=True) == want

    # the PostgreSQL store's Python ranking reads (rowid, fts_len, lexeme, hits at A, at B)
    hits = [(i, len(doc) + 1, t, n, 0) for i, doc in enumerate(docs, 1) for t, n in Counter(doc).items()
            if t in terms]
    n_tokens = sum(len(doc) + 1 for doc in docs)  # the scope's token counts in a row's length
    assert pgtext.rank_rows(hits, terms, len(docs), n_tokens, (1.0,), len(texts)) == want


@pytest.mark.parametrize("word", ["coffee", "piano", "python"])
def test_the_file_search_scores_each_term_as_the_stores_do_with_its_own_idf(word: str) -> None:
    texts = corpus()
    want = dict(fts5_scores(texts, match([word])))
    [term] = stemmed([word])
    _, docs = documents(texts)
    docs = [[*doc, SCOPE] for doc in docs]  # the same lengths as the stores' rows
    got = bm25_scores(docs, [term])
    holding = sum(1 for doc in docs if term in doc)
    fts5_idf, lucene_idf = bm25.idf(len(docs), holding), bm25.lucene_idf(len(docs), holding)
    assert {i for i, s in enumerate(got, 1) if s} == set(want)
    for rowid, score in want.items():
        assert got[rowid - 1] / lucene_idf == pytest.approx(-score / fts5_idf, rel=1e-12)


def test_the_postgres_sql_ranking_scores_as_fts5(pg_url: str) -> None:
    import psycopg

    texts = corpus()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE docs (user_id text, agent_id text, rowid bigint, fts tsvector, fts_len int)")
        for i, text in enumerate(texts, 1):
            vec, n = pgtext.document(pgtext.body(text))
            conn.execute("INSERT INTO docs VALUES ('u', '', %s, %s::tsvector, %s)", (i, vec, n))
        n_docs, n_tokens = conn.execute("SELECT count(*), sum(fts_len) FROM docs").fetchone()  # type: ignore[misc]
        for words in QUERIES:
            want, terms = fts5_scores(texts, match(words)), stemmed(words)
            holding = [conn.execute("SELECT count(*) FROM docs WHERE fts @@ %s::tsquery",
                                    (pgtext.tsquery([t]),)).fetchone()[0] for t in terms]  # type: ignore[index]
            got = conn.execute(pgtext.bm25_sql("docs"), {
                "u": "u", "a": "", "q": pgtext.tsquery(terms), "terms": terms,
                "idfs": [bm25.idf(n_docs, n) for n in holding], "avgdl": n_tokens / n_docs,
                "wa": 1.0, "wb": 1.0, "k": len(texts)}).fetchall()
            assert [r for r, _ in got] == [r for r, _ in want], terms
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12), terms
