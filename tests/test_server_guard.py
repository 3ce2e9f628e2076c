"""A server safe to leave running (issue 28), through a real `memlane serve` on 127.0.0.1:
only its own host names, no cross-site requests, a key before a body, bounded bodies and
slow clients cut off, open mode that is not admin and does not come back by itself, and
the REST answers a first user relies on."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memlane.config import Config
from memlane.server import create_app
from memlane.server.app import route_table

from .server_support import Server, cli, create_key, error_shape

pytest.importorskip("fastapi")

EVIL = "https://evil.example"


def every_route() -> list[tuple[str, str]]:
    """(method, path) of every route the app serves, its path parameters filled in."""
    out = [(m, re.sub(r"\{[^}]+\}", "x1", p)) for m, p in route_table(create_app(Config(), host="127.0.0.1"))]
    assert len(out) > 50 and ("POST", "/v1/admin/purge") in out and ("POST", "/forget") in out
    assert ("POST", "/mcp") in out
    return out


ROUTES = every_route()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("open") / "home"
    server = Server(home, MEMLANE_SERVER__HEADER_SECONDS="1", MEMLANE_SERVER__BODY_SECONDS="1",
                    MEMLANE_SERVER__MAX_JSON_BYTES="100000", MEMLANE_SERVER__ALLOWED_HOSTS="memlane.test")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, str]]:
    home = tmp_path_factory.mktemp("keyed") / "home"
    user, admin = create_key(home, "--user", "lin"), create_key(home, "--admin")
    server = Server(home, MEMLANE_SERVER__MAX_JSON_BYTES="100000")
    try:
        yield server, user, admin
    finally:
        server.stop()


def _send(server: Server, method: str, path: str, **kw: object) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        return c.request(method, path, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["open", "keyed"])
def test_no_route_answers_a_foreign_host(mode: str, open_server: Server, keyed: tuple[Server, str, str]) -> None:
    """DNS rebinding: a page on a name that resolves to 127.0.0.1 reaches no route, with a
    key or without; the server's own names still answer."""
    server, key = (open_server, None) if mode == "open" else (keyed[0], keyed[2])
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=server.url, timeout=30) as c:  # one connection: the sweep is ~900 requests
        for method, path in ROUTES:
            for host in (f"rebind.evil.example:{server.port}", "evil.example", f"127.0.0.1.evil.example:{server.port}",
                         "localhost.evil.example", "", f"memlane.test.evil.example:{server.port}", "127.0.0.2"):
                r = c.request(method, path, headers={"Host": host, **auth, "Content-Type": "application/json"},
                              content=b"{}" if method in ("POST", "PUT", "PATCH") else None)
                assert r.status_code == 421, (method, path, host, r.status_code, r.text[:200])
    assert r.json()["error"] == "MisdirectedRequest"
    own = [f"localhost:{server.port}", f"127.0.0.1:{server.port}", f"LOCALHOST.:{server.port}", f"[::1]:{server.port}"]
    for host in own + ([f"memlane.test:{server.port}"] if mode == "open" else []):  # server.allowed_hosts
        assert _send(server, "GET", "/healthz", headers={"Host": host}).status_code == 200, host


def test_no_route_answers_a_cross_site_request(open_server: Server) -> None:
    """A page of another site acts on no route of an open server: not by a form, not by a
    no-preflight fetch, not by a read; a link to a web UI page still opens it."""
    with httpx.Client(base_url=open_server.url, timeout=30) as c:
        for method, path in ROUTES:
            for headers in ({"Origin": EVIL}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                            {"Sec-Fetch-Site": "same-site", "Origin": f"http://localhost:{open_server.port + 1}"}):
                body = {"content": b"x=1", "headers": {**headers, "Content-Type": "text/plain"}} \
                    if method in ("POST", "PUT", "PATCH") else {"headers": headers}
                r = c.request(method, path, **body)  # type: ignore[arg-type]
                assert r.status_code == 403, (method, path, headers, r.status_code, r.text[:200])
    assert r.json()["error"] == "CrossSiteRequest"
    for origin in ("http://[", "http://[::1", "http://a:b:c", "ftp://", "\x7f"):  # malformed: refused, never a 500
        r = _send(open_server, "POST", "/v1/memories", json={"content": "x"}, headers={"Origin": origin})
        assert r.status_code == 403, (origin, r.status_code, r.text[:200])
    nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert _send(open_server, "GET", "/memories", headers=nav).status_code in (200, 303)
    assert _send(open_server, "GET", "/v1/export", headers=nav).status_code == 403
    # the reported attack: memories planted by a text/plain POST from another site
    line = json.dumps({"type": "memory", "content": "planted"})
    r = _send(open_server, "POST", "/v1/import", content=line, headers={"Content-Type": "text/plain", "Origin": EVIL})
    assert r.status_code == 403
    assert "planted" not in _send(open_server, "GET", "/v1/export").text


