"""The lexical and the dense side fused into one relevance per candidate: by score (BM25 over
the pool's best + the dense similarity standardised over the pool, the default) or by rank
(reciprocal-rank fusion), the turn priors added; then scaled so the best candidate's is 1."""

from __future__ import annotations

import numpy as np

from memlane.config import SearchConfig
from memlane.models import Corpus
from memlane.retrieval.candidates import Candidate, Pool
from memlane.retrieval.priors import add_turn_priors


def fuse_rrf(cands: dict[int, Candidate], rrf_k: int) -> None:
    """Reciprocal-rank fusion of the lexical and the dense rankings into `relevance` ∈ (0, 1]."""
    for c in cands.values():
        r = 0.0
        if c.bm25_rank is not None:
            r += 1.0 / (rrf_k + c.bm25_rank)
        if c.vector_rank is not None:
            r += 1.0 / (rrf_k + c.vector_rank)
        c.relevance = r * (rrf_k + 1) / 2  # 1.0 for rank 1 on both sides


def fuse_scores(cands: dict[int, Candidate], w_dense: float, dense: dict[int, float],
                groups: dict[int, bool] | None = None, group_spread: bool = False) -> None:
    """BM25 normalised by the pool's best + w_dense × dense similarity z-scored over the pool.

    Embedders differ in where their cosines sit (e5 puts unrelated text at 0.8), so the dense
    side is standardised per query; the pool (lexical ∪ dense candidates) gives the statistics.
    Where `groups` names a group for each row (their language: issue 29), each group's mean is
    its own — the embedder's cosines sit higher for rows in the query's language — and so is
    its spread, but never less than the pool's spread within the groups (each row about its own
    group's mean): a group of unrelated rows lies close together, and its own spread alone would
    make its best row look as near as the other group's best whatever it says (issue 32;
    `group_spread`: each group's own alone, as issue 29 had it)."""
    best = max((-c.bm25 for c in cands.values() if c.bm25 is not None), default=0.0)
    stats: dict[bool | None, tuple[float, float]] = {}
    spread: list[np.ndarray] = []  # each group's rows about its own mean: the spread within languages
    for g in {None} if groups is None else set(groups.values()):
        values = np.array([v for r, v in dense.items() if groups is None or groups.get(r) == g], dtype=np.float64)
        if len(values) > 1:
            stats[g] = (float(values.mean()), float(values.std()))
            spread.append(values - values.mean())
    if groups is not None and not group_spread and spread:
        within = float(np.concatenate(spread).std())
        stats = {g: (mean, max(std, within)) for g, (mean, std) in stats.items()}
    for rowid, c in cands.items():
        lexical = (-c.bm25 / best) if (c.bm25 is not None and best > 0) else 0.0
        mean, std = stats.get(None if groups is None else groups.get(rowid), (0.0, 0.0))
        z = (dense[rowid] - mean) / std if (rowid in dense and std > 1e-9) else 0.0
        c.relevance = lexical + w_dense * z


def normalise_relevance(cands: dict[int, Candidate]) -> None:
    """Scale so the best candidate has relevance 1 and none is below 0: the composite rank's
    weights then mean what config says (min-max would turn a tiny BM25 length difference into
    the whole similarity range)."""
    hi = max(c.relevance for c in cands.values())
    for c in cands.values():
        c.relevance = max(0.0, c.relevance / hi) if hi > 0 else 1.0


def fuse(pool: Pool, query: str, cfg: SearchConfig, corpus: Corpus) -> None:
    """Each candidate's relevance: the two sides fused, then (fused by score) the turn priors."""
    if cfg.fusion == "rrf":
        fuse_rrf(pool.cands, cfg.rrf_k)
        return
    fuse_scores(pool.cands, cfg.w_dense if corpus == "turns" else cfg.memory_w_dense, pool.dense, pool.groups,
                cfg.language_group_spread)
    if corpus == "turns":
        add_turn_priors(query, pool.window, pool.cands, cfg)
