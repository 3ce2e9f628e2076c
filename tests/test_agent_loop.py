"""examples/agent_loop.py, run as a user would, against an OpenAI-compatible stub on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memlane import Memory

from .conftest import make_config
from .stubs import openai_stub

EXAMPLE = Path(__file__).parents[1] / "examples" / "agent_loop.py"


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def test_agent_loop_searches_memory_and_answers(tmp_path: Path):
    with Memory(make_config(tmp_path)) as memory:
        memory.add("用户对花生过敏", user_id="lin", category="fact", importance="high")

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        assert path == "/v1/chat/completions"
        if not any(m["role"] == "tool" for m in body["messages"]):
            return 200, completion({"content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "search_memory", "arguments": json.dumps({"query": "过敏"})}}]})
        return 200, completion({"content": "推荐番茄炒蛋，不含花生。"})

    with openai_stub(handler) as (base_url, seen):
        env = {**os.environ, "MEMLANE_HOME": str(tmp_path), "MEMLANE_EMBEDDER": "hash"}
        proc = subprocess.run(
            [sys.executable, str(EXAMPLE), "--base-url", base_url, "--model", "gpt-4o-mini", "--user", "lin",
             "--session", "dinner", "--message", "晚饭吃什么？"],
            capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "assistant> 推荐番茄炒蛋，不含花生。" in proc.stdout

    first, second = (body for _, body in seen)
    assert {t["function"]["name"] for t in first["tools"]} >= {"search_memory", "search_conversation_traces"}
    system = first["messages"][0]
    assert system["role"] == "system" and "# 历史记忆" in system["content"]
    assert first["messages"][-1] == {"role": "user", "content": "晚饭吃什么？"}
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1"
    assert json.loads(tool_msg["content"])["memories"][0]["content"] == "用户对花生过敏"

    with Memory(make_config(tmp_path)) as memory:
        turns = memory.get_turns("dinner", user_id="lin")
        assert [t.role for t in turns] == ["user", "assistant", "tool", "assistant"]
        assert turns[1].tool_calls and turns[1].tool_calls[0]["id"] == "call_1"
        assert memory.get_session("dinner", user_id="lin").ended_at is not None
        assert [e.session_id for e in memory.episodes(user_id="lin")] == ["dinner"]
        assert memory.search("番茄炒蛋", user_id="lin", corpus="turns")[0].turn.role == "assistant"  # type: ignore[union-attr]


def test_agent_loop_reports_a_server_failure(tmp_path: Path):
    with openai_stub(lambda path, body: (500, {"error": "boom"})) as (base_url, _):
        env = {**os.environ, "MEMLANE_HOME": str(tmp_path), "MEMLANE_EMBEDDER": "hash"}
        proc = subprocess.run(
            [sys.executable, str(EXAMPLE), "--base-url", base_url, "--model", "m", "--message", "hi"],
            capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1 and "HTTP 500" in proc.stderr
    with Memory(make_config(tmp_path)) as memory:
        [session] = memory.sessions(user_id="default")
        assert [t.content for t in memory.get_turns(session.id, user_id="default")] == ["hi"]  # nothing lost
