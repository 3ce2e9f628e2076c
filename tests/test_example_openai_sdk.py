"""examples/openai_sdk_agent.py with the official OpenAI SDK against a stub on 127.0.0.1: the
agent loop works unchanged with the SDK's own message and tool-call objects (issue 18)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory

from .conftest import make_config
from .stubs import openai_stub

EXAMPLE = Path(__file__).parents[1] / "examples" / "openai_sdk_agent.py"


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def test_openai_sdk_agent_remembers_and_recalls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai", reason="the OpenAI SDK is not installed: pip install 'memlane[openai]'")
    spec = importlib.util.spec_from_file_location("openai_sdk_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")
    with Memory(make_config(tmp_path)) as memory:
        memory.add("用户对花生过敏", user_id="lin", category="fact", importance="high")

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        last = body["messages"][-1]
        if last["role"] == "user" and "记住" in str(last["content"]):
            args = json.dumps({"content": "用户每周二和周六早上跑步"}, ensure_ascii=False)
            return 200, completion({"content": None, "tool_calls": [
                {"id": "call_r", "type": "function", "function": {"name": "remember", "arguments": args}}]})
        if last["role"] == "user":
            return 200, completion({"content": None, "tool_calls": [
                {"id": "call_s", "type": "function",
                 "function": {"name": "search_memory", "arguments": json.dumps({"query": "过敏"})}}]})
        return 200, completion({"content": "好的。" if last["tool_call_id"] == "call_r" else "推荐番茄炒蛋，不含花生。"})

    with openai_stub(handler) as (base_url, seen):
        assert example.main(["--base-url", base_url, "--api-key", "stub", "--model", "gpt-4o-mini", "--user", "lin",
                             "--home", str(tmp_path), "--message", "晚饭吃什么？",
                             "--message", "记住我每周二和周六早上跑步"]) == 0

    second = seen[1][1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_s"  # the SDK's reply object went back as sent
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"])["memories"][0]["content"] == "用户对花生过敏"
    third = seen[2][1]["messages"]  # the next user message: the earlier tool exchange round-trips
    assert [m["role"] for m in third[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert third[3]["tool_call_id"] == "call_s"
    with Memory(make_config(tmp_path)) as memory:
        # the rule pinned "记住…" and the model's remember tool stored it again: one memory
        assert sorted(m.content for m in memory.list(user_id="lin")) == ["用户对花生过敏", "用户每周二和周六早上跑步"]
        assert [t.role for t in memory.get_turns("chat", user_id="lin")] == [
            "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]
