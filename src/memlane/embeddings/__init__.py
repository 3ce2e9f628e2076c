"""Embedders: one small protocol (base.py), providers registered by name — memlane's own
below, and any installed package's (entry point group `memlane.embedders`, plugins.py).

`make_embedder(config)` is the only place a concrete provider is chosen; the rest of memlane
sees an `Embedder`.
"""

from __future__ import annotations

from collections.abc import Callable

from memlane import plugins
from memlane.config import EmbeddingConfig
from memlane.embeddings.base import Embedder, normalise
from memlane.errors import ConfigError


def _hash(cfg: EmbeddingConfig) -> Embedder:
    from memlane.embeddings.hashing import HashEmbedder

    return HashEmbedder(cfg.dimensions)


def _e5(cfg: EmbeddingConfig) -> Embedder:
    from memlane.embeddings.local import E5Embedder

    return E5Embedder(copies=cfg.model_copies, query_tokens=cfg.query_tokens, wait=cfg.omp_wait)


def _minilm(cfg: EmbeddingConfig) -> Embedder:
    from memlane.embeddings.local import MiniLMEmbedder

    return MiniLMEmbedder()


def _use(cfg: EmbeddingConfig) -> Embedder:
    from memlane.embeddings.local import USEEmbedder

    return USEEmbedder()


def _openai(cfg: EmbeddingConfig) -> Embedder:
    from memlane.embeddings.remote import OpenAIEmbedder

    if not cfg.base_url:
        raise ConfigError(
            "embedding.base_url: the openai embedder needs a server URL; set MEMLANE_EMBEDDING_BASE_URL"
        )
    return OpenAIEmbedder(cfg.base_url, cfg.model or "text-embedding-3-small", cfg.api_key, cfg.timeout_s)


PROVIDERS: dict[str, Callable[[EmbeddingConfig], Embedder]] = {
    "e5": _e5,
    "hash": _hash,
    "minilm": _minilm,
    "openai": _openai,
    "use": _use,
}


def make_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The configured embedder: one of memlane's `PROVIDERS`, else an installed plugin's
    (entry point group `memlane.embedders`, plugins.py)."""
    factory = PROVIDERS.get(cfg.provider)
    if factory is None:
        if cfg.provider not in plugins.installed("embedders"):
            known = sorted({*PROVIDERS, *plugins.installed("embedders")})
            raise ConfigError(f"embedding.provider: unknown {cfg.provider!r}; one of {known}")
        factory = plugins.load("embedders", cfg.provider)
    embedder = factory(cfg)
    if not isinstance(embedder, Embedder):
        raise ConfigError(f"embedding.provider {cfg.provider!r} gave {type(embedder).__name__}, not an Embedder "
                          "(model_id, dimensions, embed(texts, query=...))")
    return embedder


__all__ = ["Embedder", "PROVIDERS", "make_embedder", "normalise"]
