"""MEMORY.md sync never deletes or brings back a memory without a person's intent (issue 12):
a person's removal or edit is read against the manifest of what memlane wrote into the file,
never against a clock; deleted memories stay deleted; imports are idempotent; two runs of
`consolidate` on one day are one."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory, ValidationError
from memlane.markdown import read_memory_file, read_memory_md
from memlane.models import Scope
from memlane.testing import ManualClock
from tests.conftest import PROFILE_NAMES, T0, make_config


def import_deletes(memory: Memory, user: str = "u1") -> list[str]:
    return [e.memory_id for e in memory.store.events(Scope.of(user), limit=1_000_000)
            if e.kind == "DELETE" and e.actor == "import"]


# distinct texts, so consolidation's dedup has nothing to merge
WORDS = ("apple", "bicycle", "cello", "dolphin", "ember", "fjord", "granite", "harbor", "iris", "jasmine", "kayak",
         "lantern", "meadow", "nutmeg", "orbit", "pepper", "quartz", "raven", "saffron", "tundra")


def category(memory: Memory, *wanted: str) -> str:
    cats = memory.config.policy.categories
    return next((c for c in wanted if c in cats), cats[0])


# ---- removal is what the written file held, minus what it holds now ------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_a_memory_added_in_the_second_of_the_export_survives_import_and_consolidate(
        make_memory: Callable[..., Memory], profile: str) -> None:
    clock = ManualClock(T0)
    memory = make_memory(profile, clock=clock)
    memory.add("older memory about the garden", user_id="u1")
    for trial in range(20):
        memory.md_export(user_id="u1")
        clock.now += timedelta(milliseconds=1)  # same whole second as the file's stamp
        new = memory.add(f"the user owns a {WORDS[trial]}", user_id="u1")
        memory.md_import(user_id="u1")
        memory.consolidate(user_id="u1", now=clock.now)
        assert memory.get(new.id, user_id="u1")
    assert import_deletes(memory) == []


@pytest.mark.parametrize("text", [
    "",
    "## Shopping\n\n- milk\n- bread\n",
    "# Agent Memory\n\n## Active Memories\n\n### [] fact | 0.60 | 2026-03-01 | 0\nsomething\n",
    "# Agent Memory\n\n<!-- Last updated: 2099-01-01T00:00:00 -->\n\n## Active Memories\n\n",
], ids=["empty", "foreign-heading", "empty-id", "no-manifest"])
def test_a_file_memlane_did_not_write_deletes_nothing(memory: Memory, text: str) -> None:
    kept = [memory.add(f"memory {i} about topic {i * 31}", user_id="u1") for i in range(3)]
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    with contextlib.suppress(ValidationError):  # an empty file is refused outright: also nothing deleted
        memory.md_import(user_id="u1")
    path.write_text(text, encoding="utf-8")
    memory.consolidate(user_id="u1")
    assert {m.id for m in memory.list(user_id="u1")} >= {m.id for m in kept}
    assert import_deletes(memory) == []


def test_an_entry_whose_id_was_erased_deletes_nothing(memory: Memory) -> None:
    a = memory.add("用户对花生过敏", user_id="u1")
    b = memory.add("用户喜欢喝茶", user_id="u1", category="preference")
    path = memory.md_export(user_id="u1")
    text = path.read_text(encoding="utf-8").replace(f"### [{a.id}]", "### []")
    path.write_text(text, encoding="utf-8")
    ops = memory.md_import(user_id="u1")
    assert [(o.op, o.memory_id) for o in ops] == [("SKIP", a.id)]
    assert memory.get(a.id, user_id="u1") and memory.get(b.id, user_id="u1")


def test_a_stale_file_loses_to_the_store_and_a_persons_edit_wins(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(T0)
    memory = make_memory(clock=clock)
    stale = memory.add("the store will change this one", user_id="u1")
    edited = memory.add("a person will change this one", user_id="u1")
    path = memory.md_export(user_id="u1")
    clock.now -= timedelta(hours=1)  # a clock going backwards changes nothing: no clock is read
    memory.update(stale.id, user_id="u1", content="changed by the agent after the export", score=0.9)
    memory.update(edited.id, user_id="u1", score=0.3)
    text = path.read_text(encoding="utf-8").replace("a person will change this one", "changed by a person")
    path.write_text(text, encoding="utf-8")

    ops = memory.md_import(user_id="u1")

    assert [(o.op, o.memory_id, o.fields) for o in ops] == [("UPDATE", edited.id, ["content"])]
    after = memory.get(stale.id, user_id="u1")
    assert (after.content, after.score) == ("changed by the agent after the export", 0.9)
    after = memory.get(edited.id, user_id="u1")
    assert (after.content, after.score) == ("changed by a person", 0.3)


# ---- deleted stays deleted -------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_delete_leaves_the_files_and_a_stale_file_does_not_bring_it_back(
        make_memory: Callable[..., Memory], profile: str) -> None:
    memory = make_memory(profile)
    secret = "用户的银行卡密码是 4711"
    cat = category(memory, "fact", "knowledge")
    gone = memory.add(secret, user_id="u1", category=cat)
    other = memory.add("the user likes green tea", user_id="u1", category=cat)
    path = memory.md_export(user_id="u1")
    memory.md_export(user_id="u1")  # the backup now holds the memory too
    memory.user_profile(user_id="u1")
    stale = path.read_text(encoding="utf-8")

    memory.delete(gone.id, user_id="u1")

    for name in ("MEMORY.md", "MEMORY.md.bak", "USER.md"):
        assert secret not in (path.parent / name).read_text(encoding="utf-8"), name
    path.write_text(stale, encoding="utf-8")  # a person's editor saves its old copy
    ops = memory.md_import(user_id="u1")
    assert [(o.op, o.memory_id) for o in ops] == [("SKIP", gone.id)]
    path.write_text(stale, encoding="utf-8")
    report = memory.consolidate(user_id="u1")
    assert [(a.action, a.memory_id) for a in report.actions if a.step == "import"] == [("SKIP", gone.id)]
    assert [m.id for m in memory.list(user_id="u1")] == [other.id]
    for name in ("MEMORY.md", "MEMORY.md.bak"):
        assert secret not in (path.parent / name).read_text(encoding="utf-8"), name


def test_delete_keeps_a_persons_unimported_edits(memory: Memory) -> None:
    a = memory.add("first memory", user_id="u1")
    b = memory.add("second memory", user_id="u1")
    path = memory.md_export(user_id="u1")
    path.write_text(path.read_text(encoding="utf-8").replace("second memory", "second, edited") +
                    "\n### preference\nlikes rain\n", encoding="utf-8")
    memory.delete(a.id, user_id="u1")
    assert "first memory" not in path.read_text(encoding="utf-8")
    memory.md_import(user_id="u1")
    assert sorted(m.content for m in memory.list(user_id="u1")) == ["likes rain", "second, edited"]
    assert memory.get(b.id, user_id="u1").content == "second, edited"


# ---- an import killed after its commit, run again ------------------------------------------


def test_an_import_rerun_after_a_crash_adds_each_new_entry_once(memory: Memory) -> None:
    memory.add("already here", user_id="u1")
    path = memory.md_export(user_id="u1")
    edited = path.read_text(encoding="utf-8") + "\n### todo | 0.7\nprepare the demo\n\n### fact\nalready here\n"
    path.write_text(edited, encoding="utf-8")
    first = memory.md_import(user_id="u1")
    assert [o.op for o in first] == ["ADD", "SKIP"]  # the same text as a stored memory is that memory
    path.write_text(edited, encoding="utf-8")  # killed after the commit, before the file got the ids
    second = memory.md_import(user_id="u1")
    assert [(o.op, o.memory_id) for o in second][0] == ("SKIP", first[0].memory_id)
    assert sorted(m.content for m in memory.list(user_id="u1")) == ["already here", "prepare the demo"]
    assert all(e.id for e in read_memory_md(path))
    assert memory.md_import(user_id="u1") == []


def test_two_importers_of_one_file_add_each_entry_once(make_memory: Callable[..., Memory]) -> None:
    first, second = make_memory(), make_memory()  # two connections to one home, as two processes
    first.add("already here", user_id="u1")
    path = first.md_export(user_id="u1")
    path.write_text(path.read_text(encoding="utf-8") + "".join(f"\n### fact\nthe user owns a {w}\n" for w in WORDS),
                    encoding="utf-8")
    edited = path.read_text(encoding="utf-8")
    errors: list[BaseException] = []

    def run(memory: Memory) -> None:
        try:
            memory.md_import(user_id="u1")
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,)) for m in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    path.write_text(edited, encoding="utf-8")  # and once more from the file as the person left it
    first.md_import(user_id="u1")
    assert errors == []
    contents = [m.content for m in first.list(user_id="u1")]
    assert sorted(contents) == sorted(["already here", *(f"the user owns a {w}" for w in WORDS)])


def test_a_file_that_cannot_be_imported_is_left_for_the_person(memory: Memory) -> None:
    memory.add("keep me", user_id="u1")
    path = memory.md_export(user_id="u1")
    text = path.read_text(encoding="utf-8") + "\n### not-a-category\nmy note\n"
    path.write_text(text, encoding="utf-8")
    report = memory.consolidate(user_id="u1")
    assert report.errors and "not-a-category" in report.errors[0]
    assert path.read_text(encoding="utf-8") == text


# ---- writing -----------------------------------------------------------------------------------


def test_leftover_temp_files_of_dead_writers_are_removed_on_the_next_write(memory: Memory) -> None:
    memory.add("x", user_id="u1")
    path = memory.md_export(user_id="u1")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftovers = [path.with_name(f".MEMORY.md.{dead.stdout.strip()}-abc.tmp"), path.with_name(".MEMORY.md.k2j4x9.tmp"),
                 path.with_name(f".MEMORY.md.bak.{dead.stdout.strip()}-abc.tmp")]
    live = path.with_name(f".MEMORY.md.{os.getpid()}-live.tmp")  # another thread of this process, mid-write
    for p in [*leftovers, live]:
        p.write_text("half a file", encoding="utf-8")
    old = path.read_text(encoding="utf-8")
    memory.md_export(user_id="u1")
    assert [p for p in leftovers if p.exists()] == []
    assert live.exists()
    assert path.with_name("MEMORY.md.bak").read_text(encoding="utf-8") == old
    assert read_memory_file(path).token != read_memory_file(path.with_name("MEMORY.md.bak")).token


# ---- consolidate twice -------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize("later", [timedelta(0), timedelta(minutes=1)])
def test_consolidate_twice_on_one_day_changes_nothing_the_second_time(
        make_memory: Callable[..., Memory], profile: str, later: timedelta) -> None:
    now = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
    memory = make_memory(profile, clock=ManualClock(now - timedelta(days=10)))
    todo = category(memory, "todo")
    other = category(memory, "fact", "knowledge")
    for i, score in enumerate([0.9, 0.45, 0.25, 0.11, 0.09, 0.07]):  # halved: around 0.2, 0.1 and 0.05
        m = memory.add(f"todo number {i}: call supplier {i * 17}", user_id="u1", category=todo,
                       expires_at=now - timedelta(hours=i + 1))
        memory.update(m.id, user_id="u1", score=score)
    for i, score in enumerate([0.049, 0.051, 0.099, 0.101, 0.19, 0.21, 0.29, 0.31, 0.6]):
        m = memory.add(f"fact number {i}: the office is in building {i * 13}", user_id="u1", category=other)
        memory.update(m.id, user_id="u1", score=score)
    memory.md_export(user_id="u1")
    memory.user_profile(user_id="u1")

    memory.consolidate(user_id="u1", now=now)
    before = (memory.list(user_id="u1"), memory.stats(user_id="u1").events)
    second = memory.consolidate(user_id="u1", now=now + later)

    assert second.actions == []
    assert (memory.list(user_id="u1"), memory.stats(user_id="u1").events) == before


# ---- processes at once -------------------------------------------------------------------------

ADDER = """
import sys, time, uuid
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.conftest import make_config
from memlane import Memory
m = Memory(make_config(Path({home!r})))
end = time.time() + {seconds}
n = 0
while time.time() < end:
    print(m.add(uuid.uuid4().hex, user_id="u1").id, flush=True)  # unlike each other: dedup merges none
    n += 1
