"""The write path, scored: which facts a conversation leaves behind as memories (issue 29).

Each labelled conversation (bench/data/extraction/: dev.json, holdout.json … holdout7.json, see
the README there) runs through the engine as a user's app would run it: a fresh `Memory` on a
temporary SQLite directory, the clock at the conversation's date, the turns added as one
session, the session ended (so the real pipeline runs: the user's remember/forget commands,
the extractor, the merge with its dedup), then the scope's active memories are listed and
scored:

  recall      required facts matched by at least one memory / required facts
  precision   memories matching a required or optional fact / memories
  junk        junk memories / memories, where a memory is junk when it comes from a
              "nothing" conversation (small talk, questions) and matches none of its optional
              facts, or when it matches no fact and is mangled (`mangled`: it ends on a
              dangling word such as "and" / "和", or says less than two words about the user)
  wrong dur.  memories whose expires_at suits none of the required facts they match: before
              the fact's keep_until (gone while still true), or after its expire_by when given
              (kept long past its use) / memories matching a required fact

A memory matches a fact when each of the fact's `match` groups has an alternative that is a
case-insensitive substring of the memory's content.

Offline (default) the engine has no LLM, so the heuristic extractor runs; the embedder is
the hash one (`embedding.provider = "hash"`): extraction needs no e5, and dedup then uses
the hash embedder's threshold (`policy.dedup_similarity`). `--embedder e5` runs with the
default embedder instead. `--llm` runs the LLM extractor through the engine's own HTTP
client on the server MEMLANE_LLM_BASE_URL names (MEMLANE_LLM_MODEL, MEMLANE_LLM_API_KEY).

For comparison: HaluMem (arXiv 2511.03506) measured Mem0 keeping 42.9 % of the facts it
should and Supermemory 41.5 %.

    .venv/bin/python bench/extraction.py                    # every split, offline
    .venv/bin/python bench/extraction.py --split dev --show 20
    .venv/bin/python bench/extraction.py --split holdout3   # written apart, never tuned on
    .venv/bin/python bench/extraction.py --split holdout4   # written apart later, read in the round after
    .venv/bin/python bench/extraction.py --split holdout5   # written apart later still, read in the round after
    .venv/bin/python bench/extraction.py --split holdout6
    .venv/bin/python bench/extraction.py --split holdout7   # written apart last, not read while tuning
    MEMLANE_LLM_BASE_URL=http://127.0.0.1:8080/v1 .venv/bin/python bench/extraction.py --llm
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import Timer, console, llm_only, llm_settings, table, write_result  # noqa: E402

from memlane import Config, Memory  # noqa: E402
from memlane.testing import HashEmbedder, ManualClock  # noqa: E402

DATA = Path(__file__).parent / "data" / "extraction"
SPLITS = ("dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5", "holdout6", "holdout7", "holdout8", "holdout9", "holdout10", "holdout11", "holdout12", "holdout13", "holdout14", "holdout15", "holdout16", "holdout17", "holdout18")
USER = "bench"
SESSION = "s1"
HALUMEM = {"Mem0": 0.429, "Supermemory": 0.415}  # HaluMem, arXiv 2511.03506: facts kept


# ---- data -------------------------------------------------------------------------------


def load(split: str, data_dir: Path = DATA) -> list[dict[str, Any]]:
    """The conversations of one split."""
    path = data_dir / f"{split}.json"
    convs = json.loads(path.read_text(encoding="utf-8"))["conversations"]
    for conv in convs:
        conv.setdefault("facts", [])
        conv.setdefault("optional", [])
    return list(convs)


def conversation_time(conv: Mapping[str, Any]) -> datetime:
    """The conversation's date, in UTC when it names no zone."""
    at = datetime.fromisoformat(str(conv["date"]))
    return at if at.tzinfo else at.replace(tzinfo=UTC)


# ---- matching ---------------------------------------------------------------------------


def matches(content: str, fact: Mapping[str, Any]) -> bool:
    """Every `match` group of the fact has an alternative inside the content (any case)."""
    text = content.casefold()
    groups = fact.get("match") or []
    return bool(groups) and all(any(str(alt).casefold() in text for alt in group) for group in groups)


# a memory that stops on one of these was cut mid-thought ("The user's name is Ming and.")
_DANGLING_EN = re.compile(r"\b(?:and|or|but|so|because|also|to|of|the|a|an|at|in|on|for|with|as|is|are|was|"
                          r"my|his|her|their|that|which|who)$", re.I)
_DANGLING_ZH = re.compile(r"(?:和|跟|与|也|还|而且|并且|但是|但|所以|因为|的|在|对|把|被|是|了吗|吗)$")
_ABOUT_USER = re.compile(r"^(?:the user(?:'s)?|用户(?:的)?)\s*", re.I)
_WORD = re.compile(r"[A-Za-z0-9]+(?:'[a-z]+)?|[\u4e00-\u9fff]")


