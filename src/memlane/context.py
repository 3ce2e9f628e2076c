"""The context an agent gets: blocks within budgets, and a rendered system prompt.

Order (DESIGN.md, read pipeline): self-description of the memory tools (seed 002) →
scratchpad → core memories (seed 001 §4.1) → relevant memories for the query (seed 000) →
session summary (seed 004 §4) → recent history (seed 000).

Budgets are seed 000's fixed ones (history 4096 / memories 2048 tokens), or, given a model,
seed 004 §4.3's split of its context window (15 % system, 15 % long-term, 50 % short-term,
20 % reserve). Every block reports its tokens (`text.estimate_tokens`) and none exceeds
its budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane import supersession
from memlane.archive import context_block
from memlane.config import ContextConfig
from memlane.errors import NotFound
from memlane.messages import chat_messages
from memlane.models import Hit, MemoryRecord, Scope, Turn
from memlane.parts import Finding, Parts
from memlane.review import record_injected
from memlane.sessions import WindowMessage, render_scratchpad, select_window, window_turns
from memlane.text import cut, estimate_tokens, keywords, language_of, read_part

BLOCK_ORDER = ("tools", "scratchpad", "core", "memories", "summary", "history")


@dataclass(frozen=True)
class Budgets:
    """Token budgets per part of the prompt; `window` is the model's context when derived from it."""

    system: int  # self-description + scratchpad + core memories
    memories: int  # relevant memories for the query
    summary: int  # the session's rolling summary
    history: int  # recent messages
    reserve: int = 0  # left for the reply (seed 004 §4.3)
    window: int | None = None
    model: str | None = None
    # the model is not in context.model_context_windows (nor starts with a name there): its
    # window is the "default" entry's, a guess that may waste or overflow a larger window
    window_fallback: bool = False

    @classmethod
    def fixed(cls, cfg: ContextConfig) -> Budgets:
        return cls(system=cfg.system_tokens, memories=cfg.memory_tokens, summary=cfg.summary_tokens,
                   history=cfg.history_tokens)

    @classmethod
    def for_model(cls, cfg: ContextConfig, model: str) -> Budgets:
        """Seed 004 §4.3: `calculate_budget(model)` over the model table in config."""
        window = context_window(cfg, model)
        table = cfg.model_context_windows
        fallback = model not in table and not any(model.startswith(n) for n in table if n != "default")
        short = int(window * cfg.split_short_term)
        summary = int(short * cfg.split_summary)
        return cls(system=int(window * cfg.split_system), memories=int(window * cfg.split_long_term),
                   summary=summary, history=short - summary, reserve=int(window * cfg.split_reserve),
                   window=window, model=model, window_fallback=fallback)


def context_window(cfg: ContextConfig, model: str) -> int:
    """The model's window: exact name, else the longest table name it starts with
    ("gpt-4o-2024-08-06" → gpt-4o), else the "default" entry (seed 004: 8192)."""
    table = cfg.model_context_windows
    if model in table:
        return table[model]
    prefixes = [name for name in table if name != "default" and model.startswith(name)]
    if prefixes:
        return table[max(prefixes, key=len)]
    return table.get("default", 8192)


@dataclass
class Block:
    """One part of the prompt: its text, its tokens and the budget it had."""

    name: str
    text: str
    budget: int
    items: int = 0

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens, "budget": self.budget, "items": self.items,
                "text": self.text}


