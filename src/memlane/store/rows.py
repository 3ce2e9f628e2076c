"""Rows ↔ records for both stores: column lists, parsers, parameters, time stamps.

Times are stored as UTC epoch seconds (REAL on SQLite, float8 on PostgreSQL): cheap to
compare and to do arithmetic on, and `datetime(created_at, 'unixepoch')` shows them in any
SQLite client. JSON is text on both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memlane.models import (
    Attachment,
    Episode,
    ExtractionJob,
    MemoryEvent,
    MemoryRecord,
    Session,
    StoredEvent,
    Turn,
)


def ts(value: datetime | None) -> float | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def dt_(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


MEMORY_COLS = (
    "id, user_id, agent_id, content, category, kind, score, confidence, subject, predicate, "
    "created_at, updated_at, last_activated, activation_count, expires_at, source, verified, "
    "source_session, status, pinned, metadata, valid_from, valid_to, superseded_at, superseded_by, supersedes"
)
MEMORY_FIELDS = len(MEMORY_COLS.split(", "))
TURN_COLS = (
    "id, user_id, agent_id, session_id, seq, role, content, name, tool_calls, created_at, "
    "token_count, archived, metadata"
)
EPISODE_COLS = (
    "id, user_id, agent_id, session_id, summary, goal, outcome, entities, tools_used, "
    "started_at, ended_at, score, created_at"
)
SESSION_COLS = "id, user_id, agent_id, started_at, ended_at, summary, message_count, extraction_count, metadata"
JOB_COLS = "id, user_id, agent_id, session_id, first_seq, last_seq, status, attempts, next_at, last_error, created_at"
EVENT_COLS = "id, memory_id, user_id, agent_id, kind, before, after, actor, reason, created_at"
BUS_EVENT_COLS = "id, user_id, agent_id, type, subject, source, payload, at, status, actions"
ATTACHMENT_COLS = ("id, user_id, agent_id, session_id, name, media_type, description, uri, size, sha256, "
                   "created_at, expires_at, metadata")


def memory_row(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0], user_id=row[1], agent_id=row[2], content=row[3], category=row[4], kind=row[5],
        score=row[6], confidence=row[7], subject=row[8], predicate=row[9],
        created_at=dt_(row[10]), updated_at=dt_(row[11]), last_activated=dt_(row[12]),
        activation_count=row[13], expires_at=dt(row[14]), source=row[15], verified=bool(row[16]),
        source_session=row[17], status=row[18], pinned=bool(row[19]), metadata=json.loads(row[20]),
        valid_from=dt(row[21]), valid_to=dt(row[22]), superseded_at=dt(row[23]), superseded_by=row[24],
        supersedes=row[25],
    )


def turn_row(row: Sequence[Any]) -> Turn:
    return Turn(
        id=row[0], user_id=row[1], agent_id=row[2], session_id=row[3], seq=row[4], role=row[5],
        content=row[6], name=row[7], tool_calls=json.loads(row[8]) if row[8] else None,
        created_at=dt_(row[9]), token_count=row[10], archived=row[11], metadata=json.loads(row[12]),
    )


def episode_row(row: Sequence[Any]) -> Episode:
    return Episode(
        id=row[0], user_id=row[1], agent_id=row[2], session_id=row[3], summary=row[4], goal=row[5],
        outcome=row[6], entities=json.loads(row[7]), tools_used=json.loads(row[8]),
        started_at=dt_(row[9]), ended_at=dt_(row[10]), score=row[11], created_at=dt_(row[12]),
    )


def session_row(r: Sequence[Any]) -> Session:
    return Session(id=r[0], user_id=r[1], agent_id=r[2], started_at=dt_(r[3]), ended_at=dt(r[4]), summary=r[5],
                   message_count=r[6], extraction_count=r[7], metadata=json.loads(r[8]))


def job_row(r: Sequence[Any]) -> ExtractionJob:
    return ExtractionJob(id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], first_seq=r[4], last_seq=r[5],
                         status=r[6], attempts=r[7], next_at=dt_(r[8]), last_error=r[9], created_at=dt_(r[10]))


def event_row(r: Sequence[Any]) -> MemoryEvent:
    return MemoryEvent(id=r[0], memory_id=r[1], user_id=r[2], agent_id=r[3], kind=r[4],
                       before=json.loads(r[5]) if r[5] else None, after=json.loads(r[6]) if r[6] else None,
                       actor=r[7], reason=r[8], created_at=dt_(r[9]))


def bus_event_row(r: Sequence[Any]) -> StoredEvent:
    return StoredEvent(id=r[0], user_id=r[1], agent_id=r[2], type=r[3], subject=r[4], source=r[5],
                       payload=json.loads(r[6]), at=dt_(r[7]), status=r[8], actions=json.loads(r[9]))


def attachment_row(r: Sequence[Any], *, with_data: bool) -> Attachment:
    """An attachment of ATTACHMENT_COLS, then its bytes (`data`) where `with_data`."""
    return Attachment(id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], name=r[4], media_type=r[5],
                      description=r[6], uri=r[7], size=r[8], sha256=r[9], created_at=dt_(r[10]),
                      expires_at=None if r[11] is None else dt_(r[11]), metadata=json.loads(r[12]),
                      data=bytes(r[13]) if with_data and r[13] is not None else None)


def memory_params(m: MemoryRecord) -> tuple[Any, ...]:
    return (
        m.id, m.user_id, m.agent_id, m.content, m.category, m.kind, m.score, m.confidence, m.subject,
        m.predicate, ts(m.created_at), ts(m.updated_at), ts(m.last_activated), m.activation_count,
        ts(m.expires_at), m.source, int(m.verified), m.source_session, m.status, int(m.pinned),
        to_json(m.metadata), ts(m.valid_from), ts(m.valid_to), ts(m.superseded_at), m.superseded_by, m.supersedes,
    )


def turn_params(t: Turn, import_key: str | None) -> tuple[Any, ...]:
    """TURN_COLS, then the import key."""
    return (t.id, t.user_id, t.agent_id, t.session_id, t.seq, t.role, t.content, t.name,
            to_json(t.tool_calls) if t.tool_calls else None, ts(t.created_at), t.token_count, t.archived,
            to_json(t.metadata), import_key)


def episode_params(e: Episode) -> tuple[Any, ...]:
    return (e.id, e.user_id, e.agent_id, e.session_id, e.summary, e.goal, e.outcome, to_json(e.entities),
            to_json(e.tools_used), ts(e.started_at), ts(e.ended_at), e.score, ts(e.created_at))


def attachment_params(a: Attachment) -> tuple[Any, ...]:
    """ATTACHMENT_COLS, then the bytes."""
    return (a.id, a.user_id, a.agent_id, a.session_id, a.name, a.media_type, a.description, a.uri, a.size,
            a.sha256, ts(a.created_at), ts(a.expires_at), to_json(a.metadata), a.data)


def episode_text(summary: str, goal: str, outcome: str, entities: Sequence[str]) -> str:
    """What an episode's full-text entry holds."""
    return " ".join([summary, goal, outcome, " ".join(entities)])


