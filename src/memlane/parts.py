"""The parts of the engine a feature module works with, instead of the whole `Memory` façade.

A feature module (sessions, context, lifecycle, markdown, archive, ...) names in its
signatures only what it uses of the engine: `Parts` (configuration, store, clock, LLM), or
one of the Protocols below that add the few verbs it calls back (`Writes`, `Searches`) or
the embedder and the engine's notices for a row it writes itself (`Embedding`: signals.py).
Its imports then point downward
only — to this module, never to `memlane.api` — and `Memory` satisfies every one of them
structurally (mypy checks it where `Memory` passes itself). Any other face of the one core
(the server, the CLI, `AsyncMemory`'s sync core) or a test passes what it has:

    @dataclass
    class Engine:  # a Parts: USER.md, MEMORY.md, the archive's context block...
        config: Config
        store: Store
        clock: Callable[[], datetime]
        llm: LLM | None = None

`tests/test_layering.py` guards the direction. No Protocol names a private member: what
follows a write (MEMORY.md, the indexer) subscribes to the engine's notices instead of being
called back. The engine's services (the worker, the extraction queue, the attachments) are
named by their Protocols in `services.py`, never by their classes, which take these
Protocols themselves: this module imports nothing above the core and the engine's leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # names only, and only of modules below every feature (no loop of imports)
    from memlane.config import Config
    from memlane.embeddings.base import Embedder
    from memlane.events import EventBus
    from memlane.extraction import JobReport
    from memlane.llm.base import LLM
    from memlane.models import Corpus, Hit, MemoryRecord, Scratchpad, Source
    from memlane.retrieval.filters import Filters
    from memlane.services import AttachmentSearch, Background, ExtractionQueue, Scheduling
    from memlane.signals import Signals
    from memlane.store import Store
    from memlane.vectors import Vectors


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


class Embedding(Parts, Protocol):
    """Parts plus the embedder and the engine's notices (signals.py): what a module needs to
    write a memory row itself rather than through `Writes` (an undo, a reinforcement, an
    imported entry) — its vector (`indexing.embed_one`), then `signals.send("memory.changed")`
    for whatever follows the store (MEMORY.md)."""

    embedder: Embedder
    signals: Signals


# ---- what each module takes (where `Parts` alone is not enough) ------------------------------


class Archiving(Parts, Protocol):
    """Parts plus the event bus (`events`) and the background worker: the seed-000 archive
    (`archive`, and `forget`, which rewrites its history.json)."""

    events: EventBus

    @property
    def worker(self) -> Background: ...


class Editing(Parts, Writes, Protocol):
    """Parts plus the write verbs: `retention` (a session's TRANSIENT memories)."""


class SessionParts(Parts, Writes, Protocol):
    """Parts, the write verbs and extraction now: `sessions` (compaction, episodes, scratchpad)."""

    def extract(self, session_id: str, *, user_id: str, agent_id: str | None = None,
                through_seq: int | None = None) -> JobReport: ...


class Finding(Parts, Searches, Protocol):
    """Parts plus search: `context.build_context`."""


class Reading(Parts, Protocol):
    """Parts plus the embedder's side (`vectors.Vectors`: the query cache, the null texts, the
    language axes): `reading.search`."""

    vectors: Vectors


class Noticing(Embedding, Protocol):
    """Parts, the embedder, the engine's notices and the event bus: `writes` (a memory's
    audited add and delete)."""

    events: EventBus


class Reviewing(Parts, Searches, Protocol):
    """Parts, search and the engine's notices: `review` (the reviewer, "was it used?")."""

    signals: Signals


class Syncing(Embedding, Writes, Protocol):
    """Parts, the embedder and notices, the write verbs and the event bus, for an imported
    entry kept with its id and date: `mdsync` (MEMORY.md ↔ store)."""

    events: EventBus


class Restoring(Embedding, Writes, Protocol):
    """Parts, the embedder and notices (for `writes.rewrite`) and the write verbs: `undo`."""


class Porting(Parts, Protocol):
    """Parts plus embedding imported rows now: `portable` (export / import of a scope)."""

    def flush(self) -> int: ...


class Importing(Parts, Protocol):
    """Parts, the engine's notices and the extraction queue: `importing` (other tools' exports,
    stored as turns and memories, extraction queued after)."""

    signals: Signals

    @property
    def jobs(self) -> ExtractionQueue: ...


class Sweeping(Parts, Protocol):
    """Parts, the event bus (its rules) and the extraction queue: `sweep.sweep_unextracted`."""

    events: EventBus

    @property
    def jobs(self) -> ExtractionQueue: ...


class Working(Sweeping, Protocol):
    """What the background worker runs: the idle sweep and `drain` (`worker.JobWorker`)."""

    def drain(self, now: datetime | None = None, *, limit: int = 100) -> list[JobReport]: ...


class Extracting(Working, Searches, Protocol):
    """What extraction's scheduling uses (`extracting.Extraction`): the queue's parts, search
    (the extractor sees related memories), the embedder and the engine's notices."""

    embedder: Embedder
    signals: Signals


class Following(Archiving, SessionParts, Protocol):
    """What follows stored turns (`ingest.after_turns`): compaction and episodes, extraction's
    scheduling, the scratchpad's topic and the seed-000 archive."""

    @property
    def extraction(self) -> Scheduling: ...


class Consolidating(Archiving, Sweeping, Syncing, Reviewing, Protocol):
    """Everything a consolidation pass touches (`lifecycle`): the queue, the archive, MEMORY.md
    and USER.md, the reviewer, and the embedder's model (its dedup threshold)."""

    embedder: Embedder


class Tooling(Embedding, Writes, Searches, Protocol):
    """The agent tools (`tools.MemoryTools`): search, the write verbs, the scratchpad, the
    attachments, and `remember`'s own near-duplicate check (the embedder and its model)."""

    @property
    def attachments(self) -> AttachmentSearch: ...

    def update_scratchpad(self, *, user_id: str, agent_id: str | None = None, focus: str | None = None,
                          done: str | None = None) -> Scratchpad: ...

