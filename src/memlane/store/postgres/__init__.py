"""The PostgreSQL + pgvector store: the `Store` protocol for many users and many processes.

`PostgresStore` is built up by job, each a module of this package over the one before:
base.py (the pool, transactions and scope locks, migrations) → vectors.py → text.py (full
text) → turns.py, memories.py, forgetting.py, copying.py (`memlane copy`'s rows in and
out); what both stores share is store/shared.py, and the API keys' table is keys.py. Here:
the extraction queue, which any number of workers drain (`FOR UPDATE SKIP LOCKED`),
persisted events, and what the store holds as a whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memlane.models import ExtractionJob, Scope
from memlane.store.pgschema import CORPORA
from memlane.store.postgres.base import redact
from memlane.store.postgres.copying import PostgresCopying
from memlane.store.postgres.forgetting import PostgresForgetting
from memlane.store.postgres.memories import PostgresMemories
from memlane.store.postgres.turns import PostgresTurns
from memlane.store.rows import JOB_COLS, job_row, to_json, ts


class PostgresStore(PostgresTurns, PostgresMemories, PostgresForgetting, PostgresCopying):
    """The `Store` protocol (and `memlane copy`'s `Copying`) over one PostgreSQL database."""

    def jobs(self, *, scope: Scope | None = None, due_before: datetime | None = None,
             status: Sequence[str] = ("queued",), limit: int = 100) -> list[ExtractionJob]:
        """Jobs by status, oldest due first. Due queued jobs another worker is claiming right
        now (its row locked) are skipped: `FOR UPDATE SKIP LOCKED` lets any number of workers
        list and claim them without waiting on each other."""
        where = ["status = ANY(%s)"]
        params: list[Any] = [list(status)]
        if scope is not None:
            self._lock_scope(scope)
            where += ["user_id = %s", "agent_id = %s"]
            params += [scope.user_id, scope.agent_id]
        if due_before is not None:
            where.append("next_at <= %s")
            params.append(ts(due_before))
        lock = " FOR UPDATE SKIP LOCKED" if due_before is not None else ""
        rows = self._q(f"SELECT {JOB_COLS} FROM extraction_jobs WHERE {' AND '.join(where)} "
                       f"ORDER BY next_at, id LIMIT %s{lock}", (*params, limit))
        return [job_row(r) for r in rows]

    def claim_job(self, job_id: int) -> bool:
        """Mark a queued job running; False when another worker has it or is claiming it
        (its row locked: skipped, not waited for)."""
        return self._x(
            "UPDATE extraction_jobs SET status = 'running' WHERE id = (SELECT id FROM extraction_jobs "
            "WHERE id = %s AND status = 'queued' FOR UPDATE SKIP LOCKED)", (job_id,)) > 0

    def add_bus_event(self, scope: Scope, type_: str, subject: str, source: str, payload: dict[str, Any],
                      at: datetime, status: str, actions: list[dict[str, Any]]) -> int:
        rows = self._q("INSERT INTO events(user_id, agent_id, type, subject, source, payload, at, status, actions) "
                       "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                       (scope.user_id, scope.agent_id, type_, subject, source, to_json(payload), ts(at), status,
                        to_json(actions)))
        return int(rows[0][0])

    def scopes(self) -> list[Scope]:
        rows = self._q("SELECT user_id, agent_id FROM memories UNION SELECT user_id, agent_id FROM turns "
                       "UNION SELECT user_id, agent_id FROM extraction_jobs ORDER BY 1, 2")
        return [Scope(user_id=r[0], agent_id=r[1]) for r in rows]

    def raw_count(self, table: str, where: str = "1", params: Sequence[Any] = ()) -> int:
        """Row count of any table; `where` in SQLite's notation (`?` placeholders, `1`). A
        corpus's full-text entry is part of its row here: `memories_fts` counts `memories`."""
        table = table.removesuffix("_fts") if table.removesuffix("_fts") in CORPORA else table
        cond = "TRUE" if where.strip() == "1" else where.replace("?", "%s")
        return int(self._q(f"SELECT COUNT(*) FROM {table} WHERE {cond}", params)[0][0])


__all__ = ["PostgresStore", "redact"]
