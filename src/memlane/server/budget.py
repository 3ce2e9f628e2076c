"""How many turns one API key may add a minute: a token bucket per key (issue 28).

Every turn a server stores is indexed after it (embedded, its words counted, extracted), on
the cores every user shares: one key adding 700 turns a second through 100-message requests
doubled another user's search latency. An agent adds a few turns a minute; a conversation
loaded whole goes through import, which this does not count. Past the budget a request is
429 with `Retry-After`. Open mode (one local person, no key) has no budget.
"""

from __future__ import annotations

import math
import threading
import time

from memlane.server.auth import OPEN_KEY_ID
from memlane.server.errors import ApiError


class TurnBudget:
    """`per_minute` turns a key, refilled continuously; a full bucket holds a minute's worth."""

    def __init__(self, per_minute: int) -> None:
        self.cap = float(per_minute)
        self.rate = per_minute / 60.0
        self._levels: dict[str, tuple[float, float]] = {}  # key id → (turns left, when)
        self._lock = threading.Lock()

    def take(self, key_id: str, turns: int) -> None:
        """Spend `turns` of the key's budget, or raise ApiError 429 spending nothing."""
        if key_id == OPEN_KEY_ID:
            return
        now = time.monotonic()
        with self._lock:
            left, at = self._levels.get(key_id, (self.cap, now))
            left = min(self.cap, left + (now - at) * self.rate)
            if turns > left:
                wait = math.ceil((turns - left) / self.rate) if turns <= self.cap else 60
                self._levels[key_id] = (left, now)
                raise ApiError(429, "TooManyRequests",
                               f"this key may add {self.cap:g} turns a minute (server.max_turns_per_minute) and has "
                               f"{left:.0f} left; retry in {wait} s, or load a whole conversation with POST /v1/import",
                               {"Retry-After": str(wait)})
            self._levels[key_id] = (left - turns, now)
            if len(self._levels) > 10_000:  # keys that have refilled need no entry
                full = [k for k, (lvl, t) in self._levels.items() if lvl + (now - t) * self.rate >= self.cap]
                for k in full:
                    del self._levels[k]
