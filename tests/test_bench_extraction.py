"""bench/extraction.py, the write-path bench (issue 29): its matching and metrics on a tiny
labelled set, offline (the heuristic extractor through the real pipeline) and through the
engine's HTTP client against an OpenAI-compatible stub on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.stubs import openai_stub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import extraction  # noqa: E402

FOREVER = "2027-01-01"


def conv(cid: str, lang: str, kind: str, *said: str, facts: list[dict[str, Any]] | None = None,
         optional: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    turns = []
    for i, text in enumerate(said):
        turns.append({"role": "user", "content": text})
        if i < len(said) - 1:
            turns.append({"role": "assistant", "content": "好的。" if lang == "zh" else "OK."})
    return {"id": cid, "lang": lang, "date": "2026-01-10T09:00:00+00:00", "kind": kind, "turns": turns,
            "facts": facts or [], "optional": optional or []}


def fact(fid: str, *groups: list[str], keep_until: str = FOREVER, expire_by: str | None = None) -> dict[str, Any]:
    f: dict[str, Any] = {"id": fid, "text": fid, "match": [list(g) for g in groups], "keep_until": keep_until}
    if expire_by:
        f["expire_by"] = expire_by
    return f


TINY = [
    # two facts in one sentence, and one the offline extractor cannot find (nothing says it)
    conv("zh-1", "zh", "facts", "我不吃香菜，也对芒果过敏",
         facts=[fact("f1", ["香菜"], ["不吃"]), fact("f2", ["芒果"], ["过敏"]), fact("f3", ["榴莲"])]),
    # a name, a job; "I'm in Seattle" matches no fact (a memory that lowers precision)
    conv("en-1", "en", "facts", "My name is Ming and I work as a data engineer at Acme. I'm in Seattle.",
         facts=[fact("f1", ["Ming"]), fact("f2", ["data engineer"], ["Acme"])]),
    # a plan kept until after its day, not past the summer; and a liking labelled to expire by
    # February, which a permanent memory outlives (one wrong duration)
    conv("en-2", "en", "facts", "Training for a half marathon in March. I love hiking.",
         facts=[fact("f1", ["half marathon"], keep_until="2026-03-31", expire_by="2026-06-30"),
                fact("f2", ["hiking"], expire_by="2026-02-01")]),
    # small talk and someone else's news: nothing; a "nothing" conversation that still yields
    # a memory is junk
    conv("en-n1", "en", "nothing", "haha ok, just checking you're alive", "my friend's cousin is allergic to cats lol"),
    conv("en-n2", "en", "nothing", "I love jazz."),
    conv("zh-n1", "zh", "nothing", "在吗", "哈哈没事，随便聊聊"),
]


def test_matching_needs_every_group_in_any_case():
    f = fact("f", ["芒果", "mango"], ["过敏", "allerg"])
    assert extraction.matches("用户对芒果过敏", f)
    assert extraction.matches("The user is ALLERGIC to Mango.", f)
    assert not extraction.matches("用户喜欢芒果", f)
    assert not extraction.matches("anything", {"match": []})


def test_a_cut_or_empty_memory_is_mangled():
    assert extraction.mangled("The user's name is Ming and.")
    assert extraction.mangled("用户喜欢和")
    assert extraction.mangled("The user.")
    assert not extraction.mangled("The user's name is Ming.")
    assert not extraction.mangled("用户对芒果过敏")


def test_offline_metrics_on_a_tiny_labelled_set():
    outcomes = extraction.run(TINY)
    by_id = {o.conv["id"]: o for o in outcomes}
    assert [f["id"] for f in by_id["zh-1"].missed] == ["f3"]
    assert [k.content for k in by_id["en-1"].unmatched] == ["The user is in Seattle."]
    assert [k.content for k in by_id["en-n2"].junk] == ["The user likes jazz."]
    assert by_id["en-n1"].kept == [] and by_id["zh-n1"].kept == []
    [(hiking, why)] = by_id["en-2"].wrong
    assert "hiking" in hiking.content and "expire_by 2026-02-01" in why
    race = next(k for k in by_id["en-2"].kept if "marathon" in k.content)
    assert race.expires_at is not None and datetime(2026, 3, 31, tzinfo=UTC) < race.expires_at < datetime(2026, 6, 30, tzinfo=UTC)
    summary = extraction.summarise(outcomes)
    # facts: zh 2 of 3 found, en 4 of 4; memories: zh 2 (both facts), en 5 (Ming, Acme, Seattle,
    # marathon, hiking) + 1 from en-n2 (junk); wrong: the hiking memory, 1 of 4 en memories matching a fact
    assert summary["zh"] == {"conversations": 2, "facts": 3, "memories": 2, "recall": pytest.approx(2 / 3),
                             "precision": 1.0, "junk": 0.0, "wrong_durations": 0.0}
    assert summary["en"] == {"conversations": 4, "facts": 4, "memories": 6, "recall": 1.0,
                             "precision": pytest.approx(4 / 6), "junk": pytest.approx(1 / 6),
                             "wrong_durations": pytest.approx(1 / 4)}
    assert summary["all"]["recall"] == pytest.approx(6 / 7) and summary["all"]["precision"] == pytest.approx(6 / 8)


def test_an_optional_fact_counts_for_precision_not_recall():
    c = conv("zh-2", "zh", "facts", "我住在杭州。我养了一只猫。",
             facts=[fact("f1", ["杭州"])], optional=[fact("o1", ["猫"])])
    [o] = extraction.run([c])
    assert o.tally.found == 1 and o.tally.facts == 1 and o.tally.correct == o.tally.memories == 2


def test_the_split_files_load_and_the_llm_flag_needs_a_server(tmp_path, monkeypatch, capsys):
    (tmp_path / "dev.json").write_text(json.dumps({"conversations": TINY[:1]}, ensure_ascii=False), encoding="utf-8")
    assert [c["id"] for c in extraction.load("dev", tmp_path)] == ["zh-1"]
    monkeypatch.delenv("MEMLANE_LLM_BASE_URL", raising=False)
    assert extraction.main(["--llm", "--data", str(tmp_path)]) == 2
    assert "MEMLANE_LLM_BASE_URL" in capsys.readouterr().out


def _completion(text: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def _scripted(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """An extraction reply chosen by what the conversation says; any other call (the
    session's episode) gets a plain episode."""
    prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
    if '"operations"' not in str(body["messages"][0].get("content")):
        return 200, _completion(json.dumps({"summary": "chat", "goal": "", "outcome": "", "entities": [],
                                            "tools_used": []}))
    ops: list[dict[str, Any]] = []
    if "芒果" in prompt:
        ops = [{"op": "ADD", "content": "用户不吃香菜", "category": "preference", "duration": "permanent"},
               {"op": "ADD", "content": "用户对芒果过敏", "category": "fact", "importance": "high"}]
    elif "Ming" in prompt:
        ops = [{"op": "ADD", "content": "The user's name is Ming.", "category": "fact"},
               {"op": "ADD", "content": "The user lives in Seattle.", "category": "fact"}]
    elif "marathon" in prompt:  # expires in 7 days: before the race
        ops = [{"op": "ADD", "content": "The user is training for a half marathon in March.", "category": "fact",
                "duration": "7d"}]
    elif "jazz" in prompt:
        ops = [{"op": "ADD", "content": "The user loves jazz.", "category": "preference"}]
    return 200, _completion(json.dumps({"operations": ops}, ensure_ascii=False))


def test_the_same_harness_runs_the_llm_extractor_through_the_http_client():
    with openai_stub(_scripted) as (url, seen):
        env = {"MEMLANE_LLM_BASE_URL": url, "MEMLANE_LLM_MODEL": "stub-model", "MEMLANE_LLM_API_KEY": "sk-test",
               "MEMLANE_HOME": "/nowhere"}  # only the LLM settings are taken from the environment
        outcomes = extraction.run(TINY, llm_env=env)
    calls = [b for _, b in seen if '"operations"' in str(b["messages"][0].get("content"))]
    assert len(calls) == len(TINY) and {b["model"] for b in calls} == {"stub-model"}
    summary = extraction.summarise(outcomes)
    # zh: 2 of 3 facts, both memories right; en: Ming, the race (f1 of en-2) of 4 facts; Seattle
    # matches nothing, jazz is junk; the race's memory expires in 7 days, before its keep_until
    assert summary["zh"]["recall"] == pytest.approx(2 / 3) and summary["zh"]["precision"] == 1.0
    assert summary["en"] == {"conversations": 4, "facts": 4, "memories": 4, "recall": pytest.approx(2 / 4),
                             "precision": pytest.approx(2 / 4), "junk": pytest.approx(1 / 4),
                             "wrong_durations": pytest.approx(1 / 2)}


@pytest.mark.parametrize("split", extraction.SPLITS)
def test_every_shipped_split_is_well_formed_and_each_label_can_be_met(split: str) -> None:
    """A split written by hand can hold a required fact no memory could meet (a keyword nobody
    said, a fact its own text does not match) or a duration ending before the chat: the bench
    would then count a miss no extractor can avoid."""
    convs = extraction.load(split)
    ids = [c["id"] for c in convs] + [f["id"] for c in convs for f in c.get("facts", []) + c.get("optional", [])]
    assert convs and len(ids) == len(set(ids))
    for c in convs:
        assert c["kind"] in ("facts", "nothing") and c["lang"] in ("zh", "en")
        assert (c["kind"] == "nothing") == (not c.get("facts")), c["id"]
        said = " ".join(t["content"] for t in c["turns"]).lower()
        day = extraction.conversation_time(c).date()
        for f in c.get("facts", []) + c.get("optional", []):
            assert f["match"] and all(group and all(isinstance(k, str) and k for k in group) for group in f["match"])
            # a required fact is said in the chat; an optional one may be an inference ("husband": married)
            if f in c.get("facts", []):
                assert extraction.matches(f["text"], f), f["id"]
                assert all(any(k.lower() in said for k in group) for group in f["match"]), f["id"]
            if f.get("keep_until"):
                assert datetime.fromisoformat(f["keep_until"]).date() >= day, f["id"]
