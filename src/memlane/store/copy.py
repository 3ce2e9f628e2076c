"""`memlane copy`: a whole store from one backend to another (SQLite ↔ PostgreSQL), lossless.

Every table's rows go over with their keys (rowids and ids too, so links between tables
hold); the full text is rebuilt in the destination from the rows, with each turn's neighbour
context taken as the source indexed it; the vectors go over as they are (with their model).
The destination must hold no records. Afterwards each table is compared: its row count and
a SHA-256 over its rows in key order, read back from both stores the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlane.errors import ValidationError
from memlane.models import Scope
from memlane.store.fts5 import scope_token
from memlane.store.protocol import PASSAGE_BASE, Store, vector_owner
from memlane.store.rows import episode_text, turn_search_text
from memlane.text import index_text

# table → (its columns, its key); the corpora also get their full text rebuilt
TABLES: dict[str, tuple[str, str]] = {
    "sessions": ("user_id, agent_id, id, started_at, ended_at, summary, message_count, extraction_count, metadata",
                 "user_id, agent_id, id"),
    "turns": ("rowid, id, user_id, agent_id, session_id, seq, role, content, name, tool_calls, created_at, "
              "token_count, archived, compacted, embedded, metadata, import_key", "rowid"),
    "memories": ("rowid, id, user_id, agent_id, content, category, kind, score, confidence, subject, predicate, "
                 "created_at, updated_at, last_activated, activation_count, expires_at, source, verified, "
                 "source_session, status, pinned, metadata, embedded", "rowid"),
    "episodes": ("rowid, id, user_id, agent_id, session_id, summary, goal, outcome, entities, tools_used, started_at, "
                 "ended_at, score, created_at, embedded", "rowid"),
    "scratchpad": ("user_id, agent_id, current_focus, recent_tasks, updated_at", "user_id, agent_id"),
    "extraction_jobs": ("id, user_id, agent_id, session_id, first_seq, last_seq, status, attempts, next_at, "
                        "last_error, created_at", "id"),
    "memory_events": ("id, memory_id, user_id, agent_id, kind, before, after, actor, reason, created_at", "id"),
    "embedding_cache": ("model, hash, vector", "model, hash"),
    "attachments": ("rowid, id, user_id, agent_id, session_id, name, media_type, description, uri, data, size, "
                    "sha256, created_at, expires_at, metadata", "rowid"),
    "events": ("id, user_id, agent_id, type, subject, source, payload, at, status, actions", "id"),
    "meta": ("key, value", "key"),
    "api_keys": ("id, hash, user_id, agent_id, admin, name, created_at, revoked_at", "id"),
}
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


def open_url(url: str, *, create: bool) -> Store:
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


def _rows(store: Store, table: str, cols: str, key: str) -> Iterator[tuple[Any, ...]]:
    where = "" if table != "meta" else " WHERE key NOT IN (" + ", ".join(f"'{k}'" for k in _LOCAL_META) + ")"
    if store.name == "postgres":
        from memlane.store.postgres import PostgresStore

        assert isinstance(store, PostgresStore)
        yield from store._q(f"SELECT {cols} FROM {table}{where} ORDER BY {key}")
        return
    yield from store._q(f"SELECT {cols} FROM {table}{where} ORDER BY {key}")  # type: ignore[attr-defined]


def _contexts(store: Store) -> dict[int, str]:
    """{turn rowid: its neighbour context as the store's full-text column holds it}."""
    if store.name == "postgres":
        return {int(r): c for r, c in store._q("SELECT rowid, fts_context FROM turns WHERE fts_context != ''")}  # type: ignore[attr-defined]
    return {int(r): c for r, c in store._q("SELECT rowid, context FROM turns_fts WHERE context != ''")}  # type: ignore[attr-defined]


def _canonical(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return "b:" + hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, float):
        return repr(value)
    return value


def table_digest(store: Store, table: str) -> tuple[int, str]:
    """(rows, SHA-256 of the rows in key order) of one table."""
    cols, key = TABLES[table]
    h = hashlib.sha256()
    n = 0
    for row in _rows(store, table, cols, key):
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


def _write(dst: Store, table: str, cols: str, batch: Sequence[tuple[Any, ...]], contexts: dict[int, str]) -> None:
    names = [c.strip() for c in cols.split(",")]
    corpus = table in ("memories", "turns", "episodes")
    if dst.name == "postgres":
        from memlane.store import pgtext
        from memlane.store.postgres import PostgresStore

        assert isinstance(dst, PostgresStore)
        extra, marks = "", ", ".join(["%s"] * len(names))
        out: list[tuple[Any, ...]] = []
        for row in batch:
            values = list(row)
            if table == "embedding_cache" or (table == "attachments" and values[names.index("data")] is not None):
                i = names.index("vector" if table == "embedding_cache" else "data")
                values[i] = bytes(values[i])
            if corpus:
                r = dict(zip(names, row, strict=True))
                ctx = contexts.get(int(r["rowid"]), "") if table == "turns" else ""
                vec, n = pgtext.document(pgtext.body(_body(table, r)), *([ctx] if table == "turns" else []))
                values += [vec, n] + ([ctx] if table == "turns" else [])
            out.append(tuple(values))
        if corpus:
            extra = ", fts, fts_len" + (", fts_context" if table == "turns" else "")
            marks += ", %s::tsvector, %s" + (", %s" if table == "turns" else "")
        dst._many(f"INSERT INTO {table}({cols}{extra}) VALUES ({marks})", out)
        return
    conn = dst._conn  # type: ignore[attr-defined]
    conn.executemany(f"INSERT INTO {table}({cols}) VALUES ({', '.join('?' * len(names))})",
                     [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in batch])
    if corpus:
        fts = f"{table}_fts"
        rows = [dict(zip(names, row, strict=True)) for row in batch]
        if table == "turns":
            conn.executemany(f"INSERT INTO {fts}(rowid, body, context, scope) VALUES (?, ?, ?, ?)",
                             [(r["rowid"], index_text(_body(table, r)), contexts.get(int(r["rowid"]), ""),
                               scope_token(r["user_id"], r["agent_id"])) for r in rows])
        else:
            conn.executemany(f"INSERT INTO {fts}(rowid, body, scope) VALUES (?, ?, ?)",
                             [(r["rowid"], index_text(_body(table, r)), scope_token(r["user_id"], r["agent_id"]))
                              for r in rows])


def copy_store(src: Store, dst: Store, src_name: str, dst_name: str) -> CopyReport:
    """Copy every record of `src` into the empty `dst`, then verify each table."""
    held = sum(dst.raw_count(t) for t in ("memories", "turns", "episodes", "sessions"))
    if held:
        raise ValidationError("--to", f"{dst_name} already holds {held} records; copy into an empty database")
    report = CopyReport(source=src_name, destination=dst_name)
    contexts = _contexts(src)
    model, dims = src.meta("vector_model"), src.meta("vector_dims")
    if model and dims:
        src.ensure_vectors(model, int(dims))  # the same model: no change, the store learns the width
    with dst.transaction():
        if model and dims:
            dst.ensure_vectors(model, int(dims))
        for table, (cols, key) in TABLES.items():
            batch: list[tuple[Any, ...]] = []
            for row in _rows(src, table, cols, key):
                batch.append(row)
                if len(batch) >= _BATCH:
                    _write(dst, table, cols, batch, contexts)
                    batch = []
            _write(dst, table, cols, batch, contexts)
        if dst.name == "postgres":
            for table, col in (("turns", "rowid"), ("memories", "rowid"), ("episodes", "rowid"), ("attachments", "rowid"),
                               ("extraction_jobs", "id"), ("memory_events", "id"), ("events", "id")):
                dst._x(f"SELECT setval(pg_get_serial_sequence('{table}', '{col}'), "  # type: ignore[attr-defined]
                       f"GREATEST((SELECT COALESCE(MAX({col}), 0) FROM {table}), 1))")
    if model and dims:
        report.vectors = _copy_vectors(src, dst)
    for table in TABLES:
        a, b = table_digest(src, table), table_digest(dst, table)
        report.tables[table] = {"rows": a[0], "sha256": a[1], "equal": a == b}
    return report


def _passage_rows(store: Store) -> list[int]:
    """Rows of the turns' vector table that are passages (rowid ≥ PASSAGE_BASE)."""
    if store.name == "postgres":
        return [int(r[0]) for r in store._q(f"SELECT rowid FROM vec_turns WHERE rowid >= {PASSAGE_BASE}")]  # type: ignore[attr-defined]
    # sqlite-vec keeps each vector's rowid in its `<table>_rowids` shadow table
    return [int(r[0]) for r in store._q(f"SELECT rowid FROM vec_turns_rowids WHERE rowid >= {PASSAGE_BASE}")]  # type: ignore[attr-defined]


def _copy_vectors(src: Store, dst: Store) -> int:
    n = 0
    for corpus in ("memories", "turns", "episodes"):
        by_scope: dict[Scope, list[int]] = {}
        for rowid, user, agent in _rows(src, corpus, "rowid, user_id, agent_id", "rowid"):
            by_scope.setdefault(Scope(user_id=user, agent_id=agent), []).append(int(rowid))
        if corpus == "turns":  # long turns' passage vectors, each in its turn's scope
            scope_of = {r: s for s, rs in by_scope.items() for r in rs}
            for row in _passage_rows(src):
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
