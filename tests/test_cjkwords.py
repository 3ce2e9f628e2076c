"""Chinese query words without jieba's start-up (issue 14, cold start): the same words as
jieba's dictionary route, from a per-machine table that a fresh process maps instead of
unmarshalling jieba's half-million entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memlane import cjkwords
from memlane.text import CHINESE_STOP, keywords

SENTENCES = ["我最近去厦门旅游了厦门我最喜欢的景点是", "我对什么过敏", "你曾经教过我怎么做糖醋排骨",
             "我的一副画作被展览选中了", "张曼婷今天学了一道新的菜叫做清蒸鲈鱼", "北京大学生前来应聘",
             "结婚的和尚未结婚的", "他说的确实在理", "我想买一台笔记本电脑用来写代码", "上海的地铁很方便"]


@pytest.mark.parametrize("text", SENTENCES)
def test_the_route_is_jiebas(text: str) -> None:
    jieba = pytest.importorskip("jieba")
    assert cjkwords.route(text, cjkwords.dictionary()) == jieba.lcut(text, HMM=False)


def test_query_keywords() -> None:
    assert keywords("我对什么过敏") == ["过敏"]
    assert keywords("我最近去厦门旅游了，厦门我最喜欢的景点是？") == ["最近", "厦门", "旅游", "最", "喜欢", "景点"]
    # characters outside the dictionary stay together, as jieba's HMM would guess a word
    assert "曌瑛" in cjkwords.segment("曌瑛来了", cjkwords.dictionary(), CHINESE_STOP.__contains__)


CHILD = """
import json, sys, time
from memlane import Config, Memory
home = sys.argv[1]
m = Memory(Config.load(store={"home": home}, embedding={"provider": "hash", "background": False}))
if sys.argv[2] == "fill":
    m.add_messages("s", [{"role": "user", "content": "我对花生过敏，别推荐花生酱"}], user_id="u")
    m.flush()
hits = m.search("我对什么过敏？", user_id="u", corpus="turns", limit=3)
print(json.dumps({"hits": [h.content for h in hits], "jieba": "jieba" in sys.modules,
                  "grammars": "memlane.heuristic" in sys.modules}))
"""


def _child(home: Path, cache: Path, step: str) -> dict[str, object]:
    env = {**os.environ, "MEMLANE_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), step], env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_fresh_process_maps_the_table_and_never_loads_jieba(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _child(tmp_path / "home", cache, "fill")
    tables = list(cache.glob("cjkwords-*.npy"))
    assert first["hits"] == ["我对花生过敏，别推荐花生酱"] and len(tables) == 1
    assert first["jieba"] is False  # built from jieba's dict.txt without importing jieba
    assert first["grammars"] is True  # a user's turn is read for commands by the offline grammars
    stamp = tables[0].stat().st_mtime_ns
    second = _child(tmp_path / "home", cache, "search")
    assert second == first | {"grammars": False} and tables[0].stat().st_mtime_ns == stamp  # read, not rebuilt
    # a process that only reads never compiles the extractor's grammars (issue 34: ~0.4 s at start)


# a torn copy; an empty file (a crash between the rename and the data reaching the disk);
# the header alone: each is rebuilt, never trusted
DAMAGE = [lambda b: b[:1000], lambda b: b"", lambda b: b[:6]]


@pytest.mark.parametrize("damage", DAMAGE, ids=["torn", "empty", "magic-only"])
def test_a_damaged_or_unwritable_cache_still_segments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      damage: Callable[[bytes], bytes]) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(cache))
    cjkwords.dictionary.cache_clear()
    try:
        built = cjkwords.dictionary()
        (table,) = cache.glob("cjkwords-*.npy")
        table.write_bytes(damage(table.read_bytes()))
        cjkwords.dictionary.cache_clear()
        assert cjkwords.route("上海的地铁很方便", cjkwords.dictionary()) == cjkwords.route("上海的地铁很方便", built)
        assert table.stat().st_size > 1_000_000
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        monkeypatch.setenv("MEMLANE_CACHE_DIR", str(blocker / "cache"))
        cjkwords.dictionary.cache_clear()
        assert cjkwords.route("我对什么过敏", cjkwords.dictionary()) == ["我", "对", "什么", "过敏"]
    finally:
        cjkwords.dictionary.cache_clear()
