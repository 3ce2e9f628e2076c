"""Memory operations out of conversation turns, validated one by one.

The LLM path (seeds 001 §3.2, 003, 002 §6): the turns of one job, the scope's top-50 Active
memories as one line each (seed 001 §3.2 token control) and the memories retrieval returned
for those turns go into one prompt; the reply is a list of operations ADD / UPDATE:id /
BOOST:id / DELETE:id / SKIP. Each item is checked on its own — unknown ids, wrong types,
bad values are rejected with the reason logged — and a reply with no usable JSON at all
raises `ExtractionError`, so the job is retried instead of counting as "no memories".
The offline path is `memlane.heuristic`, which yields the same `Operation`s.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationError as PydanticValidationError

from memlane import validate
from memlane.config import Config
from memlane.errors import ExtractionError, ValidationError
from memlane.llm import LLM
from memlane.llm.prompts import loads_tolerant
from memlane.llm.prompts.extraction import OperationAnswer, extraction_prompt
from memlane.models import MemoryRecord, Source, Turn
from memlane.policy import category_for, expires_at, initial_score
from memlane.text import language_of

log = logging.getLogger(__name__)

OpKind = Literal["ADD", "UPDATE", "BOOST", "DELETE", "SKIP", "FORGET"]
_OP = re.compile(
    r"^\s*\[?\s*(ADD|UPDATE|BOOST|DELETE|SKIP)\s*(?::\s*([^\]\s(]+))?\s*(?:\((.*)\))?\s*\]?\s*$", re.IGNORECASE
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
    reason: str = ""
    source: Source = "extractor"
    pinned: bool = False
    verified: bool = False
    query: str | None = None


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


Lookup = Callable[[str], MemoryRecord | None]


def validate_operations(
    data: Any,
    *,
    lookup: Lookup,
    config: Config,
    now: datetime,
    source: Source = "extractor",
    raw: str = "",
) -> tuple[list[Operation], list[Rejected]]:
    """Turn a parsed reply into operations. Items are judged one by one; a reply that is not
    a list of operations at all (or whose every item is unusable) raises `ExtractionError`."""
    items = _items(data, raw)
    ops: list[Operation] = []
    rejected: list[Rejected] = []
    for i, item in enumerate(items):
        try:
            ops.append(_operation(item, lookup=lookup, config=config, now=now, source=source))
        except ValidationError as exc:
            rejected.append(Rejected(i, item, str(exc)))
            log.warning("extraction: rejected operation %d (%s): %r", i, exc, item)
    if items and not ops:
        raise ExtractionError(
            f"none of the {len(items)} operations in the LLM answer is usable; first problem: {rejected[0].reason}",
            raw=raw,
        )
    return ops, rejected


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
        raise ValidationError("op", f"must be ADD, UPDATE:id, BOOST:id, DELETE:id or SKIP, got {op_text!r}")
    kind = m.group(1).upper()
    if m.group(2) and not item.get("id"):
        item["id"] = m.group(2)
    if m.group(3) and not item.get("reason"):
        item["reason"] = m.group(3)
    if isinstance(item.get("id"), str):
        item["id"] = item["id"].strip().strip("[]").strip()
    if isinstance(item.get("importance"), str) and item["importance"].strip().lower() in ("high", "medium", "low"):
        item["importance"] = item["importance"].strip().lower()
    if isinstance(item.get("duration"), str):
        item["duration"] = item["duration"].strip().lower()
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
        if kind == "DELETE" and target.pinned and source != "user":
            raise ValidationError("id", f"DELETE: memory {ans.id!r} is pinned by the user; only the user can delete it")
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
    contradicts = []
    for cid in ans.contradicts:
        cid = str(cid).strip().strip("[]")
        if not validate.MEMORY_ID.fullmatch(cid) or lookup(cid) is None:
            log.warning("extraction: ADD %r contradicts unknown memory %r; ignored", content, cid)
        else:
            contradicts.append(cid)
    return Operation(
        "ADD", content=content, category=_category(ans.category, config, config.policy.default_category),
        score=initial_score(ans.importance, config.policy), expires_at=expires_at(ans.duration, now, config.policy),
        subject=ans.subject, predicate=ans.predicate,
        confidence=1.0 if ans.confidence is None else ans.confidence,
        contradicts=contradicts, reason=ans.reason or "", source=source,
    )


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
    ) -> Extraction:
        spoken = [t for t in turns if t.role == "user" and t.content.strip()]
        language = language_of(" ".join(t.content for t in spoken) or " ".join(t.content for t in turns))
        result = Extraction(language=language)
        if not spoken:
            return result  # seed 001 §7.2: an empty conversation yields nothing, without a call
        for part in chunks(turns, self.config.extraction.history_token_limit):
            prompt = extraction_prompt(part, existing, related, categories=self.config.policy.categories,
                                       language=language)
            text = self.llm.complete(prompt.messages, json_schema=prompt.json_schema)
            result.llm_calls += 1
            ops, rejected = validate_operations(loads_tolerant(text), lookup=lookup, config=self.config,
                                                now=now, raw=text)
            result.operations.extend(ops)
            result.rejected.extend(rejected)
        return result


__all__ = ["Extraction", "LLMExtractor", "Operation", "Rejected", "chunks", "validate_operations"]
