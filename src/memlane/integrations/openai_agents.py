"""memlane in the OpenAI Agents SDK (`pip install 'memlane[openai-agents]'`).

Three pieces, each the SDK's own interface:

- `MemlaneSession` — the SDK's `Session` protocol on memlane's turns, so
  `Runner.run(agent, text, session=MemlaneSession("chat-1", memory, user_id="lin"))` keeps
  the conversation the way `SQLiteSession` does, and memlane searches and extracts from it;
- `memlane_tools(memory, user_id=...)` — memlane's agent tools (`memlane.tools`: the same
  schemas, the same handlers) as the SDK's `FunctionTool`s;
- `memlane_instructions(memory, user_id=..., session=...)` — a dynamic `instructions`
  callable: the agent's own instructions plus `build_context` for the user's latest message.

    memory = Memory("~/.memlane")
    session = MemlaneSession("chat-1", memory, user_id="lin")
    agent = Agent(name="Assistant", tools=memlane_tools(memory, user_id="lin", session=session),
                  instructions=memlane_instructions(memory, user_id="lin", session=session,
                                                    base="You are a helpful assistant."))
    result = await Runner.run(agent, "I'm allergic to peanuts", session=session)

An item the SDK hands over (a Responses-API input item: a message, a function call, its
output, a reasoning item …) becomes one turn whose text is what a person would read, and
the item itself is kept in the turn's metadata, so `get_items` returns it exactly as added.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from memlane import validate
from memlane.api import Memory
from memlane.config import StoreConfig
from memlane.errors import MissingExtra, NotFound, ValidationError
from memlane.models import Scope, Turn
from memlane.tools import TOOL_NAMES, MemoryTools

try:
    from agents import Agent, FunctionTool, RunContextWrapper
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - the extra is installed where the tests run
    raise MissingExtra("memlane.integrations.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'memlane[openai-agents]'") from exc

ITEM_KEY = "openai_agents_item"  # turn metadata: the SDK's item as it was added
TEXT_KEY = "openai_agents_text"  # turn metadata: which of the item's fields is the turn's text

# items whose text a person reads, by the SDK's type; the rest are described by their type
_MESSAGE_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


def _plain(item: Any, at: str, cfg: StoreConfig) -> dict[str, Any]:
    """The item as plain JSON (a dict, or an SDK model dumped), so it reads back equal. Its
    shape is checked without recursion first: it is kept one level down in the turn's
    metadata, so it may nest `store.max_metadata_depth` - 1 levels; a deeper or non-JSON item
    is refused with ValidationError naming where (not a RecursionError from json)."""
    if not isinstance(item, dict) and callable(getattr(item, "model_dump", None)):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, dict):
        raise ValidationError(at, f"must be a Responses input item (a dict), got {type(item).__name__}")
    # no size bound here: the text is checked as the turn's, the rest as metadata, each naming its setting
    validate.json_value(at, item, max_depth=max(1, cfg.max_metadata_depth - 1), max_bytes=sys.maxsize)
    return json.loads(json.dumps(item, ensure_ascii=False))  # tuples as lists, as they read back


def _parts_text(content: Any) -> str:
    """The text a person reads in a content-part list; images, files, audio as placeholders."""
    if isinstance(content, str):
        return content
    out = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = str(part.get("type", ""))
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            out.append(part["refusal"])
        elif kind:
            out.append(f"[{kind.removeprefix('input_')[:40]}]")
    return "\n".join(p for p in out if p)


def item_message(item: dict[str, Any]) -> dict[str, Any]:
    """One SDK item as a memlane message: role, the text a person reads, and the item in the
    metadata (its text field elided when it is the turn's text, so it is kept once)."""
    kind = item.get("type")
    stored = dict(item)
    text_field: str | None = None
    calls = None
    meta: dict[str, Any] = {}
    if "role" in item and kind in (None, "message"):
        role = _MESSAGE_ROLES.get(str(item["role"]), "user")
        text, text_field = _parts_text(item.get("content")), "content"
    elif kind == "function_call":
        role = "assistant"
        text = f"{item.get('name', '?')}({item.get('arguments', '')})"
        calls = [{"id": str(item.get("call_id", "")), "type": "function",
                  "function": {"name": str(item.get("name", "")), "arguments": str(item.get("arguments", ""))}}]
    elif kind == "function_call_output":
        role = "tool"
        text, text_field = _parts_text(item.get("output")), "output"
        meta["tool_call_id"] = str(item.get("call_id", ""))
    elif kind == "reasoning":
        role = "assistant"
        text = _parts_text(item.get("summary")) or "[reasoning]"
    else:  # hosted tools, computer use, MCP, compaction …: what happened, by name
        role = "tool" if str(kind).endswith("_output") else "assistant"
        text = f"[{str(kind)[:60]}]" + (f" {item['name']}" if isinstance(item.get("name"), str) else "")
    if not text.strip():  # a turn needs text; the item keeps its own (empty) field, read back as it was
        text = f"[empty {role} message]"
    if text_field is not None and isinstance(item.get(text_field), str) and item[text_field] == text:
        del stored[text_field]  # the turn's text is it: read back from there
        meta[TEXT_KEY] = text_field
    meta[ITEM_KEY] = stored
    return {"role": role, "content": text, "tool_calls": calls, "metadata": meta}


def turn_items(turn: Turn) -> list[dict[str, Any]]:
    """The SDK items a turn stands for: the one added through `MemlaneSession`, or, for a turn
    memlane got another way (`add_messages`, an import), the items it reads as."""
    stored = turn.metadata.get(ITEM_KEY)
    if isinstance(stored, dict):
        item = dict(stored)
        field = turn.metadata.get(TEXT_KEY)
        if isinstance(field, str):
            item[field] = turn.content
        return [item]
    if turn.role == "tool" and turn.metadata.get("tool_call_id"):
        return [{"type": "function_call_output", "call_id": str(turn.metadata["tool_call_id"]),
                 "output": turn.content}]
    items: list[dict[str, Any]] = []
    if turn.role == "assistant" and turn.tool_calls:
        for c in turn.tool_calls:
            fn = c.get("function") or {}
            items.append({"type": "function_call", "call_id": str(c.get("id", "")), "name": str(fn.get("name", "")),
                          "arguments": str(fn.get("arguments", ""))})
        if turn.metadata.get("content_from_tool_calls"):  # the text only described the calls
            return items
    role = "user" if turn.role == "tool" else turn.role  # a tool answer with no call to pair
    return [{"role": role, "content": turn.content}, *items]


class MemlaneSession:
    """The OpenAI Agents SDK's `Session` on memlane: a session's items are the turns of the
    memlane session `session_id` in the scope (`user_id`, `agent_id`).

    `pop_item` and `clear_session` really forget: `Memory.delete_turns` / `delete_session`
    take the text out of every index, cache and file. Long-term memories already extracted
    from the conversation stay (forget those with `Memory.delete` or the `forget` tool)."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, memory: Memory, *, user_id: str, agent_id: str | None = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None) -> None:
        self.scope = Scope.of(user_id, agent_id)
        self.session_id = validate.ident("session_id", session_id)
        self.memory = memory
        self.user_id = self.scope.user_id
        self.agent_id = self.scope.agent_id or None
        self.session_settings = (SessionSettings(**session_settings) if isinstance(session_settings, dict)
                                 else session_settings or SessionSettings())

    # ---- the Session protocol ---------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order; with `limit`, the latest `limit` of them."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store the items as turns, in one transaction per `store.max_messages_per_call`."""
        if items:
            await asyncio.to_thread(self._add_items, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Forget the session's latest turn and return its item (None when the session is empty)."""
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Forget every turn of the session (its episodes and pending jobs too)."""
        await asyncio.to_thread(self._clear)

    # ---- sync work, in a worker thread ------------------------------------------------------

    def _get_items(self, limit: int | None) -> list[TResponseInputItem]:
        if limit is not None and limit == 0:
            return []
        if limit is None or limit < 0:  # a negative limit reads all, as SQLiteSession's does
            turns = self.memory.get_turns(self.session_id, user_id=self.user_id, agent_id=self.agent_id)
            return [i for t in turns for i in turn_items(t)]  # type: ignore[misc]
        # newest first from the (session, seq) index: a long session costs only `limit` turns
        items: list[dict[str, Any]] = []
        newest = self.memory.store.get_turns(self.scope, session_id=self.session_id, limit=limit, newest_first=True)
        for t in newest:
            items[:0] = turn_items(t)
        return items[-limit:]  # type: ignore[return-value]

    def _add_items(self, items: list[Any]) -> None:
        msgs = [item_message(_plain(item, f"items[{i}]", self.memory.config.store)) for i, item in enumerate(items)]
        step = self.memory.config.store.max_messages_per_call
        for start in range(0, len(msgs), step):
            self.memory.add_messages(self.session_id, msgs[start:start + step], user_id=self.user_id,
                                     agent_id=self.agent_id)

    def _pop_item(self) -> TResponseInputItem | None:
        while True:
            last = self.memory.store.get_turns(self.scope, session_id=self.session_id, limit=1, newest_first=True)
            if not last:
                return None
            try:
                self.memory.delete_turns([last[0].id], user_id=self.user_id, agent_id=self.agent_id)
            except NotFound:  # another process popped it first: take the next one
                continue
            return turn_items(last[0])[-1]  # type: ignore[return-value]

    def _clear(self) -> None:
        with contextlib.suppress(NotFound):  # nothing stored yet: already clear
            self.memory.delete_session(self.session_id, user_id=self.user_id, agent_id=self.agent_id)


def memlane_tools(memory: Memory, *, user_id: str, agent_id: str | None = None,
                  session: MemlaneSession | None = None, session_id: str | None = None,
                  names: Sequence[str] | None = None) -> list[FunctionTool]:
    """memlane's agent tools (`memlane.tools`) as the SDK's function tools, bound to one scope.

    `names` picks some (default: all of `memlane.tools.TOOL_NAMES`); `session` (or
    `session_id`) ties a remembered memory to the conversation it came from. A handler's
    error the model can fix comes back to it as `{"error": ...}`."""
    sid = session.session_id if session is not None else session_id
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, session_id=sid, names=names)
    out = []
    for schema in tools.schemas:
        fn = schema["function"]

        def invoke(name: str) -> Callable[[ToolContext[Any], str], Any]:
            async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
                result = await asyncio.to_thread(tools.call, name, arguments)
                return json.dumps(result, ensure_ascii=False)
            return on_invoke_tool

        # not strict: memlane's schemas have optional arguments, which strict mode forbids
        out.append(FunctionTool(name=fn["name"], description=fn["description"],
                                params_json_schema=fn["parameters"], on_invoke_tool=invoke(fn["name"]),
                                strict_json_schema=False))
    return out


def memlane_instructions(memory: Memory, *, user_id: str, agent_id: str | None = None,
                         session: MemlaneSession | None = None, base: str = "",
                         model: str | None = None) -> Callable[[RunContextWrapper[Any], Agent[Any]], Any]:
    """An `Agent(instructions=...)` callable: `base`, then memlane's context (the memory
    tools' description, scratchpad, core memories, the memories relevant to the user's
    latest message in `session`) without its history block — the session sends the history."""

    def render() -> str:
        query = None
        sid = session.session_id if session is not None else None
        if sid is not None:
            turns = memory.store.get_turns(Scope.of(user_id, agent_id), session_id=sid, limit=20, newest_first=True)
            query = next((t.content for t in turns if t.role == "user"), None)
        try:
            ctx = memory.build_context(sid, query, user_id=user_id, agent_id=agent_id, model=model)
        except NotFound:  # the session has no turn yet
            ctx = memory.build_context(None, query, user_id=user_id, agent_id=agent_id, model=model)
        return "\n\n".join(p for p in (base, ctx.render(include_history=False)) if p)

    async def instructions(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        return await asyncio.to_thread(render)

    return instructions


__all__ = ["ITEM_KEY", "TOOL_NAMES", "MemlaneSession", "item_message", "memlane_instructions", "memlane_tools",
           "turn_items"]
