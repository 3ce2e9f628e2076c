"""What every importer hands back, and the small helpers they share: text made safe to store,
source times read, JSON bounded before it goes into metadata."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlane.errors import ValidationError
from memlane.importers import Conversation, _loads, read_text

# a half of a UTF-16 pair alone: JSON's "\ud800" parses to it, and no store takes it
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# where a whole number is a time in milliseconds rather than seconds (year 2286 in seconds)
_MS_ABOVE = 10_000_000_000
_ZIP = b"PK\x03\x04"  # a zip archive's first bytes


@dataclass
class MemoryItem:
    """One memory an importer found: a mem0 memory, a line of a Letta block, a note's bullet."""

    content: str
    key: str  # its identity in the source (metadata `import_key`): a second run skips it
    category: str | None = None  # a category of the profile, or None for its default
    created_at: datetime | None = None
    updated_at: datetime | None = None
    pinned: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # the record, for errors and the preview ("memories[3]", "notes/a.md line 4")


@dataclass
class Skipped:
    """A record that was not imported, and why (a bad record, another user's)."""

    record: str
    reason: str


@dataclass
class Parsed:
    """A file's content: conversations (turns) and memories, and the records skipped."""

    conversations: list[Conversation] = field(default_factory=list)
    memories: list[MemoryItem] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)  # session id → its title (session metadata)
    session_meta: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_json(path: Path, max_bytes: int) -> Any:
    """The file's JSON; a ValidationError("file") naming the file when it is too large, not
    UTF-8, not JSON, or nested too deeply to read."""
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError:
        head = b""  # read_text says what is wrong with it
    if head == _ZIP:  # the export as downloaded: ChatGPT's and Claude's come zipped
        raise ValidationError("file", f"{path} is a zip archive: unzip it and give the conversations.json (or the "
                                      ".json / .af file) inside")
    return _loads(read_text(path, max_bytes), str(path))


def clean(text: str) -> str:
    """Text as stored: a lone surrogate becomes U+FFFD (the rest of the text is kept)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def when(value: Any, where: str) -> datetime | None:
    """A source time: epoch seconds (or milliseconds), or ISO 8601 text ("Z" too); None
    when absent. Anything else is a ValidationError naming `where`."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValidationError(where, f"a time is a number or ISO 8601 text, got {value!r}")
    if isinstance(value, int | float):
        try:
            secs = value / 1000 if abs(value) >= _MS_ABOVE else value
            return datetime.fromtimestamp(secs, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValidationError(where, f"{value!r} is not a time memlane can read") from None
    if isinstance(value, str):
        try:
            d = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValidationError(where, f"{clean(value[:60])!r} is not an ISO 8601 time") from None
        return d if d.tzinfo else d.replace(tzinfo=UTC)
    raise ValidationError(where, f"a time is a number or ISO 8601 text, got {type(value).__name__}")


def text_of(value: Any, where: str) -> str:
    """A field that must be text (or absent: "")."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(where, f"must be text, got {type(value).__name__}")
    return clean(value)


def bounded(value: Any, max_chars: int) -> Any:
    """`value` as metadata: plain JSON kept as it is when it is small and shallow; otherwise
    its JSON text cut to `max_chars` (an image pointer, a tool's long output), so a hostile
    part can neither nest past the store's metadata depth nor bloat a turn."""
    try:
        raw = json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError, TypeError):
        return f"<{type(value).__name__} not kept: not plain JSON>"
    raw = clean(raw)
    if len(raw) <= max_chars and _depth(value) <= 3:
        return json.loads(raw)
    return raw[:max_chars] + ("…" if len(raw) > max_chars else "")


def _depth(value: Any) -> int:
    """How deeply `value` nests (without recursion; a hostile part cannot overflow the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > 8:
            return deepest
        if isinstance(v, dict):
            stack += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, d + 1) for x in v]
    return deepest


def iso(d: datetime | None) -> str | None:
    return d.isoformat() if d else None


def records(data: Any, key: str, where: str) -> list[Any]:
    """The list a format is made of: `data` itself, or `data[key]`."""
    if isinstance(data, dict) and key in data:
        data = data[key]
    if not isinstance(data, list):
        raise ValidationError("file", f"{where}: expected a list of {key}, got {type(data).__name__}")
    return data
