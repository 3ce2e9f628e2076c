"""`memlane serve` as a process: a restart keeps everything, SIGKILL mid-write loses no
acknowledged turn, two servers on one home stay correct, open mode only on loopback without
keys, a non-loopback bind without keys is refused, a failing embedder is a 502; `--workers 2`
serves one port from two processes, and a killed worker is started again."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from .server_support import Server, Writers, cli, create_key, error_shape
from .stubs import openai_stub

pytest.importorskip("fastapi")


def test_restart_keeps_everything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = create_key(home, "--user", "lin")
    first = Server(home)
    try:
        with first.client(key) as c:
            mid = c.post("/v1/memories", json={"content": "lin keeps bees on the roof"}).json()["id"]
            c.post("/v1/sessions/s1/messages", json={"messages": [{"content": "the bees swarmed today"}]})
            c.put("/v1/scratchpad", json={"focus": "build a second hive"})
    finally:
        first.stop()
    second = Server(home)
    try:
        with second.client(key) as c:
            assert c.get(f"/v1/memories/{mid}").json()["content"] == "lin keeps bees on the roof"
            assert [t["content"] for t in c.get("/v1/sessions/s1/turns").json()["turns"]] == ["the bees swarmed today"]
            assert c.get("/v1/scratchpad").json()["current_focus"] == "build a second hive"
            assert c.post("/v1/search", json={"query": "bees roof"}).json()["hits"][0]["id"] == mid
    finally:
        second.stop()


def test_sigkill_mid_write_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = create_key(home, "--user", "lin")
    server = Server(home)
    writers = Writers(key, {f"w{i}": server.url for i in range(4)})
    writers.wait_each(10, timeout=30)
    server.kill()  # SIGKILL while the writers are mid-request
    writers.stop(15)
    acked = writers.acked
    assert sum(map(len, acked.values())) >= 40
    again = Server(home)
    try:
        with again.client(key) as c:
            for name, texts in acked.items():
                stored = [t["content"] for t in c.get(f"/v1/sessions/{name}/turns").json()["turns"]]
                assert stored[: len(texts)] == texts  # every acknowledged turn, in order
                assert len(stored) <= len(texts) + 1  # at most the one in flight at the kill
    finally:
        again.stop()


def test_two_servers_on_one_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = create_key(home, "--user", "lin")
    one, two = Server(home), Server(home)
    try:
        writers = Writers(key, {"a1": one.url, "a2": one.url, "b1": two.url, "b2": two.url})
        time.sleep(3)
        writers.stop()
        acked = writers.acked
        with one.client(key) as c1, two.client(key) as c2:
            for name, texts in acked.items():
                assert texts
                for c in (c1, c2):  # each server reads what the other wrote
                    stored = [t["content"] for t in c.get(f"/v1/sessions/{name}/turns").json()["turns"]]
                    assert stored == texts
            mid = c1.post("/v1/memories", json={"content": "written through server one"}).json()["id"]
            assert c2.get(f"/v1/memories/{mid}").json()["content"] == "written through server one"
            # a revocation through the CLI reaches both servers
            assert cli(home, "keys", "revoke", key.split("_")[1]).returncode == 0
            error_shape(c1.get("/v1/stats"), 401)
            error_shape(c2.get("/v1/stats"), 401)
    finally:
        one.stop()
        two.stop()


def _workers_seen(server: Server, admin: str, want: int, tries: int = 300) -> dict[int, bool]:
    """{pid: runs the scheduler} of the workers answering on the port, from new connections
    (the kernel hands each to one worker) until `want` pids were seen or `tries` ran out."""
    seen: dict[int, bool] = {}
    for _ in range(tries):
        with server.client(admin) as c:
            try:
                status = c.get("/v1/admin/status").json()
            except httpx.TransportError:  # a worker killed a moment ago
                continue
        seen[status["pid"]] = status["scheduler"] is not None
        if len(seen) >= want:
            break
    return seen


def test_workers_share_one_port_and_a_killed_one_comes_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = create_key(home, "--user", "lin")
    admin = create_key(home, "--admin")
    server = Server(home, "--workers", "2")
    try:
        first = _workers_seen(server, admin, 2)
        assert len(first) == 2 and sorted(first.values()) == [False, True]  # one scheduler per home
        writers = Writers(key, {f"w{i}": server.url for i in range(4)})
        writers.wait_each(5, timeout=30)
        scheduler_pid = next(pid for pid, sched in first.items() if sched)
        os.kill(scheduler_pid, signal.SIGKILL)  # mid-write: its connections break, the other worker serves on
        deadline, now = time.monotonic() + 60, first
        while time.monotonic() < deadline and (scheduler_pid in now or len(now) < 2):
            time.sleep(0.5)
            now = _workers_seen(server, admin, 2, 50)
        assert len(now) == 2 and scheduler_pid not in now and sorted(now.values()) == [False, True]
        writers.stop()
        with server.client(key) as c:
            for name, texts in writers.acked.items():
                stored = [t["content"] for t in c.get(f"/v1/sessions/{name}/turns").json()["turns"]]
                assert stored[: len(texts)] == texts and len(stored) <= len(texts) + 1
    finally:
        assert server.stop() == 0  # SIGTERM to the supervisor stops every worker gracefully
    for pid in now:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_open_mode_only_until_a_key_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, "--user", "solo")
    try:
        with server.client() as c:
            r = c.post("/v1/memories", json={"content": "open mode writes as the local user"})
            assert r.status_code == 201 and r.json()["user_id"] == "solo"
            key = create_key(home, "--user", "solo")
            deadline = time.monotonic() + 10
            while c.get("/v1/stats").status_code != 401 and time.monotonic() < deadline:
                time.sleep(0.2)
            error_shape(c.get("/v1/stats"), 401)
            with server.client(key) as k:
                assert k.get("/v1/memories").json()["memories"][0]["content"] == "open mode writes as the local user"
    finally:
        server.stop()


def test_non_loopback_bind_without_keys_is_refused(tmp_path: Path) -> None:
    done = cli(tmp_path / "home", "serve", "--host", "0.0.0.0", "--port", "1")
    assert done.returncode == 1 and "without API keys" in done.stderr


def test_failing_embedder_is_a_502(tmp_path: Path) -> None:
    calls = {"n": 0}

    def embeddings(path: str, body: dict) -> tuple[int, object]:  # type: ignore[type-arg]
        calls["n"] += 1
        if calls["n"] == 1:  # the dimension probe at start-up
            return 200, {"data": [{"index": 0, "embedding": [0.1] * 8}], "model": "m"}
        return 400, {"error": {"message": "embedding backend broke"}}

    home = tmp_path / "home"
    key = create_key(home, "--user", "lin")
    with openai_stub(embeddings) as (url, _):
        server = Server(home, MEMLANE_EMBEDDER="openai", MEMLANE_EMBEDDING_BASE_URL=url,
                        MEMLANE_EMBEDDING_API_KEY="test", MEMLANE_EMBEDDING_MODEL="m")
        try:
            with server.client(key) as c:
                body = error_shape(c.post("/v1/memories", json={"content": "needs an embedding"}), 502)
                assert body["error"] == "BackendError"
                # turns are stored without waiting for their vectors: still acknowledged
                assert c.post("/v1/sessions/s/messages", json={"messages": [{"content": "kept"}]}).status_code == 201
        finally:
            server.stop()
