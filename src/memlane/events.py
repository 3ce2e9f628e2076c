"""An in-process event bus with rules from config (seed 004 §11).

Components emit typed events; subscribers (Python callables) see every event of a type;
rules — event type + conditions → named actions — decide what memlane itself does, so
"write an episode when a session of ≥ 3 messages ends" is configuration, not code.

The event types and the payload each carries:

| type | emitted by | payload |
|---|---|---|
| `session.ended` | `Memory.end_session` | session_id, message_count |
| `memory.write.important` | `Memory.add` when score ≥ `events.important_score` | memory_id, content, category, score |
| `memory.deleted` | `Memory.delete` | memory_id, content, category, actor, reason |
| `history_overflow` | the archiver (seed 000 hard cap) | session_id, count, bytes |
| `archive_backlog` | the archiver (seed 000 max attempts) | attempts, first_seq, last_seq |

Seed 004 §11.1's rule fields: `action_mode` "auto" runs a rule's actions when the event
comes, "confirm" holds them; so does a `risk_level` above `events.auto_max_risk`. Actions are
registered by name (`register_action`, or `Memory(actions={...})` for rules in the config);
memlane registers `extract` and `episode`.

With `events.persist` (seed 004 §11.3, the consolidator profile) every event is kept in the
`events` table with the rules it matched and each action's status (done / pending /
failed). Its payload keeps ids, counts, category and score, never a text: a deleted
memory's words must not outlive it here. A held action runs by `run_pending(event_id)`,
which hands it the event as stored. Persisted events go with their scope (`purge`), their
session (`delete_session`) and, once older than `events.keep_days`, at consolidation.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, get_args

from memlane import validate
from memlane.config import RISK_ORDER, EventRule, EventsConfig
from memlane.errors import ConfigError, NotFound, ValidationError
from memlane.models import Scope, StoredEvent

if TYPE_CHECKING:
    from memlane.store import Store

log = logging.getLogger(__name__)

EventType = Literal[
    "session.ended",
    "memory.write.important",
    "memory.deleted",
    "history_overflow",
    "archive_backlog",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
    "==": operator.eq, "!=": operator.ne, "in": lambda a, b: a in b,
}


@dataclass(frozen=True)
class Event:
    """One thing that happened; `subject` names the record ("session:s1", "memory:ab12")."""

    type: str
    scope: Scope
    subject: str
    payload: dict[str, Any]
    at: datetime
    source: str = "memlane"

    @classmethod
    def session_ended(cls, scope: Scope, session_id: str, message_count: int, at: datetime) -> Event:
        return cls("session.ended", scope, f"session:{session_id}",
                   {"session_id": session_id, "message_count": message_count}, at)

    @classmethod
    def memory_important(cls, scope: Scope, memory_id: str, content: str, category: str, score: float,
                         at: datetime) -> Event:
        return cls("memory.write.important", scope, f"memory:{memory_id}",
                   {"memory_id": memory_id, "content": content, "category": category, "score": score}, at)

    @classmethod
    def memory_deleted(cls, scope: Scope, memory_id: str, content: str, category: str, actor: str,
                       reason: str, at: datetime) -> Event:
        return cls("memory.deleted", scope, f"memory:{memory_id}",
                   {"memory_id": memory_id, "content": content, "category": category,
                    "actor": actor, "reason": reason}, at)

    @classmethod
    def history_overflow(cls, scope: Scope, session_id: str, count: int, size_bytes: int, at: datetime) -> Event:
        return cls("history_overflow", scope, f"session:{session_id}",
                   {"session_id": session_id, "count": count, "bytes": size_bytes}, at)

    @classmethod
    def archive_backlog(cls, scope: Scope, subject: str, attempts: int, first_seq: int, last_seq: int,
                        at: datetime) -> Event:
        return cls("archive_backlog", scope, subject,
                   {"attempts": attempts, "first_seq": first_seq, "last_seq": last_seq}, at)


@dataclass
class RuleResult:
    rule: str
    action: str
    result: Any = None
    status: Literal["done", "pending", "failed"] = "done"  # pending: held by action_mode / risk_level


# What a persisted event keeps of each payload: ids, counts, category, score — no text
_KEPT: dict[str, tuple[str, ...]] = {
    "session.ended": ("session_id", "message_count"),
    "memory.write.important": ("memory_id", "category", "score"),
    "memory.deleted": ("memory_id", "category", "actor"),
    "history_overflow": ("session_id", "count", "bytes"),
    "archive_backlog": ("attempts", "first_seq", "last_seq"),
}


def stored_payload(event: Event) -> dict[str, Any]:
    """The part of an event's payload the `events` table keeps."""
    return {k: event.payload[k] for k in _KEPT.get(event.type, ()) if k in event.payload}


