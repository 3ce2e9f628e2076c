"""Searching as the façade offers it (`Memory.search`), once its arguments are checked: an
agent scope reads its user's shared memories too (`Scope.readable`), the scopes' lists merge
by absolute relevance, and a memory returned at or above the floor counts as used — the one
write on the read path, which a weak hit never makes (issue 29: routine searching must not
keep every memory from fading)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from datetime import timedelta
from itertools import islice

import numpy as np

from memlane.models import Corpus, Hit, MemoryRecord, Scope
from memlane.parts import Parts, Reading
from memlane.retrieval.filters import Filters
from memlane.retrieval.search import search as run_search


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
    if corpus == "memories" and activate:
        used(engine, scope, [h.memory for h in hits if h.memory is not None and h.score >= cfg.search.min_relevance])
    return hits


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
