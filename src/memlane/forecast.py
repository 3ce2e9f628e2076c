"""What will happen to memories: one memory's forecast under its decay rule, and a scope's
memories day by day as its audit trail tells them (issue 31: computed here, in the engine,
so the API, REST, CLI and web UI give the same answer). Nothing is made up: each number comes
from a record or from `memlane.policy` applied to one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime, timedelta

from memlane import policy
from memlane.config import PolicyConfig
from memlane.models import Activity, Forecast, MemoryEvent, MemoryRecord, Scope

# Not from a seed: past ten years a forecast says "not within 10 years"
HORIZON_DAYS = 3650
# Not from a seed: a scope's activity covers its last 120 days (a chart stays legible)
ACTIVITY_DAYS = 120


def forecast(mem: MemoryRecord, cfg: PolicyConfig, now: datetime, horizon_days: int = HORIZON_DAYS) -> Forecast:
    """The first day the thresholds act on `mem` at its decay rule's rate. Day by day the
    verdict is monotone (scores only fall, ages only grow): a doubling search, then bisection."""
    rule = policy.decay_rule(mem.category, cfg)
    base = {"memory_id": mem.id, "score": mem.score, "score_now": policy.decay_score(mem, now, cfg),
            "grace_days": rule.grace_days, "daily_factor": rule.daily_factor, "expires_at": mem.expires_at,
            "horizon_days": horizon_days}
    if mem.status == "archived":
        return Forecast(state="archived", **base)
    if mem.status == "superseded":  # history (issue 32): the lifecycle never touches it
        return Forecast(state="superseded", **base)
    if policy.protected(mem, cfg):
        return Forecast(state="protected", **base)

    def verdict(days: int) -> str | None:
        at = now + timedelta(days=days)
        found = policy.threshold_verdicts(policy.decayed(mem, at, cfg) or mem, at, cfg)
        return found[0][0] if found else None

    if (first := verdict(0)) is not None:
        return Forecast(state="due_now", action=first, when=now, **base)
    hi = 1
    while hi <= horizon_days and verdict(hi) is None:
        hi *= 2
    if hi > horizon_days and verdict(horizon_days) is None:
        return Forecast(state="none", **base)
    hi = min(hi, horizon_days)
    lo = hi // 2  # verdict(lo) is None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if verdict(mid) is None:
            lo = mid
        else:
            hi = mid
    return Forecast(state="due", action=verdict(hi) or "", when=now + timedelta(days=hi), **base)


def activity(scope: Scope, events: Sequence[MemoryEvent], today: date, days: int = ACTIVITY_DAYS) -> Activity:
    """Active / archived / deleted memories at the end of each of the last `days` days up to
    `today`, replayed from `events` (a memory's state after each of its events)."""
    empty = Activity(user_id=scope.user_id, agent_id=scope.agent_id, days=[], active=[], archived=[], deleted=[])
    if not events:
        return empty
    first = min(e.created_at for e in events).date()
    span = [first + timedelta(days=i) for i in range((max(today, first) - first).days + 1)][-days:]
    state: dict[str, str] = {}
    series: dict[str, list[int]] = {"active": [], "archived": [], "deleted": []}
    ordered = sorted(events, key=lambda e: (e.created_at, e.id))
    i = 0
    for day in span:
        while i < len(ordered) and ordered[i].created_at.date() <= day:
            e = ordered[i]
            state[e.memory_id] = "deleted" if e.kind == "DELETE" or e.after is None \
                else str(e.after.get("status", "active"))
            i += 1
        counts = Counter(state.values())
        for k, values in series.items():
            values.append(counts.get(k, 0))
    return empty.model_copy(update={"days": [d.isoformat() for d in span], **series})
