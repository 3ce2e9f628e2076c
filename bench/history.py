"""Recall as history grows (issue 34): LongMemEval_M-style histories built from the dev set.

Each dev question keeps its own haystack (~50 sessions) and gets filler sessions drawn from the
other dev questions' haystacks, never a session that is evidence for any dev question (matched
by content: LongMemEval reuses sessions across haystacks), up to 50, 200 and 500 sessions per
question. The filler comes from one seeded shuffle of that pool, taken in order by every
question (skipping its own sessions), so the 200-session history holds the 50 one's sessions and
the 500 one the 200's, and the questions share most of their filler: a run embeds each distinct
turn once, and far fewer of them than per-question draws would need. A filler session is dated
at a seeded moment inside its question's own span of dates, so recency neither helps nor hurts
the evidence. Where a haystack has more sessions than asked (53 at 50), its non-evidence
sessions are dropped, seeded.

Each history is a home of its own (one user's history). Per question and size: memlane's turn
search (`corpus="turns"`), BM25 alone and dense alone (retrieval.py's baselines, on the same
vectors), scored as retrieval.py scores (turn R@5/R@10, session R_all@5 = "S_all@5"), with the
turn-level R_all@10 of LongMemEval's own evaluation beside them. Latency: the engine's own
search (query vector given, warm: the scope's first search is reported apart), and as a user
sees it (the query embedded afresh inside the timed call).

    python bench/history.py                                 # the default questions, e5, passages off
    python bench/history.py --questions 40 --passages 8     # every dev question, the default passages
    python bench/history.py --count                         # what the run would embed, then stop
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import Timer, console, load_cache, percentile, save_cache, table, write_result  # noqa: E402
from locomo import QueryVectors, load, turn_texts  # noqa: E402
from retrieval import (  # noqa: E402
    BM25,
    DENSE,
    SETS,
    K,
    bm25_ranker,
    dense_matrix,
    questions,
    scores,
    seed_cache,
    session_of,
    summarise,
    vector_texts,
)

from memlane import Config, Memory  # noqa: E402
from memlane.importers import locomo_date, locomo_sessions  # noqa: E402
from memlane.indexing import content_hash, embed_cached  # noqa: E402

SIZES = (50, 200, 500)
# The first run embeds every distinct turn of the histories (bench/.cache keeps them after;
# `make bench` runs retrieval.py first, which embeds them all). From the stock cache, 12
# questions need 8.5k keys, 20 need 11.3k, all 40 need 17.7k: at the ~7 keys/s measured
# beside a load of 10 on 2 cores (51/s alone), 12 keep a first run near half an hour there
# (~20 min of embedding, then the imports). `--questions 0` runs all 40.
QUESTIONS = 12
SEED = 34
REPEATS = 3  # warm searches (and end-to-end ones) per question: p95 over 3 × questions samples
MEMLANE = "memlane"
SYSTEMS = (MEMLANE, BM25, DENSE)
# the paper's Stella V5 (1.5B) retrieval on LongMemEval_M, as issue 34 quotes it; its own
# evaluation scores recall_all@k (every evidence item in the top k) at session and turn level
STELLA_M = {"R@5": (0.706, 0.732), "R@10": 0.862}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # LoCoMo's, which locomo_date reads back


# ---- building the histories -----------------------------------------------------------------


def sessions_of(conv: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(date text, turns) of each non-empty session, in the conversation's order."""
    out = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        if conv.get(f"session_{n}"):
            out.append((str(conv[f"session_{n}_date_time"]), list(conv[f"session_{n}"])))
        n += 1
    return out


def fingerprint(turns: Sequence[dict[str, Any]]) -> str:
    """A session's identity by content: LongMemEval puts the same session in several haystacks."""
    raw = json.dumps([(t.get("speaker"), t.get("text")) for t in turns], ensure_ascii=False)
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


def evidence_sessions(conv: dict[str, Any]) -> set[str]:
    """The session numbers ("DN") holding any question's answer: its evidence turns' sessions
    and LongMemEval's `answer_sessions`."""
    out = {session_of(d) for q in questions(conv) for d in q["evidence"]}
    for qa in conv.get("qa", []):
        out.update(str(s) for s in qa.get("answer_sessions") or [])
    return out


