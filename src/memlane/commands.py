"""The user's own commands, read from their words: "记住…" / "remember that …", "忘掉…" /
"forget …", "别记这个" / "don't save that", and a command closing a statement ("…，记住这个").

Text in, text out, for `memlane.heuristic` (which turns them into operations in both modes,
seed 001 §6 phase 1.5) and for the engine, which asks whether a message holds a command.
"""

from __future__ import annotations

import re

from memlane import statements as st
from memlane.clauses import ZH_SENTENCE
from memlane.en_clauses import EN_SENTENCE
from memlane.text import language_of


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


# the commands' own readings (remember / forget): unchanged by the clause reader's
_ZH_SENTENCE = ZH_SENTENCE
_EN_SENTENCE = EN_SENTENCE
# words before a command that are not what it points at; "算了" / "never mind" take back what
# was just said ("算了，忘掉那个", issue 30), so they are read the same way, however many lead
ZH_LEAD_FILLER = re.compile(r"^(?:(?:对了|另外|还有|而且|其实|嗯|哦|所以|但是|不过|是的|好的|好主意|然后|因为|顺便说一下|顺便|"
                        r"算了|不对|等等|等一下|哎呀|哎|唉|呃)[，,、\s]*)+")
EN_LEAD_FILLER = re.compile(r"^(?:(?:by the way|also|oh|ok|okay|well|so|and|but|actually|btw|yes|yeah|hi|hello|"
                        r"never ?mind|wait|hmm+|oops|sorry|on second thought)\b[,\s]*)+", re.I)
# a sentence that only takes back what was said ("算了。", "Never mind.") says nothing itself
_RETRACT = re.compile(r"^(?:算了|算了吧|不对|等等|never ?mind|scratch that|wait)$", re.I)


_ZH_REMEMBER = _r(r"^(?:请|帮我)?(?:记住|记下|记一下|记得)(?:了|吧)?[：:，,\s]*(?P<x>.*)$")
_ZH_FORGET = _r(r"^(?:请|帮我)?(?:忘掉|忘记|别再记着|不要再记着)(?:关于)?(?P<x>.*?)(?:这件事|的事|吧|这条|这个记忆)?$")
_EN_REMEMBER = _r(r"^(?:please )?(?:remember|note|keep in mind)(?: that)?[:,\s]+(?P<x>.*)$|^(?:please )?remember this$")
_EN_FORGET = _r(r"^(?:please )?forget (?:about )?(?:that )?(?P<x>.*)$|^(?:please )?forget (?:it|that|this)$")
# "别记这个", "刚才那个不用记了", "don't save that": a request not to keep what was just said.
# Only the pointing form: "别记错了" / "不要记恨他" name no memory, so no words may follow the verb
_ZH_DONT_KEEP = _r(r"^(?:请)?(?:刚才|刚刚)?(?:说的)?(?:这个|那个|这些|那些|这件事|那件事|这条|那条|这句|那句|它)?(?:就|也)?"
                   r"(?:不用|不要|别|无需|不必|没必要)(?:再)?(?:记|记住|记下|记着|记录)(?:下来)?"
                   r"(?:这个|那个|这些|那些|这件事|那件事|这条|那条|这句|那句|它)?(?:了|啦|吧|哦)*(?P<x>)$")
_EN_DONT_KEEP = _r(r"^(?:please )?(?:don'?t|do not|no need to|you don'?t (?:need|have) to)\s+"
                   r"(?:remember|save|store|keep|note|write down|record)\s+(?:this|that|it)(?: down)?(?P<x>)$")
# a command closing a sentence points back at it: "我的车牌是浙A12345，记住这个", "…, remember that"
_ZH_TAIL = _r(r"^(?P<rest>.*?[^，,；;\s])[，,；;\s]++(?P<cmd>(?:请|帮我)?(?:记住|记下|记一下|忘掉|忘记)(?:这个|这点|这件事|那个|那件事|它)?(?:吧|了)?"
              r"|(?:这个|那个|这件事|那件事)?(?:就)?(?:不用|不要|别)(?:再)?(?:记|记住|记下|记着)(?:这个|那个|它)?(?:了|吧)?)$")
_EN_TAIL = _r(r"^(?P<rest>.*?[^,;\s])[,;\s]++(?P<cmd>(?:please )?(?:remember|note|forget) (?:this|that|it)"
              r"|(?:please )?(?:don'?t|do not|no need to) (?:remember|save|store|keep|note) (?:this|that|it))$")
# the tail commands that ask not to keep what the sentence said
_TAIL_FORGETS = _r(r"忘|forget|不用|不要|别|don'?t|do not|no need")
# "记住这个：…" / "remember this: …" — the words after the colon are what is meant
_DEICTIC_LEAD = _r(r"^(?:这个|这点|这件事|这些|下面的?|以下|this|that|the following)\s*[：:，,]\s*")
_DEICTIC = {"", "这个", "这点", "这些", "这件事", "那个", "那件事", "那些", "它", "this", "that", "it", "这", "那"}
# what an assistant says to acknowledge is never what the user means by "this" (issue 13)
_ACK_WORD = _r(r"^(?:你好|您好|hi|hello|hey|好的|好滴|好嘞|好|嗯+|哦+|噢|收到|明白了|明白|知道了|了解|没问题|当然|谢谢|多谢|行|"
               r"ok(?:ay)?|sure|got it|noted|understood|alright|all right|will do|of course|thank you|thanks|"
               r"yes|yeah|no problem|great|cool|perfect)(?![\w])[\s,，.。!！~、]*")
