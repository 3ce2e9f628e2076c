"""The PostgreSQL store's turns: each one stored with its tsvector (a turn's own words, its
tool calls', and its neighbours' as context), read by session, time, rowid or place. A
batch of turns costs a few round trips, not one per turn."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memlane.models import Scope, Turn, TurnPlace
from memlane.store import pgtext
from memlane.store.postgres.base import esc
from memlane.store.postgres.text import PostgresText
from memlane.store.rows import TURN_COLS, to_json, turn_params, turn_row, turn_search_text


class PostgresTurns(PostgresText):
    """Turns (sessions: store/shared.py)."""

    def insert_turn(self, turn: Turn, import_key: str | None = None) -> int:
        return self.insert_turns([turn], [import_key])[0]

    def insert_turns(self, turns: Sequence[Turn], import_keys: Sequence[str | None] | None = None) -> list[int]:
        """Insert turns in order: their rowids drawn in one statement, the rows sent in one
        pipeline (executemany), so a batch costs a few round trips, not one per turn."""
        if not turns:
            return []
        docs = [pgtext.document(pgtext.body(turn_search_text(t.content, t.tool_calls, t.role, t.name)))
                for t in turns]
        with self._atomic():
            for t in turns:
                self._lock_scope((t.user_id, t.agent_id))
            rowids = [int(r[0]) for r in self._many(
                f"INSERT INTO turns({TURN_COLS}, import_key, fts, fts_len) VALUES ({', '.join(['%s'] * 14)}, "
                "%s::tsvector, %s) RETURNING rowid",
                [(*turn_params(t, import_keys[i] if import_keys else None), d[0], d[1])
                 for i, (t, d) in enumerate(zip(turns, docs, strict=True))], returning=True)]
        # what set_turn_context needs of them, which never changes: saves a read per ingested turn
        if len(self._turn_facts) > 10_000:
            self._turn_facts.clear()
        for r, t in zip(rowids, turns, strict=True):
            self._turn_facts[r] = (to_json(t.tool_calls) if t.tool_calls else None, t.role, t.name)
        return rowids

    def turn_import_keys(self, scope: Scope, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        rows = self._q("SELECT import_key FROM turns WHERE user_id = %s AND agent_id = %s AND import_key = ANY(%s)",
                       (scope.user_id, scope.agent_id, [esc(k) for k in keys]))
        return {r[0] for r in rows}

    def set_turn_context(self, rowid: int, body: str, context: str) -> None:
        """Index a turn: `body` (its content) with its tool calls' words, and `context`."""
        self.set_turn_contexts([(rowid, body, context)])

    def set_turn_contexts(self, items: Sequence[tuple[int, str, str]]) -> None:
        """`set_turn_context` of each (rowid, body, context), the updates in one pipeline."""
        if not items:
            return
        known = self._turn_facts
        missing = [int(r) for r, _, _ in items if r not in known]
        fetched = {int(r[0]): (r[1], r[2], r[3]) for r in self._q(
            "SELECT rowid, tool_calls, role, name FROM turns WHERE rowid = ANY(%s)", (missing,))} if missing else {}
        rows = []
        for rowid, body, context in items:
            fact = known.get(rowid) or fetched.get(rowid)
            if fact is not None and (fact[0] or fact[1] == "tool"):
                body = turn_search_text(body, json.loads(fact[0]) if fact[0] else None, fact[1], fact[2])
            indexed = pgtext.body(context)
            vec, n = pgtext.document(pgtext.body(body), indexed)
            rows.append((vec, n, indexed, rowid))
        self._many("UPDATE turns SET fts = %s::tsvector, fts_len = %s, fts_context = %s WHERE rowid = %s", rows)

    def turn_windows(self, scope: Scope, rowids: Sequence[int], width: int) -> list[TurnPlace]:
        """Where the given turns and their neighbours within `width` (same session) sit; the
        given turns also with their length, whether they end in a question, time, speaker and role."""
        if not rowids:
            return []
        out: dict[int, TurnPlace] = {}
        for r in self._q(
            "SELECT n.rowid, n.session_id, n.seq, CASE WHEN n.rowid = c.rowid THEN char_length(n.content) END, "
            "CASE WHEN n.rowid = c.rowid THEN right(rtrim(n.content), 1) IN ('?', '？') END, "
            "CASE WHEN n.rowid = c.rowid THEN n.created_at END, "
            "CASE WHEN n.rowid = c.rowid THEN n.name END, CASE WHEN n.rowid = c.rowid THEN n.role END "
            # each candidate's neighbours through the (scope, session, seq) key, in a subquery the
            # planner cannot flatten (LIMIT): before the table's first ANALYZE it planned the
            # plain join as a scan of the scope per candidate (5 s for 5k candidates, not 40 ms)
            "FROM unnest(%s::bigint[]) AS w(rowid) JOIN turns c ON c.rowid = w.rowid "
            "CROSS JOIN LATERAL (SELECT * FROM turns t WHERE t.user_id = c.user_id AND t.agent_id = c.agent_id "
            "AND t.session_id = c.session_id AND t.seq BETWEEN c.seq - %s AND c.seq + %s ORDER BY t.seq LIMIT %s) n "
            "WHERE c.user_id = %s AND c.agent_id = %s",
            ([int(x) for x in rowids], width, width, 2 * width + 1, scope.user_id, scope.agent_id),
        ):
            if r[3] is not None or int(r[0]) not in out:
                out[int(r[0])] = TurnPlace(int(r[0]), r[1], int(r[2]), r[3] or 0, bool(r[4]),
                                           None if r[5] is None else float(r[5]), r[6], r[7])
        return list(out.values())

    def turns_by_rowid(self, scope: Scope, rowids: Sequence[int]) -> dict[int, Turn]:
        return {int(r[-1]): turn_row(r) for r in self._by_rowid("turns", TURN_COLS, scope, rowids)}

    def set_turns_archived(self, scope: Scope, turn_ids: Sequence[str], state: str) -> None:
        with self.transaction():
            self._lock_scope(scope)
            self._x("UPDATE turns SET archived = %s WHERE user_id = %s AND agent_id = %s AND id = ANY(%s)",
                    (state, scope.user_id, scope.agent_id, [esc(t) for t in turn_ids]))

