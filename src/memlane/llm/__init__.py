"""LLMs: one small protocol; `make_llm(config)` picks the client, or None when no LLM is
configured (memlane then uses its offline heuristics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypedDict, runtime_checkable

from memlane.config import LLMConfig


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


def make_llm(cfg: LLMConfig) -> LLM | None:
    if not cfg.base_url:
        return None
    from memlane.llm.client import OpenAICompatibleLLM

    return OpenAICompatibleLLM(cfg)


__all__ = ["LLM", "ChatMessage", "make_llm"]
