"""One validation path for everything that gets in: the API, the agent tools, conversation
imports, portable (JSONL) imports and MEMORY.md.

Each check takes the field's name and the raw value, returns the clean value, and raises
`ValidationError(field, ...)` naming the field and the limit — never a raw TypeError,
UnicodeEncodeError or RecursionError. Limits come from `memlane.config`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memlane.config import MAX_ID_CHARS, StoreConfig
from memlane.errors import ValidationError

T = TypeVar("T")

# memory ids appear in MEMORY.md headings (`### [id] …`) and CLI arguments: a safe charset only
MEMORY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INT64_MAX = 2**63 - 1
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ID_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # no line breaks, tabs or NUL in an id
# a memory is one entry of MEMORY.md: no control character, nor anything str.splitlines()
# breaks a line at, but tab and newline
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")
_NUL = re.compile(r"\x00")  # a turn is what was said, pasted terminal output included: only NUL is refused


def _show(value: Any) -> str:
    if not isinstance(value, str | int | float | bool | None):
        return f"a {type(value).__name__}"  # never repr a container: it may be nested thousands deep
    r = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return r if len(r) <= 60 else r[:57] + "..."


def key_name(key: Any) -> str:
    """A caller's key as part of a field name: printable whatever it holds (a field name is
    shown on consoles and in JSON), and short."""
    text = str(key)[:40]
    if _SURROGATE.search(text) or _ID_CONTROL.search(text):
        return text.encode("unicode_escape").decode("ascii")
    return text


def _no_surrogates(field: str, value: str) -> None:
    if (m := _SURROGATE.search(value)) is not None:
        raise ValidationError(field, f"holds a lone surrogate (U+{ord(m.group()):04X}) at character {m.start()}; "
                                     "send valid Unicode text")


def text(field: str, value: Any, limit: int, *, setting: str = "store.max_content_chars",
         required: bool = True, controls: bool = False) -> str:
    """A string of at most `limit` characters, valid Unicode, non-blank when `required`; no
    control characters but tab and newline, unless `controls` (then only NUL is refused)."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise ValidationError(field, "must not be empty")
    if len(value) > limit:
        raise ValidationError(field, f"is {len(value)} characters; the limit is {limit} ({setting})")
    _no_surrogates(field, value)
    if (m := (_NUL if controls else _TEXT_CONTROL).search(value)) is not None:
        raise ValidationError(field, f"holds control character U+{ord(m.group()):04X} at character {m.start()}")
    return value


def memory_text(field: str, value: Any, limit: int) -> str:
    """A memory's text: Windows and old-Mac line ends become newlines, then `text`; stripped."""
    if isinstance(value, str):
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    return text(field, value, limit).strip()


def fit_memory_text(value: str, limit: int) -> str | None:
    """Text cut from a turn as a memory's: whitespace runs as one space, control characters
    dropped; None when nothing is left or it is longer than `limit`."""
    text = _TEXT_CONTROL.sub("", " ".join(value.split()))
    text = _SURROGATE.sub("", text).strip()
    return text if text and len(text) <= limit else None


def optional_text(field: str, value: Any, limit: int, *, setting: str = "store.max_content_chars",
                  controls: bool = False) -> str | None:
    return None if value is None else text(field, value, limit, setting=setting, required=False, controls=controls)


def batch(field: str, count: int, chars: int, *, max_count: tuple[int, str], max_chars: tuple[int, str],
          bulk: str) -> None:
    """A batch of messages within its caps (each a limit and the setting naming it): one call
    or request is bounded work, and a larger load goes through `bulk` (an import)."""
    for n, (limit, setting), what in ((count, max_count, "messages"), (chars, max_chars, "characters")):
        if n > limit:
            raise ValidationError(field, f"more than {limit} {what} at once ({setting}): send them in parts, "
                                  f"or load a whole conversation with {bulk}")


