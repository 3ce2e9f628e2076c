"""Facts that change (issue 32): is the current value found, the old one kept and findable, and no
old value passed off as current?

The dev set (`bench/data/changes/`, hand-written, see its README) holds 24 conversations (12
English, 12 Chinese) in which some of the user's facts change, each slot's values with the turns
that state them and, in both languages, the memory an extractor would write for each; and 168
questions asked after the last session: the current value, an earlier one, when it changed, how
long it held, how many times it changed.

**Memory level.** Per conversation, per store language (en, zh, mixed: each memory in one of the
two) and size (50, 500), one user's store as an engine that understood the changes would hold
it: each slot's first value added, every later one by `Memory.supersede` (the clock at the
session where it was told, `valid_from` its labelled start), the facts that never change added
plainly, and distractors to reach the size (LoCoMo's observations in English; in Chinese, the
memory dev set's facts told of named other people, see `zh_pool`). Every question is asked at its
`asked_at` and scored by kind:
  current   the top memory is the current value's (Hit@1); and "stale": a replaced value in the
            top 5, or in `build_context(query=…)`'s injected memories (memlane only)
  past      the asked value's memory in the top 5 (Hit@5)
  when, duration, count
            every value the question involves (those its evidence turns state) in the top 5
            (R_all@5), and "dates": each of them also carries its start (`valid_from` on the
            labelled day) and, if it was replaced, its end (`valid_to` = its successor's start)
Baselines on the same memories and vectors: "before", memlane as it handled a change before
issue 32 (seed 001: the new memory added, the old one's score halved, nothing superseded); dense
alone; BM25; RRF(60) of the two — the last three over every memory, old and current alike.

**Turn level.** The conversations themselves through `add_messages` (session dates, no
extraction): per question, R@5 / R@10 of its evidence turns by memlane's turn search, dense, BM25
and RRF, and, for current questions with stale turns, how often a stale turn ranks above every
evidence turn (lower is better).

**LongMemEval.** The knowledge-update and temporal-reasoning questions of LongMemEval_S dev
(bench/retrieval.py's `longmemeval` set, `--categories`), memlane beside its baselines.

    python bench/changes.py                           # everything, e5
    python bench/changes.py --sizes 50 --no-longmemeval --embedder hash   # a quick look
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import console, load_cache, paired_interval, save_cache, table, temp_home, write_result  # noqa: E402
from locomo import QueryVectors  # noqa: E402
from memories import DATA as MEMORIES_DATA  # noqa: E402
from memories import locomo_observations, mixed_language, rrf, text_lang  # noqa: E402
from retrieval import bm25_ranker, dense_matrix  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.indexing import content_hash, embed_cached  # noqa: E402
from memlane.models import Message  # noqa: E402
from memlane.testing import ManualClock  # noqa: E402

DATA = Path(__file__).parent / "data" / "changes" / "changes.json"
K = 20
SIZES = (50, 500)
LANGS = ("en", "zh", "mixed")
KINDS = ("current", "past", "when", "duration", "count")
SYSTEMS = ("memlane", "before", "dense", "bm25", "rrf")
BASELINES = SYSTEMS[1:]
ENGINES = ("memlane", "before")  # the two that are memlane stores (context, dates)
TURN_SYSTEMS = ("memlane", "dense", "bm25", "rrf")
KU_TR = ("knowledge-update", "temporal-reasoning")
# whether Memory.add takes the start of a first value (later than issue 32's core); without it
# the first value is added with the clock at its start
ADD_TAKES_VALID_FROM = "valid_from" in inspect.signature(Memory.add).parameters


# ---- data -------------------------------------------------------------------------------------


@dataclass
class Value:
    key: str  # "s<slot>.v<value>"
    slot: str
    index: int
    memory: dict[str, str]  # {"en": …, "zh": …}
    stated_in: set[str]
    start: datetime  # when it began to hold (labelled, else first told; see `starts`)
    told: datetime  # the session it was first told in


@dataclass
class Conversation:
    id: str
    lang: str
    sessions: list[dict[str, Any]]
    slots: dict[str, list[Value]]  # in the order they held in the world
    questions: list[dict[str, Any]]
    dates: dict[str, datetime]  # session id → date


def when(text: str) -> datetime:
    """'2024-01-14T19:20', '2024-04-02' or '2024-04' (its first day), UTC."""
    for fmt in ("%Y-%m-%dT%H:%M", "%Y-%m-%d", "%Y-%m"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"not a date: {text!r}")


def starts(raw: list[dict[str, Any]], told: list[datetime]) -> list[datetime]:
    """Each value's start: its `from`, else the session it was first told in. A value whose
    start is unknown and was told after its successor began (en-05's Dayton, told as a memory)
    began no later than the successor: its start is brought back to that."""
    out = [when(v["from"]) if v.get("from") else t for v, t in zip(raw, told, strict=True)]
    for i in range(len(out) - 2, -1, -1):
        if out[i] > out[i + 1]:
            out[i] = out[i + 1]
    return out


def load(path: Path = DATA) -> list[Conversation]:
    out = []
    for c in json.loads(path.read_text(encoding="utf-8"))["conversations"]:
        dates = {s["id"]: when(s["date"]) for s in c["sessions"]}
        slots: dict[str, list[Value]] = {}
        for si, s in enumerate(c["slots"]):
            told = [min(dates[t.split(":")[0]] for t in v["stated_in"]) for v in s["values"]]
            slots[s["slot"]] = [Value(f"s{si}.v{vi}", s["slot"], vi, v["memory"], set(v["stated_in"]), start, t)
                                for vi, (v, start, t) in enumerate(zip(s["values"], starts(s["values"], told), told,
                                                                       strict=True))]
        out.append(Conversation(c["id"], c["lang"], c["sessions"], slots, c["questions"], dates))
    return out


def targets(conv: Conversation, q: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the memories that answer `q`, the replaced ones that must not pass for the answer).
    current: the slot's last value; past: the value whose turns are its evidence; when,
    duration, count: every value its evidence turns state. Stale: the slot's other values."""
    values = conv.slots[q["slot"]]
    evidence = set(q["evidence"])
    if q["kind"] == "current":
        wanted = [values[-1]]
    elif q["kind"] == "past":
        wanted = [max(values[:-1] or values, key=lambda v: (v.stated_in == evidence, len(v.stated_in & evidence)))]
    else:
        wanted = [v for v in values if v.stated_in & evidence] or values
    keys = [v.key for v in wanted]
    return keys, [v.key for v in values if v.key not in keys] if q["kind"] in ("current", "past") else []


# ---- stores -----------------------------------------------------------------------------------


ZH_SURNAMES = "王李张刘陈杨赵黄周吴徐孙马朱胡郭何高林罗"
ZH_GIVEN = ("明", "芳", "磊", "静", "洋", "婷", "浩", "雪", "强", "丽")


def zh_pool(path: Path = MEMORIES_DATA) -> list[str]:
    """Chinese distractors: the memory dev set's facts (bench/data/memories), each profile's told
    of a named other person ("用户住在杭州" → "王明住在杭州"). As they stand they are facts about
    *the user* — another home, another job — that would contradict the slots asked about and
    answer their questions as worded; about someone else they are what a user's store holds
    beside their own facts (friends and family), like LoCoMo's observations in English."""
    out: list[str] = []
    files = sorted(p for p in path.glob("*.json") if p.name != "unrelated.json")
    profiles = [p for f in files for p in json.loads(f.read_text(encoding="utf-8")).get("profiles", [])]
    for i, p in enumerate(profiles):
        name = ZH_SURNAMES[i % len(ZH_SURNAMES)] + ZH_GIVEN[(i // len(ZH_SURNAMES)) % len(ZH_GIVEN)]
        out += [f["zh"].replace("用户", name) for f in p["facts"]]
    return out


@dataclass
class Store:
    conv: Conversation
    lang: str  # "en", "zh" or "mixed"
    size: int
    texts: dict[str, str] = field(default_factory=dict)  # key → memory text
    lang_of: dict[str, str] = field(default_factory=dict)

    def user(self, engine: str = "memlane") -> str:
        """The store's user as `engine` ("memlane" or "before") holds it."""
        return f"{self.conv.id}-{self.lang}-{self.size}" + ("" if engine == "memlane" else f"-{engine}")


def build_store(conv: Conversation, lang: str, size: int, pools: dict[str, list[str]]) -> Store:
    """Every value of every slot, then distractors up to `size` (the pool of the store's language;
    in a mixed store each distractor's language by its key)."""
    s = Store(conv, lang, size)
    for values in conv.slots.values():
        for v in values:
            s.lang_of[v.key] = mixed_language(f"{conv.id}:{v.key}") if lang == "mixed" else lang
            s.texts[v.key] = v.memory[s.lang_of[v.key]]
    rng = random.Random(f"{conv.id}:{lang}")
    order = {k: rng.sample(range(len(p)), len(p)) for k, p in pools.items()}
    taken = {k: 0 for k in pools}
    i = 0
    while len(s.texts) < size:
        want = mixed_language(f"{conv.id}:d{i}") if lang == "mixed" else lang
        if taken.get(want, 0) >= len(pools.get(want, [])):
            want = next((k for k in pools if taken[k] < len(pools[k])), "")
            if not want:
                break  # the pools are spent: a smaller store
        s.texts[f"d{i}"] = pools[want][order[want][taken[want]]]
        s.lang_of[f"d{i}"] = want
        taken[want] += 1
        i += 1
    return s


def fill(mem: Memory, store: Store, supersede: bool) -> dict[str, str]:
    """Store `store` for its user; returns memory id → key. `supersede`: each change as issue 32
    records it; else as memlane did before (the new memory added, the old one's score halved,
    seed 001). Distractors are added on the conversation's session dates in turn."""
    clock = ManualClock(min(store.conv.dates.values()))
    mem.clock = clock
    user = store.user("memlane" if supersede else "before")
    key_of: dict[str, str] = {}
    dates = sorted(store.conv.dates.values())
    for i, key in enumerate(k for k in store.texts if k.startswith("d")):
        clock.now = dates[i % len(dates)]
        key_of[mem.add(store.texts[key], user_id=user, source="import").id] = key
    for values in store.conv.slots.values():
        prev = None
        for v in values:
            text = store.texts[v.key]
            if prev is None:  # the first value: held from its start
                if ADD_TAKES_VALID_FROM:
                    clock.now = v.told
                    rec = mem.add(text, user_id=user, source="import", valid_from=v.start)  # type: ignore[call-arg]
                else:
                    clock.now = v.start
                    rec = mem.add(text, user_id=user, source="import")
            elif supersede:
                clock.now = v.told
                rec = mem.supersede(prev.id, text, user_id=user, valid_from=v.start, actor="bench", reason=v.slot)
            else:
                clock.now = v.told
                rec = mem.add(text, user_id=user, source="import")
                old = mem.get(prev.id, user_id=user)
                mem.update(prev.id, user_id=user, score=old.score * 0.5, actor="bench", reason="contradicted")
            key_of[rec.id] = v.key
            prev = rec
    return key_of


# ---- scoring ----------------------------------------------------------------------------------


def dates_right(conv: Conversation, key: str, m: Any) -> bool:
    """Whether memory `m` (of value `key`) says when it held: its labelled start, and its end
    (its successor's start) where it was replaced. Compared by day."""
    values = conv.slots[next(s for s, vs in conv.slots.items() if any(v.key == key for v in vs))]
    i = next(j for j, v in enumerate(values) if v.key == key)
    start = m.valid_from or m.created_at
    if start.date() != values[i].start.date():
        return False
    if i == len(values) - 1:
        return True
    return m.valid_to is not None and m.valid_to.date() == values[i + 1].start.date()


def score(kind: str, ranked: list[str], wanted: list[str], stale: list[str]) -> dict[str, float]:
    if kind == "current":
        out = {"score": float(bool(ranked) and ranked[0] == wanted[0])}
    elif kind == "past":
        out = {"score": float(wanted[0] in ranked[:5])}
    else:
        out = {"score": float(set(wanted) <= set(ranked[:5]))}
    out["stale5"] = float(bool(set(stale) & set(ranked[:5])))
    return out


def rank_store(mem: Memory, keys_of: dict[str, dict[str, str]], store: Store,
               vectors: QueryVectors) -> list[dict[str, Any]]:
    """Every question of the store's conversation, ranked by memlane (supersession), memlane
    before issue 32 (`keys_of`: each one's memory id → key) and the baselines: one row per
    question."""
    conv = store.conv
    ids = list(store.texts)
    matrix = embed_cached(mem.store, mem.embedder, [store.texts[i] for i in ids])
    bm25 = bm25_ranker(store.texts)
    rows = []
    for q in conv.questions:
        wanted, stale = targets(conv, q)
        text, kind = q["question"], q["kind"]
        asked = when(q["asked_at"])
        ranked: dict[str, list[str]] = {}
        row: dict[str, Any] = {"q": q["id"], "kind": kind, "store": store.lang, "size": store.size,
                               "conv_lang": conv.lang,
                               "pairing": f"{text_lang(text)}→{'/'.join(sorted({store.lang_of[w] for w in wanted}))}"}
        mem.clock = lambda at=asked: at  # type: ignore[misc]
        for name in ENGINES:
            user = store.user(name)
            hits = mem.search(text, user_id=user, limit=K, activate=False, min_score=0.0, query_vector=vectors)
            key_of = keys_of[name]
            ranked[name] = [key_of[h.id] for h in hits]
            if kind in ("when", "duration", "count"):
                found = {key_of[h.id]: h.memory for h in hits[:5]}
                row[f"{name}:dates"] = float(all(w in found and dates_right(conv, w, found[w]) for w in wanted))
            if kind == "current" and stale:
                ctx = mem.build_context(query=text, user_id=user)
                shown = {key_of.get(h.id, "") for h in ctx.memories} | {key_of.get(m.id, "") for m in ctx.core}
                row[f"{name}:stale_injected"] = float(bool(shown & set(stale)))
                row[f"{name}:current_injected"] = float(wanted[0] in shown)
        qv = vectors(text)
        ranked["dense"] = [ids[i] for i in np.argsort(-(matrix @ qv))[:100]]
        ranked["bm25"] = bm25(text)
        ranked["rrf"] = rrf(ranked["bm25"], ranked["dense"])
        for s in SYSTEMS:
            for metric, v in score(kind, ranked[s], wanted, stale).items():
                row[f"{s}:{metric}"] = v
        row["has_stale"] = bool(stale)
        if kind == "current" and not row["memlane:score"]:
            row["miss"] = miss(conv, store, q, ranked["memlane"], wanted[0])
        rows.append(row)
    return rows


def miss(conv: Conversation, store: Store, q: dict[str, Any], ranked: list[str], wanted: str) -> dict[str, Any]:
    """What a current-value miss ranked first and where the current value was: the first is a
    replaced version of the asked slot ("replaced"), another slot's value ("other slot": its own
    current or replaced value) or a distractor."""
    slot_of = {v.key: (s, v) for s, vs in conv.slots.items() for v in vs}
    first = ranked[0] if ranked else ""
    if first in slot_of:
        s, v = slot_of[first]
        what = "replaced" if s == q["slot"] else "other slot" + ("" if v.index == len(conv.slots[s]) - 1 else
                                                                 " (replaced)")
    else:
        what = "distractor" if first else "nothing"
    return {"question": q["question"], "first": store.texts.get(first, ""), "first_is": what,
            "current": store.texts[wanted], "current_rank": ranked.index(wanted) + 1 if wanted in ranked else None}


# ---- turn level -------------------------------------------------------------------------------


def stale_first(ranked: list[str], evidence: set[str], stale: set[str]) -> float:
    """1 when a stale turn ranks above every evidence turn (an evidence turn not ranked is last)."""
    first = lambda wanted: next((i for i, t in enumerate(ranked) if t in wanted), len(ranked) + 1)  # noqa: E731
    return float(first(stale) < first(evidence))


def run_turns(convs: list[Conversation], mem: Memory, vectors: QueryVectors) -> list[dict[str, Any]]:
    rows = []
    for conv in convs:
        user = f"turns-{conv.id}"
        texts: dict[str, str] = {}
        for s in conv.sessions:
            date = conv.dates[s["id"]]
            mem.clock = lambda at=date: at  # type: ignore[misc]
            msgs = [Message(role=t["role"], content=t["text"], created_at=date + timedelta(minutes=i),
                            metadata={"turn": t["id"]}) for i, t in enumerate(s["turns"])]
            mem.add_messages(s["id"], msgs, user_id=user)
            texts.update({t["id"]: t["text"] for t in s["turns"]})
        mem.flush()
        ids, matrix = dense_matrix(mem, texts)
        bm25 = bm25_ranker(texts)
        for q in conv.questions:
            asked = when(q["asked_at"])
            mem.clock = lambda at=asked: at  # type: ignore[misc]
            hits = mem.search(q["question"], user_id=user, corpus="turns", limit=K, activate=False,
                              query_vector=vectors)
            dense = [ids[int(i)] for i in np.argsort(-(matrix @ vectors(q["question"])))[:K]]
            lexical = bm25(q["question"])
            ranked = {"memlane": [str(h.turn.metadata.get("turn")) for h in hits if h.turn is not None],
                      "dense": dense, "bm25": lexical, "rrf": rrf(lexical, dense)[:K]}
            ev, stale = set(q["evidence"]), set(q["stale"])
            row: dict[str, Any] = {"q": q["id"], "kind": q["kind"], "conv_lang": conv.lang}
            for s, r in ranked.items():
                row[f"{s}:R@5"] = len(ev & set(r[:5])) / len(ev)
                row[f"{s}:R@10"] = len(ev & set(r[:10])) / len(ev)
                if q["kind"] == "current" and stale:
                    row[f"{s}:stale_first"] = stale_first(r, ev, stale)
            rows.append(row)
    return rows


# ---- summaries --------------------------------------------------------------------------------


def mean(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if key in r]
    return float(np.mean(vals)) if vals else None


def summarise(rows: list[dict[str, Any]], group: Callable[[dict[str, Any]], list[str]],
              systems: Sequence[str] = SYSTEMS, metrics: Sequence[str] = ("score", "stale5"),
              extra: Sequence[str] = ()) -> dict[str, Any]:
    """Per group: n, each system's mean of each metric, the `extra` keys' means, and memlane
    minus the best other system on the first metric with its 95 % paired interval."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        for g in group(r):
            by[g].append(r)
    out: dict[str, Any] = {}
    first = metrics[0]
    for g, rs in by.items():
        res: dict[str, Any] = {"n": len(rs)}
        for s in systems:
            for m in metrics:
                res[f"{s}:{m}"] = mean(rs, f"{s}:{m}")
        for k in extra:
            res[k] = mean(rs, k)
        others = [s for s in systems[1:] if res[f"{s}:{first}"] is not None]
        if others and res[f"memlane:{first}"] is not None:
            best = max(others, key=lambda s: res[f"{s}:{first}"])
            res["best"] = best
            res["vs_best"] = res[f"memlane:{first}"] - res[f"{best}:{first}"]
            res["vs_best_interval"] = list(paired_interval([r[f"memlane:{first}"] for r in rs],
                                                           [r[f"{best}:{first}"] for r in rs]))
        out[g] = res
    return out


def run(sizes: Sequence[int], langs: Sequence[str], limit: int | None, embedder: str,
        cached: dict[str, np.ndarray], data: Path = DATA, pools: dict[str, list[str]] | None = None,
        turns: bool = True, search: dict[str, Any] | None = None) -> dict[str, Any]:
    """The memory level (and the turn level unless `turns` is false): per-question rows and
    their summaries. `search`: search config overrides (a study of one setting)."""
    convs = load(data)[:limit]
    if not convs:
        raise SystemExit(f"no conversations in {data}")
    if pools is None:
        pools = {"en": locomo_observations(), "zh": zh_pool()}
    stores = [build_store(c, lang, size, pools) for c in convs for lang in langs for size in sizes]
    home = temp_home("memlane-changes-")
    cfg = Config.load(store={"home": str(home)}, embedding={"provider": embedder, "background": False},
                      search=search or {})
    base = Memory(cfg)
    base.store.cache_put(base.embedder.model_id, {k: v for k, v in cached.items() if not k.startswith("q:")})
    texts = sorted({t for s in stores for t in s.texts.values()})
    t0 = time.perf_counter()
    embed_cached(base.store, base.embedder, texts)
    console.print(f"changes: {len(convs)} conversations, {len(stores)} stores, {len(texts)} distinct memories "
                  f"(embedded or cached in {time.perf_counter() - t0:.0f} s)")
    cached.update(base.store.cache_get(base.embedder.model_id, [content_hash(t) for t in texts]))
    vectors = QueryVectors(base, cached)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for s in stores:
        keys = {"memlane": fill(base, s, True), "before": fill(base, s, False)}
        rows += rank_store(base, keys, s, vectors)
    memory_s = time.perf_counter() - t0
    res: dict[str, Any] = {"conversations": len(convs), "stores": len(stores), "questions": len(rows),
                           "store_sizes": {f"{s.lang}@{s.size}": len(s.texts) for s in stores},
                           "memory_seconds": memory_s,
                           "by_kind_store_size": summarise(rows, lambda r: [f"{r['kind']} {r['store']} @{r['size']}"]),
                           "by_kind": summarise(rows, lambda r: [r["kind"], "all"]),
                           "by_kind_lang": summarise(rows, lambda r: [f"{r['kind']} ({r['conv_lang']} questions)"]),
                           "by_pairing": summarise(rows, lambda r: [f"{r['kind']} {r['pairing']}"])}
    changed = [r for r in rows if r["kind"] == "current" and r["has_stale"]]
    res["stale"] = summarise(changed, lambda r: [f"{r['store']} @{r['size']}", "all"],
                             extra=[f"{e}:{m}" for e in ENGINES for m in ("stale_injected", "current_injected")])
    timed = [r for r in rows if r["kind"] in ("when", "duration", "count")]
    res["dates"] = summarise(timed, lambda r: [r["kind"], "all"], systems=ENGINES, metrics=("dates",))
    res["rows"] = rows
    if turns:
        t0 = time.perf_counter()
        trows = run_turns(convs, base, vectors)
        res["turns"] = {
            "seconds": time.perf_counter() - t0,
            "by_kind": summarise(trows, lambda r: [r["kind"], f"{r['kind']} ({r['conv_lang']})", "all"],
                                 systems=TURN_SYSTEMS, metrics=("R@5", "R@10", "stale_first")),
            "rows": trows}
    base.close()
    return res


def longmemeval(embedder: str, cached: dict[str, np.ndarray], limit: int | None,
                categories: Sequence[str] = KU_TR) -> dict[str, Any]:
    """LongMemEval_S dev's questions of `categories` only (bench/retrieval.py's set), timed."""
    import retrieval

    path = retrieval.SETS["longmemeval"]
    if not path.exists():
        console.print(f"[yellow]longmemeval: no data at {path}; skipped[/yellow]")
        return {}
    t0 = time.perf_counter()
    res = retrieval.run_set("longmemeval", path, embedder, limit, cached, False, cold=False,
                            categories=set(categories))
    res["seconds"] = time.perf_counter() - t0
    return res


# ---- report -----------------------------------------------------------------------------------


def _f(v: Any) -> Any:
    return "–" if v is None else v


def _vs(m: dict[str, Any]) -> str:
    if "vs_best" not in m:
        return ""
    lo, hi = m["vs_best_interval"]
    return f"{m['vs_best']:+.3f} [{lo:+.3f},{hi:+.3f}] vs {m['best']}"


def _order(groups: dict[str, Any]) -> list[str]:
    def key(g: str) -> tuple[int, str]:
        head = g.split(" ", 1)[0]
        return (KINDS.index(head) if head in KINDS else len(KINDS), g)

    return sorted(groups, key=key)


def report(res: dict[str, Any], show_misses: bool = False) -> None:
    what = ("current: top memory is the current value's; past: the asked value in the top 5; when / duration / "
            "count: every value involved in the top 5 (R_all@5)")
    for title, key in ((f"Fact changes, memory level, by kind × store × size ({what})", "by_kind_store_size"),
                       ("… by kind, all stores and sizes", "by_kind"), ("… by kind and the questions' language",
                                                                         "by_kind_lang"),
                       ("… by kind and pairing (question → the answers' language)", "by_pairing")):
        g = res[key]
        console.print(table(title, ["group", "n", *SYSTEMS, "memlane − best other [95%]"],
                            [[k, g[k]["n"], *[_f(g[k][f"{s}:score"]) for s in SYSTEMS], _vs(g[k])]
                             for k in _order(g)]))
    st = res["stale"]
    console.print(table("Current questions on a fact that changed: a replaced value in the top 5 (lower is better), "
                        "and in build_context's injected memories",
                        ["store", "n", *[f"{s} top 5" for s in SYSTEMS], "memlane injected", "before injected",
                         "memlane current injected", "before current injected"],
                        [[k, m["n"], *[_f(m[f"{s}:stale5"]) for s in SYSTEMS],
                          _f(m["memlane:stale_injected"]), _f(m["before:stale_injected"]),
                          _f(m["memlane:current_injected"]), _f(m["before:current_injected"])]
                         for k, m in sorted(st.items())]))
    d = res["dates"]
    console.print(table("when / duration / count: every value involved in the top 5 and each with its dates "
                        "(start on the labelled day; end = the successor's start where replaced)",
                        ["kind", "n", "memlane", "before"],
                        [[k, m["n"], _f(m["memlane:dates"]), _f(m["before:dates"])] for k, m in d.items()]))
    if "turns" in res:
        t = res["turns"]["by_kind"]
        for metric in ("R@5", "R@10"):
            console.print(table(f"Fact changes, turn level: the evidence turns' {metric}",
                                ["questions", "n", *TURN_SYSTEMS] + (["memlane − best [95%]"] if metric == "R@5" else []),
                                [[k, t[k]["n"], *[_f(t[k][f"{s}:{metric}"]) for s in TURN_SYSTEMS]]
                                 + ([_vs(t[k])] if metric == "R@5" else []) for k in _order(t)]))
        stale = {k: m for k, m in t.items() if m["memlane:stale_first"] is not None}
        console.print(table("… current questions on a fact that changed: a stale turn above every evidence turn "
                            "(lower is better)", ["questions", *TURN_SYSTEMS],
                            [[k, *[_f(m[f"{s}:stale_first"]) for s in TURN_SYSTEMS]] for k, m in sorted(stale.items())]))
    if show_misses:
        misses = [r for r in res["rows"] if "miss" in r]
        console.print(table(f"current-value misses ({len(misses)})",
                            ["question", "store", "size", "first is", "first", "current", "its rank"],
                            [[f"{r['q']} {r['miss']['question']}", r["store"], r["size"], r["miss"]["first_is"],
                              r["miss"]["first"], r["miss"]["current"], _f(r["miss"]["current_rank"])]
                             for r in misses]))
        causes: dict[str, int] = defaultdict(int)
        for r in misses:
            causes[r["miss"]["first_is"]] += 1
        console.print("misses by what ranked first: " + ", ".join(f"{k} {n}" for k, n in sorted(causes.items())))
    console.print(f"memory level: {res['stores']} stores × 2 engines built and asked in {res['memory_seconds']:.0f} s"
                  + (f"; turn level {res['turns']['seconds']:.0f} s" if "turns" in res else ""))


def report_longmemeval(res: dict[str, Any]) -> None:
    import retrieval

    if not res:
        return
    systems = res["systems"]
    cats = list(systems["memlane"]["by_category"])
    for c in cats:
        n = systems["memlane"]["by_category"][c]["n"]
        console.print(table(f"LongMemEval_S dev, {c} ({n} questions)", ["system", *retrieval.COLUMNS],
                            [[s, *[v["by_category"][c][m] for m in retrieval.COLUMNS]]
                             for s, v in systems.items() if c in v["by_category"]]))
    retrieval.report("longmemeval (knowledge-update + temporal-reasoning)", res)
    console.print(f"longmemeval KU + TR: {res['conversations']} conversations, {res['turns']} turns, "
                  f"{res['seconds']:.0f} s in all (embedding {res['embed_seconds']:.0f} s)")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="memories per store, comma-separated")
    ap.add_argument("--langs", default=",".join(LANGS), help="store languages: en, zh, mixed")
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--no-turns", action="store_true", help="skip the turn level")
    ap.add_argument("--no-longmemeval", action="store_true", help="skip LongMemEval's KU / TR questions")
    ap.add_argument("--longmemeval-limit", type=int, default=None,
                    help="only the first N of LongMemEval's KU / TR conversations (one question each)")
    ap.add_argument("--search", default="{}", help="search config overrides, JSON (a study of one setting)")
    ap.add_argument("--show-misses", action="store_true",
                    help="list every current-value question memlane missed: what ranked first, where the answer was")
    ap.add_argument("--out", default="changes")
    args = ap.parse_args(argv)
    probe = Memory(Config.load(store={"home": str(temp_home("memlane-probe-"))},
                               embedding={"provider": args.embedder, "background": False}))
    model = probe.embedder.model_id
    probe.close()
    cached = load_cache(model)
    res = run([int(s) for s in args.sizes.split(",")], args.langs.split(","), args.limit, args.embedder, cached,
              Path(args.data), turns=not args.no_turns, search=json.loads(args.search))
    save_cache(model, cached)
    report(res, args.show_misses)
    out: dict[str, Any] = {"embedder": model, "changes": res}
    if not args.no_longmemeval:
        out["longmemeval_ku_tr"] = lme = longmemeval(args.embedder, cached, args.longmemeval_limit)
        save_cache(model, cached)
        report_longmemeval(lme)
    path = write_result(args.out, out)
    console.print(f"wrote {path}")
    return out


if __name__ == "__main__":
    main()
