"""Scale benchmark: insert rate, database size, hybrid search latency and vector recall at
10k, 100k and 1M memories (issue 3).

Scenarios: one user holding 10k memories; one user holding 100k; 1k users sharing 1M
(1k each). The memories are synthetic but shaped like real ones: sentences from topic
templates whose words correlate with the topic, and 384-d embeddings clustered around topic
centres (plus a pull towards each sentence's own words), L2-normalised float32. Vectors are
passed in directly; the query embedding is precomputed, so search latency excludes it.

Rows go in through `Store.insert_memories` (one transaction of 10k rows each); searches go
through `Memory.search(..., query_vector=..., activate=False)` on the same database, with the
hash embedder's model id and width so the store keeps the vectors. The raw full-text column
times `Store.fts` (the lexical cache of store/lexindex.py, with the scope's own BM25
statistics), next to `SQLiteStore.fts5`, FTS5's own ranking of the same query; the cache's
build is the first full-text query's cost, timed apart. Each answer is checked against FTS5:
with one user the scope's statistics are the table's, with many a second store ranks with
the table's ("corpus") statistics. A memories table of `memory_cache_threshold` rows or
more is served by the memory cache (store/memcache.py): its first use (a build from SQLite,
or a load of its file) is timed apart, with its arrays' size and what it added to the RSS;
"vector R@10" is then the recall of its int8 codes, and "hits = uncached" the share of each
search's hits that a second `Memory` without the cache returns too. Results of the scenarios
not run are kept from the last results file.

    python bench/scale.py                         # 10k, 100k, 1M
    python bench/scale.py --sizes 10k,100k --queries 100
    python bench/scale.py --skip-1m
    python bench/scale.py --sizes 1m --keep --workdir /tmp/scale1m   # keep the database …
    python bench/scale.py --sizes 1m --reuse /tmp/scale1m/memlane-scale-1m-XXXX   # … query it again
    python bench/scale.py --backend sqlite,postgres --sizes 10k,100k,100k-multi   # both, one table
    python bench/scale.py --backend sqlite,postgres --sizes 1m --ingest --keep --pg-dir /tmp/pg  # + turns/s

`--backend postgres` runs the same corpora and queries on PostgreSQL + pgvector (issue 17):
an embedded server on 127.0.0.1 (store/pglocal.py), or `--database-url` (an empty
database). There, full text is PostgreSQL's (GIN over the scope and the tsvector, BM25 in
SQL), vectors pgvector's (exact within a scope under ann_threshold, HNSW above), and no
in-process cache is kept. A PostgreSQL database is named for its scenario and seed: with
`--keep` it stays (with `--pg-dir`, the embedded server's directory too) and the next run
queries it instead of filling it again. `--ingest` adds turns/s of `Memory.add_messages` on
each backend (`run_ingest`).

`--baseline-src OTHER/src` runs each PostgreSQL scenario a second time, first, with another
checkout's memlane (a child process on the same server, its own database): before and after
in one run, as ratios on a shared machine (issue 34). "insert rows/s" is the inserting
calls' rate; "indexed rows/s" adds the time until every vector is in the HNSW graph (a bulk
insert leaves them to `settle_vectors`, scanned exactly meanwhile).

    python bench/scale.py --backend sqlite,postgres --sizes 10k,100k --baseline-src ../main/src
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import RESULTS, Timer, console, percentile, table, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.models import MemoryRecord, Scope  # noqa: E402
from memlane.store.lexindex import LexSettings  # noqa: E402
from memlane.store.memcache import MemSettings  # noqa: E402
from memlane.store.sqlite import SQLiteStore  # noqa: E402

DIMS = 384
BATCH = 10_000
SCENARIOS = {"10k": (1, 10_000), "100k": (1, 100_000), "100k-multi": (1_000, 100),
             "1m": (1_000, 1_000)}  # users, per user
PG_STATEMENT_TIMEOUT_MS = 3_600_000
NO_CACHE = 10**12  # a memory_cache_threshold no table reaches: SQLite answers

TOPICS: dict[str, list[str]] = {
    "food": ["pasta", "sushi", "peanuts", "coffee", "espresso", "ramen", "salad", "cheese", "bakery", "vegan", "spicy", "dumplings"],
    "travel": ["flight", "tokyo", "lisbon", "hotel", "passport", "train", "hiking", "beach", "visa", "airport", "itinerary", "luggage"],
    "work": ["deadline", "meeting", "manager", "promotion", "project", "roadmap", "review", "standup", "contract", "office", "client", "budget"],
    "health": ["allergy", "doctor", "running", "yoga", "sleep", "vitamins", "dentist", "knee", "gym", "diet", "migraine", "therapy"],
    "family": ["sister", "brother", "daughter", "son", "parents", "wedding", "birthday", "grandmother", "cousin", "anniversary", "nephew", "twins"],
    "tech": ["python", "laptop", "kubernetes", "database", "keyboard", "linux", "rust", "monitor", "backup", "router", "compiler", "sqlite"],
    "music": ["guitar", "piano", "jazz", "concert", "playlist", "vinyl", "drums", "choir", "opera", "festival", "headphones", "violin"],
    "finance": ["mortgage", "savings", "stocks", "taxes", "pension", "invoice", "crypto", "loan", "insurance", "rent", "salary", "bonus"],
    "pets": ["dog", "cat", "puppy", "vet", "leash", "aquarium", "parrot", "kitten", "grooming", "hamster", "rabbit", "adoption"],
    "home": ["garden", "kitchen", "furniture", "plumber", "balcony", "paint", "tomatoes", "sofa", "renovation", "curtains", "lamp", "garage"],
    "sport": ["football", "tennis", "marathon", "cycling", "swimming", "climbing", "skiing", "basketball", "chess", "golf", "rowing", "boxing"],
    "books": ["novel", "poetry", "library", "author", "fantasy", "biography", "manga", "audiobook", "thriller", "essay", "translation", "kindle"],
    "learning": ["spanish", "japanese", "course", "exam", "grammar", "tutor", "vocabulary", "university", "thesis", "lecture", "flashcards", "degree"],
    "car": ["tesla", "engine", "parking", "mechanic", "tires", "license", "commute", "highway", "battery", "bicycle", "scooter", "carpool"],
    "film": ["movie", "cinema", "documentary", "series", "director", "netflix", "trailer", "anime", "comedy", "horror", "actor", "screenplay"],
    "cooking": ["recipe", "oven", "bread", "soup", "curry", "grill", "dessert", "noodles", "sourdough", "marinade", "wok", "pancakes"],
}
QUERIES = ["what does the user say about {a} and {b}?", "{a} {b}", "any plans with {a}?",
           "does the user like {a} or {b}?", "{a} on the weekend", "tell me about {b}"]
COMMON = ["user", "prefers", "likes", "wants", "weekend", "usually", "always", "friend", "plans", "remember", "said", "every"]
TEMPLATES = [
    "The user {c1} {a} and {b} on the {c2}.",
    "{A} matters to the user; they {c1} {b} with {c}.",
    "User {c1} talking about {a}, especially {b} and {c}.",
    "Remember: the user {c1} {a} {c2}, not {b}.",
    "Last {c2} the user mentioned {a} and a {b} friend.",
    "The user {c1} to plan {a} around {b} this {c2}.",
]


@dataclass
class Corpus:
    """A scenario's memories: text, owner, topic and vector per row."""

    texts: list[str]
    users: np.ndarray  # user index per row
    topics: np.ndarray
    vectors: np.ndarray  # float32 (n, DIMS), L2-normalised


