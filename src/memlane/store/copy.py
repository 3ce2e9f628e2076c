"""`memlane copy`: a whole store from one backend to another (SQLite ↔ PostgreSQL), lossless.

Every table's rows go over with their keys (rowids and ids too, so links between tables
hold); the full text is rebuilt in the destination from the rows, with each turn's neighbour
context taken as the source indexed it; the vectors go over as they are (with their model).
The destination must hold no records. Afterwards each table is compared: its row count and
a SHA-256 over its rows in key order, read back from both stores the same way.

Both backends implement the `Copying` protocol (store/protocol.py) this module goes
through: a table's rows as stored, out and in, whichever backend is on either side.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlane.errors import ValidationError
from memlane.models import Scope
from memlane.store.protocol import TABLES, CopyableStore, table_columns, vector_owner
from memlane.store.rows import episode_text, turn_search_text

# meta keys that describe one backend's own files and caches, not the data
_LOCAL_META = ("vector_model", "vector_dims", "vector_epoch", "text_epoch", "row_epoch", "forget_pending")
_BATCH = 2_000


@dataclass
class CopyReport:
    source: str
    destination: str
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → rows, sha256, equal
    vectors: int = 0

    @property
    def ok(self) -> bool:
        return all(t["equal"] for t in self.tables.values())


def open_url(url: str, *, create: bool) -> CopyableStore:
    """A store by URL: sqlite:///path/to/memlane.db (or a plain path), or postgresql://…"""
    if url.startswith(("postgresql://", "postgres://")):
        from memlane.store.postgres import PostgresStore

        return PostgresStore(url)
    path = Path(url.removeprefix("sqlite://")) if url.startswith("sqlite://") else Path(url)
    if path.is_dir():
        path = path / "memlane.db"
    if not create and not path.exists():
        raise ValidationError("--from", f"{path} does not exist; give sqlite:///path/to/memlane.db or a home directory")
    from memlane.store.sqlite import SQLiteStore

    return SQLiteStore(path)


# ---- raw rows, the same way from either store ------------------------------------------------


def _rows(store: CopyableStore, table: str) -> Iterator[tuple[Any, ...]]:
    rows = store.raw_rows(table)
    if table == "meta":
        return (r for r in rows if r[0] not in _LOCAL_META)
    return iter(rows)


def _canonical(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return "b:" + hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, float):
        return repr(value)
    return value


def table_digest(store: CopyableStore, table: str) -> tuple[int, str]:
    """(rows, SHA-256 of the rows in key order) of one table."""
    h = hashlib.sha256()
    n = 0
    for row in _rows(store, table):
        h.update(json.dumps([_canonical(v) for v in row], ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
        n += 1
    return n, h.hexdigest()


# ---- writing ---------------------------------------------------------------------------------


def _body(table: str, row: dict[str, Any]) -> str:
    if table == "memories":
        return str(row["content"])
    if table == "episodes":
        return episode_text(row["summary"], row["goal"], row["outcome"], json.loads(row["entities"]))
    calls = json.loads(row["tool_calls"]) if row["tool_calls"] else None
    return turn_search_text(row["content"], calls, row["role"], row["name"])


def _write(dst: CopyableStore, table: str, batch: list[tuple[Any, ...]], contexts: dict[int, str]) -> None:
    """One batch of rows into `dst`; a corpus's with the texts its full text is rebuilt from."""
    if table not in ("memories", "turns", "episodes"):
        dst.insert_raw(table, batch)
        return
    rows = [dict(zip(table_columns(table), row, strict=True)) for row in batch]
    dst.insert_raw(table, batch, [(_body(table, r), contexts.get(int(r["rowid"]), "") if table == "turns" else "")
                                  for r in rows])


def copy_store(src: CopyableStore, dst: CopyableStore, src_name: str, dst_name: str) -> CopyReport:
    """Copy every record of `src` into the empty `dst`, then verify each table."""
    held = sum(dst.raw_count(t) for t in ("memories", "turns", "episodes", "sessions"))
    if held:
        raise ValidationError("--to", f"{dst_name} already holds {held} records; copy into an empty database")
    report = CopyReport(source=src_name, destination=dst_name)
    contexts = src.turn_contexts()
    model, dims = src.meta("vector_model"), src.meta("vector_dims")
    if model and dims:
        src.ensure_vectors(model, int(dims))  # the same model: no change, the store learns the width
    with dst.transaction():
        if model and dims:
            dst.ensure_vectors(model, int(dims))
        for table in TABLES:
            batch: list[tuple[Any, ...]] = []
            for row in _rows(src, table):
                batch.append(row)
                if len(batch) >= _BATCH:
                    _write(dst, table, batch, contexts)
                    batch = []
            _write(dst, table, batch, contexts)
        dst.advance_keys()
    if model and dims:
        report.vectors = _copy_vectors(src, dst)
    for table in TABLES:
        a, b = table_digest(src, table), table_digest(dst, table)
        report.tables[table] = {"rows": a[0], "sha256": a[1], "equal": a == b}
    return report


def _copy_vectors(src: CopyableStore, dst: CopyableStore) -> int:
    n = 0
    for corpus in ("memories", "turns", "episodes"):
        by_scope: dict[Scope, list[int]] = {}
        for rowid, user, agent in src.raw_rows(corpus, ("rowid", "user_id", "agent_id")):
            by_scope.setdefault(Scope(user_id=user, agent_id=agent), []).append(int(rowid))
        if corpus == "turns":  # long turns' passage vectors, each in its turn's scope
            scope_of = {r: s for s, rs in by_scope.items() for r in rs}
            for row in src.passage_vector_rows():
                owner = scope_of.get(vector_owner(row))
                if owner is not None:
                    by_scope[owner].append(row)
        for scope, rowids in by_scope.items():
            for i in range(0, len(rowids), _BATCH):
                vecs = src.vectors(corpus, scope, rowids[i:i + _BATCH])
                if vecs:
                    ids = sorted(vecs)
                    dst.put_vectors(corpus, scope, ids, np.stack([vecs[r] for r in ids]))
                    n += len(ids)
    return n


__all__ = ["TABLES", "CopyReport", "copy_store", "open_url", "table_digest"]
