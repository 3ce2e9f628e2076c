"""An installed package extends memlane by entry points (plugins.py): an embedder, an LLM
provider, an event-rule action, a conversation importer and a store backend, with no change
to memlane. The package here is real as far as Python's packaging goes: a module and its
.dist-info on the path, found by importlib.metadata, in this process and in a `memlane`
subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import Config, Memory, plugins
from memlane.errors import ConfigError, ValidationError
from memlane.importers import parse

TOY = '''
import json, os, zlib
from pathlib import Path
import numpy as np
from memlane.importers import Conversation

class ToyEmbedder:
    model_id = "toy-words-16"
    dimensions = 16
    def embed(self, texts, *, query=False):
        out = np.zeros((len(texts), 16), np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % 16] += 1.0
        out[:, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)

def make_embedder(cfg):
    return ToyEmbedder()

class ToyLLM:
    model_id = "toy-llm"
    def complete(self, messages, *, json_schema=None):
        Path(os.environ["TOY_LOG"]).open("a").write("llm\\n")
        return json.dumps({"operations": [{"op": "ADD", "content": "The user keeps three bees", "category": "fact"}]})

def make_llm(cfg):
    return ToyLLM()

def notify(event):
    Path(os.environ["TOY_LOG"]).open("a").write(f"{event.type} {event.payload['session_id']}\\n")
    return "notified"

def parse(data, origin):
    if isinstance(data, dict) and data.get("format") == "toy-chat":
        return [Conversation("toy-1", [{"role": "user", "content": line} for line in data["lines"]])]
    return None

def broken(cfg):
    raise RuntimeError("unreachable")

class ToyStore:
    """memlane's SQLite store under another name: what a package's backend looks like to memlane."""
    name = "toy"
    def __init__(self, inner):
        self.inner = inner
    def __getattr__(self, attr):
        return getattr(self.inner, attr)

def open_store(config):
    from memlane.store.sqlite import SQLiteStore
    Path(os.environ["TOY_LOG"]).open("a").write(f"store {config.db_path.name}\\n")
    return ToyStore(SQLiteStore(config.db_path))
'''

ENTRY_POINTS = """
[memlane.embedders]
toy = toy_memlane:make_embedder
broken = toy_memlane_missing:make
[memlane.llms]
toy = toy_memlane:make_llm
[memlane.actions]
toy_notify = toy_memlane:notify
[memlane.importers]
toychat = toy_memlane:parse
[memlane.stores]
toy = toy_memlane:open_store
sqlite = toy_memlane:broken
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    (site / "toy_memlane").mkdir(parents=True)
    (site / "toy_memlane" / "__init__.py").write_text(TOY, encoding="utf-8")
    info = site / "toy_memlane-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-memlane\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("TOY_LOG", str(tmp_path / "toy.log"))
    plugins.installed.cache_clear()
    yield site
    plugins.installed.cache_clear()


def test_a_plugin_embedder_llm_action_and_importer_work_as_memlanes_own(toy: Path, tmp_path: Path) -> None:
    rules = [{"name": "tell", "event_type": "session.ended", "actions": ["toy_notify", "extract"]}]
    mem = Memory(Config.load(store={"home": str(tmp_path / "home")}, embedding={"provider": "toy", "background": False},
                             llm={"provider": "toy"}, events={"rules": rules},
                             extraction={"wait_for_llm": True, "every_n_user_messages": 0}))
    try:
        assert mem.embedder.model_id == "toy-words-16" and mem.llm is not None and mem.llm.model_id == "toy-llm"
        mem.add("the user likes green tea", user_id="lin")
        mem.add("the user walks the dog", user_id="lin")
        assert mem.search("green tea", user_id="lin", min_score=0)[0].content == "the user likes green tea"
        assert mem.stats(user_id="lin").embedder == "toy-words-16"

        imported = mem.import_conversations(parse({"format": "toy-chat", "lines": ["I keep bees", "three hives"]}),
                                            user_id="lin")
        assert (imported.sessions, imported.turns) == (1, 2)
        results = mem.end_session("toy-1", user_id="lin")
        assert [(r.action, r.status) for r in results] == [("toy_notify", "done"), ("extract", "done")]
        log = (tmp_path / "toy.log").read_text(encoding="utf-8").split("\n")
        assert "session.ended toy-1" in log and "llm" in log  # the action ran; extraction asked the plugin LLM
        assert any("bees" in m.content for m in mem.list(user_id="lin"))
    finally:
        mem.close()


