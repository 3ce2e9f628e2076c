"""Docs match the code: every CLI command has help text with an example and is in the README."""

from pathlib import Path

import typer.main

from memlane.cli import app

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_cli_command_is_documented():
    group = typer.main.get_command(app)
    assert group.commands  # type: ignore[attr-defined]
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert command.help and "Example" in command.help, name
        assert f"memlane {name}" in README, f"README does not show `memlane {name}`"


def test_readme_starts_with_the_two_commands():
    head = README[:1500]
    assert "make run" in head and "make test" in head


def test_the_layout_names_every_module_and_package():
    layout = README[README.index("### Layout"):README.index("## Benchmarks")]
    package = Path(__file__).parents[1] / "src" / "memlane"
    names = [p.name for p in package.glob("*.py") if not p.name.startswith("__")]
    names += [f"{p.name}/" for p in package.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    assert "api.py" in names and "store/" in names
    assert [n for n in sorted(names) if n not in layout] == [], "README's Layout: say what the new module holds"
