"""Shared by the lifecycle tests: a clock tests move by hand, and a memory factory on it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memlane import Memory
from memlane.models import MemoryRecord
from memlane.testing import ManualClock

START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


class Clock(ManualClock):
    """`now` moves only when a test says so; `at_day(n)` is n days after START."""

    def __init__(self, start: datetime = START) -> None:
        super().__init__(start)

    def at_day(self, days: float) -> datetime:
        self.now = START + timedelta(days=days)
        return self.now

    def advance(self, days: float = 0, hours: float = 0) -> datetime:
        self.now += timedelta(days=days, hours=hours)
        return self.now


def extracted(mem: Memory, content: str, category: str, importance: Any = "medium", user: str = "u1",
              **kw: Any) -> MemoryRecord:
    """A memory as an extractor writes it: not confirmed by the user, so policy may age it."""
    return mem.add(content, user_id=user, category=category, importance=importance, source="extractor", **kw)


def state(mem: Memory, user: str = "u1") -> dict[str, tuple[str, float, str, str, Any]]:
    """What a scope holds, comparable between runs (scores rounded against float noise)."""
    return {m.id: (m.category, round(m.score, 9), m.status, str(m.expires_at), m.pinned)
            for m in mem.list(user_id=user)}


MakeMemory = Callable[..., Memory]
