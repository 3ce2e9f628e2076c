"""A no-model embedder: signed feature hashing of words and character n-grams.

It knows nothing of meaning, only of shared surface forms, but it is instant, deterministic
and offline, which makes it the fallback and the test double.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memlane.embeddings.base import normalise
from memlane.text import CJK_RUN, cjk_grams


class HashEmbedder:
    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.model_id = f"hash-{dimensions}"

    def _features(self, text: str) -> list[str]:
        text = text.lower()
        feats: list[str] = []
        for run in CJK_RUN.findall(text):
            feats.extend(cjk_grams(run))
        latin = CJK_RUN.sub(" ", text)
        for word in latin.split():
            word = "".join(ch for ch in word if ch.isalnum())
            if not word:
                continue
            feats.append(word)
            padded = f"#{word}#"
            feats.extend(padded[i : i + 3] for i in range(len(padded) - 2))
        return feats

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dimensions] += 1.0 if (value >> 63) & 1 else -1.0
        return normalise(out)
