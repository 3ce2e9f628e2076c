"""API keys: created once and shown once, stored as SHA-256 hashes, each bound to one scope.

A key reads `ml_<id>_<secret>`: `<id>` names it in `memlane keys list` / `revoke`, the secret
is 32 random bytes. Keys live in the `api_keys` table of the configured database (SQLite's
migration m012, PostgreSQL's m004; memlane.store.KeyTable), so every `memlane serve` process
on one home, or on any host sharing one PostgreSQL database, sees a revocation on its next
request. This module holds the server's side: making, hashing, checking and scoping keys.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlane import validate
from memlane.config import Config
from memlane.errors import NotFound, ValidationError
from memlane.models import Scope
from memlane.store import KeyRow, KeyTable, open_key_table, open_keys

PREFIX = "ml_"
MAX_KEY_CHARS = 200  # a real key is 3 + 12 + 1 + 43 characters; longer input is not looked up


@dataclass(frozen=True)
class Principal:
    """Who a request is: a key bound to one scope, an admin key, or the open local user."""

    key_id: str
    scope: Scope | None  # None for an admin key: the scope comes with each request
    admin: bool = False


@dataclass(frozen=True)
class KeyInfo:
    id: str
    user_id: str | None
    agent_id: str
    admin: bool
    name: str
    created_at: datetime
    revoked_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "user_id": self.user_id, "agent_id": self.agent_id or None, "admin": self.admin,
                "name": self.name, "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _when(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, UTC)


def _info(row: KeyRow) -> KeyInfo:
    return KeyInfo(row.id, row.user_id, row.agent_id, row.admin, row.name, _when(row.created_at) or datetime.now(UTC),
                   _when(row.revoked_at))


class KeyStore:
    """The server's API keys: made, listed, revoked and checked here; kept by the configured
    store (`memlane.store.KeyTable`), which sees only their hashes."""

    @classmethod
    def open(cls, config: Config) -> KeyStore:
        """The key table of the configured store (opening the store creates or migrates it)."""
        return cls(table=open_keys(config))

    def __init__(self, db_path: Path | None = None, *, busy_timeout_ms: int = 30_000, database_url: str = "",
                 connect_timeout: float = 5.0, table: KeyTable | None = None) -> None:
        if table is None:
            if db_path is None:
                raise ValueError("KeyStore needs a database path or a key table")
            table = open_key_table(db_path, busy_timeout_ms=busy_timeout_ms, database_url=database_url,
                                   connect_timeout=connect_timeout)
        self._table = table

    def close(self) -> None:
        self._table.close()

    def create(self, *, user_id: str | None = None, agent_id: str | None = None, admin: bool = False,
               name: str = "") -> tuple[str, KeyInfo]:
        """A new key (returned once, in clear) bound to the scope, or an admin key."""
        if admin:
            if user_id is not None or agent_id:
                raise ValidationError("admin", "an admin key acts on any scope; give no user or agent with it")
            scope = None
        else:
            scope = Scope.of(user_id, agent_id)
        validate.text("name", name, 200, required=False, controls=True)
        key_id = secrets.token_hex(6)
        key = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        self._table.add_key(KeyRow(key_id, _hash(key), scope.user_id if scope else None,
                                   scope.agent_id if scope else "", admin, name, time.time()))
        return key, self.get(key_id)

    def get(self, key_id: str) -> KeyInfo:
        row = self._table.get_key(validate.ident("key_id", key_id))
        if row is None:
            raise NotFound(f"no API key {key_id!r}; `memlane keys list` shows the ids")
        return _info(row)

    def list(self, *, include_revoked: bool = False) -> list[KeyInfo]:
        return [_info(r) for r in self._table.list_keys(include_revoked=include_revoked)]

    def revoke(self, key_id: str) -> KeyInfo:
        info = self.get(key_id)
        if info.revoked_at is None:
            self._table.revoke_key(key_id, time.time())
        return self.get(key_id)

    def any_active(self) -> bool:
        return self._table.has_keys(active=True)

    def any_made(self) -> bool:
        """Whether a key was ever made here (a revoked one too): a keyed server stays keyed."""
        return self._table.has_keys(active=False)

    def reopen(self) -> int:
        """Forget every revoked key, so a loopback server runs open again (`memlane keys
        reopen`); refused while a key is active. Returns how many were forgotten."""
        if self.any_active():
            raise ValidationError("keys", "a key is still active: revoke every key first "
                                          "(`memlane keys list`, `memlane keys revoke ID`)")
        return self._table.forget_revoked_keys()

    def authenticate(self, key: str) -> Principal | None:
        """The principal of an active key, or None (unknown, malformed or revoked)."""
        if not key.startswith(PREFIX) or len(key) > MAX_KEY_CHARS:
            return None
        digest = _hash(key)
        row = self._table.key_by_hash(digest)
        if row is None or not hmac.compare_digest(row.hash, digest):
            return None
        if row.admin:
            return Principal(row.id, None, admin=True)
        return Principal(row.id, Scope(user_id=row.user_id or "", agent_id=row.agent_id))
