"""Validate changes.json, the dev set of facts that change over time, and print its counts.

    python bench/data/changes/check.py [path/to/changes.json]

The held-out set is checked the same way: `check.py bench/data/changes/changes_holdout.json`.

Every rule of README.md that a program can check is checked here; a violation is printed with
the conversation (and turn, slot or question) it concerns, and the exit status is 1.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).with_name("changes.json")
LANGS = ("en", "zh")
PER_LANG = 12
# each file's conversation-id prefix and conversations per language; the held-out set is half
# the dev set, so the set-wide minimums below are scaled by its share (rounded up)
SETS = {"changes.json": ("chg", PER_LANG), "changes_holdout.json": ("chgh", 6)}
KINDS = ("current", "past", "when", "duration", "count")
# minimum questions of each kind over the whole set, and in all
KIND_MIN = {"current": 40, "past": 40, "when": 15, "duration": 15, "count": 10}
QUESTIONS_MIN = 130
STATIC_CURRENT_MIN = 6  # "some" questions on facts that never change
SESSIONS_RANGE = (4, 8)
TURNS_RANGE = (6, 16)
QUESTIONS_RANGE = (5, 7)
CHANGING_RANGE = (2, 4)  # slots whose value changes
STATIC_RANGE = (2, 4)  # slots with one value
VALUES_MAX = 4  # values of a changing slot: 1-3 changes
ASSISTANT_SENTENCES_MAX = 3
YEARS = (2019, 2026)
# code-switching is allowed "in a few turns": at most this share of an English conversation's
# turns may hold Chinese characters, and at least 1 - this share of a Chinese one's must
FOREIGN_TURNS_MAX = 0.1

DATE_FMT = "%Y-%m-%dT%H:%M"
FROM_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
YEAR_RE = re.compile(r"(?<!\d)(19|20)\d\d(?!\d)")
# a sentence ends at 。！？ or at . ! ? followed by a space or the end ("3.5" and "e.g" do not)
SENTENCE_END_RE = re.compile(r"[。！？]+|[.!?]+[\"”’)]*(?=\s|$)")


class Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")


def parse_date(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), DATE_FMT)
    except ValueError:
        return None


def sentences(text: str) -> int:
    """Sentence ends, plus one for words after the last end (a reply need not end in a stop)."""
    tail = SENTENCE_END_RE.split(text)[-1]
    return len(SENTENCE_END_RE.findall(text)) + bool(re.search(r"\w", tail))


def stale_for(values: list[dict[str, Any]], target: int, evidence: set[str]) -> set[str]:
    """The turns stating a value other than the target's (a value that comes back, as
    vegetarian -> fish -> vegetarian, is the same value) and not already evidence."""
    name = values[target].get("value")
    others = [set(v.get("stated_in") or []) for v in values if v.get("value") != name]
    return set().union(*others) - evidence


def check_sessions(conv: dict[str, Any], ck: Checker) -> dict[str, dict[str, Any]]:
    """Checks sessions and turns; returns the turns by id, each with its session's date."""
    cid = conv["id"]
    turns: dict[str, dict[str, Any]] = {}
    sessions = conv.get("sessions") or []
    if not SESSIONS_RANGE[0] <= len(sessions) <= SESSIONS_RANGE[1]:
        ck.fail(cid, f"{len(sessions)} sessions, want {SESSIONS_RANGE[0]}-{SESSIONS_RANGE[1]}")
    previous: datetime | None = None
    cjk_turns = 0
    for n, session in enumerate(sessions, 1):
        sid = f"S{n}"
        where = f"{cid} {sid}"
        if session.get("id") != sid:
            ck.fail(where, f"session id {session.get('id')!r}, want {sid!r}")
        date = parse_date(session.get("date"))
        if date is None:
            ck.fail(where, f"date {session.get('date')!r} is not YYYY-MM-DDTHH:MM")
            continue
        if not YEARS[0] <= date.year <= YEARS[1]:
            ck.fail(where, f"date {date:%Y-%m-%d} outside {YEARS[0]}-{YEARS[1]}")
        if previous is not None and date <= previous:
            ck.fail(where, "dates are not ascending")
        previous = date
        items = session.get("turns") or []
        if not TURNS_RANGE[0] <= len(items) <= TURNS_RANGE[1]:
            ck.fail(where, f"{len(items)} turns, want {TURNS_RANGE[0]}-{TURNS_RANGE[1]}")
        for i, turn in enumerate(items, 1):
            tid = f"{sid}:{i}"
            role = "user" if i % 2 else "assistant"
            if turn.get("id") != tid:
                ck.fail(where, f"turn id {turn.get('id')!r}, want {tid!r}")
            if turn.get("role") != role:
                ck.fail(f"{cid} {tid}", f"role {turn.get('role')!r}, want {role!r} (alternating)")
            text = turn.get("text")
            if not isinstance(text, str) or not text.strip():
                ck.fail(f"{cid} {tid}", "empty text")
                continue
            if role == "assistant" and sentences(text) > ASSISTANT_SENTENCES_MAX:
                ck.fail(f"{cid} {tid}", f"assistant reply of {sentences(text)} sentences")
            cjk_turns += bool(CJK_RE.search(text))
            turns[tid] = {**turn, "date": date, "next": None}
        for i in range(1, len(items)):
            turns[f"{sid}:{i}"]["next"] = items[i].get("role")
    if turns:
        share = cjk_turns / len(turns)
        if conv.get("lang") == "en" and share > FOREIGN_TURNS_MAX:
            ck.fail(cid, f"{share:.0%} of an English conversation's turns hold Chinese")
        if conv.get("lang") == "zh" and share < 1 - FOREIGN_TURNS_MAX:
            ck.fail(cid, f"only {share:.0%} of a Chinese conversation's turns hold Chinese")
    return turns


