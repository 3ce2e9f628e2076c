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

A key is one memory whose id derives from the scope, namespace and key (`item_id`): a get or
put reads that memory alone, and concurrent puts of one key meet on it. Items are flagged
`distinct`, so consolidate's dedup never merges two keys; a person's edit of the memory in
memlane (or a new version of it) is carried back into the value (`edited`).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memlane import validate
from memlane.config import Config
from memlane.errors import Conflict, MissingExtra, NotFound, ValidationError
from memlane.lifecycle import DISTINCT
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
ID_PREFIX = "lg_"  # an item's memory id: this, then a digest of its scope, namespace and key
SEARCH_CAP = 10_000  # memlane's largest search limit (reading.ask)
# not tunable: bounds on loops that follow stored links, so a damaged chain cannot spin
MAX_VERSIONS = 100  # versions of one item followed through memlane's supersession
MAX_TRIES = 3  # a put that lost a race (the key added or deleted meanwhile) is tried again
# namespace labels LangGraph's and LangMem's docs use beside the user id: found where the
# store reads the user, the namespace is the other way round (user_at is wrong), and every
# user would be filed under this one name
LABELS = frozenset({"memories"})

Namespace = tuple[str, ...]


class MemoryAPI(Protocol):
    """What the store calls on `memlane.Memory` (the façade's own validated, audited verbs)."""

    config: Config

    def add(self, content: str, *, user_id: str, agent_id: str | None = None, category: str | None = None,
            metadata: dict[str, Any] | None = None, source: Source = "user", pinned: bool = False,
            actor: str = "api", memory_id: str | None = None) -> MemoryRecord: ...

    def get(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> MemoryRecord: ...

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
    (`pinned=True` keeps items out of decay and archiving; dedup never merges an item).
    `min_score`: the relevance floor of a query search (default memlane's
    `search.min_relevance`; 0 ranks every candidate)."""

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
                found = items.find(self.scope_of(op.namespace), tuple(op.namespace), str(op.key))
                results.append(None if found is None else found.item)
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
        user = namespace[self.user_at]
        if user in LABELS:
            other = next((i for i, n in enumerate(namespace) if i != self.user_at and n not in LABELS), None)
            hint = f"user_at={other}" if other is not None else "user_id=..."
            raise ValidationError(field, f"{tuple(namespace)!r}: element {self.user_at} (user_at) is {user!r}, a "
                                         f"namespace label, not a user id; every user would share it. For "
                                         f"namespaces shaped like this one, make the store with {hint}")
        return _Scope(user, self.agent_id)

    # ---- search and listings ------------------------------------------------------------

    def _search(self, items: _Items, op: SearchOp) -> list[SearchItem]:
        scope = self.scope_of(op.namespace_prefix, "namespace_prefix")
        offset, limit = max(op.offset, 0), max(op.limit, 0)
        if not op.query:  # a listing: every item under the prefix, oldest first
            kept = [i for i in items.of(scope) if _under(i.namespace, op.namespace_prefix) and matches(i.value, op.filter)]
            return [SearchItem(i.namespace, i.key, i.value, i.created_at, i.updated_at)
                    for i in kept[offset:offset + limit]]
        want, n = offset + limit, max(offset + limit, self.memory.config.search.default_limit)
        while True:
            hits = self.memory.search(op.query, user_id=scope.user_id, agent_id=scope.agent_id, limit=n,
                                      min_score=self.min_score)
            found = self._ranked(items, hits, scope, op)
            if len(found) >= want or len(hits) < n or n >= SEARCH_CAP:
                return found[offset:want]
            n = min(n * 4, SEARCH_CAP)  # the prefix or filter left too few: look further down

    def _ranked(self, items: _Items, hits: Sequence[Hit], scope: _Scope, op: SearchOp) -> list[SearchItem]:
        out: list[SearchItem] = []
        seen: set[tuple[Namespace, str]] = set()
        for hit in hits:
            # an agent scope also reads its user's shared memories; items are the scope's own
            rec = hit.memory
            if rec is None or rec.status == "superseded" or (rec.agent_id or None) != scope.agent_id:
                continue
            item = items.item_of(scope, rec)
            if item is None or (item.namespace, item.key) in seen or not _under(item.namespace, op.namespace_prefix):
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
        names = {i.namespace for i in items.of(scope)}
        kept = [ns for ns in names if all(_does_match(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[:op.max_depth] for ns in kept})
        return sorted(kept)[op.offset:op.offset + op.limit]

    # ---- what a put stores --------------------------------------------------------------

    def text_of(self, value: Mapping[str, Any], index: Any) -> str | None:
        """The text memlane indexes for a value: its indexed fields, one per line; None when
        the put asks for no index (`index=False`) or no indexed field is present."""
        return self.indexed(value, index)[0]

    def indexed(self, value: Mapping[str, Any], index: Any) -> tuple[str | None, Any]:
        """`text_of`, and where that text sits in the value, so an edit of the text made in
        memlane can be carried back (`edited`): a field path (`["content"]`), "lines" (the
        `field: text` lines of a whole value), or None when the text joins several fields."""
        if index is False:
            return None, None
        paths = self.fields if index is None else list(index)
        texts: list[str] = []
        where: list[Any] = []
        for path in paths:
            if path == "$":
                text = readable(value)
                texts.append(text)
                where.append([next(iter(value))] if len(value) == 1 else "lines")
            else:
                found = [t for t in get_text_at_path(dict(value), tokenize_path(path)) if t.strip()]
                texts += found
                tokens = tokenize_path(path)
                plain = all(not t.startswith("[") and t != "*" for t in tokens)
                where += [tokens if plain and len(found) == 1 else None] * len(found)
        kept = [(t, w) for t, w in zip(texts, where, strict=True) if t.strip()]
        text = "\n".join(t for t, _ in kept)
        return (text or None), (kept[0][1] if len(kept) == 1 else None)


class _Items:
    """One batch's reads and writes of items: a key is found by its memory id, not by reading
    the scope; listings read the scope's memories once per operation."""

    def __init__(self, store: MemlaneStore) -> None:
        self.store = store
        self.memory = store.memory

    def _get(self, scope: _Scope, memory_id: str) -> MemoryRecord | None:
        try:
            return self.memory.get(memory_id, user_id=scope.user_id, agent_id=scope.agent_id)
        except NotFound:
            return None

    def find(self, scope: _Scope, namespace: Namespace, key: str) -> _Stored | None:
        """The item under a key: its memory (by id), followed to the version that holds now
        when a person replaced it in memlane (`Memory.supersede`)."""
        rec = self._get(scope, item_id(scope, namespace, key))
        if rec is None:
            return None
        versions = [rec]
        while rec.status == "superseded" and rec.superseded_by and len(versions) < MAX_VERSIONS:
            nxt = self._get(scope, rec.superseded_by)
            if nxt is None:
                break
            rec = nxt
            versions.append(rec)
        written = next((v for v in reversed(versions) if META in v.metadata), versions[0])
        item = to_item(written, rec)
        return None if item is None else _Stored(item, rec)

    def item_of(self, scope: _Scope, rec: MemoryRecord,
                lookup: Callable[[str], MemoryRecord | None] | None = None) -> Item | None:
        """The item a current memory holds: the store's metadata on it or, when a person
        replaced the item's text in memlane, on the version it replaced."""
        written: MemoryRecord | None = rec
        for _ in range(MAX_VERSIONS):
            if written is None or META in written.metadata or not written.supersedes:
                break
            written = (lookup or (lambda i: self._get(scope, i)))(written.supersedes)
        return None if written is None else to_item(written, rec)

    def of(self, scope: _Scope) -> list[Item]:
        """Every item of a scope, oldest first (an unindexed item is an archived memory)."""
        recs = self.memory.list(user_id=scope.user_id, agent_id=scope.agent_id, status=None,
                                sort="created_at", descending=False)
        by_id = {r.id: r for r in recs}
        found: dict[tuple[Namespace, str], Item] = {}
        for rec in recs:
            if rec.status != "superseded" and (item := self.item_of(scope, rec, by_id.get)) is not None:
                old = found.get((item.namespace, item.key))
                if old is None or old.updated_at <= item.updated_at:
                    found[(item.namespace, item.key)] = item
        return sorted(found.values(), key=lambda i: i.created_at)

    def put(self, op: PutOp) -> None:
        scope = self.store.scope_of(op.namespace)
        namespace, key = tuple(op.namespace), str(op.key)
        if op.value is None:
            self.delete(scope, namespace, key)
            return
        cfg = self.memory.config.store
        # JSON only (no datetime, bytes or sets), and not deep enough to break json's recursion
        value = dict(validate.json_value("value", op.value, max_depth=cfg.max_value_depth,
                                         max_bytes=cfg.max_metadata_bytes, depth_setting="store.max_value_depth"))
        text, where = self.store.indexed(value, op.index)
        whole = text if text is not None else readable(value) or key
        content = _fit(whole, cfg.max_content_chars)
        status = "active" if text is not None else "archived"
        for attempt in range(MAX_TRIES):
            old = self.find(scope, namespace, key)
            now = datetime.now().astimezone()
            meta = {"namespace": list(namespace), "key": key,
                    # the value as JSON text: memlane bounds metadata's depth, not a string's shape
                    "value": json.dumps(value, ensure_ascii=False, sort_keys=True),
                    # the text as written (its digest), and where it came from: an edit made in
                    # memlane is seen, and carried into the value
                    "text": digest(content), "where": where if content == whole and text is not None else None,
                    # the item's own times, as LangGraph's stores keep them: created at the first put
                    "created_at": (now if old is None else old.item.created_at).isoformat(),
                    "updated_at": now.isoformat()}
            try:
                if old is None:
                    rec = self.memory.add(content, user_id=scope.user_id, agent_id=scope.agent_id,
                                          category=self.store.category, metadata={META: meta, DISTINCT: True},
                                          source=self.store.source, pinned=self.store.pinned, actor=ACTOR,
                                          memory_id=item_id(scope, namespace, key))
                    if status != rec.status:
                        self.memory.update(rec.id, user_id=scope.user_id, agent_id=scope.agent_id, status=status,
                                           actor=ACTOR)
                else:
                    self.memory.update(old.record.id, user_id=scope.user_id, agent_id=scope.agent_id,
                                       content=content, metadata={**old.record.metadata, META: meta, DISTINCT: True},
                                       status=status, actor=ACTOR)
                return
            except (Conflict, NotFound):
                # another writer added the key (or deleted it) since we looked: look again; of
                # two puts at once, both land, one after the other, on the one memory
                if attempt == MAX_TRIES - 1:
                    raise

    def delete(self, scope: _Scope, namespace: Namespace, key: str) -> None:
        # deleting the current version of a replaced fact makes the one it replaced hold
        # again (memlane's rule): delete until no version of the item is left
        for _ in range(MAX_VERSIONS):
            found = self.find(scope, namespace, key)
            if found is None:
                return
            with contextlib.suppress(NotFound):  # another caller deleted it first
                self.memory.delete(found.record.id, user_id=scope.user_id, agent_id=scope.agent_id, actor=ACTOR)


@dataclass(frozen=True)
class _Stored:
    item: Item
    record: MemoryRecord


def item_id(scope: _Scope, namespace: Sequence[str], key: str) -> str:
    """The memory id of the item under a key: the same for every writer of that key, in any
    process, so a get reads one memory and two puts of one key cannot add two."""
    name = json.dumps([scope.user_id, scope.agent_id, list(namespace), key])  # ASCII: any text hashes
    return ID_PREFIX + hashlib.blake2b(name.encode("ascii"), digest_size=20).hexdigest()


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def to_item(written: MemoryRecord, current: MemoryRecord | None = None) -> Item | None:
    """The LangGraph item a memory holds (`written`: the version carrying the store's
    metadata; `current`: the version that holds now, default the same); None for a memory
    no store wrote. When the memory's text was edited in memlane since the store wrote it,
    the edit is carried into the value (`edited`)."""
    current = current or written
    meta = written.metadata.get(META)
    if not isinstance(meta, dict) or not isinstance(meta.get("namespace"), list) or "key" not in meta:
        return None
    try:
        value = json.loads(meta["value"])
        created, updated = datetime.fromisoformat(meta["created_at"]), datetime.fromisoformat(meta["updated_at"])
    except (KeyError, TypeError, ValueError):
        return None  # not the shape this module writes: someone else's metadata, left alone
    if isinstance(meta.get("text"), str) and digest(current.content) != meta["text"]:
        value = edited(value, current.content, meta.get("where"))
        updated = max(updated, current.updated_at)
    return Item(value=value, key=str(meta["key"]), namespace=tuple(meta["namespace"]), created_at=created,
                updated_at=updated)


def edited(value: dict[str, Any], text: str, where: Any) -> dict[str, Any]:
    """The value with a person's edit of its text: the field the text came from set to it
    (a number or other JSON field parsed back when the text is JSON), or the `field: text`
    lines of a whole value read back field by field. A text joined from several fields
    cannot be carried back: the value stays as put (the memory shows the edit)."""
    if isinstance(where, list) and where and all(isinstance(k, str) for k in where):
        out = json.loads(json.dumps(value))
        parent = out
        for k in where[:-1]:
            parent = parent.get(k) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and where[-1] in parent:
            parent[where[-1]] = _leaf(parent[where[-1]], text)
            return dict(out)
        return value
    if where == "lines":
        fields = _lines(text, value)
        return {k: (_leaf(v, fields[k]) if k in fields else v) for k, v in value.items()} if fields else value
    return value


def _leaf(old: Any, text: str) -> Any:
    if isinstance(old, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # the person wrote words where a number was: their words


def _lines(text: str, value: Mapping[str, Any]) -> dict[str, str]:
    """`field: text` lines (readable's form) back to fields; a line that starts no known
    field continues the one before it (a field's text may hold newlines)."""
    out: dict[str, list[str]] = {}
    last: str | None = None
    for line in text.split("\n"):
        m = re.match(r"([^:\n]+): ?(.*)\Z", line, re.S)
        if m and m.group(1) in value and m.group(1) not in out:
            last = m.group(1)
            out[last] = [m.group(2)]
        elif last is not None:
            out[last].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


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