class World:
    """Topic centres and word vectors: what makes texts and vectors agree."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.topic_names = list(TOPICS)
        self.centers = _unit(self.rng.standard_normal((len(TOPICS), DIMS)).astype(np.float32))
        self.vocab = [w for t in self.topic_names for w in TOPICS[t]]
        self.word_vecs = _unit(self.rng.standard_normal((len(self.vocab), DIMS)).astype(np.float32))
        self.per_topic = len(TOPICS[self.topic_names[0]])

    def sample(self, n: int, n_users: int) -> Corpus:
        rng = self.rng
        users = np.repeat(np.arange(n_users), n // n_users)
        rng.shuffle(users)  # users' memories arrive interleaved, as in a shared server
        # each user leans towards a few topics, as real users do
        fav = rng.integers(0, len(TOPICS), (n_users, 4))
        topics = np.where(rng.random(n) < 0.7, fav[users, rng.integers(0, 4, n)], rng.integers(0, len(TOPICS), n))
        words = rng.integers(0, self.per_topic, (n, 3))
        common = rng.integers(0, len(COMMON), (n, 2))
        tmpl = rng.integers(0, len(TEMPLATES), n)
        texts = []
        for i in range(n):
            t = int(topics[i])
            a, b, c = (TOPICS[self.topic_names[t]][int(w)] for w in words[i])
            texts.append(TEMPLATES[tmpl[i]].format(a=a, A=a.capitalize(), b=b, c=c,
                                                    c1=COMMON[common[i, 0]], c2=COMMON[common[i, 1]]))
        vectors = np.empty((n, DIMS), dtype=np.float32)
        for s in range(0, n, 50_000):
            e = min(n, s + 50_000)
            vectors[s:e] = self.embed(topics[s:e], words[s:e])
        return Corpus(texts, users, topics, vectors)

    def embed(self, topics: np.ndarray, words: np.ndarray, noise: float = 0.045) -> np.ndarray:
        """Topic centre + the mean of the sentence's topic words + Gaussian noise, normalised."""
        ids = topics[:, None] * self.per_topic + words
        v = self.centers[topics] + 0.8 * self.word_vecs[ids].mean(axis=1)
        v += noise * self.rng.standard_normal(v.shape).astype(np.float32)
        return _unit(v)

    def queries(self, n: int, user_topics: list[np.ndarray]) -> list[tuple[int, str, np.ndarray]]:
        """(user index, query text, query vector): questions about a topic the user talks about."""
        out = []
        for _ in range(n):
            u = int(self.rng.integers(0, len(user_topics)))
            t = int(self.rng.choice(user_topics[u]))
            w = self.rng.integers(0, self.per_topic, 2)
            a, b = (TOPICS[self.topic_names[t]][int(x)] for x in w)
            vec = self.embed(np.array([t]), np.array([[w[0], w[1], w[0]]]), noise=0.06)[0]
            out.append((u, QUERIES[len(out) % len(QUERIES)].format(a=a, b=b), vec))
        return out


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def make_memory(home: Path, ann_threshold: int | None, memory_cache_threshold: int | None = None,
                database_url: str = "") -> Memory:
    if database_url:
        # a bulk load's statements run long on a loaded machine: before issue 34 the batch that
        # took a scope past ann_threshold put all its rows in the HNSW graph in one statement
        # (10k rows: past the store's 30 s timeout beside other benchmarks); lifted for the bench
        with contextlib.suppress(ImportError, AttributeError, KeyError, TypeError):
            from memlane.store.postgres.base import PostgresBase

            PostgresBase.__init__.__kwdefaults__["statement_timeout_ms"] = PG_STATEMENT_TIMEOUT_MS
    search: dict[str, Any] = {} if ann_threshold is None else {"ann_threshold": ann_threshold}
    if memory_cache_threshold is not None:
        search["memory_cache_threshold"] = memory_cache_threshold
    config = Config.load(store={"home": str(home), "database_url": database_url}, search=search,
                         embedding={"provider": "hash", "dimensions": DIMS, "background": False})
    return Memory(config)


