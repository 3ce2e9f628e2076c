"""What a person asked to forget in a session, kept so that it stays forgotten (issue 30).

Seed 001 §6 phase 1.5: "忘掉那个" forgets. The request is kept on the session, as
metadata["forgotten"] = [{"seq": the request's turn, "query": what it names}], rather than as a
mark on each turn: the rule is about the session's turns up to the request, whichever job
reads them (the monitor's one-turn jobs, end_session's, a retry that runs after the request),
and every job reads and writes the session row already, in the transaction that marks it done,
so the request and the record of it cannot part; the store has no write path for a turn's
metadata, and a turn-by-turn mark would have to guess which turns said the thing. The turns
stay as they were said, the trace; the request's seq on the session marks the turns before it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from memlane.config import Config
from memlane.extraction import Operation
from memlane.models import Turn
from memlane.text import CJK_RUN, keywords

FORGOTTEN = "forgotten"
REFUSED = "the user asked to forget this in the turns it comes from (issue 30)"

# "forget all / everything about …": every memory that matches goes, not only the closest
ALL = re.compile(r"所有|全部|一切|都忘|\b(?:all|every|everything)\b", re.I)
# words of the request itself, not of the memory meant ("忘掉所有关于茶的记忆")
ABOUT = frozenset({"所有", "全部", "一切", "关于", "有关", "记忆", "内容", "everything", "all", "every",
                   "about", "memories", "memory"})


def keep(metadata: MutableMapping[str, Any], requests: Sequence[tuple[int, str]]) -> None:
    """Add the session's new "forget …" requests (seq, query) to its metadata, once each."""
    kept = metadata.get(FORGOTTEN)
    entries = [e for e in kept if isinstance(e, dict)] if isinstance(kept, list) else []
    for seq, query in requests:
        entry = {"seq": seq, "query": query}
        if entry not in entries:
            entries.append(entry)
    if entries:
        metadata[FORGOTTEN] = entries


def since(metadata: Mapping[str, Any], first_seq: int) -> list[tuple[int, str]]:
    """The session's forget requests (seq, query) said at or after `first_seq` (0: all)."""
    kept = metadata.get(FORGOTTEN)
    if not isinstance(kept, list):
        return []
    return [(e["seq"], str(e["query"])) for e in kept
            if isinstance(e, dict) and isinstance(e.get("seq"), int) and e["seq"] >= first_seq and e.get("query")]


def words_of(query: str) -> list[str]:
    """The words a memory must hold to be what a forget request names."""
    return [w for w in keywords(query) if w.lower() not in ABOUT]


def holds(content: str, word: str) -> bool:
    """A query word is in a memory: every character of a CJK word (养猫 ~ 养了一只橘猫), or of
    one of its two-character parts for a longer word (车牌号 ~ 车牌是…), or a Latin word's
    stem-ish prefix (prefer ~ prefers)."""
    if CJK_RUN.fullmatch(word):
        if all(ch in content for ch in word):
            return True
        return len(word) > 2 and any(word[i:i + 2] in content for i in range(len(word) - 1))
    return word.lower()[: max(4, len(word) - 2)] in content.lower()


def names(query: str, content: str, share: float = 1.0) -> bool:
    """Whether `content` holds `share` of the words of the forget request `query` (rounded up;
    1.0: every word)."""
    words = words_of(query)
    need = math.ceil(share * len(words) - 1e-9)
    return bool(words) and sum(1 for w in words if holds(content, w)) >= need


def said_again(query: str, seq: int, turns: Sequence[Turn], config: Config) -> bool:
    """Whether the person said what a forget request names again after it, in these turns
    ("忘掉那个" … "其实行程又定了，我下周三要去北京出差"): the request covers the turns up to
    its own, so a job reaching past it may store what was said anew. An extracted memory does
    not say which turn it came from, so a later user turn holding every word of the request,
    itself no command, is read as its source."""
    from memlane.heuristic import is_command  # on first use: its grammars take ~0.4 s to compile

    limit, share = config.extraction.offline_turn_chars, config.extraction.forget_match_share
    return any(t.role == "user" and t.seq > seq and names(query, t.content[:limit], share)
               and not is_command(t.content[:limit], config.extraction.heuristic_max_sentence_chars)
               for t in turns)


def refused(op: Operation, asked: Sequence[str], config: Config) -> bool:
    """An ADD or UPDATE stating what one of the person's "forget …" queries names: holding
    `extraction.forget_match_share` of its words."""
    share = config.extraction.forget_match_share
    return op.op in ("ADD", "UPDATE") and bool(op.content) and any(names(q, op.content or "", share) for q in asked)


def turns_kept(metadata: Mapping[str, Any], turns: Sequence[Turn], config: Config) -> list[Turn]:
    """The turns without those that said what a request of the session asked to forget (up to
    the request, either speaker): what a summary of the session may be written from."""
    requests, share = since(metadata, 0), config.extraction.forget_match_share
    return [t for t in turns if not any(t.seq <= seq and names(q, t.content, share) for seq, q in requests)]


def lines_kept(metadata: Mapping[str, Any], text: str, config: Config) -> str:
    """`text` (a rolling summary) without its lines that say what a request of the session
    asked to forget: a summary written before the request may hold it, and says not which turn."""
    requests, share = since(metadata, 0), config.extraction.forget_match_share
    if not requests:
        return text
    return "\n".join(line for line in text.split("\n") if not any(names(q, line, share) for _, q in requests))


__all__ = ["ABOUT", "ALL", "FORGOTTEN", "REFUSED", "holds", "keep", "lines_kept", "names", "refused", "said_again", "since",
           "turns_kept", "words_of"]
