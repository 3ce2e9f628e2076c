"""Seed 003's two judgements: the reviewer (PROMOTE / KEEP / DELETE a memory whose score
crossed a threshold, with up to N [SEARCH:keyword] rounds) and "was it used?" (which of the
memories shown to the agent its reply actually used; only those are boosted)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel

from memlane.config import PolicyConfig
from memlane.errors import NotFound, ValidationError
from memlane.llm import LLM, ChatMessage
from memlane.llm.prompts import Prompt, numbered
from memlane.llm.prompts.extraction import memory_line
from memlane.llm.prompts.review import ReviewAnswer, ReviewMode, review_prompt
from memlane.models import MemoryRecord, Scope, Session
from memlane.parts import Finding, Parts, Reviewing
from memlane.policy import (
    ALWAYS_PROTECTED,
    REVIEWED,
    decay_rule,
    kept_at,
    protected,
    reinforced,
    used_overlap,
)
from memlane.text import language_of

log = logging.getLogger(__name__)

INJECTED = "injected"  # session metadata: ids of the memories the last context showed the agent
REVIEW = REVIEWED  # memory metadata: the reviewer's last decision


# ---- the reviewer (seed 003) -----------------------------------------------------------------


def review_mode(mem: MemoryRecord, pol: PolicyConfig) -> ReviewMode | None:
    """`promote` once a score reaches promote_at (again only after a new use), `decay` while
    it is below review_below — after a KEEP, only once its score has fallen below the one
    KEEP left it at; None when no review is due."""
    if mem.pinned or mem.category in ALWAYS_PROTECTED or decay_rule(mem.category, pol).never:
        return None
    if mem.score >= pol.promote_at and mem.status == "active":
        last = mem.metadata.get(REVIEW)
        if not isinstance(last, dict) or last.get("mode") != "promote":
            return "promote"
        try:
            reviewed = datetime.fromisoformat(str(last.get("at")))
        except ValueError:
            return "promote"
        return "promote" if mem.last_activated > reviewed else None
    if mem.score < pol.review_below and not protected(mem, pol):
        last = mem.metadata.get(REVIEW)
        kept = last.get("score") if isinstance(last, dict) and kept_at(mem) is not None else None
        if isinstance(kept, int | float) and mem.score >= kept:
            return None  # kept, and not fallen since (a profile may keep it below review_below)
        return "decay"
    return None


def _related(memory: Finding, scope: Scope, query: str, exclude: str, k: int = 5) -> list[MemoryRecord]:
    hits = memory.search(query, user_id=scope.user_id, agent_id=scope.agent_id or None, limit=k + 1,
                         filters={"status": None}, activate=False, min_score=0.0)
    return [h.memory for h in hits if h.memory is not None and h.memory.id != exclude][:k]


def review_memory(memory: Finding, scope: Scope, mem: MemoryRecord, mode: ReviewMode, llm: LLM) -> ReviewAnswer:
    """Ask the LLM; it may search memory up to `review_search_rounds` times before deciding."""
    related = _related(memory, scope, mem.content, mem.id)
    rounds = memory.config.policy.review_search_rounds
    searches: list[tuple[str, list[MemoryRecord]]] = []
    language = language_of(mem.content)
    while True:
        left = rounds - len(searches)
        prompt = review_prompt(mem, related, mode=mode, language=language, searches=searches, rounds_left=left)
        answer = prompt.parse(llm.complete(prompt.messages, json_schema=prompt.json_schema))
        if answer.decision != "SEARCH":
            return answer
        query = (answer.query or "").strip()
        if left <= 0 or not query:
            return ReviewAnswer(decision="KEEP", reason="no decision within the search rounds")
        searches.append((query, _related(memory, scope, query, mem.id)))


# ---- "was it used?" (seed 003) ---------------------------------------------------------------


def record_injected(memory: Parts, scope: Scope, session_id: str, ids: list[str]) -> None:
    """Remember which memories the session's latest context showed the agent."""
    with memory.store.transaction():
        session = memory.store.get_session(scope, session_id)
        if session is None:
            return
        session.metadata[INJECTED] = list(dict.fromkeys(ids))
        memory.store.put_session(session)


class UsedAnswer(BaseModel):
    """The ids of the memories the reply actually used."""

    used: list[str] = []
    reason: str = ""


