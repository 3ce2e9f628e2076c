"""`memlane serve` through a real uvicorn on 127.0.0.1: every route, two users' keys, auth,
limits and error mapping. Process-level promises (restart, SIGKILL, two servers on one home,
open mode, the bind check) are in tests/test_server_processes.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import Memory
from memlane.testing import ManualClock
from tests.conftest import T0

from .server_support import Server, create_key, error_shape

pytest.importorskip("fastapi")

from tests.webui_support import ui_site  # noqa: E402  (uvicorn + fastapi)


@dataclass
class Live:
    server: Server
    a: str  # user lin
    b: str  # user mei
    admin: str
    agent: str  # lin, agent coder

    def c(self, key: str | None, **headers: str) -> httpx.Client:
        return self.server.client(key, **headers)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    home = tmp_path_factory.mktemp("serve") / "home"
    keys = Live(None, create_key(home, "--user", "lin"), create_key(home, "--user", "mei"),  # type: ignore[arg-type]
                create_key(home, "--admin"), create_key(home, "--user", "lin", "--agent", "coder"))
    server = Server(home)
    keys.server = server
    try:
        yield keys
    finally:
        code = server.stop()  # uvicorn re-raises SIGTERM after its graceful shutdown
        assert code in (0, -15) and "Application shutdown complete" in server.output(), server.output()[-3000:]


def test_memory_routes_round_trip(live: Live) -> None:
    with live.c(live.a) as c:
        r = c.post("/v1/memories", json={"content": "用户对花生过敏", "category": "fact", "importance": "high"})
        assert r.status_code == 201, r.text
        mem = r.json()
        assert mem["user_id"] == "lin" and mem["score"] == 0.8
        mid = mem["id"]
        for i in range(3):
            assert c.post("/v1/memories", json={"content": f"user likes tea variety {i}", "category": "preference"}).status_code == 201
        page1 = c.get("/v1/memories", params={"limit": 2}).json()
        page2 = c.get("/v1/memories", params={"limit": 2, "offset": page1["next_offset"]}).json()
        assert len(page1["memories"]) == 2 and page2["next_offset"] is None
        ids = {m["id"] for m in page1["memories"] + page2["memories"]}
        assert mid in ids and len(ids) == 4
        assert [m["id"] for m in c.get("/v1/memories", params={"category": "fact"}).json()["memories"]] == [mid]
        assert c.get(f"/v1/memories/{mid}").json()["content"] == "用户对花生过敏"
        r = c.patch(f"/v1/memories/{mid}", json={"content": "用户对花生和腰果过敏", "reason": "more precise"})
        assert r.json()["content"] == "用户对花生和腰果过敏"
        assert c.post(f"/v1/memories/{mid}/pin").json()["pinned"] is True
        assert c.delete(f"/v1/memories/{mid}/pin").json()["pinned"] is False
        hits = c.post("/v1/search", json={"query": "腰果过敏"}).json()["hits"]
        assert hits[0]["id"] == mid
        kinds = [e["kind"] for e in c.get(f"/v1/memories/{mid}/history").json()["events"]]
        assert kinds[0] == "ADD" and kinds.count("UPDATE") == 3
        assert c.delete(f"/v1/memories/{mid}").json()["id"] == mid
        error_shape(c.get(f"/v1/memories/{mid}"), 404)
        assert c.post(f"/v1/memories/{mid}/restore").json()["content"] == "用户对花生和腰果过敏"
        assert error_shape(c.post(f"/v1/memories/{mid}/restore"), 409)["error"] == "Conflict"  # it exists
        assert c.post(f"/v1/memories/{mid}/undo").json()["kind"] in ("DELETE", "UNDO")
        error_shape(c.get(f"/v1/memories/{mid}"), 404)  # the restore was undone
        stats = c.get("/v1/stats").json()
        assert stats["user_id"] == "lin" and stats["memories"] >= 3


def test_session_context_tool_routes(live: Live) -> None:
    with live.c(live.a) as c:
        assert c.post("/v1/sessions", json={"session_id": "trip"}).json()["id"] == "trip"
        msgs = [{"role": "user", "content": "We are planning a trip to Kyoto in April"},
                {"role": "assistant", "content": "Kyoto in April has the cherry blossoms."},
                {"role": "user", "content": "I prefer quiet temples over crowded spots"}]
        turns = c.post("/v1/sessions/trip/messages", json={"messages": msgs}).json()["turns"]
        assert [t["seq"] for t in turns] == [1, 2, 3]
        assert [t["content"] for t in c.get("/v1/sessions/trip/turns").json()["turns"]] == [m["content"] for m in msgs]
        assert "trip" in [s["id"] for s in c.get("/v1/sessions").json()["sessions"]]
        assert c.get("/v1/sessions/trip").json()["message_count"] == 3
        hits = c.post("/v1/search", json={"query": "Kyoto temples", "corpus": "turns"}).json()["hits"]
        assert hits and all(h["corpus"] == "turns" for h in hits)
        ended = c.post("/v1/sessions/trip/end", json={"wait": True})
        assert ended.status_code == 200, ended.text
        eps = c.get("/v1/episodes").json()["episodes"]
        assert [e["session_id"] for e in eps] == ["trip"]
        ctx = c.post("/v1/context", json={"session_id": "trip", "query": "Kyoto"}).json()
        assert ctx["system_prompt"] and ctx["messages"][0]["role"] == "system"
        assert {b["name"] for b in ctx["blocks"]} >= {"history"}
        pad = c.put("/v1/scratchpad", json={"focus": "book a ryokan"}).json()
        assert c.get("/v1/scratchpad").json() == pad and pad["current_focus"] == "book a ryokan"
        names = [t["function"]["name"] for t in c.get("/v1/tools").json()["tools"]]
        assert "search_memory" in names
        assert c.get("/v1/tools", params={"format": "anthropic"}).json()["tools"][0]["input_schema"]
        called = c.post("/v1/tools/call", json={"name": "remember", "arguments": {"content": "user prefers quiet temples"}})
        assert called.json()["result"]["content"] == "user prefers quiet temples"
        assert c.post("/v1/consolidate", json={"dry_run": True}).status_code == 200
        gone = c.delete("/v1/sessions/trip").json()
        assert gone["counts"]["turns"] == 3
        error_shape(c.get("/v1/sessions/trip"), 404)


def test_export_import_lands_in_the_importers_scope(live: Live) -> None:
    with live.c(live.a) as a, live.c(live.b) as b:
        a.post("/v1/memories", json={"content": "lin exported this memory about sailing"})
        dump = a.get("/v1/export")
        assert dump.status_code == 200 and "sailing" in dump.text
        r = b.post("/v1/import", content=dump.content, headers={"content-type": "application/x-ndjson"})
        assert r.status_code == 200, r.text
        assert any("sailing" in m["content"] for m in b.get("/v1/memories").json()["memories"])
        assert "# " in a.get("/v1/export", params={"format": "md"}).text
        error_shape(b.post("/v1/import", content=b"not an export\n", headers={"content-type": "application/x-ndjson"}), 422)


def test_another_users_ids_are_not_found(live: Live) -> None:
    with live.c(live.a) as a, live.c(live.b) as b:
        mid = a.post("/v1/memories", json={"content": "lin's secret: the vault code is 4711"}).json()["id"]
        a.post("/v1/sessions/private/messages", json={"messages": [{"content": "my vault code is 4711"}]})
        for method, path in [("GET", f"/v1/memories/{mid}"), ("PATCH", f"/v1/memories/{mid}"),
                             ("DELETE", f"/v1/memories/{mid}"), ("GET", f"/v1/memories/{mid}/history"),
                             ("POST", f"/v1/memories/{mid}/pin"), ("POST", f"/v1/memories/{mid}/undo"),
                             ("GET", "/v1/sessions/private"), ("GET", "/v1/sessions/private/turns"),
                             ("DELETE", "/v1/sessions/private")]:
            body = {"content": "stolen"} if method == "PATCH" else None
            r = b.request(method, path, json=body)
            assert "4711" not in r.text
            error_shape(r, 404)
        # ids in bodies or query strings do not change the scope either
        r = b.post("/v1/search", json={"query": "vault code 4711", "corpus": "turns"})
        assert r.status_code == 200 and "4711" not in r.text
        assert "4711" not in b.get("/v1/memories", params={"user_id": "lin"}).text
        error_shape(b.post("/v1/memories", json={"content": "x", "user_id": "lin"}), 422)
        assert "4711" not in b.post("/v1/context", json={"query": "vault code"}).text
        assert a.get(f"/v1/memories/{mid}").status_code == 200  # still there, untouched


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(min_size=1, max_size=80), st.from_regex(r"[0-9a-f]{10}", fullmatch=True)))
def test_no_id_reaches_another_scope(live: Live, other: str) -> None:
    """Whatever id user mei sends, she never gets a record of lin's (only 404 or 422)."""
    with live.c(live.a) as a, live.c(live.b) as b:
        mine = a.get("/v1/memories", params={"limit": 5}).json()["memories"]
        for mid in [other] + [m["id"] for m in mine]:
            r = b.get(f"/v1/memories/{quote(mid, safe='')}")
            if r.status_code not in (404, 422):
                assert r.status_code == 200 and r.json()["user_id"] == "mei"
            r = b.post("/v1/tools/call", json={"name": "forget", "arguments": {"memory_id": mid}})
            assert r.status_code in (200, 422) and "lin" not in json.dumps(r.json().get("result", {}))
        assert len(a.get("/v1/memories", params={"limit": 5}).json()["memories"]) == len(mine)


