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
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memlane import validate
from memlane.api import Memory
from memlane.errors import NotFound, ValidationError
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
    raise ImportError("memlane.integrations.pydantic_ai needs pydantic-ai: pip install 'memlane[pydantic-ai]'") from exc

CONTEXT_REF = "memlane.context"  # the injected part's dynamic_ref: found and replaced on the next request


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
    conversation and are left out."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for p in msg.parts:
                if isinstance(p, UserPromptPart):
                    out.append({"role": "user", "content": _prompt_text(p.content) or "[empty prompt]",
                                "created_at": p.timestamp})
                elif isinstance(p, ToolReturnPart):
                    out.append({"role": "tool", "name": p.tool_name, "content": p.model_response_str(),
                                "metadata": {"tool_call_id": p.tool_call_id}, "created_at": p.timestamp})
        elif isinstance(msg, ModelResponse):
            text = "\n".join(p.content for p in msg.parts if isinstance(p, TextPart) and p.content)
            calls = [{"id": p.tool_call_id, "type": "function",
                      "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                     for p in msg.parts if isinstance(p, ToolCallPart)]
            if text or calls:
                out.append({"role": "assistant", "content": text, "tool_calls": calls or None,
                            "created_at": msg.timestamp})
    return out


def store_run(memory: Memory, result: Any, *, user_id: str, session_id: str, agent_id: str | None = None) -> list[Turn]:
    """Store a run's new messages (`result.new_messages()`, or a list of messages) as turns of
    `session_id`, in one transaction; what memlane's rules do after turns (extraction every
    N user messages, "remember this") runs as for `add_messages`. Call it once per run: the
    same messages stored twice are two sets of turns."""
    messages = result.new_messages() if callable(getattr(result, "new_messages", None)) else result
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValidationError("result", f"must be an agent run's result or a list of messages, got "
                                        f"{type(result).__name__}")
    msgs = run_messages(messages)
    if not msgs:
        return []
    return memory.add_messages(session_id, msgs, user_id=user_id, agent_id=agent_id)


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


__all__ = ["CONTEXT_REF", "MemlaneMemory", "memlane_context", "memlane_toolset", "run_messages", "store_run"]

