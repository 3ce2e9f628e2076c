"""What a query asks: its keywords and full-text expression, the words too common in the
scope to count, the text the dense side embeds, the conversation it names by its order
("last time", "our first conversation"), and whose words it asks about."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from memlane.config import SearchConfig
from memlane.models import Corpus, Scope
from memlane.store import Store
from memlane.text import CJK_RUN, fts_query, fts_terms, index_term, keywords, segment


def analyse(query: str, max_keywords: int | None = None) -> tuple[list[str], str]:
    """(keywords, FTS5 match expression) for a query."""
    words = keywords(query, max_keywords)
    return words, fts_query(fts_terms(words))


_WORD = re.compile(r"[^\W_]+(?:'s)?")


def _query_words(query: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, index terms a row must hold to hold the word) of each query word: Latin
    words stemmed, CJK words of two or more characters (jieba) as their bigrams."""
    out: list[tuple[int, int, list[str]]] = []
    for m in _WORD.finditer(query):
        word = m.group()
        if not CJK_RUN.search(word):
            out.append((m.start(), m.end(), [index_term(word.removesuffix("'s"))]))
    for m in CJK_RUN.finditer(query):
        pos = m.start()
        for word in segment(m.group()):
            if len(word) >= 2:
                out.append((pos, pos + len(word), fts_terms([word])))
            pos += len(word)
    return sorted(out)


def dense_text(store: Store, corpus: Corpus, scope: Scope, query: str, cfg: SearchConfig) -> str:
    """What is embedded for the dense side: the query without the words that at least
    `dense_common_share` of the scope's rows hold, such as the speakers' names in a
    conversation (小林 as well as Caroline). They pull the query towards every row alike
    (issue 3: +1 pt R@10 on LoCoMo). The query itself when nothing would be left or the
    scope is small."""
    facts = corpus != "turns"  # a scope of memories is small sooner: its own thresholds (issue 29)
    share = cfg.memory_common_share if facts else cfg.dense_common_share
    min_docs = cfg.memory_common_min_docs if facts else cfg.dense_common_min_docs
    if share >= 1:
        return query
    spans, seen = [], set()
    for span in _query_words(query):  # the first words, up to max_query_terms index terms
        seen.update(span[2])
        if len(seen) > cfg.max_query_terms:
            break
        spans.append(span)
    if not spans:
        return query
    # counted in the rows' own text: a turn's neighbours column holds every speaker's name
    counts, total = store.scope_documents(corpus, scope, list({t for *_, ts in spans for t in ts}), column=0)
    if total < min_docs:
        return query
    # a CJK word counts as held where all its bigrams are: the least held one bounds it
    common = [(a, b) for a, b, ts in spans if min(counts.get(t, 0) for t in ts) >= share * total]
    if not common or len(common) == len(spans):
        return query
    out, pos = [], 0
    for a, b in common:
        out.append(query[pos:a])
        pos = b
    out.append(query[pos:])
    return re.sub(r"\s+", " ", "".join(out)).strip()


def drop_common(store: Store, corpus: Corpus, scope: Scope, terms: list[str], cfg: SearchConfig) -> list[str]:
    """Leave out the words most of the scope's documents hold, in a large scope; the two
    rarest always stay. Counted in the scope alone: another user's rows must not change which
    words this user's query keeps."""
    if len(terms) <= 2:
        return terms
    index = [index_term(t) for t in terms]
    # a store may stop counting a word past the share: which of those are rarest then needs
    # their whole counts, asked for only where fewer than two words are under it
    for above in (cfg.common_term_share, 1.0):
        counts, total = store.scope_documents(corpus, scope, index, min_docs=cfg.common_term_min_docs, above=above,
                                              drift=cfg.common_term_drift)
        if total < cfg.common_term_min_docs:
            return terms
        share = {t: counts.get(x, 0) / total for t, x in zip(terms, index, strict=True)}
        keep = {t for t in terms if share[t] <= cfg.common_term_share}
        if len(keep) >= 2:
            break
    rarest = set(sorted(terms, key=lambda t: share[t])[:2])
    return [t for t in terms if t in keep or t in rarest]


def common_words(store: Store, corpus: Corpus, scope: Scope, words: Sequence[str], cfg: SearchConfig) -> set[str]:
    """The query words at least `memory_common_share` of the scope's rows hold, in a scope of
    `memory_common_min_docs` rows or more: "The user…", "用户…" in a scope of memories. They
    say nothing about which row answers (issue 29: "where does the user work" scored 0.5
    against every memory). Counted in the scope alone; a CJK word counts as held where its
    rarest bigram is."""
    terms = {w: [index_term(t) for t in fts_terms([w])] for w in words}
    counts, total = store.scope_documents(corpus, scope, sorted({t for ts in terms.values() for t in ts}))
    if total < cfg.memory_common_min_docs:
        return set()
    return {w for w, ts in terms.items() if min((counts.get(t, 0) for t in ts), default=0)
            >= cfg.memory_common_share * total}



def without(text: str, words: str) -> str:
    """`text` without `words` wherever they occur, any case."""
    return re.sub(re.escape(words), " ", text, flags=re.IGNORECASE)