def mangled(content: str) -> bool:
    """A memory cut or emptied by its extractor: it ends on a dangling word, or says fewer
    than two words (a CJK character counts as one) besides naming the user."""
    text = content.strip().rstrip("。.!！?？;；,，:： ")
    if _DANGLING_EN.search(text) or _DANGLING_ZH.search(text):
        return True
    return len(_WORD.findall(_ABOUT_USER.sub("", text))) < 2


# ---- one conversation through the engine ------------------------------------------------


@dataclass
class Kept:
    """One memory the engine kept for a conversation, and what it matched."""

    content: str
    expires_at: datetime | None
    category: str
    facts: list[str] = field(default_factory=list)  # required facts matched
    optional: list[str] = field(default_factory=list)  # optional facts matched


def engine_config(home: str, *, profile: str = "default", embedder: str = "hash",
                  llm_env: Mapping[str, str] | None = None) -> Config:
    """The config a user's app would have: offline (no LLM) unless `llm_env` holds the
    MEMLANE_LLM_* settings; extraction run in the caller so its result can be read at once."""
    return Config.load(profile, env=llm_only(llm_env), store={"home": home},
                       embedding={"provider": embedder, "background": False},
                       extraction={"wait_for_llm": True})


def run_conversation(conv: Mapping[str, Any], *, profile: str = "default", embedder: str = "hash",
                     llm_env: Mapping[str, str] | None = None) -> list[Kept]:
    """The active memories a conversation leaves, run end to end as an app would."""
    with tempfile.TemporaryDirectory(prefix="memlane-extraction-") as home:
        cfg = engine_config(home, profile=profile, embedder=embedder, llm_env=llm_env)
        mem = Memory(cfg, clock=ManualClock(conversation_time(conv)),
                     embedder=HashEmbedder(cfg.embedding.dimensions) if embedder == "hash" else None)
        try:
            turns = [{"role": t["role"], "content": t["content"]} for t in conv["turns"]]
            mem.add_messages(SESSION, turns, user_id=USER)
            mem.end_session(SESSION, user_id=USER)
            records = mem.list(user_id=USER, status="active")
        finally:
            mem.close()
    kept = []
    for r in records:
        k = Kept(r.content, r.expires_at, r.category)
        k.facts = [f["id"] for f in conv["facts"] if matches(r.content, f)]
        k.optional = [f["id"] for f in conv["optional"] if matches(r.content, f)]
        kept.append(k)
    return kept


# ---- scoring ----------------------------------------------------------------------------


