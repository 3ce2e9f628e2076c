"""Memory operations out of conversation turns, validated one by one.

The LLM path (seeds 001 §3.2, 003, 002 §6): the turns of one job, the scope's top-50 Active
memories as one line each (seed 001 §3.2 token control) and the memories retrieval returned
for those turns go into one prompt; the reply is a list of operations ADD / UPDATE:id /
BOOST:id / DELETE:id / SKIP. Each item is checked on its own — unknown ids, wrong types,
bad values are rejected with the reason logged — and a reply with no usable JSON at all
raises `ExtractionError`, so the job is retried instead of counting as "no memories".
The offline path is `memlane.heuristic`, which yields the same `Operation`s.

What one reply may change is bounded (issue 12): a `Budget` caps the operations of each kind
per job (`extraction.max_*_per_job`; items over a cap are rejected before they are even
validated, so a 3,000-item reply costs little), and a `Guard` refuses a DELETE or UPDATE of
a memory a person stated unless that person asked to forget it (see `memlane.jobs`). An
UPDATE so refused is kept as an ADD of the new content that contradicts the old memory.
"""

from __future__ import annotations

import logging
import re
import reprlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any, Literal

from pydantic import ValidationError as PydanticValidationError

from memlane import validate
from memlane.changes import Cue, lenient_date
from memlane.config import Config
from memlane.dates import upcoming
from memlane.errors import ExtractionError, ValidationError
from memlane.llm import LLM
from memlane.llm.prompts import bracket_lines, loads_tolerant
from memlane.llm.prompts.extraction import OperationAnswer, extraction_prompt
from memlane.models import MemoryRecord, Source, Turn
from memlane.policy import category_for, duration_name, initial_score, retention
from memlane.text import language_of

log = logging.getLogger(__name__)

OpKind = Literal["ADD", "UPDATE", "BOOST", "DELETE", "SKIP", "FORGET"]
# SUPERSEDE:id is an ADD that names the memory it replaces (issue 32; seed 003's line form
# "[SUPERSEDE:mem_id] 内容" beside its "[UPDATE:mem_id] 内容")
_OP = re.compile(
    r"^\s*\[?\s*(ADD|UPDATE|BOOST|DELETE|SKIP|SUPERSEDE)\s*(?::\s*([^\]\s(]+))?\s*(?:\((.*)\))?\s*\]?\s*$", re.IGNORECASE
)


@dataclass
class Operation:
    """One validated change to a scope's memories. FORGET carries a query the worker resolves
    to DELETEs (the user's "forget that", seed 001 §6 phase 1.5)."""

    op: OpKind
    id: str | None = None
    content: str | None = None
    category: str | None = None
    score: float | None = None  # initial score from importance (seed 001 §3.4)
    expires_at: datetime | None = None
    subject: str | None = None
    predicate: str | None = None
    confidence: float = 1.0
    contradicts: list[str] = field(default_factory=list)
    # issue 32: the memories this ADD replaces (the fact changed), and when the fact began /
    # ended in the world (None: from the turn that said it / still holds)
    supersedes: list[str] = field(default_factory=list)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    change: Cue | None = None  # the offline extractor's change cue: the merge finds what it replaces
    mine: bool = False  # the offline extractor read it as the user's statement about themselves
    reason: str = ""
    source: Source = "extractor"
    pinned: bool = False
    verified: bool = False
    query: str | None = None
    priority: str | None = None  # seed 002 §4 retention priority (memory metadata "priority")


@dataclass
class Rejected:
    index: int
    item: Any
    reason: str


@dataclass
class Extraction:
    """What one extractor run produced: operations, rejected items, LLM calls spent."""

    operations: list[Operation] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    llm_calls: int = 0
    language: str = "en"


# queued: left for the background worker; locked: a live writer holds the scope, the job
# waits for the next drain; error: not even recorded (a broken store), the job is retried later
JobStatus = Literal["done", "retrying", "locked", "skipped", "empty", "queued", "error"]


