"""Hostile text against the offline extractor: how its cost grows with the length of a turn.

Two parts:

- regex: every module-level pattern of the extractor's text modules (`SCANNED`) run with
  `finditer` over adversarial strings (runs of spaces, commas, digits, one word repeated, a
  Chinese run) at two lengths; a pattern whose time grows more than `QUADRATIC` times for
  `GROWTH` times the length is listed (super-linear: tried again from inside a run).
- extract: hostile turns through `end_session` with the hash embedder (a long turn of
  changes, "I" + N spaces + "moved to Paris.", …): seconds per turn and memories made.

    .venv/bin/python bench/hostile_text.py            # both parts, 2k/8k regex strings
    .venv/bin/python bench/hostile_text.py --quick    # smaller turns, for a quick look

Results go to bench/results/hostile_text.json. Timings are for reading, not asserted.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "src"))

from common import console, table, temp_home, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402

SCANNED = ("spoken", "quoting", "slots", "changes", "statements", "clauses", "en_clauses", "heuristic", "grammar", "naming",
           "commands", "chatter", "dates", "text", "closing", "roles", "topics", "retrieval.slots")
GROWTH = 4  # the long string is this many times the short one
QUADRATIC = 8.0  # linear grows ~4×, quadratic ~16×: over 8× is listed
SLOW_SHORT = 0.3  # seconds on the short string: listed without trying the long one

UNITS: dict[str, Callable[[int], str]] = {
    "spaces": lambda n: "I" + " " * n + "moved to Paris.",
    "tabs": lambda n: "I\t" * (n // 2) + "moved",
    "newlines": lambda n: "I" + "\n" * n + "moved",
    "one word": lambda n: "very " * (n // 5) + "x",
    "capitals": lambda n: "Paris " * (n // 6) + "x",
    "comma space": lambda n: "I" + ", " * (n // 2) + "sorry",
    "commas": lambda n: "a" + "," * n + "b",
    "dashes": lambda n: "a" + " - " * (n // 3) + "b",
    "dots": lambda n: "I moved" + "." * n,
    "the user's": lambda n: "the user's " * (n // 11) + "x",
    "no longer": lambda n: "no longer " * (n // 10),
    "I think": lambda n: "I think " * (n // 8),
    "digits": lambda n: "1" * n + "x",
    "letters": lambda n: "a" * n + "!",
    "zh": lambda n: "我" * n,
    "zh cue words": lambda n: "现在改成" * (n // 4) + "吃素",
    "zh commas": lambda n: "我" + "，" * n + "不对",
    "zh spaces": lambda n: "我" + " " * n + "搬到杭州了",
    "zh numerals": lambda n: "一" * n + "x",
    "parens": lambda n: "(" * (n // 2) + "x" + ")" * (n // 2),
    "quotes": lambda n: '"' * n + "x",
    "colons": lambda n: "a" + ": " * (n // 2) + "b",
}


def _patterns(obj: object, name: str, out: list[tuple[str, re.Pattern[str]]], depth: int = 0) -> None:
    if isinstance(obj, re.Pattern):
        out.append((name, obj))
    elif depth < 3 and isinstance(obj, list | tuple):
        for i, x in enumerate(obj):
            _patterns(x, f"{name}[{i}]", out, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for k, x in obj.items():
            _patterns(x, f"{name}[{k!r}]", out, depth + 1)


def _seconds(p: re.Pattern[str], s: str) -> float:
    t0 = time.perf_counter()
    for _ in p.finditer(s):
        pass
    return time.perf_counter() - t0


def regex_part(short: int) -> list[dict[str, Any]]:
    """The patterns whose cost grows faster than the string (and the slowest of all)."""
    found: list[dict[str, Any]] = []
    count = 0
    for mod in SCANNED:
        module = importlib.import_module(f"memlane.{mod}")
        pats: list[tuple[str, re.Pattern[str]]] = []
        for name, obj in vars(module).items():
            _patterns(obj, name, pats)
        count += len(pats)
        for name, p in pats:
            worst: dict[str, Any] | None = None
            for unit, make in UNITS.items():
                a = _seconds(p, make(short))
                b = _seconds(p, make(short * GROWTH)) if a < SLOW_SHORT else float("nan")
                growth = b / max(a, 1e-6) if b == b else float("inf")
                if (b != b or (b > 0.02 and growth > QUADRATIC)) and (worst is None or growth > worst["growth"]):
                    worst = {"pattern": f"{mod}.{name}", "input": unit, "short_s": a, "long_s": b, "growth": growth}
            if worst is not None:
                found.append(worst)
    console.print(f"{count} patterns × {len(UNITS)} inputs at {short} and {short * GROWTH} characters")
    return found


def _memory(home: Path) -> Memory:
    cfg = Config.load("default", store={"home": str(home)}, embedding={"provider": "hash", "background": False})
    return Memory(cfg)


def extract_part(quick: bool) -> list[dict[str, Any]]:
    """Seconds of `end_session` on one hostile turn, after a session that said where the user lives."""
    n = 100 if quick else 600
    spaces = [2_000, 8_000] if quick else [2_000, 8_000, 20_000, 40_000]
    cases: dict[str, str] = {
        f"zh moves × {n // 2}": "我住在上海。" + "".join(f"我搬到城市{i}了。" for i in range(n // 2)),
        f"zh moves × {n}": "我住在上海。" + "".join(f"我搬到城市{i}了。" for i in range(n)),
        f"en moves × {n // 2}": "I live in Oslo. " + " ".join(f"I moved to City{i}." for i in range(n // 2)),
        "long sentence": "I moved to " + "very " * 5000 + "big Berlin and no longer live in Munich " * 20,
        "zh no punctuation": "我现在改成" * 3000 + "吃素",
        "mixed cue words": "no longer " * 2000 + "switched to " * 2000 + "现在改成已经不在了搬到" * 500,
        "nested parens": "I moved to " + "(" * 5000 + "Paris" + ")" * 5000,
        "quotes": '"I moved to Paris," she said. ' * 400,
        **{f"I + {k} spaces": "I" + " " * k + "moved to Paris." for k in spaces},
        **{f"我 + {k} spaces": "我" + " " * k + "搬到杭州了" for k in spaces},
        f"I\\t × {spaces[-1] // 2}": "I\t" * (spaces[-1] // 2) + "moved",
    }
    rows = []
    root = temp_home("memlane-hostile-")
    for i, (name, text) in enumerate(cases.items()):
        m = _memory(root / str(i))
        try:
            m.add_messages("s0", [{"role": "user", "content": "I live in Munich. 我住在上海。"}], user_id="u1")
            m.end_session("s0", user_id="u1")
            m.add_messages("s1", [{"role": "user", "content": text[:199_000]}], user_id="u1")
            t0 = time.perf_counter()
            m.end_session("s1", user_id="u1")
            seconds = time.perf_counter() - t0
            made = len(m.list(user_id="u1", status="active", limit=10_000))
        finally:
            m.close()
        rows.append({"case": name, "chars": len(text), "seconds": seconds, "active": made})
        console.print(f"  {name}: {seconds:.2f} s")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", default="regex,extract")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    out: dict[str, Any] = {"quick": args.quick}
    if "regex" in parts:
        found = regex_part(1_000 if args.quick else 2_000)
        out["regex_superlinear"] = found
        console.print(table("patterns super-linear on some input (growth for 4× the length)",
                            ["pattern", "input", "short s", "long s", "growth"],
                            [[f["pattern"], f["input"], f["short_s"], f["long_s"], f"{f['growth']:.1f}"] for f in found]
                            or [["none", "", "", "", ""]]))
    if "extract" in parts:
        rows = extract_part(args.quick)
        out["extract"] = rows
        console.print(table("end_session on one hostile turn (hash embedder)", ["case", "chars", "seconds", "active"],
                            [[r["case"], r["chars"], r["seconds"], r["active"]] for r in rows]))
    path = write_result("hostile_text" + ("_quick" if args.quick else ""), out)
    console.print(f"written {path}")


if __name__ == "__main__":
    main()
