"""API keys as the store keeps them: the `api_keys` table (SQLite's m012, PostgreSQL's m004).

`KeyTable` is what the server's key logic (memlane.server.keys: making, hashing, checking
and scoping keys) needs of a backend; `KeySQL` is its SQL, the same on both backends, over
a backend's `_rows`. Each backend keeps the table on a connection of its own
(store/sqlite/keys.py, store/postgres/keys.py), and `memlane.store.open_key_table` picks one.
Only a key's SHA-256 is stored.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class KeyRow:
    """One row of `api_keys`; times are epoch seconds, `agent_id` is "" for none."""

    id: str
    hash: str
    user_id: str | None
    agent_id: str
    admin: bool
    name: str
    created_at: float
    revoked_at: float | None = None


class KeyTable(Protocol):
    """The server's API keys in the configured database (thread-safe)."""

    def close(self) -> None: ...
    def add_key(self, row: KeyRow) -> None: ...
    def get_key(self, key_id: str) -> KeyRow | None: ...
    # the active key with this hash, if any
    def key_by_hash(self, digest: str) -> KeyRow | None: ...
    def list_keys(self, *, include_revoked: bool = False) -> list[KeyRow]: ...
    def revoke_key(self, key_id: str, at: float) -> None: ...
    # whether any key (an active one, with `active`) is in the table
    def has_keys(self, *, active: bool) -> bool: ...
    # delete the revoked keys; returns how many there were
    def forget_revoked_keys(self) -> int: ...


_COLS = "id, hash, user_id, agent_id, admin, name, created_at, revoked_at"


def _key(row: Sequence[Any]) -> KeyRow:
    kid, digest, uid, aid, admin, name, created, revoked = row
    return KeyRow(kid, digest, uid, aid or "", bool(admin), name, float(created),
                  None if revoked is None else float(revoked))


class KeySQL(ABC):
    """`KeyTable`'s statements; a backend gives its placeholder and runs them (`_rows`)."""

    _mark: str

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a write)."""

    def add_key(self, row: KeyRow) -> None:
        m = self._mark
        self._rows(f"INSERT INTO api_keys(id, hash, user_id, agent_id, admin, name, created_at) "
                   f"VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m})",
                   (row.id, row.hash, row.user_id, row.agent_id, int(row.admin), row.name, row.created_at))

    def get_key(self, key_id: str) -> KeyRow | None:
        rows = self._rows(f"SELECT {_COLS} FROM api_keys WHERE id = {self._mark}", (key_id,))
        return _key(rows[0]) if rows else None

    def key_by_hash(self, digest: str) -> KeyRow | None:
        rows = self._rows(f"SELECT {_COLS} FROM api_keys WHERE hash = {self._mark} AND revoked_at IS NULL",
                          (digest,))
        return _key(rows[0]) if rows else None

    def list_keys(self, *, include_revoked: bool = False) -> list[KeyRow]:
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        return [_key(r) for r in self._rows(f"SELECT {_COLS} FROM api_keys{where} ORDER BY created_at")]

    def revoke_key(self, key_id: str, at: float) -> None:
        m = self._mark
        self._rows(f"UPDATE api_keys SET revoked_at = {m} WHERE id = {m} AND revoked_at IS NULL", (at, key_id))

    def has_keys(self, *, active: bool) -> bool:
        where = " WHERE revoked_at IS NULL" if active else ""
        return bool(self._rows(f"SELECT 1 FROM api_keys{where} LIMIT 1"))

    def forget_revoked_keys(self) -> int:
        gone = int(self._rows("SELECT count(*) FROM api_keys WHERE revoked_at IS NOT NULL")[0][0])
        self._rows("DELETE FROM api_keys WHERE revoked_at IS NOT NULL")
        return gone
