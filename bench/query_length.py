"""What a search costs as its query grows: a question, then a page pasted before it.

An agent may pass a user's whole message as the query: a pasted page and, at its end, the
question. memlane reads a long query's start and end (`search.query_read_chars`) and embeds
at most what the model reads (`embedding.max_query_chars`, `embedding.query_tokens`), so a
200,000-character query should cost about what a 2,000-character one does. Each length is
searched `--runs` times over 500 memories with the default e5 embedder, query embedding
included (a new query each run: no cache hit), and reported as a ratio to the 2,000-character
query of the same run. Whether the question at the end still puts its memory in the top 5 (no
relevance floor) is reported too.

    python bench/query_length.py
    python bench/query_length.py --runs 5 --embedder hash
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import Timer, console, percentile, table, temp_home, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402

LENGTHS = (150, 2_000, 20_000, 200_000)
QUESTION = " Anyway — when does the user play the violin?"
FILLER = ("The quarterly report covers revenue, hiring and the office move; the figures below are "
          "preliminary and the board will review them next month. ")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--embedder", default="e5", choices=("e5", "hash"))
    args = ap.parse_args(argv)
    home = str(temp_home("memlane-qlen-"))
    mem = Memory(Config.load(store={"home": home}, embedding={"provider": args.embedder, "background": False}))
    try:
        for i in range(499):
            mem.add(f"The user's colleague number {i} works on project {i % 37} in building {i % 11}.",
                    user_id="u")
        mem.add("The user practises the violin every Friday evening.", user_id="u")
        mem.search("warm up", user_id="u", activate=False)
        rows, out = [], {}
        for n in LENGTHS:
            times, found = [], 0
            for r in range(args.runs):
                page = (f"[{n}:{r}] " + FILLER * (n // len(FILLER) + 1))[: max(0, n - len(QUESTION))]
                with Timer() as t:
                    hits = mem.search(page + QUESTION, user_id="u", limit=5, activate=False, min_score=0.0)
                times.append(1000 * t.seconds)
                found += any("violin" in h.content for h in hits)
            out[n] = {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "found": found / args.runs}
        base = out[2_000]["p50_ms"]
        for n in LENGTHS:
            out[n]["ratio_to_2k"] = out[n]["p50_ms"] / base
            rows.append([f"{n:,}", out[n]["p50_ms"], out[n]["p95_ms"], out[n]["ratio_to_2k"], out[n]["found"]])
        console.print(table(f"search cost by query length ({args.embedder}, 500 memories, query embedding included)",
                            ["query chars", "p50 ms", "p95 ms", "p50 / 2k", "answer in top 5"], rows))
        result = {"embedder": args.embedder, "runs": args.runs, "lengths": {str(k): v for k, v in out.items()}}
        console.print(f"wrote {write_result('query_length', result)}")
        return result
    finally:
        mem.close()


if __name__ == "__main__":
    main()
