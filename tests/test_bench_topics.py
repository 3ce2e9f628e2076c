"""bench/topics.py, the topic-switch bench (issue 30 row 5): offline (the rules) and with `--llm`,
through the engine's HTTP client against an OpenAI-compatible stub on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.stubs import openai_stub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import topics as bench  # noqa: E402

SESSIONS = [
    {"id": "zh-t", "lang": "zh", "turns": [
        {"role": "user", "content": "解释一下什么是通货膨胀", "label": "start"},
        {"role": "assistant", "content": "通货膨胀是物价总体水平持续上涨。"},
        # a follow-up in new words, asked as a wh-question: the task goes on (a bare question opens none)
        {"role": "user", "content": "对普通人的日常生活有什么影响", "label": "continue"},
        {"role": "assistant", "content": "存款购买力下降。"},
        {"role": "user", "content": "对了，周末有什么好看的电影推荐吗", "label": "switch"},
        {"role": "assistant", "content": "可以看看《沙丘2》。"},
        {"role": "user", "content": "好了，就这样", "label": "done"},
    ]},
    {"id": "en-t", "lang": "en", "turns": [
        {"role": "user", "content": "Write an email to my client saying the delivery will be a week late",
         "label": "start"},
        {"role": "assistant", "content": "Here's a draft: ..."},
        {"role": "user", "content": "make it more formal", "label": "continue"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "By the way, how do I reverse a list in Python?", "label": "switch"},
    ]},
]
LABELS = {t["content"]: t["label"] for s in SESSIONS for t in s["turns"] if t["role"] == "user"}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "topics.json"
    path.write_text(json.dumps({"sessions": SESSIONS}, ensure_ascii=False), encoding="utf-8")
    return path


def _completion(text: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def _oracle(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """Answers each topic call with the turn's label, and names a new task after the message."""
    message = str(body["messages"][1]["content"]).rsplit("\n", 1)[-1]
    label = LABELS[message]
    move = "switch" if label == "start" else label
    return 200, _completion(json.dumps({"move": move, "task": f"task: {message}" if move == "switch" else ""}))


def _env(url: str) -> dict[str, str]:
    return {"MEMLANE_LLM_BASE_URL": url, "MEMLANE_LLM_MODEL": "stub-model", "MEMLANE_HOME": "/nowhere"}


def test_offline_the_rules_decide(data: Path) -> None:
    res = bench.run(data)
    assert res["turns"] == 7 and "llm" not in res
    assert res["errors"] == []
    assert res["all"]["switch_recall"] == res["all"]["switch_precision"] == res["all"]["done_recall"] == 1.0


def test_with_llm_the_llm_judges_each_user_turn_over_http(data: Path) -> None:
    with openai_stub(_oracle) as (url, seen):
        res = bench.run(data, llm_env=_env(url))
    assert res["errors"] == [] and res["llm"]["calls"] == 7 and res["llm"]["fell_back"] == 0
    assert res["all"]["switch_precision"] == res["all"]["switch_recall"] == res["all"]["done_recall"] == 1.0
    assert len(seen) == 7 and {b["model"] for _, b in seen} == {"stub-model"}  # no extraction calls


def test_with_llm_an_unreadable_answer_leaves_the_rules_deciding(data: Path) -> None:
    with openai_stub(lambda path, body: (200, _completion("no idea"))) as (url, _):
        res = bench.run(data, llm_env=_env(url))
    assert res["llm"]["fell_back"] == 7
    assert res["errors"] == [] and res["all"]["switch_precision"] == 1.0  # as offline


def test_the_llm_flag_needs_a_server(data: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MEMLANE_LLM_BASE_URL", raising=False)
    assert bench.main(["--llm", "--data", str(data)]) == 2
    assert "MEMLANE_LLM_BASE_URL" in capsys.readouterr().out


def test_similarity_scores_each_variant_over_the_task_at_hand(data: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import common

    from memlane.testing import HashEmbedder

    monkeypatch.setattr(common, "CACHE", tmp_path / "cache")  # the bench's embedding cache, kept out of the tree
    rows = bench.run(data)["rows"]
    # the follow-up and the first switch are read against the turns since the focus was set
    assert [r["task"] for r in rows if r["label"] == "continue"][0] == ["解释一下什么是通货膨胀", "通货膨胀是物价总体水平持续上涨。"]
    sim = bench.similarity(rows, HashEmbedder())
    assert {"passage max / all", "query mean / kept", "query centroid / switched"} <= set(sim)
    assert sim["turns"] == 4 and sim["passage max / all"]["switches"] == 2
    assert 0.0 <= sim["passage max / all"]["auc"] <= 1.0
