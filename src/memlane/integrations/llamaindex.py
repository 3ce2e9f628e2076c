"""LlamaIndex's `Memory` with memlane as its long-term memory: `MemlaneMemoryBlock`.

    from llama_index.core.memory import Memory
    from memlane import open_memory
    from memlane.integrations.llamaindex import MemlaneMemoryBlock

    memory = Memory.from_defaults(session_id="chat-42", token_limit=40_000,
                                  memory_blocks=[MemlaneMemoryBlock(memory=open_memory(), user_id="lin")])

LlamaIndex keeps the recent chat itself; the messages it flushes out of that window are
handed to the block, which stores them in memlane as turns of the session (the LlamaIndex
`session_id`, or the block's own). memlane then extracts memories from them through its
queue, as from any session. When LlamaIndex asks for the block, it gets memlane's context
for the latest user message: core memories, the memories relevant to it, the session's
summary — and, from earlier conversations, the turns relevant to it — within a token budget.
A new `Memory` (a new session) of the same user recalls them; another user's never.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import re
from typing import Any, Protocol

from memlane import validate
from memlane.config import Config
from memlane.context import Context, fit, pack
from memlane.errors import MissingExtra, NotFound, ValidationError
from memlane.models import Hit, Scope, Session, Turn
from memlane.text import estimate_tokens

try:
    from llama_index.core.async_utils import asyncio_run
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.memory.memory import BaseMemoryBlock, Memory
    from llama_index.core.storage.chat_store.base_db import MessageStatus
except ImportError as exc:  # the extra is not installed
    raise MissingExtra("memlane.integrations.llamaindex needs LlamaIndex: pip install 'memlane[llamaindex]'") from exc

# LlamaIndex roles → memlane's (OpenAI's four): the others are those four under other names
ROLES = {MessageRole.SYSTEM: "system", MessageRole.DEVELOPER: "system", MessageRole.USER: "user",
         MessageRole.ASSISTANT: "assistant", MessageRole.CHATBOT: "assistant", MessageRole.MODEL: "assistant",
         MessageRole.TOOL: "tool", MessageRole.FUNCTION: "tool"}
# the context blocks the block returns; "tools" (the memory tools' self-description) only
# when the agent has memlane's tools, "history" never: LlamaIndex keeps the chat itself
BLOCKS = ("scratchpad", "core", "memories", "summary")
TRACES_HEADING = "## Earlier conversations"


class MemoryAPI(Protocol):
    """What the block calls on `memlane.Memory`."""

    config: Config

    def add_messages(self, session_id: str, messages: builtins.list[dict[str, Any]], *, user_id: str,
                     agent_id: str | None = None) -> builtins.list[Turn]: ...

    def get_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> Session: ...

    def end_session(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> Any: ...

    def build_context(self, session_id: str | None = None, query: str | None = None, *, user_id: str,
                      agent_id: str | None = None, model: str | None = None) -> Context: ...

    def search(self, query: str, *, user_id: str, agent_id: str | None = None, limit: int | None = None,
               corpus: Any = "memories", min_score: float | None = None) -> builtins.list[Hit]: ...


class MemlaneMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block on memlane (see the module docstring).

    `memory`: a `memlane.Memory`; `user_id` / `agent_id`: the memlane scope. `session_id`: the
    memlane session the flushed messages go to (default: the LlamaIndex Memory's own).
    `max_tokens`: a cap on the block's text (default: memlane's own context budgets, which
    already bound each part). `include_traces`: also the earlier conversations' turns relevant
    to the message (found before extraction has run). `include_tools`: the self-description of
    memlane's memory tools, for an agent that has them (`memory.tools(...)`)."""

    name: str = Field(default="memlane", description="The name of the memory block.")
    memory: Any = Field(description="The memlane.Memory the block reads and writes.", exclude=True)
    user_id: str = Field(description="The memlane user whose memory this is.")
    agent_id: str | None = Field(default=None, description="The memlane agent scope (None: the user's own).")
    session_id: str | None = Field(default=None, description="The memlane session (None: LlamaIndex's session_id).")
    max_tokens: int | None = Field(default=None, description="A cap on the block's tokens (None: memlane's budgets).")
    include_traces: bool = Field(default=True, description="Also the relevant turns of earlier conversations.")
    include_tools: bool = Field(default=False, description="Also the self-description of memlane's memory tools.")

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # checked here, not in a pydantic validator: memlane's own error, naming the field
        for method in ("add_messages", "build_context", "search", "get_session", "end_session"):
            if not callable(getattr(self.memory, method, None)):
                raise ValidationError("memory", f"must be a memlane.Memory (it has no {method}())")
        # the scope and session as memlane checks them, now rather than at the first chat
        Scope.of(self.user_id, self.agent_id)
        validate.optional_ident("session_id", self.session_id)
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValidationError("max_tokens", f"must be ≥ 1, got {self.max_tokens}")

    # ---- BaseMemoryBlock ----------------------------------------------------------------

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """memlane's context for the latest user message, within the budget ("" when none)."""
        session = self.session_id or block_kwargs.get("session_id")
        query = next((m.content for m in reversed(messages or []) if m.role == MessageRole.USER and m.content), None)
        if query is not None:  # a pasted document asks with its head: memlane bounds a query as a turn
            query = _UNSTORABLE.sub("", query)[:self.memory.config.store.max_turn_chars]
        return await asyncio.to_thread(self.context, session, query)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """The messages LlamaIndex flushed, stored as turns of the session, in order."""
        by_session: dict[str, list[dict[str, Any]]] = {}
        for message in messages:
            session = self.session_id or message.additional_kwargs.get("session_id")
            if not session:
                raise ValidationError("session_id", "the flushed messages carry no session: give the block a "
                                                    "session_id, or put through llama_index's Memory")
            converted = as_openai(message)
            if converted is not None:
                by_session.setdefault(str(session), []).append(converted)
        # LlamaIndex has archived these messages already: a refusal here would lose them, so
        # what memlane would refuse is made to fit (a pasted document cut, and marked) and
        # the calls kept within its per-call caps
        cfg = self.memory.config.store
        for session, turns in by_session.items():
            for chunk in calls_of([fitted(t, cfg.max_turn_chars) for t in turns], cfg.max_messages_per_call,
                                  cfg.max_call_chars):
                await asyncio.to_thread(self.memory.add_messages, session, chunk, user_id=self.user_id,
                                        agent_id=self.agent_id)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The block's text cut from its end (its least relevant lines) by about that many tokens."""
        left = estimate_tokens(content) - max(tokens_to_truncate, 0)
        return (fit(content, left) or None) if left > 0 else None

    # ---- a conversation's end ----------------------------------------------------------

    def flush(self, chat_memory: Memory, *, end_session: bool = True) -> int:
        """`aflush`, for synchronous code."""
        return asyncio_run(self.aflush(chat_memory, end_session=end_session))

    async def aflush(self, chat_memory: Memory, *, end_session: bool = True) -> int:
        """At a conversation's end, hand memlane what is still in LlamaIndex's window (LlamaIndex
        flushes only what overflows it), archived there so nothing is stored twice, and end the
        memlane session so its queue extracts the memories. Returns how many messages moved."""
        session = self.session_id or chat_memory.session_id
        active = await chat_memory.sql_store.get_messages(chat_memory.session_id, status=MessageStatus.ACTIVE)
        if active:
            await self.aput(active, session_id=session)
            await chat_memory.sql_store.archive_oldest_messages(chat_memory.session_id, n=len(active))
        if end_session:
            with contextlib.suppress(NotFound):  # nothing was ever said in it: no session to end
                await asyncio.to_thread(self.memory.end_session, session, user_id=self.user_id, agent_id=self.agent_id)
        return len(active)

    # ---- the text -----------------------------------------------------------------------

    def context(self, session_id: str | None, query: str | None) -> str:
        """The block's text for a session (None, or one memlane has not seen: no session part)
        and the latest user message."""
        known = None
        if session_id is not None:
            try:
                known = self.memory.get_session(session_id, user_id=self.user_id, agent_id=self.agent_id).id
            except NotFound:
                known = None  # nothing flushed from this conversation yet
        ctx = self.memory.build_context(known, query, user_id=self.user_id, agent_id=self.agent_id)
        wanted = (*BLOCKS, "tools") if self.include_tools else BLOCKS
        parts = [b.text for b in ctx.blocks if b.name in wanted and b.text]
        if self.include_traces and query:
            parts.append(self.traces(query, session_id, ctx))
        text = "\n\n".join(p for p in parts if p)
        return fit(text, self.max_tokens) if self.max_tokens is not None else text

    def traces(self, query: str, session_id: str | None, ctx: Context) -> str:
        """The turns of earlier conversations relevant to the query, packed into what the
        memories left of memlane's memory budget (the current session's are in the chat)."""
        cfg = self.memory.config
        hits = self.memory.search(query[:cfg.search.max_query_chars], user_id=self.user_id, agent_id=self.agent_id, corpus="turns",
                                  limit=cfg.context.memory_max_hits * 2, min_score=cfg.search.min_relevance)
        earlier = [h for h in hits if h.turn is None or h.turn.session_id != session_id]
        used = sum(b.tokens for b in ctx.blocks if b.name == "memories")
        return pack(earlier, max(ctx.budgets.memories - used, 0), cfg.context.memory_max_hits,
                    snippet_chars=cfg.context.snippet_chars, heading=TRACES_HEADING).text


