"""Turn retrieval on every dev set in one run, memlane beside the plain baselines.

Sets (LoCoMo layout, see ../shared/bench/README.md):
  locomo       LoCoMo, 10 two-friend conversations (English)
  longmemeval  LongMemEval_S dev: 40 questions, each over its own ~500-turn user–assistant history
  memorybank   MemoryBank companion chats in Chinese, labelled here (bench/data/README.md)
  memorybank_en  the same chats in English

For each set the same turns are ranked by memlane (`Memory.search(corpus="turns")`), by BM25
alone (bm25s), by dense alone (the same embedder, the same vector key), and by RRF(60) of
memlane's own FTS5 ranking and the dense one. Every memlane signal is switched off in turn
(the ablation table, per set). Metrics: turn R@5/R@10, NDCG@10, MRR, and per session (the
"DN" of a dia_id): recall_any@5 (an answer session among the first 5 distinct sessions) and
R_all@5/@10 (all of them). A question asked on a date (LongMemEval's question_date) is
searched with the clock at that date.

    python bench/retrieval.py                       # every set found, e5
    python bench/retrieval.py --sets longmemeval --limit 10 --embedder hash
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import (  # noqa: E402
    Timer,
    console,
    load_cache,
    mean_metrics,
    metrics,
    paired_interval,
    percentile,
    save_cache,
    table,
    temp_home,
    write_result,
)
from locomo import ABLATIONS, CATEGORIES, QueryVectors, evidence_ids, load, turn_texts  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.importers import locomo_sessions  # noqa: E402
from memlane.indexing import content_hash, embed_cached, vector_key, vector_keys  # noqa: E402
from memlane.models import Scope  # noqa: E402
from memlane.retrieval.query import analyse  # noqa: E402
from memlane.text import has_cjk, segment  # noqa: E402

SHARED = Path(__file__).parents[2] / "shared" / "bench"
SETS: dict[str, Path] = {
    "locomo": SHARED / "locomo10",
    "longmemeval": SHARED / "longmemeval" / "longmemeval_s_dev40.json",
    "memorybank": Path(__file__).parent / "data" / "memorybank_cn_dev.json",
    "memorybank_en": Path(__file__).parent / "data" / "memorybank_en_dev.json",
}
BM25, DENSE, MULTI, RRF = ("bm25 (bm25s)", "dense (same embedder)", "dense, key + passages (max)",
                           "RRF(60) FTS5 + dense")
BASELINES = (BM25, DENSE, MULTI, RRF)
K = 20


# ---- data -----------------------------------------------------------------------------------


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Questions with evidence: text, evidence dia_ids, category name, and the date asked."""
    out = []
    for qa in conv.get("qa", []):
        ev = evidence_ids(qa.get("evidence") or [])
        if not ev:
            continue
        cat = qa.get("category", "")
        name = CATEGORIES.get(cat, str(cat)) if isinstance(cat, int) else str(cat)
        asked = qa.get("question_date")
        out.append({"question": str(qa["question"]), "evidence": ev, "category": name,
                    "asked": asked_at(asked) if asked else None})
    return out


def asked_at(text: str) -> datetime:
    """LongMemEval's '2023/05/30 (Tue) 20:42'."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text).strip(), "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def scores(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    """Turn metrics, MRR, and session recall over the ranking's distinct sessions."""
    out = {k: v for k, v in metrics(ranked, evidence).items() if k in ("R@5", "R@10", "NDCG@10")}
    out["MRR"] = next((1.0 / i for i, d in enumerate(ranked, 1) if d in evidence), 0.0)
    sessions = list(dict.fromkeys(session_of(d) for d in ranked))
    wanted = {session_of(d) for d in evidence}
    out["S_any@5"] = 1.0 if wanted & set(sessions[:5]) else 0.0
    out["S_all@5"] = 1.0 if wanted <= set(sessions[:5]) else 0.0
    out["S_all@10"] = 1.0 if wanted <= set(sessions[:10]) else 0.0
    return out


# ---- baselines ------------------------------------------------------------------------------


