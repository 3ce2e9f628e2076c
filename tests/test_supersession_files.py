"""Facts that change (issue 32) in the files a scope moves through, attacked from outside
(issue 32 review): an export imported into another user keeps every link between versions
on the new ids; MEMORY.md writes a change told ahead of its date as the prompt does ("from …",
"until …") and reads it back unchanged; a "(since …)" that is no date is refused by line."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory, ValidationError
from memlane.models import MemoryRecord
from memlane.supersession import FLAG
from memlane.testing import ManualClock

MakeMemory = Callable[..., Memory]
NOW = datetime(2026, 1, 10, 9, tzinfo=UTC)
AHEAD = datetime(2026, 9, 1, tzinfo=UTC)


def every(m: Memory, user: str) -> dict[str, MemoryRecord]:
    return {r.id: r for s in ("active", "superseded", "archived") for r in m.list(user_id=user, status=s)}


def by_text(m: Memory, user: str, word: str) -> MemoryRecord:
    return next(r for r in every(m, user).values() if word in r.content)


# ---- export / import into another user ----------------------------------------------------


def exported(make_memory: MakeMemory, tmp_path: Path) -> tuple[Memory, Path, dict[str, str]]:
    """u1: Munich → Berlin → Rome with Berlin deleted (its trail kept), Golf → Tesla from
    September, and a memory flagged as perhaps replacing Rome, with a duplicate merged into it."""
    m = make_memory(clock=ManualClock(NOW))
    munich = m.add("The user lives in Munich.", user_id="u1", category="fact",
                   valid_from=datetime(2019, 6, 1, tzinfo=UTC)).id
    berlin = m.supersede(munich, "The user lives in Berlin.", user_id="u1",
                         valid_from=datetime(2024, 3, 15, tzinfo=UTC)).id
    rome = m.supersede(berlin, "The user lives in Rome.", user_id="u1",
                       valid_from=datetime(2025, 3, 15, tzinfo=UTC)).id
    m.delete(berlin, user_id="u1")
    golf = m.add("The user drives a Golf.", user_id="u1", category="fact").id
    tesla = m.supersede(golf, "The user drives a Tesla.", user_id="u1", valid_from=AHEAD).id
    unsure = m.add("The user may have moved to Naples.", user_id="u1", category="fact",
                   metadata={FLAG: {"ids": [rome, "feedfacefeedface"]}, "merged": [berlin, "0badc0de0badc0de"]}).id
    path = tmp_path / "u1.jsonl"
    path.write_text(m.export(user_id="u1"), encoding="utf-8")
    return m, path, {"munich": munich, "berlin": berlin, "rome": rome, "golf": golf, "tesla": tesla,
                     "unsure": unsure}


def test_an_export_imported_into_another_user_keeps_its_versions_linked(make_memory: MakeMemory,
                                                                        tmp_path: Path) -> None:
    """Every id is u1's already, so u2's copies get new ones: the links between versions,
    the unsure change's flag and the merged duplicates follow them, and a link to a memory
    the export does not hold is dropped — none names u1's memories or nothing."""
    m, path, u1 = exported(make_memory, tmp_path)
    m.import_(path, user_id="u2")
    mine = every(m, "u2")
    assert not set(mine) & set(u1.values())
    for r in mine.values():
        assert {r.supersedes, r.superseded_by} - {None} <= set(mine), r
    munich, rome, tesla = by_text(m, "u2", "Munich"), by_text(m, "u2", "Rome"), by_text(m, "u2", "Tesla")
    assert [v.content for v in m.timeline(munich.id, user_id="u2")] == [
        "The user lives in Munich.", "The user lives in Rome."]
    golf = by_text(m, "u2", "Golf")
    assert (golf.superseded_by, tesla.supersedes) == (tesla.id, golf.id)
    unsure = by_text(m, "u2", "Naples")
    assert unsure.metadata[FLAG]["ids"] == [rome.id]
    [berlin] = unsure.metadata["merged"]  # the deleted Berlin, by the id of its trail in u2
    assert berlin != u1["berlin"]

    later = AHEAD + timedelta(days=30)
    assert m.supersede(tesla.id, "The user drives a BMW.", user_id="u2", valid_from=later).supersedes == tesla.id
    assert m.get(u1["tesla"], user_id="u1").superseded_by is None  # u1's own chain untouched
    # the deleted version comes back into u2's chain, and u1 can still restore its own
    assert m.restore(berlin, user_id="u2").content == "The user lives in Berlin."
    assert [v.content for v in m.timeline(rome.id, user_id="u2")] == [
        "The user lives in Munich.", "The user lives in Berlin.", "The user lives in Rome."]
    assert m.restore(u1["berlin"], user_id="u1").id == u1["berlin"]


def test_importing_an_export_twice_adds_nothing_and_keeps_the_links(make_memory: MakeMemory,
                                                                    tmp_path: Path) -> None:
    m, path, u1 = exported(make_memory, tmp_path)
    before = {r.id: (r.supersedes, r.superseded_by) for r in every(m, "u1").values()}
    assert m.import_(path, user_id="u1").added == {}
    assert {r.id: (r.supersedes, r.superseded_by) for r in every(m, "u1").values()} == before
    m.import_(path, user_id="u2")
    first = {r.id: (r.supersedes, r.superseded_by, r.metadata) for r in every(m, "u2").values()}
    assert m.import_(path, user_id="u2").added == {}
    assert {r.id: (r.supersedes, r.superseded_by, r.metadata) for r in every(m, "u2").values()} == first


