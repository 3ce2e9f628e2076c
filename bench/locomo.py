"""LoCoMo retrieval benchmark: does memlane find the turns that hold each answer?

Every conversation is ingested through the public `Memory` API (turn text "speaker: text",
image captions appended, each session's date as the turn time); every question with evidence
ranks that conversation's turns. Baselines are computed in the same run on the same data:
BM25 alone (bm25s, English stemming) and dense alone (the same embedder). A second run
stores LoCoMo's per-session observations as memories and ranks those (the memory path).

    python bench/locomo.py                    # all 10 conversations, default embedder
    python bench/locomo.py --limit 2 --embedder hash
    python bench/locomo.py --data my_locomo_style.json
    python bench/locomo.py --peer mem0        # also mem0 (pip install mem0ai): infer=False, same vectors
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
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
    percentile,
    save_cache,
    table,
    temp_home,
    write_result,
)
from peers import MEM0_LABEL, PeerConversation, require_mem0, run_mem0  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.importers import locomo_date, locomo_sessions, locomo_turn_text  # noqa: E402
from memlane.indexing import content_hash, embed_cached, vector_key  # noqa: E402

DEFAULT_DATA = Path(__file__).parents[2] / "shared" / "bench" / "locomo10"
# What each retrieval idea adds, measured by switching it off on the same data.
ABLATIONS: dict[str, dict[str, Any]] = {
    "  − session prior": {"session_prior": 0.0},
    "  − session prior spread over long turns": {"session_spread_chars": 10**9},
    "  − no session prior for what has built up (\"what books has…\")": {"accumulated_session_prior": 0.4},
    "  − dense neighbour smoothing": {"dense_neighbour_weights": []},
    "  − lexical neighbour column": {"neighbour_weight": 0.0},
    "  − turn length / question priors": {"turn_length_prior": 0.0, "question_penalty": 0.0},
    "  − reply prior (a question's next turn)": {"reply_prior": 0.0},
    "  − speaker prior (the speaker the query names)": {"speaker_prior": 0.0},
    "  − role prior (the role the query asks about)": {"role_prior": 0.0},
    "  − length prior's cap (300 chars)": {"turn_length_cap": 10**9},
    "  − long turns ending in ? count as statements": {"question_max_chars": 10**9},
    "  − date prior": {"date_prior": 0.0},
    "  − a conversation named by its order (\"our first chat\")": {"named_session_prior": 0.0},
    "  − passages count halfway (a turn is its best vector)": {"passage_weight": 1.0},
    "  − common words left out of the dense query": {"dense_common_share": 1.0},
    "  RRF(60) instead of score fusion": {"fusion": "rrf"},
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def load(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Conversations from a LoCoMo-layout file or a folder of them (a list or a single one)."""
    import json

    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    out: list[tuple[str, dict[str, Any]]] = []
    for f in files:
        data = json.loads(f.read_text(encoding="utf-8"))
        items = data if isinstance(data, list) else [data]
        for i, conv in enumerate(items):
            out.append((f.stem if len(items) == 1 else f"{f.stem}-{i}", conv))
    return out


def evidence_ids(raw: list[str]) -> set[str]:
    """LoCoMo's evidence ids, repaired: 'D8:6; D9:17' → two ids, 'D:11:26' → 'D11:26', 'D30:05' → 'D30:5'."""
    out: set[str] = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                out.add(f"D{m.group(1)}:{m.group(2)}")
    return out


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    qs = []
    for qa in conv.get("qa", []):
        ev = evidence_ids(qa.get("evidence") or [])
        if ev:
            cat = qa.get("category", 0)  # LoCoMo numbers its categories; other sets name theirs
            qs.append({"question": str(qa["question"]), "evidence": ev, "category": cat if isinstance(cat, str) else int(cat)})
    return qs


def turn_texts(conv: dict[str, Any]) -> dict[str, str]:
    c = conv.get("conversation", conv)
    out: dict[str, str] = {}
    n = 1
    while f"session_{n}" in c or f"session_{n}_date_time" in c:
        for t in c.get(f"session_{n}") or []:
            out[t["dia_id"]] = locomo_turn_text(t)
        n += 1
    return out


# ---- embedding cache between runs ---------------------------------------------------------


