"""The `memlane` command, run as a user would, on a real data dir: in this process through the
console script's `main` (tests/cli_support.py), or in a real subprocess where the process is
what is tested (exit codes and usage errors as the shell sees them, no terminal, argv bytes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import run_cli

SAMPLE = [{"role": "user", "content": "我对花生过敏"}, {"role": "assistant", "content": "记下了"}]


def run(home: Path, *args: str, check: int = 0, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`memlane ARGS` with `home` as MEMLANE_HOME and no terminal on stdin, as in CI (a command
    that would ask must say so, not wait); in this process unless `process`."""
    proc = run_cli(args, {"MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}, process=process)
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
    run(tmp_path, "search", check=2, process=True)
    assert "Example" in run(tmp_path, "search", "-h", process=True).stdout


# ---- hostile input (an outside tester's findings, then a fuzzer) ---------------------------

def run_many(home: Path, cases: list[tuple[list[str], dict[str, str]]]) -> list[tuple[int, str]]:
    """(exit code, stdout + stderr) of each command line, run with `home` as MEMLANE_HOME, no
    MEMLANE_USER and no terminal on stdin; an exception that escapes `main` shows as the
    traceback the user would see."""
    results = []
    for args, extra in cases:
        done = run_cli(args, {"MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash", **extra}, unset=["MEMLANE_USER"])
        results.append((done.returncode, done.stdout + done.stderr))
    return results


def assert_refused(results: list[tuple[int, str]], cases: list[tuple[list[str], dict[str, str]]],
                   needles: list[str]) -> None:
    """Each command failed (exit 1 or 2), without a traceback, with a message naming `needle`."""
    for (code, output), (args, _), needle in zip(results, cases, needles, strict=True):
        shown = [a if len(a) < 60 else a[:20] + f"…({len(a)} chars)" for a in args]
        assert "Traceback" not in output, (shown, output[-2000:])
        assert code in (1, 2), (shown, code, output[-2000:])
        assert needle in output, (shown, needle, output[-2000:])


def nested(depth: int, leaf: str = "1") -> str:
    return '{"a": ' * depth + leaf + "}" * depth


def test_hostile_files_are_refused_in_one_line_naming_the_file(tmp_path):
    files = tmp_path / "in"
    files.mkdir()
    export_head = '{"memlane_export": 1, "user_id": "lin", "agent_id": ""}\n'
    made = {
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "deep.jsonl": '{"role": "user", "content": "x", "metadata": ' + nested(100_000) + "}\n",
        "deep-export.jsonl": export_head + '{"type": "memory", "record": ' + nested(100_000) + "}\n",
        "deep-header.jsonl": '{"memlane_export": ' + nested(100_000) + "}\n",
        "surrogate.json": '[{"role": "user", "content": "\\ud800 hi"}]',
        "surrogate.jsonl": '{"role": "\\udfff", "content": "hi"}\n',
        "surrogate-export.jsonl": export_head + '{"type": "\\ud800", "record": {}}\n',
        "big-number.json": '[{"role": "user", "content": "x", "metadata": {"n": ' + "9" * 5000 + "}}]",
        "empty.json": "",
        "blank.jsonl": "\n  \n",
    }
    for name, text in made.items():
        (files / name).write_text(text, encoding="utf-8")
    (files / "binary.json").write_bytes(bytes(range(256)))
    (files / "cesu.jsonl").write_bytes(b'{"role": "user", "content": "\xed\xa0\x80"}\n')  # a surrogate, UTF-8-encoded
    (files / "folder").mkdir()
    (files / "folder.json").mkdir()
    expect = {
        "deep.json": "nested too deeply", "deep.jsonl": "line 1: JSON nested too deeply",
        "deep-export.jsonl": "line 2: JSON nested too deeply", "deep-header.jsonl": "nested too deeply",
        "surrogate.json": "content: holds a lone surrogate", "surrogate.jsonl": "role:",
        "surrogate-export.jsonl": "line 2: unknown record type", "big-number.json": "integer too long",
        "empty.json": "empty.json is empty", "blank.jsonl": "blank.jsonl is empty",
        "binary.json": "binary.json is not UTF-8", "cesu.jsonl": "cesu.jsonl is not UTF-8",
        "folder": "holds no .json or .jsonl file", "missing.json": "missing.json does not exist",
    }
    cases = [(["import", str(files / name), "--user", "lin"], {}) for name in expect]
    needles = list(expect.values())
    # MEMORY.md is read by `md import`: a folder, a device, a binary file, nested JSON
    md = {"folder.json": "folder.json is a directory", os.devnull: "not a regular file",
          "binary.json": "not UTF-8", "deep.json": "no '## Active Memories' section"}
    cases += [(["md", "import", "--user", "lin", str(files / name)], {}) for name in md]
    needles += list(md.values())
    cases.append((["import", str(files / "deep-export.jsonl"), "--user", "lin", "--json"], {}))
    needles.append('"field": "file"')
    results = run_many(tmp_path / "home", cases)
    assert_refused(results, cases, needles)
    assert json.loads(results[-1][1])["error"] == "ValidationError"
    assert json.loads(run(tmp_path / "home", "stats", "--user", "lin", "--json").stdout)["turns"] == 0


def test_a_home_that_cannot_be_one_says_what_is_wrong_and_what_to_do(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory", encoding="utf-8")
    bad_toml = tmp_path / "bad-toml"
    bad_toml.mkdir()
    (bad_toml / "memlane.toml").write_text("profile = [\n", encoding="utf-8")
    toml_dir = tmp_path / "toml-dir"
    (toml_dir / "memlane.toml").mkdir(parents=True)
    not_db = tmp_path / "not-db"
    not_db.mkdir()
    (not_db / "memlane.db").write_text("these are not the bytes of a database", encoding="utf-8")
    homes = {
        str(a_file): "is a file, not a directory; point --home or MEMLANE_HOME at a directory",
        str(a_file / "below"): "cannot create data directory",
        str(bad_toml): "memlane.toml: not valid TOML",
        str(toml_dir): "memlane.toml: Is a directory",
        str(not_db): "memlane.db is not a SQLite database; move it away or choose another --home",
    }
    commands = [["stats", "--user", "lin"], ["add", "x", "--user", "lin"], ["keys", "list"], ["migrate"],
                ["mcp", "--user", "lin"], ["serve"], ["demo"]]
    cases = [(["--home", home, *command], {}) for home in homes for command in commands]
    needles = [needle for needle in homes.values() for _ in commands]
    cases.append((["stats", "--user", "lin"], {"MEMLANE_HOME": str(a_file)}))
    needles.append(f"data directory {a_file} (from MEMLANE_HOME) is a file")
    results = run_many(tmp_path, cases)
    assert_refused(results, cases, needles)
    for _, output in results:  # one line each
        assert len(output.strip().splitlines()) == 1, output
    # and as the console script runs it
    proc = run(tmp_path, "--home", str(a_file), "list", "--user", "lin", check=1, process=True)
    assert proc.stderr.startswith("error: data directory") and "Traceback" not in proc.stderr


def test_an_unwritable_home_is_named(tmp_path):
    home = tmp_path / "read-only"
    home.mkdir()
    home.chmod(0o500)
    try:
        if os.access(home, os.W_OK):
            pytest.skip("this user (root) may write anywhere")
        proc = run(tmp_path, "--home", str(home), "stats", "--user", "lin", check=1)
        assert f"data directory {home} (from --home) is not writable" in proc.stderr
    finally:
        home.chmod(0o700)


def test_purge_without_a_terminal_asks_for_yes(tmp_path):
    run(tmp_path, "add", "用户对花生过敏", "--user", "lin")
    proc = run(tmp_path, "purge", "--user", "lin", check=1, process=True)  # stdin is not a terminal
    assert "confirmation, which needs a terminal; pass --yes to confirm non-interactively" in proc.stderr
    assert "interrupted" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    body = json.loads(run(tmp_path, "purge", "--user", "lin", "--json", check=1).stdout)
    assert body["error"] == "ValidationError" and body["field"] == "--yes"
    assert [m["content"] for m in json.loads(run(tmp_path, "list", "--user", "lin", "--json").stdout)] == ["用户对花生过敏"]
    assert "forgot user 'lin'" in run(tmp_path, "purge", "--user", "lin", "--yes").stdout


def test_help_shows_flags_as_plain_flags(tmp_path):
    text = run(tmp_path, "--help").stdout
    assert "--version" in text and "<bool>" not in text, text
    helps = run_many(tmp_path, [(args, {}) for args in (["purge", "-h"], ["edit", "-h"], ["sessions", "-h"],
                                                        ["keys", "create", "--help"], ["--version"])])
    for code, output in helps:
        assert code == 0 and "<bool>" not in output, output
    assert "--yes" in helps[0][1] and "--unpin" in helps[1][1] and helps[-1][1].startswith("memlane")


def test_argv_and_environment_bytes_that_are_not_utf8_are_named(tmp_path):
    env = {**os.environ, "MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash"}
    memlane = [sys.executable.encode(), b"-m", b"memlane"]
    for args, extra, field in (
        ([b"add", b"caf\xe9", b"--user", b"lin"], {}, "content: holds a lone surrogate"),
        ([b"list"], {b"MEMLANE_USER": b"\xfflin"}, "user_id: holds a lone surrogate"),
        ([b"--home", os.fsencode(tmp_path) + b"/h\xff", b"stats", b"--user", b"lin"], {}, "the path is not UTF-8"),
        ([b"--profile", b"\xff", b"stats", b"--user", b"lin"], {}, "profile"),
    ):
        proc = subprocess.run([*memlane, *args], capture_output=True, env={**env, **extra}, timeout=120,
                              stdin=subprocess.DEVNULL)
        stderr = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 1 and field in stderr and "Traceback" not in stderr, stderr


def test_fuzzed_arguments_are_refused_by_name_never_with_a_traceback(tmp_path):
    """Hostile values for every command's options: each is refused (exit 1 or 2) with a
    message naming the option or field; values that are odd but valid still work."""
    lone, huge, ten_k = "\ud800", "x" * 300_000, "u" * 10_000
    conv = tmp_path / "chat.jsonl"
    conv.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in SAMPLE), encoding="utf-8")
    scoped = {  # each takes --user and --agent, and refuses a bad one by name
        "add": ["add", "x"], "search": ["search", "x"], "list": ["list"], "show": ["show", "abc"],
        "edit": ["edit", "abc", "--content", "y"], "delete": ["delete", "abc"], "restore": ["restore", "abc"],
        "undo": ["undo", "abc"], "history": ["history", "abc"], "stats": ["stats"], "context": ["context"],
        "extract": ["extract"], "archive": ["archive"], "md export": ["md", "export"], "export": ["export"],
        "import": ["import", str(conv)], "sessions list": ["sessions", "list"],
        "sessions delete": ["sessions", "delete", "s1"], "turns delete": ["turns", "delete", "t1"],
        "purge": ["purge", "--yes"], "consolidate": ["consolidate", "--dry-run"], "keys create": ["keys", "create"],
    }
    bad: list[tuple[list[str], str]] = []
    for command in scoped.values():
        for user, field in ((lone, "user_id: holds a lone surrogate"), (ten_k, "user_id: is 10000 characters"),
                            (" ", "user_id"), ("a\nb", "user_id: holds control character")):
            bad.append(([*command, "--user", user], field))
        bad.append(([*command, "--user", "lin", "--agent", lone], "agent_id: holds a lone surrogate"))
        bad.append(([*command, "--user", "lin", "--agent", ten_k], "agent_id: is 10000 characters"))
    u = ["--user", "lin"]
    bad += [
        (["add", lone, *u], "content: holds a lone surrogate"), (["add", huge, *u], "content: is 300000 characters"),
        (["add", "x", *u, "-c", "gossip"], "category"), (["add", "x", *u, "-c", lone], "category"),
        (["add", "x", *u, "-i", "-1"], "importance"), (["add", "x", *u, "-i", "nan"], "importance"),
        (["add", "x", *u, "-i", "1e400"], "importance"), (["add", "x", *u, "-i", lone], "importance"),
        (["search", lone, *u], "query"), (["search", huge, *u], "query: is 300000 characters"),
        (["search", "x", *u, "-n", "0"], "--limit"), (["search", "x", *u, "-n", "-5"], "--limit"),
        (["search", "x", *u, "-n", "9" * 30], "limit"), (["search", "x", *u, "--in", "nope"], "corpus"),
        (["search", "x", *u, "-c", "nope"], "--category"), (["search", "x", *u, "--min-score", "nan"], "--min-score"),
        (["list", *u, "-n", "-1"], "--limit"), (["list", *u, "-n", "9" * 30], "limit"),
        (["list", *u, "--status", "nope"], "status"), (["list", *u, "--since", "nope"], "--since"),
        (["list", *u, "--since", "2026-13-45"], "--since"), (["list", *u, "--until", lone], "--until"),
        (["list", *u, "--until", "2026-01-01T00:00+25:00"], "--until"), (["list", *u, "--session", ten_k], "session_id"),
        (["list", *u, "-c", lone], "--category"),
        (["show", lone, *u], "memory_id"), (["show", ten_k, *u], "memory_id"), (["show", "../x", *u], "memory_id"),
        (["delete", "a b", *u], "memory_id"), (["restore", "", *u], "memory_id"), (["edit", "abc", *u], "nothing to change"),
        (["context", *u, "--session", lone], "session_id"), (["context", *u, "--query", huge], "query"),
        (["context", *u, "--model", ten_k], "model"),
        (["export", *u, "-f", "nope"], "format"), (["export", *u, "-o", str(tmp_path / "chat.jsonl" / "x")], "cannot write"),
        (["export", *u, "-o", lone], "--output"), (["md", "export", *u, "-o", str(tmp_path)], str(tmp_path)),
        (["archive", *u, "-q", lone], "pending"), (["extract", *u, "-s", lone], "session_id"),
        (["extract", *u, "-s", "nope"], "session 'nope' not found"), (["turns", "delete", lone, *u], "turn_ids[0]"),
        (["sessions", "delete", ten_k, *u], "session_id"), (["import", lone, *u], "paths"),
        (["import", str(conv), str(conv), *u], "a file is named twice"),
        (["import", str(conv), *u, "--session-prefix", lone], "session_id"),
        (["consolidate"], "--all"), (["consolidate", "--all", *u], "--all"),
        (["consolidate", "--all", "--agent", "coder"], "--agent"),
        (["keys", "revoke", lone], "key_id"), (["keys", "revoke", ten_k], "key_id"),
        (["keys", "create", *u, "--name", lone], "name"), (["keys", "create", "--admin", "--name", ten_k], "name"),
        (["serve", "--port", "0"], "--port"), (["serve", "--port", "99999999"], "--port"),
        (["serve", "--log-level", "nope"], "--log-level"), (["serve", "--host", lone], "--host"),
        (["serve", "--workers", "0"], "--workers"), (["demo", "--port", "-1"], "--port"),
        (["demo", "--home", str(conv)], "is a file, not a directory"),
        (["--profile", "nope", "stats", *u], "profile"), (["--profile", lone, "stats", *u], "profile"),
        (["--embedder", "nope", "stats", *u], "embedding.provider"), (["--home", lone, "stats", *u], "--home"),
        (["migrate", "--database", lone], "--database"), (["migrate", "--database", ""], "--database"),
        (["migrate", "--database", str(conv / "x.db")], "--database"),
        (["migrate", "--database", str(conv)], "is not a SQLite database"),
        (["copy", "--from", lone, "--to", "x"], "--from"), (["copy", "--from", str(tmp_path / "nope.db"), "--to", "x"], "--from"),
        (["copy", "--from", str(tmp_path / "home"), "--to", str(conv / "x.db")], "--to"),
        (["purge", *u], "pass --yes"), (["nope"], "No such command"), (["add", "x", *u, "--nope"], "--nope"),
        (["stats", *u, "--json=1"], "--json"),
    ]
    valid = [  # odd, but well-formed: these work
        ["add", "用户对花生过敏", *u], ["add", "x", "--user", "../../etc"], ["list", *u, "-n", "0"],
        ["list", *u, "--since", "0001-01-01"], ["search", "x", *u, "-n", "10000"], ["search", "🙂" * 1000, *u],
        ["context", *u, "--model", "no-such-model"], ["stats", "--user", "用户 lin"], ["import", str(conv), *u],
        ["consolidate", "--all", "--dry-run"], ["scheduler", "--once"], ["config", "--changed"],
    ]
    cases = [(args, {}) for args, _ in bad] + [(args, {}) for args in valid]
    # the environment holds what the OS gave: a byte that is not UTF-8 arrives as U+DCxx
    cases += [(["list"], {"MEMLANE_USER": "\udcfflin"}), (["list"], {"MEMLANE_USER": ten_k})]
    needles = [needle for _, needle in bad] + ["user_id: holds a lone surrogate", "user_id: is 10000 characters"]
    results = run_many(tmp_path / "home", cases)
    for (code, output), (args, _) in zip(results[len(bad):len(bad) + len(valid)], cases[len(bad):], strict=False):
        assert code == 0 and "Traceback" not in output, (args[:3], output[-2000:])
    refused = [(r, c) for i, (r, c) in enumerate(zip(results, cases, strict=True)) if i < len(bad) or i >= len(bad) + len(valid)]
    assert_refused([r for r, _ in refused], [c for _, c in refused], needles)


def test_verify_confirms_an_agents_memory_and_it_stops_fading(tmp_path):
    """`memlane verify ID` is a person confirming what an agent stored (audited, actor cli);
    `edit --unverify` takes it back. Confirmed, a memory no longer fades; unconfirmed, it does."""
    from datetime import UTC, datetime, timedelta

    from memlane import Memory
    from memlane.testing import ManualClock
    from tests.conftest import make_config

    clock = ManualClock(datetime.now(UTC))
    with Memory(make_config(tmp_path), clock=clock) as mem:
        tools = mem.tools(user_id="lin")
        kept, dropped = (tools.call("remember", {"content": c})["id"] for c in (
            "lin waters the orchids on Sundays", "lin once tried pottery"))
    done = json.loads(run(tmp_path, "verify", kept, "--user", "lin", "--json").stdout)
    assert (done["id"], done["source"], done["verified"]) == (kept, "agent", True)
    assert "already verified" in run(tmp_path, "verify", kept, "--user", "lin").stdout
    assert "✓" in run(tmp_path, "list", "--user", "lin").stdout
    run(tmp_path, "edit", dropped, "--verify", "--user", "lin")
    undone = json.loads(run(tmp_path, "edit", dropped, "--unverify", "--user", "lin", "--json").stdout)
    assert undone["verified"] is False
    history = json.loads(run(tmp_path, "history", kept, "--user", "lin", "--json").stdout)
    assert [(e["kind"], e["actor"], e["reason"]) for e in history] == [
        ("ADD", "agent", ""), ("UPDATE", "cli", "confirmed by a person")]  # the second verify wrote nothing
    assert "nothing changed" in run(tmp_path, "edit", kept, "--verify", "--user", "lin", check=2).stderr

    clock.now += timedelta(days=400)
    with Memory(make_config(tmp_path), clock=clock) as mem:
        mem.consolidate(user_id="lin")
        assert (mem.get(kept, user_id="lin").score, mem.get(kept, user_id="lin").status) == (0.6, "active")
        assert dropped not in {m.id for m in mem.list(user_id="lin")}


def test_a_fact_that_changed_from_the_command_line(tmp_path):
    """Issue 32: `supersede` keeps the old fact closed where the new one begins (a month is its
    first day), `timeline` shows both with when each held, `search --as-of` / `--include-superseded`
    find the old one, `list --status superseded` lists it; tables show validity compactly."""
    old = json.loads(run(tmp_path, "add", "用户住在慕尼黑", "--user", "lin", "-c", "fact", "--valid-from", "2019-06",
                         "--json").stdout)
    new = json.loads(run(tmp_path, "supersede", old["id"], "用户住在柏林", "--valid-from", "2024-03",
                         "--reason", "搬家了", "--user", "lin", "--json").stdout)
    assert (new["supersedes"], new["valid_from"][:10]) == (old["id"], "2024-03-01")
    versions = json.loads(run(tmp_path, "timeline", new["id"], "--user", "lin", "--json").stdout)
    assert [v["id"] for v in versions] == [old["id"], new["id"]]
    assert versions[0]["status"] == "superseded" and versions[0]["valid_to"][:10] == "2024-03-01"
    table = run(tmp_path, "timeline", old["id"], "--user", "lin").stdout
    assert "since 2024-03-01" in table and "– 2024-03-01" in table and "superseded" in table

    def found(*flags: str) -> list[str]:
        hits = run(tmp_path, "search", "用户住在", "--user", "lin", "--min-score", "0", "--json", *flags).stdout
        return [h["id"] for h in json.loads(hits)]

    assert found() == [new["id"]]  # only the current fact by default
    assert found("--as-of", "2023-06") == [old["id"]]
    assert set(found("--include-superseded")) == {old["id"], new["id"]}
    shown = run(tmp_path, "search", "用户住在", "--user", "lin", "--as-of", "2023-06", "--min-score", "0").stdout
    cells = re.sub(r"[│\s]+", " ", shown)  # a narrow terminal wraps a cell across lines
    assert "用户住在慕尼黑 (2019-06-01 – 2024-03-01) superseded" in cells
    listed = json.loads(run(tmp_path, "list", "--user", "lin", "--status", "superseded", "--json").stdout)
    assert [m["id"] for m in listed] == [old["id"]]
    assert "(since 2024-03-01)" in run(tmp_path, "list", "--user", "lin", "--status", "active").stdout
    said = run(tmp_path, "supersede", new["id"], "--by", old["id"], "--user", "lin", check=1).stderr
    assert said.startswith("error:") and "Traceback" not in said  # the old one is history, not a successor
    assert "content" in run(tmp_path, "supersede", new["id"], "--user", "lin", check=1).stderr  # neither given
    assert "--valid-from" in run(tmp_path, "supersede", new["id"], "x", "--valid-from", "soon", "--user", "lin",
                                 check=2).stderr
