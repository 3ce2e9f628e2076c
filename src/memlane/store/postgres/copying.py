"""The PostgreSQL store's side of `memlane copy` (store/copy.py, the `Copying` protocol): rows
in as another store read them, with their tsvector built from the texts given as FTS5 holds
them (store/pgtext.py), the sequences moved past the keys copied in, and what the copy reads
besides the tables (turns' neighbour contexts, passage vector rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane.store import pgtext
from memlane.store.pgschema import CORPORA
from memlane.store.postgres.text import PostgresText
from memlane.store.protocol import PASSAGE_BASE, TABLES, table_columns

# the tables whose key a sequence generates, and that key's column
SERIALS = (("turns", "rowid"), ("memories", "rowid"), ("episodes", "rowid"), ("attachments", "rowid"),
           ("extraction_jobs", "id"), ("memory_events", "id"), ("events", "id"))


class PostgresCopying(PostgresText):
    """`Copying` over one PostgreSQL database."""

    def turn_contexts(self) -> dict[int, str]:
        return {int(r): c for r, c in self._q("SELECT rowid, fts_context FROM turns WHERE fts_context != ''")}

    def passage_vector_rows(self) -> list[int]:
        return [int(r[0]) for r in self._q(f"SELECT rowid FROM vec_turns WHERE rowid >= {PASSAGE_BASE}")]

    def insert_raw(self, table: str, rows: Sequence[tuple[Any, ...]], texts: Sequence[tuple[str, str]] = ()) -> None:
        cols, names = TABLES[table][0], table_columns(table)
        corpus, turns = table in CORPORA, table == "turns"
        binary = {"embedding_cache": "vector", "attachments": "data"}.get(table)
        out: list[tuple[Any, ...]] = []
        for i, row in enumerate(rows):
            values = list(row)
            if binary is not None and values[names.index(binary)] is not None:
                values[names.index(binary)] = bytes(values[names.index(binary)])
            if corpus:
                body, context = texts[i]
                vec, n = pgtext.document(pgtext.body(body), *([context] if turns else []))
                values += [vec, n] + ([context] if turns else [])
            out.append(tuple(values))
        extra, marks = "", ", ".join(["%s"] * len(names))
        if corpus:
            extra = ", fts, fts_len" + (", fts_context" if turns else "")
            marks += ", %s::tsvector, %s" + (", %s" if turns else "")
        self._many(f"INSERT INTO {table}({cols}{extra}) VALUES ({marks})", out)

    def advance_keys(self) -> None:
        """Each sequence past the largest key copied in: the next row written gets a new one."""
        for table, col in SERIALS:
            self._x(f"SELECT setval(pg_get_serial_sequence('{table}', '{col}'), "
                    f"GREATEST((SELECT COALESCE(MAX({col}), 0) FROM {table}), 1))")
