"""Signing in and out, an admin's choice of user, the language switch, the demo data button
and the vendored assets."""

from __future__ import annotations

import dataclasses
import json
import secrets
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memlane import validate
from memlane.webui import i18n
from memlane.webui.auth import COOKIE, LOGIN_COOKIE
from memlane.webui.plumbing import HERE, Denied, Redirect, safe_next

if TYPE_CHECKING:
    from memlane.api import Memory
    from memlane.webui.plumbing import Plumbing

ASSETS = {  # name → media type: the only files /assets serves
    "htmx.min.js": "text/javascript; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "htmx.LICENSE": "text/plain; charset=utf-8",
}
MAX_KEY_CHARS = 256  # not from a seed: far above any key memlane issues


def register(ui: Plumbing) -> None:
    @ui.route("/assets/{name}")
    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            raise Denied(404, i18n.text(i18n.negotiate(request), "err_not_found"))
        return Response((HERE / "static" / name).read_bytes(), media_type=ASSETS[name],
                        headers={"Cache-Control": "public, max-age=3600"})

    @ui.route("/")
    async def home(request: Request) -> Response:
        await ui.context(request)
        return RedirectResponse("/memories", status_code=303)

    @ui.route("/login")
    async def login_form(request: Request) -> Response:
        lang = i18n.negotiate(request)
        if ui.backend.open_user(request) is not None:
            raise Redirect("/")
        return login_page(request, lang, "", 200)

    def login_page(request: Request, lang: str, message: str, status: int) -> Response:
        nonce = secrets.token_hex(16)
        response = ui.render(None, "login.html", lang=lang, request=request, status=status, message=message,
                             login_csrf=ui.signer_for(request).csrf("login|" + nonce),
                             next=safe_next(request.query_params.get("next"), "/"))
        response.set_cookie(LOGIN_COOKIE, nonce, max_age=3600, httponly=True, samesite="strict",
                            secure=ui.secure(request), path="/login")
        return response

    @ui.route("/login", ("POST",))
    async def login(request: Request) -> Response:
        lang = i18n.negotiate(request)
        if ui.cross_site(request):
            raise Denied(403, i18n.text(lang, "err_cross_site"))
        form = await ui.read_form(request, ui.backend.memory(request).config.server.max_body_bytes, lang)
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        signer = ui.signer_for(request)
        if not nonce or not signer.check_csrf("login|" + nonce, (form.get("csrf") or [""])[0]):
            return login_page(request, lang, i18n.text(lang, "err_csrf"), 403)
        key = (form.get("key") or [""])[0].strip()
        keys = ui.backend.keys(request)
        principal = keys.authenticate(key) if keys is not None and 0 < len(key) <= MAX_KEY_CHARS else None
        if principal is None:
            return login_page(request, lang, i18n.text(lang, "err_bad_key"), 401)
        user = "" if principal.admin else (principal.user_id or "")
        cookie = signer.issue(principal, user, None if principal.admin else principal.agent_id)
        target = "/scope" if principal.admin else safe_next((form.get("next") or [""])[0], "/")
        response = RedirectResponse(target, status_code=303)
        ui.set_session_cookie(response, cookie, request)
        response.delete_cookie(LOGIN_COOKIE, path="/login")
        return response

    @ui.route("/logout", ("POST",))
    async def logout(request: Request) -> Response:
        await ui.context(request, write=True, need_user=False)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @ui.route("/scope")
    async def scope_form(request: Request) -> Response:
        ctx = await ui.context(request, need_user=False)
        if not ctx.session.admin:
            raise Redirect("/")
        return ui.render(ctx, "scope.html")

    @ui.route("/scope", ("POST",))
    async def scope(request: Request) -> Response:
        ctx = await ui.context(request, write=True, need_user=False)
        if not ctx.session.admin:
            raise Denied(403, i18n.text(ctx.lang, "err_admin_only"))
        user = validate.ident("user_id", ctx.field("user_id").strip())
        agent = validate.optional_ident("agent_id", ctx.field("agent_id").strip() or None)
        response = RedirectResponse("/memories", status_code=303)
        ui.set_session_cookie(response, ui.signer_for(request).issue(ctx.session.principal, user, agent), request)
        return response

    @ui.route("/lang/{code}")
    async def language(request: Request) -> Response:
        code = request.path_params["code"]
        if code not in i18n.LANGUAGES:
            raise Denied(404, i18n.text(i18n.negotiate(request), "err_not_found"))
        response = RedirectResponse(safe_next(request.query_params.get("next"), "/"), status_code=303)
        response.set_cookie(i18n.COOKIE, code, max_age=365 * 24 * 3600, samesite="strict", path="/")
        return response

    @ui.route("/demo", ("POST",))
    async def demo(request: Request) -> Response:
        """The bundled demo conversation, into the signed-in scope (only while it is empty)."""
        ctx = await ui.context(request, write=True)
        if (await ui.call(ctx.mem.stats, **ctx.scope)).turns:
            raise Denied(409, i18n.text(ctx.lang, "err_demo_not_empty"))
        await ui.call(load_demo, ctx.mem, ctx.scope)
        return RedirectResponse("/memories?" + urlencode({"status": "any"}), status_code=303)


def load_demo(mem: Memory, scope: dict[str, str | None]) -> None:
    from memlane.importers import parse

    data = json.loads(resources.files("memlane.data").joinpath("sample_conversation.json").read_text("utf-8"))
    # the scope is the session's, whatever the file says
    convs = [dataclasses.replace(c, user_id=None) for c in parse(data, "sample_conversation.json")]
    user_id = str(scope["user_id"])
    mem.import_conversations(convs, user_id=user_id, agent_id=scope["agent_id"])
    for conv in convs:
        mem.end_session(conv.session_id, user_id=user_id, agent_id=scope["agent_id"], wait=True)
