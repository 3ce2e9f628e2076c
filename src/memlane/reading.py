"""Searching as the façade offers it (`Memory.search`), once its arguments are checked: an
agent scope reads its user's shared memories too (`Scope.readable`), the scopes' lists merge
by absolute relevance, and a memory returned at or above the floor counts as used — the one
write on the read path, which a weak hit never makes (issue 29: routine searching must not
keep every memory from fading)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from itertools import islice
from typing import Any

import numpy as np

from memlane import supersession, validate
from memlane.models import Corpus, Hit, MemoryRecord, Scope
from memlane.parts import Parts, Reading
from memlane.retrieval.filters import Filters, check_filters
from memlane.retrieval.search import search as run_search
from memlane.retrieval.tense import asks_about_past
from memlane.text import read_part


def ask(engine: Reading, scope: Scope, query: Any, corpus: Any, *, limit: Any, filters: Any, activate: Any,
        query_vector: Any, min_score: Any, as_of: Any = None, include_superseded: Any = None) -> list[Hit]:
    """`Memory.search`, its arguments checked first (each refusal names its field)."""
    cfg = engine.config
    validate.text("query", query, cfg.search.max_query_chars, setting="search.max_query_chars",
                  required=False, controls=True)
    query = read_part(query, cfg.search.query_read_chars)
    corpus = validate.choice("corpus", corpus, ("memories", "turns", "episodes"))
    limit = validate.optional_integer("limit", limit, 0, 10_000)  # 0: the default
    activate = None if activate is None else validate.boolean("activate", activate)
    dims = engine.vectors.embedder.dimensions
    if query_vector is not None and not callable(query_vector):
        validate.vector("query_vector", query_vector, dims)
    elif query_vector is not None:  # the caller's function: what it returns is checked too
        given = query_vector
        query_vector = lambda text: validate.vector("query_vector", given(text), dims)  # noqa: E731
    # memories and episodes are what an agent is given: weak ones are left out by default.
    # A turn is ranked by its conversation too (its neighbours, its session): its own score
    # says how much of the query it holds, not whether it belongs in the answer
    default = 0.0 if corpus == "turns" else cfg.search.min_relevance
    min_score = default if min_score is None else validate.number("min_score", min_score, 0.0, 1.0)
    return search(engine, scope, query, corpus, limit=limit or cfg.search.default_limit,
                  filters=in_time(check_filters(filters, cfg), query, as_of, include_superseded),
                  min_score=min_score, query_vector=query_vector,
                  activate=cfg.search.activate_on_hit if activate is None else activate)


def in_time(filters: Filters, query: str, as_of: Any, include_superseded: Any) -> Filters:
    """The filters with the time asked about (issue 32): `as_of` a date, and the superseded
    facts beside the current ones when asked for or, by default, when the query asks about
    the past or a change (`tense.asks_about_past`)."""
    as_of = validate.optional_when("as_of", as_of) or filters.as_of
    if include_superseded is None:
        wide = filters.include_superseded or asks_about_past(query)
    else:
        wide = validate.boolean("include_superseded", include_superseded)
    return replace(filters, as_of=as_of, include_superseded=wide)


def search(engine: Reading, scope: Scope, query: str, corpus: Corpus, *, limit: int, filters: Filters,
           min_score: float, activate: bool,
           query_vector: np.ndarray | Callable[[str], np.ndarray] | None = None) -> list[Hit]:
    cfg = engine.config
    idle = cfg.extraction.idle_minutes
    # an agent scope also reads its user's shared memories; its turns and episodes stay its own
    scopes = scope.readable() if corpus == "memories" else (scope,)
    lists = [run_search(
        engine.store, cfg.search, corpus, s, query, limit=limit, now=engine.clock(),
        query_vector=engine.vectors.query if query_vector is None else query_vector, filters=filters,
        min_score=min_score, null_vectors=engine.vectors.null_vectors(), passages=cfg.embedding.passages,
        asked_in=scope, language_axes=engine.vectors.language_axes(),
        idle_after=timedelta(minutes=idle) if idle else None,
    ) for s in scopes]
    # Hit.score is an absolute relevance: the lists merge by it, each kept in its rank order (a
    # merge looks only at the lists' heads, so a shorter page stays the start of a longer one:
    # a full sort would pull a later-ranked hit of a longer list forward)
    hits = lists[0] if len(lists) == 1 else list(islice(heapq.merge(*lists, key=lambda h: -h.score), limit))
    if corpus == "memories" and filters.include_superseded and filters.as_of is None and cfg.search.change_chains:
        hits = with_versions(engine, hits, limit)
    if corpus == "memories" and activate:
        used(engine, scope, [h.memory for h in hits if h.memory is not None and h.score >= cfg.search.min_relevance
                             and h.memory.status != "superseded"])  # history is not in use
    return hits


def with_versions(engine: Reading, hits: list[Hit], limit: int) -> list[Hit]:
    """A question about the past or a change (issue 32) gets each changed fact whole: right
    after a version it found (which keeps its place: "in 2019" found the one that held then),
    the fact's other versions, oldest first ("how many jobs have I had", "how long did I live
    in Munich" need every one, with when each held). The page keeps its length."""
    out: list[Hit] = []
    seen: set[str] = set()
    for hit in hits:
        m = hit.memory
        if hit.id in seen:
            continue
        if m is None or not (m.supersedes or m.superseded_by):
            out.append(hit)
            seen.add(hit.id)
            continue
        owner = Scope(user_id=m.user_id, agent_id=m.agent_id)
        out.append(hit)
        seen.add(hit.id)
        for v in supersession.timeline(engine.store, owner, m):
            if v.id not in seen:
                seen.add(v.id)
                out.append(hit.model_copy(update={
                    "id": v.id, "content": v.content, "source": f"memory:{v.id}", "created_at": v.created_at,
                    "memory": v, "highlights": [], "bm25_rank": None, "vector_rank": None}))
    return out[:limit]


def used(parts: Parts, scope: Scope, memories: Sequence[MemoryRecord]) -> None:
    """Seed 001/004: a hit refreshes last_activated and counts; the score is untouched."""
    if not memories:
        return
    now = parts.clock()
    with parts.store.transaction():
        for mem in memories:
            parts.store.update_memory(
                mem.model_copy(update={"last_activated": now, "activation_count": mem.activation_count + 1}),
                content_changed=False,
            )