def test_agent_key_is_bound_to_its_agent_scope(live: Live) -> None:
    with live.c(live.agent) as agent, live.c(live.a) as a:
        mid = agent.post("/v1/memories", json={"content": "coder agent: repo uses tabs"}).json()["id"]
        assert agent.get(f"/v1/memories/{mid}").json()["agent_id"] == "coder"
        error_shape(a.get(f"/v1/memories/{mid}"), 404)  # the user-level key is another scope
        shared = a.post("/v1/memories", json={"content": "lin writes python and rust"}).json()["id"]
        # an agent scope reads its user's shared memories in search (Scope.readable)
        assert shared in [h["id"] for h in agent.post("/v1/search", json={"query": "python rust"}).json()["hits"]]


def test_auth_failures(live: Live) -> None:
    with live.c(None) as anon:
        r = anon.get("/v1/memories")
        assert error_shape(r, 401)["error"] == "Unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")
        error_shape(anon.post("/v1/memories", json={"content": "x"}), 401)
        error_shape(anon.get("/v1/memories", headers={"Authorization": "Basic bGluOnB3"}), 401)
        error_shape(anon.get("/v1/memories", headers={"Authorization": "Bearer ml_nope_nope"}), 401)
        error_shape(anon.get("/v1/memories", headers={"Authorization": "Bearer " + live.a + "x"}), 401)
        error_shape(anon.get("/v1/memories", headers={"Authorization": "Bearer " + "ml_" + "a" * 5000}), 401)
        assert anon.get("/healthz").json()["status"] == "ok"
    with live.c(live.a) as a:
        error_shape(a.get("/v1/admin/status"), 403)
        error_shape(a.post("/v1/admin/purge", json={"user_id": "mei"}), 403)
    with live.c(live.admin) as adm:
        error_shape(adm.get("/v1/memories"), 422)  # an admin names the scope it acts on
        error_shape(adm.get("/v1/memories", headers={"X-Memlane-User": "u" * 300}), 422)
        lin = adm.get("/v1/memories", headers={"X-Memlane-User": "lin"}).json()["memories"]
        assert lin and all(m["user_id"] == "lin" for m in lin)
        status = adm.get("/v1/admin/status").json()
        assert status["auth"] == "keys" and status["scheduler"]["alive"] is True