def words_of(text: str) -> list[str]:
    """BM25's tokens: Latin words, and Chinese as jieba words (bm25s alone would keep a whole
    Chinese clause as one token)."""
    out: list[str] = []
    for m in re.finditer(r"[^\W_]+", text.lower()):
        w = m.group()
        out.extend(x for x in segment(w) if x.strip()) if has_cjk(w) else out.append(w)
    return out


def bm25_ranker(texts: dict[str, str]) -> Callable[[str], list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = list(texts)
    cjk = any(has_cjk(t) for t in list(texts.values())[:50])

    def tokens(docs: list[str]) -> Any:
        if cjk:
            return bm25s.tokenize([" ".join(words_of(d)) for d in docs], stopwords=None, show_progress=False,
                                  token_pattern=r"\S+")
        return bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False)

    retriever = bm25s.BM25()
    retriever.index(tokens([texts[i] for i in ids]), show_progress=False)

    def rank(query: str) -> list[str]:
        toks = tokens([query])
        if not toks.vocab:
            return []
        docs, _ = retriever.retrieve(toks, k=min(K, len(ids)), show_progress=False)
        return [ids[int(d)] for d in docs[0]]

    return rank


def dense_matrix(mem: Memory, texts: dict[str, str]) -> tuple[list[str], np.ndarray]:
    ids = list(texts)
    keys = [vector_key(texts[i], mem.config.embedding.max_chars) for i in ids]
    return ids, embed_cached(mem.store, mem.embedder, keys, mem.config.embedding.batch_size)


def vector_texts(convs: list[tuple[str, dict[str, Any]]], mem: Memory) -> list[str]:
    """What memlane embeds for these conversations' turns: each key and passage."""
    cfg = mem.config.embedding
    return [k for _, c in convs for t in turn_texts(c).values()
            for k in vector_keys(t, cfg.max_chars, cfg.passage_chars, cfg.passages)]


def seed_cache(mem: Memory, convs: list[tuple[str, dict[str, Any]]], cached: dict[str, np.ndarray]) -> None:
    """Hand the store the vectors the bench cache has for these conversations."""
    hashes = {content_hash(t) for t in vector_texts(convs, mem)}
    mem.store.cache_put(mem.embedder.model_id, {h: cached[h] for h in hashes if h in cached})