def insert(memory: Memory, corpus: Corpus) -> float:
    """Bulk insert through the store; returns seconds."""
    now = datetime(2025, 1, 1, tzinfo=UTC)
    n = len(corpus.texts)
    start = time.perf_counter()
    for s in range(0, n, BATCH):
        e = min(n, s + BATCH)
        records = [
            MemoryRecord.model_construct(
                id=f"m{i:07d}", user_id=f"u{int(corpus.users[i]):04d}", agent_id="",
                content=corpus.texts[i], category="fact", kind="semantic", score=0.6, confidence=1.0,
                subject=None, predicate=None, created_at=now - timedelta(minutes=n - i),
                updated_at=now, last_activated=now, activation_count=0, expires_at=None, source="import",
                verified=False, source_session=None, status="active", pinned=False, metadata={},
            )
            for i in range(s, e)
        ]
        memory.store.insert_memories(records, corpus.vectors[s:e])
        if n >= 100_000 and (e // BATCH) % 10 == 0:
            console.print(f"  inserted {e:,}/{n:,} ({e / (time.perf_counter() - start):,.0f} rows/s)")
    return time.perf_counter() - start


def rss_mb() -> float:
    """This process's resident memory (Linux), 0 where /proc is missing."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


def db_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.glob("memlane.db*") if p.is_file())


def run_scenario(name: str, world: World, args: argparse.Namespace) -> dict[str, Any]:
    n_users, per_user = SCENARIOS[name]
    n = n_users * per_user
    console.print(f"[bold]{name}[/]: {n_users:,} user(s) × {per_user:,} memories")
    corpus = world.sample(n, n_users)
    # a kept database of the same scenario and seed holds this very corpus: queried, not refilled
    home = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix=f"memlane-scale-{name}-", dir=args.workdir))
    try:
        memory = make_memory(home, args.ann_threshold, args.memory_cache_threshold)
        insert_s = None if args.reuse else insert(memory, corpus)
        size = db_bytes(home)
        order = np.argsort(corpus.users, kind="stable")
        rows_of = np.split(order, np.cumsum(np.bincount(corpus.users, minlength=n_users))[:-1])
        user_topics = [np.unique(corpus.topics[r]) for r in rows_of]
        queries = world.queries(args.queries, user_topics)
        scopes = [Scope(user_id=f"u{u:04d}") for u in range(n_users)]

        # the first vector query of a scope above the threshold builds its ANN cache, the first
        # full-text query of a corpus above the threshold its lexical cache, and the first query
        # of a large memories table its memory cache: timed apart
        memcache = memory.store.memcache  # type: ignore[attr-defined]
        rss_start = rss_mb()
        with Timer() as t:
            memcache.ready()
        mem_s, mem_stats, mem_loaded = t.seconds, memcache.stats(), bool(memcache.loads)
        mem_rss = rss_mb() - rss_start
        with Timer() as t:
            memory.store.knn("memories", scopes[queries[0][0]], queries[0][2], 10)
        build_s = t.seconds
        from memlane.retrieval.query import analyse

        rss_before = rss_mb()
        with Timer() as t:
            memory.store.fts("memories", scopes[queries[0][0]], analyse(queries[0][1])[1], 100)
        lex_build_s = t.seconds
        lex_stats = memory.store.lexical.stats().get("memories", {})  # type: ignore[attr-defined]
        rss_after = rss_mb()
        for u, text, vec in queries[:5]:  # warm-up (page cache, jieba, numpy)
            memory.search(text, user_id=scopes[u].user_id, query_vector=vec, activate=False, min_score=0.0)
        # FTS5's statistics span the table: with many users, its reference is a "corpus" ranking
        check = memory.store if n_users == 1 else SQLiteStore(home / "memlane.db", lexical=LexSettings(statistics="corpus"),
                                                              memory=MemSettings(threshold=NO_CACHE))
        # the same searches answered by SQLite, without the memory cache: what its int8 codes change
        plain = make_memory(home, args.ann_threshold, NO_CACHE) if mem_stats else None

        lat, fts_lat, fts5_lat, knn_lat, recalls, hits_n, same = [], [], [], [], [], [], []
        for u, text, vec in queries:
            with Timer() as t:
                hits = memory.search(text, user_id=scopes[u].user_id, query_vector=vec, activate=False, min_score=0.0)
            lat.append(t.seconds * 1000)
            hits_n.append(len(hits))
            if plain is not None:
                want = plain.search(text, user_id=scopes[u].user_id, query_vector=vec, activate=False, min_score=0.0)
                same.append(len({h.id for h in hits} & {h.id for h in want}) / max(1, len(want)))
            with Timer() as t:
                lexical = memory.store.fts("memories", scopes[u], analyse(text)[1], 100)
            fts_lat.append(t.seconds * 1000)
            with Timer() as t:
                reference = memory.store.fts5("memories", scopes[u], analyse(text)[1], 100)  # type: ignore[attr-defined]
            fts5_lat.append(t.seconds * 1000)
            if check is not memory.store:
                lexical = check.fts("memories", scopes[u], analyse(text)[1], 100)
            assert lexical == reference, f"lexical cache and FTS5 disagree on {text!r}"
            with Timer() as t:
                got = memory.store.knn("memories", scopes[u], vec, 100)
            knn_lat.append(t.seconds * 1000)
            # exact top 10 of this user's vectors by brute force
            mine = rows_of[u]  # rowid = position + 1 in a fresh database
            sims = corpus.vectors[mine] @ vec
            exact = {int(mine[i]) + 1 for i in np.argpartition(-sims, 10)[:10]}
            recalls.append(len(exact.intersection(r for r, _ in got[:10])) / 10)
        stats = memory.store.stats(scopes[0])
        used_ann = per_user >= memory.config.search.ann_threshold
        if check is not memory.store:
            check.close()
        if plain is not None:
            plain.close()
        memory.close()
        return {
            "scenario": name, "users": n_users, "per_user": per_user, "rows": n,
            "insert_s": insert_s, "insert_rows_s": None if insert_s is None else n / insert_s, "db_mb": size / 1e6,
            "search_p50_ms": percentile(lat, 50), "search_p95_ms": percentile(lat, 95),
            "fts_p50_ms": percentile(fts_lat, 50), "fts_p95_ms": percentile(fts_lat, 95),
            "fts5_p50_ms": percentile(fts5_lat, 50), "fts5_p95_ms": percentile(fts5_lat, 95),
            "lexical_build_s": lex_build_s, "lexical": bool(lex_stats),
            "lexical_mb": lex_stats.get("bytes", 0) / 1e6, "rss_mb_before_lexical": rss_before,
            "rss_mb_after_lexical": rss_after, "memory_cache": bool(mem_stats), "memory_cache_s": mem_s,
            "memory_cache_loaded": mem_loaded, "memory_cache_mb": mem_stats.get("bytes", 0) / 1e6,
            "memory_cache_rss_mb": mem_rss,
            "hits_same_as_uncached@10": float(np.mean(same)) if same else None,
            "knn_p50_ms": percentile(knn_lat, 50), "knn_p95_ms": percentile(knn_lat, 95),
            "vector_recall@10": float(np.mean(recalls)), "ann": used_ann, "ann_build_s": build_s,
            "mean_hits": float(np.mean(hits_n)), "queries": len(queries),
            "memories_user0": stats["memories"],
        }
    finally:
        if not (args.keep or args.reuse):
            shutil.rmtree(home, ignore_errors=True)


def run_postgres(name: str, world: World, args: argparse.Namespace, server_url: str) -> dict[str, Any]:
    """The scenario on PostgreSQL: insert rate, hybrid search latency, full-text and vector
    latency, and recall@10 of the vector side against exact search, in a fresh database."""
    import psycopg

    n_users, per_user = SCENARIOS[name]
    n = n_users * per_user
    console.print(f"[bold]{name} on postgres[/]: {n_users:,} user(s) × {per_user:,} memories")
    corpus = world.sample(n, n_users)
    # one database per scenario and seed: a kept one (--keep) that holds the whole corpus is
    # queried again instead of refilled, as --reuse does for SQLite
    db = f"scale_{name.replace('-', '_')}_s{args.seed}{args.db_tag}"
    url = server_url.rsplit("/", 1)[0] + "/" + db
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchall())
    filled = False
    if exists:
        with contextlib.suppress(psycopg.Error), psycopg.connect(url, autocommit=True) as conn:
            filled = conn.execute("SELECT value FROM meta WHERE key = 'bench_rows'").fetchall() == [(str(n),)]
    if not filled:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {db}")
    home = Path(tempfile.mkdtemp(prefix=f"memlane-scale-pg-{name}-", dir=args.workdir))
    try:
        memory = make_memory(home, args.ann_threshold, database_url=url)
        insert_s = graph_s = None
        if not filled:
            insert_s = insert(memory, corpus)
            # vectors a bulk insert left out of the HNSW graph (issue 34) move in before the
            # searches are timed: its cost is reported apart (a store without it has none)
            settle = getattr(memory.store, "settle_vectors", None)
            with Timer() as t:
                if settle is not None:
                    settle()
            graph_s = t.seconds
            memory.store.set_meta("bench_rows", str(n))
        else:
            console.print(f"  reusing the kept database {db}")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])  # type: ignore[index]
        # the memories' tables and indexes read into shared buffers by the store's own pooled
        # connection, as a server that has been answering for a while holds them (its backend
        # has then also mapped those buffers: a first touch costs a page fault, ~10 µs a page
        # on this VM, ~9 ms for the 1,000 pages of one user's vectors)
        prewarmed = False
        with contextlib.suppress(psycopg.Error), memory.store._conn() as conn:  # type: ignore[attr-defined]
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            for (rel,) in conn.execute("SELECT oid::regclass::text FROM pg_class WHERE relkind IN ('r', 'i') "
                                       "AND (relname LIKE 'memories%' OR relname LIKE 'vec_memories%' "
                                       "OR relname LIKE 'fts_stats%')").fetchall():
                conn.execute("SELECT pg_prewarm(%s::regclass)", (rel,))
            prewarmed = True
        order = np.argsort(corpus.users, kind="stable")
        rows_of = np.split(order, np.cumsum(np.bincount(corpus.users, minlength=n_users))[:-1])
        queries = world.queries(args.queries, [np.unique(corpus.topics[r]) for r in rows_of])
        scopes = [Scope(user_id=f"u{u:04d}") for u in range(n_users)]
        from memlane.retrieval.query import analyse

        for u, text, vec in queries[:5]:  # warm-up
            memory.search(text, user_id=scopes[u].user_id, query_vector=vec, activate=False, min_score=0.0)
        lat, fts_lat, knn_lat, recalls, hits_n = [], [], [], [], []
        answers: list[tuple[list[str], list[int]]] = []  # each query's hits and full-text rows
        for u, text, vec in queries:
            with Timer() as t:
                hits = memory.search(text, user_id=scopes[u].user_id, query_vector=vec, activate=False, min_score=0.0)
            lat.append(t.seconds * 1000)
            hits_n.append(len(hits))
            with Timer() as t:
                lexical = memory.store.fts("memories", scopes[u], analyse(text)[1], 100)
            fts_lat.append(t.seconds * 1000)
            answers.append(([h.id for h in hits], [r for r, _ in lexical]))
            with Timer() as t:
                got = memory.store.knn("memories", scopes[u], vec, 100)
            knn_lat.append(t.seconds * 1000)
            mine = rows_of[u]
            sims = corpus.vectors[mine] @ vec
            exact = {int(mine[i]) + 1 for i in np.argpartition(-sims, 10)[:10]}
            recalls.append(len(exact.intersection(r for r, _ in got[:10])) / 10)
        memory.close()
        return {
            "backend": "postgres" + args.label, "scenario": name, "users": n_users, "per_user": per_user, "rows": n,
            "insert_s": insert_s, "insert_rows_s": None if insert_s is None else n / insert_s, "db_mb": size / 1e6,
            "graph_s": graph_s, "indexed_rows_s": None if insert_s is None else n / (insert_s + (graph_s or 0.0)),
            "search_p50_ms": percentile(lat, 50), "search_p95_ms": percentile(lat, 95),
            "fts_p50_ms": percentile(fts_lat, 50), "fts_p95_ms": percentile(fts_lat, 95),
            "knn_p50_ms": percentile(knn_lat, 50), "knn_p95_ms": percentile(knn_lat, 95),
            "vector_recall@10": float(np.mean(recalls)), "ann": per_user >= memory.config.search.ann_threshold,
            "mean_hits": float(np.mean(hits_n)), "queries": len(queries), "prewarmed": prewarmed,
            "_answers": answers,
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if not args.keep:
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def same_as_baseline(results: list[dict[str, Any]]) -> None:
    """Each PostgreSQL result beside a baseline one of its scenario gets how much its answers
    are the baseline's: the share of search hits (top 10) in common, the share of searches
    whose top 10 is the same list, the share of full-text top 100s that are identical."""
    base = {r["scenario"]: r.pop("_answers") for r in results if r["backend"].endswith("@baseline") and "_answers" in r}
    for r in results:
        mine = r.pop("_answers", None)
        theirs = base.get(r["scenario"])
        if mine is None or theirs is None or r["backend"].endswith("@baseline"):
            continue
        pairs = list(zip(mine, theirs, strict=True))
        r["hits_same_as_baseline@10"] = float(np.mean([len(set(a[0][:10]) & set(b[0][:10])) / max(1, len(b[0][:10]))
                                                       for a, b in pairs]))
        r["hits_order_as_baseline@10"] = float(np.mean([a[0][:10] == b[0][:10] for a, b in pairs]))
        r["fts_same_as_baseline"] = float(np.mean([a[1] == b[1] for a, b in pairs]))


def run_baseline(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The PostgreSQL scenario with another checkout's memlane (`--baseline-src`), this bench's
    code, the same server, corpus and queries, in a database of its own: a child process."""
    import os
    import subprocess

    out = Path(tempfile.mkstemp(prefix="memlane-scale-baseline-", suffix=".json", dir=args.workdir)[1])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--sizes", name, "--queries", str(args.queries),
           "--seed", str(args.seed), "--database-url", args.database_url, "--db-tag", f"{args.db_tag}_baseline",
           "--label", "@baseline", "--child-json", str(out)]
    cmd += ["--keep"] if args.keep else []
    cmd += [] if args.ann_threshold is None else ["--ann-threshold", str(args.ann_threshold)]
    cmd += [] if args.workdir is None else ["--workdir", args.workdir]
    env = {**os.environ, "PYTHONPATH": str(Path(args.baseline_src).resolve())}
    try:
        subprocess.run(cmd, check=True, env=env)
        return dict(json.loads(out.read_text(encoding="utf-8"))[0])
    finally:
        out.unlink(missing_ok=True)


