"""Messages in and out: what `add_messages` accepts, checked field by field, and turns given
back to a model as chat messages.

In: a message as a dict, a `Message`, or an OpenAI / Anthropic SDK object (content parts, a
tool's `tool_call_id`, an assistant's calls alone) becomes `Message` fields; every field is
checked by `memlane.validate`, an error naming `messages[i].field`, and a call's count and
size are bounded before anything is stored (issue 18). Out: a context's window as OpenAI chat
messages, the tool calls and their answers round-tripping.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from memlane import validate
from memlane.config import MAX_ID_CHARS, StoreConfig
from memlane.errors import ValidationError
from memlane.models import Message, Role


def check_messages(messages: Any, cfg: StoreConfig, field: str = "messages", cap: int | None = None) -> list[Message]:
    """A non-empty list of messages, each checked (`check_message`); with `cap`, more than
    that many is refused before the rest is read (a flood costs no more than the cap)."""
    if isinstance(messages, str | bytes | dict | Message) or not isinstance(messages, Iterable):
        raise ValidationError(field, f"must be a list of messages, got {type(messages).__name__}")
    msgs = []
    for i, m in enumerate(messages):
        if cap is not None and i >= cap:
            check_batch(i + 1, 0, cfg)
        msgs.append(check_message(i, m, cfg, field))
    if not msgs:
        raise ValidationError(field, "must contain at least one message")
    return msgs


def check_batch(count: int, chars: int, cfg: StoreConfig) -> None:
    """One call's messages within `store.max_messages_per_call` and `store.max_call_chars`."""
    validate.batch("messages", count, chars, max_count=(cfg.max_messages_per_call, "store.max_messages_per_call"),
                   max_chars=(cfg.max_call_chars, "store.max_call_chars"), bulk="import")


def check_message(index: int, raw: Any, cfg: StoreConfig, field: str = "messages") -> Message:
    """One message, every field checked by `memlane.validate`; errors name `messages[i].field`."""
    at = f"{field}[{index}]"
    if isinstance(raw, Message):
        raw = {k: getattr(raw, k) for k in Message.model_fields}
    raw = message_fields(at, raw)  # OpenAI shapes: content parts, tool_call_id, SDK objects
    if not isinstance(raw, dict):
        raise ValidationError(at, f"must be a dict or Message, got {type(raw).__name__}")
    unknown = [k for k in raw if k not in Message.model_fields]
    if unknown:
        raise ValidationError(f"{at}.{validate.key_name(unknown[0])}",
                              f"unknown field; known: {', '.join(Message.model_fields)}")
    calls = validate.tool_calls(f"{at}.tool_calls", raw.get("tool_calls"), cfg) or None
    content = raw.get("content")
    content = "" if content is None and calls else content
    validate.text(f"{at}.content", content, cfg.max_turn_chars, setting="store.max_turn_chars",
                  required=not calls, controls=True)
    return Message(
        role=validate.choice(f"{at}.role", raw.get("role", "user"), get_args(Role)),
        content=content,
        name=validate.optional_text(f"{at}.name", raw.get("name"), MAX_ID_CHARS, controls=True),
        tool_calls=calls,
        created_at=validate.optional_when(f"{at}.created_at", raw.get("created_at")),
        metadata=validate.metadata(f"{at}.metadata", raw.get("metadata"), cfg),
    )


# fields of an OpenAI SDK message that carry nothing a turn keeps (when empty)
_IGNORED_FIELDS = ("refusal", "annotations", "audio", "function_call")
_PLACEHOLDER = {"image_url": "[image]", "image": "[image]", "input_image": "[image]", "input_audio": "[audio]",
                "audio": "[audio]", "file": "[file]", "document": "[document]"}
DESCRIBED = "content_from_tool_calls"  # turn metadata: the content only describes the calls


