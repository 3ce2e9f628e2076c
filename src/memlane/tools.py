"""Agent tools: function-calling schemas (OpenAI or Anthropic format) and their handlers,
bound to one scope.

Seed 002's progressive disclosure: `search_memory` (level 1: distilled memories and
episode summaries), then `search_conversation_traces` (level 2: the raw turns with tool
arguments and results). Seed 001 §4.2: `recall_memory` reaches archived memories. Plus
`remember`, `forget` and `update_scratchpad`.

    tools = memory.tools(user_id="lin", session_id="s1")
    # OpenAI (dicts or the SDK's objects alike)
    reply = client.chat.completions.create(model=..., messages=messages, tools=tools.schemas)
    for call in reply.choices[0].message.tool_calls or []:
        messages.append(tools.handle(call))  # {"role": "tool", "tool_call_id": ..., "content": "{...}"}
    # Anthropic: tools.schemas(format="anthropic"); a `tool_use` block in, a `tool_result` block out
    results = [tools.handle(block) for block in reply.content if block.type == "tool_use"]
    messages.append({"role": "user", "content": results})

A handler's failure the model can fix (unknown id, bad argument) comes back as
`{"error": "..."}` in the tool message, so the conversation goes on; anything else raises.
`remember` does not store a near-duplicate of a memory the scope reads: it reinforces that
one (seed 004 §6, the same test as extraction's, `jobs.near_duplicate`). What it stores is
`source="agent"`, not verified and not pinned: the model's choice is not the person's word,
so it decays like an extracted memory until a person confirms it (web UI, CLI, REST).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memlane import supersession, validate
from memlane.config import MAX_ID_CHARS
from memlane.errors import MemlaneError, NotFound, ValidationError
from memlane.indexing import embed_one
from memlane.jobs import near_duplicate
from memlane.models import Hit, Scope
from memlane.parts import Tooling
from memlane.policy import dedup_threshold, importance_score, reinforced

TRACE_CHARS = 2000  # level 2 returns the originals; one huge paste still may not flood the context
MAX_LIMIT = 20


def _fn(name: str, description: str, properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": list(required),
                       "additionalProperties": False},
    }}


_QUERY = {"type": "string", "description": "What to look for, in the user's language."}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most results to return (default 5)."}
# issue 32: facts change; a replaced fact is kept with when it held
_AS_OF = {"type": "string", "description": "A date such as 2024-03-15 (or a month, 2024-03, or a year): the "
                                          "facts that held then (replaced ones included), for questions about "
                                          "the past."}
_SUPERSEDED = {"type": "boolean", "description": "Also facts that were replaced by newer ones (each says when it "
                                                "held). A question about the past finds them anyway."}

SCHEMAS: list[dict[str, Any]] = [
    _fn("search_memory",
        "Level 1: search long-term memory — distilled preferences, rules, facts, experience — summaries "
        "of past sessions, and files the user shared (by name, description or text). Use it first when "
        "earlier context could matter.",
        {"query": _QUERY, "limit": _LIMIT,
         "category": {"type": "string", "description": "Only memories of this category."},
         "as_of": _AS_OF, "include_superseded": _SUPERSEDED},
        ["query"]),
    _fn("search_conversation_traces",
        "Level 2: search the raw past conversation, including tool arguments and results. Use it when "
        "search_memory's summaries are not detailed enough.",
        {"query": _QUERY, "limit": _LIMIT,
         "session_id": {"type": "string", "description": "Only this session."}},
        ["query"]),
    _fn("recall_memory",
        "Search archived (low-score, no longer shown) memories.",
        {"query": _QUERY, "limit": _LIMIT},
        ["query"]),
    _fn("remember",
        "Store something the user asked you to remember.",
        {"content": {"type": "string", "description": "The memory, as one self-contained sentence."},
         "category": {"type": "string", "description": "A category such as fact, preference, rule."},
         "importance": {"type": "string", "enum": ["high", "medium", "low"]}},
        ["content"]),
    _fn("forget",
        "Delete a memory the user asked you to forget (find its id with search_memory first).",
        {"memory_id": {"type": "string"}, "reason": {"type": "string"}},
        ["memory_id"]),
    _fn("update_scratchpad",
        "Update the working scratchpad: the task in focus now, and/or a task just finished.",
        {"current_focus": {"type": "string"}, "finished_task": {"type": "string"}},
        []),
]
TOOL_NAMES = tuple(s["function"]["name"] for s in SCHEMAS)
FORMATS = ("openai", "anthropic")


def anthropic_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI `tools=[...]` entry as an Anthropic one (name, description, input_schema)."""
    fn = schema["function"]
    return {"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]}


class Schemas(list[dict[str, Any]]):
    """The tools' schemas: a list of OpenAI `tools=[...]` entries, and callable for a format:
    `tools.schemas` / `tools.schemas(format="anthropic")`."""

    def __call__(self, format: str = "openai") -> list[dict[str, Any]]:
        if format not in FORMATS:
            raise ValidationError("format", f"must be one of {', '.join(FORMATS)}, got {format!r}")
        return list(self) if format == "openai" else [anthropic_schema(s) for s in self]


def parse_call(tool_call: Any) -> tuple[str, str, Any, str]:
    """(format, id, name, arguments) of a tool call as an SDK or a dict hands it over: an
    OpenAI `tool_calls[i]` (`.id`, `.function.name`, `.function.arguments`) or an Anthropic
    `tool_use` block (`.id`, `.name`, `.input`), objects duck-typed."""
    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)

    def call_id() -> str:  # echoed back to the model: a string, whatever the call held
        value = get(tool_call, "id")
        return "" if value is None else validate.optional_text("tool_call.id", value, MAX_ID_CHARS) or ""

    fn = get(tool_call, "function")
    if fn is not None:
        return "openai", call_id(), get(fn, "name"), get(fn, "arguments")
    if get(tool_call, "name") is not None and (get(tool_call, "type") == "tool_use" or get(tool_call, "input") is not None):
        return "anthropic", call_id(), get(tool_call, "name"), get(tool_call, "input")
    raise ValidationError("tool_call", "must be an OpenAI tool call (id, function.name, function.arguments) or an "
                          f"Anthropic tool_use block (id, name, input), as a dict or an SDK object; got "
                          f"{type(tool_call).__name__}")