def check_slots(conv: dict[str, Any], turns: dict[str, dict[str, Any]], ck: Checker) -> None:
    cid = conv["id"]
    slots = conv.get("slots") or []
    names = [s.get("slot") for s in slots]
    for name, n in Counter(names).items():
        if n > 1:
            ck.fail(cid, f"slot {name!r} twice")
    changing = sum(1 for s in slots if len(s.get("values") or []) > 1)
    static = sum(1 for s in slots if len(s.get("values") or []) == 1)
    if not CHANGING_RANGE[0] <= changing <= CHANGING_RANGE[1]:
        ck.fail(cid, f"{changing} changing slots, want {CHANGING_RANGE[0]}-{CHANGING_RANGE[1]}")
    if not STATIC_RANGE[0] <= static <= STATIC_RANGE[1]:
        ck.fail(cid, f"{static} never-changing slots, want {STATIC_RANGE[0]}-{STATIC_RANGE[1]}")
    for slot in slots:
        where = f"{cid} slot {slot.get('slot')!r}"
        values = slot.get("values") or []
        if not values:
            ck.fail(where, "no values")
        if len(values) > VALUES_MAX:
            ck.fail(where, f"{len(values)} values, want at most {VALUES_MAX}")
        previous_from = ""
        for k, value in enumerate(values):
            vwhere = f"{where} value {value.get('value')!r}"
            if not str(value.get("value") or "").strip():
                ck.fail(vwhere, "empty value")
            if k and value.get("value") == values[k - 1].get("value"):
                ck.fail(vwhere, "the same value twice in a row is no change")
            start = value.get("from")
            if start is not None:
                if not isinstance(start, str) or not FROM_RE.match(start):
                    ck.fail(vwhere, f"from {start!r} is not YYYY-MM or YYYY-MM-DD")
                else:
                    if not YEARS[0] <= int(start[:4]) <= YEARS[1]:
                        ck.fail(vwhere, f"from {start} outside {YEARS[0]}-{YEARS[1]}")
                    if start < previous_from[: len(start)]:
                        ck.fail(vwhere, f"from {start} before the previous value's {previous_from}")
                    previous_from = start
            stated = value.get("stated_in") or []
            if not stated:
                ck.fail(vwhere, "stated_in is empty")
            for tid in stated:
                turn = turns.get(tid)
                if turn is None:
                    ck.fail(vwhere, f"stated_in {tid} is no turn")
                elif turn["role"] != "user" and turn["next"] != "user":
                    ck.fail(vwhere, f"stated_in {tid} is an assistant turn no user turn confirms")
            if k and start is None:
                # a null `from` means the session's date: a later value told with no date
                # must be told after the value before it started
                before = values[k - 1]
                told = [turns[t]["date"] for t in stated if t in turns]
                before_told = [
                    turns[t]["date"] for t in before.get("stated_in") or [] if t in turns
                ]
                if (
                    told
                    and before_told
                    and before.get("from") is None
                    and min(told) < min(before_told)
                ):
                    ck.fail(vwhere, "no `from`, yet told before the value it replaced")
            memory = value.get("memory") or {}
            en, zh = str(memory.get("en") or ""), str(memory.get("zh") or "")
            if not en.startswith("The user") or not en.endswith("."):
                ck.fail(vwhere, f"memory.en {en!r} is not 'The user ….'")
            if not zh.startswith("用户") or not zh.endswith("。"):
                ck.fail(vwhere, f"memory.zh {zh!r} is not '用户…。'")
            for text in (en, zh):
                if sentences(text) != 1:
                    ck.fail(vwhere, f"memory {text!r} is not one sentence")
                for year in YEAR_RE.finditer(text):
                    if year.group(0) not in str(value.get("value")):
                        ck.fail(vwhere, f"memory {text!r} holds a date; the value is no date")


