"""Request bodies of the REST API, and the one conversion of engine results to JSON.

Bodies carry only what the engine's own validators then check (types, lengths, categories);
they never carry a scope: that is the key's.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, model_validator

from memlane import validate
from memlane.config import ServerConfig
from memlane.models import Hit, MemoryEvent, MemoryRecord, Scope

# a number is a JSON number: `true` is not 1.0, nor "0.5" one half (pydantic's lax mode would say so)
Number = StrictFloat | StrictInt


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewMemory(Body):
    content: str
    category: str | None = None
    importance: Number | str | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool = False
    expires_at: datetime | None = None
    session_id: str | None = None
    subject: str | None = None
    predicate: str | None = None
    confidence: Number = 1.0
    # "user": a person, or an app acting for one, added it (as before); "agent": an LLM agent
    # chose to, so it is unconfirmed and ages until a person verifies it
    source: Literal["user", "agent"] = "user"


class MemoryChange(Body):
    content: str | None = None
    category: str | None = None
    importance: Number | str | None = None
    score: Number | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool | None = None
    verified: bool | None = None  # true: a person confirmed it
    status: Literal["active", "archived"] | None = None
    expires_at: datetime | None = None
    reason: str = ""

    @model_validator(mode="after")
    def _changes_something(self) -> MemoryChange:
        if all(getattr(self, f) is None for f in self.model_fields_set - {"reason"}):
            raise ValueError("names nothing to change: give content, category, importance, score, metadata, "
                             "pinned, verified, status or expires_at")
        return self


class MemorySuccessor(Body):
    """`POST /v1/memories/{id}/supersede`: the fact changed. Exactly one of `content` (the new
    fact, stored as a new memory) and `by` (the id of a stored memory that replaces it)."""

    content: str | None = None
    by: str | None = None
    valid_from: datetime | None = None  # when the new fact began to hold; default now
    category: str | None = None
    reason: str = ""


class SearchQuery(Body):
    query: str
    corpus: Literal["memories", "turns", "episodes"] = "memories"
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    filters: dict[str, Any] | None = None
    # None: the relevance floor (search.min_relevance); 0 returns every hit found
    min_score: Annotated[Number, Field(ge=0, le=1)] | None = None
    # issue 32: the facts that held at this time; superseded facts too (None: when the query
    # asks about the past)
    as_of: datetime | None = None
    include_superseded: bool | None = None


class NewSession(Body):
    session_id: str | None = None
    metadata: dict[str, Any] | None = None


class Messages(Body):
    messages: list[Any]


class EndSession(Body):
    wait: bool | None = None


class ContextQuery(Body):
    session_id: str | None = None
    query: str | None = None
    model: str | None = None


class ScratchpadChange(Body):
    focus: str | None = None
    done: str | None = None


class ToolCall(Body):
    name: str
    arguments: dict[str, Any] | str | None = None
    session_id: str | None = None


class Consolidate(Body):
    dry_run: bool = False


class Purge(Body):
    user_id: str
    agent_id: str | None = None


def deleted_memory(event: MemoryEvent) -> dict[str, Any]:
    """A deleted memory as `GET /v1/memories?status=deleted` lists it: as it was, and when,
    by whom and why it was deleted (`POST /v1/memories/{id}/restore` brings it back)."""
    return {**jsonable(event.before or {}), "id": event.memory_id, "status": "deleted",
            "deleted_at": event.created_at.isoformat(), "deleted_by": event.actor, "reason": event.reason}


def request_messages(messages: Any, server: ServerConfig) -> Any:
    """A REST or MCP request's messages within the server's per-request caps (a ValidationError
    naming `messages` past them); the engine checks each message."""
    if isinstance(messages, list):
        chars = sum(len(m["content"]) for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str))
        validate.batch("messages", len(messages), chars,
                       max_count=(server.max_messages_per_request, "server.max_messages_per_request"),
                       max_chars=(server.max_request_chars, "server.max_request_chars"), bulk="POST /v1/import")
    return messages


def who(scope: Scope) -> dict[str, Any]:
    """The keyword arguments that put an engine call in this scope."""
    return {"user_id": scope.user_id, "agent_id": scope.agent_id or None}


# a memory's place in time (issue 32): always in its JSON, null while it does not apply, so a
# client tells "current" from "not said"
VALIDITY = ("valid_from", "valid_to", "superseded_at", "superseded_by", "supersedes")


def memory_json(m: MemoryRecord) -> dict[str, Any]:
    """A memory as JSON: its fields that are set, and its validity fields always."""
    return {**m.model_dump(mode="json", exclude_none=True),
            **{k: jsonable(getattr(m, k)) for k in VALIDITY}}


def jsonable(value: Any) -> Any:
    """Engine results as JSON values: models, dataclasses (their `to_dict` when they have one),
    times as ISO text."""
    if isinstance(value, MemoryRecord):
        return memory_json(value)
    if isinstance(value, Hit) and value.memory is not None:
        return {**value.model_dump(mode="json", exclude_none=True), "memory": memory_json(value.memory)}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return jsonable(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value
