"""MemoryBank (SiliconFriend) chats + our evidence labels → a LoCoMo-layout dev set.

One conversation per user, one session per date with chat (in date order), each query/response pair
two turns: the user's (speaker = the user's name) and the assistant's. Pair i of session N
becomes dia_ids "DN:2i+1" (user) and "DN:2i+2" (assistant). Each labelled probing question
becomes a `qa` item; questions labelled `unanswerable` are left out. Deterministic: the same
raw data and labels give the same bytes.

    python bench/data/convert_memorybank.py --lang cn
    python bench/data/convert_memorybank.py --lang en --raw ../shared/bench/memorybank
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The raw data sits beside the repo (../shared/bench/memorybank); MEMLANE_MEMORYBANK overrides.
DEFAULT_RAW = Path(os.environ.get("MEMLANE_MEMORYBANK", HERE.parents[1] / ".." / "shared" / "bench" / "memorybank"))
ASSISTANT = {"cn": "AI伴侣", "en": "AI Companion"}  # what the assistant calls itself in each half
CATEGORIES = ("single", "temporal", "assistant")
UNANSWERABLE = "unanswerable"
# MemoryBank has dates only; noon keeps every turn on its date in any time zone.
TIME_OF_DAY = "12:00 pm"


def locomo_date(day: str) -> str:
    """'2023-04-27' → '12:00 pm on 27 April, 2023' (LoCoMo's session date format)."""
    d = date.fromisoformat(day)
    return f"{TIME_OF_DAY} on {d.day} {d.strftime('%B')}, {d.year}"


def load_raw(raw: Path, lang: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    chats = json.loads((raw / f"memory_bank_{lang}.json").read_text(encoding="utf-8"))
    probes: dict[str, list[str]] = {}
    for line in (raw / f"probing_questions_{lang}.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            probes.update(json.loads(line))
    return chats, probes


def sessions(user: dict[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """The user's dates in order; a date without any chat (one in the English half) is no session."""
    return [(day, pairs) for day, pairs in sorted(user["history"].items()) if pairs]


def conversation(name: str, user: dict[str, Any], assistant: str) -> dict[str, Any]:
    conv: dict[str, Any] = {"speaker_a": name, "speaker_b": assistant}
    for n, (day, pairs) in enumerate(sessions(user), start=1):
        turns = []
        for i, pair in enumerate(pairs):
            turns.append({"speaker": name, "dia_id": f"D{n}:{2 * i + 1}", "text": pair["query"]})
            turns.append({"speaker": assistant, "dia_id": f"D{n}:{2 * i + 2}", "text": pair["response"]})
        conv[f"session_{n}_date_time"] = locomo_date(day)
        conv[f"session_{n}"] = turns
    return conv


def check_labels(labels: list[dict[str, Any]], probes: dict[str, list[str]],
                 ids: dict[str, set[str]]) -> None:
    """Every probing question labelled exactly once, with its own text, known ids and category."""
    seen: set[tuple[str, int]] = set()
    for lab in labels:
        key = (lab["user"], int(lab["index"]))
        where = f"label {key}"
        if key in seen:
            raise ValueError(f"{where}: labelled twice")
        seen.add(key)
        asked = probes.get(lab["user"], [])
        if key[1] >= len(asked) or asked[key[1]] != lab["question"]:
            raise ValueError(f"{where}: question text differs from the probing file")
        if lab["category"] == UNANSWERABLE:
            if lab["evidence"]:
                raise ValueError(f"{where}: an unanswerable question has no evidence")
            continue
        if lab["category"] not in CATEGORIES:
            raise ValueError(f"{where}: category {lab['category']!r} is not one of {CATEGORIES}")
        if not lab["evidence"]:
            raise ValueError(f"{where}: no evidence (label it {UNANSWERABLE!r} instead)")
        missing = [e for e in lab["evidence"] if e not in ids[lab["user"]]]
        if missing:
            raise ValueError(f"{where}: evidence {missing} not in the conversation")
    unlabelled = [(u, i) for u, qs in probes.items() for i in range(len(qs)) if (u, i) not in seen]
    if unlabelled:
        raise ValueError(f"probing questions without a label: {unlabelled}")


def convert(raw: Path, labels_path: Path, lang: str) -> list[dict[str, Any]]:
    chats, probes = load_raw(raw, lang)
    labels = json.loads(labels_path.read_text(encoding="utf-8"))["questions"]
    # English user keys carry stray spaces (' Jason '); the probing file has them stripped
    names = {key: key.strip() for key in chats}
    convs = {names[k]: conversation(names[k], chats[k], ASSISTANT[lang]) for k in chats}
    ids = {name: {t["dia_id"] for k, v in c.items() if k.startswith("session_") and isinstance(v, list) for t in v}
           for name, c in convs.items()}
    check_labels(labels, probes, ids)
    out = []
    for n, name in enumerate(convs):
        qa = [{"question": lab["question"], "answer": lab["answer"], "evidence": list(lab["evidence"]),
               "category": lab["category"]}
              for lab in labels if lab["user"] == name and lab["category"] != UNANSWERABLE]
        out.append({"sample_id": f"memorybank-{lang}-{n:02d}", "conversation": convs[name], "qa": qa})
    return out


def dumps(data: list[dict[str, Any]]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", choices=sorted(ASSISTANT), default="cn")
    ap.add_argument("--raw", type=Path, default=DEFAULT_RAW, help="folder with memory_bank_*.json and probing_questions_*.jsonl")
    ap.add_argument("--labels", type=Path, default=None, help="default: bench/data/memorybank_labels_LANG.json")
    ap.add_argument("--out", type=Path, default=None, help="default: bench/data/memorybank_LANG_dev.json")
    args = ap.parse_args(argv)
    labels = args.labels or HERE / f"memorybank_labels_{args.lang}.json"
    out = args.out or HERE / f"memorybank_{args.lang}_dev.json"
    data = convert(args.raw, labels, args.lang)
    out.write_text(dumps(data), encoding="utf-8")
    print(f"wrote {out}: {len(data)} conversations, {sum(len(c['qa']) for c in data)} questions")


if __name__ == "__main__":
    main()