@dataclass
class Context:
    """What `Memory.build_context` returns."""

    session_id: str | None
    user_id: str
    agent_id: str
    query: str | None
    language: str
    budgets: Budgets
    blocks: list[Block]
    history: list[WindowMessage] = field(default_factory=list)
    memories: list[Hit] = field(default_factory=list)  # the relevant hits injected
    core: list[MemoryRecord] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """What the caller should know about how this context was built (empty: nothing)."""
        b = self.budgets
        if b.window_fallback:
            return [f"model {b.model!r} is not in context.model_context_windows: budgets assume the default "
                    f"window of {b.window} tokens; add the model there to use its real window"]
        return []

    def block(self, name: str) -> Block:
        for b in self.blocks:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    def render(self, *, include_history: bool = True) -> str:
        return "\n\n".join(b.text for b in self.blocks if b.text and (include_history or b.name != "history"))

    @property
    def system_prompt(self) -> str:
        """Every block as one system prompt, history included."""
        return self.render()

    def messages(self) -> list[dict[str, Any]]:
        """OpenAI chat messages: the system prompt without history, then the history as messages
        (an assistant's `tool_calls` and the `tool` replies round-trip, `messages.chat_messages`)."""
        return [{"role": "system", "content": self.render(include_history=False)}, *chat_messages(self.history)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id, "user_id": self.user_id, "agent_id": self.agent_id,
            "query": self.query, "language": self.language, "tokens": self.tokens,
            "budgets": {"system": self.budgets.system, "memories": self.budgets.memories,
                        "summary": self.budgets.summary, "history": self.budgets.history,
                        "reserve": self.budgets.reserve, "window": self.budgets.window,
                        "model": self.budgets.model, "window_fallback": self.budgets.window_fallback},
            "warnings": self.warnings,
            "blocks": [b.to_dict() for b in self.blocks],
            "system_prompt": self.system_prompt,
        }


# ---- generic packing (reused by retrieval) -----------------------------------------------


@dataclass
class Packed:
    hits: list[Hit]
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def render_hit(hit: Hit, snippet_chars: int = 300, now: datetime | None = None) -> str:
    """Seed 000: `[source] content`, content cut at 300 characters with a visible marker. A
    fact that changed says when it held (issue 32): "(2019-06-01 – 2024-03-15, replaced)" on
    the old one, "(since 2024-03-15)" on the one that replaced it — a question about the
    change sees the chain, one version a line. With `now`, a change told ahead of its date
    reads "(until 2024-09-01)" on the version that still holds, "(from 2024-09-01)" on the next."""
    line = f"[{hit.source}] {cut(' '.join(hit.content.split()), snippet_chars)}"
    m = hit.memory
    if m is not None and (m.status == "superseded" or now is not None and m.replaced(now)):
        return f"{line} ({supersession.span(m)}, replaced)"
    changed = m is not None and (m.supersedes or m.superseded_by)
    return f"{line} ({supersession.span(m, now)})" if m is not None and changed else line


def pack(hits: Sequence[Hit], max_tokens: int, max_hits: int, *, snippet_chars: int = 300,
         heading: str = "", now: datetime | None = None) -> Packed:
    """Hits in rank order, one line each, until the next would pass `max_tokens` or `max_hits`.

    Nothing at all (no heading either) when no hit fits: an empty block costs no tokens.
    """
    lines = [heading] if heading else []
    taken: list[Hit] = []
    for hit in hits[:max_hits]:
        line = render_hit(hit, snippet_chars, now)
        if estimate_tokens("\n".join([*lines, line])) > max_tokens:
            break  # seed 000: accumulate until the budget is approached
        lines.append(line)
        taken.append(hit)
    return Packed(taken, "\n".join(lines) if taken else "")


def fit(text: str, max_tokens: int) -> str:
    """`text`, or its longest prefix (with a marker) within `max_tokens`; "" when nothing fits."""
    if estimate_tokens(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid].rstrip() + "…") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…" if lo else ""


# ---- the blocks ----------------------------------------------------------------------------

_HEAD = {
    "zh": {"tools": "# 记忆系统", "core": "# 历史记忆", "core_intro": "关于用户的关键信息：",
           "memories": "## 相关记忆", "summary": "## 此前对话摘要", "history": "## 最近对话"},
    "en": {"tools": "# Memory system", "core": "# Memory", "core_intro": "Key facts about the user:",
           "memories": "## Relevant memories", "summary": "## Earlier in this conversation",
           "history": "## Recent conversation"},
}

