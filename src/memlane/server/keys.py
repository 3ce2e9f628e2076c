"""API keys: created once and shown once, stored as SHA-256 hashes, each bound to one scope.

A key reads `ml_<id>_<secret>`: `<id>` names it in `memlane keys list` / `revoke`, the secret
is 32 random bytes. Keys live in the `api_keys` table of the home's database (migration
m012), so every `memlane serve` process on one home sees a revocation on its next request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw

from memlane import validate
from memlane.errors import BackendError, NotFound, ValidationError
from memlane.models import Scope

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


class KeyStore:
    """The `api_keys` table of one SQLite home, on its own connection (thread-safe)."""

    def __init__(self, db_path: Path, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = db_path
        try:
            # a PostgreSQL home may not exist yet: nothing else of memlane writes to its directory
            db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = apsw.Connection(str(db_path))
            self._conn.set_busy_timeout(busy_timeout_ms)
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except (apsw.Error, OSError) as exc:
            raise BackendError(f"cannot open the key table in {db_path}: {exc}") from exc
        if "api_keys" not in tables and not tables:
            # a PostgreSQL home (store.database_url) keeps its keys in the home's SQLite file:
            # created here, with the schema that holds them
            from memlane.store.sqlite import SQLiteStore

            SQLiteStore(db_path).close()
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "api_keys" not in tables:
            raise BackendError(f"{db_path} has no api_keys table: open the home once with this memlane "
                               "version (any `memlane` command migrates it), then retry")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, params))
            except apsw.Error as exc:
                raise BackendError(f"{self.path}: reading API keys failed ({type(exc).__name__}: {exc})") from exc

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
        now = time.time()
        self._q("INSERT INTO api_keys(id, hash, user_id, agent_id, admin, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key_id, _hash(key), scope.user_id if scope else None, scope.agent_id if scope else "",
                 int(admin), name, now))
        return key, self.get(key_id)

    def get(self, key_id: str) -> KeyInfo:
        rows = self._q("SELECT id, user_id, agent_id, admin, name, created_at, revoked_at FROM api_keys WHERE id = ?",
                       (validate.ident("key_id", key_id),))
        if not rows:
            raise NotFound(f"no API key {key_id!r}; `memlane keys list` shows the ids")
        return self._info(rows[0])

    @staticmethod
    def _info(row: tuple[Any, ...]) -> KeyInfo:
        kid, uid, aid, admin, name, created, revoked = row
        return KeyInfo(kid, uid, aid or "", bool(admin), name, _when(created) or datetime.now(UTC), _when(revoked))

    def list(self, *, include_revoked: bool = False) -> list[KeyInfo]:
        sql = "SELECT id, user_id, agent_id, admin, name, created_at, revoked_at FROM api_keys"
        if not include_revoked:
            sql += " WHERE revoked_at IS NULL"
        return [self._info(r) for r in self._q(sql + " ORDER BY created_at")]

    def revoke(self, key_id: str) -> KeyInfo:
        info = self.get(key_id)
        if info.revoked_at is None:
            self._q("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id))
        return self.get(key_id)

    def any_active(self) -> bool:
        return bool(self._q("SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1"))

    def authenticate(self, key: str) -> Principal | None:
        """The principal of an active key, or None (unknown, malformed or revoked)."""
        if not key.startswith(PREFIX) or len(key) > MAX_KEY_CHARS:
            return None
        digest = _hash(key)
        rows = self._q("SELECT id, hash, user_id, agent_id, admin FROM api_keys WHERE hash = ? AND revoked_at IS NULL",
                       (digest,))
        if not rows or not hmac.compare_digest(rows[0][1], digest):
            return None
        kid, _, uid, aid, admin = rows[0]
        if admin:
            return Principal(kid, None, admin=True)
        return Principal(kid, Scope(user_id=uid, agent_id=aid or ""))