INGEST_USERS, INGEST_SESSIONS, INGEST_TURNS = 20, 5, 40  # users × sessions each × turns a session


def chat_texts(texts: list[str]) -> list[str]:
    """The corpus's sentences as chat turns: none an explicit "remember …" command, which
    add_messages would apply at once (a memory written per turn is not ingest)."""
    from memlane.heuristic import is_command

    out = [t.replace("Remember: ", "Note: ").replace("remember", "mention") for t in texts]
    return [t for t in out if not is_command(t)]


def run_ingest(backend: str, world: World, args: argparse.Namespace, server_url: str = "") -> list[dict[str, Any]]:
    """Turns stored per second through `Memory.add_messages`, embedding and extraction left
    out (a server's indexer embeds behind ingest): a chat's exchanges (2 turns a call) and
    whole sessions (40 a call), 20 users × 5 sessions × 40 turns each way, in a fresh store."""
    import psycopg

    texts = chat_texts(world.sample(2 * INGEST_USERS * INGEST_SESSIONS * INGEST_TURNS, 1).texts)
    out = []
    for per_call in (2, INGEST_TURNS):
        home = Path(tempfile.mkdtemp(prefix="memlane-scale-ingest-", dir=args.workdir))
        url, db = "", f"scale_ingest_{per_call}"
        if backend == "postgres":
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {db}")
            url = server_url.rsplit("/", 1)[0] + "/" + db
        config = Config.load(store={"home": str(home), "database_url": url},
                             embedding={"provider": "hash", "dimensions": DIMS, "background": True},
                             extraction={"every_n_user_messages": 0})
        memory = Memory(config)
        memory.vectors.indexer.stop()  # type: ignore[union-attr]  # rows stay queued: ingest alone is timed
        try:
            i = 0
            start = time.perf_counter()
            for s in range(INGEST_SESSIONS):
                for u in range(INGEST_USERS):
                    for c in range(0, INGEST_TURNS, per_call):
                        msgs = [{"role": "user" if (c + j) % 2 == 0 else "assistant", "content": texts[i + j]}
                                for j in range(per_call)]
                        memory.add_messages(f"s{s}", msgs, user_id=f"u{u:03d}")
                        i += per_call
            seconds = time.perf_counter() - start
            assert memory.store.raw_count("turns") == i
            out.append({"backend": backend, "turns_per_call": per_call, "turns": i, "seconds": seconds,
                        "turns_per_s": i / seconds})
            console.print(f"  {backend}: {i:,} turns, {per_call} a call: {i / seconds:,.0f} turns/s")
        finally:
            memory.close()
            shutil.rmtree(home, ignore_errors=True)
            if backend == "postgres":
                with psycopg.connect(server_url, autocommit=True) as conn:
                    conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    return out


