"""Facts that change, on the write path (issue 32): the LLM's `supersedes` and the offline
extractor's change cues close the memory a new fact replaces; what the engine is unsure of
(a memory the person confirmed, a `contradicts`, a slot filled twice) is flagged for review;
seed 001's profile halves instead; a fact holds from when it was said, or from the date the
text gives."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory
from memlane.changes import cue, judge, lenient_date, since, until
from memlane.models import MemoryRecord
from memlane.testing import ManualClock, ScriptedLLM
from tests.stubs import openai_stub

MakeMemory = Callable[..., Memory]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def ops(*items: dict[str, Any]) -> str:
    return json.dumps({"operations": list(items)}, ensure_ascii=False)


def scripted(make_memory: MakeMemory, profile: str = "default") -> tuple[Memory, ManualClock]:
    clock = ManualClock(T0)
    m = make_memory(profile, clock=clock)
    m.llm = ScriptedLLM()
    return m, clock


def told(m: Memory, sid: str, *texts: str, reply: str | None = None) -> None:
    """One session of the user's `texts`, ended (extraction runs)."""
    if reply is not None:
        assert isinstance(m.llm, ScriptedLLM)
        m.llm.enqueue(reply)
    m.add_messages(sid, [{"role": "user", "content": t} for t in texts], user_id="u1")
    m.end_session(sid, user_id="u1")


def by_content(m: Memory, status: str = "active") -> dict[str, MemoryRecord]:
    return {r.content: r for r in m.list(user_id="u1", status=status)}


# ---- the LLM's operations ----------------------------------------------------------------


def test_an_llm_add_that_supersedes_closes_the_old_memory_dated(make_memory: MakeMemory) -> None:
    m, clock = scripted(make_memory)
    home = m.add("用户住在杭州", user_id="u1", source="extractor", importance="high")
    clock.now = T0 + timedelta(days=30)
    told(m, "s1", "我上个月搬到上海了", reply=ops(
        {"op": "ADD", "content": "用户住在上海", "supersedes": [home.id], "valid_from": "2026-03-10"}))
    old = m.get(home.id, user_id="u1")
    [new] = m.list(user_id="u1", status="active")
    assert (old.status, old.superseded_by, old.valid_to) == ("superseded", new.id, datetime(2026, 3, 10, tzinfo=UTC))
    assert (new.content, new.supersedes, new.valid_from) == ("用户住在上海", home.id, datetime(2026, 3, 10, tzinfo=UTC))
    assert new.score == pytest.approx(m.config.policy.importance_high)  # carries on the old importance
    events = [(e.kind, e.actor) for e in m.history(home.id, user_id="u1")]
    assert ("SUPERSEDE", "extract:extractor") in events


def test_an_llm_change_told_ahead_of_its_date_begins_on_that_date(make_memory: MakeMemory) -> None:
    """"I move to Shanghai next month": the new city is kept from that date, the old one holds
    until then (search and prompt), and is history once the day passed."""
    m, clock = scripted(make_memory)
    home = m.add("用户住在杭州", user_id="u1", source="extractor", importance="high")
    day = (T0 + timedelta(days=40)).date().isoformat()
    told(m, "s1", "我下个月搬到上海", reply=ops(
        {"op": "ADD", "content": "用户住在上海", "supersedes": [home.id], "valid_from": day}))
    old = m.get(home.id, user_id="u1")
    new = m.get(old.superseded_by or "", user_id="u1")
    assert (old.status, new.content, new.valid_from.date().isoformat()) == ("active", "用户住在上海", day)
    assert "用户住在杭州" in m.build_context(user_id="u1", query="用户住在哪里").render()
    clock.now = T0 + timedelta(days=41)
    assert "用户住在杭州" not in m.build_context(user_id="u1", query="用户住在哪里").render()
    m.consolidate(user_id="u1")
    assert m.get(home.id, user_id="u1").status == "superseded"


