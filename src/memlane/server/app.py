"""`create_app`: the FastAPI application of `memlane serve` — one engine per process.

The lifespan opens the engine (its background embedding indexer starts with it), checks the
bind against the keys, starts the consolidation scheduler and the MCP session manager; on
shutdown it stops taking work, stops the scheduler, lets the indexer and the LLM worker
finish what they hold (at most `server.shutdown_seconds`) and closes the store.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse

from memlane.api import Memory
from memlane.config import Config
from memlane.lifecycle import Scheduler
from memlane.server import apidoc, routes, schemas
from memlane.server.auth import AdminDep, Gate, MemoryDep, is_loopback
from memlane.server.budget import TurnBudget
from memlane.server.errors import SafeJSONResponse, install_handlers
from memlane.server.guard import Guard
from memlane.server.keys import KeyStore

log = logging.getLogger("memlane.server")


@functools.cache  # importlib.metadata parses the package's METADATA file: ~10 ms, not per request
def _version() -> str:
    try:
        return version("memlane")
    except PackageNotFoundError:
        return "0+source"


API_DESCRIPTION = """Long-term memory for LLM agents: the REST API of `memlane serve`.

**Authentication.** Send an API key (`memlane keys create --user USER`) as
`Authorization: Bearer <key>`; the request's scope is the key's. An admin key names the scope it
acts on with the `X-Memlane-User` (and `X-Memlane-Agent`) headers. A loopback server on a home
where no key was ever made runs open for one local user.

**Errors.** Every error is JSON of one shape, `{"error": "NotFound", "detail": "…"}`, with
`field` for a `ValidationError` and `request_id` (the `X-Request-ID` header, also in the log)."""


def openapi_schema(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI schema, with the bearer-key scheme every /v1 route takes (the key is
    read by a dependency FastAPI cannot see as a security scheme)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description,
                             routes=app.routes, tags=TAGS)
        schema.setdefault("components", {})["securitySchemes"] = {
            "apiKey": {"type": "http", "scheme": "bearer", "description": "a memlane API key, `ml_…`"}}
        for path, methods in schema.get("paths", {}).items():
            for op in methods.values():
                if path.startswith("/v1/"):
                    op["security"] = [{"apiKey": []}]
                for status, response in op.get("responses", {}).items():
                    # an error is JSON even where the success is text (GET /v1/export): FastAPI
                    # files it under the route's own media type
                    content = response.get("content", {})
                    if status[0] in "45" and content and "application/json" not in content:
                        response["content"] = {"application/json": next(iter(content.values()))}
        app.openapi_schema = schema
    return app.openapi_schema


TAGS = [{"name": "memories", "description": "Add, list, change, supersede, pin, verify, forget and restore memories."},
        {"name": "search", "description": "Hybrid search over memories, turns and episodes."},
        {"name": "sessions", "description": "Conversations: their turns, ending them, episodes."},
        {"name": "context", "description": "What the agent's next LLM call gets; the scratchpad."},
        {"name": "tools", "description": "The agent tools' schemas, and running one."},
        {"name": "lifecycle", "description": "Consolidation: dedup, decay, archive, review."},
        {"name": "portable", "description": "Export and import of a whole scope."},
        {"name": "admin", "description": "Stats, activity, status, purge, liveness."}]


def route_table(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every route the app serves: REST, admin, MCP, the web UI and its
    assets (what the guard's tests and `bench/server_attack.py` sweep)."""
    out: list[tuple[str, str]] = []

    def walk(routes: list[Any]) -> None:
        for route in routes:
            if hasattr(route, "original_router"):  # an included router
                walk(route.original_router.routes)
                continue
            path = getattr(route, "path", "") or "/"
            out.extend((method, path) for method in sorted(getattr(route, "methods", None) or {"GET"}))

    walk(list(app.routes))
    return out


