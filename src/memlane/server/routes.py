"""The `/v1` REST routes: thin calls of the public `Memory` API in the request's scope.

Every route takes its scope from `auth.get_scope` (the key's), never from the path or body,
so another user's id is simply not found in this scope: 404, never their data. A JSON body
is parsed in a worker thread (`JSONRoute`), never on the event loop that serves everyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from memlane import validate
from memlane.errors import MemlaneError
from memlane.models import Activity, Forecast, Scratchpad, Stats
from memlane.server import schemas as s
from memlane.server.auth import AdminDep, MemoryDep, PrincipalDep, ScopeDep, get_scope
from memlane.server.errors import SafeJSONResponse
from memlane.server.schemas import jsonable, who


def parse_json(body: bytes, max_depth: int) -> Any:
    """A request's JSON, refused (422) past `max_depth` levels of nesting."""
    try:
        value = json.loads(body)
    except RecursionError:
        value, depth = None, max_depth + 1
    else:
        depth, stack = 0, [(value, 1)]
        while stack and depth <= max_depth:  # no recursion: a deep value cannot overflow the walk
            v, d = stack.pop()
            if isinstance(v, dict | list):
                depth = max(depth, d)
                stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    if depth > max_depth:
        raise HTTPException(422, f"body: JSON nested deeper than {max_depth} levels (server.max_json_depth)")
    return value