# ---- what a turn's full-text entry holds (seed 002 §3: the second level searches tool
# arguments and results, "含工具参数/返回值") ------------------------------------------------

_NOT_INDEXED = frozenset({"id", "type", "index", "tool_call_id"})  # call ids and plumbing: no words of anyone's
_STRUCTURE = frozenset({"function", "name", "arguments", "args", "input", "result", "results", "output", "content"})


def tool_call_text(tool_calls: Sequence[Any] | None) -> str:
    """The words of a turn's tool calls: function names, argument names and values, results
    (JSON strings inside them read as JSON), one per line; "" when there are none."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in _NOT_INDEXED:
                    continue
                if key not in _STRUCTURE:
                    out.append(str(key))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            text = value.strip()
            if text[:1] in ("{", "["):
                try:
                    walk(json.loads(text))
                    return
                except ValueError:
                    pass
            if text:
                out.append(text)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append(str(value))

    walk(list(tool_calls or []))
    return "\n".join(out)


def turn_search_text(content: str, tool_calls: Sequence[Any] | None, role: str = "", name: str | None = None) -> str:
    """A turn's indexed body: its content, then the words of its tool calls; a tool result
    turn's (role "tool") also the tool's name. A speaker's name stays out: it is no word
    of the turn, and search ranks speakers on their own (SearchConfig.speaker_prior)."""
    extra = "\n".join(x for x in (name if role == "tool" else None, tool_call_text(tool_calls)) if x)
    return f"{content}\n{extra}" if extra else content


def session_rows_sql(corpus: str, mark: str) -> str:
    """The rowids of a session's rows (Store.session_rows: its turns in order, its episodes, the
    memories it was the source of), with `mark` the driver's placeholder."""
    table = {"turns": "turns", "memories": "memories", "episodes": "episodes"}[corpus]
    column = "source_session" if corpus == "memories" else "session_id"
    return (f"SELECT rowid FROM {table} WHERE user_id = {mark} AND agent_id = {mark} AND {column} = {mark} "
            f"ORDER BY {'seq' if corpus == 'turns' else 'rowid'} LIMIT {mark}")
