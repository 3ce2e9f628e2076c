"""MEMORY.md as the editable primary store seed 001 promises (§2.3, §8.1: "用户可以直接用编辑器
查看、修改记忆内容"; §8.6: "用户可随时删除或编辑 MEMORY.md"): a person's edit is read in before
memlane writes the file again — after add, update, delete, extraction and consolidation, and
while another process writes — and a file in the seed's own format keeps its ids, scores,
dates and hit counts when imported. Also seed 000's `## Memory` heading under file-archive."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory
from memlane.markdown import can_exchange, read_memory_file, read_memory_md
from memlane.testing import ManualClock, ScriptedLLM
from tests.conftest import PROFILE_NAMES, T0, make_config, ops
from tests.test_markdown import SEED_EXAMPLE

SEED_FIELDS = [  # id, category, score, last_activated, hits, status
    ("a1b2c3", "preference", 0.92, "2026-02-20", 12, "active"),
    ("d4e5f6", "fact", 0.88, "2026-02-19", 8, "active"),
    ("g7h8i9", "workflow", 0.85, "2026-02-20", 15, "active"),
    ("x1y2z3", "fact", 0.18, "2026-01-10", 2, "archived"),
]

# seed 001's MEMORY.md is primary under scored-markdown; any profile can turn it on
PRIMARY = {"lifecycle": {"markdown_primary": True}}


def primary(make_memory: Callable[..., Memory], profile: str, **kw: object) -> Memory:
    return make_memory(profile, **({} if profile == "scored-markdown" else PRIMARY), **kw)


def cat(memory: Memory) -> str:
    return memory.config.policy.default_category


def fields(memory: Memory, user: str = "u1") -> list[tuple[str, str, float, str, int, str]]:
    return sorted((m.id, m.category, m.score, m.last_activated.date().isoformat(), m.activation_count, m.status)
                  for m in memory.list(user_id=user))


def edit(path: Path, text: str) -> None:
    """What an editor does: write a copy, rename it over the file."""
    tmp = path.with_name(".edit.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def block_of(text: str, memory_id: str) -> str:
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith(f"### [{memory_id}]"))
    return "\n".join(lines[i:i + 3]) + "\n"


# ---- a person's edit survives memlane's next write ----------------------------------------------


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_a_hand_edit_survives_the_next_add(make_memory: Callable[..., Memory], profile: str) -> None:
    memory = primary(make_memory, profile)
    keep = memory.add("用户的主要语言是 Python", user_id="u1", category=cat(memory))
    gone = memory.add("用户曾尝试 Vue", user_id="u1", category=cat(memory))
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    text = path.read_text(encoding="utf-8").replace("用户的主要语言是 Python", "用户的主要语言是 Rust")
    text = text.replace(block_of(text, gone.id), "")
    text = text.replace("## Archived Memories", f"### {cat(memory)} | 0.7\n下周要准备演示材料\n\n## Archived Memories")
    edit(path, text)

    new = memory.add("用户喜欢喝茶", user_id="u1", category=cat(memory))

    assert sorted(m.content for m in memory.list(user_id="u1")) == sorted(
        ["用户的主要语言是 Rust", "下周要准备演示材料", "用户喜欢喝茶"])
    assert [(e.kind, e.actor) for e in memory.history(keep.id, user_id="u1")] == [("ADD", "api"), ("UPDATE", "import")]
    assert [(e.kind, e.actor) for e in memory.history(gone.id, user_id="u1")] == [("ADD", "api"), ("DELETE", "import")]
    on_disk = {e.content: e for e in read_memory_md(path)}
    assert set(on_disk) == {"用户的主要语言是 Rust", "下周要准备演示材料", "用户喜欢喝茶"}
    assert on_disk["用户喜欢喝茶"].id == new.id and all(e.id for e in on_disk.values())
    assert path.with_name("MEMORY.md.bak").read_text(encoding="utf-8") == text  # seed 001 §7.1: the old version


def test_a_hand_edit_survives_update_delete_and_consolidate(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(T0)
    memory = make_memory("scored-markdown", clock=clock)
    a = memory.add("用户喜欢简洁的代码风格", user_id="u1", category="preference")
    b = memory.add("用户每天早上查看行情", user_id="u1", category="workflow")
    c = memory.add("用户曾尝试 Vue", user_id="u1", category="fact")
    path = memory.data_dir(user_id="u1") / "MEMORY.md"

    edit(path, path.read_text(encoding="utf-8").replace("简洁的代码风格", "简洁的代码风格，不喜欢过多注释"))
    memory.update(b.id, user_id="u1", score=0.9)
    assert memory.get(a.id, user_id="u1").content == "用户喜欢简洁的代码风格，不喜欢过多注释"

    edit(path, path.read_text(encoding="utf-8").replace(f"[{b.id}] workflow | 0.90", f"[{b.id}] workflow | 0.95"))
    memory.delete(c.id, user_id="u1")
    assert memory.get(b.id, user_id="u1").score == 0.95

    edit(path, path.read_text(encoding="utf-8") + "\n### todo | 0.7\n下周三有产品评审会议\n")
    clock.now += timedelta(days=1)
    report = memory.consolidate(user_id="u1")
    assert report.errors == []
    assert [e.content for e in read_memory_md(path)].count("下周三有产品评审会议") == 1
    assert sorted(m.content for m in memory.list(user_id="u1")) == sorted(
        ["用户喜欢简洁的代码风格，不喜欢过多注释", "用户每天早上查看行情", "下周三有产品评审会议"])


def test_extraction_rewrites_memory_md_after_reading_the_hand_edit(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("scored-markdown", clock=ManualClock(T0))
    memory.llm = llm = ScriptedLLM()
    old = memory.add("用户偏好用 unittest", user_id="u1", category="preference")
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    edit(path, path.read_text(encoding="utf-8").replace("用户偏好用 unittest", "用户偏好用 pytest 而非 unittest"))
    llm.enqueue(ops({"op": "ADD", "content": "用户提到下周三有产品评审会议", "category": "todo", "importance": "high"}))
    memory.add_messages("s1", [{"role": "user", "content": "下周三有产品评审会议，帮我记一下要准备的材料"}],
                        user_id="u1")

    report = memory.end_session("s1", user_id="u1")

    assert report is not None
    file = {e.content: e for e in read_memory_md(path)}
    assert set(file) == {"用户偏好用 pytest 而非 unittest", "用户提到下周三有产品评审会议"}
    assert (file["用户提到下周三有产品评审会议"].category, file["用户提到下周三有产品评审会议"].score) == ("todo", 0.8)
    assert memory.get(old.id, user_id="u1").content == "用户偏好用 pytest 而非 unittest"


def test_a_file_that_cannot_be_imported_is_left_for_the_person(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("scored-markdown")
    memory.add("用户喜欢喝茶", user_id="u1", category="preference")
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    typo = path.read_text(encoding="utf-8") + "\n### prefrence | 0.7\n用户喜欢绿茶\n"
    edit(path, typo)
    added = memory.add("用户住在杭州", user_id="u1", category="fact")  # the add itself is not refused
    assert path.read_text(encoding="utf-8") == typo
    edit(path, typo.replace("prefrence", "preference"))
    memory.update(added.id, user_id="u1", score=0.7)
    assert sorted(e.content for e in read_memory_md(path)) == ["用户住在杭州", "用户喜欢喝茶", "用户喜欢绿茶"]


EDITOR_ADDER = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.conftest import make_config
from memlane import Memory
m = Memory(make_config(Path({home!r}), "scored-markdown"))
end = time.time() + {seconds}
n = 0
while time.time() < end:
    m.add(f"agent note {{n}} {{time.time()}}", user_id="u1", category="fact")
    n += 1
print(n)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the race-free swap needs renameat2 (elsewhere a µs window)")
def test_hand_edits_survive_another_process_adding_all_the_time(tmp_path: Path) -> None:
    home, root = tmp_path / "home", str(Path(__file__).parent.parent)
    first = Memory(make_config(home, "scored-markdown"))
    first.add("seed memory", user_id="u1", category="fact")
    path = first.data_dir(user_id="u1") / "MEMORY.md"
    first.close()
    if not can_exchange(path.parent):
        pytest.skip("this file system cannot exchange two files atomically")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    adder = subprocess.Popen([sys.executable, "-c", EDITOR_ADDER.format(root=root, home=str(home), seconds=5)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wanted = []
    deadline = time.time() + 4
    while time.time() < deadline:  # a person: read the file, add an entry, save (as editors do)
        n = len(wanted)
        text = path.read_text(encoding="utf-8")
        edit(path, text + f"\n### preference | 0.7\nhand edit {n}\n")
        wanted.append(f"hand edit {n}")
        time.sleep(0.05)
    out, err = adder.communicate(timeout=60)
    assert adder.returncode == 0, err
    memory = Memory(make_config(home, "scored-markdown"))
    try:
        memory.add("one more write reads the last edit in", user_id="u1", category="fact")
        assert int(out) > 20 and len(wanted) > 20
        contents = [m.content for m in memory.list(user_id="u1")]
        assert [w for w in wanted if contents.count(w) != 1] == []
        assert [w for w in wanted if w not in {e.content for e in read_memory_md(path)}] == []
    finally:
        memory.close()


# ---- seed 001's own format imported as it is -----------------------------------------------------


@pytest.mark.parametrize("profile", ["scored-markdown", "default"])
def test_a_seed_format_file_keeps_ids_scores_dates_and_hits(make_memory: Callable[..., Memory], profile: str,
                                                            tmp_path: Path) -> None:
    memory = make_memory(profile, clock=ManualClock(datetime(2026, 3, 1, tzinfo=UTC)))
    source = tmp_path / "everbot" / "MEMORY.md"
    source.parent.mkdir()
    source.write_text(SEED_EXAMPLE, encoding="utf-8")

    done = memory.md_import(source, user_id="u1")

    assert [(o.op, o.memory_id) for o in done] == [("ADD", i) for i, *_ in SEED_FIELDS]
    assert fields(memory) == SEED_FIELDS
    assert [e.actor for e in memory.history("a1b2c3", user_id="u1")] == ["import"]
    assert memory.md_import(source, user_id="u1") == []
    # written back as the seed draws it: same heads
    out = memory.md_export(user_id="u1").read_text(encoding="utf-8")
    assert [ln for ln in out.splitlines() if ln.startswith("###")] == [
        ln for ln in SEED_EXAMPLE.splitlines() if ln.startswith("###")]


def test_a_seed_file_dropped_in_under_scored_markdown_is_read_at_the_next_save(
        make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("scored-markdown", clock=ManualClock(datetime(2026, 3, 1, tzinfo=UTC)))
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text(SEED_EXAMPLE, encoding="utf-8")
    new = memory.add("用户喜欢喝茶", user_id="u1", category="preference")
    assert [f for f in fields(memory) if f[0] != new.id] == SEED_FIELDS
    assert {e.id for e in read_memory_md(path)} == {new.id, *(f[0] for f in SEED_FIELDS)}
    assert read_memory_file(path).token is not None


def test_seed_ids_in_use_deleted_or_malformed(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    memory = make_memory("scored-markdown")
    source = tmp_path / "MEMORY.md"
    source.write_text(SEED_EXAMPLE, encoding="utf-8")
    memory.md_import(source, user_id="u2")  # another user's memories now hold these ids
    done = memory.md_import(source, user_id="u3")
    assert [(o.op, "already in use" in o.reason) for o in done] == [("ADD", True)] * 4
    assert {m.id for m in memory.list(user_id="u3")}.isdisjoint({f[0] for f in SEED_FIELDS})
    assert sorted((m.content, m.score, m.activation_count) for m in memory.list(user_id="u3")) == sorted(
        (m.content, m.score, m.activation_count) for m in memory.list(user_id="u2"))

    odd = tmp_path / "odd.md"
    odd.write_text("## Active Memories\n\n### [bad id!] fact | 0.5 | 2026-02-20 | 3\n用户住在杭州\n\n"
                   f"### [{'x' * 65}] fact | 0.5 | 2026-02-20 | 3\n用户养了一只猫\n", encoding="utf-8")
    done = memory.md_import(odd, user_id="u5")
    assert [(o.op, "not a memory id" in o.reason) for o in done] == [("ADD", True), ("ADD", True)]
    assert sorted((m.content, m.activation_count) for m in memory.list(user_id="u5")) == [
        ("用户住在杭州", 3), ("用户养了一只猫", 3)]


def test_a_deleted_seed_id_is_not_brought_back(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    memory = make_memory("scored-markdown")
    source = tmp_path / "MEMORY.md"
    source.write_text(SEED_EXAMPLE, encoding="utf-8")
    memory.md_import(source, user_id="u1")
    memory.delete("a1b2c3", user_id="u1")
    done = memory.md_import(source, user_id="u1")
    assert [(o.op, o.memory_id) for o in done if o.op != "SKIP"] == []
    assert "a1b2c3" not in {m.id for m in memory.list(user_id="u1")}


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_save_then_load_into_a_new_store_round_trips(make_memory: Callable[..., Memory], profile: str,
                                                     tmp_path: Path) -> None:
    """Seed 001 §7.1 "全量写入后重新解析": save → load gives the same entries, here across stores."""
    clock = ManualClock(T0)
    source = make_memory(profile, home=tmp_path / "a", clock=clock)
    for i, score in enumerate((0.92, 0.5, 0.18)):
        source.add(f"memory number {i}", user_id="u1", category=cat(source), importance=score)
        clock.now += timedelta(days=1)
    path = source.md_export(user_id="u1")
    target = make_memory(profile, home=tmp_path / "b", clock=clock)
    target.md_import(path, user_id="u1")
    assert [(m.id, m.content, m.category, round(m.score, 2), m.last_activated.date(), m.activation_count)
            for m in target.list(user_id="u1")] == [
        (m.id, m.content, m.category, m.score, m.last_activated.date(), m.activation_count)
        for m in source.list(user_id="u1")]
    # under the profile's archive line (0.2 seed 001's, 0.1 seed 003's): in MEMORY.md's archive
    low = "archived" if source.config.policy.archive_below > 0.18 else "active"
    assert [m.status for m in target.list(user_id="u1")] == ["active", "active", low]


# ---- seed 000's heading -----------------------------------------------------------------------


@pytest.mark.parametrize(("profile", "extra", "heading"), [
    ("file-archive", {}, "## Memory"),
    ("default", {}, "## Relevant memories"),
    ("default", {"context": {"memory_heading": "## Memory"}}, "## Memory"),
])
def test_injected_memory_heading(make_memory: Callable[..., Memory], profile: str, extra: dict[str, object],
                                 heading: str) -> None:
    memory = make_memory(profile, **extra)
    memory.add("The user prefers pnpm over npm", user_id="u1", importance="low")  # below the core block
    text = memory.build_context(None, "which package manager, pnpm or npm?", user_id="u1").block("memories").text
    assert text.splitlines()[0] == heading


def test_an_edit_of_a_file_older_than_the_kept_manifests_still_counts(make_memory: Callable[..., Memory]) -> None:
    """A person kept the file open while the agent saved more often than manifests are kept."""
    memory = make_memory("scored-markdown", lifecycle={"md_manifests_kept": 2})
    a = memory.add("用户偏好用 unittest", user_id="u1", category="preference")
    b = memory.add("用户每天早上查看行情", user_id="u1", category="workflow")
    path = memory.data_dir(user_id="u1") / "MEMORY.md"
    opened = path.read_text(encoding="utf-8")  # the editor's buffer
    memory.update(b.id, user_id="u1", score=0.9)
    for i in range(3):
        memory.add(f"agent note {i}", user_id="u1", category="fact")

    edit(path, opened.replace("用户偏好用 unittest", "用户偏好用 pytest"))
    memory.add("one more", user_id="u1", category="fact")

    assert memory.get(a.id, user_id="u1").content == "用户偏好用 pytest"  # differs from every version: a person's
    assert memory.get(b.id, user_id="u1").score == 0.9  # the buffer's 0.60 is an older version: stale
    assert len(memory.list(user_id="u1")) == 6  # and without the manifest nothing is read as removed


def test_decay_at_merge_shows_in_memory_md(make_memory: Callable[..., Memory]) -> None:
    """Seed 001 §3.4: each merge decays every memory and writes MEMORY.md back."""
    clock = ManualClock(T0)
    memory = make_memory("scored-markdown", clock=clock)
    memory.llm = llm = ScriptedLLM()
    old = memory.add("用户喜欢简洁的代码风格", user_id="u1", category="preference", importance=0.6)
    clock.now += timedelta(days=30)
    llm.enqueue(ops())
    memory.add_messages("s1", [{"role": "user", "content": "今天天气不错，我们随便聊聊吧，没什么要记的"}], user_id="u1")
    memory.end_session("s1", user_id="u1")
    score = memory.get(old.id, user_id="u1").score
    assert score == pytest.approx(0.6 * 0.99 ** 23, abs=1e-3)
    [entry] = read_memory_md(memory.data_dir(user_id="u1") / "MEMORY.md")
    assert entry.score == round(score, 2)


def test_the_file_archive_profile_injects_only_its_hits(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    """Seed 000: the prompt's memory is `## Memory` and its `[file] line` hits, nothing else — no
    block of the best memories whatever the question (seed 001's), no tool instructions (its
    agent does not query further); an unrelated question gets no memory text at all."""
    chat = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]
    memory = make_memory("file-archive")
    blended = make_memory("default", home=tmp_path / "default")
    for m in (memory, blended):
        m.add("用户对花生过敏", user_id="u1", importance="high")
        m.add("The user prefers pnpm over npm.", user_id="u1", importance="high")
        m.add_messages("s", chat, user_id="u1")
    assert memory.build_context("s", "今天天气怎么样", user_id="u1").render(include_history=False).strip() == ""
    assert memory.build_context("s", "我对什么过敏？", user_id="u1").render(include_history=False).strip() == \
        "## Memory\n[MEMORY.md] 用户对花生过敏"
    # the blended profile keeps both: its core block shows the two whatever the question
    assert "用户对花生过敏" in blended.build_context("s", "今天天气怎么样", user_id="u1").render(include_history=False)