def test_an_export_imported_into_another_home_keeps_its_ids(make_memory: MakeMemory, tmp_path: Path) -> None:
    m, path, u1 = exported(make_memory, tmp_path)
    other = make_memory(home=tmp_path / "other", clock=ManualClock(NOW))
    other.import_(path, user_id="u9")
    mine = every(other, "u9")
    assert set(u1.values()) - {u1["berlin"]} == set(mine)
    assert other.get(u1["rome"], user_id="u9").supersedes == u1["munich"]
    assert other.get(u1["unsure"], user_id="u9").metadata[FLAG]["ids"] == [u1["rome"]]


# ---- MEMORY.md ----------------------------------------------------------------------------


def planned(make_memory: MakeMemory) -> tuple[Memory, ManualClock, str, str, str]:
    clock = ManualClock(NOW)
    m = make_memory(clock=clock)
    munich = m.add("The user lives in Munich.", user_id="u1", category="fact",
                   valid_from=datetime(2019, 6, 1, tzinfo=UTC)).id
    berlin = m.supersede(munich, "The user lives in Berlin.", user_id="u1",
                         valid_from=datetime(2024, 3, 15, tzinfo=UTC)).id
    golf = m.add("The user drives a Golf.", user_id="u1", category="fact").id
    tesla = m.supersede(golf, "The user drives a Tesla.", user_id="u1", valid_from=AHEAD).id
    return m, clock, berlin, golf, tesla


def test_memory_md_writes_a_change_told_ahead_as_from_and_until(make_memory: MakeMemory) -> None:
    """Before September the file says which car holds now and which is to come, as the prompt
    does; read back it changes nothing; once the day has passed the new one holds "since"."""
    m, clock, berlin, golf, tesla = planned(make_memory)
    text = m.md_export(user_id="u1").read_text(encoding="utf-8")
    assert "The user drives a Tesla. (from 2026-09-01)" in text
    assert "The user drives a Golf. (until 2026-09-01)" in text
    assert "The user lives in Berlin. (since 2024-03-15)" in text
    assert m.md_import(user_id="u1", dry_run=True) == []
    assert m.md_import(user_id="u1") == []
    assert (m.get(golf, user_id="u1").content, m.get(tesla, user_id="u1").content) == (
        "The user drives a Golf.", "The user drives a Tesla.")
    clock.now = AHEAD + timedelta(days=1)
    text = m.md_export(user_id="u1").read_text(encoding="utf-8")
    assert "The user drives a Tesla. (since 2026-09-01)" in text and "Golf" not in text
    assert m.md_import(user_id="u1") == []


def test_memory_md_markers_in_a_persons_text_are_kept(make_memory: MakeMemory) -> None:
    """A memory whose own text ends like a marker keeps it through the round trip; a new entry
    with "(until …)" keeps it as text (MEMORY.md records no end date); "(from …)" on a new
    entry is when it begins to hold."""
    m, clock, *_ = planned(make_memory)
    own = m.add("The user's favourite era is the Bronze Age (until 1200)", user_id="u1", category="fact").id
    path = m.md_export(user_id="u1")
    assert m.md_import(user_id="u1") == []
    assert m.get(own, user_id="u1").content == "The user's favourite era is the Bronze Age (until 1200)"
    path.write_text(path.read_text(encoding="utf-8") + "\n### fact\nThe user rents a flat (until 2027-01-31)\n\n"
                    "### fact\nThe user works at Acme (from 2026-04)\n", encoding="utf-8")
    added = {op.content: op for op in m.md_import(user_id="u1")}
    assert set(added) == {"The user rents a flat (until 2027-01-31)", "The user works at Acme"}
    acme = m.get(added["The user works at Acme"].memory_id, user_id="u1")
    assert acme.valid_from == datetime(2026, 4, 1, tzinfo=UTC)
    assert "The user works at Acme (from 2026-04-01)" in path.read_text(encoding="utf-8")
    assert m.md_import(user_id="u1") == []


@pytest.mark.parametrize("bad", ["(since 2025-13)", "(since 2025-06-31)", "(since 2025-00)", "(from 2026-02-30)",
                                 "（自 2025-13 起）"])
def test_memory_md_refuses_a_since_that_is_no_date(make_memory: MakeMemory, bad: str) -> None:
    """A date that does not exist is a person's mistake: refused naming the line, nothing
    applied — not taken as new text that then shows two dates."""
    m, clock, berlin, *_ = planned(make_memory)
    path = m.md_export(user_id="u1")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("The user lives in Berlin. (since 2024-03-15)", f"The user lives in Hamburg. {bad}"),
                    encoding="utf-8")
    with pytest.raises(ValidationError, match=r"MEMORY\.md line \d+: since") as err:
        m.md_import(user_id="u1")
    assert re.search(r"\d{4}-\d\d(-\d\d)?", bad).group() in str(err.value)  # type: ignore[union-attr]
    assert m.get(berlin, user_id="u1").content == "The user lives in Berlin."
    path.write_text(text + f"\n### fact\nThe user keeps bees {bad}\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"line \d+: since"):
        m.md_import(user_id="u1")
    assert not any("bees" in r.content for r in every(m, "u1").values())