"""

SYNCER = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.conftest import make_config
from memlane import Memory
m = Memory(make_config(Path({home!r})))
end = time.time() + {seconds}
while time.time() < end:
    m.consolidate(user_id="u1")
    m.md_export(user_id="u1")
    m.md_import(user_id="u1")
"""


def test_three_writers_and_a_syncer_lose_nothing(tmp_path: Path) -> None:
    home, root, seconds = tmp_path / "home", str(Path(__file__).parent.parent), 6
    Memory(make_config(home)).close()  # migrations once, before the race
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    adders = [subprocess.Popen([sys.executable, "-c", ADDER.format(root=root, home=str(home), seconds=seconds, who=w)],
                               env=env, stdout=subprocess.PIPE, text=True) for w in range(3)]
    syncer = subprocess.Popen([sys.executable, "-c", SYNCER.format(root=root, home=str(home), seconds=seconds)],
                              env=env, stderr=subprocess.PIPE, text=True)
    acked = [line.strip() for p in adders for line in p.communicate(timeout=60)[0].splitlines() if line.strip()]
    _, err = syncer.communicate(timeout=60)
    assert syncer.returncode == 0, err
    assert all(p.returncode == 0 for p in adders)
    memory = Memory(make_config(home))
    try:
        assert len(acked) > 30
        assert import_deletes(memory) == []
        lost = set(acked) - {m.id for m in memory.list(user_id="u1")}
        assert [(e.memory_id, e.actor, e.reason) for e in memory.store.events(Scope.of("u1"), limit=1_000_000)
                if e.memory_id in lost] == []
    finally:
        memory.close()