# seed 002 §3/§6: the self-description tells the model the two search levels and when to use them
_SELF = {
    "zh": (
        "你拥有跨会话的长期记忆，下面只是其中一小部分。需要时用工具查：\n"
        "- search_memory(query)：第一级，搜索提炼过的记忆（偏好、规则、事实、经验）和以往会话的摘要。"
        "涉及历史经验、用户偏好或以前的事时先用它。\n"
        "- search_conversation_traces(query)：第二级，搜索原始对话记录（含工具参数和返回值）。摘要不够详细时再用。\n"
        "- recall_memory(query)：搜索已归档的低分记忆。\n"
        "- remember(content) / forget(memory_id)：用户要求记住或忘记某事时使用。\n"
        "- update_scratchpad(current_focus, finished_task)：更新当前任务、记录完成的任务。"
    ),
    "en": (
        "You have long-term memory across conversations; what follows is only a small part of it. "
        "Use the tools when you need more:\n"
        "- search_memory(query): level 1, distilled memories (preferences, rules, facts, experience) and "
        "summaries of past sessions. Use it first when past experience, the user's preferences or earlier "
        "events could matter.\n"
        "- search_conversation_traces(query): level 2, the raw past conversation including tool arguments "
        "and results. Use it when a summary is not detailed enough.\n"
        "- recall_memory(query): archived, low-score memories.\n"
        "- remember(content) / forget(memory_id): when the user asks you to remember or forget something.\n"
        "- update_scratchpad(current_focus, finished_task): keep the current task up to date."
    ),
}
_INJECTED = {"zh": "与当前消息相关的记忆已附在下方。", "en": "Memories relevant to the current message are included below."}
_NOT_INJECTED = {"zh": "记忆不会自动注入：需要时请主动搜索。", "en": "Nothing is injected automatically: search when you need it."}


def self_description(language: str, auto_inject: bool) -> str:
    lang = language if language in _SELF else "en"
    note = (_INJECTED if auto_inject else _NOT_INJECTED)[lang]
    return f"{_HEAD[lang]['tools']}\n{_SELF[lang]}\n{note}"


def core_memories(memory: Parts, scope: Scope, cfg: ContextConfig) -> list[MemoryRecord]:
    """Seed 001 §4.1: pinned, then score ≥ 0.5, best first, top 20; expired ones never, nor a
    version a change dated in the past replaced (issue 32)."""
    now = memory.clock()
    out: list[MemoryRecord] = []
    order = "pinned DESC, score DESC, updated_at DESC"  # an agent also reads its user's (Scope.readable)
    mems = [m for s in scope.readable() for m in memory.store.list_memories(s, status="active", order=order)]
    for mem in sorted(mems, key=lambda m: (m.pinned, m.score, m.updated_at), reverse=True):
        if mem.expires_at is not None and mem.expires_at <= now or mem.replaced(now):
            continue
        if not mem.pinned and mem.score < cfg.core_min_score:
            break  # ordered: every later one is lower and unpinned
        out.append(mem)
        if len(out) >= cfg.core_top_k:
            break
    return out


def _core_block(mems: Sequence[MemoryRecord], language: str, budget: int, snippet_chars: int,
                now: datetime) -> tuple[Block, int]:
    head = f"{_HEAD[language]['core']}\n\n{_HEAD[language]['core_intro']}"
    lines: list[str] = []
    for mem in mems:
        line = f"- {cut(' '.join(mem.content.split()), snippet_chars)}"
        # a fact that changed: since when (or, told ahead of its date, from or until when)
        line += f" ({supersession.span(mem, now)})" if mem.supersedes or mem.superseded_by else ""
        if estimate_tokens("\n".join([head, *lines, line])) > budget:
            break
        lines.append(line)
    return Block("core", "\n".join([head, *lines]) if lines else "", budget, len(lines)), len(lines)


def _history_block(msgs: Sequence[WindowMessage], heading: str, budget: int) -> Block:
    if not msgs:
        return Block("history", "", budget)
    return Block("history", "\n".join([heading, *(m.line() for m in msgs)]), budget, len(msgs))


def _file_hits(memory: Finding, scope: Scope, query: str, turns: Sequence[Turn], budget: int,
               shown: set[str], heading: str) -> tuple[list[Hit], str]:
    """Seed 000's retrieval (`context.memory_source = "files"`): keywords + BM25 over MEMORY.md's
    entries, memory/ and memory/summary/, under `## Memory`; see `memlane.archive.context_block`."""
    text, found = context_block(memory, scope, query, [t.content for t in turns[-5:]], budget, shown, heading)
    hits = [Hit(corpus="memories", id=h.memory_id, content=h.content, score=h.score, source=h.path)
            if h.memory_id else Hit(corpus="turns", id=h.path, content=h.content, score=h.score, source=h.path)
            for h in found]
    return hits, text


