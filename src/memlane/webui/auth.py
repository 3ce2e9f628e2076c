"""Who is looking: an API key exchanged for a signed cookie session, and CSRF tokens.

The cookie holds no key, only the key's id in the server's key store, the scope chosen (an
admin key may pick a user) and a random nonce, signed with HMAC-SHA256. Every request asks
the key store again whether the key is still valid, so revoking a key ends its web sessions
at once; the scope comes from the key, never from the cookie, except the user an admin
picked. CSRF: every state-changing request carries HMAC(secret, "csrf" | nonce) in a header
or a form field (the double-submit pattern, bound to the session), and a cross-site Origin
is refused before that.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from memlane import validate

COOKIE = "memlane_session"
LOGIN_COOKIE = "memlane_login"  # the nonce a login form's CSRF token is bound to
SECRET_FILE = "webui.secret"


@dataclass(frozen=True)
class Principal:
    """What a key may see: one scope, or any user's for an admin key."""

    user_id: str | None  # None for an admin key: it picks a user
    agent_id: str | None = None
    admin: bool = False
    key_id: str = ""  # the key store's id; "" for the loopback-open local user


class KeyStore(Protocol):
    """The server's API keys as the UI needs them (`memlane.server` provides one)."""

    def authenticate(self, key: str) -> Principal | None:
        """The principal of a valid key, None for an unknown or revoked one."""

    def lookup(self, key_id: str) -> Principal | None:
        """The principal of a key id that is still valid, None once revoked."""


@dataclass(frozen=True)
class WebSession:
    """A signed-in browser: the key's principal and the scope it is looking at."""

    principal: Principal
    user_id: str
    agent_id: str | None
    nonce: str

    @property
    def admin(self) -> bool:
        return self.principal.admin


def load_secret(home: Path) -> bytes:
    """The signing secret, shared by every server process on one home: written whole to a
    temporary file, then linked into place (atomic, and only once: a second process reads
    the first one's), so no crash leaves a short secret behind. 0600."""
    path = home / SECRET_FILE
    try:
        data = path.read_bytes()
        if len(data) >= 32:
            return data
        path.unlink()  # not one this code wrote: replace it
    except FileNotFoundError:
        pass
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):  # another process was first: theirs stands
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_bytes()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """Signs and checks session cookies and CSRF tokens with one secret."""

    def __init__(self, secret: bytes, *, max_age: int) -> None:
        if len(secret) < 16:
            raise ValueError("the web UI's secret must be at least 16 bytes")
        self.secret = secret
        self.max_age = max_age

    def _mac(self, purpose: str, data: str) -> str:
        return _b64(hmac.new(self.secret, f"{purpose}|{data}".encode(), hashlib.sha256).digest())

    def issue(self, principal: Principal, user_id: str, agent_id: str | None) -> str:
        body = _b64(json.dumps({"k": principal.key_id, "u": user_id, "a": agent_id or "",
                                "n": secrets.token_hex(16), "e": int(time.time()) + self.max_age},
                               separators=(",", ":")).encode())
        return f"{body}.{self._mac('session', body)}"

    def read(self, cookie: str | None) -> dict[str, object] | None:
        """The cookie's payload when its signature holds and it has not expired."""
        if not cookie or len(cookie) > 2048 or cookie.count(".") != 1:
            return None
        body, mac = cookie.split(".")
        if not hmac.compare_digest(mac, self._mac("session", body)):
            return None
        try:
            payload = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(payload, dict) or not isinstance(payload.get("e"), int) or payload["e"] < time.time():
            return None
        return payload

    def csrf(self, nonce: str) -> str:
        return self._mac("csrf", nonce)

    def check_csrf(self, nonce: str, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(str(token), self.csrf(nonce))


def resolve(signer: Signer, keys: KeyStore | None, cookie: str | None, *,
            open_user: str | None = None) -> WebSession | None:
    """The session a cookie stands for, with the key's current principal; None when the
    cookie is forged or stale or its key was revoked. `open_user`: the loopback-open mode's
    one local user, whose cookie carries no key id."""
    payload = signer.read(cookie)
    if payload is None:
        return None
    key_id, user, agent, nonce = (payload.get(k) for k in ("k", "u", "a", "n"))
    if not all(isinstance(x, str) for x in (key_id, user, agent, nonce)):
        return None
    assert isinstance(key_id, str) and isinstance(user, str) and isinstance(agent, str) and isinstance(nonce, str)
    if key_id == "":
        principal: Principal | None = Principal(user_id=open_user) if open_user else None
    else:
        principal = keys.lookup(key_id) if keys is not None else None
    if principal is None:
        return None
    return bind(principal, user, agent or None, nonce)


def bind(principal: Principal, user: str, agent: str | None, nonce: str) -> WebSession | None:
    """The scope a principal may look at: its own always; an admin's pick otherwise."""
    if principal.admin:
        if user == "":  # signed in, no user picked yet
            return WebSession(principal, "", None, nonce)
        try:
            validate.ident("user_id", user)
            validate.optional_ident("agent_id", agent)
        except ValueError:
            return None
        return WebSession(principal, user, agent, nonce)
    if principal.user_id is None:
        return None
    return WebSession(principal, principal.user_id, principal.agent_id, nonce)