def as_openai(message: ChatMessage) -> dict[str, Any] | None:
    """A LlamaIndex message as the OpenAI-shaped dict memlane takes; None when it holds
    nothing memlane keeps (no text and no tool call)."""
    role = ROLES.get(MessageRole(message.role), "user")
    out: dict[str, Any] = {"role": role, "content": message.content or ""}
    calls = [{"id": b.tool_call_id or f"call_{i}", "type": "function",
              "function": {"name": b.tool_name, "arguments": b.tool_kwargs if isinstance(b.tool_kwargs, str)
                           else json.dumps(b.tool_kwargs, ensure_ascii=False)}}
             for i, b in enumerate(message.blocks) if isinstance(b, ToolCallBlock)]
    raw_calls = message.additional_kwargs.get("tool_calls")
    if not calls and isinstance(raw_calls, list) and all(isinstance(c, dict) for c in raw_calls):
        calls = raw_calls  # an OpenAI LLM's calls, as llama_index keeps them
    if role == "assistant" and calls:
        out["tool_calls"] = calls
    if role == "tool" and message.additional_kwargs.get("tool_call_id"):
        out["tool_call_id"] = str(message.additional_kwargs["tool_call_id"])
    if not out["content"].strip() and "tool_calls" not in out:
        return None
    return out


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # NUL and lone surrogates: memlane refuses them in text
CUT = "\n[cut by memlane: {dropped:,} of {total:,} characters not kept (store.max_turn_chars)]"