def message_fields(at: str, raw: Any) -> Any:
    """An OpenAI chat message (a dict or an SDK object) as `Message` fields: `content` as a
    list of parts becomes their text joined (an image part a placeholder such as "[image]"),
    a `tool` message's `tool_call_id` goes into `metadata`, an assistant message of calls
    alone gets them described as its text (so the traces search finds their arguments)."""
    if not isinstance(raw, dict) and callable(getattr(raw, "model_dump", None)):
        raw = raw.model_dump(exclude_none=True)  # the SDK's ChatCompletionMessage and friends
    if not isinstance(raw, dict):
        return raw  # the caller names the wrong type
    if raw.get("metadata") is not None and not isinstance(raw["metadata"], dict):
        raise ValidationError(f"{at}.metadata", f"must be an object, got {type(raw['metadata']).__name__}")
    if isinstance(raw.get("refusal"), str) and raw["refusal"] and not raw.get("content"):
        raw = {**raw, "content": raw["refusal"]}  # what the model said instead of an answer
    raw = {k: v for k, v in raw.items() if k not in _IGNORED_FIELDS or (v and k != "refusal")}
    content = raw.get("content")
    if isinstance(content, list):
        raw["content"] = _joined_parts(f"{at}.content", content)
    if "tool_call_id" in raw:
        call_id = raw.pop("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ValidationError(f"{at}.tool_call_id", f"must be a non-empty string, got {call_id!r}")
        raw["metadata"] = {**(raw.get("metadata") or {}), "tool_call_id": call_id}
    calls = raw.get("tool_calls")
    if isinstance(calls, list) and calls and not (raw.get("content") or "").strip():
        names = []
        for c in calls:
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict):
                names.append(f"{fn.get('name', '?')}({fn.get('arguments', '')})")
        if names:
            raw["content"] = "; ".join(names)
            raw["metadata"] = {**(raw.get("metadata") or {}), DESCRIBED: True}
    return raw


def _joined_parts(at: str, parts: list[Any]) -> str:
    out = []
    for j, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
            continue
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise ValidationError(f"{at}[{j}]", "must be a content part: an object with a \"type\" "
                                  "such as {\"type\": \"text\", \"text\": \"...\"}")
        kind = part["type"]
        if kind in ("text", "input_text", "output_text"):
            if not isinstance(part.get("text"), str):
                raise ValidationError(f"{at}[{j}].text", "must be a string")
            out.append(part["text"])
        elif kind == "tool_use":  # Anthropic's blocks: what was called and what came back, as text
            out.append(f"{part.get('name', '?')}({json.dumps(part.get('input'), ensure_ascii=False)})")
        elif kind == "tool_result":
            inner = part.get("content")
            out.append(_joined_parts(f"{at}[{j}].content", inner) if isinstance(inner, list) else str(inner or ""))
        else:
            out.append(_PLACEHOLDER.get(kind, f"[{kind[:40]}]"))
    return "\n".join(p for p in out if p)


def chat_messages(history: Sequence[Any]) -> list[dict[str, Any]]:
    """Window messages (`sessions.WindowMessage`) as OpenAI chat messages that an API accepts:
    an assistant's `tool_calls` and the `tool` replies with their `tool_call_id` round-trip
    when both halves are in the window; a half without the other is rendered as text."""
    answered = {str(m.turn.metadata.get("tool_call_id")) for m in history
                if m.turn.role == "tool" and m.turn.metadata.get("tool_call_id")}
    called: set[str] = set()
    out: list[dict[str, Any]] = []
    for m in history:
        turn = m.turn
        ids = [str(c.get("id")) for c in turn.tool_calls or [] if isinstance(c, dict) and c.get("id")]
        if turn.role == "assistant" and ids and len(ids) == len(turn.tool_calls or []) and set(ids) <= answered:
            called.update(ids)
            text = None if turn.metadata.get(DESCRIBED) else m.content
            out.append({"role": "assistant", "content": text, "tool_calls": turn.tool_calls})
        elif turn.role == "tool" and str(turn.metadata.get("tool_call_id")) in called:
            msg = {"role": "tool", "tool_call_id": str(turn.metadata["tool_call_id"]), "content": m.content}
            out.append({**msg, "name": turn.name} if turn.name else msg)
        else:
            out.append(m.chat())
    return out