@dataclass
class JobReport:
    """What one extraction job did; `stats` is seed 001 §5.3's {"new", "updated"}. The queue
    (jobs.py) reports it; it lives here, below the queue, so the engine's protocols
    (parts.py, services.py) can name it."""

    session_id: str
    first_seq: int
    last_seq: int
    job_id: int | None = None
    status: JobStatus = "done"
    extractor: str = "heuristic"
    added: list[MemoryRecord] = field(default_factory=list)
    reinforced: list[MemoryRecord] = field(default_factory=list)
    updated: list[MemoryRecord] = field(default_factory=list)
    contradicted: list[MemoryRecord] = field(default_factory=list)
    superseded: list[MemoryRecord] = field(default_factory=list)  # closed by a newer fact (issue 32)
    flagged: list[MemoryRecord] = field(default_factory=list)  # new memories that may replace others: for review
    deleted: list[MemoryRecord] = field(default_factory=list)
    skipped: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    unmatched_forgets: list[str] = field(default_factory=list)
    llm_calls: int = 0
    attempts: int = 0
    error: str | None = None
    next_at: datetime | None = None

    @property
    def stats(self) -> dict[str, int]:
        return {"new": len(self.added),
                "updated": len(self.reinforced) + len(self.updated) + len(self.contradicted) + len(self.superseded),
                "deleted": len(self.deleted)}


Lookup = Callable[[str], MemoryRecord | None]
# A DELETE or UPDATE and the memory it targets → why it may not apply, or None
Guard = Callable[[Operation, MemoryRecord], str | None]

_LOGGED = 5  # rejected items logged one by one per reply; the rest are counted
_CAP_FIELDS = {"ADD": "max_adds_per_job", "UPDATE": "max_updates_per_job", "BOOST": "max_boosts_per_job",
               "DELETE": "max_deletes_per_job"}


class Budget:
    """How many operations of each kind one job may still apply (extraction.max_*_per_job).
    ADD / UPDATE / BOOST scale with the parts of history the job sends (one LLM call each);
    DELETE does not: a long conversation is no reason to delete more."""

    def __init__(self, config: Config, parts: int = 1) -> None:
        cfg = config.extraction
        self.caps = {kind: getattr(cfg, name) * (1 if kind == "DELETE" else max(1, parts))
                     for kind, name in _CAP_FIELDS.items()}
        self.used: Counter[str] = Counter()

    def full(self, kind: str) -> bool:
        return kind in self.caps and self.used[kind] >= self.caps[kind]

    def take(self, kind: str) -> None:
        self.used[kind] += 1

    def reason(self, kind: str) -> str:
        return (f"over the cap of {self.caps[kind]} {kind} operations per extraction job "
                f"(extraction.{_CAP_FIELDS[kind]}); not applied")


def validate_operations(
    data: Any,
    *,
    lookup: Lookup,
    config: Config,
    now: datetime,
    source: Source = "extractor",
    raw: str = "",
    budget: Budget | None = None,
    guard: Guard | None = None,
) -> tuple[list[Operation], list[Rejected]]:
    """Turn a parsed reply into operations. Items are judged one by one; a reply that is not
    a list of operations at all (or whose every item is malformed) raises `ExtractionError`.
    Items over the `budget` or refused by the `guard` are rejected with the reason — a
    well-formed reply, so the job is done, not retried."""
    items = _items(data, raw)
    budget = budget or Budget(config)
    ops: list[Operation] = []
    rejected: list[Rejected] = []
    refused = 0
    for i, item in enumerate(items):
        kind = _kind(item)
        if kind is not None and budget.full(kind):
            rejected.append(Rejected(i, item, budget.reason(kind)))  # cheap: not validated
            refused += 1
            continue
        try:
            op = _operation(item, lookup=lookup, config=config, now=now, source=source)
        except ValidationError as exc:
            rejected.append(Rejected(i, item, str(exc)))
            if len(rejected) - refused <= _LOGGED:  # a hostile reply must not flood the log
                log.warning("extraction: rejected operation %d (%s): %s", i, exc, reprlib.repr(item))
            continue
        if (guard is not None and op.op in ("UPDATE", "DELETE") and op.id
                and (target := lookup(op.id)) is not None and (why := guard(op, target)) is not None):
            refused += 1
            if op.op == "DELETE":
                rejected.append(Rejected(i, item, why))
                continue
            # the new content is kept, beside the memory it would have replaced
            rejected.append(Rejected(i, item, why + "; its new content is added as a separate memory that "
                                                   "contradicts it"))
            op = Operation("ADD", content=op.content, category=op.category or target.category,
                           score=initial_score(None, config.policy), contradicts=[target.id],
                           reason=op.reason, source=source)
        budget.take(kind or op.op)
        ops.append(op)
    if len(rejected) > _LOGGED:
        log.warning("extraction: %d of %d operations rejected (%d refused by the caps or the user's protection); "
                    "JobReport.rejected has every reason", len(rejected), len(items), refused)
    if items and not ops and not refused:
        raise ExtractionError(
            f"none of the {len(items)} operations in the LLM answer is usable; first problem: {rejected[0].reason}",
            raw=raw,
        )
    return ops, rejected


