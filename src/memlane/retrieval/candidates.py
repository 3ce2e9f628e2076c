"""The candidates of one pool: the rows the full text finds (BM25) ∪ the nearest rows by
meaning (KNN) ∪ rows a search names ahead (a conversation's first turns), each scored on both
sides where the data allows, with the turns' places that the dense smoothing and the turn
priors read."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memlane import bridge
from memlane.config import SearchConfig
from memlane.crosslingual import LanguageAxes, without_language
from memlane.models import Corpus, Scope, TurnPlace
from memlane.retrieval.query import common_words, dense_text, drop_common, told_of_user
from memlane.store import Store, passage_rowids, vector_owner
from memlane.text import fts_query, fts_terms, language_of


@dataclass
class Candidate:
    rowid: int
    bm25: float | None = None
    bm25_rank: int | None = None
    similarity: float = 0.0
    vector_rank: int | None = None
    relevance: float = 0.0
    at: float | None = None  # turns: when it was said, POSIX time (for a date the query names)
    session: str | None = None  # turns: its session (for a conversation the query names)
    extra: dict[str, float] = field(default_factory=dict)
    # memories (issue 32): the relevance a replaced version of this fact had for the query
    inherited: float = 0.0


@dataclass
class Pool:
    """One pool's candidates and what fusion and the turn priors read of it."""

    cands: dict[int, Candidate]
    dense: dict[int, float]  # the dense side fusion reads: {rowid: similarity} (smoothed for turns)
    window: list[TurnPlace]  # turns: the candidates' places and their neighbours'; else empty
    groups: dict[int, bool] | None  # {rowid: in Chinese} where both languages are among them
    vector: np.ndarray | None  # the vector the dense side scored with (crosslingual.py)


def gather(
    store: Store,
    cfg: SearchConfig,
    corpus: Corpus,
    scope: Scope,
    query: str,
    query_vector: np.ndarray | Callable[[str], np.ndarray] | None,
    size: int,
    words: list[str],
    passages: int = 0,
    include: Sequence[int] = (),
    languages: LanguageAxes | None = None,
) -> Pool:
    """Lexical ∪ dense candidates ∪ the rows in `include`, each scored on both sides where
    the data allows; `size` is the pool's (0: the configured candidate counts). A turn with
    passage vectors (`passages`: the most a turn has) is as similar as its best one. With
    `languages` (memories, episodes), the nearest rows are those nearest the query without its
    language; where a candidate is in another language than the query, every candidate is
    scored so, and where both languages are among them each is standardised apart: the
    embedder's cosines sit higher for rows in the query's language. All in the query's
    language, the query is scored as it is (the correction would only blur it)."""
    cands = _lexical(store, cfg, corpus, scope, words, size, include)
    # a vector given as such is used as is: only a function needs the text to embed
    asked = told_of_user(query) if corpus == "memories" and cfg.memory_third_person else query
    qv = (query_vector if query_vector is None or isinstance(query_vector, np.ndarray)
          else query_vector(dense_text(store, corpus, scope, asked, cfg)))
    if qv is not None and float(np.linalg.norm(qv)) == 0:  # punctuation-only queries have no vector
        qv = None
    per_turn = corpus == "turns" and passages > 0
    neutral = without_language(qv, languages.basis) if languages is not None and qv is not None else None
    if qv is not None:
        _nearest(store, cfg, corpus, scope, cands, qv if neutral is None else neutral, size, per_turn)
    smooth = corpus == "turns" and qv is not None and bool(cfg.dense_neighbour_weights) and bool(cands)
    window = _places(store, cfg, scope, cands, smooth) if corpus == "turns" else []
    groups: dict[int, bool] | None = None
    if neutral is not None and languages is not None and qv is not None and cands:
        groups, qv = _languages(store, corpus, scope, query, cands, languages, qv, neutral)
    pool = Pool(cands, {}, window, groups, qv)
    if qv is not None and cands:
        pool.dense = _scored_densely(store, cfg, corpus, scope, cands, window, qv, passages if per_turn else 0,
                                     smooth)
    return pool


