"""Short-term memory: a session's window, its compaction, episodes, and the scratchpad.

- Window (seeds 000, 004 §4): from the newest turn backwards within a token budget, at least
  5 and at most 20 messages, each cut at 500 characters — assistant replies are cut further
  first when the minimum would not fit — and duplicates (same created_at + text) dropped.
- Compaction (seed 004 §4.2, seed 003 working memory): past the cap, the older half of the
  uncompacted turns is summarised into `Session.summary`; the turns stay stored and
  searchable, only the window stops showing them.
- Scratchpad (seed 002 §4): the current focus and the last finished tasks, per scope.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memlane import forgotten
from memlane.episodes import make_episode, summarize
from memlane.errors import ValidationError
from memlane.events import Event
from memlane.models import Episode, Role, Scope, Scratchpad, Session, Turn, new_id
from memlane.parts import Parts, SessionParts
from memlane.text import estimate_tokens

log = logging.getLogger(__name__)

_CUT_FLOOR = 40  # chars an assistant reply keeps before user messages are cut further
_MARK = "…"


@dataclass(frozen=True)
class WindowMessage:
    """One message of the window, possibly cut; `turn` is the stored original."""

    turn: Turn
    content: str
    cut: bool

    @property
    def role(self) -> Role:
        return self.turn.role

    def line(self) -> str:
        who = f"{self.turn.role}:{self.turn.name}" if self.turn.role == "tool" and self.turn.name else self.turn.role
        return f"[{who}] {self.content}"

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.line() + "\n")

    def chat(self) -> dict[str, Any]:
        """The message in OpenAI chat format (tool calls are described in the text)."""
        if self.turn.role == "tool":  # a tool reply without its call id is invalid for most APIs
            return {"role": "user", "content": f"[tool {self.turn.name or ''} result] {self.content}".strip()}
        return {"role": self.turn.role, "content": self.content}


def _shorten(text: str, limit: int) -> tuple[str, bool]:
    text = text.strip()
    if len(text) <= limit:
        return text, False
    return text[:max(0, limit)].rstrip() + _MARK, True


def _text(turn: Turn) -> str:
    if turn.content.strip():
        return turn.content
    names = [str((c.get("function") or {}).get("name") or c.get("name") or "?") for c in turn.tool_calls or []]
    return f"(calls {', '.join(names)})" if names else ""


def dedup(turns: Sequence[Turn]) -> list[Turn]:
    """Seed 000: created_at + text is the natural key; the first copy wins."""
    seen: set[tuple[datetime, str]] = set()
    out: list[Turn] = []
    for t in turns:
        key = (t.created_at, t.content)
        if t.content and key in seen:
            continue
        seen.add(key)
        out.append(t)
    return out


def select_window(
    turns: Sequence[Turn],
    *,
    max_tokens: int,
    min_messages: int = 5,
    max_messages: int = 20,
    cut_chars: int = 500,
) -> list[WindowMessage]:
    """The window over `turns` (oldest first), newest backwards, within `max_tokens`.

    The budget is never exceeded: when even the minimum number of messages does not fit at
    `cut_chars`, assistant replies are cut shorter first, then every message; only when the
    labels alone do not fit are messages below the minimum dropped.
    """
    pool = dedup(turns)[-max_messages:][::-1]  # newest first
    if not pool or max_tokens <= 0:
        return []
    limits = {"assistant": cut_chars, "other": cut_chars}

    def build(n: int) -> list[WindowMessage]:
        msgs = []
        for t in pool[:n]:
            text, was_cut = _shorten(_text(t), limits["assistant" if t.role == "assistant" else "other"])
            msgs.append(WindowMessage(t, text, was_cut))
        return msgs

    def total(msgs: Sequence[WindowMessage]) -> int:
        return sum(m.tokens for m in msgs)

    # newest backwards until the budget is approached (seed 004 §4.1)
    chosen = build(len(pool))
    n = 0
    used = 0
    for m in chosen:
        if used + m.tokens > max_tokens:
            break
        used += m.tokens
        n += 1
    need = min(min_messages, len(pool))
    if n >= need:
        return chosen[:n][::-1]
    # the minimum does not fit: cut assistant replies first, then everything (seed 000)
    msgs = build(need)
    while total(msgs) > max_tokens:
        if limits["assistant"] > _CUT_FLOOR:
            limits["assistant"] = max(_CUT_FLOOR, limits["assistant"] * 2 // 3)
        elif limits["other"] > _CUT_FLOOR:
            limits["other"] = max(_CUT_FLOOR, limits["other"] * 2 // 3)
        elif limits["assistant"] > 0 or limits["other"] > 0:
            limits["assistant"] = limits["other"] = max(limits["assistant"], limits["other"]) * 2 // 3
        elif need > 0:
            need -= 1  # the budget is smaller than the labels: it wins over the minimum
        else:
            break
        msgs = build(need)
    return msgs[::-1]


# ---- sessions --------------------------------------------------------------------------


def start_session(memory: Parts, scope: Scope, session_id: str | None, metadata: dict[str, Any] | None) -> Session:
    sid = session_id if session_id is not None else new_id(12)
    if not isinstance(sid, str) or not sid.strip() or len(sid) > 256:
        raise ValidationError("session_id", "must be a non-empty string of at most 256 characters")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError("metadata", "must be a JSON object (dict)")
    with memory.store.transaction():
        session = memory.store.get_session(scope, sid)
        if session is None:
            session = Session(id=sid, user_id=scope.user_id, agent_id=scope.agent_id,
                              started_at=memory.clock(), metadata=dict(metadata or {}))
        else:  # resuming: the session is open again
            session.ended_at = None
            session.metadata.update(metadata or {})
        memory.store.put_session(session)
    return session


def compacted_through(session: Session) -> int:
    return int(session.metadata.get("compacted_through", 0))


def window_turns(memory: Parts, scope: Scope, session: Session, max_messages: int, min_messages: int) -> list[Turn]:
    """The newest turns the window may show, oldest first: uncompacted ones, and compacted
    ones only as far back as needed to reach the minimum."""
    # dedup can drop some, so read a few more than the window can hold
    newest = memory.store.get_turns(scope, session_id=session.id, newest_first=True, limit=max_messages * 2 + 10)
    through = compacted_through(session)
    fresh = [t for t in newest if t.seq > through]
    if len(fresh) < min_messages:
        fresh = newest[:max(min_messages, len(fresh))]
    return fresh[::-1]


def maybe_compact(memory: SessionParts, scope: Scope, session_id: str) -> bool:
    """Compact while the uncompacted turns exceed the cap; True when anything was compacted."""
    cap = memory.config.session.compaction_cap
    compacted = False
    for _ in range(64):  # each round halves the backlog; the bound only guards against a bug
        session = memory.store.get_session(scope, session_id)
        if session is None:
            return compacted
        through = compacted_through(session)
        if memory.store.next_seq(scope, session_id) - 1 - through <= cap:  # seqs are dense: no read needed
            return compacted
        # only what is past the compacted part: a long session's earlier turns are not read again
        pending = memory.store.get_turns(scope, session_id=session_id, after_seq=through)
        if len(pending) <= cap:
            return compacted
        compact(memory, scope, session, pending[: len(pending) // 2])
        compacted = True
    return compacted


def compact(memory: SessionParts, scope: Scope, session: Session, turns: Sequence[Turn]) -> Session:
    """Summarise `turns` into the session's rolling summary (LLM outside any transaction)."""
    if not turns:
        return session
    cfg = memory.config.session
    last = max(t.seq for t in turns)
    # what the person asked to forget is not summarised (the summary becomes the companion's
    # episode memory), nor kept from an earlier summary (issue 30)
    meta = (memory.store.get_session(scope, session.id) or session).metadata
    kept = forgotten.turns_kept(meta, turns, memory.config)
    previous = forgotten.lines_kept(meta, session.summary, memory.config)
    summary = summarize(memory.llm, kept, previous, max_lines=cfg.summary_max_lines,
                        max_tokens=cfg.summary_tokens_max,
                        turn_chars=memory.config.extraction.offline_turn_chars) if kept else previous
    with memory.store.transaction():
        current = memory.store.get_session(scope, session.id) or session
        if compacted_through(current) >= last:  # another process compacted this range meanwhile
            return current
        current.summary = summary
        current.metadata["compacted_through"] = last
        current.metadata["compactions"] = int(current.metadata.get("compactions", 0)) + 1
        memory.store.put_session(current)
    log.info("session %s: compacted turns through #%d", session.id, last)
    # seed 003 "超过 30 条时摘要": the summary of a history past the cap is an episode memory now,
    # not only once the session ends
    episode_memory(memory, scope, current.id, current.started_at, summary,
                   "the session's history passed the cap again; its episode was rewritten")
    # seeds 001 §5.1 / 002 §6: compaction is an extraction trigger too (a failed run stays queued)
    memory.extract(session.id, user_id=scope.user_id, agent_id=scope.agent_id or None, through_seq=last)
    return current


