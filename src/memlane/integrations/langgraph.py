"""LangGraph's long-term store on memlane: `MemlaneStore` is a `langgraph.store.base.BaseStore`.

    from langgraph.prebuilt import create_react_agent
    from memlane import open_memory
    from memlane.integrations.langgraph import MemlaneStore

    store = MemlaneStore(open_memory())           # in place of InMemoryStore(index=...)
    agent = create_react_agent(model, tools, store=store)

Namespaces and scopes: one element of every namespace names the memlane user — by default
the second, as in LangGraph's and LangMem's `("memories", user_id)` (`user_at=1`; `user_at=0`
for `(user_id, "memories")`), or none when the store is bound to one user (`user_id="lin"`).
Every operation runs in that user's scope alone, so a namespace of one user can never read
another's; an operation whose namespace names no user is refused (ValidationError), never
widened to every user.

An item is one memlane memory: its text is the value's indexed fields (the `index` config's
`fields`, or a put's `index=[...]`), so memlane's hybrid search, context and lifecycle see it;
the namespace, key and whole value ride in the memory's metadata, so `get` returns exactly
what was put. A put with `index=False` (or whose indexed fields are missing) is kept as an
archived memory: `get` and listings return it, query search does not.
"""

from __future__ import annotations

import asyncio
import builtins
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memlane.config import Config
from memlane.errors import MissingExtra, ValidationError
from memlane.models import Hit, MemoryRecord, Source

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
    )
except ImportError as exc:  # the extra is not installed
    raise MissingExtra("memlane.integrations.langgraph needs LangGraph: pip install 'memlane[langgraph]'") from exc

META = "langgraph"  # the memory metadata key holding the item's namespace, key and value
ACTOR = "langgraph"  # who the audit trail says wrote an item
SEARCH_CAP = 10_000  # memlane's largest search limit (reading.ask)

Namespace = tuple[str, ...]


class MemoryAPI(Protocol):
    """What the store calls on `memlane.Memory` (the façade's own validated, audited verbs)."""

    config: Config

    def add(self, content: str, *, user_id: str, agent_id: str | None = None, category: str | None = None,
            metadata: dict[str, Any] | None = None, source: Source = "user", pinned: bool = False,
            actor: str = "api") -> MemoryRecord: ...

    def list(self, *, user_id: str, agent_id: str | None = None, status: str | None = None,
             sort: str = "score", descending: bool = True) -> builtins.list[MemoryRecord]: ...

    def update(self, memory_id: str, *, user_id: str, agent_id: str | None = None, content: str | None = None,
               metadata: dict[str, Any] | None = None, status: str | None = None,
               actor: str = "api") -> MemoryRecord: ...

    def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None, actor: str = "api") -> MemoryRecord: ...

    def search(self, query: str, *, user_id: str, agent_id: str | None = None, limit: int | None = None,
               min_score: float | None = None) -> builtins.list[Hit]: ...


@dataclass(frozen=True)
class _Scope:
    user_id: str
    agent_id: str | None


