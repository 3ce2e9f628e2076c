"""The Memories table and a memory's own page: search, filters, inline edit, pin, verify,
delete with undo, bulk actions, audit history, source turns, related memories, and for a fact
that changed its timeline and the "the fact changed" form (issue 32). Every action is a
`memlane.Memory` call in the session's scope, with the engine's validation."""

from __future__ import annotations

import contextlib
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from memlane import supersession
from memlane.errors import NotFound, ValidationError
from memlane.forecast import forecast
from memlane.models import Hit, MemoryEvent, MemoryRecord, Turn
from memlane.webui import i18n
from memlane.webui.plumbing import Ctx, Redirect, safe_next
from memlane.webui.views import SOURCES, TableQuery

if TYPE_CHECKING:
    from memlane.webui.plumbing import Plumbing

BULK_MAX = 500  # not from a seed: one bulk action at most touches a page's worth ×10
HIDDEN_DIFF = {"updated_at"}  # every change moves it: the history says when already


def register(ui: Plumbing) -> None:

    def row(ctx: Ctx, m: MemoryRecord, **extra: Any) -> Response:
        pol = ctx.mem.config.policy
        return ui.render(ctx, "_memory_row.html", m=m, fc=forecast(m, pol, ctx.mem.clock()),
                         categories=pol.categories, **extra)

    async def get(ctx: Ctx) -> MemoryRecord:
        return await ui.call(ctx.mem.get, ctx.request.path_params["id"], **ctx.scope)

    @ui.route("/memories")
    async def table(request: Request) -> Response:
        ctx = await ui.context(request)
        mem = ctx.mem
        tq = TableQuery.parse(request.query_params, ctx.lang)
        size = mem.config.web.page_size
        filters: dict[str, Any] = {"status": tq.engine_status(), "since": tq.since, "until": tq.until}
        if tq.category:
            filters["category"] = tq.category
        if tq.q:
            # looking is not using: no activation from the UI; weak hits dropped as build_context does
            hits = await ui.call(mem.search, tq.q, **ctx.scope, limit=mem.config.web.search_limit, filters=filters,
                                 activate=False, min_score=mem.config.search.min_relevance)
            rows = tq.ordered([h.memory for h in hits if h.memory is not None and tq.keep(h.memory)])
            relevance = {h.id: h.score for h in hits}
            total = len(rows)
            shown = rows[(tq.page - 1) * size: tq.page * size]
        else:  # filtered, sorted and paged by the store: a page reads its rows, not the scope's
            total = await ui.call(mem.count, **ctx.scope, **tq.listing())
            shown = await ui.call(mem.list, **ctx.scope, **tq.listing(), **tq.sorting(), limit=size,
                                  offset=(tq.page - 1) * size)
            relevance = {}
        pages = max(1, -(-total // size))
        now, pol = mem.clock(), mem.config.policy
        stats = await ui.call(mem.stats, **ctx.scope)
        values: dict[str, Any] = {"tq": tq, "rows": [(m, forecast(m, pol, now)) for m in shown], "total": total,
                  "pages": pages, "relevance": relevance, "categories": pol.categories, "sources": SOURCES,
                  "stats": stats, "archive_below": pol.archive_below, "notice": request.query_params.get("notice", ""),
                  "undo_ids": request.query_params.getlist("undo")[:BULK_MAX]}
        if ctx.htmx and request.headers.get("hx-target") == "results":
            return ui.render(ctx, "_memory_results.html", **values)
        return ui.render(ctx, "memories.html", **values)

    @ui.route("/memories/bulk", ("POST",))
    async def bulk(request: Request) -> Response:
        ctx = await ui.context(request, write=True)
        mem = ctx.mem
        action = ctx.field("action")
        ids = list(dict.fromkeys(ctx.fields("ids")))
        if action not in ("delete", "archive", "activate", "restore"):
            raise ValidationError("action", i18n.text(ctx.lang, "err_bulk_action"))
        if not ids or len(ids) > BULK_MAX:
            raise ValidationError("ids", i18n.text(ctx.lang, "err_bulk_select", n=BULK_MAX))

        def apply() -> int:
            done = 0
            for memory_id in ids:  # each audited on its own, so each can be undone on its own
                if action == "delete":
                    mem.delete(memory_id, **ctx.scope, actor="web", reason="bulk delete in the web UI")
                elif action == "restore":
                    mem.restore(memory_id, **ctx.scope, actor="web")
                else:
                    mem.update(memory_id, **ctx.scope, status="archived" if action == "archive" else "active",
                               actor="web", reason=f"bulk {action} in the web UI")
                done += 1
            return done

        done = await ui.call(apply)
        back = ctx.field("back") or "/memories"
        query = [("notice", f"{action}:{done}")]
        if action in ("delete", "archive"):
            query += [("undo", i) for i in ids]
        back = safe_next(back, "/memories")
        raise Redirect(back + ("&" if "?" in back else "?") + urlencode(query))

    @ui.route("/memories/{id}")
    async def detail(request: Request) -> Response:
        ctx = await ui.context(request)
        mem = ctx.mem
        memory_id = request.path_params["id"]
        history = await ui.call(mem.history, memory_id, **ctx.scope)  # NotFound for another scope's id
        try:
            m: MemoryRecord | None = await ui.call(mem.get, memory_id, **ctx.scope)
        except NotFound:
            m = None  # deleted: its history (and the undo) remain
        changes = [(e, diff(e.before, e.after)) for e in reversed(history)]
        replaced = [e for e in history if e.kind == "UPDATE" and e.before and e.after
                    and e.before.get("content") != e.after.get("content")]
        turns: list[Turn] = []
        related: list[Hit] = []
        contradicted: list[MemoryEvent] = []
        timeline: list[tuple[MemoryRecord, list[Turn]]] = []
        if m is not None:
            turns = await source_turns(ctx, m)
            if m.supersedes or m.superseded_by:  # a fact that changed: every version, with its turns
                versions = await ui.call(mem.timeline, m.id, **ctx.scope)
                timeline = [(v, turns if v.id == m.id else await source_turns(ctx, v)) for v in versions]
            hits = await ui.call(mem.search, m.content, **ctx.scope, limit=20, activate=False,
                                 filters={"status": None})
            related = sorted((h for h in hits if h.id != m.id), key=lambda h: -h.similarity)[:5]
            audit = await ui.call(mem.audit, **ctx.scope)
            contradicted = [e for e in audit if e.reason.startswith(f"contradicted by {m.id}")]
        flagged: list[MemoryRecord] = []  # a change the engine was unsure of (supersession.FLAG)
        if m is not None and m.status == "active":
            for old_id in flagged_ids(m):
                with contextlib.suppress(NotFound):
                    old = await ui.call(mem.get, old_id, **ctx.scope)
                    if old.superseded_by is None:  # replaced meanwhile (or from a later date): nothing to apply
                        flagged.append(old)
        fc = forecast(m, mem.config.policy, mem.clock()) if m is not None else None
        return ui.render(ctx, "memory.html", m=m, memory_id=memory_id, changes=changes, replaced=replaced,
                         flagged=flagged,
                         turns=turns, related=related, contradicted=contradicted, fc=fc, timeline=timeline,
                         successor=next((v for v, _ in timeline if m is not None and v.id == m.superseded_by), None),
                         categories=mem.config.policy.categories, today=mem.clock().date().isoformat())

    async def source_turns(ctx: Ctx, m: MemoryRecord) -> list[Turn]:
        """The turns a memory was extracted from (its session's, within its span when it has one)."""
        if not m.source_session:
            return []
        span = m.metadata.get("turns")
        try:
            session_turns = await ui.call(ctx.mem.get_turns, m.source_session, **ctx.scope)
        except NotFound:
            return []
        return [t for t in session_turns if not (isinstance(span, list) and len(span) == 2) or span[0] <= t.seq <= span[1]]

    @ui.route("/memories/{id}/row")
    async def show_row(request: Request) -> Response:
        ctx = await ui.context(request)
        return row(ctx, await get(ctx))

    @ui.route("/memories/{id}/edit")
    async def edit_row(request: Request) -> Response:
        ctx = await ui.context(request)
        return row(ctx, await get(ctx), editing=True)

    @ui.route("/memories/{id}/confirm-delete")
    async def confirm_row(request: Request) -> Response:
        ctx = await ui.context(request)
        return row(ctx, await get(ctx), confirming=True)

    @ui.route("/memories/{id}", ("POST",))
    async def update(request: Request) -> Response:
        ctx = await ui.context(request, write=True)
        mem = ctx.mem
        memory_id = request.path_params["id"]
        changes: dict[str, Any] = {}
        if "content" in ctx.form:
            changes["content"] = ctx.field("content")
        if "category" in ctx.form:
            changes["category"] = ctx.field("category")
        if "pinned" in ctx.form:
            changes["pinned"] = flag(ctx.field("pinned"), "pinned", ctx.lang)
        if "verified" in ctx.form:
            changes["verified"] = flag(ctx.field("verified"), "verified", ctx.lang)
        if "status" in ctx.form:
            changes["status"] = ctx.field("status")
        # a person's verify button: the history says so in words, not as a generic edit
        said = "edited in the web UI"
        if set(changes) == {"verified"}:
            said = "verified in the web UI" if changes["verified"] else "unverified in the web UI"
        reason = ctx.field("reason") or said
        m = await ui.call(mem.update, memory_id, **ctx.scope, **changes, actor="web", reason=reason)
        return ui.done(ctx, lambda: row(ctx, m, flash=i18n.text(ctx.lang, "saved")), f"/memories/{m.id}")

    @ui.route("/memories/{id}/supersede", ("POST",))
    async def supersede(request: Request) -> Response:
        """A person says the fact changed: the new text replaces the memory from the day given
        (empty: now); the old one is kept, closed then. Lands on the current memory's page."""
        ctx = await ui.context(request, write=True)
        if by := ctx.field("by").strip():  # a flagged change applied: the memory `by` replaces this one
            m = await ui.call(ctx.mem.supersede, request.path_params["id"], **ctx.scope, by=by, actor="web",
                              reason="a flagged change applied in the web UI")
            return ui.done(ctx, lambda: row(ctx, m, flash=i18n.text(ctx.lang, "changed")), f"/memories/{m.id}")
        day = ctx.field("valid_from").strip()
        try:
            since = datetime.combine(date.fromisoformat(day), time(), UTC) if day else None
        except ValueError:
            raise ValidationError("valid_from", i18n.text(ctx.lang, "err_date", value=day[:20])) from None
        m = await ui.call(ctx.mem.supersede, request.path_params["id"], ctx.field("content"), **ctx.scope,
                          valid_from=since, actor="web", reason="changed in the web UI")
        return ui.done(ctx, lambda: row(ctx, m, flash=i18n.text(ctx.lang, "changed")), f"/memories/{m.id}")

    @ui.route("/memories/{id}/keep-both", ("POST",))
    async def keep_both(request: Request) -> Response:
        """A flagged change dismissed: both facts hold; the flag goes, audited."""
        ctx = await ui.context(request, write=True)
        m = await get(ctx)
        meta = {k: v for k, v in m.metadata.items() if k != supersession.FLAG}
        m = await ui.call(ctx.mem.update, m.id, **ctx.scope, metadata=meta, actor="web",
                          reason="both facts hold (a flagged change dismissed in the web UI)")
        return ui.done(ctx, lambda: row(ctx, m, flash=i18n.text(ctx.lang, "saved")), f"/memories/{m.id}")

    @ui.route("/memories/{id}/delete", ("POST",))
    async def delete(request: Request) -> Response:
        ctx = await ui.context(request, write=True)
        mem = ctx.mem
        gone = await ui.call(mem.delete, request.path_params["id"], **ctx.scope, actor="web",
                             reason="deleted in the web UI")
        return ui.done(ctx, lambda: ui.render(ctx, "_memory_deleted.html", m=gone), f"/memories/{gone.id}")

    @ui.route("/memories/{id}/undo", ("POST",))
    async def undo(request: Request) -> Response:
        ctx = await ui.context(request, write=True)
        mem = ctx.mem
        memory_id = request.path_params["id"]
        await ui.call(mem.undo, memory_id, **ctx.scope, actor="web")
        try:
            m = await ui.call(mem.get, memory_id, **ctx.scope)
        except NotFound:  # the undone change was its ADD: it is gone now
            return ui.done(ctx, lambda: ui.render(ctx, "_memory_deleted.html", m=None, memory_id=memory_id),
                           f"/memories/{memory_id}")
        return ui.done(ctx, lambda: row(ctx, m, flash=i18n.text(ctx.lang, "undone")), f"/memories/{memory_id}")


def flagged_ids(m: MemoryRecord) -> list[str]:
    """The memories `m` may replace, as the extractor flagged them (supersession.FLAG)."""
    found = m.metadata.get(supersession.FLAG)
    ids = found.get("ids") if isinstance(found, dict) else None
    return [i for i in ids if isinstance(i, str)][:10] if isinstance(ids, list) else []


def flag(value: str, name: str, lang: str) -> bool:
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise ValidationError(name, i18n.text(lang, "err_flag", value=value[:20]))


def diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[tuple[str, Any, Any]]:
    """(field, before, after) for each field an audit event changed."""
    if before is None or after is None:
        shown = after if after is not None else before or {}
        return [(k, None, v) if after is not None else (k, v, None) for k, v in shown.items()
                if k in ("content", "category", "score", "status", "pinned", "verified")]
    keys = [k for k in {**before, **after} if k not in HIDDEN_DIFF]
    return [(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]
