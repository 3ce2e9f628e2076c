"""The memory cache (store/memcache.py) answers as SQLite does: the same facts, owners and
(to int8 precision) vectors; it follows every write of this and of other connections, raw
SQL included, survives restarts through its file, and never brings back a memory that was
deleted, archived or expired elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import numpy as np
import pytest

from memlane import Memory
from memlane.models import MemoryRecord, Scope
from memlane.store.memcache import MemSettings
from memlane.store.sqlite import SQLiteStore
from memlane.store.vindex import AnnSettings
from memlane.testing import HashEmbedder

DIMS = 32
NOW = datetime(2025, 1, 1, tzinfo=UTC)
U1, U2, BOT = Scope(user_id="u1"), Scope(user_id="u2"), Scope(user_id="u1", agent_id="bot")
SCOPES = [U1, U2, BOT]
CATEGORIES = ["fact", "preference", "todo"]


def unit(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 6 centres: the shape of real embeddings."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((6, DIMS))[rng.integers(0, 6, n)] + 0.4 * rng.standard_normal((n, DIMS))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def record(i: int, scope: Scope, **kw: object) -> MemoryRecord:
    fields: dict[str, object] = dict(
        id=f"m{i}", user_id=scope.user_id, agent_id=scope.agent_id, content=f"note {i} about topic {i % 5}",
        category=CATEGORIES[i % 3], score=0.3 + (i % 7) / 10, created_at=NOW - timedelta(days=i % 40),
        updated_at=NOW, last_activated=NOW - timedelta(hours=i), source_session=f"s{i % 4}" if i % 2 else None,
        expires_at=NOW + timedelta(days=1) if i % 9 == 0 else None, pinned=i % 5 == 0, verified=i % 4 == 0,
        subject="user" if i % 3 else None, predicate="drinks" if i % 3 else None, confidence=0.5 + (i % 3) / 4,
        metadata={"turns": [i, i + 1], "note": "咖啡 ☕"} if i % 2 else {}, activation_count=i % 6,
        kind="episodic" if i % 7 == 0 else "semantic", source="user" if i % 2 else "import")
    if i % 8 == 0:
        fields["content"] = f"用户喜欢喝咖啡 {i} \U0001f375"
    return MemoryRecord(**{**fields, **kw})  # type: ignore[arg-type]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[Callable[..., SQLiteStore]]:
    made: list[SQLiteStore] = []

    def factory(threshold: int = 0) -> SQLiteStore:
        store = SQLiteStore(tmp_path / "memlane.db", memory=MemSettings(threshold=threshold))
        store.ensure_vectors(f"hash-{DIMS}", DIMS)
        made.append(store)
        return store

    yield factory
    for s in made:
        s.close()


def fill(store: SQLiteStore, n: int = 300, seed: int = 0) -> list[int]:
    return store.insert_memories([record(i, SCOPES[i % 3]) for i in range(n)], unit(n, seed))


def agree(cached: SQLiteStore, plain: SQLiteStore, rowids: list[int], seed: int = 1) -> None:
    """Facts, owners and nearest vectors of the cached store equal SQLite's own answers."""
    for scope in [*SCOPES, Scope(user_id="nobody")]:
        assert cached.memory_facts(scope, rowids).rows() == plain.memory_facts(scope, rowids).rows()
        assert cached.memories_by_rowid(scope, rowids) == plain.memories_by_rowid(scope, rowids)
        ranked = [(r, -1.0) for r in rowids]
        assert cached._mine("memories", scope, ranked) == plain._mine("memories", scope, ranked)
        q = unit(1, seed)[0]
        got, want = cached.knn("memories", scope, q, 10), plain.knn("memories", scope, q, 10)
        assert len(got) == len(want)
        # int8 codes: distances within 0.01, the same rows up to near ties
        assert all(abs(a - b) < 0.01 for (_, a), (_, b) in zip(got, want, strict=True))
        assert len({r for r, _ in got} & {r for r, _ in want}) >= len(want) - 1
        sims, exact = cached.similarities("memories", scope, rowids, q), plain.similarities("memories", scope, rowids, q)
        assert sims.keys() == exact.keys() and all(abs(sims[r] - exact[r]) < 0.01 for r in exact)


def test_answers_as_sqlite_does(open_store: Callable[..., SQLiteStore]) -> None:
    cached, plain = open_store(), open_store(threshold=10**9)
    rowids = fill(cached)
    agree(cached, plain, rowids + [0, 10**6])
    assert cached.memcache.stats()["rows"] == 300 and plain.memcache.stats() == {}
    assert cached.memcache.builds == 1


