"""Memory-level retrieval: does `search(corpus="memories")` rank the memories that answer a question?

What an agent receives is memories — short facts an extractor wrote ("The user is allergic to
peanuts." / "用户对花生过敏。") — ranked by memory search. The dev set (`bench/data/memories/`,
hand-written, see its README) holds profiles of fictional users whose every fact and question
is written in English and in Chinese, each question labelled with the facts that answer it.
From it the bench builds, per profile, stores in English, in Chinese and mixed (each fact in
one of the two languages), of 50, 500 and 5,000 memories (the rest other profiles' facts,
then LoCoMo's observations), and asks each question in both languages.

Reported per pairing (question language → the answers' language), size and question kind, with
the baselines computed in the same run on the same vectors: dense alone (cosine), BM25 (bm25s;
jieba words for Chinese) and RRF(60) of the two. Also: how many questions with no answer have
nothing at or above `search.min_relevance` and how many answers reach it; search latency at
5,000 memories, engine alone and with the query's embedding; and LoCoMo's observations stored
as memories (R@10 over the turns they cite), with the same baselines.

    python bench/memories.py                        # everything, default embedder (e5)
    python bench/memories.py --sizes 50 --profiles 6 --no-locomo   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import (  # noqa: E402
    console,
    load_cache,
    paired_interval,
    percentile,
    save_cache,
    table,
    temp_home,
    write_result,
)
from locomo import QueryVectors, evidence_ids, questions  # noqa: E402
from locomo import load as load_locomo  # noqa: E402
from retrieval import bm25_ranker  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.indexing import content_hash, embed_cached  # noqa: E402

DATA = Path(__file__).parent / "data" / "memories"
LOCOMO = Path(__file__).parents[2] / "shared" / "bench" / "locomo10"
K = 20
SYSTEMS = ("memlane", "dense", "bm25", "rrf")
BASELINES = SYSTEMS[1:]
KINDS = ("paraphrase", "direct", "multi")


@dataclass
class Profile:
    id: str
    facts: dict[str, dict[str, str]]  # fact id → {"en": …, "zh": …}
    questions: list[dict[str, Any]]


@dataclass
class Store:
    """One user's memories as stored: fact id (or distractor key) → text."""

    user: str
    profile: Profile
    lang: str  # "en", "zh" or "mixed"
    size: int
    texts: dict[str, str] = field(default_factory=dict)
    lang_of: dict[str, str] = field(default_factory=dict)


def load_profiles(path: Path = DATA) -> list[Profile]:
    out: list[Profile] = []
    for file in sorted(path.glob("*.json")):
        for p in json.loads(file.read_text(encoding="utf-8")).get("profiles", []):
            facts = {f["id"]: {"en": f["en"], "zh": f["zh"]} for f in p["facts"]}
            out.append(Profile(p["id"], facts, p["questions"]))
    return out


def load_unrelated(path: Path = DATA) -> list[dict[str, str]]:
    """Requests about nothing a memory holds (general knowledge, tasks, small talk)."""
    file = path / "unrelated.json"
    return json.loads(file.read_text(encoding="utf-8"))["unrelated"] if file.exists() else []


def mixed_language(fact_id: str) -> str:
    """The language a fact takes in a mixed store: half each, fixed by its id."""
    return "zh" if hashlib.sha1(fact_id.encode()).digest()[0] % 2 else "en"


def locomo_observations(path: Path = LOCOMO) -> list[str]:
    out: list[str] = []
    for file in sorted(path.glob("*.json")):
        conv = json.loads(file.read_text(encoding="utf-8"))
        c = conv.get("conversation", conv)
        for key, value in c.items():
            if key.endswith("_observation") and isinstance(value, dict):
                out += [str(f[0]) for facts in value.values() for f in facts if isinstance(f, list) and f]
    return out


