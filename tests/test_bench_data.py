"""The committed MemoryBank dev sets: they load through bench/locomo.py, every evidence id
names a turn of its conversation, and the converter rebuilds them byte for byte from the raw
data (../shared/bench/memorybank, or $MEMLANE_MEMORYBANK) and the label files."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memlane import Memory
from memlane.importers import locomo_sessions

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
RAW = Path(os.environ.get("MEMLANE_MEMORYBANK", ROOT.parent / "shared" / "bench" / "memorybank"))
DEV_FILES = sorted(DATA.glob("memorybank_*_dev.json"))
LANGS = [p.name.split("_")[1] for p in DEV_FILES]
needs_raw = pytest.mark.skipif(not (RAW / "memory_bank_cn.json").exists(),
                               reason=f"raw MemoryBank data not at {RAW} (set MEMLANE_MEMORYBANK)")


def _module(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def locomo() -> ModuleType:
    return _module("bench_locomo", ROOT / "bench" / "locomo.py")


def converter() -> ModuleType:
    return _module("bench_convert_memorybank", DATA / "convert_memorybank.py")


def test_the_chinese_set_is_committed() -> None:
    assert "cn" in LANGS


@pytest.mark.parametrize("path", DEV_FILES, ids=LANGS)
def test_dev_set_loads_through_the_locomo_bench(path: Path) -> None:
    bench = locomo()
    convs = bench.load(path)
    assert len(convs) == 15
    labels = json.loads((DATA / f"memorybank_labels_{path.name.split('_')[1]}.json").read_text(encoding="utf-8"))
    kept = [q for q in labels["questions"] if q["category"] != "unanswerable"]
    n_questions = 0
    for _, conv in convs:
        turns = bench.turn_texts(conv)
        sessions = locomo_sessions(conv)  # the importer's checks: dates, speakers, turn shape
        assert sum(len(s.messages) for s in sessions) == len(turns)
        qs = bench.questions(conv)
        assert len(qs) == len(conv["qa"]), "a question lost its evidence in the bench's parser"
        for q in qs:
            assert q["evidence"] <= set(turns), f"{q['question']}: {q['evidence'] - set(turns)} not a turn"
            assert q["category"] in {"single", "temporal", "assistant"}
        n_questions += len(qs)
    assert n_questions == len(kept)
    summary = bench.summarise([{"category": q["category"], "R@10": 1.0} for _, c in convs for q in bench.questions(c)])
    assert set(summary["by_category"]) == {q["category"] for q in kept}


def test_evidence_turns_are_found_in_a_memory(make_memory: Callable[..., Memory]) -> None:
    """The file's turns import with their dia_ids, so the bench can score what search returns."""
    bench = locomo()
    _, conv = bench.load(DATA / "memorybank_cn_dev.json")[0]
    mem = make_memory()
    mem.import_conversations(locomo_sessions(conv), user_id="u")
    q = bench.questions(conv)[0]
    hits = mem.search(q["question"], user_id="u", corpus="turns", limit=200, activate=False)
    ranked = {str(h.turn.metadata.get("dia_id")) for h in hits if h.turn is not None}
    assert q["evidence"] <= ranked


@needs_raw
@pytest.mark.parametrize("lang", LANGS)
def test_converter_reproduces_the_committed_file(lang: str) -> None:
    conv = converter()
    data = conv.convert(RAW, DATA / f"memorybank_labels_{lang}.json", lang)
    assert conv.dumps(data) == (DATA / f"memorybank_{lang}_dev.json").read_text(encoding="utf-8")


@needs_raw
@pytest.mark.parametrize("break_it, message", [
    (lambda qs: qs[0]["evidence"].append("D99:1"), "not in the conversation"),
    (lambda qs: qs.pop(), "without a label"),
    (lambda qs: qs.append(dict(qs[0])), "labelled twice"),
    (lambda qs: qs[0].update(question="?"), "differs from the probing file"),
    (lambda qs: qs[0].update(category="multi"), "is not one of"),
])
def test_converter_refuses_bad_labels(tmp_path: Path, break_it: Callable[[list[dict[str, Any]]], Any],
                                      message: str) -> None:
    labels = json.loads((DATA / "memorybank_labels_cn.json").read_text(encoding="utf-8"))
    break_it(labels["questions"])
    bad = tmp_path / "labels.json"
    bad.write_text(json.dumps(labels, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        converter().convert(RAW, bad, "cn")


def test_the_bench_tells_one_question_from_a_difference() -> None:
    """The versus-baseline table's intervals: losing one question of 40 to the best baseline
    is within what another draw of questions could undo; winning half of them is not."""
    bench = _module("bench_retrieval", ROOT / "bench" / "retrieval.py")
    n = 40
    worse = [{"category": "x", **dict.fromkeys(bench.COLUMNS, 1.0)} for _ in range(n)]
    rows = {"memlane": [dict(r, **{"S_any@5": 0.0 if i == 0 else 1.0, "R@10": 1.0 if i % 2 else 0.5})
                        for i, r in enumerate(worse)],
            bench.RRF: [dict(r, **{"R@10": 0.5}) for r in worse],  # the best baseline on S_any@5 …
            bench.BM25: [dict(r, **{"S_any@5": 0.0, "R@10": 0.5}) for r in worse]}  # … not this one
    systems = {s: bench.summarise(rs) for s, rs in rows.items()}
    gaps, spans = bench.versus_baselines(systems), bench.versus_intervals(rows, systems)
    assert set(spans) == {"all", "x"}
    assert gaps["all"]["S_any@5"] == pytest.approx(-1 / n)
    low, high = spans["all"]["S_any@5"]
    assert low < 0 <= high
    low, high = spans["all"]["R@10"]  # memlane +0.25 over both, on every other question
    assert 0 < low < 0.25 < high
