"""The SQLite store's side of `memlane copy` (store/copy.py, the `Copying` protocol): rows in
as another store read them, with their FTS5 entries built from the texts given, and what
the copy reads besides the tables (turns' neighbour contexts, passage vector rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane.store.fts5 import scope_token
from memlane.store.protocol import PASSAGE_BASE, TABLES, table_columns
from memlane.store.sqlite.base import FTS
from memlane.store.sqlite.text import SQLiteText
from memlane.text import index_text


class SQLiteCopying(SQLiteText):
    """`Copying` over one SQLite file."""

    def turn_contexts(self) -> dict[int, str]:
        return {int(r): c for r, c in self._q("SELECT rowid, context FROM turns_fts WHERE context != ''")}

    def passage_vector_rows(self) -> list[int]:
        # sqlite-vec keeps each vector's rowid in its `<table>_rowids` shadow table
        return [int(r[0]) for r in self._q(f"SELECT rowid FROM vec_turns_rowids WHERE rowid >= {PASSAGE_BASE}")]

    def insert_raw(self, table: str, rows: Sequence[tuple[Any, ...]], texts: Sequence[tuple[str, str]] = ()) -> None:
        cols, names = TABLES[table][0], table_columns(table)
        with self._lock:
            self._conn.executemany(f"INSERT INTO {table}({cols}) VALUES ({', '.join('?' * len(names))})",
                                   [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows])
            if table not in FTS:
                return
            at = {n: names.index(n) for n in ("rowid", "user_id", "agent_id")}
            scopes = [scope_token(row[at["user_id"]], row[at["agent_id"]]) for row in rows]
            if table == "turns":
                self._conn.executemany(
                    "INSERT INTO turns_fts(rowid, body, context, scope) VALUES (?, ?, ?, ?)",
                    [(row[at["rowid"]], index_text(body), context, scope)
                     for row, (body, context), scope in zip(rows, texts, scopes, strict=True)])
            else:
                self._conn.executemany(
                    f"INSERT INTO {table}_fts(rowid, body, scope) VALUES (?, ?, ?)",
                    [(row[at["rowid"]], index_text(body), scope)
                     for row, (body, _), scope in zip(rows, texts, scopes, strict=True)])

    def advance_keys(self) -> None:
        """Nothing to do: SQLite's next rowid and id follow the largest in the table."""