def ident(field: str, value: Any, *, limit: int = MAX_ID_CHARS) -> str:
    """A user, agent or session id: non-blank, at most `limit` characters, no control characters."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(field, "is required and must not be empty")
    if len(value) > limit:
        raise ValidationError(field, f"is {len(value)} characters; the limit is {limit}")
    _no_surrogates(field, value)
    if (m := _ID_CONTROL.search(value)) is not None:
        raise ValidationError(field, f"holds control character U+{ord(m.group()):04X}; ids are one line of text")
    return value


def optional_ident(field: str, value: Any) -> str | None:
    return None if value is None else ident(field, value)


def path(field: str, value: Any) -> Path:
    """A file path given as text or a Path (not empty, no control characters)."""
    if not isinstance(value, str | Path) or (isinstance(value, str) and not value.strip()):
        raise ValidationError(field, f"must be a file path, got {type(value).__name__}")
    text(field, str(value), 4096, setting="a file path", required=True)
    return Path(value)


def optional_path(field: str, value: Any) -> Path | None:
    return None if value is None else path(field, value)


def memory_id(value: Any, field: str = "memory_id") -> str:
    """A memory id: 1-64 of A-Z a-z 0-9 _ - (it is written into MEMORY.md headings)."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not MEMORY_ID.fullmatch(value):
        raise ValidationError(field, f"{_show(value)} is not a memory id (1-64 letters, digits, _ or -)")
    return value


