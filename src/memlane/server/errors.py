"""Errors as JSON `{error, detail}` (plus `field` and `request_id`), and the request guards that
run before FastAPI parses anything: request ids, the body size limit and the JSON depth limit.

| raised                               | status |
|--------------------------------------|--------|
| no key, an unknown or revoked key    | 401    |
| a user key on an admin route         | 403    |
| `NotFound` (also: another user's id) | 404    |
| `Conflict` (restoring a memory that exists) | 409 |
| a body over `server.max_body_bytes`  | 413    |
| `ValidationError`, `ConfigError`, malformed or too deeply nested JSON | 422 |
| `BackendError` (an LLM, an embedder) | 502    |
| the database busy past its timeout or unreachable, the engine not running | 503 |
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
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

ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
                   Awaitable[None]]
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


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
        names = {404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge"}
        return error_body(request, exc.status_code, names.get(exc.status_code, "HTTPError"), str(exc.detail),
                          headers=dict(exc.headers or {}) or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("request %s failed", getattr(request.state, "request_id", "-"))
        return error_body(request, 500, "InternalError",
                          f"{type(exc).__name__}; the server log has the traceback under this request id")


def _json_depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


class Guard:
    """ASGI middleware around the whole app (MCP included): gives every request an id (the
    client's `X-Request-ID` when it is sane), logs it with status and time, refuses a body
    over `max_body` (413) and JSON that does not parse or nests deeper than `max_depth` (422)
    before any handler sees it."""

    def __init__(self, app: ASGIApp, *, max_body: int, max_depth: int) -> None:
        self.app, self.max_body, self.max_depth = app, max_body, max_depth

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        given = headers.get("x-request-id", "")
        rid = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = rid
        started = time.perf_counter()
        status = {"code": 0}

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        try:
            replay = await self._checked_body(scope, receive, headers)
        except ApiError as exc:
            await self._refuse(scope, send_with_id, exc)
        else:
            await self.app(scope, replay or receive, send_with_id)
        finally:
            client = scope.get("client")
            log.info("%s %s %s %s %s %.1fms", rid, client[0] if client else "-", scope.get("method"),
                     scope.get("path"), status["code"], (time.perf_counter() - started) * 1000)

    async def _checked_body(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]],
                            headers: dict[str, str]) -> Callable[[], Awaitable[Any]] | None:
        """Read the whole body (bounded) when there is one; a `receive` that replays it."""
        if scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE") and "content-length" not in headers \
                and "transfer-encoding" not in headers:
            return None
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            raise ApiError(413, "PayloadTooLarge", f"the body is {length} bytes; the limit is {self.max_body} "
                                                   "(server.max_body_bytes)")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise ApiError(413, "PayloadTooLarge", f"the body is over {self.max_body} bytes "
                                                       "(server.max_body_bytes)")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if body and (ctype in ("", "application/json") or ctype.endswith("+json")):
            self._check_json(body)
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    def _check_json(self, body: bytes) -> None:
        try:
            value = json.loads(body)
        except RecursionError:
            value = None
            depth = self.max_depth + 1
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(422, "ValidationError", f"body: not valid JSON ({str(exc)[:200]})") from None
        else:
            depth = _json_depth(value)
        if depth > self.max_depth:
            raise ApiError(422, "ValidationError", f"body: JSON nested deeper than {self.max_depth} levels "
                                                   "(server.max_json_depth)")

    async def _refuse(self, scope: MutableMapping[str, Any], send: Callable[[Any], Awaitable[None]],
                      exc: ApiError) -> None:
        body = {"error": exc.error, "detail": exc.detail, "request_id": scope["state"]["request_id"]}
        response = SafeJSONResponse(body, status_code=exc.status, headers={"Connection": "close"}
                                    if exc.status == 413 else None)

        async def no_body() -> Any:
            return {"type": "http.disconnect"}

        await response(scope, no_body, send)