# seed 003's monitor answers one operation a line: "[ADD] 内容", "[UPDATE:mem_id] 内容",
# "[BOOST:mem_id]", "[DELETE:mem_id]", "[SKIP]" (read by `bracket_lines`, as the reviewer's are)
_MONITOR_OPS = ("ADD", "UPDATE", "BOOST", "DELETE", "SKIP", "SUPERSEDE")


def parse_reply(text: str) -> Any:
    """An extraction reply as data: JSON (`loads_tolerant`), or seed 003's bracket lines as a
    list of strings (each validated like any other item). A reply whose body opens as JSON is
    read as JSON, so "[ADD] …" inside a JSON string is never mistaken for a line."""
    lines = bracket_lines(text, _MONITOR_OPS)
    return lines if lines is not None else loads_tolerant(text)


def _kind(item: Any) -> str | None:
    """The operation an item names (ADD, UPDATE, BOOST, DELETE, SKIP), read cheaply; None
    when it names none (validation then says why)."""
    if isinstance(item, str):
        m = re.match(r"^\s*(\[[^\]]+\])", item)
        text: Any = m.group(1) if m else item
    elif isinstance(item, dict):
        text = item.get("op") or item.get("action") or item.get("operation")
        if text is None and item.get("content"):
            return "ADD"
    else:
        return None
    m = _OP.match(text) if isinstance(text, str) and len(text) < 200 else None
    kind = m.group(1).upper() if m else None
    return "ADD" if kind == "SUPERSEDE" else kind


def _items(data: Any, raw: str) -> list[Any]:
    if isinstance(data, dict):
        for key in ("operations", "memories", "items", "ops"):
            if isinstance(data.get(key), list):
                return list(data[key])
        if "op" in data or "content" in data:  # a single operation, not wrapped
            return [data]
    if isinstance(data, list):
        return data
    raise ExtractionError(
        f"LLM answer is JSON but not a list of operations (got {type(data).__name__}); expected "
        '{"operations": [...]}', raw=raw,
    )


