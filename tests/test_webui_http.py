"""The web UI over plain HTTP: sign-in, CSRF, isolation between users on every route, the
engine's validation, the forecast and the import dry run. A real uvicorn on 127.0.0.1."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import memlane
from memlane import BackendError, Memory
from memlane.testing import ManualClock
from memlane.webui import Fixed, Principal, WebUI
from memlane.webui.i18n import MESSAGES
from tests.conftest import T0
from tests.webui_support import PageText, TableKeys, csrf_of, login, serve, token, ui_site

LIN_SECRET = "林晓的猫叫橘子"


@pytest.fixture(params=["server", "fixed"])
def world(request: pytest.FixtureRequest, make_memory: Callable[..., Memory]) -> Iterator[dict[str, Any]]:
    """lin with a memory, a conversation and an episode; bob with his own; keys for both and an
    admin. "server": the UI inside `memlane serve`'s app, with its key table; "fixed": bare."""
    clock = ManualClock(T0)
    mem = make_memory(clock=clock, server={"max_body_bytes": 1_000_000})
    lin = mem.add(LIN_SECRET, user_id="lin", category="fact", importance="high")
    mem.add_messages("lin-s1", [{"role": "user", "content": "我家的猫叫橘子，三岁了"},
                                {"role": "assistant", "content": "橘子这个名字真可爱"},
                                {"role": "user", "content": "I am allergic to peanuts, never suggest them."}],
                     user_id="lin")
    mem.end_session("lin-s1", user_id="lin")
    bob = mem.add("Bob keeps bees", user_id="bob", category="fact")
    with ui_site(mem, request.param) as site:
        yield {"mem": mem, "base": site.base, "site": site, "key": site.key, "lin": lin, "bob": bob,
               "clock": clock}


def routes_for(memory_id: str, session_id: str) -> list[str]:
    return ["/", "/memories", "/memories?q=猫&status=any", f"/memories/{memory_id}", f"/memories/{memory_id}/row",
            f"/memories/{memory_id}/edit", f"/memories/{memory_id}/confirm-delete", "/conversations",
            "/conversations?q=猫", f"/conversations/{session_id}", "/files", "/files/MEMORY.md", "/files/USER.md",
            "/insight", "/insight?q=猫", "/forget"]


def test_every_page_needs_a_session(world: dict[str, Any]) -> None:
    anon = httpx.Client(base_url=world["base"], follow_redirects=False)
    for route in routes_for(world["lin"].id, "lin-s1"):
        r = anon.get(route)
        assert r.status_code == 303 and r.headers["location"].startswith("/login"), route
    assert anon.get("/memories", headers={"HX-Request": "true"}).status_code == 401
    r = anon.post(f"/memories/{world['lin'].id}/delete", data={"csrf": "x"})
    assert r.status_code in (303, 403)
    assert world["mem"].get(world["lin"].id, user_id="lin").content == LIN_SECRET


