"""The dates a query names: "on October 13, 2023", "in June", "2023年10月13日", and, given
the day it is asked, "yesterday", "four weeks ago", "last month", "in the past three months",
"上周", "三天前".

Asked about a day, a month or a year, a user means what was said then: search favours
records from that period (issue 3: +1.6 pts R@10 on LoCoMo, whose questions name the day of
a session). A relative date names a span of days counted back from the asking day.

"In the past three months", "最近三天" only say when: the window's words are not what the
user asks about, yet a turn saying "for three months now" holds them. Search leaves them out
of the words it matches (`Span.window`). Other dates stay: evidence often repeats them ("a year
ago", "last weekend", "on July 12"), measured on LoCoMo (issue 14).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from itertools import islice
from typing import Any

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


@dataclass(frozen=True)
class Span:
    """Days `start` to `end` (exclusive): what a relative date names. `window`: the words
    that named it, where they only bound a search ("in the past three months"); else ""."""

    start: date
    end: date
    window: str = field(default="", compare=False)

    def contains(self, at: datetime, grace_days: int = 0) -> bool:
        return self.nearness(at, grace_days) > 0

    def nearness(self, at: datetime, grace_days: int = 0) -> float:
        """As `Period.nearness`: 1 inside, fading to 0 over `grace_days` after the end."""
        when = at.date()
        if when < self.start:
            return 0.0
        after = (when - self.end).days + 1
        return 1.0 if after <= 0 else max(0.0, 1.0 - after / (grace_days + 1))


_NUMBER = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|couple of)"
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "a couple of": 2,
          "couple of": 2}
_UNIT = r"(day|week|month|year)s?"
_ZH_NUMBER = r"(\d{1,3}|[一二两三四五六七八九十几]{1,3})"
_ZH_UNIT = r"(天|日|周|星期|礼拜|个月|月|年)"
# a number's start: not the tail of a longer one ("1000天前" is not "000天前", "一百二十天前" not "二十天前")
_ZH_NOT_AFTER = r"(?<![\d.,一二两三四五六七八九十几百千万])"
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365, "天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7,
         "个月": 30, "月": 30, "年": 365}
_RELATIVE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b(?:in |over |during )?the (?:past|last) {_NUMBER} {_UNIT}\b"), "past"),
    (re.compile(rf"(?<!\d[.,])\b{_NUMBER} {_UNIT} ago\b"), "ago"),
    (re.compile(r"\b(?:the day before yesterday)\b"), "2 day"),
    (re.compile(r"\byesterday\b"), "1 day"),
    (re.compile(r"\blast (week|weekend|month|year)\b"), "last"),
    (re.compile(r"\bthis (week|month|year)\b"), "this"),
    (re.compile(rf"(?:最近|过去|近|这)\s*{_ZH_NUMBER}\s*{_ZH_UNIT}"), "past"),
    (re.compile(rf"{_ZH_NOT_AFTER}{_ZH_NUMBER}\s*{_ZH_UNIT}(?:以前|之前|前)"), "ago"),
    (re.compile(r"前天"), "2 day"),
    (re.compile(r"昨天|昨日"), "1 day"),
    (re.compile(r"上(?:个)?(周|星期|礼拜|月)|(去)年"), "last"),
    (re.compile(r"(?:这|本)(?:个)?(周|星期|礼拜|月)|(今)年"), "this"),
]


_ZH_DIGITS = "一二三四五六七八九"


def _count(word: str) -> int | None:
    """3, "three", "a few", 三, 两, 十二, 二十五; None for anything else (十十)."""
    if word.isdigit():
        return int(word)
    if word in _WORDS:
        return _WORDS[word]
    if word in ("两", "几"):
        return 2 if word == "两" else 3
    m = re.fullmatch(r"([一二三四五六七八九])?(十)?([一二三四五六七八九])?", word)
    if not word or m is None or (m.group(1) and m.group(3) and not m.group(2)):
        return None
    tens, _, ones = (_ZH_DIGITS.index(g) + 1 if g and g != "十" else 0 for g in m.groups())
    return (tens or 1) * 10 + ones if m.group(2) else tens


def relative_span(text: str, today: date) -> Span | None:
    """The span of days a relative date in the text names, counted back from `today`."""
    try:
        return _relative(text.lower(), today)
    except (OverflowError, ValueError):  # counted back past year 1
        return None


def _relative(lowered: str, today: date) -> Span | None:
    for pattern, kind in _RELATIVE:
        m = pattern.search(lowered)
        if m is None:
            continue
        if kind.endswith(" day"):
            back = int(kind.split()[0])
            return Span(today - timedelta(days=back), today - timedelta(days=back - 1))
        if kind in ("past", "ago"):
            n = _count(m.group(1))
            if n is None or n > 400:
                continue
            days = n * _DAYS[m.group(2)]
            if kind == "past":
                return Span(today - timedelta(days=days), today + timedelta(days=1), m.group(0))
            # "four weeks ago" is that week, give or take: the longer ago, the rounder the number
            half = max(_DAYS[m.group(2)] // 2, days // 4, 1 if n > 1 else 0)
            centre = today - timedelta(days=days)
            return Span(centre - timedelta(days=half), centre + timedelta(days=half + 1))
        unit = next(g for g in m.groups() if g)
        unit = {"周": "week", "星期": "week", "礼拜": "week", "月": "month", "去": "year", "今": "year"}.get(unit, unit)
        return _calendar(unit, today, last=kind == "last")
    return None


def _calendar(unit: str, today: date, last: bool) -> Span:
    """This or last calendar week (from Monday), weekend, month or year."""
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        return Span(saturday, saturday + timedelta(days=2))
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return Span(monday - timedelta(days=7), monday) if last else Span(monday, today + timedelta(days=1))
    if unit == "month":
        first = today.replace(day=1)
        if not last:
            return Span(first, today + timedelta(days=1))
        prev = (first - timedelta(days=1)).replace(day=1)
        return Span(prev, first)
    jan1 = today.replace(month=1, day=1)
    return Span(jan1.replace(year=jan1.year - 1), jan1) if last else Span(jan1, today + timedelta(days=1))


def held_nearness(period: Period | Span, start: datetime, end: datetime, grace_days: int = 0) -> float:
    """How near a stretch of time [start, end) — when a fact held (issue 32) — comes to the
    period: 1 when they overlap, else the nearness of its nearest day."""
    points = [start, max(start, end - timedelta(days=1))]
    first = period.start if isinstance(period, Span) else (
        (period._span(period.year) or (None,))[0] if period.year else None)
    if first is not None:
        at = datetime(first.year, first.month, first.day, tzinfo=start.tzinfo)
        if start <= at < end:
            points.append(at)
    return max(period.nearness(p, grace_days) for p in points)


def mentioned_period(text: str, today: date | None = None) -> Period | Span | None:
    """The first absolute date the text names, as a Period; else, given the asking day, the
    span a relative date names; None when it names neither."""
    found = _absolute(text)
    return found if found is not None or today is None else relative_span(text, today)


# "our first conversation", "the last time we talked", "what did you say last time?",
# "我们第一次聊天", "上次我们聊", "你上次说": a conversation named by its order rather than its
# date. Not when a topic qualifies it ("our last conversation about budgets" is the last of
# those, which the words find: LongMemEval says "our previous conversation about X" of any
# earlier one), nor when someone else had it ("my last conversation with my boss", "when my
# wife and I first met", "the first talk at PyCon", "他上次说", "我第一次谈恋爱").
_TALK = r"(?:conversation|chat|discussion|session)s?"
_WE_TALKED = r"(?:we (?:talked|spoke|chatted|met)|i (?:talked|spoke|chatted) (?:to|with) you)\b"
_WE_SAID = r"\b(?:we|you and i)\b[^.?!]{0,40}\b(?:talk(?:ed)?|discuss(?:ed)?|chat(?:ted)?|spoke)\b[^.?!]{0,30}\b(?:the )?"
_YOU_SAID = r"\byou\b[^.?!]{0,40}\b(?:the )?"
# a "first/last time" that ends the clause (or is ours), not "the first time we went to Paris"
_TIME_ENDS = rf" time\b(?= *(?:[.?!,;:\"')]|$|{_WE_TALKED}|around\b))"
# what may follow the conversation's name: a topic or another party qualifies it
_NOT_QUALIFIED = r"(?! (?:about|on|regarding|concerning|of|in|at|during|from|for|by|with|between|among)\b(?! (?:you|me|us)\b))"
_SESSION_ORDER: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b(?:our|the|my) (?:very )?first {_TALK}\b{_NOT_QUALIFIED}|\bour (?:very )?first talks?\b{_NOT_QUALIFIED}"
                rf"|\b(?:the )?first time {_WE_TALKED}|\bwhen we first (?:talked|spoke|chatted|met)\b"
                rf"|{_WE_SAID}first{_TIME_ENDS}|{_YOU_SAID}first{_TIME_ENDS}"),
     "first"),
    (re.compile(rf"\b(?:our|the) (?:very )?(?:last|latest|most recent) {_TALK}\b{_NOT_QUALIFIED}"
                rf"|\bour (?:very )?(?:last|latest|most recent) talks?\b{_NOT_QUALIFIED}"
                rf"|\b(?:the )?last time {_WE_TALKED}|\bwhen we last (?:talked|spoke|chatted|met)\b"
                rf"|{_WE_SAID}last{_TIME_ENDS}|{_YOU_SAID}last{_TIME_ENDS}"),
     "last"),
    # 谈 of 谈恋爱 / 谈判 / 谈生意 and 交流 of 交流会 are not a talk of ours
    (re.compile(r"(?:我们|咱们)?(?:第一次|头一次|最早一次|最初)(?:的)?"
                r"(?:聊天|对话|谈话|交流(?!会)|聊|谈(?!恋爱|判|生意|对象)|见面)"), "first"),
    (re.compile(r"(?:上次|上一次|上回|最近一次)(?:我们|咱们)?(?:的)?"
                r"(?:聊天|对话|谈话|交流(?!会)|聊|谈(?!恋爱|判|生意|对象))|(?:上次|上一次|上回)(?:我们|咱们)说"
                # what was said: by you, or by me to you ("他上次说" is his)
                r"|(?:(?<=你)|(?<=您)|(?<=我)|(?<=我们)|(?<=咱们))(?:上次|上一次|上回)(?:说|提到|讲|推荐|建议|告诉)"
                r"|(?:上次|上一次|上回)(?:你|您)(?:说|提到|讲|推荐|建议|告诉)"
                r"|我(?:上次|上一次|上回)(?:跟|和|对|告诉)(?:你|您)"), "last"),
]
# words each pattern needs: most queries hold none, and a pasted text must not be scanned for long
_CUES = [("first",), ("last", "latest", "recent"), ("第一次", "头一次", "最早一次", "最初"),
         ("上次", "上一次", "上回", "最近一次")]
# someone else in the clause: "my wife and I", "with my boss", "我和老板", "他上次"
_OTHERS_EN = re.compile(r"\b(?!you\b)[a-z]+ and (?:i|me)\b|\b(?:i|me) and (?!you\b)[a-z]+\b")
_OTHERS_AFTER_EN = re.compile(r"^[^.?!,;]{0,40}?\b(?:with|between|among)\b (?!you\b|me\b|us\b)")
_OTHERS_ZH = re.compile(r"[和跟与](?![你您我])|[他她它]们?(?:[和跟与]|$)")
_CLAUSE = re.compile(r"[.?!;\n。？！；]")


# The words with which a query names a conversation ("last time", "our first chat", "上次聊"):
# they say which conversation, not what was said in it
SESSION_WORDS = frozenset({
    "first", "last", "latest", "recent", "recently", "time", "times", "conversation", "conversations", "talk",
    "talks", "talked", "chat", "chats", "chatted", "discussion", "session", "spoke", "speak", "met", "said", "say",
    "第一次", "头一次", "最早", "最初", "上次", "上一次", "上回", "最近", "聊天", "对话", "谈话", "交流", "聊", "谈",
    "见面", "一次"})


def named_session(text: str) -> str | None:
    """"first" or "last" when the text names a conversation by its order ("what did we talk
    about in our first conversation?", "上次我们聊了什么"), else None."""
    found = session_reference(text)
    return found[0] if found else None


def session_reference(text: str) -> tuple[str, str] | None:
    """("first" or "last", the words that name it: "last time", "上次") where the text names a
    conversation by its order, else None."""
    lowered = text.lower()
    for (pattern, which), cues in zip(_SESSION_ORDER, _CUES, strict=True):
        if not any(cue in lowered for cue in cues):  # cheap: most queries hold none
            continue
        for m in islice(pattern.finditer(lowered), 16):  # a few: a pasted text repeats them
            start = max((b.end() for b in _CLAUSE.finditer(lowered, max(0, m.start() - 200), m.start())),
                        default=max(0, m.start() - 200))
            end = next((b.start() for b in _CLAUSE.finditer(lowered, m.end(), m.end() + 200)), m.end() + 200)
            before, after = lowered[start : m.start()], lowered[m.end() : end]
            if not (_OTHERS_EN.search(before + m.group() + after) or _OTHERS_AFTER_EN.search(after)
                    or _OTHERS_ZH.search(before)):
                return which, m.group()
    return None


def _absolute(text: str) -> Period | None:
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


# ---- what lies ahead: how long a plan stays true (issue 29) ---------------------------------
#
# "Training for a half marathon in March" is true until March is over; "下周三要做产品评审"
# until that Wednesday. `upcoming` reads the future a statement names and gives its last day,
# so a plan's memory is kept until then (plus a margin, `extraction.plan_margin_days`) rather
# than a fixed month. Dates already past ("last March", "昨天") name no future and are left out.

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
_ZH_WEEKDAYS = "一二三四五六日"  # 天 is 日
_SEASON_END = {"spring": (5, 31), "summer": (8, 31), "autumn": (11, 30), "fall": (11, 30), "winter": (2, 28),
               "春": (5, 31), "夏": (8, 31), "秋": (11, 30), "冬": (2, 28), "暑假": (8, 31), "寒假": (2, 28)}
_ZH_MONTH = r"(\d{1,2}|十[一二]?|[一二三四五六七八九])"


def _month_end(year: int, month: int) -> date:
    first_next = date(year + month // 12, month % 12 + 1, 1)
    return first_next - timedelta(days=1)


def _next_month(today: date, month: int, day: int | None = None, later: bool = False) -> date:
    """The coming `month` (this year's, unless it is over): its `day`, else its last day.
    `later` ("next June" said in June): never the month under way."""
    year = today.year
    end = _month_end(year, month) if day is None else date(year, month, day)
    if end < today or (later and month == today.month):
        year += 1
        end = _month_end(year, month) if day is None else date(year, month, day)
    return end


def _week_end(today: date, weeks_ahead: int) -> date:
    return today + timedelta(days=6 - today.weekday() + 7 * weeks_ahead)


def _weekday(today: date, wd: int, which: str) -> date:
    """"next" → that day of next calendar week; "this" → of this week (if still ahead);
    otherwise the first such day after today."""
    if which == "next":
        return today + timedelta(days=7 - today.weekday() + wd)
    ahead = (wd - today.weekday()) % 7
    if which == "this" and ahead == 0:
        return today
    return today + timedelta(days=ahead or 7)


def _ahead(today: date, n: int, unit: str) -> date:
    return today + timedelta(days=n * _DAYS[unit])


def _season(today: date, name: str, which: str = "") -> date:
    month, day = _SEASON_END[name]
    end = date(today.year + (1 if month < 3 and today.month > 2 else 0), month, day)
    if end < today:
        end = end.replace(year=end.year + 1)
    return end.replace(year=end.year + 1) if which == "next" and end.year == today.year else end


def _zh_count(word: str) -> int | None:
    return 2 if word == "两" else _count(word)


_UPCOMING_EN: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"\b(20\d\d)-(\d\d)-(\d\d)\b"), lambda t, g: date(int(g[0]), int(g[1]), int(g[2]))),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"), lambda t, g: date(int(g[2]), _month(g[0]), int(g[1]))),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"), lambda t, g: date(int(g[2]), _month(g[1]), int(g[0]))),
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b"), lambda t, g: _month_end(int(g[1]), _month(g[0]))),
    # "may" alone is a verb: a month without a day needs a word before it
    (re.compile(rf"\b(?:on|by|until|till|before|after|from|since|this|next|the|in|during|early|late|mid|end of|"
                rf"start of|beginning of)\s+{_MONTH}\s+{_DAY}\b(?!\s*(?:[:%.]|(?:am|pm)\b))"),
     lambda t, g: _next_month(t, _month(g[0]), int(g[1]))),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:[:%.]|(?:am|pm|days?|weeks?|months?|years?|hours?|minutes?|times?)\b))"),
     lambda t, g: _next_month(t, _month(g[0]), int(g[1]))),
    (re.compile(rf"\b(?:the\s+)?{_DAY}\s+of\s+{_MONTH}\b"), lambda t, g: _next_month(t, _month(g[1]), int(g[0]))),
    (re.compile(rf"\b(in|by|during|until|till|before|through|this|next|early|late|mid|end of|start of|"
                rf"beginning of)[\s-]+{_MONTH}(?!\s+\d)\b"), lambda t, g: _next_month(t, _month(g[1]), later=g[0] == "next")),
    (re.compile(r"\b(?:in|by|during|until|till|before|through)\s+(20\d\d)\b"), lambda t, g: date(int(g[0]), 12, 31)),
    (re.compile(r"\b(?:on|by|until|till|before|from|back on|after)\s+the\s+(\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?:of|century))"),
     lambda t, g: _day_of_month(t, int(g[0]))),
    (re.compile(r"\b(this|next|in the|in|by|until|over the)\s+(spring|summer|autumn|fall|winter)\b"),
     lambda t, g: _season(t, g[1], g[0])),
    (re.compile(r"\b(?:the\s+)?day after tomorrow\b"), lambda t, g: t + timedelta(days=2)),
    (re.compile(r"\btomorrow\b"), lambda t, g: t + timedelta(days=1)),
    (re.compile(r"\b(?:tonight|today|this (?:morning|afternoon|evening))\b"), lambda t, g: t),
    (re.compile(rf"\b(next|this|coming|on|by|until|till|before)\s+{_WEEKDAY}\b"),
     lambda t, g: _weekday(t, _weekday_index(g[1]), "next" if g[0] == "next" else "this" if g[0] == "this" else "")),
    (re.compile(r"\b(this|next)\s+weekend\b"), lambda t, g: _week_end(t, 1 if g[0] == "next" else 0)),
    (re.compile(r"\b(?:this|the)\s+week\b"), lambda t, g: _week_end(t, 0)),
    (re.compile(r"\bnext\s+week\b"), lambda t, g: _week_end(t, 1)),
    (re.compile(r"\b(?:this month|end of the month|later this month)\b"), lambda t, g: _month_end(t.year, t.month)),
    (re.compile(r"\bnext month\b"), lambda t, g: _month_end(t.year + t.month // 12, t.month % 12 + 1)),
    (re.compile(r"\b(?:this year|end of the year|later this year|year[- ]end)\b"), lambda t, g: date(t.year, 12, 31)),
    (re.compile(r"\bnext year\b"), lambda t, g: date(t.year + 1, 12, 31)),
    (re.compile(rf"\b(?:in|within|after)\s+(?:the\s+next\s+)?{_NUMBER}\s+{_UNIT}\b"),
     lambda t, g: _ahead(t, _count(g[0]) or 1, g[1])),
    (re.compile(rf"\b{_NUMBER}\s+{_UNIT}\s+from\s+(?:now|today)\b"), lambda t, g: _ahead(t, _count(g[0]) or 1, g[1])),
    (re.compile(rf"\bfor\s+the\s+next\s+{_NUMBER}\s+{_UNIT}\b"), lambda t, g: _ahead(t, _count(g[0]) or 1, g[1])),
]

_UPCOMING_ZH: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"((?:20)\d\d)\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
     lambda t, g: date(int(g[0]), int(g[1]), int(g[2]))),
    (re.compile(r"((?:20)\d\d)\s*年\s*(\d{1,2})\s*月"), lambda t, g: _month_end(int(g[0]), int(g[1]))),
    (re.compile(rf"(?<![\d年上去])(?<!上个){_ZH_MONTH}\s*月\s*(\d{{1,2}}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])\s*[日号]"),
     lambda t, g: _next_month(t, _zh_count(g[0]) or 0, _zh_count(g[1]))),
    (re.compile(rf"(?<![\d年上去个])(?<!上个){_ZH_MONTH}\s*月(?:份)?(?:[初中底末]|上旬|中旬|下旬)?(?![\d一二三四五六七八九十])"),
     lambda t, g: _next_month(t, _zh_count(g[0]) or 0)),
    (re.compile(r"(下下|下)个?月\s*(\d{1,2})\s*[日号]"), lambda t, g: _day_of_month(t, int(g[1]), 2 if g[0] == "下下" else 1)),
    (re.compile(r"(?<![\d月年周期])(\d{1,2})\s*[日号](?![\d])"), lambda t, g: _day_of_month(t, int(g[0]))),
    (re.compile(rf"(今年|明年|后年)\s*{_ZH_MONTH}\s*月(?:份)?(?:[初中底末]|上旬|中旬|下旬)?"),
     lambda t, g: _month_end(t.year + ("今明后".index(g[0][0])), _zh_count(g[1]) or 0)),
    (re.compile(r"大后天"), lambda t, g: t + timedelta(days=3)),
    (re.compile(r"(?<!大)后天"), lambda t, g: t + timedelta(days=2)),
    (re.compile(r"明[天早晚日]"), lambda t, g: t + timedelta(days=1)),
    (re.compile(r"今[天晚早日]"), lambda t, g: t),
    (re.compile(r"(?<!每)(?<!每个)(下下|下|这|本)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])"),
     lambda t, g: _zh_weekday(t, g[0] or "", g[1])),
    (re.compile(r"(下下|下)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天])"), lambda t, g: _week_end(t, 2 if g[0] == "下下" else 1)),
    (re.compile(r"(?:这|本)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天])|(?<![上下])周末"), lambda t, g: _week_end(t, 0)),
    (re.compile(r"(下下|下)个?月"), lambda t, g: _month_end(*_add_months(t, 2 if g[0] == "下下" else 1))),
    (re.compile(r"(?:这个月|本月|月底|月末)"), lambda t, g: _month_end(t.year, t.month)),
    (re.compile(r"后年"), lambda t, g: date(t.year + 2, 12, 31)),
    (re.compile(r"明年"), lambda t, g: date(t.year + 1, 12, 31)),
    (re.compile(r"今年|年底|年末|年内"), lambda t, g: date(t.year, 12, 31)),
    (re.compile(r"(暑假|寒假)|(?:今年|这个|明年)?([春夏秋冬])天"), lambda t, g: _season(t, g[0] or g[1])),
    (re.compile(rf"{_ZH_NOT_AFTER}{_ZH_NUMBER}\s*{_ZH_UNIT}(?:以后|之后|后|内|以内)"),
     lambda t, g: _ahead(t, _zh_count(g[0]) or 1, g[1])),
    (re.compile(rf"(?:再过|过)\s*{_ZH_NUMBER}\s*{_ZH_UNIT}"), lambda t, g: _ahead(t, _zh_count(g[0]) or 1, g[1])),
]


