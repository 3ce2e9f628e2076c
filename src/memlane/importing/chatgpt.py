"""ChatGPT's data export, `conversations.json`: one session per conversation, the live branch only.

A conversation is a tree (`mapping`: node id → {message, parent, children}) because an edit or
a regeneration starts a new branch; `current_node` is the leaf the person last saw. The live
branch is the walk from it up through `parent` to the root, reversed. Branches off it are
left out, as ChatGPT itself no longer shows them.
"""

from __future__ import annotations

import hashlib
from typing import Any

from memlane.errors import ValidationError
from memlane.importers import Conversation
from memlane.importing.common import Parsed, Skipped, bounded, clean, iso, records, text_of, when

SOURCE = "chatgpt"
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}
# a part's content_type whose text is what was said (a voice message's transcript)
_SPOKEN = ("audio_transcription",)
# a reasoning model's hidden thinking and its "Thought for 4 seconds": not said, so not a turn;
# kept in the metadata of the answer they led to
_REASONING = ("thoughts", "reasoning_recap")


def looks_like(data: Any) -> bool:
    first = data[0] if isinstance(data, list) and data else None
    return isinstance(first, dict) and isinstance(first.get("mapping"), dict)


def parse(data: Any, origin: str, part_chars: int) -> Parsed:
    out = Parsed()
    for i, conv in enumerate(records(data, "conversations", origin)):
        where = f"conversations[{i}]"
        try:
            c = _conversation(conv, where, part_chars, out)
        except ValidationError as exc:
            title = conv.get("title") if isinstance(conv, dict) else None
            named = f" ({clean(title)[:60]!r})" if isinstance(title, str) else ""
            out.skipped.append(Skipped(f"{origin}: {where}{named}", str(exc)))
            continue
        if c is not None:
            out.conversations.append(c)
    return out


def _conversation(conv: Any, where: str, part_chars: int, out: Parsed) -> Conversation | None:
    if not isinstance(conv, dict):
        raise ValidationError(where, f"a conversation is an object, got {type(conv).__name__}")
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ValidationError(f"{where}.mapping", "must be an object of node id → node")
    title = text_of(conv.get("title"), f"{where}.title")
    started = when(conv.get("create_time"), f"{where}.create_time")
    sid = conv.get("conversation_id") or conv.get("id")
    if not isinstance(sid, str) or not sid.strip():  # an id made from what the conversation is
        sid = "chatgpt-" + hashlib.sha256(f"{title}|{conv.get('create_time')}".encode("utf-8", "replace")).hexdigest()[:16]
    msgs: list[dict[str, Any]] = []
    thoughts: list[Any] = []  # reasoning waiting for the answer it led to
    for node_id in live_branch(mapping, conv.get("current_node"), where):
        raw = mapping[node_id].get("message")
        if _reasoning(raw):
            thoughts.append(bounded(raw["content"], part_chars))
            continue
        # a message without its own time is dated by the one before it (the conversation's at first)
        before = msgs[-1]["created_at"] if msgs else iso(started)
        m = _message(raw, f"{where}.mapping[{clean(node_id)[:40]!r}]", part_chars, before, out)
        if m is not None:
            if thoughts and m["role"] == "assistant":
                m["metadata"]["thoughts"], thoughts = thoughts, []
            msgs.append(m)
    if not msgs:
        out.skipped.append(Skipped(f"{where} ({title[:60]!r})", "holds no message to import"))
        return None
    sid = clean(sid)
    out.titles[sid] = title
    out.session_meta[sid] = {"source": SOURCE, "title": title, "created_at": iso(started),
                             "updated_at": iso(when(conv.get("update_time"), f"{where}.update_time"))}
    return Conversation(sid, msgs, source=SOURCE, meta={"title": title})


