"""Shared by the web UI tests: a real uvicorn on 127.0.0.1 serving the UI over an engine,
and an httpx client that signs in the way a browser does (login form, cookie, CSRF token)."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import uvicorn
from fastapi import FastAPI

from memlane.webui import Principal

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