def test_revoked_key_is_refused_from_its_next_request(live: Live) -> None:
    from .server_support import cli

    key = create_key(live.server.home, "--user", "tmp")
    with live.c(key) as c:
        assert c.get("/v1/stats").status_code == 200
        key_id = key.split("_")[1]
        assert cli(live.server.home, "keys", "revoke", key_id).returncode == 0
        error_shape(c.get("/v1/stats"), 401)
    listed = json.loads(cli(live.server.home, "keys", "list", "--all", "--json").stdout)
    assert [k["revoked_at"] is not None for k in listed if k["id"] == key_id] == [True]
    assert key not in json.dumps(listed) and key not in (live.server.home / "memlane.db").read_bytes().decode("latin-1")


def test_hostile_input_gets_json_errors(live: Live) -> None:
    json_h = {"content-type": "application/json"}
    with live.c(live.a) as c:
        body = error_shape(c.post("/v1/memories", content=b'{"content": "a \\ud800 b"}', headers=json_h), 422)
        assert body["field"] == "content"
        body = error_shape(c.post("/v1/sessions/s/messages", headers=json_h,
                                  content=b'{"messages": [{"role": "user", "content": "\\udfff"}]}'), 422)
        assert body["field"] == "messages[0].content"
        error_shape(c.post("/v1/search", content=b"[" * 50_000 + b"]" * 50_000, headers=json_h), 422)
        deep: object = "x"
        for _ in range(40):
            deep = {"k": deep}
        error_shape(c.post("/v1/memories", json={"content": "ok", "metadata": deep}), 422)
        error_shape(c.post("/v1/memories", content=b'{"content": ', headers=json_h), 422)
        error_shape(c.post("/v1/memories", content=b"\xff\xfe", headers=json_h), 422)
        error_shape(c.post("/v1/memories", content=b"x" * 9_000_000, headers=json_h), 413)
        big = json.dumps({"content": "y" * 20_000})  # over store.max_content_chars
        assert error_shape(c.post("/v1/memories", content=big, headers=json_h), 422)["field"] == "content"
        error_shape(c.post("/v1/memories", json={"content": "x", "category": "nonsense"}), 422)
        error_shape(c.post("/v1/memories", json={"content": "x", "importance": 7}), 422)
        error_shape(c.post("/v1/memories", json=["not", "an", "object"]), 422)
        error_shape(c.get("/v1/memories", params={"limit": "lots"}), 422)
        error_shape(c.get("/v1/memories/" + "a" * 300), 422)
        error_shape(c.get("/v1/memories/x%00y"), 422)
        error_shape(c.post("/v1/sessions/" + "s" * 300 + "/messages", json={"messages": [{"content": "x"}]}), 422)
        error_shape(c.post("/v1/sessions/s/messages", json={"messages": []}), 422)
        error_shape(c.get("/v1/no/such/route"), 404)
        assert c.get("/v1/memories/%ff%fe").status_code in (404, 422)  # not UTF-8 in the path
        error_shape(c.get("/v1/memories", params={"category": "fa\x00ct"}), 422)
        error_shape(c.get("/v1/memories", params={"since": "yesterday-ish"}), 422)
        error_shape(c.post("/v1/search", json={"query": "x", "filters": {"nope": 1}}), 422)
        error_shape(c.post("/v1/search", json={"query": "x", "min_score": 7}), 422)
        error_shape(c.post("/v1/search", content=b'{"query": "x", "min_score": NaN}', headers=json_h), 422)
        # chunked upload over the limit: refused while reading, not after
        def chunks() -> Iterator[bytes]:
            for _ in range(100):
                yield b"z" * 100_000
        error_shape(c.post("/v1/memories", content=chunks(), headers=json_h), 413)
        assert c.get("/v1/stats").status_code == 200  # the server is fine afterwards


