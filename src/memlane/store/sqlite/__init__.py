"""The default store: one SQLite file through apsw, FTS5 for words, sqlite-vec for vectors.

`SQLiteStore` is built up by job, each a module of this package over the one before:
base.py (the connection, transactions, migrations, caches) → vectors.py → text.py (full
text, a row's index entries) → turns.py, memories.py, forgetting.py, copying.py (`memlane
copy`'s rows in and out); what both stores share is store/shared.py, and the API keys'
table is keys.py. Here: the extraction queue, persisted events, and what the store holds
as a whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memlane.models import ExtractionJob, Scope
from memlane.store.rows import JOB_COLS, job_row, to_json, ts
from memlane.store.sqlite.copying import SQLiteCopying
from memlane.store.sqlite.forgetting import SQLiteForgetting
from memlane.store.sqlite.memories import SQLiteMemories
from memlane.store.sqlite.turns import SQLiteTurns


class SQLiteStore(SQLiteTurns, SQLiteMemories, SQLiteForgetting, SQLiteCopying):
    """The `Store` protocol (and `memlane copy`'s `Copying`) over one SQLite file."""

    def jobs(self, *, scope: Scope | None = None, due_before: datetime | None = None,
             status: Sequence[str] = ("queued",), limit: int = 100) -> list[ExtractionJob]:
        where = [f"status IN ({','.join('?' * len(status))})"]
        params: list[Any] = list(status)
        if scope is not None:
            where += ["user_id = ?", "agent_id = ?"]
            params += [scope.user_id, scope.agent_id]
        if due_before is not None:
            where.append("next_at <= ?")
            params.append(ts(due_before))
        rows = self._q(f"SELECT {JOB_COLS} FROM extraction_jobs WHERE {' AND '.join(where)} ORDER BY next_at, id LIMIT ?",
                       (*params, limit))
        return [job_row(r) for r in rows]

    def claim_job(self, job_id: int) -> bool:
        """Mark a queued job running; False when another worker got it first."""
        return self._x("UPDATE extraction_jobs SET status = 'running' WHERE id = ? AND status = 'queued'", (job_id,)) > 0

    def add_bus_event(self, scope: Scope, type_: str, subject: str, source: str, payload: dict[str, Any],
                      at: datetime, status: str, actions: list[dict[str, Any]]) -> int:
        with self._lock:
            self._conn.execute(
                "INSERT INTO events(user_id, agent_id, type, subject, source, payload, at, status, actions) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (scope.user_id, scope.agent_id, type_, subject, source, to_json(payload), ts(at), status,
                 to_json(actions)))
            return int(self._conn.last_insert_rowid())

    def scopes(self) -> list[Scope]:
        rows = self._q(
            "SELECT user_id, agent_id FROM memories UNION SELECT user_id, agent_id FROM turns "
            "UNION SELECT user_id, agent_id FROM extraction_jobs"
        )
        return [Scope(user_id=r[0], agent_id=r[1]) for r in rows]

    def raw_count(self, table: str, where: str = "1", params: Sequence[Any] = ()) -> int:
        """Row count of any table; for audits and tests of what is left behind."""
        return int(self._q(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)[0][0])


__all__ = ["SQLiteStore"]
