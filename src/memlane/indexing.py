"""Embedding behind ingest: turns are committed and FTS-searchable at once, and get their
vectors in batches afterwards, so a slow embedder never blocks `add_messages`.

Vectors are cached by (model, content hash): nothing is embedded twice.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from memlane.embeddings import Embedder
from memlane.loop import Loop
from memlane.models import Corpus, Scope
from memlane.store import Store, passage_rowids
from memlane.text import estimate_tokens, neighbour_context, read_part

log = logging.getLogger(__name__)
CORPORA: tuple[Corpus, ...] = ("memories", "episodes", "turns")


def content_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def vector_key(text: str, max_chars: int) -> str:
    """What a row is embedded as: its text, cut. Long replies cost the embedder most and
    their opening carries most of their topic (issue 3: embedding cost)."""
    return text if len(text) <= max_chars else text[:max_chars]


_SENTENCE_END = re.compile(r"[.!?。！？；;]\s|[。！？；]|\n")
_SPACE = re.compile(r"\s")


def passages(text: str, key_chars: int, size: int, limit: int) -> list[str]:
    """A long turn's text past its vector key, cut into at most `limit` passages of about
    `size` characters, at sentence ends where there are some: each gets its own vector, so a
    fact in the middle of a long reply is found by meaning (issue 14). Short text: none."""
    if len(text) <= key_chars or limit <= 0:
        return []
    out: list[str] = []
    # start at the word the key cut through, so no passage opens mid-word
    pos = key_chars
    back = text.rfind(" ", max(0, key_chars - 40), key_chars)
    if back > 0:
        pos = back + 1
    while pos < len(text) and len(out) < limit:
        end = pos + size
        if end + size // 4 >= len(text):  # a short tail joins this passage
            end = len(text)
        else:
            window = text[pos + size // 2 : end]
            cuts = [m.end() for m in _SENTENCE_END.finditer(window)] or [m.end() for m in _SPACE.finditer(window)]
            if cuts:
                end = pos + size // 2 + cuts[-1]
        piece = text[pos:end].strip()
        if piece:
            out.append(piece)
        pos = end
    return out


def vector_keys(text: str, max_chars: int, passage_chars: int = 0, max_passages: int = 0) -> list[str]:
    """Every text a row is embedded as: its key, then its passages (`passages`)."""
    extra = passages(text, max_chars, passage_chars, max_passages) if passage_chars > 0 else []
    return [vector_key(text, max_chars), *extra]


def embed_cached(store: Store, embedder: Embedder, texts: Sequence[str], batch_size: int = 32,
                 query: bool = False) -> np.ndarray:
    """Passage vectors for `texts` (query vectors with `query`: an embedder may embed the two
    apart, so they are cached apart), from the cache where possible; new ones are cached."""
    model = f"{embedder.model_id}#query" if query else embedder.model_id
    hashes = [content_hash(t) for t in texts]
    found = store.cache_get(model, list(dict.fromkeys(hashes)))
    missing = list(dict.fromkeys(h for h in hashes if h not in found))
    if missing:
        by_hash = dict(zip(hashes, texts, strict=True))
        # texts of like length together: the embedder's threads finish a batch at once
        missing.sort(key=lambda h: len(by_hash[h]))
        fresh: dict[str, np.ndarray] = {}
        for i in range(0, len(missing), batch_size):
            chunk = missing[i : i + batch_size]
            batch = [by_hash[h] for h in chunk]
            vecs = embedder.embed(batch, query=True) if query else embedder.embed(batch)
            fresh.update(zip(chunk, vecs, strict=True))
        store.cache_put(model, fresh)
        found.update(fresh)
    if not texts:
        return np.zeros((0, embedder.dimensions), dtype=np.float32)
    return np.stack([found[h] for h in hashes])


def embed_one(store: Store, embedder: Embedder, text: str, max_chars: int) -> np.ndarray:
    """One row's vector, as the indexer would give it (its vector key), cached."""
    return embed_cached(store, embedder, [vector_key(text, max_chars)])[0]


