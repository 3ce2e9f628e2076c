"""API keys: created once and shown once, stored as SHA-256 hashes, each bound to one scope.

A key reads `ml_<id>_<secret>`: `<id>` names it in `memlane keys list` / `revoke`, the secret
is 32 random bytes. Keys live in the `api_keys` table of the configured database (SQLite's
migration m012, PostgreSQL's m004), so every `memlane serve` process on one home, or on any
host sharing one PostgreSQL database, sees a revocation on its next request.
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
from memlane.config import Config
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
    """The `api_keys` table of one SQLite home, or of a PostgreSQL database (`database_url`),
    on its own connection (thread-safe)."""

    @classmethod
    def open(cls, config: Config) -> KeyStore:
        """The key table of the configured store (opening the store creates or migrates it)."""
        url = config.store.database_url if config.store.backend == "postgres" else ""
        return cls(config.db_path, busy_timeout_ms=config.store.busy_timeout_ms, database_url=url,
                   connect_timeout=config.store.connect_timeout_seconds)

    def __init__(self, db_path: Path, *, busy_timeout_ms: int = 30_000, database_url: str = "",
                 connect_timeout: float = 5.0) -> None:
        self.path = db_path
        self._lock = threading.Lock()
        self._url = database_url
        self._pg: Any = None
        if database_url:
            from memlane.store.postgres import PostgresStore, redact

            PostgresStore(database_url, connect_timeout=connect_timeout, pool_size=1).close()  # migrates
            self.where, self._timeout = redact(database_url), connect_timeout
            return
        try:
            # a PostgreSQL home may not exist yet: nothing else of memlane writes to its directory
            db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = apsw.Connection(str(db_path))
            self._conn.set_busy_timeout(busy_timeout_ms)
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except (apsw.Error, OSError) as exc:
            raise BackendError(f"cannot open the key table in {db_path}: {exc}") from exc
        if "api_keys" not in tables and not tables:
            # a home whose database does not exist yet: created here, with the schema that holds them
            from memlane.store.sqlite import SQLiteStore

            SQLiteStore(db_path).close()
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "api_keys" not in tables:
            raise BackendError(f"{db_path} has no api_keys table: open the home once with this memlane "
                               "version (any `memlane` command migrates it), then retry")

    def close(self) -> None:
        with self._lock:
            if self._url:
                if self._pg is not None:
                    self._pg.close()
                    self._pg = None
            else:
                self._conn.close()

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._url:
            return self._pg_q(sql, params)
        with self._lock:
            try:
                return list(self._conn.execute(sql, params))
            except apsw.Error as exc:
                raise BackendError(f"{self.path}: reading API keys failed ({type(exc).__name__}: {exc})") from exc

    def _pg_q(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """The statement on PostgreSQL (`?` as `%s`), on one connection made again after a failure."""
        import psycopg

        with self._lock:
            try:
                if self._pg is None or self._pg.closed:
                    self._pg = psycopg.connect(self._url, autocommit=True,
                                               connect_timeout=max(1, round(self._timeout)))
                cur = self._pg.execute(sql.replace("?", "%s"), params)
                return list(cur.fetchall()) if cur.description else []
            except psycopg.Error as exc:
                if self._pg is not None:
                    self._pg.close()
                    self._pg = None
                raise BackendError(f"{self.where}: reading API keys failed ({type(exc).__name__}: "
                                   f"{str(exc).strip()}); check that PostgreSQL runs, then retry") from exc

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

    def any_made(self) -> bool:
        """Whether a key was ever made here (a revoked one too): a keyed server stays keyed."""
        return bool(self._q("SELECT 1 FROM api_keys LIMIT 1"))

    def reopen(self) -> int:
        """Forget every revoked key, so a loopback server runs open again (`memlane keys
        reopen`); refused while a key is active. Returns how many were forgotten."""
        if self.any_active():
            raise ValidationError("keys", "a key is still active: revoke every key first "
                                          "(`memlane keys list`, `memlane keys revoke ID`)")
        gone = len(self._q("SELECT id FROM api_keys"))
        self._q("DELETE FROM api_keys WHERE revoked_at IS NOT NULL")
        return gone

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
