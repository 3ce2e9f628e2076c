from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlane import Config, Memory
from memlane.testing import HashEmbedder, ManualClock, ScriptedLLM

PROFILE_NAMES = ["default", "file-archive", "scored-markdown", "progressive", "companion", "consolidator"]


def make_config(home: Path, profile: str = "default", **overrides: Any) -> Config:
    overrides.setdefault("embedding", {})
    overrides["embedding"] = {"provider": "hash", "background": False, **overrides["embedding"]}
    overrides.setdefault("store", {})["home"] = str(home)
    # tests with a scripted LLM read its results right after end_session; the default
    # (background extraction) is tested in tests/test_reliability_jobs.py
    overrides["extraction"] = {"wait_for_llm": True, **overrides.get("extraction", {})}
    return Config.load(profile, **overrides)


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    made: list[Memory] = []

    def factory(profile: str = "default", home: Path | None = None, **kw: Any) -> Memory:
        embedder = kw.pop("embedder", None) or HashEmbedder()
        clock = kw.pop("clock", None)
        mem = Memory(make_config(home or tmp_path / "data", profile, **kw), embedder=embedder, clock=clock)
        made.append(mem)
        return mem

    yield factory
    for m in made:
        with contextlib.suppress(Exception):
            m.close()


T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)  # the scripted tests' start time


def ops(*items: dict[str, Any]) -> str:
    """An extraction reply, as the LLM would send it."""
    return json.dumps({"operations": list(items)}, ensure_ascii=False)


@pytest.fixture
def mem(make_memory: Callable[..., Memory]) -> Memory:
    """A memory whose LLM replies from a script and whose clock stands at T0 until moved."""
    m = make_memory(clock=ManualClock(T0))
    m.llm = ScriptedLLM()
    return m


@pytest.fixture
def memory(make_memory: Callable[..., Memory]) -> Memory:
    return make_memory()
