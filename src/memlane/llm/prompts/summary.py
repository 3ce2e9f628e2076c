"""Prompts for the session summaries: compaction (seed 004 §4.2) and episodes (seeds 002, 003).

Each prompt exists in Chinese and English; `language` picks one (text.language_of of the
conversation). The offline fallbacks live in `memlane.episodes`, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane.llm import ChatMessage
from memlane.models import Turn

# seed 004 §4.2 SUMMARIZE_PROMPT, kept in its four points
COMPACTION = {
    "zh": (
        "将以下对话历史压缩为简洁的摘要，保留：\n"
        "1. 用户的核心意图和目标\n"
        "2. 已完成的关键操作和结果\n"
        "3. 重要的决策和上下文\n"
        "4. 未解决的问题\n\n"
        "不要保留寒暄、重复内容、中间调试过程。只输出摘要正文。"
    ),
    "en": (
        "Compress the conversation history below into a concise summary. Keep:\n"
        "1. the user's core intent and goals\n"
        "2. key actions taken and their results\n"
        "3. important decisions and context\n"
        "4. open questions\n\n"
        "Drop small talk, repetition and intermediate debugging. Reply with the summary text only."
    ),
}

PREVIOUS = {
    "zh": "此前对话的摘要（请与新内容合并为一份摘要）：\n",
    "en": "Summary of the conversation before this part (merge it with the new content into one summary):\n",
}

# seed 002 §4 (episode fields) and seed 003 (episodic layer: "what did we talk about")
EPISODE = {
    "zh": (
        "你在为一次已结束的会话写情节记忆。阅读对话，输出 JSON：\n"
        '{"summary": "2-4 句话的摘要：聊了什么、做了什么", '
        '"goal": "用户这次想达成什么", "outcome": "结果如何（完成/未完成/结论）", '
        '"entities": ["涉及的人、项目、地点、文件等"], "tools_used": ["用到的工具名"]}\n'
        "只写对话中出现过的内容，不要编造。"
    ),
    "en": (
        "You are writing the episodic memory of a session that just ended. Read the conversation "
        "and reply with JSON:\n"
        '{"summary": "2-4 sentences: what was discussed and done", '
        '"goal": "what the user wanted this time", "outcome": "how it ended (done / not done / conclusion)", '
        '"entities": ["people, projects, places, files involved"], "tools_used": ["names of tools used"]}\n'
        "Only state what the conversation contains; do not invent."
    ),
}

EPISODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "goal": {"type": "string"},
        "outcome": {"type": "string"},
        "entities": {"type": "array", "items": {"type": "string"}},
        "tools_used": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["summary"],
}


def transcript(turns: Sequence[Turn], max_chars: int = 2000) -> str:
    """`[role] content` lines, each cut so one long paste cannot crowd out the rest."""
    lines = []
    for t in turns:
        text = t.content.strip()
        if t.tool_calls:
            names = [str((c.get("function") or {}).get("name") or c.get("name") or "?") for c in t.tool_calls]
            text = (text + " " if text else "") + f"(calls {', '.join(names)})"
        if len(text) > max_chars:
            text = text[:max_chars] + "…"
        who = f"{t.role}:{t.name}" if t.role == "tool" and t.name else t.role
        lines.append(f"[{who}] {text}")
    return "\n".join(lines)


def compaction_messages(turns: Sequence[Turn], previous: str, language: str) -> list[ChatMessage]:
    lang = language if language in COMPACTION else "en"
    user = transcript(turns)
    if previous.strip():
        user = PREVIOUS[lang] + previous.strip() + "\n\n---\n" + user
    return [{"role": "system", "content": COMPACTION[lang]}, {"role": "user", "content": user}]


def episode_messages(turns: Sequence[Turn], language: str) -> list[ChatMessage]:
    lang = language if language in EPISODE else "en"
    return [{"role": "system", "content": EPISODE[lang]}, {"role": "user", "content": transcript(turns)}]


__all__ = ["COMPACTION", "EPISODE", "EPISODE_SCHEMA", "compaction_messages", "episode_messages", "transcript"]
