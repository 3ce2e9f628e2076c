"""`memlane migrate` and `memlane copy`: the store's schema, and moving a store between
backends (SQLite ↔ PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table

from memlane.cli.common import JsonOpt, _config, _emit_json, app, out
from memlane.errors import MemlaneError
from memlane.store import open_store
from memlane.store.copy import copy_store, open_url


@app.command("migrate")
def migrate(
    database: Annotated[str | None, typer.Option("--database", help="sqlite:///path/memlane.db or postgresql://… "
                                                 "(else the configured store).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring the store's schema up to date (named, ordered migrations, each in a transaction
    with its record) and list the migrations it has run. Every open does this too; run it
    once before starting several server processes on a new PostgreSQL database.

    Example: MEMLANE_DATABASE_URL=postgresql://memlane@db/memlane memlane migrate
    """
    store = open_url(database, create=True) if database else open_store(_config())
    try:
        done = store.migrations()
    finally:
        store.close()
    rows = [{"name": n, "applied_at": datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")} for n, t in done]
    if as_json:
        _emit_json({"backend": store.name, "migrations": rows})
        return
    table = Table(title=f"{store.name}: {len(rows)} migrations applied")
    table.add_column("migration")
    table.add_column("applied at (UTC)")
    for r in rows:
        table.add_row(r["name"], r["applied_at"])
    out.print(table)


@app.command("copy")
def copy(
    source: Annotated[str, typer.Option("--from", help="sqlite:///path/memlane.db (or a home directory), "
                                        "or postgresql://…")],
    destination: Annotated[str, typer.Option("--to", help="An empty store: postgresql://… or sqlite:///path.db")],
    as_json: JsonOpt = False,
) -> None:
    """Copy a whole store to another backend, losslessly: every table's rows with their keys,
    the full text rebuilt from them, the vectors as they are. The destination must be empty.
    Each table is then verified by its row count and a SHA-256 of its rows; exit 1 if any differs.

    Example: memlane copy --from sqlite:///$HOME/.memlane/memlane.db --to postgresql://memlane@db/memlane
    """
    src = open_url(source, create=False)
    try:
        dst = open_url(destination, create=True)
        try:
            report = copy_store(src, dst, source, destination)
        finally:
            dst.close()
    finally:
        src.close()
    if as_json:
        _emit_json({"ok": report.ok, "vectors": report.vectors, "tables": report.tables})
    else:
        table = Table(title=f"{source} → {destination}")
        for col in ("table", "rows", "sha256", "verified"):
            table.add_column(col)
        for name, t in report.tables.items():
            table.add_row(name, str(t["rows"]), t["sha256"][:16], "yes" if t["equal"] else "[red]NO[/]")
        out.print(table)
        out.print(f"vectors copied: {report.vectors}", highlight=False)
    if not report.ok:
        raise MemlaneError("the copy differs from its source in: "
                           + ", ".join(n for n, t in report.tables.items() if not t["equal"]))
