"""memlane over MCP (official `mcp` SDK 2.x, `MCPServer`): the agent tools and the scope's
MEMORY.md / USER.md, over stdio (`memlane mcp`, one scope from flags) or streamable HTTP
at `/mcp` inside `memlane serve` (the bearer key's scope, as on the REST routes).

Every tool is a thin call of the public `Memory` API; the search / recall / remember /
forget / scratchpad tools are the same handlers `Memory.tools()` gives function-calling
agents, so MCP and REST agents see one behaviour.

Each request is bound to its engine and scope by `engine(rctx)` / `scope(rctx)` (fixed
over stdio, the bearer key's over HTTP): the tools, the two files (listed as static
resources, read in the caller's own scope) and the category list that `tools/list`
advertises (the engine's profile) all resolve through them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import FastAPI
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, WithJsonSchema
from pydantic import ValidationError as ArgumentError
from starlette.routing import Route

from memlane import supersession, userprofile, validate
from memlane.api import Memory
from memlane.config import SearchConfig
from memlane.errors import MemlaneError, NotFound
from memlane.models import Scope
from memlane.server.auth import Gate, is_loopback
from memlane.server.errors import ApiError, SafeJSONResponse
from memlane.server.schemas import jsonable, request_messages, who

Engine = Callable[[ServerRequestContext[Any, Any]], Memory]
ScopeOf = Callable[[ServerRequestContext[Any, Any]], Scope]
FILES = ("MEMORY.md", "USER.md")
INSTRUCTIONS = (
    "Long-term memory for this user. Before answering, search_memory for anything earlier context could "
    "inform; dig into search_conversation_traces for exact past wording; add_memory what the user asks to "
    "remember; supersede_memory a fact of theirs that changed (the old one is kept with when it held); "
    "delete_memory what they ask to forget. build_context gives a ready system prompt.")

Query = Annotated[str, Field(description="What to look for, in the user's language.",
                             max_length=SearchConfig.model_fields["max_query_chars"].default)]
Limit = Annotated[int, Field(ge=1, le=20, description="Most results to return.")]
MemoryId = Annotated[str, Field(description="A memory id, as search_memory returns it.", max_length=64)]
AsOf = Annotated[str | None, Field(description="A date such as 2024-03-15 (or a month, 2024-03, or a year): the "
                                               "facts that held then, replaced ones included (for questions about "
                                               "the past).", max_length=40)]
Superseded = Annotated[bool | None, Field(description="Also facts replaced by newer ones, each with when it held "
                                                      "(a question about the past finds them anyway).")]
# the allowed categories are the engine's profile's: `tools/list` adds them as an enum (_PerRequest)
CATEGORY = "category"
# what `Memory.add` / `update` accept (policy.initial_score); the engine checks the value, the
# schema shows the canonical forms
IMPORTANCE_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "string", "enum": ["high", "medium", "low"]}, {"type": "number", "minimum": 0, "maximum": 1}],
    "description": "How much it matters: high, medium or low (a new memory's default is medium), "
                   "or a starting score from 0 to 1."}
Importance = Annotated[str | float | None, WithJsonSchema(IMPORTANCE_SCHEMA)]
_READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
_CHANGE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
# a change keeps the old fact (closed, with its history): not destructive; twice is a conflict
_SUPERSEDE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
_DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)

# the request being handled, for the files' read functions: the SDK gives a static resource
# no Context, and over HTTP each request has its own scope
_REQUEST: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar("memlane_mcp_request", default=None)


def _version() -> str:
    try:
        return version("memlane")
    except PackageNotFoundError:
        return "0+source"


def _run(fn: Callable[[], Any]) -> Any:
    """An engine call as a tool result; memlane's own errors become the tool's error text."""
    try:
        return jsonable(fn())
    except MemlaneError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from None


def _bind(engine: Engine, scope: ScopeOf, rctx: ServerRequestContext[Any, Any],
          failure: type[Exception]) -> tuple[Memory, Scope]:
    """The request's engine and scope; why not (no engine, a bad scope header) as `failure`."""
    try:
        return engine(rctx), scope(rctx)
    except (MemlaneError, ApiError) as exc:
        raise failure(str(exc)) from None


def _tool(bound: tuple[Memory, Scope], name: str, args: dict[str, Any], session_id: str | None = None) -> dict[str, Any]:
    mem, scope = bound
    result = _run(lambda: mem.tools(**who(scope), session_id=session_id).call(name, args))
    if isinstance(result, dict) and set(result) == {"error"}:
        raise ToolError(str(result["error"]))
    return result


