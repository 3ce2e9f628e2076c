"""A large scope on PostgreSQL (issue 34): the pruned full-text ranking returns what the
reference statement (every row's tsvector unpacked) returns, bulk inserts wait for the HNSW
graph and survive a kill -9, and a database of the previous schema is migrated in place."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane.models import MemoryRecord, Scope
from memlane.retrieval import bm25
from memlane.store import pgtext

pytest.importorskip("psycopg")

NOW = datetime(2026, 3, 1, tzinfo=UTC)
_COMMON = ["plans", "weekend", "user", "likes"]
_RARE = [f"topic{i}" for i in range(40)]


def _record(i: int, text: str, user: str = "big") -> MemoryRecord:
    return MemoryRecord.model_construct(
        id=f"m{i}", user_id=user, agent_id="", content=text, category="fact", kind="semantic", score=0.5,
        confidence=1.0, subject=None, predicate=None, created_at=NOW, updated_at=NOW, last_activated=NOW,
        activation_count=0, expires_at=None, source="import", verified=False, source_session=None, status="active",
        pinned=False, metadata={}, valid_from=NOW, valid_to=None, superseded_at=None, superseded_by=None,
        supersedes=None)


def _text(rnd: random.Random) -> str:
    """A short memory: common words in many rows, rare ones in few, some said twice or more."""
    words = [rnd.choice(_COMMON), rnd.choice(_RARE), rnd.choice(_RARE + _COMMON), "the", "note"]
    words += [words[1]] * rnd.choice([0, 0, 0, 1, 2])  # a rare word held 1-3 times
    words += [words[0]] * rnd.choice([0, 0, 1, 3])
    words += ["filler"] * rnd.randrange(0, 12)  # rows of many lengths
    rnd.shuffle(words)
    return " ".join(words)


def _reference(store: Any, corpus: str, scope: Scope, lex: list[str], limit: int,
               weights: tuple[float, float]) -> list[tuple[int, float]]:
    """What the statement before issue 34 ranked: every matching row's tsvector unpacked."""
    stats = store._q("SELECT docs, tokens FROM fts_stats WHERE user_id = %s AND agent_id = %s AND corpus = %s",
                     (scope.user_id, scope.agent_id, corpus))[0]
    holding = [int(store._q(f"SELECT count(*) FROM {corpus} WHERE user_id = %s AND agent_id = %s AND fts @@ %s::tsquery",
                            (scope.user_id, scope.agent_id, pgtext.tsquery([x])))[0][0]) for x in lex]
    kept = [i for i, n in enumerate(holding) if n]
    terms = [lex[i] for i in kept]
    rows = store._q(pgtext.bm25_sql(corpus), {
        "u": scope.user_id, "a": scope.agent_id, "q": pgtext.tsquery(terms), "terms": terms,
        "idfs": [bm25.idf(int(stats[0]), holding[i]) for i in kept], "avgdl": float(stats[1]) / float(stats[0]),
        "wa": weights[0], "wb": weights[1], "k": limit})
    return [(int(r[0]), float(r[1])) for r in rows]


