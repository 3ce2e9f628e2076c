"""Embeddings from any OpenAI-compatible server: OpenAI, DashScope/Qwen, Ollama, vLLM."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from memlane.embeddings.base import normalise
from memlane.errors import BackendError


class OpenAIEmbedder:
    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 30.0) -> None:
        self.model_id = f"openai:{model}"
        self._model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout_s)
        self.dimensions = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dimensions", 0)), dtype=np.float32)
        try:
            resp = self._client.post("embeddings", json={"model": self._model, "input": list(texts)})
            resp.raise_for_status()
            data = sorted(resp.json()["data"], key=lambda d: d["index"])
            return normalise(np.array([d["embedding"] for d in data], dtype=np.float32))
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            raise BackendError(f"embedding server {self._client.base_url} failed: {exc}") from exc
