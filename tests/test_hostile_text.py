"""Hostile text against the offline extractor: costs that grew faster than the turn. Speed is
measured in bench/hostile_text.py; these check the shape (how many times a turn is segmented,
where a pattern may start a match), never a time."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import (
    Config,
    Memory,
    changes,
    cjkwords,
    clauses,
    en_clauses,
    roles,
    spoken,
    statements,
    topics,
)


def _segmented(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, n: int) -> int:
    """Calls to the Chinese segmenter while one turn of `n` moves is extracted."""
    cfg = Config.load("default", store={"home": str(tmp_path / str(n))},
                      embedding={"provider": "hash", "background": False})
    m = Memory(cfg)
    try:
        m.add_messages("s1", [{"role": "user", "content": "我住在上海。" + "".join(f"我搬到城市{i}了。" for i in range(n))}],
                       user_id="u1")
        calls = _count_segments(monkeypatch)
        m.end_session("s1", user_id="u1")
        monkeypatch.undo()
        assert len(m.list(user_id="u1", limit=1000)) >= n // 2  # the moves were read
    finally:
        m.close()
    return calls[0]


def _count_segments(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, each call of the Chinese segmenter counted in the one-item list returned."""
    calls = [0]
    real = cjkwords.segment

    def counted(*args: object, **kw: object) -> list[str]:
        calls[0] += 1
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cjkwords, "segment", counted)
    return calls


def test_a_long_turn_of_changes_is_segmented_linearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # each memory once dated itself by segmenting the whole turn again: calls grew as n²
    small, large = _segmented(monkeypatch, tmp_path, 15), _segmented(monkeypatch, tmp_path, 45)
    assert large < 4 * small  # linear: ~3×; quadratic: ~9×


def test_said_at_reads_each_turn_once_for_the_jobs_memories(monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    turns = [("我住在上海。" + "".join(f"我搬到城市{i}了。" for i in range(40)), t0),
             ("我搬到杭州了。", t0 + timedelta(minutes=1)), ("I moved to Berlin.", t0 + timedelta(minutes=2))]
    heard = changes.Heard()
    first = [changes.said_at(c, turns, heard) for c in ("用户搬到杭州", "The user moved to Berlin.", "用户搬到城市3")]
    calls = _count_segments(monkeypatch)
    again = [changes.said_at(c, turns, heard) for c in ("用户搬到杭州", "The user moved to Berlin.", "用户搬到城市3")]
    assert again == first == [t0 + timedelta(minutes=1), t0 + timedelta(minutes=2), t0]
    assert calls[0] <= 6  # the memories' own words only: the turns were read already


# patterns tried from every character of a run (of spaces, commas, digits, \w) were quadratic
# in its length: each now starts a match only where such a run begins
_RUNS: list[tuple[re.Pattern[str], str, int, int]] = [
    (spoken._EN_MARKER, "Paris    sorry, Lyon", 5, 7),
    (spoken._EN_MARKER, "Paris,,,, no, Lyon", 5, 7),
    (spoken._EN_I, "so    I moved", 2, 4),
    (spoken._EN_OPENER, "moved    also", 5, 7),
    (spoken._ZH_MARKER, "3号，，，不对，是4号", 2, 3),
    (spoken._ZH_VALUE, "11111号", 0, 2),
    (spoken._LAST_QUESTION, "ok. want more?", 3, 5),
    (statements._THANKS_END, "好的   谢谢", 2, 4),
    (statements._EN_CORRECTION, "Lyonnais, not Paris", 0, 3),
    (statements.EN_VALUE_END, "cashews    so no", 7, 9),
    (statements.EN_TRAILING, "done ----", 4, 6),
    (en_clauses._EN_SPLIT, "tea    and coffee", 3, 5),
    (en_clauses._PERSON, "mom's friend", 0, 2),
    (topics._CONTINUES, "333页", 0, 1),
    (topics._EN_SUBJECT, "adding", 0, 2),
]


@pytest.mark.parametrize(("pattern", "text", "start", "inside"), _RUNS)
def test_patterns_start_only_where_a_run_begins(pattern: re.Pattern[str], text: str, start: int, inside: int) -> None:
    assert pattern.match(text, start) is not None
    assert pattern.match(text, inside) is None


def test_hostile_runs_read_as_before() -> None:
    """What the patterns find on long runs is unchanged: a repair still applies after them, a
    run of spaces with no marker is left alone."""
    assert spoken.repaired("I" + " " * 5000 + "moved to Paris.") == "I" + " " * 5000 + "moved to Paris."
    assert spoken.repaired("on the 2nd" + " " * 300 + "no wait the 9th of June") == "on the 9th of June"
    assert spoken.repaired("下个月3号要去成都出差，，，，哦不对，是4号") == "下个月4号要去成都出差"
    assert clauses._EN_LEAD.match("1" * 3000 + "x") is None


def test_a_headline_role_s_place_is_read_word_by_word() -> None:
    """The place after a role ("nurse in Ohio") is whole words: a pattern that could cut one long
    word into pieces tried every cut (60 letters and a "?" took hours), so this returns at once
    or never."""
    assert roles.headline_role("nurse in " + "a" * 60 + "?") is None
    assert roles.headline_role("nurse in " + "a " * 5000 + "?") is None
    assert roles.headline_role("nurse in " + "a" * 60 + ", night shifts") == "nurse in " + "a" * 60
