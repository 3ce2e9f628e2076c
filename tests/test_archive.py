"""Seed 000's file protocol: history.json caps and tri-state flag, age-based archiving with
slugs and back-off, and BM25 retrieval over the files."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory, ValidationError
from memlane.archive import (
    HistoryMessage,
    age_bucket,
    bm25_scores,
    enforce_caps,
    make_slug,
    search_files,
    tokens,
)
from memlane.config import ArchiveConfig, ContextConfig
from memlane.errors import BackendError
from memlane.events import Event
from memlane.testing import ManualClock, ScriptedLLM

JAN31 = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def say(memory: Memory, when: datetime, text: str, session: str = "s1", user: str = "u1") -> None:
    memory.add_messages(session, [{"role": "user", "content": text, "created_at": when.isoformat()}], user_id=user)


def history(memory: Memory, user: str = "u1") -> list[dict]:
    return json.loads((memory.data_dir(user_id=user) / "history.json").read_text(encoding="utf-8"))


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "memory").rglob("*.md"))


# ---- age buckets: seed 000's own example ----------------------------------------------------


def test_jan_31_december_is_daily_and_november_monthly() -> None:
    today = date(2026, 1, 31)
    assert age_bucket(date(2026, 1, 26), today) == "raw"  # exactly 5 days
    assert age_bucket(date(2026, 1, 25), today) == "daily"
    assert age_bucket(date(2025, 12, 1), today) == "daily"
    assert age_bucket(date(2025, 11, 30), today) == "monthly"


def test_feb_1_december_is_monthly() -> None:
    today = date(2026, 2, 1)
    assert age_bucket(date(2026, 1, 27), today) == "raw"
    assert age_bucket(date(2026, 1, 1), today) == "daily"
    assert age_bucket(date(2025, 12, 31), today) == "monthly"


@pytest.mark.parametrize(("now", "expected"), [
    (JAN31, ["memory/2026-01-30-deploy-cloudflare-workers.md", "memory/summary/2025-11.md",
             "memory/summary/2025-12-15.md", "memory/summary/2026-01-10.md"]),
    (datetime(2026, 2, 1, 12, 0, tzinfo=UTC),
     ["memory/2026-01-30-deploy-cloudflare-workers.md", "memory/summary/2025-11.md", "memory/summary/2025-12.md",
      "memory/summary/2026-01-10.md"]),
])
def test_archiving_writes_each_age_to_its_place(make_memory: Callable[..., Memory], now: datetime,
                                                expected: list[str]) -> None:
    memory = make_memory("file-archive", clock=ManualClock(now))
    say(memory, datetime(2025, 11, 20, 9, tzinfo=UTC), "我们讨论了年度预算")
    say(memory, datetime(2025, 11, 21, 9, tzinfo=UTC), "预算定为十万")
    say(memory, datetime(2025, 12, 15, 9, tzinfo=UTC), "圣诞节去哈尔滨旅行")
    say(memory, datetime(2026, 1, 10, 9, tzinfo=UTC), "用户偏好使用 pnpm 而非 npm")
    say(memory, datetime(2026, 1, 30, 9, tzinfo=UTC), "deploy to cloudflare workers hit a timeout on deploy")
    report = memory.archive(user_id="u1")
    root = memory.data_dir(user_id="u1")
    assert files(root) == expected
    assert report.archived == 5 and report.failed == 0
    assert [m["archived"] for m in history(memory)] == [True] * 5
    assert {t.archived for t in memory.get_turns(user_id="u1")} == {"true"}
    raw = (root / expected[0]).read_text(encoding="utf-8")
    assert raw.startswith("# 2026-01-30\n") and "deploy to cloudflare workers hit a timeout" in raw
    monthly = (root / "memory/summary/2025-11.md").read_text(encoding="utf-8")
    assert "年度预算" in monthly and "十万" in monthly


# ---- slugs ----------------------------------------------------------------------------------


def test_slug_rules() -> None:
    slug = make_slug("Deploy the API to Cloudflare Workers; deploy again", "a1b2c3d4e5")
    assert slug == "deploy-api-cloudflare"
    long = make_slug("internationalization localization configuration documentation", "x")
    assert len(long) <= 32 and re.fullmatch(r"[a-z0-9-]+", long)
    assert make_slug("用户偏好简洁的代码风格", "9F8E7D6C5B4A") == "mem-9f8e7d6c"
    assert make_slug("12345 2026 ！！", "abcdef0123") == "mem-abcdef01"
    taken = {"deploy-api", "deploy-api-2"}
    assert make_slug("deploy api", "x", taken.__contains__) == "deploy-api-3"
    full = "a" * 32
    assert make_slug("a" * 40, "x", {"mem-x", full}.__contains__) in ("mem-x-2",)
    assert make_slug(full, "x", {full}.__contains__) == "a" * 30 + "-2"


def test_same_day_files_never_collide(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(JAN31)
    memory = make_memory("file-archive", clock=clock)
    say(memory, datetime(2026, 1, 30, 9, tzinfo=UTC), "deploy notes")
    memory.archive(user_id="u1")
    say(memory, datetime(2026, 1, 30, 10, tzinfo=UTC), "deploy notes again")
    memory.archive(user_id="u1", force=True)
    assert files(memory.data_dir(user_id="u1")) == ["memory/2026-01-30-deploy-notes-2.md",
                                                    "memory/2026-01-30-deploy-notes.md"]


# ---- failure and back-off -------------------------------------------------------------------


def test_failed_summaries_back_off_and_end_in_a_backlog_event(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(JAN31)
    memory = make_memory("file-archive", clock=clock)
    memory.llm = ScriptedLLM(*[BackendError("LLM down")] * 6, "- 用户去了哈尔滨")
    backlog: list[Event] = []
    memory.events.subscribe("archive_backlog", backlog.append)
    say(memory, datetime(2025, 12, 15, 9, tzinfo=UTC), "圣诞节去哈尔滨旅行")
    delays = []
    for _ in range(6):
        report = memory.archive(user_id="u1")
        (msg,) = history(memory)
        assert report.failed == 1 and msg["archived"] is False
        assert memory.get_turns(user_id="u1")[0].archived == "false"
        next_at = datetime.fromisoformat(msg["archiveNextAt"])
        delays.append(int((next_at - clock.now).total_seconds()))
        assert memory.archive(user_id="u1").ran is False  # still backing off
        clock.now = next_at
    assert delays == [600, 1800, 7200, 21600, 43200, 86400]  # 10m → 30m → 2h → 6h → 12h, then longer
    assert [e.payload["attempts"] for e in backlog] == [5, 6]
    report = memory.archive(user_id="u1")
    (msg,) = history(memory)
    assert report.archived == 1 and msg["archived"] is True and "archiveAttempts" not in msg
    # by now (Feb 2) December is the month before last: the retry wrote a monthly summary
    assert "哈尔滨" in (memory.data_dir(user_id="u1") / "memory/summary/2025-12.md").read_text(encoding="utf-8")


# ---- triggers and caps ----------------------------------------------------------------------


def test_triggers_more_than_n_unarchived_or_six_hours(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(JAN31)
    memory = make_memory("file-archive", clock=clock, archive={"trigger_unarchived": 3})
    say(memory, JAN31, "one")
    assert memory.archive(user_id="u1").reason == "first run"
    for text in ("two", "three", "four"):
        say(memory, clock.now, text)
    assert memory.archive(user_id="u1").ran is False  # 3 is not more than 3
    say(memory, clock.now, "five")  # 4 > 3: the per-turn check (seed 000 每轮检查) archives at once
    assert [m["archived"] for m in history(memory)] == [True] * 5
    say(memory, clock.now, "six")
    clock.now += timedelta(hours=6)
    assert memory.archive(user_id="u1").reason == "6 hours since the last run"
    assert [m["archived"] for m in history(memory)] == [True] * 6


def msg(i: int, archived: object) -> HistoryMessage:
    return HistoryMessage(id=f"m{i:04d}", role="user", text=f"message {i}",
                          created_at=JAN31 + timedelta(minutes=i), archived=archived)  # type: ignore[arg-type]


def test_soft_cap_removes_the_oldest_archived_first() -> None:
    msgs = [msg(i, True) for i in range(150)] + [msg(i, False) for i in range(150, 250)]
    res = enforce_caps(msgs, ArchiveConfig())
    assert res.removed == 50 and len(msgs) == 200 and msgs[0].id == "m0050"
    assert not res.over_soft and not res.overflow


def test_caps_never_drop_unarchived_or_pending_messages() -> None:
    msgs = [msg(i, True) for i in range(10)] + [msg(i, "pending") for i in range(10, 160)] + \
           [msg(i, False) for i in range(160, 320)]
    res = enforce_caps(msgs, ArchiveConfig())
    assert len(msgs) == 310 and all(m.archived is not True for m in msgs)
    assert res.removed == 10 and res.over_soft and res.overflow
    small = [msg(i, False) for i in range(5)]
    assert enforce_caps(small, ArchiveConfig(history_hard_bytes=100)).overflow and len(small) == 5


def test_overflow_emits_an_event_and_forces_archiving(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("file-archive", clock=ManualClock(JAN31),
                         archive={"history_soft_cap": 4, "history_hard_cap": 6, "trigger_unarchived": 100})
    memory.llm = ScriptedLLM(BackendError("down"))
    overflow: list[Event] = []
    memory.events.subscribe("history_overflow", overflow.append)
    old = datetime(2026, 1, 10, 9, tzinfo=UTC)
    memory.add_messages("s1", [{"role": "user", "content": f"旧消息 {i}",
                                "created_at": (old + timedelta(minutes=i)).isoformat()} for i in range(8)], user_id="u1")
    # past the hard cap with nothing archived: the per-turn check emits history_overflow and
    # archives at once; the summaries fail, and nothing may be dropped
    assert overflow and overflow[0].payload["count"] == 8
    assert len(history(memory)) == 8 and all(m["archiveAttempts"] == 1 for m in history(memory))
    assert memory.archive(user_id="u1").events == ["history_overflow"]
    memory.llm.enqueue("- 旧消息")
    report = memory.archive(user_id="u1", force=True)
    assert report.archived == 8 and len(history(memory)) == 4  # trimmed to the soft cap once archived
    # trimmed turns stay out of history.json: the store says they are archived
    say(memory, JAN31, "new")
    memory.archive(user_id="u1", force=True)
    assert [m["text"] for m in history(memory)][-1] == "new" and len(history(memory)) == 4


def test_a_broken_history_file_is_reported_never_overwritten(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("file-archive", clock=ManualClock(JAN31))
    path = memory.data_dir(user_id="u1") / "history.json"
    path.parent.mkdir(parents=True)
    path.write_text("[{broken", encoding="utf-8")
    say(memory, JAN31, "hello")
    with pytest.raises(ValidationError, match="will not overwrite"):
        memory.archive(user_id="u1")
    assert path.read_text(encoding="utf-8") == "[{broken"


# ---- retrieval ------------------------------------------------------------------------------

CORPUS = ["用户偏好使用 pnpm 而非 npm", "deploy to cloudflare workers, deploy timeout", "pnpm deploy script"]


def test_bm25_scores_on_a_fixed_corpus() -> None:
    docs = [tokens(t) for t in CORPUS]
    assert [len(d) for d in docs] == [8, 6, 3]  # CJK bigrams + Latin words
    avgdl = 17 / 3

    def part(tf: int, dl: int) -> float:
        return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    idf_pnpm = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    idf_one = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    assert bm25_scores(docs, ["pnpm"]) == pytest.approx([idf_pnpm * part(1, 8), 0, idf_pnpm * part(1, 3)])
    assert bm25_scores(docs, ["pnpm"])[0] == pytest.approx(0.40225, abs=1e-5)
    scores = bm25_scores(docs, ["deploy", "timeout"])
    assert scores == pytest.approx([0, idf_pnpm * part(2, 6) + idf_one * part(1, 6), idf_pnpm * part(1, 3)])
    assert scores[1] == pytest.approx(1.59352, abs=1e-5)


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def test_search_ranks_files_excludes_merged_dailies_and_falls_back(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "## Active Memories\n\n### [a1] preference | 0.9 | 2026-01-01 | 1\n用户偏好使用 pnpm 而非 npm。\n")
    write(tmp_path, "memory/2026-01-28-deploy.md", "# 2026-01-28\n\n## 10:00 user\n上次部署使用了 Cloudflare Workers，遇到了超时问题")
    write(tmp_path, "memory/summary/2025-12-03.md", "# 2025-12-03 summary\n\n- 部署到 Cloudflare")
    write(tmp_path, "memory/summary/2025-12.md", "# 2025-12 summary\n\n- 十二月：部署 Cloudflare Workers")
    write(tmp_path, "memory/summary/2026-01-05.md", "# 2026-01-05 summary\n\n- 讨论了 pnpm workspace")
    cfg = ArchiveConfig()
    hits = search_files(tmp_path, ["部署", "cloudflare"], cfg)
    assert [h.path for h in hits] == ["memory/summary/2025-12.md", "memory/2026-01-28-deploy.md"]
    assert all(h.method == "bm25" and h.score >= 0.2 for h in hits)
    assert [h.path for h in search_files(tmp_path, ["pnpm"], cfg)] == ["memory/summary/2026-01-05.md", "MEMORY.md"]
    # BM25 finds no token "oudfl": the plain substring scan (seed 000's `rg`) answers
    (tmp_path / "memory/summary/2025-12.md").unlink()
    hits = search_files(tmp_path, ["oudfl", "zebra"], cfg)
    assert sorted(h.path for h in hits) == ["memory/2026-01-28-deploy.md", "memory/summary/2025-12-03.md"]
    assert {h.method for h in hits} == {"substring"}
    assert search_files(tmp_path, ["zebra"], cfg) == []


def test_archive_context_packs_tagged_cut_hits_within_budget(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("file-archive", clock=ManualClock(JAN31))
    root = memory.data_dir(user_id="u1")
    for i in range(7):
        write(root, f"memory/2026-01-2{i}-deploy.md", f"# x\n\ndeploy 部署 记录 {i} " + "很长的内容" * 100)
    block = memory.archive_context("上次部署怎么样？deploy", user_id="u1")
    lines = block.splitlines()
    assert lines[0] == "## Memory" and len(lines) == 6  # at most 5 hits
    assert all(re.match(r"\[memory/2026-01-2\d-deploy\.md\] deploy 部署", ln) for ln in lines[1:])
    assert all(ln.endswith("…[truncated]") and len(ln) < 360 for ln in lines[1:])
    assert memory.archive_context("完全无关 zebra", user_id="u1") == ""
    tight = make_memory("file-archive", home=memory.config.home, context={"memory_tokens": 400})
    assert len(tight.archive_context("deploy", user_id="u1").splitlines()) == 2
    assert ContextConfig().memory_max_hits == 5


def test_keywords_come_from_the_pending_input_and_recent_history(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory("file-archive", clock=ManualClock(JAN31))
    write(memory.data_dir(user_id="u1"), "MEMORY.md",
          "## Active Memories\n\n### [a1] fact | 0.9 | 2026-01-01 | 1\n用户的猫叫 mochi\n")
    say(memory, JAN31, "我们在聊 mochi")
    assert "mochi" in memory.archive_context("它今天怎么样", user_id="u1")
