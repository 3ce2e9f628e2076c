"""bench/memories.py, the memory-level bench (issue 29): stores built as described, questions
paired by language, and the metrics and floor study computed from what the engine returned."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import memories  # noqa: E402


def profile(pid: str, facts: list[tuple[str, str]], questions: list[dict[str, object]]) -> dict[str, object]:
    return {"id": pid, "facts": [{"id": f"{pid}.f{i}", "en": en, "zh": zh} for i, (en, zh) in enumerate(facts)],
            "questions": questions}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    a = profile("a", [("The user keeps bees.", "用户养蜜蜂。"), ("The user plays chess.", "用户下国际象棋。"),
                      ("The user's sister is Anna.", "用户的妹妹叫安娜。")],
                [{"id": "a.q0", "kind": "direct", "en": "Does the user keep bees?", "zh": "用户养蜜蜂吗？", "answers": ["a.f0"]},
                 {"id": "a.q1", "kind": "none", "en": "What car does the user drive?", "zh": "用户开什么车？", "answers": []}])
    b = profile("b", [("The user likes jazz.", "用户喜欢爵士乐。"), ("The user runs daily.", "用户每天跑步。")],
                [{"id": "b.q0", "kind": "direct", "en": "What music does the user like?", "zh": "用户喜欢什么音乐？",
                  "answers": ["b.f0"]}])
    (tmp_path / "p.json").write_text(json.dumps({"profiles": [a, b]}), encoding="utf-8")
    (tmp_path / "unrelated.json").write_text(json.dumps({"unrelated": [{"en": "What is 2 plus 2?", "zh": "二加二等于几？"}]}),
                                             encoding="utf-8")
    return tmp_path


def test_stores_and_pairings(data: Path) -> None:
    profiles = memories.load_profiles(data)
    stores = memories.build_stores(profiles, [4, 50], ["en", "mixed"], 0, ["An observation."])
    small = next(s for s in stores if s.user == "a-en-4")
    assert list(small.texts)[:3] == ["a.f0", "a.f1", "a.f2"] and len(small.texts) == 4  # its own, then another's
    assert all(small.lang_of[k] == "en" for k in small.texts)
    mixed = next(s for s in stores if s.user == "a-mixed-50")
    assert {mixed.lang_of[k] for k in mixed.texts} == {"en", "zh"}
    assert list(mixed.texts)[-1] == "locomo0" and len(mixed.texts) == 6  # all there is, observations last
    facts = {i: f for p in profiles for i, f in p.facts.items()}
    assert all(mixed.texts[k] == facts[k][mixed.lang_of[k]] for k in list(mixed.texts)[:-1])
    asked = memories.questions_of(small, memories.load_unrelated(data))
    assert ("a.q0:zh", "用户养蜜蜂吗？", ["a.f0"], "direct") in asked and ("unrelated0:en", "What is 2 plus 2?", [],
                                                                         "unrelated") in asked
    assert memories.pairing(small, "zh", ["a.f0"]) == "zh→en" and memories.pairing(small, "en", []) == "en→none(en)"
    assert memories.rrf(["x", "y"], ["y", "z"])[0] == "y"


def test_a_run_reports_every_system_and_the_floor(data: Path) -> None:
    res = memories.run([50], ["en", "zh", "mixed"], None, 0, "hash", {}, data=data)
    rows = res["rows"]
    assert {r["kind"] for r in rows} == {"direct", "none", "unrelated"}
    answered = [r for r in rows if "memlane:R@5" in r]
    assert len(answered) == 2 * 2 * 3  # two questions with answers, two languages, three stores
    en = [r for r in answered if r["pairing"] == "en→en"]
    assert en and all(r["memlane:R@5"] == 1.0 and r["bm25:R@5"] == 1.0 for r in en)  # a store of 3–5 memories
    assert res["by_pairing"]["all"]["n"] == len(answered)
    floor = res["floor"]
    for r in answered:
        assert r["answer_above_floor"] == float(r["answer_score"] >= floor)
    study = {f["floor"]: f for f in res["floors"]}
    assert study[0.1]["answer_above"] >= study[0.5]["answer_above"]
    assert study[0.1]["unrelated_clean"] <= study[0.5]["unrelated_clean"]