def passage_matrix(mem: Memory, texts: dict[str, str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(owner index per vector, vectors) of every turn's key and passages; None without passages."""
    cfg = mem.config.embedding
    if cfg.passages <= 0:
        return None
    keys, owners = [], []
    for i, text in enumerate(texts.values()):
        extra = vector_keys(text, cfg.max_chars, cfg.passage_chars, cfg.passages)
        keys += extra
        owners += [i] * len(extra)
    return np.asarray(owners), embed_cached(mem.store, mem.embedder, keys, cfg.batch_size)


def best_of(owners: np.ndarray, matrix: np.ndarray, qvec: np.ndarray, n: int) -> np.ndarray:
    sims = np.full(n, -np.inf)
    np.maximum.at(sims, owners, matrix @ qvec)
    return sims


def rrf_fts_dense(mem: Memory, user: str, ids: list[str], sims: np.ndarray, query: str, k: int = 60) -> list[str]:
    """RRF(k) of FTS5 over the turns' own text (memlane's tokenizer and BM25) and dense
    (`sims`: each turn's similarity, its best vector's where turns have passages)."""
    _, match = analyse(query)
    fused: dict[str, float] = defaultdict(float)
    if match:
        scope = Scope(user_id=user)
        found = [r for r, _ in mem.store.fts("turns", scope, match, 100, (1.0, 0.0))]
        turns = mem.store.turns_by_rowid(scope, found)
        for rank, rowid in enumerate(found, 1):
            fused[str(turns[rowid].metadata.get("dia_id"))] += 1.0 / (k + rank)
    for rank, i in enumerate(np.argsort(-sims)[:100], 1):
        fused[ids[int(i)]] += 1.0 / (k + rank)
    return sorted(fused, key=lambda d: -fused[d])[:K]


# ---- one set --------------------------------------------------------------------------------


def run_set(name: str, path: Path, embedder: str, limit: int | None, cached: dict[str, np.ndarray],
            ablations: bool, embedding: dict[str, Any] | None = None, cold: bool = True,
            categories: set[str] | None = None) -> dict[str, Any]:
    """One set ranked by memlane and the baselines. `categories`: only the questions of these
    (and the conversations that hold one; `limit` counts those), e.g. LongMemEval's
    knowledge-update and temporal-reasoning."""
    convs = load(path)
    if categories:
        convs = [(n, c) for n, c in convs if any(q["category"] in categories for q in questions(c))]
    convs = convs[:limit]
    home = temp_home(f"memlane-{name}-")
    mem = Memory(Config.load(store={"home": str(home)},
                             embedding={"provider": embedder, "background": False, **(embedding or {})}))
    model = mem.embedder.model_id
    seed_cache(mem, convs, cached)
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    latencies: list[float] = []
    scope_first: list[float] = []  # the first search of each scope in this process
    n_turns = 0
    embed_s = 0.0
    vectors = QueryVectors(mem, cached)
    for cname, conv in convs:
        user = f"{name}-{cname}"
        n_turns += mem.import_conversations(locomo_sessions(conv), user_id=user, embed=False).turns
        with Timer() as t:
            mem.flush()
        embed_s += t.seconds
        qs = [q for q in questions(conv) if not categories or q["category"] in categories]
        texts = turn_texts(conv)
        ids, matrix = dense_matrix(mem, texts)
        bm25 = bm25_ranker(texts)
        multi = passage_matrix(mem, texts)
        first_of_scope = True
        for q in qs:
            ev = q["evidence"]
            if q["asked"] is not None:
                mem.clock = lambda at=q["asked"]: at
            vectors(q["question"])  # embedded before the clock starts
            with Timer() as t:
                hits = mem.search(q["question"], user_id=user, corpus="turns", limit=K, activate=False,
                                  query_vector=vectors)
            if first_of_scope:
                scope_first.append(t.seconds * 1000)
                first_of_scope = False
                with Timer() as t:  # the same search again: the scope's caches are built now
                    mem.search(q["question"], user_id=user, corpus="turns", limit=K, activate=False,
                               query_vector=vectors)
            latencies.append(t.seconds * 1000)
            ranked = [str(h.turn.metadata.get("dia_id")) for h in hits if h.turn is not None]
            rows["memlane"].append({"category": q["category"], **scores(ranked, ev)})
            if ablations:
                for label, changes in ABLATIONS.items():
                    saved = {k: getattr(mem.config.search, k) for k in changes}
                    for k, v in changes.items():
                        setattr(mem.config.search, k, v)
                    hits = mem.search(q["question"], user_id=user, corpus="turns", limit=K, activate=False,
                                      query_vector=vectors)
                    for k, v in saved.items():
                        setattr(mem.config.search, k, v)
                    ranked = [str(h.turn.metadata.get("dia_id")) for h in hits if h.turn is not None]
                    rows[label].append({"category": q["category"], **scores(ranked, ev)})
            qvec = vectors(q["question"])
            rows[BM25].append({"category": q["category"], **scores(bm25(q["question"]), ev)})
            dense = [ids[int(i)] for i in np.argsort(-(matrix @ qvec))[:K]]
            rows[DENSE].append({"category": q["category"], **scores(dense, ev)})
            sims = matrix @ qvec
            if multi is not None:
                sims = best_of(multi[0], multi[1], qvec, len(ids))
                rows[MULTI].append({"category": q["category"],
                                    **scores([ids[int(i)] for i in np.argsort(-sims)[:K]], ev)})
            rrf = rrf_fts_dense(mem, user, ids, sims, q["question"])
            rows[RRF].append({"category": q["category"], **scores(rrf, ev)})
        mem.clock = datetime.now  # type: ignore[assignment]
        console.print(f"  {name} {cname}: {len(texts)} turns, {len(qs)} questions", style="dim")
    # keep every vector this run made for the next one
    cached.update(mem.store.cache_get(model, [content_hash(t) for t in vector_texts(convs, mem)]))
    mem.close()
    cold_start_: dict[str, Any] = {}
    if convs and cold:  # a home holding one conversation, as one user's agent has it
        cold_home = temp_home(f"memlane-{name}-cold-")
        one = Memory(Config.load(store={"home": str(cold_home)},
                                 embedding={"provider": embedder, "background": False, **(embedding or {})}))
        seed_cache(one, convs[:1], cached)
        turns = one.import_conversations(locomo_sessions(convs[0][1]), user_id="cold", embed=False).turns
        one.flush()
        one.close()
        cold_start_ = cold_start(cold_home, "cold", embedder, embedding or {},
                                 [(q["question"], vectors(q["question"])) for q in questions(convs[0][1])][:1])
        cold_start_["turns"] = turns
    systems = {s: summarise(rs) for s, rs in rows.items()}
    return {"systems": systems, "turns": n_turns, "cold_start": cold_start_,
            "versus_best_baseline_interval": versus_intervals(rows, systems),
            "conversations": len(convs), "embed_seconds": embed_s,
            "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
                           "first_in_scope_p50": percentile(scope_first, 50),
                           "first_in_scope_p95": percentile(scope_first, 95)}}


def passage_study(embedder: str, cached: dict[str, np.ndarray], limit: int, probes: int = 120) -> dict[str, Any]:
    """What passage vectors buy on LongMemEval's long turns: the set's metrics with and without
    them (first `limit` conversations), and a probe of "findable by meaning": a sentence from
    the middle of a long turn (past its 200-character key) as the query, ranked by the dense
    side alone over the conversation's turns — key only against key + passages."""
    import random

    path = SETS["longmemeval"]
    out: dict[str, Any] = {"conversations": limit}
    for n in (0, Config().embedding.passages):
        res = run_set("longmemeval", path, embedder, limit, cached, False, {"passages": n}, cold=False)
        out[f"passages={n}"] = res["systems"]["memlane"]["all"] | {"embed_seconds": res["embed_seconds"]}
    convs = load(path)[:limit]
    mem = Memory(Config.load(store={"home": str(temp_home("memlane-probe-"))},
                             embedding={"provider": embedder, "background": False}))
    seed_cache(mem, convs, cached)
    rng = random.Random(14)
    hits = {"key": 0, "key+passages": 0}
    asked = 0
    for _, conv in convs:
        texts = turn_texts(conv)
        ids, matrix = dense_matrix(mem, texts)
        multi = passage_matrix(mem, texts)
        assert multi is not None
        long_ones = [i for i, t in enumerate(texts.values()) if len(t) > 1200]
        for i in rng.sample(long_ones, min(len(long_ones), probes // limit)):
            text = list(texts.values())[i]
            middle = text[len(text) // 3 : 2 * len(text) // 3]
            sentences = [x.strip() for x in re.split(r"(?<=[.!?])\s+", middle) if 40 <= len(x.strip()) <= 300]
            if not sentences:
                continue
            qvec = mem.embedder.embed([rng.choice(sentences)], query=True)[0]
            asked += 1
            hits["key"] += int(i in np.argsort(-(matrix @ qvec))[:10])
            hits["key+passages"] += int(i in np.argsort(-best_of(multi[0], multi[1], qvec, len(ids)))[:10])
    cached.update(mem.store.cache_get(mem.embedder.model_id, [content_hash(t) for t in vector_texts(convs, mem)]))
    mem.close()
    out["probe"] = {k: v / asked for k, v in hits.items()} | {"probes": asked}
    return out


def throughput(embedder: str, sample: int = 192) -> dict[str, Any]:
    """Embedding cost of turns, uncached: turns/s for short turns (LoCoMo) and long ones
    (LongMemEval), in arrival order and length-sorted batches of 32, with the 200-character
    key alone and with passages; and what deduplication saves on each set."""
    import random

    from memlane.embeddings import make_embedder

    cfg = Config.load(embedding={"provider": embedder}).embedding
    model = make_embedder(cfg)
    out: dict[str, Any] = {}
    rng = random.Random(14)
    for name in ("locomo", "longmemeval"):
        if not SETS[name].exists():
            continue
        texts = [t for _, c in load(SETS[name]) for t in turn_texts(c).values()]
        out[f"{name}_unique_share"] = len(set(texts)) / len(texts)
        picked = rng.sample(texts, min(sample, len(texts)))
        row: dict[str, float] = {}
        for label, keys in (
            ("key", [vector_key(t, cfg.max_chars) for t in picked]),
            ("key+passages", [k for t in picked
                              for k in vector_keys(t, cfg.max_chars, cfg.passage_chars, cfg.passages)]),
        ):
            for order, ks in (("arrival", keys), ("sorted", sorted(keys, key=len))):
                with Timer() as t:
                    for i in range(0, len(ks), cfg.batch_size):
                        model.embed(ks[i : i + cfg.batch_size])
                row[f"{label} {order}"] = len(picked) / t.seconds
            row[f"{label} vectors per turn"] = len(keys) / len(picked)
        out[name] = row
    return out


COLD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from memlane import Config, Memory
t1 = time.perf_counter()
home, user, provider, embedding, query, vec = json.loads(sys.argv[1])
mem = Memory(Config.load(store={"home": home}, embedding={"provider": provider, "background": False, **embedding}))
t2 = time.perf_counter()
v = np.asarray(vec, dtype=np.float32)
first = mem.search(query, user_id=user, corpus="turns", limit=10, activate=False, query_vector=v)
t3 = time.perf_counter()
mem.search(query + " again", user_id=user, corpus="turns", limit=10, activate=False, query_vector=v)
t4 = time.perf_counter()
print(json.dumps({"import_ms": 1000 * (t1 - t0), "open_ms": 1000 * (t2 - t1), "first_ms": 1000 * (t3 - t2),
                  "second_ms": 1000 * (t4 - t3), "hits": len(first)}))
"""


def cold_start(home: Path, user: str, embedder: str, embedding: dict[str, Any],
               queries: list[tuple[str, np.ndarray]], runs: int = 5) -> dict[str, Any]:
    """The first search of a fresh process over one scope of the set (the CLI and a serverless
    agent start cold on every call): `runs` new processes, each timing its first search and
    a second one; the query vector is given, so no embedding is timed."""
    import json
    import subprocess

    if not queries:
        return {}
    query, vec = queries[0]
    arg = json.dumps([str(home), user, embedder, embedding, query, [float(x) for x in vec]])
    out = [json.loads(subprocess.run([sys.executable, "-c", COLD, arg], check=True, capture_output=True,
                                     text=True, timeout=300).stdout.strip().splitlines()[-1]) for _ in range(runs)]
    return {k: percentile([o[k] for o in out], 50) for k in ("import_ms", "open_ms", "first_ms", "second_ms")} | {
        "first_ms_max": max(o["first_ms"] for o in out), "runs": runs}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_cat[r["category"]].append(r)
    strip = lambda rs: [{k: v for k, v in r.items() if k != "category"} for r in rs]  # noqa: E731
    return {"all": mean_metrics(strip(rows)), "questions": len(rows),
            "by_category": {c: {**mean_metrics(strip(rs)), "n": len(rs)} for c, rs in sorted(by_cat.items())}}


# ---- report ---------------------------------------------------------------------------------

COLUMNS = ["R@5", "R@10", "NDCG@10", "MRR", "S_any@5", "S_all@5", "S_all@10"]


MIN_CATEGORY = 10  # issue 14: memlane beats every baseline overall and in each category this large


def _groups(systems: dict[str, Any]) -> list[str]:
    return ["all", *[c for c, m in systems["memlane"]["by_category"].items() if m["n"] >= MIN_CATEGORY]]


def versus_baselines(systems: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{"all" or category (n ≥ MIN_CATEGORY): {metric: memlane − the best baseline's}}."""
    mine = systems["memlane"]
    groups = {"all": (mine["all"], [systems[b]["all"] for b in BASELINES if b in systems])}
    for cat in _groups(systems)[1:]:
        groups[cat] = (mine["by_category"][cat], [systems[b]["by_category"][cat] for b in BASELINES
                                                  if b in systems and cat in systems[b]["by_category"]])
    return {g: {c: m[c] - max((o[c] for o in others), default=0.0) for c in COLUMNS}
            for g, (m, others) in groups.items()}


def versus_intervals(rows: dict[str, list[dict[str, Any]]],
                     systems: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """{group: {metric: [low, high]}}: the 95 % paired bootstrap interval of memlane minus the
    best baseline (the one versus_baselines compares with), question by question. Every
    system's rows are in the same question order."""
    out: dict[str, dict[str, list[float]]] = {}
    for g in _groups(systems):
        picked = {s: [r for r in rs if g == "all" or r["category"] == g] for s, rs in rows.items()}
        out[g] = {}
        for c in COLUMNS:
            totals = {b: sum(r[c] for r in picked[b]) for b in BASELINES if b in picked}
            best = max(totals, key=totals.__getitem__)
            out[g][c] = list(paired_interval([r[c] for r in picked["memlane"]], [r[c] for r in picked[best]]))
    return out


def report(name: str, res: dict[str, Any]) -> None:
    systems = res["systems"]
    base = max((systems[b]["all"]["R@10"] for b in BASELINES if b in systems), default=0.0)
    console.print(table(
        f"{name}: {res['conversations']} conversations, {systems['memlane']['questions']} questions, {res['turns']} turns",
        ["system", *COLUMNS, "R@10 / best baseline"],
        [[s, *[v["all"][c] for c in COLUMNS], v["all"]["R@10"] / base if base else float("nan")]
         for s, v in systems.items()]))
    cats = list(systems["memlane"]["by_category"])
    console.print(table(f"{name}: R@10 by category (n)",
                        ["system", *[f"{c} ({systems['memlane']['by_category'][c]['n']})" for c in cats]],
                        [[s, *[v["by_category"].get(c, {}).get("R@10", 0.0) for c in cats]]
                         for s, v in systems.items()]))
    gaps = res["versus_best_baseline"] = versus_baselines(systems)
    mine = {"all": systems["memlane"]["all"], **systems["memlane"]["by_category"]}

    spans = res.get("versus_best_baseline_interval", {})

    def mark(group: str, metric: str, d: float) -> str:
        if d == 0 and mine[group][metric] >= 1.0:
            return f"{d:+.3f} ="
        low, high = spans.get(group, {}).get(metric, (d, d))
        return f"{d:+.3f}" + ("" if low > 0 else " ~" if high >= 0 else " ✗")

    console.print(table(f"{name}: memlane minus the best baseline (=: both at 1.0; ~: the 95 % paired bootstrap "
                        f"interval over questions holds 0; ✗: below it)",
                        ["questions", *COLUMNS],
                        [[g if g == "all" else f"{g} ({mine[g]['n']})", *[mark(g, c, d) for c, d in row.items()]]
                         for g, row in gaps.items()]))
    console.print(f"{name}: search p50 {res['latency_ms']['p50']:.2f} ms, p95 {res['latency_ms']['p95']:.2f} ms "
                  f"(warm; query embedding excluded); a scope's first search in a warm process "
                  f"p50 {res['latency_ms']['first_in_scope_p50']:.1f} ms, p95 {res['latency_ms']['first_in_scope_p95']:.1f} ms")
    if c := res.get("cold_start"):
        console.print(f"{name}: a fresh process's first search {c['first_ms']:.1f} ms p50 (max {c['first_ms_max']:.1f}) "
                      f"over {c['turns']} turns, second {c['second_ms']:.1f} ms; opening the home {c['open_ms']:.0f} ms, "
                      f"importing memlane {c['import_ms']:.0f} ms ({c['runs']} processes)")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join([*SETS, "memories", "changes"]),
                    help="comma-separated: " + ", ".join(SETS) + ", memories (the memory-level set: bench/memories.py), "
                    "changes (facts that change: bench/changes.py)")
    ap.add_argument("--categories", default=None,
                    help="only these questions' categories, comma-separated (e.g. knowledge-update,temporal-reasoning "
                    "on longmemeval); every question by default")
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations of each set")
    ap.add_argument("--embedder", default="e5", help="e5 (default), hash, minilm, use, openai")
    ap.add_argument("--no-ablations", action="store_true", help="skip the per-signal ablation runs")
    ap.add_argument("--no-throughput", action="store_true", help="skip the embedding throughput study")
    ap.add_argument("--passage-study", type=int, default=0, metavar="N",
                    help="LongMemEval's first N conversations with and without passage vectors (0: skip)")
    ap.add_argument("--passages", type=int, default=None, help="vectors per long turn past its key (config default)")
    ap.add_argument("--out", default="retrieval", help="result name in bench/results/")
    args = ap.parse_args(argv)
    embedding = {} if args.passages is None else {"passages": args.passages}
    categories = {c.strip() for c in args.categories.split(",") if c.strip()} if args.categories else None
    probe = Memory(Config.load(store={"home": str(temp_home("memlane-probe-"))},
                               embedding={"provider": args.embedder, "background": False}))
    model = probe.embedder.model_id
    probe.close()
    cached = load_cache(model)
    results: dict[str, Any] = {"embedder": model, "sets": {}}
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        if name == "memories":  # memories as an extractor writes them, ranked by memory search
            import memories

            results["sets"]["memories"] = mres = memories.run([50, 500, 5000], ["en", "zh", "mixed"], args.limit, 6,
                                                              args.embedder, cached)
            mres["locomo_observations"] = memories.run_locomo_observations(args.embedder, cached, args.limit)
            save_cache(model, cached)
            memories.report(mres)
            memories.report_locomo(mres["locomo_observations"])
            continue
        if name == "changes":  # facts that change over time, at the memory and turn levels
            import changes

            results["sets"]["changes"] = cres = changes.run(changes.SIZES, changes.LANGS, args.limit, args.embedder,
                                                            cached)
            save_cache(model, cached)
            changes.report(cres)
            continue
        path = SETS.get(name)
        if path is None:
            raise SystemExit(f"unknown set {name!r}: pick from {', '.join(SETS)}")
        if not path.exists():
            console.print(f"[yellow]{name}: no data at {path}; skipped[/yellow]")
            continue
        res = run_set(name, path, args.embedder, args.limit, cached, not args.no_ablations, embedding,
                      categories=categories)
        save_cache(model, cached)
        results["sets"][name] = res
        report(name, res)
    if args.passage_study and SETS["longmemeval"].exists():
        results["passage_study"] = ps = passage_study(args.embedder, cached, args.passage_study)
        save_cache(model, cached)
        n = Config().embedding.passages
        console.print(table(f"Long turns: LongMemEval, first {args.passage_study} conversations",
                            ["vectors", "R@5", "R@10", "NDCG@10", "S_all@5"],
                            [[label, ps[key]["R@5"], ps[key]["R@10"], ps[key]["NDCG@10"], ps[key]["S_all@5"]]
                             for label, key in (("key only", "passages=0"), (f"key + up to {n} passages", f"passages={n}"))]))
        console.print(f"a sentence from the middle of a long turn, dense side alone, turn in the top 10: "
                      f"key only {ps['probe']['key']:.2f}, key + passages {ps['probe']['key+passages']:.2f} "
                      f"({ps['probe']['probes']} probes)")
    if not args.no_throughput:
        results["throughput"] = tp = throughput(args.embedder)
        cols = ["key arrival", "key sorted", "key+passages arrival", "key+passages sorted", "key+passages vectors per turn"]
        console.print(table("Embedding throughput, turns/s (uncached, batches of 32)", ["set", *cols, "unique texts"],
                            [[n, *[tp[n][c] for c in cols], tp[f"{n}_unique_share"]] for n in ("locomo", "longmemeval")
                             if n in tp]))
    path = write_result(args.out, results)
    console.print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main()
