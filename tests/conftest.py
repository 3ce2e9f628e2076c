from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memlane import Config, Memory
from memlane.testing import HashEmbedder

PROFILE_NAMES = ["default", "file-archive", "scored-markdown", "progressive", "companion", "consolidator"]


def make_config(home: Path, profile: str = "default", **overrides: Any) -> Config:
    overrides.setdefault("embedding", {})
    overrides["embedding"] = {"provider": "hash", "background": False, **overrides["embedding"]}
    overrides.setdefault("store", {})["home"] = str(home)
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


@pytest.fixture
def memory(make_memory: Callable[..., Memory]) -> Memory:
    return make_memory()