def _lexical(store: Store, cfg: SearchConfig, corpus: Corpus, scope: Scope, words: list[str], size: int,
             include: Sequence[int]) -> dict[int, Candidate]:
    """The rows the full text finds, best first, then those in `include`."""
    match = fts_query(drop_common(store, corpus, scope, fts_terms(words)[: cfg.max_query_terms], cfg))
    weights = (1.0, cfg.neighbour_weight) if corpus == "turns" else (1.0,)
    cands: dict[int, Candidate] = {}
    for rank, (rowid, score) in enumerate(store.fts(corpus, scope, match, max(size, cfg.fts_candidates), weights), 1):
        cands[rowid] = Candidate(rowid, bm25=score, bm25_rank=rank)
    if corpus != "turns" and cfg.bridge_weight > 0 and words:
        _bridged(store, cfg, corpus, scope, words, size, cands)
    for rowid in include:
        cands.setdefault(rowid, Candidate(rowid))
    return cands


def _bridged(store: Store, cfg: SearchConfig, corpus: Corpus, scope: Scope, words: list[str], size: int,
             cands: dict[int, Candidate]) -> None:
    """The rows holding the query words' words in the other language (bridge.py) join the
    lexical candidates, their BM25 × `bridge_weight` added to what the query's own words
    scored; then ranked again. Those the scope's rows mostly hold ("用户" for "user") count as
    the query's own common words do: not at all."""
    across = bridge.bridge()
    other = across.across(words) if across is not None else []
    if other and (common := common_words(store, corpus, scope, other, cfg)):
        other = [w for w in other if w not in common]
    if not other:
        return
    match = fts_query(fts_terms(other)[: cfg.max_query_terms])
    for rowid, score in store.fts(corpus, scope, match, max(size, cfg.fts_candidates)):
        c = cands.setdefault(rowid, Candidate(rowid))
        c.bm25 = (c.bm25 or 0.0) + cfg.bridge_weight * score
    ranked = sorted((c for c in cands.values() if c.bm25 is not None), key=lambda c: (c.bm25, c.rowid))
    for rank, c in enumerate(ranked, 1):
        c.bm25_rank = rank


def _nearest(store: Store, cfg: SearchConfig, corpus: Corpus, scope: Scope, cands: dict[int, Candidate],
             qv: np.ndarray, size: int, per_turn: bool) -> None:
    """The rows nearest `qv` join the candidates with their similarity (a turn's best vector)."""
    k = max(size, cfg.vector_candidates)
    near = store.knn(corpus, scope, qv, 2 * k if per_turn else k)
    best: dict[int, float] = {}
    for rowid, dist in near:  # nearest first: the first vector of a turn is its best
        best.setdefault(vector_owner(rowid), 1.0 - dist)
    for rowid, sim in list(best.items())[:k]:
        cands.setdefault(rowid, Candidate(rowid)).similarity = sim
    if per_turn and cfg.passage_weight < 1.0:  # blended when scored densely: every candidate is rescored
        for c in cands.values():
            c.similarity = 0.0


def _places(store: Store, cfg: SearchConfig, scope: Scope, cands: dict[int, Candidate],
            smooth: bool) -> list[TurnPlace]:
    """Where the candidate turns sit (with their neighbours' places as far as smoothing or the
    reply prior reach), read only where something uses them; each candidate learns its time
    and session."""
    if not cands or not (smooth or cfg.session_prior > 0 or cfg.turn_length_prior > 0 or cfg.question_penalty > 0
                         or cfg.reply_prior > 0 or cfg.speaker_prior > 0):
        return []
    width = max(len(cfg.dense_neighbour_weights) if smooth else 0, 1 if cfg.reply_prior > 0 else 0)
    window = store.turn_windows(scope, list(cands), width)
    for w in window:
        if w.rowid in cands:
            cands[w.rowid].at, cands[w.rowid].session = w.at, w.session_id
    return window


