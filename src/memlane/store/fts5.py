"""The SQLite store's FTS5 tables and the scope token each of their rows carries.

A leaf module: the migrations that create the tables, the caches that read them
(lexindex.py) and forgetting (erase.py) all name them from here, not from each other.
"""

from __future__ import annotations

import hashlib

# FTS5 table → (base table, its text columns); the scope column is always the last
FTS_TABLES = {"memories_fts": ("memories", ("body",)), "turns_fts": ("turns", ("body", "context")),
              "episodes_fts": ("episodes", ("body",))}


def scope_token(user_id: str, agent_id: str) -> str:
    """One FTS5 token per scope: letters then digits only, so porter leaves it whole."""
    digest = hashlib.sha1(f"{user_id}\x00{agent_id}".encode()).digest()
    return f"zs{int.from_bytes(digest[:8], 'big'):020d}"
