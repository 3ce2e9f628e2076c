"""A change told ahead of its date (issue 32), attacked from outside (issue 32 review): the
old version stays current until the date, is replaced at read time once it passed, and the
next consolidation writes it down — without decaying it, merging it, or losing the fact."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memlane import Memory
from memlane.testing import ManualClock, ScriptedLLM

MakeMemory = Callable[..., Memory]
JAN = datetime(2024, 1, 10, tzinfo=UTC)
JUNE = datetime(2024, 6, 1, tzinfo=UTC)
SEPT = datetime(2024, 9, 1, tzinfo=UTC)
ASKED = "where does the user live"


def planned(make_memory: MakeMemory) -> tuple[Memory, ManualClock, str, str]:
    """Munich since January; told on 1 June that the user moves to Berlin on 1 September."""
    clock = ManualClock(JAN)
    m = make_memory(clock=clock)
    munich = m.add("The user lives in Munich.", user_id="u1", importance="high").id
    clock.now = JUNE
    berlin = m.supersede(munich, "The user lives in Berlin.", user_id="u1", valid_from=SEPT).id
    return m, clock, munich, berlin


def contents(m: Memory, query: str, **kw: Any) -> list[str]:
    return [h.content for h in m.search(query, user_id="u1", **kw)]


def ops(*items: dict[str, Any]) -> str:
    return json.dumps({"operations": list(items)}, ensure_ascii=False)


def told(m: Memory, sid: str, text: str, reply: str) -> None:
    assert isinstance(m.llm, ScriptedLLM)
    m.llm.enqueue(reply)
    m.add_messages(sid, [{"role": "user", "content": text}], user_id="u1")
    m.end_session(sid, user_id="u1")


# ---- consolidation ------------------------------------------------------------------------


def test_the_version_a_dated_change_replaced_is_written_down_as_history_not_decayed(make_memory: MakeMemory) -> None:
    """History does not decay: once the date passed, the first consolidation writes Munich down
    as superseded with its score, not first decayed and archived as if it were still current."""
    m, clock, munich, _ = planned(make_memory)
    score = m.get(munich, user_id="u1").score
    clock.now = SEPT + timedelta(days=200)  # long unused: a current memory would decay and archive
    report = m.consolidate(user_id="u1")
    assert [(a.step, a.action) for a in report.actions if a.memory_id == munich] == [("expire", "SUPERSEDE")]
    old = m.get(munich, user_id="u1")
    assert (old.status, old.score) == ("superseded", score)


def test_moving_back_after_a_dated_change_keeps_the_current_fact(make_memory: MakeMemory) -> None:
    """Munich → Berlin from September, then back to Munich in October: the new Munich has the
    old one's words, but the old one is history — consolidation must not merge the current
    fact into it (and delete it), leaving the user living nowhere."""
    m, clock, _, berlin = planned(make_memory)
    clock.now = SEPT + timedelta(days=40)
    back = m.supersede(berlin, "The user lives in Munich.", user_id="u1").id
    m.consolidate(user_id="u1")
    assert m.get(back, user_id="u1").status == "active"
    assert contents(m, ASKED) == ["The user lives in Munich."]
    assert [x.id for x in m.list(user_id="u1", status="active")] == [back]


def test_a_planned_change_is_not_merged_with_the_version_it_replaces(make_memory: MakeMemory) -> None:
    """A promotion from September, worded much like the job it replaces: the two are versions
    of one fact, not duplicates — consolidation before the date keeps both and their link."""
    clock = ManualClock(JUNE)
    m = make_memory(clock=clock)
    job = m.add("The user works at Acme Corporation as a software engineer in the platform team.", user_id="u1").id
    senior = m.supersede(job, "The user works at Acme Corporation as a senior software engineer in the platform team.",
                         user_id="u1", valid_from=SEPT).id
    m.consolidate(user_id="u1")
    old = m.get(job, user_id="u1")
    assert (old.status, old.superseded_by, m.get(senior, user_id="u1").supersedes) == ("active", senior, job)
    assert "as a software engineer" in m.build_context(user_id="u1", query="where does the user work").render()


# ---- undo ---------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["old", "new"])
def test_undoing_a_dated_change_after_consolidation_wrote_it_down(make_memory: MakeMemory, side: str) -> None:
    """The consolidation writing the change down is part of the change: undoing either side
    then restores both, as before it ran (not refused, not a no-op on the old side)."""
    m, clock, munich, berlin = planned(make_memory)
    clock.now = SEPT + timedelta(days=2)
    m.consolidate(user_id="u1")
    assert m.get(munich, user_id="u1").status == "superseded"
    m.undo(munich if side == "old" else berlin, user_id="u1")
    old, new = m.get(munich, user_id="u1"), m.get(berlin, user_id="u1")
    assert (old.status, old.valid_to, old.superseded_by, new.supersedes) == ("active", None, None, None)
    assert "The user lives in Munich." in contents(m, ASKED)


# ---- MEMORY.md ----------------------------------------------------------------------------


@pytest.mark.parametrize("year", [2150, 9999])
def test_a_change_dated_past_2099_survives_the_memory_md_round_trip(make_memory: MakeMemory, year: int) -> None:
    """`supersede` takes any date; MEMORY.md shows "(since 9999-12-31)" on the new version, so
    reading the file back must see that date, not take it for a person's edit of the text
    (which the next consolidation would write into the memory)."""
    clock = ManualClock(JUNE)
    m = make_memory(clock=clock)
    munich = m.add("The user lives in Munich.", user_id="u1").id
    later = m.supersede(munich, "The user lives in Berlin.", user_id="u1",
                        valid_from=datetime(year, 12, 31, 23, 0, tzinfo=UTC))
    m.md_export(user_id="u1")
    assert m.md_import(user_id="u1", dry_run=True) == []
    m.consolidate(user_id="u1")
    assert m.get(later.id, user_id="u1").content == "The user lives in Berlin."


# ---- extraction ---------------------------------------------------------------------------


def extracted_plan(make_memory: MakeMemory) -> tuple[Memory, ManualClock, str, str]:
    """杭州, and an extraction of "I move to Shanghai next month" dated 40 days ahead."""
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    clock = ManualClock(t0)
    m = make_memory(clock=clock)
    m.llm = ScriptedLLM()
    home = m.add("用户住在杭州", user_id="u1", source="extractor", importance="high").id
    day = (t0 + timedelta(days=40)).date().isoformat()
    told(m, "s1", "我下个月搬到上海", ops({"op": "ADD", "content": "用户住在上海", "supersedes": [home], "valid_from": day}))
    plan = m.get(home, user_id="u1").superseded_by
    assert plan is not None
    clock.now = t0 + timedelta(days=1)
    return m, clock, home, plan


def test_an_llm_delete_of_a_planned_change_reopens_the_old_version(make_memory: MakeMemory) -> None:
    """The plan called off by the LLM ("I'm not moving after all" → DELETE of it): as with a
    person's delete, the old version holds again — not ends on the date, replaced by nothing."""
    m, clock, home, plan = extracted_plan(make_memory)
    told(m, "s2", "我不搬了", ops({"op": "DELETE", "id": plan}))
    old = m.get(home, user_id="u1")
    assert (old.status, old.valid_to, old.superseded_by) == ("active", None, None)
    clock.now += timedelta(days=60)
    assert contents(m, "用户住在哪里") == ["用户住在杭州"]


