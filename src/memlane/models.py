"""The records memlane stores and returns (DESIGN.md, data model)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlane import validate
from memlane.errors import ValidationError

Role = Literal["user", "assistant", "system", "tool"]
ArchiveState = Literal["false", "pending", "true"]
# "superseded": replaced by a newer fact (issue 32) — kept, out of the prompt, found by time
Status = Literal["active", "archived", "superseded"]
# who wrote a memory: a person ("user"), an extractor, memlane itself, an import, or an LLM
# agent through its tools ("agent": its own choice, not the person's word, so not verified)
Source = Literal["user", "extractor", "heuristic", "system", "import", "agent"]
EventKind = Literal["ADD", "UPDATE", "BOOST", "DELETE", "DECAY", "ARCHIVE", "PROMOTE", "RESTORE", "DEMOTE", "PURGE",
                    "SUPERSEDE"]


def new_id(length: int = 16) -> str:
    """A short random id (seed 001: uuid4 short form). 16 hex digits: ids are unique across a
    database, and at 10 two of a million memories would share one with odds near 1 in 3."""
    return uuid.uuid4().hex[:length]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Scope(BaseModel):
    """Who a record belongs to. No query ever crosses scopes."""

    model_config = ConfigDict(frozen=True)
    user_id: str
    agent_id: str = ""

    @classmethod
    def of(cls, user_id: str | None, agent_id: str | None = None) -> Scope:
        if user_id is None:
            raise ValidationError("user_id", "is required and must not be empty")
        uid = validate.ident("user_id", user_id)
        aid = "" if agent_id is None or agent_id == "" else validate.ident("agent_id", agent_id)
        return cls(user_id=uid, agent_id=aid)

    def readable(self) -> tuple[Scope, ...]:
        """The scopes whose memories this one reads (issue 18): its own and, for an agent
        scope, its user's shared (agent-less) memories — preferences follow the user across
        agents (seed 004). Writes go to the scope itself; no scope reads another user's."""
        return (self, Scope(user_id=self.user_id)) if self.agent_id else (self,)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Record):
    """A message as an agent hands it in (OpenAI chat format, plus an optional time)."""

    role: Role = "user"
    content: str
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    created_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Turn(_Record):
    id: str
    user_id: str
    agent_id: str = ""
    session_id: str
    seq: int
    role: Role
    content: str
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    created_at: datetime
    token_count: int
    archived: ArchiveState = "false"
    metadata: dict[str, Any] = Field(default_factory=dict)


class Session(_Record):
    id: str
    user_id: str
    agent_id: str = ""
    started_at: datetime
    ended_at: datetime | None = None
    summary: str = ""
    message_count: int = 0
    extraction_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)


class MemoryRecord(_Record):
    id: str
    user_id: str
    agent_id: str = ""
    content: str
    category: str
    kind: str = "semantic"
    score: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    subject: str | None = None
    predicate: str | None = None
    created_at: datetime
    updated_at: datetime
    last_activated: datetime
    activation_count: int = 0
    expires_at: datetime | None = None
    source: Source = "user"
    verified: bool = False
    source_session: str | None = None
    status: Status = "active"
    pinned: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    # issue 32, two times: when the fact held in the world (valid_to None: it still does) and
    # when memlane retired it; the two memories of a change name each other
    valid_from: datetime | None = None  # None given: from created_at
    valid_to: datetime | None = None
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    supersedes: str | None = None

    @model_validator(mode="after")
    def _valid_from_creation(self) -> MemoryRecord:
        if self.valid_from is None:
            self.valid_from = self.created_at
        return self

    def holds_at(self, when: datetime) -> bool:
        """Whether the fact held in the world at `when` (valid_from ≤ when < valid_to)."""
        start = self.valid_from or self.created_at
        return start <= when and (self.valid_to is None or when < self.valid_to)

    def replaced(self, now: datetime) -> bool:
        """Whether a newer version holds instead at `now`: superseded, or replaced by a change
        told ahead of its date ("I move to Berlin in September") that has now begun — until
        then the old version stays active and current (`supersession.closed`)."""
        return self.status == "superseded" or (
            self.superseded_by is not None and self.valid_to is not None and self.valid_to <= now)

    def snapshot(self) -> dict[str, Any]:
        """The state an audit event keeps as before/after (the scope is the event's own)."""
        return self.model_dump(mode="json", exclude={"user_id", "agent_id"})


@dataclass(frozen=True)
class MemoryWhere:
    """Filters of a memory listing beyond category, status, session and time (`Memory.list`):
    each None matches every memory."""

    source: str | None = None
    verified: bool | None = None
    pinned: bool | None = None
    min_score: float | None = None
    max_score: float | None = None
    # the time "active" and "superseded" are read at (issue 32): a version a change told ahead
    # of its date replaced is superseded once that date passed, before consolidation marks it
    held_at: datetime | None = None


# the columns a memory listing may be sorted by (`Memory.list(sort=...)`)
MEMORY_SORTS = ("score", "updated_at", "created_at", "last_activated", "activation_count", "content")


