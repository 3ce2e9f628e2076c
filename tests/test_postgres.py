"""The PostgreSQL backend (issue 17) where it differs from SQLite or can fail on its own: the
same full-text ranking as SQLite's, hostile text, a database that is down, several
processes on one database (kill -9 mid-write, the queue drained by competing workers), and
forgetting that leaves no row behind. The shared suites run on both stores (conftest)."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlane import Config, Memory
from memlane.errors import BackendError
from memlane.lifecycle import sweep_unextracted
from memlane.models import MemoryRecord, Scope
from memlane.retrieval.query import drop_common
from memlane.testing import HashEmbedder
from memlane.text import fts_terms

from .conftest import make_config, new_database

pytest.importorskip("psycopg")

_ZH = ["我喜欢喝白茶", "每天早上跑步", "对花生过敏", "周末去爬山", "在北京工作", "养了一只橘猫", "学习弹钢琴",
       "最近在读三体", "不吃辣的食物", "女儿今年上小学", "用 Python 写代码", "咖啡只喝美式"]
_EN = ["white tea in the afternoon", "running every morning", "allergic to peanuts", "hiking on weekends",
       "works in Beijing", "an orange cat named Juzi", "learning the piano", "reading The Three-Body Problem",
       "no spicy food", "the daughter started school", "writes Python code", "only drinks americano coffee"]


def _corpus(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    return [f"{rnd.choice(_ZH)}，{rnd.choice(_ZH)}; {rnd.choice(_EN)} and {rnd.choice(_EN)} {i % 13}"
            for i in range(n)]


def _pair(make_memory: Callable[..., Memory], tmp_path: Path, pg_server: str) -> tuple[Memory, Memory]:
    sqlite = make_memory(home=tmp_path / "sqlite", store={"database_url": ""})
    pg = make_memory(home=tmp_path / "pg", store={"database_url": new_database(pg_server)})
    assert (sqlite.store.name, pg.store.name) == ("sqlite", "postgres")
    return sqlite, pg


def test_full_text_ranks_as_sqlite_does(make_memory: Callable[..., Memory], tmp_path: Path, pg_server: str) -> None:
    """Same rows in both stores: the same BM25 candidates in the same order with the same
    scores (scope statistics), the same per-scope term counts, the same Chinese hits."""
    sqlite, pg = _pair(make_memory, tmp_path, pg_server)
    # a scope at ann_threshold rows or more is ranked in SQL, a smaller one in Python: both
    large = make_memory(home=tmp_path / "pg-large", store={"database_url": new_database(pg_server)},
                        search={"ann_threshold": 20})
    texts = _corpus(300)
    for m in (sqlite, pg, large):
        for i, t in enumerate(texts):
            m.add(t, user_id="u1" if i % 3 else "u2")
        m.add_messages("s1", [{"role": "user", "content": t} for t in texts[:60]], user_id="u1")
    s1 = Scope.of("u1")
    for query in ["白茶", "花生过敏", "橘猫 钢琴", "running peanuts", "americano coffee Beijing", "三体 piano 美式"]:
        from memlane.retrieval.query import analyse

        match = analyse(query)[1]
        for corpus, weights in (("memories", (1.0,)), ("turns", (1.0, 0.3))):
            a = sqlite.store.fts(corpus, s1, match, 50, weights)  # type: ignore[arg-type]
            assert a, (query, corpus)
            for other in (pg, large):
                b = other.store.fts(corpus, s1, match, 50, weights)  # type: ignore[arg-type]
                assert [r for r, _ in a] == [r for r, _ in b], (query, corpus)
                assert max(abs(x - y) for (_, x), (_, y) in zip(a, b, strict=True)) < 1e-9
        terms = ["白茶", "花生", "run", "coffe", "zzz"]
        assert sqlite.store.scope_documents("memories", s1, terms) == pg.store.scope_documents("memories", s1, terms)
        assert sqlite.store.scope_documents("turns", s1, terms, column=0) == pg.store.scope_documents(
            "turns", s1, terms, column=0)
        exact, total = sqlite.store.scope_documents("memories", s1, terms)
        cap = int(total * 0.05) + 1  # counting may stop past a share: some number over it
        for m in (pg, large):  # counts a large scope keeps at its version, shared with BM25's
            for _ in range(2):  # counted, then kept
                counts, n = m.store.scope_documents("memories", s1, terms, min_docs=20, above=0.05)
                assert n == total and all(counts[t] == x if x < cap else counts[t] >= cap for t, x in exact.items())
            assert m.store.scope_documents("memories", s1, terms, min_docs=20) == (exact, total)
        # which words a query leaves out of a large scope: the same on both stores
        cfg = sqlite.config.search.model_copy(update={"common_term_min_docs": 20, "common_term_share": 0.05})
        words = fts_terms(analyse(query)[0])
        assert drop_common(sqlite.store, "memories", s1, words, cfg) == drop_common(
            pg.store, "memories", s1, words, cfg) == drop_common(large.store, "memories", s1, words, cfg)
        hits_a = [h.content for h in sqlite.search(query, user_id="u1", limit=10)]
        hits_b = [h.content for h in pg.search(query, user_id="u1", limit=10)]
        assert hits_a == hits_b, query
    # the large scope's word counts kept by `large` follow another process's write
    other = make_memory(home=tmp_path / "pg-other", store={"database_url": large.store.url},  # type: ignore[attr-defined]
                        search={"ann_threshold": 20})
    match = analyse("白茶 piano")[1]
    assert [r for r, _ in sqlite.store.fts("memories", s1, match, 50)] == [
        r for r, _ in large.store.fts("memories", s1, match, 50)]
    for m in (sqlite, other):
        for _ in range(40):
            m.add("只喝白茶 and the piano", user_id="u1")
    terms = ["白茶", "piano", "coffe"]
    assert large.store.scope_documents("memories", s1, terms, min_docs=20) == sqlite.store.scope_documents(
        "memories", s1, terms)
    a, b = sqlite.store.fts("memories", s1, match, 50), large.store.fts("memories", s1, match, 50)
    assert [r for r, _ in a] == [r for r, _ in b] and max(abs(x - y) for (_, x), (_, y) in zip(a, b, strict=True)) < 1e-9


def test_the_words_a_query_leaves_out_are_not_counted_after_every_write(
        make_memory: Callable[..., Memory], tmp_path: Path, pg_server: str) -> None:
    """Which words a query leaves out of a large scope is read from counts that serve while the
    scope holds within `common_term_drift` of the documents it held when they were counted: a
    scope another process writes between searches is not counted again at each one (40-85 ms
    over 100k rows). Past the drift, or with no drift allowed, the choice follows the rows."""
    search = {"common_term_min_docs": 20, "common_term_share": 0.05}
    pg = make_memory(home=tmp_path / "pg", store={"database_url": new_database(pg_server)}, search=search)
    url = pg.store.url  # type: ignore[attr-defined]
    other = make_memory(home=tmp_path / "other", store={"database_url": url}, search=search)
    exact = make_memory(home=tmp_path / "exact", store={"database_url": url},
                        search={**search, "common_term_drift": 0.0})
    now = datetime(2026, 3, 1, tzinfo=UTC)

    def put(m: Memory, first: int, words: list[str]) -> None:
        m.store.insert_memories([MemoryRecord(
            id=f"m{first + i}", user_id="u1", content=f"alpha item{first + i} {w}", category="fact", score=0.5,
            created_at=now, updated_at=now, last_activated=now, source="user") for i, w in enumerate(words)])

    # alpha in every row; beta 3 %, gamma 3 %, delta 4 % of 200: under the 5 % share
    put(pg, 0, ["beta"] * 6 + ["gamma"] * 6 + ["delta"] * 8 + ["filler"] * 180)
    scope, terms = Scope.of("u1"), ["alpha", "beta", "gamma", "delta"]

    def kept(m: Memory) -> list[str]:
        return drop_common(m.store, "memories", scope, terms, m.config.search)
    assert kept(pg) == kept(exact) == ["beta", "gamma", "delta"]
    put(other, 1000, ["delta"] * 8)  # 208 rows, delta 16 of them (7.7 %): within a tenth of 200
    assert kept(pg) == ["beta", "gamma", "delta"]  # counted at 200 rows: still serve
    assert kept(exact) == ["beta", "gamma"]
    assert pg.store.scope_documents("memories", scope, ["delta"], min_docs=20) == ({"delta": 16}, 208)
    put(other, 2000, ["delta"] * 20)  # 228 rows: past a tenth of 200, counted again
    assert kept(pg) == kept(exact) == ["beta", "gamma"]


def test_hostile_text_round_trips(make_memory: Callable[..., Memory], pg_url: str) -> None:
    """PostgreSQL text holds no NUL: the store escapes it (and its own escape character), so
    what a caller bypassing validation stores comes back as it was."""
    m = make_memory(store={"database_url": pg_url})
    now = datetime(2026, 3, 1, tzinfo=UTC)
    weird = "a\x00b \ue000 \ue000\ue001 c\x00\x00 过敏 " + "𝔘" * 3
    rec = MemoryRecord(id="nul1", user_id="u\ue000", content=weird, category="fact", score=0.5, created_at=now,
                       updated_at=now, last_activated=now, source="user", metadata={"k\x00": "v\x00"})
    m.store.insert_memory(rec)
    got = m.store.get_memory(Scope(user_id="u\ue000"), "nul1")
    assert got is not None and got.content == weird and got.metadata == {"k\x00": "v\x00"}
    assert [r for r, _ in m.store.fts("memories", Scope(user_id="u\ue000"), '"过敏"', 5)] == [
        m.store.memory_rowid(Scope(user_id="u\ue000"), "nul1")]
    huge = ("词" * 150_000) + " " + " ".join(f"w{i}" for i in range(60_000))
    m.add_messages("s", [{"role": "user", "content": huge[:200_000]}], user_id="u1")  # tsvector's 1 MB cap
    assert m.search("w5", user_id="u1", corpus="turns")


def test_a_database_that_is_down_is_a_backend_error(tmp_path: Path) -> None:
    """Unreachable at open, and gone mid-life: BackendError naming the database, within the
    connect timeout; back up, the same Memory works again."""
    from memlane.store.pglocal import LocalPostgres

    cfg = make_config(tmp_path / "x", store={"database_url": "postgresql://postgres@127.0.0.1:9/none",
                                            "connect_timeout_seconds": 1})
    started = time.monotonic()
    with pytest.raises(BackendError, match="cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:9"):
        Memory(cfg, embedder=HashEmbedder())
    assert time.monotonic() - started < 10
    # outside pytest's tree: each pytest session resets /tmp/pytest-of-<user> to mode 0700,
    # which the server's own user could then no longer traverse
    server = LocalPostgres(tempfile.mkdtemp(prefix="memlane-pg-down-"), durable=False)
    url = server.start()
    try:
        m = Memory(make_config(tmp_path / "y", store={"database_url": url, "connect_timeout_seconds": 1}),
                   embedder=HashEmbedder())
        m.add("用户对花生过敏", user_id="u1")
        server.stop()
        for call in (lambda: m.search("花生", user_id="u1"), lambda: m.add("another", user_id="u1")):
            with pytest.raises(BackendError, match="127.0.0.1"):
                call()
        server.start()
        # the pool reconnects with a back-off after the failures above: back within seconds
        deadline, found = time.monotonic() + 15, None
        while found is None and time.monotonic() < deadline:
            try:
                found = [h.content for h in m.search("花生", user_id="u1")]
            except BackendError:
                time.sleep(0.2)
        assert found == ["用户对花生过敏"]
        m.close()
    finally:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


def test_a_bad_database_url_is_a_config_error(tmp_path: Path) -> None:
    from memlane.errors import ConfigError

    with pytest.raises(ConfigError, match="database_url"):
        Config.from_env({"MEMLANE_DATABASE_URL": "mysql://x/y"}, home=tmp_path)
    with pytest.raises(ConfigError, match="database_url is empty"):
        Config.from_env({"MEMLANE_STORE__BACKEND": "postgres"}, home=tmp_path)
    cfg = Config.from_env({"MEMLANE_DATABASE_URL": "postgresql://u@h/db"}, home=tmp_path)
    assert (cfg.store.backend, cfg.store.database_url) == ("postgres", "postgresql://u@h/db")


# ---- several processes on one database ---------------------------------------------------


def _writer(url: str, home: str, worker: int, log: str, sessions: int) -> None:
    """Write sessions of three turns to one shared scope, each ended (a job queued); log
    every turn id once its call returned (committed)."""
    mem = Memory(make_config(Path(home), store={"database_url": url}), embedder=HashEmbedder(32))
    with open(log, "a", encoding="utf-8") as out:
        for i in range(sessions):
            sid = f"w{worker}-{i}"
            turns = mem.add_messages(sid, [{"role": "user", "content": f"I like green tea number {worker}-{i}-{k}"}
                                           for k in range(3)], user_id="shared")
            out.write("".join(f"{t.id}\n" for t in turns))
            out.flush()
            mem.end_session(sid, user_id="shared", wait=False)
    mem.close()


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_two_processes_one_killed_mid_write_lose_nothing_and_the_queue_drains(pg_url: str, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
    procs = [ctx.Process(target=_writer, args=(pg_url, str(tmp_path / f"h{w}"), w, str(logs[w - 1]), n))
             for w, n in ((1, 400), (2, 25))]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 180
    while len(_lines(logs[0])) < 60 and procs[0].is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procs[0].is_alive(), "the victim finished before it could be killed"
    os.kill(procs[0].pid, signal.SIGKILL)  # type: ignore[arg-type]
    for p in procs:
        p.join(timeout=300)
    assert procs[0].exitcode == -signal.SIGKILL and procs[1].exitcode == 0
    mem = Memory(make_config(tmp_path / "check", store={"database_url": pg_url}), embedder=HashEmbedder(32))
    try:
        stored = {t.id for s in mem.store.list_sessions(Scope.of("shared"), limit=10_000)
                  for t in mem.get_turns(s.id, user_id="shared")}
        committed = set(_lines(logs[0])) | set(_lines(logs[1]))
        assert len(_lines(logs[1])) == 75 and committed <= stored  # every committed turn is there
        # killed between ending a session and queueing its extraction, the scheduler's sweep
        # queues what was not (ended sessions' unextracted turns), as it does after any crash
        sweep_unextracted(mem, mem.clock())
        for _ in range(20):  # a job the victim held is taken over: its process is gone
            if not mem.store.jobs(status=("queued", "running"), limit=10_000):
                break
            mem.drain(limit=1000)
        assert mem.store.jobs(status=("queued", "running"), limit=10_000) == []
        ended = {s.id for s in mem.store.list_sessions(Scope.of("shared"), limit=10_000) if s.ended_at}
        done = {j.session_id for j in mem.store.jobs(status=("done",), limit=10_000)}
        assert ended <= done
    finally:
        mem.close()


def _drainer(url: str, home: str, out: str) -> None:
    mem = Memory(make_config(Path(home), store={"database_url": url}), embedder=HashEmbedder(32))
    ran: list[str] = []
    while True:
        reports = mem.drain(limit=5)
        ran += [f"{r.session_id}" for r in reports if r.status == "done"]
        if not mem.store.jobs(status=("queued",), limit=1):
            break
    Path(out).write_text("\n".join(ran))
    mem.close()


def test_workers_drain_one_queue_each_job_once(pg_url: str, tmp_path: Path) -> None:
    """Three processes drain a queue of 60 jobs over 20 scopes: every job runs exactly once."""
    mem = Memory(make_config(tmp_path / "fill", store={"database_url": pg_url}), embedder=HashEmbedder(32))
    for i in range(60):
        mem.add_messages(f"s{i}", [{"role": "user", "content": f"I always drink oolong tea at {i} o'clock"}],
                         user_id=f"u{i % 20}")
        mem.jobs.enqueue(Scope.of(f"u{i % 20}"), f"s{i}", mem.clock())
    assert len(mem.store.jobs(status=("queued",), limit=1000)) == 60
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"d{i}.txt" for i in range(3)]
    procs = [ctx.Process(target=_drainer, args=(pg_url, str(tmp_path / f"d{i}"), str(outs[i]))) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    ran = [s for o in outs for s in o.read_text().split()]
    assert sorted(ran) == sorted(f"s{i}" for i in range(60))  # each once, none lost
    assert all(j.attempts == 1 for j in mem.store.jobs(status=("done",), limit=1000))
    mem.close()


def test_purge_leaves_no_row_of_the_user(make_memory: Callable[..., Memory], pg_url: str) -> None:
    """Forgetting a user on PostgreSQL: no table holds their rows or their words afterwards."""
    import psycopg

    m = make_memory(store={"database_url": pg_url})
    secret = "zorblaxquintessa 秘密花园"
    m.add_messages("s1", [{"role": "user", "content": f"my code word is {secret}"}], user_id="alice")
    m.end_session("s1", user_id="alice")
    m.add(f"alice hides {secret}", user_id="alice")
    m.add("bob likes tea", user_id="bob")
    m.purge(user_id="alice")
    with psycopg.connect(pg_url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id' "
            "AND table_schema = 'public'").fetchall()]
        assert {"memories", "turns", "sessions", "vec_memories"} <= set(tables)
        for table in tables:  # the audit keeps one content-free PURGE event, as on SQLite
            kinds = " AND kind != 'PURGE'" if table == "memory_events" else ""
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE user_id = 'alice'{kinds}").fetchone() == (0,), table
        every = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
        for table in every:  # no word of the secret in any row of any table
            found: Any = conn.execute(f"SELECT count(*) FROM {table} t WHERE t::text LIKE '%zorblax%' "
                                      "OR t::text LIKE '%秘密%'").fetchone()
            assert found == (0,), table
    assert [h.content for h in m.search("tea", user_id="bob")] == ["bob likes tea"]


def test_a_dead_holder_on_another_host_does_not_hold_the_scope(make_memory: Callable[..., Memory],
                                                                pg_url: str) -> None:
    """On SQLite a lease row of a process on another host is trusted until it runs out; on
    PostgreSQL the scope is held by a session lock, which goes with its holder's connection."""
    from memlane.lease import Lease, ScopeLock

    m = make_memory(store={"database_url": pg_url})
    lock, scope = ScopeLock(m.store, 60), Scope.of("u1")
    m.store.set_meta(lock.key(scope), Lease("elsewhere", time.time() + 3600, pid=1, host="other-host").dump())
    assert lock.holder(scope) is not None  # by its row alone, it looks live
    assert lock.acquire(scope, "me")  # no session holds the scope: its holder is gone
    rival = ScopeLock(m.store, 60)
    assert not rival.acquire(scope, "rival")  # now a live session does
    lock.release(scope, "me")
    assert rival.acquire(scope, "rival")


