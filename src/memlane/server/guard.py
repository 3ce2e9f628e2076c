"""The request guard: what every request passes before any route, MCP or web UI page sees it.

In this order, each refusal memlane's JSON error body:

1. **Host** (421): a loopback server answers only to its own names (localhost, 127.0.0.1,
   [::1], `server.allowed_hosts`): a web page on a name rebound to 127.0.0.1 (DNS
   rebinding) reaches nothing.
2. **Cross-site** (403): a browser request from another origin (`Origin`, or
   `Sec-Fetch-Site: cross-site | same-site`) is refused unless it carries an API key, which
   no page can send without the server's consent; a link followed to a web UI page is let
   through (a navigation shows the page to the person, not to the site).
3. **Content type** (415): an API or MCP body is sent as JSON (an import as JSONL), never as
   a type a plain HTML form or a no-preflight `fetch` can send.
4. **Key** (401): an API or MCP request is authenticated before its body is read, so a
   stranger's body costs nothing.
5. **Body** (413, 408): read whole, at most `server.max_json_bytes` (`max_body_bytes` for an
   import, by the API or the web UI's form), within `server.body_seconds`. The JSON itself is parsed
   off the event loop, by the route (`routes.JSONRoute`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import anyio

from memlane.config import ServerConfig
from memlane.server.auth import OPEN_KEY_ID, is_loopback
from memlane.server.errors import ApiError, SafeJSONResponse

log = logging.getLogger("memlane.server")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_API = ("/v1/", "/mcp")  # key-authenticated JSON; everything else is the web UI and public pages
_IMPORT = ("/v1/import",)
_UI_IMPORT = ("/files/import",)  # the web UI's import form; its other forms are small
_JSON_TYPES = ("application/json",)
_IMPORT_TYPES = ("application/json", "application/x-ndjson", "application/jsonl", "application/json-seq")
_WRITES = ("POST", "PUT", "PATCH", "DELETE")


def _request_id(given: str) -> str:
    ok = 0 < len(given) <= 64 and all(c.isalnum() or c in "._:-" for c in given) and given.isascii()
    return given if ok else uuid.uuid4().hex[:16]


def host_name(host: str) -> str:
    """The name of a Host header or URL authority, without its port: lower case, no trailing
    dot ("localhost." is "localhost"), an IPv6 address in brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end > 0 else host
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.rstrip(".")


def allowed_hosts(bind: str, configured: list[str]) -> frozenset[str] | None:
    """The host names a server on `bind` answers to; None: any (a non-loopback bind without
    `server.allowed_hosts`, where every request needs a key and a rebound page has none)."""
    names = {host_name(h) for h in configured if h.strip()}
    if "*" in names:
        return None
    if is_loopback(bind):
        names.update(LOOPBACK_NAMES)
        names.add(host_name(bind if ":" not in bind or bind.startswith("[") else f"[{bind}]"))
    elif not names:
        return None
    elif bind not in ("0.0.0.0", "::", ""):
        names.add(host_name(bind if ":" not in bind else f"[{bind}]"))
    return frozenset(names)


