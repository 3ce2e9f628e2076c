"""The `memlane` command: readable tables by default, `--json` for machines.

Errors memlane raises on purpose print one line and exit 1; usage errors exit 2.
Commands live in the modules of this package by what they work on; importing them
registers them on `app`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from memlane.cli.common import app, err
from memlane.errors import MemlaneError

# importing a command module registers its commands; `--help` lists them in this order
for _module in ("memories", "demo", "agent", "files", "forgetting"):
    importlib.import_module(f"memlane.cli.{_module}")

__all__ = ["app", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: MemlaneError → one line on stderr, exit 1."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="memlane")
    except MemlaneError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(1)
