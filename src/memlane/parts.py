"""The parts of the engine a feature module works with, instead of the whole `Memory` façade.

A feature module (sessions, context, lifecycle, markdown, archive, ...) names in its
signatures only what it uses of the engine: `Parts` (configuration, store, clock, LLM), or
one of the Protocols below that add the few verbs it calls back (`Writes`, `Searches`) and
the façade's own follow-ups after a direct write (`Hooks`). Its imports then point downward
only — to this module, never to `memlane.api` — and `Memory` satisfies every one of them
structurally (mypy checks it where `Memory` passes itself). Any other face of the one core
(the server, the CLI, `AsyncMemory`'s sync core) or a test passes what it has:

    @dataclass
    class Engine:  # a Parts: USER.md, MEMORY.md, the archive's context block...
        config: Config
        store: Store
        clock: Callable[[], datetime]
        llm: LLM | None = None

`tests/test_layering.py` guards the direction. The members marked "Memory's own" are its
private helpers: they are part of the contract between the façade and its feature modules,
not of the public API.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # names only: events, jobs and worker import feature modules themselves
    import numpy as np

    from memlane.attachments import Attachments
    from memlane.config import Config
    from memlane.embeddings import Embedder
    from memlane.events import EventBus
    from memlane.jobs import JobReport, JobRunner
    from memlane.llm import LLM
    from memlane.models import Corpus, Hit, MemoryRecord, Scope, Scratchpad, Source
    from memlane.retrieval.filters import Filters
    from memlane.store import Store
    from memlane.worker import JobWorker


class Parts(Protocol):
    """Configuration, store, clock and LLM of one engine (`Memory` is one)."""

    config: Config
    store: Store
    clock: Callable[[], datetime]
    llm: LLM | None


# ---- verbs a module calls back ------------------------------------------------------------


class Writes(Protocol):
    """`Memory.add` / `update` / `delete`: validated, audited, MEMORY.md and events follow."""

    def add(self, content: str, *, user_id: str, agent_id: str | None = None, category: str | None = None,
            importance: float | str | None = None, source: Source = "user", verified: bool | None = None,
            session_id: str | None = None, actor: str = "api") -> MemoryRecord: ...

    def update(self, memory_id: str, *, user_id: str, agent_id: str | None = None, content: str | None = None,
               category: str | None = None, score: float | None = None, actor: str = "api",
               reason: str = "") -> MemoryRecord: ...

    def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None, actor: str = "api",
               reason: str = "") -> MemoryRecord: ...


class Searches(Protocol):
    """`Memory.search`: validated hybrid search of one corpus, an agent scope reading its user's too."""

    def search(self, query: str, *, user_id: str, agent_id: str | None = None, limit: int | None = None,
               filters: Filters | dict[str, Any] | None = None, corpus: Corpus = "memories",
               activate: bool | None = None, min_score: float = 0.0) -> list[Hit]: ...


class Hooks(Protocol):
    """Memory's own steps around a memory row that a module writes itself rather than through
    `Writes` (an undo, a reinforcement): the row's vector, then MEMORY.md following the store."""

    def _embed_one(self, text: str) -> np.ndarray: ...

    def _after_memory_change(self, scope: Scope) -> None: ...


# ---- what each module takes (where `Parts` alone is not enough) ------------------------------


class Archiving(Parts, Protocol):
    """Parts plus the event bus (`events`) and the background worker: the seed-000 archive
    (`archive`, and `forget`, which rewrites its history.json)."""

    events: EventBus

    @property
    def worker(self) -> JobWorker: ...


class Editing(Parts, Writes, Protocol):
    """Parts plus the write verbs: `retention` (a session's TRANSIENT memories)."""


class SessionParts(Parts, Writes, Protocol):
    """Parts, the write verbs and extraction now: `sessions` (compaction, episodes, scratchpad)."""

    def extract(self, session_id: str, *, user_id: str, agent_id: str | None = None,
                through_seq: int | None = None) -> JobReport: ...


class Finding(Parts, Searches, Protocol):
    """Parts plus search: `context.build_context`."""


class Reviewing(Parts, Searches, Protocol):
    """Parts, search and MEMORY.md's follow-up: `review` (the reviewer, "was it used?")."""

    def _after_memory_change(self, scope: Scope) -> None: ...


class Syncing(Parts, Writes, Protocol):
    """Parts, the write verbs, the event bus and Memory's own steps for an imported entry
    (kept with its id and date): `mdsync` (MEMORY.md ↔ store)."""

    events: EventBus
    _md_paused: bool  # set while a batch of writes runs: MEMORY.md is rewritten once, after it

    def _embed_one(self, text: str) -> np.ndarray: ...

    def _after_write(self) -> None: ...  # new rows: the indexer embeds them


class Restoring(Parts, Writes, Hooks, Protocol):
    """Parts, the write verbs, Memory's own steps (`Hooks`) and its audited rewrite: `undo`."""

    def _rewrite(self, scope: Scope, before: MemoryRecord, after: MemoryRecord, kind: str, actor: str,
                 reason: str) -> MemoryRecord: ...


class Porting(Parts, Protocol):
    """Parts plus re-indexing imported rows: `portable` (export / import of a scope)."""

    def flush(self) -> int: ...

    def _index_neighbours(self, scope: Scope, session_id: str, first: int, last: int) -> None: ...


class Sweeping(Parts, Protocol):
    """Parts, the event bus (its rules) and the extraction queue: `lifecycle.sweep_unextracted`."""

    events: EventBus

    @property
    def jobs(self) -> JobRunner: ...


class Working(Sweeping, Protocol):
    """What the background worker runs: the idle sweep and `drain` (`worker.JobWorker`)."""

    def drain(self, now: datetime | None = None, *, limit: int = 100) -> list[JobReport]: ...


class Consolidating(Archiving, Sweeping, Syncing, Reviewing, Protocol):
    """Everything a consolidation pass touches (`lifecycle`): the queue, the archive, MEMORY.md
    and USER.md, the reviewer, and the embedder's model (its dedup threshold)."""

    embedder: Embedder


class Tooling(Parts, Writes, Searches, Hooks, Protocol):
    """The agent tools (`tools.MemoryTools`): search, the write verbs, the scratchpad, the
    attachments, and `remember`'s own near-duplicate check (the embedder's model, Memory's
    validators)."""

    embedder: Embedder

    @property
    def attachments(self) -> Attachments: ...

    def update_scratchpad(self, *, user_id: str, agent_id: str | None = None, focus: str | None = None,
                          done: str | None = None) -> Scratchpad: ...

    def _content(self, content: Any, field: str = "content") -> str: ...

    def _importance(self, importance: Any) -> float: ...
