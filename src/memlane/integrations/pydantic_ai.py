"""memlane in pydantic-ai (`pip install 'memlane[pydantic-ai]'`).

Three pieces on pydantic-ai's own interfaces:

- `memlane_toolset(memory, user_id=...)` — a `FunctionToolset` of memlane's agent tools
  (`memlane.tools`: the same schemas, the same handlers): `Agent(toolsets=[...])`;
- `memlane_context(memory, user_id=..., session_id=...)` — a history processor
  (`Agent(history_processors=[...])`) that puts `build_context` for the latest user prompt
  into the request as a system prompt part: core memories, the memories relevant to that
  prompt, the scratchpad and the tools' description (not memlane's history block: pydantic-ai
  sends the message history itself);
- `store_run(memory, result, user_id=..., session_id=...)` — after `agent.run`, the run's new
  messages as memlane turns, so extraction, search and the session's episode see them.

    memory = Memory("~/.memlane")
    agent = Agent("openai:gpt-4o", instructions="You are a helpful assistant.",
                  toolsets=[memlane_toolset(memory, user_id="lin", session_id="chat-1")],
                  history_processors=[memlane_context(memory, user_id="lin", session_id="chat-1")])
    result = await agent.run("I'm allergic to peanuts")
    store_run(memory, result, user_id="lin", session_id="chat-1")
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memlane import validate
from memlane.api import Memory
from memlane.config import StoreConfig
from memlane.errors import MissingExtra, NotFound, ValidationError
from memlane.models import Scope, Turn
from memlane.tools import MemoryTools

try:
    from pydantic_ai import FunctionToolset, RunContext, Tool
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
except ImportError as exc:  # pragma: no cover - the extra is installed where the tests run
    raise MissingExtra("memlane.integrations.pydantic_ai needs pydantic-ai: pip install 'memlane[pydantic-ai]'") from exc

CONTEXT_REF = "memlane.context"  # the injected part's dynamic_ref: found and replaced on the next request
MESSAGE_KEY = "pydantic_ai_message"  # turn metadata: "<run_id>:<n>", the run's n-th message, stored once
TRUNCATED = "…[truncated:"  # a text cut to fit the store ends "…[truncated: 300,000 characters, <setting> …]"


def memlane_toolset(memory: Memory, *, user_id: str, agent_id: str | None = None, session_id: str | None = None,
                    names: Sequence[str] | None = None) -> FunctionToolset[Any]:
    """memlane's agent tools as a pydantic-ai toolset bound to one scope. `names` picks some
    (default: all of `memlane.tools.TOOL_NAMES`); `session_id` ties a remembered memory to
    its conversation. A handler's error the model can fix comes back as `{"error": ...}`."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, session_id=session_id, names=names)

    def runner(name: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        async def run(**arguments: Any) -> dict[str, Any]:
            return await asyncio.to_thread(tools.call, name, arguments)
        return run

    # from_schema: memlane's own JSON schemas, and its handlers check the arguments
    return FunctionToolset([Tool.from_schema(runner(s["function"]["name"]), name=s["function"]["name"],
                                             description=s["function"]["description"],
                                             json_schema=s["function"]["parameters"])
                            for s in tools.schemas], id="memlane")


def _prompt_text(content: Any) -> str:
    """A user prompt's text; images, audio, documents as placeholders."""
    if isinstance(content, str):
        return content
    out = []
    for item in content if isinstance(content, Sequence) else ():
        if isinstance(item, str):
            out.append(item)
        else:
            kind = str(getattr(item, "kind", type(item).__name__)).removesuffix("-url")
            out.append(f"[{kind[:40]}]")
    return "\n".join(p for p in out if p)


def _latest_prompt(messages: Sequence[ModelMessage]) -> tuple[int, str] | None:
    """(index of the request, text) of the latest user prompt."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, ModelRequest):
            texts = [_prompt_text(p.content) for p in msg.parts if isinstance(p, UserPromptPart)]
            if texts:
                return i, "\n".join(texts)
    return None


def memlane_context(memory: Memory, *, user_id: str, agent_id: str | None = None, session_id: str | None = None,
                    model: str | None = None) -> Callable[[list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    """A history processor: before each model request, memlane's context for the latest user
    prompt goes into that prompt's request, as a system prompt part just before it; the part
    an earlier request got is taken out first, so a history passed on to the next run keeps
    one. `model` sizes the budgets by its context window (`context.model_context_windows`)."""
    Scope.of(user_id, agent_id)
    validate.optional_ident("session_id", session_id)

    def render(query: str) -> str:
        try:  # a session memlane knows adds its summary and scratchpad, and feedback's record
            ctx = memory.build_context(session_id, query, user_id=user_id, agent_id=agent_id, model=model)
        except NotFound:  # nothing of this session stored yet
            ctx = memory.build_context(None, query, user_id=user_id, agent_id=agent_id, model=model)
        return ctx.render(include_history=False)

    async def processor(messages: list[ModelMessage]) -> list[ModelMessage]:
        kept: list[ModelMessage] = []
        for msg in messages:
            if isinstance(msg, ModelRequest) and any(_injected(p) for p in msg.parts):
                msg = dataclasses.replace(msg, parts=[p for p in msg.parts if not _injected(p)])
            kept.append(msg)
        latest = _latest_prompt(kept)
        if latest is None:
            return kept
        i, query = latest
        limit = memory.config.store.max_turn_chars  # build_context's bound on a query
        text = await asyncio.to_thread(render, query[:limit])
        if text:
            request = kept[i]
            assert isinstance(request, ModelRequest)
            at = next(j for j, p in enumerate(request.parts) if isinstance(p, UserPromptPart))
            parts = [*request.parts[:at], SystemPromptPart(text, dynamic_ref=CONTEXT_REF), *request.parts[at:]]
            kept[i] = dataclasses.replace(request, parts=parts)
        return kept

    return processor


def _injected(part: Any) -> bool:
    return isinstance(part, SystemPromptPart) and part.dynamic_ref == CONTEXT_REF


def run_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as memlane messages: user prompts, the model's text and tool calls
    (one assistant message per response), tool returns with their call id. System prompts
    (the developer's, and memlane's own context), thinking and retry prompts are not the
    conversation and are left out. A message of a run (pydantic-ai's `run_id`) is marked in
    its metadata as that run's n-th (`MESSAGE_KEY`), so `store_run` stores it once."""
    out: list[dict[str, Any]] = []
    counts: dict[str, int] = {}

    def add(msg: ModelMessage, message: dict[str, Any]) -> None:
        if msg.run_id:
            n = counts[msg.run_id] = counts.get(msg.run_id, -1) + 1
            message["metadata"] = {**message.get("metadata", {}), MESSAGE_KEY: f"{msg.run_id}:{n}"}
        out.append(message)

    for msg in messages:
        if isinstance(msg, ModelRequest):
            for p in msg.parts:
                if isinstance(p, UserPromptPart):
                    add(msg, {"role": "user", "content": _prompt_text(p.content) or "[empty prompt]",
                              "created_at": p.timestamp})
                elif isinstance(p, ToolReturnPart):
                    add(msg, {"role": "tool", "name": p.tool_name, "content": p.model_response_str(),
                              "metadata": {"tool_call_id": p.tool_call_id}, "created_at": p.timestamp})
        elif isinstance(msg, ModelResponse):
            text = "\n".join(p.content for p in msg.parts if isinstance(p, TextPart) and p.content)
            calls = [{"id": p.tool_call_id, "type": "function",
                      "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                     for p in msg.parts if isinstance(p, ToolCallPart)]
            if text or calls:
                add(msg, {"role": "assistant", "content": text, "tool_calls": calls or None,
                          "created_at": msg.timestamp})
    return out


def store_run(memory: Memory, result: Any, *, user_id: str, session_id: str, agent_id: str | None = None) -> list[Turn]:
    """Store a run's new messages (`result.new_messages()`, or a list of messages) as turns of
    `session_id`; what memlane's rules do after turns (extraction every N user messages,
    "remember this") runs as for `add_messages`. The run has happened, so what it said is
    made to fit memlane's limits rather than refused (`fit_messages`: a text over
    `store.max_turn_chars` is cut and marked). Storing a run again stores none of it twice:
    the messages of a run already in the session are skipped."""
    messages = result.new_messages() if callable(getattr(result, "new_messages", None)) else result
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValidationError("result", f"must be an agent run's result or a list of messages, got "
                                        f"{type(result).__name__}")
    scope = Scope.of(user_id, agent_id)
    msgs = _not_stored(memory, scope, validate.ident("session_id", session_id), run_messages(messages))
    turns: list[Turn] = []
    for part in fit_messages(msgs, memory.config.store):  # one transaction each; most runs are one
        turns += memory.add_messages(session_id, part, user_id=user_id, agent_id=agent_id)
    return turns


def _not_stored(memory: Memory, scope: Scope, session_id: str, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages whose run mark no turn of the session holds yet (only the turns since the
    earliest of them are read: a run's turns carry its messages' times)."""
    marked = [m for m in msgs if _mark(m) is not None]
    if not marked:
        return msgs
    since = min(m["created_at"] for m in marked)
    stored = {t.metadata.get(MESSAGE_KEY) for t in memory.store.get_turns(scope, session_id=session_id, since=since)}
    return [m for m in msgs if _mark(m) is None or _mark(m) not in stored]


def _mark(message: dict[str, Any]) -> str | None:
    return (message.get("metadata") or {}).get(MESSAGE_KEY)


def fit_messages(msgs: list[dict[str, Any]], cfg: StoreConfig) -> list[list[dict[str, Any]]]:
    """Messages made to fit the store's limits, in groups one `add_messages` call takes: a text
    over `store.max_turn_chars` cut, with a marker saying how long it was (and
    `truncated_from_chars` in the metadata); tool-call arguments cut when the calls pass
    `store.max_metadata_bytes`; groups within `store.max_messages_per_call` and
    `store.max_call_chars`."""
    groups: list[list[dict[str, Any]]] = []
    chars = 0
    for m in msgs:
        m = _fit(m, cfg)
        # an assistant message of calls alone gets them described as its text
        size = len(m["content"]) or len(json.dumps(m.get("tool_calls"), ensure_ascii=False))
        if not groups or len(groups[-1]) >= cfg.max_messages_per_call or chars + size > cfg.max_call_chars:
            groups.append([])
            chars = 0
        groups[-1].append(m)
        chars += size
    return groups


_EMPTY = {"user": "[empty prompt]", "tool": "[empty result]", "assistant": "[empty reply]"}


def _fit(m: dict[str, Any], cfg: StoreConfig) -> dict[str, Any]:
    text = m["content"]
    if not text.strip() and not m.get("tool_calls"):  # a turn needs text (calls alone are described)
        m = {**m, "content": _EMPTY[m["role"]]}
    elif len(text) > cfg.max_turn_chars:
        m = {**m, "content": _cut(text, cfg.max_turn_chars, "store.max_turn_chars"),
             "metadata": {**(m.get("metadata") or {}), "truncated_from_chars": len(text)}}
    calls = m.get("tool_calls")
    if calls and len(json.dumps(calls, ensure_ascii=False).encode("utf-8")) > cfg.max_metadata_bytes:
        share = cfg.max_metadata_bytes // len(calls)  # the calls share the bound
        m = {**m, "tool_calls": [_fit_call(c, share) for c in calls]}
    return m


def _fit_call(call: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """A tool call whose arguments are cut so it takes at most `max_bytes` as JSON: what its id
    and name take off, then 6 bytes a character (a control character is \\u00XX in JSON)."""
    fn = call["function"]
    bare = len(json.dumps({**call, "function": {**fn, "arguments": ""}}).encode("utf-8"))
    arguments = _cut(fn["arguments"], (max_bytes - bare) // 6, "store.max_metadata_bytes")
    return {**call, "function": {**fn, "arguments": arguments}}


def _cut(text: str, limit: int, setting: str) -> str:
    """`text` in at most `limit` characters: its start, then a marker of how long it was."""
    if len(text) <= limit:
        return text
    mark = f"{TRUNCATED} {len(text):,} characters, {setting} is the limit]"
    return text[:max(0, limit - len(mark))] + mark if len(mark) < limit else text[:max(0, limit)]


@dataclasses.dataclass(init=False)
class MemlaneMemory(AbstractCapability[Any]):
    """The three pieces as one pydantic-ai capability: `Agent(..., capabilities=[MemlaneMemory(
    memory, user_id="lin", session_id="chat-1")])` gets memlane's tools, its context before
    every model request, and (unless `store=False`) the run's new messages stored as turns
    when the run ends."""

    def __init__(self, memory: Memory, *, user_id: str, session_id: str, agent_id: str | None = None,
                 names: Sequence[str] | None = None, model: str | None = None, store: bool = True) -> None:
        self.memory = memory
        self.user_id = user_id
        self.agent_id = agent_id
        self.session_id = validate.ident("session_id", session_id)
        self.store = validate.boolean("store", store)
        self._toolset = memlane_toolset(memory, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                        names=names)
        self._context = memlane_context(memory, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                        model=model)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a Memory: not constructible from a YAML/JSON agent spec

    def get_toolset(self) -> FunctionToolset[Any]:
        return self._toolset

    async def before_model_request(self, ctx: RunContext[Any],
                                   request_context: ModelRequestContext) -> ModelRequestContext:
        # as pydantic-ai's ProcessHistory: the request's messages and the run's history alike
        messages = await self._context(list(request_context.messages))
        request_context.messages = messages.copy()
        ctx.messages[:] = messages
        return request_context

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        if self.store:
            await asyncio.to_thread(store_run, self.memory, result, user_id=self.user_id,
                                    session_id=self.session_id, agent_id=self.agent_id)
        return result


__all__ = ["CONTEXT_REF", "MESSAGE_KEY", "MemlaneMemory", "fit_messages", "memlane_context", "memlane_toolset", "run_messages", "store_run"]

