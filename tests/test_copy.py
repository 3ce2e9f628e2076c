"""`memlane migrate` and `memlane copy` (issue 17): a whole home moves SQLite → PostgreSQL →
SQLite with every row, the same search results, and a verified digest; run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memlane import Memory
from memlane.models import Attachment, Episode, Scope
from memlane.store.copy import TABLES, table_digest

from .conftest import T0

pytest.importorskip("psycopg")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src"), **(env or {})}
    full.pop("MEMLANE_DATABASE_URL", None) if env is None else None
    return subprocess.run([sys.executable, "-m", "memlane", *args], capture_output=True, text=True, env=full,
                          timeout=300)


def _fill(m: Memory) -> None:
    m.add_messages("s1", [
        {"role": "user", "content": "我对花生过敏，别推荐花生酱"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "lookup_recipe", "arguments": json.dumps({"dish": "kung pao chicken"})}}]},
        {"role": "tool", "name": "lookup_recipe", "content": "contains peanuts", "tool_call_id": "c1"},
        {"role": "user", "content": "I run every morning before work"},
    ], user_id="u1", agent_id="a1")
    m.end_session("s1", user_id="u1", agent_id="a1")
    for i in range(30):
        m.add(f"fact {i}: 喜欢白茶 and hiking trail {i}", user_id=f"u{i % 3}")
    rec = m.add("the gate code is 4711", user_id="u1")
    m.update(rec.id, content="the gate code is 1234", user_id="u1")
    m.store.insert_episode(Episode(id="ep1", user_id="u1", agent_id="a1", session_id="s1", summary="聊了过敏和跑步",
                                   entities=["花生"], started_at=T0, ended_at=T0, created_at=T0))
    m.store.put_attachment(Attachment(id="at1", user_id="u1", session_id="s1", name="a.bin",
                                      media_type="application/octet-stream", size=4, sha256="x", created_at=T0,
                                      data=b"\x00\x01\xff\x00"))
    m.update_scratchpad(user_id="u1", focus="写周报")
    m.flush()


def test_copy_sqlite_to_postgres_and_back_is_lossless(make_memory: Callable[..., Memory], tmp_path: Path,
                                                      pg_url: str) -> None:
    m = make_memory(home=tmp_path / "a", store={"database_url": ""})
    _fill(m)
    queries = [("花生", "u1", "a1", "turns"), ("kung pao", "u1", "a1", "turns"), ("白茶 hiking", "u1", "", "memories"),
               ("gate code", "u1", "", "memories"), ("过敏", "u1", "a1", "episodes")]

    def results(mem: Memory) -> list[list[tuple[float, str]]]:
        # equal scores may come in another order: SQLite's in-process caches keep int8 codes
        # of the vectors (cosines within ~0.002), PostgreSQL compares the float32 vectors
        return [sorted((-round(h.score, 6), h.id) for h in mem.search(q, user_id=u, agent_id=a or None, corpus=c))  # type: ignore[arg-type]
                for q, u, a, c in queries]

    before = results(m)
    assert all(before)
    digests = {t: table_digest(m.store, t) for t in TABLES}
    m.close()

    there = cli("copy", "--from", f"sqlite://{tmp_path / 'a' / 'memlane.db'}", "--to", pg_url, "--json")
    assert there.returncode == 0, there.stderr
    report = json.loads(there.stdout)
    assert report["ok"] and report["vectors"] > 30
    assert {t: (v["rows"], v["sha256"]) for t, v in report["tables"].items()} == digests
    pg = make_memory(home=tmp_path / "b", store={"database_url": pg_url})
    assert pg.store.name == "postgres" and results(pg) == before
    assert pg.store.get_attachment(Scope.of("u1"), "at1").data == b"\x00\x01\xff\x00"  # type: ignore[union-attr]
    digests = {t: table_digest(pg.store, t) for t in TABLES}  # searching activated memories
    pg.close()

    again = cli("copy", "--from", pg_url, "--to", f"sqlite://{tmp_path / 'c' / 'memlane.db'}", "--json")
    assert again.returncode == 0, again.stderr
    back = make_memory(home=tmp_path / "c", store={"database_url": ""})
    assert {t: table_digest(back.store, t) for t in TABLES} == digests
    assert back.store.name == "sqlite" and results(back) == before

    refused = cli("copy", "--from", f"sqlite://{tmp_path / 'a' / 'memlane.db'}", "--to", pg_url)
    assert refused.returncode == 1 and "already holds" in refused.stderr


def test_migrate_lists_the_named_migrations_of_both_backends(tmp_path: Path, pg_url: str) -> None:
    sqlite = cli("--home", str(tmp_path), "migrate", "--json")
    pg = cli("migrate", "--json", env={"MEMLANE_DATABASE_URL": pg_url, "MEMLANE_HOME": str(tmp_path / "h")})
    for proc, backend, first in ((sqlite, "sqlite", "m001_core"), (pg, "postgres", "m001_core")):
        assert proc.returncode == 0, proc.stderr
        body = json.loads(proc.stdout)
        names = [m["name"] for m in body["migrations"]]
        assert body["backend"] == backend and names[0] == first and names == sorted(names)
    assert len(json.loads(sqlite.stdout)["migrations"]) >= 11
