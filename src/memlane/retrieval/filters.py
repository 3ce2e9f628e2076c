"""What a search may return besides the scope (always applied): the filters, and the checks
that apply them to memories (as records, and as columns before any record is built), turns
and episodes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args

import numpy as np

from memlane import validate
from memlane.config import Config
from memlane.errors import ValidationError
from memlane.models import MemoryFacts, MemoryRecord, Role, Scope, Turn
from memlane.store import Store


@dataclass(frozen=True)
class Filters:
    """What a search may return besides the scope (always applied)."""

    category: str | Sequence[str] | None = None
    status: str | None = "active"  # memories only; None = any
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_expired: bool = False
    roles: Sequence[str] | None = None  # turns only
    # memories only (issue 32): what held in the world at this time, superseded facts included
    as_of: datetime | None = None
    include_superseded: bool = False  # superseded facts beside the current ones

    def statuses(self) -> tuple[str, ...] | None:
        """The memory statuses kept; None: any. Asking about another time, or for the
        superseded too, widens "active" by the facts that were replaced."""
        if self.status is None:
            return None
        if self.status == "active" and (self.include_superseded or self.as_of is not None):
            return ("active", "superseded")
        return (self.status,)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Filters:
        if not data:
            return cls()
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValidationError("filters", f"unknown filter {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}")
        return cls(**data)


def keep_time(at: datetime, f: Filters) -> bool:
    return (f.since is None or at >= f.since) and (f.until is None or at <= f.until)


def kept_facts(m: MemoryFacts, f: Filters, now: datetime) -> MemoryFacts:
    """The memories `keep_memory` keeps, on columns."""
    keep = np.ones(len(m), np.bool_)
    if not f.include_expired:
        keep &= ~(m.expires_at <= now.timestamp())  # NaN (never) compares False: kept
    if (statuses := f.statuses()) is not None:
        keep &= np.isin(m.status, statuses)
    if f.category is not None:
        keep &= np.isin(m.category, [f.category] if isinstance(f.category, str) else list(f.category))
    if f.session_id is not None:
        keep &= m.source_session == f.session_id
    if f.since is not None:
        keep &= m.created_at >= f.since.timestamp()
    if f.until is not None:
        keep &= m.created_at <= f.until.timestamp()
    return m if keep.all() else MemoryFacts(*(getattr(m, name)[keep] for name in m.__dataclass_fields__))


def keep_memory(m: MemoryRecord, f: Filters, now: datetime) -> bool:
    if not f.include_expired and m.expires_at is not None and m.expires_at <= now:
        return False
    if (statuses := f.statuses()) is not None and m.status not in statuses:
        return False
    if statuses == ("active",) and m.replaced(now):  # a change told ahead of its date has begun
        return False
    if f.as_of is not None and not m.holds_at(f.as_of):
        return False
    if f.category is not None:
        cats = [f.category] if isinstance(f.category, str) else list(f.category)
        if m.category not in cats:
            return False
    if f.session_id is not None and m.source_session != f.session_id:
        return False
    return keep_time(m.created_at, f)


def keep_turn(t: Turn, f: Filters) -> bool:
    if f.session_id is not None and t.session_id != f.session_id:
        return False
    if f.roles is not None and t.role not in f.roles:
        return False
    return keep_time(t.created_at, f)


def keep_episode(ended_at: datetime, session_id: str, f: Filters) -> bool:
    return keep_time(ended_at, f) and f.session_id in (None, session_id)


def any_turn(store: Store, scope: Scope, f: Filters) -> bool:
    """Whether any turn of the scope passes the filters' session and time range (and roles
    name one): a filter that keeps nothing (no such session) widens no pool, an indexed read."""
    if f.roles is not None and not f.roles:
        return False
    if f.session_id is None and f.since is None and f.until is None:
        return True
    return bool(store.get_turns(scope, session_id=f.session_id, since=f.since, until=f.until, limit=1))


def check_filters(filters: Any, cfg: Config) -> Filters:
    """Search filters given as a dict or `Filters`, each checked like the argument of the same name."""
    if filters is None:
        return Filters()
    if isinstance(filters, Filters):
        filters = {k: getattr(filters, k) for k in Filters.__dataclass_fields__}
    if not isinstance(filters, dict):
        raise ValidationError("filters", f"must be a dict or Filters, got {type(filters).__name__}")
    f = Filters.from_dict(filters)

    def category(value: Any, field: str) -> str:
        return validate.category(field, value, cfg.policy.categories, cfg.profile)

    cats = f.category
    if cats is not None:
        if isinstance(cats, str):
            cats = category(cats, "filters.category")
        elif isinstance(cats, list | tuple) and cats:
            cats = [category(c, f"filters.category[{i}]") for i, c in enumerate(cats)]
        else:
            raise ValidationError("filters.category", "must be a category or a non-empty list of categories")
    roles = f.roles
    if roles is not None:
        if not isinstance(roles, list | tuple):
            raise ValidationError("filters.roles", "must be a list of roles")
        roles = [validate.choice(f"filters.roles[{i}]", r, get_args(Role)) for i, r in enumerate(roles)]
    return Filters(
        category=cats,
        status=None if f.status is None else validate.choice("filters.status", f.status,
                                                             ("active", "archived", "superseded")),
        session_id=validate.optional_ident("filters.session_id", f.session_id),
        since=validate.optional_when("filters.since", f.since),
        until=validate.optional_when("filters.until", f.until),
        include_expired=validate.boolean("filters.include_expired", f.include_expired),
        roles=roles,
        as_of=validate.optional_when("filters.as_of", f.as_of),
        include_superseded=validate.boolean("filters.include_superseded", f.include_superseded),
    )