def test_request_ids(live: Live) -> None:
    with live.c(live.a) as c:
        r = c.get("/v1/stats", headers={"X-Request-ID": "trace-42"})
        assert r.headers["x-request-id"] == "trace-42"
        r = c.get("/v1/stats", headers={"X-Request-ID": "bad id\twith tab"})
        assert r.headers["x-request-id"] != "bad id\twith tab" and len(r.headers["x-request-id"]) == 16
    assert "trace-42" in live.server.output()


def test_admin_purge(live: Live) -> None:
    key = create_key(live.server.home, "--user", "gone")
    with live.c(key) as c, live.c(live.admin) as adm:
        c.post("/v1/memories", json={"content": "forget me entirely"})
        r = adm.post("/v1/admin/purge", json={"user_id": "gone"})
        assert r.status_code == 200 and r.json()["counts"]["memories"] == 1
        # the purge took the user's keys too (they hold the user id): the key is refused
        error_shape(c.get("/v1/memories"), 401)
        assert adm.get("/v1/memories", headers={"X-Memlane-User": "gone"}).json()["memories"] == []


def test_openapi_lists_the_routes(live: Live) -> None:
    paths = httpx.get(f"{live.server.url}/openapi.json", timeout=30).json()["paths"]
    assert {"/v1/memories", "/v1/search", "/v1/context", "/v1/sessions/{session_id}/messages"} <= set(paths)
    page = httpx.get(f"{live.server.url}/docs", timeout=30).text
    assert "/v1/sessions/{session_id}/messages" in page and "<script" not in page and "://" not in page