def live_branch(mapping: dict[str, Any], current: Any, where: str) -> list[str]:
    """The node ids from the root to `current`. A cycle in the parent links, or a
    `current_node` the mapping does not hold, is a ValidationError (the conversation is
    skipped); a parent the mapping lacks ends the walk there (a truncated export)."""
    if current is None:  # an export without it: the newest leaf
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        if not leaves:
            raise ValidationError(f"{where}.current_node", "is missing and no node is a leaf")
        current = max(leaves, key=lambda k: _node_time(mapping[k]))
    if not isinstance(current, str) or not isinstance(mapping.get(current), dict):
        raise ValidationError(f"{where}.current_node", f"{clean(str(current))[:60]!r} is not a node of the mapping")
    path, seen, node = [], set(), current
    while isinstance(node, str) and isinstance(mapping.get(node), dict):
        if node in seen:
            raise ValidationError(f"{where}.mapping", f"the parent links loop at node {clean(node)[:60]!r}")
        seen.add(node)
        path.append(node)
        node = mapping[node].get("parent")
    return path[::-1]


def _reasoning(msg: Any) -> bool:
    content = msg.get("content") if isinstance(msg, dict) else None
    return isinstance(content, dict) and content.get("content_type") in _REASONING


def _node_time(node: dict[str, Any]) -> float:
    t = (node.get("message") or {}).get("create_time") if isinstance(node.get("message"), dict) else None
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else 0.0


def _message(msg: Any, where: str, part_chars: int, started: Any, out: Parsed) -> dict[str, Any] | None:
    if msg is None:  # the root node holds none
        return None
    if not isinstance(msg, dict):
        out.skipped.append(Skipped(where, f"a message is an object, got {type(msg).__name__}"))
        return None
    meta: dict[str, Any] = msg["metadata"] if isinstance(msg.get("metadata"), dict) else {}
    author: dict[str, Any] = msg["author"] if isinstance(msg.get("author"), dict) else {}
    role = _ROLES.get(str(author.get("role")))
    if role is None:
        out.skipped.append(Skipped(where, f"author.role {clean(str(author.get('role')))[:30]!r} is none of "
                                          "user, assistant, system, tool"))
        return None
    if meta.get("is_visually_hidden_from_conversation"):
        return None
    try:
        text, kept, kind = _content(msg.get("content"), where, part_chars)
        created = iso(when(msg.get("create_time"), f"{where}.create_time")) or started
    except ValidationError as exc:
        out.skipped.append(Skipped(where, str(exc)))
        return None
    if not text.strip():
        if role == "system" or not kept:  # an empty system prompt, an empty placeholder turn
            return None
        text = f"[{kind}]"
    md: dict[str, Any] = {"source": SOURCE, "content_type": kind}
    if isinstance(msg.get("id"), str):
        md["message_id"] = clean(msg["id"])[:200]
    if kept:
        md["parts"] = kept
    if isinstance(msg.get("recipient"), str) and msg["recipient"] != "all":  # a call to a tool
        md["recipient"] = clean(msg["recipient"])[:200]
    name = author.get("name")
    return {"role": role, "content": text, "created_at": created, "metadata": md,
            **({"name": clean(name)[:200]} if isinstance(name, str) and name else {})}


def _content(content: Any, where: str, part_chars: int) -> tuple[str, list[Any], str]:
    """(text, non-text parts kept as metadata, content_type). `text` and `multimodal_text` give
    their string parts; a voice part its transcript; `code`, `execution_output`, a quote or a
    browsing result their `text` / `result`; any other part or field is kept, not dropped."""
    if not isinstance(content, dict):
        raise ValidationError(f"{where}.content", f"must be an object, got {type(content).__name__}")
    kind = content.get("content_type")
    kind = clean(kind)[:60] if isinstance(kind, str) else "unknown"
    texts: list[str] = []
    kept: list[Any] = []
    parts = content.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, str):
                texts.append(clean(part))
            elif isinstance(part, dict) and part.get("content_type") in _SPOKEN and isinstance(part.get("text"), str):
                texts.append(clean(part["text"]))
            elif part is not None:  # an image pointer, a file, a number: kept, said in the text
                kept.append(bounded(part, part_chars))
                if isinstance(part, dict) and "image" in str(part.get("content_type", "")):
                    texts.append("[image]")
    elif parts is not None:
        kept.append(bounded(parts, part_chars))
    for key in ("text", "result"):
        if isinstance(content.get(key), str):
            texts.append(clean(content[key]))
    extra = {k: v for k, v in content.items() if k not in ("content_type", "parts", "text", "result")}
    if extra:  # a quote's url and title, code's language, a thought's summary
        kept.append(bounded(extra, part_chars))
    return "\n".join(t for t in texts if t), kept, kind
