"""The `memlane` command, run as a user would: a real subprocess, a real data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = [{"role": "user", "content": "我对花生过敏"}, {"role": "assistant", "content": "记下了"}]


def run(home: Path, *args: str, check: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}
    proc = subprocess.run([sys.executable, "-m", "memlane", *args], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == check, (proc.stdout, proc.stderr)
    return proc


def test_every_command_speaks_json(tmp_path):
    conv = tmp_path / "chat.jsonl"
    conv.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in SAMPLE), encoding="utf-8")
    added = json.loads(run(tmp_path, "add", "用户对花生过敏", "--user", "lin", "-c", "fact", "-i", "high", "--json").stdout)
    mid = added["id"]
    assert added["score"] == 0.8
    outputs = {
        "search": run(tmp_path, "search", "过敏", "--user", "lin", "--json").stdout,
        "list": run(tmp_path, "list", "--user", "lin", "--json").stdout,
        "show": run(tmp_path, "show", mid, "--user", "lin", "--json").stdout,
        "edit": run(tmp_path, "edit", mid, "--content", "用户对花生和腰果过敏", "--user", "lin", "--json").stdout,
        "history": run(tmp_path, "history", mid, "--user", "lin", "--json").stdout,
        "stats": run(tmp_path, "stats", "--user", "lin", "--json").stdout,
        "import": run(tmp_path, "import", str(conv), "--user", "lin", "--json").stdout,
        "search-turns": run(tmp_path, "search", "过敏", "--in", "turns", "--user", "lin", "--json").stdout,
        "delete": run(tmp_path, "delete", mid, "--user", "lin", "--json").stdout,
        "demo": run(tmp_path, "demo", "--home", str(tmp_path / "demo"), "--json").stdout,
    }
    parsed = {k: json.loads(v) for k, v in outputs.items()}
    assert parsed["search"][0]["id"] == mid
    assert parsed["list"][0]["content"] == "用户对花生过敏"
    assert parsed["edit"]["content"] == "用户对花生和腰果过敏"
    assert [e["kind"] for e in parsed["history"]] == ["ADD", "UPDATE"]
    assert parsed["import"]["turns"] == 2
    assert parsed["search-turns"][0]["content"] == "我对花生过敏"
    assert parsed["delete"]["deleted"] == mid
    assert parsed["demo"]["turns"] == 28 and parsed["demo"]["searches"]
    stats_after = json.loads(run(tmp_path, "stats", "--user", "lin", "--json").stdout)
    assert (stats_after["memories"], stats_after["turns"]) == (0, 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "  ", "--user", "lin"), "content"),
        (("add", "x", "--user", "lin", "-c", "gossip"), "category"),
        (("add", "x", "--user", "lin", "-i", "2"), "importance"),
        (("show", "nope", "--user", "lin"), "not found"),
    ],
)
def test_errors_are_one_line_and_exit_1(tmp_path, args, message):
    proc = run(tmp_path, *args, check=1)
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_import_files_write_nothing(tmp_path):
    bad_utf8 = tmp_path / "bad.json"
    bad_utf8.write_bytes(b'[{"role": "user", "content": "\xff\xfe"}]')
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"role": "user", "content": "ok"}\n{"role": ', encoding="utf-8")
    for path, message in ((bad_utf8, "UTF-8"), (broken, "line 2")):
        proc = run(tmp_path, "import", str(path), "--user", "lin", check=1)
        assert message in proc.stderr
    assert json.loads(run(tmp_path, "stats", "--user", "lin", "--json").stdout)["turns"] == 0


def test_usage_errors_exit_2_and_help_works(tmp_path):
    run(tmp_path, "search", check=2)
    assert "Example" in run(tmp_path, "search", "-h").stdout
