"""The web UI inside `memlane serve`: the engine and the API keys are the server's own (made
in its lifespan and kept in `app.state`), so a browser session is bound by exactly the key
table, the open-mode rule and the engine that the REST API uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.requests import Request

from memlane.errors import MemlaneError
from memlane.webui.app import Denied, WebUI, loopback
from memlane.webui.auth import Principal

if TYPE_CHECKING:
    from memlane.api import Memory
    from memlane.server.auth import Gate
    from memlane.server.keys import Principal as KeyPrincipal


def _principal(p: KeyPrincipal) -> Principal:
    if p.admin or p.scope is None:
        return Principal(None, admin=True, key_id=p.key_id)
    return Principal(p.scope.user_id, p.scope.agent_id or None, key_id=p.key_id)


class ServerKeys:
    """The server's key table as the UI asks it: by key at sign-in, by id on every request
    (a revoked key ends its browser sessions at once)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def authenticate(self, key: str) -> Principal | None:
        found = self.gate.keys.authenticate(key)
        return None if found is None else _principal(found)

    def lookup(self, key_id: str) -> Principal | None:
        try:
            info = self.gate.keys.get(key_id)
        except MemlaneError:  # unknown id (or not an id at all)
            return None
        if info.revoked_at is not None:
            return None
        if info.admin:
            return Principal(None, admin=True, key_id=info.id)
        return Principal(info.user_id, info.agent_id or None, key_id=info.id)


class AppState:
    """A `Backend` reading the server's app state on each request (503 while it starts or stops)."""

    def _gate(self, request: Request) -> Gate:
        gate: Gate | None = getattr(request.app.state, "gate", None)
        if gate is None:
            raise Denied(503, "the server is starting or stopping; try again in a moment")
        return gate

    def memory(self, request: Request) -> Memory:
        mem: Memory | None = getattr(request.app.state, "memory", None)
        if mem is None:
            raise Denied(503, "the server is starting or stopping; try again in a moment")
        return mem

    def keys(self, request: Request) -> ServerKeys:
        return ServerKeys(self._gate(request))

    def open_user(self, request: Request) -> str | None:
        gate = self._gate(request)
        return gate.local_user if gate.open_mode() and loopback(request) else None


def mount(app: FastAPI) -> WebUI:
    """Add the web UI to `memlane serve`'s app (`create_app` calls this)."""
    ui = WebUI(AppState())
    ui.mount(app)
    return ui
