"""LLMs: one small protocol (base.py); `make_llm(config)` picks the client, or None when no
LLM is configured (memlane then uses its offline heuristics)."""

from __future__ import annotations

from memlane import plugins
from memlane.config import LLMConfig
from memlane.errors import ConfigError
from memlane.llm.base import LLM, ChatMessage


def make_llm(cfg: LLMConfig) -> LLM | None:
    """The configured LLM: an OpenAI-compatible server at `llm.base_url` (none: offline), or an
    installed plugin's provider (`llm.provider`, entry point group `memlane.llms`, plugins.py)."""
    if cfg.provider != "openai":
        if cfg.provider not in plugins.installed("llms"):
            known = sorted({"openai", *plugins.installed("llms")})
            raise ConfigError(f"llm.provider: unknown {cfg.provider!r}; one of {known}")
        llm = plugins.load("llms", cfg.provider)(cfg)
        if not callable(getattr(llm, "complete", None)) or not isinstance(getattr(llm, "model_id", None), str):
            raise ConfigError(f"llm.provider {cfg.provider!r} gave {type(llm).__name__}, not an LLM "
                              "(model_id, complete(messages, json_schema=...))")
        return llm
    if not cfg.base_url:
        return None
    from memlane.llm.client import OpenAICompatibleLLM

    return OpenAICompatibleLLM(cfg)


__all__ = ["LLM", "ChatMessage", "make_llm"]
