"""The turn priors: what moves a turn up or down besides its words and meaning — its length
and whether it asks (`_turn_priors`), the question it answers (`_reply_prior`), the speaker
the query names, the role the query asks about, and its session's best turn. Each adds to a
candidate's fused relevance; `add_turn_priors` applies them in their order."""

from __future__ import annotations

import math
import re

from memlane.config import SearchConfig
from memlane.models import TurnPlace
from memlane.retrieval.candidates import Candidate
from memlane.retrieval.query import asked_role, asks_accumulated
from memlane.text import CJK_RUN


def add_turn_priors(query: str, window: list[TurnPlace], cands: dict[int, Candidate], cfg: SearchConfig) -> None:
    """Every turn prior the configuration weighs, added to the candidates' fused relevance.
    `window`: the candidates' places (with their neighbours'), empty when no prior reads it."""
    if window:
        window = [w._replace(question=w.question and w.length <= cfg.question_max_chars) for w in window]
        _turn_priors(window, cands, cfg.turn_length_prior, cfg.question_penalty, cfg.turn_length_cap)
        role = chat_role(query, window, cands)
        _reply_prior(window, cands, cfg.reply_prior, role)
        _speaker_prior(query, window, cands, cfg.speaker_prior)
        _role_prior(window, cands, cfg.role_prior, role)
    if cfg.session_prior > 0:
        weight = cfg.accumulated_session_prior if asks_accumulated(query) else cfg.session_prior
        if weight > 0:
            _session_prior(window, cands, weight, cfg.session_spread_chars)


def _turn_priors(window: list[TurnPlace], cands: dict[int, Candidate], length_weight: float,
                 question_penalty: float, length_cap: int = 10**9) -> None:
    """Favour turns that state something: longer ones and not questions, which ask rather
    than hold the answer. The log length is centred over each speaker's candidates (an
    assistant's long replies are long for an assistant, not informative) and stops growing at
    `length_cap` (a pasted document is no likelier to hold the answer): issue 14."""
    places = {w.rowid: w for w in window if w.rowid in cands}
    if not places:
        return
    logs = {r: math.log1p(min(w.length, length_cap)) for r, w in places.items()}
    by_speaker: dict[str | None, list[float]] = {}
    for r, w in places.items():
        by_speaker.setdefault(w.speaker, []).append(logs[r])
    mean = {s: sum(v) / len(v) for s, v in by_speaker.items()}
    for rowid, w in places.items():
        cands[rowid].relevance += (length_weight * (logs[rowid] - mean[w.speaker])
                                   - (question_penalty if w.question else 0.0))


def _reply_prior(window: list[TurnPlace], cands: dict[int, Candidate], weight: float,
                 role: str | None = None) -> None:
    """A turn that asks passes weight × its relevance to the next turn of its session: a
    question found by the query's words is often answered right after, in other words. Not
    to a turn of the other role than the query asks about (`role`): an assistant's answer to
    the user's question does not hold what the user did (issue 14, LongMemEval)."""
    if weight <= 0:
        return
    at = {(w.session_id, w.seq): w.rowid for w in window}
    role_of = {w.rowid: w.role for w in window if w.rowid in cands}
    passed: dict[int, float] = {}
    for w in window:
        reply = at.get((w.session_id, w.seq + 1))
        if w.question and w.rowid in cands and reply in cands and reply is not None \
                and (role is None or role_of.get(reply) == role):
            passed[reply] = max(passed.get(reply, 0.0), weight * max(cands[w.rowid].relevance, 0.0))
    for rowid, bonus in passed.items():
        cands[rowid].relevance += bonus


def named_speakers(query: str, speakers: set[str]) -> list[str]:
    """The speakers a query names: Latin names as whole words, any case; CJK names as text."""
    out = []
    for name in speakers:
        if CJK_RUN.search(name):
            found = name in query
        else:
            found = re.search(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", query, re.IGNORECASE) is not None
        if found:
            out.append(name)
    return out


def _speaker_prior(query: str, window: list[TurnPlace], cands: dict[int, Candidate], weight: float) -> None:
    """When the query names exactly one of the candidates' speakers ("What did Melanie
    paint?"), add weight to that speaker's turns. Two names named: no side is favoured."""
    if weight <= 0:
        return
    said = {w.rowid: w.speaker for w in window if w.rowid in cands and w.speaker}
    named = named_speakers(query, set(said.values()))
    if len(named) != 1:
        return
    for rowid, speaker in said.items():
        if speaker == named[0]:
            cands[rowid].relevance += weight


def chat_role(query: str, window: list[TurnPlace], cands: dict[int, Candidate]) -> str | None:
    """The role the query asks about (`asked_role`), where the candidates hold both a user's
    and an assistant's turns; None elsewhere."""
    roles = {w.role for w in window if w.rowid in cands and w.role}
    return asked_role(query) if {"user", "assistant"} <= roles else None


def _role_prior(window: list[TurnPlace], cands: dict[int, Candidate], weight: float, role: str | None) -> None:
    """Favour the turns of the role the query asks about (issue 14: LongMemEval and
    MemoryBank ask "what did I …" of chats whose assistant replies are long and echo the
    user's words)."""
    if weight <= 0 or role is None:
        return
    for w in window:
        if w.rowid in cands and w.role == role:
            cands[w.rowid].relevance += weight


def _session_prior(window: list[TurnPlace], cands: dict[int, Candidate], weight: float,
                   spread_chars: int) -> None:
    """Add weight × the best relevance in the turn's session: answers cluster by session.

    Where the candidates' median turn is longer than `spread_chars`, a session's k-th best
    turn gets only spread^k of it (spread = spread_chars ÷ that median): a long turn says what
    it says without its neighbours, and an assistant chat's session is one task whose every
    turn echoes the question's words, so the full prior filled the top with one session and
    pushed out the second session a question needs (issue 14, LongMemEval). Short
    conversational turns (LoCoMo, MemoryBank) keep it whole.
    """
    sessions = {w.rowid: w.session_id for w in window if w.rowid in cands}
    lengths = sorted(w.length for w in window if w.rowid in cands)
    spread = min(1.0, spread_chars / max(1, lengths[len(lengths) // 2])) if lengths else 1.0
    best: dict[str, float] = {}
    for rowid, c in cands.items():
        sess = sessions.get(rowid)
        if sess is not None:
            best[sess] = max(best.get(sess, -math.inf), c.relevance)
    seen: dict[str, int] = {}
    for rowid, c in sorted(cands.items(), key=lambda kv: -kv[1].relevance):
        sess = sessions.get(rowid)
        if sess is not None:
            k = seen.get(sess, 0)
            seen[sess] = k + 1
            c.relevance += weight * best[sess] * spread**k
