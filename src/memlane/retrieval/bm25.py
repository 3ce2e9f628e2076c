"""Okapi BM25, written once: the stores' full text (store/postings.py in numpy, store/pgtext.py
in Python and in SQL) and seed 000's file search (archive.py) score with these.

The float operations follow sqlite's fts5_aux.c one by one, so the stores' scores equal
FTS5's `bm25()` to the last bit. This module imports nothing of memlane's: the store may
take it without importing upward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import numpy as np

K1, B = 1.2, 0.75  # fts5_aux.c's bm25 constants (and seed 000's k1, b)


def idf(n_docs: int, holding: int) -> float:
    """fts5_aux.c's idf: log((N - n + 0.5) / (n + 0.5)), floored at 1e-6 (a term in most
    rows still counts a little)."""
    value = math.log((n_docs - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else 1e-6


def lucene_idf(n_docs: int, holding: int) -> float:
    """Lucene's idf, ln(1 + (N - n + .5) / (n + .5)): never negative, no floor needed."""
    return math.log(1 + (n_docs - holding + 0.5) / (holding + 0.5))


@overload
def term_score(idf: float, f: float, dl: float, avgdl: float, k1: float = K1, b: float = B) -> float: ...
@overload
def term_score(idf: float, f: np.ndarray, dl: np.ndarray, avgdl: float, k1: float = K1, b: float = B) -> np.ndarray: ...
def term_score(idf: float, f: Any, dl: Any, avgdl: float, k1: float = K1, b: float = B) -> Any:
    """What one query term adds to a row's score: `f` its (weighted) hits in the row, `dl`
    the row's length in tokens, `avgdl` the mean length. Floats, or numpy arrays of them:
    the operations are the same, one by one."""
    return idf * ((f * (k1 + 1.0)) / (f + k1 * ((1 - b) + b * dl / avgdl)))


def term_sql(idf: str, f: str, dl: str, avgdl: str) -> str:
    """`term_score` as a SQL expression over the columns or parameters named (PostgreSQL)."""
    return f"{idf} * (({f} * {K1 + 1.0}) / ({f} + {K1} * ((1 - {B}) + {B} * {dl} / {avgdl})))"


def skippable(idfs: Sequence[float], sizes: Sequence[int]) -> set[int]:
    """Terms whose rows need not all be candidates (MaxScore): the most common ones, while
    together they weigh under half the lightest remaining term and hold most of the postings
    (`sizes`). Ranking every row of a short query is cheap already: none then."""
    if len(idfs) < 2 or sum(sizes) < 4_096:
        return set()
    by_idf = sorted(range(len(idfs)), key=lambda i: idfs[i])
    out: set[int] = set()
    weight = 0.0
    for i, nxt in zip(by_idf, by_idf[1:], strict=False):
        if weight + idfs[i] > 0.5 * idfs[nxt]:
            break
        weight += idfs[i]
        out.add(i)
    return out if 2 * sum(sizes[i] for i in out) >= sum(sizes) else set()


def max_term_score(idf: float, k1: float = K1) -> float:
    """The most one term can add to a row's score, however often the row holds it."""
    return idf * (k1 + 1.0)
