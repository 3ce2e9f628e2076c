"""Prompts as code: each returns messages plus the answer model, in Chinese and English."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane.errors import ExtractionError
from memlane.llm.prompts import loads_tolerant
from memlane.llm.prompts.review import ReviewAnswer, review_prompt
from memlane.models import MemoryRecord

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def record(mid: str, content: str) -> MemoryRecord:
    return MemoryRecord(id=mid, user_id="u", content=content, category="fact", score=0.85, created_at=NOW,
                        updated_at=NOW, last_activated=NOW, activation_count=4)


@pytest.mark.parametrize(("lang", "mode", "needle"), [("zh", "promote", "核心记忆"), ("en", "promote", "core memory"),
                                                      ("zh", "decay", "删除还是保留"), ("en", "decay", "delete it or keep it")])
def test_review_prompt_in_both_languages_and_modes(lang, mode, needle):
    p = review_prompt(record("a1", "主人的生日是3月5日"), [record("b2", "主人喜欢拉面")], mode=mode, language=lang,
                      searches=[("生日", [record("c3", "主人生日要吃蛋糕")])], rounds_left=2)
    system, user = (m["content"] for m in p.messages)
    assert needle in system and "SEARCH" in system
    assert "[a1]" in user and "[b2]" in user and "[c3]" in user
    assert ("PROMOTE" in system) == (mode == "promote")
    assert p.answer is ReviewAnswer and p.json_schema["title"] == "ReviewAnswer"


def test_the_last_review_round_must_decide():
    p = review_prompt(record("a1", "x"), [], mode="decay", language="en", rounds_left=0)
    assert "SEARCH" not in p.messages[0]["content"]
    assert p.parse('```json\n{"decision": "KEEP", "reason": "still true"}\n```').decision == "KEEP"
    with pytest.raises(ExtractionError):
        p.parse('{"decision": "MAYBE"}')


@pytest.mark.parametrize(("text", "value"), [
    ('{"a": 1}', {"a": 1}),
    ("<think>hmm {not json}</think> {\"a\": [1, 2,]}", {"a": [1, 2]}),
    ("Sure:\n```\n[1]\n```\nDone.", [1]),
    ('The answer is {"a": {"b": 2}} as requested', {"a": {"b": 2}}),
])
def test_tolerant_json(text, value):
    assert loads_tolerant(text) == value


@pytest.mark.parametrize("text", ["", "no json here", "{broken"])
def test_not_json_is_an_extraction_error_keeping_the_raw_reply(text):
    with pytest.raises(ExtractionError) as info:
        loads_tolerant(text)
    assert info.value.raw == text