def test_unknown_and_broken_plugins_are_config_errors_that_say_what(toy: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown 'nope'.*'toy'"):
        Memory(Config.load(store={"home": str(tmp_path / "a")}, embedding={"provider": "nope"}))
    with pytest.raises(ConfigError, match="'broken'.*failed to load"):
        Memory(Config.load(store={"home": str(tmp_path / "b")}, embedding={"provider": "broken"}))
    with pytest.raises(ConfigError, match="llm.provider: unknown 'nope'"):
        Memory(Config.load(store={"home": str(tmp_path / "c")}, embedding={"provider": "hash"}, llm={"provider": "nope"}))
    with pytest.raises(ValidationError, match="not a known conversation format"):
        parse({"format": "other"})


def test_a_plugin_store_backend_is_opened_by_its_name(toy: Path, tmp_path: Path) -> None:
    def config(backend: str, home: str) -> Config:
        return Config.load(store={"home": str(tmp_path / home), "backend": backend},
                           embedding={"provider": "hash", "background": False})

    mem = Memory(config("toy", "home"))
    try:
        assert mem.store.name == "toy"
        mem.add("the user likes green tea", user_id="lin")
        mem.add("the user walks the dog", user_id="lin")
        assert [h.content for h in mem.search("green tea", user_id="lin")][:1] == ["the user likes green tea"]
    finally:
        mem.close()
    assert (tmp_path / "toy.log").read_text(encoding="utf-8") == "store memlane.db\n"  # given the Config
    assert (tmp_path / "home" / "memlane.db").exists()

    # memlane's own names win: the package's "sqlite" (which raises) is never loaded
    mine = Memory(config("sqlite", "own"))
    try:
        assert mine.store.name == "sqlite"
    finally:
        mine.close()
    with pytest.raises(ConfigError, match=r"store.backend: unknown 'nope'; one of \['postgres', 'sqlite', 'toy'\]"):
        Memory(config("nope", "unknown"))
    # a typo is refused when the configuration loads (`memlane config`), not at the first open
    with pytest.raises(ConfigError, match=r"store.backend: unknown 'sqlit'"):
        Config.load(store={"home": str(tmp_path / "typo"), "backend": "sqlit"})


def test_the_cli_of_another_process_finds_the_plugin(toy: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMLANE_HOME": str(tmp_path / "cli"), "MEMLANE_EMBEDDER": "toy",
           "MEMLANE_STORE__BACKEND": "toy",
           "PYTHONPATH": os.pathsep.join([str(toy), *filter(None, [os.environ.get("PYTHONPATH")])])}

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "memlane", *args], capture_output=True, text=True, env=env,
                              timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return done.stdout

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"format": "toy-chat", "lines": ["my cat is called Mochi"]}), encoding="utf-8")
    run("import", str(chat), "--user", "lin")
    assert json.loads(run("stats", "--user", "lin", "--json"))["embedder"] == "toy-words-16"
    hits = json.loads(run("search", "Mochi", "--in", "turns", "--user", "lin", "--json"))
    assert "Mochi" in json.dumps(hits, ensure_ascii=False), textwrap.shorten(json.dumps(hits), 300)
    assert set((tmp_path / "toy.log").read_text(encoding="utf-8").split()) == {"store", "memlane.db"}
