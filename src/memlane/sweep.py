"""Turns nobody extracted: the sessions gone idle, and imported ones (seed 001 §3.2, seed 002 §7),
queued as extraction jobs within a budget — by the background worker once a poll interval, by
the scheduler's poll between consolidation runs, and by `consolidate` itself."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from memlane.events import Event
from memlane.jobs import JobReport
from memlane.models import Scope
from memlane.parts import Sweeping


@dataclass
class SweepReport:
    """What one sweep of unextracted turns queued, and what it left for the next run."""

    sessions: int = 0  # sessions with turns queued
    jobs: int = 0
    turns: int = 0
    left: int = 0  # unextracted turns of swept sessions still not queued (over sweep_max_turns)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def sweep_unextracted(memory: Sweeping, now: datetime, scope: Scope | None = None, *, idle_only: bool = True,
                      dry_run: bool = False) -> SweepReport:
    """Queue the unextracted turns of every session that is ended or idle — its last turn at
    least `extraction.idle_minutes` old (seed 001 §3.2 "会话空闲超时"; imported conversations
    are such sessions) — oldest sessions first, in jobs of ≤ `sweep_job_turns` turns, at most
    `sweep_max_turns` turns waiting in the queue; `left` counts what waits for the next run. With
    `idle_only=False` (consolidate, seed 002 §7 process_unextracted_turns) and `idle_minutes`
    0, every session is taken. A session still being talked to is left to its own triggers,
    and one the profile's `session.ended` rules would not extract (seed 004: under 3
    messages) is left alone."""
    cfg = memory.config.extraction
    if idle_only and cfg.idle_minutes <= 0:
        return SweepReport()
    idle_since = now - timedelta(minutes=cfg.idle_minutes)
    store = memory.store
    # turns queued before and not run yet count against the budget: a slow LLM never lets
    # the backlog grow past sweep_max_turns however often the poll sweeps
    waiting = store.jobs(scope=scope, status=("queued", "running"), limit=10_000_000)
    budget = cfg.sweep_max_turns - sum(j.last_seq - j.first_seq + 1 for j in waiting)
    out = SweepReport()
    scopes = [scope] if scope is not None else store.scopes()
    candidates: list[tuple[datetime, Scope, str, int, int]] = []
    for sc in scopes:
        for session in store.list_sessions(sc, limit=10_000_000):
            done = int(session.metadata.get("extracted_through", 0))
            if session.message_count <= done:  # cheap: nothing new since the last queueing
                continue
            last = store.next_seq(sc, session.id) - 1
            if last <= done:
                continue
            newest = store.get_turns(sc, session_id=session.id, newest_first=True, limit=1)
            at = newest[0].created_at if newest else session.started_at
            if session.ended_at is None and at > idle_since:
                continue  # still active
            # the profile's rules decide, as when the session ends (seed 004: < 3 messages, none)
            ended = Event.session_ended(sc, session.id, session.message_count, now)
            if not any("extract" in rule.actions for rule in memory.events.matching(ended)):
                continue
            candidates.append((at, sc, session.id, done, last))
    for _, sc, session_id, done, last in sorted(candidates, key=lambda c: (c[0], c[2])):
        pending = last - done
        if budget <= 0:
            out.left += pending
            continue
        take = min(pending, budget)
        budget -= take
        out.left += pending - take
        out.sessions += 1
        through = done
        while through < done + take:
            upto = min(through + cfg.sweep_job_turns, done + take)
            if not dry_run:
                job = memory.jobs.enqueue(sc, session_id, now, through_seq=upto)
                if job is None:  # queued meanwhile by another trigger
                    break
            out.jobs += 1
            out.turns += upto - through
            through = upto
    return out


@dataclass
class PollReport:
    """One scheduler poll between consolidation runs: the idle sweep and the due jobs it ran."""

    sweep: SweepReport
    jobs: list[JobReport]


def poll(memory: Sweeping, now: datetime, *, limit: int = 100) -> PollReport:
    """Queue idle sessions' unextracted turns, then run the extraction jobs that are due —
    so a job backed off for 10 minutes runs 10 minutes later without a worker (offline, or a
    CLI-driven deployment), not at the next 6-hourly or nightly consolidation."""
    sweep = sweep_unextracted(memory, now)
    return PollReport(sweep, memory.jobs.drain(now, memory.llm, limit))
