"""Agent tools: OpenAI function-calling schemas and their handlers, bound to one scope.

Seed 002's progressive disclosure: `search_memory` (level 1: distilled memories and
episode summaries), then `search_conversation_traces` (level 2: the raw turns with tool
arguments and results). Seed 001 §4.2: `recall_memory` reaches archived memories. Plus
`remember`, `forget` and `update_scratchpad`.

    tools = memory.tools(user_id="lin", session_id="s1")
    reply = client.chat(messages, tools=tools.schemas)
    for call in reply.tool_calls:
        messages.append(tools.handle(call))      # {"role": "tool", "tool_call_id": ..., "content": "{...}"}

A handler's failure the model can fix (unknown id, bad argument) comes back as
`{"error": "..."}` in the tool message, so the conversation goes on; anything else raises.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memlane.errors import MemlaneError, ValidationError
from memlane.models import Hit

if TYPE_CHECKING:
    from memlane.api import Memory

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

SCHEMAS: list[dict[str, Any]] = [
    _fn("search_memory",
        "Level 1: search long-term memory — distilled preferences, rules, facts, experience — and summaries "
        "of past sessions. Use it first when earlier context could matter.",
        {"query": _QUERY, "limit": _LIMIT,
         "category": {"type": "string", "description": "Only memories of this category."}},
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


def _memory_hit(h: Hit) -> dict[str, Any]:
    m = h.memory
    out: dict[str, Any] = {"id": h.id, "source": h.source, "content": h.content, "score": round(h.score, 3)}
    if m is not None:
        out.update(category=m.category, status=m.status, updated_at=m.updated_at.isoformat())
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

    def __init__(self, memory: Memory, *, user_id: str, agent_id: str | None = None,
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
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI `tools=[...]` entries."""
        return [s for s in SCHEMAS if s["function"]["name"] in self.names]

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

    def handle(self, tool_call: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI `tool_calls[i]` entry in, the `role: tool` message to send back out."""
        if not isinstance(tool_call, dict):
            raise ValidationError("tool_call", f"must be an OpenAI tool_calls entry (a dict), got {type(tool_call).__name__}")
        fn = tool_call.get("function") or {}
        if not isinstance(fn, dict):
            fn = {}
        name = str(fn.get("name", ""))
        result = self.call(name, fn.get("arguments"))
        return {"role": "tool", "tool_call_id": tool_call.get("id", ""), "name": name,
                "content": json.dumps(result, ensure_ascii=False)}

    # ---- handlers ---------------------------------------------------------------------------

    def _scope(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent_id": self.agent_id}

    @staticmethod
    def _limit(limit: Any) -> int:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationError("limit", f"must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
        return limit

    def search_memory(self, query: str, limit: int = 5, category: str | None = None) -> dict[str, Any]:
        n = self._limit(limit)
        filters = {"category": category} if category else None
        floor = self.memory.config.search.min_relevance  # weak hits would mislead the model
        mems = self.memory.search(query, limit=n, filters=filters, min_score=floor, **self._scope())
        # seed 002 §4: episodes are not injected, search_memory returns them by matching
        eps = [] if category else self.memory.search(query, limit=min(n, 3), corpus="episodes", min_score=floor,
                                                     **self._scope())
        return {"memories": [_memory_hit(h) for h in mems], "episodes": [_episode_hit(h) for h in eps]}

    def search_conversation_traces(self, query: str, limit: int = 5, session_id: str | None = None) -> dict[str, Any]:
        filters = {"session_id": session_id} if session_id else None
        hits = self.memory.search(query, limit=self._limit(limit), corpus="turns", filters=filters, **self._scope())
        return {"turns": [_turn_hit(h) for h in hits]}

    def recall_memory(self, query: str, limit: int = 5) -> dict[str, Any]:
        hits = self.memory.search(query, limit=self._limit(limit), filters={"status": "archived"},
                                  min_score=self.memory.config.search.min_relevance, **self._scope())
        return {"memories": [_memory_hit(h) for h in hits]}

    def remember(self, content: str, category: str | None = None, importance: str | None = None) -> dict[str, Any]:
        rec = self.memory.add(content, category=category, importance=importance, source="user", verified=True,
                              session_id=self.session_id, actor="agent", **self._scope())
        return {"id": rec.id, "content": rec.content, "category": rec.category, "score": rec.score}

    def forget(self, memory_id: str, reason: str = "") -> dict[str, Any]:
        rec = self.memory.delete(memory_id, actor="agent", reason=reason or "the user asked to forget it",
                                 **self._scope())
        return {"deleted": rec.id, "content": rec.content}

    def update_scratchpad(self, current_focus: str | None = None, finished_task: str | None = None) -> dict[str, Any]:
        if current_focus is None and finished_task is None:
            raise ValidationError("arguments", "give current_focus, finished_task or both")
        pad = self.memory.update_scratchpad(focus=current_focus, done=finished_task, **self._scope())
        return {"current_focus": pad.current_focus, "recent_tasks": pad.recent_tasks}


__all__ = ["SCHEMAS", "TOOL_NAMES", "MemoryTools"]