def test_an_llm_that_supersedes_a_version_already_replaced_from_a_later_date(make_memory: MakeMemory) -> None:
    """A change told ahead of its date leaves the old version active but taken: an extraction
    that names it again adds its fact without failing the job, and the pair stays as it was."""
    m, clock = scripted(make_memory)
    home = m.add("用户住在杭州", user_id="u1", importance="high")
    later = m.supersede(home.id, "用户住在上海", user_id="u1", valid_from=T0 + timedelta(days=60))
    clock.now = T0 + timedelta(days=1)
    told(m, "s1", "我要搬到南京了", reply=ops({"op": "ADD", "content": "用户要搬到南京", "supersedes": [home.id]}))
    old = m.get(home.id, user_id="u1")
    assert (old.status, old.superseded_by) == ("active", later.id)
    assert "用户要搬到南京" in by_content(m)


def test_a_garbled_link_costs_the_link_not_the_fact(make_memory: MakeMemory) -> None:
    m, clock = scripted(make_memory)
    home = m.add("用户住在杭州", user_id="u1", source="extractor")
    clock.now = T0 + timedelta(days=1)
    told(m, "s1", "我搬到上海了", reply=ops(
        {"op": "ADD", "content": "用户住在上海", "supersedes": [{"id": home.id}, 7, [home.id], home.id]},
        {"op": "ADD", "content": "用户养了一只猫", "contradicts": {"x": 1}, "supersedes": home.id}))
    current = by_content(m)
    assert set(current) == {"用户住在上海", "用户养了一只猫"}  # both facts kept, with their first try
    assert current["用户住在上海"].supersedes == home.id  # the one well-formed id still links
    assert m.get(home.id, user_id="u1").superseded_by == current["用户住在上海"].id


def test_a_date_the_llm_gives_is_read_leniently_and_nonsense_is_dropped(make_memory: MakeMemory) -> None:
    m, clock = scripted(make_memory)
    clock.now = T0 + timedelta(hours=2)
    told(m, "s1", "I started at BMW in January", "and I'm vegetarian", reply=ops(
        {"op": "ADD", "content": "The user works at BMW.", "valid_from": "January 2026"},
        {"op": "ADD", "content": "The user is vegetarian.", "valid_from": "sometime soon"},
        {"op": "ADD", "content": "The user plays chess.", "valid_from": "2031-01-01"}))
    got = by_content(m)
    assert got["The user works at BMW."].valid_from == datetime(2026, 1, 1, tzinfo=UTC)
    # refused quietly: the op is kept, valid from when it was said (the turn), not the job's time
    assert got["The user is vegetarian."].valid_from == clock.now
    assert got["The user plays chess."].valid_from == clock.now
    assert lenient_date("2026-03", T0) == datetime(2026, 3, 1, tzinfo=UTC)
    assert lenient_date("2026-02-30", T0) is None and lenient_date(42, T0) is None


def test_a_fact_holds_from_the_turn_that_said_it_not_from_when_the_job_ran(make_memory: MakeMemory) -> None:
    m, clock = scripted(make_memory)
    m.add_messages("s1", [{"role": "user", "content": "I moved to Lisbon"}], user_id="u1")
    said = clock.now
    clock.now = T0 + timedelta(days=3)
    told(m, "s1", "ok", reply=ops({"op": "ADD", "content": "The user lives in Lisbon."}))
    [mem] = m.list(user_id="u1", status="active")
    assert (mem.valid_from, mem.created_at) == (said, clock.now)


