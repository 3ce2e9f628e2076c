"""Hybrid retrieval over the three corpora: memories, turns (conversation traces), episodes.

query → keywords (CJK words via jieba, stemmed Latin words via FTS5 porter) → FTS5 BM25
candidates ∪ vector KNN candidates → every candidate scored densely → fusion → turn priors
(length, question, reply, speaker, session) → composite rank (relevance, importance,
recency) → filters (scope always; expiry, status, category, time) → hits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memlane.config import SearchConfig
from memlane.crosslingual import LanguageAxes, without_language
from memlane.dates import SESSION_WORDS, Span, mentioned_period, session_reference
from memlane.errors import ValidationError
from memlane.models import Corpus, Episode, Hit, MemoryFacts, MemoryRecord, Scope, Turn, TurnPlace
from memlane.store import Store, passage_rowids, turn_search_text, vector_owner
from memlane.text import (
    CJK_RUN,
    fts_query,
    fts_terms,
    highlights,
    index_term,
    keywords,
    language_of,
    segment,
)


@dataclass(frozen=True)
class Filters:
    """What a search may return besides the scope (always applied)."""

    category: str | Sequence[str] | None = None
    status: str | None = "active"  # memories only; None = any
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_expired: bool = False
    roles: Sequence[str] | None = None  # turns only

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Filters:
        if not data:
            return cls()
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValidationError("filters", f"unknown filter {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}")
        return cls(**data)


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


def analyse(query: str, max_keywords: int | None = None) -> tuple[list[str], str]:
    """(keywords, FTS5 match expression) for a query."""
    words = keywords(query, max_keywords)
    return words, fts_query(fts_terms(words))


_WORD = re.compile(r"[^\W_]+(?:'s)?")


def _query_words(query: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, index terms a row must hold to hold the word) of each query word: Latin
    words stemmed, CJK words of two or more characters (jieba) as their bigrams."""
    out: list[tuple[int, int, list[str]]] = []
    for m in _WORD.finditer(query):
        word = m.group()
        if not CJK_RUN.search(word):
            out.append((m.start(), m.end(), [index_term(word.removesuffix("'s"))]))
    for m in CJK_RUN.finditer(query):
        pos = m.start()
        for word in segment(m.group()):
            if len(word) >= 2:
                out.append((pos, pos + len(word), fts_terms([word])))
            pos += len(word)
    return sorted(out)


def dense_text(store: Store, corpus: Corpus, scope: Scope, query: str, cfg: SearchConfig) -> str:
    """What is embedded for the dense side: the query without the words that at least
    `dense_common_share` of the scope's rows hold, such as the speakers' names in a
    conversation (小林 as well as Caroline). They pull the query towards every row alike
    (issue 3: +1 pt R@10 on LoCoMo). The query itself when nothing would be left or the
    scope is small."""
    facts = corpus != "turns"  # a scope of memories is small sooner: its own thresholds (issue 29)
    share = cfg.memory_common_share if facts else cfg.dense_common_share
    min_docs = cfg.memory_common_min_docs if facts else cfg.dense_common_min_docs
    if share >= 1:
        return query
    spans, seen = [], set()
    for span in _query_words(query):  # the first words, up to max_query_terms index terms
        seen.update(span[2])
        if len(seen) > cfg.max_query_terms:
            break
        spans.append(span)
    if not spans:
        return query
    # counted in the rows' own text: a turn's neighbours column holds every speaker's name
    counts, total = store.scope_documents(corpus, scope, list({t for *_, ts in spans for t in ts}), column=0)
    if total < min_docs:
        return query
    # a CJK word counts as held where all its bigrams are: the least held one bounds it
    common = [(a, b) for a, b, ts in spans if min(counts.get(t, 0) for t in ts) >= share * total]
    if not common or len(common) == len(spans):
        return query
    out, pos = [], 0
    for a, b in common:
        out.append(query[pos:a])
        pos = b
    out.append(query[pos:])
    return re.sub(r"\s+", " ", "".join(out)).strip()


