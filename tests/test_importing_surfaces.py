"""The importers from the CLI, over REST (real HTTP on 127.0.0.1) and through the web UI's
import page: preview, confirm, another user's scope untouched."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memlane import Memory
from memlane.testing import HashEmbedder
from tests.cli_support import run_cli
from tests.conftest import make_config
from tests.webui_support import Site, login, token, ui_site

DATA = Path(__file__).parent / "data" / "imports"


def cli(home: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`memlane ARGS` on `home`, given only the non-MEMLANE_ environment: in this process through
    the console script's `main` (tests/cli_support.py), or with `process` in a new one."""
    return run_cli(args, {"MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}, clean=True, process=process)


def test_cli_import_from_dry_run_then_for_real(tmp_path: Path) -> None:
    home = tmp_path / "home"
    f = str(DATA / "chatgpt_conversations.json")
    dry = cli(home, "import", "--from", "chatgpt", f, "--user", "lin", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would import 8 turns in 2 sessions and 0 memories" in dry.stdout
    assert "I'm planning a trip to Lisbon" in dry.stdout and "skipped" in dry.stdout and "A loop" in dry.stdout
    done = cli(home, "import", f, "--user", "lin", "--json")  # detected: only the ChatGPT reader knows the shape
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["imports"][0]
    assert (report["format"], report["turns"], report["skipped"][0]["record"]) == (
        "chatgpt", 8, "chatgpt_conversations.json: conversations[1] ('A loop')")
    again = cli(home, "import", f, "--user", "lin")
    assert "imported 0 turns" in again.stdout and "8 already imported" in again.stdout
    notes = cli(home, "import", str(DATA / "notes"), "--user", "lin")
    assert "6 memories" in notes.stdout, notes.stdout + notes.stderr
    assert "Water the basil daily" in cli(home, "list", "--user", "lin").stdout
    assert "no memories" in cli(home, "list", "--user", "bob").stdout


def test_cli_help_says_it_all() -> None:
    done = cli(Path("/nonexistent-home"), "import", "--help", process=True)
    text = " ".join(done.stdout.split())
    for word in ("--from", "chatgpt", "claude", "mem0", "letta", "markdown", "--dry-run", "--source-user",
                 "memlane import --from chatgpt conversations.json --user lin --dry-run"):
        assert word in text, word


def test_cli_keeps_memlanes_own_conversation_format(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hello there"}]), "utf-8")
    done = cli(tmp_path / "home", "import", str(path), "--user", "lin")
    assert done.returncode == 0 and "imported 1 turns in 1 sessions" in done.stdout, done.stdout + done.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    home = tmp_path_factory.mktemp("ui") / "data"
    mem = Memory(make_config(home), embedder=HashEmbedder())
    try:
        with ui_site(mem, "server") as s:
            yield s
    finally:
        mem.close()


def api(site: Site, name: str) -> httpx.Client:
    return httpx.Client(base_url=site.base, headers={"Authorization": f"Bearer {site.key[name]}"}, timeout=60)


def test_rest_import_from_each_format(site: Site) -> None:
    with api(site, "lin") as c, api(site, "bob") as bob:
        body = (DATA / "claude_conversations.json").read_bytes()
        dry = c.post("/v1/import", params={"from": "claude", "dry_run": "true"}, content=body,
                     headers={"Content-Type": "application/json"})
        assert dry.status_code == 200, dry.text
        assert dry.json()["turns"] == 3 and dry.json()["dry_run"] is True
        assert c.get("/v1/sessions").json()["sessions"] == []
        r = c.post("/v1/import", params={"from": "claude"}, content=body, headers={"Content-Type": "application/json"})
        report = r.json()
        assert r.status_code == 200 and report["turns"] == 3 and "file" not in report
        assert "chat_messages[3]" in report["skipped"][0]["record"]
        assert "memlane-import" not in r.text  # the server's temporary file is never named
        again = c.post("/v1/import", params={"from": "claude"}, content=body, headers={"Content-Type": "application/json"})
        assert again.json()["turns"] == 0 and again.json()["already"] == 3
        mem0 = c.post("/v1/import", params={"from": "mem0", "source_user": "alex"},
                      content=(DATA / "mem0_get_all.json").read_bytes(), headers={"Content-Type": "application/json"})
        assert mem0.json()["memories"] == 2
        notes = {"notes": {"ana.md": "---\ntags: [family]\n---\n- Ana lives in Lisbon\n", "../escape.md": "- no"}}
        bad = c.post("/v1/import", params={"from": "markdown"}, json=notes)
        assert bad.status_code == 422 and bad.json()["error"] and "relative file name" in bad.json()["detail"]
        del notes["notes"]["../escape.md"]
        ok = c.post("/v1/import", params={"from": "markdown"}, json=notes)
        assert ok.status_code == 200 and ok.json()["memories"] == 1, ok.text
        contents = [m["content"] for m in c.get("/v1/memories").json()["memories"]]
        assert "Ana lives in Lisbon" in contents and "Works as a nurse in Porto" in contents
        broken = c.post("/v1/import", params={"from": "chatgpt"}, content=b"{not json",
                        headers={"Content-Type": "application/json"})
        assert broken.status_code == 422 and "memlane-import" not in broken.text
        assert bob.get("/v1/memories").json()["memories"] == []  # another user's scope stays empty
        assert bob.get("/v1/sessions").json()["sessions"] == []


def test_web_ui_import_page_preview_then_confirm(site: Site) -> None:
    c = login(site.base, site.key["bob"])
    try:
        page = c.get("/import")
        assert page.status_code == 200 and 'name="from"' in page.text
        text = (DATA / "letta_agent.af").read_text("utf-8")
        preview = c.post("/files/import", data={"csrf": token(c, "/import"), "from": "letta", "text": text})
        assert preview.status_code == 200, preview.text[:500]
        assert "Would add: 3 turns in 1 conversations, 4 memories" in preview.text
        assert "Hi Sam, I just moved to Utrecht." in preview.text
        assert c.get("/memories").text.count("Lives in Utrecht") == 0  # nothing written by the preview
        digest = preview.text.split('name="digest" value="')[1].split('"')[0]
        done = c.post("/files/import", data={"csrf": token(c, "/import"), "from": "letta", "text": text,
                                             "apply": "1", "digest": digest})
        assert done.status_code == 200 and "Imported: 3 turns, 4 memories" in done.text
        assert "Lives in Utrecht" in c.get("/memories").text
        bad = c.post("/files/import", data={"csrf": token(c, "/import"), "from": "chatgpt", "text": "{oops"})
        assert bad.status_code == 422 and "not valid JSON" in bad.text and "memlane-webui" not in bad.text
    finally:
        c.close()
    with api(site, "lin") as lin:
        assert not any("Utrecht" in m["content"] for m in lin.get("/v1/memories").json()["memories"])