def test_login_sets_a_strict_httponly_cookie_and_a_bad_key_is_refused(world: dict[str, Any]) -> None:
    client = httpx.Client(base_url=world["base"])
    form = client.get("/login")
    bad = client.post("/login", data={"key": world["key"]["lin"] + "x", "csrf": csrf_of(form.text)})
    assert bad.status_code == 401 and "memlane_session" not in bad.headers.get("set-cookie", "")
    form = client.get("/login")
    no_token = client.post("/login", data={"key": world["key"]["lin"], "csrf": "forged"})
    assert no_token.status_code == 403
    form = client.get("/login")
    ok = client.post("/login", data={"key": world["key"]["lin"], "csrf": csrf_of(form.text)})
    assert ok.status_code == 303
    cookie = next(c for c in ok.headers.get_list("set-cookie") if c.startswith("memlane_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert world["key"]["lin"] not in cookie  # the key itself never sits in the cookie
    assert LIN_SECRET in client.get("/memories").text


def test_writes_need_the_sessions_csrf_token_and_a_same_site_origin(world: dict[str, Any]) -> None:
    mem, lin = world["mem"], world["lin"]
    client = login(world["base"], world["key"]["lin"])
    other = login(world["base"], world["key"]["lin"])  # the same key, another browser: another token
    url = f"/memories/{lin.id}"
    for data, headers in [
        ({"content": "hijacked"}, {}),
        ({"content": "hijacked", "csrf": "forged"}, {}),
        ({"content": "hijacked", "csrf": token(other)}, {}),
        ({"content": "hijacked", "csrf": token(client)}, {"Origin": "http://evil.example"}),
    ]:
        r = client.post(url, data=data, headers=headers, follow_redirects=False)
        assert r.status_code == 403, (data, headers, r.status_code)
    assert mem.get(lin.id, user_id="lin").content == LIN_SECRET
    assert [e.kind for e in mem.history(lin.id, user_id="lin")] == ["ADD"]
    r = client.post(url, data={"content": "林晓的猫叫橘子，是橘猫", "csrf": token(client)},
                    headers={"Origin": world["base"]})
    assert r.status_code == 200
    assert mem.get(lin.id, user_id="lin").content == "林晓的猫叫橘子，是橘猫"


def test_another_users_key_never_sees_or_touches_lins_data(world: dict[str, Any]) -> None:
    mem, lin = world["mem"], world["lin"]
    bob = login(world["base"], world["key"]["bob"])
    for route in routes_for(lin.id, "lin-s1"):
        r = bob.get(route)
        assert LIN_SECRET not in r.text and "三岁" not in r.text and "peanut" not in r.text, route
        if lin.id in route or "lin-s1" in route:
            assert r.status_code == 404, route
    fragment = bob.get(f"/memories/{lin.id}/row", headers={"HX-Request": "true"})
    assert fragment.status_code == 404 and LIN_SECRET not in fragment.text
    csrf = token(bob)
    for path, data in [(f"/memories/{lin.id}", {"content": "bob was here"}), (f"/memories/{lin.id}/delete", {}),
                       (f"/memories/{lin.id}/undo", {}), ("/memories/bulk", {"action": "delete", "ids": lin.id}),
                       ("/conversations/lin-s1/delete", {"confirm": "lin-s1"})]:
        r = bob.post(path, data={**data, "csrf": csrf})
        assert r.status_code == 404, path
    r = bob.post("/forget", data={"confirm": "lin", "csrf": csrf})  # bob's purge is bob's, whatever he types
    assert r.status_code == 422
    lins_file = mem.export(user_id="lin", format="md").replace(LIN_SECRET, "bob rewrote it")
    r = bob.post("/files/import", data={"text": lins_file, "csrf": csrf})  # lin's ids in bob's scope
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', r.text)
    assert digest and 'class="op-add"' in r.text and 'class="op-update"' not in r.text, r.text[:500]  # bob's own
    bob.post("/files/import", data={"text": lins_file, "apply": "1", "digest": digest.group(1), "csrf": csrf})
    assert mem.get(lin.id, user_id="lin").content == LIN_SECRET
    assert mem.get_turns("lin-s1", user_id="lin")
    assert [e.kind for e in mem.history(lin.id, user_id="lin")] == ["ADD"]
    assert "Bob keeps bees" in bob.get("/memories").text


def test_a_tampered_cookie_or_a_revoked_key_ends_the_session(world: dict[str, Any]) -> None:
    bob = login(world["base"], world["key"]["bob"])
    cookie = bob.cookies["memlane_session"]
    body, mac = cookie.split(".")
    import base64
    import json
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["u"], payload["k"] = "lin", world["site"].key_id["lin"]
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode() + "." + mac
    fake = httpx.Client(base_url=world["base"], cookies={"memlane_session": forged})
    r = fake.get("/memories", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    world["site"].revoke("bob")
    r = bob.get("/memories", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_an_admin_key_picks_the_user_it_looks_at(world: dict[str, Any]) -> None:
    admin = login(world["base"], world["key"]["admin"])
    assert admin.get("/memories", follow_redirects=False).headers["location"] == "/scope"
    r = admin.post("/scope", data={"user_id": "lin", "csrf": token(admin, "/scope")})
    assert r.status_code == 200 and LIN_SECRET in r.text
    lin = login(world["base"], world["key"]["lin"])
    r = lin.post("/scope", data={"user_id": "bob", "csrf": token(lin)})
    assert r.status_code == 403 and "bees" not in lin.get("/memories").text


def test_the_engines_validation_answers_with_the_field(world: dict[str, Any]) -> None:
    mem, lin = world["mem"], world["lin"]
    client = login(world["base"], world["key"]["lin"])
    csrf = token(client)
    cases = [({"content": ""}, "content"), ({"category": "nonsense"}, "category"),
             ({"content": "x" * 100_000}, "content"), ({"pinned": "maybe"}, "pinned")]
    for data, field_name in cases:
        r = client.post(f"/memories/{lin.id}", data={**data, "csrf": csrf}, headers={"HX-Request": "true"})
        assert r.status_code == 422 and field_name in r.text, (data, r.text[:300])
    r = client.post(f"/memories/{lin.id}", content="content=%ED%A0%80&csrf=" + csrf,  # a lone surrogate
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 400
    r = client.post(f"/memories/{lin.id}", content=b"content=" + b"a" * 1_100_000,  # server.max_body_bytes
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    assert client.get("/memories?min_score=7").status_code == 422
    assert client.get("/memories?page=-1").status_code == 422
    assert mem.get(lin.id, user_id="lin").content == LIN_SECRET


def test_delete_then_undo_and_bulk_archive_with_undo(world: dict[str, Any]) -> None:
    mem, lin = world["mem"], world["lin"]
    other = mem.add("林晓喜欢白茶", user_id="lin", category="preference")
    client = login(world["base"], world["key"]["lin"])
    r = client.post(f"/memories/{lin.id}/delete", data={"csrf": token(client)}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "/undo" in r.text
    assert LIN_SECRET not in client.get("/memories").text
    r = client.post(f"/memories/{lin.id}/undo", data={"csrf": token(client)}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and LIN_SECRET in r.text
    assert [e.kind for e in mem.history(lin.id, user_id="lin")][-2:] == ["DELETE", "RESTORE"]
    r = client.post("/memories/bulk", data={"action": "archive", "ids": [lin.id, other.id], "csrf": token(client)})
    assert {mem.get(i, user_id="lin").status for i in (lin.id, other.id)} == {"archived"}
    undo = re.search(r'<form method="post" action="/memories/bulk".*?</form>', r.text, re.S)
    assert undo and 'value="activate"' in undo.group(0)
    client.post("/memories/bulk", data={"action": "activate", "ids": [lin.id, other.id], "csrf": token(client)})
    assert {mem.get(i, user_id="lin").status for i in (lin.id, other.id)} == {"active"}


def test_the_forecast_is_when_consolidation_archives(world: dict[str, Any]) -> None:
    """The table says when the memory will be archived; consolidation agrees to the day."""
    mem, clock = world["mem"], world["clock"]
    m = mem.add("林晓周二跑步", user_id="lin", category="fact", importance="high")
    client = login(world["base"], world["key"]["lin"])
    row = client.get(f"/memories/{m.id}/row").text
    when = re.search(r"archived around (\d{4}-\d\d-\d\d)", row)
    assert when, row
    due = T0.date().fromisoformat(when.group(1))
    clock.now = T0.replace(year=due.year, month=due.month, day=due.day) - timedelta(days=1)
    mem.consolidate(user_id="lin")
    assert mem.get(m.id, user_id="lin").status == "active"
    clock.now = T0.replace(year=due.year, month=due.month, day=due.day) + timedelta(hours=1)
    mem.consolidate(user_id="lin")
    assert mem.get(m.id, user_id="lin").status == "archived"


def test_a_person_verifies_an_agents_memory_on_its_page_and_in_the_list(world: dict[str, Any]) -> None:
    """An agent's memory says it is unconfirmed and fading; the verify button (on its page, and
    a row of the table) confirms it, audited as the web UI's, and it stops fading."""
    mem, clock = world["mem"], world["clock"]
    tools = mem.tools(user_id="lin")
    on_page, in_row, left = (tools.call("remember", {"content": c})["id"] for c in (
        "lin waters the orchids on Sundays", "lin plays the ukulele", "lin once tried pottery"))
    client = login(world["base"], world["key"]["lin"], headers={"Accept-Language": "en"})
    page = client.get(f"/memories/{on_page}").text
    assert "written by the agent" in page and 'data-testid="agent-unconfirmed"' in page and "archived around" in page
    listed = client.get("/memories", params={"source": "agent"}).text
    assert {on_page, in_row, left} <= set(re.findall(r'name="ids" value="(\w+)"', listed))
    assert world["lin"].id not in listed  # a person's own memory is not the agent's

    r = client.post(f"/memories/{on_page}", data={"csrf": token(client), "verified": "1",
                                                  "next": f"/memories/{on_page}"})
    assert r.status_code == 200 and "never fades" in r.text and 'data-testid="agent-unconfirmed"' not in r.text
    r = client.post(f"/memories/{in_row}", data={"csrf": token(client), "verified": "1"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "✓ Verified" in r.text and MESSAGES["en"]["unverify"] in r.text
    for mid, reason in ((on_page, "verified in the web UI"), (in_row, "verified in the web UI")):
        last = mem.history(mid, user_id="lin")[-1]
        assert (last.kind, last.actor, last.reason, last.after["verified"]) == ("UPDATE", "web", reason, True)
    zh = login(world["base"], world["key"]["lin"], headers=ZH).get(f"/memories/{on_page}").text
    assert "智能体写入" in zh and "在网页界面中确认" in zh

    clock.now = T0 + timedelta(days=400)
    mem.consolidate(user_id="lin")
    assert [(mem.get(m, user_id="lin").score, mem.get(m, user_id="lin").status) for m in (on_page, in_row)] == [
        (0.6, "active")] * 2
    assert left not in {m.id for m in mem.list(user_id="lin")}  # unconfirmed, it faded away


def test_import_shows_the_operations_then_applies_exactly_those(world: dict[str, Any]) -> None:
    mem, lin = world["mem"], world["lin"]
    client = login(world["base"], world["key"]["lin"])
    original = client.get("/files/MEMORY.md").text
    assert LIN_SECRET in original
    edited = original.replace(LIN_SECRET, "林晓的猫叫橘子，今年四岁") + "\n### fact\n林晓住在杭州\n"
    preview = client.post("/files/import", data={"text": edited, "csrf": token(client, "/files")})
    assert preview.status_code == 200 and 'class="op-update"' in preview.text and 'class="op-add"' in preview.text
    assert mem.get(lin.id, user_id="lin").content == LIN_SECRET  # a dry run writes nothing
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', preview.text).group(1)  # type: ignore[union-attr]
    changed = client.post("/files/import", data={"text": edited + "\n### fact\nsneaked in\n", "apply": "1",
                                                 "digest": digest, "csrf": token(client, "/files")})
    assert changed.status_code == 422
    done = client.post("/files/import", data={"text": edited, "apply": "1", "digest": digest,
                                              "csrf": token(client, "/files")})
    assert done.status_code == 200
    assert mem.get(lin.id, user_id="lin").content == "林晓的猫叫橘子，今年四岁"
    assert "林晓住在杭州" in [m.content for m in mem.list(user_id="lin")]
    assert all("sneaked" not in m.content for m in mem.list(user_id="lin"))


def test_purge_needs_the_typed_user_id(world: dict[str, Any]) -> None:
    mem = world["mem"]
    client = login(world["base"], world["key"]["lin"])
    assert client.post("/forget", data={"confirm": "yes", "csrf": token(client)}).status_code == 422
    assert mem.stats(user_id="lin").memories > 0 and mem.stats(user_id="lin").turns == 3
    r = client.post("/forget", data={"confirm": "lin", "csrf": token(client)})
    assert r.status_code == 200
    assert mem.stats(user_id="lin").memories == 0 and mem.stats(user_id="lin").turns == 0
    assert mem.stats(user_id="bob").memories == 1


def test_loopback_open_mode_signs_in_the_local_user(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add("the local note", user_id="me")
    mem.add("another user note", user_id="other")
    app = FastAPI()
    WebUI(Fixed(mem, local_user="me")).mount(app)
    with serve(app) as base:
        client = httpx.Client(base_url=base, follow_redirects=True)
        page = client.get("/memories")
        assert "the local note" in page.text and "another user" not in page.text
        assert client.get("/login").url.path == "/memories"  # no key to ask for
        first = httpx.Client(base_url=base)
        r = first.post("/memories/bulk", data={"action": "delete", "ids": "x"})  # no page seen, no token
        assert r.status_code == 403


def test_memlane_serve_without_keys_is_open_to_its_local_user_until_a_key_exists(
        make_memory: Callable[..., Memory]) -> None:
    from memlane.server import create_app
    from memlane.server.keys import KeyStore

    mem = make_memory(server={"local_user": "me"})
    mem.add("the local note", user_id="me")
    mem.add("another user note", user_id="other")
    with serve(create_app(mem.config, memory=mem, host="127.0.0.1", mcp=False, scheduler=False)) as base:
        client = httpx.Client(base_url=base, follow_redirects=True)
        page = client.get("/memories")
        assert "the local note" in page.text and "another user" not in page.text
        store = KeyStore(mem.config.db_path)
        try:
            store.create(user_id="other")
        finally:
            store.close()
        deadline = time.monotonic() + 5  # the server re-reads "is there a key?" within a second
        while time.monotonic() < deadline and client.get("/memories").url.path != "/login":
            time.sleep(0.2)
        assert client.get("/memories").url.path == "/login"


def test_language_follows_the_browser_and_the_switch(world: dict[str, Any]) -> None:
    assert set(MESSAGES["en"]) == set(MESSAGES["zh"])
    client = login(world["base"], world["key"]["lin"], headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert "记忆" in client.get("/memories").text
    client.get("/lang/en?next=/memories")
    assert ">Memories<" in client.get("/memories").text
    r = client.get("/lang/zh?next=//evil.example/x", follow_redirects=False)
    assert r.headers["location"] == "/"


def test_pages_carry_no_third_party_resources(world: dict[str, Any]) -> None:
    client = login(world["base"], world["key"]["lin"])
    for route in ["/memories", f"/memories/{world['lin'].id}", "/conversations/lin-s1", "/files", "/insight?q=猫"]:
        r = client.get(route)
        assert r.status_code == 200, route
        assert not re.search(r'(src|href)="(https?:)?//', r.text), route
        assert "script-src 'self'" in r.headers["content-security-policy"]
    assert client.get("/assets/htmx.min.js").status_code == 200
    assert client.get("/assets/../../api.py").status_code == 404


def test_hostile_text_is_shown_as_text_everywhere(world: dict[str, Any]) -> None:
    mem = world["mem"]
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)> **"q"** `c`'
    m = mem.add(evil, user_id="lin", category="fact")
    mem.add_messages("lin-s2", [{"role": "user", "content": evil}], user_id="lin")
    client = login(world["base"], world["key"]["lin"])
    for route in ["/memories", f"/memories/{m.id}", f"/memories/{m.id}/row", "/conversations/lin-s2",
                  "/conversations?q=alert", "/files", "/insight?q=alert", "/memories?q=alert"]:
        r = client.get(route)
        assert r.status_code == 200, route
        assert "<script>alert" not in r.text and "<img src=x" not in r.text, route
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get(f"/memories/{m.id}").text


class _Fields(HTMLParser):
    """Form controls and the labels naming them, as a screen reader finds them."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict[str, str | None]] = []
        self.label_for: set[str] = set()
        self.in_label = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "label":
            self.in_label += 1
            if a.get("for"):
                self.label_for.add(str(a["for"]))
        elif tag in ("input", "select", "textarea") and a.get("type") not in ("hidden", "submit") \
                and "hidden" not in a:
            self.controls.append({**a, "_wrapped": "1" if self.in_label else None})

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self.in_label -= 1


def test_every_form_control_has_a_label(world: dict[str, Any]) -> None:
    client = login(world["base"], world["key"]["lin"])
    lin = world["lin"]
    for route in ["/memories?status=any", f"/memories/{lin.id}", f"/memories/{lin.id}/edit", "/conversations",
                  "/conversations/lin-s1", "/files", "/insight", "/forget", "/scope"]:
        parser = _Fields()
        parser.feed(client.get(route).text)
        for c in parser.controls:
            named = c["_wrapped"] or c.get("aria-label") or (c.get("id") in parser.label_for)
            assert named, (route, c)


def test_memlane_demo_serve_shows_the_demo_users_memories(tmp_path: Path) -> None:
    """`memlane demo --serve`: the demo's data, then `memlane serve` on it, open on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MEMLANE_EMBEDDING__PROVIDER": "hash", "PYTHONPATH": str(Path(memlane.__file__).parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "memlane", "--home", str(tmp_path / "demo"), "demo", "--serve",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        page = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/memories", follow_redirects=True, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert page is not None, proc.stderr.read().decode() if proc.poll() is not None else "no answer"
        assert page.status_code == 200 and "用户对花生过敏" in page.text
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_insight_shows_a_failing_extraction_job_with_its_error_and_next_try(mem: Memory) -> None:
    """The scripted LLM fails: the job waits with back-off, and Insight says so, with the error."""
    mem.add_messages("s-fail", [{"role": "user", "content": "我喜欢喝白茶"}], user_id="u1")
    mem.llm.enqueue(BackendError("LLM down: connection refused"))  # type: ignore[union-attr]
    [job] = [r.result for r in mem.end_session("s-fail", user_id="u1") if r.action == "extract"]
    assert job.status == "retrying"
    mem.add("用户喜欢白茶", user_id="u1", category="preference")
    app = FastAPI()
    WebUI(Fixed(mem, local_user="u1")).mount(app)
    with serve(app) as base:
        page = httpx.Client(base_url=base, follow_redirects=True).get("/insight?q=白茶")
    assert page.status_code == 200
    row = re.search(r'<tr class="job-queued">.*?</tr>', page.text, re.S)
    assert row, page.text[:2000]
    assert "LLM down: connection refused" in row.group(0) and ">1<" in row.group(0)  # attempts
    assert job.next_at is not None and job.next_at.strftime("%Y-%m-%d %H:%M:%S") in row.group(0)
    assert "<svg" in page.text and "memories" in page.text  # the context chart, block by block


def test_table_filters_sort_and_pages(world: dict[str, Any]) -> None:
    mem = world["mem"]
    for i in range(60):
        mem.add(f"note number {i:02d} about gardening", user_id="lin", category="fact", importance=0.3 + i / 200,
                pinned=i % 20 == 0)
    client = login(world["base"], world["key"]["lin"])
    rows = re.compile(r'<tr id="m-([0-9a-f]+)"')
    first = client.get("/memories?sort=content&order=asc").text
    second = client.get("/memories?sort=content&order=asc&page=2").text
    total = len(mem.list(user_id="lin", status="active"))
    assert total > 60 and len(rows.findall(first)) == 50 and len(rows.findall(second)) == total - 50
    assert first.index("note number 00") < first.index("note number 01") and "Page 1 of 2" in first
    pinned = client.get("/memories?pinned=yes").text
    assert set(rows.findall(pinned)) == {m.id for m in mem.list(user_id="lin") if m.pinned} and len(rows.findall(pinned)) >= 3
    scored = client.get("/memories?min_score=0.55&max_score=0.7").text
    shown = {m.id for m in mem.list(user_id="lin") if 0.55 <= m.score <= 0.7}
    assert set(rows.findall(scored)) == shown and shown
    cat = client.get("/memories?category=preference").text
    assert rows.findall(cat) == []


def test_a_memorys_page_says_what_an_edit_replaced_and_where_it_came_from(world: dict[str, Any]) -> None:
    mem, lin = world["mem"], world["lin"]
    client = login(world["base"], world["key"]["lin"])
    client.post(f"/memories/{lin.id}", data={"content": "林晓的猫叫橘子，四岁", "csrf": token(client)})
    page = client.get(f"/memories/{lin.id}").text
    assert f"<del><bdi>{LIN_SECRET}</bdi></del>" in page and ">Updated<" in page and ">web UI<" in page
    extracted = next(m for m in mem.list(user_id="lin") if m.source_session == "lin-s1")
    page = client.get(f"/memories/{extracted.id}").text
    assert 'href="/conversations/lin-s1"' in page and "三岁了" in page  # the turns it came from


def test_conversations_search_and_delete_with_typed_confirmation(world: dict[str, Any]) -> None:
    mem = world["mem"]
    client = login(world["base"], world["key"]["lin"])
    assert "三岁了" in client.get("/conversations?q=猫").text
    assert "三岁了" in client.get("/conversations/lin-s1").text
    r = client.post("/conversations/lin-s1/delete", data={"confirm": "yes", "csrf": token(client)})
    assert r.status_code == 422 and mem.get_turns("lin-s1", user_id="lin")
    r = client.post("/conversations/lin-s1/delete", data={"confirm": "lin-s1", "csrf": token(client)})
    assert r.status_code == 200 and "lin-s1" not in r.text.split("<main")[1].split("notice")[0]
    assert mem.get_turns("lin-s1", user_id="lin") == [] and "三岁了" not in client.get("/conversations?q=猫").text


def test_server_processes_on_one_home_share_one_secret(tmp_path: Path) -> None:
    """Started together, every process ends up with the same complete secret (a cookie signed
    by one is good at the others); a short file left by something else is replaced."""
    from concurrent.futures import ThreadPoolExecutor

    from memlane.webui.auth import SECRET_FILE, load_secret

    with ThreadPoolExecutor(8) as pool:
        secrets_seen = set(pool.map(lambda _: load_secret(tmp_path), range(32)))
    assert len(secrets_seen) == 1 and len(next(iter(secrets_seen))) == 32
    assert (tmp_path / SECRET_FILE).stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]
    (tmp_path / SECRET_FILE).write_bytes(b"short")
    assert len(load_secret(tmp_path)) == 32


def test_hostile_query_strings_and_paths_are_refused_cleanly(world: dict[str, Any]) -> None:
    client = login(world["base"], world["key"]["lin"])
    for route, allowed in [("/memories?q=%ED%A0%80", {200, 422}), ("/memories?q=" + "a" * 5000, {422}),
                           ("/memories?since=2026-13-45", {422}), ("/memories?sort=__class__", {422}),
                           ("/memories/..%2F..%2Fetc", {404, 422}), ("/memories/" + "x" * 500, {404, 422}),
                           ("/conversations/%F0%9F%98%80%00", {404, 422}), ("/files/..%2Fmemlane.db", {404, 422}),
                           ("/insight?q=%00%01", {200, 422}), ("/lang/xx", {404})]:
        r = client.get(route)
        assert r.status_code in allowed, (route, r.status_code, r.text[:300])
        assert "Traceback" not in r.text


def test_insight_replays_active_archived_deleted_from_the_audit_trail(world: dict[str, Any]) -> None:
    mem, clock = world["mem"], world["clock"]
    before = mem.stats(user_id="lin").memories_by_status.get("active", 0)
    a = mem.add("林晓周三开会", user_id="lin", category="fact")
    b = mem.add("林晓周四出差", user_id="lin", category="fact")
    clock.advance(days=2)
    mem.update(a.id, user_id="lin", status="archived")
    clock.advance(days=1)
    mem.delete(b.id, user_id="lin")
    client = login(world["base"], world["key"]["lin"])
    page = client.get("/insight").text
    chart = re.search(r"<svg[^>]*aria-label=\"Active, archived and deleted over time\".*?</svg>", page, re.S)
    assert chart, page[:1000]
    desc = re.search(r"<desc>(.*?)</desc>", chart.group(0)).group(1)  # type: ignore[union-attr]
    assert desc == f"active {before}; archived 1; deleted 1"
    assert chart.group(0).count("<polyline") == 3  # four days: a line per state


def test_an_agent_key_sees_its_users_shared_memories_read_only(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    shared = mem.add("林晓对花生过敏", user_id="lin", category="fact")
    own = mem.add("coder: 林晓用 pytest 写测试", user_id="lin", agent_id="coder", category="fact")
    keys = TableKeys()
    keys.add("key-coder", Principal("lin", "coder", key_id="k-coder"))
    app = FastAPI()
    WebUI(Fixed(mem, keys)).mount(app)
    with serve(app) as base:
        client = login(base, "key-coder")
        page = client.get("/memories?q=林晓").text
        assert shared.content in page and own.content in page
        row = re.search(rf'<tr id="m-{shared.id}".*?</tr>', page, re.S).group(0)  # type: ignore[union-attr]
        assert "shared by the user" in row and "<button" not in row and 'name="ids"' not in row
        r = client.post(f"/memories/{shared.id}/delete", data={"csrf": token(client)})
        assert r.status_code == 404 and mem.get(shared.id, user_id="lin").content == shared.content
        assert client.get(f"/memories/{own.id}").status_code == 200


ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
# what may stay in Latin letters on a Chinese page: names, file names, acronyms, the switch
ZH_LATIN_OK = {"memlane", "MEMORY", "USER", "md", "API", "LLM", "id", "Token", "token", "EN"}
RAW_VALUES = re.compile(r"\b(ADD|UPDATE|DELETE|BOOST|RESTORE|SKIP|True|False|None|build_context|extraction_jobs|"
                        r"memory_events|vector_scopes|vector_log|source_session|last_activated|heuristic|extractor)\b")


def ui_words(html: str) -> str:
    """The page's own words (user text, ids and code left out)."""
    return " ".join(PageText.of(html).ui)


@pytest.fixture
def local(make_memory: Callable[..., Memory]) -> Iterator[dict[str, Any]]:
    """The demo in the loopback user "me", one memory edited in the web UI, the UI serving it."""
    from memlane.webui.session_pages import load_demo

    mem = make_memory()
    load_demo(mem, {"user_id": "me", "agent_id": None})
    m = next(m for m in mem.list(user_id="me") if m.source_session)
    mem.update(m.id, user_id="me", content=m.content + "!", pinned=True, verified=True, actor="web",
               reason="edited in the web UI")
    app = FastAPI()
    WebUI(Fixed(mem, local_user="me")).mount(app)
    with serve(app) as base:
        yield {"mem": mem, "base": base, "m": m}


def browser_like(base: str, headers: dict[str, str] | None = None) -> httpx.Client:
    client = httpx.Client(base_url=base, follow_redirects=True, timeout=30, headers=headers or {})
    client.get("/memories")  # the loopback user's cookie
    return client


def test_engine_values_are_shown_as_words_in_both_languages(local: dict[str, Any]) -> None:
    """Categories, sources, history actions, fields, flags, job states, context blocks: labels,
    never the engine's identifiers or Python's True / False; a Chinese page has no English."""
    m = local["m"]
    for lang, headers in (("en", {"Accept-Language": "en"}), ("zh", ZH)):
        client = browser_like(local["base"], headers)
        routes = ["/memories?status=any", f"/memories/{m.id}", f"/memories/{m.id}/edit", "/conversations",
                  "/conversations?q=花生", "/conversations/demo-1", "/files", "/insight?q=晚饭吃什么", "/forget",
                  "/memories/nope", "/memories?since=bad"]
        for route in routes:
            r = client.get(route)
            words = ui_words(r.text)
            assert not RAW_VALUES.search(words), (lang, route, RAW_VALUES.search(words))
            if lang == "zh":
                latin = set(re.findall(r"[A-Za-z_]{2,}", words)) - ZH_LATIN_OK
                assert not latin, (route, latin)
        page = client.get(f"/memories/{m.id}").text
        history = page[page.index('id="hist-h"'):]
        if lang == "zh":
            assert ">修改<" in history and ">添加<" in history and "网页界面" in history
            assert "<th scope=\"row\">已置顶</th><td class=\"b\">否</td><td class=\"a\">是</td>" in history
            assert "在网页界面中编辑" in history  # the web UI's own reason, in words
        else:
            assert ">Updated<" in history and ">Added<" in history
            assert "<th scope=\"row\">pinned</th><td class=\"b\">no</td><td class=\"a\">yes</td>" in history
        table = client.get("/memories?status=any").text
        assert ('class="src">直接添加</td>' if lang == "zh" else 'class="src">added directly</td>') in table
        assert ('<option value="preference">偏好</option>' if lang == "zh" else
                '<option value="preference">preference</option>') in table
        assert ('class="cat">偏好</td>' if lang == "zh" else 'class="cat">preference</td>') in table


def test_an_unknown_engine_value_shows_as_itself_escaped() -> None:
    from memlane.webui.labels import label, shown

    assert label("zh", "category", "fact") == "事实" and label("zh", "category", "<b>x</b>") == "<b>x</b>"
    assert label("zh", "nonsense", "ADD") == "ADD"
    assert shown("en", "pinned", False) == "no" and shown("zh", "verified", True) == "是"
    assert shown("en", "content", "<i>x</i>") == "<bdi>&lt;i&gt;x&lt;/i&gt;</bdi>"
    from memlane.webui.labels import LABELS
    assert {g: set(v) for g, v in LABELS["en"].items()} == {g: set(v) for g, v in LABELS["zh"].items()}


def test_the_context_heading_is_words_not_a_function_name(local: dict[str, Any]) -> None:
    for headers, heading in (({"Accept-Language": "en"}, "What the agent is given"), (ZH, "智能体拿到的上下文")):
        page = browser_like(local["base"], headers).get("/insight?q=晚饭吃什么").text
        assert f'<h2 id="ctx-h">{heading}</h2>' in page and "build_context" not in page


def test_forget_me_says_what_it_removed_in_words_never_table_names(local: dict[str, Any]) -> None:
    for headers, words in (({"Accept-Language": "en"}, ["conversations", "history entries", "search index entries"]),
                           (ZH, ["对话", "历史记录", "搜索索引条目"])):
        client = browser_like(local["base"], headers)
        r = client.post("/forget", data={"confirm": "me", "csrf": token(client, "/forget")})
        assert r.status_code == 200
        report = r.text[r.text.index("<table"):r.text.index("</table>")]
        assert all(f'<th scope="row">{w}</th>' in report for w in words), report
        assert not re.search(r"[a-z]+_[a-z]+", report), report  # no extraction_jobs, memory_events …
        from memlane.webui.session_pages import load_demo
        load_demo(local["mem"], {"user_id": "me", "agent_id": None})  # again for the other language
    from memlane.webui.labels import removed
    assert removed("en", {"memories": 2, "vector_log": 1, "vector_scopes": 2, "some_new_table": 4}, 0) == [
        ("memories", 2), ("search index entries", 3), ("other records", 4), ("files", 0)]


def test_no_message_holds_markdown_backticks_and_the_login_page_shows_code(world: dict[str, Any]) -> None:
    for lang, messages in MESSAGES.items():
        assert not [k for k, v in messages.items() if "`" in v], lang
    for headers in ({"Accept-Language": "en"}, ZH):
        page = httpx.get(world["base"] + "/login", headers=headers).text
        assert "`" not in page and "<code>memlane keys create --user U</code>" in page


RLO = "\u202e"


def test_user_text_is_isolated_so_a_bidi_override_cannot_reorder_the_page(make_memory: Callable[..., Memory]) -> None:
    """A right-to-left override in a memory, a turn, a session id, a user id, metadata or a
    search sits inside a <bdi> (or an element with `dir`), or FSI … PDI where no markup goes."""
    user, sid = f"u{RLO}1", f"s{RLO}1"
    mem = make_memory()
    m = mem.add(f"abc{RLO}def", user_id=user, category="fact", metadata={"note": f"x{RLO}y"})
    mem.update(m.id, user_id=user, content=f"abc{RLO}xyz", metadata={"note": f"z{RLO}w"}, pinned=True)
    mem.add_messages(sid, [{"role": "user", "content": f"hello {RLO}world"}], user_id=user)
    mem.end_session(sid, user_id=user)
    app = FastAPI()
    WebUI(Fixed(mem, local_user=user)).mount(app)
    with serve(app) as base:
        client = browser_like(base, {"Accept-Language": "zh-CN"})
        tok = token(client)
        q = f"abc{RLO}"
        pages = {route: client.get(route) for route in [
            "/memories?status=any", f"/memories?q={q}", f"/memories/{m.id}", f"/memories/{m.id}/row",
            f"/memories/{m.id}/edit", f"/memories/{m.id}/confirm-delete", "/conversations", f"/conversations?q={q}",
            f"/conversations/{sid}", "/files", f"/insight?q={q}", "/forget", f"/memories?since={q}",
            f"/memories/{RLO}nope"]}
        pages["wrong confirm"] = client.post("/forget", data={"confirm": f"x{RLO}", "csrf": tok})
        pages["wrong session"] = client.post(f"/conversations/{sid}/delete", data={"confirm": "x", "csrf": tok})
        pages["preview"] = client.post("/files/import", data={"text": client.get("/files/MEMORY.md").text
                                                              + f"\n### fact\nnew {RLO}one\n", "csrf": tok})
    for route, r in pages.items():
        assert r.status_code in (200, 404, 422), (route, r.status_code)
        page = PageText.of(r.text)
        assert page.leaks == [], (route, page.leaks)
        assert RLO in r.text or r.status_code == 404, route
    content = pages[f"/memories/{m.id}"].text
    assert f'<p class="big" data-testid="memory-content" dir="auto">abc{RLO}xyz</p>' in content
    assert f"<bdi>{user}</bdi>" in content  # signed in as
    assert f'<td class="b"><bdi>{{&#34;note&#34;: &#34;x{RLO}y&#34;}}</bdi></td>' in content


def test_a_wrong_confirmation_shows_the_form_again_with_what_was_wrong(world: dict[str, Any]) -> None:
    mem = world["mem"]
    for headers, said in (({"Accept-Language": "en"}, "Nothing was forgotten"), (ZH, "没有删除任何内容")):
        client = login(world["base"], world["key"]["lin"], headers=headers)
        r = client.post("/forget", data={"confirm": "lim", "csrf": token(client, "/forget")})
        assert r.status_code == 422
        assert said in r.text and "<bdi>lin</bdi>" in r.text  # what to type
        assert '<form method="post" action="/forget">' in r.text and 'aria-invalid="true"' in r.text
        assert '<nav aria-label=' in r.text and 'href="/memories"' in r.text  # the way back
        assert mem.stats(user_id="lin").memories > 0
    for headers, said in (({"Accept-Language": "en"}, "was not deleted"), (ZH, "对话未删除")):
        client = login(world["base"], world["key"]["lin"], headers=headers)
        r = client.post("/conversations/lin-s1/delete", data={"confirm": "lin-s", "csrf": token(client)})
        assert r.status_code == 422 and said in r.text and "<bdi>lin-s1</bdi>" in r.text
        assert 'action="/conversations/lin-s1/delete"' in r.text and 'aria-invalid="true"' in r.text
        assert "三岁了" in r.text and '<nav aria-label=' in r.text  # the conversation, still there
    assert mem.get_turns("lin-s1", user_id="lin")


def test_other_errors_keep_the_layout_a_way_back_and_the_language(world: dict[str, Any]) -> None:
    client = login(world["base"], world["key"]["lin"], headers=ZH)
    csrf = token(client)
    r = client.post("/files/import", data={"text": "  ", "csrf": csrf})  # nothing pasted: the Files page again
    assert r.status_code == 422 and "请先粘贴修改后的 MEMORY.md" in r.text and 'id="import-text"' in r.text
    r = client.post("/memories/bulk", data={"action": "archive", "csrf": csrf},
                    headers={"Referer": world["base"] + "/memories?status=any"})  # nothing selected
    assert r.status_code == 422 and "请先选择 1 到 500 条记忆" in r.text
    assert '<nav aria-label="栏目">' in r.text and 'href="/memories?status=any"' in r.text  # back where it was
    r = client.get("/memories/0000000000")
    assert r.status_code == 404 and "未找到" in r.text and '<nav aria-label="栏目">' in r.text
    r = client.get("/memories?since=2026-13-45")
    assert r.status_code == 422 and "创建起始日" in r.text and "YYYY-MM-DD" in r.text
    assert not re.search(r"[A-Za-z]{3,}", ui_words(r.text).replace("memlane", "")), ui_words(r.text)


def test_a_fact_that_changed_shows_its_timeline_and_is_recorded_by_a_guarded_form(world: dict[str, Any]) -> None:
    """Issue 32 in the web UI: the memory page's "the fact changed" form (CSRF and same-site as
    every form) keeps the old fact closed at the day given and lands on the current one, whose
    page shows every version with its dates, the turns it came from and links between them;
    the old page says what replaced it; the status filter offers superseded; both languages."""
    mem, clock = world["mem"], world["clock"]
    old = mem.add("lin lives in Munich", user_id="lin", category="fact", session_id="lin-s1")
    client = login(world["base"], world["key"]["lin"])
    page = client.get(f"/memories/{old.id}").text
    assert 'data-testid="fact-changed"' in page and f'action="/memories/{old.id}/supersede"' in page
    assert 'data-testid="timeline"' not in page  # a fact that never changed has no timeline
    url = f"/memories/{old.id}/supersede"
    form = {"content": "lin lives in Berlin", "valid_from": "2026-03-05"}
    for data, headers in [(form, {}), ({**form, "csrf": "forged"}, {}),
                          ({**form, "csrf": token(client)}, {"Origin": "http://evil.example"})]:
        assert client.post(url, data=data, headers=headers, follow_redirects=False).status_code == 403
    bob = login(world["base"], world["key"]["bob"])
    assert bob.post(url, data={**form, "csrf": token(bob)}).status_code == 404
    assert mem.get(old.id, user_id="lin").status == "active"
    bad = client.post(url, data={**form, "valid_from": "5 March", "csrf": token(client)})
    assert bad.status_code == 422 and "YYYY-MM-DD" in bad.text
    early = client.post(url, data={**form, "valid_from": "2020-01-01", "csrf": token(client)})
    assert early.status_code == 422 and mem.get(old.id, user_id="lin").status == "active"

    clock.now += timedelta(days=10)
    r = client.post(url, data={**form, "csrf": token(client)}, headers={"Origin": world["base"]})
    assert r.status_code == 200
    new = mem.get(mem.get(old.id, user_id="lin").superseded_by or "", user_id="lin")
    assert r.url.path == f"/memories/{new.id}" and new.content == "lin lives in Berlin"
    assert new.valid_from is not None and new.valid_from.date().isoformat() == "2026-03-05"
    assert [e.actor for e in mem.history(old.id, user_id="lin")][-1] == "web"
    timeline = r.text[r.text.index('data-testid="timeline"'):]
    assert timeline.index("lin lives in Munich") < timeline.index("lin lives in Berlin")  # oldest first
    assert f'href="/memories/{old.id}"' in timeline and "2026-03-01 – 2026-03-05" in timeline
    assert "since 2026-03-05" in timeline and "三岁了" in timeline  # the turns the old version came from
    assert ">Fact changed<" in r.text  # the history's word for the SUPERSEDE event

    old_page = client.get(f"/memories/{old.id}").text
    assert 'data-testid="replaced-by"' in old_page and f'href="/memories/{new.id}"' in old_page
    assert 'data-testid="fact-changed"' not in old_page  # change the current version, not history
    assert "kept as history: never fades" in old_page  # the lifecycle leaves replaced facts alone
    listed = client.get("/memories", params={"status": "superseded"}).text
    assert "lin lives in Munich" in listed and "lin lives in Berlin" not in listed
    assert '<option value="superseded"' in client.get("/memories").text
    assert "lin lives in Munich" not in client.get("/memories").text  # the default shows what holds now

    zh = login(world["base"], world["key"]["lin"], headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    zh_page = zh.get(f"/memories/{new.id}").text
    assert "时间线" in zh_page and "自 2026-03-05 起" in zh_page and "事实变了" in zh_page
    assert "2026-03-01 至 2026-03-05" in zh_page and "事实变更" in zh_page
    assert "已被取代" in zh.get("/memories", params={"status": "superseded"}).text


def test_a_change_told_ahead_of_its_date_shows_as_still_holding(world: dict[str, Any]) -> None:
    """Issue 32: a change dated later than today leaves the old fact current: its page says
    until when and what follows, offers no second change of it, and the default list keeps it."""
    mem, clock = world["mem"], world["clock"]
    old = mem.add("lin lives in Munich", user_id="lin", category="fact")
    later = (clock.now + timedelta(days=30)).date()
    new = mem.supersede(old.id, "lin lives in Berlin", user_id="lin",
                        valid_from=datetime(later.year, later.month, later.day, tzinfo=UTC))
    client = login(world["base"], world["key"]["lin"])
    page = client.get(f"/memories/{old.id}").text
    assert f"This fact holds until {later.isoformat()}" in page and f'href="/memories/{new.id}"' in page
    assert 'data-testid="fact-changed"' not in page  # the change to make is the next version's
    assert "lin lives in Munich" in client.get("/memories").text


def test_a_change_the_engine_was_unsure_of_is_applied_or_dismissed_by_a_person(world: dict[str, Any]) -> None:
    """Issue 32: a memory flagged as maybe replacing another (the extractor was unsure) shows
    both on its page; "it replaces this" supersedes, "both hold" drops the flag; guarded forms."""
    mem = world["mem"]
    tea = mem.add("lin drinks tea every morning", user_id="lin")
    coffee = mem.add("lin drinks coffee every morning", user_id="lin", metadata={"may_supersede": {"ids": [tea.id]}})
    water = mem.add("lin drinks water every evening", user_id="lin", metadata={"may_supersede": {"ids": [tea.id]}})
    client = login(world["base"], world["key"]["lin"])
    page = client.get(f"/memories/{coffee.id}").text
    assert 'data-testid="may-supersede"' in page and "lin drinks tea every morning" in page
    url = f"/memories/{tea.id}/supersede"
    assert client.post(url, data={"by": coffee.id}, follow_redirects=False).status_code == 403  # no CSRF token
    r = client.post(url, data={"by": coffee.id, "csrf": token(client)}, headers={"Origin": world["base"]})
    assert r.status_code == 200 and mem.get(tea.id, user_id="lin").superseded_by == coffee.id
    assert 'data-testid="may-supersede"' not in client.get(f"/memories/{water.id}").text  # tea is history now
    other = mem.add("lin drinks juice", user_id="lin", metadata={"may_supersede": {"ids": [coffee.id]}})
    r = client.post(f"/memories/{other.id}/keep-both", data={"csrf": token(client)}, headers={"Origin": world["base"]})
    assert r.status_code == 200 and "may_supersede" not in mem.get(other.id, user_id="lin").metadata
    assert mem.get(coffee.id, user_id="lin").status == "active"
