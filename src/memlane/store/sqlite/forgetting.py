"""Forgetting in the SQLite store: rows with their full-text and vector entries, the audit
trail's contents, cached vectors, and the cache files beside the database (forget.py decides
what to forget, store/erase.py removes it from the file)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memlane.models import Corpus, Scope, Turn
from memlane.store import erase, lexindex, vindex
from memlane.store.rows import TURN_COLS, turn_row
from memlane.store.shared import scope_where
from memlane.store.sqlite.base import FTS
from memlane.store.sqlite.text import SQLiteText


class SQLiteForgetting(SQLiteText):
    """Deleting rows, scopes and what they leave behind."""

    def _drop_rows(self, corpus: Corpus, user_id: str, rows: Sequence[tuple[int, str]]) -> int:
        """Delete rows [(rowid, agent_id)] of the user with their full-text and vector entries,
        in the caller's transaction; returns how many."""
        ids = [r for r, _ in rows]
        if not ids:
            return 0
        self._conn.executemany(f"DELETE FROM {FTS[corpus]} WHERE rowid = ?", [(r,) for r in ids])
        lexindex.record(self._conn, corpus, ids, "del")
        if self._vector_dims is not None:
            gone: dict[str, list[int]] = {}
            for r, agent in rows:
                self._conn.execute(f"DELETE FROM vec_{corpus} WHERE rowid = ?", (r,))
                if self._conn.changes():
                    gone.setdefault(agent, []).append(r)
                if corpus == "turns":
                    gone.setdefault(agent, []).extend(self._drop_passages(r))
            for agent, rs in gone.items():
                vindex.record(self._conn, corpus, Scope(user_id=user_id, agent_id=agent), rs, "del", -len(rs))
        self._conn.executemany(f"DELETE FROM {corpus} WHERE rowid = ?", [(r,) for r in ids])
        return len(ids)

    def _drop_row(self, corpus: Corpus, rowid: int) -> None:
        self._unindex(corpus, rowid)
        self._conn.execute(f"DELETE FROM {corpus} WHERE rowid = ?", (rowid,))

    def _drop_session_rows(self, corpus: Corpus, scope: Scope, session_id: str) -> int:
        return self._drop_rows(corpus, scope.user_id, erase.rowids_of(
            self._conn, corpus, scope.user_id, scope.agent_id, " AND session_id = ?", (session_id,)))

    def _forgotten(self) -> None:
        erase.mark_pending(self._conn)

    def turns_by_id(self, scope: Scope, turn_ids: Sequence[str]) -> list[Turn]:
        """The scope's turns with these ids (those that exist), in session order."""
        return [turn_row(r) for r in self._q(
            f"SELECT {TURN_COLS}, rowid FROM turns WHERE user_id = ? AND agent_id = ? "
            "AND id IN (SELECT value FROM json_each(?)) ORDER BY session_id, seq",
            (scope.user_id, scope.agent_id, json.dumps(list(turn_ids))))]

    def scope_texts(self, user_id: str, agent_id: str | None) -> list[str]:
        """Every text of a scope (every scope of the user when `agent_id` is None) that may
        have an embedding-cache entry: memories, turns, episodes, and the audit's contents."""
        where, params = scope_where(user_id, agent_id, "?")
        texts = [str(r[0]) for table, col in (("memories", "content"), ("turns", "content"), ("episodes", "summary"))
                 for r in self._q(f"SELECT {col} FROM {table} WHERE {where}", params)]
        texts += [str(r[0]) for r in self._q(
            "SELECT json_extract(snap, '$.content') FROM (SELECT before AS snap FROM memory_events WHERE "
            f"{where} UNION ALL SELECT after FROM memory_events WHERE {where}) WHERE json_valid(snap) "
            "AND json_type(snap, '$.content') = 'text'", (*params, *params))]
        return list(dict.fromkeys(texts))

    def delete_turns(self, scope: Scope, turn_ids: Sequence[str]) -> list[tuple[str, int]]:
        """Delete the scope's turns with these ids, their full-text and vector entries;
        returns (session_id, seq) of each one deleted."""
        with self.transaction():
            found = self._q(
                "SELECT rowid, session_id, seq FROM turns WHERE user_id = ? AND agent_id = ? "
                "AND id IN (SELECT value FROM json_each(?))",
                (scope.user_id, scope.agent_id, json.dumps(list(turn_ids))))
            self._drop_rows("turns", scope.user_id, [(int(r[0]), scope.agent_id) for r in found])
            erase.mark_pending(self._conn)
        return [(str(r[1]), int(r[2])) for r in found]

    def delete_scope(self, user_id: str, agent_id: str | None) -> tuple[dict[str, int], list[Scope]]:
        """Delete every row of a scope (every scope of the user when `agent_id` is None), in
        every table that has a user_id column; returns (rows per table, the scopes found)."""
        with self.transaction():
            counts: dict[str, int] = {}
            agents: set[str] = set()
            for corpus in FTS:
                rows = erase.rowids_of(self._conn, corpus, user_id, agent_id)
                agents.update(a for _, a in rows)
                counts[corpus] = self._drop_rows(corpus, user_id, rows)
            where, params = scope_where(user_id, agent_id, "?")
            agents.update(str(r[0]) for r in self._q(f"SELECT agent_id FROM vector_scopes WHERE {where}", params))
            counts.update(erase.delete_scope_rows(self._conn, user_id, agent_id))
            erase.mark_pending(self._conn)
        return counts, [Scope(user_id=user_id, agent_id=a) for a in sorted(agents)]

    def cache_forget(self, hashes: Sequence[str]) -> int:
        """Drop embedding-cache entries of these content hashes, for every model."""
        with self.transaction():
            # the key is (model, hash): each model's entry is one seek (by hash alone, a scan)
            models = [r[0] for r in self._q(
                "WITH RECURSIVE m(model) AS (SELECT MIN(model) FROM embedding_cache UNION ALL "
                "SELECT (SELECT MIN(model) FROM embedding_cache WHERE model > m.model) FROM m "
                "WHERE m.model IS NOT NULL) SELECT model FROM m WHERE model IS NOT NULL")]
            return sum(self._x("DELETE FROM embedding_cache WHERE model = ? AND hash = ?", (model, h))
                       for model in models for h in dict.fromkeys(hashes))

    def forget_files(self, corpora: Sequence[Corpus], scopes: Sequence[Scope] = ()) -> None:
        """After a forgetting commit: remove cache files that may hold its texts (and the
        vector caches of `scopes`), temp files of dead writers, and the old pages in the WAL."""
        with self._lock:
            erase.unlink_caches(self.path.parent, self.path.stem, corpora)
            self._ann.forget([(s.user_id, s.agent_id) for s in scopes])
            with self.transaction():
                if "turns" in corpora and self._secure_delete:
                    erase.optimize_turns(self._conn)
                erase.done_pending(self._conn)
            if self._depth == 0:
                erase.checkpoint(self._conn, self._busy_timeout_ms)

    def mark_forgetting(self) -> None:
        """Count a forgetting call in the caller's transaction, until its `forget_files`."""
        with self.transaction():
            erase.mark_pending(self._conn)

    def delete_attachments(self, scope: Scope, attachment_ids: Sequence[str]) -> int:
        with self.transaction():
            n = sum(self._x("DELETE FROM attachments WHERE user_id = ? AND agent_id = ? AND id = ?",
                            (scope.user_id, scope.agent_id, i)) for i in dict.fromkeys(attachment_ids))
            if n:
                erase.mark_pending(self._conn)  # the bytes leave the file at the next checkpoint
        return n