class _ThreadedJSON(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            depth = self.app.state.config.server.max_json_depth
            self._json = await anyio.to_thread.run_sync(parse_json, body, depth)
        return self._json


class JSONRoute(APIRoute):
    """A route whose JSON body is parsed in a worker thread: 2 MB of `[0,0,…]` costs tens of
    milliseconds to parse, which on the event loop every other request would wait for."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def threaded(request: Request) -> Response:
            return await handler(_ThreadedJSON(request.scope, request.receive))

        return threaded


v1 = APIRouter(prefix="/v1", dependencies=[Depends(get_scope)], route_class=JSONRoute)
admin = APIRouter(prefix="/v1", route_class=JSONRoute)  # scope-free admin routes (their own dependency)
Json = dict[str, Any]


def ok(data: Any, status: int = 200) -> Response:
    """The JSON response, rendered once (no second pass through FastAPI's encoder)."""
    return SafeJSONResponse(data, status_code=status)


# ---- memories ------------------------------------------------------------------------------


@v1.post("/memories", status_code=201, tags=["memories"],
         responses=s.answers(s.MemoryOut, "The memory stored.", *s.BODY_ERRORS, status=201))
def add_memory(body: s.NewMemory, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Store one memory directly (audited as ADD)."""
    rec = mem.add(body.content, **who(scope), category=body.category, importance=body.importance,
                  metadata=body.metadata, pinned=body.pinned, expires_at=body.expires_at,
                  session_id=body.session_id, subject=body.subject, predicate=body.predicate,
                  confidence=body.confidence, source=body.source, actor="api",
                  valid_from=validate.optional_when("valid_from", body.valid_from))
    return ok(jsonable(rec), 201)


@v1.get("/memories", tags=["memories"], responses=s.answers(s.MemoryPage, "One page of memories."))
def list_memories(mem: MemoryDep, scope: ScopeDep, category: str | None = None,
                  status: Literal["active", "archived", "superseded", "deleted"] | None = None,
                  session_id: str | None = None,
                  since: str | None = None, until: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                  offset: Annotated[int, Query(ge=0)] = 0,
                  source: str | None = None, verified: bool | None = None, pinned: bool | None = None,
                  min_score: Annotated[float | None, Query(ge=0, le=1)] = None,
                  max_score: Annotated[float | None, Query(ge=0, le=1)] = None,
                  sort: Literal["score", "updated_at", "created_at", "last_activated", "activation_count",
                                "content"] = "score",
                  order: Literal["asc", "desc"] = "desc") -> Response:
    """Memories of the scope, filtered, sorted (best score first by default) and paged in the
    store (`next_offset` is null on the last page; `total`: how many match in all).
    `status=superseded`: facts a newer one replaced (`GET .../timeline` shows each chain);
    `status=deleted`: the deleted ones that can still be restored, last deleted first."""
    if status == "deleted":
        gone = mem.deleted(**who(scope), limit=limit + 1, offset=offset)
        return ok({"memories": [s.deleted_memory(e) for e in gone[:limit]], "limit": limit, "offset": offset,
                   "next_offset": offset + limit if len(gone) > limit else None})
    match: dict[str, Any] = {
        "category": category, "status": status, "since": validate.optional_when("since", since),
        "until": validate.optional_when("until", until), "source": source, "verified": verified, "pinned": pinned,
        "min_score": min_score, "max_score": max_score}
    rows = mem.list(**who(scope), **match, session_id=session_id, sort=sort, descending=order == "desc",
                    limit=limit + 1, offset=offset)
    more = len(rows) > limit
    total = mem.count(**who(scope), **match) if session_id is None else None
    return ok({"memories": jsonable(rows[:limit]), "limit": limit, "offset": offset,
               "next_offset": offset + limit if more else None, "total": total})


@v1.get("/memories/{memory_id}", tags=["memories"], responses=s.answers(s.MemoryOut, "The memory.", 404))
def get_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """One memory of the scope, by id (whatever its status)."""
    return ok(jsonable(mem.get(memory_id, **who(scope))))


@v1.patch("/memories/{memory_id}", tags=["memories"],
          responses=s.answers(s.MemoryOut, "The memory as changed.", 404, *s.BODY_ERRORS))
def update_memory(memory_id: str, body: s.MemoryChange, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Change a memory (new content is re-embedded); audited as UPDATE."""
    rec = mem.update(memory_id, **who(scope), content=body.content, category=body.category,
                     importance=body.importance, score=body.score, metadata=body.metadata, pinned=body.pinned,
                     verified=body.verified, status=body.status, expires_at=body.expires_at, reason=body.reason,
                     actor="api")
    return ok(jsonable(rec))


@v1.delete("/memories/{memory_id}", tags=["memories"],
           responses=s.answers(s.MemoryOut, "The memory as it was, with `status: deleted`.", 404))
def delete_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep, hard: bool = False, reason: str = "") -> Response:
    """Forget a memory (kept on the audit trail for `restore`, unless `hard`); returns it as it
    was, with `status: deleted`."""
    gone = jsonable(mem.delete(memory_id, **who(scope), hard=hard, reason=reason, actor="api"))
    return ok({**gone, "status": "deleted"})


@v1.post("/memories/{memory_id}/pin", tags=["memories"], responses=s.answers(s.MemoryOut, "The memory, pinned.", 404))
def pin_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Pin a memory: core, never decays."""
    return ok(jsonable(mem.update(memory_id, **who(scope), pinned=True, actor="api")))


@v1.delete("/memories/{memory_id}/pin", tags=["memories"],
           responses=s.answers(s.MemoryOut, "The memory, unpinned.", 404))
def unpin_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Unpin a memory: it ages by its category's rules again."""
    return ok(jsonable(mem.update(memory_id, **who(scope), pinned=False, actor="api")))


@v1.post("/memories/{memory_id}/verify", tags=["memories"],
         responses=s.answers(s.MemoryOut, "The memory, verified.", 404))
def verify_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """A person confirms a memory (an agent's or an extractor's): verified, it no longer decays."""
    return ok(jsonable(mem.update(memory_id, **who(scope), verified=True, actor="api",
                                 reason="confirmed by a person")))


@v1.delete("/memories/{memory_id}/verify", tags=["memories"],
           responses=s.answers(s.MemoryOut, "The memory, no longer verified.", 404))
def unverify_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Withdraw a person's confirmation: the memory ages again."""
    return ok(jsonable(mem.update(memory_id, **who(scope), verified=False, actor="api",
                                 reason="confirmation withdrawn")))


@v1.get("/memories/{memory_id}/history", tags=["memories"],
        responses=s.answers(s.History, "The audit trail.", 404))
def memory_history(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """The audit trail of one memory, oldest first."""
    return ok({"events": jsonable(mem.history(memory_id, **who(scope)))})


@v1.post("/memories/{memory_id}/supersede", tags=["memories"],
         responses=s.answers(s.MemoryOut, "The current memory: the one that replaces it.", 404, 409, *s.BODY_ERRORS))
def supersede_memory(memory_id: str, body: s.MemorySuccessor, mem: MemoryDep, scope: ScopeDep) -> Response:
    """The fact changed: new `content` (or the stored memory `by`) replaces this memory, which is
    closed at `valid_from` (default now) and kept with its history, out of the prompt and the
    default search. Returns the current memory; audited as SUPERSEDE on both."""
    rec = mem.supersede(memory_id, body.content, **who(scope), by=body.by,
                        valid_from=validate.optional_when("valid_from", body.valid_from),
                        category=body.category, reason=body.reason, actor="api")
    return ok(jsonable(rec))


@v1.get("/memories/{memory_id}/timeline", tags=["memories"],
        responses=s.answers(s.Timeline, "Every version, oldest first.", 404))
def memory_timeline(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Every version of the fact this memory is one of, oldest first, each with when it held
    (`valid_from`, `valid_to`: null while it still holds)."""
    return ok({"memory_id": memory_id, "versions": jsonable(mem.timeline(memory_id, **who(scope)))})


@v1.get("/memories/{memory_id}/forecast", tags=["memories"],
        responses=s.answers(Forecast, "What decay will do, and when.", 404))
def memory_forecast(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """What the decay policy will do to the memory if nothing touches it again, and when."""
    return ok(jsonable(mem.forecast(memory_id, **who(scope))))


@v1.post("/memories/{memory_id}/undo", tags=["memories"],
         responses=s.answers(s.AuditEvent, "The event that reverted the change.", 404, 409))
def undo_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Revert the memory's last audited change; returns the reverting event."""
    return ok(jsonable(mem.undo(memory_id, **who(scope), actor="api")))


@v1.post("/memories/{memory_id}/restore", tags=["memories"],
         responses=s.answers(s.MemoryOut, "The memory, back under its id.", 404, 409))
def restore_memory(memory_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Bring a deleted memory back under its id."""
    return ok(jsonable(mem.restore(memory_id, **who(scope), actor="api")))


# ---- search --------------------------------------------------------------------------------


@v1.post("/search", tags=["search"], responses=s.answers(s.Hits, "The hits, best first.", *s.BODY_ERRORS))
def search(body: s.SearchQuery, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Hybrid search of memories (default), turns or episodes. `as_of`: the facts that held at
    that time; `include_superseded`: replaced facts beside the current ones (by default only
    when the query asks about the past)."""
    hits = mem.search(body.query, **who(scope), corpus=body.corpus, limit=body.limit, filters=body.filters,
                      min_score=body.min_score,
                      as_of=validate.optional_when("as_of", body.as_of), include_superseded=body.include_superseded)
    return ok({"hits": jsonable(hits)})


# ---- sessions ------------------------------------------------------------------------------


@v1.post("/sessions", status_code=201, tags=["sessions"],
         responses=s.answers(s.SessionOut, "The session.", *s.BODY_ERRORS, status=201))
def start_session(body: s.NewSession, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Open a session (a new id when none is given); an existing one is resumed."""
    return ok(jsonable(mem.start_session(body.session_id, **who(scope), metadata=body.metadata)), 201)


@v1.get("/sessions", tags=["sessions"], responses=s.answers(s.Sessions, "The sessions."))
def list_sessions(mem: MemoryDep, scope: ScopeDep) -> Response:
    """The scope's sessions, newest first (the last 100)."""
    return ok({"sessions": jsonable(mem.sessions(**who(scope)))})


@v1.get("/sessions/{session_id}", tags=["sessions"], responses=s.answers(s.SessionOut, "The session.", 404))
def get_session(session_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """One session: when it started and ended, its rolling summary, its message count."""
    return ok(jsonable(mem.get_session(session_id, **who(scope))))


@v1.post("/sessions/{session_id}/messages", status_code=201, tags=["sessions"],
         responses=s.answers(s.Stored, "The turns stored.", *s.BODY_ERRORS, status=201))
def add_messages(session_id: str, body: s.Messages, mem: MemoryDep, scope: ScopeDep, principal: PrincipalDep,
                 request: Request) -> Response:
    """Store turns durably; returns once they are committed (extraction follows in the
    background): each turn's id, seq and role, not the text sent (`GET .../turns` reads it)."""
    messages = s.request_messages(body.messages, mem.config.server)
    request.app.state.turn_budget.take(principal.key_id, len(messages) if isinstance(messages, list) else 1)
    turns = mem.add_messages(session_id, messages, **who(scope))
    return ok({"session_id": session_id, "stored": len(turns),
               "turns": [{"id": t.id, "seq": t.seq, "role": t.role, "created_at": t.created_at.isoformat()}
                         for t in turns]}, 201)


@v1.get("/sessions/{session_id}/turns", tags=["sessions"],
        responses=s.answers(s.Turns, "The session's turns, in order.", 404))
def session_turns(session_id: str, mem: MemoryDep, scope: ScopeDep,
                  limit: Annotated[int | None, Query(ge=1, le=10_000)] = None) -> Response:
    """A session's turns as stored, in order (`limit`: the first this many)."""
    mem.get_session(session_id, **who(scope))  # 404 for a session this scope does not have
    return ok({"turns": jsonable(mem.get_turns(session_id, **who(scope), limit=limit))})


@v1.post("/sessions/{session_id}/end", tags=["sessions"],
         responses=s.answers(s.Ended, "What each rule did.", 404, *s.BODY_ERRORS))
def end_session(session_id: str, mem: MemoryDep, scope: ScopeDep, body: s.EndSession | None = None) -> Response:
    """Close a session: its extraction is queued (or run, with `wait`) and an episode written."""
    results = mem.end_session(session_id, **who(scope), wait=body.wait if body else None)
    return ok({"session_id": session_id, "results": jsonable(results)})


@v1.delete("/sessions/{session_id}", tags=["sessions"],
           responses=s.answers(s.ForgetOut, "What was removed.", 404))
def delete_session(session_id: str, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Forget a conversation: the session, its turns, episodes and jobs."""
    mem.get_session(session_id, **who(scope))
    return ok(jsonable(mem.delete_session(session_id, **who(scope))))


@v1.get("/episodes", tags=["sessions"], responses=s.answers(s.Episodes, "The episodes, newest first."))
def list_episodes(mem: MemoryDep, scope: ScopeDep, session_id: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> Response:
    """Episodes: the summaries of finished sessions (of one, with `session_id`)."""
    return ok({"episodes": jsonable(mem.episodes(**who(scope), session_id=session_id, limit=limit))})


# ---- context, scratchpad, tools ------------------------------------------------------------


@v1.post("/context", tags=["context"],
         responses=s.answers(s.ContextOut, "The context for the next LLM call.", *s.BODY_ERRORS))
def build_context(body: s.ContextQuery, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Blocks within budgets, the rendered system prompt and chat messages for the next LLM call."""
    ctx = mem.build_context(body.session_id, body.query, **who(scope), model=body.model)
    return ok({**jsonable(ctx), "messages": jsonable(ctx.messages())})


@v1.get("/scratchpad", tags=["context"], responses=s.answers(Scratchpad, "The scratchpad."))
def get_scratchpad(mem: MemoryDep, scope: ScopeDep) -> Response:
    """The scratchpad: the current focus and the last finished tasks."""
    return ok(jsonable(mem.scratchpad(**who(scope))))


@v1.put("/scratchpad", tags=["context"],
        responses=s.answers(Scratchpad, "The scratchpad as changed.", *s.BODY_ERRORS))
def update_scratchpad(body: s.ScratchpadChange, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Set the current focus (the old one moves to the recent tasks) and/or record a finished task."""
    return ok(jsonable(mem.update_scratchpad(**who(scope), focus=body.focus, done=body.done)))


@v1.get("/tools", tags=["tools"], responses=s.answers(s.Tools, "The tools' definitions."))
def tool_schemas(mem: MemoryDep, scope: ScopeDep, format: Literal["openai", "anthropic"] = "openai") -> Response:
    """The agent tools' function-calling schemas."""
    return ok({"tools": mem.tools(**who(scope)).schemas(format)})


@v1.post("/tools/call", tags=["tools"], responses=s.answers(s.ToolResult, "The tool's answer.", *s.BODY_ERRORS))
def call_tool(body: s.ToolCall, mem: MemoryDep, scope: ScopeDep) -> Response:
    """Run one agent tool in this scope; a failure the model can fix comes back as `{"error": ...}`."""
    tools = mem.tools(**who(scope), session_id=body.session_id)
    return ok({"name": body.name, "result": jsonable(tools.call(body.name, body.arguments))})


# ---- lifecycle, export / import, stats -----------------------------------------------------


@v1.post("/consolidate", tags=["lifecycle"],
         responses=s.answers(dict[str, Any], "The consolidation report: scopes, actions, jobs, files, "
                             "errors.", *s.BODY_ERRORS))
def consolidate(mem: MemoryDep, scope: ScopeDep, body: s.Consolidate | None = None) -> Response:
    """Run consolidation for this scope now (dedup, decay, archive, review, files)."""
    return ok(jsonable(mem.consolidate(**who(scope), dry_run=body.dry_run if body else False)))


@v1.get("/export", tags=["portable"], response_class=PlainTextResponse, responses=s.EXPORT_RESPONSES)
def export(mem: MemoryDep, scope: ScopeDep, format: Literal["jsonl", "md"] = "jsonl") -> PlainTextResponse:
    """The whole scope as JSONL (lossless, for /v1/import) or MEMORY.md text."""
    media = "application/x-ndjson" if format == "jsonl" else "text/markdown"
    return PlainTextResponse(mem.export(**who(scope), format=format), media_type=f"{media}; charset=utf-8")


ImportFormat = Literal["chatgpt", "claude", "mem0", "letta", "markdown"]


@v1.post("/import", tags=["portable"], openapi_extra=s.IMPORT_BODY,
         responses=s.answers(s.ImportOut, "What was imported (or, dry_run, would be).", *s.BODY_ERRORS))
async def import_(
    request: Request, mem: MemoryDep, scope: ScopeDep,
    from_: Annotated[ImportFormat | None, Query(alias="from", description=(
        "another tool's export in the body: chatgpt or claude (conversations.json), mem0 (get_all output or a "
        "platform export), letta (an .af agent file) or markdown (a JSON object {\"notes\": {\"name.md\": text}}); "
        "absent: a memlane JSONL export"))] = None,
    dry_run: Annotated[bool, Query(description="with from: count what would be added, write nothing")] = False,
    extract: Annotated[bool, Query(description="with from: queue extraction of the imported sessions")] = False,
    source_user: Annotated[str | None, Query(description="mem0: whose memories to take from a file of several "
                                                          "users")] = None,
) -> Response:
    """Import a JSONL export (the raw body) into this scope, all or nothing; or, with `from`,
    another tool's export (bad records skipped and listed, a second run adds nothing)."""
    data = await request.body()
    if from_ is None:
        return ok(await asyncio.to_thread(_import_bytes, mem, scope, data))
    return ok(await asyncio.to_thread(_import_foreign, mem, scope, data, from_, dry_run, extract, source_user))


def _import_bytes(mem: Any, scope: Any, data: bytes) -> Response:
    with tempfile.TemporaryDirectory(prefix="memlane-import-") as tmp:
        path = Path(tmp) / "import.jsonl"
        path.write_bytes(data)
        with _unplaced(path):
            report = mem.import_(path, user_id=scope.user_id, agent_id=scope.agent_id)
    return _unplaced_value(jsonable(report), str(path))


def _import_foreign(mem: Any, scope: Any, data: bytes, fmt: str, dry_run: bool, extract: bool,
                    source_user: str | None) -> Any:
    """`Memory.import_from` on the body, written to a private temporary file (markdown: its
    notes to a temporary folder); the report never names the server's files."""
    with tempfile.TemporaryDirectory(prefix="memlane-import-") as tmp:
        path = Path(tmp) / ("notes" if fmt == "markdown" else "import.af" if fmt == "letta" else "import.json")
        with _unplaced(path):
            if fmt == "markdown":
                write_notes(path, data)
            else:
                path.write_bytes(data)
            report = mem.import_from(path, format=fmt, **who(scope), dry_run=dry_run, extract=extract,
                                     source_user=source_user)
    return _unplaced_value(report.to_dict(), str(path))


def write_notes(folder: Path, data: bytes) -> None:
    """{"notes": {"people/ana.md": "text", ...}} → the files under `folder`; a name that would
    leave it ("..", an absolute path) is refused."""
    from memlane.errors import ValidationError

    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        raise ValidationError("body", 'markdown notes come as JSON: {"notes": {"name.md": "text", ...}}') from None
    notes = body.get("notes") if isinstance(body, dict) else None
    if not isinstance(notes, dict) or not notes:
        raise ValidationError("notes", 'must be an object of file name → markdown text, e.g. {"a.md": "- a fact"}')
    for name, text in notes.items():
        parts = [p for p in str(name).replace("\\", "/").split("/") if p not in ("", ".")]
        if not parts or ".." in parts or str(name).startswith("/") or not isinstance(text, str):
            raise ValidationError(f"notes[{str(name)[:60]!r}]", "a note is a relative file name → its text")
        target = folder.joinpath(*parts).with_suffix(".md")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, "utf-8", errors="surrogatepass")
        except (OSError, ValueError) as exc:  # a NUL, a name or path too long for the disk
            why = getattr(exc, "strerror", None) or str(exc)
            raise ValidationError(f"notes[{str(name)[:60]!r}]", f"cannot be a file name here ({why})") from None


@contextlib.contextmanager
def _unplaced(path: Path) -> Iterator[None]:
    """An engine error's message may name the server's temporary file: "the body" instead."""
    try:
        yield
    except MemlaneError as exc:
        exc.args = tuple(_unplaced_value(a, str(path)) for a in exc.args)
        if isinstance(getattr(exc, "field", None), str):
            exc.field = _unplaced_value(exc.field, str(path))  # type: ignore[attr-defined]
        raise


def _unplaced_value(value: Any, where: str) -> Any:
    """The import report without this server's temporary file: no field says where it was
    (`path`, `file`, any text naming it), as nothing the client can use."""
    if isinstance(value, dict):
        return {k: _unplaced_value(v, where) for k, v in value.items() if k not in ("path", "file")}
    if isinstance(value, list):
        return [_unplaced_value(v, where) for v in value]
    if isinstance(value, str):
        return value.replace(where, "the body")
    return value


@v1.get("/stats", tags=["admin"], responses=s.answers(Stats, "The scope's counts."))
def stats(mem: MemoryDep, scope: ScopeDep) -> Response:
    """Counts of the scope's memories, turns, sessions, episodes and pending jobs."""
    return ok(jsonable(mem.stats(**who(scope))))


@v1.get("/activity", tags=["admin"], responses=s.answers(Activity, "Counts per day, oldest first."))
def activity(mem: MemoryDep, scope: ScopeDep,
             days: Annotated[int, Query(ge=1, le=3650, description="the last this many days")] = 120) -> Response:
    """Active, archived and deleted memories at the end of each day, from the audit trail."""
    return ok(jsonable(mem.activity(**who(scope), days=days)))


@admin.post("/admin/purge", tags=["admin"],
            responses=s.answers(s.ForgetOut, "What was removed.", *s.COMMON_ERRORS, *s.BODY_ERRORS))
def purge(body: s.Purge, mem: MemoryDep, _: AdminDep) -> Response:
    """Forget a user (every agent scope of it without agent_id): every row, vector, cache and file."""
    return ok(jsonable(mem.purge(user_id=body.user_id, agent_id=body.agent_id, actor="admin")))