def fitted(message: dict[str, Any], limit: int) -> dict[str, Any]:
    """A message as memlane stores it: text it refuses replaced (NUL dropped, a lone surrogate
    as U+FFFD), and a text longer than a turn may be cut to fit, the cut said at its end and
    the original length kept in the turn's metadata (`cut_from`)."""
    text = _UNSTORABLE.sub(lambda m: "" if m.group() == "\x00" else "\ufffd", message["content"])
    if len(text) > limit:
        total = len(text)
        room = max(limit - len(CUT.format(dropped=total, total=total)), 0)
        room = max(limit - len(CUT.format(dropped=total - room, total=total)), 0)  # the count's own digits
        text = text[:room] + CUT.format(dropped=total - room, total=total)
        return {**message, "content": text[:limit], "metadata": {"cut_from": total}}
    return {**message, "content": text}


def calls_of(messages: builtins.list[dict[str, Any]], max_count: int,
             max_chars: int) -> builtins.list[builtins.list[dict[str, Any]]]:
    """The messages in order, split into `add_messages` calls within memlane's caps
    (store.max_messages_per_call, store.max_call_chars)."""
    calls: builtins.list[builtins.list[dict[str, Any]]] = []
    chars = 0
    for m in messages:
        if not calls or len(calls[-1]) >= max_count or chars + len(m["content"]) > max_chars:
            calls.append([])
            chars = 0
        calls[-1].append(m)
        chars += len(m["content"])
    return calls


__all__ = ["MemlaneMemoryBlock", "as_openai", "calls_of", "fitted"]