def drop_common(store: Store, corpus: Corpus, scope: Scope, terms: list[str], cfg: SearchConfig) -> list[str]:
    """Leave out the words most of the scope's documents hold, in a large scope; the two
    rarest always stay. Counted in the scope alone: another user's rows must not change which
    words this user's query keeps."""
    if len(terms) <= 2:
        return terms
    index = [index_term(t) for t in terms]
    # a store may stop counting a word past the share: which of those are rarest then needs
    # their whole counts, asked for only where fewer than two words are under it
    for above in (cfg.common_term_share, 1.0):
        counts, total = store.scope_documents(corpus, scope, index, min_docs=cfg.common_term_min_docs, above=above,
                                              drift=cfg.common_term_drift)
        if total < cfg.common_term_min_docs:
            return terms
        share = {t: counts.get(x, 0) / total for t, x in zip(terms, index, strict=True)}
        keep = {t for t in terms if share[t] <= cfg.common_term_share}
        if len(keep) >= 2:
            break
    rarest = set(sorted(terms, key=lambda t: share[t])[:2])
    return [t for t in terms if t in keep or t in rarest]


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
                groups: dict[int, bool] | None = None) -> None:
    """BM25 normalised by the pool's best + w_dense × dense similarity z-scored over the pool.

    Embedders differ in where their cosines sit (e5 puts unrelated text at 0.8), so the dense
    side is standardised per query; the pool (lexical ∪ dense candidates) gives the statistics,
    per group of rows where `groups` names one for each (their language: issue 29)."""
    best = max((-c.bm25 for c in cands.values() if c.bm25 is not None), default=0.0)
    stats: dict[bool | None, tuple[float, float]] = {}
    for g in {None} if groups is None else set(groups.values()):
        values = np.array([v for r, v in dense.items() if groups is None or groups.get(r) == g], dtype=np.float64)
        stats[g] = (float(values.mean()), float(values.std())) if len(values) > 1 else (0.0, 0.0)
    for rowid, c in cands.items():
        lexical = (-c.bm25 / best) if (c.bm25 is not None and best > 0) else 0.0
        mean, std = stats.get(None if groups is None else groups.get(rowid), (0.0, 0.0))
        z = (dense[rowid] - mean) / std if (rowid in dense and std > 1e-9) else 0.0
        c.relevance = lexical + w_dense * z


def recency(at: datetime, now: datetime, half_life_days: float) -> float:
    """Seed 004 §5.2: 0.5 ** (age_days / half_life)."""
    age_days = max(0.0, (now - at).total_seconds() / 86400)
    return math.pow(0.5, age_days / half_life_days)


def candidates(
    store: Store,
    cfg: SearchConfig,
    corpus: Corpus,
    scope: Scope,
    query: str,
    query_vector: np.ndarray | Callable[[str], np.ndarray] | None,
    pool: int,
    words: list[str] | None = None,
    passages: int = 0,
    include: Sequence[int] = (),
    languages: LanguageAxes | None = None,
    scored_with: list[np.ndarray] | None = None,
) -> dict[int, Candidate]:
    """Lexical ∪ dense candidates ∪ the rows in `include`, each scored on both sides where
    the data allows. A turn with passage vectors (`passages`: the most a turn has) is as
    similar as its best one. With `languages` (memories, episodes), the nearest rows are those
    nearest the query without its language; where a candidate is in another language than the
    query, every candidate is scored so, and where both languages are among them each is
    standardised apart: the embedder's cosines sit higher for rows in the query's language.
    All in the query's language, the query is scored as it is (the correction would only blur
    it). The vector the dense side scored with is appended to `scored_with`."""
    words = keywords(query, cfg.max_query_terms) if words is None else words
    match = fts_query(drop_common(store, corpus, scope, fts_terms(words)[: cfg.max_query_terms], cfg))
    weights = (1.0, cfg.neighbour_weight) if corpus == "turns" else (1.0,)
    cands: dict[int, Candidate] = {}
    for rank, (rowid, score) in enumerate(store.fts(corpus, scope, match, max(pool, cfg.fts_candidates), weights), 1):
        cands[rowid] = Candidate(rowid, bm25=score, bm25_rank=rank)
    for rowid in include:
        cands.setdefault(rowid, Candidate(rowid))
    # a vector given as such is used as is: only a function needs the text to embed
    qv = (query_vector if query_vector is None or isinstance(query_vector, np.ndarray)
          else query_vector(dense_text(store, corpus, scope, query, cfg)))
    if qv is not None and float(np.linalg.norm(qv)) == 0:  # punctuation-only queries have no vector
        qv = None
    dense: dict[int, float] = {}
    per_turn = corpus == "turns" and passages > 0
    neutral = without_language(qv, languages.basis) if languages is not None and qv is not None else None
    if qv is not None:
        k = max(pool, cfg.vector_candidates)
        near = store.knn(corpus, scope, qv if neutral is None else neutral, 2 * k if per_turn else k)
        best: dict[int, float] = {}
        for rowid, dist in near:  # nearest first: the first vector of a turn is its best
            best.setdefault(vector_owner(rowid), 1.0 - dist)
        for rowid, sim in list(best.items())[:k]:
            cands.setdefault(rowid, Candidate(rowid)).similarity = sim
        if per_turn and cfg.passage_weight < 1.0:  # blended below: every candidate is rescored
            for c in cands.values():
                c.similarity = 0.0
    smooth = corpus == "turns" and qv is not None and bool(cfg.dense_neighbour_weights) and bool(cands)
    window: list[TurnPlace] = []
    if corpus == "turns" and cands and (smooth or cfg.session_prior > 0 or cfg.turn_length_prior > 0
                                          or cfg.question_penalty > 0 or cfg.reply_prior > 0
                                          or cfg.speaker_prior > 0):
        width = max(len(cfg.dense_neighbour_weights) if smooth else 0, 1 if cfg.reply_prior > 0 else 0)
        window = store.turn_windows(scope, list(cands), width)
        for w in window:
            if w.rowid in cands:
                cands[w.rowid].at, cands[w.rowid].session = w.at, w.session_id
    groups: dict[int, bool] | None = None
    if neutral is not None and languages is not None and cands:
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
            groups = None  # one language (or a lone other): one standardisation
    if scored_with is not None and qv is not None:
        scored_with.append(qv)
    if qv is not None and cands:
        # score the lexical-only candidates densely too: cutting the dense side to its own
        # top-k loses answers that only the words found (issue 3, measured). For turns the
        # neighbours' vectors come in the same fetch.
        wanted = [w.rowid for w in window] if smooth else [r for r, c in cands.items() if c.similarity == 0.0]
        sims = _best_similarities(store, corpus, scope, wanted, qv, passages if per_turn else 0,
                                  cfg.passage_weight)
        for rowid, c in cands.items():
            if rowid in sims:
                c.similarity = sims[rowid]
        dense = {r: c.similarity for r, c in cands.items() if c.similarity != 0.0}
        for rank, rowid in enumerate(sorted(dense, key=lambda r: -dense[r]), 1):
            cands[rowid].vector_rank = rank
        if smooth:
            dense = _neighbour_smoothed(window, set(cands), sims, cfg.dense_neighbour_weights)
    if cfg.fusion == "rrf":
        fuse_rrf(cands, cfg.rrf_k)
    else:
        fuse_scores(cands, cfg.w_dense if corpus == "turns" else cfg.memory_w_dense, dense, groups)
        if corpus == "turns" and window:
            window = [w._replace(question=w.question and w.length <= cfg.question_max_chars) for w in window]
            _turn_priors(window, cands, cfg.turn_length_prior, cfg.question_penalty, cfg.turn_length_cap)
            role = chat_role(query, window, cands)
            _reply_prior(window, cands, cfg.reply_prior, role)
            _speaker_prior(query, window, cands, cfg.speaker_prior)
            _role_prior(window, cands, cfg.role_prior, role)
        if corpus == "turns" and cfg.session_prior > 0:
            weight = cfg.accumulated_session_prior if asks_accumulated(query) else cfg.session_prior
            if weight > 0:
                _session_prior(window, cands, weight, cfg.session_spread_chars)
    return cands


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