def agent_update(mem: Memory, scope: Scope, memory_id: str, content: str | None, category: str | None,
                 importance: str | float | None) -> Any:
    """An agent's change of a memory. It may neither pin nor verify (only a person confirms a
    memory: web UI, CLI, REST), and text it rewrites is its own words: `source="agent"`, not
    verified, not pinned, so it ages like an extracted memory until a person confirms it again."""
    own: dict[str, Any] = {}
    if content is not None and content != mem.get(memory_id, **who(scope)).content:
        own = {"source": "agent", "verified": False, "pinned": False}
    return mem.update(memory_id, **who(scope), content=content, category=category, importance=importance,
                      actor="agent", **own)


def agent_supersede(mem: Memory, scope: Scope, memory_id: str, content: str, valid_from: str | None,
                    category: str | None, reason: str) -> Any:
    """A change the user told the agent: the new fact supersedes the old (kept, closed at
    `valid_from`). Its text is the agent's words, as `agent_update`'s: source "agent", not
    verified, not pinned — in the change's one transaction."""
    return mem.supersede(memory_id, content, **who(scope), valid_from=validate.optional_when("valid_from", valid_from),
                         category=category, actor="agent", reason=reason, source="agent")


def memory_with_timeline(mem: Memory, scope: Scope, memory_id: str) -> dict[str, Any]:
    """A memory's fields; for a fact that changed, `timeline`: its versions oldest first, each
    with when it held ("2019-06-01 – 2024-03-15", "since 2024-03-15")."""
    rec = mem.get(memory_id, **who(scope))
    out: dict[str, Any] = jsonable(rec)
    versions = mem.timeline(memory_id, **who(scope)) if rec.supersedes or rec.superseded_by else [rec]
    if len(versions) > 1:
        out["timeline"] = [{"id": v.id, "content": v.content, "status": v.status, "valid": supersession.span(v)}
                           for v in versions]
    return out


def scope_file(mem: Memory, scope: Scope, name: str) -> str:
    """The text of the scope's MEMORY.md (rendered from the store) or USER.md."""
    if name == "MEMORY.md":
        return mem.export(**who(scope), format="md")
    if name == "USER.md":  # the template (no LLM call to read a resource)
        return userprofile.render_user_md(mem.list(**who(scope), limit=100_000), now=mem.clock(), llm=None)
    raise NotFound(f"no file {name!r}; the scope's files are {', '.join(FILES)}")


# ---- argument errors --------------------------------------------------------------------------

_KINDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
          "object": "an object", "array": "a list"}


def _allowed(schema: dict[str, Any]) -> str:
    """What a JSON schema accepts, in words: "an integer from 1 to 20"."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "anyOf" in schema:
        return " or ".join(_allowed(s) for s in schema["anyOf"] if s.get("type") != "null")
    kind = schema.get("type")
    words = _KINDS.get(kind, "a JSON value") if isinstance(kind, str) else "a JSON value"
    if kind in ("integer", "number") and "minimum" in schema and "maximum" in schema:
        return f"{words} from {schema['minimum']} to {schema['maximum']}"
    if kind == "string" and "maxLength" in schema:
        return f"{words} of at most {schema['maxLength']} characters"
    items = schema.get("items")
    if kind == "array" and isinstance(items, dict) and items.get("type") in ("object", "string", "integer", "number"):
        return f"a list of {items['type']}s"
    return words


def _got(value: Any, error: str) -> str:
    """The rejected value, short: a caller's text may be long, a container deep."""
    if error == "string_too_long" and isinstance(value, str):
        return f"{len(value)} characters"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value) if abs(value) < 1e15 else "a huge number"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _explain(exc: ArgumentError, schema: dict[str, Any]) -> str:
    """Pydantic's verdict on a tool's arguments as memlane words its `ValidationError`s: each
    argument, what it allows and what came ("limit: must be an integer from 1 to 20, got 0")."""
    lines: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        field, node = "", schema
        for part in err["loc"]:  # down the schema as far as it goes (a union's member names do not)
            items, props = node.get("items"), node.get("properties", {})
            if isinstance(part, int) and isinstance(items, dict):
                field, node = f"{field}[{part}]", items
            elif isinstance(part, str) and isinstance(props.get(part), dict):
                field, node = f"{field}.{part}" if field else part, props[part]
            else:
                break
        if not field:
            lines.setdefault(str(err["msg"]), str(err["msg"]))
        elif err["type"] == "missing":
            lines.setdefault(field, f"{field}: is required ({_allowed(node)})")
        else:
            lines.setdefault(field, f"{field}: must be {_allowed(node)}, got {_got(err.get('input'), err['type'])}")
    return "; ".join(lines.values())