def write_episode(memory: SessionParts, event: Event, *, offline: bool = False) -> Episode | None:
    """The `episode` action: one episode per ended session of ≥ episode_min_messages turns
    (seed 004 §6.1); a session that ends again gets its episode rewritten. `offline`: the
    extractive episode, without the LLM (written at once; the LLM's rewrite follows)."""
    session_id = str(event.payload["session_id"])
    scope = event.scope
    turns = memory.store.get_turns(scope, session_id=session_id)
    if len(turns) < memory.config.session.episode_min_messages:
        return None
    # what the person asked to forget is not written back into memory as the episode (issue 30)
    session = memory.store.get_session(scope, session_id)
    turns = forgotten.turns_kept(session.metadata if session else {}, turns, memory.config)
    episode = make_episode(None if offline else memory.llm, scope, session_id, turns, memory.clock(),
                           max_lines=memory.config.session.summary_max_lines,
                           turn_chars=memory.config.extraction.offline_turn_chars)
    with memory.store.transaction():
        for old in memory.store.list_episodes(scope, session_id=session_id):
            memory.store.delete_episode(scope, old.id)
        memory.store.insert_episode(episode)
    episode_memory(memory, scope, session_id, episode.started_at, episode.summary,
                   "the session ended; its episode was rewritten")
    return episode


