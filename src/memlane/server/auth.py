"""Who a request is, and which scope it reads and writes: the FastAPI dependencies.

`Authorization: Bearer <key>` names a key; the key's scope is the request's, whatever ids
the request carries. An admin key acts on the scope named by the `X-Memlane-User` (and
optional `X-Memlane-Agent`) headers. A loopback server on a home where no key was ever made
runs open for one local user (`server.local_user`), without the admin routes unless it was
started with `--open-admin`; on any other bind it refuses. Once a key has been made, the
server stays keyed, also after every key is revoked (a key rotated by revoke-then-create
leaves no open window), until a person runs `memlane keys reopen`.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Annotated

import anyio
from fastapi import Depends, Request

from memlane.api import Memory
from memlane.errors import ConfigError, ValidationError
from memlane.models import Scope
from memlane.server.errors import ApiError
from memlane.server.keys import KeyStore, Principal

OPEN_KEY_ID = "open"
_KEYED_TTL = 1.0  # seconds a "no key was ever made" answer is reused: a new key closes open mode within 1 s


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
    open_admin: bool = False  # `memlane serve --open-admin`: the open-mode user may use admin routes
    keyed_recheck: float = 10.0  # seconds between reads of the key store once keyed (`keys reopen`)
    _keyed: tuple[float, bool] = field(default=(0.0, False))

    def check_startup(self, host: str) -> None:
        """Refuse a non-loopback bind without keys (the data would be open to the network)."""
        if not self.loopback and not self.keys.any_active():
            raise ConfigError(f"refusing to serve on {host} without API keys: create one with "
                              "`memlane keys create --user USER` (or bind to 127.0.0.1)")

    def open_mode(self) -> bool:
        """Loopback and no key ever made here (revoked keys count: keyed stays keyed)."""
        if not self.loopback:
            return False
        at, keyed = self._keyed
        now = time.monotonic()
        if keyed:  # for good: only `memlane keys reopen` (another process) reopens, re-read rarely
            if now - at <= self.keyed_recheck:
                return False
        elif now - at <= _KEYED_TTL:
            return True
        keyed = self.keys.any_made()
        self._keyed = (now, keyed)
        return not keyed

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
            return Principal(OPEN_KEY_ID, Scope.of(self.local_user), admin=self.open_admin)
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
    """The caller of this request (401 without a valid key, outside open mode), as the guard
    found it before reading the body."""
    found: Principal | None = getattr(request.state, "principal", None)
    if found is not None:
        return found
    gate = await get_gate(request)
    return await anyio.to_thread.run_sync(gate.principal, request.headers.get("authorization"))


async def get_scope(request: Request, principal: Annotated[Principal, Depends(get_principal)]) -> Scope:
    """The scope this request reads and writes: its key's (an admin's: X-Memlane-User/-Agent)."""
    return Gate.scope_of(principal, request.headers.get("x-memlane-user"), request.headers.get("x-memlane-agent"))


async def require_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    """An admin key (403 for a user key)."""
    if not principal.admin:
        raise ApiError(403, "Forbidden", "this route needs an admin key (`memlane keys create --admin`); "
                                         "a loopback server without keys allows it when started with "
                                         "`memlane serve --open-admin`")
    return principal


MemoryDep = Annotated[Memory, Depends(get_memory)]
ScopeDep = Annotated[Scope, Depends(get_scope)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[Principal, Depends(require_admin)]