# what only a person decides about a memory; the SDK drops an argument a tool does not take,
# so an agent asking for one would be told it succeeded: it is told no instead
PERSON_ONLY = ("verified", "pinned", "source")


class _Tool(Tool):
    """A tool whose argument errors read like memlane's own (`_explain`), not pydantic's dump;
    only this server's tools, the SDK's behaviour elsewhere is left as it is."""

    async def run(self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False) -> Any:
        taken = self.parameters.get("properties", {})
        for name in PERSON_ONLY:
            if name in arguments and name not in taken:
                raise ToolError(f"Error executing tool {self.name}: {name}: an agent cannot set it; a person "
                                "confirms or pins a memory (web UI, `memlane verify`, REST)")
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__  # the SDK's mark of arguments that failed the input schema
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ArgumentError):
                raise
            raise ToolError(f"Error executing tool {self.name}: {_explain(cause, self.parameters)}") from cause


# ---- the per-request binding -----------------------------------------------------------------


def _with_categories(result: HandlerResult, categories: list[str]) -> HandlerResult:
    """A `tools/list` result whose `category` arguments list the allowed categories."""
    if result is None:
        return None
    body = result.model_dump(by_alias=True, mode="json", exclude_none=True) if isinstance(result, BaseModel) \
        else dict(result)
    tools = []
    for tool in body.get("tools", []):
        schema = tool.get("inputSchema") or {}
        props = schema.get("properties") or {}
        if CATEGORY in props:  # a fresh dict: the registered schema is shared by every request
            prop = {k: v for k, v in props[CATEGORY].items() if k not in ("anyOf", "type", "default")}
            props = {**props, CATEGORY: {**prop, "type": "string", "enum": list(categories)}}
            tool = {**tool, "inputSchema": {**schema, "properties": props}}
        tools.append(tool)
    return {**body, "tools": tools}


