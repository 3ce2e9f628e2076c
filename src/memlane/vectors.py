"""The embedder's side of one engine: rows get their vectors (now, or from the background
indexer), queries theirs (cached), and search the two references it measures against —
where this embedder puts unrelated text (`search.NULL_TEXTS`) and where it keeps a text's
language (crosslingual.py) — both embedded once and cached in the store."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from memlane.config import Config
from memlane.crosslingual import PARALLEL_TEXTS, LanguageAxes, language_axes
from memlane.embeddings import Embedder
from memlane.errors import MemlaneError
from memlane.indexing import BackgroundIndexer, QueryCache, embed_cached, index_pending, warm_cache
from memlane.retrieval.relevance import NULL_TEXTS
from memlane.store import Store

log = logging.getLogger(__name__)


class Vectors:
    def __init__(self, config: Config, store: Store, embedder: Embedder, side_store: Callable[[], Store]) -> None:
        """`side_store` opens another connection to the same store, for the background indexer."""
        self.config, self.store, self.embedder = config, store, embedder
        store.ensure_vectors(embedder.model_id, embedder.dimensions)
        self._check_turn_keys()
        self.query = QueryCache(embedder, max_chars=config.embedding.max_query_chars,
                                max_tokens=config.embedding.query_tokens)
        self._nulls: np.ndarray | None = None
        self._axes: LanguageAxes | None | bool = False  # False: not computed yet
        self.indexer: BackgroundIndexer | None = None
        e = config.embedding
        if e.background:
            self.indexer = BackgroundIndexer(
                side_store, embedder, max_chars=e.max_chars, batch_size=e.batch_size,
                passage_chars=e.passage_chars, max_passages=e.passages, passage_step=e.passage_step,
                warm=(*NULL_TEXTS, *PARALLEL_TEXTS), warm_queries=PARALLEL_TEXTS,
            )
            self.indexer.notify()  # pick up rows left unembedded by an earlier process

    def _check_turn_keys(self) -> None:
        """Long turns embedded under other key or passage settings (or before passages, issue
        14) are embedded again, once: their passages would otherwise never be cut."""
        e = self.config.embedding
        keys = f"{e.max_chars}:{e.passage_chars if e.passages else 0}:{e.passages}"
        if self.store.meta("turn_vector_keys") == keys:
            return  # the common case: a read, no write lock at every open
        with self.store.transaction():
            old = self.store.meta("turn_vector_keys")  # again under the lock: another process may have set it
            if old != keys:
                if old:  # two programs with different settings on one home re-embed at every switch
                    log.warning("long turns of %s were embedded with key:passage chars:passages %s; this "
                                "process uses %s and embeds them again. Give every process using this "
                                "home the same embedding settings.", self.config.home, old, keys)
                head = (old or "").split(":")[0]
                # turns longer than the shorter key were cut differently (an unreadable value: every one)
                shorter = min(e.max_chars, int(head)) if head.isdigit() else 0
                self.store.reembed_long_turns(shorter if old else e.max_chars)
                self.store.set_meta("turn_vector_keys", keys)

    def flush(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every row still waiting for a vector, now, in this thread; returns how many."""
        e = self.config.embedding
        done = index_pending(self.store, self.embedder, max_chars=e.max_chars, batch_size=e.batch_size,
                             progress=progress, passage_chars=e.passage_chars, max_passages=e.passages)
        if done and self._nulls is None:  # cached with the first rows: the next process's first search needs them
            self._nulls = warm_cache(self.store, self.embedder, NULL_TEXTS)
            warm_cache(self.store, self.embedder, PARALLEL_TEXTS)  # the language directions' texts
            warm_cache(self.store, self.embedder, PARALLEL_TEXTS, query=True)
        return done

    def rows_written(self) -> None:
        """New rows wait for vectors: the background indexer is woken, else they are embedded now."""
        if self.indexer is not None:
            self.indexer.notify()
            return
        try:
            self.flush()
        except MemlaneError as exc:
            # the write itself is committed: failing the call now would make a caller retry
            # (and store it twice); the rows stay unembedded for the next flush to pick up
            log.warning("embedding deferred, rows stay queued for the next flush: %s", exc)

    def null_vectors(self) -> np.ndarray:
        """`search.NULL_TEXTS` as this embedder's passages: where its unrelated text sits."""
        if self._nulls is None:
            self._nulls = embed_cached(self.store, self.embedder, list(NULL_TEXTS))
        return self._nulls

    def language_axes(self) -> LanguageAxes | None:
        """Where this embedder keeps a text's language (crosslingual.py), from its vectors of
        the parallel sentences: as passages (cached in the store), and as queries."""
        if self._axes is False:
            passages = embed_cached(self.store, self.embedder, PARALLEL_TEXTS)
            asked = embed_cached(self.store, self.embedder, PARALLEL_TEXTS, query=True)
            self._axes = language_axes(passages[0::2], passages[1::2], asked[0::2], asked[1::2],
                                       self.config.search.language_alignment_min)
        return self._axes if isinstance(self._axes, LanguageAxes) else None

    def status(self) -> dict[str, str | None] | None:
        idx = self.indexer
        return None if idx is None else {"error": repr(idx.error) if idx.error else None}

    def wait_idle(self, timeout: float) -> bool:
        return self.indexer is None or self.indexer.wait_idle(timeout)

    def stop(self) -> None:
        if self.indexer is not None:
            self.indexer.stop()
            self.indexer = None