def test_two_servers_on_one_database_one_killed_mid_write(tmp_path: Path, pg_url: str) -> None:
    """Two `memlane serve` processes on one PostgreSQL database, each with a home of its own
    (two hosts): a key created on one host works on both; each reads what the other wrote;
    one killed (SIGKILL) mid-write loses no acknowledged turn; a key revoked on one host is
    refused by the other's server."""
    pytest.importorskip("fastapi")
    from .server_support import Server, Writers, cli

    host1, host2 = tmp_path / "host1", tmp_path / "host2"
    made = cli(host1, "keys", "create", "--user", "lin", MEMLANE_DATABASE_URL=pg_url)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    one, two = Server(host1, MEMLANE_DATABASE_URL=pg_url), Server(host2, MEMLANE_DATABASE_URL=pg_url)
    try:
        writers = Writers(key, {"a1": one.url, "a2": one.url, "b1": two.url, "b2": two.url})
        writers.wait_each(10, timeout=60)
        one.kill()  # mid-write: its writers get no answer for the turn in flight
        time.sleep(1)
        writers.stop()
        acked = writers.acked
        with two.client(key) as c:
            for name, texts in acked.items():
                assert texts
                stored = [t["content"] for t in c.get(f"/v1/sessions/{name}/turns").json()["turns"]]
                assert stored[: len(texts)] == texts and len(stored) <= len(texts) + 1
            r = c.post("/v1/memories", json={"content": "written after the other server died"})
            assert r.status_code == 201
            assert cli(host1, "keys", "revoke", key.split("_")[1], MEMLANE_DATABASE_URL=pg_url).returncode == 0
            assert c.get("/v1/stats").status_code == 401
        with psycopg_connect(pg_url) as conn:  # it is all in PostgreSQL, none in the home's file
            assert conn.execute("SELECT count(*) FROM turns WHERE user_id = 'lin'").fetchone()[0] >= 40  # type: ignore[index]
    finally:
        one.kill()
        two.stop()


