"""Memory lifecycle (issue 6): the consolidation job and its scheduler (the seed-003
judgements it calls live in `memlane.review`).

`consolidate(memory, scope, now)` runs, per scope: drain the extraction queue → apply a
person's edits of MEMORY.md → semantic dedup merge → decay → demote / archive / delete →
clean expired → max size → review → refresh MEMORY.md and USER.md → archive old turns
(seed 000). The rules are `memlane.policy`'s (numbers in `config.policy`, per profile).

Every step looks at the memories as they are and writes what the rules say; a scope's step
is one transaction, each change an audited event (DECAY / ARCHIVE / DEMOTE / DELETE /
PROMOTE / UPDATE, actor "consolidate"). Decay remembers when it last ran (`decayed_at`), so
a second run the same day changes nothing, and a run that crashed between (or inside) steps
is simply run again: finished steps find nothing left to do, and the end state equals that
of an uninterrupted run. `dry_run` plays the same steps on a copy and writes nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, time, timedelta
from typing import Any

import numpy as np

from memlane import attachments, events, forget, markdown, mdsync, supersession, userprofile
from memlane.errors import MemlaneError, ValidationError
from memlane.events import Event
from memlane.jobs import JobReport
from memlane.llm.prompts.review import ReviewAnswer, ReviewMode
from memlane.loop import Loop
from memlane.models import MemoryRecord, Scope
from memlane.parts import Consolidating, Parts
from memlane.policy import (
    decay_rule,
    decayed,
    dedup_threshold,
    expired,
    over_capacity,
    review_keep_score,
    threshold_verdicts,
    transient_until,
    whole_days,
)
from memlane.review import REVIEW, review_memory, review_mode
from memlane.sweep import PollReport, SweepReport, poll, sweep_unextracted

log = logging.getLogger(__name__)

STEPS = ("drain", "import", "dedup", "decay", "thresholds", "expire", "max_size", "review", "files", "archive")
ACTOR = "consolidate"
# metadata flag of a memory dedup leaves alone: a record kept under its own key (a framework
# store's item) is not a fact restated; merging two such records would lose a key
DISTINCT = "distinct"


@dataclass
class Action:
    """One change consolidation made (or, in a dry run, would make), and why."""

    step: str
    action: str  # DECAY, ARCHIVE, DEMOTE, DELETE, MERGE, PROMOTE, KEEP, REVIEW, EXTRACT, IMPORT
    memory_id: str
    user_id: str
    agent_id: str = ""
    before: float | None = None
    after: float | None = None
    reason: str = ""
    content: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ConsolidationReport:
    """What one `consolidate` run did, step by step."""

    now: datetime
    dry_run: bool = False
    scopes: list[Scope] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    jobs: list[JobReport] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    archived_turns: int = 0
    locked: list[Scope] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sweep: SweepReport | None = None  # the unextracted turns the drain step queued (and left)

    @property
    def counts(self) -> dict[str, int]:
        """Changes per step (drain: extraction jobs run)."""
        out = dict.fromkeys(STEPS, 0)
        for a in self.actions:
            out[a.step] += 1
        if not self.dry_run:
            out["drain"] = len(self.jobs)
        out["archive"] = self.archived_turns
        return out

    def by_action(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for a in self.actions:
            out[a.action] = out.get(a.action, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": self.now.isoformat(), "dry_run": self.dry_run,
            "scopes": [{"user_id": s.user_id, "agent_id": s.agent_id} for s in self.scopes],
            "counts": self.counts, "by_action": self.by_action(),
            "actions": [a.to_dict() for a in self.actions],
            "jobs": [{"job_id": j.job_id, "session_id": j.session_id, "status": j.status, **j.stats,
                      "error": j.error} for j in self.jobs],
            "files": self.files, "archived_turns": self.archived_turns,
            "locked": [{"user_id": s.user_id, "agent_id": s.agent_id} for s in self.locked],
            "errors": self.errors,
            "sweep": self.sweep.to_dict() if self.sweep else None,
        }


StepHook = Callable[[str, Scope | None, ConsolidationReport], None]


# ---- consolidate ---------------------------------------------------------------------------


def consolidate(memory: Consolidating, scope: Scope | None = None, *, now: datetime | None = None, dry_run: bool = False,
                on_step: StepHook | None = None) -> ConsolidationReport:
    """The whole pass for one scope, or every scope of the store. `on_step(step, scope,
    report)` is called after each step (progress output; tests raise from it to crash a run).

    A scope another live writer holds is skipped and listed in `report.locked`; a scope
    whose pass fails is recorded in `report.errors` (its finished steps stay done) and the
    next scope runs: one bad scope never stops the others."""
    now = now or memory.clock()
    report = ConsolidationReport(now=now, dry_run=dry_run)
    _drain(memory, scope, now, dry_run, report)
    if on_step:
        on_step("drain", scope, report)
    scopes = [scope] if scope is not None else sorted(memory.store.scopes(), key=lambda s: (s.user_id, s.agent_id))
    with memory.signals.mute("memory.changed", "memory.forgotten"):  # MEMORY.md is written once, at the end
        for sc in scopes:
            _consolidate_scope(memory, sc, now, dry_run, report, on_step)
    return report


def _consolidate_scope(memory: Consolidating, scope: Scope, now: datetime, dry_run: bool, report: ConsolidationReport,
                       on_step: StepHook | None) -> None:
    owner = f"{ACTOR}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"
    lease = contextlib.nullcontext(True) if dry_run else memory.jobs.lock.hold(scope, owner)
    step = _Pass(memory, scope, now, dry_run, report, on_step)
    try:
        with lease as held:
            if not held:
                if scope not in report.locked:  # another writer has this scope; the next run takes it
                    report.locked.append(scope)
                return
            report.scopes.append(scope)
            step.run()
    except Exception as exc:
        if step.in_hook:  # the caller's own hook failed: theirs to see
            raise
        log.exception("consolidation of scope %s failed", scope.user_id)
        report.errors.append(f"{_label(scope)}: consolidation stopped at step {step.current!r}: "
                             f"{type(exc).__name__}: {exc}")


def _label(scope: Scope) -> str:
    return f"user {scope.user_id!r}" + (f" agent {scope.agent_id!r}" if scope.agent_id else "")


def _drain(memory: Consolidating, scope: Scope | None, now: datetime, dry_run: bool, report: ConsolidationReport) -> None:
    """Seed 002 §7 step 1: queue the unextracted turns (`sweep_unextracted`), then run the
    extraction jobs that are due (a failed one stays queued)."""
    runner = memory.jobs
    report.sweep = sweep_unextracted(memory, now, scope, idle_only=False, dry_run=dry_run)
    if dry_run and report.sweep.turns:
        report.actions.append(Action("drain", "EXTRACT", "", scope.user_id if scope else "",
                                     scope.agent_id if scope else "",
                                     reason=f"would queue {report.sweep.turns} unextracted turns of "
                                            f"{report.sweep.sessions} sessions ({report.sweep.left} left)"))
    for job in runner.due(now, limit=100_000):
        if scope is not None and (job.user_id, job.agent_id) != (scope.user_id, scope.agent_id):
            continue
        if dry_run:
            report.actions.append(Action("drain", "EXTRACT", "", job.user_id, job.agent_id,
                                         reason=f"job {job.id}: session {job.session_id} turns "
                                                f"{job.first_seq}-{job.last_seq} (attempt {job.attempts + 1})"))
            continue
        result = runner.run_contained(job, now, memory.llm)
        report.jobs.append(result)
        sc = Scope(user_id=job.user_id, agent_id=job.agent_id)
        if result.status == "retrying":
            report.errors.append(f"{_label(sc)}: extraction job {job.id} failed, retry at {result.next_at}: "
                                 f"{result.error}")
        elif result.status == "error":
            report.errors.append(f"{_label(sc)}: extraction job {job.id} could not run: {result.error}")
        # "locked": the job stays queued (its report says so); the scope's pass decides `report.locked`


class _Pass:
    """The steps after the drain, on one scope. `work` is the scope's memories as the steps
    leave them, so a dry run's later steps see what the earlier ones would have done."""

    def __init__(self, memory: Consolidating, scope: Scope, now: datetime, dry_run: bool, report: ConsolidationReport,
                 on_step: StepHook | None) -> None:
        self.memory, self.scope, self.now, self.dry_run = memory, scope, now, dry_run
        self.report, self.on_step = report, on_step
        self.store = memory.store
        self.cfg = memory.config
        self.pol = memory.config.policy
        self.work: dict[str, MemoryRecord] = {}
        self.taken: list[MemoryRecord] = []  # replaced by a change whose date passed, not yet written down
        self.deleted: list[tuple[MemoryRecord, str]] = []
        self.removed: list[MemoryRecord] = []  # every memory this pass deleted, for the files step
        self.keep_file = False
        self.current = "load"
        self.in_hook = False

    def run(self) -> None:
        self.reload()
        for step, fn in (("import", self.import_edits), ("dedup", self.dedup), ("decay", self.decay),
                         ("thresholds", self.thresholds), ("expire", self.expire), ("max_size", self.max_size),
                         ("review", self.review), ("files", self.files), ("archive", self.archive)):
            self.current = step
            fn()
            self.announce()
            if self.on_step:
                self.in_hook = True
                self.on_step(step, self.scope, self.report)
                self.in_hook = False

    def reload(self) -> None:
        # a superseded fact is history (issue 32): it neither decays, expires, merges nor is
        # archived; nor is one a change told ahead of its date replaced once that date passed,
        # which only the expire step touches, to write it down as history
        mems = self.store.list_memories(self.scope)
        self.work = {m.id: m for m in mems if not m.replaced(self.now)}
        self.taken = [m for m in mems if m.status != "superseded" and m.replaced(self.now)]

    def ordered(self) -> list[MemoryRecord]:
        return sorted(self.work.values(), key=lambda m: (m.created_at, m.id))

    # ---- writing ----------------------------------------------------------------------

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        """One transaction per step (nothing at all in a dry run)."""
        if self.dry_run:
            yield
            return
        with self.store.transaction():
            yield

    def change(self, step: str, action: str, before: MemoryRecord, after: MemoryRecord, reason: str,
               kind: str | None = None) -> None:
        self.report.actions.append(self._action(step, action, before, after.score, reason))
        self.work[after.id] = after
        if not self.dry_run:
            self.store.update_memory(after, content_changed=False)
            self.store.add_event(self.scope, before.id, kind or action, before.snapshot(), after.snapshot(), ACTOR,
                                 f"{step}: {reason}", self.now)

    def remove(self, step: str, mem: MemoryRecord, reason: str) -> None:
        self.report.actions.append(self._action(step, "DELETE", mem, None, reason))
        self.work.pop(mem.id, None)
        if not self.dry_run:
            self.store.delete_memory(self.scope, mem.id)
            self.store.add_event(self.scope, mem.id, "DELETE", mem.snapshot(), None, ACTOR, f"{step}: {reason}", self.now)
            self.store.mark_forgetting()  # a crash before announce: the next open scrubs the files
            self.deleted.append((mem, f"{step}: {reason}"))
            self.removed.append(mem)

    def announce(self) -> None:
        """`memory.deleted` events, once the step's transaction committed."""

        forget.after_rule_deletes(self.store, self.cfg.embedding.max_chars, [m for m, _ in self.deleted])
        for mem, reason in self.deleted:
            self.memory.events.emit(Event.memory_deleted(self.scope, mem.id, mem.content, mem.category, ACTOR,
                                                         reason, self.now))
        self.deleted = []

    def _action(self, step: str, action: str, mem: MemoryRecord, after: float | None, reason: str) -> Action:
        return Action(step, action, mem.id, self.scope.user_id, self.scope.agent_id, mem.score, after, reason,
                      mem.content)

    # ---- the steps --------------------------------------------------------------------

    def import_edits(self) -> None:
        """A person's edits of MEMORY.md go in first, so the refreshed file keeps them."""
        if not (self.cfg.lifecycle.refresh_files or self.cfg.lifecycle.markdown_primary):
            return
        path = markdown.memory_path(self.memory, self.scope)
        if not path.is_file():
            return
        try:
            file = markdown.read_memory_file(path)
            ops, deleted = mdsync.sync_memory_md(self.memory, self.scope, file, path.name, dry_run=self.dry_run)
        except MemlaneError as exc:
            self.report.errors.append(f"{self.scope.user_id}: MEMORY.md not imported (left as it is): {exc}")
            self.keep_file = True  # a person's edits stay in the file until they are fixed
            return
        for op in ops:
            why = op.reason if op.op == "SKIP" else ", ".join(op.fields)
            self.report.actions.append(Action("import", "SKIP" if op.op == "SKIP" else "IMPORT", op.memory_id,
                                              self.scope.user_id, self.scope.agent_id,
                                              reason=f"MEMORY.md {op.op} {why}".rstrip(), content=op.content))
        self.removed += deleted
        if any(op.op != "SKIP" for op in ops) and not self.dry_run:
            self.reload()

    def dedup(self) -> None:
        """Seed 002 §7 / seed 004 §6: active memories more similar than the dedup threshold
        are one memory; the best-scored (then oldest) keeps the other's hits and flags. A
        memory flagged `distinct` (metadata) is neither merged nor merged into."""
        # nor a version a change from a later date replaces (issue 32): it and its successor
        # are two versions of one fact, not duplicates
        mems = sorted((m for m in self.work.values() if m.status == "active" and m.metadata.get(DISTINCT) is not True
                       and m.superseded_by is None),
                      key=lambda m: (-m.score, m.created_at, m.id))
        rowids = {m.id: self.store.memory_rowid(self.scope, m.id) for m in mems}
        vecs = self.store.vectors("memories", self.scope, [r for r in rowids.values() if r >= 0])
        have = [m for m in mems if rowids[m.id] in vecs]
        if len(have) < 2:
            return
        mat = np.stack([np.asarray(vecs[rowids[m.id]], dtype=np.float32) for m in have])
        mat /= np.linalg.norm(mat, axis=1, keepdims=True) + 1e-12
        threshold = dedup_threshold(self.pol, self.memory.embedder.model_id)
        gone: set[int] = set()
        with self.step():
            for start in range(0, len(have), 256):
                sims = mat[start:start + 256] @ mat.T
                for row in range(sims.shape[0]):
                    i = start + row
                    if i in gone:
                        continue
                    for j in (np.nonzero(sims[row, i + 1:] > threshold)[0] + i + 1).tolist():
                        if j not in gone:
                            gone.add(j)
                            self._merge(self.work[have[i].id], self.work[have[j].id], float(sims[row, j]), threshold)

    def _merge(self, keep: MemoryRecord, dup: MemoryRecord, sim: float, threshold: float) -> None:
        why = f"similarity {sim:.3f} > {threshold:g}"
        after = keep.model_copy(update={
            "score": max(keep.score, dup.score), "activation_count": keep.activation_count + dup.activation_count,
            "last_activated": max(keep.last_activated, dup.last_activated), "verified": keep.verified or dup.verified,
            "pinned": keep.pinned or dup.pinned, "updated_at": self.now,
            "metadata": {**keep.metadata, "merged": [*keep.metadata.get("merged", []), dup.id]},
        })
        prev = self.store.get_memory(self.scope, dup.supersedes) if dup.supersedes and not keep.supersedes else None
        if prev is not None and prev.superseded_by == dup.id:
            # the duplicate was the current version of a changed fact: the kept one carries on
            # the chain, so the history before it is not left naming a deleted memory (issue 32)
            after = after.model_copy(update={"supersedes": prev.id})
            self.change("dedup", "SUPERSEDE", prev, prev.model_copy(update={"superseded_by": keep.id,
                                                                            "updated_at": self.now}),
                        f"superseded by {keep.id}, which {dup.id} duplicated ({why})")
            self.work.pop(prev.id, None)  # history: no later step touches it
        self.change("dedup", "MERGE", keep, after, f"kept; merged duplicate {dup.id} ({why})", kind="UPDATE")
        self.remove("dedup", dup, f"duplicate of {keep.id} ({why})")

    def decay(self) -> None:
        with self.step():
            for mem in self.ordered():
                after = decayed(mem, self.now, self.pol)
                if after is None:
                    continue
                rule = decay_rule(mem.category, self.pol)
                days = whole_days(mem.last_activated, self.now)
                self.change("decay", "DECAY", mem, after,
                            f"{days} days since last activated; after {rule.grace_days:g} days' grace ×{rule.daily_factor:g}/day")

    def thresholds(self) -> None:
        with self.step():
            for mem in self.ordered():
                self._verdicts("thresholds", mem)

    def _verdicts(self, step: str, mem: MemoryRecord) -> None:
        for action, reason in threshold_verdicts(mem, self.now, self.pol):
            cur = self.work[mem.id]
            if action == "DELETE":
                self.remove(step, cur, reason)
            elif action == "DEMOTE":
                after = cur.model_copy(update={"expires_at": transient_until(self.now, self.pol),
                                               "updated_at": self.now,
                                               "metadata": {**cur.metadata, "priority": "transient"}})
                self.change(step, "DEMOTE", cur, after, reason)
            else:
                self.change(step, "ARCHIVE", cur,
                            cur.model_copy(update={"status": "archived", "updated_at": self.now}), reason)

    def expire(self) -> None:
        """Seed 002 cleanup_expired: past `expires_at` → deleted; a todo (seed 001 phase 1.5)
        is down-scored and archived instead, recallable, and decays away from there. The
        down-scored todo meets the thresholds at once (a score now below delete_below goes
        now), so the next run finds nothing left to do. A version that a change told ahead of
        its date replaced becomes history once the date passed (issue 32; the change itself
        was audited when it was told)."""
        with self.step():
            for mem in sorted(self.taken, key=lambda m: (m.created_at, m.id)):
                assert mem.valid_to is not None  # a change told ahead of its date has begun (issue 32)
                self.change("expire", "SUPERSEDE", mem, supersession.taken_effect(mem),
                            f"replaced by {mem.superseded_by} from {mem.valid_to.date().isoformat()}", "UPDATE")
                self.work.pop(mem.id, None)  # history: no later step touches it (`change` put it there)
            self.taken = []
            for mem in self.ordered():
                if not expired(mem, self.now, self.pol):
                    continue
                assert mem.expires_at is not None
                reason = f"expired at {mem.expires_at.isoformat(timespec='minutes')}"
                if mem.category == "todo":
                    after = mem.model_copy(update={
                        "score": mem.score * self.pol.expired_todo_factor, "status": "archived", "expires_at": None,
                        "updated_at": self.now, "metadata": {**mem.metadata, "expired_at": mem.expires_at.isoformat()}})
                    self.change("expire", "ARCHIVE", mem, after, f"todo {reason}: ×{self.pol.expired_todo_factor:g}")
                    self._verdicts("expire", after)
                else:
                    self.remove("expire", mem, reason)
        # seed 002 §7 清理过期附件, and persisted events past events.keep_days (seed 004 §11.3)
        for att in attachments.expire(self.memory, self.scope, self.now, dry_run=self.dry_run):
            self.report.actions.append(Action("expire", "DELETE", att.id, self.scope.user_id, self.scope.agent_id,
                                              reason="attachment expired", content=att.name))
        if not self.dry_run:
            events.forget_old(self.memory.store, self.memory.config.events, self.scope, self.now)

    def max_size(self) -> None:
        mems = list(self.work.values())
        with self.step():
            for mem in over_capacity(mems, self.pol):
                self.remove("max_size", mem, f"scope holds {len(mems)} > max_memories {self.pol.max_memories}: "
                                             "lowest score, least recently updated")

    def review(self) -> None:
        """Seed 003 MemoryReviewer, with an LLM only; offline the thresholds alone decide."""
        llm = self.memory.llm
        if not reviewer_enabled(self.memory) or llm is None:
            return
        due = [(m, mode) for m in self.ordered() if (mode := review_mode(m, self.pol)) is not None]
        for mem, mode in due[: self.cfg.lifecycle.review_max_per_run]:
            if self.dry_run:
                self.report.actions.append(self._action(
                    "review", "REVIEW", mem, None, f"{mode} review: score {mem.score:.2f} "
                    + (f"≥ promote_at {self.pol.promote_at:g}" if mode == "promote"
                       else f"< review_below {self.pol.review_below:g}")))
                continue
            try:
                answer = review_memory(self.memory, self.scope, mem, mode, llm)
            except MemlaneError as exc:  # the memory stays as it is; the next run asks again
                self.report.errors.append(f"review of {mem.id} failed: {exc}")
                continue
            with self.step():
                self._decide(mem, mode, answer)
            self.announce()

    def _decide(self, mem: MemoryRecord, mode: ReviewMode, answer: ReviewAnswer) -> None:
        decision = answer.decision if answer.decision in ("PROMOTE", "KEEP", "DELETE") else "KEEP"
        if mode == "decay" and decision == "PROMOTE":
            decision = "KEEP"
        why = f"{mode} review: {decision}" + (f" — {answer.reason}" if answer.reason else "")
        if decision == "DELETE":
            self.remove("review", mem, why)
            return
        marker = {**mem.metadata, REVIEW: {"mode": mode, "decision": decision, "at": self.now.isoformat()}}
        update: dict[str, Any] = {"metadata": marker, "updated_at": self.now}
        if decision == "PROMOTE":  # seed 003: category → core (never decays); pinned where no core exists
            if "core" in self.pol.categories:
                update["category"] = "core"
            else:
                update["pinned"] = True
            self.change("review", "PROMOTE", mem, mem.model_copy(update=update), why)
            return
        if mode == "decay":  # seed 003: KEEP resets the importance (and so restarts the decay: policy.decay_start)
            score = review_keep_score(self.pol)
            update.update(score=score, status="active", metadata={**marker, REVIEW: {**marker[REVIEW], "score": score}})
        self.change("review", "KEEP", mem, mem.model_copy(update=update), why, kind="UPDATE")

    def files(self) -> None:
        """Seed 002 §7: refresh MEMORY.md and USER.md (seed 001: MEMORY.md is the primary view).
        Where they are not refreshed but exist, deleted memories are cut out of them."""
        lc = self.cfg.lifecycle
        if self.dry_run:
            return
        refresh = lc.refresh_files or lc.markdown_primary
        if refresh and (self.work or markdown.memory_path(self.memory, self.scope).exists()):  # no empty files
            if not self.keep_file:  # edits a person made during the pass are read in first
                done = mdsync.refresh_memory_md(self.memory, self.scope)
                if done.written:
                    self.report.files.append(str(markdown.memory_path(self.memory, self.scope)))
                if done.error:
                    self.report.errors.append(f"{self.scope.user_id}: {done.error}")
            if lc.refresh_files:
                self.report.files.append(str(userprofile.write_user_md(self.memory, self.scope)))
        mdsync.forget_in_files(self.memory, self.scope, self.removed, user_md=not lc.refresh_files)

    def archive(self) -> None:
        """Seed 000: archive old turns into memory/ when its triggers hold."""
        if self.dry_run or not archive_enabled(self.memory):
            return
        from memlane.archive import run_archive

        try:
            result = run_archive(self.memory, self.scope)
        except MemlaneError as exc:
            self.report.errors.append(f"{self.scope.user_id}: turn archive failed: {exc}")
            return
        self.report.archived_turns += result.archived


