"""The PostgreSQL store's memories and episodes: rows with their tsvectors, inserted in
pipelines; a memory's vector with it when one is given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.models import Episode, MemoryFacts, MemoryRecord, Scope
from memlane.store import pgtext
from memlane.store.postgres.text import PostgresText
from memlane.store.rows import (
    EPISODE_COLS,
    MEMORY_COLS,
    MEMORY_FIELDS,
    episode_params,
    episode_row,
    episode_text,
    memory_params,
    memory_row,
)
from memlane.store.shared import checked_vectors, memory_update_sql


class PostgresMemories(PostgresText):
    """Memories and episodes (their audit trail: store/shared.py)."""

    def insert_memory(self, memory: MemoryRecord) -> int:
        return self.insert_memories([memory])[0]

    def insert_memories(self, memories: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> list[int]:
        """Insert many memories in one transaction; with `vectors` they are stored as embedded."""
        if not memories:
            return []
        vecs = None if vectors is None else checked_vectors(vectors, len(memories), self._vector_dims)
        docs = [pgtext.document(pgtext.body(m.content)) for m in memories]
        with self.transaction():
            for m in memories:
                self._lock_scope((m.user_id, m.agent_id))
            ids = self._q("SELECT nextval(pg_get_serial_sequence('memories', 'rowid')) FROM generate_series(1, %s)",
                          (len(memories),))
            rowids = [int(r[0]) for r in ids]
            rows = [(r, *memory_params(m), int(vecs is not None), d[0], d[1])
                    for r, m, d in zip(rowids, memories, docs, strict=True)]
            if len(rows) >= self._tuning.copy_rows:  # one round trip: ~2× the rows/s of the pipeline (issue 34)
                self._copy("memories", ("rowid", *MEMORY_COLS.split(", "), "embedded", "fts", "fts_len"), rows)
            else:
                self._many(f"INSERT INTO memories(rowid, {MEMORY_COLS}, embedded, fts, fts_len) "
                           f"VALUES (%s, {', '.join(['%s'] * MEMORY_FIELDS)}, %s, %s::tsvector, %s)", rows)
            if vecs is not None:
                self._insert_vectors("memories", rowids, [(m.user_id, m.agent_id) for m in memories], vecs)
        return rowids

    def update_memory(self, memory: MemoryRecord, *, content_changed: bool) -> int:
        scope = Scope(user_id=memory.user_id, agent_id=memory.agent_id)
        with self.transaction():
            self._lock_scope(scope)
            params = memory_params(memory)
            self._x(memory_update_sql("%s"), (*params[3:], memory.user_id, memory.agent_id, memory.id))
            rowid = self.memory_rowid(scope, memory.id)
            if content_changed and rowid >= 0:
                self._index("memories", rowid, memory.content)
                self._x("UPDATE memories SET embedded = 0 WHERE rowid = %s", (rowid,))
        return rowid

    def memories_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, MemoryRecord]:
        return {int(r[-1]): memory_row(r) for r in self._by_rowid("memories", MEMORY_COLS, scope, rowids)}

    def memory_facts(self, scope: Scope, rowids: Sequence[int]) -> MemoryFacts:
        found = {int(r[-1]): r[:-1] for r in self._by_rowid(
            "memories", "score, last_activated, expires_at, created_at, status, category, source_session", scope,
            rowids)}
        return MemoryFacts.of_rows([(r, *found[r]) for r in dict.fromkeys(rowids) if r in found])

    def insert_episode(self, episode: Episode) -> int:
        vec, n = pgtext.document(pgtext.body(episode_text(episode.summary, episode.goal, episode.outcome,
                                                          episode.entities)))
        rows = self._q(
            f"INSERT INTO episodes({EPISODE_COLS}, fts, fts_len) VALUES ({', '.join(['%s'] * 13)}, %s::tsvector, %s) "
            "RETURNING rowid", (*episode_params(episode), vec, n))
        return int(rows[0][0])

    def list_episodes(self, scope: Scope, *, session_id: str | None = None, limit: int = 100) -> list[Episode]:
        sql = f"SELECT {EPISODE_COLS} FROM episodes WHERE user_id = %s AND agent_id = %s"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            params.append(session_id)
        params.append(limit)
        return [episode_row(r) for r in self._q(sql + " ORDER BY ended_at DESC, rowid LIMIT %s", params)]

    def episodes_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Episode]:
        return {int(r[-1]): episode_row(r) for r in self._by_rowid("episodes", EPISODE_COLS, scope, rowids)}