def _operation(item: Any, *, lookup: Lookup, config: Config, now: datetime, source: Source) -> Operation:
    if isinstance(item, str):  # seed 003's line format: "[UPDATE:id] content"
        m = re.match(r"^\s*(\[[^\]]+\])\s*(.*)$", item, re.DOTALL)
        item = {"op": m.group(1), "content": m.group(2) or None} if m else {"op": item}
    if not isinstance(item, dict):
        raise ValidationError("op", f"must be an object, got {type(item).__name__}")
    item = dict(item)
    op_text = item.pop("op", None) or item.pop("action", None) or item.pop("operation", None)
    if op_text is None and item.get("content"):
        op_text = "ADD"  # seed 001/004's plain list of memories
    if not isinstance(op_text, str) or not (m := _OP.match(op_text)):
        raise ValidationError("op", f"must be ADD, UPDATE:id, BOOST:id, DELETE:id, SUPERSEDE:id or SKIP, "
                                    f"got {reprlib.repr(op_text)}")
    kind = m.group(1).upper()
    if kind == "SUPERSEDE":  # an ADD naming what it replaces
        kind, old = "ADD", m.group(2) or item.pop("id", None)
        named = item.get("supersedes")
        if old:
            item["supersedes"] = [old, *(named if isinstance(named, list) else [])]
    if m.group(2) and not item.get("id") and kind != "ADD":
        item["id"] = m.group(2)
    if m.group(3) and not item.get("reason"):
        item["reason"] = m.group(3)
    if isinstance(item.get("id"), str):
        item["id"] = item["id"].strip().strip("[]").strip()
    if isinstance(item.get("importance"), str) and item["importance"].strip().lower() in ("high", "medium", "low"):
        item["importance"] = item["importance"].strip().lower()
    if isinstance(item.get("duration"), str):
        item["duration"] = duration_name(item["duration"])
    if isinstance(item.get("rule_scope"), str):  # "Task", "behavior" (US spelling)
        item["rule_scope"] = item["rule_scope"].strip().lower().replace("behavior", "behaviour")
    for name in ("supersedes", "contradicts"):  # a link the model garbled costs the link, not the fact
        item[name] = _id_list(item.get(name), name)
    try:
        ans = OperationAnswer.model_validate({**item, "op": kind})
    except PydanticValidationError as exc:
        err = exc.errors()[0]
        raise ValidationError(".".join(str(p) for p in err["loc"]) or "op", err["msg"]) from None
    # an LLM's reply is input too: the rules the API applies (lone surrogates, control characters)
    for name in ("subject", "predicate", "reason", "category"):
        validate.optional_text(name, getattr(ans, name), config.store.max_content_chars)
    if ans.id is not None:
        validate.memory_id(ans.id, "id")

    if kind == "SKIP":
        return Operation("SKIP", reason=ans.reason or "")
    if kind in ("UPDATE", "BOOST", "DELETE"):
        if not ans.id:
            raise ValidationError("id", f"{kind} needs the id of an existing memory")
        target = lookup(ans.id)
        if target is None:
            raise ValidationError("id", f"{kind}: no memory {ans.id!r} in this scope")
    content = _content(ans.content, config) if kind in ("ADD", "UPDATE") else None
    if kind == "UPDATE":
        if content is None:
            raise ValidationError("content", "UPDATE needs the new content")
        return Operation("UPDATE", id=ans.id, content=content, category=_category(ans.category, config, None),
                         reason=ans.reason or "", source=source)
    if kind == "BOOST" or kind == "DELETE":
        return Operation("BOOST" if kind == "BOOST" else "DELETE", id=ans.id, reason=ans.reason or "", source=source)
    # ADD
    if content is None:
        raise ValidationError("content", "ADD needs content")
    supersedes = _known(ans.supersedes, lookup, content, "supersedes")
    contradicts = [cid for cid in _known(ans.contradicts, lookup, content, "contradicts") if cid not in supersedes]
    # "since March" → 2026-03-01: a date the LLM read; anything else is dropped, the ADD kept
    # a change may be told ahead of its date ("I move next month"): only a change, only so far
    ahead = config.policy.change_ahead_days if supersedes else 0
    valid_from = lenient_date(ans.valid_from, now, ahead) if ans.valid_from is not None else None
    if ans.valid_from is not None and valid_from is None:
        log.info("extraction: ADD %r: valid_from %s is no date it can hold from; left out", content,
                 reprlib.repr(ans.valid_from))
    category = _category(ans.category, config, config.policy.default_category)
    until, priority = retention(ans.duration, category, now, config.policy, task_rule=ans.rule_scope == "task")
    if ans.duration is None and category == "todo" and (day := upcoming(content, now.date())) is not None:
        # seed 001 "todo 类过期处理": a todo the LLM gave no duration is kept until the day its
        # text names ("下周三有产品评审会议"), and a margin; without one, `default_duration`'s
        until = datetime.combine(day, time.min, tzinfo=UTC) + timedelta(days=1 + config.extraction.plan_margin_days)
    return Operation(
        "ADD", content=content, category=category,
        score=initial_score(ans.importance, config.policy), expires_at=until,
        subject=ans.subject, predicate=ans.predicate,
        confidence=1.0 if ans.confidence is None else ans.confidence,
        contradicts=contradicts, supersedes=supersedes, valid_from=valid_from, reason=ans.reason or "",
        source=source, priority=priority,
    )


def _id_list(value: Any, name: str) -> list[str]:
    """An LLM's list of memory ids as text: one id alone becomes a list; what is not an id's
    text (a number, an object, a nested list) is logged and left out."""
    if value is None:
        return []
    raw = value if isinstance(value, list) else [value]
    kept = [v for v in raw if isinstance(v, str)]
    if len(kept) < len(raw):
        log.warning("extraction: %s held %d entries that are not ids; ignored", name, len(raw) - len(kept))
    return kept