class QueryVectors:
    """Query vectors for `Memory.search(query_vector=...)` from the bench cache; a text not
    cached yet is embedded here and timed apart, so search latency excludes it."""

    def __init__(self, mem: Memory, cached: dict[str, np.ndarray]) -> None:
        self.mem, self.cached = mem, cached
        self.seconds, self.embedded = 0.0, 0

    def __call__(self, text: str) -> np.ndarray:
        key = f"q:{content_hash(text)}"
        if key not in self.cached:
            t0 = time.perf_counter()
            self.cached[key] = self.mem.embedder.embed([text], query=True)[0]
            self.seconds += time.perf_counter() - t0
            self.embedded += 1
        return self.cached[key]


# ---- runs ---------------------------------------------------------------------------------


def run_memlane(mem: Memory, user: str, qs: list[dict[str, Any]], vectors: QueryVectors,
                k: int = 20) -> tuple[list[dict[str, Any]], list[float]]:
    rows, latencies = [], []
    for q in qs:
        spent = vectors.seconds
        t0 = time.perf_counter()
        hits = mem.search(q["question"], user_id=user, corpus="turns", limit=k, activate=False,
                          query_vector=vectors)
        latencies.append((time.perf_counter() - t0 - (vectors.seconds - spent)) * 1000)
        ranked = [str(h.turn.metadata.get("dia_id")) for h in hits if h.turn is not None]
        rows.append({"category": q["category"], **metrics(ranked, q["evidence"])})
    return rows, latencies


