"""Facts that change (issue 32): supersession keeps the old fact, closed in time and linked;
search finds the current fact by default, the old one when asked about the past or `as_of`
a date when it held; a change is undone by deleting the new fact; history does not decay."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from memlane import Memory
from memlane.errors import Conflict, ValidationError
from memlane.testing import ManualClock

MakeMemory = Callable[..., Memory]
T0 = datetime(2019, 6, 1, 9, 0, tzinfo=UTC)
MOVED = datetime(2024, 3, 15, tzinfo=UTC)


def moved(make_memory: MakeMemory, profile: str = "default") -> tuple[Memory, ManualClock, str, str]:
    """Munich from 2019, Berlin from 15 March 2024 (told in December)."""
    clock = ManualClock(T0)
    m = make_memory(profile, clock=clock)
    munich = m.add("The user lives in Munich.", user_id="u1", importance="high")
    m.add("The user is vegetarian.", user_id="u1")
    clock.now = datetime(2024, 12, 1, tzinfo=UTC)
    berlin = m.supersede(munich.id, "The user lives in Berlin.", user_id="u1", valid_from=MOVED)
    return m, clock, munich.id, berlin.id


def contents(hits: list) -> list[str]:
    """Where the user lives, by the hits (the vegetarian fact may follow a weak match)."""
    return [h.content for h in hits if "lives" in h.content]


def test_a_change_keeps_the_old_fact_closed_and_linked(make_memory: MakeMemory) -> None:
    m, clock, munich, berlin = moved(make_memory)
    old, new = m.get(munich, user_id="u1"), m.get(berlin, user_id="u1")
    assert (old.status, old.valid_from, old.valid_to, old.superseded_at, old.superseded_by) == \
        ("superseded", T0, MOVED, clock.now, berlin)
    assert (new.status, new.valid_from, new.valid_to, new.supersedes) == ("active", MOVED, None, munich)
    assert new.score == pytest.approx(m.config.policy.importance_high)  # carries on the old importance
    assert new.source == "user" and new.verified  # a person's word
    assert [v.id for v in m.timeline(munich, user_id="u1")] == [munich, berlin]
    assert [v.id for v in m.timeline(berlin, user_id="u1")] == [munich, berlin]
    assert [e.kind for e in m.history(munich, user_id="u1")] == ["ADD", "SUPERSEDE"]
    assert [e.kind for e in m.history(berlin, user_id="u1")] == ["ADD", "SUPERSEDE"]
    assert [x.id for x in m.list(user_id="u1", status="superseded")] == [munich]
    assert munich not in {x.id for x in m.list(user_id="u1", status="active")}
    # the change survives reopening the store (the columns are stored, not derived)
    home = m.config.home
    m.close()
    again = make_memory(home=home, clock=clock)
    assert again.get(munich, user_id="u1").valid_to == MOVED


def test_search_finds_the_current_fact_and_the_past_when_asked(make_memory: MakeMemory) -> None:
    m, _, munich, berlin = moved(make_memory)
    assert contents(m.search("where does the user live", user_id="u1")) == ["The user lives in Berlin."]
    past = contents(m.search("where did the user live before Berlin", user_id="u1"))
    assert "The user lives in Munich." in past and "The user lives in Berlin." in past
    assert contents(m.search("用户以前住在 Munich 吗", user_id="u1"))[:1] == ["The user lives in Munich."]
    assert contents(m.search("where does the user live", user_id="u1",
                             as_of=datetime(2023, 1, 1, tzinfo=UTC))) == ["The user lives in Munich."]
    assert contents(m.search("where does the user live", user_id="u1", as_of=MOVED + timedelta(days=1))) \
        == ["The user lives in Berlin."]
    assert contents(m.search("where does the user live", user_id="u1", as_of=T0 - timedelta(days=1))) == []
    assert set(contents(m.search("where does the user live", user_id="u1", include_superseded=True))) \
        == {"The user lives in Berlin.", "The user lives in Munich."}
    assert contents(m.search("where did the user live before", user_id="u1", include_superseded=False)) \
        == ["The user lives in Berlin."]
    # filters say the same as the keywords
    assert contents(m.search("where does the user live", user_id="u1",
                             filters={"as_of": "2023-01-01T00:00:00+00:00"})) == ["The user lives in Munich."]
    # a past fact found is not "in use": its count stays
    assert m.get(munich, user_id="u1").activation_count == 0
    assert "Munich" not in m.build_context(user_id="u1", query="where does the user live").render()
    told = m.build_context(user_id="u1", query="where did the user live before Berlin").render()
    assert "The user lives in Munich. (2019-06-01 – 2024-03-15, replaced)" in told
    assert "The user lives in Berlin. (since 2024-03-15)" in told


def test_supersede_by_an_existing_memory_and_refusals(make_memory: MakeMemory) -> None:
    clock = ManualClock(T0)
    m = make_memory(clock=clock)
    tea = m.add("The user drinks tea every morning.", user_id="u1")
    clock.advance(days=400)
    coffee = m.add("The user drinks coffee every morning.", user_id="u1")
    current = m.supersede(tea.id, user_id="u1", by=coffee.id)
    assert current.id == coffee.id and current.supersedes == tea.id
    assert m.get(tea.id, user_id="u1").valid_to == coffee.valid_from
    with pytest.raises(Conflict, match="already superseded"):
        m.supersede(tea.id, "The user drinks water.", user_id="u1")
    with pytest.raises(ValidationError, match="content"):
        m.supersede(coffee.id, "x", user_id="u1", by=tea.id)
    with pytest.raises(ValidationError, match="content"):
        m.supersede(coffee.id, user_id="u1")
    with pytest.raises(ValidationError, match="by"):
        m.supersede(coffee.id, user_id="u1", by=coffee.id)
    with pytest.raises(ValidationError, match="valid_from"):
        m.supersede(coffee.id, "The user drinks water.", user_id="u1", valid_from=T0 - timedelta(days=1))
    with pytest.raises(ValidationError, match="as_of"):
        m.search("tea", user_id="u1", as_of="not a date")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="include_superseded"):
        m.search("tea", user_id="u1", include_superseded="yes")  # type: ignore[arg-type]
    # another user's memory cannot be used to supersede, nor be superseded
    other = m.add("The user drinks water.", user_id="u2")
    with pytest.raises(Exception, match="not found"):
        m.supersede(coffee.id, user_id="u1", by=other.id)


def test_an_agents_change_is_its_word_and_does_not_carry_a_persons_pin(make_memory: MakeMemory) -> None:
    m = make_memory(clock=ManualClock(T0))
    old = m.add("The user lives in Munich.", user_id="u1", pinned=True)
    by_agent = m.supersede(old.id, "The user lives in Berlin.", user_id="u1", source="agent", actor="agent")
    assert (by_agent.source, by_agent.verified, by_agent.pinned) == ("agent", False, False)
    by_person = m.supersede(by_agent.id, "The user lives in Hamburg.", user_id="u1")
    assert (by_person.source, by_person.verified) == ("user", True)
    with pytest.raises(ValidationError, match="source"):
        m.supersede(by_person.id, "x", user_id="u1", source="robot")  # type: ignore[arg-type]


def test_deleting_the_new_fact_makes_the_old_one_current_again(make_memory: MakeMemory) -> None:
    m, _, munich, berlin = moved(make_memory)
    m.delete(berlin, user_id="u1", reason="that was my sister")
    back = m.get(munich, user_id="u1")
    assert (back.status, back.valid_to, back.superseded_by, back.superseded_at) == ("active", None, None, None)
    assert [e.kind for e in m.history(munich, user_id="u1")] == ["ADD", "SUPERSEDE", "RESTORE"]
    assert contents(m.search("where does the user live", user_id="u1")) == ["The user lives in Munich."]


@pytest.mark.parametrize("profile", ["default", "companion"])
def test_history_neither_decays_nor_is_archived(make_memory: MakeMemory, profile: str) -> None:
    m, clock, munich, _ = moved(make_memory, profile)
    before = m.get(munich, user_id="u1")
    clock.advance(days=3 * 365)
    m.consolidate(user_id="u1")
    after = m.get(munich, user_id="u1")
    assert (after.status, after.score, after.valid_to) == ("superseded", before.score, before.valid_to)
    assert m.forecast(munich, user_id="u1").state == "superseded"


def test_export_and_import_round_trip_a_change(make_memory: MakeMemory, tmp_path: Path) -> None:
    m, _, munich, berlin = moved(make_memory)
    dump = tmp_path / "u1.jsonl"
    dump.write_text(m.export(user_id="u1"), encoding="utf-8")
    other = make_memory(home=tmp_path / "other")
    other.import_(dump, user_id="u1")
    old, new = other.get(munich, user_id="u1"), other.get(berlin, user_id="u1")
    assert (old.status, old.valid_to, old.superseded_by) == ("superseded", MOVED, berlin)
    assert (new.valid_from, new.supersedes) == (MOVED, munich)


def test_a_database_from_before_the_change_columns_is_migrated_in_place(
        make_memory: MakeMemory, tmp_path: Path, sqlite_only: None) -> None:
    home = tmp_path / "old"
    m = make_memory(home=home, clock=ManualClock(T0))
    kept = m.add("The user lives in Munich.", user_id="u1")
    path = m.config.db_path
    m.close()
    db = apsw.Connection(str(path))  # as the older code left it
    db.execute("ALTER TABLE memories DROP COLUMN valid_from; ALTER TABLE memories DROP COLUMN valid_to;"
               "ALTER TABLE memories DROP COLUMN superseded_at; ALTER TABLE memories DROP COLUMN superseded_by;"
               "ALTER TABLE memories DROP COLUMN supersedes;"
               "DELETE FROM migrations WHERE name = 'm014_memory_validity'")
    db.close()
    again = make_memory(home=home, clock=ManualClock(T0 + timedelta(days=30)))
    old = again.get(kept.id, user_id="u1")
    assert (old.valid_from, old.valid_to, old.status) == (T0, None, "active")
    stored = apsw.Connection(str(path)).execute("SELECT valid_from FROM memories").fetchall()
    assert stored == [(T0.timestamp(),)]


def test_two_writers_superseding_one_fact_at_once_make_one_change(make_memory: MakeMemory, tmp_path: Path) -> None:
    """Two engines on one store (two processes' worth of connections), the same fact, the same
    moment: one change lands, the other is refused — never two current versions of one fact."""
    import threading

    home = tmp_path / "shared"
    first, second = make_memory(home=home), make_memory(home=home)
    home_fact = first.add("The user lives in Munich.", user_id="u1")
    go = threading.Barrier(2)
    outcomes: list[str] = []

    def change(m: Memory, city: str) -> None:
        go.wait()
        try:
            m.supersede(home_fact.id, f"The user lives in {city}.", user_id="u1")
            outcomes.append("ok")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=change, args=(m, c)) for m, c in ((first, "Berlin"), (second, "Hamburg"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["conflict", "ok"]
    current = [x for x in first.list(user_id="u1") if x.supersedes == home_fact.id]
    assert len(current) == 1 and first.get(home_fact.id, user_id="u1").superseded_by == current[0].id


def test_undo_and_restore_keep_a_change_whole(make_memory: MakeMemory) -> None:
    """Undoing a change (from either side) reverts both; restoring a deleted current version
    closes again the one its deletion had reopened; nothing ends with two current versions."""
    m, _, munich, berlin = moved(make_memory)
    m.undo(berlin, user_id="u1")
    old, new = m.get(munich, user_id="u1"), m.get(berlin, user_id="u1")
    assert (old.status, old.valid_to, old.superseded_by) == ("active", None, None)
    assert (new.status, new.supersedes) == ("active", None)  # kept, as a memory of its own
    m.supersede(munich, user_id="u1", by=berlin, valid_from=MOVED)
    m.undo(munich, user_id="u1")  # from the other side
    assert m.get(munich, user_id="u1").status == "active" and m.get(berlin, user_id="u1").supersedes is None
    m.supersede(munich, user_id="u1", by=berlin, valid_from=MOVED)
    m.delete(berlin, user_id="u1")
    assert m.get(munich, user_id="u1").status == "active"
    m.restore(berlin, user_id="u1")
    old, new = m.get(munich, user_id="u1"), m.get(berlin, user_id="u1")
    assert (old.status, old.superseded_by, old.valid_to) == ("superseded", berlin, MOVED)
    assert (new.status, new.supersedes) == ("active", munich)
    # history deleted, then its successor deleted, then the history restored: it holds again
    m.delete(munich, user_id="u1")
    m.delete(berlin, user_id="u1")
    back = m.restore(munich, user_id="u1")
    assert (back.status, back.superseded_by, back.valid_to) == ("active", None, None)


def test_a_year_in_the_question_finds_what_held_then(make_memory: MakeMemory) -> None:
    """Three homes told on one day, each with when it held; "in 2016" / "in 2019" / "in 2023"
    each rank the one that held then first (the date they were told says nothing)."""
    clock = ManualClock(datetime(2025, 1, 10, tzinfo=UTC))
    m = make_memory(clock=clock)
    for other in ("The user plays chess on Sundays.", "The user's sister is a nurse.", "The user likes jazz.",
                  "The user is allergic to cats.", "The user drives an old Volvo."):
        m.add(other, user_id="u1")  # the candidates' spread: three homes alike near the top
    a = m.add("The user lives in a flat in Munich.", user_id="u1", valid_from=datetime(2015, 3, 1, tzinfo=UTC))
    b = m.supersede(a.id, "The user lives in a flat in Hamburg.", user_id="u1",
                    valid_from=datetime(2018, 6, 1, tzinfo=UTC))
    m.supersede(b.id, "The user lives in a flat in Berlin.", user_id="u1", valid_from=datetime(2021, 9, 1, tzinfo=UTC))
    for year, city in (("2016", "Munich"), ("2019", "Hamburg"), ("2023", "Berlin")):
        hits = m.search(f"where did the user live in {year}", user_id="u1")
        assert city in hits[0].content, (year, [h.content for h in hits])


@pytest.mark.parametrize(("query", "past"), [
    ("Where did I live before Berlin?", True), ("What was my old job?", True), ("我以前在哪家公司？", True),
    ("原来住哪", True), ("When did I move to Hamburg?", True), ("How long was I at Siemens?", True),
    ("我换过几次工作", True), ("Where was I working for most of 2022?", True), ("婚期最开始定的是哪天？", True), ("我是哪天提的车？", True),
    ("Where do I live these days?", False), ("我现在在哪上班？", False), ("What's my first name?", False),
    ("我教的是几年级什么科目？", False), ("What car do I drive?", False)])
def test_which_questions_ask_about_the_past(query: str, past: bool) -> None:
    from memlane.retrieval.tense import asks_about_past

    assert asks_about_past(query) is past


def test_a_question_about_a_change_gets_every_version_of_the_fact(make_memory: MakeMemory) -> None:
    """"How many times did the user move?" found one home: the others follow it, oldest first,
    each saying when it held; a question about the present gets the current one alone."""
    clock = ManualClock(datetime(2025, 1, 10, tzinfo=UTC))
    m = make_memory(clock=clock)
    for other in ("The user plays chess on Sundays.", "The user likes jazz.", "The user drives an old Volvo."):
        m.add(other, user_id="u1")
    a = m.add("The user rents a flat in Munich.", user_id="u1", valid_from=datetime(2015, 3, 1, tzinfo=UTC))
    b = m.supersede(a.id, "The user rents a flat in Hamburg.", user_id="u1", valid_from=datetime(2018, 6, 1, tzinfo=UTC))
    c = m.supersede(b.id, "The user rents a flat in Berlin.", user_id="u1", valid_from=datetime(2021, 9, 1, tzinfo=UTC))
    hits = m.search("how many times has the user moved flat", user_id="u1", limit=4)
    ids = [h.id for h in hits]
    assert {a.id, b.id, c.id} <= set(ids)
    at = min(ids.index(x) for x in (a.id, b.id, c.id))
    found = ids[at]
    assert ids[at:at + 3] == [found, *(x for x in (a.id, b.id, c.id) if x != found)]  # together, then oldest first
    assert [h.id for h in m.search("which flat does the user rent", user_id="u1") if "flat" in h.content] == [c.id]
    one = m.search("where was the user's flat", user_id="u1", as_of=datetime(2019, 1, 1, tzinfo=UTC))
    assert [h.id for h in one if "flat" in h.content] == [b.id]  # as of a day: the version that held


@pytest.mark.parametrize(("asked", "told"), [
    ("where am I working these days?", "where is the user working these days?"),
    ("What did I change my diet to?", "What did the user change the user's diet to?"), ("Tell me a joke", "Tell me a joke"),
    ("帮我订一张去北京的机票", "帮我订一张去北京的机票"),
    ("I'm vegetarian, right?", "the user is vegetarian, right?"),
    ("我现在在哪上班？", "用户现在在哪上班？"), ("我们上次聊了什么", "我们上次聊了什么"),
    ("Where does the user live?", "Where does the user live?")])
def test_a_memory_search_reads_the_first_person_as_the_user(asked: str, told: str) -> None:
    from memlane.retrieval.query import told_of_user

    assert told_of_user(asked) == told


def test_a_question_about_now_that_an_old_version_matches_gets_the_current_one(make_memory: MakeMemory) -> None:
    clock = ManualClock(T0)
    m = make_memory(clock=clock)
    flat = m.add("The user rents a one-bed flat in Rathmines.", user_id="u1")
    m.add("The user's sister rents a flat in Cork.", user_id="u1")
    m.add("The user plays the fiddle.", user_id="u1")
    clock.now = datetime(2024, 12, 1, tzinfo=UTC)
    house = m.supersede(flat.id, "The user owns a house in Drumcondra.", user_id="u1", valid_from=MOVED)
    m.supersede(house.id, "The user owns a terraced house in Drumcondra.", user_id="u1")  # a chain of three
    asked = "does the user still rent the one-bed flat in Rathmines?"
    [top, *_] = m.search(asked, user_id="u1")
    # the fact the question names is the flat, which was replaced: what holds now answers it, as
    # strongly as the flat's own words would, above a current memory sharing fewer of them
    assert top.content == "The user owns a terraced house in Drumcondra."
    assert top.score >= m.config.search.min_relevance
    # asked of the past, the flat itself is found, and no version lends it relevance
    past = m.search(asked, user_id="u1", include_superseded=True)
    assert past[0].content == "The user rents a one-bed flat in Rathmines."
    m.config.search.current_from_versions = False
    # without the versions, the home the question asks about still finds the user's own (issue 29's slot prior)…
    assert m.search(asked, user_id="u1")[0].content == "The user owns a terraced house in Drumcondra."
    m.config.search.slot_prior = 0.0  # …and without that too, the words alone find the sister's flat
    assert m.search(asked, user_id="u1")[0].content == "The user's sister rents a flat in Cork."


def test_a_change_told_ahead_of_its_date_begins_on_that_date(make_memory: MakeMemory) -> None:
    """Told on 1 June that the user moves to Berlin on 1 September: until then Munich is where
    the user lives (search, prompt, MEMORY.md), Berlin is found as what is to come; from that
    day Berlin is current without anything run, and the next consolidation writes Munich down
    as history. Undo and a second change keep the pair whole."""
    clock = ManualClock(datetime(2024, 1, 10, tzinfo=UTC))
    m = make_memory(clock=clock)
    munich = m.add("The user lives in Munich.", user_id="u1", importance="high").id
    clock.now = datetime(2024, 6, 1, tzinfo=UTC)
    sept = datetime(2024, 9, 1, tzinfo=UTC)
    berlin = m.supersede(munich, "The user lives in Berlin.", user_id="u1", valid_from=sept).id
    old = m.get(munich, user_id="u1")
    assert (old.status, old.valid_to, old.superseded_by) == ("active", sept, berlin)
    with pytest.raises(Conflict, match="2024-09-01"):  # replaced already: change the newer version
        m.supersede(munich, "The user lives in Hamburg.", user_id="u1")

    asked = "where does the user live"
    assert "The user lives in Munich." in contents(m.search(asked, user_id="u1"))
    assert contents(m.search(asked, user_id="u1", as_of=sept + timedelta(days=1))) == ["The user lives in Berlin."]
    prompt = m.build_context(user_id="u1", query=asked).render()
    assert "The user lives in Munich. (until 2024-09-01)" in prompt
    assert "The user lives in Berlin. (from 2024-09-01)" in prompt
    assert "Munich" in m.export(user_id="u1", format="md")
    assert m.consolidate(user_id="u1").by_action().get("SUPERSEDE", 0) == 0  # not yet

    clock.now = sept + timedelta(days=2)  # the day passed; nothing has run since
    assert contents(m.search(asked, user_id="u1")) == ["The user lives in Berlin."]
    prompt = m.build_context(user_id="u1", query=asked).render()
    assert "Munich" not in prompt and "The user lives in Berlin. (since 2024-09-01)" in prompt
    assert "The user lives in Munich." in contents(m.search(asked, user_id="u1", include_superseded=True))
    assert "Munich" not in m.export(user_id="u1", format="md")
    m.consolidate(user_id="u1")
    assert m.get(munich, user_id="u1").status == "superseded"
    assert [x.id for x in m.list(user_id="u1", status="superseded")] == [munich]
    assert m.consolidate(user_id="u1").by_action().get("SUPERSEDE", 0) == 0  # once


def test_undoing_a_change_told_ahead_of_its_date(make_memory: MakeMemory) -> None:
    clock = ManualClock(datetime(2024, 6, 1, tzinfo=UTC))
    m = make_memory(clock=clock)
    munich = m.add("The user lives in Munich.", user_id="u1").id
    berlin = m.supersede(munich, "The user lives in Berlin.", user_id="u1",
                         valid_from=datetime(2024, 9, 1, tzinfo=UTC)).id
    with pytest.raises(ValidationError, match="to call it off, delete it"):  # the plan changed: not a change of it
        m.supersede(berlin, "The user lives in Hamburg.", user_id="u1")
    m.undo(munich, user_id="u1")  # either side undoes both
    old, new = m.get(munich, user_id="u1"), m.get(berlin, user_id="u1")
    assert (old.status, old.valid_to, old.superseded_by, new.supersedes) == ("active", None, None, None)
    m.supersede(munich, "The user lives in Hamburg.", user_id="u1")  # free to change again
    assert m.get(munich, user_id="u1").status == "superseded"


def test_deleting_and_restoring_a_middle_version_keeps_one_current(make_memory: MakeMemory) -> None:
    """Munich → Berlin → Rome: deleting Berlin closes the chain over it (Munich → Rome, Rome
    still the one current version); restoring Berlin puts it back between them by its dates."""
    m, clock, munich, berlin = moved(make_memory)
    clock.now = datetime(2025, 6, 1, tzinfo=UTC)
    rome = m.supersede(berlin, "The user lives in Rome.", user_id="u1", valid_from=datetime(2025, 5, 1, tzinfo=UTC)).id

    def links() -> list[tuple[str, str, str | None, str | None]]:
        return [(x.id, x.status, x.supersedes, x.superseded_by)
                for x in m.list(user_id="u1") if "lives" in x.content]

    m.delete(berlin, user_id="u1")
    assert sorted(links()) == sorted([(munich, "superseded", None, rome), (rome, "active", munich, None)])
    assert m.get(munich, user_id="u1").valid_to == datetime(2025, 5, 1, tzinfo=UTC)
    assert contents(m.search("where does the user live", user_id="u1")) == ["The user lives in Rome."]
    m.restore(berlin, user_id="u1")
    assert sorted(links()) == sorted([(munich, "superseded", None, berlin), (berlin, "superseded", munich, rome),
                                      (rome, "active", berlin, None)])
    assert (m.get(munich, user_id="u1").valid_to, m.get(berlin, user_id="u1").valid_to) == (
        MOVED, datetime(2025, 5, 1, tzinfo=UTC))
    # the first version deleted: the next one no longer names it; restored, it is history again
    m.delete(munich, user_id="u1")
    assert m.get(berlin, user_id="u1").supersedes is None
    m.restore(munich, user_id="u1")
    assert [x.content for x in m.timeline(rome, user_id="u1")] == [
        "The user lives in Munich.", "The user lives in Berlin.", "The user lives in Rome."]
    assert [x.id for x in m.list(user_id="u1", status="active") if "lives" in x.content] == [rome]


def test_merging_a_duplicate_of_the_current_version_keeps_the_chain(make_memory: MakeMemory) -> None:
    """The current version merged into a better-scored duplicate by consolidation: the kept one
    carries on the chain, and the old version names it, not a deleted memory."""
    m, _, munich, berlin = moved(make_memory)
    twin = m.add("The user lives in Berlin!", user_id="u1", importance=1.0, source="extractor").id
    m.consolidate(user_id="u1")
    assert berlin not in {x.id for x in m.list(user_id="u1")}
    assert [x.content for x in m.timeline(twin, user_id="u1")] == ["The user lives in Munich.", "The user lives in Berlin!"]
    old = m.get(munich, user_id="u1")
    assert (old.status, old.superseded_by, old.valid_to) == ("superseded", twin, MOVED)
