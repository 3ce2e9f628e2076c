"""The ANN cache (store/vindex.py) answers like the exact scan, across stores and restarts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memlane import Memory
from memlane.models import MemoryRecord, Scope
from memlane.store import vindex
from memlane.store.sqlite import SQLiteStore
from memlane.store.vindex import AnnSettings
from memlane.testing import HashEmbedder

DIMS = 32
MODEL = f"hash-{DIMS}"
U1 = Scope(user_id="u1")


def clustered(n: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 8 centres: the shape of real embeddings, not uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((8, DIMS))
    v = centres[rng.integers(0, 8, n)] + 0.3 * rng.standard_normal((n, DIMS))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def record(i: int, user: str = "u1") -> MemoryRecord:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    return MemoryRecord(id=f"m{user}{i}", user_id=user, content=f"note number {i} about topic {i % 8}",
                        category="fact", score=0.6, created_at=now, updated_at=now, last_activated=now)


def exact(vectors: np.ndarray, rowids: list[int], q: np.ndarray, k: int) -> list[int]:
    sims = vectors @ q
    return [rowids[i] for i in np.argsort(-sims)[:k]]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[Callable[[], SQLiteStore]]:
    made: list[SQLiteStore] = []

    def factory() -> SQLiteStore:
        store = SQLiteStore(tmp_path / "memlane.db", ann=AnnSettings(
            threshold=50, connectivity=16, expansion_add=64, expansion_search=128, dtype="f32", threads=1))
        store.ensure_vectors(MODEL, DIMS)
        made.append(store)
        return store

    yield factory
    for s in made:
        s.close()


def fill(store: SQLiteStore, n: int, user: str = "u1", seed: int = 0) -> tuple[list[int], np.ndarray]:
    vecs = clustered(n, seed)
    rowids = store.insert_memories([record(i, user) for i in range(n)], vecs)
    return rowids, vecs


def test_knn_above_threshold_equals_brute_force(open_store: Callable[[], SQLiteStore]) -> None:
    store = open_store()
    rowids, vecs = fill(store, 300)
    fill(store, 60, user="u2", seed=1)  # another scope: never in u1's results
    for q in clustered(10, seed=9):
        got = store.knn("memories", U1, q, 5)
        assert [r for r, _ in got] == exact(vecs, rowids, q, 5)
        assert all(abs((1 - d) - float(vecs[rowids.index(r)] @ q)) < 1e-4 for r, d in got)
    assert list((store.path.parent / "vindex").glob("*.usearch"))  # persisted next to the DB


def test_memory_search_above_threshold_finds_the_nearest(make_memory: Callable[..., Memory]) -> None:
    # one build thread: with two the graph differs run to run, and misses the nearest ~1% of queries
    memory = make_memory(search={"ann_threshold": 50, "ann_threads": 1}, embedder=HashEmbedder(DIMS))
    rowids, vecs = fill(memory.store, 200)  # type: ignore[arg-type]
    for q in clustered(5, seed=3):
        top = exact(vecs, rowids, q, 1)[0]
        hits = memory.search("zzz", user_id="u1", query_vector=q, activate=False, limit=10, min_score=0)
        assert f"mu1{top - rowids[0]}" in [h.id for h in hits]
        assert hits[0].similarity == pytest.approx(max(float(vecs[i] @ q) for i in range(len(rowids))), abs=1e-3)


def test_changes_from_another_store_are_seen(open_store: Callable[[], SQLiteStore]) -> None:
    first, second = open_store(), open_store()
    rowids, vecs = fill(first, 120)
    q = clustered(1, seed=5)[0]
    first.knn("memories", U1, q, 5)  # builds the cache
    # the second store adds an exact match and deletes the old best hit
    best = exact(vecs, rowids, q, 1)[0]
    new_rowid = second.insert_memories([record(999)], q[None, :])[0]
    assert second.delete_memory(U1, f"mu1{best - rowids[0]}")
    got = [r for r, _ in first.knn("memories", U1, q, 5)]
    assert got[0] == new_rowid
    assert best not in got
    keep = [i for i, r in enumerate(rowids) if r != best]
    assert got[1:] == exact(vecs[keep], [rowids[i] for i in keep], q, 4)


def test_put_vectors_replaces_a_vector_in_the_cache(open_store: Callable[[], SQLiteStore]) -> None:
    first, second = open_store(), open_store()
    rowids, _ = fill(first, 100)
    q = clustered(1, seed=6)[0]
    first.knn("memories", U1, q, 5)
    second.put_vectors("memories", U1, [rowids[7]], q[None, :])
    assert first.knn("memories", U1, q, 1)[0][0] == rowids[7]
    assert first.vectors("memories", U1, [rowids[7]])[rowids[7]] == pytest.approx(q, abs=1e-6)


def test_deleted_memory_leaves_ann_results(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(search={"ann_threshold": 50}, embedder=HashEmbedder(DIMS))
    rowids, vecs = fill(memory.store, 100)  # type: ignore[arg-type]
    q = vecs[3]
    assert memory.store.knn("memories", U1, q, 1)[0][0] == rowids[3]
    memory.delete("mu13", user_id="u1")
    assert rowids[3] not in [r for r, _ in memory.store.knn("memories", U1, q, 10)]
    assert "mu13" not in [h.id for h in memory.search("note", user_id="u1", query_vector=q, activate=False)]


def test_rebuilt_after_the_cache_files_are_deleted(open_store: Callable[[], SQLiteStore], tmp_path: Path) -> None:
    store = open_store()
    rowids, vecs = fill(store, 150)
    q = clustered(1, seed=7)[0]
    before = store.knn("memories", U1, q, 5)
    store.close()
    for f in (tmp_path / "vindex").iterdir():
        f.unlink()
    again = open_store()
    assert [r for r, _ in again.knn("memories", U1, q, 5)] == [r for r, _ in before] == exact(vecs, rowids, q, 5)
    # and a later process loads the saved graph, then catches up with what changed since
    again.delete_memory(U1, f"mu1{before[0][0] - rowids[0]}")
    third = open_store()
    assert before[0][0] not in [r for r, _ in third.knn("memories", U1, q, 5)]


def test_below_threshold_stays_exact_and_unlogged(open_store: Callable[[], SQLiteStore]) -> None:
    store = open_store()
    rowids, vecs = fill(store, 30)
    q = clustered(1, seed=8)[0]
    assert [r for r, _ in store.knn("memories", U1, q, 5)] == exact(vecs, rowids, q, 5)
    assert store.raw_count("vector_log") == 0
    assert not (store.path.parent / "vindex").exists()


def test_a_new_embedder_drops_the_cache(open_store: Callable[[], SQLiteStore]) -> None:
    store = open_store()
    fill(store, 80)
    store.knn("memories", U1, clustered(1)[0], 5)
    store.ensure_vectors("another-model", DIMS)
    assert store.knn("memories", U1, clustered(1)[0], 5) == []
    assert store.raw_count("vector_log") == 0


def test_fts_match_is_scoped(open_store: Callable[[], SQLiteStore]) -> None:
    """The scope token in the FTS MATCH (m003) keeps one user's words from another's."""
    store = open_store()
    fill(store, 20, user="u1")
    fill(store, 20, user="u2", seed=1)
    mine = {r for r, _ in store.fts("memories", U1, '"topic"', 100)}
    assert len(mine) == 20
    assert store.memories_by_rowid(U1, list(mine)).keys() == mine
    assert store.fts("memories", Scope(user_id="nobody"), '"topic"', 100) == []


def test_small_scope_scan_is_exact_per_agent_and_sees_other_writers(open_store: Callable[[], SQLiteStore]) -> None:
    """Below the threshold a scope's vec0 chunks are read whole: same answers as brute force,
    the agent is part of the scope, and a write by another connection is seen at once."""
    store, other = open_store(), open_store()
    now = datetime(2025, 1, 1, tzinfo=UTC)
    mine = [record(i) for i in range(40)]
    theirs = [MemoryRecord(**{**record(i).model_dump(), "id": f"agent{i}", "agent_id": "bot"}) for i in range(40)]
    vecs, bot_vecs = clustered(40, seed=3), clustered(40, seed=4)
    rowids = store.insert_memories(mine, vecs)
    store.insert_memories(theirs, bot_vecs)
    scanned = vindex.scan_scope(store._conn, "memories", U1, DIMS)  # the fast path is really taken
    assert scanned is not None and sorted(scanned[0].tolist()) == sorted(rowids)
    q = clustered(1, seed=8)[0]
    assert [r for r, _ in store.knn("memories", U1, q, 5)] == exact(vecs, rowids, q, 5)
    got = store.vectors("memories", U1, rowids[:3] + [10_000])
    assert sorted(got) == sorted(rowids[:3]) and np.allclose(got[rowids[0]], vecs[0])
    # another process adds the nearest possible vector: the cached scan must not hide it
    new = other.insert_memories([MemoryRecord(**{**record(99).model_dump(), "created_at": now})], q[None, :])
    assert store.knn("memories", U1, q, 1)[0][0] == new[0]


def test_small_scope_scan_reads_every_chunk_and_skips_deleted_rows(open_store: Callable[[], SQLiteStore]) -> None:
    """A user's vectors fill vec0 chunks of 1,024 (their partition, any agent): the scan finds
    the chunks by partition, keeps the scope's valid slots, and reads the right vectors."""
    store = open_store()
    bot = Scope(user_id="u1", agent_id="bot")
    mine = store.insert_memories([record(i) for i in range(700)], clustered(700, seed=5))
    theirs = store.insert_memories([MemoryRecord(**{**record(i).model_dump(), "id": f"bot{i}", "agent_id": "bot"})
                                    for i in range(500)], clustered(500, seed=6))
    store.insert_memories([record(i, user="u2") for i in range(300)], clustered(300, seed=7))
    more = store.insert_memories([record(i) for i in range(700, 900)], clustered(200, seed=8))  # a second chunk
    for i in range(0, 900, 7):
        store.delete_memory(U1, f"mu1{i}")
    kept = {r: v for i, (r, v) in enumerate(zip(mine + more, np.concatenate(
        (clustered(700, seed=5), clustered(200, seed=8))), strict=True)) if i % 7}
    assert store.raw_count("sqlite_master", "name = ?", ("vec_memories_chunks_partition",)) == 1
    for scope, want in ((U1, kept), (bot, dict(zip(theirs, clustered(500, seed=6), strict=True)))):
        scanned = vindex.scan_scope(store._conn, "memories", scope, DIMS)
        assert scanned is not None and sorted(scanned[0].tolist()) == sorted(want)
        assert all(np.allclose(v, want[int(r)]) for r, v in zip(*scanned, strict=True))
        q = clustered(1, seed=9)[0]
        nearest = vindex.ScopeVectors.of(*scanned).knn(q, 10)  # what knn answers below the threshold
        assert [r for r, _ in nearest] == exact(np.stack(list(want.values())), list(want), q, 10)
    store.ensure_vectors("another-model", DIMS)  # new vector tables are indexed too
    assert store.raw_count("sqlite_master", "name = ?", ("vec_memories_chunks_partition",)) == 1
