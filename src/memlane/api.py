"""`Memory`: the one façade the CLI, the server and agents use.

Every call takes the scope (`user_id`, optional `agent_id`) and validates its input before
anything is written; every write is one transaction, audited where it touches a memory.
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memlane import archive as files_archive
from memlane import forecast as forecasting
from memlane import (
    forget,
    importing,
    ingest,
    lifecycle,
    markdown,
    mdsync,
    memory_input,
    plugins,
    portable,
    reading,
    retention,
    review,
    sessions,
    supersession,
    userprofile,
    validate,
    writes,
)
from memlane import undo as undoing
from memlane.attachments import Attachments, SessionStates
from memlane.config import Config
from memlane.context import Context, build_context
from memlane.embeddings import Embedder, make_embedder
from memlane.errors import NotFound
from memlane.events import Event, EventBus, RuleResult
from memlane.extracting import Extraction
from memlane.importers import Conversation, ConversationImport
from memlane.jobs import JobReport, JobRunner
from memlane.llm import LLM, make_llm
from memlane.messages import check_batch, check_messages
from memlane.models import (
    Activity,
    Corpus,
    Episode,
    ExtractionJob,
    Forecast,
    Hit,
    MemoryEvent,
    MemoryRecord,
    Message,
    Scope,
    Scratchpad,
    Session,
    Source,
    Stats,
    Turn,
    utcnow,
)
from memlane.retrieval.filters import Filters
from memlane.signals import Signals
from memlane.store import Store, open_store
from memlane.tools import MemoryTools
from memlane.vectors import Vectors
from memlane.worker import JobWorker

log = logging.getLogger(__name__)
_list = builtins.list  # `list` is also a method name below


class Memory:
    """A memory engine on one data directory.

    >>> m = Memory(Config.load(store={"home": "/tmp/mem"}, embedding={"provider": "hash"}))
    >>> m.add("用户对花生过敏", user_id="u1", category="fact", importance="high").score
    0.8
    """

    def __init__(self, config: Config | str | Path | None = None, *, home: str | Path | None = None,
                 embedder: Embedder | None = None, clock: Callable[[], datetime] | None = None,
                 llm: LLM | None = None, actions: dict[str, Callable[[Event], Any]] | None = None) -> None:
        """`Memory(config)`, or `Memory("path")` / `Memory(home="path")`: that data directory,
        configured as `open_memory(path)` and `memlane --home path` are (its memlane.toml, then
        MEMLANE_*); `Memory()`: MEMLANE_HOME or ~/.memlane. `actions`: event-rule actions by
        name beyond memlane's own (seed 004 §11.1)."""
        self.config = Config.resolve(config, home)
        self.clock = clock or utcnow
        self.llm: LLM | None = llm if llm is not None else make_llm(self.config.llm)
        self.events = EventBus(list(self.config.events.rules))
        # follow-up work subscribes to what a write says happened (signals.py)
        self.signals = Signals()
        self.signals.subscribe("memory.changed", lambda scope: mdsync.after_change(self, scope))
        self.signals.subscribe("memory.forgotten", lambda scope, gone: mdsync.forget_in_files(self, scope, gone))
        self.signals.subscribe("turns.stored", lambda *turns: ingest.after_turns(self, *turns))
        self.extraction = Extraction(self)
        self.events.register_action("extract", self.extraction.on_session_ended)
        self.events.register_action("episode", self._action_episode)
        for name, action in (actions or {}).items():
            self.events.register_action(name, action)
        for name in {a for rule in self.config.events.rules for a in rule.actions} - set(self.events.actions):
            if name in plugins.installed("actions"):  # an installed package's action (plugins.py)
                self.events.register_action(name, plugins.load("actions", name))
        self.store: Store = open_store(self.config)
        self.events.bind(self.store, self.config.events)
        self.embedder: Embedder = embedder or make_embedder(self.config.embedding)
        self.vectors = Vectors(self.config, self.store, self.embedder, self._open_side_store)
        self.signals.subscribe("rows.written", self.vectors.rows_written)
        self.events.check()

    def _open_side_store(self) -> Store:
        store = open_store(self.config)
        store.ensure_vectors(self.embedder.model_id, self.embedder.dimensions)
        return store

    # ---- lifecycle of the object ------------------------------------------------------

    def close(self) -> None:
        self.extraction.stop()
        self.vectors.stop()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def background_status(self) -> dict[str, Any]:
        """The background indexer and LLM worker, for a server's status page."""
        return {"indexer": self.vectors.status(), "worker": self.extraction.status()}

    def settle(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the background indexer and worker to finish what they
        hold (a server's graceful shutdown); False when time ran out (the rest stays queued)."""
        deadline = time.monotonic() + timeout
        ok = self.vectors.wait_idle(timeout)
        return self.extraction.wait_idle(max(0.0, deadline - time.monotonic())) and ok

    def flush(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every row still waiting for a vector, now, in this thread; returns how many."""
        return self.vectors.flush(progress)

    # ---- turns ------------------------------------------------------------------------

    def add_messages(self, session_id: str, messages: Iterable[Message | dict[str, Any]], *, user_id: str,
                     agent_id: str | None = None) -> list[Turn]:
        """Store conversation turns durably (one transaction), before anything else runs.

        Every message is checked first; a refused one names itself (`messages[3].content`)
        and nothing is stored."""
        scope = Scope.of(user_id, agent_id)
        validate.ident("session_id", session_id)
        msgs = check_messages(messages, self.config.store, cap=self.config.store.max_messages_per_call)
        check_batch(len(msgs), sum(len(m.content) for m in msgs), self.config.store)
        return ingest.store_turns(self, self.signals, scope, session_id, msgs)

    def end_session(self, session_id: str, *, user_id: str, agent_id: str | None = None,
                    wait: bool | None = None) -> list[RuleResult]:
        """Close a session and emit `session.ended`; the configured rules decide what runs
        (by default: extract memories from its turns; an episode for sessions of ≥ 3 messages).

        With an LLM, the extraction is queued (report status "queued") and the episode is
        written without it, the background worker then running both with the LLM, so this
        returns at once; `wait=True` (or `extraction.wait_for_llm`) runs them here."""
        scope = Scope.of(user_id, agent_id)
        validate.ident("session_id", session_id)
        session = self.store.get_session(scope, session_id)
        if session is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
        now = self.clock()
        session.ended_at = now
        with self.store.transaction():
            self.store.put_session(session)
        with self.extraction.wait(not self.extraction.background(wait)):  # read by the rule actions
            results = self.events.emit(Event.session_ended(scope, session_id, session.message_count, now))
        retention.end_of_session(self, scope, session_id)  # seed 002 §4: TRANSIENT goes with its session
        return results

    @property
    def worker(self) -> JobWorker:
        """The background worker (started on first use; `close()` stops it)."""
        return self.extraction.worker

    # ---- extraction (issue 4) ---------------------------------------------------------

    @property
    def jobs(self) -> JobRunner:
        """The extraction queue of this store (created on first use)."""
        return self.extraction.jobs

    def extract(self, session_id: str, *, user_id: str, agent_id: str | None = None,
                through_seq: int | None = None) -> JobReport:
        """Extract memories from the session's turns not extracted yet (up to `through_seq`), now.

        Uses the LLM when one is configured, the offline heuristics otherwise. On an LLM
        failure the report says `status="retrying"` and the job waits in the queue with
        back-off; the turns are safe either way. Example: `m.extract("s1", user_id="lin").stats`.
        """
        scope = Scope.of(user_id, agent_id)
        validate.ident("session_id", session_id)
        validate.optional_integer("through_seq", through_seq, 0)
        if self.store.get_session(scope, session_id) is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
        report = self.extraction.now(scope, session_id, through_seq)
        if report is None:
            last = self.store.next_seq(scope, session_id) - 1
            return JobReport(session_id, last + 1, last, status="empty")
        return report

    def drain(self, now: datetime | None = None, *, limit: int = 100) -> _list[JobReport]:
        """Run every extraction job that is due (queued, or claimed by a worker that died)."""
        now = validate.optional_when("now", now)
        return self.extraction.drain(now or self.clock(), validate.integer("limit", limit, 1))

    def import_conversations(self, conversations: Sequence[Conversation], *, user_id: str, agent_id: str | None = None,
                             progress: Callable[[int], None] | None = None, embed: bool = True) -> ConversationImport:
        """Store parsed conversations (see `memlane.importers`), all or nothing, in one transaction.

        Every message is checked before anything is written; a refused one fails the import
        and is named (`sessions[2].messages[5].content`, with the file and session). Each
        message has a stable identity (file, session, position, role, content), so importing
        the same file again — after a crash, say — skips what is stored: `.skipped` says how
        many. `embed=False` leaves the vectors to the background indexer or the next `flush()`."""
        Scope.of(user_id, agent_id)
        return ingest.import_conversations(self, self.signals, conversations, user_id, agent_id, progress=progress,
                                           embed=validate.boolean("embed", embed))

    def get_turns(self, session_id: str | None = None, *, user_id: str, agent_id: str | None = None,
                  limit: int | None = None) -> list[Turn]:
        scope = Scope.of(user_id, agent_id)
        return self.store.get_turns(scope, session_id=validate.optional_ident("session_id", session_id),
                                    limit=validate.optional_integer("limit", limit, 0))

    def sessions(self, *, user_id: str, agent_id: str | None = None) -> list[Session]:
        return self.store.list_sessions(Scope.of(user_id, agent_id))

    # ---- sessions, short-term memory, context (issue 5) --------------------------------

    def start_session(self, session_id: str | None = None, *, user_id: str, agent_id: str | None = None,
                      metadata: dict[str, Any] | None = None) -> Session:
        """Open a session (a new id when none is given); an existing one is resumed."""
        scope = Scope.of(user_id, agent_id)
        validate.optional_ident("session_id", session_id)
        meta = validate.metadata("metadata", metadata, self.config.store, validate.SESSION_KEYS)
        return sessions.start_session(self, scope, session_id, meta)

    def get_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> Session:
        scope = Scope.of(user_id, agent_id)
        session = self.store.get_session(scope, validate.ident("session_id", session_id))
        if session is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
        return session

    def compact_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> bool:
        """Compact now if the session is past `session.compaction_cap` (add_messages does this too)."""
        self.get_session(session_id, user_id=user_id, agent_id=agent_id)
        return sessions.maybe_compact(self, Scope.of(user_id, agent_id), session_id)

    def episodes(self, *, user_id: str, agent_id: str | None = None, session_id: str | None = None,
                 limit: int = 100) -> _list[Episode]:
        """Episodes of a scope, newest first."""
        scope = Scope.of(user_id, agent_id)
        return self.store.list_episodes(scope, session_id=validate.optional_ident("session_id", session_id),
                                        limit=validate.integer("limit", limit, 0))

    def _action_episode(self, event: Event) -> Episode | None:
        """The `episode` rule action: summarise the ended session (seeds 002, 003, 004 §6), with
        the LLM in the background as `Extraction.offline_first` says."""
        def write(offline: bool) -> Episode | None:
            episode = sessions.write_episode(self, event, offline=offline)
            if episode is not None:
                self.signals.send("rows.written")
            return episode
        return self.extraction.offline_first(write, ("episode", event.scope, event.payload["session_id"]))

    def scratchpad(self, *, user_id: str, agent_id: str | None = None) -> Scratchpad:
        """The scope's scratchpad (empty when never set)."""
        scope = Scope.of(user_id, agent_id)
        return self.store.get_scratchpad(scope) or Scratchpad(
            user_id=scope.user_id, agent_id=scope.agent_id, updated_at=self.clock())

    def update_scratchpad(self, *, user_id: str, agent_id: str | None = None, focus: str | None = None,
                          done: str | None = None) -> Scratchpad:
        """Set the current focus (the old one moves to the recent tasks) and/or record a finished task."""
        scope = Scope.of(user_id, agent_id)
        for name, value in (("focus", focus), ("done", done)):
            validate.optional_text(name, value, self.config.store.max_content_chars)
        return sessions.update_scratchpad(self, scope, focus=focus, done=done)

    @property
    def attachments(self) -> Attachments:
        """Files and media of a scope (seed 002 §8): add / get / list / delete."""
        return Attachments(self)

    @property
    def session_state(self) -> SessionStates:
        """A session's current task and variables (seed 002 "Session 级别"): get / update."""
        return SessionStates(self)

    def build_context(self, session_id: str | None = None, query: str | None = None, *, user_id: str,
                      agent_id: str | None = None, model: str | None = None) -> Context:
        """Blocks within budgets and a rendered system prompt for the next LLM call (see memlane.context)."""
        Scope.of(user_id, agent_id)
        validate.optional_ident("session_id", session_id)
        validate.optional_text("query", query, self.config.store.max_turn_chars, setting="store.max_turn_chars",
                               controls=True)
        validate.optional_ident("model", model)
        return build_context(self, session_id, user_id=user_id, agent_id=agent_id, query=query, model=model)

    def tools(self, *, user_id: str, agent_id: str | None = None, session_id: str | None = None) -> MemoryTools:
        """The agent tools (OpenAI function-calling schemas + handlers) bound to one scope."""
        Scope.of(user_id, agent_id)
        validate.optional_ident("session_id", session_id)
        return MemoryTools(self, user_id=user_id, agent_id=agent_id, session_id=session_id)

    # ---- memories ---------------------------------------------------------------------

    def add(self, content: str, *, user_id: str, agent_id: str | None = None, category: str | None = None,
            importance: float | str | None = None, metadata: dict[str, Any] | None = None, source: Source = "user",
            pinned: bool = False, verified: bool | None = None, expires_at: datetime | None = None,
            session_id: str | None = None, subject: str | None = None, predicate: str | None = None,
            confidence: float = 1.0, actor: str = "api", valid_from: datetime | None = None, memory_id: str | None = None) -> MemoryRecord:
        """Store one memory directly (audited as ADD); `valid_from`: since when it holds (default now); `memory_id`: your own id for it (one in use: Conflict)."""
        scope = Scope.of(user_id, agent_id)
        mem = memory_input.new_memory(
            self.config, scope, self.clock(), content_=content, category_=category, importance=importance,
            metadata=metadata, source=source, pinned=pinned, verified=verified, expires_at=expires_at,
            session_id=session_id, subject=subject, predicate=predicate, confidence=confidence, valid_from=valid_from, memory_id=memory_id)
        return writes.insert(self, scope, mem, validate.ident("actor", actor))

    def get(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> MemoryRecord:
        scope = Scope.of(user_id, agent_id)
        mem = self.store.get_memory(scope, validate.memory_id(memory_id))
        if mem is None:
            raise NotFound(f"memory {memory_id!r} not found for user {user_id!r}; `memlane list` shows the ids")
        return mem

    def list(self, *, user_id: str, agent_id: str | None = None, category: str | None = None,
             status: str | None = None, session_id: str | None = None, since: datetime | None = None,
             until: datetime | None = None, limit: int | None = None, offset: int = 0, source: str | None = None,
             verified: bool | None = None, pinned: bool | None = None, min_score: float | None = None,
             max_score: float | None = None, sort: str = "score", descending: bool = True) -> _list[MemoryRecord]:
        """Memories of a scope, filtered, sorted (`sort`: one of `models.MEMORY_SORTS`, best
        score first by default) and paged (`limit`, `offset`) in the store."""
        return self.store.list_memories(
            Scope.of(user_id, agent_id), category=None if category is None else memory_input.category(self.config, category),
            status=memory_input.status(status), session_id=validate.optional_ident("session_id", session_id),
            since=validate.optional_when("since", since), until=validate.optional_when("until", until),
            limit=validate.optional_integer("limit", limit, 0), offset=validate.integer("offset", offset, 0),
            order=memory_input.order(sort, descending),
            where=memory_input.where(source, verified, pinned, min_score, max_score, self.clock()))

    def count(self, *, user_id: str, agent_id: str | None = None, category: str | None = None,
              status: str | None = None, since: datetime | None = None, until: datetime | None = None,
              source: str | None = None, verified: bool | None = None, pinned: bool | None = None,
              min_score: float | None = None, max_score: float | None = None) -> int:
        """How many memories `list` with the same filters holds in all (a listing's page count)."""
        return self.store.count_memories(
            Scope.of(user_id, agent_id), memory_input.status(status),
            category=None if category is None else memory_input.category(self.config, category),
            since=validate.optional_when("since", since), until=validate.optional_when("until", until),
            where=memory_input.where(source, verified, pinned, min_score, max_score, self.clock()))

    def deleted(self, *, user_id: str, agent_id: str | None = None, limit: int = 100,
                offset: int = 0) -> _list[MemoryEvent]:
        """The DELETE events of the scope's memories that are still deleted and can be restored
        (a hard delete keeps no text), last deleted first; each event's `before` is the memory."""
        return undoing.restorable(self.store, Scope.of(user_id, agent_id), validate.integer("limit", limit, 1, 10_000),
                                  validate.integer("offset", offset, 0))

    def update(self, memory_id: str, *, user_id: str, agent_id: str | None = None, content: str | None = None,
               category: str | None = None, importance: float | str | None = None, score: float | None = None,
               metadata: dict[str, Any] | None = None, pinned: bool | None = None, status: str | None = None,
               expires_at: datetime | None = None, actor: str = "api", reason: str = "", kind: str = "UPDATE",
               verified: bool | None = None, source: Source | None = None) -> MemoryRecord:
        """Change a memory; new content is re-indexed and re-embedded. Audited.

        `kind` is the audit event's kind (memlane's own steps record e.g. PROMOTE); one of
        `models.EventKind`, so the history stays readable."""
        scope = Scope.of(user_id, agent_id)
        changes = memory_input.changes(
            self.config, content_=content, category_=category, importance=importance, score=score,
            metadata=metadata, pinned=pinned, verified=verified, source=source, status=status, expires_at=expires_at)
        actor = validate.ident("actor", actor)
        reason = validate.text("reason", reason, self.config.store.max_content_chars, required=False)
        kind = memory_input.audit_kind(kind)
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        if not changes:
            return before
        after = before.model_copy(update={**changes, "updated_at": self.clock()})
        return writes.rewrite(self, scope, before, after, kind, actor, reason)

    def supersede(self, memory_id: str, content: str | None = None, *, user_id: str, agent_id: str | None = None,
                  by: str | None = None, valid_from: datetime | None = None, category: str | None = None,
                  actor: str = "api", reason: str = "", source: Source = "user") -> MemoryRecord:
        """The fact changed (issue 32): new `content` (a person's word; `source="agent"`: an
        agent's, unverified) or the memory `by` replaces this one, which is closed at
        `valid_from` (default now) and kept, out of the prompt, with its history. Returns the
        current memory."""
        scope, old = Scope.of(user_id, agent_id), self.get(memory_id, user_id=user_id, agent_id=agent_id)
        other = None if by is None else self.get(validate.memory_id(by, "by"), user_id=user_id, agent_id=agent_id)
        new, other = memory_input.successor(self.config, scope, self.clock(), old, content, other, valid_from, category,
                                            source)
        reason = validate.text("reason", reason, self.config.store.max_content_chars, required=False)
        return writes.supersede(self, scope, old, new, other, validate.ident("actor", actor), reason)[1]

    def timeline(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> _list[MemoryRecord]:
        """Every version of the fact this memory is one of, oldest first (`supersede`)."""
        return supersession.timeline(self.store, Scope.of(user_id, agent_id),
                                     self.get(memory_id, user_id=user_id, agent_id=agent_id))

    def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None,
               actor: str = "api", reason: str = "", hard: bool = False) -> MemoryRecord:
        """Remove a memory and its text from every index, cache and file; the audit trail keeps
        it for an undo, unless `hard`: then its audit rows become content-free tombstones."""
        scope = Scope.of(user_id, agent_id)
        actor = validate.ident("actor", actor)
        reason = validate.text("reason", reason, self.config.store.max_content_chars, required=False)
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        return writes.remove(self, scope, before, actor, reason, validate.boolean("hard", hard))

    def delete_turns(self, turn_ids: Sequence[str], *, user_id: str, agent_id: str | None = None) -> forget.ForgetReport:
        """Forget turns: their text leaves the store, the neighbours' context, the session's
        summary and episodes, caches and files. Example: `m.delete_turns([t.id], user_id="u1")`."""
        return forget.delete_turns(self, Scope.of(user_id, agent_id), turn_ids)

    def delete_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> forget.ForgetReport:
        """Forget a conversation: the session, its turns, episodes and jobs, wherever kept."""
        return forget.delete_session(self, Scope.of(user_id, agent_id), session_id)

    def purge(self, *, user_id: str, agent_id: str | None = None, actor: str = "api") -> forget.ForgetReport:
        """Forget a user (every agent scope of it when `agent_id` is None): every row, cached
        vector, cache and file; the audit keeps one content-free PURGE event with the counts."""
        return forget.purge(self, user_id, agent_id, actor=actor)

    def history(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> _list[MemoryEvent]:
        """The audit trail of one memory, oldest first (also after it was deleted)."""
        scope = Scope.of(user_id, agent_id)
        events = self.store.events(scope, validate.memory_id(memory_id))
        if not events:
            raise NotFound(f"memory {memory_id!r} has no history for user {user_id!r}")
        return events

    def forecast(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> Forecast:
        """What the decay policy will do to a memory if nothing touches it again, and when:
        `state` due / due_now / none / protected / archived, `action`, `when`, `score_now`."""
        return forecasting.forecast(self.get(memory_id, user_id=user_id, agent_id=agent_id), self.config.policy,
                                    self.clock())

    def activity(self, *, user_id: str, agent_id: str | None = None, days: int = forecasting.ACTIVITY_DAYS) -> Activity:
        """Active, archived and deleted memories at the end of each of the last `days` days,
        replayed from the scope's audit trail."""
        scope = Scope.of(user_id, agent_id)
        days = validate.integer("days", days, 1, forecasting.HORIZON_DAYS)
        return forecasting.activity(scope, self.store.events(scope, None, limit=10_000_000), self.clock().date(), days)

    def audit(self, *, user_id: str, agent_id: str | None = None, limit: int = 10_000) -> _list[MemoryEvent]:
        """Every audit event of a scope, oldest first (ADD / UPDATE / DECAY / ARCHIVE / DELETE ...)."""
        scope = Scope.of(user_id, agent_id)
        return self.store.events(scope, None, limit=validate.integer("limit", limit, 0, 1_000_000))

    def extraction_jobs(self, *, user_id: str, agent_id: str | None = None,
                        status: Sequence[str] = ("queued", "running", "failed"), limit: int = 100) -> _list[ExtractionJob]:
        """The scope's extraction jobs in those states, next due first (attempts, back-off, last error)."""
        scope = Scope.of(user_id, agent_id)
        states = [validate.choice("status", s, ("queued", "running", "done", "failed")) for s in status]
        return self.store.jobs(scope=scope, status=states, limit=validate.integer("limit", limit, 0, 10_000))

    def restore(self, memory_id: str, *, user_id: str, agent_id: str | None = None,
                actor: str = "api") -> MemoryRecord:
        """Bring a deleted memory back from its last DELETE event, under the same id (audited
        as RESTORE). Example: `m.restore("3f9a1c2b7d", user_id="lin").content`."""
        return undoing.restore(self, Scope.of(user_id, agent_id), memory_id, actor=actor)

    def undo(self, memory_id: str, *, user_id: str, agent_id: str | None = None,
             actor: str = "api") -> MemoryEvent:
        """Revert a memory's last audited change — a DELETE is restored, an ADD removed, any
        other change rolled back — and return the event that reverted it (undo it in turn)."""
        return undoing.undo(self, Scope.of(user_id, agent_id), memory_id, actor=actor)

    # ---- search -----------------------------------------------------------------------

    def search(self, query: str, *, user_id: str, agent_id: str | None = None, limit: int | None = None,
               filters: Filters | dict[str, Any] | None = None, corpus: Corpus = "memories",
               activate: bool | None = None, query_vector: np.ndarray | Callable[[str], np.ndarray] | None = None,
               min_score: float | None = None, as_of: datetime | None = None,
               include_superseded: bool | None = None) -> _list[Hit]:
        """Hybrid search of one corpus: "memories" (default), "turns" or "episodes".

        Hits come in rank order; `Hit.score` is an absolute relevance in [0, 1] (keywords held,
        or the embedding's lift over unrelated text). Hits below `min_score` are left out; by
        default that is `search.min_relevance` for memories and episodes, the floor under which
        nothing is injected into a context either, and 0 for turns (the trace, ranked by its
        conversation as much as by its own words). Searching is reading: a memory returned
        at or above the floor counts as used (`search.activate_on_hit`), one below it never.

        `query_vector` skips embedding the query: a vector the caller already has, or a
        function from text to vector (the caller's own embedder or cache), given the text the
        dense side embeds (`retrieval.query.dense_text`). `as_of`: the facts that held then;
        `include_superseded`: replaced facts too (by default only when the query asks about the past)."""
        return reading.ask(self, Scope.of(user_id, agent_id), query, corpus, limit=limit, filters=filters,
                           activate=activate, query_vector=query_vector, min_score=min_score, as_of=as_of,
                           include_superseded=include_superseded)

    # ---- human-readable files, the seed-000 archive, export / import (issue 7) -----------

    def data_dir(self, *, user_id: str, agent_id: str | None = None) -> Path:
        """The scope's directory for MEMORY.md, USER.md, history.json and memory/."""
        return markdown.scope_dir(self.config.home, Scope.of(user_id, agent_id))

    def md_export(self, *, user_id: str, agent_id: str | None = None, path: Path | None = None) -> Path:
        """Write MEMORY.md (seed 001 §2.3): a full rewrite after a copy to MEMORY.md.bak."""
        scope = Scope.of(user_id, agent_id)
        return markdown.write_memory_md(self, scope, validate.optional_path("path", path))

    def md_import(self, path: Path | None = None, *, user_id: str, agent_id: str | None = None,
                  dry_run: bool = False) -> _list[markdown.MdOperation]:
        """Apply a person's edits of MEMORY.md as audited ADD / UPDATE / DELETE (actor "import")."""
        scope = Scope.of(user_id, agent_id)
        return mdsync.import_memory_md(self, scope, validate.optional_path("path", path),
                                       dry_run=validate.boolean("dry_run", dry_run))

    def user_profile(self, *, user_id: str, agent_id: str | None = None, path: Path | None = None) -> Path:
        """Write USER.md (seed 002): the profile from preference / fact / workflow memories."""
        scope = Scope.of(user_id, agent_id)
        return userprofile.write_user_md(self, scope, validate.optional_path("path", path))

    def archive(self, *, user_id: str, agent_id: str | None = None,
                force: bool = False) -> files_archive.ArchiveReport:
        """One seed-000 round: history.json synced and capped, archived into memory/ when due."""
        scope = Scope.of(user_id, agent_id)
        return files_archive.run_archive(self, scope, force=validate.boolean("force", force))

    def archive_context(self, pending: str, *, user_id: str, agent_id: str | None = None) -> str:
        """Seed 000's `## Memory` block for the pending input: BM25 over the scope's files."""
        scope = Scope.of(user_id, agent_id)
        pending = validate.text("pending", pending, self.config.store.max_turn_chars,
                                setting="store.max_turn_chars", required=False, controls=True)
        return files_archive.archive_context(self, scope, pending)[0]

    def export(self, *, user_id: str, agent_id: str | None = None, format: str = "jsonl") -> str:
        """The whole scope as text: "jsonl" (lossless, for `import_`) or "md" (MEMORY.md)."""
        return portable.export_scope(self, Scope.of(user_id, agent_id), validate.choice("format", format, ("jsonl", "md")))

    def import_(self, path: str | Path, *, user_id: str | None = None,
                agent_id: str | None = None) -> portable.ImportReport:
        """Import a memlane JSONL export (all or nothing; records already here are skipped)."""
        file = validate.path("path", path)
        validate.optional_ident("user_id", user_id)
        validate.optional_ident("agent_id", agent_id or None)
        return portable.import_scope(self, file, user_id=user_id, agent_id=agent_id)

    def import_from(self, path: str | Path, *, format: str | None = None, user_id: str, agent_id: str | None = None,
                    dry_run: bool = False, source_user: str | None = None, extract: bool = False) -> importing.ImportReport:
        """Import another tool's export: chatgpt, claude, mem0, letta or markdown (docs/importing.md)."""
        return importing.import_from(self, path, format, user_id=user_id, agent_id=agent_id, dry_run=dry_run, source_user=source_user, extract=extract)

    # ---- lifecycle (issue 6) ------------------------------------------------------------

    def consolidate(self, *, user_id: str | None = None, agent_id: str | None = None, now: datetime | None = None,
                    dry_run: bool = False, on_step: lifecycle.StepHook | None = None) -> lifecycle.ConsolidationReport:
        """Drain the queue, dedup, decay, demote / archive / delete, expire, review, refresh
        MEMORY.md + USER.md, archive old turns — for one scope, or every scope when `user_id`
        is None. Audited, idempotent, resumable. Example: `m.consolidate(user_id="lin", dry_run=True).actions`."""
        scope = Scope.of(user_id, agent_id) if user_id is not None else None
        return lifecycle.consolidate(self, scope, now=validate.optional_when("now", now),
                                     dry_run=validate.boolean("dry_run", dry_run), on_step=on_step)

    def feedback(self, session_id: str, reply: str, *, user_id: str,
                 agent_id: str | None = None) -> review.FeedbackReport:
        """Seed 003 "was it used?": boost only the memories the session's last `build_context`
        injected that `reply` actually used (the LLM judges; offline, keyword overlap)."""
        scope = Scope.of(user_id, agent_id)
        validate.ident("session_id", session_id)
        validate.text("reply", reply, self.config.store.max_turn_chars, setting="store.max_turn_chars",
                      required=False, controls=True)
        return review.feedback(self, scope, session_id, reply)

    # ---- stats ------------------------------------------------------------------------

    def stats(self, *, user_id: str, agent_id: str | None = None) -> Stats:
        scope = Scope.of(user_id, agent_id)
        return Stats(user_id=scope.user_id, agent_id=scope.agent_id, embedder=self.embedder.model_id,
                     **self.store.stats(scope))

def open_memory(home: str | Path | None = None, **overrides: Any) -> Memory:
    """A `Memory` on `home` (default: MEMLANE_HOME or ~/.memlane), configured as `memlane --home`
    is: `<home>/memlane.toml` (or MEMLANE_CONFIG), then MEMLANE_*, then `overrides`
    (`profile="companion"`, `llm={"base_url": ...}`)."""
    return Memory(Config.from_env(home=home, **overrides))
