"""memlane over MCP (official `mcp` SDK 2.x, `MCPServer`): the agent tools and the scope's
MEMORY.md / USER.md, over stdio (`memlane mcp`, one scope from flags) or streamable HTTP
at `/mcp` inside `memlane serve` (the bearer key's scope, as on the REST routes).

Every tool is a thin call of the public `Memory` API; the search / recall / remember /
forget / scratchpad tools are the same handlers `Memory.tools()` gives function-calling
agents, so MCP and REST agents see one behaviour.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field
from starlette.routing import Route

from memlane import userprofile
from memlane.api import Memory
from memlane.errors import MemlaneError, NotFound
from memlane.models import Scope
from memlane.server.auth import Gate, is_loopback
from memlane.server.errors import ApiError, SafeJSONResponse
from memlane.server.schemas import jsonable, who

Binding = Callable[[Context[Any, Any]], tuple[Memory, Scope]]
FILES = ("MEMORY.md", "USER.md")
INSTRUCTIONS = (
    "Long-term memory for this user. Before answering, search_memory for anything earlier context could "
    "inform; dig into search_conversation_traces for exact past wording; add_memory what the user asks to "
    "remember; delete_memory what they ask to forget. build_context gives a ready system prompt.")

Query = Annotated[str, Field(description="What to look for, in the user's language.", max_length=10_000)]
Limit = Annotated[int, Field(ge=1, le=20, description="Most results to return.")]
MemoryId = Annotated[str, Field(description="A memory id, as search_memory returns it.", max_length=64)]
_READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
_WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
_CHANGE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
_DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)


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


def _tool(binding: Binding, ctx: Context[Any, Any], name: str, args: dict[str, Any],
          session_id: str | None = None) -> dict[str, Any]:
    mem, scope = binding(ctx)
    result = _run(lambda: mem.tools(**who(scope), session_id=session_id).call(name, args))
    if isinstance(result, dict) and set(result) == {"error"}:
        raise ToolError(str(result["error"]))
    return result


def scope_file(mem: Memory, scope: Scope, name: str) -> str:
    """The text of the scope's MEMORY.md (rendered from the store) or USER.md."""
    if name == "MEMORY.md":
        return mem.export(**who(scope), format="md")
    if name == "USER.md":  # the template (no LLM call to read a resource)
        return userprofile.render_user_md(mem.list(**who(scope), limit=100_000), now=mem.clock(), llm=None)
    raise NotFound(f"no file {name!r}; the scope's files are {', '.join(FILES)}")


