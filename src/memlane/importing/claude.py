"""Claude.ai's data export, `conversations.json`: one session per conversation.

A message's text comes from its `content` blocks of type "text" (the older `text` field when
it has none); tool use and tool results are kept as turn metadata. An attachment's
`extracted_content` (the text of a file the person dropped in) is appended to the turn's
text, because it is part of what the person said and memlane searches and extracts from a
turn's text, not its metadata; it is cut so the turn stays within `store.max_turn_chars`.
"""

from __future__ import annotations

from typing import Any

from memlane.config import StoreConfig
from memlane.errors import ValidationError
from memlane.importers import Conversation
from memlane.importing.common import (
    Parsed,
    Skipped,
    bounded,
    clean,
    iso,
    records,
    text_of,
    when,
)

SOURCE = "claude"
_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def looks_like(data: Any) -> bool:
    first = data[0] if isinstance(data, list) and data else None
    return isinstance(first, dict) and isinstance(first.get("chat_messages"), list)


def parse(data: Any, origin: str, cfg: StoreConfig) -> Parsed:
    out = Parsed()
    for i, conv in enumerate(records(data, "conversations", origin)):
        where = f"conversations[{i}]"
        try:
            if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
                raise ValidationError(where, "a conversation is an object with a chat_messages list")
            name = text_of(conv.get("name"), f"{where}.name")
            sid = conv.get("uuid")
            if not isinstance(sid, str) or not sid.strip():
                raise ValidationError(f"{where}.uuid", "every conversation has a uuid; this one has none")
            started = when(conv.get("created_at"), f"{where}.created_at")
            updated = when(conv.get("updated_at"), f"{where}.updated_at")
        except ValidationError as exc:
            out.skipped.append(Skipped(f"{origin}: {where}", str(exc)))
            continue
        msgs = []
        for j, m in enumerate(conv["chat_messages"]):
            try:
                msg = _message(m, f"{where}.chat_messages[{j}]", cfg, started)
            except ValidationError as exc:
                out.skipped.append(Skipped(f"{origin}: {where}.chat_messages[{j}]", str(exc)))
                continue
            if msg is not None:
                msgs.append(msg)
        if not msgs:
            out.skipped.append(Skipped(f"{origin}: {where} ({name[:60]!r})", "holds no message to import"))
            continue
        sid = clean(sid)
        out.titles[sid] = name
        out.session_meta[sid] = {"source": SOURCE, "title": name, "created_at": iso(started), "updated_at": iso(updated)}
        out.conversations.append(Conversation(sid, msgs, source=SOURCE, meta={"title": name}))
    return out


def _message(m: Any, where: str, cfg: StoreConfig, started: Any) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        raise ValidationError(where, f"a message is an object, got {type(m).__name__}")
    role = _ROLES.get(str(m.get("sender")))
    if role is None:
        raise ValidationError(f"{where}.sender", f"{clean(str(m.get('sender')))[:30]!r} is neither human nor assistant")
    texts, kept = [], []
    blocks = m.get("content")
    if isinstance(blocks, list):
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(clean(b["text"]))
            elif b is not None:  # tool_use, tool_result, thinking, an image: kept, not dropped
                kept.append(bounded(b, cfg.import_part_chars))
    if not any(t.strip() for t in texts):
        texts = [text_of(m.get("text"), f"{where}.text")]
    text = "\n".join(t for t in texts if t)
    md: dict[str, Any] = {"source": SOURCE}
    if isinstance(m.get("uuid"), str):
        md["message_id"] = clean(m["uuid"])[:200]
    if kept:
        md["blocks"] = kept
    files = []
    for k, att in enumerate(m.get("attachments") or []):
        if not isinstance(att, dict):
            continue
        fname = clean(str(att.get("file_name") or f"attachment {k + 1}"))[:200]
        files.append(fname)
        body = att.get("extracted_content")
        if isinstance(body, str) and body.strip():
            room = cfg.max_turn_chars - len(text) - len(fname) - 20
            if room > 0:
                text += f"\n\n[attachment: {fname}]\n{clean(body)[:room]}"
    files += [clean(str(f.get("file_name")))[:200] for f in m.get("files") or [] if isinstance(f, dict)
              and f.get("file_name") and clean(str(f.get("file_name")))[:200] not in files]
    if files:
        md["attachments"] = files
    if not text.strip():
        if not kept and not files:
            return None  # an empty turn (a cancelled reply)
        text = "[" + (", ".join(files) if files else "tool use") + "]"
    created = when(m.get("created_at"), f"{where}.created_at") or started
    return {"role": role, "content": text, "created_at": iso(created), "metadata": md}
