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
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from memlane.config import EventRule
from memlane.errors import ConfigError, ValidationError
from memlane.models import Scope

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


Action = Callable[[Event], Any]
Subscriber = Callable[[Event], None]


@dataclass
class EventBus:
    rules: list[EventRule]
    actions: dict[str, Action] = field(default_factory=dict)
    subscribers: dict[str, list[Subscriber]] = field(default_factory=dict)

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
        self.actions[name] = action

    def check(self) -> None:
        """Every rule names a known event type and registered actions."""
        for rule in self.rules:
            if rule.event_type not in EVENT_TYPES:
                raise ConfigError(f"events.rules[{rule.name}].event_type: unknown {rule.event_type!r}; one of {EVENT_TYPES}")
            for action in rule.actions:
                if action not in self.actions:
                    raise ConfigError(
                        f"events.rules[{rule.name}].actions: unknown action {action!r}; known: {sorted(self.actions)}")

    def matching(self, event: Event) -> list[EventRule]:
        """The enabled rules whose type and conditions hold for `event`, in config order."""
        return [
            rule for rule in self.rules
            if rule.enabled and rule.event_type == event.type
            and all(_holds(event, c.field, c.op, c.value) for c in rule.conditions)
        ]

    def emit(self, event: Event) -> list[RuleResult]:
        """Notify subscribers, then run the actions of every matching rule, in order.

        A subscriber's or an action's exception propagates: what was written before the
        event stays written, and the caller sees the failure instead of a silent gap.
        """
        if event.type not in EVENT_TYPES:
            raise ValidationError("event.type", f"unknown {event.type!r}; one of {', '.join(EVENT_TYPES)}")
        for handler in [*self.subscribers.get(event.type, []), *self.subscribers.get("*", [])]:
            handler(event)
        results: list[RuleResult] = []
        for rule in self.matching(event):
            for action in rule.actions:
                log.debug("rule %s runs %s on %s", rule.name, action, event.subject)
                results.append(RuleResult(rule.name, action, self.actions[action](event)))
        return results


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


__all__ = ["EVENT_TYPES", "Event", "EventBus", "EventType", "RuleResult"]