def _known(ids: Sequence[Any], lookup: Lookup, content: str, name: str) -> list[str]:
    """The ids of existing memories in `ids`, each once; the rest logged and left out."""
    out: list[str] = []
    for raw in ids:
        mid = str(raw).strip().strip("[]").strip()
        if not validate.MEMORY_ID.fullmatch(mid) or lookup(mid) is None:
            log.warning("extraction: ADD %r %s unknown memory %s; ignored", content, name, reprlib.repr(raw))
        elif mid not in out:
            out.append(mid)
    return out


def _content(value: str | None, config: Config) -> str | None:
    if value is None:
        return None
    text = " ".join(value.split())
    if not text:
        return None
    return validate.text("content", text, config.store.max_content_chars)


def _category(value: str | None, config: Config, default: str | None) -> str | None:
    if value is None:
        return default
    found = category_for(value, config.policy)
    if found is None:
        log.info("extraction: category %r is not in profile %r; using %r", value, config.profile,
                 config.policy.default_category)
        return config.policy.default_category
    return found


def chunks(turns: Sequence[Turn], token_limit: int) -> list[list[Turn]]:
    """Split turns into runs of at most `token_limit` tokens (seed 001 §3.2: 8000), so one
    call never sees more history than that; nothing is dropped."""
    out: list[list[Turn]] = [[]]
    used = 0
    for t in turns:
        if out[-1] and used + t.token_count > token_limit:
            out.append([])
            used = 0
        out[-1].append(t)
        used += t.token_count
    return [c for c in out if c]


class LLMExtractor:
    """Operations from an LLM: one call per ≤ 8000-token run of turns."""

    def __init__(self, llm: LLM, config: Config) -> None:
        self.llm = llm
        self.config = config

    def extract(
        self,
        turns: Sequence[Turn],
        existing: Sequence[MemoryRecord],
        related: Sequence[MemoryRecord],
        *,
        lookup: Lookup,
        now: datetime,
        guard: Guard | None = None,
    ) -> Extraction:
        """Operations for `turns`, at most the job's `Budget`; `guard` refuses destructive
        operations on memories it protects (every pinned one when none is given)."""
        spoken = [t for t in turns if t.role == "user" and t.content.strip()]
        language = language_of(" ".join(t.content for t in spoken) or " ".join(t.content for t in turns))
        result = Extraction(language=language)
        if not spoken:
            return result  # seed 001 §7.2: an empty conversation yields nothing, without a call
        parts = chunks(turns, self.config.extraction.history_token_limit)
        budget = Budget(self.config, len(parts))
        for part in parts:
            prompt = extraction_prompt(part, existing, related, categories=self.config.policy.categories,
                                       language=language)
            text = self.llm.complete(prompt.messages, json_schema=prompt.json_schema)
            result.llm_calls += 1
            ops, rejected = validate_operations(parse_reply(text), lookup=lookup, config=self.config,
                                                now=now, raw=text, budget=budget, guard=guard or _pinned)
            result.operations.extend(ops)
            result.rejected.extend(rejected)
        return result


def _pinned(op: Operation, target: MemoryRecord) -> str | None:
    if op.op == "DELETE" and target.pinned:
        return f"DELETE: memory {target.id!r} is pinned by the user; only the user can delete it"
    return None


def unrepeated(ops: list[Operation]) -> list[Operation]:
    """Without an ADD that says again what an earlier ADD of the same messages said ("I like tea.
    I like tea."). One that another holds from its start is kept: "has a dog" is not "has a dog
    allergy"."""
    seen: set[str] = set()
    out = []
    for o in ops:
        said = (o.content or "").rstrip("。.！!，, ")
        if o.op == "ADD" and said:
            if said in seen:
                continue
            seen.add(said)
        out.append(o)
    return out


__all__ = ["Budget", "Extraction", "Guard", "JobReport", "JobStatus", "LLMExtractor", "Operation", "Rejected", "chunks",
           "parse_reply", "unrepeated", "validate_operations"]