def test_a_pinned_memory_is_flagged_on_an_llm_guess_and_superseded_on_the_persons_words(make_memory: MakeMemory) -> None:
    m, _ = scripted(make_memory)
    home = m.add("The user lives in Munich.", user_id="u1", pinned=True)
    told(m, "s1", "what's the weather like in Berlin this weekend?", reply=ops(
        {"op": "ADD", "content": "The user lives in Berlin.", "supersedes": [home.id]}))
    assert m.get(home.id, user_id="u1").status == "active"  # nothing closed
    berlin = by_content(m)["The user lives in Berlin."]
    assert berlin.metadata["may_supersede"]["ids"] == [home.id]
    # the person's own words tell the change: closed
    told(m, "s2", "I moved to Hamburg last month", reply=ops(
        {"op": "ADD", "content": "The user lives in Hamburg.", "supersedes": [home.id]}))
    assert m.get(home.id, user_id="u1").status == "superseded"
    assert by_content(m)["The user lives in Hamburg."].pinned  # carries on the person's pin


def test_contradicts_is_flagged_for_review_not_resolved(make_memory: MakeMemory) -> None:
    m, _ = scripted(make_memory)
    coffee = m.add("The user drinks coffee every morning.", user_id="u1", source="extractor")
    report_before = coffee.score
    told(m, "s1", "trying tea lately", reply=ops(
        {"op": "ADD", "content": "The user is trying tea lately.", "contradicts": [coffee.id]}))
    old = m.get(coffee.id, user_id="u1")
    assert (old.status, old.score) == ("active", report_before)
    assert by_content(m)["The user is trying tea lately."].metadata["may_supersede"]["ids"] == [coffee.id]


def test_the_monitors_line_form_supersedes(make_memory: MakeMemory) -> None:
    m, _ = scripted(make_memory, "companion")
    job = m.add("用户在西门子工作", user_id="u1", source="extractor")
    told(m, "s1", "我跳槽到宝马了", reply=f"[SUPERSEDE:{job.id}] 用户在宝马工作")
    assert m.get(job.id, user_id="u1").status == "superseded"
    assert [r.content for r in m.list(user_id="u1", status="active")] == ["用户在宝马工作"]


def test_seed_001_profile_halves_what_a_change_replaces(make_memory: MakeMemory) -> None:
    m, _ = scripted(make_memory, "scored-markdown")
    home = m.add("用户住在杭州", user_id="u1", source="extractor", importance="high")
    told(m, "s1", "我搬到上海了", reply=ops({"op": "ADD", "content": "用户住在上海", "supersedes": [home.id]}))
    old = m.get(home.id, user_id="u1")
    assert (old.status, old.score) == ("active", pytest.approx(home.score * 0.5))
    assert "review" not in by_content(m)["用户住在上海"].metadata


# ---- the offline extractor's change cues ---------------------------------------------------


def offline(make_memory: MakeMemory) -> tuple[Memory, ManualClock]:
    clock = ManualClock(datetime(2026, 1, 10, 9, 0, tzinfo=UTC))
    return make_memory(clock=clock), clock


def test_offline_en_a_move_supersedes_where_the_user_lived(make_memory: MakeMemory) -> None:
    m, clock = offline(make_memory)
    told(m, "s1", "I live in Munich.", "I love hiking in the Alps.")
    clock.now = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)  # a Wednesday
    told(m, "s2", "My sister moved to Hamburg.", "I moved to Berlin last week.", "I play the cello.")
    old = by_content(m, "superseded")
    assert list(old) == ["The user lives in Munich."]
    new = by_content(m)["The user moved to Berlin last week."]
    assert old["The user lives in Munich."].superseded_by == new.id
    assert new.valid_from == datetime(2026, 6, 1, tzinfo=UTC)  # last week, from the day it was said
    assert old["The user lives in Munich."].valid_to == new.valid_from
    # unrelated facts, and another person's move, close nothing (months of decay may archive them)
    kept = {**by_content(m), **by_content(m, "archived")}
    assert {"The user likes hiking in the Alps.", "The user's sister moved to Hamburg."} <= set(kept)


def test_offline_en_no_longer_supersedes_and_states_the_end_since_march(make_memory: MakeMemory) -> None:
    m, clock = offline(make_memory)
    told(m, "s1", "I am vegetarian.")
    clock.now = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
    told(m, "s2", "I'm no longer vegetarian since March.")
    [old] = m.list(user_id="u1", status="superseded")
    [new] = m.list(user_id="u1", status="active")
    assert (old.content, new.content) == ("The user is vegetarian.", "The user is no longer vegetarian since March.")
    assert new.valid_from == old.valid_to == datetime(2026, 3, 1, tzinfo=UTC)