def reviewer_enabled(memory: Parts) -> bool:
    flag = memory.config.lifecycle.reviewer
    return memory.config.profile == "companion" if flag is None else flag


def archive_enabled(memory: Parts) -> bool:
    flag = memory.config.lifecycle.archive_turns
    return memory.config.profile == "file-archive" if flag is None else flag



# ---- a person's edits of MEMORY.md ---------------------------------------------------------


def person_edits(memory: Parts, scope: Scope) -> list[markdown.MdOperation]:
    """What consolidation's import step would do with the scope's MEMORY.md (`mdsync` rules:
    only what differs from what memlane wrote into the file is a person's edit)."""
    path = markdown.memory_path(memory, scope)
    if not path.is_file():
        return []
    return mdsync.plan_import(memory, scope, markdown.read_memory_file(path), path.name)


# ---- the scheduler ---------------------------------------------------------------------------


class Scheduler:
    """Runs `consolidate` over every scope on a schedule: every `lifecycle.schedule_hours`
    (seed 000: 6 h), or daily at `lifecycle.nightly_at` (seed 002: "03:00", in the time zone
    of the clock). The last run is kept in the store, so a restarted server keeps its rhythm.
    `tick()` is the whole logic (tests drive it with a clock); `start()` calls it from a thread."""

    META = "lifecycle:last_run"

    def __init__(self, memory: Consolidating, *, clock: Callable[[], datetime] | None = None,
                 on_run: Callable[[ConsolidationReport], None] | None = None) -> None:
        self.memory = memory
        self.clock = clock or memory.clock
        self.on_run = on_run
        self.runs = 0
        self.last_poll: PollReport | None = None  # the idle sweep + due jobs of the last tick between runs
        # ticks that raised are logged and counted (`status()`), and the thread ticks on
        self._loop = Loop("memlane-scheduler", self._tick_counted, every=memory.config.lifecycle.scheduler_poll_seconds)
        lc = memory.config.lifecycle
        self.nightly: time | None = None
        if lc.nightly_at:
            try:
                self.nightly = time.fromisoformat(lc.nightly_at)
            except ValueError:
                raise ValidationError("lifecycle.nightly_at", f"must be HH:MM, got {lc.nightly_at!r}") from None

    def last_run(self) -> datetime | None:
        raw = self.memory.store.meta(self.META)
        return datetime.fromisoformat(raw) if raw else None

    def next_run(self, now: datetime) -> datetime:
        """When the next run is due (≤ now: due). Never run: due at once (nightly: once
        today's time has come)."""
        last = self.last_run()
        if self.nightly is None:
            return now if last is None else last + timedelta(hours=self.memory.config.lifecycle.schedule_hours)
        ref = (last or now).astimezone(now.tzinfo)
        slot = datetime.combine(ref.date(), self.nightly, tzinfo=now.tzinfo)
        if last is not None and slot <= ref:
            slot += timedelta(days=1)
        return slot

    def tick(self, now: datetime | None = None) -> ConsolidationReport | None:
        """Run once if due; returns the report, or None when nothing was due — then the tick
        is a `poll` (idle sessions queued, due extraction jobs run; `last_poll` has it)."""
        now = now or self.clock()
        if self.next_run(now) > now:
            self.last_poll = poll(self.memory, now)
            return None
        report = consolidate(self.memory, now=now)
        with self.memory.store.transaction():
            self.memory.store.set_meta(self.META, now.isoformat())
        if self.on_run:
            self.on_run(report)
        return report

    def start(self) -> None:
        """Tick in a daemon thread at once, then every `lifecycle.scheduler_poll_seconds` until `stop()`."""
        self._loop.start(at_once=True)

    def status(self) -> dict[str, Any]:
        """For a server's health page: is the thread ticking, and how did the runs go."""
        return {"alive": self._loop.alive, "runs": self.runs,
                "failures": self._loop.failures, "last_error": self._loop.last_error,
                "last_run": (last.isoformat() if (last := self._safe_last_run()) else None)}

    def _safe_last_run(self) -> datetime | None:
        try:
            return self.last_run()
        except Exception:  # a status page must not fail with the store
            return None

    def _tick_counted(self) -> None:
        if self.tick() is not None:
            self.runs += 1

    def stop(self, timeout: float = 10.0) -> None:
        self._loop.stop(timeout)


__all__ = ["STEPS", "Action", "ConsolidationReport", "PollReport", "Scheduler", "SweepReport", "consolidate",
           "person_edits", "poll", "sweep_unextracted"]
