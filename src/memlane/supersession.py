"""Facts that change (issue 32): a newer memory supersedes an older one instead of overwriting it.

People move, change jobs, switch diets. When a new memory replaces an old one, the old one is
closed — `valid_to` is when the new one began to hold, `superseded_at` when memlane learned
it, status "superseded" — and kept: it leaves the prompt and the default search, and is found
again by a search `as_of` a date when it held or one that asks about the past. The two name
each other (`superseded_by`, `supersedes`), so a fact's versions form a chain (`timeline`).
A change told ahead of its date ("from September I live in Berlin") leaves the old version
active and current until then, already closed at that date and linked; the date passing makes
it history (`MemoryRecord.replaced`), and the lifecycle's expire step writes it down.
The new memory carries on the old one's importance and use: a change of city does not make
where the user lives less important. Each side of a change is one audited SUPERSEDE event.

Seed 001's scored-markdown profile keeps its own rule (the contradicted memory's score is
halved, `writing.on_change`); a person's explicit change is a supersession in every profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memlane.errors import Conflict, ValidationError
from memlane.models import MemoryRecord, Scope
from memlane.store import Store

# memory metadata: a change the engine was unsure of (issue 32), for a person to apply or dismiss:
# {"ids": [memories this one may replace], "at": when flagged}. Its own key: the decay reviewer
# rewrites "review" whole
FLAG = "may_supersede"


def check(old: MemoryRecord, new: MemoryRecord) -> None:
    """Refuse a change that cannot be one: a memory superseding itself, or one already replaced."""
    if old.id == new.id:
        raise ValidationError("by", "a memory cannot supersede itself")
    if old.status == "superseded":
        raise Conflict("memory_id", f"memory {old.id!r} was already superseded by {old.superseded_by!r}; "
                                    f"supersede the current version instead")
    if old.superseded_by is not None:
        until = old.valid_to.date().isoformat() if old.valid_to else "a later date"
        raise Conflict("memory_id", f"memory {old.id!r} is already replaced by {old.superseded_by!r} from {until}; "
                                    f"supersede that version instead")
    if new.status == "superseded":
        raise Conflict("by", f"memory {new.id!r} is itself superseded by {new.superseded_by!r}")


def closed(old: MemoryRecord, new: MemoryRecord, at: datetime) -> MemoryRecord:
    """`old` as a change to `new` leaves it: held until `new` began (never before it began
    itself: a change told out of order closes it where it opened), retired at `at`. A change
    that begins after `at` leaves `old` active until then."""
    start = old.valid_from or old.created_at
    end = max(start, new.valid_from or at)
    status = "active" if end > at else "superseded"
    return old.model_copy(update={"status": status, "valid_to": end, "superseded_at": at,
                                  "superseded_by": new.id, "updated_at": at})


def taken_effect(m: MemoryRecord) -> MemoryRecord:
    """A pending change's old version once its date passed: history, as `closed` would have
    left it had the change been told on that date."""
    return m.model_copy(update={"status": "superseded"})


def carried(old: MemoryRecord, new: MemoryRecord, at: datetime, pin: bool = True) -> MemoryRecord:
    """`new` as it takes over from `old`: linked to it, with its importance and its use (and,
    with `pin`, the pin a person put on it: the change is told in the person's own words)."""
    return new.model_copy(update={
        "supersedes": old.id, "score": max(new.score, old.score), "pinned": new.pinned or (old.pinned and pin),
        "activation_count": new.activation_count + old.activation_count,
        "last_activated": max(new.last_activated, old.last_activated), "updated_at": at})


def reopened(old: MemoryRecord, at: datetime) -> MemoryRecord:
    """`old` holding again: the memory that replaced it was deleted (a change that was wrong)."""
    return old.model_copy(update={"status": "active", "valid_to": None, "superseded_at": None,
                                  "superseded_by": None, "updated_at": at})


def reopen_previous(store: Store, scope: Scope, deleted: MemoryRecord, *, at: datetime,
                    actor: str) -> MemoryRecord | None:
    """After `deleted` left the store, in the caller's transaction, its chain closes over the
    gap. The version it replaced (or was to replace from a later date) holds again, audited as
    RESTORE: the change was wrong, or the plan called off. When a later version replaced
    `deleted` (a middle version deleted: Munich → Berlin → Rome without Berlin), that one
    no longer names it and takes over from the reopened version instead: Munich → Rome, one
    current. Returns the reopened version; None when `deleted` replaced nothing still linked."""
    prev, nxt = _linked_before(store, scope, deleted), _linked_after(store, scope, deleted)
    if nxt is not None:
        unlinked = nxt.model_copy(update={"supersedes": None, "updated_at": at})
        store.update_memory(unlinked, content_changed=False)
        store.add_event(scope, nxt.id, "UPDATE", nxt.snapshot(), unlinked.snapshot(), actor,
                        f"the version it replaced, {deleted.id}, was deleted", at)
        nxt = unlinked
    if prev is None:
        return None
    again = reopened(prev, at)
    store.update_memory(again, content_changed=False)
    store.add_event(scope, prev.id, "RESTORE", prev.snapshot(), again.snapshot(), actor,
                    f"current again: {deleted.id} that replaced it was deleted", at)
    if nxt is not None:  # not `apply`: the later version carried the older one's use already
        _written(store, scope, actor, at, (again, closed(again, nxt, at), f"superseded by {nxt.id}: {nxt.content}, "
                                                                           f"{deleted.id} between them deleted"),
                 (nxt, nxt.model_copy(update={"supersedes": again.id, "updated_at": at}),
                  f"supersedes {again.id}: {again.content}, {deleted.id} between them deleted"))
        return store.get_memory(scope, again.id)
    return again


def placed(store: Store, scope: Scope, m: MemoryRecord, kin: MemoryRecord, *, at: datetime, actor: str,
           reason: str) -> MemoryRecord:
    """Put `m` (stored, unlinked) back into the chain `kin` is a version of, by when it began:
    a deleted version restored after its chain closed over the gap. It replaces the current
    version when it began after that one, else goes in as history before the first version
    that began after it. Audited as SUPERSEDE, in the caller's transaction; returns `m` as stored."""
    last, seen = kin, {kin.id, m.id}
    while (after := _linked_after(store, scope, last)) is not None and after.id not in seen:
        seen.add(after.id)
        last = after
    if (last.valid_from or last.created_at) <= (m.valid_from or m.created_at):
        if last.superseded_by is None and last.status != "superseded":
            _written(store, scope, actor, at, (last, closed(last, m, at), f"superseded by {m.id}: {m.content}: {reason}"),
                     (m, m.model_copy(update={"supersedes": last.id, "updated_at": at}),
                      f"supersedes {last.id}: {last.content}: {reason}"))
        return store.get_memory(scope, m.id) or m
    return placed_before(store, scope, last, m, at=at, actor=actor, reason=reason, how="back in its place")[0]


def apply(store: Store, scope: Scope, old: MemoryRecord, new: MemoryRecord, *, at: datetime, actor: str,
          reason: str = "", pin: bool = True) -> tuple[MemoryRecord, MemoryRecord]:
    """Write a change: `old` closed, `new` (already stored) linked and carrying on (`carried`);
    both audited as SUPERSEDE, in the caller's transaction. Returns both as stored."""
    check(old, new)
    why = f": {reason}" if reason else ""
    after_old, after_new = closed(old, new, at), carried(old, new, at, pin)
    _written(store, scope, actor, at, (old, after_old, f"superseded by {new.id}: {new.content}{why}"),
             (new, after_new, f"supersedes {old.id}: {old.content}{why}"))
    return after_old, after_new


def _written(store: Store, scope: Scope, actor: str, at: datetime,
             *changes: tuple[MemoryRecord, MemoryRecord, str]) -> None:
    """Each (before, after, why) of one change stored and audited as SUPERSEDE."""
    for before, after, why in changes:
        store.update_memory(after, content_changed=False)
        store.add_event(scope, before.id, "SUPERSEDE", before.snapshot(), after.snapshot(), actor, why, at)


def placed_before(store: Store, scope: Scope, later: MemoryRecord, new: MemoryRecord, *, at: datetime,
                  actor: str, reason: str = "", how: str = "told late") -> tuple[MemoryRecord, MemoryRecord]:
    """Write a change that reached the store after the one that replaced it: `new` (already
    stored) was said before `later` was — two sessions extracted out of order, a job retried
    after a later one ran — so it is history in its place in the chain: before the first version
    that began after it, after the one before that (closed at `new` instead). Audited as
    SUPERSEDE, in the caller's transaction. Returns `new` and the version after it, as stored."""
    start = new.valid_from or new.created_at
    after, prev = later, _linked_before(store, scope, later)
    seen = {later.id, new.id}
    while prev is not None and (prev.valid_from or prev.created_at) > start:
        if prev.id in seen:  # a corrupted cycle of links: stop where it closes
            prev = None
            break
        seen.add(prev.id)
        after, prev = prev, _linked_before(store, scope, prev)
    why = f": {reason}" if reason else ""
    told = new  # as stored: the audit's `before`
    if prev is not None:
        _written(store, scope, actor, at, (prev, prev.model_copy(update={
            "valid_to": start, "superseded_by": new.id, "updated_at": at,
            "status": "superseded" if start <= at else prev.status}), f"superseded by {new.id}: {new.content}, {how}"))
        new = new.model_copy(update={"supersedes": prev.id})
    end = max(start, after.valid_from or after.created_at)  # a planned change: active until it begins
    done = new.model_copy(update={"status": "superseded" if end <= at else "active", "valid_to": end,
                                  "superseded_at": at, "superseded_by": after.id, "updated_at": at})
    linked = after.model_copy(update={"supersedes": new.id, "updated_at": at})
    _written(store, scope, actor, at, (told, done, f"before {after.id} in time, which replaces it: {after.content}{why}"),
             (after, linked, f"supersedes {new.id}: {new.content}, {how}{why}"))
    return done, linked


def _linked_before(store: Store, scope: Scope, m: MemoryRecord) -> MemoryRecord | None:
    """The version `m` replaced, when the two name each other."""
    prev = store.get_memory(scope, m.supersedes) if m.supersedes else None
    return prev if prev is not None and prev.superseded_by == m.id else None


def _linked_after(store: Store, scope: Scope, m: MemoryRecord) -> MemoryRecord | None:
    """The version that replaced `m` (or will, from a later date), when the two name each other."""
    nxt = store.get_memory(scope, m.superseded_by) if m.superseded_by else None
    return nxt if nxt is not None and nxt.supersedes == m.id else None


def timeline(store: Store, scope: Scope, memory: MemoryRecord, limit: int = 100) -> list[MemoryRecord]:
    """Every version of the fact `memory` is one of, oldest first, following the links both
    ways (at most `limit`, so a corrupted cycle ends)."""
    seen = {memory.id}

    def walk(link: str) -> list[MemoryRecord]:
        out, m = [], memory
        while (nxt_id := getattr(m, link)) and len(seen) < limit:
            nxt = store.get_memory(scope, nxt_id)
            if nxt is None or nxt.id in seen:
                break
            seen.add(nxt.id)
            out.append(nxt)
            m = nxt
        return out

    older = walk("supersedes")
    return [*older[::-1], memory, *walk("superseded_by")]


def span(m: MemoryRecord, now: datetime | None = None) -> str:
    """When a memory held, compactly: "2019-06-01 – 2024-03-15", "since 2024-03-15"; with
    `now`, a version yet to begin says "from 2024-09-01" and one that holds until a change
    still to come says "until 2024-09-01"."""
    start = m.valid_from or m.created_at
    if now is not None and start > now:
        return f"from {_day(start)}" if m.valid_to is None else f"{_day(start)} – {_day(m.valid_to)}"
    if m.valid_to is None:
        return f"since {_day(start)}"
    if now is not None and m.valid_to > now:
        return f"until {_day(m.valid_to)}"
    return f"{_day(start)} – {_day(m.valid_to)}"


def _day(at: datetime) -> str:
    return at.strftime("%Y-%m-%d")


def chain_text(versions: Sequence[MemoryRecord]) -> str:
    """A fact's versions as one line for a prompt: "A (2019-06-01 – 2024-03-15) → B (since 2024-03-15)"."""
    return " → ".join(f"{m.content} ({span(m)})" for m in versions)
