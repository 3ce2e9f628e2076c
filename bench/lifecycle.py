"""90 simulated days of the memory lifecycle, per profile: how many memories stay Active,
Archived, or are deleted, with some of them used (and so reinforced) along the way.

Each profile starts with the same 60 memories written by an extractor (importance high /
medium / low in turn, spread over the profile's categories; under `companion` a quarter are
episodes). Every `USE_EVERY` days the user brings up 10 of them (4 high, 3 medium, 3 low):
`build_context` with that message, a reply that uses the memory, `feedback` (the offline
used-or-not judge) boosts what the context had shown and the reply used. A memory the
context does not show cannot be used: under `progressive` nothing is injected but the core
block (score ≥ 0.5), as seed 002 leaves retrieval to the agent's tools. Consolidation runs
once a day, as the scheduler would. Offline: hash embedder, no LLM.

    .venv/bin/python bench/lifecycle.py
"""

from __future__ import annotations

import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import Timer, console, table, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.testing import HashEmbedder  # noqa: E402

PROFILES = ["default", "file-archive", "scored-markdown", "progressive", "companion", "consolidator"]
DAYS = 90
CHECKPOINTS = [0, 7, 14, 30, 60, 90]
N = 60
USED = 10  # memories the agent keeps using
USE_EVERY = 3  # days
START = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
IMPORTANCE = ["high", "medium", "low"]


def _vocabulary(n: int) -> list[str]:
    """Made-up words, so no two memories share text (they would be merged as duplicates)."""
    syl = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zu", "bo", "ga", "fe", "hu"]
    words = sorted({a + b + c + d for a in syl for b in syl for c in syl for d in syl})
    random.Random(7).shuffle(words)
    return words[:n]


def _categories(mem: Memory) -> list[str]:
    return [c for c in mem.config.policy.categories if c not in ("core", "system", "episode", "todo")]


def run_profile(profile: str, home: Path) -> dict[str, Any]:
    now = [START]
    cfg = Config.load(profile, store={"home": str(home)}, embedding={"provider": "hash", "background": False})
    mem = Memory(cfg, embedder=HashEmbedder(), clock=lambda: now[0], llm=None)
    words = _vocabulary(N * 5)
    cats = _categories(mem)
    ids: list[str] = []
    for i in range(N):
        category = "episode" if profile == "companion" and i % 4 == 3 else cats[i % len(cats)]
        text = " ".join(words[5 * i:5 * i + 5])
        ids.append(mem.add(text, user_id="sim", category=category, importance=IMPORTANCE[i % 3],
                           source="extractor").id)
    used = [ids[k * (N // USED) + k % 3] for k in range(USED)]  # high, medium, low ... in turn
    rows: list[dict[str, Any]] = []
    boosts = 0
    with Timer() as t:
        for day in range(DAYS + 1):
            now[0] = START + timedelta(days=day)
            if day and day % USE_EVERY == 0:
                for k, mid in enumerate(used):
                    try:
                        text = mem.get(mid, user_id="sim").content
                    except Exception:  # noqa: BLE001 - deleted: nothing left to use
                        continue
                    sid = f"d{day}-{k}"
                    mem.add_messages(sid, [{"role": "user", "content": text}], user_id="sim")
                    mem.build_context(sid, text, user_id="sim")
                    boosts += len(mem.feedback(sid, f"As you said: {text}", user_id="sim").used)
            if day:
                mem.consolidate(user_id="sim")
            if day in CHECKPOINTS:
                left = mem.list(user_id="sim")
                active = sum(1 for m in left if m.status == "active")
                by_id = {m.id for m in left}
                rows.append({"day": day, "active": active, "archived": len(left) - active,
                             "deleted": N - len(left), "used_alive": sum(1 for u in used if u in by_id)})
    mem.close()
    return {"profile": profile, "rows": rows, "boosts": boosts, "seconds": round(t.seconds, 2)}


def main() -> None:
    results = []
    with tempfile.TemporaryDirectory(prefix="memlane-lifecycle-") as tmp:
        for profile in PROFILES:
            results.append(run_profile(profile, Path(tmp) / profile))
    cols = ["profile", *[f"day {d}" for d in CHECKPOINTS], "used alive d90", "boosts", "s"]
    body = []
    for r in results:
        cells = [f"{x['active']}/{x['archived']}/{x['deleted']}" for x in r["rows"]]
        body.append([r["profile"], *cells, f"{r['rows'][-1]['used_alive']}/{USED}", r["boosts"], r["seconds"]])
    console.print(table(f"{N} memories over {DAYS} days: active / archived / deleted "
                        f"({USED} used every {USE_EVERY} days, consolidation daily)", cols, body))
    path = write_result("lifecycle", {"memories": N, "used": USED, "use_every_days": USE_EVERY, "days": DAYS,
                                      "checkpoints": CHECKPOINTS, "profiles": results})
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
