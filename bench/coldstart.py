"""The first search of a fresh process over 100k memories of one user, from saved caches.

The CLI starts a new process on every call, and so does a serverless agent: what a search
costs before any cache is warm is what they pay. One process fills a home with 100k synthetic
memories (bench/scale.py's world: topic sentences and clustered 384-d vectors) and searches
once, which builds and saves the caches (lexical postings, memory cache, HNSW graph). Then
`--runs` new processes each open the home and time their first search and a second one; the
query vector is given, so no embedding is timed. The same is measured with the caches' files
deleted first (a cold start that must rebuild them), as the reference.

    python bench/coldstart.py                  # 100k memories, 5 processes
    python bench/coldstart.py --rows 20000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import Timer, console, percentile, table, write_result  # noqa: E402
from scale import World, insert, make_memory  # noqa: E402

CHILD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from memlane import Config, Memory
t1 = time.perf_counter()
home, query, vec = json.loads(sys.argv[1])
mem = Memory(Config.load(store={"home": home}, embedding={"provider": "hash", "dimensions": len(vec),
                                                          "background": False}))
t2 = time.perf_counter()
v = np.asarray(vec, dtype=np.float32)
hits = mem.search(query, user_id="u0000", limit=10, activate=False, min_score=0.0, query_vector=v)
t3 = time.perf_counter()
mem.search(query + " again", user_id="u0000", limit=10, activate=False, min_score=0.0, query_vector=v)
t4 = time.perf_counter()
mem.close()
print(json.dumps({"import_ms": 1000 * (t1 - t0), "open_ms": 1000 * (t2 - t1), "first_ms": 1000 * (t3 - t2),
                  "second_ms": 1000 * (t4 - t3), "hits": len(hits)}))
"""
CACHES = ("lexindex", "memcache", "vindex")


def fresh_processes(home: Path, query: str, vec: list[float], runs: int) -> dict[str, float]:
    arg = json.dumps([str(home), query, vec])
    out = [json.loads(subprocess.run([sys.executable, "-c", CHILD, arg], check=True, capture_output=True,
                                     text=True, timeout=600).stdout.strip().splitlines()[-1]) for _ in range(runs)]
    return {k: percentile([o[k] for o in out], 50) for k in ("import_ms", "open_ms", "first_ms", "second_ms")} | {
        "first_ms_max": max(o["first_ms"] for o in out), "hits": min(o["hits"] for o in out)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="memories of the one user")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per measurement")
    ap.add_argument("--out", default="coldstart", help="result name in bench/results/")
    args = ap.parse_args(argv)
    world = World(7)
    corpus = world.sample(args.rows, 1)
    home = Path(tempfile.mkdtemp(prefix="memlane-cold-"))
    try:
        memory = make_memory(home, None)
        with Timer() as t_insert:
            insert(memory, corpus)
        _, query, vec = world.queries(1, [list(range(len(world.topic_names)))])[0]
        with Timer() as t_warm:  # builds and saves every cache
            memory.search(query, user_id="u0000", limit=10, activate=False, min_score=0.0, query_vector=vec)
        memory.close()
        saved = fresh_processes(home, query, vec.tolist(), args.runs)
        for name in CACHES:
            shutil.rmtree(home / name, ignore_errors=True)
        rebuilt = fresh_processes(home, query, vec.tolist(), 1)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result = {"rows": args.rows, "insert_s": t_insert.seconds, "first_search_in_filling_process_s": t_warm.seconds,
              "saved_caches": saved, "no_cache_files": rebuilt, "runs": args.runs}
    console.print(table(f"First search of a fresh process over {args.rows:,} memories of one user (query vector given)",
                        ["caches", "first search ms (p50)", "max", "second ms", "open home ms", "import memlane ms"],
                        [[label, r["first_ms"], r["first_ms_max"], r["second_ms"], r["open_ms"], r["import_ms"]]
                         for label, r in (("saved by an earlier process", saved), ("none (rebuilt)", rebuilt))]))
    path = write_result(args.out, result)
    console.print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
