"""`Memory`: the one façade the CLI, the server and agents use.

Every call takes the scope (`user_id`, optional `agent_id`) and validates its input before
anything is written; every write is one transaction, audited where it touches a memory.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError as PydanticValidationError

from memlane import archive as files_archive
from memlane import lifecycle, markdown, portable, review, sessions, userprofile
from memlane import undo as undoing
from memlane.config import Config
from memlane.context import Context, build_context
from memlane.embeddings import Embedder, make_embedder
from memlane.errors import NotFound, ValidationError
from memlane.events import Event, EventBus, RuleResult
from memlane.heuristic import is_command
from memlane.importers import Conversation
from memlane.indexing import BackgroundIndexer, QueryCache, embed_cached, index_pending, vector_key
from memlane.jobs import JobReport, JobRunner
from memlane.llm import LLM, make_llm
from memlane.models import (
    Corpus,
    Episode,
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
    new_id,
    utcnow,
)
from memlane.policy import initial_score
from memlane.search import NULL_TEXTS, Filters
from memlane.search import search as run_search
from memlane.store import Store, open_store
from memlane.text import estimate_tokens
from memlane.tools import MemoryTools

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
        config: Config | None = None,
        *,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] | None = None,
        llm: LLM | None = None,
    ) -> None:
        self.config = config or Config.from_env()
        self.clock = clock or utcnow
        self.llm: LLM | None = llm if llm is not None else make_llm(self.config.llm)
        self.events = EventBus(list(self.config.events.rules))
        self.events.register_action("extract", self._action_extract)
        self.events.register_action("episode", self._action_episode)
        self.store: Store = open_store(self.config)
        self.embedder: Embedder = embedder or make_embedder(self.config.embedding)
        self.store.ensure_vectors(self.embedder.model_id, self.embedder.dimensions)
        self._query_vector = QueryCache(self.embedder)
        self._nulls: np.ndarray | None = None
        self._indexer: BackgroundIndexer | None = None
        self._importing = False
        self._jobs: JobRunner | None = None
        self._md_paused = False  # md import applies many writes, then rewrites MEMORY.md once
        if self.config.embedding.background:
            self._indexer = BackgroundIndexer(
                self._open_side_store, self.embedder,
                max_chars=self.config.embedding.max_chars, batch_size=self.config.embedding.batch_size,
            )
            self._indexer.notify()  # pick up rows left unembedded by an earlier process
        self.events.check()

    def _open_side_store(self) -> Store:
        store = open_store(self.config)
        store.ensure_vectors(self.embedder.model_id, self.embedder.dimensions)
        return store

    # ---- lifecycle of the object ------------------------------------------------------

    def close(self) -> None:
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every row still waiting for a vector, now, in this thread; returns how many."""
        return index_pending(self.store, self.embedder, max_chars=self.config.embedding.max_chars,
                             batch_size=self.config.embedding.batch_size, progress=progress)

    # ---- turns ------------------------------------------------------------------------

    def add_messages(
        self,
        session_id: str,
        messages: Iterable[Message | dict[str, Any]],
        *,
        user_id: str,
        agent_id: str | None = None,
    ) -> list[Turn]:
        """Store conversation turns durably (one transaction), before anything else runs."""
        scope = Scope.of(user_id, agent_id)
        _require_text("session_id", session_id, 256)
        msgs = [self._message(i, m) for i, m in enumerate(messages)]
        if not msgs:
            raise ValidationError("messages", "must contain at least one message")
        now = self.clock()
        turns: list[Turn] = []
        with self.store.transaction():
            session = self.store.get_session(scope, session_id) or Session(
                id=session_id, user_id=scope.user_id, agent_id=scope.agent_id,
                started_at=msgs[0].created_at or now,
            )
            seq = self.store.next_seq(scope, session_id)
            for msg in msgs:
                turn = Turn(
                    id=new_id(16), user_id=scope.user_id, agent_id=scope.agent_id, session_id=session_id,
                    seq=seq, role=msg.role, content=msg.content, name=msg.name, tool_calls=msg.tool_calls,
                    created_at=msg.created_at or now, token_count=estimate_tokens(msg.content),
                    metadata=msg.metadata,
                )
                self.store.insert_turn(turn)
                turns.append(turn)
                seq += 1
            self._index_neighbours(scope, session_id, turns[0].seq, turns[-1].seq)
            session.message_count += len(turns)
            session.ended_at = None
            self.store.put_session(session)
        self._after_write()
        if not self._importing:  # the turns are committed; only now may an LLM summarise them
            sessions.maybe_compact(self, scope, session_id)
            self._extraction_trigger(scope, session_id, turns)
        return turns

    def _index_neighbours(self, scope: Scope, session_id: str, first: int, last: int) -> None:
        """Give each turn its neighbours as a second, down-weighted FTS column."""
        w = self.config.search.neighbour_window
        if w == 0:
            return
        rows = self.store.turn_rows(scope, session_id, first - 2 * w, last + w)
        by_seq = {seq: (rowid, text) for rowid, seq, text in rows}
        for seq in range(first - w, last + 1):
            if seq not in by_seq:
                continue
            context = " ".join(by_seq[s][1] for s in range(seq - w, seq + w + 1) if s != seq and s in by_seq)
            self.store.set_turn_context(by_seq[seq][0], by_seq[seq][1], context)

    def _message(self, index: int, raw: Message | dict[str, Any]) -> Message:
        if isinstance(raw, Message):
            msg = raw
        elif isinstance(raw, dict):
            try:
                msg = Message.model_validate({**raw, "content": raw.get("content") or ""})
            except PydanticValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                raise ValidationError(f"messages[{index}].{where}", err["msg"]) from None
        else:
            raise ValidationError(f"messages[{index}]", f"must be a dict or Message, got {type(raw).__name__}")
        if not msg.content.strip() and not msg.tool_calls:
            raise ValidationError(f"messages[{index}].content", "must not be empty")
        limit = self.config.store.max_content_chars
        if len(msg.content) > limit:
            raise ValidationError(
                f"messages[{index}].content",
                f"is {len(msg.content)} characters; the limit is {limit} (store.max_content_chars)",
            )
        if msg.created_at is not None and msg.created_at.tzinfo is None:
            msg = msg.model_copy(update={"created_at": msg.created_at.replace(tzinfo=UTC)})
        return msg

    def end_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> list[RuleResult]:
        """Close a session and emit `session.ended`; the configured rules decide what runs
        (by default: extract memories from its turns; an episode for sessions of ≥ 3 messages)."""
        scope = Scope.of(user_id, agent_id)
        session = self.store.get_session(scope, session_id)
        if session is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
        now = self.clock()
        session.ended_at = now
        with self.store.transaction():
            self.store.put_session(session)
        return self.events.emit(Event.session_ended(scope, session_id, session.message_count, now))

    def _action_extract(self, event: Event) -> JobReport | None:
        """Queue the session's not-yet-extracted turns as one job (a range is queued once) and
        run it now; a failed run stays queued with back-off (see `drain`)."""
        return self._extract_now(event.scope, event.payload["session_id"], None)

    # ---- extraction (issue 4) ---------------------------------------------------------

    @property
    def jobs(self) -> JobRunner:
        """The extraction queue of this store (created on first use)."""
        if self._jobs is None:
            self._jobs = JobRunner(self.store, self.embedder, self.config, self.events, self._retrieve)
        return self._jobs

    def extract(self, session_id: str, *, user_id: str, agent_id: str | None = None,
                through_seq: int | None = None) -> JobReport:
        """Extract memories from the session's turns not extracted yet (up to `through_seq`), now.

        Uses the LLM when one is configured, the offline heuristics otherwise. On an LLM
        failure the report says `status="retrying"` and the job waits in the queue with
        back-off; the turns are safe either way. Example: `m.extract("s1", user_id="lin").stats`.
        """
        scope = Scope.of(user_id, agent_id)
        if self.store.get_session(scope, session_id) is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
        report = self._extract_now(scope, session_id, through_seq)
        if report is None:
            last = self.store.next_seq(scope, session_id) - 1
            return JobReport(session_id, last + 1, last, status="empty")
        return report

    def drain(self, now: datetime | None = None, *, limit: int = 100) -> _list[JobReport]:
        """Run every extraction job that is due (queued, or claimed by a worker that died)."""
        return self.jobs.drain(now or self.clock(), self.llm, limit)

    def _extract_now(self, scope: Scope, session_id: str, through_seq: int | None) -> JobReport | None:
        job = self.jobs.enqueue(scope, session_id, self.clock(), through_seq)
        if job is None:
            return None
        return self.jobs.run(job, self.clock(), self.llm)

    def _retrieve(self, scope: Scope, query: str, limit: int) -> _list[Hit]:
        # seed 003: being retrieved for the extractor is not being used; never activates
        return self.search(query, user_id=scope.user_id, agent_id=scope.agent_id or None, limit=limit,
                           activate=False)

    def _extraction_trigger(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> JobReport | None:
        """Extract during a session: at once when the user says "remember/forget …"
        (seed 001 §6), else every N user messages of ≥ min_message_chars, at most
        max_per_session times a session (seed 002 §6)."""
        cfg = self.config.extraction
        users = [t for t in turns if t.role == "user"]
        if any(is_command(t.content) for t in users):
            self.jobs.apply_commands(scope, session_id, self.clock())
        if cfg.every_n_user_messages <= 0 or not users:
            return None
        qualifying = sum(1 for t in users if len(t.content.strip()) >= cfg.min_message_chars)
        if not qualifying:
            return None
        with self.store.transaction():
            session = self.store.get_session(scope, session_id)
            if session is None:
                return None
            count = int(session.metadata.get("user_messages_since_extract", 0)) + qualifying
            session.metadata["user_messages_since_extract"] = count
            self.store.put_session(session)
        if count < cfg.every_n_user_messages or session.extraction_count >= cfg.max_per_session:
            return None
        return self._extract_now(scope, session_id, None)

    def import_conversations(
        self,
        conversations: Sequence[Conversation],
        *,
        user_id: str,
        agent_id: str | None = None,
        progress: Callable[[int], None] | None = None,
        embed: bool = True,
    ) -> int:
        """Store parsed conversations (see `memlane.importers`) in one transaction; returns turns.

        `embed=False` leaves the vectors to the background indexer or the next `flush()`."""
        count = 0
        self._importing = True
        try:
            with self.store.transaction():
                for conv in conversations:
                    count += len(self.add_messages(conv.session_id, conv.messages,
                                                   user_id=conv.user_id or user_id, agent_id=agent_id))
                    if progress:
                        progress(len(conv.messages))
        finally:
            self._importing = False
        if embed:
            self._after_write()
        return count

    def get_turns(self, session_id: str | None = None, *, user_id: str, agent_id: str | None = None,
                  limit: int | None = None) -> list[Turn]:
        return self.store.get_turns(Scope.of(user_id, agent_id), session_id=session_id, limit=limit)

    def sessions(self, *, user_id: str, agent_id: str | None = None) -> list[Session]:
        return self.store.list_sessions(Scope.of(user_id, agent_id))

    # ---- sessions, short-term memory, context (issue 5) --------------------------------

    def start_session(self, session_id: str | None = None, *, user_id: str, agent_id: str | None = None,
                      metadata: dict[str, Any] | None = None) -> Session:
        """Open a session (a new id when none is given); an existing one is resumed."""
        return sessions.start_session(self, Scope.of(user_id, agent_id), session_id, metadata)

    def get_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> Session:
        session = self.store.get_session(Scope.of(user_id, agent_id), session_id)
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
        return self.store.list_episodes(Scope.of(user_id, agent_id), session_id=session_id, limit=limit)

    def _action_episode(self, event: Event) -> Episode | None:
        """The `episode` rule action: summarise the ended session (seeds 002, 003, 004 §6)."""
        episode = sessions.write_episode(self, event)
        if episode is not None:
            self._after_write()
        return episode

    def scratchpad(self, *, user_id: str, agent_id: str | None = None) -> Scratchpad:
        """The scope's scratchpad (empty when never set)."""
        scope = Scope.of(user_id, agent_id)
        return self.store.get_scratchpad(scope) or Scratchpad(
            user_id=scope.user_id, agent_id=scope.agent_id, updated_at=self.clock())

    def update_scratchpad(self, *, user_id: str, agent_id: str | None = None, focus: str | None = None,
                          done: str | None = None) -> Scratchpad:
        """Set the current focus (the old one moves to the recent tasks) and/or record a finished task."""
        return sessions.update_scratchpad(self, Scope.of(user_id, agent_id), focus=focus, done=done)

    def build_context(self, session_id: str | None = None, query: str | None = None, *, user_id: str,
                      agent_id: str | None = None, model: str | None = None) -> Context:
        """Blocks within budgets and a rendered system prompt for the next LLM call (see memlane.context)."""
        return build_context(self, session_id, user_id=user_id, agent_id=agent_id, query=query, model=model)

    def tools(self, *, user_id: str, agent_id: str | None = None, session_id: str | None = None) -> MemoryTools:
        """The agent tools (OpenAI function-calling schemas + handlers) bound to one scope."""
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
        score = initial_score(importance, self.config.policy)
        if not 0.0 <= confidence <= 1.0:
            raise ValidationError("confidence", f"must be within [0, 1], got {confidence}")
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError("metadata", "must be a JSON object (dict)")
        now = self.clock()
        mem = MemoryRecord(
            id=new_id(), user_id=scope.user_id, agent_id=scope.agent_id, content=content, category=category,
            score=score, confidence=confidence, subject=subject, predicate=predicate, created_at=now,
            updated_at=now, last_activated=now, expires_at=expires_at, source=source,
            # only a person's own words are "verified" (seed 003); code adding memories says so explicitly
            verified=bool(verified), source_session=session_id,
            pinned=pinned, metadata=metadata or {},
        )
        vec = self._embed_one(content)
        with self.store.transaction():
            rowid = self.store.insert_memory(mem)
            self.store.put_vectors("memories", scope, [rowid], vec[None, :])
            self.store.add_event(scope, mem.id, "ADD", None, mem.snapshot(), actor, "", now)
        self._after_write()
        self._after_memory_change(scope)
        if mem.score >= self.config.events.important_score:  # seed 004 §11.2
            self.events.emit(Event.memory_important(scope, mem.id, mem.content, mem.category, mem.score, now))
        return mem

    def get(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> MemoryRecord:
        mem = self.store.get_memory(Scope.of(user_id, agent_id), memory_id)
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
    ) -> _list[MemoryRecord]:
        """Memories of a scope, best score first, filtered."""
        if status is not None and status not in ("active", "archived"):
            raise ValidationError("status", f"must be active or archived, got {status!r}")
        if limit is not None and limit < 0:
            raise ValidationError("limit", f"must not be negative, got {limit}")
        return self.store.list_memories(
            Scope.of(user_id, agent_id), category=category, status=status, session_id=session_id,
            since=since, until=until, limit=limit, offset=offset,
        )

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
    ) -> MemoryRecord:
        """Change a memory; new content is re-indexed and re-embedded. Audited."""
        scope = Scope.of(user_id, agent_id)
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = self._content(content)
        if category is not None:
            changes["category"] = self._category(category)
        if importance is not None:
            changes["score"] = initial_score(importance, self.config.policy)
        if score is not None:
            if not 0.0 <= score <= 1.0:
                raise ValidationError("score", f"must be within [0, 1], got {score}")
            changes["score"] = score
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise ValidationError("metadata", "must be a JSON object (dict)")
            changes["metadata"] = metadata
        if pinned is not None:
            changes["pinned"] = pinned
        if status is not None:
            if status not in ("active", "archived"):
                raise ValidationError("status", f"must be active or archived, got {status!r}")
            changes["status"] = status
        if expires_at is not None:
            changes["expires_at"] = expires_at
        if not changes:
            return before
        now = self.clock()
        after = before.model_copy(update={**changes, "updated_at": now})
        content_changed = after.content != before.content
        vec = self._embed_one(after.content) if content_changed else None
        with self.store.transaction():
            rowid = self.store.update_memory(after, content_changed=content_changed)
            if vec is not None:
                self.store.put_vectors("memories", scope, [rowid], vec[None, :])
            self.store.add_event(scope, memory_id, kind, before.snapshot(), after.snapshot(), actor, reason, now)
        self._after_memory_change(scope)
        return after

    def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None,
               actor: str = "api", reason: str = "") -> MemoryRecord:
        """Remove a memory, its full-text entry and its vector; the audit trail keeps it."""
        scope = Scope.of(user_id, agent_id)
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        now = self.clock()
        with self.store.transaction():
            self.store.delete_memory(scope, memory_id)
            self.store.add_event(scope, memory_id, "DELETE", before.snapshot(), None, actor, reason, now)
        self._after_memory_change(scope)
        self.events.emit(Event.memory_deleted(scope, memory_id, before.content, before.category, actor, reason, now))
        return before

    def history(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> _list[MemoryEvent]:
        """The audit trail of one memory, oldest first (also after it was deleted)."""
        events = self.store.events(Scope.of(user_id, agent_id), memory_id)
        if not events:
            raise NotFound(f"memory {memory_id!r} has no history for user {user_id!r}")
        return events

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
        min_score: float = 0.0,
    ) -> _list[Hit]:
        """Hybrid search of one corpus: "memories" (default), "turns" or "episodes".

        Hits come in rank order; `Hit.score` is an absolute relevance in [0, 1] (keywords held,
        or the embedding's lift over unrelated text), so `min_score` drops weak hits.

        `query_vector` skips embedding the query: a vector the caller already has, or a
        function from text to vector (the caller's own embedder or cache), given the text the
        dense side embeds (`search.dense_text`)."""
        scope = Scope.of(user_id, agent_id)
        if corpus not in ("memories", "turns", "episodes"):
            raise ValidationError("corpus", f"must be memories, turns or episodes, got {corpus!r}")
        f = filters if isinstance(filters, Filters) else Filters.from_dict(filters)
        hits = run_search(
            self.store, self.config.search, corpus, scope, query,
            limit=limit or self.config.search.default_limit, now=self.clock(),
            query_vector=self._query_vector if query_vector is None else query_vector, filters=f,
            min_score=_min_score(min_score), null_vectors=self._null_vectors(),
        )
        if corpus == "memories" and (self.config.search.activate_on_hit if activate is None else activate):
            self._activate(scope, [h.memory for h in hits if h.memory is not None])
        return hits

    def _null_vectors(self) -> np.ndarray:
        """`search.NULL_TEXTS` as this embedder's passages: where its unrelated text sits."""
        if self._nulls is None:
            self._nulls = embed_cached(self.store, self.embedder, list(NULL_TEXTS))
        return self._nulls

    def _activate(self, scope: Scope, memories: Sequence[MemoryRecord]) -> None:
        """Seed 001/004: a hit refreshes last_activated and counts; the score is untouched."""
        if not memories:
            return
        now = self.clock()
        with self.store.transaction():
            for mem in memories:
                self.store.update_memory(
                    mem.model_copy(update={"last_activated": now, "activation_count": mem.activation_count + 1}),
                    content_changed=False,
                )

    # ---- human-readable files, the seed-000 archive, export / import (issue 7) -----------

    def data_dir(self, *, user_id: str, agent_id: str | None = None) -> Path:
        """The scope's directory for MEMORY.md, USER.md, history.json and memory/."""
        return markdown.scope_dir(self.config.home, Scope.of(user_id, agent_id))

    def md_export(self, *, user_id: str, agent_id: str | None = None, path: Path | None = None) -> Path:
        """Write MEMORY.md (seed 001 §2.3): a full rewrite after a copy to MEMORY.md.bak."""
        return markdown.write_memory_md(self, Scope.of(user_id, agent_id), path)

    def md_import(self, path: Path | None = None, *, user_id: str, agent_id: str | None = None,
                  dry_run: bool = False) -> _list[markdown.MdOperation]:
        """Apply a person's edits of MEMORY.md as audited ADD / UPDATE / DELETE (actor "import")."""
        return markdown.import_memory_md(self, Scope.of(user_id, agent_id), path, dry_run=dry_run)

    def user_profile(self, *, user_id: str, agent_id: str | None = None, path: Path | None = None) -> Path:
        """Write USER.md (seed 002): the profile from preference / fact / workflow memories."""
        return userprofile.write_user_md(self, Scope.of(user_id, agent_id), path)

    def archive(self, *, user_id: str, agent_id: str | None = None,
                force: bool = False) -> files_archive.ArchiveReport:
        """One seed-000 round: history.json synced and capped, archived into memory/ when due."""
        return files_archive.run_archive(self, Scope.of(user_id, agent_id), force=force)

    def archive_context(self, pending: str, *, user_id: str, agent_id: str | None = None) -> str:
        """Seed 000's `## Memory` block for the pending input: BM25 over the scope's files."""
        return files_archive.archive_context(self, Scope.of(user_id, agent_id), pending)[0]

    def export(self, *, user_id: str, agent_id: str | None = None, format: str = "jsonl") -> str:
        """The whole scope as text: "jsonl" (lossless, for `import_`) or "md" (MEMORY.md)."""
        return portable.export_scope(self, Scope.of(user_id, agent_id), format)

    def import_(self, path: str | Path, *, user_id: str | None = None,
                agent_id: str | None = None) -> portable.ImportReport:
        """Import a memlane JSONL export (all or nothing; records already here are skipped)."""
        return portable.import_scope(self, Path(path), user_id=user_id, agent_id=agent_id)

    def _after_memory_change(self, scope: Scope) -> None:
        """Seed 001 (`lifecycle.markdown_primary`): MEMORY.md is rewritten after every save."""
        if self.config.lifecycle.markdown_primary and not self._md_paused:
            markdown.write_memory_md(self, scope)

    # ---- lifecycle (issue 6) ------------------------------------------------------------

    def consolidate(self, *, user_id: str | None = None, agent_id: str | None = None, now: datetime | None = None,
                    dry_run: bool = False, on_step: lifecycle.StepHook | None = None) -> lifecycle.ConsolidationReport:
        """Drain the queue, dedup, decay, demote / archive / delete, expire, review, refresh
        MEMORY.md + USER.md, archive old turns — for one scope, or every scope when `user_id`
        is None. Audited, idempotent, resumable. Example: `m.consolidate(user_id="lin", dry_run=True).actions`."""
        scope = Scope.of(user_id, agent_id) if user_id is not None else None
        return lifecycle.consolidate(self, scope, now=now, dry_run=dry_run, on_step=on_step)

    def feedback(self, session_id: str, reply: str, *, user_id: str,
                 agent_id: str | None = None) -> review.FeedbackReport:
        """Seed 003 "was it used?": boost only the memories the session's last `build_context`
        injected that `reply` actually used (the LLM judges; offline, keyword overlap)."""
        return review.feedback(self, Scope.of(user_id, agent_id), session_id, reply)

    # ---- stats ------------------------------------------------------------------------

    def stats(self, *, user_id: str, agent_id: str | None = None) -> Stats:
        scope = Scope.of(user_id, agent_id)
        return Stats(user_id=scope.user_id, agent_id=scope.agent_id, embedder=self.embedder.model_id,
                     **self.store.stats(scope))

    # ---- helpers ----------------------------------------------------------------------

    def _after_write(self) -> None:
        if self._importing:
            return
        if self._indexer is not None:
            self._indexer.notify()
        else:
            self.flush()

    def _embed_one(self, text: str) -> np.ndarray:
        return embed_cached(self.store, self.embedder, [vector_key(text, self.config.embedding.max_chars)])[0]

    def _content(self, content: Any) -> str:
        if not isinstance(content, str):
            raise ValidationError("content", f"must be a string, got {type(content).__name__}")
        _require_text("content", content, self.config.store.max_content_chars)
        return content.strip()

    def _category(self, category: str | None) -> str:
        cats = self.config.policy.categories
        if category is None:
            return self.config.policy.default_category
        c = str(category).strip().lower()
        if c not in cats:
            raise ValidationError(
                "category", f"unknown category {category!r}; profile {self.config.profile!r} allows: {', '.join(cats)}"
            )
        return c


def _min_score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValidationError("min_score", f"must be a number from 0 to 1 (a hit's relevance), got {value!r}")
    return float(value)


def _require_text(field: str, value: Any, limit: int) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > limit:
        raise ValidationError(field, f"is {len(value)} characters; the limit is {limit} (store.max_content_chars)")



def open_memory(home: str | Path | None = None, **overrides: Any) -> Memory:
    """A `Memory` on `home` (default: MEMLANE_HOME or ~/.memlane) with config from the environment."""
    if home is not None:
        overrides.setdefault("store", {})["home"] = str(home)
    return Memory(Config.from_env(**overrides))