def create_app(config: Config, *, memory: Memory | None = None, host: str | None = None,
               mcp: bool = True, scheduler: bool | None = None) -> FastAPI:
    """The REST API (and MCP at /mcp) over one engine.

    `memory`: an engine the caller made (and closes); by default the lifespan opens one on
    `config` and closes it. `host`: the address the server binds (default `server.host`):
    loopback without keys runs open for `server.local_user`, any other address needs keys.
    `scheduler`: run consolidation on its schedule (default `server.scheduler`)."""
    bind = host or config.server.host
    run_scheduler = config.server.scheduler if scheduler is None else scheduler
    mcp_server: Any = None
    if mcp:
        from memlane.server.mcp import http_mcp

        mcp_server = http_mcp(bind)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = config.server.threads
        mem = memory if memory is not None else await anyio.to_thread.run_sync(Memory, config)
        keys: KeyStore | None = None
        sched: Scheduler | None = None
        try:
            keys = KeyStore.open(config)
            gate = Gate(keys, is_loopback(bind), config.server.local_user, config.server.open_admin,
                        config.server.keyed_recheck_seconds)
            gate.check_startup(bind)
            if run_scheduler:
                sched = Scheduler(mem)
                sched.start()
            app.state.memory, app.state.gate, app.state.scheduler = mem, gate, sched
            app.state.started = time.time()
            async with contextlib.AsyncExitStack() as stack:
                if mcp_server is not None:
                    await stack.enter_async_context(mcp_server.session_manager.run())
                log.info("memlane serving on %s (%s)", bind, "open for one local user" if gate.open_mode()
                         else "API keys required")
                yield
        finally:
            app.state.memory = app.state.gate = None  # requests still arriving get 503, not a closed store
            if sched is not None:
                await anyio.to_thread.run_sync(sched.stop)
            await anyio.to_thread.run_sync(mem.settle, config.server.shutdown_seconds)
            if memory is None:
                await anyio.to_thread.run_sync(mem.close)
            if keys is not None:
                keys.close()

    # no Swagger UI: it loads its scripts from a CDN, and memlane serves nothing from one;
    # /docs is a plain page rendered from the OpenAPI schema (/openapi.json)
    app = FastAPI(title="memlane", version=_version(), lifespan=lifespan, default_response_class=SafeJSONResponse,
                  docs_url=None, redoc_url=None,
                  description=API_DESCRIPTION)
    app.state.memory = None
    app.state.config = config
    app.state.turn_budget = TurnBudget(config.server.max_turns_per_minute)
    app.state.bind = bind
    install_handlers(app)
    # every /v1 route documents the one error shape its failures take (schemas.Error), which
    # also keeps FastAPI from describing them as its own HTTPValidationError
    app.include_router(routes.v1, responses=schemas.error_responses(*schemas.COMMON_ERRORS))
    app.include_router(routes.admin)
    app.openapi = functools.partial(openapi_schema, app)  # type: ignore[method-assign]
    from memlane.webui.serving import mount as mount_webui  # the web UI at / (issue 16)
    mount_webui(app)

    @app.get("/healthz", tags=["admin"], responses={
        200: {"model": schemas.Health, "description": "The engine runs."},
        503: {"model": schemas.Health, "description": "The server is starting or stopping: `unavailable`."}})
    def healthz(request: Request) -> SafeJSONResponse:
        """Liveness: 200 while the engine runs (no key needed, nothing about any user)."""
        if getattr(request.app.state, "memory", None) is None:
            return SafeJSONResponse({"status": "unavailable"}, status_code=503)
        return SafeJSONResponse({"status": "ok", "version": _version()})

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        """The API's routes with their parameters, bodies and responses, from its OpenAPI schema:
        one page, no script."""
        return HTMLResponse(apidoc.html_page(app.openapi()))

    @app.get("/v1/admin/status", tags=["admin"], responses=schemas.answers(
        dict[str, Any], "version, pid, bind, auth, profile, home, uptime_s, scheduler, and the "
        "indexer's and the LLM worker's state.", *schemas.COMMON_ERRORS))
    def status(request: Request, mem: MemoryDep, _: AdminDep) -> dict[str, Any]:
        """The server, its scheduler, indexer and LLM worker (admin key)."""
        sched: Scheduler | None = request.app.state.scheduler
        gate: Gate = request.app.state.gate
        return {"version": _version(), "pid": os.getpid(), "bind": bind,
                "auth": "open" if gate.open_mode() else "keys", "profile": mem.config.profile,
                "home": str(mem.config.home), "uptime_s": round(time.time() - request.app.state.started, 1),
                "scheduler": sched.status() if sched is not None else None, **mem.background_status()}

    if mcp_server is not None:
        from memlane.server.mcp import mount_http

        mount_http(app, mcp_server)
    app.add_middleware(Guard, server=config.server, bind=bind)
    return app