def test_offline_zh_a_move_and_a_new_job_supersede(make_memory: MakeMemory) -> None:
    m, clock = offline(make_memory)
    told(m, "s1", "我住在上海", "我在西门子工作", "我喜欢吃辣")
    clock.now = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
    told(m, "s2", "我妹妹搬到深圳了", "我去年十月开始就搬到杭州了", "我换工作了，现在在宝马上班", "我养了一只猫")
    old = by_content(m, "superseded")
    assert set(old) == {"用户住在上海", "用户在西门子工作"}
    current = by_content(m)
    assert old["用户在西门子工作"].superseded_by == current["用户现在在宝马上班"].id
    hangzhou = next(r for c, r in current.items() if "杭州" in c)
    assert old["用户住在上海"].superseded_by == hangzhou.id
    assert hangzhou.valid_from == datetime(2025, 10, 1, tzinfo=UTC)
    assert {"用户喜欢吃辣", "用户的妹妹搬到深圳了"} <= set(current) | set(by_content(m, "archived"))


def test_offline_a_slot_filled_again_without_a_cue_is_flagged_never_superseded(make_memory: MakeMemory) -> None:
    m, clock = offline(make_memory)
    told(m, "s1", "I live in Munich.")
    clock.now += timedelta(days=30)
    told(m, "s2", "I live in Berlin.")
    assert m.list(user_id="u1", status="superseded") == []
    munich = by_content(m)["The user lives in Munich."]
    assert by_content(m)["The user lives in Berlin."].metadata["may_supersede"]["ids"] == [munich.id]


# ---- the pieces ------------------------------------------------------------------------


def test_cues_and_dates() -> None:
    assert cue("The user moved to Berlin.").kind == "change"  # type: ignore[union-attr]
    assert cue("The user is no longer vegetarian.").kind == "end"  # type: ignore[union-attr]
    assert cue("用户不在奶茶店干了").kind == "end"  # type: ignore[union-attr]
    assert cue("用户又开始每天喝奶茶了").kind == "again"  # type: ignore[union-attr]
    assert cue("The user lives in Munich.") is None and cue("用户住在上海") is None
    said = datetime(2024, 6, 12, 20, 0, tzinfo=UTC)
    assert since("we've been in Giesing since the 1st of June", said) == datetime(2024, 6, 1, tzinfo=UTC)
    assert since("从今年三月开始带组", said) == datetime(2024, 3, 1, tzinfo=UTC)
    assert since("去年十月开始还房贷了", said) == datetime(2023, 10, 1, tzinfo=UTC)
    assert since("since March", datetime(2024, 2, 1, tzinfo=UTC)) == datetime(2023, 3, 1, tzinfo=UTC)
    assert since("I like tea", said) is None
    assert until("I lived in Dayton until 2021", said) == datetime(2021, 1, 1, tzinfo=UTC)
    assert until("I live in Dayton until 2030", said) is None


def test_judge_two_sure_candidates_are_flagged_not_guessed() -> None:
    from memlane.changes import Candidate, Thresholds

    new = "The user is no longer vegetarian."
    one = judge(new, cue(new), [Candidate("a", "The user is vegetarian.")], Thresholds())
    assert (one.supersede, one.review) == (["a"], [])
    two = judge(new, cue(new), [Candidate("a", "The user is vegetarian."),
                                Candidate("b", "The user has been vegetarian for years.")], Thresholds())
    assert (two.supersede, sorted(two.review)) == ([], ["a", "b"])
    # with e5: the words decide, e5 doubts a sure match it finds far and lifts a weak one it finds close
    band = Thresholds(sure=0.9, unsure=0.8)
    moved = "The user moved to Berlin."
    assert judge(moved, cue(moved), [Candidate("a", "The user lives in Munich.", 0.85)], band).supersede == ["a"]
    assert judge(moved, cue(moved), [Candidate("a", "The user lives in Munich.", 0.7)], band).review == ["a"]
    tea = "The user switched to green tea."
    for sim, verdict in ((0.95, (["a"], [])), (0.85, ([], ["a"])), (0.7, ([], []))):
        got = judge(tea, cue(tea), [Candidate("a", "The user drinks black tea every day.", sim)], band)
        assert (got.supersede, got.review) == verdict
    assert judge(tea, cue(tea), [Candidate("a", "The user drinks black tea every day.")], Thresholds()).review == ["a"]


