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
from typing import Any, get_args

import numpy as np

from memlane import archive as files_archive
from memlane import forecast as forecasting
from memlane import (
    forget,
    ingest,
    lifecycle,
    markdown,
    mdsync,
    plugins,
    portable,
    reading,
    retention,
    review,
    sessions,
    userprofile,
    validate,
    writes,
)
from memlane import undo as undoing
from memlane.attachments import Attachments, SessionStates
from memlane.config import MAX_ID_CHARS, Config
from memlane.context import Context, build_context
from memlane.embeddings import Embedder, make_embedder
from memlane.errors import ConfigError, MemlaneError, NotFound, ValidationError
from memlane.events import Event, EventBus, RuleResult
from memlane.extracting import Extraction
from memlane.importers import Conversation, ConversationImport, message_key
from memlane.jobs import JobReport, JobRunner
from memlane.llm import LLM, make_llm
from memlane.messages import check_batch, check_messages
from memlane.models import (
    MEMORY_SORTS,
    Activity,
    Corpus,
    Episode,
    EventKind,
    ExtractionJob,
    Forecast,
    Hit,
    MemoryEvent,
    MemoryRecord,
    MemoryWhere,
    Message,
    Scope,
    Scratchpad,
    Session,
    Source,
    Stats,
    Turn,
    new_id,
    utcnow,
)
from memlane.policy import importance_score
from memlane.retrieval.filters import Filters, check_filters
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

    def __init__(
        self,
        config: Config | str | Path | None = None,
        *,
        home: str | Path | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] | None = None,
        llm: LLM | None = None,
        actions: dict[str, Callable[[Event], Any]] | None = None,
    ) -> None:
        """`Memory(config)`, or `Memory("path")` / `Memory(home="path")`: that data directory,
        configured as `open_memory(path)` and `memlane --home path` are (its memlane.toml, then
        MEMLANE_*); `Memory()`: MEMLANE_HOME or ~/.memlane. `actions`: event-rule actions by
        name beyond memlane's own (seed 004 §11.1)."""
        if isinstance(config, str | Path):
            if home is not None:
                raise ConfigError("Memory: give the data directory once, as Memory(path) or Memory(home=path)")
            config, home = None, config
        if config is not None and not isinstance(config, Config):
            raise ConfigError(f"Memory: config must be a memlane.Config or a data directory path, got "
                              f"{type(config).__name__}; e.g. Memory(Config.load('companion')) or Memory('~/.memlane')")
        if config is not None and home is not None:
            raise ConfigError("Memory: give a Config or home, not both; a Config sets its data directory "
                              "with Config.from_env(home=...) or Config.load(store={'home': ...})")
        self.config = config if config is not None else Config.from_env(home=home)
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

    def add_messages(
        self,
        session_id: str,
        messages: Iterable[Message | dict[str, Any]],
        *,
        user_id: str,
        agent_id: str | None = None,
    ) -> list[Turn]:
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

    def import_conversations(
        self,
        conversations: Sequence[Conversation],
        *,
        user_id: str,
        agent_id: str | None = None,
        progress: Callable[[int], None] | None = None,
        embed: bool = True,
    ) -> ConversationImport:
        """Store parsed conversations (see `memlane.importers`), all or nothing, in one transaction.

        Every message is checked before anything is written; a refused one fails the import
        and is named (`sessions[2].messages[5].content`, with the file and session). Each
        message has a stable identity (file, session, position, role, content), so importing
        the same file again — after a crash, say — skips what is stored: `.skipped` says how
        many. `embed=False` leaves the vectors to the background indexer or the next `flush()`."""
        Scope.of(user_id, agent_id)
        if isinstance(conversations, Conversation) or not isinstance(conversations, Iterable):
            raise ValidationError("conversations", "must be a list of Conversation (see memlane.importers)")
        plan: _list[tuple[Scope, str, _list[Message], _list[str]]] = []
        for i, conv in enumerate(conversations):
            where = f"sessions[{i}]"
            if not isinstance(conv, Conversation):
                raise ValidationError(where, f"must be a Conversation, got {type(conv).__name__}")
            try:
                scope = Scope.of(user_id if conv.user_id is None else conv.user_id, agent_id)
                sid = validate.ident(f"{where}.session_id", conv.session_id)
                msgs = check_messages(conv.messages, self.config.store, f"{where}.messages")
            except ValidationError as exc:
                origin = f"{conv.source}, " if conv.source else ""
                raise ValidationError(exc.field, f"{str(exc)[len(exc.field) + 2:]} ({origin}session "
                                                 f"{str(conv.session_id)[:60]!r}); nothing was imported") from None
            keys = [message_key(conv.source, sid, j, m.role, m.content) for j, m in enumerate(msgs)]
            plan.append((scope, sid, msgs, keys))
        stored = skipped = 0
        # history, not a conversation going on: no follow-up work, the vectors once at the end
        with self.signals.mute("rows.written", "turns.stored"), self.store.transaction():
            for scope, sid, msgs, keys in plan:
                have = self.store.turn_import_keys(scope, keys)
                fresh = [j for j, k in enumerate(keys) if k not in have]
                if fresh:
                    ingest.store_turns(self, self.signals, scope, sid, [msgs[j] for j in fresh],
                                       [keys[j] for j in fresh])
                stored += len(fresh)
                skipped += len(msgs) - len(fresh)
                if progress:
                    progress(len(msgs))
        if stored:
            try:  # the import's cost, not the first search's (~1 ms a turn)
                self.store.settle_text()
            except MemlaneError as exc:  # the turns are committed: the next search catches up instead
                log.warning("imported %d turns; their words are indexed at the next search (%s)", stored, exc)
        if embed:
            self.signals.send("rows.written")
        return ConversationImport(sessions=len(plan), turns=stored, skipped=skipped)

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
        """The `episode` rule action: summarise the ended session (seeds 002, 003, 004 §6);
        in the background (see `end_session`) the extractive episode is written at once and
        the worker rewrites it with the LLM (if it never gets to, the extractive one stays)."""
        if not self.extraction.waiting and self.extraction.background():
            episode = self._write_episode(event, offline=True)
            if episode is not None:
                self.worker.submit(lambda: self._write_episode(event), key=("episode", event.scope,
                                                                              event.payload["session_id"]))
            return episode
        return self._write_episode(event)

    def _write_episode(self, event: Event, *, offline: bool = False) -> Episode | None:
        episode = sessions.write_episode(self, event, offline=offline)
        if episode is not None:
            self.signals.send("rows.written")
        return episode

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

    def add(
        self,
        content: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        category: str | None = None,
        importance: float | str | None = None,
        metadata: dict[str, Any] | None = None,
        source: Source = "user",
        pinned: bool = False,
        verified: bool | None = None,
        expires_at: datetime | None = None,
        session_id: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        confidence: float = 1.0,
        actor: str = "api",
    ) -> MemoryRecord:
        """Store one memory directly (audited as ADD)."""
        scope = Scope.of(user_id, agent_id)
        content = self._content(content)
        category = self._category(category)
        score = self._importance(importance)
        confidence = validate.number("confidence", confidence, 0.0, 1.0)
        metadata = validate.metadata("metadata", metadata, self.config.store, validate.MEMORY_KEYS)
        source = validate.choice("source", source, get_args(Source))
        pinned = validate.boolean("pinned", pinned)
        verified = None if verified is None else validate.boolean("verified", verified)
        expires_at = validate.optional_when("expires_at", expires_at)
        session_id = validate.optional_ident("session_id", session_id)
        subject = validate.optional_text("subject", subject, MAX_ID_CHARS)
        predicate = validate.optional_text("predicate", predicate, MAX_ID_CHARS)
        actor = validate.ident("actor", actor)
        now = self.clock()
        mem = MemoryRecord(
            id=new_id(), user_id=scope.user_id, agent_id=scope.agent_id, content=content, category=category,
            score=score, confidence=confidence, subject=subject, predicate=predicate, created_at=now,
            updated_at=now, last_activated=now, expires_at=expires_at, source=source,
            # only a person's own words are "verified" (seed 003); code adding memories says so explicitly
            verified=bool(verified), source_session=session_id,
            pinned=pinned, metadata=metadata or {},
        )
        return writes.insert(self, scope, mem, actor)

    def get(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> MemoryRecord:
        scope = Scope.of(user_id, agent_id)
        mem = self.store.get_memory(scope, validate.memory_id(memory_id))
        if mem is None:
            raise NotFound(f"memory {memory_id!r} not found for user {user_id!r}; `memlane list` shows the ids")
        return mem

    def list(
        self,
        *,
        user_id: str,
        agent_id: str | None = None,
        category: str | None = None,
        status: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        source: str | None = None,
        verified: bool | None = None,
        pinned: bool | None = None,
        min_score: float | None = None,
        max_score: float | None = None,
        sort: str = "score",
        descending: bool = True,
    ) -> _list[MemoryRecord]:
        """Memories of a scope, filtered, sorted (`sort`: one of `models.MEMORY_SORTS`, best
        score first by default) and paged (`limit`, `offset`) in the store."""
        scope = Scope.of(user_id, agent_id)
        sort = validate.choice("sort", sort, MEMORY_SORTS)
        direction = "DESC" if validate.boolean("descending", descending) else "ASC"
        order = f"{sort} {direction}" + (f", updated_at {direction}" if sort == "score" else "")
        return self.store.list_memories(
            scope, category=None if category is None else self._category(category),
            status=None if status is None else validate.choice("status", status, ("active", "archived")),
            session_id=validate.optional_ident("session_id", session_id),
            since=validate.optional_when("since", since), until=validate.optional_when("until", until),
            limit=validate.optional_integer("limit", limit, 0), offset=validate.integer("offset", offset, 0),
            order=order, where=self._where(source, verified, pinned, min_score, max_score),
        )

    def count(self, *, user_id: str, agent_id: str | None = None, category: str | None = None,
              status: str | None = None, since: datetime | None = None, until: datetime | None = None,
              source: str | None = None, verified: bool | None = None, pinned: bool | None = None,
              min_score: float | None = None, max_score: float | None = None) -> int:
        """How many memories `list` with the same filters holds in all (a listing's page count)."""
        return self.store.count_memories(
            Scope.of(user_id, agent_id),
            None if status is None else validate.choice("status", status, ("active", "archived")),
            category=None if category is None else self._category(category),
            since=validate.optional_when("since", since), until=validate.optional_when("until", until),
            where=self._where(source, verified, pinned, min_score, max_score))

    @staticmethod
    def _where(source: Any, verified: Any, pinned: Any, min_score: Any, max_score: Any) -> MemoryWhere:
        return MemoryWhere(
            source=None if source is None else validate.choice("source", source, get_args(Source)),
            verified=None if verified is None else validate.boolean("verified", verified),
            pinned=None if pinned is None else validate.boolean("pinned", pinned),
            min_score=None if min_score is None else validate.number("min_score", min_score, 0.0, 1.0),
            max_score=None if max_score is None else validate.number("max_score", max_score, 0.0, 1.0))

    def deleted(self, *, user_id: str, agent_id: str | None = None, limit: int = 100,
                offset: int = 0) -> _list[MemoryEvent]:
        """The DELETE events of the scope's memories that are still deleted and can be restored
        (a hard delete keeps no text), last deleted first; each event's `before` is the memory."""
        return undoing.restorable(self.store, Scope.of(user_id, agent_id), validate.integer("limit", limit, 1, 10_000),
                                  validate.integer("offset", offset, 0))

    def update(
        self,
        memory_id: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        content: str | None = None,
        category: str | None = None,
        importance: float | str | None = None,
        score: float | None = None,
        metadata: dict[str, Any] | None = None,
        pinned: bool | None = None,
        status: str | None = None,
        expires_at: datetime | None = None,
        actor: str = "api",
        reason: str = "",
        kind: str = "UPDATE",
        verified: bool | None = None,
        source: Source | None = None,
    ) -> MemoryRecord:
        """Change a memory; new content is re-indexed and re-embedded. Audited.

        `kind` is the audit event's kind (memlane's own steps record e.g. PROMOTE); one of
        `models.EventKind`, so the history stays readable."""
        scope = Scope.of(user_id, agent_id)
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = self._content(content)
        if category is not None:
            changes["category"] = self._category(category)
        if importance is not None:
            changes["score"] = self._importance(importance)
        if score is not None:
            changes["score"] = validate.number("score", score, 0.0, 1.0)
        if metadata is not None:
            changes["metadata"] = validate.metadata("metadata", metadata, self.config.store, validate.MEMORY_KEYS)
        if pinned is not None:
            changes["pinned"] = validate.boolean("pinned", pinned)
        if verified is not None:  # a person confirmed it (seed 003 `verified`)
            changes["verified"] = validate.boolean("verified", verified)
        if source is not None:  # whose words the memory now holds (an agent's rewrite: "agent")
            changes["source"] = validate.choice("source", source, get_args(Source))
        if status is not None:
            changes["status"] = validate.choice("status", status, ("active", "archived"))
        if expires_at is not None:
            changes["expires_at"] = validate.when("expires_at", expires_at)
        actor = validate.ident("actor", actor)
        reason = validate.text("reason", reason, self.config.store.max_content_chars, required=False)
        kind = validate.choice("kind", kind, get_args(EventKind))
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        if not changes:
            return before
        after = before.model_copy(update={**changes, "updated_at": self.clock()})
        return writes.rewrite(self, scope, before, after, kind, actor, reason)

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

    def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        limit: int | None = None,
        filters: Filters | dict[str, Any] | None = None,
        corpus: Corpus = "memories",
        activate: bool | None = None,
        query_vector: np.ndarray | Callable[[str], np.ndarray] | None = None,
        min_score: float | None = None,
    ) -> _list[Hit]:
        """Hybrid search of one corpus: "memories" (default), "turns" or "episodes".

        Hits come in rank order; `Hit.score` is an absolute relevance in [0, 1] (keywords held,
        or the embedding's lift over unrelated text). Hits below `min_score` are left out; by
        default that is `search.min_relevance` for memories and episodes, the floor under which
        nothing is injected into a context either, and 0 for turns (the trace, ranked by its
        conversation as much as by its own words). Searching is reading: a memory returned
        at or above the floor counts as used (`search.activate_on_hit`), one below it never.

        `query_vector` skips embedding the query: a vector the caller already has, or a
        function from text to vector (the caller's own embedder or cache), given the text the
        dense side embeds (`retrieval.query.dense_text`)."""
        scope = Scope.of(user_id, agent_id)
        validate.text("query", query, self.config.search.max_query_chars, setting="search.max_query_chars",
                      required=False, controls=True)
        corpus = validate.choice("corpus", corpus, ("memories", "turns", "episodes"))
        limit = validate.optional_integer("limit", limit, 0, 10_000)  # 0: the default
        activate = None if activate is None else validate.boolean("activate", activate)
        if query_vector is not None and not callable(query_vector):
            validate.vector("query_vector", query_vector, self.embedder.dimensions)
        elif query_vector is not None:  # the caller's function: what it returns is checked too
            given, dims = query_vector, self.embedder.dimensions
            query_vector = lambda text: validate.vector("query_vector", given(text), dims)  # noqa: E731
        limit = limit or self.config.search.default_limit
        # memories and episodes are what an agent is given: weak ones are left out by default.
        # A turn is ranked by its conversation too (its neighbours, its session): its own score
        # says how much of the query it holds, not whether it belongs in the answer
        default = 0.0 if corpus == "turns" else self.config.search.min_relevance
        min_score = default if min_score is None else validate.number("min_score", min_score, 0.0, 1.0)
        return reading.search(self, scope, query, corpus, limit=limit, filters=check_filters(filters, self.config),
                              min_score=min_score, query_vector=query_vector,
                              activate=self.config.search.activate_on_hit if activate is None else activate)

    # ---- human-readable files, the seed-000 archive, export / import (issue 7) -----------

    def data_dir(self, *, user_id: str, agent_id: str | None = None) -> Path:
        """The scope's directory for MEMORY.md, USER.md, history.json and memory/."""
        return markdown.scope_dir(self.config.home, Scope.of(user_id, agent_id))

    @staticmethod
    def _path(field: str, path: Any) -> Path | None:
        if path is None:
            return None
        if not isinstance(path, str | Path) or (isinstance(path, str) and not path.strip()):
            raise ValidationError(field, f"must be a file path, got {type(path).__name__}")
        validate.text(field, str(path), 4096, setting="a file path", required=True)
        return Path(path)

    def md_export(self, *, user_id: str, agent_id: str | None = None, path: Path | None = None) -> Path:
        """Write MEMORY.md (seed 001 §2.3): a full rewrite after a copy to MEMORY.md.bak."""
        scope = Scope.of(user_id, agent_id)
        return markdown.write_memory_md(self, scope, self._path("path", path))

    def md_import(self, path: Path | None = None, *, user_id: str, agent_id: str | None = None,
                  dry_run: bool = False) -> _list[markdown.MdOperation]:
        """Apply a person's edits of MEMORY.md as audited ADD / UPDATE / DELETE (actor "import")."""
        scope = Scope.of(user_id, agent_id)
        return mdsync.import_memory_md(self, scope, self._path("path", path),
                                       dry_run=validate.boolean("dry_run", dry_run))

    def user_profile(self, *, user_id: str, agent_id: str | None = None, path: Path | None = None) -> Path:
        """Write USER.md (seed 002): the profile from preference / fact / workflow memories."""
        scope = Scope.of(user_id, agent_id)
        return userprofile.write_user_md(self, scope, self._path("path", path))

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
        scope = Scope.of(user_id, agent_id)
        return portable.export_scope(self, scope, validate.choice("format", format, ("jsonl", "md")))

    def import_(self, path: str | Path, *, user_id: str | None = None,
                agent_id: str | None = None) -> portable.ImportReport:
        """Import a memlane JSONL export (all or nothing; records already here are skipped)."""
        file = self._path("path", path) or Path()
        validate.optional_ident("user_id", user_id)
        validate.optional_ident("agent_id", agent_id or None)
        return portable.import_scope(self, file, user_id=user_id, agent_id=agent_id)

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

    # ---- helpers ----------------------------------------------------------------------

    def _content(self, content: Any, field: str = "content") -> str:
        return validate.memory_text(field, content, self.config.store.max_content_chars)

    def _category(self, category: Any, field: str = "category") -> str:
        if category is None:
            return self.config.policy.default_category
        return validate.category(field, category, self.config.policy.categories, self.config.profile)

    def _importance(self, importance: Any) -> float:
        return importance_score(importance, self.config.policy)


def open_memory(home: str | Path | None = None, **overrides: Any) -> Memory:
    """A `Memory` on `home` (default: MEMLANE_HOME or ~/.memlane), configured as `memlane --home`
    is: `<home>/memlane.toml` (or MEMLANE_CONFIG), then MEMLANE_*, then `overrides`
    (`profile="companion"`, `llm={"base_url": ...}`)."""
    return Memory(Config.from_env(home=home, **overrides))