def check_questions(conv: dict[str, Any], turns: dict[str, dict[str, Any]], ck: Checker) -> None:
    cid = conv["id"]
    questions = conv.get("questions") or []
    slots = {s.get("slot"): s.get("values") or [] for s in conv.get("slots") or []}
    if not QUESTIONS_RANGE[0] <= len(questions) <= QUESTIONS_RANGE[1]:
        ck.fail(cid, f"{len(questions)} questions, want {QUESTIONS_RANGE[0]}-{QUESTIONS_RANGE[1]}")
    last = max((t["date"] for t in turns.values()), default=None)
    earliest_asked: datetime | None = None
    for n, q in enumerate(questions, 1):
        qid = f"{cid}.q{n}"
        where = qid
        if q.get("id") != qid:
            ck.fail(where, f"question id {q.get('id')!r}, want {qid!r}")
        kind = q.get("kind")
        if kind not in KINDS:
            ck.fail(where, f"kind {kind!r}")
            continue
        for key in ("question", "answer"):
            if not str(q.get(key) or "").strip():
                ck.fail(where, f"empty {key}")
        question = str(q.get("question") or "")
        if (conv.get("lang") == "zh") != bool(CJK_RE.search(question)):
            ck.fail(where, f"question not in the conversation's language: {question!r}")
        asked = parse_date(q.get("asked_at"))
        if asked is None:
            ck.fail(where, f"asked_at {q.get('asked_at')!r} is not YYYY-MM-DDTHH:MM")
        elif last is not None and asked <= last:
            ck.fail(where, "asked_at is not after the last session")
        elif earliest_asked is None or asked < earliest_asked:
            earliest_asked = asked
        values = slots.get(q.get("slot"))
        if values is None:
            ck.fail(where, f"slot {q.get('slot')!r} is not a slot of {cid}")
            continue
        evidence, stale = q.get("evidence") or [], q.get("stale") or []
        if not evidence:
            ck.fail(where, "no evidence")
        for key, ids in (("evidence", evidence), ("stale", stale)):
            if len(set(ids)) != len(ids):
                ck.fail(where, f"{key} repeats a turn")
            for tid in ids:
                if tid not in turns:
                    ck.fail(where, f"{key} {tid} is no turn")
        if set(evidence) & set(stale):
            ck.fail(where, f"evidence and stale share {sorted(set(evidence) & set(stale))}")
        ev = set(evidence)
        stated = [set(v.get("stated_in") or []) for v in values]
        everything = set().union(*stated)
        if kind in ("past", "when", "count") and len(values) < 2:
            ck.fail(where, f"a {kind} question on a slot that never changes")
            continue
        if kind == "current":
            if ev != stated[-1]:
                ck.fail(
                    where, f"evidence {sorted(ev)} is not the latest value's {sorted(stated[-1])}"
                )
            if set(stale) != stale_for(values, len(values) - 1, ev):
                ck.fail(
                    where,
                    f"stale {sorted(stale)}, want {sorted(stale_for(values, len(values) - 1, ev))}",
                )
        elif kind == "past":
            targets = [k for k in range(len(values) - 1) if stated[k] == ev]
            if not targets:
                ck.fail(where, "evidence is not the stated_in of an earlier value")
            elif set(stale) != stale_for(values, targets[0], ev):
                ck.fail(
                    where,
                    f"stale {sorted(stale)}, want {sorted(stale_for(values, targets[0], ev))}",
                )
        elif kind == "when":
            later = set().union(*stated[1:])
            if not ev <= later:
                ck.fail(where, f"evidence {sorted(ev - later)} tells no change")
        elif kind == "duration":
            if not ev <= everything:
                ck.fail(where, f"evidence {sorted(ev - everything)} states no value of the slot")
        elif kind == "count" and ev != everything:
            ck.fail(where, "evidence is not every turn stating a value of the slot")
    if earliest_asked is not None:
        for slot in conv.get("slots") or []:
            for value in slot.get("values") or []:
                start = value.get("from")
                if isinstance(start, str) and start > earliest_asked.strftime("%Y-%m-%d"):
                    ck.fail(
                        f"{cid} slot {slot.get('slot')!r}",
                        f"from {start} after a question is asked",
                    )


