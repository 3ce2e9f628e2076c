"""Seed 002 §4 "话题切换时自动归档旧任务": which user turns change the subject, so that the
scratchpad's current task moves to the finished ones.

With an LLM (`session.topic_llm`, on in the progressive profile), the LLM judges each user turn
and names the task, as seed 002's compiler does (`Judge`, prompt `memlane.llm.prompts.topic`).
Offline, and for any turn the LLM fails on, the rules read a turn in this order:
1. the user says the task is finished ("好了，就这样", "that's all for the slides") → done;
2. it asks for a new thing of the task's kind ("再帮我做一个…PPT", "write a different email to my
   landlord") → switch, though it shares the task's words;
3. it points back into the task — a part of it ("第一页…", "the third slide"), an edit of what
   was made ("再改短一点", "make it more formal", "把…换成…"), a reference ("这个", "那第二天呢",
   "what about…"), a variant of what was offered ("有没有轻松一点的") → it continues, whatever
   words it shares;
4. it opens with a change of subject ("对了，…", "by the way", "换个话题", "back to…"), or with
   "now" and a request ("Got it. Now explain DNS") → switch; "另外…" / "说到…" only before a
   question or a request;
5. the assistant asked a question, and the turn is no new request → it answers: continue;
6. a request or a wh-question ("怎么升级", "how do I…", not about "it") of
   `session.topic_min_keywords` keywords or more sharing less than `session.topic_shift_below`
   of them with the current topic (the focus and the turns since it was set) → switch; anything
   else continues: a statement ("三年电商运营，会SQL和Python") or a yes/no question ("预算一万块
   够吗") during a task gives or checks its details.
With no focus, a request however short, or any turn of a topic's size, starts one.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

from memlane.config import SessionConfig
from memlane.errors import BackendError
from memlane.llm import LLM, ChatMessage
from memlane.llm.prompts.topic import topic_prompt
from memlane.models import Scope, Scratchpad, Turn
from memlane.parts import Parts
from memlane.sessions import update_scratchpad
from memlane.text import CJK_RUN, cut, estimate_tokens, fts_terms, index_term, keywords, language_of

Move = Literal["continue", "switch", "done"]
log = logging.getLogger(__name__)

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
    r"|it worked|i'?ll (?:go|take) (?:with )?(?:those|that|it|this|them)|done for (?:today|now|the day))\b"
    r"|\bthat'?s it[.!]?$|^\s*(?:好了|可以了|行了|够了|ok(?:ay)?,? (?:done|good))[。.!！]*$", re.I)
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
    r"|^(?:再)?(?:强调|提一下|提到|写上|注明|突出|保留|结尾|开头)"
    # a variant of what was offered ("有没有轻松一点的", "便宜些的", "something non-fiction",
    # "anything cheaper?"), more of the same work ("再帮我写几个单元测试")
    r"|[^\s，,。]{1,4}一?[点些]的|^(?:something|anything|one|any)\s+(?:\w+er\b|more\b|less\b|non-)"
    r"|^(?:那|那么)?再(?:帮我|给我|教我|替我)", re.I)
# an acknowledgement a cue may follow: "Thanks! Totally unrelated, …", "明白了。对了，…"
_ACK = (r"(?:(?:ok(?:ay)?|thanks?(?: you)?|great|cool|got it|alright|sure|perfect|nice|hey|hmm|"
        r"好的|好吧|谢谢|明白了|知道了|行|嗯|哦)[,.!，。！\s]+)?")
# a change of subject said as such, at the start of a message: a cue, or a return to an earlier
# subject ("back to planning", "说回…")
_SWITCH = re.compile(
    rf"^\s*{_ACK}(?:对了|顺便(?:问一下|问问|说一下)?|换个(?:话题|问题)|另外(?:我)?(?:想)?问|问个别的|题外话|说点别的|聊点别的|我还想问"
    r"|说回|回到"
    r"|by the way|btw|on another note|(?:totally |completely )?unrelated(?: question)?|(?:a |one )?different (?:question|topic|thing)|"
    r"another (?:question|thing)|changing (?:the )?subject|new (?:question|topic|task)|separate (?:question|thing)|quick question"
    r"|switching gears|random question|speaking of|back to)\b", re.I)
# a new thing of the task's kind ("再帮我做一个…PPT", "另外写一封…", "write a different email",
# "make me a separate deck"): a new task though it shares the old one's words; not another
# version, draft or example of the same thing
_NEW_THING = re.compile(
    r"(?:另外|另|再)(?:帮我|给我|教我|替我)?(?:写|做|画|列|订|规划|设计|准备|整理)(?:一)?(?:个|封|篇|份|套|本|首)(?!版|稿)"
    r"|还有(?:一)?(?:个|封|篇|份|件)[^，,。]{0,12}要"
    r"|\b(?:write|make|draft|create|build|design|prepare|need|want)\s+(?:me\s+|us\s+)?"
    r"(?:(?:a|an)\s+(?:different|separate|second|whole new)|another)\s+"
    r"(?!version|draft|take|option|one\b|way|example|word|try|attempt|idea|wording|phrasing)"
    r"|\b(?:need|want|buy|get)\s+(?:a|an)\s+new\b", re.I)
# "now" and a request (after the task's references, so "now make it shorter" continues)
_NOW = re.compile(
    rf"^\s*{_ACK}(?:now|现在)[,，\s]*(?:(?:can|could|would) you\s+|please\s+|i need\b|i want\b|help me\b|"
    r"(?:write|explain|make|plan|tell|show|find|translate|recommend|draft|create|teach)\s+"
    r"(?!it\b|this\b|that\b|them\b|(?:me\s+|us\s+)?(?:more|again)\b)"
    r"|请|帮我|给我|教我|替我)", re.I)
# a question that opens a subject: a wh-question ("怎么升级", "how do I convert…"); a yes/no
# question ("预算一万块够吗", "so p=0.03 means…?") and a statement ("三年电商运营，会SQL和Python",
# "I got a conflict in README.md") check or add to what is under way
_QUESTION = re.compile(
    r"怎么|什么|为什么|如何|哪|多少|几[个天点种次]"
    r"|(?:^|[,.;:!?]\s*)(?:what|how|why|where|when|which|who|whose)\b", re.I)
# ...unless what it asks about is the thing at hand, named by a pronoun ("how do I run it every
# night?"), with nothing of the user's own introduced ("my laptop is slow, how do I fix it?")
_ABOUT_IT = re.compile(r"^(?!.*\b(?:my|our)\b).*\b(?:it|them|this one|that one)\b", re.I)
# another matter opened beside the task ("另外我电脑上的Python版本太老了，怎么升级", "说到吃，
# 推荐一家…", "speaking of food, where…"): these cues switch only before a question or a
# request; "说到预算，我们最多五千" adds to the task (references into the task are read first)
_ASIDE = re.compile(rf"^\s*{_ACK}(?:另外(?:[，,\s]|我|还)|说到|说起|speaking of\b)", re.I)


# a new request: what starts a task rather than answering the assistant's question about one
_REQUEST = re.compile(
    r"^(?:[^，,。！!]{0,6}[，,。！!]\s*){0,2}(?:现在|那|那再|再|另外|然后)?(?:请|麻烦(?:你)?)?(?:帮我|给我|教我|推荐|替我"
    r"|我想(?:让你|请你)|能不能帮)"
    r"|^(?:[^,.!]{0,12}[,.!]\s*){0,2}(?:(?:now|also|ok|okay|and|so|then)\s+)?(?:(?:can|could|would) you|please|"
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
    if _NEW_THING.search(said):
        return "switch"
    if _CONTINUES.search(said):
        return "continue"
    if _SWITCH.search(said) or _NOW.search(said):
        return "switch"
    requested = _REQUEST.search(said) is not None
    if _ASIDE.search(said) and (requested or _QUESTION.search(said)):
        return "switch"
    if answering and not requested:
        return "continue"
    if len(terms) >= min_keywords and (not vocabulary or len(terms & vocabulary) / len(terms) < shift_below) \
            and (requested or (_QUESTION.search(said) and not _ABOUT_IT.search(said))):
        return "switch"
    return "continue"


def opens_topic(text: str, terms: set[str], min_keywords: int) -> bool:
    """With no current topic, whether a user turn starts one: a turn of a topic's size, or a
    request however short ("教我做红烧肉", "plan a trip")."""
    said = " ".join(text[:_TOPIC_TEXT_CHARS].split())
    return bool(terms) and (len(terms) >= min_keywords or _REQUEST.search(said) is not None)


def track_topic(memory: Parts, scope: Scope, session_id: str, turns: Sequence[Turn]) -> Scratchpad | None:
    """Follow the topic through `turns`: a switch makes a new focus and moves the old one to the
    finished tasks (timestamped, the last 5 kept); done moves it there and leaves no focus.

    With `session.topic_llm` and an LLM, the LLM judges each user turn and names the new task
    (seed 002's compiler, `Judge`); otherwise, and wherever it fails, `topic_move` decides and
    the turn, cut, is the new focus. With no focus, a task the LLM names, or a turn that
    `opens_topic`, sets it. Returns the new scratchpad when it changed."""
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
    recent = [t for t in earlier[::-1] if t.seq < first][-cfg.topic_context_turns:] if cfg.topic_context_turns else []
    context: deque[set[str]] = deque(
        (topic_terms(t.content) for t in recent if t.seq >= since), maxlen=cfg.topic_context_turns)
    focus_terms = topic_terms(focus)
    changes: list[tuple[Move, str]] = []
    asked = bool(recent) and recent[-1].role == "assistant" and _ASKS.search(recent[-1].content) is not None
    ordered = sorted(turns, key=lambda t: t.seq)
    judge = Judge.of(memory, [t.seq for t in ordered if t.role == "user"])
    for t in ordered:
        terms = topic_terms(t.content)
        if t.role == "user":
            verdict = judge.verdict(focus, recent, t) if judge else None
            if verdict is None:  # offline, or the LLM failed: the rules, and the turn names the task
                move = topic_move(t.content, terms, focus_terms.union(*context) if focus else set(),
                                  cfg.topic_min_keywords, cfg.topic_shift_below, answering=asked and bool(focus))
                task = cut(" ".join(t.content.split()), cfg.focus_chars)
                starts = not focus and opens_topic(t.content, terms, cfg.topic_min_keywords)
            else:
                move, task = verdict
                starts = not focus and bool(task) and move != "done"
            if move == "done" and focus:
                changes.append(("done", focus))
                focus, focus_terms, since = "", set(), t.seq + 1
                context.clear()
            elif (move == "switch" and task) or starts:
                focus = task
                changes.append(("switch", focus))
                focus_terms, since = terms | topic_terms(task), t.seq
                context.clear()
        if cfg.topic_context_turns:
            context.append(terms)
            recent = [*recent, t][-cfg.topic_context_turns:]
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


class Judge:
    """Seed 002's compiler on the chat path: the LLM's verdict on a user turn, within
    `session.topic_llm_timeout_s` for the whole call (the last `topic_llm_max_turns` user turns
    are asked); None whenever the rules must decide instead. It never raises: the turns are
    stored already, and a dead, slow or confused LLM costs the scratchpad its names, not the chat."""

    def __init__(self, llm: LLM, seqs: Sequence[int], cfg: SessionConfig) -> None:
        self.llm, self.cfg = llm, cfg
        self.asked = set(seqs[-cfg.topic_llm_max_turns:])
        self.deadline = time.monotonic() + cfg.topic_llm_timeout_s

    @classmethod
    def of(cls, memory: Parts, seqs: Sequence[int]) -> Judge | None:
        cfg = memory.config.session
        return cls(memory.llm, seqs, cfg) if cfg.topic_llm and memory.llm is not None else None

    def verdict(self, focus: str, recent: Sequence[Turn], turn: Turn) -> tuple[Move, str] | None:
        left = self.deadline - time.monotonic()
        if turn.seq not in self.asked or left <= 0:
            return None
        prompt = topic_prompt(focus, _within(recent, self.cfg.topic_llm_context_tokens),
                              turn.content[:_TOPIC_TEXT_CHARS], language=language_of(turn.content),
                              task_chars=self.cfg.task_name_chars)
        try:
            answer = prompt.parse(complete_within(self.llm, prompt.messages, prompt.json_schema, left))
        except Exception as exc:  # any failure of a provider: the rules decide this turn (see above)
            log.warning("topic of turn %d: the LLM gave no verdict (%s: %s); the rules decide",
                        turn.seq, type(exc).__name__, exc)
            return None
        task = cut(answer.task, self.cfg.focus_chars) if answer.task else ""
        if answer.move == "continue" and focus:
            task = focus  # the task goes on under the name it has
        elif answer.move == "switch" and not task:  # a switch the LLM left unnamed: the turn names it
            task = cut(" ".join(turn.content.split()), self.cfg.focus_chars)
        return answer.move, task


def _within(turns: Sequence[Turn], tokens: int) -> list[Turn]:
    """The newest of `turns` that fit in `tokens` (estimated), the oldest of them cut to fit."""
    kept: list[Turn] = []
    for t in reversed(turns):
        if tokens <= 0:
            break
        text = " ".join(t.content.split())
        cost = estimate_tokens(text)
        if cost > tokens:
            text = text[: max(1, len(text) * tokens // cost)] + "…"
        kept.append(t if text == t.content else t.model_copy(update={"content": text}))
        tokens -= cost
    return kept[::-1]


# ids of LLMs whose last topic call outlived its wait and still runs: the next turns go by the
# rules until it ends, so a hung server holds one thread, not one per turn
_late: set[int] = set()
_late_lock = threading.Lock()


def complete_within(llm: LLM, messages: Sequence[ChatMessage], json_schema: dict[str, Any] | None,
                    seconds: float) -> str:
    """`llm.complete`, waited for at most `seconds` (in a thread of its own, left to finish on
    its own deadline); `BackendError` when it is late, or while an earlier late call still runs."""
    key = id(llm)
    with _late_lock:
        if key in _late:
            raise BackendError("an earlier topic call to this LLM is still running")
    box: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            box["text"] = llm.complete(messages, json_schema=json_schema)
        except BaseException as exc:  # carried to the caller's thread
            box["error"] = exc
        finally:
            with _late_lock:
                finished.set()
                _late.discard(key)

    threading.Thread(target=run, name="memlane-topic", daemon=True).start()
    if not finished.wait(seconds):
        with _late_lock:
            if not finished.is_set():
                _late.add(key)
                raise BackendError(f"no answer within session.topic_llm_timeout_s ({seconds:.1f} s left)")
    if "error" in box:
        raise box["error"]
    return str(box["text"])