def build_context(
    memory: Finding,
    session_id: str | None,
    *,
    user_id: str,
    agent_id: str | None = None,
    query: str | None = None,
    model: str | None = None,
) -> Context:
    """Assemble the blocks; see the module docstring."""
    cfg = memory.config.context
    scope = Scope.of(user_id, agent_id)
    budgets = Budgets.for_model(cfg, model) if model else Budgets.fixed(cfg)

    session = None
    if session_id is not None:
        session = memory.store.get_session(scope, session_id)
        if session is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}; "
                           "add messages to it (or call start_session) first")
    turns = window_turns(memory, scope, session, cfg.history_max_messages,
                         cfg.history_min_messages) if session else []
    core = core_memories(memory, scope, cfg) if cfg.core_memories else []

    # the language of the user: the query, else what they said last, else their memories
    said = " ".join(t.content for t in turns if t.role == "user")[-2000:]
    language = language_of(" ".join([query or "", said, *(m.content for m in core[:5])]))

    blocks: list[Block] = []
    # system group: self-description, scratchpad, core memories share one budget, in that order
    left = budgets.system
    tools_text = fit(self_description(language, cfg.auto_inject_memories), left) if cfg.tool_instructions else ""
    blocks.append(Block("tools", tools_text, left))
    left -= estimate_tokens(tools_text)
    pad_text = fit(render_scratchpad(memory.store.get_scratchpad(scope), language), max(left, 0))
    blocks.append(Block("scratchpad", pad_text, max(left, 0), 1 if pad_text else 0))
    left -= estimate_tokens(pad_text)
    core_block, n_core = _core_block(core, language, max(left, 0), cfg.snippet_chars, memory.clock())
    blocks.append(core_block)
    core = core[:n_core]

    # relevant memories for the query (seed 000), unless the profile relies on the tools (seed 002)
    hits: list[Hit] = []
    mem_text = ""
    # a query without words (「？」, an emoji) has nothing to be relevant to; a long message (a
    # pasted page) is searched by its start and end: a query's cost is bounded
    asked = read_part(query, memory.config.search.query_read_chars) if query else query
    if cfg.auto_inject_memories and asked and keywords(asked) and cfg.memory_source == "files":
        hits, mem_text = _file_hits(memory, scope, asked, turns, budgets.memories, {m.id for m in core},
                                    cfg.memory_heading or _HEAD[language]["memories"])
    elif cfg.auto_inject_memories and asked and keywords(asked):
        shown = {m.id for m in core}
        # seed 000 "无命中时不注入": only memories relevant by an absolute measure. Showing a
        # memory is not using it (seed 003): never activates; `Memory.feedback` judges use
        found = memory.search(asked, user_id=user_id, agent_id=agent_id, limit=cfg.memory_max_hits + len(shown),
                              activate=False, min_score=memory.config.search.min_relevance)
        packed = pack([h for h in found if h.id not in shown], budgets.memories, cfg.memory_max_hits,
                      snippet_chars=cfg.snippet_chars, heading=cfg.memory_heading or _HEAD[language]["memories"],
                      now=memory.clock())
        hits, mem_text = packed.hits, packed.text
    blocks.append(Block("memories", mem_text, budgets.memories, len(hits)))

    summary = session.summary.strip() if session else ""
    summary_text = fit(f"{_HEAD[language]['summary']}\n{summary}", budgets.summary) if summary else ""
    blocks.append(Block("summary", summary_text, budgets.summary, 1 if summary_text else 0))

    heading = _HEAD[language]["history"]
    window = select_window(
        turns, max_tokens=budgets.history - estimate_tokens(heading + "\n"),
        min_messages=cfg.history_min_messages, max_messages=cfg.history_max_messages,
        cut_chars=cfg.message_cut_chars,
    )
    blocks.append(_history_block(window, heading, budgets.history))

    if session is not None:  # issue 6: `Memory.feedback` judges which of these the reply used
        record_injected(memory, scope, session.id,
                        [m.id for m in core] + [h.id for h in hits if h.corpus == "memories"])
    return Context(session_id=session_id, user_id=scope.user_id, agent_id=scope.agent_id, query=query,
                   language=language, budgets=budgets, blocks=blocks, history=window, memories=hits, core=core)


__all__ = ["BLOCK_ORDER", "Block", "Budgets", "Context", "Packed", "build_context", "context_window", "fit",
           "pack", "render_hit", "self_description"]
