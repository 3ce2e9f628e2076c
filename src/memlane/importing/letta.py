"""Letta agent files (`.af`, JSON): the agent's messages and its memory blocks.

Two generations are read: the current one, {"agents": [...], "blocks": [...]} where an agent
names its blocks by `block_ids` and its context by `in_context_message_ids`, and the first
one, a single agent object with `core_memory` blocks and `in_context_message_indices`.

- Messages → the turns of one session per agent ("letta-<agent id>"), dated by their
  `created_at`. The system prompt (a system message) is not a turn: it is kept in the
  session's metadata. MemGPT-style user messages ({"type": "user_message", "message": …})
  are unwrapped and its heartbeats / login notices skipped; an assistant's `send_message`
  call becomes its reply, its inner thoughts and other tool calls the turn's metadata. Each
  turn says whether it was in the agent's context window (`metadata.in_context`).
- The "human" block → pinned memories, one per line or bullet (what the agent knew of the
  person, which memlane must never let fade). A line "Key: ?" (an unknown the agent kept as
  a placeholder) is skipped.
- Every other block ("persona", a task list, …) → one memory per block, its text prefixed
  by the block's label, not pinned: it is about the agent or the work, not facts about the
  person, and is kept whole because it is one description, not a list of facts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memlane.errors import ValidationError
from memlane.importers import Conversation
from memlane.importing.common import MemoryItem, Parsed, Skipped, bounded, clean, iso, text_of, when

SOURCE = "letta"
_ROLES = ("user", "assistant", "tool")
_NOT_SAID = ("heartbeat", "login", "system_alert")  # MemGPT's own notices in the user role
_REPLY_TOOLS = ("send_message",)
_HUMAN = "human"
# the ids an agent file gives its own records ("agent-0", "message-3"): they name a record
# within that one file, so every single-agent export calls its agent "agent-0"
_FILE_LOCAL = re.compile(r"^[a-z]+-\d+$")


def looks_like(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    agents = data.get("agents")
    if isinstance(agents, list) and agents and isinstance(agents[0], dict) and "messages" in agents[0]:
        return True
    return "messages" in data and ("core_memory" in data or "in_context_message_indices" in data)


def parse(data: Any, origin: str, categories: list[str], default_category: str, max_chars: int,
          part_chars: int) -> Parsed:
    if not looks_like(data):
        raise ValidationError("file", f"{origin}: not a Letta agent file (no agents with messages, nor an agent "
                                      "with core_memory)")
    out = Parsed()
    shared = {b["id"]: b for b in data.get("blocks") or [] if isinstance(b, dict) and isinstance(b.get("id"), str)}
    agents = data["agents"] if isinstance(data.get("agents"), list) else [data]
    fact = next((c for c in ("fact", "core", "knowledge") if c in categories), default_category)
    for a, agent in enumerate(agents):
        where = f"{origin}: agents[{a}]"
        if not isinstance(agent, dict):
            out.skipped.append(Skipped(where, f"an agent is an object, got {type(agent).__name__}"))
            continue
        name = clean(agent["name"])[:200] if isinstance(agent.get("name"), str) else f"agent {a + 1}"
        # a real id names the agent wherever it was exported; a file-local one does not, and
        # two agents' files would share a session: then the agent's name tells them apart
        aid = clean(agent["id"]) if isinstance(agent.get("id"), str) and agent["id"] else name
        aid = name if _FILE_LOCAL.match(aid) else aid
        blocks = [shared[b] for b in agent.get("block_ids") or [] if isinstance(b, str) and b in shared]
        blocks += [b for b in (agent.get("core_memory") or agent.get("memory_blocks") or []) if isinstance(b, dict)]
        if not agent.get("block_ids") and not blocks and len(agents) == 1:
            blocks = list(shared.values())
        for k, block in enumerate(blocks):
            _block(block, f"{where}.blocks[{k}]", name, fact, default_category, max_chars, out)
        _session(agent, where, f"letta-{aid}", name, part_chars, out)
    return out


def _block(block: dict[str, Any], where: str, agent: str, fact: str, default: str, max_chars: int,
           out: Parsed) -> None:
    label = block.get("label")
    value = block.get("value")
    if not isinstance(label, str) or not isinstance(value, str):
        out.skipped.append(Skipped(where, "a memory block has a label and a value, both text"))
        return
    label, value = clean(label)[:100], clean(value)
    md = {"source": SOURCE, "letta_block": label, "letta_agent": agent}
    created, updated = _time(block.get("created_at")), _time(block.get("updated_at"))
    if label == _HUMAN:
        for n, line in enumerate(value.splitlines(), 1):
            fact_text = line.strip().lstrip("-*•").strip()
            if not fact_text or fact_text.endswith(": ?") or fact_text == "?":
                continue
            # keyed without the agent: a fact about the person that two agents knew is one memory
            out.memories.append(MemoryItem(fact_text[:max_chars], f"{SOURCE}:{label}:{fact_text}", fact, created,
                                           updated, pinned=True, metadata=dict(md), where=f"{where} ({label}) line {n}"))
        return
    if value.strip():
        text = f"{label} ({agent}): {value.strip()}"[:max_chars]
        out.memories.append(MemoryItem(text, f"{SOURCE}:{agent}:{label}", default, created, updated, metadata=md,
                                       where=f"{where} ({label})"))


def _time(value: Any) -> Any:
    """A block's time (first-generation files carry them), or None when absent or unreadable:
    a memory without its source time is dated by the import, not refused."""
    try:
        return when(value, "block time")
    except ValidationError:
        return None


def _session(agent: dict[str, Any], where: str, sid: str, name: str, part_chars: int, out: Parsed) -> None:
    raw = agent.get("messages")
    if not isinstance(raw, list):
        out.skipped.append(Skipped(f"{where}.messages", "must be a list of messages"))
        return
    in_ids = {i for i in agent.get("in_context_message_ids") or [] if isinstance(i, str)}
    in_idx = {i for i in agent.get("in_context_message_indices") or [] if isinstance(i, int)}
    msgs = []
    receipts: set[str] = set()  # the call ids of reply-tool calls: their returns are receipts
    for j, m in enumerate(raw):
        at = f"{where}.messages[{j}]"
        try:
            msg = _message(m, at, part_chars, receipts)
        except ValidationError as exc:
            out.skipped.append(Skipped(at, str(exc)))
            continue
        if msg is not None:
            mid = m.get("id")
            msg["metadata"]["in_context"] = (mid in in_ids) if in_ids else (j in in_idx)
            msgs.append(msg)
    system = text_of(agent.get("system"), f"{where}.system")
    out.session_meta[sid] = {"source": SOURCE, "title": f"Letta agent {name}", "agent": name,
                             **({"system": system[:part_chars]} if system else {})}
    out.titles[sid] = f"Letta agent {name}"
    if msgs:
        out.conversations.append(Conversation(sid, msgs, source=SOURCE, meta={"title": name}))


def _text(m: dict[str, Any], where: str) -> str:
    content = m.get("content")
    if isinstance(content, str):
        return clean(content)
    if isinstance(content, list):
        return "\n".join(clean(c["text"]) for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))
    return text_of(m.get("text"), f"{where}.text")


def _message(m: Any, where: str, part_chars: int, receipts: set[str]) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        raise ValidationError(where, f"a message is an object, got {type(m).__name__}")
    role = m.get("role")
    if role == "system":
        return None  # the system prompt: the session's metadata
    if role not in _ROLES:
        raise ValidationError(f"{where}.role", f"{clean(str(role))[:30]!r} is none of user, assistant, tool, system")
    text = _text(m, where)
    md: dict[str, Any] = {"source": SOURCE}
    if role == "user":
        wrapped = _json_object(text)
        if wrapped is not None and isinstance(wrapped.get("type"), str):
            if wrapped["type"] in _NOT_SAID:
                return None
            if isinstance(wrapped.get("message"), str):
                text = clean(wrapped["message"])
    calls = m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []
    if role == "assistant" and calls:
        replies, other = [], []
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            args = _json_object(fn.get("arguments")) if isinstance(fn, dict) else None
            if isinstance(fn, dict) and fn.get("name") in _REPLY_TOOLS and args and isinstance(args.get("message"), str):
                replies.append(clean(args["message"]))
                if isinstance(call.get("id"), str):
                    receipts.add(call["id"])
            else:
                other.append(bounded(call, part_chars))
        if text.strip() and replies:
            md["thoughts"] = text[:part_chars]  # the inner monologue, not what the agent said
            text = ""
        text = "\n".join([t for t in [text, *replies] if t.strip()])
        if other:
            md["tool_calls"] = other
    if role == "tool" and (m.get("name") in _REPLY_TOOLS or m.get("tool_call_id") in receipts):
        return None  # the reply tool's "OK" receipt: the reply itself is the assistant's turn
    if role == "tool" and isinstance(m.get("name"), str):
        md["tool"] = clean(m["name"])[:200]
    if not text.strip():
        if "tool_calls" not in md:
            return None
        text = "[tool call]"
    if isinstance(m.get("id"), str):
        md["message_id"] = clean(m["id"])[:200]
    return {"role": role, "content": text, "created_at": iso(when(m.get("created_at"), f"{where}.created_at")),
            "metadata": md}


def _json_object(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return v if isinstance(v, dict) else None