def test_the_pruned_ranking_of_a_large_scope_is_the_reference_one(make_memory: Any, pg_url: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Rare and common words, words held once, twice and more, both corpora (a turn's
    neighbours at weight B): the same rows in the same order with the same scores as the
    statement that unpacked every row, whichever rows were ranked first (the shortest holding
    one word, those holding two words, those holding a rarer word) or all of them."""
    # prune in a scope of test size
    m = make_memory(store={"database_url": pg_url, "postgres_prune_rows": 20}, search={"ann_threshold": 50})
    rnd = random.Random(34)
    m.store.insert_memories([_record(i, _text(rnd)) for i in range(500)])
    m.add_messages("s", [{"role": "user" if i % 2 else "assistant", "content": _text(rnd)} for i in range(100)],
                   user_id="big")
    scope = Scope.of("big")
    queries = [[c, r] for c in _COMMON for r in _RARE[:4]] + [[r] for r in _RARE[:5]] + \
              [["plans", "weekend"], ["plans", "weekend", "topic3", "topic7"], ["note"], ["the", "topic1"]]
    answered: dict[str, int] = {}
    real = m.store._q
    calls: list[tuple[str, Any]] = []

    def spy(sql: str, params: Any = (), binary: bool = False) -> Any:
        calls.append((sql, params))
        return real(sql, params, binary)
    monkeypatch.setattr(m.store, "_q", spy)
    for corpus, weights in (("memories", (1.0, 1.0)), ("turns", (1.0, 0.3))):
        for words in queries:
            for limit in (5, 100):
                lex = pgtext.lexemes(words)
                calls.clear()
                got = m.store.fts_terms(corpus, scope, words, limit, weights)
                sql, params = calls[-1]  # the statement that answered
                kind = ("shortest" if "ORDER BY fts_len, rowid" in sql else "pairs" if "OR fts_rep @@" in sql
                        else "whole" if params["q"] == pgtext.tsquery(lex) else "maxscore")
                answered[kind] = answered.get(kind, 0) + 1
                want = _reference(m.store, corpus, scope, lex, limit, weights)
                assert [r for r, _ in got] == [r for r, _ in want], (corpus, words, limit)
                assert max((abs(x - y) for (_, x), (_, y) in zip(got, want, strict=True)), default=0) < 1e-9
    # each pruned statement answered some, not only the whole one
    assert min(answered.get(k, 0) for k in ("shortest", "pairs", "maxscore")) >= 3, answered


def _bulk_writer(url: str, home: str, log: str) -> None:
    """Insert batches of 300 memories with vectors into one large scope, logging each batch's
    first id once its call returned (committed)."""
    from memlane import Memory
    from memlane.testing import HashEmbedder

    from .conftest import make_config

    mem = Memory(make_config(Path(home), store={"database_url": url}, search={"ann_threshold": 100}),
                 embedder=HashEmbedder(16))
    rnd = np.random.default_rng(5)
    with open(log, "a", encoding="utf-8") as out:
        for b in range(1000):
            recs = [_record(b * 300 + i, f"bulk note {b} {i} about topic{i % 40}") for i in range(300)]
            vecs = rnd.standard_normal((300, 16)).astype(np.float32)
            mem.store.insert_memories(recs, vecs)
            out.write(f"{b}\n")
            out.flush()


def test_a_bulk_insert_killed_midway_leaves_its_rows_or_none_and_the_graph_resumes(pg_url: str,
                                                                                   tmp_path: Path) -> None:
    from memlane import Memory
    from memlane.testing import HashEmbedder

    from .conftest import make_config

    mem = Memory(make_config(tmp_path / "check", store={"database_url": pg_url}, search={"ann_threshold": 100}),
                 embedder=HashEmbedder(16))
    mem.store.ensure_vectors(mem.embedder.model_id, 16)  # type: ignore[attr-defined]
    mem.close()
    log = tmp_path / "batches.log"
    proc = multiprocessing.get_context("spawn").Process(target=_bulk_writer,
                                                        args=(pg_url, str(tmp_path / "w"), str(log)))
    proc.start()
    deadline = time.monotonic() + 60
    while len(log.read_text().split() if log.exists() else []) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(random.Random(1).uniform(0.0, 0.1))  # somewhere inside the next batch
    os.kill(proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
    proc.join(timeout=30)
    committed = len(log.read_text().split())
    mem = Memory(make_config(tmp_path / "check", store={"database_url": pg_url}, search={"ann_threshold": 100}),
                 embedder=HashEmbedder(16))
    try:
        store: Any = mem.store
        scope = Scope.of("big")
        n = store.raw_count("memories", "user_id = ?", ["big"])
        assert n % 300 == 0 and n // 300 >= committed  # whole batches: every committed one, none in part
        assert store.raw_count("vec_memories", "user_id = ?", ["big"]) == n  # each row with its vector
        store.settle_vectors()  # the graph takes what the killed process left waiting
        assert store.raw_count("vec_memories", "user_id = ? AND NOT ann", ["big"]) == 0
        assert store.raw_count("ann_pending") == 0
        q = np.random.default_rng(9).standard_normal(16).astype(np.float32)
        got = [r for r, _ in store.knn("memories", scope, q, 10)]
        rowids = [int(r[0]) for r in store._q("SELECT rowid FROM vec_memories WHERE user_id = 'big'")]
        vecs = store.vectors("memories", scope, rowids)
        cos = {r: float(v @ q / np.linalg.norm(v) / np.linalg.norm(q)) for r, v in vecs.items()}
        exact = sorted(cos, key=lambda r: -cos[r])[:10]
        assert len(set(got) & set(exact)) >= 8  # the index answers (HNSW: approximate)
    finally:
        mem.close()


def test_a_bulk_insert_is_searchable_before_it_joins_the_graph(make_memory: Any, pg_url: str) -> None:
    """Vectors a bulk insert leaves out of the HNSW graph are scanned exactly meanwhile: the
    nearest row is found at once, before and after they move in."""
    m = make_memory(store={"database_url": pg_url}, search={"ann_threshold": 50})
    store: Any = m.store
    store.ensure_vectors("test", 8)
    rnd = np.random.default_rng(3)
    vecs = rnd.standard_normal((400, 8)).astype(np.float32)
    store.insert_memories([_record(i, f"row {i}") for i in range(100)], vecs[:100])
    store.settle_vectors()
    store._closing.set()  # no thread moves the next ones in: they wait
    ids = store.insert_memories([_record(i, f"row {i}") for i in range(100, 400)], vecs[100:])
    assert store.raw_count("vec_memories", "NOT ann") == 300
    for i in (150, 399):
        assert store.knn("memories", Scope.of("big"), vecs[i], 1)[0][0] == ids[i - 100]
    store._closing.clear()
    store.settle_vectors()
    assert store.raw_count("vec_memories", "NOT ann") == 0
    assert store.knn("memories", Scope.of("big"), vecs[399], 1)[0][0] == ids[299]


def test_a_database_of_the_previous_schema_is_migrated_in_place(pg_server: str) -> None:
    """A database made by the migrations before m008, with a vector table as they left it:
    opened, it gains `fts_rep` (computed for the rows it holds), the partial vector indexes,
    `ann_pending` and each word's documents (`fts_terms`, counted from its rows), and its rows
    rank and search as before."""
    import psycopg

    from memlane.store.pgschema import PG_MIGRATIONS
    from memlane.store.postgres import PostgresStore

    name = "premigration"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = pg_server.rsplit("/", 1)[0] + "/" + name
    before = PG_MIGRATIONS[: PG_MIGRATIONS.index(next(s for s in PG_MIGRATIONS if s.__name__ == "m008_large_scopes"))]
    texts = ["tea tea tea and cake", "tea and cake", "coffee", "water", "juice", "bread", "a long tea " * 5] * 20
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
        conn.execute("CREATE TABLE migrations(name TEXT PRIMARY KEY, applied_at FLOAT8 NOT NULL)")
        for step in before:
            step(conn)
            conn.execute("INSERT INTO migrations VALUES (%s, 0)", (step.__name__,))
        conn.execute("CREATE TABLE vec_memories(rowid BIGINT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT NOT NULL, "
                     "embedding vector(4) NOT NULL, ann BOOLEAN NOT NULL DEFAULT false)")
        conn.execute("CREATE INDEX vec_memories_scope ON vec_memories(user_id, agent_id)")
        conn.execute("CREATE INDEX vec_memories_hnsw ON vec_memories USING hnsw (embedding vector_cosine_ops) WHERE ann")
        conn.execute("INSERT INTO meta VALUES ('vector_model', 'old'), ('vector_dims', '4')")
        for i, t in enumerate(texts, 1):
            vec, n = pgtext.document(pgtext.body(t))
            conn.execute("INSERT INTO memories(id, user_id, content, category, score, created_at, updated_at, "
                         "last_activated, source, embedded, fts, fts_len) VALUES (%s, 'u', %s, 'fact', 0.5, 0, 0, 0, "
                         "'user', 1, %s::tsvector, %s)", (f"m{i}", t, vec, n))
            conn.execute("INSERT INTO vec_memories VALUES (%s, 'u', '', %s, true)", (i, str([1.0, float(i % 7), 0, 0])))
    store = PostgresStore(url, ann_threshold=50)
    try:
        assert [n for n, _ in store.migrations()][-3:] == ["m008_large_scopes", "m009_term_documents",
                                                           "m010_large_scope_bounds"]
        assert store._q("SELECT docs, docs_a FROM fts_terms WHERE user_id = 'u' AND lexeme = 'tea'") == [(60, 60)]
        reps = dict(store._q("SELECT content, fts_rep::text FROM memories WHERE id IN ('m1', 'm2')"))
        assert reps == {"tea tea tea and cake": "'tea'", "tea and cake": ""}  # held twice or more (m010)
        assert store._q("SELECT min(fts_len) FROM memories WHERE user_id = 'u' AND agent_id = ''") == [(2,)]
        indexes = {r[0] for r in store._q("SELECT indexname FROM pg_indexes WHERE tablename = 'vec_memories'")}
        assert {"vec_memories_in_ann", "vec_memories_exact", "vec_memories_hnsw"} <= indexes
        scope = Scope.of("u")
        for words in (["tea"], ["tea", "cake"], ["coffee", "tea"]):
            got = store.fts_terms("memories", scope, words, 10)
            want = _reference(store, "memories", scope, pgtext.lexemes(words), 10, (1.0, 1.0))
            assert [r for r, _ in got] == [r for r, _ in want] and [s for _, s in got] == pytest.approx(
                [s for _, s in want], rel=1e-12)
        assert [r for r, _ in store.knn("memories", scope, np.array([1, 3, 0, 0], dtype=np.float32), 3)]
    finally:
        store.close()