_ACK_TAIL = _r(r"^(?:我)?(?:会|已经|已)?(?:记住|记下|记好)(?:了|啦)?(?:的|啦)?|"
               r"I(?:'ll| will| have|'ve)? (?:remember|noted?|keep in mind)(?: (?:that|it|this))?")


def command(sentence: str) -> tuple[str, str, bool] | None:
    """("remember" | "forget", what, points_back) for a command sentence; None otherwise.
    `points_back`: "this / that / 这个" with nothing after it, so the referent is elsewhere."""
    # a sentence keeps its closing mark ("remember that!"): the patterns read the words
    s = ZH_LEAD_FILLER.sub("", EN_LEAD_FILLER.sub("", sentence.strip().rstrip(".!?;。！？； ")))
    for kind, patterns in (("remember", (_ZH_REMEMBER, _EN_REMEMBER)),
                           ("forget", (_ZH_FORGET, _EN_FORGET, _ZH_DONT_KEEP, _EN_DONT_KEEP))):
        m = next((m for p in patterns if (m := p.match(s)) is not None), None)
        if m is not None:
            what = st.tidy(_DEICTIC_LEAD.sub("", m.group("x") or ""))
            return (kind, "", True) if what.lower() in _DEICTIC else (kind, what, False)
    return None


def tail_command(sentence: str) -> tuple[str, str] | None:
    """(statement, "remember" | "forget") for "…，记住这个" / "…, remember that"."""
    # a sentence keeps its closing mark ("remember that!"): the patterns read the words
    s = ZH_LEAD_FILLER.sub("", EN_LEAD_FILLER.sub("", sentence.strip().rstrip(".!?;。！？； ")))
    m = _ZH_TAIL.match(s) or _EN_TAIL.match(s)
    if m is None:
        return None
    return st.tidy(m.group("rest")), "forget" if _TAIL_FORGETS.search(m.group("cmd")) else "remember"


def is_command_sentence(sentence: str) -> bool:
    """Whether a sentence is a "remember / forget" command, said alone or closing a statement."""
    return command(sentence) is not None or tail_command(sentence) is not None


def is_ack(text: str) -> bool:
    """Whether a message only acknowledges ("好的", "Got it.", "好的，我记住了"): it is never
    what "this" means."""
    t = text.strip()
    while (m := _ACK_WORD.match(t)) is not None and m.end() > 0:
        t = t[m.end():]
    t = st.tidy(t)
    return not t or _ACK_TAIL.fullmatch(t) is not None


def _is_question(sentence: str, end: str) -> bool:
    s = st.tidy(sentence)
    return any(st.QUESTION_END.match(c) for c in end) or bool(st.ZH_QUESTION.search(s)) or bool(st.EN_QUESTION.match(s))


def units(text: str, max_chars: int | None = None) -> list[tuple[str, str]]:
    """A user message as ("say" | "ask" | "remember" | "forget" | "remember?" | "forget?",
    text) units in order; "remember?": a command that points back. Acknowledgements dropped.
    A sentence over `max_chars` (a pasted document) is read as said, without the patterns."""
    splitter = _ZH_SENTENCE if language_of(text) == "zh" else _EN_SENTENCE
    out: list[tuple[str, str]] = []
    for m in splitter.finditer(text):
        sentence = m.group().strip()
        if not sentence:
            continue
        if max_chars is not None and len(sentence) > max_chars:
            out.append(("say", st.tidy(sentence)))
        elif (cmd := command(sentence)) is not None:
            kind, what, back = cmd
            out.append((kind + "?", "") if back else (kind, what))
        elif (tail := tail_command(sentence)) is not None:
            out += [("say", tail[0]), (tail[1] + "?", "")]
        elif _is_question(sentence, sentence[-1:] + text[m.end():m.end() + 1]):  # its own mark, or the next
            out.append(("ask", sentence))
        elif not is_ack(sentence) and not _RETRACT.match(st.tidy(sentence).rstrip(".!?。！？ ")):
            out.append(("say", st.tidy(sentence)))
    return out


def is_command(text: str, max_chars: int | None = None) -> bool:
    """Whether a user message says "remember …" or "forget …" (记住…/忘掉…) anywhere."""
    return any(kind in ("remember", "forget", "remember?", "forget?") for kind, _ in units(text, max_chars))


__all__ = ["EN_LEAD_FILLER", "ZH_LEAD_FILLER", "command", "is_ack", "is_command", "is_command_sentence", "tail_command",
           "units"]
