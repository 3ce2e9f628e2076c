"""Shared by the web UI tests: a real uvicorn on 127.0.0.1 serving the UI over an engine,
and an httpx client that signs in the way a browser does (login form, cookie, CSRF token)."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

import httpx
import uvicorn
from fastapi import FastAPI

from memlane import Memory
from memlane.webui import Fixed, Principal, WebUI

START_SECONDS = 20.0  # a bound on the server's start, so a broken app fails instead of hanging


@dataclass
class TableKeys:
    """API keys held in a dict (the server's key table stands behind the same two calls)."""

    keys: dict[str, Principal] = field(default_factory=dict)
    revoked: set[str] = field(default_factory=set)

    def add(self, key: str, principal: Principal) -> str:
        self.keys[key] = principal
        return key

    def authenticate(self, key: str) -> Principal | None:
        p = self.keys.get(key)
        return None if p is None or p.key_id in self.revoked else p

    def lookup(self, key_id: str) -> Principal | None:
        return next((p for p in self.keys.values() if p.key_id == key_id and key_id not in self.revoked), None)


@contextlib.contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """The app on 127.0.0.1 (a free port) in a thread; yields its base URL, stops on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_SECONDS)


CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page has no CSRF token"
    return found.group(1)


def login(base: str, key: str, **kw: object) -> httpx.Client:
    """A client signed in with `key` (through the login form, as a browser does)."""
    client = httpx.Client(base_url=base, follow_redirects=True, timeout=30, **kw)  # type: ignore[arg-type]
    form = client.get("/login")
    r = client.post("/login", data={"key": key, "csrf": csrf_of(form.text), "next": "/memories"})
    assert r.status_code == 200, r.text[:500]
    return client


def token(client: httpx.Client, page: str = "/memories") -> str:
    return csrf_of(client.get(page).text)


@dataclass
class Site:
    """A running UI: its URL, a key per name (lin, bob, admin), their ids, and how to revoke one."""

    base: str
    key: dict[str, str]
    key_id: dict[str, str]
    revoke: Callable[[str], None]


@contextlib.contextmanager
def ui_site(mem: Memory, kind: str) -> Iterator[Site]:
    """The UI over `mem` with keys for lin, bob and an admin: `kind` "server" is `memlane
    serve`'s own app (its key table, its auth); "fixed" a bare app with a dict of keys."""
    if kind == "fixed":
        table = TableKeys()
        for name, user in (("lin", "lin"), ("bob", "bob"), ("admin", None)):
            table.add(f"key-{name}", Principal(user, admin=user is None, key_id=f"k-{name}"))
        app = FastAPI()
        WebUI(Fixed(mem, table)).mount(app)
        with serve(app) as base:
            yield Site(base, {n: f"key-{n}" for n in ("lin", "bob", "admin")},
                       {n: f"k-{n}" for n in ("lin", "bob", "admin")}, lambda n: table.revoked.add(f"k-{n}"))
        return
    from memlane.server import create_app
    from memlane.server.keys import KeyStore

    store = KeyStore(mem.config.db_path)
    made = {name: store.create(user_id=user, admin=user is None) for name, user in
            (("lin", "lin"), ("bob", "bob"), ("admin", None))}

    def revoke(name: str) -> None:
        store.revoke(made[name][1].id)

    try:
        with serve(create_app(mem.config, memory=mem, host="127.0.0.1", mcp=False, scheduler=False)) as base:
            yield Site(base, {n: k for n, (k, _) in made.items()}, {n: i.id for n, (_, i) in made.items()}, revoke)
    finally:
        store.close()


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
ISOLATING = {"bdi", "textarea"}  # and any element with a `dir` attribute
VERBATIM = {"code", "pre"}  # ids, commands, prompts: not the UI's words, though not isolated


class PageText(HTMLParser):
    """A page's text as a person reads it, split in two: the UI's own words, and the text
    inside isolating elements (<bdi>, an element with `dir`, a textarea…: user text). Also
    every place a `marker` character sits outside an isolate (text or attribute)."""

    def __init__(self, marker: str = "\u202e") -> None:
        super().__init__(convert_charrefs=True)
        self.marker = marker
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, isolates, verbatim)
        self.ui: list[str] = []
        self.user: list[str] = []
        self.leaks: list[str] = []

    def isolated(self) -> bool:
        return any(iso for _, iso, _ in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name, value in a.items():
            if value and self.marker in value and name not in ("href", "action", "hx-get", "hx-post"):
                # an attribute takes no markup: FSI … PDI around the text, or `dir` on a control
                wrapped = "\u2068" in value and value.index("\u2068") < value.index(self.marker) < value.rindex("\u2069")
                if not wrapped and not (tag in ("input", "textarea") and name == "value" and "dir" in a):
                    self.leaks.append(f"<{tag} {name}={value!r}>")
        if tag not in VOID:
            self.stack.append((tag, tag in ISOLATING or "dir" in a, tag in VERBATIM))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        tags = [t for t, _, _ in self.stack]
        if "script" in tags or "style" in tags:
            return
        inside = self.isolated()
        if "title" in tags:  # no markup there: FSI … PDI
            if self.marker in data and not ("\u2068" in data and "\u2069" in data):
                self.leaks.append(data)
            return
        if self.marker in data and not inside:
            self.leaks.append(data)
        (self.user if inside or any(v for _, _, v in self.stack) else self.ui).append(data)

    @classmethod
    def of(cls, html: str, marker: str = "\u202e") -> PageText:
        page = cls(marker)
        page.feed(html)
        page.close()
        return page
