"""Docs match the code: every CLI command has help text with an example and is shown in the
documentation site, the site's Layout page names every module, the README starts with the two
commands and every page the README links to exists."""

import re
from pathlib import Path

import typer.main

from memlane.cli import app

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
PAGES = {p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md")}


def test_every_cli_command_is_documented():
    group = typer.main.get_command(app)
    assert group.commands  # type: ignore[attr-defined]
    shown = "\n".join(PAGES.values())
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert command.help and "Example" in command.help, name
        assert f"memlane {name}" in shown, f"no page of docs/ shows `memlane {name}`"


def test_readme_starts_with_the_two_commands():
    head = README[:1500]
    assert "make run" in head and "make test" in head


def test_the_layout_names_every_module_and_package():
    layout = PAGES["design/layout.md"]
    package = ROOT / "src" / "memlane"
    names = [p.name for p in package.glob("*.py") if not p.name.startswith("__")]
    names += [f"{p.name}/" for p in package.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    assert "api.py" in names and "store/" in names
    assert [n for n in sorted(names) if n not in layout] == [], "docs/design/layout.md: say what the new module holds"


def test_the_readme_links_only_to_pages_that_exist():
    links = re.findall(r"\]\((docs/[^)#\s]+)", README)
    assert len(links) >= 20
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_the_readme_is_a_front_page():
    """What memlane is, the two commands, a library, a server and a framework example, the
    headline benchmark table and links into the site — not the whole manual."""
    assert len(README) < 12_000, "README: move long content into docs/"
    for heading in ("## The library", "## The server", "## In a framework", "## Benchmarks", "## Documentation"):
        assert heading in README, heading
    assert "from memlane.integrations.langgraph import MemlaneStore" in README
    assert "docs/glossary.md" in README  # every term it uses can be looked up