def test_workers_on_a_fresh_home_serve_one_database(tmp_path: Path, pg_url: str) -> None:
    """`memlane serve --workers 2` on PostgreSQL with a home that does not exist yet: it starts
    (open mode on loopback), and each worker reads what the other wrote."""
    pytest.importorskip("fastapi")
    from .server_support import Server

    server = Server(tmp_path / "home", "--workers", "2", "--open-admin",  # no such directory
                    MEMLANE_DATABASE_URL=pg_url)
    try:
        with server.client() as c:
            mid = c.post("/v1/memories", json={"content": "the kiln fires at dawn"}).json()["id"]
        seen: dict[int, str] = {}
        for _ in range(300):  # new connections until both workers have answered
            with server.client() as c:
                pid = c.get("/v1/admin/status").json()["pid"]
                seen[pid] = c.get(f"/v1/memories/{mid}").json()["content"]
            if len(seen) == 2:
                break
        assert list(seen.values()) == ["the kiln fires at dawn"] * 2
    finally:
        assert server.stop() == 0


def psycopg_connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url)


def test_a_large_scope_goes_through_hnsw_a_small_one_is_exact(make_memory: Callable[..., Memory],
                                                              pg_url: str) -> None:
    """Scopes at ann_threshold vectors join the (partial) HNSW index; its answers match an
    exact scan here, and a small scope beside it is scanned exactly, its rows not indexed."""
    import numpy as np
    import psycopg

    m = make_memory(store={"database_url": pg_url}, search={"ann_threshold": 40})
    for i in range(60):
        m.add(f"note {i} about {_EN[i % len(_EN)]}", user_id="big")
    for i in range(5):
        m.add(f"small note {i}", user_id="small")
    m.store.settle_vectors()  # type: ignore[attr-defined]  # reaching the threshold moved them in, in a thread
    with psycopg.connect(pg_url) as conn:
        counts = dict(conn.execute("SELECT user_id, count(*) FILTER (WHERE ann) FROM vec_memories "
                                   "GROUP BY user_id").fetchall())
    assert counts == {"big": 60, "small": 0}
    q = m.embedder.embed(["piano and coffee"])[0]
    for user in ("big", "small"):
        scope = Scope.of(user)
        got = m.store.knn("memories", scope, q, 5)
        rowids = [r for r, _ in m.store.knn("memories", scope, q, 100)]
        vecs = m.store.vectors("memories", scope, rowids)
        exact = sorted(rowids, key=lambda r: -float(np.dot(vecs[r], q) / np.linalg.norm(vecs[r]) / np.linalg.norm(q)))
        assert [r for r, _ in got] == exact[:5], user


