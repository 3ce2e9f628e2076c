"""Export / import of a whole scope, and the CLI commands of issue 7 run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import Memory, ValidationError
from memlane.markdown import parse_memory_md
from memlane.models import Episode, Scope, Scratchpad
from memlane.portable import is_export
from memlane.testing import ManualClock
from tests.cli_support import run_cli

T0 = datetime(2026, 1, 20, 9, 0, tzinfo=UTC)


def populate(memory: Memory, user: str = "u1") -> None:
    memory.add_messages("s1", [
        {"role": "user", "content": "我对花生过敏", "created_at": T0.isoformat(), "metadata": {"k": 1}},
        {"role": "assistant", "content": "记下了", "created_at": (T0 + timedelta(minutes=1)).isoformat(),
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "remember", "arguments": "{}"}}]},
    ], user_id=user)
    m = memory.add("用户对花生过敏", user_id=user, category="fact", importance="high", metadata={"x": [1, 2]},
                   subject="用户", predicate="过敏", session_id="s1")
    memory.update(m.id, user_id=user, content="用户对花生和腰果过敏")
    gone = memory.add("temporary", user_id=user)
    memory.delete(gone.id, user_id=user)
    memory.add("likes tea", user_id=user, category="preference", pinned=True)
    scope = Scope.of(user)
    memory.store.insert_episode(Episode(id="ep1", user_id=user, session_id="s1", summary="谈到过敏", goal="g",
                                        entities=["花生"], started_at=T0, ended_at=T0, created_at=T0))
    memory.store.put_scratchpad(Scratchpad(user_id=scope.user_id, current_focus="slides", updated_at=T0))
    memory.store.set_turns_archived(scope, [memory.get_turns(user_id=user)[0].id], "true")


def snapshot(memory: Memory, user: str) -> dict:
    scope = Scope.of(user)
    drop = {"user_id", "agent_id"}
    return {
        "memories": [m.model_dump(exclude=drop) for m in memory.list(user_id=user)],
        "turns": [t.model_dump(exclude=drop) for t in memory.get_turns(user_id=user)],
        "sessions": [s.model_dump(exclude=drop) for s in memory.sessions(user_id=user)],
        "episodes": [e.model_dump(exclude=drop) for e in memory.store.list_episodes(scope)],
        "events": [e.model_dump(exclude=drop | {"id"}) for e in memory.store.events(scope)],
        "scratchpad": memory.store.get_scratchpad(scope),
    }


def test_jsonl_round_trip_is_lossless(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    src = make_memory(clock=ManualClock(T0))
    populate(src)
    path = tmp_path / "u1.jsonl"
    path.write_text(src.export(user_id="u1"), encoding="utf-8")
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header["memlane_export"] == 1 and header["counts"]["memory"] == 2 and header["counts"]["event"] == 5
    dst = make_memory(home=tmp_path / "other")
    report = dst.import_(path)
    assert report.user_id == "u1" and report.added["turn"] == 2 and not report.skipped
    assert snapshot(dst, "u1") == snapshot(src, "u1")
    assert dst.search("腰果", user_id="u1", activate=False)[0].content == "用户对花生和腰果过敏"
    assert dst.search("花生", user_id="u1", corpus="turns")  # full text of turns rebuilt
    # importing again adds nothing
    again = dst.import_(path)
    assert not again.added and sum(again.skipped.values()) == sum(report.added.values())
    assert snapshot(dst, "u1") == snapshot(src, "u1")


def test_an_agents_memory_keeps_its_source_and_confirmation_through_export(make_memory: Callable[..., Memory],
                                                                           tmp_path: Path) -> None:
    src = make_memory(clock=ManualClock(T0))
    tools = src.tools(user_id="u1", session_id="s1")
    fading = tools.call("remember", {"content": "the user waters the orchids on Sundays"})["id"]
    confirmed = tools.call("remember", {"content": "the user plays the ukulele"})["id"]
    src.update(confirmed, user_id="u1", verified=True, actor="web")
    path = tmp_path / "u1.jsonl"
    path.write_text(src.export(user_id="u1"), encoding="utf-8")
    dst = make_memory(home=tmp_path / "other")
    dst.import_(path)
    got = {m.id: (m.source, m.verified, m.pinned) for m in dst.list(user_id="u1")}
    assert got == {fading: ("agent", False, False), confirmed: ("agent", True, False)}
    assert snapshot(dst, "u1") == snapshot(src, "u1")  # the audit trail too: who confirmed it, when
    # a source memlane does not know is refused by line, and nothing is written
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text(encoding="utf-8").replace('"source": "agent"', '"source": "robot"', 1),
                   encoding="utf-8")
    with pytest.raises(ValidationError, match=r"line \d+: memory.source"):
        dst.import_(bad, user_id="u3")
    assert dst.list(user_id="u3") == []


def test_import_into_another_user_of_the_same_store(memory: Memory, tmp_path: Path) -> None:
    populate(memory)
    path = tmp_path / "u1.jsonl"
    path.write_text(memory.export(user_id="u1"), encoding="utf-8")
    memory.import_(path, user_id="u2")
    a, b = snapshot(memory, "u1"), snapshot(memory, "u2")
    strip = lambda rows: [{k: v for k, v in r.items() if k != "id"} for r in rows]  # noqa: E731
    assert strip(b["memories"]) == strip(a["memories"])  # ids were taken by u1: new ones
    assert strip(b["turns"]) == strip(a["turns"])
    for m in memory.list(user_id="u2"):
        assert memory.history(m.id, user_id="u2")  # the trail follows the new id
    memory.import_(path, user_id="u2")
    assert len(memory.list(user_id="u2")) == 2


def test_a_bad_export_names_its_line_and_writes_nothing(memory: Memory, tmp_path: Path) -> None:
    populate(memory)
    lines = memory.export(user_id="u1").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], '{"type": "memory", "record": {"id": "x"}}']), encoding="utf-8")
    with pytest.raises(ValidationError, match="line 4: memory"):
        memory.import_(bad, user_id="u3")
    assert memory.stats(user_id="u3").turns == 0
    bad.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
    with pytest.raises(ValidationError, match="not a memlane export"):
        memory.import_(bad, user_id="u3")
    with pytest.raises(ValidationError, match="format"):
        memory.export(user_id="u1", format="csv")


def test_md_export_is_memory_md(memory: Memory) -> None:
    memory.add("用户对花生过敏", user_id="u1", category="fact")
    assert [e.content for e in parse_memory_md(memory.export(user_id="u1", format="md")).entries] == ["用户对花生过敏"]


# ---- the CLI ------------------------------------------------------------------------------


def run(home: Path, *args: str, check: int = 0, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`memlane ARGS` on `home`: in this process through the console script's `main`
    (tests/cli_support.py), or with `process` in a new one."""
    proc = run_cli(args, {"MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}, process=process)
    assert proc.returncode == check, (proc.stdout, proc.stderr)
    return proc


def test_cli_md_export_edit_import(tmp_path: Path) -> None:
    mid = json.loads(run(tmp_path, "add", "用户对花生过敏", "--user", "lin", "-c", "fact", "--json").stdout)["id"]
    paths = json.loads(run(tmp_path, "md", "export", "--user", "lin", "--json").stdout)
    md = Path(paths["memory_md"])
    assert md == tmp_path / "scopes" / "lin" / "MEMORY.md" and Path(paths["user_md"]).is_file()
    md.write_text(md.read_text(encoding="utf-8").replace("花生", "腰果") + "\n### preference | 0.7\n喜欢白茶\n",
                  encoding="utf-8")
    ops = json.loads(run(tmp_path, "md", "import", "--user", "lin", "--json").stdout)
    assert sorted((o["op"], o["fields"][0]) for o in ops) == [("ADD", "content"), ("UPDATE", "content")]
    history = json.loads(run(tmp_path, "history", mid, "--user", "lin", "--json").stdout)
    assert [(e["kind"], e["actor"]) for e in history] == [("ADD", "cli"), ("UPDATE", "import")]
    assert "nothing to do" in run(tmp_path, "md", "import", "--user", "lin").stdout


def test_cli_export_import_and_archive(tmp_path: Path) -> None:
    conv = tmp_path / "chat.jsonl"
    conv.write_text(json.dumps({"role": "user", "content": "deploy to cloudflare workers timed out"}), encoding="utf-8")
    run(tmp_path, "import", str(conv), "--user", "lin")
    report = json.loads(run(tmp_path, "archive", "--user", "lin", "--query", "cloudflare deploy", "--json").stdout)
    assert report["archived"] == 1 and report["files"][0].startswith("memory/")
    assert report["memory_block"].startswith("## Memory\n[memory/")
    out = tmp_path / "lin.jsonl"
    run(tmp_path, "export", "--user", "lin", "--output", str(out))
    assert json.loads(run(tmp_path, "export", "--user", "lin", process=True).stdout.splitlines()[0])["memlane_export"] == 1
    result = json.loads(run(tmp_path / "new", "import", str(out), "--user", "lin", "--json").stdout)
    assert result["added"]["turn"] == 1
    turns = json.loads(run(tmp_path / "new", "search", "cloudflare", "--in", "turns", "--user", "lin", "--json").stdout)
    assert turns[0]["turn"]["archived"] == "true"
    assert "# Agent Memory" in run(tmp_path, "export", "--format", "md", "--user", "lin").stdout


def _memory_line(memory: Memory, **changes: object) -> str:
    line = next(x for x in memory.export(user_id="u1").splitlines() if '"type": "memory"' in x)
    obj = json.loads(line)
    obj["record"].update(changes)
    return json.dumps(obj)


@pytest.mark.parametrize(("changes", "field"), [
    ({"content": ""}, "memory.content"),
    ({"content": "x" * 100_000}, "memory.content"),
    ({"category": "NOT-A-CATEGORY"}, "memory.category"),
    ({"id": "i" * 10_000}, "memory.id"),
    ({"id": "x]\n### fact"}, "memory.id"),
    ({"metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}}, "memory.metadata.a.b.c.d.e.f.g.h"),
    ({"content": "bad \ud800"}, "memory.content"),
])
def test_an_export_file_is_held_to_the_api_rules(memory: Memory, tmp_path: Path, changes: dict, field: str) -> None:
    populate(memory)
    lines = memory.export(user_id="u1").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines, _memory_line(memory, **changes)]), encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        memory.import_(bad, user_id="u3")
    assert info.value.field == field and f"line {len(lines) + 1}" in str(info.value)
    assert memory.stats(user_id="u3").turns == 0 and memory.list(user_id="u3") == []
    # the scope that was not touched still round-trips through MEMORY.md
    memory.md_export(user_id="u1")
    assert memory.md_import(user_id="u1", dry_run=True) == []


HEADER = '{"memlane_export": 1, "user_id": "u1", "agent_id": ""}\n'


def test_an_export_nested_past_the_parser_names_its_line(memory: Memory, tmp_path: Path) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text(HEADER + '{"type": "memory", "record": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}\n",
                    encoding="utf-8")
    with pytest.raises(ValidationError, match="deep.jsonl line 2: JSON nested too deeply"):
        memory.import_(deep, user_id="u3")
    header = tmp_path / "deep-header.jsonl"
    header.write_text('{"memlane_export": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    assert not is_export(header)  # a RecursionError inside is no answer: it is not an export
    with pytest.raises(ValidationError, match="line 1: JSON nested too deeply"):
        memory.import_(header, user_id="u3")
    digits = tmp_path / "digits.jsonl"
    digits.write_text(HEADER + '{"type": "memory", "record": {"activation_count": ' + "9" * 5000 + "}}\n",
                      encoding="utf-8")
    with pytest.raises(ValidationError, match="line 2: holds an integer too long to read"):
        memory.import_(digits, user_id="u3")
    assert memory.stats(user_id="u3").events == 0


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: None, "does not exist"),
    (lambda p: p.mkdir(), "is a directory; give a file"),
    (lambda p: p.write_bytes(b""), "is empty"),
    (lambda p: p.write_text("\n \n", encoding="utf-8"), "is empty"),
    (lambda p: p.write_bytes(bytes(range(256))), r"is not UTF-8 text \(byte 128\)"),
])
def test_a_file_that_is_no_export_says_what_it_is(memory: Memory, tmp_path: Path,
                                                   make: Callable[[Path], object], message: str) -> None:
    path = tmp_path / "lin.jsonl"
    make(path)
    with pytest.raises(ValidationError, match=message) as info:
        memory.import_(path, user_id="u3")
    assert info.value.field == "file" and str(path) in str(info.value)


def test_a_device_is_not_read_as_an_export(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="not a regular file"):
        memory.import_(Path(os.devnull), user_id="u3")


def test_a_bad_scope_in_the_header_names_the_header(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "scope.jsonl"
    path.write_text('{"memlane_export": 1, "user_id": "u1", "agent_id": 7}\n', encoding="utf-8")
    with pytest.raises(ValidationError, match=r"agent_id: must be a string, got int \(.*scope.jsonl line 1: the header\)"):
        memory.import_(path, user_id="u3")