def _memory_hit(h: Hit, now: datetime) -> dict[str, Any]:
    m = h.memory
    out: dict[str, Any] = {"id": h.id, "source": h.source, "content": h.content, "score": round(h.score, 3)}
    if m is not None:
        out.update(category=m.category, status=m.status, updated_at=m.updated_at.isoformat())
        # a fact that changed says when it held, so the model never states an old one as current
        if m.status == "superseded" or m.supersedes or m.superseded_by:
            out["valid"] = supersession.span(m, now)  # "from …" / "until …" for a change still to come
        if m.superseded_by:
            out["replaced_by"] = m.superseded_by
    return out


def _episode_hit(h: Hit) -> dict[str, Any]:
    e = h.episode
    out: dict[str, Any] = {"source": h.source, "summary": h.content, "score": round(h.score, 3)}
    if e is not None:
        out.update(session_id=e.session_id, goal=e.goal, outcome=e.outcome, entities=e.entities,
                   tools_used=e.tools_used, started_at=e.started_at.isoformat(), ended_at=e.ended_at.isoformat())
    return out


def _turn_hit(h: Hit) -> dict[str, Any]:
    t = h.turn
    content = h.content if len(h.content) <= TRACE_CHARS else h.content[:TRACE_CHARS] + "…[truncated]"
    out: dict[str, Any] = {"source": h.source, "content": content, "score": round(h.score, 3)}
    if t is not None:
        out.update(session_id=t.session_id, seq=t.seq, role=t.role, created_at=t.created_at.isoformat())
        if t.name:
            out["name"] = t.name
        if t.tool_calls:
            out["tool_calls"] = t.tool_calls
    return out


