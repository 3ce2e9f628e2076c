"""The consolidation job (issue 6): steps, audit, dry run, crash + rerun, files, scheduler, CLI."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane import Memory
from memlane.cli import app
from memlane.lifecycle import STEPS, ConsolidationReport, Scheduler
from memlane.markdown import memory_path
from memlane.models import Scope
from tests.conftest import PROFILE_NAMES
from tests.lifecycle_support import Clock, MakeMemory, extracted, state


def _seed(mem: Memory, user: str = "u1") -> dict[str, str]:
    cats = mem.config.policy.categories
    cat = mem.config.policy.default_category
    out = {
        "old_low": extracted(mem, "用户曾经问过一次天气", cat, 0.06, user=user).id,
        "old_mid": extracted(mem, "用户的主要开发语言是 Python", cat, "medium", user=user).id,
        "fresh": extracted(mem, "用户偏好用 pytest 而非 unittest", cat, "high", user=user).id,
        "pinned": mem.add("用户对花生过敏", user_id=user, category=cat, importance="low", pinned=True).id,
        "expiring": extracted(mem, "用户本周在上海出差", cat, "high", user=user,
                              expires_at=mem.clock() + timedelta(days=3)).id,
    }
    if "episode" in cats:
        out["episode"] = extracted(mem, "[2026-01-01 18:00] 聊了面试、游戏", "episode", "medium", user=user).id
    return out


class Crash(Exception):
    pass


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize("crash_after", ["dedup", "decay", "thresholds", "expire", "review"])
def test_a_crash_between_steps_then_a_rerun_equals_an_uninterrupted_run(
        make_memory: MakeMemory, tmp_path: Path, profile: str, crash_after: str) -> None:
    clocks = Clock(), Clock()
    whole = make_memory(profile, home=tmp_path / "whole", clock=clocks[0])
    crashed = make_memory(profile, home=tmp_path / "crashed", clock=clocks[1])
    for mem, clock in zip((whole, crashed), clocks, strict=True):
        _seed(mem)
        clock.at_day(40)

    def boom(step: str, scope: Scope | None, report: ConsolidationReport) -> None:
        if step == crash_after:
            raise Crash(step)

    whole.consolidate(user_id="u1")
    with pytest.raises(Crash):
        crashed.consolidate(user_id="u1", on_step=boom)
    crashed.consolidate(user_id="u1")

    def content_state(mem: Memory) -> set[tuple[object, ...]]:  # ids differ between the two stores
        return {(m.content, *v) for m in mem.list(user_id="u1") for k, v in state(mem).items() if k == m.id}

    assert content_state(crashed) == content_state(whole)
    assert not crashed.consolidate(user_id="u1").actions  # and nothing is left to do


def test_each_change_is_audited_by_consolidate(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    ids = _seed(mem)
    clock.at_day(40)
    report = mem.consolidate(user_id="u1")
    kinds = {(a.memory_id, a.action) for a in report.actions}
    assert (ids["old_mid"], "DECAY") in kinds
    assert (ids["old_low"], "DELETE") in kinds
    assert (ids["expiring"], "DELETE") in kinds
    assert not [a for a in report.actions if a.memory_id == ids["pinned"]]
    trail = mem.history(ids["old_mid"], user_id="u1")
    assert (trail[-1].kind, trail[-1].actor) == ("DECAY", "consolidate")
    assert trail[-1].before and trail[-1].after and trail[-1].after["score"] < trail[-1].before["score"]
    assert report.counts["decay"] >= 2 and set(report.counts) == set(STEPS)


def test_dry_run_shows_the_changes_and_writes_nothing(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    ids = _seed(mem)
    clock.at_day(40)
    before = state(mem)
    events = mem.stats(user_id="u1").events
    dry = mem.consolidate(user_id="u1", dry_run=True)
    assert state(mem) == before and mem.stats(user_id="u1").events == events
    assert not memory_path(mem, Scope.of("u1")).exists()
    real = mem.consolidate(user_id="u1")
    assert [(a.memory_id, a.action, a.after) for a in dry.actions] == [
        (a.memory_id, a.action, a.after) for a in real.actions]
    assert any(a.memory_id == ids["old_low"] and a.action == "DELETE" and "delete_below" in a.reason
               for a in dry.actions)


def test_semantic_duplicates_are_merged_into_the_better_one(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    weak = extracted(mem, "用户喜欢喝乌龙茶", "preference", "low")
    strong = extracted(mem, "用户喜欢喝乌龙茶。", "preference", "high")  # same words: similarity ≈ 1
    other = extracted(mem, "用户住在杭州西湖区", "fact", "medium")
    report = mem.consolidate(user_id="u1")
    left = {m.id: m for m in mem.list(user_id="u1")}
    assert set(left) == {strong.id, other.id}
    assert left[strong.id].metadata["merged"] == [weak.id] and left[strong.id].score == 0.8
    assert {(a.memory_id, a.action) for a in report.actions if a.step == "dedup"} == {
        (strong.id, "MERGE"), (weak.id, "DELETE")}
    assert "duplicate of" in mem.history(weak.id, user_id="u1")[-1].reason


def test_a_memory_flagged_distinct_is_never_merged(make_memory: MakeMemory) -> None:
    """A keyed record (a LangGraph store item) is not a restated fact: `metadata.distinct`
    keeps it out of dedup, as the one kept and as the duplicate, while other pairs merge."""
    mem = make_memory("default", clock=Clock())
    keyed = [mem.add("status: done", user_id="u1", metadata={"distinct": True}) for _ in range(2)]
    weak = extracted(mem, "用户喜欢喝乌龙茶", "preference", "low")
    strong = extracted(mem, "用户喜欢喝乌龙茶。", "preference", "high")
    again = mem.add("用户喜欢喝乌龙茶", user_id="u1", category="preference", metadata={"distinct": True})
    report = mem.consolidate(user_id="u1")
    left = {m.id for m in mem.list(user_id="u1")}
    assert {k.id for k in keyed} | {again.id, strong.id} <= left and weak.id not in left
    assert {(a.memory_id, a.action) for a in report.actions if a.step == "dedup"} == {
        (strong.id, "MERGE"), (weak.id, "DELETE")}


def test_the_queue_is_drained_first(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    mem.add_messages("s1", [{"role": "user", "content": "我对花生过敏，别推荐花生酱"}], user_id="u1")
    mem.jobs.enqueue(Scope.of("u1"), "s1", clock.now)
    assert mem.stats(user_id="u1").jobs_pending == 1
    dry = mem.consolidate(user_id="u1", dry_run=True)
    assert [a.action for a in dry.actions if a.step == "drain"] == ["EXTRACT"]
    report = mem.consolidate(user_id="u1")
    assert [j.status for j in report.jobs] == ["done"] and report.counts["drain"] == 1
    assert mem.stats(user_id="u1").jobs_pending == 0
    assert any("花生" in m.content for m in mem.list(user_id="u1"))


def test_every_scope_when_none_is_given_and_scopes_stay_apart(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    a = extracted(mem, "用户喜欢爵士乐", "preference", "low", user="alice")
    b = extracted(mem, "用户喜欢爵士乐", "preference", "low", user="bob")  # same text, other scope: no merge
    clock.at_day(30)
    report = mem.consolidate()
    assert {s.user_id for s in report.scopes} >= {"alice", "bob"}
    assert mem.get(a.id, user_id="alice").score == mem.get(b.id, user_id="bob").score < 0.4


def test_files_are_refreshed_and_a_persons_edit_survives(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("progressive", clock=clock)
    kept = extracted(mem, "用户喜欢用 Python 写脚本", "preference", "medium")
    gone = extracted(mem, "用户用过一次 Vue", "fact", "medium")
    touched = extracted(mem, "用户在学习法语", "fact", "medium")
    report = mem.consolidate(user_id="u1")
    path = memory_path(mem, Scope.of("u1"))
    assert str(path) in report.files and (path.parent / "USER.md").exists()
    # a person edits the file: raises one score, removes one entry, adds one
    text = path.read_text(encoding="utf-8")
    text = text.replace(f"[{kept.id}] preference | 0.60", f"[{kept.id}] preference | 0.95")
    text = text.replace(f"### [{gone.id}] fact | 0.60 | 2026-01-01 | 0\n用户用过一次 Vue\n", "")
    text = text.replace("## Archived Memories", "### fact | 0.7\n用户的猫叫团子\n\n## Archived Memories")
    path.write_text(text, encoding="utf-8")
    # meanwhile memlane itself changes another memory (the file is now behind on it)
    clock.advance(hours=1)
    with mem.store.transaction():
        cur = mem.get(touched.id, user_id="u1")
        mem.store.update_memory(cur.model_copy(update={"score": 0.7, "updated_at": clock.now}), content_changed=False)
        mem.store.add_event(Scope.of("u1"), touched.id, "BOOST", None, None, "extract:llm", "", clock.now)
    report = mem.consolidate(user_id="u1")
    left = {m.content: m for m in mem.list(user_id="u1")}
    assert left["用户喜欢用 Python 写脚本"].score == 0.95
    assert "用户用过一次 Vue" not in left
    assert "用户的猫叫团子" in left
    assert left["用户在学习法语"].score == 0.7  # the store's newer value is not reverted by the file
    assert sum(1 for a in report.actions if a.step == "import") == 3
    assert "0.95" in path.read_text(encoding="utf-8") and "用户的猫叫团子" in path.read_text(encoding="utf-8")


def test_scored_markdown_writes_memory_md_once_per_pass(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("scored-markdown", clock=clock)
    m = extracted(mem, "用户每天早上查看股票行情", "workflow", "high")
    clock.at_day(20)
    mem.consolidate(user_id="u1")
    text = memory_path(mem, Scope.of("u1")).read_text(encoding="utf-8")
    assert f"### [{m.id}] workflow | {0.8 * 0.99 ** 13:.2f} | 2026-01-01 | 0" in text
    assert not mem.signals.muted("memory.changed")  # the pass unmuted what it muted


def test_file_archive_archives_old_turns(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("file-archive", clock=clock)
    mem.add_messages("s1", [{"role": "user", "content": f"第{i}条消息：今天聊了部署的问题"} for i in range(5)],
                     user_id="u1")
    clock.at_day(8)
    report = mem.consolidate(user_id="u1")
    assert report.archived_turns == 5
    assert (mem.data_dir(user_id="u1") / "memory").is_dir()


def test_a_scope_being_extracted_is_left_for_the_next_run(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("default", clock=clock)
    extracted(mem, "用户喜欢爵士乐", "preference", "low")
    scope = Scope.of("u1")
    assert mem.jobs.lock.acquire(scope, "another-writer")
    clock.at_day(30)
    report = mem.consolidate(user_id="u1")
    assert report.locked == [scope] and not report.actions
    mem.jobs.lock.release(scope, "another-writer")
    assert mem.consolidate(user_id="u1").actions


# ---- scheduler -------------------------------------------------------------------------------


def test_scheduler_every_six_hours(make_memory: MakeMemory) -> None:
    clock = Clock()
    mem = make_memory("file-archive", clock=clock)
    extracted(mem, "用户喜欢爵士乐", "fact", "low")
    runs: list[ConsolidationReport] = []
    sched = Scheduler(mem, on_run=runs.append)
    assert sched.tick() is not None  # never ran: due at once
    assert sched.tick() is None
    clock.advance(hours=5, days=0)
    assert sched.tick() is None
    clock.advance(hours=1)
    assert sched.tick() is not None and len(runs) == 2
    assert Scheduler(mem).next_run(clock.now) == clock.now + timedelta(hours=6)  # kept in the store


def test_scheduler_nightly_at(make_memory: MakeMemory) -> None:
    clock = Clock()  # 09:00
    mem = make_memory("progressive", clock=clock)
    sched = Scheduler(mem)
    assert sched.tick() is not None  # today's 03:00 has passed and nothing ran yet
    assert sched.next_run(clock.now) == clock.now.replace(hour=3) + timedelta(days=1)
    clock.advance(hours=17)  # 02:00 next day
    assert sched.tick() is None
    clock.advance(hours=1)
    assert sched.tick() is not None


def test_scheduler_thread_starts_and_stops(make_memory: MakeMemory) -> None:
    mem = make_memory("default", lifecycle={"scheduler_poll_seconds": 0.01})
    done: list[ConsolidationReport] = []
    sched = Scheduler(mem, on_run=done.append)
    sched.start()
    try:
        for _ in range(500):
            if done:
                break
            import time

            time.sleep(0.01)
    finally:
        sched.stop()
    assert done


# ---- CLI -------------------------------------------------------------------------------------


def test_cli_consolidate_dry_run_json_and_table(make_memory: MakeMemory, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "cli"
    mem = make_memory("default", home=home)
    m = extracted(mem, "用户曾经问过一次天气", "fact", 0.03)
    mem.close()
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")
    runner = CliRunner()
    res = runner.invoke(app, ["--home", str(home), "consolidate", "--user", "u1", "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["dry_run"] and [(a["memory_id"], a["action"]) for a in data["actions"]] == [(m.id, "DELETE")]
    res = runner.invoke(app, ["--home", str(home), "consolidate", "--user", "u1", "--dry-run"])
    assert res.exit_code == 0 and m.id in res.stdout and "delete_below" in res.stdout
    res = runner.invoke(app, ["--home", str(home), "consolidate", "--all"])
    assert res.exit_code == 0 and "DELETE" in res.stdout
    res = runner.invoke(app, ["--home", str(home), "list", "--user", "u1", "--json"])
    assert json.loads(res.stdout) == []
    res = runner.invoke(app, ["--home", str(home), "consolidate", "--all", "--user", "u1"])
    assert res.exit_code == 2