def _memory_cache(r: dict[str, Any]) -> str:
    """"load 2.6 / 442": the memory cache's first use (a build or a file load) and its arrays."""
    if not r.get("memory_cache"):
        return "–"
    return f"{'load' if r['memory_cache_loaded'] else 'build'} {r['memory_cache_s']:.1f} / {r['memory_cache_mb']:,.0f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10k,100k,1m", help="comma-separated scenarios: 10k, 100k, 1m")
    p.add_argument("--skip-1m", action="store_true", help="leave out the 1M-row scenario")
    p.add_argument("--queries", type=int, default=200, help="queries per scenario")
    p.add_argument("--ann-threshold", type=int, default=None, help="override SearchConfig.ann_threshold")
    p.add_argument("--memory-cache-threshold", type=int, default=None,
                   help="override SearchConfig.memory_cache_threshold")
    p.add_argument("--workdir", default=None, help="where the temporary databases go")
    p.add_argument("--keep", action="store_true", help="keep the databases")
    p.add_argument("--reuse", default=None, help="query this kept database (one scenario, same seed) instead of filling one")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--backend", default="sqlite", help="comma-separated: sqlite, postgres (one table for both)")
    p.add_argument("--database-url", default="", help="postgres: a server to create the bench databases on "
                   "(else an embedded one, started for the run)")
    p.add_argument("--ingest", action="store_true", help="also time add_messages on each backend (turns/s)")
    p.add_argument("--pg-shared-buffers", default="3GB", help="postgres: the embedded server's shared_buffers")
    p.add_argument("--pg-dir", default=None, help="postgres: the embedded server's directory, kept after the "
                   "run (with --keep its databases too, queried again by the next run)")
    p.add_argument("--baseline-src", default=None, help="postgres: also run each scenario with the memlane package "
                   "of another checkout (its src directory), in a child process on the same server, labelled "
                   "'postgres@baseline': before/after in one run")
    p.add_argument("--results-name", default="scale_backends", help="--backend with postgres: the results file's "
                   "name under bench/results/")
    p.add_argument("--db-tag", default="", help=argparse.SUPPRESS)  # suffix of the bench databases' names
    p.add_argument("--label", default="", help=argparse.SUPPRESS)  # suffix of the backend's name in the results
    p.add_argument("--child-json", default=None, help=argparse.SUPPRESS)  # child of --baseline-src: results here
    args = p.parse_args(argv)
    if args.child_json:
        results = [run_postgres(s.strip(), World(args.seed), args, args.database_url) for s in args.sizes.split(",")]
        Path(args.child_json).write_text(json.dumps(results), encoding="utf-8")
        return 0
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgres"}:
        p.error(f"--backend: unknown {sorted(set(backends) - {'sqlite', 'postgres'})}")
    sizes = [s.strip().lower() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in SCENARIOS]
    if unknown:
        p.error(f"--sizes: unknown {unknown}; known: {list(SCENARIOS)}")
    if args.skip_1m:
        sizes = [s for s in sizes if s != "1m"]
    if args.reuse and len(sizes) != 1:
        p.error("--reuse: name the one scenario of that database with --sizes")
    if backends != ["sqlite"]:
        return compare(sizes, backends, args)
    world = World(args.seed)
    results = [run_scenario(s, world, args) for s in sizes]
    targets = {"10k": 10.0, "100k": 10.0, "100k-multi": 5.0, "1m": 5.0}
    rows = [
        (r["scenario"], f"{r['users']:,} × {r['per_user']:,}",
         "–" if r["insert_rows_s"] is None else f"{r['insert_rows_s']:,.0f}", f"{r['db_mb']:,.0f}",
         r["search_p50_ms"], r["search_p95_ms"], f"≤ {targets[r['scenario']]:.0f}", r["fts_p95_ms"],
         r["fts5_p95_ms"], r["knn_p95_ms"], "hnsw" if r["ann"] else "int8" if r.get("memory_cache") else "vec0", r["vector_recall@10"],
         f"{r['ann_build_s']:.1f}", f"{r['lexical_build_s']:.1f}" if r["lexical"] else "–",
         f"{r['lexical_mb']:,.0f}" if r["lexical"] else "–", _memory_cache(r),
         "–" if r.get("hits_same_as_uncached@10") is None else f"{r['hits_same_as_uncached@10']:.3f}",
         f"{r['memory_cache_rss_mb']:,.0f}" if r.get("memory_cache") else "–")
        for r in results
    ]
    console.print(table(
        "memlane scale (hybrid search via Memory.search, query vector precomputed; ms)",
        ["scenario", "users × memories", "insert rows/s", "DB MB", "p50", "p95", "target p95",
         "fts p95", "fts5 p95", "knn p95", "vectors", "vector R@10", "ann build s", "lexical build s",
         "lexical MB", "mem cache s / MB", "hits = uncached", "mem cache RSS MB"],
        rows,
    ))
    ran = {r["scenario"] for r in results}
    with contextlib.suppress(OSError, ValueError, KeyError):
        kept = json.loads((RESULTS / "scale.json").read_text(encoding="utf-8"))["results"]
        results = [r for r in kept if r.get("scenario") not in ran] + results
    results.sort(key=lambda r: list(SCENARIOS).index(r["scenario"]))
    path = write_result("scale", {"queries": args.queries, "targets_p95_ms": targets, "results": results})
    console.print(f"wrote {path}")
    return 0


