"""Facts that change, on the write path (issue 32): which old memories the extractor closes.

Each conversation of the fact-change dev set (bench/data/changes/, see its README) runs through
the engine as an app would run it: a fresh `Memory` on a temporary SQLite directory, offline
(the heuristic extractor), each session added with the clock at the session's date and then
ended (the real pipeline: extraction, the merge with its dedup and its change judgement). Then
every memory (active, superseded, archived) is read back and compared with the conversation's slots:

  values      slot values (one per period) some memory states / values
  changes     labelled changes (a value → the next) whose old value's memory was superseded by a
              memory of a later value / changes
  right       supersessions that are such a change
  wrong       supersessions that are not (a memory closed that still holds, or one closed by
              an unrelated memory)
  flags       new memories flagged for review (`metadata.may_supersede.ids`), and of them
              those naming the memory of an earlier value of the slot (flags right)

A memory states a value when it holds one of the value's distinctive words: the words of the
value's text (Latin words of 3+ letters, Chinese words of 2+ characters by the engine's own
segmenter) that the slot's other values lack. This is a lenient reading — "用户每天喝咖啡"
states "每天两杯美式" only if it says 美式 — so `values` counts what a reader would find, not
every paraphrase.

The set is a dev set: tune only on the odd-numbered conversations (chg-en-01, -03, …); the
even ones are held out (`--half even`, run once at the end).

    PYTHONPATH=src .venv/bin/python bench/changes_write.py --half odd
    PYTHONPATH=src .venv/bin/python bench/changes_write.py --half odd --embedder e5 --show
    PYTHONPATH=src .venv/bin/python bench/changes_write.py --half all --embedder e5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import console, table, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.changes import cue  # noqa: E402
from memlane.models import MemoryRecord  # noqa: E402
from memlane.supersession import FLAG  # noqa: E402
from memlane.testing import HashEmbedder, ManualClock  # noqa: E402
from memlane.text import ENGLISH_STOP, keywords  # noqa: E402

DATA = Path(__file__).parent / "data" / "changes" / "changes.json"
USER = "bench"


def load(path: Path = DATA, half: str = "all") -> list[dict[str, Any]]:
    """The conversations: all, the odd-numbered ones (tuning) or the even ones (held out)."""
    convs = json.loads(path.read_text(encoding="utf-8"))["conversations"]
    if half == "all":
        return list(convs)
    return [c for c in convs if (int(c["id"].rsplit("-", 1)[1]) % 2 == 1) == (half == "odd")]


def _when(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def run_conversation(conv: Mapping[str, Any], *, embedder: str = "hash", profile: str = "default") -> list[MemoryRecord]:
    """Every memory the conversation leaves, session by session: active, superseded, and
    archived (a year of decay archives most of a chat's facts; they still count as kept)."""
    with tempfile.TemporaryDirectory(prefix="memlane-changes-") as home:
        cfg = Config.load(profile, env={}, store={"home": home}, embedding={"provider": embedder, "background": False},
                          extraction={"wait_for_llm": True})
        clock = ManualClock(_when(conv["sessions"][0]["date"]))
        mem = Memory(cfg, clock=clock, embedder=HashEmbedder(cfg.embedding.dimensions) if embedder == "hash" else None)
        try:
            for s in conv["sessions"]:
                clock.now = _when(s["date"])
                mem.add_messages(s["id"], [{"role": t["role"], "content": t["text"]} for t in s["turns"]], user_id=USER)
                mem.end_session(s["id"], user_id=USER)
            return [m for status in ("active", "superseded", "archived")
                    for m in mem.list(user_id=USER, status=status, limit=10_000)]
        finally:
            mem.close()


# ---- reading the memories against the slots ----------------------------------------------


def _keys(value: str, lang: str) -> set[str]:
    if lang == "zh":
        return {w.lower() for w in keywords(value) if len(w) >= 2 or w.isascii()}
    return {w for w in re.findall(r"[a-z0-9$,.]+", value.lower().replace("'s", "")) if len(w.strip(",.")) >= 3
            and w.strip(",.") not in ENGLISH_STOP}


def distinctive(slot: Mapping[str, Any], lang: str) -> list[set[str]]:
    """Each value's words that the slot's other values (not the same value told again) lack."""
    keys = [_keys(v["value"], lang) for v in slot["values"]]
    out = []
    for i, v in enumerate(slot["values"]):
        others = set().union(*(k for j, k in enumerate(keys) if j != i and slot["values"][j]["value"] != v["value"]))
        out.append({k.strip(",.") for k in keys[i] - others} or {k.strip(",.") for k in keys[i]})
    return out


def states(content: str, keys: set[str]) -> bool:
    text = content.lower()
    return any(k and (k in text if not k.isascii() or not k.isalpha() else re.search(rf"\b{re.escape(k)}", text))
               for k in keys)


@dataclass
class Tally:
    conversations: int = 0
    memories: int = 0
    values: int = 0
    values_found: int = 0
    changes: int = 0
    changes_found: int = 0
    supersessions: int = 0
    right: int = 0
    wrong: int = 0
    flags: int = 0
    flags_right: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Outcome:
    conv_id: str
    lang: str
    tally: Tally
    wrong: list[tuple[str, str]] = field(default_factory=list)  # (closed, by)
    found: list[tuple[str, str]] = field(default_factory=list)
    flags: list[tuple[str, list[str]]] = field(default_factory=list)
    missed: list[tuple[str, str]] = field(default_factory=list)  # a change both of whose values are memories


def _periods(conv: Mapping[str, Any], content: str) -> list[tuple[int, int]]:
    """(slot index, value index) of every value the memory states."""
    out = []
    for si, slot in enumerate(conv["slots"]):
        for vi, keys in enumerate(distinctive(slot, conv["lang"])):
            if states(content, keys):
                out.append((si, vi))
    return out


def _a_change(conv: Mapping[str, Any], old: str, new: str) -> list[tuple[int, int]]:
    """The labelled changes (slot, index of the old value) that closing `old` by `new` makes:
    `new` states a later value of the slot, or says that `old`'s value ended ("quit Costa")."""
    olds, news = _periods(conv, old), _periods(conv, new)
    later = [(si, vi) for si, vi in olds for sj, vj in news
             if si == sj and vj > vi and conv["slots"][si]["values"][vj]["value"] != conv["slots"][si]["values"][vi]["value"]]
    told_new, told_old = cue(new), cue(old)
    ended = [(si, vi) for si, vi in olds if vi + 1 < len(conv["slots"][si]["values"]) and (si, vi) in news
             and told_new is not None and told_new.kind == "end"]
    # "又回到一天一杯" after "戒奶茶": a return closes the ending (a value told again is not distinct)
    back = [(si, vi) for si, vi in olds if vi + 1 < len(conv["slots"][si]["values"]) and any(sj == si for sj, _ in news)
            and told_new is not None and told_new.kind == "again" and told_old is not None and told_old.kind == "end"]
    return later + ended + back


def score(conv: Mapping[str, Any], memories: Sequence[MemoryRecord]) -> Outcome:
    t = Tally(conversations=1, memories=len(memories))
    by_id = {m.id: m for m in memories}
    for slot in conv["slots"]:
        keys = distinctive(slot, conv["lang"])
        t.values += len(keys)
        t.values_found += sum(1 for k in keys if any(states(m.content, k) for m in memories))
        t.changes += len(slot["values"]) - 1
    out = Outcome(conv["id"], conv["lang"], t)
    changed: set[tuple[int, int]] = set()
    for m in memories:
        if m.status != "superseded" or m.superseded_by not in by_id:
            continue
        new = by_id[m.superseded_by]
        t.supersessions += 1
        made = _a_change(conv, m.content, new.content)
        if made:
            t.right += 1
            changed.update(made)
            out.found.append((m.content, new.content))
        else:
            t.wrong += 1
            out.wrong.append((m.content, new.content))
    t.changes_found = len(changed)
    for si, slot in enumerate(conv["slots"]):
        keys = distinctive(slot, conv["lang"])
        for vi in range(len(slot["values"]) - 1):
            olds = [m.content for m in memories if states(m.content, keys[vi])]
            news = [m.content for m in memories if states(m.content, keys[vi + 1])]
            if (si, vi) not in changed and olds and news:
                out.missed.append((" | ".join(olds), " | ".join(news)))
    for m in memories:
        review = m.metadata.get(FLAG)  # {"ids": [...], "at": …}, as the merge writes it
        flagged = review.get("ids") if isinstance(review, dict) else None
        if not flagged:
            continue
        t.flags += 1
        olds = [by_id[i].content for i in flagged if i in by_id]
        t.flags_right += int(any(_a_change(conv, o, m.content) for o in olds))
        out.flags.append((m.content, olds))
    return out


def run(convs: Sequence[Mapping[str, Any]], *, embedder: str = "hash", profile: str = "default") -> list[Outcome]:
    """Every conversation through the engine, scored (what the retrieval bench may import)."""
    return [score(c, run_conversation(c, embedder=embedder, profile=profile)) for c in convs]


def summarise(outcomes: Sequence[Outcome]) -> dict[str, dict[str, int]]:
    by: dict[str, Tally] = {}
    total = Tally()
    for o in outcomes:
        by.setdefault(o.lang, Tally()).add(o.tally)
        total.add(o.tally)
    return {**{lang: asdict(by[lang]) for lang in sorted(by)}, "all": asdict(total)}


COLUMNS = ["half / lang", "convs", "memories", "values", "changes found", "supersessions", "right", "wrong",
           "flags", "flags right"]


def rows(half: str, summary: Mapping[str, Mapping[str, int]]) -> list[list[Any]]:
    return [[f"{half} / {lang}", s["conversations"], s["memories"], f"{s['values_found']}/{s['values']}",
             f"{s['changes_found']}/{s['changes']}", s["supersessions"], s["right"], s["wrong"], s["flags"],
             s["flags_right"]] for lang, s in summary.items()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", choices=("odd", "even", "all"), default="odd")
    ap.add_argument("--embedder", choices=("hash", "e5"), default="hash")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--show", action="store_true", help="print every supersession and flag")
    args = ap.parse_args(argv)
    halves = ("odd", "even") if args.half == "all" else (args.half,)
    results: dict[str, Any] = {}
    out_rows: list[list[Any]] = []
    for half in halves:
        outcomes = run(load(args.data, half), embedder=args.embedder, profile=args.profile)
        summary = summarise(outcomes)
        results[half] = summary
        out_rows += rows(half, summary)
        if args.show:
            for o in outcomes:
                for old, new in o.found:
                    console.print(f"[green]{o.conv_id} change[/]  {old}  →  {new}")
                for old, new in o.wrong:
                    console.print(f"[red]{o.conv_id} WRONG[/]  {old}  →  {new}")
                for new, olds in o.flags:
                    console.print(f"[yellow]{o.conv_id} flag[/]  {new}  ?  {olds}")
                for old, new in o.missed:
                    console.print(f"[blue]{o.conv_id} missed[/]  {old}  →  {new}")
    console.print(table(f"fact changes, write path ({args.embedder}, {args.profile})", COLUMNS, out_rows))
    path = write_result(f"changes_write_{args.embedder}", {"embedder": args.embedder, "profile": args.profile,
                                                          "halves": results})
    console.print(f"written {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
