"""The `LLM` protocol and its `ChatMessage`: what the client (client.py), the prompts and the
rest of memlane share, below the package that chooses a client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypedDict, runtime_checkable


class ChatMessage(TypedDict, total=False):
    role: str
    content: str
    name: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str


@runtime_checkable
class LLM(Protocol):
    """Completes a chat; with `json_schema`, the reply must be JSON of that shape."""

    model_id: str

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: dict[str, Any] | None = None) -> str: ...


__all__ = ["LLM", "ChatMessage"]