def _turn_priors(window: list[TurnPlace], cands: dict[int, Candidate], length_weight: float,
                 question_penalty: float, length_cap: int = 10**9) -> None:
    """Favour turns that state something: longer ones and not questions, which ask rather
    than hold the answer. The log length is centred over each speaker's candidates (an
    assistant's long replies are long for an assistant, not informative) and stops growing at
    `length_cap` (a pasted document is no likelier to hold the answer): issue 14."""
    places = {w.rowid: w for w in window if w.rowid in cands}
    if not places:
        return
    logs = {r: math.log1p(min(w.length, length_cap)) for r, w in places.items()}
    by_speaker: dict[str | None, list[float]] = {}
    for r, w in places.items():
        by_speaker.setdefault(w.speaker, []).append(logs[r])
    mean = {s: sum(v) / len(v) for s, v in by_speaker.items()}
    for rowid, w in places.items():
        cands[rowid].relevance += (length_weight * (logs[rowid] - mean[w.speaker])
                                   - (question_penalty if w.question else 0.0))


def _reply_prior(window: list[TurnPlace], cands: dict[int, Candidate], weight: float,
                 role: str | None = None) -> None:
    """A turn that asks passes weight × its relevance to the next turn of its session: a
    question found by the query's words is often answered right after, in other words. Not
    to a turn of the other role than the query asks about (`role`): an assistant's answer to
    the user's question does not hold what the user did (issue 14, LongMemEval)."""
    if weight <= 0:
        return
    at = {(w.session_id, w.seq): w.rowid for w in window}
    role_of = {w.rowid: w.role for w in window if w.rowid in cands}
    passed: dict[int, float] = {}
    for w in window:
        reply = at.get((w.session_id, w.seq + 1))
        if w.question and w.rowid in cands and reply in cands and reply is not None \
                and (role is None or role_of.get(reply) == role):
            passed[reply] = max(passed.get(reply, 0.0), weight * max(cands[w.rowid].relevance, 0.0))
    for rowid, bonus in passed.items():
        cands[rowid].relevance += bonus


