"""A memory's audited writes, once validated (`Memory.add` / `update` / `delete`, and the
features that write a memory themselves, such as an undo): the row, its vector and its audit
event in one transaction; then the engine's notices (signals.py) for what follows the store,
and seed 004's events (`memory.write.important`, `memory.deleted`) for the rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane import forget, supersession
from memlane.errors import Conflict, NotFound
from memlane.events import Event
from memlane.indexing import embed_one
from memlane.models import MemoryRecord, Scope

if TYPE_CHECKING:
    from memlane.parts import Embedding, Noticing


def insert(engine: Noticing, scope: Scope, rec: MemoryRecord, actor: str) -> MemoryRecord:
    """Store a new memory, audited as ADD; one important enough is an event (seed 004 §11.2).
    An id the scope holds already is a Conflict, checked with the scope held: of two callers
    adding one chosen id at once (`Memory.add(memory_id=...)`), exactly one adds it."""
    vec = embed_one(engine.store, engine.embedder, rec.content, engine.config.embedding.max_chars)
    with engine.store.transaction():
        engine.store.lock_scope(scope)
        if engine.store.memory_rowid(scope, rec.id) >= 0:
            raise Conflict("memory_id", f"memory {rec.id!r} exists already")
        rowid = engine.store.insert_memory(rec)
        engine.store.put_vectors("memories", scope, [rowid], vec[None, :])
        engine.store.add_event(scope, rec.id, "ADD", None, rec.snapshot(), actor, "", rec.created_at)
    engine.signals.send("rows.written")
    engine.signals.send("memory.changed", scope)
    if rec.score >= engine.config.events.important_score:
        engine.events.emit(Event.memory_important(scope, rec.id, rec.content, rec.category, rec.score,
                                                  rec.created_at))
    return rec


def remove(engine: Noticing, scope: Scope, before: MemoryRecord, actor: str, reason: str, hard: bool) -> MemoryRecord:
    """Delete a memory, audited; its text leaves every index, cache and file (the audit rows
    too when `hard`: content-free tombstones, no undo)."""
    now = engine.clock()
    with engine.store.transaction():
        engine.store.delete_memory(scope, before.id)
        engine.store.add_event(scope, before.id, "DELETE", before.snapshot(), None, actor, reason, now)
        # the current version of a changed fact deleted: the one it replaced holds again
        # (the change was wrong, issue 32), its history kept in the audit trail
        supersession.reopen_previous(engine.store, scope, before, at=now, actor=actor)
        engine.store.mark_forgetting()  # a crash before after_delete: the next open scrubs the files
    forget.after_delete(engine, scope, before, hard=hard)
    engine.signals.send("memory.changed", scope)
    engine.signals.send("memory.forgotten", scope, [before])  # in every profile: MEMORY.md (+ .bak), USER.md
    engine.events.emit(Event.memory_deleted(scope, before.id, before.content, before.category, actor, reason, now))
    return before


def rewrite(engine: Embedding, scope: Scope, before: MemoryRecord, after: MemoryRecord, kind: str, actor: str,
            reason: str) -> MemoryRecord:
    """Store `after` over `before` (re-embedded when its text changed), audited as `kind`."""
    content_changed = after.content != before.content
    vec = embed_one(engine.store, engine.embedder, after.content, engine.config.embedding.max_chars) \
        if content_changed else None
    with engine.store.transaction():
        rowid = engine.store.update_memory(after, content_changed=content_changed)
        if vec is not None:
            engine.store.put_vectors("memories", scope, [rowid], vec[None, :])
        engine.store.add_event(scope, after.id, kind, before.snapshot(), after.snapshot(), actor, reason,
                               after.updated_at)
    engine.signals.send("memory.changed", scope)
    return after


def supersede(engine: Noticing, scope: Scope, old: MemoryRecord, new: MemoryRecord | None, by: MemoryRecord | None,
              actor: str, reason: str) -> tuple[MemoryRecord, MemoryRecord]:
    """A fact changed (issue 32): `new` (not yet stored) or the stored memory `by` supersedes
    `old`, which is closed and kept (supersession.py). One transaction: a crash leaves either
    no change or the whole change."""
    now = engine.clock()
    if by is not None:
        supersession.check(old, by)
        with engine.store.transaction():
            old, stored = _fresh(engine, scope, old), _fresh(engine, scope, by)
            by = stored.model_copy(update={"valid_from": by.valid_from})  # the caller's valid_from, if any
            closed, current = supersession.apply(engine.store, scope, old, by, at=now, actor=actor, reason=reason,
                                                 pin=by.verified)
    else:
        assert new is not None
        supersession.check(old, new)
        vec = embed_one(engine.store, engine.embedder, new.content, engine.config.embedding.max_chars)
        with engine.store.transaction():
            old = _fresh(engine, scope, old)
            rowid = engine.store.insert_memory(new)
            engine.store.put_vectors("memories", scope, [rowid], vec[None, :])
            engine.store.add_event(scope, new.id, "ADD", None, new.snapshot(), actor, reason, now)
            closed, current = supersession.apply(engine.store, scope, old, new, at=now, actor=actor, reason=reason,
                                                 pin=new.source == "user")
        engine.signals.send("rows.written")
    engine.signals.send("memory.changed", scope)
    return closed, current


def _fresh(engine: Noticing, scope: Scope, mem: MemoryRecord) -> MemoryRecord:
    """`mem` as stored now, the scope held (a concurrent change or delete since it was read
    is seen), checked again: two people superseding one fact at once make one change."""
    engine.store.lock_scope(scope)
    now = engine.store.get_memory(scope, mem.id)
    if now is None:
        raise NotFound(f"memory {mem.id!r} was deleted meanwhile")
    if now.status == "superseded":
        raise Conflict("memory_id", f"memory {mem.id!r} was superseded meanwhile by {now.superseded_by!r}")
    return now