# ---- the LLM path through the real HTTP client -----------------------------------------


def test_supersedes_through_the_openai_compatible_client(make_memory: MakeMemory) -> None:
    state: dict[str, str] = {}

    def handler(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        reply = ops({"op": "ADD", "content": "The user works at BMW.", "supersedes": [state["old"]],
                     "valid_from": "2026-02-02"})
        return 200, {"id": "x", "object": "chat.completion",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]}

    with openai_stub(handler) as (url, seen):
        m = make_memory(clock=ManualClock(T0), llm={"base_url": url, "model": "stub", "api_key": "sk-test",
                                                    "retry_backoff_s": 0.0})
        state["old"] = m.add("The user works at Siemens.", user_id="u1", source="extractor").id
        told(m, "s1", "I started at BMW on the 2nd of February, Siemens is history")
    old = m.get(state["old"], user_id="u1")
    [new] = m.list(user_id="u1", status="active")
    assert (old.status, old.superseded_by, new.valid_from) == ("superseded", new.id, datetime(2026, 2, 2, tzinfo=UTC))
    prompt = json.dumps(seen[0][1]["messages"], ensure_ascii=False)
    assert "supersedes" in prompt and "[2026-03-01]" in prompt  # the schema, and the turns' date


def test_changes_extracted_out_of_order_keep_the_later_word_current(make_memory: MakeMemory, tmp_path: Path) -> None:
    """Two sessions' jobs run out of order (two processes, a retry): a change said earlier but
    extracted later takes its place in the chain as history; the one said last stays current.
    A change said later with an earlier date of its own still closes what was current."""
    home = tmp_path / "shared"
    day = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
    first_clock, second_clock = ManualClock(datetime(2026, 1, 10, 9, 0, tzinfo=UTC)), ManualClock(day)
    first, second = make_memory(home=home, clock=first_clock), make_memory(home=home, clock=second_clock)
    told(first, "s0", "I live in Munich.")
    first_clock.now = day + timedelta(seconds=5)
    second.add_messages("paris", [{"role": "user", "content": "I moved to Paris."}], user_id="u1")  # said first
    told(first, "berlin", "I moved to Berlin.")  # said second, extracted first
    second_clock.now = day + timedelta(seconds=9)
    second.end_session("paris", user_id="u1")
    [current] = second.list(user_id="u1", status="active")
    assert current.content == "The user moved to Berlin."
    chain = second.timeline(current.id, user_id="u1")
    assert [m.content for m in chain] == ["The user lives in Munich.", "The user moved to Paris.", "The user moved to Berlin."]
    munich, paris, berlin = chain
    assert (munich.valid_to, paris.valid_from, paris.valid_to, berlin.valid_from) == (
        day, day, day + timedelta(seconds=5), day + timedelta(seconds=5))
    assert (paris.status, paris.superseded_by, berlin.supersedes, munich.superseded_by) == (
        "superseded", berlin.id, paris.id, paris.id)
    # said later, dated earlier ("in May", after "I live in Lyon" was told in June): still the change
    first_clock.now = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
    told(first, "lyon", "I moved to Lyon.")
    first_clock.now = datetime(2026, 7, 20, 9, 0, tzinfo=UTC)
    told(first, "nice", "I moved to Nice in May.")
    assert [m.content for m in first.list(user_id="u1", status="active")] == ["The user moved to Nice in May."]


