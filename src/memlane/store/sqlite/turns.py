"""The SQLite store's turns: each one stored with its full-text entry (a turn's own words,
its tool calls', and its neighbours' as context), read by session, time, rowid or place."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memlane.models import Scope, Turn, TurnPlace
from memlane.store.rows import TURN_COLS, turn_params, turn_row, turn_search_text
from memlane.store.shared import chunks
from memlane.store.sqlite.text import SQLiteText


class SQLiteTurns(SQLiteText):
    """Turns (sessions: store/shared.py)."""

    def insert_turn(self, turn: Turn, import_key: str | None = None) -> int:
        with self._lock:
            self._conn.execute(f"INSERT INTO turns({TURN_COLS}, import_key) VALUES ({', '.join('?' * 14)})",
                               turn_params(turn, import_key))
            rowid = self._conn.last_insert_rowid()
            self._index("turns", rowid, turn_search_text(turn.content, turn.tool_calls, turn.role, turn.name), "")
            return rowid

    def insert_turns(self, turns: Sequence[Turn], import_keys: Sequence[str | None] | None = None) -> list[int]:
        """`insert_turn` of each, in order (in the caller's transaction): [rowid]."""
        return [self.insert_turn(t, import_keys[i] if import_keys else None) for i, t in enumerate(turns)]

    def turn_import_keys(self, scope: Scope, keys: Sequence[str]) -> set[str]:
        """Which of these import keys (see `insert_turn`) the scope's turns already hold."""
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            rows = self._q(
                f"SELECT import_key FROM turns WHERE user_id = ? AND agent_id = ? "
                f"AND import_key IN ({', '.join('?' * len(chunk))})",
                (scope.user_id, scope.agent_id, *chunk),
            )
            found.update(r[0] for r in rows)
        return found

    def set_turn_context(self, rowid: int, body: str, context: str) -> None:
        """Index a turn: `body` (its content) with its tool calls' words, and `context`."""
        with self._lock:
            row = self._q("SELECT tool_calls, role, name FROM turns WHERE rowid = ?", (rowid,))
            if row and (row[0][0] or row[0][1] == "tool"):
                body = turn_search_text(body, json.loads(row[0][0]) if row[0][0] else None, row[0][1], row[0][2])
            self._index("turns", rowid, body, context)

    def set_turn_contexts(self, items: Sequence[tuple[int, str, str]]) -> None:
        """`set_turn_context` of each (rowid, body, context)."""
        for rowid, body, context in items:
            self.set_turn_context(rowid, body, context)

    def turn_windows(self, scope: Scope, rowids: Sequence[int], width: int) -> list[TurnPlace]:
        """Where the given turns and their neighbours within `width` (same session) sit; the
        given turns also with their length, whether they end in a question, their time,
        speaker and role.
        One query: neighbours come from the (scope, session, seq) index alone."""
        out: dict[int, TurnPlace] = {}
        for chunk in chunks(list(rowids), 500):
            marks = ",".join("?" * len(chunk))
            for r in self._q(
                "SELECT n.rowid, n.session_id, n.seq, CASE WHEN n.rowid = c.rowid THEN length(n.content) END, "
                "CASE WHEN n.rowid = c.rowid THEN substr(rtrim(n.content), -1) IN ('?', '？') END, "
                "CASE WHEN n.rowid = c.rowid THEN n.created_at END, "
                "CASE WHEN n.rowid = c.rowid THEN n.name END, CASE WHEN n.rowid = c.rowid THEN n.role END "
                "FROM turns c JOIN turns n ON n.user_id = c.user_id "
                "AND n.agent_id = c.agent_id AND n.session_id = c.session_id "
                "AND n.seq BETWEEN c.seq - ? AND c.seq + ? "
                f"WHERE +c.user_id = ? AND +c.agent_id = ? AND c.rowid IN ({marks})",
                (width, width, scope.user_id, scope.agent_id, *chunk),
            ):
                if r[3] is not None or int(r[0]) not in out:  # a given turn's own row has its facts
                    out[int(r[0])] = TurnPlace(int(r[0]), r[1], int(r[2]), r[3] or 0, bool(r[4]),
                                               None if r[5] is None else float(r[5]), r[6], r[7])
        return list(out.values())

    def turns_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Turn]:
        return self._by_rowid("turns", TURN_COLS, turn_row, scope, rowids)

    def set_turns_archived(self, scope: Scope, turn_ids: Sequence[str], state: str) -> None:
        with self.transaction():
            for tid in turn_ids:
                self._conn.execute(
                    "UPDATE turns SET archived = ? WHERE user_id = ? AND agent_id = ? AND id = ?",
                    (state, scope.user_id, scope.agent_id, tid),
                )