def test_a_state_change_needs_its_content_type(open_server: Server) -> None:
    """Same origin too: a JSON route takes JSON, an import JSONL, nothing a plain form sends."""
    for path, kind in (("/v1/consolidate", "text/plain"), ("/v1/memories", "application/x-www-form-urlencoded"),
                       ("/v1/import", "multipart/form-data; boundary=x"), ("/v1/search", "text/plain"),
                       ("/mcp", "text/plain")):
        r = _send(open_server, "POST", path, content=b'{"content": "x", "query": "x"}', headers={"Content-Type": kind})
        assert error_shape(r, 415)["error"] == "UnsupportedMediaType", path
    r = _send(open_server, "POST", "/v1/consolidate", content=b"", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert _send(open_server, "POST", "/v1/consolidate").status_code == 200  # no body, no type: fine


def test_a_key_lets_a_foreign_origin_through(keyed: tuple[Server, str, str]) -> None:
    server, user, _ = keyed
    r = _send(server, "POST", "/v1/memories", json={"content": "from an extension"},
              headers={"Authorization": f"Bearer {user}", "Origin": EVIL})
    assert r.status_code == 201, r.text
    r = _send(server, "POST", "/v1/memories", json={"content": "x"},
              headers={"Authorization": "Bearer ml_forged_key", "Origin": EVIL})
    assert error_shape(r, 401)


def test_a_stranger_is_refused_before_the_body_is_read(keyed: tuple[Server, str, str]) -> None:
    """No key: 401 while the announced body has not been sent at all (it costs nothing)."""
    server = keyed[0]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(f"POST /v1/import HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/x-ndjson\r\n"
                  f"Content-Length: 8000000\r\n\r\n".encode())
        head = s.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 401"), head
    # with a key: too large is refused by its declared size, too deep is refused unparsed
    key = {"Authorization": f"Bearer {keyed[1]}"}
    r = _send(server, "POST", "/v1/search", content=b"[" * 200_000, headers={**key, "Content-Type": "application/json"})
    assert error_shape(r, 413)["error"] == "PayloadTooLarge"
    r = _send(server, "POST", "/v1/search", content=b"[" * 5_000 + b"]" * 5_000,
              headers={**key, "Content-Type": "application/json"})
    assert "nested deeper" in error_shape(r, 422)["detail"]
    r = _send(server, "POST", "/v1/search", content=b"{not json", headers={**key, "Content-Type": "application/json"})
    assert error_shape(r, 422)


def test_slow_clients_are_cut_off(open_server: Server) -> None:
    """A client that dribbles its headers, or its body, loses the connection after
    server.header_seconds / server.body_seconds (1 s here); an idle one too."""
    def closed_within(s: socket.socket, seconds: float) -> bytes:
        s.settimeout(seconds)
        data = b""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            chunk = s.recv(4096)
            if not chunk:
                return data
            data += chunk
        raise AssertionError(f"still open after {seconds} s: {data[:200]!r}")

    with socket.create_connection(("127.0.0.1", open_server.port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends
        closed_within(s, 8)
    with socket.create_connection(("127.0.0.1", open_server.port), timeout=10) as s:
        closed_within(s, 8)  # sends nothing at all
    with socket.create_connection(("127.0.0.1", open_server.port), timeout=10) as s:
        s.sendall(f"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1:{open_server.port}\r\nContent-Type: application/json"
                  "\r\nContent-Length: 100\r\n\r\n{\"query\"".encode())
        answer = closed_within(s, 8).decode("latin-1")
    assert answer.startswith("HTTP/1.1 408") and "server.body_seconds" in answer, answer
    assert _send(open_server, "GET", "/healthz").status_code == 200


def test_open_mode_is_not_admin_and_keyed_stays_keyed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, MEMLANE_SERVER__KEYED_RECHECK_SECONDS="2")
    try:
        with server.client() as c:
            assert c.post("/v1/memories", json={"content": "the local user's note"}).status_code == 201
            assert error_shape(c.post("/v1/admin/purge", json={"user_id": "someone"}), 403)
            assert error_shape(c.get("/v1/admin/status"), 403)
        key = create_key(home, "--user", "local")
        key_id = key.split("_")[1]
        assert cli(home, "keys", "revoke", key_id).returncode == 0
        time.sleep(2.5)  # past both caches: revoking the last key does not reopen
        with server.client() as c:
            assert error_shape(c.get("/v1/memories"), 401)
        done = cli(home, "keys", "reopen")
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 15
        with server.client() as c:
            while c.get("/v1/memories").status_code != 200:
                assert time.monotonic() < deadline, "reopen did not take"
                time.sleep(0.5)
    finally:
        server.stop()
    active = create_key(home, "--user", "local")
    refused = cli(home, "keys", "reopen")
    assert refused.returncode != 0 and "revoke" in (refused.stderr + refused.stdout) and "Traceback" not in refused.stderr
    assert active
    # --open-admin: the person starting the server asks for it
    admin_home = tmp_path / "admin-home"
    server = Server(admin_home, "--open-admin")
    try:
        with server.client() as c:
            assert c.get("/v1/admin/status").status_code == 200
    finally:
        server.stop()


def test_one_request_is_bounded_work(keyed: tuple[Server, str, str]) -> None:
    """The query limit, the message cap and the response size: one request cannot hold the
    server for minutes."""
    server, user, _ = keyed
    with server.client(user) as c:
        # a long query is read in part (search.query_read_chars); the body limit comes first
        assert c.post("/v1/search", json={"query": "花" * 30_000}).status_code == 200
        r = c.post("/v1/search", json={"query": "x" * 200_001})
        assert error_shape(r, 413)["error"] == "PayloadTooLarge" and "server.max_json_bytes" in r.text
        r = c.post("/v1/sessions/flood/messages", json={"messages": [{"content": "hi"}] * 101})
        body = error_shape(r, 422)
        assert body["field"] == "messages" and "import" in body["detail"]
        r = c.post("/v1/sessions/flood/messages", json={"messages": [{"content": "a" * 30_000}] * 3})
        assert r.status_code == 201
        out = r.json()
        assert out["stored"] == 3 and len(r.content) < 1_000 and "aaaa" not in r.text  # ids, not the payload
        assert {"id", "seq", "role"} <= set(out["turns"][0])


def test_rest_answers_a_first_user_relies_on(keyed: tuple[Server, str, str]) -> None:
    server, user, _ = keyed
    with server.client(user) as c:
        mid = c.post("/v1/memories", json={"content": "the user sails on Sundays"}).json()["id"]
        for change in ({"score": True}, {"importance": False}, {"score": "0.5"}, {}, {"reason": "nothing"},
                       {"score": None}):
            assert error_shape(c.patch(f"/v1/memories/{mid}", json=change), 422), change
        assert c.get(f"/v1/memories/{mid}").json()["score"] != 1.0
        for bad in ({"limit": 0}, {"limit": True}, {"min_score": 2}):
            assert error_shape(c.post("/v1/search", json={"query": "sails", **bad}), 422), bad
        gone = c.delete(f"/v1/memories/{mid}")
        assert gone.status_code == 200 and gone.json()["status"] == "deleted"
        listed = c.get("/v1/memories", params={"status": "deleted"}).json()["memories"]
        assert [m["id"] for m in listed] == [mid] and listed[0]["content"] == "the user sails on Sundays"
        assert listed[0]["deleted_by"] == "api"
        assert c.post(f"/v1/memories/{mid}/restore").status_code == 200
        assert c.get("/v1/memories", params={"status": "deleted"}).json()["memories"] == []
        # an import's report and its errors never show the server's temporary file
        export = c.get("/v1/export").content
        for body in (export, b'{"type": "nonsense"}\n', b"\xff\xfe", b"[" * 10_000):
            r = c.post("/v1/import", content=body, headers={"Content-Type": "application/x-ndjson"})
            assert "memlane-import-" not in r.text and "/tmp" not in r.text and '"file":' not in r.text, r.text[:300]


def test_one_key_runs_its_share_of_requests_at_once() -> None:
    """server.max_requests_per_key: a key's third request waits for one of its two running
    ones, another key's does not, and a wait past key_queue_seconds is a 429."""
    import anyio

    from memlane.server.errors import ApiError
    from memlane.server.guard import KeyTurns

    turns = KeyTurns(2, 0.3)
    running: list[str] = []
    most = {"k1": 0}
    refused: list[int] = []

    async def request(key: str, hold: float) -> None:
        try:
            async with turns.turn(key):
                running.append(key)
                most["k1"] = max(most["k1"], running.count("k1"))
                await anyio.sleep(hold)
                running.remove(key)
        except ApiError as exc:
            refused.append(exc.status)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(request, "k1", 0.1)
            tg.start_soon(request, "k2", 0.05)
        assert most["k1"] == 2 and not refused  # the third waited its turn, then ran
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(request, "k1", 1.0)
        assert refused == [429]
        assert turns._keys == {}  # nothing kept for a key with no request

    anyio.run(main)


def test_a_pasted_page_is_read_by_its_start(tmp_path: Path) -> None:
    """Ending a session of pasted pages is bounded work: the offline extractor, summaries and
    episode read each turn's first extraction.offline_turn_chars characters, so what hides past
    them in a page is neither a memory nor an entity, and the same words at the start are."""
    from memlane import Memory

    mem = Memory(Config.load(store={"home": str(tmp_path / "home")}, embedding={"provider": "hash"},
                             extraction={"offline_turn_chars": 2_000}))
    filler = "这是一段很长的会议记录，讨论了项目的进度和预算安排。" * 200  # 5,200 characters
    mem.add_messages("paste", [{"role": "user", "content": filler + "我对芒果过敏。"},
                               {"role": "assistant", "content": "好的"},
                               {"role": "user", "content": "我对花生过敏。" + filler}], user_id="u")
    mem.end_session("paste", user_id="u", wait=True)
    contents = " ".join(m.content for m in mem.list(user_id="u"))
    assert "花生" in contents and "芒果" not in contents
    episode = mem.episodes(user_id="u", session_id="paste")[0]
    assert "芒果" not in " ".join(episode.entities)
    mem.close()


def test_the_python_api_caps_a_call_too(tmp_path: Path) -> None:
    """`Memory.add_messages` refuses a flood before reading all of it (a generator of 50,000
    is stopped at the cap), naming `messages` and pointing at import; nothing is stored."""
    from memlane import Memory, ValidationError

    mem = Memory(Config.load(store={"home": str(tmp_path / "home")}, embedding={"provider": "hash"}))
    read = 0

    def flood() -> Iterator[dict[str, str]]:
        nonlocal read
        for i in range(50_000):
            read += 1
            yield {"role": "user", "content": f"message {i}"}

    with pytest.raises(ValidationError) as caught:
        mem.add_messages("flood", flood(), user_id="u")
    assert caught.value.field == "messages" and "import" in str(caught.value)
    assert read <= mem.config.store.max_messages_per_call + 1
    with pytest.raises(ValidationError, match="store.max_call_chars"):
        mem.add_messages("big", [{"content": "x" * 150_000}] * 14, user_id="u")
    assert mem.sessions(user_id="u") == []
    mem.close()


def test_adding_to_a_long_session_reads_only_its_new_part(tmp_path: Path) -> None:
    """add_messages on a session of thousands of turns reads the turns past what was compacted
    and extracted, not the whole session each time (its cost stayed flat, not growing with it)."""
    from memlane import Memory

    mem = Memory(Config.load(store={"home": str(tmp_path / "home")}, embedding={"provider": "hash"}))
    batch = [{"role": "user", "content": f"I had a long day at work number {i}"} for i in range(100)]
    for _ in range(30):
        mem.add_messages("long", batch, user_id="u")
    read: list[int] = []
    real = mem.store.get_turns

    def counting(*args: Any, **kw: Any) -> Any:
        rows = real(*args, **kw)
        read.append(len(rows))
        return rows

    mem.store.get_turns = counting  # type: ignore[method-assign]
    mem.add_messages("long", batch, user_id="u")
    cap = mem.config.session.compaction_cap
    assert read and max(read) <= 2 * cap + len(batch), read  # 3,100 turns stored
    mem.close()


def test_a_key_adds_its_budget_of_turns_a_minute(tmp_path: Path) -> None:
    """server.max_turns_per_minute: past a key's budget a request is 429 with Retry-After and
    stores nothing; another key still writes; import is not counted."""
    home = tmp_path / "home"
    lin, mei = create_key(home, "--user", "lin"), create_key(home, "--user", "mei")
    server = Server(home, MEMLANE_SERVER__MAX_TURNS_PER_MINUTE="5")
    try:
        with server.client(lin) as c, server.client(mei) as other:
            three = {"messages": [{"content": f"turn {i}"} for i in range(3)]}
            assert c.post("/v1/sessions/s/messages", json=three).status_code == 201
            r = c.post("/v1/sessions/s/messages", json=three)
            body = error_shape(r, 429)
            assert "server.max_turns_per_minute" in body["detail"] and int(r.headers["retry-after"]) >= 1
            assert len(c.get("/v1/sessions/s/turns").json()["turns"]) == 3
            assert other.post("/v1/sessions/s/messages", json=three).status_code == 201
            line = json.dumps({"memlane_export": 1})
            assert c.post("/v1/import", content=line, headers={"Content-Type": "application/x-ndjson"}).status_code \
                in (200, 422)  # not refused for the budget
    finally:
        server.stop()
