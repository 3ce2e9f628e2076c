"""The dates a query names, and the periods they stand for."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlane.dates import Period, mentioned_period


@pytest.mark.parametrize(("text", "period"), [
    ("What did Melanie paint on October 13, 2023?", Period(2023, 10, 13)),
    ("What did Gina find on 1 February, 2023?", Period(2023, 2, 1)),
    ("Where was John in the last week of August 2023?", Period(2023, 8)),
    ("When did Melanie go camping in June?", Period(None, 6)),
    ("How many times has she gone to the beach in 2023?", Period(2023)),
    ("我2023年10月13日去了哪里", Period(2023, 10, 13)),
    ("2023年10月做了什么", Period(2023, 10)),
    ("3月5号的会议", Period(None, 3, 5)),
    ("10月的时候", Period(None, 10)),
    ("What did I tell you on May 2nd?", Period(None, 5, 2)),  # a day without its year
    ("We talked about films on April 30th", Period(None, 4, 30)),
    ("What did I cook on the 5th of May?", Period(None, 5, 5)),
    ("I may go to the beach", None),  # "may" the verb is no month
    ("You may need 3 days", None),
    ("May I ask something?", None),
    ("nothing dated here", None),
])
def test_mentioned_period(text, period):
    assert mentioned_period(text) == period


def test_a_period_contains_its_days_and_the_grace_after():
    june = Period(None, 6)
    assert june.contains(datetime(2021, 6, 30, tzinfo=UTC))
    assert not june.contains(datetime(2021, 7, 3, tzinfo=UTC))
    assert june.contains(datetime(2021, 7, 3, tzinfo=UTC), grace_days=7)
    dec = Period(2023, 12)
    assert dec.contains(datetime(2024, 1, 5, tzinfo=UTC), grace_days=7)  # across the year
    day = Period(2023, 10, 13)
    assert day.contains(datetime(2023, 10, 13, 23, 0, tzinfo=UTC)) and not day.contains(datetime(2023, 10, 14, tzinfo=UTC))
    assert not Period(2023, 2, 30).contains(datetime(2023, 3, 2, tzinfo=UTC), grace_days=7)  # no such day


def test_nearness_is_whole_inside_the_period_and_fades_over_the_grace():
    day = Period(None, 5, 4)
    near = [day.nearness(datetime(2023, 5, d, 12, tzinfo=UTC), grace_days=7) for d in range(3, 13)]
    assert near[0] == 0.0 and near[1] == 1.0  # the day before, the day itself
    assert all(a > b for a, b in zip(near[1:-1], near[2:-1], strict=False)) and near[-1] == 0.0
