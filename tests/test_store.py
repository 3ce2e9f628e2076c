"""The SQLite store: every record round-trips, survives a reopen, and deletes leave no trace."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory
from memlane.models import Episode, Scope, Scratchpad
from memlane.store.sqlite import SQLiteStore

from .conftest import make_config

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_every_record_type_round_trips_and_persists(make_memory, tmp_path):
    mem = make_memory()
    turns = mem.add_messages(
        "s1",
        [{"role": "user", "content": "我对花生过敏", "created_at": T0, "metadata": {"k": 1}},
         {"role": "assistant", "content": "noted", "tool_calls": [{"id": "c1", "type": "function"}]}],
        user_id="u1", agent_id="a1",
    )
    rec = mem.add("用户对花生过敏", user_id="u1", agent_id="a1", category="fact", importance=0.7,
                  metadata={"source": "test"}, expires_at=T0 + timedelta(days=30), session_id="s1")
    scope = Scope.of("u1", "a1")
    store = mem.store
    ep = Episode(id="e1", user_id="u1", agent_id="a1", session_id="s1", summary="聊了过敏", goal="g",
                 outcome="o", entities=["花生"], tools_used=["search"], started_at=T0, ended_at=T0,
                 created_at=T0)
    with store.transaction():
        store.insert_episode(ep)
        store.put_scratchpad(Scratchpad(user_id="u1", agent_id="a1", current_focus="写周报",
                                        recent_tasks=[{"task": "修 bug", "done_at": T0.isoformat()}], updated_at=T0))
        assert store.enqueue_job(scope, "s1", 1, 2, T0)
        assert not store.enqueue_job(scope, "s1", 1, 2, T0)  # a range is queued once
    mem.close()

    again = Memory(make_config(tmp_path / "data"), embedder=mem.embedder)
    try:
        got_turns = again.get_turns("s1", user_id="u1", agent_id="a1")
        assert [t.model_dump() for t in got_turns] == [t.model_dump() for t in turns]
        assert again.get(rec.id, user_id="u1", agent_id="a1") == rec
        s = again.store
        assert s.list_episodes(scope) == [ep]
        pad = s.get_scratchpad(scope)
        assert pad is not None and pad.current_focus == "写周报" and pad.recent_tasks[0]["task"] == "修 bug"
        [job] = s.jobs(scope=scope)
        assert (job.session_id, job.first_seq, job.last_seq, job.attempts) == ("s1", 1, 2, 0)
        [event] = again.history(rec.id, user_id="u1", agent_id="a1")
        assert event.kind == "ADD" and event.after is not None and event.after["content"] == "用户对花生过敏"
        [session] = again.sessions(user_id="u1", agent_id="a1")
        assert session.message_count == 2 and session.started_at == T0
    finally:
        again.close()


def test_delete_leaves_no_trace_in_fts_or_vectors(memory):
    rec = memory.add("橘猫叫橘子", user_id="u1")
    other = memory.add("另一只猫", user_id="u1")
    store = memory.store
    rowid = store.memory_rowid(Scope.of("u1"), rec.id)
    assert store.raw_count("memories_fts", "rowid = ?", (rowid,)) == 1
    assert store.raw_count("vec_memories", "rowid = ?", (rowid,)) == 1
    memory.delete(rec.id, user_id="u1")
    assert store.raw_count("memories", "rowid = ?", (rowid,)) == 0
    assert store.raw_count("memories_fts", "rowid = ?", (rowid,)) == 0
    assert store.raw_count("vec_memories", "rowid = ?", (rowid,)) == 0
    assert [h.id for h in memory.search("橘猫", user_id="u1")] == [other.id]
    assert [e.kind for e in memory.history(rec.id, user_id="u1")] == ["ADD", "DELETE"]


def _writer(home: str, worker: int, n: int) -> None:
    from memlane.testing import HashEmbedder

    mem = Memory(make_config(Path(home), embedding={"background": False}), embedder=HashEmbedder(32))
    try:
        for i in range(n):
            mem.add_messages(f"w{worker}", [{"role": "user", "content": f"worker {worker} message {i}"}], user_id="u")
    finally:
        mem.close()


def test_two_processes_write_concurrently_without_lock_errors(tmp_path):
    home = str(tmp_path / "shared")
    SQLiteStore(Path(home) / "memlane.db").close()  # schema exists before the race
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(home, w, 1000)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0, 0]
    store = SQLiteStore(Path(home) / "memlane.db")
    try:
        assert store.raw_count("turns") == 2000
        assert store.raw_count("turns", "session_id = 'w1'") == 1000
        seqs = [t.seq for t in store.get_turns(Scope.of("u"), session_id="w2")]
        assert seqs == list(range(1, 1001))
    finally:
        store.close()


def test_changing_embedder_rebuilds_vectors_from_rows(make_memory, tmp_path):
    from memlane.testing import HashEmbedder

    first = make_memory(embedder=HashEmbedder(64))
    rec = first.add("white tea in the afternoon", user_id="u1")
    first.add_messages("s", [{"role": "user", "content": "I like white tea"}], user_id="u1")
    first.close()
    second = make_memory(embedder=HashEmbedder(128))
    assert second.store.raw_count("vec_memories") == 0  # vectors of the old model are gone
    assert second.flush() == 2  # rebuilt from the rows: one memory, one turn
    assert second.stats(user_id="u1").turns_unembedded == 0
    [hit] = [h for h in second.search("white tea", user_id="u1") if h.id == rec.id]
    assert hit.similarity > 0.3


def test_a_file_that_is_no_database_is_named(tmp_path):
    """A `memlane.db` that is not SQLite (or is damaged) is a BackendError naming the file and
    what to do, from the library as from every entry point built on it; no apsw error escapes."""
    from memlane import BackendError, Memory

    home = tmp_path / "home"
    home.mkdir()
    (home / "memlane.db").write_bytes(b"this is not a database at all " * 20)
    with pytest.raises(BackendError, match="is not a memlane database") as caught:
        Memory(home=home)
    assert str(home / "memlane.db") in str(caught.value)
