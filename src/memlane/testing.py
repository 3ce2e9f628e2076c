"""Test doubles shipped with memlane, for its own tests and for agents built on it
(as httpx ships MockTransport)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from memlane.embeddings.hashing import HashEmbedder
from memlane.errors import BackendError
from memlane.llm import ChatMessage
from memlane.text import estimate_tokens


class ManualClock:
    """A clock that moves only when told: pass it as `Memory(clock=...)` to test decay,
    expiry and back-off without waiting."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, *, days: float = 0, hours: float = 0, minutes: float = 0) -> datetime:
        self.now += timedelta(days=days, hours=hours, minutes=minutes)
        return self.now


class ScriptedLLM:
    """An LLM that replies from a queue. `enqueue` strings (or dicts, sent as JSON, or
    exceptions, raised); every call is recorded in `calls`; running dry raises."""

    model_id = "scripted"

    def __init__(self, *replies: str | dict[str, Any] | BaseException) -> None:
        self.replies: deque[str | dict[str, Any] | BaseException] = deque(replies)
        self.calls: list[dict[str, Any]] = []

    def enqueue(self, *replies: str | dict[str, Any] | BaseException) -> ScriptedLLM:
        self.replies.extend(replies)
        return self

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: dict[str, Any] | None = None) -> str:
        prompt_tokens = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        call: dict[str, Any] = {"messages": list(messages), "json_schema": json_schema,
                                "prompt_tokens": prompt_tokens, "completion_tokens": 0}
        self.calls.append(call)
        if not self.replies:
            raise BackendError("ScriptedLLM ran dry: no reply queued for this call")
        reply = self.replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        call["completion_tokens"] = estimate_tokens(text)
        return text

    @property
    def tokens(self) -> int:
        return sum(c["prompt_tokens"] + c["completion_tokens"] for c in self.calls)


__all__ = ["HashEmbedder", "ManualClock", "ScriptedLLM"]