def build(convs: list[tuple[str, dict[str, Any]]], sizes: Sequence[int] = SIZES,
          n_questions: int | None = QUESTIONS, seed: int = SEED) -> dict[int, list[tuple[str, dict[str, Any]]]]:
    """{size: [(name, history)]}: the first `n_questions` conversations, each as a LoCoMo-layout
    history of exactly `size` sessions in date order, its questions' evidence renumbered."""
    evidence: set[str] = set()  # every dev question's evidence sessions, by content
    pool: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # fingerprint → a session, first seen
    for _, conv in convs:
        wanted = evidence_sessions(conv)
        for i, (date, turns) in enumerate(sessions_of(conv), 1):
            fp = fingerprint(turns)
            pool.setdefault(fp, (date, turns))
            if f"D{i}" in wanted:
                evidence.add(fp)
    order = sorted(fp for fp in pool if fp not in evidence)
    random.Random(seed).shuffle(order)
    out: dict[int, list[tuple[str, dict[str, Any]]]] = {s: [] for s in sizes}
    for name, conv in convs[:n_questions]:
        own = sessions_of(conv)
        own_fps = {fingerprint(t) for _, t in own}
        wanted = evidence_sessions(conv)
        must = [i for i in range(len(own)) if f"D{i + 1}" in wanted]
        rng = random.Random(f"{seed}:{name}")
        others = [i for i in range(len(own)) if f"D{i + 1}" not in wanted]
        # which own sessions stay when a size is smaller than the haystack: a seeded order
        keep_order = rng.sample(others, len(others))
        filler = [fp for fp in order if fp not in own_fps][: max(0, max(sizes) - len(own))]
        start, end = (locomo_date(own[0][0]), locomo_date(own[-1][0])) if own else (datetime.now(UTC),) * 2
        span = (end - start).total_seconds()
        dated = [(start + timedelta(minutes=int(rng.random() * span // 60)), fp) for fp in filler]
        for size in sizes:
            if len(must) > size:
                raise SystemExit(f"{name}: {len(must)} evidence sessions do not fit in {size}")
            if size - len(own) > len(filler):
                raise SystemExit(f"{name}: {size} sessions asked, {len(own) + len(filler)} to be had "
                                 f"(the pool has {len(order)} filler sessions)")
            kept = sorted(must + keep_order[: max(0, size - len(must))])
            out[size].append((name, history(conv, [own[i] for i in kept], [i + 1 for i in kept],
                                            [(at, pool[fp][1]) for at, fp in dated[: max(0, size - len(own))]])))
    return out


def history(conv: dict[str, Any], own: list[tuple[str, list[dict[str, Any]]]], numbers: list[int],
            filler: list[tuple[datetime, list[dict[str, Any]]]]) -> dict[str, Any]:
    """One LoCoMo-layout history: `own` (its original session `numbers`) and `filler`, sorted by
    date (own first on a tie), renumbered, the questions' evidence following their sessions."""
    items = [(locomo_date(d), 0, i, turns, numbers[i]) for i, (d, turns) in enumerate(own)]
    items += [(at, 1, i, turns, None) for i, (at, turns) in enumerate(filler)]
    items.sort(key=lambda x: (x[0], x[1], x[2]))
    out: dict[str, Any] = {k: conv[k] for k in ("sample_id", "speaker_a", "speaker_b") if k in conv}
    renumber: dict[str, str] = {}
    out["filler_sessions"] = []  # which "DN" came from other haystacks: a miss's report counts them
    for new, (at, _, _, turns, old) in enumerate(items, 1):
        if old is not None:
            renumber[f"D{old}"] = f"D{new}"
        else:
            out["filler_sessions"].append(f"D{new}")
        out[f"session_{new}_date_time"] = at.strftime(DATE_FORMAT)
        out[f"session_{new}"] = [{**t, "dia_id": f"D{new}:{str(t['dia_id']).rsplit(':', 1)[-1]}"} for t in turns]
    qa = []
    for item in conv.get("qa", []):
        moved = dict(item)
        moved["evidence"] = [_move(str(d), renumber) for d in item.get("evidence") or []]
        if "answer_sessions" in item:
            moved["answer_sessions"] = [renumber.get(str(s), str(s)) for s in item["answer_sessions"]]
        qa.append(moved)
    out["qa"] = qa
    return out


def _move(dia_id: str, renumber: dict[str, str]) -> str:
    session, _, turn = dia_id.partition(":")
    return f"{renumber.get(session, session)}:{turn}"


def embed_missing(mem: Memory, texts: set[str], cached: dict[str, np.ndarray], chunk: int = 1024) -> int:
    """Every text not in the bench cache embedded once, shortest first, before any import: a
    batch of like lengths pads least, where the engine's indexer takes a scope's turns in
    arrival order (on LongMemEval's mix of short questions and long replies, ~1.4 keys/s
    against ~7 keys/s beside the same load). Saved every `chunk`, so a stopped run resumes."""
    todo = sorted((t for t in texts if content_hash(t) not in cached), key=len)
    model = mem.embedder.model_id
    for i in range(0, len(todo), chunk):
        part = todo[i : i + chunk]
        cached.update(zip([content_hash(t) for t in part],
                          embed_cached(mem.store, mem.embedder, part, mem.config.embedding.batch_size), strict=True))
        save_cache(model, cached)
        console.print(f"  embedded {min(i + chunk, len(todo))} of {len(todo)}", style="dim")
    return len(todo)


def distinct_texts(histories: dict[int, list[tuple[str, dict[str, Any]]]], mem: Memory) -> set[str]:
    """Every text the run embeds (keys, and passages when on), each once."""
    return {t for convs in histories.values() for t in vector_texts(convs, mem)}


# ---- one size -------------------------------------------------------------------------------


def search(mem: Memory, user: str, question: str, query_vector: Any) -> list[str]:
    """memlane's turn ranking, as dia_ids."""
    hits = mem.search(question, user_id=user, corpus="turns", limit=K, activate=False, query_vector=query_vector)
    return [str(h.turn.metadata.get("dia_id")) for h in hits if h.turn is not None]


def one_history(mem: Memory, user: str, conv: dict[str, Any], cached: dict[str, np.ndarray],
                rows: dict[str, list[dict[str, Any]]], timings: dict[str, list[float]],
                repeats: int) -> tuple[int, float]:
    """One history imported as `user` and its questions asked: rows per system (and the misses)
    and timings appended; returns (turns, seconds to index them)."""
    vectors = QueryVectors(mem, cached)

    def fresh(text: str) -> np.ndarray:  # what a user's new query costs: no cache of any kind
        return mem.embedder.embed([text], query=True)[0]

    turns = mem.import_conversations(locomo_sessions(conv), user_id=user, embed=False).turns
    with Timer() as t:
        mem.flush()
    index_s = t.seconds
    texts = turn_texts(conv)
    ids, matrix = dense_matrix(mem, texts)
    bm25 = bm25_ranker(texts)
    for q in questions(conv):
        if q["asked"] is not None:
            mem.clock = lambda at=q["asked"]: at
        qvec = vectors(q["question"])  # embedded before any clock starts
        spent = vectors.seconds
        with Timer() as t:
            ranked = search(mem, user, q["question"], vectors)
        timings["first"].append((t.seconds - (vectors.seconds - spent)) * 1000)
        for _ in range(repeats):
            spent = vectors.seconds
            with Timer() as t:
                search(mem, user, q["question"], vectors)
            timings["engine"].append((t.seconds - (vectors.seconds - spent)) * 1000)
            with Timer() as t:
                search(mem, user, q["question"], fresh)
            timings["end_to_end"].append(t.seconds * 1000)
            with Timer() as t:
                fresh(q["question"])
            timings["embed"].append(t.seconds * 1000)
        ev = q["evidence"]
        dense = [ids[int(i)] for i in np.argsort(-(matrix @ qvec))[:K]]
        for system, ranking in ((MEMLANE, ranked), (BM25, bm25(q["question"])), (DENSE, dense)):
            rows[system].append({"category": q["category"], "question": q["question"], **scores(ranking, ev),
                                 "T_all@10": float(ev <= set(ranking[:10]))})
        if not set(ranked[:10]) & ev:
            filler = set(conv.get("filler_sessions", []))
            rows["misses"].append({"question": q["question"], "category": q["category"],
                                   "evidence": sorted(ev), "top10": ranked[:10],
                                   "filler_in_top10": sum(session_of(d) in filler for d in ranked[:10])})
    mem.clock = datetime.now  # type: ignore[assignment]
    return turns, index_s


def run_size(size: int, convs: list[tuple[str, dict[str, Any]]], embedder: str, cached: dict[str, np.ndarray],
             embedding: dict[str, Any], repeats: int = REPEATS, search_cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every history of one size, each in a home of its own (one user's history, and the
    engine's indexer slows with every vector of the home: see the report), ranked by memlane,
    BM25 and dense, with latency with and without the query's embedding."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    timings: dict[str, list[float]] = defaultdict(list)
    turns, index_s = 0, 0.0
    for name, conv in convs:
        home = Path(tempfile.mkdtemp(prefix=f"memlane-history-{size}-"))
        mem = Memory(Config.load(store={"home": str(home)}, search=search_cfg or {},
                                 embedding={"provider": embedder, "background": False, **embedding}))
        try:
            seed_cache(mem, [(name, conv)], cached)
            n, seconds = one_history(mem, f"h{size}-{name}", conv, cached, rows, timings, repeats)
            turns, index_s = turns + n, index_s + seconds
            cached.update(mem.store.cache_get(mem.embedder.model_id,
                                              [content_hash(t) for t in vector_texts([(name, conv)], mem)]))
        finally:
            mem.close()
            shutil.rmtree(home, ignore_errors=True)
    engine, first, end_to_end, embed_only = (timings[k] for k in ("engine", "first", "end_to_end", "embed"))
    misses = rows.pop("misses", [])
    per_question = {s: rows[s] for s in SYSTEMS}
    for s in SYSTEMS:  # summarise averages every field but the category
        rows[s] = [{k: v for k, v in r.items() if k != "question"} for r in rows[s]]
    return {"sessions": size, "questions": len(rows[MEMLANE]), "turns": turns, "index_seconds": index_s,
            "systems": {s: summarise(rows[s]) for s in SYSTEMS},
            "latency_ms": {
                "engine_p50": percentile(engine, 50), "engine_p95": percentile(engine, 95),
                "first_in_scope_p50": percentile(first, 50), "first_in_scope_p95": percentile(first, 95),
                "end_to_end_p50": percentile(end_to_end, 50), "end_to_end_p95": percentile(end_to_end, 95),
                "query_embed_p50": percentile(embed_only, 50), "query_embed_p95": percentile(embed_only, 95),
                "samples": len(engine)},
            "misses": misses, "per_question": per_question, "timings_ms": dict(timings)}


# ---- report ---------------------------------------------------------------------------------

COLUMNS = ["R@5", "R@10", "T_all@10", "S_all@5", "S_all@10", "MRR"]


def report(res: dict[str, Any]) -> None:
    sizes = res["sizes"]
    base = sizes[str(min(int(s) for s in sizes))]
    console.print(table(
        f"History size: {res['questions']} LongMemEval dev questions, filler from the other haystacks "
        f"(passages {res['passages']})",
        ["sessions", "system", *COLUMNS],
        [[s, system, *[r["systems"][system]["all"][c] for c in COLUMNS]]
         for s, r in sizes.items() for system in SYSTEMS]))
    console.print(table(
        "Search latency, ms (warm; end to end = the query embedded afresh inside the timed call; "
        "ratios to the smallest size, same run)",
        ["sessions", "turns", "engine p50", "engine p95", "first in scope p50", "end to end p50",
         "end to end p95", "query embed p50", "engine p95 / smallest", "end to end p50 / smallest"],
        [[s, r["turns"], r["latency_ms"]["engine_p50"], r["latency_ms"]["engine_p95"],
          r["latency_ms"]["first_in_scope_p50"], r["latency_ms"]["end_to_end_p50"],
          r["latency_ms"]["end_to_end_p95"], r["latency_ms"]["query_embed_p50"],
          r["latency_ms"]["engine_p95"] / max(base["latency_ms"]["engine_p95"], 1e-9),
          r["latency_ms"]["end_to_end_p50"] / max(base["latency_ms"]["end_to_end_p50"], 1e-9)]
         for s, r in sizes.items()]))
    for line in res["targets"]:
        console.print(line)


def targets(res: dict[str, Any]) -> list[str]:
    """Issue 34's targets, each with its verdict."""
    sizes = res["sizes"]
    small, large = str(min(int(s) for s in sizes)), str(max(int(s) for s in sizes))
    mine = {s: sizes[s]["systems"][MEMLANE]["all"] for s in (small, large)}
    drop = mine[small]["R@10"] - mine[large]["R@10"]
    p95 = sizes[large]["latency_ms"]["engine_p95"]
    return [
        f"R@10 at {large} sessions {mine[large]['R@10']:.3f} against {mine[small]['R@10']:.3f} at {small}: "
        f"{drop * 100:+.1f} points lost ({'met' if drop <= 0.05 else 'missed'}: at most 5)",
        f"against the paper's Stella V5 on LongMemEval_M (recall_all@k): session R_all@5 "
        f"{mine[large]['S_all@5']:.3f} against {STELLA_M['R@5'][0]:.3f} / {STELLA_M['R@5'][1]:.3f}, turn R_all@10 "
        f"{mine[large]['T_all@10']:.3f} and turn R@10 (a fraction of the evidence) {mine[large]['R@10']:.3f} "
        f"against {STELLA_M['R@10']:.3f}",
        f"engine search p95 at {large} sessions {p95:.2f} ms warm ({'met' if p95 <= 20 else 'missed'}: ≤ 20 ms); "
        f"end to end p50 {sizes[large]['latency_ms']['end_to_end_p50']:.1f} ms",
    ]


def setting(text: str) -> Any:
    """A `--search` value: a number or boolean as JSON reads it, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=SETS["longmemeval"], help="the LongMemEval dev set (LoCoMo layout)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="sessions per question, comma-separated")
    ap.add_argument("--questions", type=int, default=QUESTIONS, help="the first N dev questions (0: all)")
    ap.add_argument("--embedder", default="e5", help="e5 (default), hash, ...")
    ap.add_argument("--passages", type=int, default=0,
                    help="passage vectors per long turn (0, the default here: keys only, ~3× fewer to embed)")
    ap.add_argument("--repeats", type=int, default=REPEATS, help="warm and end-to-end searches per question")
    ap.add_argument("--seed", type=int, default=SEED, help="the filler's shuffle and dates")
    ap.add_argument("--search", action="append", default=[], metavar="KEY=VALUE",
                    help="a search setting for this run (repeatable), e.g. vector_candidates=200")
    ap.add_argument("--part", default=None, metavar="I/K",
                    help="only every K-th question from the I-th (0-based): one of K processes run side by side")
    ap.add_argument("--count", action="store_true", help="count what the run would embed and stop")
    ap.add_argument("--out", default="history", help="result name in bench/results/")
    args = ap.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    embedding = {"passages": args.passages}
    search_cfg = {k.strip(): setting(v) for k, _, v in (s.partition("=") for s in args.search)}
    convs = load(args.data)
    histories = build(convs, sizes, args.questions or None, args.seed)
    if args.part:
        i, k = (int(x) for x in args.part.split("/"))
        histories = {s: hs[i::k] for s, hs in histories.items()}
    probe_home = Path(tempfile.mkdtemp(prefix="memlane-history-probe-"))
    probe = Memory(Config.load(store={"home": str(probe_home)},
                               embedding={"provider": args.embedder, "background": False, **embedding}))
    model = probe.embedder.model_id
    cached = load_cache(model)
    needed = distinct_texts(histories, probe)
    missing = sum(1 for t in needed if content_hash(t) not in cached)
    cfg = probe.config.embedding
    turns_needed = {t for convs_ in histories.values() for _, c in convs_ for t in turn_texts(c).values()}
    console.print(f"{len(histories[sizes[0]])} questions × sizes {sizes}: {len(turns_needed)} distinct turns, "
                  f"{len(needed)} texts to embed (passages {args.passages}), {len(needed) - missing} in the cache, "
                  f"{missing} to embed")
    results: dict[str, Any] = {"embedder": model, "questions": len(histories[sizes[0]]), "seed": args.seed,
                               "passages": args.passages, "distinct_turns": len(turns_needed),
                               "texts_to_embed": len(needed), "cached_before": len(needed) - missing,
                               "max_chars": cfg.max_chars, "search": search_cfg, "sizes": {}}
    try:
        if args.count:
            return results
        with Timer() as t:
            embed_missing(probe, needed, cached)
    finally:
        probe.close()
        shutil.rmtree(probe_home, ignore_errors=True)
    results["embed_seconds"] = t.seconds
    for size in sizes:
        with Timer() as t:
            results["sizes"][str(size)] = run_size(size, histories[size], args.embedder, cached, embedding,
                                                   args.repeats, search_cfg)
        results["sizes"][str(size)]["seconds"] = t.seconds
        save_cache(model, cached)
        console.print(f"  {size} sessions: {t.seconds:.0f} s", style="dim")
    results["targets"] = targets(results)
    report(results)
    path = write_result(args.out, results)
    console.print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main()
