"""The dates a query names: "on October 13, 2023", "in June", "2023年10月13日".

Asked about a day, a month or a year, a user means what was said then: search favours
records from that period (issue 3: +1.6 pts R@10 on LoCoMo, whose questions name the day of
a session). Only absolute dates are read; "last week" needs a clock and is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]
_ABBR = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# most specific first; "may" alone is a verb, so a bare month needs a preposition before it
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"), "mdy"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"), "dmy"),
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b"), "my"),
    # a day without its year ("on May 2nd", "2 May"): MemoryBank's English questions (issue 14)
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b"), "md"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b"), "dm"),
    (re.compile(rf"\b(?:in|during|of|since|early|late|mid)\s+{_MONTH}\b(?!\s+\d)"), "m"),
    (re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b"), "y"),
    (re.compile(r"((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "zh-ymd"),
    (re.compile(r"((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月"), "zh-ym"),
    (re.compile(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "zh-md"),
    (re.compile(r"((?:19|20)\d\d)\s*年"), "zh-y"),
    (re.compile(r"(?<![\d年])(\d{1,2})\s*月(?!\s*\d)"), "zh-m"),
]


@dataclass(frozen=True)
class Period:
    """A day, a month or a year; the year may be unknown ("in June")."""

    year: int | None
    month: int | None = None
    day: int | None = None

    def contains(self, at: datetime, grace_days: int = 0) -> bool:
        """Whether `at` falls in the period or within `grace_days` after it: what happened
        in June is often told in the first days of July."""
        return self.nearness(at, grace_days) > 0

    def nearness(self, at: datetime, grace_days: int = 0) -> float:
        """1 when `at` falls in the period, falling linearly to 0 over the `grace_days` after
        it: told on the day is likelier than told a week later (a daily chat's days would
        otherwise all look alike; issue 14, MemoryBank)."""
        when = at.date()
        best = 0.0
        for year in ([self.year] if self.year else [when.year, when.year - 1]):
            span = self._span(year)
            if span is None or when < span[0]:
                continue
            after = (when - span[1]).days + 1  # 0 or less: inside the period
            best = max(best, 1.0 if after <= 0 else max(0.0, 1.0 - after / (grace_days + 1)))
        return best

    def _span(self, year: int) -> tuple[date, date] | None:
        try:
            if self.month is None:
                return date(year, 1, 1), date(year + 1, 1, 1)
            if self.day is None:
                start = date(year, self.month, 1)
                return start, date(year + self.month // 12, self.month % 12 + 1, 1)
            start = date(year, self.month, self.day)
            return start, start + timedelta(days=1)
        except ValueError:  # "February 30": no such day
            return None


def mentioned_period(text: str) -> Period | None:
    """The first absolute date the text names, as a Period; None when it names none."""
    lowered = text.lower()
    for pattern, kind in _PATTERNS:
        m = pattern.search(lowered)
        if m is None:
            continue
        g = m.groups()
        if kind == "mdy":
            return Period(int(g[2]), _month(g[0]), int(g[1]))
        if kind == "dmy":
            return Period(int(g[2]), _month(g[1]), int(g[0]))
        if kind == "md":
            return _valid(Period(None, _month(g[0]), int(g[1])))
        if kind == "dm":
            return _valid(Period(None, _month(g[1]), int(g[0])))
        if kind == "my":
            return Period(int(g[1]), _month(g[0]))
        if kind == "m":
            return Period(None, _month(g[0]))
        if kind == "y" or kind == "zh-y":
            return Period(int(g[0]))
        if kind == "zh-ymd":
            return _valid(Period(int(g[0]), int(g[1]), int(g[2])))
        if kind == "zh-ym":
            return _valid(Period(int(g[0]), int(g[1])))
        if kind == "zh-md":
            return _valid(Period(None, int(g[0]), int(g[1])))
        if kind == "zh-m":
            return _valid(Period(None, int(g[0])))
    return None


def _month(name: str) -> int:
    name = name.rstrip(".")
    return _MONTHS.index(name) + 1 if name in _MONTHS else _ABBR[name]


def _valid(p: Period) -> Period | None:
    ok = p.month is None or 1 <= p.month <= 12
    return p if ok and (p.day is None or 1 <= p.day <= 31) else None
