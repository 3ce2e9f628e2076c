"""An in-process event bus with rules from config (seed 004 §11).

Components emit typed events; subscribers (Python callables) see every event of a type;
rules — event type + conditions → named actions — decide what memlane itself does, so
"consolidate when a session of ≥ 3 messages ends" is configuration, not code.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane.config import EventRule
from memlane.errors import ConfigError
from memlane.models import Scope

log = logging.getLogger(__name__)

EVENT_TYPES = (
    "session.ended",
    "memory.write.important",
    "memory.deleted",
    "history_overflow",
    "archive_backlog",
)

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
    "==": operator.eq, "!=": operator.ne, "in": lambda a, b: a in b,
}


@dataclass(frozen=True)
class Event:
    type: str
    scope: Scope
    subject: str
    payload: dict[str, Any]
    at: datetime
    source: str = "memlane"


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

    def subscribe(self, event_type: str, handler: Subscriber) -> None:
        """Call `handler(event)` for every event of that type ("*" for all)."""
        self.subscribers.setdefault(event_type, []).append(handler)

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

    def emit(self, event: Event) -> list[RuleResult]:
        """Notify subscribers, then run the actions of every matching rule, in order."""
        for handler in [*self.subscribers.get(event.type, []), *self.subscribers.get("*", [])]:
            handler(event)
        results: list[RuleResult] = []
        for rule in self.rules:
            if rule.enabled and rule.event_type == event.type and all(
                _holds(event, c.field, c.op, c.value) for c in rule.conditions
            ):
                for action in rule.actions:
                    results.append(RuleResult(rule.name, action, self.actions[action](event)))
        return results


def _holds(event: Event, path: str, op: str, value: Any) -> bool:
    current: Any = {"payload": event.payload, "subject": event.subject, "type": event.type}
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return False
        current = current[part]
    try:
        return _OPS[op](current, value)
    except TypeError:
        return False