def named_session_id(store: Store, scope: Scope, which: str, now: datetime,
                     idle_after: timedelta | None = None) -> str | None:
    """The session a query names by its order (`dates.named_session`): the scope's first, where
    its first turn was said; or its last begun by `now` that holds turns, passing over the
    newest one not ended (the conversation the question is asked in). Sessions begun after
    `now` (imported ahead of the clock) and empty ones (opened and closed without a word, also
    after the one going on) are no conversation of ours: the listing reads on past them. An
    open session silent for longer than `idle_after` is over (an app that never ends its
    sessions asks before storing the new conversation's first message)."""
    if which == "first":
        first = store.get_turns(scope, until=now, limit=1)
        return first[0].session_id if first else None
    limit = 8
    while True:
        listed = store.list_sessions(scope, limit=limit)
        begun = [s for s in listed if s.started_at <= now]
        going_on = next((s.id for s in begun if s.ended_at is None), None)
        if going_on is not None and idle_after is not None:
            last = store.get_turns(scope, session_id=going_on, until=now, limit=1, newest_first=True)
            if not last or last[0].created_at < now - idle_after:
                going_on = None
        said = [s for s in begun if s.message_count > 0 and s.id != going_on]
        if said or len(listed) < limit:
            return said[0].id if said else None
        limit *= 8



# Who a query asks about, in a user's chat with an assistant: "what did I / my" is in the
# user's own turns; "what did you recommend", "our previous conversation", "你给我推荐过" is in
# the assistant's. Third-person questions (LoCoMo's "What did Melanie paint?") name neither.
_ASKS_ASSISTANT = re.compile(
    r"\byou(?:'ve)?\s+(?:\w+\s+)?(?:told|said|recommended|suggested|mentioned|gave|listed|provided|shared|"
    r"explained|described|named|wrote|advised)\b|\b(?:did|have|had) you\s+(?:\w+\s+)?(?:tell|say|"
    r"recommend|suggest|mention|give|list|provide|share|explain|describe|name|write|advise)\b|"
    r"\bremind me\b|\bour (?:previous |last |earlier )?"
    r"(?:conversation|chat|discussion)\b|你.{0,3}(?:推荐|告诉|建议|提到|介绍|说|讲|列|给).{0,4}过|你.{0,2}曾经",
    re.IGNORECASE)


_ASKS_USER = re.compile(r"\b(?:i|my|me|mine|myself|i'm|i've|i'd)\b|我", re.IGNORECASE)


def asked_role(query: str) -> str | None:
    """'assistant' when the query recalls what the assistant said, 'user' when it asks about
    the user (first person), None otherwise."""
    if _ASKS_ASSISTANT.search(query):
        return "assistant"
    return "user" if _ASKS_USER.search(query) else None


# What has built up over time, asked of a sentence: "What books has Melanie read?", "Which
# cities have you visited?", "How many hours have I spent on…", "你给我推荐过哪些…", "去过几次".
# Having is not having done: "have to", "what pets does she have", "how many plants do I have
# in my garden".
_ACCUMULATED = re.compile(
    r"(?:^|[.!?\n])\s*(?:what|which|where|how many)\b(?:(?!\b(?:do|does|did)\b)[^?.!]){0,80}?"
    r"\b(?:has|have)\s+(?!(?:to|in|on|at|for|with|from|of|as|left)\b)\w"
    r"|哪些.{0,20}过|过.{0,10}哪些|几次|多少次", re.IGNORECASE)


def asks_accumulated(query: str) -> bool:
    """Whether the query asks what has built up over time, whose answers are spread over
    several conversations rather than clustered in one."""
    return _ACCUMULATED.search(query) is not None


# A memory is told of the user in the third person ("The user works at BMW." / "用户在宝马上班。",
# the extractors' form); a person asks in the first ("where am I working these days?",
# "我现在在哪上班"). e5 puts "I" and "the user" apart, and so the question's vector far from its
# answer's (issue 32, the changes dev set: English current-value questions, dense alone 0.09
# top-1). The dense side of a memory search reads the question as told of the user.
_FIRST_PERSON_EN = [(re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"\b(?:I am|I'm|Im)\b", "the user is"), (r"\bI was\b", "the user was"), (r"\bI've\b", "the user has"),
    (r"\bI'd\b", "the user would"), (r"\bI'll\b", "the user will"), (r"\bam I\b", "is the user"),
    (r"\b(?:do|did|have|was|can|could|should|would|will) I\b", lambda m: f"{m.group().split()[0]} the user"),
    (r"\bI\b", "the user"), (r"\b(?:my|mine)\b", "the user's"))]
# "me" / 帮我 / 给我 is whom a request is for ("tell me a joke", "帮我订机票"): no fact about the user
_FIRST_PERSON_ZH = re.compile(r"(?<![帮给让告诉跟陪提醒教叫请替])我(?!们)")


def told_of_user(query: str) -> str:
    """The question with its first person made the user ("where am I working" → "where is the
    user working", "我在哪上班" → "用户在哪上班"); unchanged when it has none."""
    out = query
    for pattern, repl in _FIRST_PERSON_EN:
        out = pattern.sub(repl, out)
    return _FIRST_PERSON_ZH.sub("用户", out)