def named_speakers(query: str, speakers: set[str]) -> list[str]:
    """The speakers a query names: Latin names as whole words, any case; CJK names as text."""
    out = []
    for name in speakers:
        if CJK_RUN.search(name):
            found = name in query
        else:
            found = re.search(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", query, re.IGNORECASE) is not None
        if found:
            out.append(name)
    return out


def _speaker_prior(query: str, window: list[TurnPlace], cands: dict[int, Candidate], weight: float) -> None:
    """When the query names exactly one of the candidates' speakers ("What did Melanie
    paint?"), add weight to that speaker's turns. Two names named: no side is favoured."""
    if weight <= 0:
        return
    said = {w.rowid: w.speaker for w in window if w.rowid in cands and w.speaker}
    named = named_speakers(query, set(said.values()))
    if len(named) != 1:
        return
    for rowid, speaker in said.items():
        if speaker == named[0]:
            cands[rowid].relevance += weight


# Who a query asks about, in a user's chat with an assistant: "what did I / my" is in the
# user's own turns; "what did you recommend", "our previous conversation", "你给我推荐过" is in
# the assistant's. Third-person questions (LoCoMo's "What did Melanie paint?") name neither.
_ASKS_ASSISTANT = re.compile(
    r"\byou(?:'ve)?\s+(?:\w+\s+)?(?:told|said|recommended|suggested|mentioned|gave|listed|provided|shared|"
    r"explained|described|named|wrote|advised)\b|\b(?:did|have|had) you\s+(?:\w+\s+)?(?:tell|say|"
    r"recommend|suggest|mention|give|list|provide|share|explain|describe|name|write|advise)\b|"
    r"\bremind me\b|\bour (?:previous |last |earlier )?"
    r"(?:conversation|chat|discussion)\b|你.{0,3}(?:推荐|告诉|建议|提到|介绍|说|讲|列|给).{0,4}过|你.{0,2}曾经",
    re.IGNORECASE)
_ASKS_USER = re.compile(r"\b(?:i|my|me|mine|myself|i'm|i've|i'd)\b|我", re.IGNORECASE)


def asked_role(query: str) -> str | None:
    """'assistant' when the query recalls what the assistant said, 'user' when it asks about
    the user (first person), None otherwise."""
    if _ASKS_ASSISTANT.search(query):
        return "assistant"
    return "user" if _ASKS_USER.search(query) else None


# What has built up over time, asked of a sentence: "What books has Melanie read?", "Which
# cities have you visited?", "How many hours have I spent on…", "你给我推荐过哪些…", "去过几次".
# Having is not having done: "have to", "what pets does she have", "how many plants do I have
# in my garden".
_ACCUMULATED = re.compile(
    r"(?:^|[.!?\n])\s*(?:what|which|where|how many)\b(?:(?!\b(?:do|does|did)\b)[^?.!]){0,80}?"
    r"\b(?:has|have)\s+(?!(?:to|in|on|at|for|with|from|of|as|left)\b)\w"
    r"|哪些.{0,20}过|过.{0,10}哪些|几次|多少次", re.IGNORECASE)


def asks_accumulated(query: str) -> bool:
    """Whether the query asks what has built up over time, whose answers are spread over
    several conversations rather than clustered in one."""
    return _ACCUMULATED.search(query) is not None


def chat_role(query: str, window: list[TurnPlace], cands: dict[int, Candidate]) -> str | None:
    """The role the query asks about (`asked_role`), where the candidates hold both a user's
    and an assistant's turns; None elsewhere."""
    roles = {w.role for w in window if w.rowid in cands and w.role}
    return asked_role(query) if {"user", "assistant"} <= roles else None


def _role_prior(window: list[TurnPlace], cands: dict[int, Candidate], weight: float, role: str | None) -> None:
    """Favour the turns of the role the query asks about (issue 14: LongMemEval and
    MemoryBank ask "what did I …" of chats whose assistant replies are long and echo the
    user's words)."""
    if weight <= 0 or role is None:
        return
    for w in window:
        if w.rowid in cands and w.role == role:
            cands[w.rowid].relevance += weight


def _session_prior(window: list[TurnPlace], cands: dict[int, Candidate], weight: float,
                   spread_chars: int) -> None:
    """Add weight × the best relevance in the turn's session: answers cluster by session.

    Where the candidates' median turn is longer than `spread_chars`, a session's k-th best
    turn gets only spread^k of it (spread = spread_chars ÷ that median): a long turn says what
    it says without its neighbours, and an assistant chat's session is one task whose every
    turn echoes the question's words, so the full prior filled the top with one session and
    pushed out the second session a question needs (issue 14, LongMemEval). Short
    conversational turns (LoCoMo, MemoryBank) keep it whole.
    """
    sessions = {w.rowid: w.session_id for w in window if w.rowid in cands}
    lengths = sorted(w.length for w in window if w.rowid in cands)
    spread = min(1.0, spread_chars / max(1, lengths[len(lengths) // 2])) if lengths else 1.0
    best: dict[str, float] = {}
    for rowid, c in cands.items():
        sess = sessions.get(rowid)
        if sess is not None:
            best[sess] = max(best.get(sess, -math.inf), c.relevance)
    seen: dict[str, int] = {}
    for rowid, c in sorted(cands.items(), key=lambda kv: -kv[1].relevance):
        sess = sessions.get(rowid)
        if sess is not None:
            k = seen.get(sess, 0)
            seen[sess] = k + 1
            c.relevance += weight * best[sess] * spread**k


# Ordinary talk about nothing in particular. How near a query is to these is where its
# unrelated text sits for this embedder (e5 puts it near 0.8, the hash embedder near 0): a
# memory's dense relevance is how much nearer than that it is (issue 13, 18).
NULL_TEXTS = ("你好，最近怎么样？", "Hello, how are you?", "今天是星期几", "What time is it?",
              "这是一个普通的句子。", "This is an ordinary sentence.", "谢谢", "Thank you.")


def absolute_relevance(words: Sequence[str], held: Sequence[str], similarity: float, null: float | None,
                       weights: dict[str, float] | None = None, dense_scale: float = 1.0) -> float:
    """An absolute relevance in [0, 1], the same whatever else the search found: the share of
    the query's keywords the text holds (`held`, its highlights; by `weights` where given),
    or-ed with the cosine's lift over the query's similarity to `NULL_TEXTS` (`null`; None:
    no dense side)."""
    if weights is None:
        lexical = len(held) / len(words) if words else 0.0
    else:
        total = sum(weights.get(w, 0.0) for w in words)
        lexical = sum(weights.get(w, 0.0) for w in held) / total if total > 0 else 0.0
    dense = 0.0
    if null is not None and similarity != 0.0 and null < 1.0:
        dense = min(1.0, max(0.0, dense_scale * (similarity - null) / (1.0 - null)))
    return 1.0 - (1.0 - lexical) * (1.0 - dense)


def common_words(store: Store, corpus: Corpus, scope: Scope, words: Sequence[str], cfg: SearchConfig) -> set[str]:
    """The query words at least `memory_common_share` of the scope's rows hold, in a scope of
    `memory_common_min_docs` rows or more: "The user…", "用户…" in a scope of memories. They
    say nothing about which row answers (issue 29: "where does the user work" scored 0.5
    against every memory). Counted in the scope alone; a CJK word counts as held where its
    rarest bigram is."""
    terms = {w: [index_term(t) for t in fts_terms([w])] for w in words}
    counts, total = store.scope_documents(corpus, scope, sorted({t for ts in terms.values() for t in ts}))
    if total < cfg.memory_common_min_docs:
        return set()
    return {w for w, ts in terms.items() if min((counts.get(t, 0) for t in ts), default=0)
            >= cfg.memory_common_share * total}


def search(
    store: Store,
    cfg: SearchConfig,
    corpus: Corpus,
    scope: Scope,
    query: str,
    *,
    limit: int,
    now: datetime,
    query_vector: np.ndarray | Callable[[str], np.ndarray] | None,
    filters: Filters | None = None,
    min_score: float = 0.0,
    null_vectors: np.ndarray | None = None,
    passages: int = 0,
    asked_in: Scope | None = None,
    idle_after: timedelta | None = None,
    language_axes: LanguageAxes | None = None,
) -> list[Hit]:
    """Hits of one corpus for one scope, in rank order (relevance, importance, recency);
    each hit's `score` is its absolute `relevance`, and none is below `min_score`.
    `null_vectors`: `NULL_TEXTS` embedded (passages) by the embedder of the query.
    `asked_in`: the scope asking, when it reads another's rows (an agent its user's shared
    memories): "last time" is its conversation, not that scope's. `idle_after`: an open
    session whose last turn is older than this is over, not going on (seed 001's idle timeout).
    `language_axes`: where the embedder keeps a text's language (crosslingual.py); a memory or
    episode query leaves it out, so a question finds its answer in either language."""
    if not query or not query.strip():
        raise ValidationError("query", "must not be empty")
    if limit < 1:
        raise ValidationError("limit", f"must be at least 1, got {limit}")
    filters = filters or Filters()
    period = mentioned_period(query, now.date())
    # once: for the full-text query and for the highlights; without the words of a window that
    # the date prior applies ("in the past three months" says when, not what: dates.py)
    words = keywords(query, cfg.max_query_terms)
    if isinstance(period, Span) and period.window and cfg.date_prior > 0:
        words = keywords(_without(query, period.window), cfg.max_query_terms) or words
    used: list[np.ndarray] = []  # the query vector, as the dense side computed it
    embedded: dict[str, np.ndarray] = {}

    def remembered(text: str) -> np.ndarray:
        assert callable(query_vector)
        if text not in embedded:  # once, though a filtered search may gather candidates again
            embedded[text] = query_vector(text)
            used.append(embedded[text])
        return embedded[text]

    facts_corpus = corpus != "turns"  # memories and episodes: short statements, any language
    languages = language_axes if facts_corpus else None
    scored_with: list[np.ndarray] = []  # the vector the dense side scored with (crosslingual.py)
    # a word most of the scope's memories hold finds no candidates and is no relevance
    weights: dict[str, float] | None = None
    lexical_words = words
    if facts_corpus and words and (common := common_words(store, corpus, scope, words, cfg)):
        weights = {w: 0.0 if w in common else 1.0 for w in words}
        lexical_words = [w for w in words if w not in common]
    if isinstance(query_vector, np.ndarray):
        used.append(query_vector)
    marked: dict[str, list[str]] = {}  # a text's highlights, found once: a long turn's cost
    null: float | None = None

    def absolute(content: str, c: Candidate, session: str | None = None) -> float:
        if content not in marked:
            marked[content] = highlights(words, content)
        rel = absolute_relevance(words, marked[content], c.similarity, null, weights,
                                 cfg.memory_dense_scale if facts_corpus else 1.0)
        # "what did we talk about last time": that conversation's rows answer it, whatever words
        return max(rel, cfg.min_relevance) if named is not None and session == named else rel

    def dated(at: datetime | None) -> float:
        return cfg.date_prior * period.nearness(at, cfg.date_grace_days) if period and at else 0.0
    # "our first conversation", "上次我们聊": that session's rows are favoured, and its first
    # rows join the candidates (the query's words may find none of them)
    reference = session_reference(query) if cfg.named_session_prior > 0 else None
    named = named_session_id(store, asked_in or scope, reference[0], now, idle_after) if reference else None
    if reference:  # "last time" says which conversation, not what: no row is relevant by holding it
        naming = SESSION_WORDS.intersection(keywords(reference[1]))
        weights = {w: 0.0 if w in naming else (weights or {}).get(w, 1.0) for w in words}
    named_first = store.session_rows(corpus, scope, named, cfg.fts_candidates) if named is not None else []

    def _one_pool(pool: int, returned: set[int], want: int) -> tuple[list[tuple[int, Hit]], set[int], int]:
        """(up to `want` hits in rank order as (rowid, hit), none of the rows in `returned`; the
        rowids the filters kept of the candidates looked at; candidates) of the candidate pool
        of size `pool` (0: the configured sizes). The order is the pool's alone: `want` only
        says where to stop."""
        nonlocal null
        cands = candidates(store, cfg, corpus, scope, query, remembered if callable(query_vector) else query_vector,
                           pool=pool, words=lexical_words, passages=passages,
                           include=named_first, languages=languages, scored_with=scored_with)
        if not cands:
            return [], set(), 0
        vector = scored_with[0] if scored_with else used[0] if used else None
        if null is None and vector is not None and null_vectors is not None \
                and null_vectors.shape[1:] == vector.shape and np.linalg.norm(vector) > 0:
            null = float(np.max(null_vectors @ vector))
        _normalise_relevance(cands)
        kept: set[int] = set()
        if corpus == "turns" and period:
            for c in cands.values():
                c.relevance += dated(None if c.at is None else datetime.fromtimestamp(c.at, UTC))
        if corpus == "turns" and named is not None:
            unplaced = [r for r, c in cands.items() if c.session is None]  # every turn prior off: no window read
            for w in store.turn_windows(scope, unplaced, 0) if unplaced else ():
                if w.rowid in cands:
                    cands[w.rowid].session = w.session_id
            for c in cands.values():
                if c.session == named:
                    c.relevance += cfg.named_session_prior
        rowids = list(cands)
        hits: list[tuple[int, Hit]] = []
        if corpus == "memories":
            # rank on a few columns, then build records only for what is returned
            facts = store.memory_facts(scope, rowids)
            facts = _kept_facts(facts, filters, now)
            kept.update(facts.rowid.tolist())
            prior = np.array([dated(datetime.fromtimestamp(t, UTC)) for t in facts.created_at.tolist()]
                             if period else 0.0)
            if named is not None:
                prior = prior + cfg.named_session_prior * (facts.source_session == named)
            relevance = np.fromiter((cands[r].relevance for r in facts.rowid.tolist()), np.float64, len(facts)) + prior
            age_days = np.maximum(0.0, (now.timestamp() - facts.last_activated) / 86400)
            scores = (cfg.w_similarity * relevance + cfg.w_importance * facts.score
                      + cfg.w_recency * np.power(0.5, age_days / cfg.recency_half_life_days))  # recency(), in numpy
            order = np.lexsort((facts.rowid, -scores))
            ranked = [r for r in facts.rowid[order].tolist() if r not in returned]
            for i in range(0, len(ranked), want):
                top = ranked[i : i + want]
                records = store.memories_by_rowid(scope, top)
                for rowid in top:
                    mem = records.get(rowid)
                    # the record is the last word: another writer may have deleted or changed it since
                    if mem is not None and _keep_memory(mem, filters, now) and len(hits) < want \
                            and (rel := absolute(mem.content, cands[rowid], mem.source_session)) >= min_score:
                        hits.append((rowid, _hit("memories", mem.id, mem.content, rel, cands[rowid],
                                                 f"memory:{mem.id}", mem.created_at, memory=mem)))
                if len(hits) >= want:
                    break
        elif corpus == "turns":
            # only turns' rank is their relevance: materialise the best first, just enough of them
            ordered = sorted(rowids, key=lambda r: (-cands[r].relevance, r))
            start, size = 0, want * 2
            while start < len(ordered):
                # batches double: where filters turn most candidates away, a few round trips
                batch = [r for r in ordered[start : start + size] if r not in returned]
                start, size = start + size, size * 2
                turns = store.turns_by_rowid(scope, batch)
                for rowid in batch:
                    turn = turns.get(rowid)
                    c = cands[rowid]
                    if len(hits) >= want:
                        break  # the rest rank lower, or tie and come later: scoring them is waste
                    if turn is None or not _keep_turn(turn, filters):
                        continue
                    kept.add(rowid)
                    # held words count where the index found them: a tool call's arguments too
                    said = turn_search_text(turn.content, turn.tool_calls, turn.role, turn.name)
                    if (rel := absolute(said, c, turn.session_id)) >= min_score:
                        hit = _hit("turns", turn.id, turn.content, rel, c, f"turn:{turn.session_id}#{turn.seq}",
                                   turn.created_at, turn=turn)
                        hit.highlights = list(marked[said])
                        hits.append((rowid, hit))
                if len(hits) >= want:
                    break
        else:
            rank: dict[int, float] = {}  # the composite an episode is ranked by, not its reported relevance
            for rowid, ep in store.episodes_by_rowid(scope, rowids).items():
                c = cands[rowid]
                if not (_keep_time(ep.ended_at, filters) and filters.session_id in (None, ep.session_id)):
                    continue
                kept.add(rowid)
                if rowid not in returned and (rel := absolute(ep.summary, c, ep.session_id)) >= min_score:
                    near = dated(ep.ended_at) + (cfg.named_session_prior if ep.session_id == named else 0.0)
                    rank[rowid] = (cfg.w_similarity * (c.relevance + near) + cfg.w_importance * ep.score
                                   + cfg.w_recency * recency(ep.ended_at, now, cfg.recency_half_life_days))
                    hits.append((rowid, _hit("episodes", ep.id, ep.summary, rel, c, f"episode:{ep.session_id}",
                                             ep.ended_at, episode=ep)))
            hits = sorted(hits, key=lambda h: (-rank[h[0]], h[1].id))[:want]
        return hits, kept, len(cands)

    # The candidates are the scope's best, whatever the limit: the default-size pool is ranked
    # first and its hits come first. Where it holds fewer hits than the limit asks (a large
    # page, filters that turn most candidates away: a session among many, one role, a week),
    # ever larger pools are ranked and their hits not yet returned appended — never
    # reordering what a smaller pool placed, so a shorter page is the start of a longer one
    # (paging). Widening stops, whatever the limit (else a short page would not be the start
    # of a longer one), once every row was a candidate (both sides returned less than asked),
    # the pool reached `filter_pool_max`, no turn passes the filters, or a wider pool's newly
    # kept candidates were all below `min_score` (lower-ranked rows are weaker still).
    hits: list[Hit] = []
    returned: set[int] = set()
    kept_before: set[int] = set()
    pool = 0
    while True:
        new, kept, pooled = _one_pool(pool, returned, limit - len(hits))
        hits.extend(h for _, h in new)
        returned.update(r for r, _ in new)
        if len(hits) >= limit:
            break
        size = max(pool, min(cfg.fts_candidates, cfg.vector_candidates))
        if pooled < size or size >= cfg.filter_pool_max or (pool and not new and kept - kept_before) \
                or (corpus == "turns" and not _any_turn(store, scope, filters)):
            break
        kept_before |= kept
        pool = min(4 * max(pool, cfg.fts_candidates, cfg.vector_candidates), cfg.filter_pool_max)
    # hits came in rank order, ties by rowid: sorting them again by id would let a tie cut by
    # the page size differ from the longer page's (limit=1 ≠ limit=10's first)
    for h in hits:
        if not h.highlights:  # a turn's came with it: its tool calls' words count too
            h.highlights = list(marked[h.content]) if h.content in marked else highlights(words, h.content)
    return hits


def _without(text: str, words: str) -> str:
    """`text` without `words` wherever they occur, any case."""
    return re.sub(re.escape(words), " ", text, flags=re.IGNORECASE)


def named_session_id(store: Store, scope: Scope, which: str, now: datetime,
                     idle_after: timedelta | None = None) -> str | None:
    """The session a query names by its order (`dates.named_session`): the scope's first, where
    its first turn was said; or its last begun by `now` that holds turns, passing over the
    newest one not ended (the conversation the question is asked in). Sessions begun after
    `now` (imported ahead of the clock) and empty ones (opened and closed without a word, also
    after the one going on) are no conversation of ours: the listing reads on past them. An
    open session silent for longer than `idle_after` is over (an app that never ends its
    sessions asks before storing the new conversation's first message)."""
    if which == "first":
        first = store.get_turns(scope, until=now, limit=1)
        return first[0].session_id if first else None
    limit = 8
    while True:
        listed = store.list_sessions(scope, limit=limit)
        begun = [s for s in listed if s.started_at <= now]
        going_on = next((s.id for s in begun if s.ended_at is None), None)
        if going_on is not None and idle_after is not None:
            last = store.get_turns(scope, session_id=going_on, until=now, limit=1, newest_first=True)
            if not last or last[0].created_at < now - idle_after:
                going_on = None
        said = [s for s in begun if s.message_count > 0 and s.id != going_on]
        if said or len(listed) < limit:
            return said[0].id if said else None
        limit *= 8


def _normalise_relevance(cands: dict[int, Candidate]) -> None:
    """Scale so the best candidate has relevance 1 and none is below 0: the composite rank's
    weights then mean what config says (min-max would turn a tiny BM25 length difference into
    the whole similarity range)."""
    hi = max(c.relevance for c in cands.values())
    for c in cands.values():
        c.relevance = max(0.0, c.relevance / hi) if hi > 0 else 1.0


def _hit(corpus: Corpus, id_: str, content: str, score: float, c: Candidate, source: str,
         created_at: datetime, **record: MemoryRecord | Turn | Episode) -> Hit:
    return Hit(corpus=corpus, id=id_, content=content, score=score, similarity=c.similarity,
               bm25_rank=c.bm25_rank, vector_rank=c.vector_rank, source=source, created_at=created_at,
               **record)


def _keep_time(at: datetime, f: Filters) -> bool:
    return (f.since is None or at >= f.since) and (f.until is None or at <= f.until)


def _kept_facts(m: MemoryFacts, f: Filters, now: datetime) -> MemoryFacts:
    """The memories `_keep_memory` keeps, on columns."""
    keep = np.ones(len(m), np.bool_)
    if not f.include_expired:
        keep &= ~(m.expires_at <= now.timestamp())  # NaN (never) compares False: kept
    if f.status is not None:
        keep &= m.status == f.status
    if f.category is not None:
        keep &= np.isin(m.category, [f.category] if isinstance(f.category, str) else list(f.category))
    if f.session_id is not None:
        keep &= m.source_session == f.session_id
    if f.since is not None:
        keep &= m.created_at >= f.since.timestamp()
    if f.until is not None:
        keep &= m.created_at <= f.until.timestamp()
    return m if keep.all() else MemoryFacts(*(getattr(m, name)[keep] for name in m.__dataclass_fields__))


def _keep_memory(m: MemoryRecord, f: Filters, now: datetime) -> bool:
    if not f.include_expired and m.expires_at is not None and m.expires_at <= now:
        return False
    if f.status is not None and m.status != f.status:
        return False
    if f.category is not None:
        cats = [f.category] if isinstance(f.category, str) else list(f.category)
        if m.category not in cats:
            return False
    if f.session_id is not None and m.source_session != f.session_id:
        return False
    return _keep_time(m.created_at, f)


def _any_turn(store: Store, scope: Scope, f: Filters) -> bool:
    """Whether any turn of the scope passes the filters' session and time range (and roles
    name one): a filter that keeps nothing (no such session) widens no pool, an indexed read."""
    if f.roles is not None and not f.roles:
        return False
    if f.session_id is None and f.since is None and f.until is None:
        return True
    return bool(store.get_turns(scope, session_id=f.session_id, since=f.since, until=f.until, limit=1))


def _keep_turn(t: Turn, f: Filters) -> bool:
    if f.session_id is not None and t.session_id != f.session_id:
        return False
    if f.roles is not None and t.role not in f.roles:
        return False
    return _keep_time(t.created_at, f)