def index_neighbours(store: Store, window: int, scope: Scope, session_id: str, first: int, last: int) -> None:
    """Give turns `first`..`last` of a session (and those whose window reaches them) their
    neighbours' words as a second, down-weighted FTS column; `window` turns a side, 0: none."""
    if window == 0:
        return
    rows = store.turn_rows(scope, session_id, first - 2 * window, last + window)
    by_seq = {seq: (rowid, text) for rowid, seq, text in rows}
    texts = {s: t for s, (_, t) in by_seq.items()}
    store.set_turn_contexts([(by_seq[seq][0], by_seq[seq][1], neighbour_context(texts, seq, window))
                             for seq in range(first - window, last + 1) if seq in by_seq])


def warm_cache(store: Store, embedder: Embedder, texts: Sequence[str], query: bool = False) -> np.ndarray | None:
    """`texts` embedded and cached ahead of the search that needs them; None if the embedder
    failed: only a head start, that search embeds them (and reports the failure) itself."""
    try:
        return embed_cached(store, embedder, texts, query=query)
    except Exception as exc:
        log.warning("could not cache the search's reference vectors ahead: %s", exc)
        return None


class QueryCache:
    """A small LRU of query vectors: agents repeat queries, and e5 costs ~10 ms a query. A text
    longer than `max_chars` is embedded by its start and its end (embedding.max_query_chars):
    a question after a pasted page is what the vector must hold."""

    def __init__(self, embedder: Embedder, size: int = 256, max_chars: int | None = None,
                 max_tokens: int | None = None) -> None:
        self._embedder = embedder
        self._max_chars = max_chars  # a query's cost is bounded: only its start and end are embedded
        self._max_tokens = max_tokens  # what the model reads (embedding.query_tokens): the end must fit in it
        self._size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> np.ndarray:
        if self._max_chars is not None:
            text = read_part(text, self._max_chars)
        if self._max_tokens is not None:
            chars = len(text)
            while chars > 16 and estimate_tokens(text) > self._max_tokens:  # Chinese: ~1 token a character
                chars = chars * 4 // 5
                text = read_part(text, chars)
        with self._lock:
            if text in self._items:
                self._items.move_to_end(text)
                return self._items[text]
        vec = self._embedder.embed([text], query=True)[0]
        with self._lock:
            self._items[text] = vec
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return vec


def index_pending(store: Store, embedder: Embedder, *, max_chars: int, batch_size: int = 32,
                  limit: int | None = None, progress: Callable[[int], None] | None = None,
                  passage_chars: int = 0, max_passages: int = 0) -> int:
    """Embed rows that have no vector yet, keys first: every pending row's key (`index_keys`),
    then the long turns' passages (`index_passages`); returns how many rows got their key."""
    done = index_keys(store, embedder, max_chars=max_chars, batch_size=batch_size, limit=limit,
                      progress=progress, passage_chars=passage_chars, max_passages=max_passages)
    if limit is None or done < limit:
        index_passages(store, embedder, max_chars=max_chars, batch_size=batch_size,
                       passage_chars=passage_chars, max_passages=max_passages)
    return done


def index_keys(store: Store, embedder: Embedder, *, max_chars: int, batch_size: int = 32,
               limit: int | None = None, progress: Callable[[int], None] | None = None,
               passage_chars: int = 0, max_passages: int = 0) -> int:
    """Give rows that have no vector yet their key's vector, in batches; returns how many. A
    long turn that gets passages (`passages`) is searchable by its key from here on, and is
    marked to wait for them in the same transaction (a kill between the two passes leaves
    them to the next process's `index_passages`): issue 34, the key alone embeds 5x faster."""
    done = 0
    for corpus in CORPORA:
        while limit is None or done < limit:
            rows = store.unembedded(corpus, batch_size)
            if not rows:
                break
            vecs = embed_cached(store, embedder, [vector_key(text, max_chars) for _, _, text in rows], batch_size)
            waiting = {rowid for rowid, _, text in rows if corpus == "turns" and max_passages > 0
                       and passage_chars > 0 and passages(text, max_chars, passage_chars, max_passages)}
            _put(store, corpus, [(scope, rowid) for rowid, scope, _ in rows], vecs, waiting)
            done += len(rows)
            if progress:
                progress(len(rows))
    return done


