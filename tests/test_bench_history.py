"""bench/history.py, the history-size study (issue 34): the builder's haystacks on a tiny
synthetic dev set (exact sizes, no other question's evidence, evidence still pointing at its
turns), and a whole run with the hash embedder writing its figures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import common  # noqa: E402
import history as bench  # noqa: E402

TOPICS = ["kayak", "sourdough", "violin", "tomatoes", "chess", "pottery", "marathon", "origami"]
SHARED = [{"speaker": "user", "text": "I keep my passport in the blue drawer by the door."},
          {"speaker": "assistant", "text": "Noted: the passport is in the blue drawer."}]


def _conv(k: int) -> dict[str, Any]:
    """Six sessions of two turns; session 3 holds the answer. Conversation 0's evidence session
    is also an ordinary session of conversation 1 (LongMemEval reuses sessions), so only a
    match by content keeps it out of everyone else's filler."""
    conv: dict[str, Any] = {"sample_id": f"c{k}", "speaker_a": "user", "speaker_b": "assistant"}
    for n in range(1, 7):
        topic = TOPICS[(k + n) % len(TOPICS)]
        turns = [{"speaker": "user", "text": f"conversation {k} session {n}: tell me about {topic} number {k}{n}"},
                 {"speaker": "assistant", "text": f"Here is something on {topic}, item {k}{n}."}]
        if n == 3:
            turns = SHARED if k == 0 else [{"speaker": "user", "text": f"My cat in conversation {k} is called Tom{k}."},
                                           {"speaker": "assistant", "text": "A fine name."}]
        if k == 1 and n == 5:
            turns = SHARED
        conv[f"session_{n}"] = [{**t, "dia_id": f"D{n}:{j}"} for j, t in enumerate(turns, 1)]
        conv[f"session_{n}_date_time"] = f"10:{n:02d} am on {n} May, 2023"
    question = "Where do I keep my passport?" if k == 0 else f"What is my cat in conversation {k} called?"
    conv["qa"] = [{"question": question, "answer": "x", "evidence": ["D3:1"], "answer_sessions": ["D3"],
                   "category": "single-session-user", "question_date": "2023/05/30 (Tue) 20:42"}]
    return conv


CONVS = [(f"c{k}", _conv(k)) for k in range(4)]
SIZES = (4, 8, 14)


def _sessions(conv: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [turns for _, turns in bench.sessions_of(conv)]


def test_histories_have_the_asked_sizes_and_no_other_questions_evidence() -> None:
    built = bench.build(CONVS, SIZES, None, seed=3)
    evidence = {bench.fingerprint(_sessions(c)[2]) for _, c in CONVS}  # every question's session 3
    assert set(built) == set(SIZES)
    for size, items in built.items():
        assert [name for name, _ in items] == [name for name, _ in CONVS]
        for name, hist in items:
            sessions = _sessions(hist)
            assert len(sessions) == size
            own = {bench.fingerprint(t) for t in _sessions(dict(CONVS)[name])}
            mine = bench.fingerprint(_sessions(dict(CONVS)[name])[2])
            # another question's evidence never, even where it sits in an ordinary session of
            # this conversation's (c1's session 5 is c0's evidence, by content)
            foreign = [bench.fingerprint(t) for t in sessions if bench.fingerprint(t) not in own]
            assert not set(foreign) & evidence
            assert len(foreign) == len(hist["filler_sessions"]) == max(0, size - 6)
            # the evidence still names the turn that answers, after renumbering and sorting
            qa = hist["qa"][0]
            texts = {t["dia_id"]: t["text"] for s in sessions for t in s}
            assert [texts[d] for d in qa["evidence"]] == [dict(CONVS)[name]["session_3"][0]["text"]]
            assert bench.fingerprint(sessions[int(qa["answer_sessions"][0][1:]) - 1]) == mine
            # dated in order, every dia_id unique and under its session's number
            dates = [bench.locomo_date(hist[f"session_{n}_date_time"]) for n in range(1, size + 1)]
            assert dates == sorted(dates)
            assert all(t["dia_id"].startswith(f"D{n}:") for n, s in enumerate(sessions, 1) for t in s)


def test_the_filler_is_seeded_and_nested() -> None:
    one, again, other = (bench.build(CONVS, SIZES, 2, seed=s) for s in (3, 3, 4))
    assert one == again
    assert one != other
    small, large = ({bench.fingerprint(t) for t in _sessions(h)} for h in (one[8][0][1], one[14][0][1]))
    assert small < large
    assert len(one[4]) == 2


def test_a_size_beyond_the_pool_is_refused() -> None:
    with pytest.raises(SystemExit, match="sessions asked"):
        bench.build(CONVS, (100,), None)


def test_a_run_writes_its_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "dev.json"
    data.write_text(json.dumps([c for _, c in CONVS]), encoding="utf-8")
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(common, "CACHE", tmp_path / "cache")  # the bench's embedding cache, kept out of the tree
    bench.main(["--data", str(data), "--sizes", "6,12", "--questions", "3", "--embedder", "hash",
                "--repeats", "2", "--search", "vector_candidates=60", "--out", "history-test"])
    out = json.loads((tmp_path / "results" / "history-test.json").read_text(encoding="utf-8"))
    assert out["questions"] == 3 and set(out["sizes"]) == {"6", "12"}
    assert out["search"] == {"vector_candidates": 60}
    for size in ("6", "12"):
        res = out["sizes"][size]
        assert res["questions"] == 3 and res["turns"] == 3 * int(size) * 2
        for system in bench.SYSTEMS:
            figures = res["systems"][system]["all"]
            assert {"R@10", "S_all@5", "T_all@10"} <= set(figures)
            assert all(0.0 <= v <= 1.0 for v in figures.values())
        latency = res["latency_ms"]
        assert latency["samples"] == 3 * 2
        assert 0 < latency["engine_p50"] <= latency["engine_p95"]
        assert 0 < latency["end_to_end_p50"] <= latency["end_to_end_p95"]
    # the hash embedder and these words: every question's answer is found at both sizes
    assert out["sizes"]["12"]["systems"]["memlane"]["all"]["R@10"] == 1.0
    assert len(out["targets"]) == 3
