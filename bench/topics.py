"""Topic switches (issue 30, seed 002 §4): does the scratchpad's current task stay current on a
follow-up and move to the finished tasks on a change of subject?

`bench/data/topics.json`: 24 hand-written sessions (12 Chinese, 12 English; writing, coding,
planning, learning, shopping, cooking), each user turn labelled start / continue / switch /
done. Each session runs turn by turn through a `Memory` of the progressive profile (its own
user); after each user turn the scratchpad says what memlane made of it: a new focus (switch),
no focus left (done), or the same (continue). Reported: switch precision and recall, done
recall, continue accuracy, per language.

`--data bench/data/topics_holdout.json`: a holdout of 24 more sessions (12 Chinese, 12 English;
177 user turns, labelled the same way) in other domains and wordings: follow-ups in new words
that are neither answers nor edits, new tasks in the same domain, switches with and without a
marker, "done" said many ways. It was written apart, without reading the topic detector's code,
and is not tuned on.

    python bench/topics.py
    python bench/topics.py --data bench/data/topics_holdout.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import console, table, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402

DATA = Path(__file__).parent / "data" / "topics.json"


def predicted(before: str, after: str) -> str:
    """A new focus is a switch, also where the last task was done already (none to archive)."""
    if after == before:
        return "continue"
    return "done" if not after else "switch"


def run(path: Path = DATA, show: bool = False) -> dict[str, Any]:
    sessions = json.loads(path.read_text(encoding="utf-8"))["sessions"]
    home = Path(tempfile.mkdtemp(prefix="memlane-topics-"))
    mem = Memory(Config.load(store={"home": str(home)}, profile="progressive",
                             embedding={"provider": "hash", "background": False}))
    rows: list[dict[str, Any]] = []
    for s in sessions:
        user = f"topics-{s['id']}"
        for turn in s["turns"]:
            before = mem.scratchpad(user_id=user).current_focus
            mem.add_messages(s["id"], [{"role": turn["role"], "content": turn["content"]}], user_id=user)
            if turn["role"] == "user":
                got = predicted(before, mem.scratchpad(user_id=user).current_focus)
                rows.append({"lang": s["lang"], "label": turn["label"], "got": got, "text": turn["content"]})
    mem.close()
    out: dict[str, Any] = {"turns": len(rows)}
    for lang in ("all", "zh", "en"):
        rs = [r for r in rows if lang == "all" or r["lang"] == lang]
        said_switch = [r for r in rs if r["got"] == "switch" and r["label"] != "start"]
        switches = [r for r in rs if r["label"] == "switch"]
        done = [r for r in rs if r["label"] == "done"]
        cont = [r for r in rs if r["label"] == "continue"]
        out[lang] = {
            "switch_precision": sum(r["label"] == "switch" for r in said_switch) / len(said_switch) if said_switch else 0.0,
            "switch_recall": sum(r["got"] == "switch" for r in switches) / len(switches) if switches else 0.0,
            "done_recall": sum(r["got"] == "done" for r in done) / len(done) if done else 0.0,
            "continue_kept": sum(r["got"] == "continue" for r in cont) / len(cont) if cont else 0.0,
            "counts": {k: sum(r["label"] == k for r in rs) for k in ("start", "continue", "switch", "done")},
        }
    out["errors"] = [r for r in rows if r["label"] != "start" and r["label"] != r["got"]]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--show", type=int, default=0, help="print the first N mistakes")
    args = ap.parse_args(argv)
    res = run(Path(args.data))
    console.print(table("Topic switches (progressive profile, offline)",
                        ["language", "switch precision", "switch recall", "done recall", "follow-ups kept", "turns"],
                        [[lang, res[lang]["switch_precision"], res[lang]["switch_recall"], res[lang]["done_recall"],
                          res[lang]["continue_kept"], sum(res[lang]["counts"].values())] for lang in ("all", "zh", "en")]))
    by: dict[str, int] = defaultdict(int)
    for e in res["errors"]:
        by[f"{e['label']} → {e['got']}"] += 1
    console.print("mistakes: " + (", ".join(f"{k}: {v}" for k, v in sorted(by.items())) or "none"))
    for e in res["errors"][: args.show]:
        console.print(f"  [{e['lang']}] {e['label']} → {e['got']}: {e['text'][:90]}")
    console.print(f"wrote {write_result('topics', res)}")
    return res


if __name__ == "__main__":
    main()
