"""bench/changes.py, the fact-change bench (issue 32): the stores built as an engine that
understood the changes would hold them (and as memlane held them before), the answers and stale
values each question is scored on, and the scores of a run checked by hand on a tiny set."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import changes  # noqa: E402

CONVERSATION = {
    "id": "t-en-01", "lang": "en", "user": "Ana",
    "sessions": [
        {"id": "S1", "date": "2024-01-10T10:00", "turns": [
            {"id": "S1:1", "role": "user", "text": "I live in Munich and I work at Siemens."},
            {"id": "S1:2", "role": "assistant", "text": "Good to know."}]},
        {"id": "S2", "date": "2024-04-05T10:00", "turns": [
            {"id": "S2:1", "role": "user", "text": "Big news: I moved from Munich to Berlin on the 1st of March."},
            {"id": "S2:2", "role": "assistant", "text": "Congratulations on the move."}]}],
    "slots": [
        {"slot": "home", "values": [
            {"value": "Munich", "from": None, "stated_in": ["S1:1", "S2:1"],
             "memory": {"en": "The user lives in Munich.", "zh": "用户住在慕尼黑。"}},
            {"value": "Berlin", "from": "2024-03-01", "stated_in": ["S2:1"],
             "memory": {"en": "The user lives in Berlin.", "zh": "用户住在柏林。"}}]},
        {"slot": "employer", "values": [
            {"value": "Siemens", "from": None, "stated_in": ["S1:1"],
             "memory": {"en": "The user works at Siemens.", "zh": "用户在西门子工作。"}}]}],
    "questions": [
        {"id": "t.q1", "kind": "current", "question": "Which city do I live in these days?", "answer": "Berlin",
         "slot": "home", "evidence": ["S2:1"], "stale": ["S1:1"], "asked_at": "2024-06-01T09:00"},
        {"id": "t.q2", "kind": "past", "question": "Where did I live before Berlin?", "answer": "Munich",
         "slot": "home", "evidence": ["S1:1", "S2:1"], "stale": [], "asked_at": "2024-06-01T09:00"},
        {"id": "t.q3", "kind": "when", "question": "When did I move to Berlin?", "answer": "1 March 2024",
         "slot": "home", "evidence": ["S2:1"], "stale": [], "asked_at": "2024-06-01T09:00"},
        {"id": "t.q4", "kind": "current", "question": "Where do I work?", "answer": "Siemens",
         "slot": "employer", "evidence": ["S1:1"], "stale": [], "asked_at": "2024-06-01T09:00"}],
}
POOLS = {"en": ["Caroline went hiking with her dog.", "Melanie painted a sunset."],
         "zh": ["王明喜欢下围棋。", "李芳在学钢琴。"]}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "changes.json"
    path.write_text(json.dumps({"conversations": [CONVERSATION]}), encoding="utf-8")
    return path


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_values_and_what_each_question_is_scored_on(data: Path) -> None:
    conv = changes.load(data)[0]
    munich, berlin = conv.slots["home"]
    assert (munich.start, munich.told) == (day("2024-01-10T10:00"), day("2024-01-10T10:00"))  # no `from`: first told
    assert (berlin.start, berlin.told) == (day("2024-03-01"), day("2024-04-05T10:00"))
    q = {x["id"]: x for x in conv.questions}
    assert changes.targets(conv, q["t.q1"]) == (["s0.v1"], ["s0.v0"])  # Berlin; Munich must not pass for it
    assert changes.targets(conv, q["t.q2"]) == (["s0.v0"], ["s0.v1"])  # the value whose turns are the evidence
    assert changes.targets(conv, q["t.q3"]) == (["s0.v0", "s0.v1"], [])  # the turn telling the change names both
    assert changes.targets(conv, q["t.q4"]) == (["s1.v0"], [])
    # a value told after its successor began, with no start of its own (en-05's Dayton): no later than it
    told = [day("2023-06-30"), day("2022-08-03")]
    assert changes.starts([{"from": None}, {"from": "2021-09"}], told) == [day("2021-09-01")] * 2


def test_scores_and_stale_turns() -> None:
    assert changes.score("current", ["a", "b"], ["a"], ["b"]) == {"score": 1.0, "stale5": 1.0}
    assert changes.score("current", ["b", "a"], ["a"], ["b"])["score"] == 0.0
    assert changes.score("past", ["x", "y", "z", "w", "v", "a"], ["a"], [])["score"] == 0.0  # sixth: out
    assert changes.score("count", ["a", "x", "b"], ["a", "b"], []) == {"score": 1.0, "stale5": 0.0}
    assert changes.score("when", ["a", "x"], ["a", "b"], [])["score"] == 0.0  # all of them or nothing
    assert changes.stale_first(["S1:1", "S2:1"], {"S2:1"}, {"S1:1"}) == 1.0
    assert changes.stale_first(["S2:1", "S1:1"], {"S2:1"}, {"S1:1"}) == 0.0
    assert changes.stale_first(["S1:1"], {"S2:1"}, {"S1:1"}) == 1.0  # evidence not ranked: stale is above it
    assert changes.stale_first(["S3:1"], {"S2:1"}, {"S1:1"}) == 0.0


def test_stores_hold_every_value_then_distractors(data: Path) -> None:
    conv = changes.load(data)[0]
    en = changes.build_store(conv, "en", 5, POOLS)
    assert list(en.texts)[:3] == ["s0.v0", "s0.v1", "s1.v0"] and en.texts["s0.v1"] == "The user lives in Berlin."
    assert len(en.texts) == 5 and set(list(en.texts.values())[3:]) == set(POOLS["en"])
    zh = changes.build_store(conv, "zh", 4, POOLS)
    assert zh.texts["s0.v0"] == "用户住在慕尼黑。" and list(zh.texts.values())[3] in POOLS["zh"]
    mixed = changes.build_store(conv, "mixed", 50, POOLS)
    assert len(mixed.texts) == 7  # the pools spent: a smaller store
    assert all(mixed.texts[k] == v.memory[mixed.lang_of[k]] for vs in conv.slots.values() for v in vs
               for k in [v.key])
    assert changes.zh_pool() and all("用户" not in t for t in changes.zh_pool()[:200])  # told of someone else


def test_a_run_scores_supersession_against_memlane_before_and_the_baselines(data: Path) -> None:
    res = changes.run([5], ["en"], None, "hash", {}, data=data, pools=POOLS)
    rows = {r["q"]: r for r in res["rows"]}
    assert len(rows) == 4
    now = rows["t.q1"]
    # a store of five: every memory is in everyone's top 5, and only supersession keeps Munich out
    assert now["memlane:score"] == 1.0 and now["memlane:stale5"] == 0.0
    assert now["memlane:stale_injected"] == 0.0
    assert now["before:stale5"] == now["dense:stale5"] == now["bm25:stale5"] == now["rrf:stale5"] == 1.0
    assert rows["t.q2"]["memlane:score"] == 1.0  # "before Berlin": Munich, superseded, is found
    when = rows["t.q3"]
    assert when["memlane:score"] == when["before:score"] == 1.0
    # supersession dated both: Munich 2024-01-10 – 2024-03-01, Berlin since 2024-03-01; before, Munich never ended
    assert when["memlane:dates"] == 1.0 and when["before:dates"] == 0.0
    assert "t.q4" in rows and "memlane:stale_injected" not in rows["t.q4"]  # a fact that never changed
    assert res["by_kind"]["all"]["n"] == 4 and res["stale"]["all"]["n"] == 1
    turns = {r["q"]: r for r in res["turns"]["rows"]}
    assert set(turns) == set(rows)
    assert all(0.0 <= turns[q][f"{s}:R@5"] <= 1.0 for q in turns for s in changes.TURN_SYSTEMS)
    assert "memlane:stale_first" in turns["t.q1"] and "memlane:stale_first" not in turns["t.q4"]


def test_the_write_path_bench_counts_the_merges_flags_where_the_merge_writes_them() -> None:
    """A new value told with no change cue is flagged for review, not closed: the write-path bench
    must read that flag where the engine writes it (`supersession.FLAG`), or it reports none."""
    import changes_write

    from memlane.supersession import FLAG

    conv = {"id": "t-en-02", "lang": "en", "sessions": [
        {"id": "S1", "date": "2024-01-10T10:00", "turns": [{"id": "S1:1", "role": "user", "text": "I live in Leeds."}]},
        {"id": "S2", "date": "2024-06-10T10:00", "turns": [{"id": "S2:1", "role": "user", "text": "I live in York."}]}],
        "slots": [{"slot": "home", "values": [{"value": "Leeds"}, {"value": "York"}]}]}
    memories = changes_write.run_conversation(conv)
    flagged = [m for m in memories if isinstance(m.metadata.get(FLAG), dict)]
    assert flagged, [(m.content, m.status, m.metadata) for m in memories]
    tally = changes_write.score(conv, memories).tally
    assert tally.flags == len(flagged) and tally.flags_right == 1
