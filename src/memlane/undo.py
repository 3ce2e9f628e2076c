"""Undo from the audit trail (issue 12).

Every deletion — by an LLM's operation, `delete`, consolidation or `md import` — writes a
DELETE event whose `before` is the memory's last state. `restore` re-creates the memory from
it under the same id (re-embedded, re-indexed); `undo` reverts a memory's last audited change
(a DELETE is restored, an ADD removed, anything else rolled back to the state before it).
Both are audited themselves — RESTORE, or DELETE when an ADD is undone — so an undo can be
undone in turn.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memlane import supersession, validate, writes
from memlane.errors import Conflict, NotFound, ValidationError
from memlane.indexing import embed_one
from memlane.models import MemoryEvent, MemoryRecord, Scope
from memlane.parts import Parts, Restoring
from memlane.policy import restored
from memlane.store import Store

_ALL = 1_000_000  # every event of one memory (the store reads oldest first, with a limit)


def restore(mem: Restoring, scope: Scope, memory_id: str, *, actor: str = "api", reason: str = "") -> MemoryRecord:
    """Re-create a deleted memory from its last DELETE event, under the same id."""
    validate.memory_id(memory_id)
    if mem.store.get_memory(scope, memory_id) is not None:
        raise Conflict("memory_id", f"memory {memory_id!r} exists; only a deleted memory can be restored "
                                           "(`memlane undo` reverts its last change)")
    events = _events(mem, scope, memory_id)
    deleted = next((e for e in reversed(events) if e.kind == "DELETE"), None)
    if deleted is None:
        raise NotFound(f"memory {memory_id!r} of user {scope.user_id!r} has no deletion in its history; "
                       "nothing to restore")
    rec = _record(deleted.before, scope, memory_id, f"DELETE event #{deleted.id}")
    now = mem.clock()
    rec = restored(rec, now, mem.config.policy)
    vec = embed_one(mem.store, mem.embedder, rec.content, mem.config.embedding.max_chars)
    with mem.store.transaction():
        if mem.store.get_memory(scope, memory_id) is not None:  # restored meanwhile by another caller
            raise Conflict("memory_id", f"memory {memory_id!r} was restored meanwhile")
        rec = _relinked(mem.store, scope, rec, now)
        rowid = mem.store.insert_memory(rec)
        mem.store.put_vectors("memories", scope, [rowid], vec[None, :])
        mem.store.add_event(scope, memory_id, "RESTORE", None, rec.snapshot(), actor,
                            reason or f"restored from DELETE event #{deleted.id}", now)
        prev = mem.store.get_memory(scope, rec.supersedes) if rec.supersedes else None
        if prev is not None and prev.superseded_by is None and prev.status != "superseded":
            # the current version of a changed fact is back: the one it replaced, reopened by
            # the deletion, is closed again (issue 32)
            supersession.apply(mem.store, scope, prev, rec, at=now, actor=actor, reason="restored")
            rec = mem.store.get_memory(scope, memory_id) or rec
    mem.signals.send("memory.changed", scope)
    return rec


def _relinked(store: Store, scope: Scope, rec: MemoryRecord, at: datetime) -> MemoryRecord:
    """A restored memory's links as the store holds them now: a superseded version whose
    successor is gone holds again; a current one whose predecessor moved on links to nothing."""
    if rec.superseded_by is not None:  # replaced (or to be, from a later date)
        nxt = store.get_memory(scope, rec.superseded_by)
        if nxt is None or nxt.supersedes != rec.id:
            rec = supersession.reopened(rec, at)
    if rec.supersedes:
        prev = store.get_memory(scope, rec.supersedes)
        if prev is None or (prev.superseded_by not in (None, rec.id)) or (prev.status == "superseded"
                                                                          and prev.superseded_by != rec.id):
            rec = rec.model_copy(update={"supersedes": None})
    return rec


def undo(mem: Restoring, scope: Scope, memory_id: str, *, actor: str = "api") -> MemoryEvent:
    """Revert the memory's last audited change; returns the event that reverted it."""
    validate.memory_id(memory_id)
    events = _events(mem, scope, memory_id)
    last = events[-1]
    current = mem.store.get_memory(scope, memory_id)
    why = f"undo of {last.kind} event #{last.id}"
    if last.after is None:  # a deletion
        if current is None:
            restore(mem, scope, memory_id, actor=actor, reason=why)
            return _events(mem, scope, memory_id)[-1]
        raise Conflict("memory_id", f"memory {memory_id!r} exists though its last event is a DELETE; "
                                           "nothing to undo")
    if current is None:
        raise NotFound(f"memory {memory_id!r} of user {scope.user_id!r} is gone without an audited deletion; "
                       "nothing to undo")
    if last.before is None:  # it was added (or restored): undoing removes it, restorably
        mem.delete(memory_id, user_id=scope.user_id, agent_id=scope.agent_id or None, actor=actor, reason=why)
        return _events(mem, scope, memory_id)[-1]
    if (change := _change_event(events)).kind == "SUPERSEDE":
        return _undo_change(mem, scope, current, change, actor, why)
    previous = _record(last.before, scope, memory_id, f"{last.kind} event #{last.id}")
    writes.rewrite(mem, scope, current, previous.model_copy(update={"updated_at": mem.clock()}), "RESTORE", actor, why)
    return _events(mem, scope, memory_id)[-1]


