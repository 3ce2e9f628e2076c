"""Clauses that say no fact of the user's, though they speak of the user (issue 29).

Word classes of conversation, not phrases of any data set: a clause that points at what was
said elsewhere ("同事都这么叫我", "先不说这个", "I still do"), the day's story told as it
happened ("今天真是离谱，…，我也懒得计较了"; "my laptop decided to update itself"), a reason
given for a request ("别叫我亲，听着跟客服似的"), the chat judged ("思路可以"), an exclamation
("生活真奇妙"), what the user is about to do this minute ("我去问我姐", "明天就做"), a word of
address ("小同志啊"), and a guess at how someone will feel ("Tom will be proud"). The offline
extractor (`memlane.heuristic`) keeps none of them: a memory an agent believes must hold a fact.
"""

from __future__ import annotations

import re

from memlane.clauses import Clause
from memlane.commands import EN_LEAD_FILLER, ZH_LEAD_FILLER
from memlane.statements import ZH_REQUEST

# ---- Chinese --------------------------------------------------------------------------------

# a pointer in place of the thing: "同事都这么叫我", "先不说这个", "明天就做"
_ZH_POINTS_AWAY = re.compile(r"(?:这么|那么|这样|那样)(?:叫|说|做|干|弄|想|办|写|称呼)|"
                             r"(?:说|提|聊|管|问|讲|想)(?:这个|那个|这些|那些|这事|那事|这件事|那件事)(?:了|吧|啊|呢)?$|"
                             r"^(?:今天|明天|后天|待会儿?|回头|马上|晚上|下午|周末)?(?:就|再|也|先)?"
                             r"(?:做|弄|搞|试|买|去|办|看)(?:了|吧|啦)?$")
# a modal with its verb left out, the thing named before: "醋溜白菜我会", "我也能"
_ZH_BARE_MODAL = re.compile(r"我(?:也|都|还|就|不|当然|肯定)?(?:会|能|可以|敢|肯)(?:的|了|啊|呀)?$")
# the chat judged: "思路可以", "这个主意不错"
_ZH_CHAT_VERDICT = re.compile(r"^(?:这个|那个|你的|你这个)?(?:思路|主意|想法|建议|办法|方法|方案|答案|回答|点子|框架|清单|安排)"
                              r"(?:也|还|挺|很|真)?(?:可以|不错|挺好|很好|好|行|对|靠谱|合理)|"
                              r"^(?:也|还|挺|很|真)?(?:有道理|说得对|说的对|没错|确实|可不是|也是|是这样)(?:啊|呀|哈|吧|的)?$")
# an exclamation about the world: "生活真奇妙", "天气真好"
_ZH_EXCLAIM = re.compile(r"^[\u4e00-\u9fff]{1,4}真(?:的)?(?!的)[\u4e00-\u9fff]{1,3}(?:啊|呀|了|哈|啦)?$")
# what the user is off to do this minute: "我去问我姐", "先查查"
_ZH_ABOUT_TO = re.compile(r"^(?:我)?(?:先|去|再|得)(?:问问?|查查?|找找?|看看|试试|打听|研究|确认|想想)")
# a word of address opening a message: "小同志啊", "亲爱的"
_ZH_VOCATIVE = re.compile(r"^(?:喂|嘿|哎|诶)?[\u4e00-\u9fff]{1,4}(?:啊|呀|哇|呐)$|^亲爱的$")
# a sentence that opens on today sets the time of its clauses: "今天真是离谱，…，我也懒得计较了"
_ZH_DAY_OPENS = re.compile(r"^[^\u4e00-\u9fff]*(?:今天|今早|今晚|今儿|刚才|刚刚)")
# a time of a clause's own, other than today's: it is then no part of the day's story
_ZH_OWN_TIME = re.compile(r"下周|下个?星期|下个?礼拜|下个?月|明天|后天|明年|今年|每|平时|一般|经常|总是|以后|下次|周末|(?<!\d)\d+月|"
                          r"(?<!\d)\d+[号日]|去年|上周|以前|从小|一直|最近|已经|开始|起|岁")
# what a story tells: a thing done (了), how it went (辣得…), or a time of the day it happened in
_ZH_HAPPENED = re.compile(r"了$|[\u4e00-\u9fff]得(?!到|了)[\u4e00-\u9fff]|早上|上午|中午|下午|晚上|刚才|刚刚")


def zh_no_fact(c: Clause, *, opens_message: bool) -> bool:
    """Whether a Chinese clause no rule matched says nothing to keep (see the module's doc)."""
    said = c.said.strip()
    body = re.sub(r"^我", "", said)
    if _ZH_POINTS_AWAY.search(body) or _ZH_CHAT_VERDICT.match(body) or _ZH_ABOUT_TO.match(said):
        return True
    if _ZH_BARE_MODAL.search(said) or ("我" not in said and _ZH_EXCLAIM.match(said)):
        return True
    return opens_message and bool(_ZH_VOCATIVE.match(said))