# ---- facts that change (issue 32) -------------------------------------------------------------


def test_memory_md_shows_a_changed_fact_compactly_and_round_trips(make_memory: Callable[..., Memory]) -> None:
    """A current memory that replaced another ends with "(since …)"; the replaced one is not
    listed (nor in the manifest, so its absence deletes nothing); export → import is no
    operation, and a memory whose own text ends like a marker keeps it."""
    clock = ManualClock(T0)
    memory = make_memory(clock=clock)
    old = memory.add("用户住在慕尼黑", user_id="u1", category="fact")
    clock.now += timedelta(days=40)
    new = memory.supersede(old.id, "用户住在柏林", user_id="u1", valid_from=T0 + timedelta(days=20))
    odd = memory.add("user has been vegetarian (since 2020)", user_id="u1", category="fact")
    path = memory.md_export(user_id="u1")
    text = path.read_text(encoding="utf-8")
    assert "用户住在柏林 (since 2026-03-21)" in text and "慕尼黑" not in text and old.id not in text
    assert "user has been vegetarian (since 2020) (since 2026-04-10)" in text
    assert "<!-- Total entries: 2 -->" in text
    entries = {e.id: e for e in read_memory_md(path)}
    assert (entries[new.id].content, entries[new.id].since) == ("用户住在柏林", datetime(2026, 3, 21, tzinfo=UTC))
    assert entries[odd.id].content == odd.content
    assert memory.md_import(user_id="u1") == []
    assert memory.md_import(user_id="u1", dry_run=True) == []
    assert memory.export(user_id="u1", format="md").count("###") == 2  # `memlane export --format md` too
    assert memory.get(old.id, user_id="u1").status == "superseded" and import_deletes(memory) == []


