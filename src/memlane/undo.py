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
        rec, kin = _relinked(mem.store, scope, rec, now)
        rowid = mem.store.insert_memory(rec)
        mem.store.put_vectors("memories", scope, [rowid], vec[None, :])
        mem.store.add_event(scope, memory_id, "RESTORE", None, rec.snapshot(), actor,
                            reason or f"restored from DELETE event #{deleted.id}", now)
        if kin is not None:
            # a version of a changed fact is back: its chain closed over the gap (or reopened
            # the version it replaced) when it was deleted; it goes back in by its dates (issue 32)
            rec = supersession.placed(mem.store, scope, rec, kin, at=now, actor=actor, reason="restored")
    mem.signals.send("memory.changed", scope)
    return rec


def _relinked(store: Store, scope: Scope, rec: MemoryRecord,
              at: datetime) -> tuple[MemoryRecord, MemoryRecord | None]:
    """A restored memory as its links stand now, and a version of its chain still stored when
    those links are gone (it goes back in there by its dates), else None. Links still answered
    are kept; a version whose neighbours are all gone holds on its own."""
    nxt = store.get_memory(scope, rec.superseded_by) if rec.superseded_by else None
    prev = store.get_memory(scope, rec.supersedes) if rec.supersedes else None
    next_kept = nxt is not None and nxt.supersedes == rec.id
    prev_kept = prev is not None and prev.superseded_by == rec.id
    if next_kept or prev_kept or (nxt is None and prev is None):
        if not next_kept and rec.superseded_by is not None:
            rec = supersession.reopened(rec, at)
        return (rec if prev_kept else rec.model_copy(update={"supersedes": None})), None
    alone = supersession.reopened(rec, at).model_copy(update={"supersedes": None})
    return alone, nxt or prev


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
    if (previous.supersedes, previous.superseded_by) != (current.supersedes, current.superseded_by):
        # a link let go when its partner was deleted (`supersession.reopen_previous`): rolled
        # back alone it would name a memory that is gone
        gone = previous.supersedes if previous.supersedes != current.supersedes else previous.superseded_by
        raise Conflict("memory_id", f"memory {memory_id!r}'s last change let go of {gone!r}, which was deleted; "
                                    f"restore that one (`memlane restore {gone}`) to put the versions back together")
    writes.rewrite(mem, scope, current, previous.model_copy(update={"updated_at": mem.clock()}), "RESTORE", actor, why)
    return _events(mem, scope, memory_id)[-1]


def _undo_change(mem: Restoring, scope: Scope, current: MemoryRecord, last: MemoryEvent, actor: str,
                 why: str) -> MemoryEvent:
    """Undo a change (issue 32) on both of its sides at once: each memory back to its state
    before the SUPERSEDE; the newer one stays, as a memory of its own, for a person to keep or
    delete. Either side's undo does it; a side changed since is refused."""
    before, after = last.before or {}, last.after or {}
    # the side whose successor this change set (closed, or to be from a later date), else the
    # side that took over: told by the link the change wrote, not by links the memory has
    older = before.get("superseded_by") != after.get("superseded_by")
    other_id = after.get("superseded_by") if older else after.get("supersedes")
    other = mem.store.get_memory(scope, str(other_id)) if other_id else None
    if older and current.superseded_by != other_id \
            or other is None or (other.supersedes != current.id and other.superseded_by != current.id):
        raise Conflict("memory_id", f"memory {current.id!r} changed again since; undo the later change first")
    pair = [(current, last), (other, _change_event(_events(mem, scope, other.id)))]
    link = "supersedes" if older else "superseded_by"
    before, after = pair[1][1].before or {}, pair[1][1].after or {}
    if pair[1][1].kind != "SUPERSEDE" or before.get(link) == after.get(link) \
            or after.get(link) != current.id:  # its last change is another one
        raise Conflict("memory_id", f"memory {other.id!r} changed since the change; undo its later change first")
    backs = {m.id: _record(event.before, scope, m.id, f"SUPERSEDE event #{event.id}").model_copy(
        update={"updated_at": mem.clock()}) for m, event in pair}
    if (loose := _one_sided(mem.store, scope, backs)) is not None:
        raise Conflict("memory_id", f"undoing this change would leave {loose!r} naming a version that does not name "
                                    "it back (the change put a version between two others); delete the version "
                                    "to take it out of its chain")
    now = mem.clock()
    with mem.store.transaction():
        for m, _ in pair:
            mem.store.update_memory(backs[m.id], content_changed=False)
            mem.store.add_event(scope, m.id, "RESTORE", m.snapshot(), backs[m.id].snapshot(), actor, why, now)
    mem.signals.send("memory.changed", scope)
    return _events(mem, scope, current.id)[-1]


def _one_sided(store: Store, scope: Scope, backs: dict[str, MemoryRecord]) -> str | None:
    """A memory that would name a version not naming it back once `backs` are written, if any:
    the memories written and every neighbour they name now or would name."""
    def state(memory_id: str) -> MemoryRecord | None:
        return backs.get(memory_id) or store.get_memory(scope, memory_id)

    near = set(backs)
    for b in backs.values():
        now = store.get_memory(scope, b.id)
        near |= {i for m in (b, now) if m is not None for i in (m.supersedes, m.superseded_by) if i}
    for memory_id in sorted(near):
        m = state(memory_id)
        if m is None:
            continue
        if m.supersedes and (p := state(m.supersedes)) is not None and p.superseded_by != m.id:
            return m.id
        if m.superseded_by and (n := state(m.superseded_by)) is not None and n.supersedes != m.id:
            return m.id
    return None


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
