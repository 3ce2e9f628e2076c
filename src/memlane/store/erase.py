"""Forgetting in the SQLite store: rows, their indexes, the audit trail, and the files the
store keeps next to the database (forget.py decides what to forget; this removes it).

Four things make a deleted text leave the database file, not just the tables (with
`store.secure_delete`, the default): `PRAGMA secure_delete` (set on every connection)
overwrites freed cells and pages with zeros; FTS5's `secure-delete` option (set on open, for
memories and episodes) removes a deleted row's tokens from the index segments instead of
writing a delete marker beside them; turns_fts, rewritten on every ingest, is optimized after
a forgetting call that touches turns; and a WAL checkpoint
(`checkpoint`) moves the zeroed pages into the database and truncates the -wal file, which
held the old page images.

The caches of lexindex.py, memcache.py and vindex.py are files that may still hold a
forgotten text (terms, records) or a scope's vectors: `unlink_caches` removes them at once.
The in-process caches stay exact through their change logs and are saved again later,
without what was forgotten (postings.py drops unused terms, memrows.py unused texts).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memlane.store.fts5 import FTS_TABLES
from memlane.store.shared import scope_where

# tables whose rows are one scope's but which forget.py handles row by row first (their
# full-text and vector entries), or which must outlive a purge (the tombstone goes in after)
_CORPORA = ("memories", "turns", "episodes")


def temp_path(path: Path) -> Path:
    """A temporary name beside `path` that no other writer uses: process, thread and a random
    part (two stores of one process saving the same cache once collided on `<name>.<pid>.tmp`).
    The writer renames it over `path` with os.replace, which is atomic."""
    return path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(4)}.tmp")


def _writer_alive(name: str) -> bool:
    """Whether the process named in a temp file's name (`temp_path`, or the older
    `<name>.<pid>.tmp`) still runs; a name without one counts as alive (left alone)."""
    parts = name.rsplit(".", 2)
    if len(parts) < 3 or parts[2] != "tmp":
        return True
    pid = parts[1].split("-", 1)[0]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temps(directory: Path) -> int:
    """Delete temp files whose writer died (a kill -9 mid-save leaves them, with the texts the
    cache held); returns how many."""
    removed = 0
    with contextlib.suppress(OSError):
        for path in directory.glob("*.tmp"):
            if not _writer_alive(path.name):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
    return removed


def unlink_caches(home: Path, prefix: str, corpora: Iterable[str]) -> None:
    """Remove the cache files that may hold texts of `corpora` (lexical postings, memory
    records), and stale temp files of every cache directory."""
    for corpus in corpora:
        with contextlib.suppress(OSError):
            (home / "lexindex" / f"{prefix}-{corpus}.npz").unlink()
        if corpus == "memories":
            with contextlib.suppress(OSError):
                (home / "memcache" / f"{prefix}-memories.npz").unlink()
    for sub in ("lexindex", "memcache", "vindex"):
        remove_stale_temps(home / sub)


# FTS5 tables that keep `secure-delete` on. Not turns_fts: each new turn re-indexes its
# neighbours (their context column), and deleting in place cost ~3-4x per add_messages and grew
# with the index (2k turns: 2.6 -> 9.8 ms, 8k: 4.0 -> 16.1 ms per one-message call); a
# forgetting call that touches turns optimizes turns_fts instead (`optimize_turns`).
SECURE_FTS = ("memories_fts", "episodes_fts")


def fts_secure_delete(conn: Any, on: bool) -> None:
    """Set FTS5's `secure-delete` option (SQLite >= 3.42) as the config says, in the caller's
    transaction: on for SECURE_FTS, off for the others. A persistent option of each table,
    written only when it differs. On, a deleted row's tokens leave the index segments at
    once; off, a delete marker is written beside them and both stay until a merge."""
    for fts in FTS_TABLES:
        want = int(on and fts in SECURE_FTS)
        rows = conn.execute(f"SELECT v FROM {fts}_config WHERE k = 'secure-delete'").fetchall()
        if int(rows[0][0] if rows else 0) != want:
            conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('secure-delete', ?)", (want,))


def optimize_turns(conn: Any) -> None:
    """Merge turns_fts into one segment: the entries of deleted rows and of replaced versions
    (a turn's older neighbour context quoted a forgotten turn), cancelled by delete markers
    but still in older segments, are dropped with the markers (~16 µs a turn measured: 1M
    turns ~16 s, holding the write lock)."""
    conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")


# meta key: forgetting calls whose commit is done and whose files are not scrubbed yet
PENDING = "forget_pending"


def mark_pending(conn: Any) -> None:
    """Count one forgetting call in its own transaction: if the process dies before
    `SQLiteStore.forget_files`, the next open scrubs the files (`scrub_if_pending`)."""
    conn.execute("INSERT INTO meta(key, value) VALUES (?, '1') "
                 "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1", (PENDING,))


def done_pending(conn: Any) -> None:
    conn.execute("UPDATE meta SET value = MAX(0, CAST(value AS INTEGER) - 1) WHERE key = ?", (PENDING,))


def pending(conn: Any) -> bool:
    rows = conn.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", (PENDING,)).fetchall()
    return bool(rows and rows[0][0] > 0)


_CHECKPOINT_WAIT_MS = 200  # not from a seed: a forgetting call waits this long at most for readers


def checkpoint(conn: Any, busy_timeout_ms: int) -> None:
    """Copy the WAL into the database and truncate it: the -wal file held the page images
    from before the delete. A TRUNCATE checkpoint waits for readers of older snapshots, so
    it waits briefly (not the store's whole busy timeout); while one reads, part of the WAL
    stays until a later checkpoint (SQLite runs one every 1000 pages, and on close)."""
    conn.set_busy_timeout(_CHECKPOINT_WAIT_MS)
    try:
        with contextlib.suppress(Exception):  # best effort: a busy reader must not fail a delete
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.set_busy_timeout(busy_timeout_ms)


def scope_tables(conn: Any) -> list[str]:
    """Every ordinary table holding a `user_id` column, besides the three corpora: sessions,
    scratchpad, jobs, events and whatever later migrations add (a purge must miss none)."""
    out = []
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
        "AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall():
        if name in _CORPORA:
            continue
        cols = {r[1] for r in conn.execute(f'PRAGMA table_info("{name}")').fetchall()}
        if "user_id" in cols:
            out.append(str(name))
    return out


def delete_scope_rows(conn: Any, user_id: str, agent_id: str | None) -> dict[str, int]:
    """Delete the scope's rows of every `scope_tables` table and the leases named after it in
    `meta`; returns rows deleted per table. Runs in the caller's transaction."""
    where, params = scope_where(user_id, agent_id, "?")
    counts: dict[str, int] = {}
    for table in scope_tables(conn):
        conn.execute(f'DELETE FROM "{table}" WHERE {where}', params)
        counts[table] = conn.changes()
    # jobs.ScopeLock keys its leases "extract-lock:<user>\x1f<agent>"
    lease = f"extract-lock:{user_id}\x1f" + ("" if agent_id is None else agent_id)
    exact = agent_id is not None
    conn.execute("DELETE FROM meta WHERE substr(key, 1, length(?)) = ? AND (? = 0 OR key = ?)",
                 (lease, lease, int(exact), lease))
    return counts


def rowids_of(conn: Any, corpus: str, user_id: str, agent_id: str | None,
              extra: str = "", extra_params: Sequence[Any] = ()) -> list[tuple[int, str]]:
    """[(rowid, agent_id)] of the scope's rows of a corpus (with an extra condition)."""
    where, params = scope_where(user_id, agent_id, "?")
    return [(int(r[0]), str(r[1])) for r in conn.execute(
        f"SELECT rowid, agent_id FROM {corpus} WHERE {where}{extra}", (*params, *extra_params)).fetchall()]