def compare(sizes: list[str], backends: list[str], args: argparse.Namespace) -> int:
    """The scenarios on each backend, the same corpora and queries (same seed), in one table."""
    from memlane.store.pglocal import LocalPostgres

    results: list[dict[str, Any]] = []
    server = None
    if "postgres" in backends and not args.database_url:
        where = args.pg_dir or tempfile.mkdtemp(prefix="memlane-scale-pg-", dir=args.workdir)
        # a server holding 1M memories is given memory for them: the default 128 MB of shared
        # buffers would copy each query's scattered pages in from the OS cache again
        server = LocalPostgres(where, durable=False, settings={"shared_buffers": args.pg_shared_buffers})
        args.database_url = server.start()
    ingest: list[dict[str, Any]] = []
    try:
        if args.ingest:
            for backend in backends:
                ingest += run_ingest(backend, World(args.seed), args, args.database_url)
        for size in sizes:
            for backend in backends:
                world = World(args.seed)  # each backend gets the very same corpus and queries
                if backend == "sqlite":
                    results.append({"backend": "sqlite", **run_scenario(size, world, args)})
                else:
                    if args.baseline_src:
                        results.append(run_baseline(size, args))
                    results.append(run_postgres(size, world, args, args.database_url))
    finally:
        if server is not None:
            server.stop()
            if not args.pg_dir:
                shutil.rmtree(server.directory, ignore_errors=True)
    same_as_baseline(results)
    rows = [(r["backend"], r["scenario"], f"{r['users']:,} × {r['per_user']:,}",
             "–" if r["insert_rows_s"] is None else f"{r['insert_rows_s']:,.0f}",
             "–" if r.get("indexed_rows_s") is None else f"{r['indexed_rows_s']:,.0f}",
             f"{r['db_mb']:,.0f}", r["search_p50_ms"], r["search_p95_ms"], r["fts_p95_ms"], r["knn_p95_ms"],
             "hnsw" if r["ann"] else "exact", r["vector_recall@10"]) for r in results]
    console.print(table(
        "memlane scale: SQLite and PostgreSQL (Memory.search, query vector precomputed; ms)",
        ["backend", "scenario", "users × memories", "insert rows/s", "indexed rows/s", "DB MB", "search p50",
         "search p95",
         "fts p95", "knn p95", "vectors", "vector R@10"], rows))
    if ingest:
        console.print(table("memlane ingest: add_messages, no embedding or extraction (turns/s)",
                            ["backend", "turns a call", "turns", "turns/s"],
                            [(r["backend"], r["turns_per_call"], f"{r['turns']:,}", f"{r['turns_per_s']:,.0f}")
                             for r in ingest]))
    if any("hits_same_as_baseline@10" in r for r in results):
        console.print(table("the same answers as the baseline (same data and queries)",
                            ["backend", "scenario", "search hits@10 overlap", "search top 10 in the same order",
                             "full-text top 100 identical"],
                            [(r["backend"], r["scenario"], r["hits_same_as_baseline@10"],
                              r["hits_order_as_baseline@10"], r["fts_same_as_baseline"])
                             for r in results if "hits_same_as_baseline@10" in r]))
    path = write_result(args.results_name, {"queries": args.queries, "results": results, "ingest": ingest})
    console.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