def _zh_weekday(today: date, which: str, day: str) -> date:
    """周三 / 这周三 / 下周三 / 下下周三."""
    wd = _ZH_WEEKDAYS.index("日" if day == "天" else day)
    if which in ("下", "下下"):
        return _weekday(today, wd, "next") + timedelta(days=7 if which == "下下" else 0)
    return _weekday(today, wd, "this" if which in ("这", "本") else "")


def _day_of_month(today: date, day: int, months_ahead: int = 0) -> date:
    """The coming `day` of a month ("on the 27th", "15号"): this month's unless it is past;
    `months_ahead` months on when the month is named ("下个月15号")."""
    year, month = _add_months(today, months_ahead)
    found = date(year, month, day)
    if months_ahead == 0 and found < today:
        year, month = _add_months(today, 1)
        found = date(year, month, day)
    return found


def _weekday_index(name: str) -> int:
    return next(i for i, d in enumerate(_WEEKDAYS) if d.startswith(name[:3]))


def _add_months(today: date, n: int) -> tuple[int, int]:
    months = today.year * 12 + today.month - 1 + n
    return months // 12, months % 12 + 1


def upcoming(text: str, today: date) -> date | None:
    """The last day of the future the text names, counted from `today`: "in March" → March 31
    (of next year once March is over), "next Wednesday", "5月20号", "下个月" → its last day,
    "in two weeks" → 14 days on. The latest such day when it names several; None when it
    names none, or only days already past."""
    lowered = text.lower()
    found: list[date] = []
    taken: list[tuple[int, int]] = []  # "March 3, 1990" is read whole: never again as "March 3"
    for pattern, resolve in (*_UPCOMING_EN, *_UPCOMING_ZH):
        for m in islice(pattern.finditer(lowered), 8):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append(m.span())
            try:
                day = resolve(today, m.groups())
            except (ValueError, OverflowError, KeyError, StopIteration):  # "February 30", a month 13
                continue
            if isinstance(day, date) and day >= today:
                found.append(day)
    return max(found) if found else None


