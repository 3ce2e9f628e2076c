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
# a date of issue 32 as text, read by the engine's one parser (`validate.when`), so REST takes
# what the CLI and MCP take (a month or a year too) and a bad one is refused naming its field
When = Annotated[str | None, Field(description="An ISO 8601 time or day (2024-03-15), a month (2024-03) or a "
                                               "year (2024), from its first day; UTC unless it says otherwise.",
                                   max_length=64)]


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
    valid_from: When = None  # since when the fact holds; default now
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
    valid_from: When = None  # when the new fact began to hold; default now
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
    as_of: When = None
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


# ---- what the API answers: declared for the OpenAPI schema (issue 33) ------------------------
# The routes build their JSON with `jsonable` and return it whole (no second pass through
# FastAPI's encoder); these models only describe it, so /docs, /openapi.json and a generated
# client know each response's shape. tests/test_openapi.py checks real answers against them.


class _Out(BaseModel):
    # extra="allow": a client must accept fields a later version adds
    model_config = ConfigDict(extra="allow")


class Error(_Out):
    """Every error the server sends, whatever its status: what went wrong, and where."""

    error: str = Field(description="the error's name: ValidationError, NotFound, Conflict, Unauthorized, "
                                   "Forbidden, TooManyRequests, Unavailable, …")
    detail: str = Field(description="what went wrong, for a person (the field and the limit for a ValidationError)")
    field: str | None = Field(None, description="the field a ValidationError names (`messages[3].content`)")
    request_id: str | None = Field(None, description="the request's X-Request-ID, as the server log has it")


# status → when the server sends it (server/errors.py and server/guard.py raise them)
ERRORS: dict[int, str] = {
    401: "No API key, or an unknown or revoked one (`WWW-Authenticate: Bearer`).",
    403: "A user key on an admin route, or a cross-site browser request without a key.",
    404: "No such record in this key's scope (another user's id is not found either).",
    408: "The request body did not arrive within `server.body_seconds`.",
    409: "The record is not in a state this change applies to (restoring a memory that exists, "
         "superseding one already replaced).",
    413: "The body is over `server.max_json_bytes` (an import: `server.max_body_bytes`).",
    415: "The body is not JSON (an import: JSONL).",
    421: "The Host header names another server (DNS rebinding protection; `server.allowed_hosts`).",
    422: "A field failed validation (`field` names it), or the JSON is malformed or nested too deep.",
    429: "Too many requests or turns for this key at once (`Retry-After`).",
    500: "An unexpected failure; the server log has it under `request_id`.",
    502: "An LLM or embedder call failed.",
    503: "The database is busy past its timeout or unreachable, or the server is starting or stopping "
         "(`Retry-After`).",
}
# what any /v1 route may answer; a route adds what only it can (404, 409, a body's 408/413/415)
COMMON_ERRORS = (401, 403, 421, 422, 429, 500, 502, 503)
BODY_ERRORS = (408, 413, 415)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these statuses, each with the one error shape."""
    return {status: {"model": Error, "description": ERRORS[status]} for status in statuses}


def answers(model: Any, description: str, *errors: int, status: int = 200) -> dict[int | str, dict[str, Any]]:
    """A route's documented responses: its success shape and the errors only it adds."""
    return {status: {"model": model, "description": description}, **error_responses(*errors)}


class MemoryOut(_Out):
    """A memory as the API sends it: its fields that are set, the validity fields always."""

    id: str
    user_id: str
    agent_id: str | None = None
    content: str
    category: str
    kind: str | None = None
    score: float
    confidence: float | None = None
    subject: str | None = None
    predicate: str | None = None
    created_at: datetime
    updated_at: datetime | None = None
    last_activated: datetime | None = None
    activation_count: int | None = None
    expires_at: datetime | None = None
    source: str | None = Field(None, description="user, extractor, heuristic, agent, import or system")
    verified: bool | None = None
    source_session: str | None = None
    status: Literal["active", "archived", "superseded", "deleted"] = "active"
    pinned: bool | None = None
    metadata: dict[str, Any] | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(None, description="null while the fact still holds")
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    supersedes: str | None = None


class MemoryPage(_Out):
    memories: list[MemoryOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="null on the last page")
    total: int | None = Field(None, description="how many match in all (not given with session_id)")


class AuditEvent(_Out):
    """One audited change of a memory (ADD, UPDATE, DECAY, ARCHIVE, DELETE, SUPERSEDE, …)."""

    id: int
    memory_id: str
    kind: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    actor: str | None = None
    reason: str | None = None
    created_at: datetime


