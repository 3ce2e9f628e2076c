"""The web UI's plumbing: who is asking (cookie session or loopback-open), CSRF, language,
rendering, and the error mapping every page and fragment shares. The pages live in
`memory_pages`, `scope_pages` and `session_pages`; this module gives them `Plumbing.context`
(every page and action starts there) and `Plumbing.render`. `app.WebUI` mounts them: the
pages import this module, and nothing here imports a page."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit

from fastapi import APIRouter
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from memlane.api import Memory
from memlane.errors import BackendError, MemlaneError, NotFound, ValidationError
from memlane.webui import i18n, labels
from memlane.webui.auth import (
    COOKIE,
    KeyStore,
    Principal,
    Signer,
    WebSession,
    load_secret,
    resolve,
)

HERE = Path(__file__).parent
T = TypeVar("T")
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


class Redirect(Exception):
    """Answer with a 303 to `url` (a guard's way out of a page)."""

    def __init__(self, url: str) -> None:
        self.url = url


class Denied(Exception):
    """Answer with this status and message (a page, or the alert fragment for htmx)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


@dataclass
class Ctx:
    """One request as a page sees it: the session, its scope, language and CSRF token."""

    request: Request
    session: WebSession
    lang: str
    csrf: str
    form: dict[str, list[str]]
    mem: Memory
    new_cookie: str | None = None

    @property
    def scope(self) -> dict[str, Any]:
        return {"user_id": self.session.user_id, "agent_id": self.session.agent_id}

    @property
    def htmx(self) -> bool:
        return self.request.headers.get("hx-request") == "true"

    def field(self, name: str, default: str = "") -> str:
        values = self.form.get(name)
        return values[0] if values else default

    def fields(self, name: str) -> list[str]:
        return self.form.get(name, [])


def safe_next(url: str | None, default: str = "/") -> str:
    """A redirect target on this site only (a path, never //host or a scheme)."""
    if not url or not url.startswith("/") or url.startswith("//") or "\\" in url:
        return default
    parts = urlsplit(url)
    return url if not parts.scheme and not parts.netloc else default


def loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Backend(Protocol):
    """Where the UI finds the engine and the keys for a request: a server keeps them in its
    app state (made in its lifespan), a test or script passes them (`Fixed`)."""

    def memory(self, request: Request) -> Memory: ...

    def keys(self, request: Request) -> KeyStore | None: ...

    def open_user(self, request: Request) -> str | None:
        """The loopback-open mode's one local user when this request may use it, else None."""


@dataclass
class Fixed:
    """One engine and key store given up front; `local_user` is whom loopback browsers are
    signed in as without a key (as `memlane serve` does on 127.0.0.1 while no key exists)."""

    engine: Memory
    key_store: KeyStore | None = None
    local_user: str | None = None

    def memory(self, request: Request) -> Memory:
        return self.engine

    def keys(self, request: Request) -> KeyStore | None:
        return self.key_store

    def open_user(self, request: Request) -> str | None:
        return self.local_user if loopback(request) else None


class Plumbing:
    """What every page uses (`app.WebUI` adds the pages). `secret` signs the cookies (default:
    `webui.secret` in the engine's home, made once, 0600); they are `Secure` on https, or
    always with `secure_cookies`."""

    def __init__(self, backend: Backend, *, secret: bytes | None = None, secure_cookies: bool = False) -> None:
        self.backend = backend
        self._secret = secret
        self._signer: Signer | None = None
        self.secure_cookies = secure_cookies
        self._lock = threading.Lock()
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"),
                               autoescape=select_autoescape(["html", "svg"]), trim_blocks=True, lstrip_blocks=True)
        self.env.globals["urlencode"] = urlencode
        # user text goes through `bdi` (markup) or `fsi` (a title, an attribute): isolated, a
        # right-to-left override in a memory cannot reorder the page's own words around it
        self.env.filters["bdi"] = labels.isolate
        self.env.filters["fsi"] = labels.isolate_plain
        self.env.filters["code"] = labels.code
        self.router = APIRouter(include_in_schema=False)

    # ---- engine calls ----------------------------------------------------------------

    def signer_for(self, request: Request) -> Signer:
        if self._signer is None:
            config = self.backend.memory(request).config
            secret = self._secret if self._secret is not None else load_secret(config.home)
            self._signer = Signer(secret, max_age=round(config.web.session_hours * 3600))
        return self._signer

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """An engine call in a worker thread; the UI's calls run one at a time (a person's
        clicks need no parallelism, and a delete racing its own undo would be confusing)."""
        job = functools.partial(fn, *args, **kwargs)

        def locked() -> T:
            with self._lock:
                return job()

        return await asyncio.to_thread(locked)

    # ---- who is asking ---------------------------------------------------------------

    def session_of(self, request: Request) -> WebSession | None:
        return resolve(self.signer_for(request), self.backend.keys(request), request.cookies.get(COOKIE),
                       open_user=self.backend.open_user(request))

    async def context(self, request: Request, *, write: bool = False, need_user: bool = True) -> Ctx:
        """The request's session (or a redirect to log in), its form, and for a write the
        CSRF check. Every page and action starts here."""
        lang = i18n.negotiate(request)
        form: dict[str, list[str]] = {}
        if request.method == "POST":
            if self.cross_site(request):
                raise Denied(403, i18n.text(lang, "err_cross_site"))
            form = await self.read_form(request, self.backend.memory(request).config.server.max_body_bytes, lang)
        mem = self.backend.memory(request)
        signer = self.signer_for(request)
        session = self.session_of(request)
        new_cookie = None
        open_user = self.backend.open_user(request)
        if session is None and open_user is not None:
            new_cookie = signer.issue(Principal(user_id=open_user), open_user, None)
            session = resolve(signer, None, new_cookie, open_user=open_user)
            if write:  # a first write needs a page first: its token is bound to the new session
                raise Denied(403, i18n.text(lang, "err_csrf"))
        if session is None:
            if request.headers.get("hx-request") == "true":
                raise Denied(401, i18n.text(lang, "err_signed_out"))
            raise Redirect("/login?" + urlencode({"next": request.url.path}))
        csrf = signer.csrf(session.nonce)
        if write:
            token = request.headers.get("x-csrf-token") or (form.get("csrf") or [""])[0]
            if not signer.check_csrf(session.nonce, token):
                raise Denied(403, i18n.text(lang, "err_csrf"))
        if need_user and not session.user_id:
            raise Redirect("/scope")
        return Ctx(request, session, lang, csrf, form, mem, new_cookie)

    @staticmethod
    def cross_site(request: Request) -> bool:
        """A browser's Origin (or, without it, Referer) naming another site."""
        origin = request.headers.get("origin") or request.headers.get("referer")
        if not origin or origin == "null":
            return origin == "null"
        parts = urlsplit(origin)
        return parts.netloc != request.headers.get("host", "")

    @staticmethod
    async def read_form(request: Request, limit: int, lang: str = "en") -> dict[str, list[str]]:
        """The urlencoded form, at most `limit` bytes (`server.max_body_bytes`, as the API)."""
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind not in ("application/x-www-form-urlencoded", ""):
            raise Denied(415, i18n.text(lang, "err_form_type"))
        declared = request.headers.get("content-length")
        too_big = i18n.text(lang, "err_form_size", limit=limit)
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            raise Denied(413, too_big)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise Denied(413, too_big)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise Denied(400, i18n.text(lang, "err_form_encoding")) from None
        try:
            return parse_qs(text, keep_blank_values=True, max_num_fields=5000, errors="strict")
        except (ValueError, UnicodeDecodeError):
            raise Denied(400, i18n.text(lang, "err_form_unreadable")) from None

    # ---- responses -------------------------------------------------------------------

    def render(self, ctx: Ctx | None, template: str, *, lang: str | None = None, status: int = 200,
               request: Request | None = None, session: WebSession | None = None, csrf: str = "",
               **values: Any) -> HTMLResponse:
        """A page (or fragment) in the request's language; without a `ctx`, the `session` and
        `csrf` given (an error page still shows who is signed in and the navigation)."""
        language = ctx.lang if ctx is not None else (lang or "en")
        req = ctx.request if ctx is not None else request
        page = self.env.get_template(template).render(
            t=i18n.translator(language), label=labels.labeler(language),
            shown=functools.partial(labels.shown, language), held=functools.partial(labels.held, language),
            lang=language, ctx=ctx,
            csrf=ctx.csrf if ctx else csrf, session=ctx.session if ctx else session,
            path=req.url.path if req else "/", query=req.url.query if req else "", **values)
        response = HTMLResponse(page, status_code=status)
        if ctx is not None and ctx.new_cookie:
            self.set_session_cookie(response, ctx.new_cookie, ctx.request)
        return response

    def set_session_cookie(self, response: Response, value: str, request: Request) -> None:
        response.set_cookie(COOKIE, value, max_age=self._signer.max_age if self._signer else None, httponly=True,
                            samesite="strict", secure=self.secure(request), path="/")

    def secure(self, request: Request) -> bool:
        return self.secure_cookies or request.url.scheme == "https"

    def done(self, ctx: Ctx, fragment: Callable[[], Response], back: str) -> Response:
        """An action's answer: the fragment for htmx, a redirect back for a plain form."""
        if ctx.htmx:
            return fragment()
        return RedirectResponse(safe_next(ctx.field("next") or None, back), status_code=303)

    def error(self, request: Request, status: int, message: str) -> Response:
        """The error in the page's alert region (htmx), or a page in the site's layout: the
        navigation when a session holds, and a link back to the page the request came from."""
        lang = i18n.negotiate(request)
        if request.headers.get("hx-request") == "true":
            # htmx swaps only 2xx by default: the error goes to the page's alert region
            response = self.env.get_template("_alert.html").render(message=message, t=i18n.translator(lang))
            return HTMLResponse(response, status_code=status, headers={"HX-Retarget": "#alert", "HX-Reswap": "innerHTML"})
        try:
            session = self.session_of(request)
        except MemlaneError:  # the key store is down too: the page without the navigation
            session = None
        csrf = self.signer_for(request).csrf(session.nonce) if session is not None else ""
        referer = urlsplit(request.headers.get("referer") or "")
        back = ""
        if referer.netloc == request.headers.get("host", "") and referer.path:
            back = safe_next(referer.path + (f"?{referer.query}" if referer.query else ""), "")
        if back == request.url.path and request.method == "GET":
            back = ""  # the failing page itself: no loop
        return self.render(None, "error.html", lang=lang, status=status, request=request, session=session,
                           csrf=csrf, message=message, code=status, back=back)

    @staticmethod
    def engine_error(lang: str, exc: MemlaneError) -> str:
        """An engine error for a person: a translated lead, the field's label, then the
        engine's own words (isolated: they may quote what was typed)."""
        detail = str(exc)
        if isinstance(exc, ValidationError):
            field = exc.field
            detail = detail.removeprefix(f"{field}: ")
            return i18n.text(lang, "err_invalid", field=labels.label(lang, "field", field),
                             detail=labels.isolate(detail))
        if isinstance(exc, BackendError):
            return i18n.text(lang, "err_backend", detail=labels.isolate(detail))
        return i18n.text(lang, "err_conflict", detail=labels.isolate(detail))

    def handler(self, fn: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """Maps the engine's errors and the guards' exceptions to pages or fragments."""

        @functools.wraps(fn)
        async def wrapped(request: Request) -> Response:
            try:
                response = await fn(request)
            except Redirect as r:
                response = RedirectResponse(r.url, status_code=303)
            except Denied as d:
                response = self.error(request, d.status, d.message)
            except NotFound:
                response = self.error(request, 404, i18n.text(i18n.negotiate(request), "err_not_found"))
            except ValidationError as e:
                response = self.error(request, 422, self.engine_error(i18n.negotiate(request), e))
            except BackendError as e:
                response = self.error(request, 502, self.engine_error(i18n.negotiate(request), e))
            except MemlaneError as e:
                response = self.error(request, 409, self.engine_error(i18n.negotiate(request), e))
            for name, value in (("Content-Security-Policy", CSP), ("X-Frame-Options", "DENY"),
                                ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin"),
                                ("Cache-Control", "no-store")):
                response.headers.setdefault(name, value)
            return response

        return wrapped

    def route(self, path: str, methods: tuple[str, ...] = ("GET",)) -> Callable[[Callable[[Request], Awaitable[Response]]], Any]:
        def register(fn: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
            self.router.add_api_route(path, self.handler(fn), methods=list(methods), include_in_schema=False,
                                      response_class=HTMLResponse)
            return fn
        return register