class _PerRequest:
    """SDK middleware (this server's only): makes the request visible to the files' read
    functions, and gives `tools/list` the engine's profile's categories."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        token = _REQUEST.set(ctx)
        try:
            result = await call_next(ctx)
        finally:
            _REQUEST.reset(token)
        if ctx.method == "tools/list":
            return _with_categories(result, self.engine(ctx).config.policy.categories)
        return result


def _file_reader(engine: Engine, scope: ScopeOf, name: str) -> Callable[[], str]:
    def read() -> str:
        rctx = _REQUEST.get()
        if rctx is None:
            raise ResourceError(f"no request to read {name} for")
        mem, sc = _bind(engine, scope, rctx, ResourceError)
        try:
            return scope_file(mem, sc, name)
        except MemlaneError as exc:
            raise ResourceError(str(exc)) from None
    return read


def build_mcp(engine: Engine, scope: ScopeOf) -> MCPServer:
    """The MCP server; `engine(rctx)` and `scope(rctx)` give each request its engine and scope."""

    def bound(ctx: Context[Any, Any]) -> tuple[Memory, Scope]:
        return _bind(engine, scope, ctx.request_context, ToolError)

    tools: list[Tool] = []

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tools.append(_Tool.from_function(fn, annotations=annotations))
            return fn
        return register

    @tool(_READ)
    def search_memory(query: Query, ctx: Context, limit: Limit = 5,
                      category: Annotated[str | None, Field(description="Only memories of this category.")] = None,
                      as_of: AsOf = None, include_superseded: Superseded = None) -> dict[str, Any]:
        """Level 1: search long-term memory — the user's preferences, rules, facts and experience — and
        summaries of past sessions. Use it first whenever earlier context could matter. A fact that
        changed says when it held (`valid`); `as_of` asks what held at a date."""
        mem, sc = bound(ctx)
        args: dict[str, Any] = {"query": query, "limit": limit}
        if as_of:
            args["as_of"] = as_of
        if include_superseded is not None:
            args["include_superseded"] = include_superseded
        if category:  # checked here, so the error names this argument (the tool filters by it)
            try:
                args[CATEGORY] = validate.category(CATEGORY, category, mem.config.policy.categories,
                                                   mem.config.profile)
            except MemlaneError as exc:
                raise ToolError(str(exc)) from None
        return _tool((mem, sc), "search_memory", args)

    @tool(_READ)
    def search_conversation_traces(query: Query, ctx: Context, limit: Limit = 5,
                                   session_id: str | None = None) -> dict[str, Any]:
        """Level 2: search the raw past conversation turns (with tool calls and results) for exact
        wording or details search_memory's summaries left out."""
        return _tool(bound(ctx), "search_conversation_traces",
                     {"query": query, "limit": limit, **({"session_id": session_id} if session_id else {})})

    @tool(_READ)
    def recall_memory(query: Query, ctx: Context, limit: Limit = 5) -> dict[str, Any]:
        """Search archived memories too: what faded from active memory but was not deleted."""
        return _tool(bound(ctx), "recall_memory", {"query": query, "limit": limit})

    @tool(_READ)
    def get_memory(memory_id: MemoryId, ctx: Context) -> dict[str, Any]:
        """One memory with every field (score, category, dates, source), by id; for a fact that
        changed, its timeline: every version oldest first, with when each held."""
        mem, sc = bound(ctx)
        return _run(lambda: memory_with_timeline(mem, sc, memory_id))

    @tool(_WRITE)
    def add_memory(content: Annotated[str, Field(description="The fact, preference or rule, one sentence.")],
                   ctx: Context,
                   category: Annotated[str | None, Field(description="What kind of memory it is.")] = None,
                   importance: Importance = None) -> dict[str, Any]:
        """Remember something durable about the user (a near-duplicate reinforces the existing memory
        instead of adding another)."""
        args: dict[str, Any] = {"content": content}
        if category:
            args["category"] = category
        if importance is not None and importance != "":
            args["importance"] = importance
        return _tool(bound(ctx), "remember", args)

    @tool(_CHANGE)
    def update_memory(memory_id: MemoryId, ctx: Context, content: str | None = None,
                      category: Annotated[str | None, Field(description="Its new category.")] = None,
                      importance: Importance = None) -> dict[str, Any]:
        """Correct or re-rank a memory (new content replaces the old; the audit trail keeps both)."""
        mem, sc = bound(ctx)
        return _run(lambda: agent_update(mem, sc, memory_id, content, category, importance))

    @tool(_SUPERSEDE)
    def supersede_memory(memory_id: MemoryId,
                         content: Annotated[str, Field(description="The fact as it is now, one sentence.")],
                         ctx: Context,
                         valid_from: Annotated[str | None, Field(
                             description="When it changed, a date such as 2024-03-15, 2024-03 or 2024 (default: now).",
                             max_length=40)] = None,
                         category: Annotated[str | None, Field(description="Its category, if not the old one's.")] = None,
                         reason: str = "") -> dict[str, Any]:
        """A fact about the user changed (they moved, changed jobs, switched diets): the new fact replaces
        the memory, which is kept with when it held and leaves the prompt. Use update_memory to correct
        a memory that was wrong all along. Returns the current memory."""
        mem, sc = bound(ctx)
        return _run(lambda: agent_supersede(mem, sc, memory_id, content, valid_from, category, reason))

    @tool(_DELETE)
    def delete_memory(memory_id: MemoryId, ctx: Context, reason: str = "") -> dict[str, Any]:
        """Forget a memory the user asked to forget, or one that is wrong (undoable from the audit trail)."""
        return _tool(bound(ctx), "forget", {"memory_id": memory_id, **({"reason": reason} if reason else {})})

    @tool(_WRITE)
    def add_messages(session_id: Annotated[str, Field(description="The conversation's id.")],
                     messages: Annotated[list[dict[str, Any]], Field(
                         description='Chat messages: [{"role": "user", "content": "..."}, ...]')],
                     ctx: Context) -> dict[str, Any]:
        """Store conversation turns durably; memories are extracted from them in the background."""
        mem, sc = bound(ctx)
        _spend_turns(ctx.request_context, len(messages))
        turns = _run(lambda: mem.add_messages(session_id, request_messages(messages, mem.config.server), **who(sc)))
        return {"stored": len(turns), "turn_ids": [t["id"] for t in turns]}

    @tool(_READ)
    def build_context(ctx: Context, session_id: str | None = None, query: str | None = None,
                      model: str | None = None) -> dict[str, Any]:
        """A system prompt for the next LLM call: memory self-description, scratchpad, core and relevant
        memories and recent history, each within its token budget."""
        mem, sc = bound(ctx)
        return _run(lambda: mem.build_context(session_id, query, **who(sc), model=model))

    @tool(_WRITE)
    def update_scratchpad(ctx: Context, current_focus: str | None = None,
                          finished_task: str | None = None) -> dict[str, Any]:
        """Set what the user is working on now, and/or record a task just finished."""
        args = {k: v for k, v in (("current_focus", current_focus), ("finished_task", finished_task)) if v}
        return _tool(bound(ctx), "update_scratchpad", args)

    # the SDK calls logging.basicConfig (a rich handler on the root logger at INFO) unless the
    # root logger has a handler: the host application's logging is not the SDK's to set
    guard = logging.NullHandler() if not logging.root.handlers else None
    if guard is not None:
        logging.root.addHandler(guard)
    try:
        server: MCPServer = MCPServer("memlane", instructions=INSTRUCTIONS, version=_version(), tools=tools,
                                      middleware=[_PerRequest(engine)])
    finally:
        if guard is not None:
            logging.root.removeHandler(guard)
    # static URIs, so a client lists them; each read is in the caller's own scope
    for name, what in zip(FILES, ("its memories", "the user's profile"), strict=True):
        server.resource(f"memlane://scope/{name}", name=name, mime_type="text/markdown",
                        description=f"The scope's {name} ({what}).")(_file_reader(engine, scope, name))
    return server


