"""Summaries of conversation: the rolling compaction summary and the episode of a session.

With an LLM the prompts of `memlane.llm.prompts.summary` write them; without one (or when
the LLM fails) an extractive summary picks the turns that carry the session's recurring
words, so the result is always made of what was actually said.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from memlane.errors import BackendError, ExtractionError
from memlane.llm import LLM
from memlane.llm.prompts.summary import EPISODE_SCHEMA, compaction_messages, episode_messages
from memlane.models import Episode, Scope, Turn, new_id
from memlane.text import cut, estimate_tokens, keywords, language_of

log = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s")


def conversation_language(turns: Sequence[Turn]) -> str:
    return language_of(" ".join(t.content for t in turns[:50]))


def first_sentence(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    parts = [p for p in _SENTENCE_END.split(text) if p and p.strip()]
    return cut(parts[0] if parts else text, max_chars)


def extractive_summary(turns: Sequence[Turn], max_lines: int, line_chars: int = 160,
                       turn_chars: int | None = None) -> str:
    """The `max_lines` turns whose keywords recur most in the segment, in order, one line each;
    each turn read by its first `turn_chars` characters (extraction.offline_turn_chars)."""
    spoken = [t for t in turns if t.role in ("user", "assistant") and t.content.strip()]
    if not spoken:
        return ""
    words = [set(keywords(t.content[:turn_chars])) for t in spoken]
    df = Counter(w for ws in words for w in ws)

    def weight(i: int) -> float:
        shared = sum(1 for w in words[i] if df[w] > 1)
        # the user's words state intent; a bare "ok" has no keywords and drops out
        return shared + len(words[i]) * 0.1 + (0.5 if spoken[i].role == "user" else 0.0)

    chosen = sorted(sorted(range(len(spoken)), key=lambda i: (-weight(i), i))[:max_lines])
    return "\n".join(f"- [{spoken[i].role}] {first_sentence(spoken[i].content, line_chars)}" for i in chosen)


def merge_summaries(previous: str, new: str, max_tokens: int) -> str:
    """Earlier summary + the new one; past `max_tokens` the oldest lines give way (turns stay stored)."""
    merged = f"{previous.strip()}\n{new.strip()}".strip() if previous.strip() else new.strip()
    lines = merged.split("\n")
    while len(lines) > 1 and estimate_tokens("\n".join(lines)) > max_tokens:
        lines.pop(0)
    text = "\n".join(lines)
    return text if estimate_tokens(text) <= max_tokens else cut(text, max_tokens)


def summarize(llm: LLM | None, turns: Sequence[Turn], previous: str, *, max_lines: int, max_tokens: int,
              turn_chars: int | None = None) -> str:
    """The new rolling summary of a session after `turns` are compacted (seed 004 §4.2)."""
    if llm is not None:
        try:
            reply = llm.complete(compaction_messages(turns, previous, conversation_language(turns))).strip()
            if reply:
                # the prompt asked the LLM to merge the previous summary in already
                return merge_summaries("", reply, max_tokens)
            log.warning("compaction: the LLM returned an empty summary; using the extractive one")
        except BackendError as exc:  # the turns are stored; an extractive summary keeps the window honest
            log.warning("compaction: LLM summary failed (%s); using the extractive one", exc)
    return merge_summaries(previous, extractive_summary(turns, max_lines, turn_chars=turn_chars), max_tokens)


def tools_used(turns: Sequence[Turn]) -> list[str]:
    names: list[str] = []
    for t in turns:
        for call in t.tool_calls or []:
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            name = str((fn or {}).get("name") or call.get("name") or "").strip()
            if name and name not in names:
                names.append(name)
        if t.role == "tool" and t.name and t.name not in names:
            names.append(t.name)
    return names


def entities(turns: Sequence[Turn], limit: int = 8, turn_chars: int | None = None) -> list[str]:
    """The session's most repeated keywords (first appearance breaks ties), each turn read by
    its first `turn_chars` characters."""
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for t in turns:
        if t.role not in ("user", "assistant"):
            continue
        for w in keywords(t.content[:turn_chars]):
            if len(w) < 2:  # a lone CJK character is rarely a name
                continue
            counts[w] += 1
            order.setdefault(w, len(order))
    ranked = sorted(counts, key=lambda w: (-counts[w], order[w]))
    return ranked[:limit]


def _parse_episode(raw: str) -> dict[str, object]:
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: hostile nesting
        raise ExtractionError(f"episode: the LLM reply is not JSON ({type(exc).__name__})", raw) from None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), str) or not data["summary"].strip():
        raise ExtractionError("episode: the LLM reply has no 'summary' string", raw)
    return data


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if str(v).strip()]


def make_episode(llm: LLM | None, scope: Scope, session_id: str, turns: Sequence[Turn], now: datetime,
                 *, max_lines: int, turn_chars: int | None = None) -> Episode:
    """The episode of one session: summary, goal, outcome, entities, tools used, time span."""
    if not turns:
        raise ValueError("make_episode needs at least one turn")
    used = tools_used(turns)
    user_turns = [t for t in turns if t.role == "user" and t.content.strip()]
    reply_turns = [t for t in turns if t.role == "assistant" and t.content.strip()]
    summary = " ".join(line.removeprefix("- ") for line in extractive_summary(turns, max_lines, turn_chars=turn_chars).split("\n"))
    goal = first_sentence(user_turns[0].content, 200) if user_turns else ""
    outcome = first_sentence(reply_turns[-1].content, 200) if reply_turns else ""
    names = entities(turns, turn_chars=turn_chars)
    tools = used
    if llm is not None:
        try:
            data = _parse_episode(llm.complete(episode_messages(turns, conversation_language(turns)),
                                               json_schema=EPISODE_SCHEMA))
            summary = str(data["summary"]).strip()
            goal = str(data["goal"]).strip() if isinstance(data.get("goal"), str) else goal
            outcome = str(data["outcome"]).strip() if isinstance(data.get("outcome"), str) else outcome
            names = _strings(data.get("entities")) or names
            # tools the turns record are facts; the LLM may only add to them
            tools = used + [n for n in _strings(data.get("tools_used")) if n not in used]
        except BackendError as exc:
            log.warning("episode of %s: LLM failed (%s); using the extractive episode", session_id, exc)
    return Episode(
        id=new_id(), user_id=scope.user_id, agent_id=scope.agent_id, session_id=session_id,
        summary=summary, goal=goal, outcome=outcome, entities=names, tools_used=tools,
        started_at=min(t.created_at for t in turns), ended_at=max(t.created_at for t in turns),
        created_at=now,
    )
