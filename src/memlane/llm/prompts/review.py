"""The reviewer prompt (seed 003, MemoryReviewer): should a memory be promoted to core, kept,
or deleted? Two modes — `promote` when its score reached the promotion threshold, `decay`
when it fell below the review threshold. The reviewer may ask for up to N searches
(`SEARCH` with a query) before it decides; the caller runs them and calls again with the
results (`searches`), and forces a decision when no rounds are left.

The prompt asks for JSON; seed 003's own answer form — "[SEARCH:关键词]", "[PROMOTE]",
"[KEEP]", "[DELETE]", one a line, with prose, list markers or the memory's id around it —
is read alike (`read_brackets`, the monitor's line reader).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from memlane.errors import ExtractionError
from memlane.llm.prompts import Prompt, bracket_lines, numbered
from memlane.llm.prompts.extraction import memory_line
from memlane.models import MemoryRecord

ReviewMode = Literal["promote", "decay"]

log = logging.getLogger(__name__)


class ReviewAnswer(BaseModel):
    """PROMOTE / KEEP / DELETE, or SEARCH with a query while rounds are left."""

    decision: Literal["PROMOTE", "KEEP", "DELETE", "SEARCH"]
    query: str | None = Field(None, description="what to search for (SEARCH only)")
    reason: str = ""


_DECISIONS = ("PROMOTE", "KEEP", "DELETE")
# "[KEEP]", "[KEEP:mem_123] 理由", "[SEARCH:关键词]", "[SEARCH] keywords"
_LINE = re.compile(r"^\[\s*(PROMOTE|KEEP|DELETE|SEARCH)\s*(?::\s*([^\]]*?))?\s*\]\s*(.*)$", re.IGNORECASE | re.DOTALL)


def read_brackets(text: str, memory_id: str) -> ReviewAnswer | None:
    """Seed 003's bracket answer as a `ReviewAnswer`; None when the reply has no bracket line
    (or opens as JSON). A chain of thought may search and then decide, so the last decision
    line wins and a SEARCH counts only without one. A decision naming another memory's id
    (the related memories are shown with theirs) is not about this one and is ignored;
    `ExtractionError` when only such lines remain, so the memory is left for the next run."""
    lines = bracket_lines(text, (*_DECISIONS, "SEARCH"))
    if lines is None:
        return None
    parsed = [(m.group(1).upper(), (m.group(2) or "").strip().strip("[]").strip(), m.group(3).strip())
              for line in lines if (m := _LINE.match(line))]
    decisions = [p for p in parsed if p[0] in _DECISIONS]
    mine = [p for p in decisions if not p[1] or p[1] == memory_id]
    if mine:
        kind, _, reason = mine[-1]
        return ReviewAnswer.model_validate({"decision": kind, "reason": reason})
    if decisions:
        log.warning("review of %s: the answer decides only about other memories: %s", memory_id,
                    ", ".join(f"{k}:{i}" for k, i, _ in decisions))
        raise ExtractionError(f"LLM answer decides about {decisions[-1][1]!r}, not the memory under review "
                              f"{memory_id!r}", raw=text)
    searches = [p for p in parsed if p[0] == "SEARCH"]
    if not searches:
        return None
    _, query, rest = searches[0]
    return ReviewAnswer(decision="SEARCH", query=query or rest or None)


@dataclass(frozen=True)
class ReviewPrompt(Prompt[ReviewAnswer]):
    """The reviewer's prompt; its answer is read in seed 003's bracket form or as JSON."""

    memory_id: str = ""

    def parse(self, text: str) -> ReviewAnswer:
        found = read_brackets(text, self.memory_id)
        return found if found is not None else super().parse(text)


_SYSTEM = {
    "zh": {
        "promote": """你在审核一条记忆是否应升级为核心记忆（永不衰减）。
核心记忆是长期稳定的重要事实：用户的姓名、生日；长期稳定的喜好；重要约定。
不是核心记忆的：临时状态（"用户今天很累"）；短期计划；只是最近常聊、但不是长期事实的话题。""",
        "decay": """你在审核一条分数已经很低的记忆：删除还是保留？
想一想：这条记忆还有价值吗？是否已有更新的记忆取代了它？删除它会不会让助手忘记重要的事？""",
        "rules": """可以先搜索更多相关记忆再决定（还剩 {rounds} 轮搜索）：回答 {{"decision": "SEARCH", "query": "关键词"}}。
最终决策：{allowed}。只输出 JSON：{{"decision": "...", "query": null, "reason": "一句话理由"}}""",
    },
    "en": {
        "promote": """You are reviewing whether a memory should be promoted to a core memory (never decays).
Core memories are stable, important facts: the user's name and birthday; long-standing preferences; important agreements.
Not core: passing states ("the user is tired today"); short-term plans; topics that were merely frequent lately but are not lasting facts.""",
        "decay": """You are reviewing a memory whose score has fallen low: delete it or keep it?
Consider: is it still worth anything? Has a newer memory replaced it? Would deleting it make the assistant forget something important?""",
        "rules": """You may search for more related memories before deciding ({rounds} search rounds left): reply {{"decision": "SEARCH", "query": "keywords"}}.
Final decisions: {allowed}. Reply with JSON only: {{"decision": "...", "query": null, "reason": "one sentence"}}""",
    },
}

_USER = {
    "zh": "待审核的记忆：\n{memory}\n（创建于 {created}，命中 {hits} 次）\n\n相关记忆：\n{related}{searches}",
    "en": "Memory under review:\n{memory}\n(created {created}, hit {hits} times)\n\nRelated memories:\n{related}{searches}",
}
_SEARCH = {"zh": "\n\n搜索「{q}」的结果：\n{hits}", "en": "\n\nResults of searching \"{q}\":\n{hits}"}


def review_prompt(
    memory: MemoryRecord,
    related: Sequence[MemoryRecord],
    *,
    mode: ReviewMode,
    language: str,
    searches: Sequence[tuple[str, Sequence[MemoryRecord]]] = (),
    rounds_left: int = 0,
) -> ReviewPrompt:
    """Messages asking for a review decision. With `rounds_left == 0` SEARCH is not offered."""
    lang = language if language in _SYSTEM else "en"
    texts = _SYSTEM[lang]
    allowed = "PROMOTE / KEEP / DELETE" if mode == "promote" else "KEEP / DELETE"
    rules = texts["rules"].format(rounds=rounds_left, allowed=allowed)
    if rounds_left <= 0:  # the last round must decide
        rules = rules.split("\n", 1)[1]
    shown = "".join(
        _SEARCH[lang].format(q=q, hits=numbered([memory_line(m) for m in hits])) for q, hits in searches
    )
    user = _USER[lang].format(
        memory=memory_line(memory), created=memory.created_at.date().isoformat(), hits=memory.activation_count,
        related=numbered([memory_line(m) for m in related if m.id != memory.id]), searches=shown,
    )
    messages: list[Any] = [
        {"role": "system", "content": texts[mode] + "\n\n" + rules},
        {"role": "user", "content": user},
    ]
    return ReviewPrompt(messages=messages, answer=ReviewAnswer, language=lang, memory_id=memory.id)


__all__ = ["ReviewAnswer", "ReviewMode", "ReviewPrompt", "read_brackets", "review_prompt"]