class History(_Out):
    events: list[AuditEvent]


class Timeline(_Out):
    memory_id: str
    versions: list[MemoryOut] = Field(description="every version of the fact, oldest first")


class HitOut(_Out):
    """One search result: the record found, where it came from and its relevance in [0, 1]."""

    corpus: Literal["memories", "turns", "episodes"]
    id: str
    content: str
    score: float
    source: str | None = None
    highlights: list[str] | None = None
    memory: MemoryOut | None = None
    turn: dict[str, Any] | None = None
    episode: dict[str, Any] | None = None


class Hits(_Out):
    hits: list[HitOut]


class SessionOut(_Out):
    id: str
    user_id: str
    started_at: datetime
    ended_at: datetime | None = None
    summary: str | None = None
    message_count: int | None = None


class Sessions(_Out):
    sessions: list[SessionOut]


class StoredTurn(_Out):
    id: str
    seq: int
    role: str
    created_at: datetime


class Stored(_Out):
    session_id: str
    stored: int
    turns: list[StoredTurn]


class TurnOut(_Out):
    id: str
    session_id: str
    seq: int
    role: str
    content: str
    created_at: datetime


class Turns(_Out):
    turns: list[TurnOut]


class Ended(_Out):
    session_id: str
    results: list[dict[str, Any]] = Field(description="one per rule that ran: rule, action, result, status")


class Episodes(_Out):
    episodes: list[dict[str, Any]]


class ContextOut(_Out):
    system_prompt: str
    blocks: list[dict[str, Any]] = Field(description="name, tokens, budget, items, text of each block")
    messages: list[dict[str, Any]] = Field(description="system prompt + history as chat messages")
    budgets: dict[str, Any] | None = None
    warnings: list[str] | None = None


class Tools(_Out):
    tools: list[dict[str, Any]] = Field(description="OpenAI or Anthropic function-calling definitions")


class ToolResult(_Out):
    name: str
    result: Any = Field(description="the tool's answer; a failure the model can fix is `{\"error\": …}`")


class ForgetOut(_Out):
    counts: dict[str, int] = Field(description="rows removed per table")
    files: int
    cached_vectors: int


class Health(_Out):
    status: Literal["ok", "unavailable"]
    version: str | None = None



# GET /v1/export answers text, not JSON: the JSONL that POST /v1/import takes, or MEMORY.md
EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {200: {
    "description": "The scope as JSONL (`format=jsonl`, lossless) or MEMORY.md text (`format=md`).",
    "content": {"application/x-ndjson": {"schema": {"type": "string"}},
                "text/markdown": {"schema": {"type": "string"}}}}}


class SkippedOut(_Out):
    record: str = Field(description="which record: the file's name and where in it")
    reason: str


class ImportOut(_Out):
    """What an import did. A memlane export (no `from`): `added` / `skipped` counts per kind.
    Another tool's export (`from`): sessions, turns and memories added (or, dry_run, that would
    be), those an earlier import already stored, the bad records skipped, a preview."""

    user_id: str
    agent_id: str | None = None
    added: dict[str, int] | None = Field(None, description="memlane export: records added per kind")
    format: str | None = Field(None, description="from: the format read")
    dry_run: bool | None = None
    sessions: int | None = None
    turns: int | None = None
    memories: int | None = None
    already: int | None = Field(None, description="from: turns and memories an earlier import stored")
    skipped: dict[str, int] | list[SkippedOut] | None = Field(
        None, description="memlane export: records already there per kind; from: the bad records, each named")
    preview: list[str] | None = None
    session_ids: list[str] | None = Field(None, description="from: the sessions that got new turns")
    stored_ids: list[str] | None = Field(None, description="from: the file's sessions an earlier import stored whole")
    extraction_jobs: int | None = None


# the raw body of POST /v1/import, by what `from` says it is
IMPORT_BODY: dict[str, Any] = {"requestBody": {"required": True, "description": (
    "A memlane JSONL export (no `from`); else the other tool's export file as it is: ChatGPT's or Claude's "
    "conversations.json, mem0's get_all output or platform export, a Letta .af file; markdown notes as "
    '{"notes": {"name.md": "text"}}'), "content": {
    "application/x-ndjson": {"schema": {"type": "string"}},
    "application/json": {"schema": {"type": "object", "additionalProperties": True}}}}}