def number(field: str, value: Any, lo: float, hi: float) -> float:
    """A finite real number in [lo, hi]; a bool is not a number here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise ValidationError(field, f"must be within [{lo:g}, {hi:g}], got {_show(value)}")
    return float(value)


def integer(field: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    hi = _INT64_MAX if hi is None else hi  # SQLite holds 64-bit integers
    if value < lo or value > hi:
        bound = f"from {lo} to {hi}"
        raise ValidationError(field, f"must be {bound}, got {value}")
    return value


def optional_integer(field: str, value: Any, lo: int, hi: int | None = None) -> int | None:
    return None if value is None else integer(field, value, lo, hi)


def boolean(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(field, f"must be true or false, got {type(value).__name__}")
    return value


def choice(field: str, value: Any, choices: Iterable[T]) -> T:
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ValidationError(field, f"must be one of {', '.join(map(str, options))}; got {_show(value)}")
    return value


def when(field: str, value: Any) -> datetime:
    """A datetime, or ISO 8601 text: a time, a day, or as a person says when a fact changed
    ("since March 2024") a month ("2024-03") or a year ("2024"), from its first day. A naive
    one is taken as UTC. The one parser of dates the library, CLI, REST and MCP take."""
    if isinstance(value, str):
        text = value
        if len(text) in (4, 7) and text[:4].isdigit():
            text += "-01-01" if len(text) == 4 else "-01"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(field, f"{_show(value)} is not a date or time such as 2026-11-01T09:00, 2026-11-01, "
                                         "2026-11 or 2026") from None
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime or ISO 8601 text, got {type(value).__name__}")
    value = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        value.timestamp()
        value.astimezone(UTC)
    except (OverflowError, ValueError, OSError):
        raise ValidationError(field, f"{_show(value)} is out of range") from None
    return value


def optional_when(field: str, value: Any) -> datetime | None:
    return None if value is None else when(field, value)


def json_value(field: str, value: Any, *, max_depth: int, max_bytes: int,
               depth_setting: str = "store.max_metadata_depth") -> Any:
    """Plain JSON (dict with str keys, list, str, finite number, bool, None), nested at most
    `max_depth` deep and at most `max_bytes` as UTF-8 JSON. Checked without recursion, so a
    hostile nesting cannot raise RecursionError."""
    stack: list[tuple[str, Any, int]] = [(field, value, 1)]
    nodes = 0
    while stack:
        where, v, depth = stack.pop()
        nodes += 1
        if nodes > max_bytes:  # every value takes at least a byte of JSON: too big, whatever its shape
            raise ValidationError(field, f"is larger than {max_bytes} bytes as JSON (store.max_metadata_bytes)")
        if v is None or isinstance(v, bool | int):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                raise ValidationError(where, f"must be a finite number, got {v}")
        elif isinstance(v, str):
            _no_surrogates(where, v)
        elif isinstance(v, dict | list | tuple):
            if depth > max_depth:
                raise ValidationError(where, f"is nested more than {max_depth} levels deep ({depth_setting})")
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, child in items:
                if isinstance(v, dict):
                    if not isinstance(k, str):
                        raise ValidationError(where, f"keys must be strings, got {type(k).__name__}")
                    _no_surrogates(f"{where}.{key_name(k)}", k)
                stack.append((f"{where}.{key_name(k)}" if isinstance(v, dict) else f"{where}[{k}]", child, depth + 1))
        else:
            raise ValidationError(where, f"must be JSON (object, array, string, number, bool, null), "
                                         f"got {type(v).__name__}")
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(field, f"is {size} bytes as JSON; the limit is {max_bytes} (store.max_metadata_bytes)")
    return value


def vector(field: str, value: Any, dimensions: int) -> np.ndarray:
    """A query vector: a 1-D array of `dimensions` finite numbers."""
    if not isinstance(value, np.ndarray) or value.ndim != 1 or value.shape[0] != dimensions:
        raise ValidationError(field, f"must be a 1-D numpy array of {dimensions} numbers (the embedder's width)")
    if not np.issubdtype(value.dtype, np.number) or not np.isfinite(value).all():
        raise ValidationError(field, "must hold finite numbers")
    return value


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _INT64_MAX


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _aware_time(v: Any) -> bool:
    try:
        return isinstance(v, str) and datetime.fromisoformat(v).tzinfo is not None
    except ValueError:
        return False


def _flagged(v: Any) -> bool:
    """A change the engine was unsure of (supersession.FLAG): {"ids": [memory ids], "at"?}."""
    return isinstance(v, dict) and _strings(v.get("ids")) and ("at" not in v or _aware_time(v["at"]))


def _review(v: Any) -> bool:
    return isinstance(v, dict) and ("at" not in v or _aware_time(v["at"]))


# Keys memlane keeps in a record's metadata, and the shape its own code reads back: a caller
# (or an export file) may carry them, but only in that shape, so they cannot break a later step.
# "distinct": true marks a memory that is not a fact to deduplicate (a keyed record, such as a
# LangGraph store item): consolidate's dedup never merges it (lifecycle.DISTINCT).
MEMORY_KEYS: dict[str, Callable[[Any], bool]] = {"merged": _strings, "review": _review, "decayed_at": _aware_time,
                                                 "may_supersede": _flagged, "distinct": lambda v: isinstance(v, bool)}
SESSION_KEYS: dict[str, Callable[[Any], bool]] = {
    "user_messages_since_extract": _count, "extracted_through": _count, "commands_through": _count,
    "compacted_through": _count, "compactions": _count, "injected": _strings,
    "last_feedback": lambda v: isinstance(v, dict),
}


def metadata(field: str, value: Any, store: StoreConfig,
             reserved: Mapping[str, Callable[[Any], bool]] | None = None) -> dict[str, Any]:
    """A JSON object within the store's depth and size limits (None is an empty object);
    memlane's own keys (`reserved`) only in the shape memlane reads them."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(field, f"must be a JSON object (dict), got {type(value).__name__}")
    json_value(field, value, max_depth=store.max_metadata_depth, max_bytes=store.max_metadata_bytes)
    for key, ok in (reserved or {}).items():
        if key in value and not ok(value[key]):
            raise ValidationError(f"{field}.{key}", "is a key memlane keeps itself, and this value is not the "
                                                    "shape it writes; use another key for your own data")
    return dict(value)


def tool_calls(field: str, value: Any, store: StoreConfig) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise ValidationError(field, "must be a list of objects (OpenAI tool_calls)")
    return list(json_value(field, value, max_depth=store.max_metadata_depth, max_bytes=store.max_metadata_bytes))


def category(field: str, value: Any, allowed: Sequence[str], profile: str) -> str:
    """A category the profile knows, lower-cased."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    c = value.strip().lower()
    if c not in allowed:
        raise ValidationError(field, f"unknown category {_show(value)}; profile {profile!r} allows: {', '.join(allowed)}")
    return c


__all__ = [
    "MEMORY_ID", "MEMORY_KEYS", "SESSION_KEYS", "boolean", "category", "choice", "fit_memory_text", "ident", "integer", "json_value", "key_name", "memory_id", "memory_text", "metadata",
    "number", "optional_ident", "optional_integer", "optional_text", "optional_when", "text", "tool_calls", "vector", "when",
]
