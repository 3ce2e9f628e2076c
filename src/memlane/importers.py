"""Reading conversation files: LoCoMo JSON, OpenAI-messages JSON / JSONL, and memlane's
own sample format. Parsing only; `Memory.import_conversations` stores what this returns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlane.errors import ValidationError


@dataclass
class Conversation:
    """One session's messages, ready for `Memory.add_messages`."""

    session_id: str
    messages: list[dict[str, Any]]
    user_id: str | None = None  # LoCoMo: one scope per conversation when asked for
    meta: dict[str, Any] = field(default_factory=dict)


def read_file(path: Path, max_bytes: int) -> list[Conversation]:
    """Parse any supported conversation file; errors name the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise ValidationError("file", f"{path} does not exist or is not a file")
    size = path.stat().st_size
    if size > max_bytes:
        raise ValidationError("file", f"{path} is {size} bytes; the limit is {max_bytes} (store.max_import_bytes)")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError("file", f"{path} is not UTF-8 text (byte {exc.start}); convert it to UTF-8") from None
    if path.suffix.lower() == ".jsonl":
        return _from_jsonl(text, path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("file", f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse(data, str(path))


def parse(data: Any, origin: str = "data") -> list[Conversation]:
    if isinstance(data, dict) and "sessions" in data:
        return [_own_session(s, i, origin) for i, s in enumerate(data["sessions"])]
    if _is_locomo(data):
        return locomo_sessions(data)
    if isinstance(data, list) and data and all(_is_locomo(d) for d in data):
        return [c for i, d in enumerate(data) for c in locomo_sessions(d, prefix=f"c{i}-")]
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return [Conversation(str(data.get("session_id") or "import-1"), _messages(data["messages"], origin))]
    if isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data):
        return [Conversation("import-1", _messages(data, origin))]
    raise ValidationError(
        "file",
        f"{origin}: not a known conversation format (LoCoMo JSON, a list of OpenAI messages, "
        '{"messages": [...]}, {"sessions": [...]}, or JSONL with one message per line)',
    )


def _own_session(s: Any, i: int, origin: str) -> Conversation:
    if not isinstance(s, dict) or not isinstance(s.get("messages"), list):
        raise ValidationError(f"sessions[{i}]", f"{origin}: each session needs a messages list")
    msgs = _messages(s["messages"], origin)
    start = s.get("started_at")
    if start:
        t0 = _iso(start, f"sessions[{i}].started_at")
        for j, m in enumerate(msgs):
            m.setdefault("created_at", (t0 + timedelta(minutes=j)).isoformat())
    return Conversation(str(s.get("session_id") or f"import-{i + 1}"), msgs)


def _from_jsonl(text: str, path: Path) -> list[Conversation]:
    sessions: dict[str, list[dict[str, Any]]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError("file", f"{path}: line {n} is not valid JSON: {exc.msg}") from None
        if not isinstance(msg, dict) or "role" not in msg:
            raise ValidationError("file", f"{path}: line {n} is not a message object with a role")
        sid = str(msg.pop("session_id", None) or "import-1")
        sessions.setdefault(sid, []).append(msg)
    if not sessions:
        raise ValidationError("file", f"{path} holds no messages")
    return [Conversation(sid, _messages(msgs, str(path))) for sid, msgs in sessions.items()]


def _messages(raw: list[Any], origin: str) -> list[dict[str, Any]]:
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise ValidationError(f"messages[{i}]", f"{origin}: must be an object with role and content")
        keep = {k: v for k, v in m.items() if k in ("role", "content", "name", "tool_calls", "created_at", "metadata")}
        if keep.get("content") is not None and not isinstance(keep["content"], str):
            keep["content"] = json.dumps(keep["content"], ensure_ascii=False)  # multimodal parts, kept as text
        out.append(keep)
    return out


def _iso(value: str, field_name: str) -> datetime:
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(field_name, f"not an ISO 8601 time: {value!r}") from None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


# ---- LoCoMo ---------------------------------------------------------------------------


def _is_locomo(d: Any) -> bool:
    return isinstance(d, dict) and "speaker_a" in d and "session_1" in d or (
        isinstance(d, dict) and isinstance(d.get("conversation"), dict) and "speaker_a" in d["conversation"]
    )


def locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (LoCoMo's session date format)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValidationError("session_date_time", f"unrecognised LoCoMo date {text!r}")


def locomo_turn_text(turn: dict[str, Any]) -> str:
    """'speaker: text', with an image caption appended when the turn shared a picture."""
    text = f"{turn['speaker']}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def locomo_sessions(conv: dict[str, Any], prefix: str = "") -> list[Conversation]:
    """Every session of one LoCoMo conversation, each turn dated by its session."""
    c = conv.get("conversation", conv)
    out: list[Conversation] = []
    n = 1
    while f"session_{n}" in c or f"session_{n}_date_time" in c:
        turns = c.get(f"session_{n}") or []
        if turns:
            start = locomo_date(c[f"session_{n}_date_time"])
            msgs = [
                {
                    "role": "user" if t["speaker"] == c["speaker_a"] else "assistant",
                    "name": t["speaker"],
                    "content": locomo_turn_text(t),
                    "created_at": (start + timedelta(seconds=30 * j)).isoformat(),
                    "metadata": {"dia_id": t.get("dia_id")},
                }
                for j, t in enumerate(turns)
            ]
            out.append(Conversation(f"{prefix}session_{n}", msgs, meta={"date": c[f"session_{n}_date_time"]}))
        n += 1
    return out
