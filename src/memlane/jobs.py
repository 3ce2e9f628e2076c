"""The extraction queue and the merge: jobs of turn ranges → operations → memories + events.

A job is a (scope, session, turn range), queued once (seed 001 idempotency). Running it:
take the scope's writer lease (seed 001 §6 phase 1.5: one writer per scope, across threads
and processes), claim the job, read the turns (committed long before, so an LLM outage loses
nothing), extract operations (LLM or heuristic, plus the user's own remember/forget), then
apply them — initial scores, dedup by embedding, reinforcement, contradiction, update,
delete, supersession of a fact that changed (issue 32: the LLM's `supersedes`, the offline
extractor's change cues judged by `memlane.changes`; what is unsure is flagged for review),
each change one audited event — in ONE transaction together with the job's `done`.
Any failure leaves the job queued with back-off 10 m → 30 m → 2 h → 6 h → 12 h, then the
longer backlog back-off, with an `archive_backlog` event from `max_attempts` on (seed 000).
A worker killed mid-job leaves it "running": whoever next takes the scope's lease (at once
when the holder's process is gone, `memlane.lease`) takes the job over.

The offline extractor (`memlane.heuristic`) is imported where it is first used: compiling its
grammars takes ~0.4 s, which a process that never extracts (`memlane list`, a server's reads)
should not pay at start.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memlane import changes, forget, forgotten, supersession
from memlane.config import Config
from memlane.embeddings import Embedder
from memlane.errors import MemlaneError
from memlane.events import Event, EventBus
from memlane.extraction import (
    Extraction,
    Guard,
    JobReport,
    JobStatus,
    LLMExtractor,
    Operation,
    Rejected,
)
from memlane.forgotten import ALL, REFUSED, holds, refused, said_again, words_of
from memlane.indexing import embed_cached, vector_key
from memlane.lease import ScopeLock
from memlane.llm import LLM
from memlane.models import ExtractionJob, Hit, MemoryRecord, Scope, Turn, new_id
from memlane.policy import (
    PRIORITY,
    decayed,
    dedup_threshold,
    names_memory,
    penalised,
    reinforced,
    stated_by_person,
    threshold_verdicts,
)
from memlane.store import Store
from memlane.text import keywords

log = logging.getLogger(__name__)

Retrieve = Callable[[Scope, str, int], list[Hit]]
class JobRunner:
    """Queues, runs and drains extraction jobs against one store."""

    def __init__(self, store: Store, embedder: Embedder, config: Config, events: EventBus,
                 retrieve: Retrieve) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.events = events
        self.retrieve = retrieve
        self.lock = ScopeLock(store, config.extraction.lock_lease_seconds)
        self._token = uuid.uuid4().hex[:8]
        # after a job changed memories: the files (MEMORY.md, USER.md) follow; the job's deletions given
        self.on_change: Callable[[Scope, list[MemoryRecord]], None] | None = None

    def _owner(self) -> str:
        return f"{os.getpid()}:{threading.get_ident()}:{self._token}"

    # ---- queue ------------------------------------------------------------------------

    def enqueue(self, scope: Scope, session_id: str, at: datetime, through_seq: int | None = None) -> ExtractionJob | None:
        """Queue the session's turns not yet queued (up to `through_seq`); None when there are none."""
        with self.store.transaction():
            session = self.store.get_session(scope, session_id)
            if session is None:
                return None
            first = int(session.metadata.get("extracted_through", 0)) + 1
            last = self.store.next_seq(scope, session_id) - 1
            if through_seq is not None:
                last = min(last, through_seq)
            if last < first:
                return None
            self.store.enqueue_job(scope, session_id, first, last, at)
            session.metadata["extracted_through"] = last
            session.metadata["user_messages_since_extract"] = 0
            self.store.put_session(session)
        return self._job(scope, session_id, first, last)

    def _job(self, scope: Scope, session_id: str, first: int, last: int) -> ExtractionJob | None:
        for job in self.store.jobs(scope=scope, status=("queued", "running", "done"), limit=100_000):
            if (job.session_id, job.first_seq, job.last_seq) == (session_id, first, last):
                return job
        return None

    def pending(self, scope: Scope, session_id: str) -> JobReport | None:
        """The state of the session's latest job still waiting (queued, backed off, or
        running elsewhere), as a report; None when none waits."""
        waiting = [j for j in self.store.jobs(scope=scope, status=("queued", "running"), limit=100_000)
                   if j.session_id == session_id]
        if not waiting:
            return None
        job = max(waiting, key=lambda j: (j.last_seq, j.id))
        # a job that failed before waits for its back-off; one never run waits for its first turn
        status: JobStatus = "retrying" if job.attempts or job.last_error else "queued"
        if job.status == "running":
            status = "locked"
        return JobReport(session_id, job.first_seq, job.last_seq, job_id=job.id, status=status,
                         attempts=job.attempts, error=job.last_error, next_at=job.next_at)

    def due(self, now: datetime, limit: int = 100) -> list[ExtractionJob]:
        """Queued jobs that are due, and every running one: a running job whose scope lease
        `run` can take holds no live worker (it crashed), whatever its claim said."""
        running = self.store.jobs(status=("running",), limit=limit)
        return running + self.store.jobs(due_before=now, status=("queued",), limit=max(0, limit - len(running)))

    def drain(self, now: datetime, llm: LLM | None, limit: int = 100) -> list[JobReport]:
        """Run the due jobs; one job's failure is its own (recorded, backed off), never the others'."""
        return [self.run_contained(job, now, llm) for job in self.due(now, limit)]

    def run_contained(self, job: ExtractionJob, now: datetime, llm: LLM | None) -> JobReport:
        """`run`, and a failure even to record the job's failure (a broken store) is a report."""
        try:
            return self.run(job, now, llm)
        except Exception as exc:  # containment: the job stays queued/running and is retried later
            log.exception("extraction job %s could not be run", job.id)
            return JobReport(job.session_id, job.first_seq, job.last_seq, job_id=job.id, status="error",
                             attempts=job.attempts, error=f"{type(exc).__name__}: {exc}")

    # ---- one job ----------------------------------------------------------------------

    def run(self, job: ExtractionJob, now: datetime, llm: LLM | None) -> JobReport:
        scope = Scope(user_id=job.user_id, agent_id=job.agent_id)
        report = JobReport(job.session_id, job.first_seq, job.last_seq, job_id=job.id, attempts=job.attempts,
                           extractor="llm" if llm is not None else "heuristic")
        with self.lock.hold(scope, self._owner()) as held:
            if not held:
                # another live writer has this scope; the job stays queued for the next drain
                holder = self.lock.holder(scope)
                report.status = "locked"
                report.error = f"scope busy: held by {holder.describe() if holder else 'another writer'}"
                return report
            if not self._claim(job, now, report):
                report.status = "skipped"
                return report
            if report.status == "retrying":  # an interrupted job past max_attempts: backed off, not run
                return report
            try:
                self._extract_and_merge(job, scope, now, llm, report)
            except Exception as exc:  # any failure (RecursionError included) is this job's: backed off
                self._failed(job, scope, now, exc, report)
            return report

    def _claim(self, job: ExtractionJob, now: datetime, report: JobReport) -> bool:
        """Mark the job running under our scope lease. A job found running already was
        claimed by a worker that no longer holds the lease (we do): it died mid-job, so the
        job is taken over at once, and the interruption counts as a failed attempt (a job
        that kills its worker every time is backed off like any other failure)."""
        with self.store.transaction():
            scope = Scope(user_id=job.user_id, agent_id=job.agent_id)
            current = next((j for j in self.store.jobs(scope=scope, status=("queued", "running"), limit=100_000)
                            if j.id == job.id), None)
            if current is None:
                return False
            if current.status == "queued" and (current.next_at > now or not self.store.claim_job(job.id)):
                return False
            attempts, error = current.attempts, current.last_error
            if current.status == "running":
                attempts += 1
                error = "interrupted: its worker stopped (crash or kill) before finishing"
                log.warning("extraction job %s: taking over from a dead worker (attempt %d)", job.id, attempts)
            lease = now + timedelta(seconds=self.config.extraction.lock_lease_seconds)
            self.store.update_job(job.id, status="running", attempts=attempts, next_at=lease, last_error=error)
            job.attempts = attempts
        if current.status == "running" and attempts >= self.config.extraction.max_attempts:
            job.attempts = attempts - 1  # `_failed` counts this interruption as the attempt
            self._failed(job, scope, now, RuntimeError(error or "interrupted"), report)
        return True

    def _failed(self, job: ExtractionJob, scope: Scope, now: datetime, exc: BaseException, report: JobReport) -> None:
        """Back off: `backoff_seconds` in turn (seed 000: 10 m → 30 m → 2 h → 6 h → 12 h), then
        `backlog_backoff_seconds`; from `max_attempts` on, each failure is an `archive_backlog` event."""
        cfg = self.config.extraction
        attempts = job.attempts + 1
        steps = min(cfg.max_attempts, len(cfg.backoff_seconds))
        delay = cfg.backoff_seconds[attempts - 1] if attempts <= steps else cfg.backlog_backoff_seconds
        next_at = now + timedelta(seconds=delay)
        error = str(exc) if isinstance(exc, MemlaneError) else f"{type(exc).__name__}: {exc}"
        with self.store.transaction():
            self.store.update_job(job.id, status="queued", attempts=attempts, next_at=next_at, last_error=error[:2000])
        log.warning("extraction job %s (%s #%d-%d) failed, attempt %d, retry at %s: %s",
                    job.id, job.session_id, job.first_seq, job.last_seq, attempts, next_at.isoformat(), error)
        report.status, report.error, report.attempts, report.next_at = "retrying", error, attempts, next_at
        if attempts >= cfg.max_attempts:  # seed 000: record the backlog, back off longer
            event = Event.archive_backlog(scope, f"extraction_job:{job.id}", attempts, job.first_seq,
                                          job.last_seq, now)
            event.payload.update({"job_id": job.id, "session_id": job.session_id, "error": error[:500],
                                  "next_at": next_at.isoformat()})
            self.events.emit(event)

    # ---- extract + merge --------------------------------------------------------------

    def _extract_and_merge(self, job: ExtractionJob, scope: Scope, now: datetime, llm: LLM | None,
                           report: JobReport) -> None:
        everything = self.store.get_turns(scope, session_id=job.session_id, after_seq=job.first_seq - 3)
        turns = [t for t in everything if job.first_seq <= t.seq <= job.last_seq]
        context = [t for t in everything if job.first_seq - 2 <= t.seq <= job.last_seq]
        session = self.store.get_session(scope, job.session_id)
        done = int(session.metadata.get("commands_through", 0)) if session else 0
        from memlane.heuristic import commands, forget_requests  # on first use (module docstring)

        ops = commands(context, self.config, now=now, after_seq=max(done, job.first_seq - 1))
        # the person's own "forget …" in this job's turns (applied already or not) is what
        # lets the LLM delete or rewrite a memory that person stated (issue 12)
        requests = forget_requests(context, self.config, now=now, after_seq=job.first_seq - 1)
        guard = _person_guard([q for _, q in requests])
        extraction = self._extract(turns, scope, now, llm, guard)
        report.llm_calls, report.rejected = extraction.llm_calls, list(extraction.rejected)
        # what the person asked to forget is not stored again from the session (issue 30):
        # this job's requests, and those the session kept from any other job — one after this
        # job's turns (this job queued or retried after the request) or before them (a later
        # job has no turn saying it, so an ADD of it would come from elsewhere) — unless the
        # person said it again after the request, in this job's turns
        pending = requests + forgotten.since(session.metadata if session else {}, 0)
        asked = [q for seq, q in pending if not said_again(q, seq, turns, self.config)]
        kept = [op for op in extraction.operations if not refused(op, asked, self.config)]
        report.rejected += [Rejected(-1, {"op": op.op, "content": op.content}, REFUSED)
                            for op in extraction.operations if op not in kept]
        ops += kept
        ops = self._resolve_forgets(ops, scope, report)
        spoken = [(t.content, t.created_at) for t in turns if t.role == "user"]
        heard = changes.Heard()  # each turn read once for all of the job's memories
        for op in ops:  # a fact holds from when it was said, not from when the job ran (issue 32)
            if op.op == "ADD" and op.valid_from is None and op.source != "user" and op.content:
                op.valid_from = changes.said_at(op.content, spoken, heard)
        texts = [op.content for op in ops if op.op in ("ADD", "UPDATE") and op.content]
        vectors = self._vectors(texts + [changes.core(t) for op in ops if op.change is not None and (t := op.content)])
        with self.store.transaction():
            for op in ops:
                self._apply(op, scope, job, now, vectors, report, guard, spoken, heard)
            if turns:
                self._decay_at_merge(scope, now)
            session = self.store.get_session(scope, job.session_id)
            if session is not None:
                session.extraction_count += 1
                session.metadata["commands_through"] = max(done, job.last_seq)
                forgotten.keep(session.metadata, requests)
                self.store.put_session(session)
            self.store.update_job(job.id, status="done", attempts=job.attempts + 1, next_at=now, last_error=None)
        report.status = "done" if turns else "empty"
        self._announce(scope, report, now)

    def apply_commands(self, scope: Scope, session_id: str, now: datetime) -> JobReport | None:
        """Apply the user's "remember …" / "forget …" from turns not handled yet, at once and
        without an LLM, so they never wait for (or fail with) the LLM. None when there are none.

        When another live writer holds the scope, the turns not queued yet are queued as a
        job (every job applies the commands of its turns first), so the next drain — the
        background worker's, `consolidate`'s, or the next `add_messages` with a command —
        applies them; the report says "locked"."""
        with self.lock.hold(scope, self._owner()) as held:
            if not held:
                job = self.enqueue(scope, session_id, now)
                holder = self.lock.holder(scope)
                last = self.store.next_seq(scope, session_id) - 1
                return JobReport(session_id, job.first_seq if job else last, last, job_id=job.id if job else None,
                                 status="locked", extractor="commands",
                                 error=f"scope busy: held by {holder.describe() if holder else 'another writer'}")
            return self._apply_commands(scope, session_id, now)

    def _apply_commands(self, scope: Scope, session_id: str, now: datetime) -> JobReport | None:
        """`apply_commands` under the scope lease."""
        session = self.store.get_session(scope, session_id)
        if session is None:
            return None
        done = int(session.metadata.get("commands_through", 0))
        from memlane.heuristic import commands, forget_requests  # on first use (module docstring)

        turns = self.store.get_turns(scope, session_id=session_id,
                                     after_seq=done - self.config.extraction.command_context_turns)
        ops = commands(turns, self.config, now=now, after_seq=done)
        if not turns or not ops:
            return None
        requests = forget_requests(turns, self.config, now=now, after_seq=done)
        last = turns[-1].seq
        job = ExtractionJob(id=0, user_id=scope.user_id, agent_id=scope.agent_id, session_id=session_id,
                            first_seq=done + 1, last_seq=last, next_at=now, created_at=now)
        report = JobReport(session_id, done + 1, last, extractor="commands")
        ops = self._resolve_forgets(ops, scope, report)
        vectors = self._vectors([op.content for op in ops if op.op == "ADD" and op.content])
        with self.store.transaction():
            for op in ops:
                self._apply(op, scope, job, now, vectors, report)
            self._decay_at_merge(scope, now)
            session = self.store.get_session(scope, session_id)
            if session is not None:
                session.metadata["commands_through"] = max(last, int(session.metadata.get("commands_through", 0)))
                forgotten.keep(session.metadata, requests)
                self.store.put_session(session)
        self._announce(scope, report, now)
        return report

    def _decay_at_merge(self, scope: Scope, now: datetime) -> int:
        """Seed 001 §3.4: each merge ends by decaying the whole scope for the time since each
        memory was last activated — so a hit of this merge (activated now) is not decayed, as
        in the seed's mixed-scenario row (0.6 → 0.68 on day 30) — or last decayed
        (`policy.decayed` counts each day once, so consolidation does not decay it again), and
        archives what fell below `archive_below`. Deletion stays with consolidation (it also
        cleans files). Returns how many memories changed."""
        pol = self.config.policy
        if not pol.decay_on_merge:
            return 0
        changed = 0
        for mem in self.store.list_memories(scope):
            after = decayed(mem, now, pol)
            if after is None:
                continue
            if after.status == "active" and any(a == "ARCHIVE" for a, _ in threshold_verdicts(after, now, pol)):
                after = after.model_copy(update={"status": "archived"})
            self._write(scope, mem, after, "DECAY", "extract:merge",
                        f"decayed at merge: {mem.score:.3f} → {after.score:.3f}", now)
            changed += 1
        return changed

    def _announce(self, scope: Scope, report: JobReport, now: datetime) -> None:
        if self.on_change is not None:  # any change, the decay at merge included (not in the report)
            self.on_change(scope, report.deleted)
        for mem in report.added:  # seed 004 §11.2
            if mem.score >= self.config.events.important_score:
                self.events.emit(Event.memory_important(scope, mem.id, mem.content, mem.category, mem.score, now))
        forget.after_rule_deletes(self.store, self.config.embedding.max_chars, report.deleted)
        for mem in report.deleted:
            self.events.emit(Event.memory_deleted(scope, mem.id, mem.content, mem.category, "extract",
                                                  "deleted by extraction", now))

    def _extract(self, turns: Sequence[Turn], scope: Scope, now: datetime, llm: LLM | None,
                 guard: Guard | None = None) -> Extraction:
        from memlane.heuristic import HeuristicExtractor  # on first use (module docstring)

        if not turns:
            return Extraction()
        if llm is None:
            return HeuristicExtractor(self.config).extract(turns, now=now)
        existing = self.store.list_memories(scope, status="active", limit=self.config.extraction.existing_top_n)
        return LLMExtractor(llm, self.config).extract(
            turns, existing, self._related(turns, scope),
            lookup=lambda mid: self.store.get_memory(scope, mid), now=now, guard=guard,
        )

    def _related(self, turns: Sequence[Turn], scope: Scope) -> list[MemoryRecord]:
        """Seed 003: the memories retrieval returns for the user's turns (ids included)."""
        k = self.config.extraction.related_per_turn
        out: dict[str, MemoryRecord] = {}
        if k == 0:
            return []
        # turns with no words to search for ("…", emoji) are skipped: nothing to retrieve
        for t in [t for t in turns if t.role == "user" and keywords(t.content)][-10:]:
            for hit in self.retrieve(scope, t.content[:500], k):
                if hit.memory is not None:
                    out.setdefault(hit.memory.id, hit.memory)
        return list(out.values())

    def _resolve_forgets(self, ops: list[Operation], scope: Scope, report: JobReport) -> list[Operation]:
        """FORGET query → DELETE of the memory the user means: of those holding every keyword
        of the query, the ones saying least besides it ("忘掉那个" after "我喜欢茶" forgets
        用户喜欢茶, not 用户喜欢红茶); every match when the user says "all / 所有"."""
        out: list[Operation] = []
        for op in ops:
            if op.op != "FORGET":
                out.append(op)
                continue
            query = op.query or ""
            words = words_of(query)
            hits = self.retrieve(scope, query, 10) if words else []
            matched = [h.memory for h in hits
                       if h.memory is not None and all(holds(h.memory.content, w) for w in words)]
            if matched and not ALL.search(query):
                extra = {m.id: _extra_words(m.content, query) for m in matched}
                least = min(extra.values())
                matched = [m for m in matched if extra[m.id] == least]
            if not matched:
                report.unmatched_forgets.append(query)
            out += [Operation("DELETE", id=m.id, reason=op.reason, source="user") for m in matched]
        return out

    def _vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        if not texts:
            return {}
        keys = [vector_key(t, self.config.embedding.max_chars) for t in texts]
        vecs = embed_cached(self.store, self.embedder, keys, self.config.embedding.batch_size)
        return dict(zip(texts, vecs, strict=True))

    def _apply(self, op: Operation, scope: Scope, job: ExtractionJob, now: datetime,
               vectors: dict[str, np.ndarray], report: JobReport, guard: Guard | None = None,
               said: Sequence[tuple[str, datetime | None]] = (), heard: changes.Heard | None = None) -> None:
        actor = f"extract:{op.source}"
        pol = self.config.policy
        if op.op == "SKIP":
            report.skipped += 1
            return
        if op.op == "ADD":
            content = op.content or ""
            core = vectors.get(changes.core(content)) if op.change is not None else None
            self._add(op, scope, job, now, vectors[content], report, said, core, heard)
            return
        mem = self.store.get_memory(scope, op.id or "")
        if mem is None:  # an earlier operation of this job removed it
            report.rejected.append(Rejected(-1, {"op": op.op, "id": op.id}, "memory already deleted in this job"))
            return
        # checked again on the memory as it is now: an earlier operation may have pinned it
        why = guard(op, mem) if guard is not None and op.source != "user" and op.op in ("UPDATE", "DELETE") else None
        if why is not None:
            report.rejected.append(Rejected(-1, {"op": op.op, "id": op.id}, why))
            return
        if op.op == "BOOST":
            after = reinforced(mem, pol, now, amount=pol.boost_amount)
            self._write(scope, mem, after, "BOOST", actor, op.reason or "used in the conversation", now)
            report.reinforced.append(after)
        elif op.op == "UPDATE":
            after = mem.model_copy(update={"content": op.content, "category": op.category or mem.category,
                                           "updated_at": now, "last_activated": now})
            rowid = self.store.update_memory(after, content_changed=True)
            self.store.put_vectors("memories", scope, [rowid], vectors[op.content or ""][None, :])
            self.store.add_event(scope, mem.id, "UPDATE", mem.snapshot(), after.snapshot(), actor, op.reason, now)
            report.updated.append(after)
        elif op.op == "DELETE":
            self.store.delete_memory(scope, mem.id)
            self.store.add_event(scope, mem.id, "DELETE", mem.snapshot(), None, actor, op.reason, now)
            # as a person's delete does (`writes.remove`): what it replaced, or was to replace
            # from a later date, holds again rather than end on that date replaced by nothing
            supersession.reopen_previous(self.store, scope, mem, at=now, actor=actor)
            self.store.mark_forgetting()  # a crash before _announce: the next open scrubs the files
            report.deleted.append(mem)

    def _add(self, op: Operation, scope: Scope, job: ExtractionJob, now: datetime, vec: np.ndarray,
             report: JobReport, said: Sequence[tuple[str, datetime | None]] = (),
             core: np.ndarray | None = None, heard: changes.Heard | None = None) -> None:
        """A new memory, or a duplicate's reinforcement; then what it changes of the old ones
        (issue 32): those it supersedes closed (or, said after it, closing it), those it may
        replace flagged for review, or, where the profile penalises (seed 001), those it
        contradicts halved. `said`: the job's user turns, with when each was said; `heard`:
        those turns as read already for the job's other memories."""
        heard = heard or changes.Heard()
        pol = self.config.policy
        actor = f"extract:{op.source}"
        score = op.score if op.score is not None else pol.importance_medium
        dup = near_duplicate(self.store, scope, op.content or "", vec, dedup_threshold(pol, self.embedder.model_id))
        if dup is not None:
            twin, sim = dup
            # seed 004 §6: a duplicate reinforces the memory, keeping the higher importance
            after = reinforced(twin, pol, now, floor=score)
            if op.pinned:
                after = after.model_copy(update={"pinned": True, "verified": True})
            self._write(scope, twin, after, "BOOST", actor,
                        f"re-extracted (similarity {sim:.3f}): {op.content}", now)
            report.reinforced.append(after)
            return
        replaced, review = self._replaced(op, scope, vec, core, [text for text, _ in said], now, heard)
        # a fact begins when told, or earlier; later only as a change told ahead of its date
        # ("I move to Shanghai next month"): what it replaces holds until then (issue 32)
        ahead = bool(replaced) and pol.on_change == "supersede"
        valid_from = op.valid_from if op.valid_from is None or op.valid_from <= now or ahead else None
        valid_to = op.valid_to if op.valid_to is not None and op.valid_to <= now else None
        if valid_to is not None and (valid_from or now) > valid_to:
            valid_from = valid_to  # "lived in Dayton until 2021", told later: when it began is not known
        metadata: dict[str, Any] = {"turns": [job.first_seq, job.last_seq], **({PRIORITY: op.priority} if op.priority else {})}
        if review and pol.on_change == "supersede":  # seed 001's profile halves instead
            metadata[supersession.FLAG] = {"ids": review, "at": now.isoformat()}
        mem = MemoryRecord(
            id=new_id(), user_id=scope.user_id, agent_id=scope.agent_id, content=op.content or "",
            category=op.category or pol.default_category, score=score, confidence=op.confidence,
            subject=op.subject, predicate=op.predicate, created_at=now, updated_at=now, last_activated=now,
            expires_at=op.expires_at, source=op.source, verified=op.verified or op.source == "user",
            source_session=job.session_id, pinned=op.pinned, metadata=metadata, valid_from=valid_from,
            valid_to=valid_to,
        )
        rowid = self.store.insert_memory(mem)
        self.store.put_vectors("memories", scope, [rowid], vec[None, :])
        self.store.add_event(scope, mem.id, "ADD", None, mem.snapshot(), actor, op.reason, now)
        report.added.append(mem)
        if review and pol.on_change == "supersede":
            report.flagged.append(mem)
        halved: list[str] = []
        if pol.on_change == "penalise":  # seed 001: what it replaces or contradicts is halved, kept current
            halved = [*(o.id for o in replaced), *(c for c in op.contradicts if all(o.id != c for o in replaced))]
            replaced = []
        told = changes.said_at(mem.content, said, heard) or now
        for old in replaced:
            if self._said_after(scope, old, told, mem, now, heard):  # history now: it closes nothing else
                mem, _ = supersession.placed_before(self.store, scope, old, mem, at=now, actor=actor,
                                                    reason=op.reason or "the fact changed")
                break
            _, mem = supersession.apply(self.store, scope, old, mem, at=now, actor=actor,
                                        reason=op.reason or "the fact changed")
            report.superseded.append(self.store.get_memory(scope, old.id) or old)
        if replaced:
            report.added[-1] = mem
        for old_id in halved:
            if any(c.id == old_id for c in report.contradicted):
                continue  # halved once per job: a flood of contradicting ADDs cannot zero a memory
            before = self.store.get_memory(scope, old_id)
            if before is not None and before.status == "active":
                after = penalised(before, pol, now)
                self._write(scope, before, after, "UPDATE", actor, f"contradicted by {mem.id}: {mem.content}", now)
                report.contradicted.append(after)

    def _said_after(self, scope: Scope, old: MemoryRecord, told: datetime, new: MemoryRecord, now: datetime,
                    heard: changes.Heard | None = None) -> bool:
        """Whether `old`, current already, was said after `new` was (`told`), and holds from after
        `new` began: two sessions' jobs ran out of order (a retry, two processes), so the later
        word stays current. When `old` was said: its own turns, else when it was written."""
        start, old_start = new.valid_from or told, old.valid_from or old.created_at
        if not start < old_start <= now:
            return False
        when = old.created_at
        seqs = old.metadata.get("turns")
        if old.source_session and isinstance(seqs, list) and len(seqs) == 2 and all(isinstance(x, int) for x in seqs):
            turns = self.store.get_turns(scope, session_id=old.source_session, after_seq=seqs[0] - 1,
                                         limit=max(1, seqs[1] - seqs[0] + 1))
            when = changes.said_at(old.content, [(t.content, t.created_at) for t in turns if t.role == "user"], heard) or when
        return told < when

    def _replaced(self, op: Operation, scope: Scope, vec: np.ndarray, core: np.ndarray | None,
                  said: Sequence[str], now: datetime,
                  heard: changes.Heard | None = None) -> tuple[list[MemoryRecord], list[str]]:
        """The active memories a new one closes, and the ids it flags for review: the LLM's
        `supersedes` and `contradicts`, the offline extractor's change cue (`memlane.changes`).
        A memory the person stated or confirmed is closed only on their own words (a change
        told in the job's turns); an LLM's guess about it is flagged instead."""
        content = op.content or ""
        verdict = self._judged(op, scope, vec, core)
        replaced: list[MemoryRecord] = []
        review: list[str] = []
        judged = set(verdict.supersede)
        for oid in [*op.supersedes, *verdict.supersede]:
            old = self.store.get_memory(scope, oid)
            if old is None or any(o.id == old.id for o in replaced) or old.superseded_by is not None or not (
                    old.status == "active" or (old.status == "archived" and oid in judged)):
                continue  # gone, taken, or already replaced from a later date (its successor is what changes)
            if (began := old.valid_from or old.created_at) > now and began > (op.valid_from or now):
                # a change planned from a later date, changed to begin before it: no change of the
                # plan (it would end where it opens, the version before it current meanwhile);
                # `Memory.supersede` refuses it too — the fact is kept, unlinked (issue 32)
                continue
            own = op.source == "user" or (op.source == "heuristic" and op.change is not None)
            if stated_by_person(old) and not own and not changes.told_by_person(content, old.content, said, heard):
                review.append(old.id)
            else:
                replaced.append(old)
        for oid in [*verdict.review, *op.contradicts]:
            if oid not in review and all(o.id != oid for o in replaced):
                review.append(oid)
        return replaced, review[: max(len(op.contradicts), self.config.policy.change_max_review)]

    def _judged(self, op: Operation, scope: Scope, vec: np.ndarray, core: np.ndarray | None) -> changes.Verdict:
        """The offline extractor's ADD against the scope's memories nearest to it: what its
        change cue replaces, or, without one, the exclusive slot it fills again (flagged)."""
        content = op.content or ""
        if op.source != "heuristic" or not op.mine or (op.change is None and not changes.frames(content)):
            return changes.Verdict()
        # the cue of the words as kept (a clause joined to the next may tell an ending, then a
        # return), unless only a weak one where the sentence told a change ("…，现在在宝马上班")
        found = op.change
        if op.change is not None and (kept := changes.cue(content)) is not None and not (kept.weak and not op.change.weak):
            found = dataclasses.replace(kept, told=op.change.told)
        pol = self.config.policy
        model = self.embedder.model_id
        k = pol.change_candidates
        near = {r: None for r, _ in self.store.knn("memories", scope, vec, k)}
        if core is not None:
            near |= {r: None for r, _ in self.store.knn("memories", scope, core, k)}
        # an archived memory is a fact out of the prompt, not one that stopped holding: a change
        # closes it too ("戒奶茶", archived by months of decay, then "又回到一天一杯")
        near_found = [m for m in self.store.memories_by_rowid(scope, list(near)).values()
                      if m.status in ("active", "archived")]
        thresholds = changes.Thresholds(pol.change_sure_by_model.get(model), pol.change_unsure_by_model.get(model))
        sims: dict[str, float] = {}
        if thresholds.sure is not None and core is not None and near_found:
            # both sides without subject and cue (`changes.core`), so the thing itself is compared
            cores = self._vectors(list({changes.core(m.content) for m in near_found}))
            sims = {m.id: _cosine(cores[changes.core(m.content)], core) for m in near_found}
        candidates = [changes.Candidate(m.id, m.content, sims.get(m.id)) for m in near_found]
        return changes.judge(content, found, candidates, thresholds, pol.change_max_review)

    def _write(self, scope: Scope, before: MemoryRecord, after: MemoryRecord, kind: str, actor: str,
               reason: str, now: datetime) -> None:
        self.store.update_memory(after, content_changed=False)
        self.store.add_event(scope, before.id, kind, before.snapshot(), after.snapshot(), actor, reason, now)


