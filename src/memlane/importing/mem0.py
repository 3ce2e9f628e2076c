"""mem0's memories: `get_all` output (a list, or {"results": [...]}, the platform's paged
answer too) and a platform export ({"memories": [...]}, records naming the text `memory`,
`content` or `text`). Memories, not turns: each becomes one memlane memory.

Scopes: everything lands in the one scope the import was asked for (never several, so a
server's caller cannot write into a user it is not). A file holding one mem0 user is that
user's; a file holding several takes only the records of `source_user` (default: the memlane
user id) and lists the others as skipped, naming their user, so users never mix. The mem0
`agent_id`, `run_id` and `app_id` are kept in the memory's metadata.
"""

from __future__ import annotations

import hashlib
from typing import Any

from memlane.errors import ValidationError
from memlane.importing.common import MemoryItem, Parsed, Skipped, bounded, clean, when

SOURCE = "mem0"
_TEXT_FIELDS = ("memory", "content", "text", "data")
_UNREADABLE = "\x00unreadable"  # a user_id of no readable kind; no real id holds a NUL
# mem0's built-in categories → the memlane category that says the same; the first one of a
# record's categories that maps and that the profile has wins; all are kept as tags
CATEGORY_MAP = {
    "user_preferences": "preference", "food": "preference", "music": "preference", "fashion": "preference",
    "entertainment": "preference", "hobbies": "preference", "sports": "preference", "travel": "preference",
    "personal_details": "fact", "family": "fact", "professional_details": "fact", "health": "fact",
    "technology": "fact", "milestones": "experience", "misc": "fact",
}


def looks_like(data: Any) -> bool:
    rows = _rows(data)
    first = rows[0] if rows else None
    return isinstance(first, dict) and isinstance(first.get("memory"), str) and ("hash" in first or "user_id" in first
                                                                                  or "categories" in first)


def _rows(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return list(data[key])
        return None
    return data if isinstance(data, list) else None


def parse(data: Any, origin: str, user_id: str, source_user: str | None, categories: list[str],
          part_chars: int) -> Parsed:
    rows = _rows(data)
    if rows is None:
        raise ValidationError("file", f"{origin}: not a mem0 file (a list of memories, or an object with "
                                      "results or memories)")
    out = Parsed()
    users = {u for r in rows if (u := _owner(r)) not in (None, _UNREADABLE)}
    want: str = source_user if source_user is not None else (next(iter(users)) if len(users) == 1 else user_id)
    for i, r in enumerate(rows):
        where = f"{origin}: memories[{i}]"
        owner = _owner(r)
        if owner == _UNREADABLE:
            out.skipped.append(Skipped(f"{where}.user_id", "names its mem0 user by neither text nor a number: whose it is "
                                                           "cannot be told, so it is not imported"))
            continue
        if owner is not None and owner != want:
            out.skipped.append(Skipped(where, f"belongs to mem0 user {clean(owner)[:60]!r}, not "
                                              f"{clean(want)[:60]!r}; import it with --source-user "
                                              f"{clean(owner)[:60]}"))
            continue
        try:
            out.memories.append(_memory(r, where, categories, part_chars))
        except ValidationError as exc:
            out.skipped.append(Skipped(where, str(exc)))
    return out


def _owner(r: Any) -> str | None:
    """The mem0 user a record belongs to, as text (a number too: mem0 stores what it was
    given); None when it names none. An id of another kind is a user no one can name, so it
    is nobody's to take (_UNREADABLE: skipped)."""
    uid = r.get("user_id") if isinstance(r, dict) else None
    if uid is None or uid == "":
        return None
    if isinstance(uid, str):
        return uid
    return str(uid) if isinstance(uid, int) and not isinstance(uid, bool) else _UNREADABLE


def _ident(value: Any) -> str | None:
    """A record id as text: mem0's are UUIDs, a store with integer ids gives numbers."""
    if isinstance(value, str) and value:
        return clean(value)
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _memory(r: Any, where: str, categories: list[str], part_chars: int) -> MemoryItem:
    if not isinstance(r, dict):
        raise ValidationError(where, f"a memory is an object, got {type(r).__name__}")
    text = next((r[k] for k in _TEXT_FIELDS if isinstance(r.get(k), str)), None)
    if text is None or not text.strip():
        raise ValidationError(f"{where}.memory", "has no text (memory, content or text)")
    text = clean(text).strip()
    rid = _ident(r.get("id"))
    key = f"{SOURCE}:{rid}" if rid else f"{SOURCE}:sha:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}"
    tags = [clean(c)[:60] for c in r.get("categories") or [] if isinstance(c, str)]
    category = next((CATEGORY_MAP[t] for t in tags if CATEGORY_MAP.get(t) in categories), None)
    md: dict[str, Any] = {"source": SOURCE}
    if rid:
        md["mem0_id"] = rid[:200]
    if tags:
        md["tags"] = tags
    for k in ("agent_id", "run_id", "app_id", "hash"):
        if isinstance(r.get(k), str):
            md[f"mem0_{k}"] = clean(r[k])[:200]
    if isinstance(r.get("metadata"), dict) and r["metadata"]:
        md["mem0_metadata"] = bounded(r["metadata"], part_chars)
    created = when(r.get("created_at"), f"{where}.created_at")
    updated = when(r.get("updated_at"), f"{where}.updated_at") or created
    return MemoryItem(text, key, category, created, updated, metadata=md, where=where)