def run_bm25(texts: dict[str, str], qs: list[dict[str, Any]], k: int = 20) -> list[dict[str, Any]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = list(texts)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([texts[i] for i in ids], stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    rows = []
    for q in qs:
        tokens = bm25s.tokenize([q["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            ranked: list[str] = []
        else:
            docs, _ = retriever.retrieve(tokens, k=min(k, len(ids)), show_progress=False)
            ranked = [ids[int(d)] for d in docs[0]]
        rows.append({"category": q["category"], **metrics(ranked, q["evidence"])})
    return rows


def run_dense(mem: Memory, texts: dict[str, str], qs: list[dict[str, Any]], qvecs: dict[str, np.ndarray],
              k: int = 20) -> list[dict[str, Any]]:
    ids = list(texts)
    keys = [vector_key(texts[i], mem.config.embedding.max_chars) for i in ids]
    matrix = embed_cached(mem.store, mem.embedder, keys, mem.config.embedding.batch_size)
    rows = []
    for q in qs:
        order = np.argsort(-(matrix @ qvecs[q["question"]]))[:k]
        rows.append({"category": q["category"], **metrics([ids[i] for i in order], q["evidence"])})
    return rows


def run_observations(mem: Memory, user: str, conv: dict[str, Any], qs: list[dict[str, Any]],
                     vectors: QueryVectors, k: int = 20) -> tuple[list[dict[str, Any]], int]:
    """LoCoMo's observations stored as memories, dated by their session (the clock is set
    to it while they are added); a hit counts for the turns it cites."""
    c = conv.get("conversation", conv)
    n_obs = 0
    clock = mem.clock
    for key, value in c.items():
        if not key.endswith("_observation") or not isinstance(value, dict):
            continue
        date = c.get(key.replace("_observation", "_date_time"))
        if date:
            at = locomo_date(date)
            mem.clock = lambda at=at: at
        for facts in value.values():
            for fact in facts:
                if isinstance(fact, list) and len(fact) >= 2:
                    cited = sorted(evidence_ids(fact[1] if isinstance(fact[1], list) else [fact[1]]))
                    mem.add(str(fact[0]), user_id=user, metadata={"dia_ids": cited}, source="import")
                    n_obs += 1
    mem.clock = clock
    rows = []
    for q in qs:
        hits = mem.search(q["question"], user_id=user, limit=k, activate=False, min_score=0.0, query_vector=vectors)
        ranked: list[str] = []
        for h in hits:
            for d in (h.memory.metadata.get("dia_ids", []) if h.memory else []):
                if d not in ranked:
                    ranked.append(d)
        rows.append({"category": q["category"], **metrics(ranked, q["evidence"])})
    return rows, n_obs


def key_study(convs: list[tuple[str, dict[str, Any]]], embedder_name: str, cuts: list[int],
              cached: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """What a turn's vector key costs and buys: R@10 and embedding seconds per 1,000 turns
    when each turn is embedded cut at `cut` characters — on LoCoMo's short turns and on
    long replies (8 consecutive turns joined, like a chat assistant's answers)."""
    texts = [t for _, c in convs for t in turn_texts(c).values()]
    long_texts = [" ".join(texts[i : i + 8]) for i in range(0, min(len(texts), 8 * 48), 8)]
    out = []
    for cut in cuts:
        home = temp_home(f"memlane-key{cut}-")
        cfg = Config.load(store={"home": str(home)},
                          embedding={"provider": embedder_name, "background": False, "max_chars": cut})
        mem = Memory(cfg)
        mem.store.cache_put(mem.embedder.model_id, {k: v for k, v in cached.items() if not k.startswith("q:")})
        rows: list[dict[str, Any]] = []
        for name, conv in convs:
            user = f"locomo-{name}"
            mem.import_conversations(locomo_sessions(conv), user_id=user)
            mem.flush()
            rows += run_memlane(mem, user, questions(conv), QueryVectors(mem, cached))[0]
        hashes = [content_hash(vector_key(t, cut)) for t in texts]
        cached.update(mem.store.cache_get(mem.embedder.model_id, hashes))
        costs = {}
        for label, sample in (("short", texts[:96]), ("long", long_texts)):
            keys = [vector_key(t, cut) for t in sample]
            with Timer() as t:
                mem.embedder.embed(keys)
            costs[label] = 1000 * t.seconds / len(keys)
        mem.close()
        out.append({"cut": cut, "R@10": mean_metrics([{k: v for k, v in r.items() if k != "category"} for r in rows])["R@10"],
                    "embed_s_per_1000_short": costs["short"], "embed_s_per_1000_long": costs["long"]})
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_cat: dict[int | str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_cat[r["category"]].append(r)
    strip = lambda rs: [{k: v for k, v in r.items() if k != "category"} for r in rs]  # noqa: E731
    return {
        "all": mean_metrics(strip(rows)),
        "no_adversarial": mean_metrics(strip([r for r in rows if r["category"] != 5])),
        "by_category": {CATEGORIES.get(c, str(c)): mean_metrics(strip(rs)) for c, rs in sorted(by_cat.items())},
        "questions": len(rows),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-layout file or folder")
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--embedder", default="e5", help="e5 (default), hash, minilm, use, openai")
    ap.add_argument("--no-observations", action="store_true", help="skip the memory-path run")
    ap.add_argument("--no-key-study", action="store_true", help="skip the vector-key cost study")
    ap.add_argument("--peer", choices=["mem0"], default=None, help="also run another engine on the same turns and vectors")
    ap.add_argument("--out", default="locomo", help="result name in bench/results/")
    args = ap.parse_args(argv)
    if args.peer == "mem0":
        require_mem0()

    if not args.data.exists():
        raise SystemExit(f"no LoCoMo data at {args.data}: pass --data PATH (a LoCoMo-layout file or a folder of them)")
    convs = load(args.data)[: args.limit]
    home = temp_home("memlane-locomo-")
    cfg = Config.load(store={"home": str(home)}, embedding={"provider": args.embedder, "background": False})
    mem = Memory(cfg)
    model = mem.embedder.model_id
    cached = load_cache(model)
    if cached:
        mem.store.cache_put(model, {k: v for k, v in cached.items() if not k.startswith("q:")})

    results: dict[str, Any] = {"embedder": model, "conversations": len(convs), "data": str(args.data)}
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    latencies: list[float] = []
    ingest_s = embed_s = query_embed_s = 0.0
    n_turns = n_obs = n_queries = n_embedded = 0
    vectors = QueryVectors(mem, cached)  # what memlane embeds: the dense text of each question
    peer_convs: list[PeerConversation] = []
    for name, conv in convs:
        user = f"locomo-{name}"
        sessions = locomo_sessions(conv)
        with Timer() as t_ingest:
            n_turns += mem.import_conversations(sessions, user_id=user, embed=False).turns
        ingest_s += t_ingest.seconds
        with Timer() as t_embed:
            mem.flush()
        embed_s += t_embed.seconds
        qs = questions(conv)
        n_queries += len(qs)
        # the plain questions' vectors, for the dense baseline (timed apart from search)
        todo = [q["question"] for q in qs if f"q:{content_hash(q['question'])}" not in cached]
        with Timer() as t_q:
            fresh = mem.embedder.embed(todo, query=True) if todo else []
        query_embed_s += t_q.seconds
        n_embedded += len(todo)
        for text, vec in zip(todo, fresh, strict=True):
            cached[f"q:{content_hash(text)}"] = vec
        qvecs = {q["question"]: cached[f"q:{content_hash(q['question'])}"] for q in qs}
        r, lat = run_memlane(mem, user, qs, vectors)
        rows["memlane"] += r
        latencies += lat
        for label, changes in ABLATIONS.items():
            saved = {k: getattr(mem.config.search, k) for k in changes}
            for k, v in changes.items():
                setattr(mem.config.search, k, v)
            rows[label] += run_memlane(mem, user, qs, vectors)[0]
            for k, v in saved.items():
                setattr(mem.config.search, k, v)
        texts = turn_texts(conv)
        rows["bm25 (bm25s, stemmed)"] += run_bm25(texts, qs)
        rows["dense (same embedder)"] += run_dense(mem, texts, qs, qvecs)
        peer_convs.append(PeerConversation(user, texts, qs))
        if not args.no_observations:
            r_obs, n = run_observations(mem, f"{user}-obs", conv, qs, vectors)
            rows["memlane memories (observations)"] += r_obs
            n_obs += n
        console.print(f"  {name}: {len(sessions)} sessions, {len(qs)} questions", style="dim")

    peers: dict[str, Any] = {}
    if args.peer == "mem0":
        max_chars, batch = cfg.embedding.max_chars, cfg.embedding.batch_size
        peer_queries = QueryVectors(mem, cached)  # the plain question, as the dense baseline has it
        rows[MEM0_LABEL], peers["mem0"] = run_mem0(
            peer_convs, mem.embedder.dimensions, query=peer_queries,
            passages=lambda ts: embed_cached(mem.store, mem.embedder, [vector_key(t, max_chars) for t in ts], batch))
    study = [] if args.no_key_study else key_study(convs, args.embedder, [cfg.embedding.max_chars, 1000], cached)
    # keep every passage vector for the next run
    all_hashes = [content_hash(vector_key(t, cfg.embedding.max_chars)) for _, c in convs for t in turn_texts(c).values()]
    cached.update(mem.store.cache_get(model, all_hashes))
    save_cache(model, cached)
    mem.close()
    query_embed_s += vectors.seconds
    n_embedded += vectors.embedded

    systems = {name: summarise(rs) for name, rs in rows.items()}
    results.update(
        systems=systems,
        vector_key_study=study,
        ingest={"turns": n_turns, "store_turns_per_s": n_turns / ingest_s if ingest_s else 0.0,
                "embed_seconds": embed_s, "embed_s_per_1000_turns": 1000 * embed_s / max(n_turns, 1),
                "observations": n_obs},
        latency_ms={"p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
                    "query_embedding_ms_mean": 1000 * query_embed_s / n_embedded if n_embedded else None},
        peers=peers,
    )
    base = systems["memlane"]["all"]
    cols = ["system", "R@5", "R@10", "R@20", "Hit@10", "NDCG@10", "R@10 w/o adv", "R@10 ratio"]
    console.print(table(
        f"LoCoMo turn retrieval — {results['conversations']} conversations, {systems['memlane']['questions']} questions, embedder {model}",
        cols,
        [[name, s["all"]["R@5"], s["all"]["R@10"], s["all"]["R@20"], s["all"]["Hit@10"], s["all"]["NDCG@10"],
          s["no_adversarial"]["R@10"], base["R@10"] / s["all"]["R@10"] if s["all"]["R@10"] else float("nan")]
         for name, s in systems.items()],
    ))
    cats = list(systems["memlane"]["by_category"])
    console.print(table("R@10 by category", ["system", *cats],
                        [[name, *[s["by_category"].get(c, {}).get("R@10", 0.0) for c in cats]] for name, s in systems.items()]))
    console.print(f"search latency p50 {results['latency_ms']['p50']:.2f} ms, p95 {results['latency_ms']['p95']:.2f} ms "
                  f"(query embedding excluded: {results['latency_ms']['query_embedding_ms_mean'] or 0:.1f} ms/query when not cached)")
    for p in peers.values():
        console.print(f"{p['system']} search latency p50 {p['latency_ms']['p50']:.2f} ms, p95 {p['latency_ms']['p95']:.2f} ms; "
                      f"ingest {p['memories']} turns in {p['ingest_seconds']:.1f} s ({p['vector_store']}; "
                      f"BM25 signal in {p['searches_with_bm25_signal']:.0%} of searches)")
    console.print(f"ingest: {results['ingest']['store_turns_per_s']:.0f} turns/s stored and full-text indexed; "
                  f"embedding {results['ingest']['embed_s_per_1000_turns']:.1f} s per 1,000 turns "
                  "(near 0 when the bench cache has them; the key study measures it uncached)")
    if study:
        console.print(table("Vector key: what embedding each turn cut at N characters costs and buys",
                            ["cut (chars)", "R@10", "embed s / 1,000 LoCoMo turns", "embed s / 1,000 long replies"],
                            [[r["cut"], r["R@10"], r["embed_s_per_1000_short"], r["embed_s_per_1000_long"]] for r in study]))
    path = write_result(args.out, results)
    console.print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main()
