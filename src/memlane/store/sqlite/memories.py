"""The SQLite store's memories and episodes: rows with their full-text entries; a large
memories table's records and ranking facts read from store/memcache.py's cache."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.models import Episode, MemoryFacts, MemoryRecord, Scope
from memlane.store import lexindex, vindex
from memlane.store.fts5 import scope_token
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
from memlane.store.sqlite.text import SQLiteText
from memlane.text import index_text


class SQLiteMemories(SQLiteText):
    """Memories and episodes (their audit trail: store/shared.py)."""

    def insert_memory(self, memory: MemoryRecord) -> int:
        with self._lock:
            self._conn.execute(
                f"INSERT INTO memories({MEMORY_COLS}) VALUES ({', '.join('?' * MEMORY_FIELDS)})", memory_params(memory)
            )
            rowid = self._conn.last_insert_rowid()
            self._index("memories", rowid, memory.content)
            return rowid

    def insert_memories(self, memories: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> list[int]:
        """Insert many memories in one transaction (imports, benchmarks); returns their rowids.

        One `executemany` per table. With `vectors` (one row per memory, of the open
        embedder's width) they are stored as embedded; without, they wait for the indexer."""
        if not memories:
            return []
        vecs = None if vectors is None else checked_vectors(vectors, len(memories), self._vector_dims)
        with self.transaction():
            start = int(self._q("SELECT COALESCE(MAX(rowid), 0) FROM memories")[0][0]) + 1
            rowids = list(range(start, start + len(memories)))
            self._conn.executemany(
                f"INSERT INTO memories(rowid, {MEMORY_COLS}, embedded) VALUES (?, {', '.join('?' * MEMORY_FIELDS)}, ?)",
                [(r, *memory_params(m), int(vecs is not None)) for r, m in zip(rowids, memories, strict=True)],
            )
            self._conn.executemany(
                "INSERT INTO memories_fts(rowid, body, scope) VALUES (?, ?, ?)",
                [(r, index_text(m.content), scope_token(m.user_id, m.agent_id))
                 for r, m in zip(rowids, memories, strict=True)],
            )
            lexindex.record(self._conn, "memories", rowids, "put")
            if vecs is not None:
                # grouped by scope: vec0 keeps a chunk per user, and each insert into a cold
                # chunk walks its blob (interleaved users: ~2.5k rows/s, grouped: ~12k)
                order = sorted(range(len(memories)), key=lambda i: (memories[i].user_id, memories[i].agent_id))
                self._conn.executemany(
                    "INSERT INTO vec_memories(rowid, user_id, agent_id, embedding) VALUES (?, ?, ?, ?)",
                    [(rowids[i], memories[i].user_id, memories[i].agent_id, vecs[i].tobytes()) for i in order],
                )
                by_scope: dict[Scope, list[int]] = {}
                for r, m in zip(rowids, memories, strict=True):
                    by_scope.setdefault(Scope(user_id=m.user_id, agent_id=m.agent_id), []).append(r)
                for scope, rows in by_scope.items():
                    vindex.record(self._conn, "memories", scope, rows, "put", len(rows))
        return rowids

    def update_memory(self, memory: MemoryRecord, *, content_changed: bool) -> int:
        """Write every field of `memory`; returns its rowid. Reindexes when content changed."""
        with self._lock:
            params = memory_params(memory)
            self._conn.execute(memory_update_sql("?"), (*params[3:], memory.user_id, memory.agent_id, memory.id))
            rowid = self.memory_rowid(Scope(user_id=memory.user_id, agent_id=memory.agent_id), memory.id)
            if content_changed:
                self._index("memories", rowid, memory.content)
                self._conn.execute("UPDATE memories SET embedded = 0 WHERE rowid = ?", (rowid,))
            return rowid

    def memories_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, MemoryRecord]:
        with self._lock:  # a large table's cache may hold whole records (store/memcache.py)
            cached = self.memcache.ready()
            rows = None if cached is None else cached.record_rows(cached.scope_id(scope.user_id, scope.agent_id), rowids)
        if rows is not None:
            return {r: memory_row(row) for r, row in rows.items()}
        return self._by_rowid("memories", MEMORY_COLS, memory_row, scope, rowids)

    def memory_facts(self, scope: Scope, rowids: Sequence[int]) -> MemoryFacts:
        with self._lock:  # a large table's cache holds them (store/memcache.py)
            cached = self.memcache.ready()
            if cached is not None:
                return cached.facts(cached.scope_id(scope.user_id, scope.agent_id), rowids)
        found = self._by_rowid(  # the columns of the memories_scope index (m007)
            "memories", "score, last_activated, expires_at, created_at, status, category, source_session",
            tuple, scope, rowids, covered=True)
        return MemoryFacts.of_rows([(r, *found[r][:-1]) for r in dict.fromkeys(rowids) if r in found])

    def insert_episode(self, episode: Episode) -> int:
        with self._lock:
            self._conn.execute(f"INSERT INTO episodes({EPISODE_COLS}) VALUES ({', '.join('?' * 13)})",
                               episode_params(episode))
            rowid = self._conn.last_insert_rowid()
            self._index("episodes", rowid, episode_text(episode.summary, episode.goal, episode.outcome,
                                                        episode.entities))
            return rowid

    def list_episodes(self, scope: Scope, *, session_id: str | None = None, limit: int = 100) -> list[Episode]:
        sql = f"SELECT {EPISODE_COLS} FROM episodes WHERE user_id = ? AND agent_id = ?"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        sql += " ORDER BY ended_at DESC LIMIT ?"
        params.append(limit)
        return [episode_row(r) for r in self._q(sql, params)]

    def episodes_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Episode]:
        return self._by_rowid("episodes", EPISODE_COLS, episode_row, scope, rowids)