Action = Callable[[Event], Any]
Subscriber = Callable[[Event], None]


@dataclass
class EventBus:
    rules: list[EventRule]
    actions: dict[str, Action] = field(default_factory=dict)
    subscribers: dict[str, list[Subscriber]] = field(default_factory=dict)
    store: Store | None = None  # set by `bind`: where events persist
    config: EventsConfig | None = None

    def bind(self, store: Store, config: EventsConfig) -> None:
        """Persist events in `store` when `config.persist` says so; `auto_max_risk` applies."""
        self.store, self.config = store, config

    def subscribe(self, event_type: str, handler: Subscriber) -> Callable[[], None]:
        """Call `handler(event)` for every event of that type ("*" for all); returns an unsubscribe."""
        if event_type != "*" and event_type not in EVENT_TYPES:
            raise ValidationError("event_type", f"unknown {event_type!r}; one of {', '.join(EVENT_TYPES)} or '*'")
        self.subscribers.setdefault(event_type, []).append(handler)

        def unsubscribe() -> None:
            handlers = self.subscribers.get(event_type, [])
            if handler in handlers:
                handlers.remove(handler)

        return unsubscribe

    def register_action(self, name: str, action: Action) -> None:
        """Make `name` usable in rules' `actions` (seed 004 §11.1: notify, run an agent, …)."""
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", "an action needs a non-empty name")
        if not callable(action):
            raise ValidationError("action", f"must be callable with the event, got {type(action).__name__}")
        self.actions[name] = action

    def check(self) -> None:
        """Every rule names a known event type and registered actions."""
        for rule in self.rules:
            if rule.event_type not in EVENT_TYPES:
                raise ConfigError(f"events.rules[{rule.name}].event_type: unknown {rule.event_type!r}; one of {EVENT_TYPES}")
            for action in rule.actions:
                if action not in self.actions:
                    raise ConfigError(
                        f"events.rules[{rule.name}].actions: unknown action {action!r}; known: {sorted(self.actions)}; "
                        "register it with Memory(actions={...}) or memory.events.register_action")

    def matching(self, event: Event) -> list[EventRule]:
        """The enabled rules whose type and conditions hold for `event`, in config order."""
        return [
            rule for rule in self.rules
            if rule.enabled and rule.event_type == event.type
            and all(_holds(event, c.field, c.op, c.value) for c in rule.conditions)
        ]

    def held(self, rule: EventRule) -> bool:
        """Whether the rule's actions wait for `run_pending`: action_mode "confirm", or a
        risk_level above events.auto_max_risk."""
        limit = self.config.auto_max_risk if self.config is not None else "high"
        return rule.action_mode != "auto" or RISK_ORDER.index(rule.risk_level) > RISK_ORDER.index(limit)

    def emit(self, event: Event) -> list[RuleResult]:
        """Notify subscribers, then run the actions of every matching rule, in order (a held
        rule's come back as "pending"); persist the event when configured.

        A subscriber's or an action's exception propagates: what was written before the
        event stays written (the persisted event says which action failed), and the caller
        sees the failure instead of a silent gap.
        """
        if event.type not in EVENT_TYPES:
            raise ValidationError("event.type", f"unknown {event.type!r}; one of {', '.join(EVENT_TYPES)}")
        for handler in [*self.subscribers.get(event.type, []), *self.subscribers.get("*", [])]:
            handler(event)
        results: list[RuleResult] = []
        try:
            for rule in self.matching(event):
                for action in rule.actions:
                    if self.held(rule):
                        results.append(RuleResult(rule.name, action, status="pending"))
                        continue
                    results.append(RuleResult(rule.name, action, status="failed"))
                    log.debug("rule %s runs %s on %s", rule.name, action, event.subject)
                    results[-1].result = self._run(rule.name, action, event)
                    results[-1].status = "done"
        finally:
            self._persist(event, results)
        return results

    def _run(self, rule: str, action: str, event: Event) -> Any:
        fn = self.actions.get(action)
        if fn is None:
            raise ConfigError(f"events.rules[{rule}].actions: unknown action {action!r}; known: {sorted(self.actions)}")
        return fn(event)

    def _persist(self, event: Event, results: list[RuleResult]) -> None:
        if self.store is None or self.config is None or not self.config.persist:
            return
        steps = [{"rule": r.rule, "action": r.action, "status": r.status} for r in results]
        with self.store.transaction():
            self.store.add_bus_event(event.scope, event.type, event.subject, event.source, stored_payload(event),
                                     event.at, _status(steps), steps)

    # ---- persisted events (seed 004 §11.3) ------------------------------------------------

    def stored(self, *, user_id: str, agent_id: str | None = None, status: str | None = None,
               limit: int = 100) -> list[StoredEvent]:
        """The scope's persisted events, newest first (`status="pending"`: those waiting)."""
        if status is not None:
            status = validate.choice("status", status, ("done", "pending", "running", "failed"))
        limit = validate.integer("limit", limit, 0)
        if self.store is None:
            return []
        return self.store.bus_events(Scope.of(user_id, agent_id), status=status, limit=limit)

    def run_pending(self, event_id: int, *, user_id: str, agent_id: str | None = None) -> list[RuleResult]:
        """Run a persisted event's held actions (a person agreed), with the event as stored."""
        scope = Scope.of(user_id, agent_id)
        event_id = validate.integer("event_id", event_id, 1)
        if self.store is None:
            raise NotFound(f"event {event_id!r} not found for user {user_id!r}")
        with self.store.transaction():  # claimed: a second caller (thread, process) finds none pending
            found = self.store.bus_events(scope, event_id=event_id, limit=1)
            if not found:
                raise NotFound(f"event {event_id!r} not found for user {user_id!r}")
            rec = found[0]
            steps = [dict(s) for s in rec.actions]
            mine = [s for s in steps if s.get("status") == "pending"]
            for step in mine:
                step["status"] = "running"
            if mine:
                self.store.update_bus_event(scope, rec.id, "running", steps)
        event = Event(rec.type, scope, rec.subject, rec.payload, rec.at, rec.source)
        results: list[RuleResult] = []
        if not mine:
            return results
        try:
            for step in mine:
                step["status"] = "failed"
                results.append(RuleResult(step["rule"], step["action"], status="failed"))
                results[-1].result = self._run(step["rule"], step["action"], event)
                results[-1].status = step["status"] = "done"
        finally:
            for step in mine:  # not reached after a failure: still waiting
                if step["status"] == "running":
                    step["status"] = "pending"
            with self.store.transaction():
                self.store.update_bus_event(scope, rec.id, _status(steps), steps)
        return results


def _status(steps: list[dict[str, Any]]) -> str:
    states = {s["status"] for s in steps}
    for state in ("failed", "running", "pending"):
        if state in states:
            return state
    return "done"


def forget_old(store: Store, cfg: EventsConfig, scope: Scope, now: datetime) -> int:
    """Delete the scope's persisted events older than events.keep_days (pending ones stay)."""
    return store.delete_bus_events(scope, before=now - timedelta(days=cfg.keep_days))


def _holds(event: Event, path: str, op: str, value: Any) -> bool:
    current: Any = {"payload": event.payload, "subject": event.subject, "type": event.type,
                    "source": event.source}
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return False
        current = current[part]
    try:
        return _OPS[op](current, value)
    except TypeError:
        return False


__all__ = ["EVENT_TYPES", "Event", "EventBus", "EventType", "RuleResult", "forget_old", "stored_payload"]
