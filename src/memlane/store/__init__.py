"""The store: everything memlane keeps goes through the `Store` protocol (store/protocol.py),
and the server's API keys through `KeyTable` (store/keys.py).

`open_store(config)` and `open_key_table(...)` (`open_keys(config)`) are the one place a
backend is chosen: the rest of memlane never imports a concrete store, nor a database driver.
Every method takes a `Scope` first and never returns another scope's rows. `store.backend`
names memlane's own ("sqlite", "postgres") or an installed package's (entry point group
`memlane.stores`, plugins.py).

The package: protocol.py and keys.py, shared.py (what both backends do alike), rows.py (rows
↔ records), sqlite/ (the default backend, with migrations.py, fts5.py, lexindex.py,
postings.py, vindex.py, memcache.py, memrows.py, packed.py and erase.py beside it) and
postgres/ (with pgschema.py, pgtext.py and pglocal.py); copy.py moves a whole store from one
backend to the other.
"""

from __future__ import annotations

from pathlib import Path

from memlane import plugins
from memlane.config import Config
from memlane.errors import ConfigError
from memlane.store.keys import KeyRow, KeyTable
from memlane.store.protocol import (
    PASSAGE_BASE,
    PASSAGE_STRIDE,
    CopyableStore,
    Copying,
    Store,
    passage_rowids,
    vector_owner,
)
from memlane.store.rows import turn_search_text

# memlane's own backends: their names win over a plugin's
BACKENDS = ("sqlite", "postgres")


def open_store(config: Config) -> Store:
    """The configured store: one of memlane's `BACKENDS`, else an installed plugin's."""
    if config.store.backend == "sqlite":
        from memlane.store.lexindex import LexSettings
        from memlane.store.memcache import MemSettings
        from memlane.store.sqlite import SQLiteStore
        from memlane.store.vindex import AnnSettings

        s = config.search
        ann = AnnSettings(threshold=s.ann_threshold, connectivity=s.ann_connectivity,
                          expansion_add=s.ann_expansion_add, expansion_search=s.ann_expansion_search,
                          dtype=s.ann_dtype, threads=s.ann_threads)
        return SQLiteStore(config.db_path, busy_timeout_ms=config.store.busy_timeout_ms, ann=ann,
                           lexical=LexSettings(threshold=s.lexical_threshold, statistics=s.lexical_statistics),
                           memory=MemSettings(threshold=s.memory_cache_threshold, vector_limit=s.ann_threshold,
                                              records=s.memory_cache_records),
                           secure_delete=config.store.secure_delete)
    if config.store.backend == "postgres":
        try:
            from memlane.store.postgres import PostgresStore
            from memlane.store.postgres.base import PgTuning
        except ImportError as exc:
            raise _missing_postgres(exc) from exc
        st = config.store
        return PostgresStore(st.database_url, connect_timeout=st.connect_timeout_seconds,
                             pool_size=st.pool_size, ann_threshold=config.search.ann_threshold,
                             ef_search=config.search.ann_expansion_search,
                             tuning=PgTuning(prune_rows=st.postgres_prune_rows, defer_rows=st.postgres_defer_rows,
                                             fold_chunk=st.postgres_fold_chunk, copy_rows=st.postgres_copy_rows,
                                             pair_terms=st.postgres_pair_terms))
    return _plugin_store(config)


def _plugin_store(config: Config) -> Store:
    """The store of an installed package's backend (entry point group `memlane.stores`,
    plugins.py): its factory takes the Config and returns a `Store`."""
    name = config.store.backend
    if name not in plugins.installed("stores"):
        known = sorted({*BACKENDS, *plugins.installed("stores")})
        raise ConfigError(f"store.backend: unknown {name!r}; one of {known}")
    store: Store = plugins.load("stores", name)(config)
    if not isinstance(getattr(store, "name", None), str) or not callable(getattr(store, "transaction", None)):
        raise ConfigError(f"store.backend {name!r} gave {type(store).__name__}, not a Store "
                          "(memlane.store.protocol: name, transaction(), ...)")
    return store


def open_keys(config: Config) -> KeyTable:
    """The API keys of the configured store (opening it creates or migrates the schema)."""
    url = config.store.database_url if config.store.backend == "postgres" else ""
    return open_key_table(config.db_path, busy_timeout_ms=config.store.busy_timeout_ms, database_url=url,
                          connect_timeout=config.store.connect_timeout_seconds)


def open_key_table(db_path: Path, *, busy_timeout_ms: int = 30_000, database_url: str = "",
                   connect_timeout: float = 5.0) -> KeyTable:
    """The API keys in the PostgreSQL database at `database_url`, or else in the SQLite file
    `db_path` (created, with the whole schema, when it does not exist yet)."""
    if database_url:
        try:
            from memlane.store.postgres.keys import PostgresKeys
        except ImportError as exc:
            raise _missing_postgres(exc) from exc
        return PostgresKeys(database_url, connect_timeout=connect_timeout)
    from memlane.store.sqlite.keys import SQLiteKeys

    return SQLiteKeys(db_path, busy_timeout_ms=busy_timeout_ms)


def _missing_postgres(exc: ImportError) -> ConfigError:
    return ConfigError(f"store.backend 'postgres' needs the postgres extra ({exc.name} is missing): "
                       "pip install 'memlane[postgres]'")


__all__ = ["BACKENDS", "PASSAGE_BASE", "PASSAGE_STRIDE", "CopyableStore", "Copying", "KeyRow", "KeyTable", "Store",
           "open_key_table", "open_keys", "open_store", "passage_rowids", "turn_search_text", "vector_owner"]
