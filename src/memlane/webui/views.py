"""What the pages show, from the engine's records: filters and sorting of the memories table,
a histogram of scores, and MEMORY.md / USER.md as safe HTML. A memory's forecast and a scope's
activity over time are the engine's (`memlane.forecast`), as the API, REST and CLI give them."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, get_args

from markupsafe import Markup

from memlane.errors import ValidationError
from memlane.models import MemoryRecord, Source
from memlane.webui.i18n import text

SOURCES: tuple[str, ...] = get_args(Source)  # the memories filter offers every source
SORTS = ("score", "updated_at", "created_at", "last_activated", "activation_count", "content")


@dataclass
class TableQuery:
    """The memories table's filters, sort and page, read from the query string."""

    q: str = ""
    category: str = ""
    status: str = "active"  # "" = any
    source: str = ""
    verified: str = ""  # "", "yes", "no"
    pinned: str = ""
    min_score: float | None = None
    max_score: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    sort: str = ""  # "" = relevance with a query, score otherwise
    order: str = "desc"
    page: int = 1

    @classmethod
    def parse(cls, params: Any, lang: str = "en") -> TableQuery:
        """The query string's filters; a bad one is a ValidationError naming it, in `lang`."""
        def get(name: str) -> str:
            value = params.get(name, "")
            if len(value) > 2000:
                raise ValidationError(name, text(lang, "err_too_long", n=2000))
            return str(value).strip()

        def number(name: str) -> float | None:
            raw = get(name)
            if not raw:
                return None
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            if not 0.0 <= value <= 1.0:
                raise ValidationError(name, text(lang, "err_number", value=raw))
            return value

        def day(name: str, end: bool) -> datetime | None:
            raw = get(name)
            if not raw:
                return None
            try:
                d = date.fromisoformat(raw)
            except ValueError:
                raise ValidationError(name, text(lang, "err_date", value=raw)) from None
            start = datetime(d.year, d.month, d.day, tzinfo=UTC)
            return start + timedelta(days=1) - timedelta(microseconds=1) if end else start

        def choice(name: str, allowed: tuple[str, ...], default: str) -> str:
            raw = get(name) or default
            if raw not in allowed:
                raise ValidationError(name, text(lang, "err_choice", value=raw, choices=", ".join(a for a in allowed if a)))
            return raw

        raw_page = get("page") or "1"
        if not raw_page.isdigit() or not 1 <= int(raw_page) <= 1_000_000:
            raise ValidationError("page", text(lang, "err_page", value=raw_page))
        return cls(
            q=get("q"), category=get("category"), status=choice("status", ("active", "archived", "superseded", "any"), "active"),
            source=choice("source", ("", *SOURCES), ""),
            verified=choice("verified", ("", "yes", "no"), ""), pinned=choice("pinned", ("", "yes", "no"), ""),
            min_score=number("min_score"), max_score=number("max_score"),
            since=day("since", False), until=day("until", True),
            sort=choice("sort", ("", *SORTS), ""), order=choice("order", ("asc", "desc"), "desc"),
            page=int(raw_page),
        )

    def engine_status(self) -> str | None:
        return None if self.status == "any" else self.status

    def listing(self) -> dict[str, Any]:
        """The filters, sort and order as `Memory.list` / `count` take them (in SQL)."""
        yes_no = {"yes": True, "no": False, "": None}
        return {"category": self.category or None, "status": self.engine_status(), "since": self.since,
                "until": self.until, "source": self.source or None, "verified": yes_no[self.verified],
                "pinned": yes_no[self.pinned], "min_score": self.min_score, "max_score": self.max_score}

    def sorting(self) -> dict[str, Any]:
        return {"sort": self.sort or "score", "descending": self.order == "desc"}

    def keep(self, mem: MemoryRecord) -> bool:
        """The filters a search's hits are held to (a search takes category, status and time)."""
        if self.source and mem.source != self.source:
            return False
        if self.verified and mem.verified != (self.verified == "yes"):
            return False
        if self.pinned and mem.pinned != (self.pinned == "yes"):
            return False
        if self.min_score is not None and mem.score < self.min_score:
            return False
        return not (self.max_score is not None and mem.score > self.max_score)

    def ordered(self, mems: list[MemoryRecord]) -> list[MemoryRecord]:
        if not self.sort:
            return mems  # the engine's order: relevance for a search, best score for a list
        return sorted(mems, key=lambda m: getattr(m, self.sort), reverse=self.order == "desc")

    def params(self, **change: Any) -> dict[str, str]:
        """The query string for a link to this view with `change` applied."""
        values: dict[str, Any] = {
            "q": self.q, "category": self.category, "status": self.status, "source": self.source,
            "verified": self.verified, "pinned": self.pinned, "min_score": self.min_score,
            "max_score": self.max_score, "since": self.since.date().isoformat() if self.since else "",
            "until": self.until.date().isoformat() if self.until else "", "sort": self.sort,
            "order": self.order, "page": self.page,
        }
        values.update(change)
        return {k: str(v) for k, v in values.items() if v not in (None, "")}


def histogram(scores: list[float], bins: int = 10) -> list[int]:
    counts = [0] * bins
    for s in scores:
        counts[min(bins - 1, max(0, int(s * bins)))] += 1
    return counts


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    out = html.escape(text)
    out = _CODE.sub(r"<code>\1</code>", out)
    return _BOLD.sub(r"<strong>\1</strong>", out)


def render_markdown(text: str) -> Markup:
    """The subset of Markdown MEMORY.md and USER.md use (headings, lists, paragraphs, HTML
    comments dropped), every character escaped first: a memory's text never becomes markup.
    Each block takes its direction from its own text (a memory's bidi controls stay in it)."""
    out: list[str] = []
    in_list = False
    in_comment = False
    for line in text.splitlines():
        stripped = line.strip()
        if in_comment or stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        bullet = re.match(r"^\s*[-*]\s+(.*)$", line)
        if bullet:
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f'<li dir="auto">{_inline(bullet.group(1))}</li>')
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        heading = re.match(r"^(#{1,6})\s+(.*)$", stripped)
        if heading:
            level = min(6, len(heading.group(1)) + 1)  # the page's own h1 stays the only one
            out.append(f'<h{level} dir="auto">{_inline(heading.group(2))}</h{level}>')
        elif stripped:
            out.append(f'<p dir="auto">{_inline(stripped)}</p>')
    if in_list:
        out.append("</ul>")
    return Markup("\n".join(out))