def _day(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


def wrong_duration(kept: Kept, facts: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the memory's expiry suits none of the required facts it matches, or None. A
    memory that holds two facts ("我和男朋友阿杰下个月要去日本玩": a trip and who 阿杰 is) is
    judged by the one its lifetime serves: the other needs a memory of its own to be kept."""
    until = kept.expires_at.astimezone(UTC).date() if kept.expires_at else None
    reasons = []
    for f in facts:
        if f["id"] not in kept.facts:
            continue
        keep, drop = _day(f.get("keep_until")), _day(f.get("expire_by"))
        if keep is not None and until is not None and until < keep:
            reasons.append(f"expires {until} before {f['id']}'s keep_until {keep}")
        elif drop is not None and (until is None or until > drop):
            reasons.append(f"expires {until or 'never'}, after {f['id']}'s expire_by {drop}")
        else:
            return None
    return "; ".join(reasons) or None


@dataclass
class Tally:
    conversations: int = 0
    facts: int = 0
    found: int = 0
    memories: int = 0
    correct: int = 0
    junk: int = 0
    matched: int = 0  # memories matching a required fact
    wrong: int = 0

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def metrics(self) -> dict[str, float | int]:
        return {
            "conversations": self.conversations, "facts": self.facts, "memories": self.memories,
            "recall": self.found / self.facts if self.facts else 0.0,
            "precision": self.correct / self.memories if self.memories else 0.0,
            "junk": self.junk / self.memories if self.memories else 0.0,
            "wrong_durations": self.wrong / self.matched if self.matched else 0.0,
        }


@dataclass
class Outcome:
    """One conversation's memories and what they made of its facts."""

    conv: Mapping[str, Any]
    kept: list[Kept]
    tally: Tally
    missed: list[Mapping[str, Any]]  # required facts no memory matched
    unmatched: list[Kept]  # memories matching no fact
    junk: list[Kept]
    wrong: list[tuple[Kept, str]]


def score(conv: Mapping[str, Any], kept: Sequence[Kept]) -> Outcome:
    facts = conv["facts"]
    nothing = conv.get("kind") == "nothing"
    t = Tally(conversations=1, facts=len(facts), memories=len(kept))
    found = {fid for k in kept for fid in k.facts}
    t.found = sum(1 for f in facts if f["id"] in found)
    t.correct = sum(1 for k in kept if k.facts or k.optional)
    unmatched = [k for k in kept if not (k.facts or k.optional)]
    junk = [k for k in kept if (nothing and not k.optional) or (not (k.facts or k.optional) and mangled(k.content))]
    t.junk = len(junk)
    wrong = [(k, why) for k in kept if k.facts and (why := wrong_duration(k, facts)) is not None]
    t.matched = sum(1 for k in kept if k.facts)
    t.wrong = len(wrong)
    return Outcome(conv, list(kept), t, [f for f in facts if f["id"] not in found], unmatched, junk, wrong)


def summarise(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float | int]]:
    """Metrics per language and overall."""
    by: dict[str, Tally] = {}
    total = Tally()
    for o in outcomes:
        by.setdefault(str(o.conv.get("lang", "?")), Tally()).add(o.tally)
        total.add(o.tally)
    return {**{lang: by[lang].metrics() for lang in sorted(by)}, "all": total.metrics()}


def run(convs: Sequence[Mapping[str, Any]], *, profile: str = "default", embedder: str = "hash",
        llm_env: Mapping[str, str] | None = None) -> list[Outcome]:
    """Every conversation through the engine, scored."""
    return [score(c, run_conversation(c, profile=profile, embedder=embedder, llm_env=llm_env)) for c in convs]


# ---- report -----------------------------------------------------------------------------

COLUMNS = ["split / lang", "convs", "facts", "memories", "recall", "precision", "junk", "wrong dur."]


def _rows(split: str, summary: Mapping[str, Mapping[str, float | int]]) -> list[list[Any]]:
    return [[f"{split} / {lang}", m["conversations"], m["facts"], m["memories"], m["recall"], m["precision"],
             m["junk"], m["wrong_durations"]] for lang, m in summary.items()]


def show(split: str, outcomes: Sequence[Outcome], n: int) -> None:
    """The first `n` missed facts, unmatched memories and wrong durations of a split."""
    missed = [(o.conv["id"], f["id"], f["text"]) for o in outcomes for f in o.missed]
    extra = [(o.conv["id"], k.content, "junk" if k in o.junk else "") for o in outcomes for k in o.unmatched]
    extra += [(o.conv["id"], k.content, "junk") for o in outcomes for k in o.junk if k not in o.unmatched]
    wrong = [(o.conv["id"], k.content, why) for o in outcomes for k, why in o.wrong]
    console.print(f"\n[bold]{split}: facts missed ({len(missed)})[/bold]")
    for cid, fid, text in missed[:n]:
        console.print(f"  {cid} {fid}: {text}", markup=False)
    console.print(f"[bold]{split}: memories matching no fact ({len(extra)})[/bold]")
    for cid, content, mark in extra[:n]:
        console.print(f"  {cid}: {content} {'[' + mark + ']' if mark else ''}", markup=False)
    console.print(f"[bold]{split}: wrong durations ({len(wrong)})[/bold]")
    for cid, content, why in wrong[:n]:
        console.print(f"  {cid}: {content} — {why}", markup=False)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    ap.add_argument("--data", type=Path, default=DATA, help="directory holding dev.json and holdout.json to holdout7.json")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--embedder", choices=["hash", "e5"], default="hash")
    ap.add_argument("--llm", action="store_true", help="the LLM extractor on MEMLANE_LLM_BASE_URL")
    ap.add_argument("--show", type=int, default=0, metavar="N", help="print the first N misses of each kind")
    args = ap.parse_args(argv)
    settings = llm_settings() if args.llm else None
    if args.llm and settings is None:
        return 2
    splits = SPLITS if args.split == "all" else (args.split,)
    rows: list[list[Any]] = []
    results: dict[str, Any] = {}
    for split in splits:
        if not (args.data / f"{split}.json").exists():
            console.print(f"{args.data / (split + '.json')}: not found, skipped")
            continue
        convs = load(split, args.data)
        with Timer() as timer:
            outcomes = run(convs, profile=args.profile, embedder=args.embedder, llm_env=settings)
        summary = summarise(outcomes)
        rows += _rows(split, summary)
        results[split] = {"metrics": summary, "seconds": round(timer.seconds, 2),
                          "missed": [[o.conv["id"], f["id"]] for o in outcomes for f in o.missed],
                          "unmatched": [[o.conv["id"], k.content] for o in outcomes for k in o.unmatched],
                          "wrong_durations": [[o.conv["id"], k.content, why] for o in outcomes for k, why in o.wrong]}
        if args.show:
            show(split, outcomes, args.show)
    extractor = "llm" if settings else "heuristic"
    console.print(table(f"Extraction ({extractor}, profile {args.profile}, embedder {args.embedder})", COLUMNS, rows))
    console.print("HaluMem (arXiv 2511.03506), facts kept: "
                  + ", ".join(f"{name} {share:.1%}" for name, share in HALUMEM.items()))
    if results:
        name = "extraction" if extractor == "heuristic" else "extraction-llm"
        path = write_result(name, {"extractor": extractor, "profile": args.profile, "embedder": args.embedder,
                                   "model": (settings or {}).get("MEMLANE_LLM_MODEL"), "halumem": HALUMEM,
                                   **results})
        console.print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
