"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1 (tests/stubs.py):
JSON modes and their fallback, retries on 429 / 5xx, timeouts, usage, and a job that
survives malformed JSON, 500, 429 and a timeout with turns and memories consistent."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from memlane.config import LLMConfig
from memlane.errors import BackendError
from memlane.llm import make_llm
from memlane.llm.client import OpenAICompatibleLLM
from memlane.testing import ManualClock
from tests.stubs import openai_stub

MSGS: list[Any] = [{"role": "user", "content": "hi"}]
SCHEMA = {"title": "Answer", "type": "object", "properties": {"operations": {"type": "array"}}}


def completion(text: str, usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "x", "object": "chat.completion",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
    if usage is not None:
        body["usage"] = usage
    return body


def client(base_url: str, **kw: Any) -> OpenAICompatibleLLM:
    cfg = LLMConfig(base_url=base_url, model="test-model", api_key="sk-test", retry_backoff_s=0.0,
                    retry_after_max_s=0.05, **kw)
    return OpenAICompatibleLLM(cfg)


def test_make_llm_builds_the_client_only_with_a_base_url():
    assert make_llm(LLMConfig()) is None
    assert isinstance(make_llm(LLMConfig(base_url="http://127.0.0.1:9/v1")), OpenAICompatibleLLM)


def test_completion_with_json_schema_and_usage():
    with openai_stub(lambda path, body: (200, completion('{"operations": []}', {"prompt_tokens": 12, "completion_tokens": 5}))) as (url, seen):
        llm = client(url)
        assert llm.complete(MSGS, json_schema=SCHEMA) == '{"operations": []}'
    path, body = seen[0]
    assert path == "/v1/chat/completions" and body["model"] == "test-model" and body["messages"] == MSGS
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    [u] = llm.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens, u.attempts, u.estimated) == (12, 5, 17, 1, False)


def test_usage_is_estimated_when_the_server_reports_none():
    with openai_stub(lambda p, b: (200, completion("你好世界"))) as (url, _):
        llm = client(url)
        llm.complete([{"role": "user", "content": "用户对花生过敏"}])
    assert (llm.usage[0].prompt_tokens, llm.usage[0].completion_tokens, llm.usage[0].estimated) == (7, 4, True)


def test_response_format_falls_back_when_the_server_rejects_it():
    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        fmt = (body.get("response_format") or {}).get("type")
        if fmt in ("json_schema", "json_object"):
            return 400, {"error": {"message": f"response_format {fmt} is not supported"}}
        return 200, completion('{"operations": []}')

    with openai_stub(handler) as (url, seen):
        llm = client(url)
        llm.complete(MSGS, json_schema=SCHEMA)
        llm.complete(MSGS, json_schema=SCHEMA)  # remembers what worked
    modes = [(b.get("response_format") or {}).get("type") for _, b in seen]
    assert modes == ["json_schema", "json_object", None, None]


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_retries_on_rate_limits_and_server_errors(status):
    replies = [(status, {"error": "busy"}), (status, {"error": "busy"}), (200, completion("ok"))]
    with openai_stub(lambda p, b: replies.pop(0)) as (url, seen):
        llm = client(url, max_retries=3)
        assert llm.complete(MSGS) == "ok"
    assert len(seen) == 3 and llm.usage[0].attempts == 3


@pytest.mark.parametrize(("retry_after", "wait"), [("1", 1.0), ("3600", 2.0), ("Wed, 21 Oct 2026 07:28:00 GMT", 0.5),
                                                 (None, 0.5)])
def test_retry_after_is_honoured_briefly(retry_after, wait):
    """Retry-After is obeyed up to llm.retry_after_max_s; without one (or as a date) our own back-off."""
    waits: list[float] = []
    replies = [429, 200]

    def handle(request: httpx.Request) -> httpx.Response:
        status = replies.pop(0)
        if status == 429:
            return httpx.Response(429, headers={"retry-after": retry_after} if retry_after else {}, json={})
        return httpx.Response(200, json=completion("ok"))

    llm = OpenAICompatibleLLM(LLMConfig(base_url="http://llm.test/v1", retry_after_max_s=2.0, retry_backoff_s=0.5),
                              transport=httpx.MockTransport(handle), sleep=waits.append)
    assert llm.complete(MSGS) == "ok"
    assert waits == [wait]