def test_a_person_confirms_an_agents_memory_over_rest(make_memory: Callable[..., Memory]) -> None:
    """POST /v1/memories keeps a person's (or an app's) memory as it was; `source: "agent"` and
    the agent tools store an unconfirmed one; `/verify` or a PATCH confirms it (audited, actor
    api), and from then on it no longer fades. The app in-process, so the clock can be moved."""
    clock = ManualClock(T0)
    mem = make_memory(clock=clock)
    with ui_site(mem, "server") as site, httpx.Client(
            base_url=site.base, headers={"Authorization": f"Bearer {site.key['lin']}"}, timeout=30) as c:
        added = c.post("/v1/memories", json={"content": "用户对花生过敏", "category": "fact"}).json()
        assert (added["source"], added["verified"]) == ("user", False)  # as before this change
        said = c.post("/v1/memories", json={"content": "lin waters the orchids on Sundays", "source": "agent"}).json()
        assert (said["source"], said["verified"], said["pinned"]) == ("agent", False, False)
        assert error_shape(c.post("/v1/memories", json={"content": "x", "source": "system"}), 422)
        called = c.post("/v1/tools/call", json={"name": "remember", "arguments": {"content": "lin keeps bees"}})
        bees = called.json()["result"]["id"]
        unconfirmed = c.post("/v1/tools/call", json={"name": "remember",
                                                     "arguments": {"content": "lin plays the ukulele"}}).json()
        assert c.get(f"/v1/memories/{bees}").json()["source"] == "agent"

        assert c.post(f"/v1/memories/{said['id']}/verify").json()["verified"] is True
        assert c.patch(f"/v1/memories/{bees}", json={"verified": True}).json()["verified"] is True
        events = c.get(f"/v1/memories/{said['id']}/history").json()["events"]
        assert (events[-1]["kind"], events[-1]["actor"], events[-1]["reason"]) == (
            "UPDATE", "api", "confirmed by a person")
        assert events[-1]["before"]["verified"] is False and events[-1]["after"]["verified"] is True

        clock.now = T0 + timedelta(days=400)  # far past every threshold
        assert c.post("/v1/consolidate", json={}).status_code == 200
        for mid in (said["id"], bees):
            kept = c.get(f"/v1/memories/{mid}").json()
            assert (kept["score"], kept["status"], kept["source"]) == (0.6, "active", "agent"), kept
        error_shape(c.get(f"/v1/memories/{unconfirmed['result']['id']}"), 404)  # faded away
        assert c.delete(f"/v1/memories/{bees}/verify").json()["verified"] is False


