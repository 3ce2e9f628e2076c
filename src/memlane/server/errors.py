"""Errors as JSON `{error, detail}` (plus `field` and `request_id`); the checks that run before
any route are in `guard`.

| raised                               | status |
|--------------------------------------|--------|
| no key, an unknown or revoked key    | 401    |
| a user key (or open mode) on an admin route, a cross-site request without a key | 403 |
| `NotFound` (also: another user's id) | 404    |
| a body past `server.body_seconds`    | 408    |
| `Conflict` (restoring a memory that exists) | 409 |
| a body over `server.max_json_bytes` (an import: `max_body_bytes`) | 413 |
| a body of another content type than JSON (JSONL for an import) | 415 |
| a Host header naming another server (DNS rebinding) | 421 |
| `ValidationError`, `ConfigError`, malformed or too deeply nested JSON | 422 |
| `BackendError` (an LLM, an embedder) | 502    |
| the database busy past its timeout or unreachable, the engine not running | 503 |
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from memlane.errors import (
    BackendError,
    ConfigError,
    Conflict,
    MemlaneError,
    NotFound,
    ValidationError,
)

log = logging.getLogger("memlane.server")


class ApiError(Exception):
    """An HTTP error with memlane's JSON body; raised by the auth dependencies and routes."""

    def __init__(self, status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.error, self.detail, self.headers = status, error, detail, headers


class SafeJSONResponse(JSONResponse):
    """JSON that always encodes: text holding a lone surrogate (which no UTF-8 can carry) is
    sent as an ASCII `\\udXXX` escape instead of failing the response with a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error_body(request: Request | None, status: int, error: str, detail: str, field: str | None = None,
               headers: dict[str, str] | None = None) -> Response:
    body: dict[str, Any] = {"error": error, "detail": detail}
    if field:
        body["field"] = field
    rid = getattr(request.state, "request_id", None) if request is not None else None
    if rid:
        body["request_id"] = rid
    return SafeJSONResponse(body, status_code=status, headers=headers)


def status_of(exc: MemlaneError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, ValidationError | ConfigError):
        return 422
    if isinstance(exc, BackendError):
        cause = exc.__cause__
        # the database busy (SQLite) or unreachable (PostgreSQL: a broken connection, no
        # connection within store.connect_timeout_seconds): 503, retry later
        down = {"BusyError", "LockedError", "OperationalError", "PoolTimeout"}
        busy = cause is not None and any(c.__name__ in down for c in type(cause).__mro__)
        return 503 if busy else 502
    return 500


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> Response:
        return error_body(request, exc.status, exc.error, exc.detail, headers=exc.headers)

    @app.exception_handler(MemlaneError)
    async def _memlane(request: Request, exc: MemlaneError) -> Response:
        status = status_of(exc)
        if status >= 500:
            log.warning("request %s: %s: %s", getattr(request.state, "request_id", "-"), type(exc).__name__, exc)
        return error_body(request, status, type(exc).__name__, str(exc), getattr(exc, "field", None),
                          {"Retry-After": "1"} if status == 503 else None)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        # FastAPI's own parsing: name the field, never echo the input (it may be huge or hostile)
        first = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
        field = ".".join(loc) or "body"
        msg = str(first.get("msg", "invalid request"))[:300]
        return error_body(request, 422, "ValidationError", f"{field}: {msg}", field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        names = {404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge", 422: "ValidationError"}
        return error_body(request, exc.status_code, names.get(exc.status_code, "HTTPError"), str(exc.detail),
                          headers=dict(exc.headers or {}) or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("request %s failed", getattr(request.state, "request_id", "-"))
        return error_body(request, 500, "InternalError",
                          f"{type(exc).__name__}; the server log has the traceback under this request id")