_USED_PROMPT = {
    "zh": """你在判断：助手的回复是否真正用到了注入给它的记忆。
只有当一条记忆真正影响了回复的内容，才算“用到”。例如：检索到“用户喜欢猫”，但助手在聊天气 → 没用到；
检索到“用户很紧张”，助手说“别这么绷着” → 用到了。
只输出 JSON：{"used": ["记忆id", ...], "reason": "一句话理由"}""",
    "en": """You judge whether the assistant's reply actually used the memories it was given.
A memory counts as used only when it shaped what the reply says. For example: "the user likes cats" was retrieved
but the assistant talks about the weather → not used; "the user is tense" was retrieved and the assistant says
"try to relax" → used.
Reply with JSON only: {"used": ["memory id", ...], "reason": "one sentence"}""",
}
_USED_USER = {
    "zh": "注入的记忆：\n{memories}\n\n用户最后说：\n{said}\n\n助手的回复：\n{reply}",
    "en": "Memories given to the assistant:\n{memories}\n\nThe user last said:\n{said}\n\nThe assistant's reply:\n{reply}",
}


def used_prompt(mems: list[MemoryRecord], said: str, reply: str) -> Prompt[UsedAnswer]:
    lang = language_of(reply + " " + said)
    lang = lang if lang in _USED_PROMPT else "en"
    messages: list[ChatMessage] = [
        {"role": "system", "content": _USED_PROMPT[lang]},
        {"role": "user", "content": _USED_USER[lang].format(memories=numbered([memory_line(m) for m in mems]),
                                                             said=said or "-", reply=reply)},
    ]
    return Prompt(messages=messages, answer=UsedAnswer, language=lang)


@dataclass
class FeedbackReport:
    """Which injected memories the reply used (boosted) and which it did not."""

    session_id: str
    judge: str  # "llm", "heuristic", or "none" when nothing was injected
    injected: list[str] = field(default_factory=list)
    used: list[MemoryRecord] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def feedback(memory: Reviewing, scope: Scope, session_id: str, reply: str) -> FeedbackReport:
    """Seed 003: boost (audited BOOST) only the injected memories the reply actually used —
    judged by the LLM when there is one, else by keyword overlap (`policy.used_overlap`)."""
    if not isinstance(reply, str) or not reply.strip():
        raise ValidationError("reply", "must be a non-empty string")
    session = memory.store.get_session(scope, session_id)
    if session is None:
        raise NotFound(f"session {session_id!r} not found for user {scope.user_id!r}")
    ids = [str(i) for i in session.metadata.get(INJECTED) or []]
    mems = [m for m in (memory.store.get_memory(scope, i) for i in ids) if m is not None]
    report = FeedbackReport(session_id, "none", [m.id for m in mems])
    if not mems:
        return report
    pol = memory.config.policy
    if memory.llm is not None:
        report.judge = "llm"
        said = _last_user_text(memory, scope, session)
        prompt = used_prompt(mems, said, reply)
        answer = prompt.parse(memory.llm.complete(prompt.messages, json_schema=prompt.json_schema))
        used = {str(i).strip().strip("[]") for i in answer.used}
    else:
        report.judge = "heuristic"
        used = {m.id for m in mems if used_overlap(m.content, reply) >= pol.used_overlap}
    now = memory.clock()
    with memory.store.transaction():
        for mem in mems:
            if mem.id not in used:
                report.unused.append(mem.id)
                continue
            after = reinforced(mem, pol, now, amount=pol.boost_amount)
            memory.store.update_memory(after, content_changed=False)
            memory.store.add_event(scope, mem.id, "BOOST", mem.snapshot(), after.snapshot(), "feedback",
                                   f"used in the reply of session {session_id} ({report.judge})", now)
            report.used.append(after)
        fresh = memory.store.get_session(scope, session_id)
        if fresh is not None:  # judged once: a second feedback on the same context boosts nothing
            fresh.metadata[INJECTED] = []
            fresh.metadata["last_feedback"] = {"at": now.isoformat(), "used": [m.id for m in report.used]}
            memory.store.put_session(fresh)
    memory.signals.send("memory.changed", scope)
    return report


def _last_user_text(memory: Parts, scope: Scope, session: Session) -> str:
    turns = memory.store.get_turns(scope, session_id=session.id, limit=10, newest_first=True)
    return next((t.content[:2000] for t in turns if t.role == "user"), "")