def episode_memory(memory: SessionParts, scope: Scope, session_id: str, started_at: datetime, summary: str,
                   why: str) -> None:
    """Seed 003's episodic layer: "[2026-01-03 18:00] 聊了面试、游戏" in the knowledge base, where
    the per-category decay (×0.8 after 7 days, gone at 14) ages it. One per session, rewritten
    when its history passes the cap (compaction) and when it ends."""
    if not (memory.config.session.episode_memory and "episode" in memory.config.policy.categories):
        return
    if not summary.strip():
        return
    for old_mem in memory.store.list_memories(scope, category="episode", session_id=session_id):
        memory.delete(old_mem.id, user_id=scope.user_id, agent_id=scope.agent_id or None,
                      actor="episode", reason=why)
    lines = (line.strip().removeprefix("- ") for line in summary.split("\n"))
    text = f"[{started_at:%Y-%m-%d %H:%M}] " + " ".join(line for line in lines if line)
    memory.add(text[: memory.config.store.max_content_chars], user_id=scope.user_id,
               agent_id=scope.agent_id or None, category="episode", source="system", session_id=session_id,
               importance="low", actor="episode")  # low: found by search, not a core memory


# ---- scratchpad ------------------------------------------------------------------------


def update_scratchpad(memory: Parts, scope: Scope, *, focus: str | None, done: str | None) -> Scratchpad:
    """Set the current focus and/or record a finished task (seed 002 §4).

    A new focus moves the previous one into the recent tasks (the topic switched);
    `done` records a finished task, and clears the focus when it names it.
    """
    for name, value in (("focus", focus), ("done", done)):
        if value is not None and (not isinstance(value, str) or len(value) > 2000):
            raise ValidationError(name, "must be a string of at most 2000 characters")
    now = memory.clock()
    with memory.store.transaction():
        pad = memory.store.get_scratchpad(scope) or Scratchpad(
            user_id=scope.user_id, agent_id=scope.agent_id, updated_at=now)
        tasks = list(pad.recent_tasks)
        current = pad.current_focus
        if done is not None and done.strip():
            tasks.append({"task": done.strip(), "done_at": now.isoformat()})
            if done.strip() == current:
                current = ""
        if focus is not None and focus.strip() != current:
            if current:
                tasks.append({"task": current, "done_at": now.isoformat()})
            current = focus.strip()
        keep = memory.config.session.scratchpad_recent
        pad = Scratchpad(user_id=scope.user_id, agent_id=scope.agent_id, current_focus=current,
                         recent_tasks=tasks[-keep:], updated_at=now)
        memory.store.put_scratchpad(pad)
    return pad


def render_scratchpad(pad: Scratchpad | None, language: str) -> str:
    if pad is None or (not pad.current_focus and not pad.recent_tasks):
        return ""
    zh = language == "zh"
    lines = ["## 当前任务" if zh else "## Scratchpad"]
    if pad.current_focus:
        lines.append(("当前任务：" if zh else "Current focus: ") + pad.current_focus)
    if pad.recent_tasks:
        lines.append("近期完成：" if zh else "Recently finished:")
        for task in pad.recent_tasks[::-1]:
            when = str(task.get("done_at", ""))[:16].replace("T", " ")
            lines.append(f"- {task.get('task', '')}" + (f" ({when})" if when else ""))
    return "\n".join(lines)