def check(
    data: dict[str, Any], prefix: str = "chg", per_lang: int = PER_LANG
) -> tuple[list[str], dict[str, Any]]:
    ck = Checker()
    convs = data.get("conversations") or []
    want = [f"{prefix}-{lang}-{n:02d}" for lang in LANGS for n in range(1, per_lang + 1)]

    def least(n: int) -> int:
        return math.ceil(n * per_lang / PER_LANG)

    ids = [str(c.get("id")) for c in convs]
    missing, extra = sorted(set(want) - set(ids)), sorted(set(ids) - set(want))
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if missing or extra or repeated:
        ck.fail("set", f"conversations missing {missing}, unexpected {extra}, repeated {repeated}")
    counts: dict[str, Counter[str]] = {lang: Counter() for lang in LANGS}
    for conv in convs:
        cid = str(conv.get("id"))
        lang = conv.get("lang")
        if lang not in LANGS or not cid.startswith(f"{prefix}-{lang}-"):
            ck.fail(cid, f"lang {lang!r} does not match the id")
            continue
        if not str(conv.get("user") or "").strip():
            ck.fail(cid, "no user name")
        turns = check_sessions(conv, ck)
        check_slots(conv, turns, ck)
        check_questions(conv, turns, ck)
        c = counts[lang]
        c["conversations"] += 1
        c["sessions"] += len(conv.get("sessions") or [])
        c["turns"] += len(turns)
        for slot in conv.get("slots") or []:
            n = len(slot.get("values") or [])
            c["slots"] += 1
            c["changing slots"] += n > 1
            c["changes"] += max(n - 1, 0)
        static = {s.get("slot") for s in conv.get("slots") or [] if len(s.get("values") or []) == 1}
        for q in conv.get("questions") or []:
            c["questions"] += 1
            c[f"q {q.get('kind')}"] += 1
            c["q current, never-changing"] += q.get("kind") == "current" and q.get("slot") in static
    total = counts["en"] + counts["zh"]
    if total["questions"] < least(QUESTIONS_MIN):
        ck.fail("set", f"{total['questions']} questions, want at least {least(QUESTIONS_MIN)}")
    for kind, n in KIND_MIN.items():
        if total[f"q {kind}"] < least(n):
            ck.fail("set", f"{total[f'q {kind}']} {kind} questions, want at least {least(n)}")
    if total["q current, never-changing"] < least(STATIC_CURRENT_MIN):
        ck.fail("set", f"{total['q current, never-changing']} questions on never-changing facts")
    return ck.errors, {"en": counts["en"], "zh": counts["zh"], "all": total}


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT
    data = json.loads(path.read_text(encoding="utf-8"))
    prefix, per_lang = SETS.get(path.name, SETS[DEFAULT.name])
    errors, counts = check(data, prefix, per_lang)
    rows = ["conversations", "sessions", "turns", "slots", "changing slots", "changes", "questions"]
    rows += [f"q {k}" for k in KINDS] + ["q current, never-changing"]
    print(f"{'':28}{'en':>6}{'zh':>6}{'all':>6}")
    for row in rows:
        print(f"{row:28}" + "".join(f"{counts[col][row]:>6}" for col in ("en", "zh", "all")))
    for error in errors:
        print(f"ERROR {error}", file=sys.stderr)
    if errors:
        print(f"{len(errors)} violations", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
