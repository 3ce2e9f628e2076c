"""Reading conversation files: LoCoMo JSON, OpenAI-messages JSON / JSONL, and memlane's
own sample format. Parsing only; `Memory.import_conversations` stores what this returns."""

from __future__ import annotations

import hashlib
import json
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlane import plugins
from memlane.errors import ConfigError, ValidationError


@dataclass
class Conversation:
    """One session's messages, ready for `Memory.add_messages`."""

    session_id: str
    messages: list[dict[str, Any]]
    user_id: str | None = None  # LoCoMo: one scope per conversation when asked for
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the file it came from (its name): part of each message's import identity


@dataclass
class ConversationImport:
    """What `Memory.import_conversations` did: turns stored, and turns skipped because an
    earlier import of the same file (a retry after a crash, say) already stored them."""

    sessions: int
    turns: int
    skipped: int


def message_key(source: str, session_id: str, index: int, role: str, content: str) -> str:
    """A message's stable identity in an import: which file, which session, where in it, who
    said what. Importing the same file again yields the same keys, so nothing is stored twice."""
    raw = json.dumps([source, session_id, index, role, content], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def read_file(path: Path, max_bytes: int) -> list[Conversation]:
    """Parse any supported conversation file; errors name the file and the line."""
    path = Path(path)
    text = read_text(path, max_bytes)
    if path.suffix.lower() == ".jsonl":
        convs = _from_jsonl(text, path)
    else:
        convs = parse(_loads(text, f"{path}"), str(path))
    for c in convs:
        c.source = path.name
    return convs


def read_text(path: Path, max_bytes: int) -> str:
    """A file a person handed in, as text; else a ValidationError("file") saying what is wrong
    with it: missing, a directory or device, unreadable, too large, not UTF-8, or empty."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ValidationError("file", f"{path} does not exist") from None
    except (OSError, ValueError) as exc:  # permission, a name too long, a NUL in the path
        raise ValidationError("file", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValidationError("file", f"{path} is a directory; give a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValidationError("file", f"{path} is not a regular file (a device, pipe or socket); give a file")
    if st.st_size > max_bytes:
        raise ValidationError("file", f"{path} is {st.st_size} bytes; the limit is {max_bytes} (store.max_import_bytes)")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError("file", f"{path} is not UTF-8 text (byte {exc.start}); convert it to UTF-8") from None
    except OSError as exc:
        raise ValidationError("file", f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        raise ValidationError("file", f"{path} is empty")
    return text


def _loads(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("file", f"{where}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ValidationError("file", f"{where}: holds an integer too long to read ({str(exc).split(':')[0]})") from None
    except RecursionError:
        raise ValidationError("file", f"{where}: JSON nested too deeply to read") from None


def parse(data: Any, origin: str = "data") -> list[Conversation]:
    """Conversations from parsed JSON in any supported format; a malformed part is a
    ValidationError naming it (`sessions[2].messages`, `session_3[4].speaker`)."""
    if isinstance(data, dict) and "sessions" in data:
        if not isinstance(data["sessions"], list):
            raise ValidationError("sessions", f"{origin}: must be a list of sessions, got {type(data['sessions']).__name__}")
        return [_own_session(s, i, origin) for i, s in enumerate(data["sessions"])]
    if _is_locomo(data):
        return locomo_sessions(data)
    if isinstance(data, list) and data and all(_is_locomo(d) for d in data):
        return [c for i, d in enumerate(data) for c in locomo_sessions(d, prefix=f"c{i}-")]
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        sid = _session_id(data.get("session_id"), "import-1", "session_id", origin)
        return [Conversation(sid, _messages(data["messages"], origin))]
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return [Conversation("import-1", _messages(data, origin))]
    for name, parse_plugin in plugins.load_all("importers").items():  # installed packages' formats
        found = parse_plugin(data, origin)
        if found is not None:
            if not isinstance(found, list) or not all(isinstance(c, Conversation) for c in found):
                raise ConfigError(f"the importer plugin {name!r} returned {type(found).__name__}, "
                                  "not a list of memlane.importers.Conversation")
            return found
    raise ValidationError(
        "file",
        f"{origin}: not a known conversation format (LoCoMo JSON, a list of OpenAI messages, "
        '{"messages": [...]}, {"sessions": [...]}, JSONL with one message per line, or an installed '
        "importer plugin's)",
    )


def _session_id(value: Any, default: str, name: str, origin: str) -> str:
    if value is None or value == "":
        return default
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValidationError(name, f"{origin}: a session id is text, got {type(value).__name__}")
    return str(value)


def _own_session(s: Any, i: int, origin: str) -> Conversation:
    if not isinstance(s, dict) or not isinstance(s.get("messages"), list):
        raise ValidationError(f"sessions[{i}]", f"{origin}: each session is an object with a messages list")
    msgs = _messages(s["messages"], origin, f"sessions[{i}].messages")
    start = s.get("started_at")
    if start:
        t0 = _iso(start, f"sessions[{i}].started_at")
        for j, m in enumerate(msgs):
            m.setdefault("created_at", (t0 + timedelta(minutes=j)).isoformat())
    return Conversation(_session_id(s.get("session_id"), f"import-{i + 1}", f"sessions[{i}].session_id", origin), msgs)


def _from_jsonl(text: str, path: Path) -> list[Conversation]:
    sessions: dict[str, list[dict[str, Any]]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        msg = _loads(line, f"{path}: line {n}")
        if not isinstance(msg, dict) or "role" not in msg:
            raise ValidationError("file", f"{path}: line {n} is not a message object with a role")
        sid = _session_id(msg.pop("session_id", None), "import-1", f"line {n}.session_id", str(path))
        sessions.setdefault(sid, []).append(msg)
    if not sessions:
        raise ValidationError("file", f"{path} holds no messages")
    return [Conversation(sid, _messages(msgs, str(path))) for sid, msgs in sessions.items()]


def _messages(raw: list[Any], origin: str, name: str = "messages") -> list[dict[str, Any]]:
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise ValidationError(f"{name}[{i}]", f"{origin}: must be an object with role and content")
        keep = {k: v for k, v in m.items() if k in ("role", "content", "name", "tool_calls", "created_at", "metadata")}
        if keep.get("content") is not None and not isinstance(keep["content"], str):
            try:  # multimodal parts, kept as text
                keep["content"] = json.dumps(keep["content"], ensure_ascii=False)
            except (RecursionError, ValueError, TypeError):
                raise ValidationError(f"{name}[{i}].content", f"{origin}: content nested too deeply") from None
        out.append(keep)
    return out


def _iso(value: Any, field_name: str) -> datetime:
    if not isinstance(value, str):
        raise ValidationError(field_name, f"must be an ISO 8601 time as text, got {type(value).__name__}")
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(field_name, f"not an ISO 8601 time: {value[:60]!r}") from None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


# ---- LoCoMo ---------------------------------------------------------------------------


def _is_locomo(d: Any) -> bool:
    return isinstance(d, dict) and "speaker_a" in d and "session_1" in d or (
        isinstance(d, dict) and isinstance(d.get("conversation"), dict) and "speaker_a" in d["conversation"]
    )


def locomo_date(text: Any, field_name: str = "session_date_time") -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (LoCoMo's session date format)."""
    if not isinstance(text, str):
        raise ValidationError(field_name, f"a LoCoMo date is text such as '1:56 pm on 8 May, 2023', "
                                          f"got {type(text).__name__}")
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValidationError(field_name, f"unrecognised LoCoMo date {text[:60]!r}")


def locomo_turn_text(turn: dict[str, Any]) -> str:
    """'speaker: text', with an image caption appended when the turn shared a picture."""
    text = f"{turn['speaker']}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def _locomo_turn(t: Any, where: str) -> dict[str, Any]:
    if not isinstance(t, dict):
        raise ValidationError(where, f"a LoCoMo turn is an object with speaker and text, got {type(t).__name__}")
    for key in ("speaker", "text", "blip_caption"):
        if t.get(key) is not None and not isinstance(t[key], str):
            raise ValidationError(f"{where}.{key}", f"must be text, got {type(t[key]).__name__}")
    if not t.get("speaker"):
        raise ValidationError(f"{where}.speaker", "a LoCoMo turn needs a speaker")
    return t


def locomo_sessions(conv: dict[str, Any], prefix: str = "") -> list[Conversation]:
    """Every session of one LoCoMo conversation, each turn dated by its session."""
    c = conv["conversation"] if isinstance(conv.get("conversation"), dict) else conv
    speaker_a = c.get("speaker_a")
    if not isinstance(speaker_a, str):
        raise ValidationError(f"{prefix}speaker_a", "must be the first speaker's name")
    out: list[Conversation] = []
    n = 1
    while f"session_{n}" in c or f"session_{n}_date_time" in c:
        name = f"{prefix}session_{n}"
        turns = c.get(f"session_{n}") or []
        if not isinstance(turns, list):
            raise ValidationError(name, f"must be a list of turns, got {type(turns).__name__}")
        if turns:
            start = locomo_date(c.get(f"session_{n}_date_time"), f"{name}_date_time")
            checked = [_locomo_turn(t, f"{name}[{j}]") for j, t in enumerate(turns)]
            msgs = [
                {
                    "role": "user" if t["speaker"] == speaker_a else "assistant",
                    "name": t["speaker"],
                    "content": locomo_turn_text(t),
                    "created_at": (start + timedelta(seconds=30 * j)).isoformat(),
                    "metadata": {"dia_id": t.get("dia_id")},
                }
                for j, t in enumerate(checked)
            ]
            out.append(Conversation(name, msgs, meta={"date": c[f"session_{n}_date_time"]}))
        n += 1
    return out
