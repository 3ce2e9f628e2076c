"""Human-readable files and portability: md export/import, archive, export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from memlane.cli.common import (
    AgentOpt,
    JsonOpt,
    UserOpt,
    _emit_json,
    _memory,
    app,
    out,
)
from memlane.errors import ValidationError
from memlane.markdown import atomic_write

md_app = typer.Typer(
    no_args_is_help=True,
    help="MEMORY.md (seed 001): write it from the store, or apply a person's edits back.\n\n"
         "Example: memlane md export --user lin; edit the file; memlane md import --user lin",
)
app.add_typer(md_app, name="md")


@md_app.command("export")
def md_export(
    user: UserOpt,
    agent: AgentOpt = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write MEMORY.md here instead.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write MEMORY.md and USER.md into the scope's data directory (a .bak keeps the old MEMORY.md).

    Example: memlane md export --user lin
    """
    with _memory() as mem:
        paths = {"memory_md": str(mem.md_export(user_id=user, agent_id=agent, path=output)),
                 "user_md": str(mem.user_profile(user_id=user, agent_id=agent))}
    if as_json:
        _emit_json(paths)
    else:
        out.print(f"wrote {paths['memory_md']}\nwrote {paths['user_md']}")


@md_app.command("import")
def md_import(
    user: UserOpt,
    path: Annotated[Path | None, typer.Argument(help="The edited file (default: the scope's MEMORY.md).")] = None,
    agent: AgentOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the operations, apply nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply a person's edits of MEMORY.md: edited → UPDATE, removed → DELETE, `### category | score`
    without an id → ADD, rewritten with a new "(since 2025-01)" → SUPERSEDE (the fact changed then);
    each audited with actor "import".

    Example: memlane md import --user lin --dry-run
    """
    if path is not None and path.exists() and not path.is_file():  # the reader would call it missing
        kind = "a directory" if path.is_dir() else "not a regular file (a device, pipe or socket)"
        raise ValidationError("file", f"{path} is {kind}; give the MEMORY.md file to read")
    with _memory() as mem:
        ops = mem.md_import(path, user_id=user, agent_id=agent, dry_run=dry_run)
    if as_json:
        _emit_json([{"op": o.op, "memory_id": o.memory_id, "fields": o.fields, "content": o.content,
                     "before": o.before, "line": o.line, "reason": o.reason,
                     **({"valid_from": o.valid_from.isoformat()} if o.valid_from else {})} for o in ops])
        return
    if not ops:
        out.print("MEMORY.md and the store agree: nothing to do")
        return
    table = Table(title=("would apply" if dry_run else "applied") + f" {len(ops)} operation(s)")
    for col in ("op", "id", "fields", "line", "content"):
        table.add_column(col, overflow="fold")
    for o in ops:
        text = f"{o.before} → {o.content}" if o.op in ("UPDATE", "SUPERSEDE") and "content" in o.fields else o.content
        text += f" (since {o.valid_from.date().isoformat()})" if o.op == "SUPERSEDE" and o.valid_from else ""
        text = f"{text} ({o.reason})" if o.reason else text
        table.add_row(o.op, o.memory_id, ", ".join(o.fields), str(o.line or ""), text)
    out.print(table)


@app.command()
def archive(
    user: UserOpt,
    agent: AgentOpt = None,
    if_due: Annotated[bool, typer.Option("--if-due", help="Only when seed 000's triggers hold.")] = False,
    query: Annotated[str | None, typer.Option("--query", "-q", help="Then show the ## Memory block for this input.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Archive history.json into memory/ (raw ≤ 5 days, daily, then monthly summaries), by hand.

    Example: memlane archive --user lin --query "上次部署遇到什么问题"
    """
    with _memory() as mem:
        report = mem.archive(user_id=user, agent_id=agent, force=not if_due)
        block = mem.archive_context(query, user_id=user, agent_id=agent) if query else None
        where = mem.data_dir(user_id=user, agent_id=agent)
    if as_json:
        _emit_json({**report.__dict__, "dir": str(where), "memory_block": block})
        return
    table = Table(show_header=False, title=f"archive of {user} in {where}")
    for key in ("ran", "reason", "archived", "failed", "removed", "history", "unarchived"):
        table.add_row(key, str(getattr(report, key)))
    table.add_row("by age", ", ".join(f"{k} {v}" for k, v in report.buckets.items()))
    table.add_row("files", "\n".join(report.files))
    table.add_row("events", ", ".join(report.events))
    out.print(table)
    if query is not None:
        out.print(block or f"no archived file matches {query!r}", markup=False, highlight=False)


@app.command()
def export(
    user: UserOpt,
    agent: AgentOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl (lossless, for import) or md.")] = "jsonl",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Export a whole scope: memories, turns, sessions, episodes and the audit trail.

    Example: memlane export --user lin --format jsonl --output lin.jsonl
    """
    with _memory() as mem:
        text = mem.export(user_id=user, agent_id=agent, format=fmt)
    if output is None:
        sys.stdout.write(text)
        return
    atomic_write(output, text)
    if as_json:
        _emit_json({"file": str(output), "format": fmt, "bytes": len(text.encode("utf-8"))})
    else:
        out.print(f"exported {user} as {fmt} to {output}")


def import_scope_export(path: Path, user: str, agent: str | None, as_json: bool) -> None:
    with _memory() as mem:
        report = mem.import_(path, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(report.__dict__)
        return
    plural = {"memory": "memories"}
    added = ", ".join(f"{v} {plural.get(k, k + 's')}" for k, v in report.added.items()) or "nothing new"
    skipped = ", ".join(f"{v} {plural.get(k, k + 's')}" for k, v in report.skipped.items())
    out.print(f"imported {added} into {report.user_id}" + (f" (already there: {skipped})" if skipped else ""))


# ---- lifecycle (issue 6) -----------------------------------------------------------------
