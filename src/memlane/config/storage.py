"""Where and how memories are kept: the store, the file archive, the lifecycle passes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from memlane import plugins
from memlane.config.base import _Section


class StoreConfig(_Section):
    home: Path = Path("~/.memlane")  # MEMLANE_HOME; memlane.toml is read from here
    db_name: str = "memlane.db"
    # "sqlite" (one file under home) or "postgres" (PostgreSQL + pgvector at database_url);
    # a postgresql:// database_url alone selects "postgres"; or an installed plugin's (plugins.py)
    backend: str = "sqlite"
    database_url: str = ""  # MEMLANE_DATABASE_URL: postgresql://user:password@host:port/dbname
    # not from a seed: a dead database fails a call after this long (BackendError), not never
    connect_timeout_seconds: float = Field(5.0, gt=0)
    pool_size: int = Field(8, ge=1)  # not from a seed: connections per process (server threads + worker)
    # Not from a seed (issue 34, PostgreSQL at scale; bench/scale.py). Full text: a query whose
    # words hold at least this many rows of a scope ranks its commonest words' rows by bound,
    # not each (MaxScore; the same top rows: tests/test_postgres_scale.py)
    postgres_prune_rows: int = Field(2_048, ge=1)
    # a call storing this many vectors of one large scope or more (an import, `memlane copy`,
    # a bulk insert) leaves them out of the HNSW graph, scanned exactly until a background fold
    # moves them in: a graph insert is ~2-5 ms on 2 cores, so 10k rows held the call 20-50 s
    postgres_defer_rows: int = Field(64, ge=1)
    postgres_fold_chunk: int = Field(256, ge=1)  # vectors folded into the graph a transaction: ~1 s of locks
    # memories inserted at once from which one COPY replaces the INSERT pipeline (~2x the rows/s)
    postgres_copy_rows: int = Field(32, ge=1)
    # full text over a large scope: a query of up to this many words first ranks only the rows
    # holding two of them or more (the OR of each pair's AND, so one pair a word), enough when
    # those outscore any row holding one word (exact); a pasted page's pairs would be thousands
    postgres_pair_terms: int = Field(8, ge=0)
    busy_timeout_ms: int = Field(30_000, ge=0)  # long enough for bursts of writers in WAL mode
    max_content_chars: int = Field(16_000, ge=1)  # one memory; larger input is rejected
    # not from a seed: one conversation turn. People paste documents; LongMemEval has turns of
    # 23,795 characters. Stored whole; only the first embedding.max_chars are embedded
    max_turn_chars: int = Field(200_000, ge=1)
    max_import_bytes: int = Field(200_000_000, ge=1)
    # Not from a seed (issue 33): what `memlane import --dry-run` (and the web UI's preview)
    # lists of what would be added
    import_preview_items: int = Field(5, ge=0)
    # Not from a seed (issue 33): one non-text part of an imported message (an image pointer, a
    # tool's output) kept in the turn's metadata, cut to this many characters of JSON
    import_part_chars: int = Field(2_000, ge=16)
    # Not from a seed (issue 28): one add_messages call is bounded work: 50,000 tiny messages
    # ran over 4 minutes (offline extraction runs in the call). A conversation is loaded whole
    # by import (`memlane import`, POST /v1/import, import_conversations), uncapped; a server
    # takes fewer a request (server.max_messages_per_request)
    max_messages_per_call: int = Field(1_000, ge=1)
    max_call_chars: int = Field(2_000_000, ge=1)  # the characters of all of one call's messages
    # not from a seed (issue 12): deleted text is zeroed in the file (SQLite secure_delete,
    # FTS5 secure-delete for memories and episodes; turns' index optimized after a forgetting
    # call, ~16 µs a stored turn). Off, forgotten text lingers in free pages and index
    # segments until a VACUUM or merge
    secure_delete: bool = True
    # not from a seed: metadata / tool_calls are JSON the caller hands in; bounded so one
    # record cannot bloat every export, or nest deep enough to break a JSON parser
    max_metadata_bytes: int = Field(65_536, ge=2)
    max_metadata_depth: int = Field(8, ge=1)
    # not from a seed: a framework store's value (LangGraph's `put`) rides in metadata as JSON
    # text, so max_metadata_depth does not bound it; this does, far below the ~1,000 levels at
    # which Python's json (recursive) fails, and above any value a person writes by hand
    max_value_depth: int = Field(64, ge=1, le=500)
    # not from a seed: one attachment's bytes kept in the database (seed 002 §8 attachments);
    # a larger file is stored by reference (uri)
    max_attachment_bytes: int = Field(10_000_000, ge=0)

    @model_validator(mode="after")
    def _backend_of_url(self) -> StoreConfig:
        url = self.database_url.strip()
        if url and not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"store.database_url must be a postgresql:// URL, got {url.split(':', 1)[0]!r}://…; "
                             "leave it empty for SQLite under store.home")
        if url and self.backend == "sqlite":
            self.backend = "postgres"
        if self.backend not in ("sqlite", "postgres") and self.backend not in plugins.installed("stores"):
            known = sorted({"sqlite", "postgres", *plugins.installed("stores")})
            raise ValueError(f"store.backend: unknown {self.backend!r}; one of {known} (a plugin's name once "
                             "its package is installed)")
        if self.backend == "postgres" and not url:
            raise ValueError("store.backend is 'postgres' but store.database_url is empty; set MEMLANE_DATABASE_URL="
                             "postgresql://user:password@host:5432/dbname")
        return self


class ArchiveConfig(_Section):
    history_soft_cap: int = 200  # seed 000
    history_hard_cap: int = 300  # seed 000
    history_hard_bytes: int = 10 * 1024 * 1024  # seed 000
    trigger_unarchived: int = 100  # seed 000
    trigger_hours: float = 6.0  # seed 000
    raw_days: int = 5  # seed 000: ≤5 days copied raw
    slug_max: int = 32  # seed 000
    bm25_k1: float = 1.2  # seed 000
    bm25_b: float = 0.75  # seed 000
    bm25_min_score: float = 0.2  # seed 000


class LifecycleConfig(_Section):
    schedule_hours: float = 6.0  # seed 000: every 6 hours
    nightly_at: str = ""  # seed 002: e.g. "03:00"; overrides schedule_hours when set
    markdown_primary: bool = False  # seed 001: MEMORY.md rewritten on every save
    refresh_files: bool = True  # seed 002 §7: consolidation ends by refreshing MEMORY.md and USER.md
    # not from a seed: how many of a scope's recent MEMORY.md writes keep their manifest (what each
    # file held), so a file an older or concurrent writer left behind can still be read as edited
    md_manifests_kept: int = Field(8, ge=1)
    archive_turns: bool | None = None  # seed 000: archive old turns into memory/; None = only under file-archive
    # seed 000: history.json is kept per turn (synced, capped, archived when a trigger holds)
    history_per_turn: bool = False
    reviewer: bool | None = None  # seed 003 MemoryReviewer (needs an LLM); None = only under companion
    review_max_per_run: int = Field(50, ge=0)  # not from a seed: bounds the reviewer's LLM calls per scope and run
    scheduler_poll_seconds: float = Field(60.0, gt=0)  # how often the scheduler thread checks whether a run is due