def test_bounded_retries_then_a_backend_error_naming_the_server():
    with openai_stub(lambda p, b: (500, {"error": "boom"})) as (url, seen):
        llm = client(url, max_retries=2)
        with pytest.raises(BackendError, match="HTTP 500"):
            llm.complete(MSGS)
    assert len(seen) == 3


def test_client_errors_are_not_retried():
    with openai_stub(lambda p, b: (401, {"error": "bad key"})) as (url, seen), \
            pytest.raises(BackendError, match="api_key"):
        client(url).complete(MSGS)
    assert len(seen) == 1


def test_timeout_is_a_backend_error_after_bounded_retries():
    def slow(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(0.6)
        return 200, completion("too late")

    with openai_stub(slow) as (url, seen):
        t = time.monotonic()
        with pytest.raises(BackendError, match="ReadTimeout"):
            client(url, timeout_s=0.2, max_retries=1).complete(MSGS)
        assert time.monotonic() - t < 3
    assert len(seen) == 2


def test_a_non_completion_body_is_a_backend_error():
    with openai_stub(lambda p, b: (200, b"<html>gateway</html>")) as (url, _), \
            pytest.raises(BackendError, match="not a chat completion"):
        client(url).complete(MSGS)


def test_unreachable_server():
    with openai_stub(lambda p, b: (200, completion("x"))) as (url, _):
        pass  # the server is gone now
    with pytest.raises(BackendError, match="is it running"):
        client(url, max_retries=0, timeout_s=1).complete(MSGS)


def Clock() -> ManualClock:  # noqa: N802
    return ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))


def test_an_extraction_job_survives_a_flaky_server(make_memory):
    """malformed JSON, then 500s, 429s and a timeout: the job is retried with back-off; the turns
    are stored from the start, memories appear exactly once when a good answer comes."""
    good = json.dumps({"operations": [{"op": "ADD", "content": "用户对花生过敏", "category": "fact",
                                       "importance": "high"}]}, ensure_ascii=False)
    script: list[Any] = [
        (200, completion("Sure! The user is allergic to peanuts.")),  # not JSON
        (500, {"error": "overloaded"}), (500, {"error": "overloaded"}),
        (429, {"error": "rate"}), (429, {"error": "rate"}),
        "sleep",  # timeout
        (200, completion("```json\n" + good + "\n```", {"prompt_tokens": 900, "completion_tokens": 40})),
    ]
    lock = threading.Lock()

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        with lock:
            step = script.pop(0)
        if step == "sleep":
            time.sleep(0.5)
            return 200, completion(good)
        return step

    with openai_stub(handler) as (url, seen):
        mem = make_memory(clock=Clock(), llm={"base_url": url, "model": "m", "max_retries": 1, "timeout_s": 0.25,
                                              "retry_backoff_s": 0.0})
        mem.add_messages("s1", [{"role": "user", "content": "我对花生过敏，别推荐花生酱"}], user_id="u1")
        statuses = []
        [first] = [r.result for r in mem.end_session("s1", user_id="u1") if r.action == "extract"]
        statuses.append(first.status)
        for _ in range(3):
            mem.clock.now = mem.store.jobs(status=("queued",))[0].next_at
            [r] = mem.drain()
            statuses.append(r.status)
            assert len(mem.get_turns("s1", user_id="u1")) == 1
            if r.status != "done":
                assert mem.list(user_id="u1") == []
    assert statuses == ["retrying", "retrying", "retrying", "done"]
    assert [m.content for m in mem.list(user_id="u1")] == ["用户对花生过敏"]
    assert mem.store.raw_count("memory_events") == 1
    assert mem.llm.usage[-1].total_tokens == 940  # type: ignore[union-attr]
    assert mem.clock.now - datetime(2026, 3, 1, 9, 0, tzinfo=UTC) == timedelta(minutes=10 + 30 + 120)
    assert len(seen) == 7
