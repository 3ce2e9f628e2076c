"""Who a request is, and which scope it reads and writes: the FastAPI dependencies.

`Authorization: Bearer <key>` names a key; the key's scope is the request's, whatever ids
the request carries. An admin key acts on the scope named by the `X-Memlane-User` (and
optional `X-Memlane-Agent`) headers. With no active key at all and a loopback bind, the
server runs open for one local user (`server.local_user`); on any other bind it refuses.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from memlane.api import Memory
from memlane.errors import ConfigError, ValidationError
from memlane.models import Scope
from memlane.server.errors import ApiError
from memlane.server.keys import KeyStore, Principal

OPEN_KEY_ID = "open"
_ACTIVE_TTL = 1.0  # seconds a "some key exists" answer is reused: a new key closes open mode within 1 s


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class Gate:
    """The server's auth state: its keys, its bind, the open-mode user."""

    keys: KeyStore
    loopback: bool
    local_user: str
    _active: tuple[float, bool] = field(default=(0.0, False))

    def check_startup(self, host: str) -> None:
        """Refuse a non-loopback bind without keys (the data would be open to the network)."""
        if not self.loopback and not self.keys.any_active():
            raise ConfigError(f"refusing to serve on {host} without API keys: create one with "
                              "`memlane keys create --user USER` (or bind to 127.0.0.1)")

    def open_mode(self) -> bool:
        if not self.loopback:
            return False
        at, active = self._active
        now = time.monotonic()
        if now - at > _ACTIVE_TTL:
            active = self.keys.any_active()
            self._active = (now, active)
        return not active

    def principal(self, authorization: str | None) -> Principal:
        """The caller, from the Authorization header; ApiError 401 when it names no active key."""
        challenge = {"WWW-Authenticate": 'Bearer realm="memlane"'}
        if authorization:
            scheme, _, key = authorization.partition(" ")
            if scheme.lower() != "bearer" or not key.strip():
                raise ApiError(401, "Unauthorized", "the Authorization header must be `Bearer <key>`", challenge)
            found = self.keys.authenticate(key.strip())
            if found is None:
                raise ApiError(401, "Unauthorized", "unknown or revoked API key", challenge)
            return found
        if self.open_mode():
            return Principal(OPEN_KEY_ID, Scope.of(self.local_user), admin=True)  # the one local operator
        raise ApiError(401, "Unauthorized", "an API key is required: send `Authorization: Bearer <key>` "
                                            "(`memlane keys create --user USER` makes one)", challenge)

    @staticmethod
    def scope_of(principal: Principal, user: str | None, agent: str | None) -> Scope:
        """A key's own scope; for an admin key, the scope its request names."""
        if principal.scope is not None:
            return principal.scope
        if not user:
            raise ValidationError("X-Memlane-User", "an admin key names the scope it acts on with the "
                                                    "X-Memlane-User header (and X-Memlane-Agent)")
        return Scope.of(user, agent or None)


async def get_memory(request: Request) -> Memory:
    """The process's one engine (503 while the server starts or stops)."""
    mem: Memory | None = getattr(request.app.state, "memory", None)
    if mem is None:
        raise ApiError(503, "Unavailable", "the engine is not running (the server is starting or stopping)",
                       {"Retry-After": "1"})
    return mem


async def get_gate(request: Request) -> Gate:
    gate: Gate | None = getattr(request.app.state, "gate", None)
    if gate is None:
        raise ApiError(503, "Unavailable", "the server is starting or stopping", {"Retry-After": "1"})
    return gate


async def get_principal(request: Request) -> Principal:
    """The caller of this request (401 without a valid key, outside open mode)."""
    return (await get_gate(request)).principal(request.headers.get("authorization"))


async def get_scope(request: Request, principal: Annotated[Principal, Depends(get_principal)]) -> Scope:
    """The scope this request reads and writes: its key's (an admin's: X-Memlane-User/-Agent)."""
    return Gate.scope_of(principal, request.headers.get("x-memlane-user"), request.headers.get("x-memlane-agent"))


async def require_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    """An admin key (403 for a user key)."""
    if not principal.admin:
        raise ApiError(403, "Forbidden", "this route needs an admin key (`memlane keys create --admin`)")
    return principal


MemoryDep = Annotated[Memory, Depends(get_memory)]
ScopeDep = Annotated[Scope, Depends(get_scope)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(require_admin)]