# relative names of one day: what a memory should also say as a date ("明天" is a different
# day tomorrow; "明天（4月26日）" is not)
_RELATIVE_DAY = re.compile(r"\b(?:the\s+)?day after tomorrow\b|\btomorrow\b|\btoday\b|\btonight\b|"
                           rf"\b(?:next|this|coming|on)\s+{_WEEKDAY}\b|\bon\s+the\s+\d{{1,2}}(?:st|nd|rd|th)\b(?!\s+of\b)|"
                           r"大后天|(?<!大)后天|明天|今天|今晚|(?<!每)(?<!每个)(?:下下|下|这|本)?个?(?:周|星期|礼拜)[一二三四五六日天]|"
                           r"(?:下下|下)个?月\s*\d{1,2}\s*[日号]|(?<![\d月年周期])\d{1,2}\s*[日号](?!\d)")


def relative_days(text: str, today: date) -> list[tuple[int, int, date]]:
    """(start, end, day) of each relative name of one day in the text ("tomorrow", "next
    Wednesday", "明天", "下周三", "15号"), counted from `today`; days already past left out."""
    out = []
    for m in islice(_RELATIVE_DAY.finditer(text.lower()), 8):
        day = upcoming(m.group(), today) if not re.search(r"today|tonight|今天|今晚", m.group()) else today
        if day is not None:
            out.append((m.start(), m.end(), day))
    return out