class MemoryTools:
    """The six tools for one scope (and optionally the current session)."""

    def __init__(self, memory: Tooling, *, user_id: str, agent_id: str | None = None,
                 session_id: str | None = None, names: Sequence[str] | None = None) -> None:
        unknown = set(names or ()) - set(TOOL_NAMES)
        if unknown:
            raise ValidationError("names", f"unknown tools {sorted(unknown)}; known: {', '.join(TOOL_NAMES)}")
        self.memory = memory
        self.user_id = user_id
        self.agent_id = agent_id
        self.session_id = session_id
        self.names = tuple(names or TOOL_NAMES)
        self._handlers: dict[str, Callable[..., dict[str, Any]]] = {
            "search_memory": self.search_memory,
            "search_conversation_traces": self.search_conversation_traces,
            "recall_memory": self.recall_memory,
            "remember": self.remember,
            "forget": self.forget,
            "update_scratchpad": self.update_scratchpad,
        }

    @property
    def schemas(self) -> Schemas:
        """OpenAI `tools=[...]` entries; `schemas(format="anthropic")` for Anthropic's."""
        return Schemas(s for s in SCHEMAS if s["function"]["name"] in self.names)

    def call(self, name: str, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        """Run one tool; `arguments` as the model sent them (a JSON string) or a dict."""
        if not isinstance(name, str) or name not in self.names:
            return {"error": f"unknown tool {str(name)[:60]!r}; available: {', '.join(self.names)}"}
        if isinstance(arguments, str):
            try:
                args = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return {"error": f"arguments: not valid JSON ({exc.msg}); send a JSON object"}
            except RecursionError:
                return {"error": "arguments: JSON nested too deeply; send a flat JSON object"}
        else:
            args = arguments if arguments is not None else {}
        if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
            return {"error": "arguments: must be a JSON object"}
        handler = self._handlers[name]
        try:
            inspect.signature(handler).bind(**args)
        except TypeError as exc:  # an unexpected or missing argument: the model can fix its call
            return {"error": f"arguments: {exc}"}
        try:
            return handler(**args)
        except MemlaneError as exc:
            return {"error": str(exc)}

    def handle(self, tool_call: Any) -> dict[str, Any]:
        """A tool call in, the message to send back out: for an OpenAI `tool_calls[i]` the
        `{"role": "tool", "tool_call_id", "name", "content"}` message; for an Anthropic
        `tool_use` block the `{"type": "tool_result", "tool_use_id", "content"}` block (put
        the blocks in one `{"role": "user", "content": [...]}` message). Dicts or SDK objects."""
        fmt, call_id, name, arguments = parse_call(tool_call)
        result = self.call(name, arguments)
        content = json.dumps(result, ensure_ascii=False)
        if fmt == "anthropic":
            return {"type": "tool_result", "tool_use_id": call_id, "content": content,
                    **({"is_error": True} if "error" in result else {})}
        return {"role": "tool", "tool_call_id": call_id, "name": str(name), "content": content}

    async def ahandle(self, tool_call: Any) -> dict[str, Any]:
        """`handle` in a worker thread: the event loop keeps running while the tool works."""
        return await asyncio.to_thread(self.handle, tool_call)

    # ---- handlers ---------------------------------------------------------------------------

    def _scope(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent_id": self.agent_id}

    @staticmethod
    def _limit(limit: Any) -> int:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationError("limit", f"must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
        return limit

    def search_memory(self, query: str, limit: int = 5, category: str | None = None, as_of: str | None = None,
                      include_superseded: bool | None = None) -> dict[str, Any]:
        n = self._limit(limit)
        filters: dict[str, Any] = {"category": category} if category else {}
        if as_of is not None:
            filters["as_of"] = validate.when("as_of", as_of)
        if include_superseded is not None:
            filters["include_superseded"] = validate.boolean("include_superseded", include_superseded)
        floor = self.memory.config.search.min_relevance  # weak hits would mislead the model
        mems = self.memory.search(query, limit=n, filters=filters or None, min_score=floor, **self._scope())
        # seed 002 §4: episodes are not injected, search_memory returns them by matching
        eps = [] if category else self.memory.search(query, limit=min(n, 3), corpus="episodes", min_score=floor,
                                                     **self._scope())
        # seed 002's 文件/媒体记忆: files the agent was given, by their name, description or text
        files = [] if category else self.memory.attachments.find(query, limit=min(n, 3), min_score=floor,
                                                                  **self._scope())
        now = self.memory.clock()
        return {"memories": [_memory_hit(h, now) for h in mems], "episodes": [_episode_hit(h) for h in eps],
                "attachments": [{"id": a.id, "name": a.name, "media_type": a.media_type,
                                 "description": a.description, "score": round(score, 3)} for a, score in files]}

    def search_conversation_traces(self, query: str, limit: int = 5, session_id: str | None = None) -> dict[str, Any]:
        filters = {"session_id": session_id} if session_id else None
        hits = self.memory.search(query, limit=self._limit(limit), corpus="turns", filters=filters, **self._scope())
        return {"turns": [_turn_hit(h) for h in hits]}

    def recall_memory(self, query: str, limit: int = 5) -> dict[str, Any]:
        hits = self.memory.search(query, limit=self._limit(limit), filters={"status": "archived"},
                                  min_score=self.memory.config.search.min_relevance, **self._scope())
        return {"memories": [_memory_hit(h, self.memory.clock()) for h in hits]}

    def remember(self, content: str, category: str | None = None, importance: str | None = None) -> dict[str, Any]:
        mem = self.memory
        scope = Scope.of(self.user_id, self.agent_id)
        text = validate.memory_text("content", content, mem.config.store.max_content_chars)
        vec = embed_one(mem.store, mem.embedder, text, mem.config.embedding.max_chars)
        threshold = dedup_threshold(mem.config.policy, mem.embedder.model_id)
        # the look-up and the write in one transaction: a second writer (the rule's job, another
        # process remembering the same) waits, then sees this one's memory
        with mem.store.transaction():
            for s in scope.readable():  # the rule may have pinned it already ("记住…"), in other words
                dup = near_duplicate(mem.store, s, text, vec, threshold)
                if dup is None:
                    continue
                twin, sim = dup
                floor = importance_score(importance, mem.config.policy) if importance is not None else 0.0
                # reinforced, never confirmed: the twin keeps whatever verified / pinned it had
                after = reinforced(twin, mem.config.policy, mem.clock(), floor=floor)
                mem.store.update_memory(after, content_changed=False)
                mem.store.add_event(s, twin.id, "BOOST", twin.snapshot(), after.snapshot(), "agent",
                                    f"remembered again (similarity {sim:.3f}): {text}", after.updated_at)
                break
            else:
                # the model chose to store it: an agent's memory, unconfirmed, ageing like an
                # extracted one until a person verifies it (the user's own "记住…" is the rule's)
                rec = mem.add(text, category=category, importance=importance, source="agent", verified=False,
                              session_id=self.session_id, actor="agent", **self._scope())
                return {"id": rec.id, "content": rec.content, "category": rec.category, "score": rec.score}
        mem.signals.send("memory.changed", s)
        return {"id": after.id, "content": after.content, "category": after.category, "score": after.score,
                "already_known": True}

    def forget(self, memory_id: str, reason: str = "") -> dict[str, Any]:
        why = reason or "the user asked to forget it"
        scopes = Scope.of(self.user_id, self.agent_id).readable()
        for s in scopes:  # what the agent can read and the user asks to forget, it may delete
            try:
                rec = self.memory.delete(memory_id, actor="agent", reason=why, user_id=s.user_id,
                                         agent_id=s.agent_id or None)
            except NotFound:
                if s is scopes[-1]:
                    raise
                continue
            return {"deleted": rec.id, "content": rec.content}
        raise NotFound(f"memory {memory_id!r} not found")  # pragma: no cover - scopes is never empty

    def update_scratchpad(self, current_focus: str | None = None, finished_task: str | None = None) -> dict[str, Any]:
        if current_focus is None and finished_task is None:
            raise ValidationError("arguments", "give current_focus, finished_task or both")
        pad = self.memory.update_scratchpad(focus=current_focus, done=finished_task, **self._scope())
        return {"current_focus": pad.current_focus, "recent_tasks": pad.recent_tasks}


__all__ = ["FORMATS", "SCHEMAS", "TOOL_NAMES", "MemoryTools", "Schemas", "anthropic_schema", "parse_call"]
