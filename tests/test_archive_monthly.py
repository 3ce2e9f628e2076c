"""Seed 000: a monthly summary supersedes exactly the daily summaries it merged (issue 13: a
late-December message made 2025-12.md from itself alone and hid the December 15 daily)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from memlane import Memory
from memlane.archive import search_files
from memlane.config import ArchiveConfig
from memlane.testing import ManualClock
from tests.test_archive import JAN31, files, say, write


def test_a_monthly_summary_merges_the_dailies_it_hides(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(JAN31)
    memory = make_memory("file-archive", clock=clock)
    root = memory.data_dir(user_id="u1")
    say(memory, datetime(2025, 12, 15, 9, tzinfo=UTC), "圣诞节去哈尔滨旅行，订了冰雪大世界的票")
    memory.archive(user_id="u1", force=True)
    assert "memory/summary/2025-12-15.md" in files(root)
    # a late-December message archived only in February: December is now monthly
    clock.now = datetime(2026, 2, 2, 12, tzinfo=UTC)
    say(memory, datetime(2025, 12, 30, 20, tzinfo=UTC), "跨年夜准备在杭州看烟花", session="s2")
    memory.archive(user_id="u1", force=True)
    monthly = (root / "memory/summary/2025-12.md").read_text(encoding="utf-8")
    assert "哈尔滨" in monthly and "烟花" in monthly  # built from the daily and the new message
    assert (root / "memory/summary/2025-12-15.md").exists()  # seed 000: the source file stays
    cfg = ArchiveConfig()
    assert [h.path for h in search_files(root, ["哈尔滨"], cfg)] == ["memory/summary/2025-12.md"]
    # a later run for the same month keeps the record and adds nothing twice
    say(memory, datetime(2025, 12, 31, 23, tzinfo=UTC), "元旦去看了日出", session="s3")
    memory.archive(user_id="u1", force=True)
    again = (root / "memory/summary/2025-12.md").read_text(encoding="utf-8")
    assert "日出" in again and again.count("哈尔滨") == monthly.count("哈尔滨")


def test_only_the_recorded_dailies_are_hidden(tmp_path: Path) -> None:
    write(tmp_path, "memory/summary/2025-12-03.md", "# 2025-12-03 summary\n\n- 部署到 Cloudflare")
    write(tmp_path, "memory/summary/2025-12-20.md", "# 2025-12-20 summary\n\n- 部署 Cloudflare 又超时了")
    write(tmp_path, "memory/summary/2025-12.md",
          "# 2025-12 summary\n<!-- merged: 2025-12-03.md -->\n\n- 十二月：部署 Cloudflare Workers")
    hits = search_files(tmp_path, ["部署", "cloudflare"], ArchiveConfig())
    assert sorted(h.path for h in hits) == ["memory/summary/2025-12-20.md", "memory/summary/2025-12.md"]
    # a monthly summary that merged nothing hides nothing
    write(tmp_path, "memory/summary/2025-12.md", "# 2025-12 summary\n<!-- merged:  -->\n\n- 十二月：部署 Cloudflare")
    hits = search_files(tmp_path, ["部署", "cloudflare"], ArchiveConfig())
    assert len(hits) == 3
