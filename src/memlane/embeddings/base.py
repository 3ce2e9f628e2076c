"""The `Embedder` protocol and `normalise`: what the providers (hashing.py, local.py,
remote.py) and the rest of memlane share, below the package that chooses a provider."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows. `query=True` embeds search queries."""

    model_id: str
    dimensions: int

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray: ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


__all__ = ["Embedder", "normalise"]
