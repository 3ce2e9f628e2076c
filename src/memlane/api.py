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

from memlane.config import Config
from memlane.embeddings import Embedder, make_embedder
from memlane.errors import NotFound, ValidationError
from memlane.events import Event, EventBus, RuleResult
from memlane.importers import Conversation
from memlane.indexing import BackgroundIndexer, QueryCache, embed_cached, index_pending, vector_key
from memlane.llm import LLM, make_llm
from memlane.models import (
    Corpus,
    Hit,
    MemoryEvent,
    MemoryRecord,
    Message,
    Scope,
    Session,
    Source,
    Stats,
    Turn,
    new_id,
    utcnow,
)
from memlane.policy import initial_score
from memlane.search import Filters
from memlane.search import search as run_search
from memlane.store import Store, open_store
from memlane.text import estimate_tokens

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
        self.store: Store = open_store(self.config)
        self.embedder: Embedder = embedder or make_embedder(self.config.embedding)
        self.store.ensure_vectors(self.embedder.model_id, self.embedder.dimensions)
        self._query_vector = QueryCache(self.embedder)
        self._indexer: BackgroundIndexer | None = None
        self._importing = False
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
        return self.events.emit(Event(
            "session.ended", scope, f"session:{session_id}",
            {"session_id": session_id, "message_count": session.message_count}, now,
        ))

    def _action_extract(self, event: Event) -> bool:
        """Queue the session's not-yet-extracted turns as one job (a range is queued once)."""
        session_id = event.payload["session_id"]
        session = self.store.get_session(event.scope, session_id)
        if session is None:
            return False
        first = int(session.metadata.get("extracted_through", 0)) + 1
        last = self.store.next_seq(event.scope, session_id) - 1
        if last < first:
            return False
        with self.store.transaction():
            queued = self.store.enqueue_job(event.scope, session_id, first, last, event.at)
            session.metadata["extracted_through"] = last
            self.store.put_session(session)
        return queued

    def import_conversations(
        self,
        conversations: Sequence[Conversation],
        *,
        user_id: str,
        agent_id: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Store parsed conversations (see `memlane.importers`) in one transaction; returns turns."""
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
        self._after_write()
        return count

    def get_turns(self, session_id: str | None = None, *, user_id: str, agent_id: str | None = None,
                  limit: int | None = None) -> list[Turn]:
        return self.store.get_turns(Scope.of(user_id, agent_id), session_id=session_id, limit=limit)

    def sessions(self, *, user_id: str, agent_id: str | None = None) -> list[Session]:
        return self.store.list_sessions(Scope.of(user_id, agent_id))

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
            verified=source == "user" if verified is None else verified, source_session=session_id,
            pinned=pinned, metadata=metadata or {},
        )
        vec = self._embed_one(content)
        with self.store.transaction():
            rowid = self.store.insert_memory(mem)
            self.store.put_vectors("memories", scope, [rowid], vec[None, :])
            self.store.add_event(scope, mem.id, "ADD", None, _snapshot(mem), actor, "", now)
        self._after_write()
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
            self.store.add_event(scope, memory_id, kind, _snapshot(before), _snapshot(after), actor, reason, now)
        return after

    def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None,
               actor: str = "api", reason: str = "") -> MemoryRecord:
        """Remove a memory, its full-text entry and its vector; the audit trail keeps it."""
        scope = Scope.of(user_id, agent_id)
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        with self.store.transaction():
            self.store.delete_memory(scope, memory_id)
            self.store.add_event(scope, memory_id, "DELETE", _snapshot(before), None, actor, reason, self.clock())
        return before

    def history(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> _list[MemoryEvent]:
        """The audit trail of one memory, oldest first (also after it was deleted)."""
        events = self.store.events(Scope.of(user_id, agent_id), memory_id)
        if not events:
            raise NotFound(f"memory {memory_id!r} has no history for user {user_id!r}")
        return events

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
    ) -> _list[Hit]:
        """Hybrid search of one corpus: "memories" (default), "turns" or "episodes"."""
        scope = Scope.of(user_id, agent_id)
        if corpus not in ("memories", "turns", "episodes"):
            raise ValidationError("corpus", f"must be memories, turns or episodes, got {corpus!r}")
        f = filters if isinstance(filters, Filters) else Filters.from_dict(filters)
        hits = run_search(
            self.store, self.config.search, corpus, scope, query,
            limit=limit or self.config.search.default_limit, now=self.clock(),
            query_vector=self._query_vector, filters=f,
        )
        if corpus == "memories" and (self.config.search.activate_on_hit if activate is None else activate):
            self._activate(scope, [h.memory for h in hits if h.memory is not None])
        return hits

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


def _require_text(field: str, value: Any, limit: int) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > limit:
        raise ValidationError(field, f"is {len(value)} characters; the limit is {limit} (store.max_content_chars)")


def _snapshot(mem: MemoryRecord) -> dict[str, Any]:
    return mem.model_dump(mode="json", exclude={"user_id", "agent_id"})


def open_memory(home: str | Path | None = None, **overrides: Any) -> Memory:
    """A `Memory` on `home` (default: MEMLANE_HOME or ~/.memlane) with config from the environment."""
    if home is not None:
        overrides.setdefault("store", {})["home"] = str(home)
    return Memory(Config.from_env(**overrides))
