"""Notices inside one engine that follow-up work subscribes to (issue 31).

A write says what happened — a scope's memories changed, memories were forgotten, rows wait
for their vectors — and whoever keeps something in step with the store subscribes: MEMORY.md
and USER.md (mdsync), the background indexer. The writer never calls them back itself.

A batch of writes that rewrites the files once at its end (consolidation, a MEMORY.md
import) mutes the notices it would otherwise send after each write, in its own thread only.

These are not the rule-driven, persisted events of seed 004 (`events.py`): nothing is stored,
no rule matches them, a handler runs in the writer's thread after the write is committed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from memlane.models import Scope

# memory.changed (scope): a scope's memories were written · memory.forgotten (scope, records):
# these memories were deleted, their text must leave the files · rows.written (): new rows
# wait for their vectors · turns.stored (scope, session_id, turns): turns are committed
Signal = Literal["memory.changed", "memory.forgotten", "rows.written", "turns.stored"]
Handler = Callable[..., None]


class Signals:
    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = {}
        self._muted = threading.local()

    def subscribe(self, name: Signal, handler: Handler) -> Callable[[], None]:
        """Call `handler(scope, *payload)` (`handler()` for rows.written) on every `send` of
        `name`; returns an unsubscribe."""
        handlers = self._handlers.setdefault(name, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return unsubscribe

    def send(self, name: Signal, scope: Scope | None = None, *payload: Any) -> None:
        if self.muted(name):
            return
        for handler in list(self._handlers.get(name, ())):
            handler(*((scope, *payload) if scope is not None else payload))

    def muted(self, name: Signal) -> bool:
        """Whether `name` is muted in this thread."""
        return getattr(self._muted, name, 0) > 0

    @contextmanager
    def mute(self, *names: Signal) -> Iterator[None]:
        """Send none of `names` from this thread inside the block (nested blocks count)."""
        for n in names:
            setattr(self._muted, n, getattr(self._muted, n, 0) + 1)
        try:
            yield
        finally:
            for n in names:
                setattr(self._muted, n, getattr(self._muted, n) - 1)