def test_scope_statistics_follow_every_write(make_memory: Callable[..., Memory], pg_url: str) -> None:
    """BM25's N and token total per scope come from fts_stats, and each word's documents from
    fts_terms, kept by triggers: after adds,
    ingest (turn contexts rewritten), edits, deletions, forgotten turns and a purge, every
    scope's row equals a count of its rows."""
    import psycopg

    m = make_memory(store={"database_url": pg_url})
    ids = [m.add(t, user_id="a" if i % 2 else "b").id for i, t in enumerate(_corpus(12))]
    m.add("an agent's own note", user_id="a", agent_id="helper")
    turns = m.add_messages("s", [{"role": "user", "content": t} for t in _corpus(8, seed=3)], user_id="a")
    m.add_messages("s", [{"role": "assistant", "content": "the piano and white tea"}], user_id="a")
    m.update(ids[1], user_id="a", content="now a much longer text about coffee, tea, the piano and running")
    m.delete(ids[3], user_id="a")
    m.delete_turns([turns[2].id], user_id="a")
    m.purge(user_id="b")
    with psycopg.connect(pg_url) as conn:
        kept = set(conn.execute("SELECT user_id, agent_id, corpus, docs, tokens FROM fts_stats "
                                "WHERE docs <> 0 OR tokens <> 0").fetchall())
        counted = set(conn.execute(" UNION ALL ".join(
            f"SELECT user_id, agent_id, '{c}', count(*), sum(fts_len) FROM {c} GROUP BY 1, 2"
            for c in ("memories", "turns", "episodes"))).fetchall())
        terms = set(conn.execute("SELECT user_id, agent_id, corpus, lexeme, docs, docs_a, docs_b FROM fts_terms "
                                 "WHERE docs <> 0 OR docs_a <> 0 OR docs_b <> 0").fetchall())
        recounted = set(conn.execute(" UNION ALL ".join(
            f"SELECT r.user_id, r.agent_id, '{c}', x.lexeme, count(*), count(*) FILTER (WHERE 'A' = ANY(x.weights)), "
            f"count(*) FILTER (WHERE 'B' = ANY(x.weights)) FROM {c} r, unnest(r.fts) x GROUP BY 1, 2, 4"
            for c in ("memories", "episodes"))).fetchall())
    assert kept == counted
    assert terms == recounted  # each lexeme's documents per scope (m009), at weight A and B too
    assert {(u, a, c) for u, a, c, *_ in kept} >= {("a", "", "memories"), ("a", "helper", "memories"), ("a", "", "turns")}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_api_keys_live_in_the_configured_database(backend: str, tmp_path: Path, pg_server: str) -> None:
    """KeyStore.open keeps keys where the store is: on PostgreSQL, two homes (two hosts) on
    one database see each other's keys and revocations; on SQLite, each home has its own."""
    from memlane.server.keys import KeyStore

    url = new_database(pg_server) if backend == "postgres" else ""
    for h in ("host1", "host2"):
        (tmp_path / h).mkdir()
    one, two = (KeyStore.open(make_config(tmp_path / h, store={"database_url": url})) for h in ("host1", "host2"))
    try:
        key, info = one.create(user_id="lin", name="laptop")
        seen = two.authenticate(key)
        if backend == "sqlite":
            assert seen is None and [k.id for k in two.list()] == []
            return
        assert seen is not None and seen.scope == Scope.of("lin") and not seen.admin
        assert [k.id for k in two.list()] == [info.id]
        two.revoke(info.id)
        assert one.authenticate(key) is None and one.get(info.id).revoked_at is not None
        assert not (tmp_path / "host1" / "memlane.db").exists()  # nothing in the home's file
    finally:
        one.close()
        two.close()


