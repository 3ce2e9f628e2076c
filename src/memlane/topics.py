"""Seed 002 §4 "话题切换时自动归档旧任务", offline and without an LLM: which user turns change
the subject, so that the scratchpad's current task moves to the finished ones.

A turn is read in this order:
1. the user says the task is finished ("好了，就这样", "that's all for the slides") → done;
2. it points back into the task — a part of it ("第一页…", "the third slide"), an edit of what
   was made ("再改短一点", "make it more formal", "把…换成…"), a reference ("这个", "那第二天呢",
   "what about…") → it continues, whatever words it shares;
3. it opens with a change of subject ("对了，…", "by the way", "换个话题") → switch;
4. a turn of `session.topic_min_keywords` keywords or more sharing less than
   `session.topic_shift_below` of them with the current topic (the focus and the turns since
   it was set) → switch; anything else continues (issue 30: 8 of 9 follow-ups that shared no
   word with the task were taken as new topics before rules 1–3).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from typing import Literal

from memlane.models import Scope, Scratchpad, Turn
from memlane.parts import Parts
from memlane.sessions import update_scratchpad
from memlane.text import CJK_RUN, cut, fts_terms, index_term, keywords

Move = Literal["continue", "switch", "done"]

_TOPIC_TEXT_CHARS = 2000  # not from a seed: a turn's first 2000 characters speak for its topic
# words of asking, not of a topic: "please help with X" and "please help with Y" share nothing
_ASKING = frozenset([
    "please", "help", "want", "need", "know", "tell", "thank", "thanks", "think", "question", "show",
    "give", "make", "use", "try", "today", "now", "also", "still", "best", "good", "way",
    "需要", "问题", "谢谢", "知道", "告诉", "觉得", "现在", "比较", "好的", "一下", "然后", "应该",
])
_CN_NUM = "一二三四五六七八九十两\\d"
# the task is finished, said at the start of a message (or as the whole of it)
_DONE = re.compile(
    r"^\s*(?:好了|好的|行|可以了|谢谢)?[，,。!！\s]*(?:就这样(?:吧|了)?|这样就(?:行|可以|好)了|搞定了|完成了|没问题了|不用(?:再)?改了"
    r"|没(?:有)?别的了|那就(?:它|这个|这样|这些)了|就用(?:这个|它|这些)(?:吧|了)?)|[，,]\s*好了[。!！]?$"
    r"|^\s*(?:ok(?:ay)?|great|perfect|thanks?|thank you)?[,.!\s]*(?:that'?s (?:all|it|perfect|enough)(?: for (?:now|this|the \w+))?"
    r"|(?:we'?re|i'?m) done(?: with (?:this|it|the \w+))?|this is done|it'?s done|no more changes|that fixed it"
    r"|it worked|i'?ll (?:go|take) (?:with )?(?:those|that|it|this|them))\b|\bthat'?s it[.!]?$", re.I)
# it points back into the task: a part of it, an edit of it, a reference to it
_CONTINUES = re.compile(
    rf"第[{_CN_NUM}]+(?:页|段|章|节|部分|点|条|步|天|个|张|行|题|封|版|道|周)|[{_CN_NUM}]+(?:页|段)"
    r"|^(?:那|那么)?(?:这|那)(?:个|些|段|页|里|样|封|道|篇|张)|^那[^\s，,。]{0,8}[呢吗]|它|上面|刚才|前面|后面那"
    r"|再(?:改|加|短|长|写|来|简|详|正式|精简|补充|调整|润色|优化)|改(?:成|为|一下|得)|换成|(?:加|补)(?:上|一|个|点|些)"
    r"|删(?:掉|除|了)|去掉|(?:短|长|简单|正式|口语化|简洁|详细|具体|活泼)(?:一)?点|用(?:[^\s，,。]{1,6})(?:色|字体|风格|语气)"
    r"|\b(?:the )?(?:first|second|third|fourth|fifth|sixth|last|next|other) (?:one|slide|page|paragraph|section|step|day|"
    r"point|part|line|question|email|version|item|option|course|bullet|chapter)s?\b"
    r"|^(?:and |so |ok,? |okay,? )?(?:what|how) about\b"
    r"|\bmake (?:it|this|that|them)\b|\b(?:shorter|longer|simpler|more (?:formal|casual|concise|detailed|friendly|polite)|"
    r"less (?:formal|casual))\b|^(?:can you |could you |please )?(?:add|remove|change|replace|rewrite|rephrase|shorten|"
    r"expand|fix|tweak|adjust|swap|drop|move|rename|translate) (?:it|this|that|them|the)\b"
    r"|\b(?:instead|as well)\b|^(?:it|this|that|they) (?:should|needs?|must|has to|have to|could|can)\b"
    # an instruction about the work at hand: what to say in it, stress, keep, sign it with
    r"|^(?:please )?(?:mention|include|emphasi[sz]e|highlight|stress|keep|sign|end with|start with|open with)\b"
    r"|^(?:再)?(?:强调|提一下|提到|写上|注明|突出|保留|结尾|开头)", re.I)
# a change of subject said as such, at the start of a message
_SWITCH = re.compile(
    r"^\s*(?:对了|顺便(?:问一下|问问|说一下)?|换个(?:话题|问题)|另外(?:我)?(?:想)?问|问个别的|题外话|说点别的|聊点别的|我还想问"
    r"|by the way|btw|on another note|unrelated(?: question)?|(?:a |one )?different (?:question|topic|thing)|"
    r"another (?:question|thing)|changing (?:the )?subject|new (?:question|topic|task)|separate question|quick question"
    r"|switching gears|random question)\b", re.I)


# a new request: what starts a task rather than answering the assistant's question about one
_REQUEST = re.compile(
    r"^(?:[^，,。]{0,6}[，,。]\s*)?(?:现在|那|那再|再|另外|然后)?(?:请|麻烦(?:你)?)?(?:帮我|给我|教我|推荐|替我|我想(?:让你|请你)"
    r"|能不能帮)|^(?:[^,.]{0,12}[,.]\s*)?(?:(?:now|also|ok|okay|and|so|then)\s+)?(?:(?:can|could|would) you|please|"
    r"help me|write|make|recommend|explain|tell me|show me|find|book|plan|suggest|translate|i need|i want)\b", re.I)
_ASKS = re.compile(r"[?？]\s*$|[?？][^?？]{0,40}$")


def topic_terms(text: str) -> set[str]:
    """The words a turn's topic is made of: keywords as the index stores them (Latin stems,
    CJK bigrams); single CJK characters (好, 吃) say too little about a topic to count."""
    terms = fts_terms(w for w in keywords(text[:_TOPIC_TEXT_CHARS]) if w not in _ASKING)
    return {t if CJK_RUN.fullmatch(t) else index_term(t) for t in terms if not CJK_RUN.fullmatch(t) or len(t) > 1}


def topic_move(text: str, terms: set[str], vocabulary: set[str], min_keywords: int, shift_below: float,
               answering: bool = False) -> Move:
    """What a user turn does to the current topic (the module docstring's rules); `answering`:
    the assistant's last turn asked something, and a turn that is no new request answers it."""
    said = " ".join(text[:_TOPIC_TEXT_CHARS].split())
    if _DONE.search(said):
        return "done"
    if _CONTINUES.search(said):
        return "continue"
    if _SWITCH.search(said):
        return "switch"
    if answering and not _REQUEST.search(said):
        return "continue"
    if len(terms) >= min_keywords and (not vocabulary or len(terms & vocabulary) / len(terms) < shift_below):
        return "switch"
    return "continue"


def track_topic(memory: Parts, scope: Scope, session_id: str, turns: Sequence[Turn]) -> Scratchpad | None:
    """Follow the topic through `turns` (`topic_move`): a switch makes the turn, cut, the
    focus and moves the old focus to the finished tasks (timestamped, the last 5 kept); done
    moves it there and leaves no focus. With no focus, the first turn of a topic's size (or
    with a change-of-subject cue) sets it. Returns the new scratchpad when it changed."""
    cfg = memory.config.session
    if cfg.topic_shift_below is None or not any(t.role == "user" for t in turns):
        return None
    session = memory.store.get_session(scope, session_id)
    if session is None:
        return None
    pad = memory.store.get_scratchpad(scope)
    focus = pad.current_focus if pad else ""
    since = int(session.metadata.get("topic_since_seq", 0))
    first = min(t.seq for t in turns)
    earlier = memory.store.get_turns(scope, session_id=session_id, newest_first=True,
                                     limit=cfg.topic_context_turns + len(turns))
    context: deque[set[str]] = deque(
        (topic_terms(t.content) for t in earlier[::-1] if since <= t.seq < first), maxlen=cfg.topic_context_turns)
    focus_terms = topic_terms(focus)
    changes: list[tuple[Move, str]] = []
    before = next((t for t in earlier if t.seq < first), None)  # newest first
    asked = before is not None and before.role == "assistant" and _ASKS.search(before.content) is not None
    for t in sorted(turns, key=lambda t: t.seq):
        terms = topic_terms(t.content)
        if t.role == "user":
            move = topic_move(t.content, terms, focus_terms.union(*context) if focus else set(),
                              cfg.topic_min_keywords, cfg.topic_shift_below, answering=asked and bool(focus))
            if move == "done" and focus:
                changes.append(("done", focus))
                focus, focus_terms, since = "", set(), t.seq + 1
                context.clear()
                continue
            if move == "switch" or (not focus and len(terms) >= cfg.topic_min_keywords):
                focus = cut(" ".join(t.content.split()), cfg.focus_chars)
                changes.append(("switch", focus))
                focus_terms, since = terms, t.seq
                context.clear()
        if cfg.topic_context_turns:
            context.append(terms)
        asked = t.role == "assistant" and _ASKS.search(t.content) is not None
    if not changes:
        return None
    with memory.store.transaction():
        current = memory.store.get_session(scope, session_id) or session
        current.metadata["topic_since_seq"] = since
        memory.store.put_session(current)
    for move, text in changes:  # each older focus becomes a finished task in turn
        pad = update_scratchpad(memory, scope, focus=None if move == "done" else text,
                                done=text if move == "done" else None)
    return pad