@pytest.mark.parametrize("since", ["(since 2026-05)", "(since 2026-05-01)", "（自 2026年起）"])
def test_a_rewritten_line_with_a_since_date_is_a_change_a_plain_rewrite_a_correction(
        make_memory: Callable[..., Memory], since: str) -> None:
    """A year or a month that holds the old fact's start means from that start."""
    clock = ManualClock(T0)
    memory = make_memory(clock=clock)
    home = memory.add("the user lives in Munich", user_id="u1", category="fact")
    job = memory.add("the user works at Siemens", user_id="u1", category="fact")
    path = memory.md_export(user_id="u1")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("the user lives in Munich", f"the user lives in Berlin {since}")
                    .replace("the user works at Siemens", "the user works at Siemens AG"), encoding="utf-8")
    ops = {op.op: op for op in memory.md_import(user_id="u1", dry_run=True)}
    assert set(ops) == {"SUPERSEDE", "UPDATE"}
    assert (ops["SUPERSEDE"].memory_id, ops["SUPERSEDE"].before, ops["SUPERSEDE"].content) == (
        home.id, "the user lives in Munich", "the user lives in Berlin")
    applied = memory.md_import(user_id="u1")
    assert sorted(op.op for op in applied) == ["SUPERSEDE", "UPDATE"]
    closed = memory.get(home.id, user_id="u1")
    began = T0 if "年" in since else datetime(2026, 5, 1, tzinfo=UTC)  # 2026: not before Munich began
    # a change dated after today leaves the old fact current until that day (issue 32)
    assert (closed.status, closed.valid_to) == ("superseded" if began <= clock.now else "active", began)
    assert closed.superseded_by is not None
    current = memory.get(closed.superseded_by or "", user_id="u1")
    assert (current.content, current.valid_from, current.supersedes) == ("the user lives in Berlin", began, home.id)
    assert [e.actor for e in memory.history(home.id, user_id="u1")][-1] == "import"
    assert memory.get(job.id, user_id="u1").content == "the user works at Siemens AG"  # corrected in place
    assert memory.get(job.id, user_id="u1").status == "active"
    rewritten = path.read_text(encoding="utf-8")
    ahead = began > clock.now  # "from" the change's day; the old fact current "until" then
    assert f"the user lives in Berlin ({'from' if ahead else 'since'} {began.date().isoformat()})" in rewritten
    assert ("the user lives in Munich (until" in rewritten) == ahead
    assert memory.md_import(user_id="u1") == []  # idempotent after the change