def zh_about_the_chat(said: str) -> bool:
    """Whether a Chinese clause judges the assistant's answer ("思路还行", "这个主意不错")."""
    return bool(_ZH_CHAT_VERDICT.match(re.sub(r"^我", "", said.strip())))


def zh_days_story(c: Clause) -> bool:
    """Whether a clause is part of the day's story: its sentence opens on today, the clause
    names no time of its own and tells what happened ("今天…，中午同事拉我去吃湘菜，辣得我怀疑
    人生"), not how things stand ("今天去体检，…，医生让我少吃盐")."""
    return (bool(_ZH_DAY_OPENS.match(c.sentence)) and not _ZH_OWN_TIME.search(c.said)
            and bool(_ZH_HAPPENED.search(c.said.rstrip("。！!～~ "))))


# ---- English --------------------------------------------------------------------------------

# a clause ending on its auxiliary, the verb left out: "I still do", "she will too"
_EN_ELLIPSIS = re.compile(r"^(?:the user|i|we|he|she|they|the user's \w+|my \w+)\s+(?:(?:still|also|really|too|"
                          r"definitely|certainly|actually)\s+)*(?:do|does|did|can|could|will|would|am|is|are|was|were|"
                          r"have|has|had)(?:n't|\s+not)?(?:\s+(?:too|either|still|now|again))?$", re.I)
# a guess at a feeling to come: "Tom will be proud", "he'll love it"
_EN_FEELING_TO_COME = re.compile(r"(?:\bwill|'ll|\bgonna|\bgoing to|\bwould)\s+(?:\w+\s+)?(?:be\s+)?(?:so\s+|very\s+)?"
                                 r"(?:proud|happy|thrilled|glad|pleased|excited|surprised|upset|mad|sad|jealous|"
                                 r"love|like|hate|enjoy)\b", re.I)
# a thing of the user's (not a person: those are kin) that did something once: "my laptop decided to
# update itself"
_EN_THING_EPISODE = re.compile(r"^(?:the user's|my|our)\s+(?!(?:wife|husband|partner|daughter|son|kids?|mom|mum|"
                               r"dad|mother|father|sister|brother|boss|manager|friend|dog|cat)\b)[a-z]+(?:\s+[a-z]+)?\s+"
                               r"(?:just\s+)?(?:decided|broke|died|crashed|flipped|stopped|froze|fell|got|went|"
                               r"[a-z]+ed)\b", re.I)
# a change that lasts, though said in the past: "my team switched to Rust"
_EN_CHANGE = re.compile(r"\b(?:switched|moved|changed|joined|became|started|retired|graduated|adopted|married|engaged|"
                        r"promoted|diagnosed|passed away|turned|born)\b", re.I)
# a thinking or talking that is no fact: "I was thinking about the trip", "trying to plan something"
_EN_MUSING = re.compile(r"\b(?:was|were|have been|'ve been|been)\s+(?:thinking|wondering|talking|reading)\s+about\b|"
                        r"\b(?:is|am|'m)\s+(?:just\s+)?asking\s+(?:for|because|about|since)\b|\bjust curious\b|"
                        r"^(?:\S+\s+){1,5}(?:something|anything|someone|anyone)\.?$", re.I)


# the time the user has right now: "I've got like 20 mins"
_EN_TIME_AT_HAND = re.compile(r"\b(?:have|has|'ve|got)\s+(?:got\s+)?(?:like\s+|about\s+|only\s+|just\s+|maybe\s+)?"
                              r"(?:\d+|an?|one|two|three|half an?)\s*(?:mins?|minutes|hours?|hrs?|secs?)\b", re.I)


def en_no_fact(c: Clause, s: str, *, dated: bool) -> bool:
    """Whether an English clause no rule matched says nothing to keep; `s` is its words as
    read, `dated` whether it names a day to come."""
    if _EN_ELLIPSIS.match(s) or _EN_MUSING.search(s) or _EN_TIME_AT_HAND.search(s):
        return True
    if c.about == "kin" and not dated and _EN_FEELING_TO_COME.search(s):
        return True
    return c.about == "user" and not dated and bool(_EN_THING_EPISODE.match(s)) and not _EN_CHANGE.search(s)


_EN_REQUEST_VERB = re.compile(r"\b(?:translate|summari[sz]e|proofread|rewrite|rephrase|fix|check|edit|improve|"
                              r"correct|explain|format|shorten|polish)\b", re.I)


def material_cut(sentence: str) -> str:
    """A request and the material it is about ("把这句话翻译成日语：我明天要去东京出差",
    "translate this: …"): the material after the colon is not the user speaking."""
    m = re.search(r"[：:]", sentence)
    if m is None:
        return sentence
    head = ZH_LEAD_FILLER.sub("", EN_LEAD_FILLER.sub("", sentence[:m.start()].strip()))
    if ZH_REQUEST.match(head) or _EN_REQUEST_VERB.search(head) or re.search(r"翻译|改写|润色|总结|解释|校对|检查", head):
        return sentence[:m.start()]
    return sentence


__all__ = ["en_no_fact", "material_cut", "zh_about_the_chat", "zh_days_story", "zh_no_fact"]