def test_a_fact_that_changed_over_rest(make_memory: Callable[..., Memory]) -> None:
    """Issue 32 over REST: `POST .../supersede` keeps the old fact, closed where the new one
    began; `GET .../timeline` is the chain oldest first; a search `as_of` a date, or with
    `include_superseded`, finds the old fact; the list takes `status=superseded`; every memory's
    JSON names its validity (null while it does not apply); the engine's refusals map to 404 /
    409 / 422, and another user's id is simply not found."""
    clock = ManualClock(T0)
    mem = make_memory(clock=clock)
    with ui_site(mem, "server") as site, httpx.Client(
            base_url=site.base, headers={"Authorization": f"Bearer {site.key['lin']}"}, timeout=30) as c, \
            httpx.Client(base_url=site.base, headers={"Authorization": f"Bearer {site.key['bob']}"}, timeout=30) as b:
        munich = c.post("/v1/memories", json={"content": "lin lives in Munich", "category": "fact"}).json()
        assert {k: munich[k] for k in ("valid_to", "superseded_at", "superseded_by", "supersedes")} == dict.fromkeys(
            ("valid_to", "superseded_at", "superseded_by", "supersedes"))
        assert munich["valid_from"] == T0.isoformat()
        clock.now = T0 + timedelta(days=30)
        r = c.post(f"/v1/memories/{munich['id']}/supersede",
                   json={"content": "lin lives in Berlin", "valid_from": "2026-03-20", "reason": "moved"})
        assert r.status_code == 200, r.text
        berlin = r.json()
        assert (berlin["content"], berlin["supersedes"], berlin["status"]) == ("lin lives in Berlin", munich["id"], "active")
        assert berlin["valid_from"].startswith("2026-03-20") and berlin["valid_to"] is None
        old = c.get(f"/v1/memories/{munich['id']}").json()
        assert (old["status"], old["superseded_by"]) == ("superseded", berlin["id"])
        assert old["valid_to"].startswith("2026-03-20") and old["superseded_at"] == clock.now.isoformat()

        for mid in (munich["id"], berlin["id"]):  # either end gives the whole chain, oldest first
            chain = c.get(f"/v1/memories/{mid}/timeline").json()
            assert chain["memory_id"] == mid
            assert [v["id"] for v in chain["versions"]] == [munich["id"], berlin["id"]]
        kinds = [e["kind"] for e in c.get(f"/v1/memories/{munich['id']}/history").json()["events"]]
        assert kinds == ["ADD", "SUPERSEDE"]

        def found(**body: Any) -> list[str]:
            return [h["id"] for h in c.post("/v1/search", json={"query": "where does lin live", "min_score": 0,
                                                                **body}).json()["hits"]]

        assert munich["id"] not in found() and berlin["id"] in found()
        assert found(as_of="2026-03-10") == [munich["id"]]  # only what held then
        assert set(found(include_superseded=True)) == {munich["id"], berlin["id"]}
        hit = c.post("/v1/search", json={"query": "Munich", "as_of": "2026-03-10", "min_score": 0}).json()["hits"][0]
        assert hit["memory"]["valid_to"].startswith("2026-03-20")  # says when it held
        listed = c.get("/v1/memories", params={"status": "superseded"}).json()
        assert [m["id"] for m in listed["memories"]] == [munich["id"]] and listed["total"] == 1
        assert munich["id"] not in [m["id"] for m in c.get("/v1/memories", params={"status": "active"}).json()["memories"]]

        # errors as the server maps them
        assert error_shape(c.post(f"/v1/memories/{munich['id']}/supersede", json={"content": "lin lives in Rome"}),
                           409)["error"] == "Conflict"  # already replaced: change the current one
        both = error_shape(c.post(f"/v1/memories/{berlin['id']}/supersede", json={"content": "x", "by": munich["id"]}), 422)
        assert both["field"] == "content"
        early = error_shape(c.post(f"/v1/memories/{berlin['id']}/supersede",
                                   json={"content": "lin lives in Rome", "valid_from": "2020-01-01"}), 422)
        assert early["field"] == "valid_from"
        error_shape(c.post(f"/v1/memories/{berlin['id']}/supersede", json={"content": "x", "colour": "red"}), 422)
        error_shape(c.post("/v1/search", json={"query": "x", "as_of": "not a date"}), 422)
        error_shape(c.get("/v1/memories", params={"status": "gone"}), 422)
        # another user: not found, and nothing changed
        error_shape(b.post(f"/v1/memories/{berlin['id']}/supersede", json={"content": "bob was here"}), 404)
        error_shape(b.get(f"/v1/memories/{berlin['id']}/timeline"), 404)
        assert [v["id"] for v in c.get(f"/v1/memories/{berlin['id']}/timeline").json()["versions"]] == [
            munich["id"], berlin["id"]]

        # `by`: a stored memory takes over; deleting the current one reopens the old
        rome = c.post("/v1/memories", json={"content": "lin lives in Rome", "category": "fact"}).json()
        now = c.post(f"/v1/memories/{berlin['id']}/supersede", json={"by": rome["id"]}).json()
        assert (now["id"], now["supersedes"]) == (rome["id"], berlin["id"])
        assert len(c.get(f"/v1/memories/{munich['id']}/timeline").json()["versions"]) == 3
        c.delete(f"/v1/memories/{rome['id']}")
        assert c.get(f"/v1/memories/{berlin['id']}").json()["status"] == "active"

        paths = c.get("/openapi.json").json()
        assert {"/v1/memories/{memory_id}/supersede", "/v1/memories/{memory_id}/timeline"} <= set(paths["paths"])
        search_body = paths["components"]["schemas"]["SearchQuery"]["properties"]
        assert {"as_of", "include_superseded"} <= set(search_body)
        statuses = json.dumps(paths["paths"]["/v1/memories"]["get"]["parameters"])
        assert "superseded" in statuses


