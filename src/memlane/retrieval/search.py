"""`search()`: the hits of one corpus for one scope, in rank order.

What the query asks is found once (`Search`); then candidate pools are gathered, fused and
ranked (`Search.pool`), the default-size pool first and ever larger ones while the page is
not full (`Search.hits`). Each corpus is ranked its own way: memories and episodes by the
composite of relevance, importance and recency (seed 004 §5.2), turns by relevance alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np

from memlane.config import SearchConfig
from memlane.crosslingual import LanguageAxes
from memlane.dates import SESSION_WORDS, Span, held_nearness, mentioned_period, session_reference
from memlane.errors import ValidationError
from memlane.models import Corpus, Episode, Hit, MemoryFacts, MemoryRecord, Scope, Turn
from memlane.retrieval.candidates import Candidate, gather
from memlane.retrieval.filters import (
    Filters,
    any_turn,
    keep_episode,
    keep_memory,
    keep_turn,
    kept_facts,
)
from memlane.retrieval.fuse import fuse, normalise_relevance
from memlane.retrieval.query import common_words, named_session_id, without
from memlane.retrieval.relevance import Relevance
from memlane.retrieval.slots import asked_slot, asks_of_self, tells, told_of_other
from memlane.store import Store, turn_search_text
from memlane.text import keywords

Ranked = list[tuple[int, Hit]]  # (rowid, hit) in rank order


MAX_VERSION_STEPS = 64  # the versions followed from a replaced memory to the current one


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
    one = Search(store, cfg, corpus, scope, query, now, query_vector, filters or Filters(), min_score=min_score,
                 null_vectors=null_vectors, passages=passages, asked_in=asked_in, idle_after=idle_after,
                 language_axes=language_axes)
    return one.hits(limit)


def recency(at: datetime, now: datetime, half_life_days: float) -> float:
    """Seed 004 §5.2: 0.5 ** (age_days / half_life)."""
    age_days = max(0.0, (now - at).total_seconds() / 86400)
    return math.pow(0.5, age_days / half_life_days)


class Search:
    """One query of one corpus in one scope: what it asks, found once, and the candidate
    pools it ranks."""

    def __init__(self, store: Store, cfg: SearchConfig, corpus: Corpus, scope: Scope, query: str, now: datetime,
                 query_vector: np.ndarray | Callable[[str], np.ndarray] | None, filters: Filters, *,
                 min_score: float, null_vectors: np.ndarray | None, passages: int, asked_in: Scope | None,
                 idle_after: timedelta | None, language_axes: LanguageAxes | None) -> None:
        self.store, self.cfg, self.corpus, self.scope, self.query, self.now = store, cfg, corpus, scope, query, now
        self.filters, self.min_score, self.null_vectors, self.passages = filters, min_score, null_vectors, passages
        self.query_vector = query_vector
        self.period = mentioned_period(query, now.date())
        # once: for the full-text query and for the highlights; without the words of a window that
        # the date prior applies ("in the past three months" says when, not what: dates.py)
        words = keywords(query, cfg.max_query_terms)
        if isinstance(self.period, Span) and self.period.window and cfg.date_prior > 0:
            words = keywords(without(query, self.period.window), cfg.max_query_terms) or words
        self.used: list[np.ndarray] = []  # the query vector, as the dense side computed it
        self._embedded: dict[str, np.ndarray] = {}
        facts_corpus = corpus != "turns"  # memories and episodes: short statements, any language
        self.languages = language_axes if facts_corpus else None
        self.scored_with: list[np.ndarray] = []  # the vector the dense side scored with (crosslingual.py)
        # a word most of the scope's memories hold finds no candidates and is no relevance
        weights: dict[str, float] | None = None
        self.lexical_words = words
        if facts_corpus and words and (common := common_words(store, corpus, scope, words, cfg)):
            weights = {w: 0.0 if w in common else 1.0 for w in words}
            self.lexical_words = [w for w in words if w not in common]
        if isinstance(query_vector, np.ndarray):
            self.used.append(query_vector)
        # "our first conversation", "上次我们聊": that session's rows are favoured, and its first
        # rows join the candidates (the query's words may find none of them)
        reference = session_reference(query) if cfg.named_session_prior > 0 else None
        self.named = named_session_id(store, asked_in or scope, reference[0], now, idle_after) if reference else None
        if reference:  # "last time" says which conversation, not what: no row is relevant by holding it
            naming = SESSION_WORDS.intersection(keywords(reference[1]))
            weights = {w: 0.0 if w in naming else (weights or {}).get(w, 1.0) for w in words}
        self.named_first = store.session_rows(corpus, scope, self.named, cfg.fts_candidates) \
            if self.named is not None else []
        self.relevance = Relevance(words, weights, cfg.memory_dense_scale if facts_corpus else 1.0)
        self.slot = asked_slot(query) if corpus == "memories" else None  # the part of the user's life asked for
        self.of_self = corpus == "memories" and asks_of_self(query)

    def hits(self, limit: int) -> list[Hit]:
        """Up to `limit` hits in rank order.

        The candidates are the scope's best, whatever the limit: the default-size pool is
        ranked first and its hits come first. Where it holds fewer hits than the limit asks (a
        large page, filters that turn most candidates away: a session among many, one role, a
        week), ever larger pools are ranked and their hits not yet returned appended — never
        reordering what a smaller pool placed, so a shorter page is the start of a longer one
        (paging). Widening stops, whatever the limit (else a short page would not be the start
        of a longer one), once every row was a candidate (both sides returned less than asked),
        the pool reached `filter_pool_max`, no turn passes the filters, or a wider pool's newly
        kept candidates were all below `min_score` (lower-ranked rows are weaker still)."""
        cfg = self.cfg
        hits: list[Hit] = []
        returned: set[int] = set()
        kept_before: set[int] = set()
        pool = 0
        while True:
            new, kept, pooled = self.pool(pool, returned, limit - len(hits))
            hits.extend(h for _, h in new)
            returned.update(r for r, _ in new)
            if len(hits) >= limit:
                break
            size = max(pool, min(cfg.fts_candidates, cfg.vector_candidates))
            if pooled < size or size >= cfg.filter_pool_max or (pool and not new and kept - kept_before) \
                    or (self.corpus == "turns" and not any_turn(self.store, self.scope, self.filters)):
                break
            kept_before |= kept
            pool = min(4 * max(pool, cfg.fts_candidates, cfg.vector_candidates), cfg.filter_pool_max)
        # hits came in rank order, ties by rowid: sorting them again by id would let a tie cut by
        # the page size differ from the longer page's (limit=1 ≠ limit=10's first)
        for h in hits:
            if not h.highlights:  # a turn's came with it: its tool calls' words count too
                h.highlights = self.relevance.highlights(h.content)
        return hits

    def pool(self, size: int, returned: set[int], want: int) -> tuple[Ranked, set[int], int]:
        """(up to `want` hits in rank order, none of the rows in `returned`; the rowids the
        filters kept of the candidates looked at; candidates) of the candidate pool of `size`
        (0: the configured sizes). The order is the pool's alone: `want` only says where to stop."""
        vector_of = self._embed if callable(self.query_vector) else self.query_vector
        found = gather(self.store, self.cfg, self.corpus, self.scope, self.query, vector_of, size,
                       self.lexical_words, passages=self.passages, include=self.named_first, languages=self.languages)
        if found.vector is not None:
            self.scored_with.append(found.vector)
        fuse(found, self.query, self.cfg, self.corpus)
        cands = found.cands
        if not cands:
            return [], set(), 0
        self._find_null()
        normalise_relevance(cands)
        if self.corpus == "turns":
            self._turn_time_and_session(cands)
        if self.corpus == "memories":
            hits, kept = self._memories(cands, returned, want)
        elif self.corpus == "turns":
            hits, kept = self._turns(cands, returned, want)
        else:
            hits, kept = self._episodes(cands, returned, want)
        return hits, kept, len(cands)

    def _embed(self, text: str) -> np.ndarray:
        assert callable(self.query_vector)
        if text not in self._embedded:  # once, though a filtered search may gather candidates again
            self._embedded[text] = self.query_vector(text)
            self.used.append(self._embedded[text])
        return self._embedded[text]

    def _find_null(self) -> None:
        """Where unrelated text sits for the query's vector, once it is known."""
        vector = self.scored_with[0] if self.scored_with else self.used[0] if self.used else None
        if self.relevance.null is None and vector is not None and self.null_vectors is not None \
                and self.null_vectors.shape[1:] == vector.shape and np.linalg.norm(vector) > 0:
            self.relevance.null = float(np.max(self.null_vectors @ vector))

    def _absolute(self, content: str, c: Candidate, session: str | None = None) -> float:
        rel = max(self.relevance.of(content, c.similarity), c.inherited)
        # "what did we talk about last time": that conversation's rows answer it, whatever words
        return max(rel, self.cfg.min_relevance) if self.named is not None and session == self.named else rel

    def _dated(self, at: datetime | None) -> float:
        """The date prior: how near `at` is to the period the query names."""
        cfg = self.cfg
        return cfg.date_prior * self.period.nearness(at, cfg.date_grace_days) if self.period and at else 0.0

    def _held(self, rowids: list[int], prior: np.ndarray) -> np.ndarray:
        """The date prior of a fact that changed (issue 32) by when it held, not when it was
        told: "where did I live in 2022?" is answered by the city that held through 2022."""
        records = self.store.memories_by_rowid(self.scope, rowids)
        out = prior.copy()
        for i, r in enumerate(rowids):
            m = records.get(r)
            if m is not None and (m.supersedes or m.superseded_by) and self.period is not None:
                out[i] = self.cfg.date_prior * held_nearness(self.period, m.valid_from or m.created_at,
                                                             m.valid_to or self.now, self.cfg.date_grace_days)
        return out

    def _versions_to_current(self, cands: dict[int, Candidate], facts: MemoryFacts) -> bool:
        """A replaced version among the candidates of a search for what holds now passes its
        relevance on to the version that holds now (issue 32): the fact is one, whichever
        version's words the question shares. The current version joins the candidates if it
        was not among them (then True: the candidates' facts are to be read again)."""
        # stored superseded, or still stored active though a change told ahead of its date has begun
        replaced = facts.rowid[facts.status == "superseded"].tolist() + self.store.replaced_rowids(
            self.scope, facts.rowid[facts.status == "active"].tolist(), self.now)
        if not replaced:
            return False
        joined = False
        for rowid, old in self.store.memories_by_rowid(self.scope, replaced).items():
            head = old
            for _ in range(MAX_VERSION_STEPS):  # a chain is short; a cycle must not hang a search
                if head.superseded_by is None or not head.replaced(self.now):
                    break
                nxt = self.store.get_memory(self.scope, head.superseded_by)
                if nxt is None:
                    break
                head = nxt
            if head.status != "active" or head.replaced(self.now) or head.id == old.id:
                continue
            c = cands[rowid]
            at = self.store.memory_rowid(self.scope, head.id)
            joined |= at not in cands
            cur = cands.setdefault(at, Candidate(at))
            cur.relevance = max(cur.relevance, c.relevance)
            cur.inherited = max(cur.inherited, self.relevance.of(old.content, c.similarity))
        return joined

    def _turn_time_and_session(self, cands: dict[int, Candidate]) -> None:
        """The date prior and the named conversation's prior, added to the turns' relevance."""
        if self.period:
            for c in cands.values():
                c.relevance += self._dated(None if c.at is None else datetime.fromtimestamp(c.at, UTC))
        if self.named is not None:
            unplaced = [r for r, c in cands.items() if c.session is None]  # every turn prior off: no window read
            for w in self.store.turn_windows(self.scope, unplaced, 0) if unplaced else ():
                if w.rowid in cands:
                    cands[w.rowid].session = w.session_id
            for c in cands.values():
                if c.session == self.named:
                    c.relevance += self.cfg.named_session_prior

    def _memories(self, cands: dict[int, Candidate], returned: set[int], want: int) -> tuple[Ranked, set[int]]:
        """Ranked on a few columns, then records built only for what is returned."""
        store, cfg, now, filters = self.store, self.cfg, self.now, self.filters
        facts = store.memory_facts(self.scope, list(cands))
        if cfg.current_from_versions and filters.statuses() == ("active",) and self._versions_to_current(cands, facts):
            facts = store.memory_facts(self.scope, list(cands))
        facts = kept_facts(facts, filters, now)
        kept = set(facts.rowid.tolist())
        prior = np.array([self._dated(datetime.fromtimestamp(t, UTC)) for t in facts.created_at.tolist()]
                         if self.period else 0.0)
        if self.period:
            prior = self._held(facts.rowid.tolist(), prior)
        if self.named is not None:
            prior = prior + cfg.named_session_prior * (facts.source_session == self.named)
        relevance = np.fromiter((cands[r].relevance for r in facts.rowid.tolist()), np.float64, len(facts)) + prior
        age_days = np.maximum(0.0, (now.timestamp() - facts.last_activated) / 86400)
        # a question about another time (issue 32: the past, a change, `as_of`): how lately a
        # memory was used says nothing of whether it held then — history is never used
        w_recency = 0.0 if filters.as_of is not None or filters.include_superseded else cfg.w_recency
        scores = (cfg.w_similarity * relevance + cfg.w_importance * facts.score
                  + w_recency * np.power(0.5, age_days / cfg.recency_half_life_days))  # recency(), in numpy
        order = np.lexsort((facts.rowid, -scores))
        records: dict[int, MemoryRecord] = {}  # read once in this search, for the slot prior and the hits
        slot = self.slot if cfg.slot_prior > 0 else None  # "what's my job again?": a memory telling work
        other = cfg.other_subject_penalty > 0 and self.of_self  # "where do I work?": not "John is working on…"
        if slot is not None or other:
            first = order[: cfg.slot_depth]
            records = store.memories_by_rowid(self.scope, facts.rowid[first].tolist())
            for i in first.tolist():
                m = records.get(int(facts.rowid[i]))
                if m is not None and slot is not None and tells(m.content, slot):
                    scores[i] += cfg.w_similarity * cfg.slot_prior
                if m is not None and other and told_of_other(m.content):
                    scores[i] -= cfg.w_similarity * cfg.other_subject_penalty
            order = np.lexsort((facts.rowid, -scores))
        ranked = [r for r in facts.rowid[order].tolist() if r not in returned]
        hits: Ranked = []
        for i in range(0, len(ranked), want):
            top = ranked[i : i + want]
            if unread := [r for r in top if r not in records]:
                records.update(store.memories_by_rowid(self.scope, unread))
            for rowid in top:
                mem = records.get(rowid)
                # the record is the last word: another writer may have deleted or changed it since
                if mem is not None and keep_memory(mem, filters, now) and len(hits) < want \
                        and (rel := self._absolute(mem.content, cands[rowid], mem.source_session)) >= self.min_score:
                    hits.append((rowid, _hit("memories", mem.id, mem.content, rel, cands[rowid],
                                             f"memory:{mem.id}", mem.created_at, memory=mem)))
            if len(hits) >= want:
                break
        return hits, kept

    def _turns(self, cands: dict[int, Candidate], returned: set[int], want: int) -> tuple[Ranked, set[int]]:
        """Only turns' rank is their relevance: the best materialised first, just enough of them."""
        ordered = sorted(cands, key=lambda r: (-cands[r].relevance, r))
        hits: Ranked = []
        kept: set[int] = set()
        start, size = 0, want * 2
        while start < len(ordered):
            # batches double: where filters turn most candidates away, a few round trips
            batch = [r for r in ordered[start : start + size] if r not in returned]
            start, size = start + size, size * 2
            turns = self.store.turns_by_rowid(self.scope, batch)
            for rowid in batch:
                turn = turns.get(rowid)
                c = cands[rowid]
                if len(hits) >= want:
                    break  # the rest rank lower, or tie and come later: scoring them is waste
                if turn is None or not keep_turn(turn, self.filters):
                    continue
                kept.add(rowid)
                # held words count where the index found them: a tool call's arguments too
                said = turn_search_text(turn.content, turn.tool_calls, turn.role, turn.name)
                if (rel := self._absolute(said, c, turn.session_id)) >= self.min_score:
                    hit = _hit("turns", turn.id, turn.content, rel, c, f"turn:{turn.session_id}#{turn.seq}",
                               turn.created_at, turn=turn)
                    hit.highlights = list(self.relevance.held(said))
                    hits.append((rowid, hit))
            if len(hits) >= want:
                break
        return hits, kept

    def _episodes(self, cands: dict[int, Candidate], returned: set[int], want: int) -> tuple[Ranked, set[int]]:
        """Ranked by the composite; each reports its absolute relevance."""
        cfg = self.cfg
        hits: Ranked = []
        kept: set[int] = set()
        rank: dict[int, float] = {}  # the composite an episode is ranked by, not its reported relevance
        for rowid, ep in self.store.episodes_by_rowid(self.scope, list(cands)).items():
            c = cands[rowid]
            if not keep_episode(ep.ended_at, ep.session_id, self.filters):
                continue
            kept.add(rowid)
            if rowid not in returned and (rel := self._absolute(ep.summary, c, ep.session_id)) >= self.min_score:
                near = self._dated(ep.ended_at) + (cfg.named_session_prior if ep.session_id == self.named else 0.0)
                rank[rowid] = (cfg.w_similarity * (c.relevance + near) + cfg.w_importance * ep.score
                               + cfg.w_recency * recency(ep.ended_at, self.now, cfg.recency_half_life_days))
                hits.append((rowid, _hit("episodes", ep.id, ep.summary, rel, c, f"episode:{ep.session_id}",
                                         ep.ended_at, episode=ep)))
        return sorted(hits, key=lambda h: (-rank[h[0]], h[1].id))[:want], kept


def _hit(corpus: Corpus, id_: str, content: str, score: float, c: Candidate, source: str,
         created_at: datetime, **record: MemoryRecord | Turn | Episode) -> Hit:
    return Hit(corpus=corpus, id=id_, content=content, score=score, similarity=c.similarity,
               bm25_rank=c.bm25_rank, vector_rank=c.vector_rank, source=source, created_at=created_at,
               **record)
