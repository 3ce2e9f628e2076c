"""Facts that change, told to the offline extractor in words that are no change (issue 32): a
change denied, wished, weighed or planned closes nothing and flags nothing; "not … anymore"
ends the fact it names; a change told ahead of its date leaves the old fact current until
then; "did I use to…" asks about the past."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memlane import Memory
from memlane.changes import cue, since
from memlane.statements import third_person
from memlane.testing import ManualClock

MakeMemory = Callable[..., Memory]
SAID = datetime(2026, 2, 9, 9, 0, tzinfo=UTC)


def two_sessions(make_memory: MakeMemory, first: str, then: str) -> Memory:
    clock = ManualClock(SAID - timedelta(days=30))
    m = make_memory(clock=clock)
    for sid, text in (("s1", first), ("s2", then)):
        m.add_messages(sid, [{"role": "user", "content": text}], user_id="u1")
        m.end_session(sid, user_id="u1")
        clock.now = SAID
    return m


@pytest.mark.parametrize(("first", "then"), [
    ("I live in Lyon.", "I'm not moving to Paris, I'm staying in Lyon."),
    ("I live in Lyon.", "I'm thinking about moving to Paris."),
    ("I live in Lyon.", "I might move to Paris someday."),
    ("I live in Lyon.", "I didn't move to Paris after all."),
    ("我住在上海", "我没有搬到北京"),
    ("我住在上海", "我不打算搬到北京"),
    ("我住在上海", "我想搬到北京"),
    ("我住在上海", "我差点搬到北京"),
])
def test_a_change_denied_wished_or_weighed_closes_and_flags_nothing(make_memory: MakeMemory, first: str,
                                                                     then: str) -> None:
    m = two_sessions(make_memory, first, then)
    assert m.list(user_id="u1", status="superseded") == []
    assert all("may_supersede" not in r.metadata for r in m.list(user_id="u1"))
    assert any(r.content == m.list(user_id="u1", status="active")[0].content for r in m.list(user_id="u1"))
    assert any(("Lyon" in r.content or "上海" in r.content) and r.superseded_by is None for r in m.list(user_id="u1"))


@pytest.mark.parametrize(("first", "then", "new"), [
    ("I work at Bosch.", "I don't work at Bosch anymore.", "The user doesn't work at Bosch anymore."),
    ("I live in Oslo.", "I no longer live in Oslo.", "The user no longer lives in Oslo."),
])
def test_not_anymore_ends_the_fact_it_names(make_memory: MakeMemory, first: str, then: str, new: str) -> None:
    m = two_sessions(make_memory, first, then)
    [old] = m.list(user_id="u1", status="superseded")
    current = {r.content: r for r in m.list(user_id="u1", status="active")}
    assert old.superseded_by == current[new].id


def test_a_change_told_ahead_of_its_date_leaves_the_old_fact_current_until_then(make_memory: MakeMemory) -> None:
    m = two_sessions(make_memory, "我住在上海", "下个月开始我就搬到杭州了")
    old = next(r for r in m.list(user_id="u1") if r.content == "用户住在上海")
    new = next(r for r in m.list(user_id="u1") if "杭州" in r.content)
    assert old.status == "active" and old.superseded_by == new.id
    assert old.valid_to == new.valid_from == datetime(2026, 3, 1, tzinfo=UTC)
    assert "上海" in m.build_context("s2", user_id="u1", query="我住在哪").system_prompt


def test_dates_a_change_names_ahead_or_behind() -> None:
    def day(text: str) -> datetime | None:
        return since(text, SAID, changed=True)
    assert day("The user is moving to Manchester next month.") == datetime(2026, 3, 1, tzinfo=UTC)
    assert day("从9月1号起用户住在杭州") == datetime(2026, 9, 1, tzinfo=UTC)  # this September, ahead
    assert day("从去年9月起用户住在杭州") == datetime(2025, 9, 1, tzinfo=UTC)
    assert day("从一月开始用户改吃素了") == datetime(2026, 1, 1, tzinfo=UTC)  # this January, past
    assert day("用户上周搬到滨江") == datetime(2026, 2, 2, tzinfo=UTC)  # said on a Monday
    assert day("用户明年搬到北京") == datetime(2027, 1, 1, tzinfo=UTC)


def test_the_words_of_a_denial_are_no_cue_and_no_longer_is_an_adverb() -> None:
    for text in ["The user is not moving to Paris.", "The user never moved to Paris.", "用户还没搬到北京",
                 "用户打算明年搬到北京", "用户不会搬到北京"]:
        assert cue(text) is None, text
    assert cue("The user is not moving to Paris, the user moved to Lyon.") is not None  # its own clause
    assert cue("用户没想到自己会搬到杭州") is not None  # it happened, unlooked for
    assert third_person("I no longer live in Oslo.") == "The user no longer lives in Oslo."


def test_did_i_use_to_asks_about_the_past(make_memory: MakeMemory) -> None:
    m = make_memory()
    munich = m.add("The user lives in Munich.", user_id="u1")
    m.supersede(munich.id, "The user lives in Berlin.", user_id="u1")
    hits = [h.content for h in m.search("Where did I use to live?", user_id="u1")]
    assert "The user lives in Munich." in hits
