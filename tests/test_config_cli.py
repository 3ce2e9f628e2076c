"""Configuration resolves one way everywhere, and the CLI behaves as a new user expects
(issue 18: "Configuration that behaves one way", "Import and the CLI")."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from memlane import Config, Memory
from memlane.api import open_memory
from memlane.config import PROFILES, LLMConfig
from memlane.errors import BackendError, ConfigError
from memlane.llm.client import OpenAICompatibleLLM
from tests.cli_support import run_cli
from tests.conftest import PROFILE_NAMES

DOCS = Path(__file__).parents[1] / "docs"
CONFIG_PAGE = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
PROFILES_PAGE = (DOCS / "concepts" / "profiles.md").read_text(encoding="utf-8")
TOML = 'profile = "companion"\n[search]\nw_recency = 0.11\n'


def cli(*args: str, env: dict[str, str] | None = None, check: int = 0,
        process: bool = False) -> subprocess.CompletedProcess[str]:
    """`memlane ARGS` given only this environment's non-MEMLANE_ variables and `env`: in this
    process through the console script's `main` (tests/cli_support.py), or in a new one."""
    proc = run_cli(args, {"MEMLANE_EMBEDDER": "hash", **(env or {})}, clean=True, process=process)
    assert proc.returncode == check, (proc.stdout, proc.stderr)
    return proc


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("MEMLANE_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")


def test_every_entry_point_reads_the_data_directory_s_toml(tmp_path, clean_env, monkeypatch):
    home = tmp_path / "d"
    home.mkdir()
    (home / "memlane.toml").write_text(TOML, encoding="utf-8")
    configs = [Config.from_env(home=home)]
    for mem in (open_memory(home), Memory(home), Memory(str(home)), Memory(home=home)):
        with mem:
            configs.append(mem.config)
    monkeypatch.setenv("MEMLANE_HOME", str(home))
    configs.append(Config.from_env())
    for cfg in configs:
        assert (cfg.profile, cfg.search.w_recency, cfg.home) == ("companion", 0.11, home)
        assert cfg.policy.categories == Config.load("companion").policy.categories
    shown = json.loads(cli("--home", str(home), "config", "--json").stdout)
    assert shown["toml_file"] == str(home / "memlane.toml") and shown["toml_file_exists"]
    assert shown["settings"]["search.w_recency"] == {"value": 0.11, "source": str(home / "memlane.toml")}
    assert shown["settings"]["profile"]["value"] == "companion"
    assert shown["settings"]["embedding.provider"]["source"] == "env MEMLANE_EMBEDDER"
    assert shown["settings"]["store.home"]["source"] == "argument"
    # a flag beats the file; the environment beats the file
    flagged = json.loads(cli("--home", str(home), "--profile", "progressive", "config", "--json",
                             env={"MEMLANE_SEARCH__W_RECENCY": "0.2"}).stdout)["settings"]
    assert flagged["profile"] == {"value": "progressive", "source": "argument"}
    assert flagged["search.w_recency"] == {"value": 0.2, "source": "env MEMLANE_SEARCH__W_RECENCY"}


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_a_profile_named_in_the_constructor_is_applied(profile):
    assert Config(profile=profile).model_dump() == Config.load(profile).model_dump()
    cfg = Config(profile=profile, search={"w_recency": 0.3})
    assert cfg.search.w_recency == 0.3 and cfg.policy == Config.load(profile).policy
    with pytest.raises(ConfigError, match="Config.load"):
        cfg.profile = "companion" if profile != "companion" else "default"


def test_bad_configuration_is_refused_with_what_to_do(tmp_path, clean_env):
    with pytest.raises(ConfigError, match="must be a postgresql:// URL"):
        Config.from_env({"MEMLANE_DATABASE_URL": "mysql://localhost/x"}, home=tmp_path)
    with pytest.raises(ValueError, match="unknown profile 'gossip'; choose one of default"):
        Config(profile="gossip")  # pydantic's ValidationError, as for any field given the constructor
    with pytest.raises(ConfigError, match="unknown profile"):
        Config.load("gossip")
    with pytest.raises(ConfigError, match="MEMLANE_CONFIG"):
        Config.from_env({"MEMLANE_CONFIG": str(tmp_path / "missing.toml")})
    with pytest.raises(ConfigError, match="memlane config"):
        Config.from_env({"MEMLANE_SEARCH__NOPE": "1"}, home=tmp_path)
    with pytest.raises(ConfigError, match="not both"):
        Memory(Config.load(), home=tmp_path)
    with pytest.raises(ConfigError, match="Config"):
        Memory(42)  # type: ignore[arg-type]


def test_the_docs_document_every_setting_and_variable():
    """The configuration page holds the reference generated from the code at build time (issue
    33: it cannot drift), and that reference names every setting; the page's prose names the
    variables, the site names every profile."""
    from memlane.cli.settings import config_reference

    assert "<!-- generated: config-reference -->" in CONFIG_PAGE
    reference = config_reference()
    cfg = Config()
    for section in Config.model_fields:
        value = getattr(cfg, section)
        names = [f"{section}.{f}" for f in type(value).model_fields] if isinstance(value, BaseModel) else [section]
        for name in names:
            assert f"`{name}`" in reference, f"the configuration reference lacks {name}"
    for variable in ("MEMLANE_CONFIG", "MEMLANE_USER", "MEMLANE_PROFILE", "MEMLANE_HOME", "memlane config"):
        assert variable in CONFIG_PAGE
    assert set(PROFILES) <= set(re.findall(r"`([a-z-]+)`", PROFILES_PAGE))