def test_an_llm_change_dated_before_a_plan_begins_is_not_a_change_of_it(make_memory: MakeMemory) -> None:
    """A plan from 10 April, then an extraction saying the plan's version is replaced from
    5 March: `Memory.supersede` refuses that (delete the plan instead); the extraction keeps
    its fact unlinked and leaves the plan whole — never a version that ends where it opens."""
    m, _, home, plan = extracted_plan(make_memory)
    told(m, "s2", "改成搬到南京了", ops({"op": "ADD", "content": "用户住在南京", "supersedes": [plan],
                                         "valid_from": "2026-03-05"}))
    later = m.get(plan, user_id="u1")
    assert (later.valid_to, later.superseded_by) == (None, None)
    assert m.get(home, user_id="u1").superseded_by == plan
    assert "用户住在南京" in [x.content for x in m.list(user_id="u1", status="active")]


def test_the_old_versions_words_find_the_current_one_once_the_date_passed(make_memory: MakeMemory) -> None:
    """After the date, a question in the old version's words finds the version that holds now
    — as it does once consolidation wrote the change down — not nothing."""
    m, clock, _, _ = planned(make_memory)
    clock.now = SEPT + timedelta(days=2)
    before = contents(m, "Munich")
    m.consolidate(user_id="u1")
    assert contents(m, "Munich") == ["The user lives in Berlin."]
    assert before == ["The user lives in Berlin."]


def test_listing_the_active_memories_once_the_date_passed(make_memory: MakeMemory) -> None:
    """`list(status="active")` agrees with search and the prompt before a consolidation ran,
    and `status="superseded"` holds the replaced version; before the date, the converse."""
    m, clock, munich, berlin = planned(make_memory)
    assert {x.id for x in m.list(user_id="u1", status="active")} >= {munich, berlin}
    assert m.list(user_id="u1", status="superseded") == []
    clock.now = SEPT + timedelta(days=2)
    assert [x.id for x in m.list(user_id="u1", status="active")] == [berlin]
    assert m.count(user_id="u1", status="active") == 1
    assert [x.id for x in m.list(user_id="u1", status="superseded")] == [munich]
    assert m.count(user_id="u1", status="superseded") == 1