def build_stores(profiles: list[Profile], sizes: list[int], langs: list[str], big_profiles: int,
                 extra: list[str]) -> list[Store]:
    """Every profile × language at the sizes up to 500; the largest sizes for the first
    `big_profiles` profiles only (their build dominates the run)."""
    stores = []
    for lang in langs:
        for size in sizes:
            chosen = profiles if size <= 500 else profiles[:big_profiles]
            for p in chosen:
                s = Store(f"{p.id}-{lang}-{size}", p, lang, size)
                for fid, f in p.facts.items():
                    s.lang_of[fid] = mixed_language(fid) if lang == "mixed" else lang
                    s.texts[fid] = f[s.lang_of[fid]]
                rng = random.Random(f"{p.id}:{lang}:{size}")
                others = [(fid, f) for q in profiles if q.id != p.id for fid, f in q.facts.items()]
                rng.shuffle(others)
                for fid, f in others:
                    if len(s.texts) >= size:
                        break
                    s.lang_of[fid] = mixed_language(fid) if lang == "mixed" else lang
                    s.texts[fid] = f[s.lang_of[fid]]
                # beyond the profiles' facts: LoCoMo's observations (English) fill a large store
                for i, text in enumerate(extra if lang != "zh" else []):
                    if len(s.texts) >= size:
                        break
                    s.texts[f"locomo{i}"], s.lang_of[f"locomo{i}"] = text, "en"
                stores.append(s)
    return stores


def pairing(store: Store, qlang: str, answers: list[str]) -> str:
    """"en→zh": an English question whose answers are in Chinese; "en→mixed" where they are
    in both; "en→none" for a question without answers, by the store's language."""
    if not answers:
        return f"{qlang}→none({store.lang})"
    langs = {store.lang_of[a] for a in answers}
    return f"{qlang}→{langs.pop() if len(langs) == 1 else 'both'}"


