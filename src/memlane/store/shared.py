"""What both stores do alike: the statements whose SQL is the same on SQLite and on
PostgreSQL but for the placeholder, and the logic around them.

`SharedSQL` is the base of each backend's store class (store/sqlite/base.py,
store/postgres/base.py). A backend gives its placeholder (`_mark`), runs statements (`_q`
reads, `_x` writes) and transactions, deletes rows with their full-text and vector entries
(`_drop_row`, `_drop_session_rows`), locks each scope a transaction touches (`_lock_scope`)
and says where its data lives (`_location`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

import numpy as np

from memlane.errors import ValidationError
from memlane.models import (
    Attachment,
    Corpus,
    MemoryEvent,
    MemoryRecord,
    MemoryWhere,
    Scope,
    Scratchpad,
    Session,
    StoredEvent,
    Turn,
)
from memlane.store.protocol import TABLES, table_columns
from memlane.store.rows import (
    ATTACHMENT_COLS,
    BUS_EVENT_COLS,
    EVENT_COLS,
    MEMORY_COLS,
    SESSION_COLS,
    TURN_COLS,
    attachment_params,
    attachment_row,
    bus_event_row,
    dt_,
    event_row,
    memory_row,
    session_row,
    session_rows_sql,
    to_json,
    ts,
    turn_row,
)

# the column a corpus's text is embedded from
TEXT_COLUMN: dict[str, str] = {"memories": "content", "turns": "content", "episodes": "summary"}


class SharedSQL(ABC):
    """The part of the `Store` protocol whose SQL both backends share."""

    _mark: ClassVar[str]  # the driver's placeholder: "?" (apsw) or "%s" (psycopg)
    _ties: ClassVar[str]  # what orders a listing's ties ("": the database's own order, the rowid)
    _no_limit: ClassVar[str]  # LIMIT's "no limit"

    @abstractmethod
    def _q(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run a statement; its rows."""

    @abstractmethod
    def _x(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """Execute a write; returns the rows changed."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]: ...

    @abstractmethod
    def _drop_row(self, corpus: Corpus, rowid: int) -> None:
        """Delete one row of a corpus with its full-text and vector entries, in the caller's transaction."""

    @abstractmethod
    def _drop_session_rows(self, corpus: Corpus, scope: Scope, session_id: str) -> int:
        """`_drop_row` of each row of a session in a corpus, in the caller's transaction; how many."""

    @abstractmethod
    def _forgotten(self) -> None:
        """After the rows a forgetting call deletes, in its transaction."""

    @abstractmethod
    def _location(self) -> tuple[str, int]:
        """Where the data lives (a path, a redacted URL) and its size in bytes."""

    @abstractmethod
    def _rowid_in(self, rowids: Sequence[int]) -> tuple[str, list[Any]]:
        """The condition "rowid is one of these" and its parameters."""

    @abstractmethod
    def _lock_scope(self, scope: Scope | tuple[str, str]) -> None:
        """Inside a transaction, hold the scope until it ends: the scope's writers queue."""

    @property
    def _in_scope(self) -> str:
        """The condition of one scope: user_id then agent_id as parameters."""
        return f"user_id = {self._mark} AND agent_id = {self._mark}"

    # ---- sessions and turns --------------------------------------------------------------

    def get_session(self, scope: Scope, session_id: str) -> Session | None:
        self._lock_scope(scope)
        rows = self._q(f"SELECT {SESSION_COLS} FROM sessions WHERE {self._in_scope} AND id = {self._mark}",
                       (scope.user_id, scope.agent_id, session_id))
        return session_row(rows[0]) if rows else None

    def list_sessions(self, scope: Scope, limit: int = 100) -> list[Session]:
        rows = self._q(f"SELECT {SESSION_COLS} FROM sessions WHERE {self._in_scope} "
                       f"ORDER BY started_at DESC LIMIT {self._mark}", (scope.user_id, scope.agent_id, limit))
        return [session_row(r) for r in rows]

    def put_session(self, session: Session) -> None:
        self._lock_scope((session.user_id, session.agent_id))
        self._x(
            f"INSERT INTO sessions(user_id, agent_id, id, started_at, ended_at, summary, message_count, "
            f"extraction_count, metadata) VALUES ({self._marks(9)}) "
            "ON CONFLICT(user_id, agent_id, id) DO UPDATE SET started_at = excluded.started_at, "
            "ended_at = excluded.ended_at, summary = excluded.summary, "
            "message_count = excluded.message_count, extraction_count = excluded.extraction_count, "
            "metadata = excluded.metadata",
            (session.user_id, session.agent_id, session.id, ts(session.started_at), ts(session.ended_at),
             session.summary, session.message_count, session.extraction_count, to_json(session.metadata)),
        )

    def next_seq(self, scope: Scope, session_id: str) -> int:
        self._lock_scope(scope)
        rows = self._q(f"SELECT COALESCE(MAX(seq), 0) FROM turns WHERE {self._in_scope} AND session_id = {self._mark}",
                       (scope.user_id, scope.agent_id, session_id))
        return int(rows[0][0]) + 1

    def get_turns(self, scope: Scope, *, session_id: str | None = None, since: datetime | None = None,
                  until: datetime | None = None, limit: int | None = None, newest_first: bool = False,
                  rowids: Sequence[int] | None = None, after_seq: int | None = None) -> list[Turn]:
        self._lock_scope(scope)
        where, params = filters(self._mark, scope, [("session_id", session_id)], since, until)
        if after_seq is not None:  # a session's turns past one: read from the (session, seq) index
            where.append(f"seq > {self._mark}")
            params.append(int(after_seq))
        if rowids is not None:
            if not rowids:
                return []
            cond, values = self._rowid_in(rowids)
            where.append(cond)
            params += values
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {TURN_COLS} FROM turns WHERE {' AND '.join(where)} ORDER BY created_at {order}, seq {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [turn_row(r) for r in self._q(sql, params)]

    def turn_rows(self, scope: Scope, session_id: str, seq_from: int, seq_to: int) -> list[tuple[int, int, str]]:
        """[(rowid, seq, text)] of a session's turns in a seq range, for neighbour context."""
        m = self._mark
        rows = self._q(f"SELECT rowid, seq, content FROM turns WHERE {self._in_scope} AND session_id = {m} "
                       f"AND seq BETWEEN {m} AND {m} ORDER BY seq",
                       (scope.user_id, scope.agent_id, session_id, seq_from, seq_to))
        return [(int(r[0]), int(r[1]), r[2]) for r in rows]

    def session_rows(self, corpus: Corpus, scope: Scope, session_id: str, limit: int) -> list[int]:
        """Rowids of a session's rows, at most `limit`: its turns in order, its episodes, the
        memories it was the source of."""
        rows = self._q(session_rows_sql(corpus, self._mark), (scope.user_id, scope.agent_id, session_id, limit))
        return [int(r[0]) for r in rows]

    # ---- memories, episodes and their audit trail ---------------------------------------

    def memory_rowid(self, scope: Scope, memory_id: str) -> int:
        rows = self._q(f"SELECT rowid FROM memories WHERE {self._in_scope} AND id = {self._mark}",
                       (scope.user_id, scope.agent_id, memory_id))
        return int(rows[0][0]) if rows else -1

    def get_memory(self, scope: Scope, memory_id: str) -> MemoryRecord | None:
        self._lock_scope(scope)
        rows = self._q(f"SELECT {MEMORY_COLS} FROM memories WHERE {self._in_scope} AND id = {self._mark}",
                       (scope.user_id, scope.agent_id, memory_id))
        return memory_row(rows[0]) if rows else None

    def list_memories(self, scope: Scope, *, category: str | None = None, status: str | None = None,
                      session_id: str | None = None, since: datetime | None = None, until: datetime | None = None,
                      limit: int | None = None, offset: int = 0,
                      order: str = "score DESC, updated_at DESC", where: MemoryWhere | None = None) -> list[MemoryRecord]:
        """The scope's memories that match, in `order` (SQL of the memories' columns, memlane's own,
        never a caller's text), a page of them."""
        self._lock_scope(scope)
        conds, params = self._memory_where(scope, category, status, session_id, since, until, where)
        sql = f"SELECT {MEMORY_COLS} FROM memories WHERE {conds} ORDER BY {order}{self._ties}"
        sql += f" LIMIT {self._no_limit if limit is None else int(limit)} OFFSET {int(offset)}"
        return [memory_row(r) for r in self._q(sql, params)]

    def count_memories(self, scope: Scope, status: str | None = None, *, category: str | None = None,
                       since: datetime | None = None, until: datetime | None = None,
                       where: MemoryWhere | None = None) -> int:
        conds, params = self._memory_where(scope, category, status or None, None, since, until, where)
        return int(self._q(f"SELECT COUNT(*) FROM memories WHERE {conds}", params)[0][0])

    def replaced_rowids(self, scope: Scope, rowids: Sequence[int], at: datetime) -> list[int]:
        """Which of these memories a change told ahead of its date has replaced by `at`: still
        stored active until a consolidation writes the change down (`supersession.closed`)."""
        if not rowids:
            return []
        cond, params = self._rowid_in(rowids)
        m = self._mark
        return [int(r[0]) for r in self._q(
            f"SELECT rowid FROM memories WHERE {cond} AND user_id = {m} AND agent_id = {m} AND {self._taken()}",
            [*params, scope.user_id, scope.agent_id, ts(at)])]

    def _taken(self) -> str:
        """Stored active, yet replaced by a change whose date (the one parameter) has passed."""
        return f"(status = 'active' AND superseded_by IS NOT NULL AND valid_to <= {self._mark})"

    def _memory_where(self, scope: Scope, category: str | None, status: str | None, session_id: str | None,
                      since: datetime | None, until: datetime | None,
                      where: MemoryWhere | None) -> tuple[str, list[Any]]:
        w = where or MemoryWhere()
        held = w.held_at is not None and status in ("active", "superseded")
        conds, params = filters(self._mark, scope, [
            ("category", category), ("status", None if held else status), ("source_session", session_id), ("source", w.source),
            ("verified", None if w.verified is None else int(w.verified)),
            ("pinned", None if w.pinned is None else int(w.pinned))], since, until)
        for cond, value in (("score >=", w.min_score), ("score <=", w.max_score)):
            if value is not None:
                conds.append(f"{cond} {self._mark}")
                params.append(value)
        if held:  # replaced by a change whose date has passed: superseded, whatever is stored yet
            taken = self._taken()
            conds.append(f"status = 'active' AND NOT {taken}" if status == "active" else f"(status = 'superseded' OR {taken})")
            params.append(ts(w.held_at))
        return " AND ".join(conds), params

    def delete_memory(self, scope: Scope, memory_id: str) -> bool:
        return self._delete_by_id("memories", scope, memory_id)

    def delete_episode(self, scope: Scope, episode_id: str) -> bool:
        return self._delete_by_id("episodes", scope, episode_id)

    def _delete_by_id(self, corpus: Corpus, scope: Scope, row_id: str) -> bool:
        with self.transaction():
            self._lock_scope(scope)
            rows = self._q(f"SELECT rowid FROM {corpus} WHERE {self._in_scope} AND id = {self._mark}",
                           (scope.user_id, scope.agent_id, row_id))
            if not rows:
                return False
            self._drop_row(corpus, int(rows[0][0]))
            return True

    def add_event(self, scope: Scope, memory_id: str, kind: str, before: dict[str, Any] | None,
                  after: dict[str, Any] | None, actor: str, reason: str, at: datetime) -> None:
        self._x(f"INSERT INTO memory_events(memory_id, user_id, agent_id, kind, before, after, actor, reason, "
                f"created_at) VALUES ({self._marks(9)})",
                (memory_id, scope.user_id, scope.agent_id, kind, to_json(before) if before is not None else None,
                 to_json(after) if after is not None else None, actor, reason, ts(at)))

    def events(self, scope: Scope, memory_id: str | None = None, limit: int = 1000) -> list[MemoryEvent]:
        sql = f"SELECT {EVENT_COLS} FROM memory_events WHERE {self._in_scope}"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if memory_id is not None:
            sql += f" AND memory_id = {self._mark}"
            params.append(memory_id)
        params.append(limit)
        return [event_row(r) for r in self._q(sql + f" ORDER BY id LIMIT {self._mark}", params)]

    def scrub_events(self, scope: Scope, memory_id: str, reason: str) -> list[str]:
        """Make the memory's audit rows content-free tombstones (kind, actor and time stay);
        returns the contents they held, so their embedding-cache entries can go too."""
        m = self._mark
        with self.transaction():
            self._lock_scope(scope)
            texts: list[str] = []
            for before, after in self._q(f"SELECT before, after FROM memory_events WHERE {self._in_scope} "
                                         f"AND memory_id = {m}", (scope.user_id, scope.agent_id, memory_id)):
                for snap in (before, after):
                    content = json.loads(snap).get("content") if snap else None
                    if isinstance(content, str):
                        texts.append(content)
            self._x(f"UPDATE memory_events SET before = NULL, after = NULL, reason = {m} "
                    f"WHERE {self._in_scope} AND memory_id = {m}", (reason, scope.user_id, scope.agent_id, memory_id))
        return list(dict.fromkeys(texts))

    def delete_session(self, scope: Scope, session_id: str) -> dict[str, int]:
        """Delete a session with its turns, episodes and extraction jobs; returns counts. Its
        files and its persisted events (those that happened) go with it."""
        with self.transaction():
            self._lock_scope(scope)
            counts = {corpus: self._drop_session_rows(corpus, scope, session_id) for corpus in ("turns", "episodes")}
            for table, key, value, always in (("extraction_jobs", "session_id", session_id, True),
                                              ("sessions", "id", session_id, True),
                                              ("attachments", "session_id", session_id, False),
                                              ("events", "subject", f"session:{session_id}", False)):
                n = self._x(f"DELETE FROM {table} WHERE {self._in_scope} AND {key} = {self._mark}",
                            (scope.user_id, scope.agent_id, value))
                if n or always:
                    counts[table] = n
            self._forgotten()
        return counts

    # ---- scratchpad, extraction queue ----------------------------------------------------

    def get_scratchpad(self, scope: Scope) -> Scratchpad | None:
        self._lock_scope(scope)
        rows = self._q(f"SELECT current_focus, recent_tasks, updated_at FROM scratchpad WHERE {self._in_scope}",
                       (scope.user_id, scope.agent_id))
        if not rows:
            return None
        return Scratchpad(user_id=scope.user_id, agent_id=scope.agent_id, current_focus=rows[0][0],
                          recent_tasks=json.loads(rows[0][1]), updated_at=dt_(rows[0][2]))

    def put_scratchpad(self, pad: Scratchpad) -> None:
        self._x(f"INSERT INTO scratchpad(user_id, agent_id, current_focus, recent_tasks, updated_at) "
                f"VALUES ({self._marks(5)}) ON CONFLICT(user_id, agent_id) DO UPDATE SET "
                "current_focus = excluded.current_focus, recent_tasks = excluded.recent_tasks, "
                "updated_at = excluded.updated_at",
                (pad.user_id, pad.agent_id, pad.current_focus, to_json(pad.recent_tasks), ts(pad.updated_at)))

    def enqueue_job(self, scope: Scope, session_id: str, first_seq: int, last_seq: int, at: datetime) -> bool:
        """Queue a turn range; False when that exact range was queued before (idempotency)."""
        return self._x(
            "INSERT INTO extraction_jobs(user_id, agent_id, session_id, first_seq, last_seq, status, attempts, "
            f"next_at, created_at) VALUES ({self._marks(5)}, 'queued', 0, {self._marks(2)}) ON CONFLICT DO NOTHING",
            (scope.user_id, scope.agent_id, session_id, first_seq, last_seq, ts(at), ts(at))) > 0

    def update_job(self, job_id: int, *, status: str, attempts: int, next_at: datetime, last_error: str | None) -> None:
        m = self._mark
        self._x(f"UPDATE extraction_jobs SET status = {m}, attempts = {m}, next_at = {m}, last_error = {m} "
                f"WHERE id = {m}", (status, attempts, ts(next_at), last_error, job_id))

    # ---- vectors --------------------------------------------------------------------------

    def unembedded(self, corpus: Corpus, limit: int) -> list[tuple[int, Scope, str]]:
        """Rows still waiting for a vector, oldest first: [(rowid, scope, text)]."""
        rows = self._q(f"SELECT rowid, user_id, agent_id, {TEXT_COLUMN[corpus]} FROM {corpus} "
                       f"WHERE embedded = 0 ORDER BY rowid LIMIT {self._mark}", (limit,))
        return [(int(r[0]), Scope(user_id=r[1], agent_id=r[2]), r[3]) for r in rows]

    # ---- attachments (seed 002 §8) and persisted events (seed 004 §11.3) ------------------

    def put_attachment(self, att: Attachment) -> None:
        self._x(f"INSERT INTO attachments({ATTACHMENT_COLS}, data) VALUES ({self._marks(14)})", attachment_params(att))

    def get_attachment(self, scope: Scope, attachment_id: str) -> Attachment | None:
        rows = self._q(f"SELECT {ATTACHMENT_COLS}, data FROM attachments WHERE {self._in_scope} AND id = {self._mark}",
                       (scope.user_id, scope.agent_id, attachment_id))
        return attachment_row(rows[0], with_data=True) if rows else None

    def list_attachments(self, scope: Scope, *, session_id: str | None = None,
                         expired_at: datetime | None = None) -> list[Attachment]:
        """The scope's attachments without their bytes, oldest first: a session's, or those
        expired at `expired_at`."""
        sql = f"SELECT {ATTACHMENT_COLS} FROM attachments WHERE {self._in_scope}"
        params: list[Any] = [scope.user_id, scope.agent_id]
        if session_id is not None:
            sql += f" AND session_id = {self._mark}"
            params.append(session_id)
        if expired_at is not None:
            sql += f" AND expires_at IS NOT NULL AND expires_at <= {self._mark}"
            params.append(ts(expired_at))
        return [attachment_row(r, with_data=False) for r in self._q(sql + " ORDER BY created_at, rowid", params)]

    def update_bus_event(self, scope: Scope, event_id: int, status: str, actions: list[dict[str, Any]]) -> None:
        m = self._mark
        self._x(f"UPDATE events SET status = {m}, actions = {m} WHERE {self._in_scope} AND id = {m}",
                (status, to_json(actions), scope.user_id, scope.agent_id, event_id))

    def bus_events(self, scope: Scope, *, status: str | None = None, event_id: int | None = None,
                   limit: int = 1000) -> list[StoredEvent]:
        """The scope's persisted events, newest first."""
        sql = f"SELECT {BUS_EVENT_COLS} FROM events WHERE {self._in_scope}"
        params: list[Any] = [scope.user_id, scope.agent_id]
        for col, value in (("status", status), ("id", event_id)):
            if value is not None:
                sql += f" AND {col} = {self._mark}"
                params.append(value)
        rows = self._q(sql + f" ORDER BY at DESC, id DESC LIMIT {int(limit)}", params)
        return [bus_event_row(r) for r in rows]

    def delete_bus_events(self, scope: Scope, *, before: datetime | None = None, subject: str | None = None) -> int:
        """Delete the scope's persisted events older than `before` (pending ones stay) or about `subject`."""
        if before is not None:
            return self._x(f"DELETE FROM events WHERE {self._in_scope} AND at < {self._mark} "
                           "AND status != 'pending'", (scope.user_id, scope.agent_id, ts(before)))
        return self._x(f"DELETE FROM events WHERE {self._in_scope} AND subject = {self._mark}",
                       (scope.user_id, scope.agent_id, subject))

    # ---- stats ------------------------------------------------------------------------------

    def stats(self, scope: Scope) -> dict[str, Any]:
        u = (scope.user_id, scope.agent_id)
        one = lambda sql: int(self._q(sql, u)[0][0])  # noqa: E731
        w = f"WHERE {self._in_scope}"
        path, size = self._location()
        return {
            "memories": one(f"SELECT COUNT(*) FROM memories {w}"),
            "memories_by_category": dict(self._q(f"SELECT category, COUNT(*) FROM memories {w} GROUP BY category", u)),
            "memories_by_status": dict(self._q(f"SELECT status, COUNT(*) FROM memories {w} GROUP BY status", u)),
            "turns": one(f"SELECT COUNT(*) FROM turns {w}"),
            "turns_unembedded": one(f"SELECT COUNT(*) FROM turns {w} AND embedded = 0"),
            "sessions": one(f"SELECT COUNT(*) FROM sessions {w}"),
            "episodes": one(f"SELECT COUNT(*) FROM episodes {w}"),
            "events": one(f"SELECT COUNT(*) FROM memory_events {w}"),
            "jobs_pending": one(f"SELECT COUNT(*) FROM extraction_jobs {w} AND status IN ('queued','running')"),
            "db_path": path,
            "db_bytes": size,
        }

    # ---- a table as stored (store/copy.py) ---------------------------------------------------

    def raw_rows(self, table: str, columns: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """The rows of one of `TABLES` in its key's order: all its columns, or those named."""
        names = table_columns(table)
        wanted = list(columns) if columns is not None else names
        if not set(wanted) <= set(names):
            raise ValueError(f"{table} has no column {sorted(set(wanted) - set(names))}")
        return self._q(f"SELECT {', '.join(wanted)} FROM {table} ORDER BY {TABLES[table][1]}")

    def _marks(self, n: int) -> str:
        return ", ".join([self._mark] * n)


# ---- statement parts both stores build their own queries from ------------------------------


def memory_update_sql(mark: str) -> str:
    """Every field of a memory (`memory_params(m)[3:]`), then its scope and id."""
    fields = MEMORY_COLS.split(", ")[3:]  # the id and the scope pick the row
    return (f"UPDATE memories SET {', '.join(f'{f} = {mark}' for f in fields)} "
            f"WHERE user_id = {mark} AND agent_id = {mark} AND id = {mark}")


def filters(mark: str, scope: Scope, equal: Sequence[tuple[str, Any]], since: datetime | None = None,
            until: datetime | None = None) -> tuple[list[str], list[Any]]:
    """(conditions, parameters) of a scope's rows: each (column, value) whose value is not
    None equal to it, and created within [since, until]."""
    where = [f"user_id = {mark}", f"agent_id = {mark}"]
    params: list[Any] = [scope.user_id, scope.agent_id]
    for cond, value in (*((f"{col} =", v) for col, v in equal), ("created_at >=", ts(since)),
                        ("created_at <=", ts(until))):
        if value is not None:
            where.append(f"{cond} {mark}")
            params.append(value)
    return where, params


def scope_where(user_id: str, agent_id: str | None, mark: str) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause of one scope, or of every scope of the user when `agent_id` is None."""
    if agent_id is None:
        return f"user_id = {mark}", (user_id,)
    return f"user_id = {mark} AND agent_id = {mark}", (user_id, agent_id)


def checked_vectors(vectors: np.ndarray, rows: int, dims: int | None) -> np.ndarray:
    """Vectors given with rows to insert (one row each, of the open embedder's width), as float32."""
    vecs = np.ascontiguousarray(vectors, dtype=np.float32)
    if dims is None or vecs.shape != (rows, dims):
        raise ValidationError("vectors", f"expected shape ({rows}, {dims}), got {vecs.shape}")
    return vecs


def dots(vecs: dict[int, np.ndarray], vector: np.ndarray) -> dict[int, float]:
    """{rowid: dot product with `vector`} of the vectors given."""
    ids = list(vecs)
    return dict(zip(ids, (np.stack([vecs[r] for r in ids]) @ vector).tolist(), strict=True)) if ids else {}


def chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])