def test_memory_md_edits_that_are_not_a_change_are_left_alone(make_memory: Callable[..., Memory]) -> None:
    """Keeping memlane's "(since …)" while rewriting is a correction; changing only the date is
    not applied (SKIP, saying how); a date before the old fact began is refused by line; an old
    file's entry of a replaced fact is not edited; a new entry with a date holds from then; an
    entry stating a fact that was replaced long ago (moving back) is a new memory."""
    clock = ManualClock(T0 + timedelta(days=100))
    memory = make_memory(clock=clock)
    old = memory.add("the user lives in Munich", user_id="u1", category="fact")
    stale = memory.md_export(user_id="u1").read_text(encoding="utf-8")
    new = memory.supersede(old.id, "the user lives in Berlin", user_id="u1", valid_from=clock.now)
    path = memory.md_export(user_id="u1")
    text = path.read_text(encoding="utf-8")
    day = clock.now.date().isoformat()

    path.write_text(text.replace("in Berlin", "in Berlin-Mitte"), encoding="utf-8")  # date kept: a correction
    assert [(op.op, op.memory_id) for op in memory.md_import(user_id="u1")] == [("UPDATE", new.id)]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"(since {day})", "(since 2026-07-01)"), encoding="utf-8")
    skipped = memory.md_import(user_id="u1")
    assert [op.op for op in skipped] == ["SKIP"] and "since" in skipped[0].reason
    assert memory.get(new.id, user_id="u1").valid_from == clock.now
    path.write_text(text.replace(f"in Berlin-Mitte (since {day})", "in Hamburg (since 2026-05)"), encoding="utf-8")
    with pytest.raises(ValidationError, match="line"):
        memory.md_import(user_id="u1")
    assert memory.get(new.id, user_id="u1").status == "active"  # nothing half done

    path.write_text(stale.replace("in Munich", "in Rome (since 2026-07)"), encoding="utf-8")  # before the change
    ops = memory.md_import(user_id="u1", dry_run=True)
    assert [op.op for op in ops] == ["SKIP"] and new.id in ops[0].reason

    path.write_text(memory.md_export(user_id="u1").read_text(encoding="utf-8")
                    + "\n### fact\nthe user lives in Munich (since 2026-09)\n\n### fact\nthe user keeps bees (since 2025)\n",
                    encoding="utf-8")
    added = {op.content: op for op in memory.md_import(user_id="u1")}
    assert set(added) == {"the user lives in Munich", "the user keeps bees"}  # not "already stored" as the old one
    assert all(op.op == "ADD" for op in added.values())
    bees = memory.get(added["the user keeps bees"].memory_id, user_id="u1")
    assert bees.valid_from == datetime(2025, 1, 1, tzinfo=UTC)
    assert "the user keeps bees (since 2025-01-01)" in path.read_text(encoding="utf-8")
    assert memory.md_import(user_id="u1") == []
