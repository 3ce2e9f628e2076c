"""`memlane migrate` and `memlane copy`: the store's schema, and moving a store between
backends (SQLite ↔ PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from memlane import validate
from memlane.cli.common import (
    JsonOpt,
    _emit_json,
    _sqlite_file,
    _store_config,
    _usable_dir,
    app,
    out,
)
from memlane.errors import MemlaneError
from memlane.store import CopyableStore, open_store
from memlane.store.copy import copy_store, open_url


def _open(url: str, option: str, *, create: bool) -> CopyableStore:
    """`open_url`, the option's value checked first: one line of text, and for SQLite a
    directory that can hold the file (when creating) and a file that is a database."""
    validate.ident(option, url, limit=4096)
    if not url.startswith(("postgresql://", "postgres://")):
        path = Path(url.removeprefix("sqlite://"))
        db = path / "memlane.db" if path.is_dir() else path
        if create:
            _usable_dir(db.parent, f"the directory of {option} {db}", f"give {option} a path you can write")
        _sqlite_file(db, f"give {option} another path")
    return open_url(url, create=create)


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
    store = _open(database, "--database", create=True) if database is not None else open_store(_store_config())
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
    src = _open(source, "--from", create=False)
    try:
        dst = _open(destination, "--to", create=True)
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