# ---- stdio ----------------------------------------------------------------------------------


def stdio_mcp(mem: Memory, scope: Scope) -> MCPServer:
    """`memlane mcp`: one engine, one scope."""
    return build_mcp(lambda rctx: mem, lambda rctx: scope)


# ---- streamable HTTP inside `memlane serve` ---------------------------------------------------


def _app_state(rctx: ServerRequestContext[Any, Any]) -> Any:
    return getattr(getattr(rctx.request, "app", None), "state", None)


def _spend_turns(rctx: ServerRequestContext[Any, Any], turns: int) -> None:
    """The key's turn budget inside `memlane serve` (server.max_turns_per_minute), as on REST."""
    budget = getattr(_app_state(rctx), "turn_budget", None)
    principal = getattr(getattr(rctx.request, "state", None), "principal", None)
    if budget is None or principal is None:
        return  # stdio: one person's own process
    try:
        budget.take(principal.key_id, turns)
    except ApiError as exc:
        raise ToolError(exc.detail) from None


def _http_engine(rctx: ServerRequestContext[Any, Any]) -> Memory:
    mem: Memory | None = getattr(_app_state(rctx), "memory", None)
    if mem is None:
        raise ApiError(503, "Unavailable", "the memlane engine is not running")
    return mem


def _http_scope(rctx: ServerRequestContext[Any, Any]) -> Scope:
    gate: Gate | None = getattr(_app_state(rctx), "gate", None)
    if rctx.request is None or gate is None:
        raise ApiError(503, "Unavailable", "the memlane engine is not running")
    headers = rctx.request.headers
    # as the guard found it before the body was read; asked again only outside `memlane serve`
    principal = getattr(rctx.request.state, "principal", None) or gate.principal(headers.get("authorization"))
    return gate.scope_of(principal, headers.get("x-memlane-user"), headers.get("x-memlane-agent"))


def http_mcp(bind: str) -> MCPServer:
    """The MCP server for `/mcp`; `mount_http` adds it to the app (whose lifespan runs its
    session manager)."""
    server = build_mcp(_http_engine, _http_scope)
    # stateless JSON: any server process of a home answers any request, restarts lose no session
    security = None if is_loopback(bind) else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                               transport_security=security, host=bind)
    return server


class _KeyFirst:
    """The MCP endpoint behind the same key check as REST: 401 before the SDK sees a request."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        app = scope.get("app")
        gate: Gate | None = getattr(getattr(app, "state", None), "gate", None)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        try:
            if gate is None:
                raise ApiError(503, "Unavailable", "the server is starting or stopping")
            if scope.get("state", {}).get("principal") is None:  # the guard found it already, in a thread
                gate.principal(headers.get("authorization"))
        except ApiError as exc:
            body = {"error": exc.error, "detail": exc.detail,
                    "request_id": scope.get("state", {}).get("request_id")}
            await SafeJSONResponse(body, status_code=exc.status, headers=exc.headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mount_http(app: FastAPI, server: MCPServer) -> None:
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    endpoint = _KeyFirst(StreamableHTTPASGIApp(server.session_manager))
    app.router.routes.append(Route("/mcp", endpoint=endpoint, methods=["GET", "POST", "DELETE"],
                                   include_in_schema=False))