def _languages(store: Store, corpus: Corpus, scope: Scope, query: str, cands: dict[int, Candidate],
               languages: LanguageAxes, qv: np.ndarray, neutral: np.ndarray) -> tuple[dict[int, bool] | None,
                                                                                      np.ndarray]:
    """(each candidate's language where both are among them, else None; the vector to score
    with): without the query's language where a candidate is in the other one."""
    along = store.similarities(corpus, scope, list(cands), languages.passage_axis)
    groups = {r: languages.chinese(v) for r, v in along.items()}
    asked_in_chinese = language_of(query) == "zh"
    if any(g != asked_in_chinese for g in groups.values()):
        qv = neutral  # a candidate in the other language: every one is scored without its language
    else:  # all in the query's language: the nearest were found without it, scored with it below
        for c in cands.values():
            c.similarity = 0.0
    chinese = sum(groups.values())
    if min(chinese, len(groups) - chinese) < 2:
        return None, qv  # one language (or a lone other): one standardisation
    return groups, qv


def _scored_densely(store: Store, cfg: SearchConfig, corpus: Corpus, scope: Scope, cands: dict[int, Candidate],
                    window: list[TurnPlace], qv: np.ndarray, passages: int, smooth: bool) -> dict[int, float]:
    """Every candidate's similarity and vector rank; returns the dense side fusion reads.

    The lexical-only candidates are scored densely too: cutting the dense side to its own
    top-k loses answers that only the words found (issue 3, measured). For turns the
    neighbours' vectors come in the same fetch."""
    wanted = [w.rowid for w in window] if smooth else [r for r, c in cands.items() if c.similarity == 0.0]
    sims = _best_similarities(store, corpus, scope, wanted, qv, passages, cfg.passage_weight)
    for rowid, c in cands.items():
        if rowid in sims:
            c.similarity = sims[rowid]
    dense = {r: c.similarity for r, c in cands.items() if c.similarity != 0.0}
    for rank, rowid in enumerate(sorted(dense, key=lambda r: -dense[r]), 1):
        cands[rowid].vector_rank = rank
    return _neighbour_smoothed(window, set(cands), sims, cfg.dense_neighbour_weights) if smooth else dense


def _best_similarities(store: Store, corpus: Corpus, scope: Scope, rowids: Sequence[int], qv: np.ndarray,
                       passages: int, passage_weight: float = 1.0) -> dict[int, float]:
    """{rowid: similarity} of rows with a vector. A turn with passages scores its key's
    similarity raised by `passage_weight` × how far its best passage is above it."""
    if passages <= 0:
        return store.similarities(corpus, scope, rowids, qv)
    ids = list(rowids) + [p for r in rowids for p in passage_rowids(r, passages)]
    own: dict[int, float] = {}
    best: dict[int, float] = {}
    for rowid, sim in store.similarities(corpus, scope, ids, qv).items():
        owner = vector_owner(rowid)
        if owner == rowid:
            own[rowid] = sim
        elif sim > best.get(owner, -math.inf):
            best[owner] = sim
    out = dict(own)
    for owner, sim in best.items():
        base = own.get(owner)
        out[owner] = sim if base is None else base + passage_weight * max(0.0, sim - base)
    return out


def _neighbour_smoothed(window: list[TurnPlace], wanted: set[int], sims: dict[int, float],
                        weights: Sequence[float]) -> dict[int, float]:
    """Each turn's similarity as the weighted mean of its own and its neighbours' (same
    session, ±len(weights) turns): an answer is often spread over a few turns."""
    pos = {(w.session_id, w.seq): w.rowid for w in window}
    out: dict[int, float] = {}
    for rowid, sess, seq, *_ in window:
        if rowid not in wanted or rowid not in sims:
            continue
        num, den = sims[rowid], 1.0
        for d, w in enumerate(weights, 1):
            for other in (pos.get((sess, seq - d)), pos.get((sess, seq + d))):
                if other is not None and other in sims:
                    num += w * sims[other]
                    den += w
        out[rowid] = num / den
    return out