def _undo_change(mem: Restoring, scope: Scope, current: MemoryRecord, last: MemoryEvent, actor: str,
                 why: str) -> MemoryEvent:
    """Undo a change (issue 32) on both of its sides at once: each memory back to its state
    before the SUPERSEDE; the newer one stays, as a memory of its own, for a person to keep or
    delete. Either side's undo does it; a side changed since is refused."""
    after = last.after or {}
    older = after.get("superseded_by") is not None  # the replaced side (closed, or from a later date)
    other_id = after.get("superseded_by") if older else after.get("supersedes")
    other = mem.store.get_memory(scope, str(other_id)) if other_id else None
    if older and current.superseded_by != other_id \
            or other is None or (other.supersedes != current.id and other.superseded_by != current.id):
        raise Conflict("memory_id", f"memory {current.id!r} changed again since; undo the later change first")
    pair = [(current, last), (other, _change_event(_events(mem, scope, other.id)))]
    if pair[1][1].kind != "SUPERSEDE":
        raise Conflict("memory_id", f"memory {other.id!r} changed since the change; undo its later change first")
    now = mem.clock()
    with mem.store.transaction():
        for m, event in pair:
            back = _record(event.before, scope, m.id, f"SUPERSEDE event #{event.id}").model_copy(
                update={"updated_at": now})
            mem.store.update_memory(back, content_changed=False)
            mem.store.add_event(scope, m.id, "RESTORE", m.snapshot(), back.snapshot(), actor, why, now)
    mem.signals.send("memory.changed", scope)
    return _events(mem, scope, current.id)[-1]


def _taken_effect(e: MemoryEvent) -> bool:
    """Whether `e` is the consolidation writing down a change told ahead of its date once the
    date passed (lifecycle's expire step, issue 32): part of that change, not one of its own."""
    before, after = e.before or {}, e.after or {}
    return (e.kind == "UPDATE" and after.get("status") == "superseded" and before.get("status") != "superseded"
            and before.get("superseded_by") is not None and before.get("superseded_by") == after.get("superseded_by"))


def _change_event(events: list[MemoryEvent]) -> MemoryEvent:
    """The last event of a memory's history, the SUPERSEDE under it when the last only wrote
    that change down (`_taken_effect`): an undo of the change undoes both."""
    i = len(events) - 1
    while i > 0 and _taken_effect(events[i]):
        i -= 1
    return events[i]


def _events(mem: Parts, scope: Scope, memory_id: str) -> list[MemoryEvent]:
    events = mem.store.events(scope, memory_id, limit=_ALL)
    if not events:
        raise NotFound(f"memory {memory_id!r} has no history for user {scope.user_id!r} (it never existed, or "
                       "the user was purged); `memlane list` shows the ids")
    return events


def _record(snapshot: dict[str, Any] | None, scope: Scope, memory_id: str, where: str) -> MemoryRecord:
    """The memory an audit snapshot describes, in this scope."""
    if not snapshot or not str(snapshot.get("content") or "").strip():
        raise ValidationError("memory_id", f"the audit keeps no content of memory {memory_id!r} ({where}): it "
                                           "was erased for good and cannot be brought back")
    fields = {k: v for k, v in snapshot.items() if k in MemoryRecord.model_fields}
    try:
        return MemoryRecord.model_validate({**fields, "id": memory_id, "user_id": scope.user_id,
                                            "agent_id": scope.agent_id})
    except PydanticValidationError as exc:
        raise ValidationError("memory_id", f"the audit snapshot of memory {memory_id!r} ({where}) is not a "
                                           f"valid memory: {exc.errors()[0]['msg']}") from None


__all__ = ["restore", "undo"]


def restorable(store: Store, scope: Scope, limit: int, offset: int) -> list[MemoryEvent]:
    """The DELETE events of the scope's memories that are still deleted and can be restored
    (a hard delete keeps no text), last deleted first; each event's `before` is the memory."""
    latest: dict[str, MemoryEvent] = {}
    for event in store.events(scope, None, limit=10_000_000):
        latest[event.memory_id] = event
    gone = [e for e in latest.values() if e.kind == "DELETE" and e.before and e.before.get("content")
            and store.get_memory(scope, e.memory_id) is None]
    gone.sort(key=lambda e: e.id, reverse=True)
    return gone[offset: offset + limit]