def test_a_change_told_late_goes_back_to_its_place_in_a_longer_chain(make_memory: MakeMemory, tmp_path: Path) -> None:
    """Munich → Berlin → Rome already written; "I moved to Paris", said between Munich and
    Berlin, extracted last: it lands between them, every link answered by its partner."""
    home = tmp_path / "shared"
    day = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
    late_clock, clock = ManualClock(day + timedelta(hours=1)), ManualClock(day + timedelta(hours=3))
    late, m = make_memory(home=home, clock=late_clock), make_memory(home=home, clock=clock)
    munich = m.add("The user moved to Munich.", user_id="u1", valid_from=day - timedelta(days=300))
    berlin = m.supersede(munich.id, "The user moved to Berlin.", user_id="u1", valid_from=day + timedelta(hours=2))
    m.supersede(berlin.id, "The user moved to Rome.", user_id="u1", valid_from=day + timedelta(hours=3))
    late.add_messages("paris", [{"role": "user", "content": "I moved to Paris."}], user_id="u1")
    late_clock.now = day + timedelta(hours=4)
    late.end_session("paris", user_id="u1")
    [current] = m.list(user_id="u1", status="active")
    chain = m.timeline(current.id, user_id="u1")
    assert [c.content for c in chain] == ["The user moved to Munich.", "The user moved to Paris.",
                                          "The user moved to Berlin.", "The user moved to Rome."]
    for a, b in zip(chain, chain[1:], strict=False):
        assert (a.superseded_by, b.supersedes, a.valid_to) == (b.id, a.id, b.valid_from)


def test_an_old_chat_imported_later_does_not_replace_what_holds_now(make_memory: MakeMemory) -> None:
    """A 2023 chat added in 2026 (an export imported, a backlog replayed): its "I moved to Paris"
    is history before what the user said since, not the current home."""
    m, _ = offline(make_memory)
    told(m, "now", "I moved to Berlin.")
    m.add_messages("old", [{"role": "user", "content": "I moved to Paris.", "created_at": "2023-04-02T10:00:00+00:00"}],
                   user_id="u1")
    m.end_session("old", user_id="u1")
    [current] = m.list(user_id="u1", status="active")
    [paris] = m.list(user_id="u1", status="superseded")
    assert current.content == "The user moved to Berlin." and paris.content == "The user moved to Paris."
    assert (paris.superseded_by, current.supersedes) == (current.id, paris.id)
    assert paris.valid_from == datetime(2023, 4, 2, 10, 0, tzinfo=UTC) and paris.valid_to == current.valid_from


def test_a_change_told_late_stops_at_a_cycle_of_links(make_memory: MakeMemory) -> None:
    """Links that loop (a store written by hand, a bug of old): placing a late change ends."""
    from memlane.models import Scope
    from memlane.supersession import placed_before

    clock = ManualClock(datetime(2026, 6, 10, 9, 0, tzinfo=UTC))
    m = make_memory(clock=clock)
    a = m.add("The user lives in Rome.", user_id="u1", valid_from=datetime(2026, 5, 1, tzinfo=UTC))
    b = m.add("The user lives in Oslo.", user_id="u1", valid_from=datetime(2026, 5, 2, tzinfo=UTC))
    late = m.add("The user lives in Lima.", user_id="u1", valid_from=datetime(2026, 1, 1, tzinfo=UTC))
    scope = Scope.of("u1")
    with m.store.transaction():
        m.store.update_memory(a.model_copy(update={"supersedes": b.id, "superseded_by": b.id}), content_changed=False)
        m.store.update_memory(b.model_copy(update={"supersedes": a.id, "superseded_by": a.id}), content_changed=False)
        placed, after = placed_before(m.store, scope, m.get(b.id, user_id="u1"), late, at=clock.now, actor="test")
    assert placed.status == "superseded" and after.supersedes == late.id