class MemlaneStore(BaseStore):
    """A LangGraph `BaseStore` whose items are memlane memories (see the module docstring).

    `memory`: a `memlane.Memory`. `user_at`: which namespace element names the user (default 1,
    `("memories", user_id)`); `user_id`: bind the store to one user instead (every namespace is
    then that user's). `agent_id`: the memlane agent scope the items live in (default: the
    user's shared scope). `index`: LangGraph's index config; its `fields` choose the text memlane
    indexes (default the whole value); `dims` and `embed` are accepted and not used — memlane
    embeds with its own embedder. `category`, `source`, `pinned`: how the memories are filed
    (`pinned=True` keeps items out of decay and archiving). `min_score`: the relevance floor of a
    query search (default memlane's `search.min_relevance`; 0 ranks every candidate)."""

    def __init__(self, memory: MemoryAPI, *, user_at: int = 1, user_id: str | None = None,
                 agent_id: str | None = None, index: IndexConfig | None = None, category: str | None = None,
                 source: Source = "agent", pinned: bool = False, min_score: float | None = None) -> None:
        if not isinstance(user_at, int) or isinstance(user_at, bool) or user_at < 0:
            raise ValidationError("user_at", f"must be a namespace position ≥ 0, got {user_at!r}")
        self.memory = memory
        self.user_at = user_at
        self.user_id = user_id
        self.agent_id = agent_id
        self.index_config = index
        fields = (index or {}).get("fields") or ["$"]
        self.fields: list[str] = list(fields)
        self.category = category
        self.source: Source = source
        self.pinned = pinned
        self.min_score = min_score

    # ---- BaseStore ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a get after a put in the same batch sees the put)."""
        items = _Items(self)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(items.get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                items.put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(items, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(items, op))
            else:
                raise ValidationError("op", f"unknown LangGraph store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread: memlane's core is synchronous, the event loop never blocks."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ---- scopes -------------------------------------------------------------------------

    def scope_of(self, namespace: Sequence[str], field: str = "namespace") -> _Scope:
        """The memlane scope a namespace (or a prefix of one) belongs to."""
        if self.user_id is not None:
            return _Scope(self.user_id, self.agent_id)
        if len(namespace) <= self.user_at or namespace[self.user_at] == "*":
            raise ValidationError(field, f"{tuple(namespace)!r} names no user: this store reads the user id at "
                                         f"position {self.user_at} (user_at), e.g. ('memories', '<user id>')"
                                  if self.user_at == 1 else
                                  f"{tuple(namespace)!r} names no user: this store reads the user id at "
                                  f"position {self.user_at} (user_at)")
        return _Scope(namespace[self.user_at], self.agent_id)

    # ---- search and listings ------------------------------------------------------------

    def _search(self, items: _Items, op: SearchOp) -> list[SearchItem]:
        scope = self.scope_of(op.namespace_prefix, "namespace_prefix")
        offset, limit = max(op.offset, 0), max(op.limit, 0)
        if not op.query:  # a listing: every item under the prefix, oldest first
            kept = [s.item for s in items.of(scope).values() if _under(s.item.namespace, op.namespace_prefix)
                    and matches(s.item.value, op.filter)]
            return [SearchItem(i.namespace, i.key, i.value, i.created_at, i.updated_at)
                    for i in kept[offset:offset + limit]]
        want, n = offset + limit, max(offset + limit, self.memory.config.search.default_limit)
        while True:
            hits = self.memory.search(op.query, user_id=scope.user_id, agent_id=scope.agent_id, limit=n,
                                      min_score=self.min_score)
            found = self._ranked(hits, scope, op)
            if len(found) >= want or len(hits) < n or n >= SEARCH_CAP:
                return found[offset:want]
            n = min(n * 4, SEARCH_CAP)  # the prefix or filter left too few: look further down

    def _ranked(self, hits: Sequence[Hit], scope: _Scope, op: SearchOp) -> list[SearchItem]:
        out: list[SearchItem] = []
        seen: set[tuple[Namespace, str]] = set()
        for hit in hits:
            # an agent scope also reads its user's shared memories; items are the scope's own
            rec = hit.memory
            if rec is None or (rec.agent_id or None) != scope.agent_id or (item := to_item(rec)) is None:
                continue
            if (item.namespace, item.key) in seen or not _under(item.namespace, op.namespace_prefix):
                continue
            if matches(item.value, op.filter):
                seen.add((item.namespace, item.key))
                out.append(SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at,
                                      score=hit.score))
        return out

    def _list_namespaces(self, items: _Items, op: ListNamespacesOp) -> list[Namespace]:
        conditions = op.match_conditions or ()
        if self.user_id is not None:
            scope = self.scope_of(())
        else:
            pinned = [c.path for c in conditions if c.match_type == "prefix"
                      and len(c.path) > self.user_at and c.path[self.user_at] != "*"]
            if not pinned:
                raise ValidationError("prefix", f"list_namespaces must name the user: a prefix whose element "
                                                f"{self.user_at} (user_at) is the user id")
            scope = self.scope_of(pinned[0], "prefix")
        names = {s.item.namespace for s in items.of(scope).values()}
        kept = [ns for ns in names if all(_does_match(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[:op.max_depth] for ns in kept})
        return sorted(kept)[op.offset:op.offset + op.limit]

    # ---- what a put stores --------------------------------------------------------------

    def text_of(self, value: Mapping[str, Any], index: Any) -> str | None:
        """The text memlane indexes for a value: its indexed fields, one per line; None when
        the put asks for no index (`index=False`) or no indexed field is present."""
        if index is False:
            return None
        paths = self.fields if index is None else list(index)
        texts: list[str] = []
        for path in paths:
            if path == "$":
                texts.append(readable(value))
            else:
                texts += [t for t in get_text_at_path(dict(value), tokenize_path(path)) if t.strip()]
        text = "\n".join(t for t in texts if t.strip())
        return text or None


class _Items:
    """The items of the scopes one batch touches, read once per scope and kept current as
    the batch's puts land."""

    def __init__(self, store: MemlaneStore) -> None:
        self.store = store
        self.memory = store.memory
        self.scopes: dict[_Scope, dict[tuple[Namespace, str], _Stored]] = {}

    def of(self, scope: _Scope) -> dict[tuple[Namespace, str], _Stored]:
        if scope not in self.scopes:
            found: dict[tuple[Namespace, str], _Stored] = {}
            # every status but "superseded" (an old version memlane keeps): an unindexed item is archived
            for rec in self.memory.list(user_id=scope.user_id, agent_id=scope.agent_id, status=None,
                                        sort="created_at", descending=False):
                if rec.status != "superseded" and (item := to_item(rec)) is not None:
                    old = found.get((item.namespace, item.key))
                    if old is None or old.item.updated_at <= item.updated_at:
                        found[(item.namespace, item.key)] = _Stored(item, rec)
            self.scopes[scope] = found
        return self.scopes[scope]

    def get(self, namespace: Namespace, key: str) -> Item | None:
        stored = self.of(self.store.scope_of(namespace)).get((tuple(namespace), key))
        return None if stored is None else stored.item

    def put(self, op: PutOp) -> None:
        scope = self.store.scope_of(op.namespace)
        items, where = self.of(scope), (tuple(op.namespace), str(op.key))
        old = items.get(where)
        if op.value is None:
            if old is not None:
                self.memory.delete(old.record.id, user_id=scope.user_id, agent_id=scope.agent_id, actor=ACTOR)
                del items[where]
            return
        value = dict(op.value)
        text = self.store.text_of(value, op.index)
        content = _fit(text if text is not None else readable(value) or str(op.key),
                       self.memory.config.store.max_content_chars)
        now = datetime.now().astimezone()
        meta = {"namespace": list(op.namespace), "key": str(op.key),
                # the value as JSON text: memlane bounds metadata's depth, not a string's shape
                "value": json.dumps(value, ensure_ascii=False, sort_keys=True),
                # the item's own times, as LangGraph's stores keep them: created at the first put
                "created_at": (now if old is None else old.item.created_at).isoformat(), "updated_at": now.isoformat()}
        status = "active" if text is not None else "archived"
        if old is None:
            rec = self.memory.add(content, user_id=scope.user_id, agent_id=scope.agent_id, category=self.store.category,
                                  metadata={META: meta}, source=self.store.source, pinned=self.store.pinned,
                                  actor=ACTOR)
            if status != rec.status:
                rec = self.memory.update(rec.id, user_id=scope.user_id, agent_id=scope.agent_id, status=status,
                                         actor=ACTOR)
        else:
            rec = self.memory.update(old.record.id, user_id=scope.user_id, agent_id=scope.agent_id, content=content,
                                     metadata={**old.record.metadata, META: meta}, status=status, actor=ACTOR)
        item = to_item(rec)
        assert item is not None  # written just now with its metadata
        items[where] = _Stored(item, rec)


@dataclass(frozen=True)
class _Stored:
    item: Item
    record: MemoryRecord


def to_item(rec: MemoryRecord) -> Item | None:
    """The LangGraph item a memory holds; None for a memory no store wrote."""
    meta = rec.metadata.get(META)
    if not isinstance(meta, dict) or not isinstance(meta.get("namespace"), list) or "key" not in meta:
        return None
    try:
        value = json.loads(meta["value"])
        created, updated = datetime.fromisoformat(meta["created_at"]), datetime.fromisoformat(meta["updated_at"])
    except (KeyError, TypeError, ValueError):
        return None  # not the shape this module writes: someone else's metadata, left alone
    return Item(value=value, key=str(meta["key"]), namespace=tuple(meta["namespace"]), created_at=created,
                updated_at=updated)


def readable(value: Mapping[str, Any]) -> str:
    """A value as text a person (and BM25) reads: a lone field's text, else `field: text` lines."""
    def leaf(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)

    if len(value) == 1:
        return leaf(next(iter(value.values())))
    return "\n".join(f"{k}: {leaf(v)}" for k, v in value.items())


def _fit(text: str, limit: int) -> str:
    # the indexed text is cut to memlane's memory size; the whole value stays in the metadata
    return text if len(text) <= limit else text[:limit]


def _under(namespace: Namespace, prefix: Sequence[str]) -> bool:
    return tuple(namespace[:len(prefix)]) == tuple(prefix)


def _does_match(condition: MatchCondition, namespace: Namespace) -> bool:
    """LangGraph's match condition: a prefix or suffix path, "*" matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValidationError("match_type", f"must be 'prefix' or 'suffix', got {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's value filter as its InMemoryStore applies it: each field equal (nested
    objects and lists compared field by field), or `{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": x}`."""
    return not filter or all(_compare(value.get(k), f) for k, f in filter.items())


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(wanted)
                and all(_compare(v, w) for v, w in zip(value, wanted, strict=True)))
    return bool(value == wanted)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError("filter", f"unknown operator {op!r}; known: $eq $ne $gt $gte $lt $lte")
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or smaller than anything
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


__all__ = ["MemlaneStore", "matches", "readable", "to_item"]
