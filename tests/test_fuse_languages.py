"""Fusion where a memory pool holds both languages (retrieval/fuse.py, issues 29 and 32)."""

from __future__ import annotations

from memlane.retrieval.candidates import Candidate
from memlane.retrieval.fuse import fuse_scores

# rows 1-4 Chinese: the answer (1) and three others; rows 5-8 English, none related and all
# about as near the question (an English question's cosines sit level across them)
DENSE = {1: 0.90, 2: 0.80, 3: 0.80, 4: 0.80, 5: 0.751, 6: 0.750, 7: 0.749, 8: 0.750}
GROUPS = {r: r <= 4 for r in DENSE}


def fused(group_spread: bool) -> dict[int, float]:
    cands = {r: Candidate(r) for r in DENSE}
    fuse_scores(cands, 1.0, DENSE, GROUPS, group_spread)
    return {r: c.relevance for r, c in cands.items()}


def test_each_language_keeps_its_level_and_is_scaled_at_least_by_the_spread_within_languages() -> None:
    rel = fused(group_spread=False)
    # the levels are taken out: each language's rows centre on 0
    assert abs(sum(rel[r] for r in range(1, 5))) < 1e-9 and abs(sum(rel[r] for r in range(5, 9))) < 1e-9
    # the answer stands out; the English rows' tiny differences stay tiny beside it
    assert rel[1] == max(rel.values())
    assert max(rel[r] for r in range(5, 9)) < 0.1 * rel[1]
    # the Chinese rows, spread wider than the pool within languages, keep their own scale
    zh = [DENSE[r] for r in range(1, 5)]
    mean = sum(zh) / 4
    std = (sum((v - mean) ** 2 for v in zh) / 4) ** 0.5
    assert abs(rel[1] - (0.90 - mean) / std) < 1e-9


def test_each_languages_own_spread_lifts_the_best_of_unrelated_rows() -> None:
    """Issue 29's standardisation, kept behind `language_group_spread`: a row 0.001 above its
    fellows is as far above them as the answer is above the others — what issue 32 measured
    putting an unrelated English memory first for a question whose answer is Chinese."""
    rel = fused(group_spread=True)
    assert rel[5] > 0.8 * rel[1]


def test_one_language_is_standardised_over_the_whole_pool() -> None:
    for spread in (False, True):
        cands = {r: Candidate(r) for r in DENSE}
        fuse_scores(cands, 1.0, DENSE, None, spread)
        values = list(DENSE.values())
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        assert abs(cands[1].relevance - (0.90 - mean) / std) < 1e-9