def test_rest_takes_the_dates_the_cli_and_the_library_take(make_memory: Callable[..., Memory]) -> None:
    """`POST /v1/memories` takes `valid_from` as `Memory.add` and `memlane add --valid-from` do;
    every date of issue 32 (`valid_from`, `as_of`) takes the CLI's forms — a day, a time, a
    month or a year — through the one parser, and a bad one is refused naming its field."""
    clock = ManualClock(T0)
    mem = make_memory(clock=clock)
    with ui_site(mem, "server") as site, httpx.Client(
            base_url=site.base, headers={"Authorization": f"Bearer {site.key['lin']}"}, timeout=30) as c:
        r = c.post("/v1/memories", json={"content": "lin lives in Munich", "category": "fact", "valid_from": "2019"})
        assert r.status_code == 201, r.text
        munich = r.json()
        assert munich["valid_from"].startswith("2019-01-01")
        r = c.post(f"/v1/memories/{munich['id']}/supersede", json={"content": "lin lives in Berlin", "valid_from": "2024-03"})
        assert r.status_code == 200, r.text
        assert r.json()["valid_from"].startswith("2024-03-01")

        def found(as_of: Any) -> list[str]:
            r = c.post("/v1/search", json={"query": "where does lin live", "min_score": 0, "as_of": as_of})
            assert r.status_code == 200, r.text
            return [h["memory"]["content"] for h in r.json()["hits"]]

        for when in ("2023", "2024-02", "2024-02-29", "2024-02-29T23:30:00", "2024-03-01T00:30:00+01:00"):
            assert found(when) == ["lin lives in Munich"], when
        assert found("2024-03") == ["lin lives in Berlin"]
        for bad in ("2024-13", "someday"):
            body = {"content": "x", "valid_from": bad}
            assert error_shape(c.post("/v1/memories", json=body), 422)["field"] == "valid_from"
            assert error_shape(c.post(f"/v1/memories/{munich['id']}/supersede", json=body), 422)["field"] == "valid_from"
            assert error_shape(c.post("/v1/search", json={"query": "x", "as_of": bad}), 422)["field"] == "as_of"
        for bad_type in (0, True):
            error_shape(c.post("/v1/search", json={"query": "x", "as_of": bad_type}), 422)
        assert len(mem.list(user_id="lin", status="active")) == 1  # the refusals wrote nothing
        schema = c.get("/openapi.json").json()["components"]["schemas"]
        assert "valid_from" in schema["NewMemory"]["properties"]
