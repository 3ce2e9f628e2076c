"""`Memory`: the one façade the CLI, the server and agents use.

Every call takes the scope (`user_id`, optional `agent_id`) and validates its input before
anything is written; every write is one transaction, audited where it touches a memory.
"""

from __future__ import annotations

import builtins
import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any, get_args

import numpy as np

from memlane import archive as files_archive
from memlane import (
    forget,
    lifecycle,
    markdown,
    mdsync,
    portable,
    retention,
    review,
    sessions,
    topics,
    userprofile,
    validate,
)
from memlane import undo as undoing
from memlane.attachments import Attachments, SessionStates
from memlane.config import MAX_ID_CHARS, Config
from memlane.context import Context, build_context
from memlane.crosslingual import PARALLEL_TEXTS, LanguageAxes, language_axes
from memlane.embeddings import Embedder, make_embedder
from memlane.errors import ConfigError, MemlaneError, NotFound, ValidationError
from memlane.events import Event, EventBus, RuleResult
from memlane.heuristic import is_command
from memlane.importers import Conversation, ConversationImport, message_key
from memlane.indexing import (
    BackgroundIndexer,
    QueryCache,
    embed_cached,
    index_pending,
    vector_key,
    warm_cache,
)
from memlane.jobs import JobReport, JobRunner
from memlane.llm import LLM, make_llm
from memlane.models import (
    Corpus,
    Episode,
    EventKind,
    ExtractionJob,
    Hit,
    MemoryEvent,
    MemoryRecord,
    Message,
    Role,
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
from memlane.retrieval.filters import Filters
from memlane.retrieval.relevance import NULL_TEXTS
from memlane.retrieval.search import search as run_search
from memlane.store import Store, open_store
from memlane.text import estimate_tokens, neighbour_context
from memlane.tools import MemoryTools, message_fields
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
        self.events.register_action("extract", self._action_extract)
        self.events.register_action("episode", self._action_episode)
        for name, action in (actions or {}).items():
            self.events.register_action(name, action)
        self.store: Store = open_store(self.config)
        self.events.bind(self.store, self.config.events)
        self.embedder: Embedder = embedder or make_embedder(self.config.embedding)
        self.store.ensure_vectors(self.embedder.model_id, self.embedder.dimensions)
        self._check_turn_keys()
        self._query_vector = QueryCache(self.embedder, max_chars=self.config.embedding.max_query_chars)
        self._nulls: np.ndarray | None = None
        self._axes: LanguageAxes | None | bool = False  # False: not computed yet
        self._indexer: BackgroundIndexer | None = None
        self._importing = False
        self._jobs: JobRunner | None = None
        self._worker: JobWorker | None = None  # started on first use, with an LLM (see `_background`)
        self._waiting = _Waiting()  # end_session(wait=True) in progress, per thread
        self._md_pause = _Waiting()  # md import applies many writes, then rewrites MEMORY.md once (per thread)
        if self.config.embedding.background:
            self._indexer = BackgroundIndexer(
                self._open_side_store, self.embedder,
                max_chars=self.config.embedding.max_chars, batch_size=self.config.embedding.batch_size,
                passage_chars=self.config.embedding.passage_chars, max_passages=self.config.embedding.passages,
                warm=(*NULL_TEXTS, *PARALLEL_TEXTS), warm_queries=PARALLEL_TEXTS,
            )
            self._indexer.notify()  # pick up rows left unembedded by an earlier process
        self.events.check()

    def _check_turn_keys(self) -> None:
        """Long turns embedded under other key or passage settings (or before passages, issue
        14) are embedded again, once: their passages would otherwise never be cut."""
        e = self.config.embedding
        keys = f"{e.max_chars}:{e.passage_chars if e.passages else 0}:{e.passages}"
        if self.store.meta("turn_vector_keys") == keys:
            return  # the common case: a read, no write lock at every open
        with self.store.transaction():
            old = self.store.meta("turn_vector_keys")  # again under the lock: another process may have set it
            if old != keys:
                if old:  # two programs with different settings on one home re-embed at every switch
                    log.warning("long turns of %s were embedded with key:passage chars:passages %s; this "
                                "process uses %s and embeds them again. Give every process using this "
                                "home the same embedding settings.", self.config.home, old, keys)
                head = (old or "").split(":")[0]
                # turns longer than the shorter key were cut differently (an unreadable value: every one)
                shorter = min(e.max_chars, int(head)) if head.isdigit() else 0
                self.store.reembed_long_turns(shorter if old else e.max_chars)
                self.store.set_meta("turn_vector_keys", keys)

    @property
    def _md_paused(self) -> bool:
        return self._md_pause.on

    @_md_paused.setter
    def _md_paused(self, value: bool) -> None:
        self._md_pause.on = value

    def _open_side_store(self) -> Store:
        store = open_store(self.config)
        store.ensure_vectors(self.embedder.model_id, self.embedder.dimensions)
        return store

    # ---- lifecycle of the object ------------------------------------------------------

    def close(self) -> None:
        if self._worker is not None:  # bounded: a hung LLM call is left to the next worker
            self._worker.stop(self.config.extraction.worker_stop_seconds)
            self._worker = None
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def background_status(self) -> dict[str, Any]:
        """The background indexer and LLM worker, for a server's status page."""
        idx = self._indexer
        worker = self._worker.status() if self._worker is not None else None
        return {"indexer": None if idx is None else {"error": repr(idx.error) if idx.error else None},
                "worker": None if worker is None else vars(worker)}

    def settle(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the background indexer and worker to finish what they
        hold (a server's graceful shutdown); False when time ran out (the rest stays queued)."""
        deadline = time.monotonic() + timeout
        ok = True
        if self._indexer is not None:
            ok = self._indexer.wait_idle(timeout) and ok
        if self._worker is not None:
            ok = self._worker.wait_idle(max(0.0, deadline - time.monotonic())) and ok
        return ok

    def flush(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every row still waiting for a vector, now, in this thread; returns how many."""
        e = self.config.embedding
        done = index_pending(self.store, self.embedder, max_chars=e.max_chars, batch_size=e.batch_size,
                             progress=progress, passage_chars=e.passage_chars, max_passages=e.passages)
        if done and self._nulls is None:  # cached with the first rows: the next process's first search needs them
            self._nulls = warm_cache(self.store, self.embedder, NULL_TEXTS)
            warm_cache(self.store, self.embedder, PARALLEL_TEXTS)  # the language directions' texts
            warm_cache(self.store, self.embedder, PARALLEL_TEXTS, query=True)
        return done

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
        msgs = self._messages(messages, cap=self.config.store.max_messages_per_call)
        self._batch(len(msgs), sum(len(m.content) for m in msgs))
        return self._store_turns(scope, session_id, msgs)

    def _messages(self, messages: Any, field: str = "messages", cap: int | None = None) -> _list[Message]:
        if isinstance(messages, str | bytes | dict | Message) or not isinstance(messages, Iterable):
            raise ValidationError(field, f"must be a list of messages, got {type(messages).__name__}")
        msgs = []
        for i, m in enumerate(messages):
            if cap is not None and i >= cap:  # before reading the rest: a flood costs no more than the cap
                self._batch(i + 1, 0)
            msgs.append(self._message(i, m, field))
        if not msgs:
            raise ValidationError(field, "must contain at least one message")
        return msgs

    def _batch(self, count: int, chars: int) -> None:
        store = self.config.store
        validate.batch("messages", count, chars, max_count=(store.max_messages_per_call, "store.max_messages_per_call"),
                       max_chars=(store.max_call_chars, "store.max_call_chars"), bulk="import")

    def _store_turns(self, scope: Scope, session_id: str, msgs: Sequence[Message],
                     import_keys: Sequence[str] | None = None) -> _list[Turn]:
        now = self.clock()
        with self.store.transaction():
            session = self.store.get_session(scope, session_id) or Session(
                id=session_id, user_id=scope.user_id, agent_id=scope.agent_id,
                started_at=msgs[0].created_at or now,
            )
            seq = self.store.next_seq(scope, session_id)
            turns = [Turn(
                id=new_id(16), user_id=scope.user_id, agent_id=scope.agent_id, session_id=session_id,
                seq=seq + i, role=msg.role, content=msg.content, name=msg.name, tool_calls=msg.tool_calls,
                created_at=msg.created_at or now, token_count=estimate_tokens(msg.content),
                metadata=msg.metadata,
            ) for i, msg in enumerate(msgs)]
            self.store.insert_turns(turns, import_keys)  # one batch: a few round trips on PostgreSQL
            self._index_neighbours(scope, session_id, turns[0].seq, turns[-1].seq)
            session.message_count += len(turns)
            session.ended_at = None
            self.store.put_session(session)
        self._after_write()
        if not self._importing:  # the turns are committed; only now may an LLM summarise them
            try:
                if self._background():  # never wait on the LLM's summary: the worker compacts
                    if self._needs_compaction(scope, session_id):
                        self.worker.submit(lambda: sessions.maybe_compact(self, scope, session_id),
                                           key=("compact", scope, session_id))
                else:
                    sessions.maybe_compact(self, scope, session_id)
                self._extraction_trigger(scope, session_id, turns)
            except Exception:
                # the turns are stored and acknowledged; what failed here (compaction, a command)
                # is redone from them by the session's next extraction job
                log.exception("after storing turns of session %s: follow-up work failed", session_id)
            try:  # seed 002 §4: a topic switch moves the old focus to the finished tasks; seed 000: history.json per turn
                topics.track_topic(self, scope, session_id, turns)
                files_archive.after_turns(self, scope, turns)
            except Exception:  # as above: the turns are stored; history.json is synced again by the next run
                log.exception("after storing turns of session %s: scratchpad or history.json failed", session_id)
        return turns

    def _needs_compaction(self, scope: Scope, session_id: str) -> bool:
        session = self.store.get_session(scope, session_id)
        through = sessions.compacted_through(session) if session else 0
        return self.store.next_seq(scope, session_id) - 1 - through > self.config.session.compaction_cap

    def _index_neighbours(self, scope: Scope, session_id: str, first: int, last: int) -> None:
        """Give each turn its neighbours as a second, down-weighted FTS column."""
        w = self.config.search.neighbour_window
        if w == 0:
            return
        rows = self.store.turn_rows(scope, session_id, first - 2 * w, last + w)
        by_seq = {seq: (rowid, text) for rowid, seq, text in rows}
        texts = {s: t for s, (_, t) in by_seq.items()}
        self.store.set_turn_contexts([(by_seq[seq][0], by_seq[seq][1], neighbour_context(texts, seq, w))
                                      for seq in range(first - w, last + 1) if seq in by_seq])

    def _message(self, index: int, raw: Any, field: str = "messages") -> Message:
        """One message, every field checked by `memlane.validate`; errors name `messages[i].field`."""
        at = f"{field}[{index}]"
        if isinstance(raw, Message):
            raw = {k: getattr(raw, k) for k in Message.model_fields}
        raw = message_fields(at, raw)  # OpenAI shapes: content parts, tool_call_id, SDK objects
        if not isinstance(raw, dict):
            raise ValidationError(at, f"must be a dict or Message, got {type(raw).__name__}")
        unknown = [k for k in raw if k not in Message.model_fields]
        if unknown:
            raise ValidationError(f"{at}.{validate.key_name(unknown[0])}",
                                  f"unknown field; known: {', '.join(Message.model_fields)}")
        store = self.config.store
        calls = validate.tool_calls(f"{at}.tool_calls", raw.get("tool_calls"), store) or None
        content = raw.get("content")
        content = "" if content is None and calls else content
        validate.text(f"{at}.content", content, store.max_turn_chars, setting="store.max_turn_chars",
                      required=not calls, controls=True)
        return Message(
            role=validate.choice(f"{at}.role", raw.get("role", "user"), get_args(Role)),
            content=content,
            name=validate.optional_text(f"{at}.name", raw.get("name"), MAX_ID_CHARS, controls=True),
            tool_calls=calls,
            created_at=validate.optional_when(f"{at}.created_at", raw.get("created_at")),
            metadata=validate.metadata(f"{at}.metadata", raw.get("metadata"), store),
        )

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
        self._waiting.on = not self._background(wait)  # read by the rule actions, in this thread
        try:
            results = self.events.emit(Event.session_ended(scope, session_id, session.message_count, now))
        finally:
            self._waiting.on = False
        retention.end_of_session(self, scope, session_id)  # seed 002 §4: TRANSIENT goes with its session
        return results

    def _action_extract(self, event: Event) -> JobReport | None:
        """Queue the session's not-yet-extracted turns as one job (a range is queued once) and
        run it now — or, in the background (see `end_session`), let the worker run it; a
        failed run stays queued with back-off (see `drain`)."""
        scope, session_id = event.scope, event.payload["session_id"]
        if self._waiting.on or not self._background():
            return self._extract_now(scope, session_id, None)
        return self._queue_extraction(scope, session_id)

    def _queue_extraction(self, scope: Scope, session_id: str) -> JobReport | None:
        job = self.jobs.enqueue(scope, session_id, self.clock())
        self.worker.notify()
        if job is None:
            return None
        return JobReport(session_id, job.first_seq, job.last_seq, job_id=job.id, status="queued",
                         attempts=job.attempts, next_at=job.next_at)

    def _background(self, wait: bool | None = None) -> bool:
        """Whether LLM work goes to the worker: an LLM is configured and nobody asked to wait.
        Offline the heuristics are fast and run in the caller."""
        if wait is None:
            wait = self.config.extraction.wait_for_llm
        return self.llm is not None and not wait

    @property
    def worker(self) -> JobWorker:
        """The background worker (started on first use; `close()` stops it)."""
        if self._worker is None:
            self._worker = JobWorker(self)
        return self._worker

    # ---- extraction (issue 4) ---------------------------------------------------------

    @property
    def jobs(self) -> JobRunner:
        """The extraction queue of this store (created on first use)."""
        if self._jobs is None:
            self._jobs = JobRunner(self.store, self.embedder, self.config, self.events, self._retrieve)
            self._jobs.on_change = self._after_job
        return self._jobs

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
        report = self._extract_now(scope, session_id, through_seq)
        if report is None:
            last = self.store.next_seq(scope, session_id) - 1
            return JobReport(session_id, last + 1, last, status="empty")
        return report

    def drain(self, now: datetime | None = None, *, limit: int = 100) -> _list[JobReport]:
        """Run every extraction job that is due (queued, or claimed by a worker that died)."""
        now = validate.optional_when("now", now)
        return self.jobs.drain(now or self.clock(), self.llm, validate.integer("limit", limit, 1))

    def _extract_now(self, scope: Scope, session_id: str, through_seq: int | None) -> JobReport | None:
        """Queue the session's new turns and run that job here, after the session's earlier
        jobs that are due (left queued while the scope was busy); the new job's report."""
        job = self.jobs.enqueue(scope, session_id, self.clock(), through_seq)
        now = self.clock()
        earlier: JobReport | None = None
        for old in self.store.jobs(scope=scope, due_before=now, status=("queued",), limit=100):
            if old.session_id == session_id and (job is None or old.id != job.id):
                earlier = self.jobs.run_contained(old, now, self.llm)
        if job is None:  # nothing new: a job still waiting (backed off), else the one just rerun
            return self.jobs.pending(scope, session_id) or earlier
        report = self.jobs.run_contained(job, self.clock(), self.llm)
        if report.status == "locked" and self._waiting.on and self._worker is not None:
            # our own worker may have picked the job up: the caller asked to wait, so wait
            self._worker.wait_idle(self.config.llm.deadline_s * 2)
            report = self.jobs.run_contained(job, self.clock(), self.llm)
            if report.status == "skipped":  # the worker finished it
                done = next((j for j in self.store.jobs(scope=scope, status=("done", "queued"), limit=100_000)
                             if j.id == job.id), None)
                if done is not None:
                    report.status = "done" if done.status == "done" else "retrying"
                    report.attempts, report.error, report.next_at = done.attempts, done.last_error, done.next_at
        if report.status == "locked" and self._background():  # the worker retries it when polling
            self.worker.notify()
        return report

    def _after_job(self, scope: Scope, deleted: _list[MemoryRecord]) -> None:
        """A finished extraction job: MEMORY.md follows the store (seed 001) and, in every
        profile, what it deleted leaves the files, as `delete` does."""
        self._after_memory_change(scope)
        if deleted and not self._md_paused:
            mdsync.forget_in_files(self, scope, deleted)

    def _retrieve(self, scope: Scope, query: str, limit: int) -> _list[Hit]:
        # seed 003: being retrieved for the extractor is not being used; never activates
        return self.search(query, user_id=scope.user_id, agent_id=scope.agent_id or None, limit=limit,
                           activate=False, min_score=0.0)

    def _extraction_trigger(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> JobReport | None:
        """Extract during a session: at once when the user says "remember/forget …"
        (seed 001 §6), else every N user messages of ≥ min_message_chars, at most
        max_per_session times a session (seed 002 §6; None: after every turn, seed 003)."""
        cfg = self.config.extraction
        users = [t for t in turns if t.role == "user"]
        if any(is_command(t.content[: cfg.offline_turn_chars], cfg.heuristic_max_sentence_chars) for t in users):
            applied = self.jobs.apply_commands(scope, session_id, self.clock())
            if applied is not None and applied.status == "locked" and self._background():
                self.worker.notify()  # queued as a job: the worker applies them once the scope is free
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
            # the cap counts the runs triggered, not only those finished: a busy worker must not
            # let a chatty session queue one job per turn past max_per_session
            triggered = int(session.metadata.get("in_session_extractions", 0))
            capped = cfg.max_per_session is not None and max(triggered, session.extraction_count) >= cfg.max_per_session
            if count < cfg.every_n_user_messages or capped:
                self.store.put_session(session)
                return None
            session.metadata["in_session_extractions"] = triggered + 1
            self.store.put_session(session)
        if self._background():
            return self._queue_extraction(scope, session_id)
        return self._extract_now(scope, session_id, None)

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
                msgs = self._messages(conv.messages, f"{where}.messages")
            except ValidationError as exc:
                origin = f"{conv.source}, " if conv.source else ""
                raise ValidationError(exc.field, f"{str(exc)[len(exc.field) + 2:]} ({origin}session "
                                                 f"{str(conv.session_id)[:60]!r}); nothing was imported") from None
            keys = [message_key(conv.source, sid, j, m.role, m.content) for j, m in enumerate(msgs)]
            plan.append((scope, sid, msgs, keys))
        stored = skipped = 0
        self._importing = True
        try:
            with self.store.transaction():
                for scope, sid, msgs, keys in plan:
                    have = self.store.turn_import_keys(scope, keys)
                    fresh = [j for j, k in enumerate(keys) if k not in have]
                    if fresh:
                        self._store_turns(scope, sid, [msgs[j] for j in fresh], [keys[j] for j in fresh])
                    stored += len(fresh)
                    skipped += len(msgs) - len(fresh)
                    if progress:
                        progress(len(msgs))
        finally:
            self._importing = False
        if stored:
            try:  # the import's cost, not the first search's (~1 ms a turn)
                self.store.settle_text()
            except MemlaneError as exc:  # the turns are committed: the next search catches up instead
                log.warning("imported %d turns; their words are indexed at the next search (%s)", stored, exc)
        if embed:
            self._after_write()
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
        if not self._waiting.on and self._background():
            episode = self._write_episode(event, offline=True)
            if episode is not None:
                self.worker.submit(lambda: self._write_episode(event), key=("episode", event.scope,
                                                                              event.payload["session_id"]))
            return episode
        return self._write_episode(event)

    def _write_episode(self, event: Event, *, offline: bool = False) -> Episode | None:
        episode = sessions.write_episode(self, event, offline=offline)
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
    ) -> _list[MemoryRecord]:
        """Memories of a scope, best score first, filtered."""
        scope = Scope.of(user_id, agent_id)
        return self.store.list_memories(
            scope, category=None if category is None else self._category(category),
            status=None if status is None else validate.choice("status", status, ("active", "archived")),
            session_id=validate.optional_ident("session_id", session_id),
            since=validate.optional_when("since", since), until=validate.optional_when("until", until),
            limit=validate.optional_integer("limit", limit, 0), offset=validate.integer("offset", offset, 0),
        )

    def deleted(self, *, user_id: str, agent_id: str | None = None, limit: int = 100,
                offset: int = 0) -> _list[MemoryEvent]:
        """The DELETE events of the scope's memories that are still deleted and can be restored
        (a hard delete keeps no text), last deleted first; each event's `before` is the memory."""
        scope = Scope.of(user_id, agent_id)
        limit = validate.integer("limit", limit, 1, 10_000)
        offset = validate.integer("offset", offset, 0)
        latest: dict[str, MemoryEvent] = {}
        for event in self.store.events(scope, None, limit=10_000_000):
            latest[event.memory_id] = event
        gone = [e for e in latest.values() if e.kind == "DELETE" and e.before and e.before.get("content")
                and self.store.get_memory(scope, e.memory_id) is None]
        gone.sort(key=lambda e: e.id, reverse=True)
        return gone[offset: offset + limit]

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
        return self._rewrite(scope, before, after, kind, actor, reason)

    def _rewrite(self, scope: Scope, before: MemoryRecord, after: MemoryRecord, kind: str, actor: str,
                 reason: str) -> MemoryRecord:
        """Store `after` over `before` (re-embedded when its text changed), audited as `kind`."""
        content_changed = after.content != before.content
        vec = self._embed_one(after.content) if content_changed else None
        with self.store.transaction():
            rowid = self.store.update_memory(after, content_changed=content_changed)
            if vec is not None:
                self.store.put_vectors("memories", scope, [rowid], vec[None, :])
            self.store.add_event(scope, after.id, kind, before.snapshot(), after.snapshot(), actor, reason,
                                 after.updated_at)
        self._after_memory_change(scope)
        return after

    def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None,
               actor: str = "api", reason: str = "", hard: bool = False) -> MemoryRecord:
        """Remove a memory and its text from every index, cache and file; the audit trail keeps
        it for an undo, unless `hard`: then its audit rows become content-free tombstones."""
        scope = Scope.of(user_id, agent_id)
        actor = validate.ident("actor", actor)
        reason = validate.text("reason", reason, self.config.store.max_content_chars, required=False)
        before = self.get(memory_id, user_id=user_id, agent_id=agent_id)
        now = self.clock()
        with self.store.transaction():
            self.store.delete_memory(scope, memory_id)
            self.store.add_event(scope, memory_id, "DELETE", before.snapshot(), None, actor, reason, now)
            self.store.mark_forgetting()  # a crash before after_delete: the next open scrubs the files
        forget.after_delete(self, scope, before, hard=hard)
        self._after_memory_change(scope)
        if not self._md_paused:  # in every profile, the text leaves MEMORY.md (+ .bak) and USER.md
            mdsync.forget_in_files(self, scope, [before])
        self.events.emit(Event.memory_deleted(scope, memory_id, before.content, before.category, actor, reason, now))
        return before

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
        f = self._filters(filters)
        limit = limit or self.config.search.default_limit
        floor = self.config.search.min_relevance
        # memories and episodes are what an agent is given: weak ones are left out by default.
        # A turn is ranked by its conversation too (its neighbours, its session): its own score
        # says how much of the query it holds, not whether it belongs in the answer
        default = 0.0 if corpus == "turns" else floor
        min_score = default if min_score is None else validate.number("min_score", min_score, 0.0, 1.0)
        # an agent scope also reads its user's shared memories (`Scope.readable`); its turns
        # and episodes stay its own
        scopes = scope.readable() if corpus == "memories" else (scope,)
        lists = [run_search(
            self.store, self.config.search, corpus, s, query, limit=limit, now=self.clock(),
            query_vector=self._query_vector if query_vector is None else query_vector, filters=f,
            min_score=min_score, null_vectors=self._null_vectors(),
            passages=self.config.embedding.passages, asked_in=scope, language_axes=self._language_axes(),
            idle_after=timedelta(minutes=self.config.extraction.idle_minutes) if self.config.extraction.idle_minutes
            else None,
        ) for s in scopes]
        # Hit.score is an absolute relevance: the lists merge by it, each kept in its rank
        # order (a merge looks only at the lists' heads, so a shorter page stays the start of
        # a longer one: a full sort would pull a later-ranked hit of a longer list forward)
        hits = lists[0] if len(lists) == 1 else list(islice(heapq.merge(*lists, key=lambda h: -h.score), limit))
        if corpus == "memories" and (self.config.search.activate_on_hit if activate is None else activate):
            # a weak hit is not a use: routine searching must not keep every memory from fading
            self._activate(scope, [h.memory for h in hits if h.memory is not None and h.score >= floor])
        return hits

    def _null_vectors(self) -> np.ndarray:
        """`retrieval.relevance.NULL_TEXTS` as this embedder's passages: where its unrelated text sits."""
        if self._nulls is None:
            self._nulls = embed_cached(self.store, self.embedder, list(NULL_TEXTS))
        return self._nulls

    def _language_axes(self) -> LanguageAxes | None:
        """Where this embedder keeps a text's language (crosslingual.py), from its vectors of
        the parallel sentences: as passages (cached in the store), and as queries."""
        if self._axes is False:
            passages = embed_cached(self.store, self.embedder, PARALLEL_TEXTS)
            asked = embed_cached(self.store, self.embedder, PARALLEL_TEXTS, query=True)
            self._axes = language_axes(passages[0::2], passages[1::2], asked[0::2], asked[1::2],
                                       self.config.search.language_alignment_min)
        return self._axes if isinstance(self._axes, LanguageAxes) else None

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

    def _after_memory_change(self, scope: Scope) -> None:
        """Seed 001 (`lifecycle.markdown_primary`): MEMORY.md is rewritten after every save,
        a person's edits of it read in first (`mdsync.after_change`)."""
        mdsync.after_change(self, scope)

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

    def _after_write(self) -> None:
        if self._importing:
            return
        if self._indexer is not None:
            self._indexer.notify()
            return
        try:
            self.flush()
        except MemlaneError as exc:
            # the write itself is committed: failing the call now would make a caller retry
            # (and store it twice); the rows stay unembedded for the next flush to pick up
            log.warning("embedding deferred, rows stay queued for the next flush: %s", exc)

    def _embed_one(self, text: str) -> np.ndarray:
        return embed_cached(self.store, self.embedder, [vector_key(text, self.config.embedding.max_chars)])[0]

    def _content(self, content: Any, field: str = "content") -> str:
        return validate.memory_text(field, content, self.config.store.max_content_chars)

    def _category(self, category: Any, field: str = "category") -> str:
        if category is None:
            return self.config.policy.default_category
        return validate.category(field, category, self.config.policy.categories, self.config.profile)

    def _importance(self, importance: Any) -> float:
        if importance is not None and (isinstance(importance, bool) or not isinstance(importance, str | int | float)):
            raise ValidationError("importance", f"must be high, medium, low or a number in [0, 1], "
                                                f"got {type(importance).__name__}")
        if isinstance(importance, str):
            validate.text("importance", importance, 32)
        return initial_score(importance, self.config.policy)

    def _filters(self, filters: Any) -> Filters:
        """Search filters, each checked like the argument of the same name."""
        if filters is None:
            return Filters()
        if isinstance(filters, Filters):
            filters = {k: getattr(filters, k) for k in Filters.__dataclass_fields__}
        if not isinstance(filters, dict):
            raise ValidationError("filters", f"must be a dict or Filters, got {type(filters).__name__}")
        f = Filters.from_dict(filters)
        cats = f.category
        if cats is not None:
            if isinstance(cats, str):
                cats = self._category(cats, "filters.category")
            elif isinstance(cats, list | tuple) and cats:
                cats = [self._category(c, f"filters.category[{i}]") for i, c in enumerate(cats)]
            else:
                raise ValidationError("filters.category", "must be a category or a non-empty list of categories")
        roles = f.roles
        if roles is not None:
            if not isinstance(roles, list | tuple):
                raise ValidationError("filters.roles", "must be a list of roles")
            roles = [validate.choice(f"filters.roles[{i}]", r, get_args(Role)) for i, r in enumerate(roles)]
        return Filters(
            category=cats,
            status=None if f.status is None else validate.choice("filters.status", f.status, ("active", "archived")),
            session_id=validate.optional_ident("filters.session_id", f.session_id),
            since=validate.optional_when("filters.since", f.since),
            until=validate.optional_when("filters.until", f.until),
            include_expired=validate.boolean("filters.include_expired", f.include_expired),
            roles=roles,
        )


class _Waiting(threading.local):
    on = False


def open_memory(home: str | Path | None = None, **overrides: Any) -> Memory:
    """A `Memory` on `home` (default: MEMLANE_HOME or ~/.memlane), configured as `memlane --home`
    is: `<home>/memlane.toml` (or MEMLANE_CONFIG), then MEMLANE_*, then `overrides`
    (`profile="companion"`, `llm={"base_url": ...}`)."""
    return Memory(Config.from_env(home=home, **overrides))