@dataclass(frozen=True)
class MemoryFacts:
    """The few fields ranking and filtering need, as columns, one entry per memory found:
    read without building records, and ranked in numpy. Times are POSIX seconds."""

    rowid: np.ndarray  # int64
    score: np.ndarray  # float64
    last_activated: np.ndarray  # float64
    expires_at: np.ndarray  # float64, NaN: never
    created_at: np.ndarray  # float64
    status: np.ndarray  # object: str
    category: np.ndarray  # object: str
    source_session: np.ndarray  # object: str | None

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence[Any]]) -> MemoryFacts:
        """From rows of (rowid, score, last_activated, expires_at, created_at, status, category,
        source_session), as SQLite returns them."""
        cols = list(zip(*rows, strict=True)) if rows else [()] * 8
        floats = [np.asarray([np.nan if x is None else x for x in c], np.float64) for c in cols[1:5]]
        texts = [np.asarray(c, dtype=object) for c in cols[5:]]
        return cls(np.asarray(cols[0], np.int64), *floats, *texts)

    def __len__(self) -> int:
        return len(self.rowid)

    def rows(self) -> dict[int, tuple[Any, ...]]:
        """{rowid: (score, last_activated, expires_at or None, created_at, status, category,
        source_session)}: for comparisons."""
        expires = [None if np.isnan(x) else x for x in self.expires_at.tolist()]
        columns = zip(self.score.tolist(), self.last_activated.tolist(), expires, self.created_at.tolist(),
                      self.status.tolist(), self.category.tolist(), self.source_session.tolist(), strict=True)
        return dict(zip(self.rowid.tolist(), columns, strict=True))


class TurnPlace(NamedTuple):
    """Where a turn sits and the facts of it that ranking uses."""

    rowid: int
    session_id: str
    seq: int
    # the facts below are read for the turns asked about; a neighbour has 0 / False / None
    length: int  # characters
    question: bool  # ends with a question mark
    at: float | None  # created_at as a POSIX timestamp
    speaker: str | None = None  # the turn's name (who said it), when it has one
    role: str | None = None  # user / assistant / system / tool


class Episode(_Record):
    id: str
    user_id: str
    agent_id: str = ""
    session_id: str
    summary: str
    goal: str = ""
    outcome: str = ""
    entities: list[str] = Field(default_factory=list)
    tools_used: list[str] = Field(default_factory=list)
    started_at: datetime
    ended_at: datetime
    score: float = 1.0
    created_at: datetime


class Scratchpad(_Record):
    user_id: str
    agent_id: str = ""
    current_focus: str = ""
    recent_tasks: list[dict[str, Any]] = Field(default_factory=list)  # [{"task", "done_at"}], ≤5
    updated_at: datetime


class ExtractionJob(_Record):
    id: int
    user_id: str
    agent_id: str = ""
    session_id: str
    first_seq: int
    last_seq: int
    status: Literal["queued", "running", "done", "failed"] = "queued"
    attempts: int = 0
    next_at: datetime
    last_error: str | None = None
    created_at: datetime


class MemoryEvent(_Record):
    id: int
    memory_id: str
    user_id: str
    agent_id: str = ""
    kind: EventKind
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    actor: str = "api"
    reason: str = ""
    created_at: datetime


Corpus = Literal["memories", "turns", "episodes"]


class Hit(_Record):
    """One search result: the record, where it came from, and how it ranked."""

    corpus: Corpus
    id: str
    content: str
    score: float
    similarity: float = 0.0
    bm25_rank: int | None = None
    vector_rank: int | None = None
    source: str = ""  # a label such as "memory:ab12cd", "turn:s1#4" (seed 000 [source] tags)
    highlights: list[str] = Field(default_factory=list)  # query keywords found in the content
    created_at: datetime | None = None
    memory: MemoryRecord | None = None
    turn: Turn | None = None
    episode: Episode | None = None


class Stats(_Record):
    user_id: str
    agent_id: str = ""
    memories: int
    memories_by_category: dict[str, int]
    memories_by_status: dict[str, int]
    turns: int
    turns_unembedded: int
    sessions: int
    episodes: int
    events: int
    jobs_pending: int
    db_path: str
    db_bytes: int
    embedder: str


class Forecast(_Record):
    """What the decay policy will do to a memory if nothing touches it again (`Memory.forecast`)."""

    memory_id: str
    # "protected" (pinned, verified or a kept category) | "archived" | "superseded" (history:
    # never decays) | "due" (`action` on `when`) | "due_now" (at the next consolidation) |
    # "none" (not within `horizon_days`)
    state: Literal["protected", "archived", "superseded", "due", "due_now", "none"]
    action: str = ""  # ARCHIVE / DELETE / DEMOTE on `when`
    when: datetime | None = None
    score: float  # as stored: as of the last consolidation
    score_now: float  # decayed to now by its rule
    grace_days: float
    daily_factor: float
    expires_at: datetime | None = None
    horizon_days: int


class Activity(_Record):
    """A scope's memories at the end of each day, replayed from the audit trail (`Memory.activity`)."""

    user_id: str
    agent_id: str = ""
    days: list[str]  # ISO dates, oldest first
    active: list[int]
    archived: list[int]
    deleted: list[int]


class Attachment(_Record):
    """A file or media memory (seed 002 §8 `attachments`): the bytes, or where they are."""

    id: str
    user_id: str
    agent_id: str = ""
    session_id: str | None = None
    name: str
    media_type: str = "application/octet-stream"
    description: str = ""
    uri: str | None = None
    data: bytes | None = None  # None in listings; `get` returns it
    size: int = 0
    sha256: str = ""
    created_at: datetime
    expires_at: datetime | None = None  # cleaned by the nightly pass (seed 002 §7 清理过期附件)
    metadata: dict[str, Any] = Field(default_factory=dict)


class StoredEvent(_Record):
    """An event-bus event as the `events` table keeps it (seed 004 §11.3): the payload without
    texts, and each matched rule's actions with what became of them."""

    id: int
    user_id: str
    agent_id: str = ""
    type: str
    subject: str
    source: str
    payload: dict[str, Any] = Field(default_factory=dict)
    at: datetime
    status: Literal["done", "pending", "running", "failed"]
    # [{"rule", "action", "status": done | pending | running | failed}]; "running" left by a
    # process that died mid-action shows the action may or may not have run
    actions: list[dict[str, Any]] = Field(default_factory=list)
