"""MEMORY.md (seed 001 §2.3, §7.1, §8.2) and USER.md (seed 002): format, tolerant parse,
atomic write with backup, and the two-way sync with the store."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory, ValidationError
from memlane.errors import BackendError
from memlane.markdown import (
    parse_memory_md,
    read_memory_file,
    read_memory_md,
    render_memory_md,
    scope_dir,
)
from memlane.models import MemoryRecord, Scope
from memlane.testing import ManualClock, ScriptedLLM

SEED_EXAMPLE = """# Agent Memory

<!-- Last updated: 2026-02-20T10:30:00 -->
<!-- Total entries: 15 -->

## Active Memories

### [a1b2c3] preference | 0.92 | 2026-02-20 | 12
用户喜欢简洁的代码风格，不喜欢过多注释

### [d4e5f6] fact | 0.88 | 2026-02-19 | 8
用户的主要开发语言是 Python，常用 FastAPI 框架

### [g7h8i9] workflow | 0.85 | 2026-02-20 | 15
用户每天早上 9 点查看 A 股行情，关注新能源板块

## Archived Memories

### [x1y2z3] fact | 0.18 | 2026-01-10 | 2
用户曾尝试用 Vue 写前端，但后来放弃了
"""


def record(id: str, content: str, score: float, category: str = "fact", **kw: object) -> MemoryRecord:
    t = datetime(2026, 2, 20, 10, 30, tzinfo=UTC)
    return MemoryRecord(id=id, user_id="u", content=content, category=category, score=score, created_at=t,
                        updated_at=t, last_activated=t, **kw)  # type: ignore[arg-type]


# ---- seed 001 §7.1: parsing and persistence ------------------------------------------------


def test_parses_every_field_of_the_seed_example() -> None:
    entries = parse_memory_md(SEED_EXAMPLE).entries
    assert [(e.id, e.category, e.score, e.last_activated, e.hits, e.archived) for e in entries] == [
        ("a1b2c3", "preference", 0.92, "2026-02-20", 12, False),
        ("d4e5f6", "fact", 0.88, "2026-02-19", 8, False),
        ("g7h8i9", "workflow", 0.85, "2026-02-20", 15, False),
        ("x1y2z3", "fact", 0.18, "2026-01-10", 2, True),
    ]
    assert entries[1].content == "用户的主要开发语言是 Python，常用 FastAPI 框架"
    assert parse_memory_md(SEED_EXAMPLE).last_updated == datetime(2026, 2, 20, 10, 30, tzinfo=UTC)


def test_empty_or_missing_file_is_an_empty_list(tmp_path: Path) -> None:
    assert read_memory_md(tmp_path / "nope.md") == []
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    assert read_memory_md(tmp_path / "empty.md") == []


def test_broken_entries_are_skipped_with_a_warning_and_the_rest_load(caplog: pytest.LogCaptureFixture) -> None:
    broken = SEED_EXAMPLE.replace("| 0.88 |", "| high |").replace("### [g7h8i9] workflow | 0.85 | 2026-02-20 | 15",
                                                                  "### [g7h8i9] workflow | 0.85")
    broken += "\n### [zz] fact | 0.5 | 2026-01-01 | 1\n\n### [] fact | 0.5 | 2026-01-01 | 1\ntext\n"
    with caplog.at_level(logging.WARNING, logger="memlane.markdown"):
        parsed = parse_memory_md(broken)
    assert [e.id for e in parsed.entries] == ["a1b2c3", "x1y2z3"]
    assert [(s.line, s.id) for s in parsed.skipped] == [(11, "d4e5f6"), (14, "g7h8i9"), (22, "zz"), (24, None)]
    assert [r.levelno for r in caplog.records] == [logging.WARNING] * 4


def test_crlf_unicode_pipes_and_multiline_content_survive() -> None:
    mems = [record("m1", "用户说：A | B | C\n第二行\n\n# 不是标题\n\\# 反斜杠", 0.7),
            record("m2", "Emoji 🎉 and ünïcödé", 0.5, "preference")]
    text = render_memory_md(mems, now=datetime(2026, 2, 20, tzinfo=UTC))
    for variant in (text, text.replace("\n", "\r\n"), text.replace("\n", "\r")):
        entries = parse_memory_md(variant).entries
        assert [(e.id, e.content) for e in entries] == [("m1", mems[0].content), ("m2", mems[1].content)]


def test_write_then_read_round_trips_and_keeps_a_backup(memory: Memory) -> None:
    a = memory.add("用户对花生过敏", user_id="u1", category="fact", importance="high")
    path = memory.md_export(user_id="u1")
    old = path.read_text(encoding="utf-8")
    b = memory.add("User prefers dark mode | always", user_id="u1", category="preference", importance="low")
    memory.md_export(user_id="u1")
    assert path.with_name("MEMORY.md.bak").read_text(encoding="utf-8") == old
    entries = read_memory_md(path)
    assert [(e.id, e.category, e.score, e.hits, e.content) for e in entries] == [
        (a.id, "fact", 0.8, 0, "用户对花生过敏"), (b.id, "preference", 0.4, 0, "User prefers dark mode | always")]
    assert not list(path.parent.glob(".MEMORY.md.*.tmp"))  # the temp file was renamed away


def test_active_and_archived_sections_split_at_0_2_and_sort_by_score() -> None:
    mems = [record("lo", "low", 0.19), record("mid", "mid", 0.5), record("hi", "high", 0.9),
            record("edge", "edge", 0.2), record("old", "archived by policy", 0.6, status="archived")]
    text = render_memory_md(mems, now=datetime(2026, 2, 20, tzinfo=UTC))
    entries = parse_memory_md(text).entries
    assert [e.id for e in entries if not e.archived] == ["hi", "mid", "edge"]
    assert [e.id for e in entries if e.archived] == ["old", "lo"]
    assert "<!-- Total entries: 5 -->" in text and text.startswith("# Agent Memory\n")


def test_scope_directories_are_safe_and_distinct(tmp_path: Path) -> None:
    dirs = {scope_dir(tmp_path, Scope.of(u, a)) for u, a in
            [("lin", None), ("Lin", None), ("../etc", None), ("林", None), ("lin", "bot"), ("lin", "Bot")]}
    assert len(dirs) == 6
    for d in dirs:
        assert d.resolve().is_relative_to((tmp_path / "scopes").resolve())
    assert scope_dir(tmp_path, Scope.of("lin", "bot")) == tmp_path / "scopes" / "lin" / "agents" / "bot"


# ---- sync both ways ------------------------------------------------------------------------


def _events(memory: Memory, user: str = "u1") -> int:
    return memory.stats(user_id=user).events


def test_export_then_import_without_edits_changes_nothing(memory: Memory) -> None:
    memory.add("用户对花生过敏", user_id="u1", category="fact", importance=0.8123)
    memory.add("line one\n### looks like a header\nline | three", user_id="u1", category="preference")
    memory.md_export(user_id="u1")
    before = (_events(memory), memory.list(user_id="u1"))
    assert memory.md_import(user_id="u1") == []
    assert (_events(memory), memory.list(user_id="u1")) == before


def test_edits_become_audited_operations(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(datetime(2026, 2, 20, 10, 0, tzinfo=UTC))
    memory = make_memory(clock=clock)
    keep = memory.add("用户喜欢简洁的代码风格", user_id="u1", category="preference", importance="high")
    edit = memory.add("用户的主要语言是 Python", user_id="u1", category="fact")
    rescore = memory.add("用户每天早上查看行情", user_id="u1", category="workflow")
    gone = memory.add("用户曾尝试 Vue", user_id="u1", category="fact", importance="low")
    path = memory.md_export(user_id="u1")
    clock.now += timedelta(minutes=5)
    text = path.read_text(encoding="utf-8")
    text = text.replace("用户的主要语言是 Python", "用户的主要语言是 Rust")
    text = text.replace(f"[{rescore.id}] workflow | 0.60", f"[{rescore.id}] workflow | 0.95")
    head = next(ln for ln in text.splitlines() if ln.startswith(f"### [{gone.id}]"))
    text = text.replace(f"{head}\n用户曾尝试 Vue\n", "")
    text = text.replace("## Archived Memories", "### todo | 0.7\n下周要准备演示材料\n\n### preference\nlikes tea\n\n## Archived Memories")
    path.write_text(text.replace("\n", "\r\n"), encoding="utf-8")

    ops = memory.md_import(user_id="u1")

    assert sorted((o.op, o.fields[0] if o.op == "UPDATE" else "") for o in ops) == [
        ("ADD", ""), ("ADD", ""), ("DELETE", ""), ("UPDATE", "content"), ("UPDATE", "score")]
    assert memory.get(edit.id, user_id="u1").content == "用户的主要语言是 Rust"
    assert memory.get(rescore.id, user_id="u1").score == 0.95
    assert memory.get(keep.id, user_id="u1").content == keep.content
    with pytest.raises(KeyError):
        memory.get(gone.id, user_id="u1")
    added = {m.content: m for m in memory.list(user_id="u1") if m.source == "import"}
    assert (added["下周要准备演示材料"].category, added["下周要准备演示材料"].score) == ("todo", 0.7)
    assert (added["likes tea"].category, added["likes tea"].score) == ("preference", 0.6)
    assert [e.actor for e in memory.history(edit.id, user_id="u1")] == ["api", "import"]
    assert [e.kind for e in memory.history(gone.id, user_id="u1")] == ["ADD", "DELETE"]
    # the file was rewritten: new entries carry their ids, so a second import is a no-op
    assert all(e.id for e in read_memory_md(path))
    assert memory.md_import(user_id="u1") == []


def test_a_broken_entry_is_not_read_as_deleted(memory: Memory) -> None:
    m = memory.add("用户对花生过敏", user_id="u1", category="fact")
    path = memory.md_export(user_id="u1")
    path.write_text(path.read_text(encoding="utf-8").replace("| 0.60 |", "| ??? |"), encoding="utf-8")
    assert memory.md_import(user_id="u1") == []
    assert memory.get(m.id, user_id="u1").content == "用户对花生过敏"


def test_memories_born_after_the_file_are_kept(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(datetime(2026, 2, 20, 10, 0, tzinfo=UTC))
    memory = make_memory(clock=clock)
    memory.add("old", user_id="u1")
    memory.md_export(user_id="u1")
    clock.now += timedelta(minutes=1)
    new = memory.add("written by the agent while a person edited the file", user_id="u1")
    assert memory.md_import(user_id="u1") == []
    assert memory.get(new.id, user_id="u1")


def test_bad_import_names_the_line_and_applies_nothing(memory: Memory) -> None:
    memory.add("keep me", user_id="u1")
    path = memory.md_export(user_id="u1")
    path.write_text(path.read_text(encoding="utf-8").replace("keep me", "changed") + "\n### nonsense | 0.5\nx\n",
                    encoding="utf-8")
    with pytest.raises(ValidationError, match="line 14: category"):
        memory.md_import(user_id="u1")
    assert [m.content for m in memory.list(user_id="u1")] == ["keep me"]
    path.write_text("", encoding="utf-8")
    with pytest.raises(ValidationError, match="refusing"):
        memory.md_import(user_id="u1")
    with pytest.raises(ValidationError, match="does not exist"):
        memory.md_import(path.with_name("missing.md"), user_id="u1")


def test_dry_run_plans_without_writing(memory: Memory) -> None:
    m = memory.add("before", user_id="u1")
    path = memory.md_export(user_id="u1")
    path.write_text(path.read_text(encoding="utf-8").replace("before", "after"), encoding="utf-8")
    ops = memory.md_import(user_id="u1", dry_run=True)
    assert [(o.op, o.memory_id, o.before, o.content) for o in ops] == [("UPDATE", m.id, "before", "after")]
    assert memory.get(m.id, user_id="u1").content == "before"


def test_scored_markdown_rewrites_memory_md_on_every_save(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("scored-markdown")
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    m = memory.add("用户喜欢用中文交流", user_id="u1", category="preference", importance="high")
    assert [e.id for e in read_memory_md(path)] == [m.id]
    memory.update(m.id, user_id="u1", score=0.1)
    assert [e.archived for e in read_memory_md(path)] == [True]
    memory.delete(m.id, user_id="u1")
    assert read_memory_md(path) == [] and read_memory_file(path).has_sections


def test_default_profile_writes_no_file_on_save(memory: Memory) -> None:
    memory.add("x", user_id="u1")
    assert not (memory.data_dir(user_id="u1") / "MEMORY.md").exists()


# ---- USER.md --------------------------------------------------------------------------------


def test_user_md_offline_groups_profile_memories(memory: Memory) -> None:
    memory.add("用户喜欢简洁的代码风格", user_id="u1", category="preference", importance="high")
    memory.add("用户的公司叫 Acme", user_id="u1", category="fact")
    memory.add("用户每天早上查看股票行情", user_id="u1", category="workflow")
    memory.add("下周准备演示", user_id="u1", category="todo")
    text = memory.user_profile(user_id="u1").read_text(encoding="utf-8")
    assert text.startswith("# User Profile\n")
    sections = text.split("## ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["Preferences", "Facts", "Habits and workflows"]
    assert "用户的公司叫 Acme" in sections[1] and "下周准备演示" not in text


def test_user_md_uses_the_llm_and_falls_back_when_it_fails(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    memory.llm = ScriptedLLM("## Preferences\n- 喜欢简洁", BackendError("down"))
    memory.add("用户喜欢简洁的代码风格", user_id="u1", category="preference")
    text = memory.user_profile(user_id="u1").read_text(encoding="utf-8")
    assert "- 喜欢简洁" in text and "LLM scripted" in text
    assert "用户喜欢简洁的代码风格" in memory.llm.calls[0]["messages"][1]["content"]
    text = memory.user_profile(user_id="u1").read_text(encoding="utf-8")
    assert "- 用户喜欢简洁的代码风格" in text and "LLM failed" in text