def index_passages(store: Store, embedder: Embedder, *, max_chars: int, batch_size: int = 32,
                   limit: int | None = None, passage_chars: int = 0, max_passages: int = 0) -> int:
    """The second pass: turns whose key is in get their passages' vectors (`passages`), with
    the key again (from the cache) so that `put_vectors` replaces the turn's vectors whole, in
    batches of `batch_size` turns; returns how many turns. A turn whose settings now give no
    passage gets its key alone, and waits no more."""
    done = 0
    while limit is None or done < limit:
        rows = store.pending_passages(batch_size if limit is None else min(batch_size, limit - done))
        if not rows:
            break
        keys: list[str] = []
        owners: list[tuple[Scope, int]] = []  # (scope, vector row) of each key
        for rowid, scope, text in rows:
            texts = vector_keys(text, max_chars, passage_chars, max_passages)
            keys += texts
            owners += [(scope, rowid)] + [(scope, r) for r in passage_rowids(rowid, len(texts) - 1)]
        _put(store, "turns", owners, embed_cached(store, embedder, keys, batch_size), set())
        done += len(rows)
    return done


def _put(store: Store, corpus: Corpus, owners: list[tuple[Scope, int]], vecs: np.ndarray, waiting: set[int]) -> None:
    """Store each (scope, vector row)'s vector; the turns of `waiting` are marked to wait for
    their passages, with their key."""
    by_scope: dict[Scope, list[int]] = {}
    for i, (scope, _) in enumerate(owners):
        by_scope.setdefault(scope, []).append(i)
    # one transaction per scope: on PostgreSQL each holds that scope's lock only, so two
    # indexers (two processes) taking the scopes of their batches in different orders
    # cannot deadlock; a turn and its passages share a scope, so they still commit together
    for scope, idx in by_scope.items():
        rowids = [owners[i][1] for i in idx]
        with store.transaction():
            store.put_vectors(corpus, scope, rowids, vecs[idx])
            if pending := [r for r in rowids if r in waiting]:
                store.set_passages_pending(pending)


class BackgroundIndexer:
    """A daemon thread (`loop.Loop`) that embeds pending rows on its own database connection
    whenever notified. After its first rows it caches `warm` too, the texts every search
    embeds (retrieval.relevance.NULL_TEXTS, and crosslingual.PARALLEL also as queries:
    `warm_queries`), so that the next process's first search embeds only its query.

    Keys go first (issue 34): every pending row's key, then the long turns' passages
    `passage_step` turns at a time, looking for new keys between two steps, so a turn written
    while a long import's passages are embedded is searchable by meaning within a step."""

    def __init__(self, open_store: Callable[[], Store], embedder: Embedder, *, max_chars: int, batch_size: int,
                 passage_chars: int = 0, max_passages: int = 0, warm: Sequence[str] = (),
                 warm_queries: Sequence[str] = (), passage_step: int = 8) -> None:
        self._open_store = open_store
        self._embedder = embedder
        self._warm = tuple(warm)  # emptied once cached
        self._warm_queries = tuple(warm_queries)
        self._max_chars = max_chars
        self._passages = (passage_chars, max_passages)
        self._batch_size = batch_size
        self._passage_step = passage_step
        self.error: BaseException | None = None
        self._store: Store | None = None  # the thread's own, while it runs
        self._loop = Loop("memlane-indexer", self._pass, around=self._opened_store)
        self._loop.start()

    def notify(self) -> None:
        self._loop.notify()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._loop.wait_idle(timeout)

    def stop(self) -> None:
        self._loop.stop(timeout=30)

    @contextmanager
    def _opened_store(self) -> Iterator[None]:
        self._store = self._open_store()
        try:
            yield
        finally:
            self._store.close()

    def _pass(self) -> None:
        """Every pending row, in batches, until none is left or a stop is asked."""
        assert self._store is not None
        store = self._store
        chars, batch, (passage_chars, max_passages) = self._max_chars, self._batch_size, self._passages
        try:
            while not self._loop.stopping:
                if index_keys(store, self._embedder, max_chars=chars, batch_size=batch, limit=batch * 4,
                              passage_chars=passage_chars, max_passages=max_passages):
                    if self._warm:
                        warm_cache(store, self._embedder, self._warm)
                        warm_cache(store, self._embedder, self._warm_queries, query=True)
                        self._warm = ()
                    continue
                # every key is in: a few turns' passages, then a look for new keys, which go first
                if not index_passages(store, self._embedder, max_chars=chars, batch_size=batch,
                                      limit=self._passage_step, passage_chars=passage_chars,
                                      max_passages=max_passages):
                    break
            self.error = None
        except Exception as exc:  # the rows stay pending; the next notify retries (never dies)
            self.error = exc
            log.warning("background embedding failed, will retry: %s", exc)