def test_an_unknown_model_says_its_window_is_a_guess(mem):
    mem.add_messages("s1", [{"role": "user", "content": "hello"}], user_id="u")
    guessed = mem.build_context("s1", "hi", user_id="u", model="my-local-model")
    assert guessed.budgets.window_fallback and guessed.warnings
    assert guessed.to_dict()["warnings"] == guessed.warnings
    known = mem.build_context("s1", "hi", user_id="u", model="gpt-4o-2024-08-06")
    assert not known.budgets.window_fallback and known.warnings == [] and known.budgets.window == 128_000


def test_importing_files_keeps_their_sessions_apart(tmp_path):
    env = {"MEMLANE_HOME": str(tmp_path / "home")}
    folder = tmp_path / "chats"
    folder.mkdir()
    for name, food in (("a", "花生"), ("b", "虾")):  # the same session ids in both files
        lines = [{"session_id": "s1", "role": "user", "content": f"我对{food}过敏，我住在杭州西湖边上"},
                 {"session_id": "s1", "role": "assistant", "content": "记下了"},
                 {"session_id": "s2", "role": "user", "content": f"I prefer green tea over coffee ({name})"}]
        (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in lines), "utf-8")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"role": "user", "content": "hello there"}]), encoding="utf-8")
    done = json.loads(cli("import", str(folder), str(plain), "--user", "lin", "--json", env=env).stdout)
    assert (done["sessions"], done["turns"], done["embedded"]) == (5, 7, 7)
    assert [f["turns"] for f in done["files"]] == [3, 3, 1]
    stats = json.loads(cli("stats", "--user", "lin", "--json", env=env).stdout)
    assert stats["sessions"] == 5 and stats["memories"] == 0
    again = json.loads(cli("import", str(folder / "a.jsonl"), "--user", "lin", "--json", env=env).stdout)
    assert (again["turns"], again["skipped"]) == (0, 3)
    extracted = json.loads(cli("extract", "--user", "lin", "--json", env=env).stdout)
    assert {r["session"] for r in extracted["sessions"]} == {"a:s1", "a:s2", "b:s1", "b:s2", "plain:import-1"}
    assert extracted["added"] >= 2
    listed = json.loads(cli("list", "--user", "lin", "--json", env=env).stdout)
    assert any("花生" in m["content"] for m in listed) and any("虾" in m["content"] for m in listed)


def test_cli_usage_errors_exit_2_and_speak_json(tmp_path):
    env = {"MEMLANE_HOME": str(tmp_path)}
    assert cli("list", env=env, check=2).stderr.count("MEMLANE_USER") >= 1  # no silent "default" user
    assert json.loads(cli("list", "--json", env=env, check=2, process=True).stdout)["error"] == "UsageError"
    bad = cli("list", "--user", "lin", "--category", "gossip", env=env, check=2)
    assert "gossip" in bad.stderr and "preference" in bad.stderr
    cli("search", "x", "--user", "lin", "-c", "gossip", env=env, check=2)
    mid = json.loads(cli("add", "用户喜欢绿茶", "--user", "lin", "-c", "preference", "--json", env=env).stdout)["id"]
    assert "nothing" in cli("edit", mid, "--user", "lin", env=env, check=2).stderr
    cli("edit", mid, "--user", "lin", "--content", "用户喜欢绿茶", env=env, check=2)  # the same text
    cli("edit", mid, "--user", "lin", "--content", "用户喜欢白茶", env=env)
    cli("delete", mid, "--user", "lin", env=env)
    events = json.loads(cli("history", mid, "--user", "lin", "--json", env=env).stdout)
    assert [(e["kind"], e["actor"]) for e in events] == [("ADD", "cli"), ("UPDATE", "cli"), ("DELETE", "cli")]
    missing = json.loads(cli("show", mid, "--user", "lin", "--json", env=env, check=1, process=True).stdout)
    assert missing["error"] == "NotFound" and mid in missing["detail"]
    cli("consolidate", env=env, check=2)  # neither --user nor --all
    cli("consolidate", "--user", "lin", env=env)
    first = json.loads(cli("scheduler", "--once", "--json", env=env).stdout)
    idle = json.loads(cli("scheduler", "--once", "--json", env=env).stdout)
    assert first["ran"] is True and idle["ran"] is False and idle["next_run"]
    assert re.match(r"memlane \S+", cli("--version").stdout)


def test_demo_uses_the_configured_home_and_fails_fast_without_its_llm(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "demo"
    env = {"MEMLANE_HOME": str(home), "MEMLANE_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    started = time.monotonic()
    proc = cli("demo", env=env)
    took = time.monotonic() - started
    assert str(home) in proc.stdout and f"LLM at http://127.0.0.1:{port}/v1" in proc.stdout
    assert "no server" not in proc.stdout
    assert "nothing is listening" in proc.stdout
    assert took < 30, took  # was 44.6 s: four retries of each refused call
    assert (home / "memlane.db").exists()
    report = json.loads(cli("--home", str(tmp_path / "other"), "demo", "--json").stdout)
    assert report["home"] == str(tmp_path / "other") and report["llm"] is None


@pytest.mark.parametrize(("where", "why"), [("127.0.0.1:{port}", "nothing is listening"),
                                            ("no-such-host.invalid", "does not resolve")])
def test_an_unreachable_llm_fails_at_once_saying_why(where, why):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OpenAICompatibleLLM(LLMConfig(base_url=f"http://{where.format(port=port)}/v1", max_retries=3,
                                        retry_backoff_s=2.0))
    started = time.monotonic()
    with pytest.raises(BackendError, match=f"after 1 attempt.*{why}"):
        llm.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 2.0  # a retry would have waited retry_backoff_s first
