"""The engine's services as the feature modules call them: small Protocols, so `parts.py` names
what a module uses of the background worker, the extraction queue, extraction's scheduling and
the attachments without importing the classes that do it (`worker.JobWorker`,
`jobs.JobRunner`, `extracting.Extraction`, `attachments.Attachments`). Those classes take
`parts` Protocols themselves; naming them here would close a loop of imports.

Each Protocol holds only the members some module calls; mypy checks the classes against them
where `Memory` passes itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memlane.extraction import JobReport
    from memlane.lease import ScopeLock
    from memlane.llm.base import LLM
    from memlane.models import Attachment, ExtractionJob, Scope, Turn


class Background(Protocol):
    """The background worker (`worker.JobWorker`): work a caller must not wait for."""

    def submit(self, task: Callable[[], object], key: object = None) -> None: ...


class ExtractionQueue(Protocol):
    """The extraction queue of one store (`jobs.JobRunner`), as a consolidation pass and the
    idle sweep use it (`lifecycle`)."""

    @property
    def lock(self) -> ScopeLock: ...

    def enqueue(self, scope: Scope, session_id: str, at: datetime,
                through_seq: int | None = None) -> ExtractionJob | None: ...

    def due(self, now: datetime, limit: int = 100) -> list[ExtractionJob]: ...

    def drain(self, now: datetime, llm: LLM | None, limit: int = 100) -> list[JobReport]: ...

    def run_contained(self, job: ExtractionJob, now: datetime, llm: LLM | None) -> JobReport: ...


class Scheduling(Protocol):
    """When and where extraction runs (`extracting.Extraction`), as the work that follows stored
    turns uses it (`ingest.after_turns`)."""

    @property
    def worker(self) -> Background: ...

    def background(self, wait: bool | None = None) -> bool: ...

    def after_turns(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> JobReport | None: ...


class AttachmentSearch(Protocol):
    """The scope's attachments found by their words (`attachments.Attachments`): `search_memory`."""

    def find(self, query: str, *, user_id: str, agent_id: str | None = None, limit: int = 3,
             min_score: float = 0.0) -> list[tuple[Attachment, float]]: ...


__all__ = ["AttachmentSearch", "Background", "ExtractionQueue", "Scheduling"]
