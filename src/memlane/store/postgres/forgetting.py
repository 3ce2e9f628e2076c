"""Forgetting in the PostgreSQL store: rows with their vectors (a row's full text is part of
it), the audit trail's contents and cached vectors. No cache files to remove; deleted rows'
old versions stay in the table files until VACUUM reclaims them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memlane.models import Corpus, Scope, Turn
from memlane.store.pgschema import CORPORA, SCOPE_TABLES
from memlane.store.postgres.base import esc
from memlane.store.postgres.vectors import PostgresVectors
from memlane.store.rows import TURN_COLS, turn_row
from memlane.store.shared import scope_where


class PostgresForgetting(PostgresVectors):
    """Deleting rows, scopes and what they leave behind."""

    def _drop_rows(self, corpus: Corpus, rowids: Sequence[int]) -> int:
        """Delete rows of a corpus with their vectors, in the caller's transaction."""
        ids = [int(r) for r in rowids]
        if not ids:
            return 0
        if self._vector_dims is not None:
            self._x(f"DELETE FROM vec_{corpus} WHERE rowid = ANY(%s)", (ids,))
            if corpus == "turns":
                self._drop_passages(ids)
        self._x(f"DELETE FROM {corpus} WHERE rowid = ANY(%s)", (ids,))
        return len(ids)

    def _drop_row(self, corpus: Corpus, rowid: int) -> None:
        self._drop_rows(corpus, [rowid])

    def _drop_session_rows(self, corpus: Corpus, scope: Scope, session_id: str) -> int:
        return self._drop_rows(corpus, [r for r, _ in self._rowids_of(
            corpus, scope.user_id, scope.agent_id, " AND session_id = %s", (session_id,))])

    def _forgotten(self) -> None:
        """Nothing to scrub after the commit here (see `forget_files`)."""

    def _rowids_of(self, corpus: str, user_id: str, agent_id: str | None, extra: str = "",
                   extra_params: Sequence[Any] = ()) -> list[tuple[int, str]]:
        where, params = scope_where(user_id, agent_id, "%s")
        return [(int(r[0]), str(r[1])) for r in self._q(f"SELECT rowid, agent_id FROM {corpus} WHERE {where}{extra}",
                                                        (*params, *extra_params))]

    def turns_by_id(self, scope: Scope, turn_ids: Sequence[str]) -> list[Turn]:
        return [turn_row(r) for r in self._q(
            f"SELECT {TURN_COLS} FROM turns WHERE user_id = %s AND agent_id = %s AND id = ANY(%s) "
            "ORDER BY session_id, seq", (scope.user_id, scope.agent_id, [esc(t) for t in turn_ids]))]

    def scope_texts(self, user_id: str, agent_id: str | None) -> list[str]:
        where, params = scope_where(user_id, agent_id, "%s")
        texts = [str(r[0]) for table, col in (("memories", "content"), ("turns", "content"), ("episodes", "summary"))
                 for r in self._q(f"SELECT {col} FROM {table} WHERE {where}", params)]
        for before, after in self._q(f"SELECT before, after FROM memory_events WHERE {where}", params):
            for snap in (before, after):
                try:
                    content = json.loads(snap).get("content") if snap else None
                except (ValueError, AttributeError):
                    content = None
                if isinstance(content, str):
                    texts.append(content)
        return list(dict.fromkeys(texts))

    def delete_turns(self, scope: Scope, turn_ids: Sequence[str]) -> list[tuple[str, int]]:
        with self.transaction():
            self._lock_scope(scope)
            found = self._q("SELECT rowid, session_id, seq FROM turns WHERE user_id = %s AND agent_id = %s "
                            "AND id = ANY(%s)", (scope.user_id, scope.agent_id, [esc(t) for t in turn_ids]))
            self._drop_rows("turns", [int(r[0]) for r in found])
        return [(str(r[1]), int(r[2])) for r in found]

    def delete_scope(self, user_id: str, agent_id: str | None) -> tuple[dict[str, int], list[Scope]]:
        with self.transaction():
            counts: dict[str, int] = {}
            agents: set[str] = set()
            where, params = scope_where(user_id, agent_id, "%s")
            for corpus in CORPORA:
                rows = self._rowids_of(corpus, user_id, agent_id)
                agents.update(a for _, a in rows)
                for a in {a for _, a in rows}:
                    self._lock_scope((user_id, a))
                counts[corpus] = self._drop_rows(corpus, [r for r, _ in rows])  # type: ignore[arg-type]
            if self._vector_dims is not None:
                for corpus in CORPORA:
                    self._x(f"DELETE FROM vec_{corpus} WHERE {where}", params)
            for table in SCOPE_TABLES:
                counts[table] = self._x(f"DELETE FROM {table} WHERE {where}", params)
            lease = f"extract-lock:{user_id}\x1f" + ("" if agent_id is None else agent_id)
            if agent_id is None:
                self._x("DELETE FROM meta WHERE left(key, char_length(%s)) = %s", (lease, lease))
            else:
                self._x("DELETE FROM meta WHERE key = %s", (lease,))
        return counts, [Scope(user_id=user_id, agent_id=a) for a in sorted(agents)]

    def cache_forget(self, hashes: Sequence[str]) -> int:
        if not hashes:
            return 0
        return self._x("DELETE FROM embedding_cache WHERE hash = ANY(%s)", (list(dict.fromkeys(hashes)),))

    def forget_files(self, corpora: Sequence[Corpus], scopes: Sequence[Scope] = ()) -> None:
        """No cache files on PostgreSQL. Deleted rows' old versions stay in the table files
        until VACUUM reclaims them (autovacuum, or the operator's VACUUM)."""

    def mark_forgetting(self) -> None:
        """Nothing to scrub after the commit here (see `forget_files`)."""

    def delete_attachments(self, scope: Scope, attachment_ids: Sequence[str]) -> int:
        return self._x("DELETE FROM attachments WHERE user_id = %s AND agent_id = %s AND id = ANY(%s)",
                       (scope.user_id, scope.agent_id, [esc(i) for i in dict.fromkeys(attachment_ids)]))

