"""The `memlane` command: readable tables by default, `--json` for machines.

Errors memlane raises on purpose print one line and exit 1; usage errors exit 2. Under
`--json` either is a JSON object on stdout: `{"error": "ValidationError", "detail": "…"}`.
Commands live in the modules of this package by what they work on; importing them
registers them on `app`.
"""

from __future__ import annotations

import importlib
import io
import json
import sys
from collections.abc import Sequence
from typing import Any

import typer
import typer.main

from memlane.cli.common import app, err
from memlane.errors import MemlaneError

# importing a command module registers its commands; `--help` lists them in this order
for _module in ("memories", "demo", "agent", "files", "forgetting", "settings", "server", "database"):
    importlib.import_module(f"memlane.cli.{_module}")

__all__ = ["app", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: MemlaneError → one line on stderr, exit 1; usage error → exit 2."""
    args = list(argv) if argv is not None else sys.argv[1:]
    as_json = "--json" in args
    if isinstance(sys.stdout, io.TextIOWrapper):
        # a file name that is not UTF-8 comes in as lone surrogates; echoed back, it prints as
        # \udcff (inside JSON, the same escape) instead of failing the write
        sys.stdout.reconfigure(errors="backslashreplace")
    command = typer.main.get_command(app)
    _bare_flags(command, typer.Context(command, help_option_names=["-h", "--help"]))
    try:
        code = command.main(args=args, prog_name="memlane", standalone_mode=False)
    except typer.Abort:
        _fail(as_json, "Aborted", "interrupted", 1)
    except typer.TyperException as exc:  # usage errors: a missing --user, a bad --category ...
        if as_json:
            _fail(True, "UsageError", exc.format_message(), exc.exit_code)
        show = getattr(exc, "show", None)  # click's own rendering: usage line, hint, message
        if show is not None:
            show()
        else:
            err.print(f"[red]error:[/] {exc.format_message()}", highlight=False)
        sys.exit(exc.exit_code)
    except MemlaneError as exc:
        _fail(as_json, type(exc).__name__, str(exc), 1, getattr(exc, "field", None))
    sys.exit(code if isinstance(code, int) else 0)


def _fail(as_json: bool, kind: str, detail: str, code: int, field: str | None = None) -> None:
    if as_json:
        body = {"error": kind, "detail": detail, **({"field": field} if field else {})}
        sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
    else:
        err.print(f"[red]error:[/] {detail}", highlight=False)
    sys.exit(code)


def _bare_flags(command: Any, ctx: typer.Context) -> None:
    """Show each flag (--json, --yes, --version, -h ...) in help as a bare flag: this typer
    prints a `<bool>` type beside it, as if it took a value."""
    help_option = command.get_help_option(ctx)  # made once and cached on the command
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _bare_flags(sub, ctx)