def build_mcp(binding: Binding, *, static_scope: tuple[Memory, Scope] | None = None) -> MCPServer:
    """The MCP server; `binding(ctx)` gives each call its engine and scope."""
    # the SDK calls logging.basicConfig (a rich handler on the root logger at INFO) unless the
    # root logger has a handler: the host application's logging is not the SDK's to set
    guard = logging.NullHandler() if not logging.root.handlers else None
    if guard is not None:
        logging.root.addHandler(guard)
    try:
        server: MCPServer = MCPServer("memlane", instructions=INSTRUCTIONS, version=_version())
    finally:
        if guard is not None:
            logging.root.removeHandler(guard)

    @server.tool(annotations=_READ)
    def search_memory(query: Query, ctx: Context, limit: Limit = 5, category: str | None = None) -> dict[str, Any]:
        """Level 1: search long-term memory — the user's preferences, rules, facts and experience — and
        summaries of past sessions. Use it first whenever earlier context could matter."""
        return _tool(binding, ctx, "search_memory", {"query": query, "limit": limit,
                                                     **({"category": category} if category else {})})

    @server.tool(annotations=_READ)
    def search_conversation_traces(query: Query, ctx: Context, limit: Limit = 5,
                                   session_id: str | None = None) -> dict[str, Any]:
        """Level 2: search the raw past conversation turns (with tool calls and results) for exact
        wording or details search_memory's summaries left out."""
        return _tool(binding, ctx, "search_conversation_traces",
                     {"query": query, "limit": limit, **({"session_id": session_id} if session_id else {})})

    @server.tool(annotations=_READ)
    def recall_memory(query: Query, ctx: Context, limit: Limit = 5) -> dict[str, Any]:
        """Search archived memories too: what faded from active memory but was not deleted."""
        return _tool(binding, ctx, "recall_memory", {"query": query, "limit": limit})

    @server.tool(annotations=_READ)
    def get_memory(memory_id: MemoryId, ctx: Context) -> dict[str, Any]:
        """One memory with every field (score, category, dates, source), by id."""
        mem, scope = binding(ctx)
        return _run(lambda: mem.get(memory_id, **who(scope)))

    @server.tool(annotations=_WRITE)
    def add_memory(content: Annotated[str, Field(description="The fact, preference or rule, one sentence.")],
                   ctx: Context, category: str | None = None,
                   importance: Annotated[str | None, Field(description="high, medium or low")] = None) -> dict[str, Any]:
        """Remember something durable about the user (a near-duplicate reinforces the existing memory
        instead of adding another)."""
        args: dict[str, Any] = {"content": content}
        if category:
            args["category"] = category
        if importance:
            args["importance"] = importance
        return _tool(binding, ctx, "remember", args)

    @server.tool(annotations=_CHANGE)
    def update_memory(memory_id: MemoryId, ctx: Context, content: str | None = None, category: str | None = None,
                      importance: str | None = None, pinned: bool | None = None) -> dict[str, Any]:
        """Correct or re-rank a memory (new content replaces the old; the audit trail keeps both)."""
        mem, scope = binding(ctx)
        return _run(lambda: mem.update(memory_id, **who(scope), content=content,
                                       category=category, importance=importance, pinned=pinned, actor="agent"))

    @server.tool(annotations=_DELETE)
    def delete_memory(memory_id: MemoryId, ctx: Context, reason: str = "") -> dict[str, Any]:
        """Forget a memory the user asked to forget, or one that is wrong (undoable from the audit trail)."""
        return _tool(binding, ctx, "forget", {"memory_id": memory_id, **({"reason": reason} if reason else {})})

    @server.tool(annotations=_WRITE)
    def add_messages(session_id: Annotated[str, Field(description="The conversation's id.")],
                     messages: Annotated[list[dict[str, Any]], Field(
                         description='Chat messages: [{"role": "user", "content": "..."}, ...]')],
                     ctx: Context) -> dict[str, Any]:
        """Store conversation turns durably; memories are extracted from them in the background."""
        mem, scope = binding(ctx)
        turns = _run(lambda: mem.add_messages(session_id, messages, **who(scope)))
        return {"stored": len(turns), "turn_ids": [t["id"] for t in turns]}

    @server.tool(annotations=_READ)
    def build_context(ctx: Context, session_id: str | None = None, query: str | None = None,
                      model: str | None = None) -> dict[str, Any]:
        """A system prompt for the next LLM call: memory self-description, scratchpad, core and relevant
        memories and recent history, each within its token budget."""
        mem, scope = binding(ctx)
        return _run(lambda: mem.build_context(session_id, query, **who(scope), model=model))

    @server.tool(annotations=_WRITE)
    def update_scratchpad(ctx: Context, current_focus: str | None = None,
                          finished_task: str | None = None) -> dict[str, Any]:
        """Set what the user is working on now, and/or record a task just finished."""
        args = {k: v for k, v in (("current_focus", current_focus), ("finished_task", finished_task)) if v}
        return _tool(binding, ctx, "update_scratchpad", args)

    @server.resource("memlane://scope/{name}", mime_type="text/markdown",
                     description="The scope's MEMORY.md (its memories) or USER.md (the user's profile).")
    def scope_files(name: str, ctx: Context) -> str:
        mem, scope = binding(ctx)
        try:
            return scope_file(mem, scope, name)
        except MemlaneError as exc:
            raise ResourceError(str(exc)) from None

    if static_scope is not None:  # stdio: one fixed scope, so the files are listable resources too
        for fname in FILES:
            def read(fname: str = fname) -> str:
                return scope_file(static_scope[0], static_scope[1], fname)
            server.resource(f"memlane://scope/{fname}", name=fname, mime_type="text/markdown",
                            description=f"The scope's {fname}.")(_no_args(read))
    return server


def _no_args(fn: Callable[..., str]) -> Callable[[], str]:
    def read() -> str:
        return fn()
    return read


# ---- stdio ----------------------------------------------------------------------------------


def stdio_mcp(mem: Memory, scope: Scope) -> MCPServer:
    """`memlane mcp`: one engine, one scope."""
    return build_mcp(lambda ctx: (mem, scope), static_scope=(mem, scope))


# ---- streamable HTTP inside `memlane serve` ---------------------------------------------------


def _http_binding(ctx: Context[Any, Any]) -> tuple[Memory, Scope]:
    request = ctx.request_context.request
    state = getattr(getattr(request, "app", None), "state", None)
    mem: Memory | None = getattr(state, "memory", None)
    gate: Gate | None = getattr(state, "gate", None)
    if request is None or mem is None or gate is None:
        raise ToolError("the memlane engine is not running")
    headers = request.headers
    principal = gate.principal(headers.get("authorization"))
    return mem, gate.scope_of(principal, headers.get("x-memlane-user"), headers.get("x-memlane-agent"))


def http_mcp(bind: str) -> MCPServer:
    """The MCP server for `/mcp`; `mount_http` adds it to the app (whose lifespan runs its
    session manager)."""
    server = build_mcp(_http_binding)
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