def test_follows_writes_of_another_connection(open_store: Callable[..., SQLiteStore]) -> None:
    cached, other, plain = open_store(), open_store(threshold=10**9), open_store(threshold=10**9)
    rowids = fill(cached)
    cached.memcache.ready()
    # another process deletes, archives, expires, re-scores, re-embeds and adds
    other.delete_memory(U1, "m0")
    for i, change in ((3, {"status": "archived"}), (6, {"expires_at": NOW - timedelta(days=1)}),
                      (9, {"score": 0.99, "category": "rule", "source_session": "s9"}),
                      (12, {"last_activated": NOW + timedelta(days=3)})):
        mem = other.get_memory(U1, f"m{i}")
        assert mem is not None
        other.update_memory(mem.model_copy(update=change), content_changed=False)
    other.put_vectors("memories", U1, [rowids[15]], unit(1, 7))
    added = other.insert_memories([record(1000, U2), record(1001, Scope(user_id="u3"))], unit(2, 8))
    agree(cached, plain, rowids + added)
    assert rowids[0] not in cached.memory_facts(U1, rowids).rows()
    assert cached.memory_facts(U1, [rowids[3]]).status.tolist() == ["archived"]
    assert cached.knn("memories", U1, unit(1, 7)[0], 1)[0][0] == rowids[15]
    assert cached.memcache.builds == 1  # caught up from the log, not rebuilt


def test_raw_sql_writes_are_logged_too(open_store: Callable[..., SQLiteStore], tmp_path: Path) -> None:
    """The log is written by triggers: a tool that bypasses memlane is seen as well."""
    cached, plain = open_store(), open_store(threshold=10**9)
    rowids = fill(cached)
    cached.memcache.ready()
    raw = apsw.Connection(str(tmp_path / "memlane.db"))
    raw.execute("UPDATE memories SET status = 'archived', score = 0.1 WHERE rowid = ?", (rowids[1],))
    raw.execute("DELETE FROM memories WHERE rowid = ?", (rowids[2],))
    raw.close()
    agree(cached, plain, rowids)
    assert cached.memory_facts(U2, [rowids[1]]).status.tolist() == ["archived"]


def test_uncommitted_writes_never_reach_the_cache(open_store: Callable[..., SQLiteStore]) -> None:
    cached = open_store()
    rowids = fill(cached)
    before = cached.memory_facts(U1, rowids).rows()
    with pytest.raises(RuntimeError), cached.transaction():
        cached.delete_memory(U1, "m0")
        assert rowids[0] not in cached.memory_facts(U1, rowids).rows()  # SQLite answers inside the transaction
        raise RuntimeError("roll back")
    assert cached.memory_facts(U1, rowids).rows() == before


def test_a_reopened_store_loads_the_file_and_a_stale_file_is_rebuilt(
        open_store: Callable[..., SQLiteStore], tmp_path: Path) -> None:
    first = open_store()
    rowids = fill(first)
    first.memcache.ready()
    first.close()
    second = open_store()
    plain = open_store(threshold=10**9)
    agree(second, plain, rowids)
    assert (second.memcache.loads, second.memcache.builds) == (1, 0)
    # the file is left behind while others write and save past it: the log it needs is gone
    third = open_store()
    third.delete_memory(U1, "m3")
    third.memcache.ready()
    assert third.memcache._rows is not None
    third.memcache._save(third.memcache._rows)  # prunes the log up to now
    stale = tmp_path / "memcache" / "memlane-memories.npz"
    (tmp_path / "old.npz").write_bytes(stale.read_bytes())
    third.delete_memory(U1, "m6")
    third.memcache.ready()
    third.memcache._save(third.memcache._rows)
    (tmp_path / "old.npz").replace(stale)
    fourth = open_store()
    agree(fourth, plain, rowids)
    assert fourth.memcache.builds == 1
    stale.write_bytes(b"not a file of arrays")
    fifth = open_store()
    agree(fifth, plain, rowids)
    assert fifth.memcache.builds == 1


def test_a_store_behind_a_pruned_log_reloads(open_store: Callable[..., SQLiteStore]) -> None:
    a, b, plain = open_store(), open_store(), open_store(threshold=10**9)
    rowids = fill(a)
    a.memcache.ready()
    b.memcache.ready()
    b.delete_memory(U2, "m1")
    b.memcache.ready()
    assert b.memcache._rows is not None
    b.memcache._save(b.memcache._rows)  # a's arrays are now behind the pruned log
    agree(a, plain, rowids)
    assert rowids[1] not in a.memory_facts(U2, rowids).rows()


