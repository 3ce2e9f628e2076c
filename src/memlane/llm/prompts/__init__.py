"""Prompts as code: one module per task, each a function returning a `Prompt` — the chat
messages plus the pydantic model of the expected answer (its JSON schema goes to the server).

Every prompt has a Chinese and an English version; the caller picks by the language the user
spoke (`memlane.text.language_of`), so memories are written in that language.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memlane.errors import ExtractionError
from memlane.llm.base import ChatMessage

A = TypeVar("A", bound=BaseModel)

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclass(frozen=True)
class Prompt(Generic[A]):
    """Messages for the LLM and the shape its answer must have."""

    messages: list[ChatMessage]
    answer: type[A]
    language: str

    @property
    def json_schema(self) -> dict[str, Any]:
        return self.answer.model_json_schema()

    def parse(self, text: str) -> A:
        """The reply as the answer model; `ExtractionError` (with `.raw`) when it is not one."""
        data = loads_tolerant(text)
        try:
            return self.answer.model_validate(data)
        except PydanticValidationError as exc:
            raise ExtractionError(f"LLM answer does not match {self.answer.__name__}: {exc.errors()[0]['msg']}",
                                  raw=text) from exc


# not tunable: no answer memlane asks for nests deeper than ~5 levels; deeper ones would
# only reach recursion limits in the code that walks them
MAX_JSON_DEPTH = 32


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level <= MAX_JSON_DEPTH:
                stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def loads_tolerant(text: str) -> Any:
    """JSON out of an LLM reply: drops <think> blocks and ``` fences, finds the first JSON
    value in surrounding prose, forgives trailing commas. `ExtractionError` when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise ExtractionError("LLM answer is empty; expected JSON", raw=str(text))
    body = _THINK.sub("", text).strip()
    fenced = _FENCE.findall(body)
    candidates = [*fenced, body] if fenced else [body]
    decoder = json.JSONDecoder()
    for cand in candidates:
        for variant in (cand, _TRAILING_COMMA.sub(r"\1", cand)):
            for start in (i for i, ch in enumerate(variant) if ch in "{["):
                try:
                    value, _ = decoder.raw_decode(variant, start)
                except json.JSONDecodeError:
                    continue
                except RecursionError:  # nested deeper than Python can parse: hostile or broken
                    raise ExtractionError("LLM answer is JSON nested too deeply to read", raw=text) from None
                if _depth(value) > MAX_JSON_DEPTH:
                    raise ExtractionError(f"LLM answer is JSON nested deeper than {MAX_JSON_DEPTH} levels",
                                          raw=text)
                return value
    raise ExtractionError(f"LLM answer is not JSON: {' '.join(body.split())[:200]!r}", raw=text)


def bracket_lines(text: str, ops: Sequence[str]) -> list[str] | None:
    """Seed 003's bracket answers, one a line: the monitor's "[ADD] 内容", "[UPDATE:mem_id] 内容",
    the reviewer's "[SEARCH:关键词]", "[KEEP]" — every line that opens with one of `ops` in
    brackets (a list marker before it forgiven; prose around them and <think> blocks ignored).
    None when there is none, or when the reply's body opens as JSON: then a "[KEEP]" inside a
    JSON string is never mistaken for a line, and the caller reads the JSON."""
    body = _THINK.sub("", text if isinstance(text, str) else "").strip()
    names = "|".join(re.escape(op) for op in ops)
    line_re = re.compile(rf"^\s*(?:[-*•]\s+|\d+[.)]\s+)?(\[\s*(?:{names})\b[^\]\n]*\].*?)\s*$", re.IGNORECASE)
    lines = [m.group(1) for line in body.splitlines() if (m := line_re.match(line))]
    opening = body.lstrip("`").removeprefix("json").removeprefix("JSON").lstrip()
    if not lines or re.match(r"^(\{|\[\s*[{\"\]])", opening):
        return None
    return lines


def numbered(lines: list[str]) -> str:
    return "\n".join(lines) if lines else "(none)"


__all__ = ["Prompt", "bracket_lines", "loads_tolerant", "numbered"]
