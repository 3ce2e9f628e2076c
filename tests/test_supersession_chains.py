"""A fact's chain of versions stays whole under any sequence of a person's edits (issue 32):
changes (some told ahead of their date, some dated before the version they replace), deletes
of any version, restores and undos in random order. After every step each chain has one
version without a successor, its versions run in time order, and every link is answered."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memlane import Memory
from memlane.errors import MemlaneError
from memlane.testing import ManualClock

MakeMemory = Callable[..., Memory]


def assert_whole(m: Memory, log: list[tuple[str, ...]]) -> None:
    mems = {x.id: x for x in m.list(user_id="u")}
    for x in mems.values():
        assert x.supersedes is None or mems.get(x.supersedes, x).superseded_by == x.id, log
        assert x.superseded_by is None or mems.get(x.superseded_by, x).supersedes == x.id, log
        assert x.supersedes in (None, *mems) and x.superseded_by in (None, *mems), ("a link names a deleted memory", log)
    seen: set[str] = set()
    for x in mems.values():
        if x.id in seen:
            continue
        chain = m.timeline(x.id, user_id="u")
        seen |= {c.id for c in chain}
        assert len([c for c in chain if c.superseded_by is None]) == 1, ("current versions", log)
        starts = [c.valid_from or c.created_at for c in chain]
        assert starts == sorted(starts), ("versions out of time order", log)


@pytest.mark.parametrize("seed", range(6))
def test_any_sequence_of_edits_keeps_each_chain_whole(make_memory: MakeMemory, seed: int) -> None:
    rnd = random.Random(seed)
    clock = ManualClock(datetime(2020, 1, 1, tzinfo=UTC))
    m = make_memory(clock=clock)
    m.add("The user lives in city0.", user_id="u")
    deleted: list[str] = []
    log: list[tuple[str, ...]] = []
    done = 0
    for n in range(1, 26):
        clock.now += timedelta(days=rnd.randint(1, 60))
        live = m.list(user_id="u")
        op = rnd.choice(["supersede", "supersede", "delete", "delete", "restore", "undo"])
        try:
            if op == "supersede":
                current = [x for x in live if x.superseded_by is None]
                if not current:
                    continue
                old = rnd.choice(current)
                since = clock.now + timedelta(days=rnd.choice([-200, -10, 0, 30]))
                m.supersede(old.id, f"The user lives in city{n}.", user_id="u", valid_from=since)
                log.append((op, old.content, f"city{n}", since.date().isoformat()))
            elif op == "delete" and live:
                x = rnd.choice(live)
                m.delete(x.id, user_id="u")
                deleted.append(x.id)
                log.append((op, x.content))
            elif op == "restore" and deleted:
                back = m.restore(deleted.pop(rnd.randrange(len(deleted))), user_id="u")
                log.append((op, back.content))
            elif op == "undo" and live:
                x = rnd.choice(live)
                m.undo(x.id, user_id="u")
                if x.id not in {y.id for y in m.list(user_id="u")}:
                    deleted.append(x.id)
                log.append((op, x.content))
            done += 1
        except MemlaneError as exc:  # a refusal (an undo of a change made since) is fine; a broken chain is not
            log.append(("refused", op, type(exc).__name__))
        assert_whole(m, log)
    assert done >= 12  # most steps did something