class Guard:
    """ASGI middleware around the whole app (MCP and the web UI included): gives every
    request an id (the client's `X-Request-ID` when it is sane), logs it with status and time,
    and applies the checks of this module's docstring before any handler runs."""

    def __init__(self, app: Callable[..., Awaitable[None]], *, server: ServerConfig, bind: str) -> None:
        self.app, self.cfg = app, server
        self.hosts = allowed_hosts(bind, server.allowed_hosts)
        self._turns = KeyTurns(server.max_requests_per_key, server.key_queue_seconds)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        rid = _request_id(headers.get("x-request-id", ""))
        scope.setdefault("state", {})["request_id"] = rid
        started = time.perf_counter()
        status = {"code": 0}

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            self._check_host(headers)
            self._check_site(scope, headers)
            self._check_type(scope, headers)
            await self._authenticate(scope, headers)
            replay = await self._read_body(scope, receive, headers)
        except ApiError as exc:
            # a body not read is not drained either: the connection closes under it
            await _refuse(scope, send_with_id, exc, close=_has_body(headers))
        else:
            principal = scope["state"].get("principal")
            key_id = getattr(principal, "key_id", None)
            if key_id is None or key_id == OPEN_KEY_ID:
                await self.app(scope, replay or receive, send_with_id)
                return
            try:
                async with self._turns.turn(key_id):
                    await self.app(scope, replay or receive, send_with_id)
            except ApiError as exc:
                await _refuse(scope, send_with_id, exc, close=False)
        finally:
            client = scope.get("client")
            log.info("%s %s %s %s %s %.1fms", rid, client[0] if client else "-", scope.get("method"),
                     scope.get("path"), status["code"], (time.perf_counter() - started) * 1000)

    # ---- the checks ------------------------------------------------------------------------

    def _check_host(self, headers: dict[str, str]) -> None:
        if self.hosts is None:
            return
        name = host_name(headers.get("host", ""))
        if name not in self.hosts:
            shown = name[:100] or "(none)"
            raise ApiError(421, "MisdirectedRequest",
                           f"this server answers to {', '.join(sorted(self.hosts))} only, not to host {shown!r}; "
                           "to reach it under another name, add that name to server.allowed_hosts")

    def _check_site(self, scope: Scope, headers: dict[str, str]) -> None:
        if not cross_site(headers) or headers.get("authorization", "").strip():
            return  # a key can only be sent with the server's consent: it authenticates the request
        path = scope.get("path", "")
        navigation = (scope.get("method") in ("GET", "HEAD") and headers.get("sec-fetch-mode") == "navigate"
                      and not path.startswith(_API))
        if not navigation:
            raise ApiError(403, "CrossSiteRequest",
                           "a request from another site is refused: a page cannot act on this server for the "
                           "person visiting it; call the API with an API key (Authorization: Bearer ...)")

    def _check_type(self, scope: Scope, headers: dict[str, str]) -> None:
        path = scope.get("path", "")
        if scope.get("method") not in _WRITES or not path.startswith(_API):
            return
        given = headers.get("content-type", "")
        kind = given.split(";")[0].strip().lower()
        if not kind and not _has_body(headers):
            return  # a body-less call (pin, end a session): no body for a form to forge
        allowed = _IMPORT_TYPES if path in _IMPORT else _JSON_TYPES
        if kind not in allowed and not kind.endswith("+json"):
            raise ApiError(415, "UnsupportedMediaType",
                           f"send the body as {' or '.join(allowed)}, not {kind or 'no content type'!r} "
                           "(the Content-Type header)")

    async def _authenticate(self, scope: Scope, headers: dict[str, str]) -> None:
        """The caller of an API or MCP request, before its body is read (kept for the route's
        dependency in `scope["state"]["principal"]`)."""
        if not scope.get("path", "").startswith(_API):
            return
        app = scope.get("app")
        gate = getattr(getattr(app, "state", None), "gate", None)
        if gate is None:
            raise ApiError(503, "Unavailable", "the server is starting or stopping", {"Retry-After": "1"})
        # the key table is a database read: a worker thread, never the event loop
        principal = await anyio.to_thread.run_sync(gate.principal, headers.get("authorization"))
        scope["state"]["principal"] = principal

    async def _read_body(self, scope: Scope, receive: Receive, headers: dict[str, str]) -> Receive | None:
        """The whole body, bounded in size and time; a `receive` that replays it."""
        if not _has_body(headers):
            return None
        path = scope.get("path", "")
        big = path in _IMPORT or path in _UI_IMPORT
        limit, setting = ((self.cfg.max_body_bytes, "server.max_body_bytes") if big
                          else (self.cfg.max_json_bytes, "server.max_json_bytes"))
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise ApiError(413, "PayloadTooLarge", f"the body is {length[:20]} bytes; the limit here is {limit} "
                                                   f"({setting}){_import_hint(path)}")
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.cfg.body_seconds) as timer:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise ApiError(413, "PayloadTooLarge", f"the body is over {limit} bytes ({setting})"
                                                           f"{_import_hint(path)}")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if timer.cancelled_caught:
            raise ApiError(408, "RequestTimeout", f"the body did not arrive within {self.cfg.body_seconds:g} s "
                                                  "(server.body_seconds)")
        body = b"".join(chunks)
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


class KeyTurns:
    """At most `per_key` requests of one API key run at once; the next wait their turn (on the
    event loop, costing nothing) up to `patience` seconds, then 429. One key flooding the
    server queues behind itself, and other keys' requests keep their share of the cores."""

    def __init__(self, per_key: int, patience: float) -> None:
        self.per_key, self.patience = per_key, patience
        self._keys: dict[str, tuple[anyio.Semaphore, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def turn(self, key_id: str) -> AsyncIterator[None]:
        sem, users = self._keys.setdefault(key_id, (anyio.Semaphore(self.per_key), [0]))
        users[0] += 1
        try:
            with anyio.move_on_after(self.patience) as waited:
                await sem.acquire()
            if waited.cancelled_caught:
                raise ApiError(429, "TooManyRequests", f"this key has had {self.per_key} requests running for "
                                                       f"{self.patience:g} s (server.max_requests_per_key); "
                                                       "retry later", {"Retry-After": "1"})
            try:
                yield
            finally:
                sem.release()
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._keys[key_id]


def cross_site(headers: dict[str, str]) -> bool:
    """A browser's request made by a page of another origin (a rebound name is caught by the
    Host check before this)."""
    if headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    if origin.strip().lower() == "null":  # a sandboxed frame, a file:// page, a redirect chain
        return True
    try:
        parts = urlsplit(origin.strip())
    except ValueError:  # "http://[": no origin of this server
        return True
    return host_name(parts.netloc) != host_name(headers.get("host", "")) or \
        _port(parts.netloc, parts.scheme) != _port(headers.get("host", ""), parts.scheme)


def _port(authority: str, scheme: str) -> str:
    authority = authority.strip().lower()
    tail = authority.rsplit("]", 1)[-1]
    if ":" in tail:
        return tail.rsplit(":", 1)[1]
    return "443" if scheme == "https" else "80"


def _has_body(headers: dict[str, str]) -> bool:
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


def _import_hint(path: str) -> str:
    return "; bulk data goes through POST /v1/import or `memlane import`" if path not in _IMPORT else \
        "; import a larger file with `memlane import` on the server's machine"


async def _refuse(scope: Scope, send: Send, exc: ApiError, *, close: bool) -> None:
    body = {"error": exc.error, "detail": exc.detail, "request_id": scope["state"]["request_id"]}
    headers = dict(exc.headers or {})
    if close:
        headers["Connection"] = "close"
    response = SafeJSONResponse(body, status_code=exc.status, headers=headers or None)

    async def no_body() -> Any:
        return {"type": "http.disconnect"}

    await response(scope, no_body, send)
