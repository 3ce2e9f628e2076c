"""What a memory write or listing may hold: the checks behind `Memory.add`, `update`, `list`
and `count`, each naming the field it refuses, before anything is written or read."""

from __future__ import annotations

from datetime import datetime
from typing import Any, get_args

from memlane import validate
from memlane.config import MAX_ID_CHARS, Config
from memlane.errors import ValidationError
from memlane.models import MEMORY_SORTS, EventKind, MemoryRecord, MemoryWhere, Scope, Source, new_id
from memlane.policy import importance_score

STATUSES = ("active", "archived")  # what an update may set; a listing may also ask for:
LISTED = (*STATUSES, "superseded")


def content(config: Config, value: Any, field: str = "content") -> str:
    return validate.memory_text(field, value, config.store.max_content_chars)


def category(config: Config, value: Any, field: str = "category") -> str:
    """The profile's default category when None; otherwise one of the profile's categories."""
    if value is None:
        return config.policy.default_category
    return validate.category(field, value, config.policy.categories, config.profile)


def new_memory(config: Config, scope: Scope, now: datetime, *, content_: Any, category_: Any, importance: Any,
               metadata: Any, source: Any, pinned: Any, verified: Any, expires_at: Any, session_id: Any,
               subject: Any, predicate: Any, confidence: Any, valid_from: Any = None,
               memory_id: Any = None) -> MemoryRecord:
    """A new memory record from `Memory.add`'s arguments, every one checked (in that order);
    `memory_id`: the caller's own id (a key it can find the memory by), else a new random one."""
    text, cat = content(config, content_), category(config, category_)
    score = importance_score(importance, config.policy)
    confidence = validate.number("confidence", confidence, 0.0, 1.0)
    metadata = validate.metadata("metadata", metadata, config.store, validate.MEMORY_KEYS)
    source = validate.choice("source", source, get_args(Source))
    pinned = validate.boolean("pinned", pinned)
    verified = verified is not None and validate.boolean("verified", verified)
    expires_at = validate.optional_when("expires_at", expires_at)
    session_id = validate.optional_ident("session_id", session_id)
    subject = validate.optional_text("subject", subject, MAX_ID_CHARS)
    predicate = validate.optional_text("predicate", predicate, MAX_ID_CHARS)
    valid_from = validate.optional_when("valid_from", valid_from)
    return MemoryRecord(
        id=new_id() if memory_id is None else validate.memory_id(memory_id), user_id=scope.user_id, agent_id=scope.agent_id, content=text, category=cat,
        score=score, confidence=confidence, subject=subject, predicate=predicate, created_at=now,
        updated_at=now, last_activated=now, expires_at=expires_at, source=source,
        # only a person's own words are "verified" (seed 003); code adding memories says so explicitly
        verified=verified, source_session=session_id, pinned=pinned, metadata=metadata or {}, valid_from=valid_from)

def changes(config: Config, *, content_: Any = None, category_: Any = None, importance: Any = None,
            score: Any = None, metadata: Any = None, pinned: Any = None, verified: Any = None,
            source: Any = None, status: Any = None, expires_at: Any = None) -> dict[str, Any]:
    """The fields `Memory.update` changes (None: left as it is), every one checked."""
    out: dict[str, Any] = {}
    if content_ is not None:
        out["content"] = content(config, content_)
    if category_ is not None:
        out["category"] = category(config, category_)
    if importance is not None:
        out["score"] = importance_score(importance, config.policy)
    if score is not None:
        out["score"] = validate.number("score", score, 0.0, 1.0)
    if metadata is not None:
        out["metadata"] = validate.metadata("metadata", metadata, config.store, validate.MEMORY_KEYS)
    if pinned is not None:
        out["pinned"] = validate.boolean("pinned", pinned)
    if verified is not None:  # a person confirmed it (seed 003 `verified`)
        out["verified"] = validate.boolean("verified", verified)
    if source is not None:  # whose words the memory now holds (an agent's rewrite: "agent")
        out["source"] = validate.choice("source", source, get_args(Source))
    if status is not None:
        out["status"] = validate.choice("status", status, STATUSES)
    if expires_at is not None:
        out["expires_at"] = validate.when("expires_at", expires_at)
    return out


def audit_kind(kind: Any) -> str:
    """One of `models.EventKind`, so a memory's history stays readable."""
    return validate.choice("kind", kind, get_args(EventKind))


def order(sort: Any, descending: Any) -> str:
    """The ORDER BY of a listing: `sort` one of `models.MEMORY_SORTS`; ties by the last update."""
    sort = validate.choice("sort", sort, MEMORY_SORTS)
    direction = "DESC" if validate.boolean("descending", descending) else "ASC"
    return f"{sort} {direction}" + (f", updated_at {direction}" if sort == "score" else "")


def status(value: Any) -> str | None:
    return None if value is None else validate.choice("status", value, LISTED)


def where(source: Any, verified: Any, pinned: Any, min_score: Any, max_score: Any,
          now: datetime | None = None) -> MemoryWhere:
    """A listing's filters on who wrote a memory, whether a person confirmed it, and its score;
    `now`: the time a status is read at (a change told ahead of its date, issue 32)."""
    return MemoryWhere(held_at=now,
        source=None if source is None else validate.choice("source", source, get_args(Source)),
        verified=None if verified is None else validate.boolean("verified", verified),
        pinned=None if pinned is None else validate.boolean("pinned", pinned),
        min_score=None if min_score is None else validate.number("min_score", min_score, 0.0, 1.0),
        max_score=None if max_score is None else validate.number("max_score", max_score, 0.0, 1.0))


def successor(config: Config, scope: Scope, now: datetime, old: MemoryRecord, content_: Any, by: MemoryRecord | None,
              valid_from: Any, category_: Any, source: Any = "user") -> tuple[MemoryRecord | None, MemoryRecord | None]:
    """(a new memory, or the stored memory `by` as it will begin) that supersedes `old`
    (`Memory.supersede`): exactly one of new content and `by`; `valid_from` (default now)
    when the change happened in the world, not before `old` began."""
    if (content_ is None) == (by is None):
        raise ValidationError("content", "give either the new content or `by` (the id of the memory "
                                                  "that replaces this one), not both")
    start = validate.optional_when("valid_from", valid_from) or now
    began = old.valid_from or old.created_at
    if start < began:
        # a planned change that is called off is deleted: the version before it holds again
        plan = (f"; {old.id!r} has not begun yet: to call it off, delete it (the version before it holds "
                f"again) and supersede that one") if began > now and old.supersedes else ""
        raise ValidationError("valid_from", f"{start.isoformat()} is before the memory it replaces "
                                            f"began to hold ({began.isoformat()}){plan}")
    if by is not None:
        return None, by.model_copy(update={"valid_from": start}) if valid_from is not None else by
    new = new_memory(config, scope, now, content_=content_, category_=old.category if category_ is None else category_,
                     importance=None, metadata=None, source=source, pinned=False, verified=source == "user",
                     expires_at=None,
                     session_id=None, subject=old.subject, predicate=old.predicate, confidence=1.0)
    return new.model_copy(update={"valid_from": start}), None
