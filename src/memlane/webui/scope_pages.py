"""Conversations, Files (MEMORY.md / USER.md, import with a dry run), Insight (charts from
the engine's numbers, `build_context` against its budgets) and Forget me (purge)."""

from __future__ import annotations

import hashlib
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from memlane.errors import ValidationError
from memlane.importing import FORMATS, ImportReport
from memlane.markdown import MdOperation
from memlane.webui import charts, i18n, labels
from memlane.webui.auth import COOKIE
from memlane.webui.plumbing import Ctx, Denied, Redirect
from memlane.webui.views import histogram, render_markdown

if TYPE_CHECKING:
    from memlane.api import Memory
    from memlane.webui.plumbing import Plumbing

TURN_HITS = 50  # not from a seed: one page of turns found


def register(ui: Plumbing) -> None:

    # ---- conversations ---------------------------------------------------------------

    @ui.route("/conversations")
    async def conversations(request: Request) -> Response:
        ctx = await ui.context(request)
        mem = ctx.mem
        q = request.query_params.get("q", "").strip()
        sessions = await ui.call(mem.sessions, **ctx.scope)
        # the API's defaults, as REST and the CLI search: turns are ranked by their conversation too
        hits = await ui.call(mem.search, q, **ctx.scope, corpus="turns", limit=TURN_HITS) if q else []
        return ui.render(ctx, "conversations.html", sessions=sessions, q=q, hits=hits,
                         notice=request.query_params.get("notice", ""))

    async def conversation_page(ctx: Ctx, sid: str, *, error: str = "", status: int = 200) -> Response:
        mem = ctx.mem
        session = await ui.call(mem.get_session, sid, **ctx.scope)  # NotFound for another scope's id
        turns = await ui.call(mem.get_turns, sid, **ctx.scope)
        episodes = await ui.call(mem.episodes, **ctx.scope, session_id=sid)
        extracted = [m for m in await ui.call(mem.list, **ctx.scope, session_id=sid)]
        return ui.render(ctx, "conversation.html", s=session, turns=turns, episodes=episodes, extracted=extracted,
                         error=error, status=status)

    @ui.route("/conversations/{sid}")
    async def conversation(request: Request) -> Response:
        ctx = await ui.context(request)
        return await conversation_page(ctx, request.path_params["sid"])

    @ui.route("/conversations/{sid}/delete", ("POST",))
    async def delete_conversation(request: Request) -> Response:
        ctx = await ui.context(request, write=True)
        mem = ctx.mem
        sid = request.path_params["sid"]
        await ui.call(mem.get_session, sid, **ctx.scope)
        if ctx.field("confirm") != sid:  # the page again, saying what was wrong; nothing deleted
            return await conversation_page(ctx, sid, status=422, error=i18n.text(
                ctx.lang, "err_confirm_session", sid=labels.isolate(sid)))
        report = await ui.call(mem.delete_session, sid, **ctx.scope)
        raise Redirect(f"/conversations?notice=deleted:{report['turns']}")

    # ---- files -----------------------------------------------------------------------

    def texts(ctx: Ctx) -> tuple[str, str]:
        memory_md = ctx.mem.md_export(**ctx.scope).read_text("utf-8")
        user_md = ctx.mem.user_profile(**ctx.scope).read_text("utf-8")
        return memory_md, user_md

    async def files_page(ctx: Ctx, *, error: str = "", status: int = 200) -> Response:
        memory_md, user_md = await ui.call(texts, ctx)
        return ui.render(ctx, "files.html", memory_md=memory_md, user_md=user_md,
                         memory_html=render_markdown(memory_md), user_html=render_markdown(user_md),
                         applied=applied_ops(ctx.request.query_params.get("notice", "")), error=error, status=status)

    @ui.route("/files")
    async def files(request: Request) -> Response:
        return await files_page(await ui.context(request))

    @ui.route("/files/{name}")
    async def download(request: Request) -> Response:
        ctx = await ui.context(request)
        name = request.path_params["name"]
        if name not in ("MEMORY.md", "USER.md"):
            raise Denied(404, i18n.text(ctx.lang, "err_not_found"))
        memory_md, user_md = await ui.call(texts, ctx)
        return Response(memory_md if name == "MEMORY.md" else user_md, media_type="text/markdown; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    # ---- import from another tool ----------------------------------------------------

    @ui.route("/import")
    async def import_form(request: Request) -> Response:
        ctx = await ui.context(request)
        notice = request.query_params.get("notice", "")
        turns, _, memories = notice.partition(",")
        done = (int(turns), int(memories)) if turns.isdigit() and memories.isdigit() and len(notice) < 30 else None
        return ui.render(ctx, "import_other.html", formats=FORMATS, fmt="chatgpt", text="", report=None,
                         digest="", done=done)

    async def import_other(ctx: Ctx, fmt: str) -> Response:
        """Another tool's export (the form's `from`): a dry run first, showing what would be
        added and what is skipped; `apply` with the same text's digest then imports it."""
        text = ctx.field("text")
        if not text.strip():
            return ui.render(ctx, "import_other.html", formats=FORMATS, fmt=fmt, text="", report=None, digest="",
                             done=None, error=i18n.text(ctx.lang, "err_import_other_empty"), status=422)
        digest = hashlib.sha256(f"{fmt}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()
        apply = ctx.field("apply") == "1"
        changed = apply and ctx.field("digest") != digest
        try:
            report = await ui.call(foreign_import, ctx.mem, ctx.scope, fmt, text, dry_run=not apply or changed)
        except ValidationError as exc:  # the whole file is unreadable: the form again, saying why
            return ui.render(ctx, "import_other.html", formats=FORMATS, fmt=fmt, text=text, report=None, digest="",
                             done=None, error=str(exc), status=422)
        if apply and not changed:
            raise Redirect(f"/import?notice={report.turns},{report.memories}")
        return ui.render(ctx, "import_other.html", formats=FORMATS, fmt=fmt, text=text, report=report,
                         digest=digest, done=None, status=422 if changed else 200,
                         error=i18n.text(ctx.lang, "err_import_changed") if changed else "")

    @ui.route("/files/import", ("POST",))
    async def import_edits(request: Request) -> Response:
        """Dry run first (the operations, nothing written); `apply` with the same text's digest
        then writes exactly what was shown. With `from`, another tool's export (`import_other`)."""
        ctx = await ui.context(request, write=True)
        if ctx.field("from") in FORMATS:
            return await import_other(ctx, ctx.field("from"))
        mem = ctx.mem
        text = ctx.field("text").replace("\r\n", "\n")  # a browser sends a textarea's lines as CRLF
        if not text.strip():
            return await files_page(ctx, error=i18n.text(ctx.lang, "err_import_empty"), status=422)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        apply = ctx.field("apply") == "1"
        changed = apply and ctx.field("digest") != digest
        ops = await ui.call(md_import, mem, ctx.scope, text, ctx.lang, dry_run=not apply or changed)
        if apply and not changed:
            counts = Counter(op.op for op in ops)
            raise Redirect("/files?notice=" + ",".join(f"{k}:{v}" for k, v in sorted(counts.items())))
        # a preview; after a changed text, the preview of the text as it is now, saying so
        return ui.render(ctx, "import_preview.html", ops=ops, text=text, digest=digest,
                         counts=Counter(op.op for op in ops), status=422 if changed else 200,
                         error=i18n.text(ctx.lang, "err_import_changed") if changed else "")

    # ---- insight ---------------------------------------------------------------------

    @ui.route("/insight")
    async def insight(request: Request) -> Response:
        ctx = await ui.context(request)
        mem = ctx.mem
        t = i18n.translator(ctx.lang)
        q = request.query_params.get("q", "").strip()
        stats = await ui.call(mem.stats, **ctx.scope)
        memories = await ui.call(mem.list, **ctx.scope)
        activity = await ui.call(mem.activity, **ctx.scope)
        jobs = await ui.call(mem.extraction_jobs, **ctx.scope, status=("queued", "running", "failed"))
        pol = mem.config.policy
        hist = histogram([m.score for m in memories])
        edges = [f"{i / 10:.1f}" for i in range(11)]
        days = activity.days
        series = {"active": activity.active, "archived": activity.archived, "deleted": activity.deleted}
        by_category = sorted(stats.memories_by_category.items(), key=lambda kv: -kv[1])
        category_bars = [(labels.label(ctx.lang, "category", k), v) for k, v in by_category]
        context = await ui.call(mem.build_context, None, q, **ctx.scope) if q else None
        deleted = series["deleted"][-1] if series["deleted"] else 0
        return ui.render(
            ctx, "insight.html", stats=stats, q=q, jobs=jobs, context=context, hist=hist, labels=edges,
            by_category=by_category, deleted=deleted, days=days, series=series,
            score_chart=charts.columns(hist, edges, t("chart_scores"), mark=pol.archive_below,
                                       mark_label=f"{t('archive_below')} {pol.archive_below:g}"),
            category_chart=charts.bars(category_bars, t("chart_categories")) if by_category else None,
            timeline_chart=charts.lines(days, series,
                                        {k: t(k) for k in series}, t("chart_timeline")) if days else None,
            context_chart=charts.bars([(labels.label(ctx.lang, "block", b.name), b.tokens) for b in context.blocks],
                                      t("chart_context"),
                                      limits=[b.budget for b in context.blocks], width=760) if context else None,
        )

    # ---- forget me -------------------------------------------------------------------

    @ui.route("/forget")
    async def forget_form(request: Request) -> Response:
        ctx = await ui.context(request)
        mem = ctx.mem
        stats = await ui.call(mem.stats, **ctx.scope)
        return ui.render(ctx, "forget.html", stats=stats, removed=None)

    @ui.route("/forget", ("POST",))
    async def forget(request: Request) -> Response:
        ctx = await ui.context(request, write=True)
        mem = ctx.mem
        if ctx.field("confirm") != ctx.session.user_id:  # the page again, saying what was wrong
            stats = await ui.call(mem.stats, **ctx.scope)
            return ui.render(ctx, "forget.html", stats=stats, removed=None, status=422, error=i18n.text(
                ctx.lang, "err_confirm_purge", user=labels.isolate(ctx.session.user_id)))
        report = await ui.call(mem.purge, **ctx.scope, actor="web")
        stats = await ui.call(mem.stats, **ctx.scope)
        removed = labels.removed(ctx.lang, report.counts, report.files, report.cached_vectors)
        response = ui.render(ctx, "forget.html", stats=stats, removed=removed)
        if ctx.session.principal.key_id == "":  # the open local user starts afresh
            response.delete_cookie(COOKIE, path="/")
        return response


def md_import(mem: Memory, scope: dict[str, Any], text: str, lang: str, *, dry_run: bool) -> list[MdOperation]:
    """`Memory.md_import` on the pasted text, written to a private temporary MEMORY.md."""
    with tempfile.TemporaryDirectory(prefix="memlane-webui-") as tmp:
        path = Path(tmp) / "MEMORY.md"
        try:
            path.write_text(text, "utf-8")
        except UnicodeEncodeError:
            raise ValidationError("text", i18n.text(lang, "err_import_unicode")) from None
        return mem.md_import(path, **scope, dry_run=dry_run)


def foreign_import(mem: Memory, scope: dict[str, Any], fmt: str, text: str, *, dry_run: bool) -> ImportReport:
    """`Memory.import_from` on the pasted export, written to a private temporary file (a
    markdown note: a folder of that one note); the report names no server file."""
    with tempfile.TemporaryDirectory(prefix="memlane-webui-") as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        path = folder / "note.md" if fmt == "markdown" else Path(tmp) / ("export.af" if fmt == "letta" else "export.json")
        try:
            path.write_text(text.replace("\r\n", "\n") if fmt == "markdown" else text, "utf-8")
        except UnicodeEncodeError:
            raise ValidationError("text", "the text holds characters that are not valid Unicode (a lone surrogate)") from None
        try:
            report = mem.import_from(folder if fmt == "markdown" else path, format=fmt, **scope, dry_run=dry_run)
        except ValidationError as exc:
            raise ValidationError(exc.field, str(exc).replace(str(path), "the export").replace(str(folder), "the export")) from None
    report.file = ""
    for s in report.skipped:
        s.record = s.record.replace(str(path), "the export")
    return report


def applied_ops(notice: str) -> list[tuple[str, int]]:
    """The Files page's notice after an import, "ADD:2,UPDATE:1", as (operation, count);
    anything else in it is dropped (it came in a URL)."""
    out = []
    for part in notice.split(",")[:10]:
        op, _, n = part.partition(":")
        if op in ("ADD", "UPDATE", "DELETE", "SKIP") and n.isdigit() and len(n) < 10:
            out.append((op, int(n)))
    return out