def recall(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def rrf(*rankings: list[str], k: int = 60, depth: int = 100) -> list[str]:
    fused: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, key in enumerate(ranking[:depth], 1):
            fused[key] += 1.0 / (k + rank)
    return sorted(fused, key=lambda d: -fused[d])


def rank_store(mem: Memory, store: Store, questions: Iterable[tuple[str, str, list[str], str]],
               vectors: QueryVectors, floor: float, latencies: list[float],
               misses: list[str] | None = None) -> list[dict[str, Any]]:
    """Each question ranked by memlane and the baselines: one row per question. `misses`
    collects, for each question memlane misses at R@5, its answers and the five hits above them
    (OWN: the profile's own fact; other: another profile's, which may answer it as worded)."""
    ids = list(store.texts)
    matrix = embed_cached(mem.store, mem.embedder, [store.texts[i] for i in ids])
    by_id = {m.id: m for m in mem.list(user_id=store.user)}
    key_of = {mid: m.metadata["key"] for mid, m in by_id.items()}
    bm25 = bm25_ranker(store.texts)
    rows = []
    for qid, text, answers, kind in questions:
        spent = vectors.seconds
        t0 = time.perf_counter()
        hits = mem.search(text, user_id=store.user, limit=K, activate=False, min_score=0.0, query_vector=vectors)
        latencies.append((time.perf_counter() - t0 - (vectors.seconds - spent)) * 1000)
        qv = vectors(text)
        dense = [ids[i] for i in np.argsort(-(matrix @ qv))[:100]]
        lexical = bm25(text)
        ranked = {"memlane": [key_of[h.id] for h in hits], "dense": dense, "bm25": lexical,
                  "rrf": rrf(lexical, dense)}
        row: dict[str, Any] = {"q": qid, "kind": kind, "size": store.size, "store": store.lang,
                               "pairing": f"{text_lang(text)}→unrelated" if kind == "unrelated"
                               else pairing(store, text_lang(text), answers)}
        scores = {key_of[h.id]: h.score for h in hits}
        if answers:
            for s, r in ranked.items():
                row[f"{s}:R@5"], row[f"{s}:R@10"] = recall(r, set(answers), 5), recall(r, set(answers), 10)
            # the answers an agent would be shown: at or above the floor
            row["answer_score"] = max((scores.get(a, 0.0) for a in answers), default=0.0)
            if misses is not None and not row["memlane:R@5"]:
                own = set(store.profile.facts)
                misses.append("\n".join([f"Q {text}", *(f"  answer  {store.texts[a]}" for a in answers),
                                          *(f"  {'OWN  ' if k in own else 'other'}   {store.texts[k]}"
                                            for k in ranked["memlane"][:5])]))
            row["answer_above_floor"] = float(row["answer_score"] >= floor)
        else:
            row["top_score"] = max(scores.values(), default=0.0)
            row["nothing_above_floor"] = float(row["top_score"] < floor)
        rows.append(row)
    return rows


def text_lang(text: str) -> str:
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


def questions_of(store: Store, unrelated: Sequence[dict[str, str]] = ()) -> list[tuple[str, str, list[str], str]]:
    """(id, text, answers, kind) of the profile's questions in both languages; questions
    without an answer, and the `unrelated` requests, only where the store is the profile's
    own (a larger store's other profiles may well answer them)."""
    out = []
    if store.size <= 50:
        out += [(f"unrelated{i}:{lang}", u[lang], [], "unrelated") for i, u in enumerate(unrelated) for lang in ("en", "zh")]
    for q in store.profile.questions:
        if q["kind"] == "none" and store.size > 50:
            continue
        for qlang in ("en", "zh"):
            out.append((f"{q['id']}:{qlang}", q[qlang], list(q["answers"]), q["kind"]))
    return out


def fill(mem: Memory, store: Store) -> None:
    for key, text in store.texts.items():
        mem.add(text, user_id=store.user, source="import", metadata={"key": key})


def summarise(rows: list[dict[str, Any]], groups: Callable[[dict[str, Any]], list[str]]) -> dict[str, Any]:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        for g in groups(r):
            by[g].append(r)
    out: dict[str, Any] = {}
    for g, rs in sorted(by.items()):
        answered = [r for r in rs if "memlane:R@5" in r]
        res: dict[str, Any] = {"n": len(answered)}
        for s in SYSTEMS:
            for m in ("R@5", "R@10"):
                res[f"{s}:{m}"] = float(np.mean([r[f"{s}:{m}"] for r in answered])) if answered else None
        if answered:
            best = max(BASELINES, key=lambda b: res[f"{b}:R@5"])
            res["best_baseline"] = best
            res["vs_best_R@5_interval"] = list(paired_interval([r["memlane:R@5"] for r in answered],
                                                               [r[f"{best}:R@5"] for r in answered]))
        floor_rows = [r["answer_above_floor"] for r in answered]
        none_rows = [r["nothing_above_floor"] for r in rs if "nothing_above_floor" in r]
        res["answer_above_floor"] = float(np.mean(floor_rows)) if floor_rows else None
        res["none_clean"] = float(np.mean(none_rows)) if none_rows else None
        res["none_n"] = len(none_rows)
        out[g] = res
    return out


def floor_study(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    """What each relevance floor would do, on the stores small enough to ask questions with
    no answer: the share of answered questions whose answer reaches it, and of the others
    left with nothing at or above it."""
    small = [r for r in rows if r["size"] <= 50]
    answered = [r["answer_score"] for r in small if "answer_score" in r]
    empty = [r["top_score"] for r in small if r["kind"] == "none"]
    unrelated = [r["top_score"] for r in small if r["kind"] == "unrelated"]

    def share(values: list[float], f: float, above: bool) -> float:
        return float(np.mean([(s >= f) == above for s in values])) if values else 0.0

    return [{"floor": f, "answer_above": share(answered, f, True), "none_clean": share(empty, f, False),
             "unrelated_clean": share(unrelated, f, False)}
            for f in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)]


def run(sizes: list[int], langs: list[str], profiles_limit: int | None, big_profiles: int,
        embedder: str, cached: dict[str, np.ndarray], search: dict[str, Any] | None = None,
        data: Path = DATA, keep: Path | None = None, misses: list[str] | None = None) -> dict[str, Any]:
    profiles = load_profiles(data)[:profiles_limit]
    if not profiles:
        raise SystemExit(f"no profiles in {DATA}")
    extra = locomo_observations() if max(sizes) > 500 else []
    unrelated = load_unrelated(data)
    stores = build_stores(profiles, sizes, langs, big_profiles, extra)
    home = keep or temp_home("memlane-memories-")
    mem = Memory(Config.load(store={"home": str(home)}, embedding={"provider": embedder, "background": False},
                             search=search or {}))
    floor = mem.config.search.min_relevance
    mem.store.cache_put(mem.embedder.model_id, {k: v for k, v in cached.items() if not k.startswith("q:")})
    texts = sorted({t for s in stores for t in s.texts.values()})
    t0 = time.perf_counter()
    embed_cached(mem.store, mem.embedder, texts)
    console.print(f"{len(profiles)} profiles, {len(stores)} stores, {len(texts)} distinct memories "
                  f"(embedded or cached in {time.perf_counter() - t0:.0f} s)")
    cached.update(mem.store.cache_get(mem.embedder.model_id, [content_hash(t) for t in texts]))
    vectors = QueryVectors(mem, cached)
    rows: list[dict[str, Any]] = []
    latencies: dict[int, list[float]] = defaultdict(list)
    for s in stores:
        if not mem.list(user_id=s.user, limit=1):  # a kept home (--keep) holds it already
            fill(mem, s)
        rows += rank_store(mem, s, questions_of(s, unrelated), vectors, floor, latencies[s.size],
                           misses if s.size > 50 else None)
    # what a user waits for: the same searches with the query embedded each time
    big = max(sizes)
    user_seen: list[float] = []
    sample = [s for s in stores if s.size == big][:2]
    for s in sample:
        for _, text, _, _ in questions_of(s)[:40]:
            t0 = time.perf_counter()
            mem.search(text, user_id=s.user, limit=10, activate=False, min_score=0.0)
            user_seen.append((time.perf_counter() - t0) * 1000)
    mem.close()
    return {
        "profiles": len(profiles), "stores": len(stores), "questions": len(rows),
        "floor": floor,
        "by_pairing_size": summarise(rows, lambda r: [f"{r['pairing']} @{r['size']}"]),
        "by_pairing": summarise(rows, lambda r: [r["pairing"], "all"]),
        "by_kind": summarise(rows, lambda r: [f"{r['kind']} @{r['size']}"]),
        "by_store": summarise(rows, lambda r: [f"{r['store']} store @{r['size']}"]),
        "floors": floor_study(rows),
        "latency_ms": {str(size): {"p50": percentile(v, 50), "p95": percentile(v, 95)} for size, v in latencies.items()},
        "latency_with_embedding_ms": {"size": big, "p50": percentile(user_seen, 50), "p95": percentile(user_seen, 95)},
        "rows": rows,
    }


def run_locomo_observations(embedder: str, cached: dict[str, np.ndarray], limit: int | None,
                            search: dict[str, Any] | None = None) -> dict[str, Any]:
    """LoCoMo's observations stored as memories; a ranked memory counts for the turns it cites."""
    home = temp_home("memlane-memories-locomo-")
    mem = Memory(Config.load(store={"home": str(home)}, embedding={"provider": embedder, "background": False},
                             search=search or {}))
    mem.store.cache_put(mem.embedder.model_id, {k: v for k, v in cached.items() if not k.startswith("q:")})
    vectors = QueryVectors(mem, cached)
    rows: list[dict[str, Any]] = []
    for name, conv in load_locomo(LOCOMO)[:limit]:
        c = conv.get("conversation", conv)
        store = Store(f"locomo-{name}", Profile(name, {}, []), "en", 0)
        cites: dict[str, list[str]] = {}
        for key, value in c.items():
            if key.endswith("_observation") and isinstance(value, dict):
                for facts in value.values():
                    for f in facts:
                        if isinstance(f, list) and len(f) >= 2:
                            k = f"o{len(store.texts)}"
                            store.texts[k] = str(f[0])
                            cites[k] = sorted(evidence_ids(f[1] if isinstance(f[1], list) else [f[1]]))
        fill(mem, store)
        ids = list(store.texts)
        matrix = embed_cached(mem.store, mem.embedder, [store.texts[i] for i in ids])
        key_of = {m.id: m.metadata["key"] for m in mem.list(user_id=store.user)}
        bm25 = bm25_ranker(store.texts)
        for q in questions(conv):
            hits = mem.search(q["question"], user_id=store.user, limit=K, activate=False, min_score=0.0,
                              query_vector=vectors)
            dense = [ids[i] for i in np.argsort(-(matrix @ vectors(q["question"])))[:100]]
            lexical = bm25(q["question"])
            ranked = {"memlane": [key_of[h.id] for h in hits], "dense": dense, "bm25": lexical,
                      "rrf": rrf(lexical, dense)}
            row: dict[str, Any] = {"category": q["category"]}
            for s, r in ranked.items():
                turns: list[str] = []
                for key in r:
                    turns += [d for d in cites[key] if d not in turns]
                row[f"{s}:R@10"] = recall(turns, q["evidence"], 10)
            rows.append(row)
    mem.close()
    res: dict[str, Any] = {"questions": len(rows)}
    for s in SYSTEMS:
        res[f"{s}:R@10"] = float(np.mean([r[f"{s}:R@10"] for r in rows]))
    best = max(BASELINES, key=lambda b: res[f"{b}:R@10"])
    res["vs_best_R@10_interval"] = list(paired_interval([r["memlane:R@10"] for r in rows],
                                                        [r[f"{best}:R@10"] for r in rows]))
    return res


def report(res: dict[str, Any]) -> None:
    def fmt(v: Any) -> Any:
        return "–" if v is None else v

    for title, key in (("Memory search by pairing (question → answers' language) and size", "by_pairing_size"),
                       ("… by pairing, all sizes", "by_pairing"), ("… by question kind", "by_kind"),
                       ("… by store", "by_store")):
        rows = []
        for g, m in res[key].items():
            if m["n"]:
                lo, hi = m["vs_best_R@5_interval"]
                rows.append([g, m["n"], *[m[f"{s}:R@5"] for s in SYSTEMS], m["memlane:R@10"],
                             f"{m['memlane:R@5'] - m[m['best_baseline'] + ':R@5']:+.3f} [{lo:+.3f},{hi:+.3f}]",
                             fmt(m["answer_above_floor"]), f"{fmt(m['none_clean'])} ({m['none_n']})"])
            elif m["none_n"]:
                rows.append([g, 0, "", "", "", "", "", "", "", f"{fmt(m['none_clean'])} ({m['none_n']})"])
        console.print(table(title, ["group", "n", *[f"{s} R@5" for s in SYSTEMS], "memlane R@10",
                                    "vs best baseline R@5 [95%]", "answer ≥ floor", "no answer: clean (n)"], rows))
    console.print(table("Relevance floor: answers that reach it; questions without an answer and unrelated requests "
                        "left with nothing at or above it (stores of 50)",
                        ["floor", "answer ≥ floor", "no answer: nothing ≥ floor", "unrelated: nothing ≥ floor"],
                        [[f["floor"], f["answer_above"], f["none_clean"], f["unrelated_clean"]] for f in res["floors"]]))
    lat = res["latency_ms"]
    console.print("search latency, engine (query vector given), ms: " +
                  ", ".join(f"{size} memories p50 {v['p50']:.1f} p95 {v['p95']:.1f}" for size, v in lat.items()))
    u = res["latency_with_embedding_ms"]
    console.print(f"search latency as a user sees it (query embedded), {u['size']} memories: "
                  f"p50 {u['p50']:.1f} ms, p95 {u['p95']:.1f} ms")


def report_locomo(lo: dict[str, Any]) -> None:
    console.print(table(f"LoCoMo observations as memories: R@10 over the turns they cite ({lo['questions']} questions)",
                        ["system", "R@10"], [[s, lo[f"{s}:R@10"]] for s in SYSTEMS]))
    a, b = lo["vs_best_R@10_interval"]
    console.print(f"memlane − best baseline, 95 % paired interval: [{a:+.3f}, {b:+.3f}]")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,500,5000", help="memories per user, comma-separated")
    ap.add_argument("--langs", default="en,zh,mixed", help="store languages: en, zh, mixed")
    ap.add_argument("--profiles", type=int, default=None, help="only the first N profiles")
    ap.add_argument("--big-profiles", type=int, default=6, help="profiles that get the stores above 500")
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--no-locomo", action="store_true", help="skip LoCoMo's observations")
    ap.add_argument("--locomo-limit", type=int, default=None, help="only the first N LoCoMo conversations")
    ap.add_argument("--search", default="{}", help="search config overrides, JSON (for studies)")
    ap.add_argument("--data", default=str(DATA), help="folder of profile files")
    ap.add_argument("--keep", default=None, help="build the stores in this folder and reuse them next time "
                    "(ranking studies; the data must not change in between)")
    ap.add_argument("--show-misses", type=int, default=0, metavar="N",
                    help="print N questions memlane misses at R@5 in the stores above 50, with the hits above "
                         "their answers (to read which of those are other profiles' facts that answer as worded)")
    ap.add_argument("--out", default="memories")
    args = ap.parse_args(argv)
    search = json.loads(args.search)
    probe = Memory(Config.load(store={"home": str(temp_home("memlane-probe-"))},
                               embedding={"provider": args.embedder, "background": False}))
    model = probe.embedder.model_id
    probe.close()
    cached = load_cache(model)
    sizes = [int(s) for s in args.sizes.split(",")]
    misses: list[str] = []
    res = run(sizes, args.langs.split(","), args.profiles, args.big_profiles, args.embedder, cached, search,
              Path(args.data), Path(args.keep) if args.keep else None, misses)
    save_cache(model, cached)
    for miss in random.Random(0).sample(misses, min(args.show_misses, len(misses))):
        console.print(miss, markup=False)
    report(res)
    out: dict[str, Any] = {"embedder": model, "search": search, "memories": res}
    if not args.no_locomo:
        out["locomo_observations"] = lo = run_locomo_observations(args.embedder, cached, args.locomo_limit, search)
        save_cache(model, cached)
        report_locomo(lo)
    path = write_result(args.out, out)
    console.print(f"wrote {path}")
    return out


if __name__ == "__main__":
    main()