def near_duplicate(store: Store, scope: Scope, content: str, vec: np.ndarray,
                   threshold: float) -> tuple[MemoryRecord, float] | None:
    """The scope's active memory that says the same as `content`, with its similarity: an
    embedding above `threshold` (seed 004 §6), or the same words once both are read as being
    about the user ("我每周二跑步" ~ "用户每周二跑步", issue 18), whatever the embedder."""
    from memlane.heuristic import same_words  # on first use (module docstring)

    near = store.knn("memories", scope, vec, 5)
    found = store.memories_by_rowid(scope, [r for r, _ in near])
    # knn may rank by int8 codes or an f16 graph (issue 3, scale): the threshold is
    # decided on the stored vectors themselves
    exact = store.vectors("memories", scope, [r for r, _ in near])
    said = same_words(content)
    for rowid, dist in near:
        twin = found.get(rowid)
        v = exact.get(rowid)
        sim = 1.0 - dist if v is None else _cosine(v, vec)
        if twin is not None and twin.status == "active" and (sim > threshold or (said and same_words(twin.content) == said)):
            return twin, sim
    return None


def _person_guard(asked: Sequence[str]) -> Guard:
    """Refuses an LLM's DELETE or UPDATE of a memory a person stated, unless one of that
    person's "forget …" requests in the job's turns names it (`policy.names_memory`)."""

    def guard(op: Operation, target: MemoryRecord) -> str | None:
        if not stated_by_person(target) or any(names_memory(q, target.content) for q in asked):
            return None
        why = "pinned" if target.pinned else "verified" if target.verified else f"source {target.source}"
        return (f"{op.op}: memory {target.id!r} was stated or confirmed by the user ({why}); an LLM may "
                f"delete or rewrite it only when the user asks to forget it in these turns (忘掉… / forget …). "
                f"A request to forget everything is not carried out by extraction: `memlane delete ID`")

    return guard


_SUBJECT_WORDS = frozenset({"用户", "user", "the", "users"})


def _extra_words(content: str, query: str) -> int:
    """How many of a memory's keywords the forget query does not hold: what else it says."""
    return sum(1 for w in keywords(content) if w.lower() not in _SUBJECT_WORDS and not holds(query, w))



def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    return float(np.dot(a, b)) / norm if norm > 0 else 0.0


__all__ = ["JobReport", "JobRunner", "ScopeLock", "near_duplicate"]