def test_small_tables_keep_no_cache_and_no_log(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store(threshold=1_000)
    fill(store, 100)
    store.memory_facts(U1, [1, 2, 3])
    store.delete_memory(U1, "m0")
    assert store.memcache.stats() == {}
    assert store.raw_count("row_log") == 0 and store.raw_count("row_corpora", "logged = 1") == 0


def test_a_new_embedder_drops_the_cached_vectors(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    fill(store)
    assert store.knn("memories", U1, unit(1, 1)[0], 5)
    store.ensure_vectors("another-model", DIMS)
    assert store.knn("memories", U1, unit(1, 1)[0], 5) == []
    assert store.memcache.builds == 2


def test_search_never_returns_what_another_process_removed(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    cfg = {"search": {"memory_cache_threshold": 0}}
    mine = make_memory(home=tmp_path / "shared", embedder=HashEmbedder(), **cfg)
    theirs = make_memory(home=tmp_path / "shared", embedder=HashEmbedder(), **cfg)
    ids = [mine.add(f"the user drinks coffee number {i}", user_id="u1").id for i in range(12)]
    first = {h.id for h in mine.search("coffee", user_id="u1", limit=12, activate=False)}
    assert first == set(ids)
    theirs.delete(ids[0], user_id="u1")
    theirs.update(ids[1], user_id="u1", status="archived")
    theirs.update(ids[2], user_id="u1", expires_at=datetime.now(UTC) - timedelta(minutes=1))
    got = {h.id for h in mine.search("coffee", user_id="u1", limit=12, activate=False)}
    assert got == set(ids[3:])
    assert mine.store.memcache.stats()["rows"] == 11  # type: ignore[attr-defined]


def test_a_record_gone_since_ranking_is_skipped(make_memory: Callable[..., Memory],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranking reads the facts, then the returned records: a memory deleted in between is
    left out and the next one takes its place."""
    memory = make_memory(search={"memory_cache_threshold": 0})
    for i in range(6):
        memory.add(f"the user drinks coffee number {i}", user_id="u1")
    want = [h.id for h in memory.search("coffee", user_id="u1", limit=4, activate=False)]
    store = memory.store
    real = store.memories_by_rowid

    def racing(scope: Scope, rowids: list[int]) -> dict[int, MemoryRecord]:
        got = real(scope, rowids)
        return {r: m for r, m in got.items() if m.id != want[0]}

    monkeypatch.setattr(store, "memories_by_rowid", racing)
    got = [h.id for h in memory.search("coffee", user_id="u1", limit=4, activate=False)]
    assert got[:3] == want[1:] and len(got) == 4 and want[0] not in got


def test_scopes_at_the_vector_limit_are_left_to_the_hnsw_cache(tmp_path: Path) -> None:
    """A scope with `vector_limit` vectors keeps no codes (the HNSW cache answers it), also
    once it grows past the limit through another connection's writes."""
    ann = AnnSettings(threshold=50, connectivity=16, expansion_add=64, expansion_search=128, dtype="f32", threads=1)
    stores = [SQLiteStore(tmp_path / "memlane.db", ann=ann, memory=MemSettings(threshold=0, vector_limit=50))
              for _ in range(2)]
    cached, other = stores
    for s in stores:
        s.ensure_vectors(f"hash-{DIMS}", DIMS)
    big = cached.insert_memories([record(i, U1) for i in range(60)], unit(60, 1))
    small = cached.insert_memories([record(100 + i, U2) for i in range(40)], unit(40, 2))
    rows = cached.memcache.ready()
    assert rows is not None and rows.scope_codes(rows.scope_id("u1", "")) is None
    q = unit(1, 3)[0]

    def exact(rowids: list[int], seed: int, n: int) -> list[int]:
        sims = unit(n, seed) @ q
        return [rowids[i] for i in np.argsort(-sims)[:5]]

    assert [r for r, _ in cached.knn("memories", U1, q, 5)] == exact(big, 1, 60)
    assert [r for r, _ in cached.knn("memories", U2, q, 5)] == exact(small, 2, 40)
    more = other.insert_memories([record(200 + i, U2) for i in range(20)], unit(20, 4))
    assert cached.knn("memories", U2, unit(20, 4)[7], 1)[0][0] == more[7]
    cached_answer = cached.knn("memories", U2, q, 5)
    rows = cached.memcache.ready()
    assert rows is not None and rows.scope_codes(rows.scope_id("u2", "")) is None
    assert cached.memcache._rows is not None
    cached.memcache._save(cached.memcache._rows)  # a file in which no scope holds codes
    for s in stores:
        s.close()
    again = SQLiteStore(tmp_path / "memlane.db", ann=ann, memory=MemSettings(threshold=0, vector_limit=50))
    again.ensure_vectors(f"hash-{DIMS}", DIMS)
    assert [r for r, _ in again.knn("memories", U2, q, 5)] == [r for r, _ in cached_answer]
    assert again.memcache.ready() is not None and (again.memcache.loads, again.memcache.builds) == (1, 0)
    again.close()


def test_packed_texts_keep_every_row_through_replacements_and_rewrites() -> None:
    import random

    from memlane.store.packed import PackedTexts

    rng = random.Random(5)
    texts, want = PackedTexts(), {}
    for step in range(30_000):
        r = rng.randrange(3_000)
        texts.reserve(r + 1)
        if rng.random() < 0.15:
            texts.set(r, None)
            want.pop(r, None)
        else:
            want[r] = f"{step} {'咖啡' * rng.randrange(3)} {'x' * rng.randrange(400)}"
            texts.set(r, want[r])
        if step % 5_000 == 0:
            texts.pack()
    texts.pack()
    assert all(texts.get(r) == want.get(r) for r in range(3_000))
    again = PackedTexts.of(texts.buf[: texts.used], texts.start, texts.size)
    assert all(again.get(r) == want.get(r) for r in range(3_000))


def test_the_log_says_when_a_vector_may_have_changed(open_store: Callable[..., SQLiteStore], tmp_path: Path) -> None:
    """An activation (columns only) is logged 'row' and costs the cache no vector read; a
    vector write, an insert and a delete are 'vec'. A row moved to another owner by raw SQL
    takes its vector along."""
    cached, other, plain = open_store(), open_store(threshold=10**9), open_store(threshold=10**9)
    rowids = fill(cached)
    cached.memcache.ready()
    mem = other.get_memory(U1, "m0")
    assert mem is not None
    other.update_memory(mem.model_copy(update={"activation_count": 7, "last_activated": NOW}), content_changed=False)
    other.put_vectors("memories", U2, [rowids[1]], unit(1, 9))
    ops = [r[0] for r in other._q("SELECT op FROM row_log ORDER BY seq")]
    assert ops[0] == "row" and sorted(ops[1:]) == ["row", "vec"]  # put_vectors sets `embedded`: both
    agree(cached, plain, rowids)
    assert cached.knn("memories", U2, unit(1, 9)[0], 1)[0][0] == rowids[1]
    # (vec0 keeps the vector under its old user: only the cache, which follows the row, is asked)
    raw = apsw.Connection(str(tmp_path / "memlane.db"))
    raw.execute("UPDATE memories SET user_id = 'u2' WHERE rowid = ?", (rowids[3],))
    raw.close()
    assert rowids[3] in {r for r, _ in cached.knn("memories", U2, unit(300, 0)[3], 3)}
    assert rowids[3] not in {r for r, _ in cached.knn("memories", U1, unit(300, 0)[3], 300)}


def test_a_damaged_file_whose_meta_looks_current_is_replaced(open_store: Callable[..., SQLiteStore],
                                                              tmp_path: Path) -> None:
    first = open_store()
    rowids = fill(first)
    first.memcache.ready()
    first.close()
    path = tmp_path / "memcache" / "memlane-memories.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["owner"] = arrays["owner"][:-1]  # the meta is intact, the arrays do not fit together
    np.savez(path, **arrays)
    second = open_store()
    agree(second, open_store(threshold=10**9), rowids)
    assert second.memcache.builds == 1
    second.close()
    third = open_store()
    assert third.memcache.ready() is not None and third.memcache.loads == 1


def test_vectors_are_read_through_vec0_when_its_chunks_are_not_readable(
        open_store: Callable[..., SQLiteStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """The build reads vec0's chunk blobs (sqlite-vec 0.1.x's layout); any other layout falls
    back to vec0's own rows, with the same answers."""
    from memlane.store import vindex

    real = vindex.scan_corpus

    def other_layout(conn: object, corpus: str, dims: int, public: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        if not public:
            raise ValueError("not the layout this reads")
        yield from real(conn, corpus, dims, public=True, batch=7)  # type: ignore[arg-type]

    monkeypatch.setattr(vindex, "scan_corpus", other_layout)
    cached, plain = open_store(), open_store(threshold=10**9)
    rowids = fill(cached)
    agree(cached, plain, rowids)