def test_an_indexer_holds_one_scope_at_a_time(pg_url: str) -> None:
    """Two processes' embedding indexers (or an indexer and any writer) take the scopes of
    their batches in different orders: an indexer blocked on scope b must hold no other scope,
    or a transaction holding b and then asking for a deadlocks with it (PostgreSQL's per-scope
    locks; found by bench/server.py with four servers on one database)."""
    import threading
    from datetime import UTC, datetime

    import psycopg

    from memlane.embeddings.hashing import HashEmbedder
    from memlane.indexing import index_pending
    from memlane.models import MemoryRecord, Scope
    from memlane.store.postgres import PostgresStore

    emb = HashEmbedder(32)
    one, two = PostgresStore(pg_url), PostgresStore(pg_url)
    now = datetime.now(UTC)
    a, b = (one.insert_memory(MemoryRecord(id=u, user_id=u, content=f"{u} drinks tea", category="preference",
                                           score=0.5, created_at=now, updated_at=now, last_activated=now))
            for u in ("a", "b"))  # rowid order: a's row first in the indexer's batch
    one.ensure_vectors(emb.model_id, emb.dimensions)
    failed: list[BaseException] = []

    def index() -> None:
        try:
            index_pending(one, emb, max_chars=1000)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    indexer = threading.Thread(target=index, daemon=True)
    try:
        with two.transaction(), psycopg.connect(pg_url, autocommit=True) as watch:
            two.put_vectors("memories", Scope.of("b"), [b], emb.embed(["b drinks tea"]))  # holds scope b
            indexer.start()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not watch.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()[0]:  # type: ignore[index]
                time.sleep(0.05)  # until the indexer waits for scope b
            two.put_vectors("memories", Scope.of("a"), [a], emb.embed(["a drinks tea"]))  # then asks for a
        indexer.join(30)
        assert not indexer.is_alive() and not failed, failed
        assert one.unembedded("memories", 10) == []
    finally:
        one.close()
        two.close()
