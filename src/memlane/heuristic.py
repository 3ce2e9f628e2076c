"""The offline extractor: Chinese and English patterns for what users state explicitly.

Used when no LLM is configured (`Memory.llm is None`); it yields the same `Operation`s as
the LLM path, with `source="heuristic"`. It catches first-person statements of a known shape
(我叫…, 我对…过敏, I prefer…, I'm allergic to…); an LLM reads far more.

A message is read one clause at a time (`memlane.clauses`: "我不吃香菜，也对芒果过敏" is two
facts about the user), never from a question, a hypothetical or the assistant's words. A plan
keeps its memory until the day its words name (`memlane.dates.upcoming`: "in March", "下周三")
plus `extraction.plan_margin_days`; one without a date, its rule's duration. A correction in
the same conversation ("不对，是周四" / "actually, it's Thursday") replaces what it corrects.

`commands()` runs in both modes: the user's own "记住…/remember that…" becomes a pinned,
verified memory from the user, and "忘掉…/forget…" a FORGET the worker resolves to DELETEs
(seed 001 §6 phase 1.5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from memlane import validate
from memlane.clauses import EN_SENTENCE, ZH_SENTENCE, Clause, Reader, unquoted
from memlane.config import Config
from memlane.dates import relative_days, upcoming
from memlane.extraction import Extraction, Operation
from memlane.models import Turn
from memlane.policy import category_for, initial_score, retention
from memlane.text import has_cjk, language_of

# the commands' own readings (remember / forget): unchanged by the clause reader's
_ZH_SENTENCE = ZH_SENTENCE
_EN_SENTENCE = EN_SENTENCE
_ZH_FILLER = re.compile(r"^(?:对了|另外|还有|而且|其实|嗯|哦|所以|但是|不过|是的|好的|好主意|然后|因为|顺便说一下|顺便)[，,、\s]*")
_EN_FILLER = re.compile(r"^(?:by the way|also|oh|ok|okay|well|so|and|but|actually|btw|yes|yeah|hi|hello)\b[,\s]*", re.I)


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    template: str
    category: str
    importance: str = "medium"
    duration: str | None = None  # a plan's: kept until the date it names, else this long
    predicate: str | None = None
    rest: bool = False  # keep the clauses after it that say more of the same (它叫橘子，三岁了…)


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


_ZH_TIME = r"(?:下周[一二三四五六日天]?|下个?星期[一二三四五六日天]?|下个?月|明天|后天|本周[一二三四五六日天]?|这周[一二三四五六日天]?|周[一二三四五六日天]|月底|年底|\d+月\d+[日号])"
_ZH_RULES = [
    Rule(_r(r"^我对(?P<x>.{1,20}?)过敏"), "用户对{x}过敏", "fact", "high", None, "过敏"),
    Rule(_r(r"^我(?:的名字)?叫(?!了|过|个|一|在)(?P<x>[\u4e00-\u9fff·A-Za-z]{2,8})$"), "用户叫{x}", "fact", "high", None, "名字"),
    Rule(_r(r"^我的名字(?:是|叫)(?P<x>.{1,16})$"), "用户叫{x}", "fact", "high", None, "名字"),
    Rule(_r(r"^我(?P<a>(?:现在|已经|从来|一般|平时|基本)?)不(?P<v>吃|喝)(?P<x>.{1,30})"), "用户{a}不{v}{x}", "preference", "high", None, "饮食"),
    Rule(_r(r"^我(?P<a>比较|很|非常|特别|最|挺|超|更)?(?P<v>讨厌|不喜欢|受不了|不爱)(?P<x>.{1,40})"), "用户{a}{v}{x}", "preference", "medium", None, "不喜欢", True),
    Rule(_r(r"^我(?P<a>比较|很|非常|特别|最|挺|超|更|一直)?(?P<v>喜欢|爱|偏好|偏爱)(?P<x>.{2,40})"), "用户{a}{v}{x}", "preference", "medium", None, "喜欢", True),
    Rule(_r(rf"^(?:我)?(?P<x>{_ZH_TIME}.*要.+)"), "用户{x}", "todo", "high", "30d", "计划", True),
    Rule(_r(rf"^(?P<x>.*要在{_ZH_TIME}.+)"), "用户{x}", "todo", "high", "30d", "计划", True),
    Rule(_r(r"^我(?P<x>(?:现在|目前)?在.+?(?:当|做|担任|工作|上班|上学|读书).*)"), "用户{x}", "fact", "medium", None, "工作", True),
    Rule(_r(r"^我(?P<x>家里?养了.+|养了.+)"), "用户{x}", "fact", "medium", None, "宠物", True),
    Rule(_r(r"^我(?P<r>女儿|儿子|孩子|老婆|妻子|丈夫|老公|妈妈|爸爸|母亲|父亲|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|经理|老板|领导)(?P<x>.+)"), "用户的{r}{x}", "fact", "medium", None, "家人", True),
    Rule(_r(r"^(?P<t>每天|每周|每晚|周末|平时|早上|晚上)?我(?P<x>(?:一般|经常|通常|总是|每天|习惯).+)"), "用户{t}{x}", "workflow", "medium", None, "习惯", True),
    Rule(_r(r"^我们(?P<x>.*(?:用|使用|采用).+)"), "用户团队{x}", "project", "medium", None, "技术栈", True),
    Rule(_r(r"^(?P<x>(?:以后|今后|下次|之后|周末|晚上)?.*(?:千万别|别再|不要再|别给我|不要给我|别帮我|不要帮我|以后别|以后不要).+)"), "用户要求：{x}", "rule", "high", None, "要求"),
]

# a value runs to its clause's comma, and on through what only narrows it ("sci-fi, especially Ted Chiang")
_VAL = r"[^,;]+(?:,\s*(?:especially|particularly|mainly|mostly|including|such as|like)\b[^,;]+)*"
_EN_TIME = r"(?:next (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow|tonight|this (?:week|weekend|friday|month)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|by (?:monday|tuesday|wednesday|thursday|friday|the end of))"
_EN_RULES = [
    Rule(_r(rf"\bI(?:'m| am) (?:very |severely |badly )?allergic to (?P<x>{_VAL})"), "The user is allergic to {x}", "fact", "high", None, "allergic to"),
    # a name is its capitalised words, all of them ("Mary Ann Lee"), and never the "and" after it
    Rule(_r(r"\bmy name is (?P<x>(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)|[a-z][\w'-]*)"), "The user's name is {x}",
         "fact", "high", None, "name"),
    Rule(_r(r"\b(?:call me|I(?:'m| am) called) (?P<x>(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))"), "The user's name is {x}",
         "fact", "high", None, "name"),
    Rule(re.compile(r"^I(?:'m| am) (?P<x>[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)+)$"), "The user's name is {x}", "fact", "high",
         None, "name"),
    Rule(_r(r"\bI (?:don't|do not|never|can't|cannot|no longer) (?P<v>eat|drink) (?P<x>[^,;]+?)(?: any ?more)?(?=[,;]|$)"), "The user does not {v} {x}", "preference", "high", None, "diet"),
    Rule(_r(rf"\bI (?:really |strongly |much |also |usually )?prefer (?P<x>{_VAL})"), "The user prefers {x}", "preference", "medium", None, "prefers"),
    Rule(_r(rf"\bI (?:really |also |absolutely )?(?:hate|dislike|can't stand|don't like|do not like) (?P<x>{_VAL})"), "The user dislikes {x}", "preference", "medium", None, "dislikes"),
    Rule(_r(rf"\bI (?:really |also |absolutely )?(?:like|love|enjoy) (?P<x>{_VAL})"), "The user likes {x}", "preference", "medium", None, "likes"),
    Rule(_r(rf"(?P<t>{_EN_TIME})?[^,;]*?\bI (?P<v>have to|need to|must|will|am going to|'m going to|plan to) (?P<x>[^,;]+)"), "The user {v} {x}", "todo", "high", "30d", "plans"),
    Rule(_r(r"\bI(?:'m| am) (?P<v>training|practicing|practising|preparing|studying|saving) for (?P<x>[^,;]+)"), "The user is {v} for {x}", "fact", "medium", "30d", "preparing for"),
    Rule(_r(r"\bI work (?P<p>at|for|as|on) (?P<x>[^,;]+)"), "The user works {p} {x}", "fact", "medium", None, "works"),
    Rule(_r(r"\bI (?P<v>run|swim|go|do|play|train|cook|read|work out|walk|visit|call|check) (?P<x>[^,;]*\b(?:every|each|on) [^,;]+)"), "The user {v} {x}", "workflow", "medium", None, "habit"),
    Rule(_r(r"^my (?P<x>(?:wife|husband|partner|daughter|son|kids?|children|mother|mom|father|dad|sister|brother|manager|boss|dog|cat)\b.+)"), "The user's {x}", "fact", "medium", None, "family"),
    Rule(_r(r"^(?:please )?(?P<v>always|never) (?P<x>[^,;]+)"), "The user asks to {v} {x}", "rule", "high", None, "asks"),
]
_THIRD_PERSON = {"have to": "has to", "need to": "needs to", "am going to": "is going to", "'m going to": "is going to",
                 "plan to": "plans to", "go": "goes", "do": "does", "run": "runs", "swim": "swims", "play": "plays",
                 "train": "trains", "cook": "cooks", "read": "reads", "work out": "works out", "walk": "walks",
                 "visit": "visits", "call": "calls", "check": "checks"}

_ZH_REMEMBER = _r(r"^(?:请|帮我)?(?:记住|记下|记一下|记得)(?:了|吧)?[：:，,\s]*(?P<x>.*)$")
_ZH_FORGET = _r(r"^(?:请|帮我)?(?:忘掉|忘记|别再记着|不要再记着)(?:关于)?(?P<x>.*?)(?:这件事|的事|吧|这条|这个记忆)?$")
_EN_REMEMBER = _r(r"^(?:please )?(?:remember|note|keep in mind)(?: that)?[:,\s]+(?P<x>.*)$|^(?:please )?remember this$")
_EN_FORGET = _r(r"^(?:please )?forget (?:about )?(?:that )?(?P<x>.*)$|^(?:please )?forget (?:it|that|this)$")
# a command closing a sentence points back at it: "我的车牌是浙A12345，记住这个", "…, remember that"
_ZH_TAIL = _r(r"^(?P<rest>.*?[^，,；;\s])[，,；;\s]++(?P<cmd>(?:请|帮我)?(?:记住|记下|记一下|忘掉|忘记)(?:这个|这点|这件事|那个|那件事|它)?(?:吧|了)?)$")
_EN_TAIL = _r(r"^(?P<rest>.*?[^,;\s])[,;\s]++(?P<cmd>(?:please )?(?:remember|note|forget) (?:this|that|it))$")
# "记住这个：…" / "remember this: …" — the words after the colon are what is meant
_DEICTIC_LEAD = _r(r"^(?:这个|这点|这件事|这些|下面的?|以下|this|that|the following)\s*[：:，,]\s*")
_DEICTIC = {"", "这个", "这点", "这些", "这件事", "那个", "那件事", "那些", "它", "this", "that", "it", "这", "那"}
# what an assistant says to acknowledge is never what the user means by "this" (issue 13)
_ACK_WORD = _r(r"^(?:你好|您好|hi|hello|hey|好的|好滴|好嘞|好|嗯+|哦+|噢|收到|明白了|明白|知道了|了解|没问题|当然|谢谢|多谢|行|"
               r"ok(?:ay)?|sure|got it|noted|understood|alright|all right|will do|of course|thank you|thanks|"
               r"yes|yeah|no problem|great|cool|perfect)(?![\w])[\s,，.。!！~、]*")
_ACK_TAIL = _r(r"^(?:我)?(?:会|已经|已)?(?:记住|记下|记好)(?:了|啦)?(?:的|啦)?|"
               r"I(?:'ll| will| have|'ve)? (?:remember|noted?|keep in mind)(?: (?:that|it|this))?")
_QUESTION_END = re.compile(r"[?？]")
# Not statements about the user (issue 18): a question (我对什么过敏？ / Do I prefer tea?), a
# hypothetical (如果我… / if I…) or a doubt (I wonder if I…). The offline extractor skips them.
_ZH_ASKING = re.compile(r"什么|怎么|为什么|为何|哪(?!怕)|谁|(?<!好)(?:几点|几个|几岁|几天|几次|几号)|多少|多久|是否|"
                        r"([\u4e00-\u9fff])[不没]\1|(?:吗|呢|么|吧|嘛)$")
_ZH_HYPOTHETICAL = re.compile(r"^(?:如果|假如|要是|万一|假设|倘若|假使|如若|若是|即使|就算|哪怕|设想|想象一下|难道)")
_EN_ASKING = _r(r"^(?:(?:what|who|whom|whose|which|where|when|why|how)\b(?!\s+I\b)|"
                r"(?:do|does|did|is|are|am|was|were|can|could|would|will|shall|should|may|might|have|has|had|must)"
                r"(?:n't)?\s+(?:I|you|we|they|he|she|it|my|the|there|this|that)\b)")
_EN_HYPOTHETICAL = _r(r"\b(?:if|unless|whether|suppose|supposing|imagine|imagining|assume|assuming|in case|"
                      r"wonder|wondering|not sure|unsure|don't know|do not know|doubt|pretend|hypothetically|wish)\b")
# what a value must not be: a bare pronoun or a word that names nothing ("I like it", "my
# name is important"); a fact's value also not a negation ("my name is not important")
_EN_NO_VALUE = _r(r"^(?:it|this|that|these|those|them|you|him|her|one|something|anything|everything|important|"
                  r"unimportant|irrelevant|secret|private|unknown|mind)$")
_EN_NEGATED = _r(r"^(?:not|no|never|none|nothing|nobody|neither|n't)\b")
_ZH_QUESTION = re.compile(r"(?:吗|呢|么|什么|怎么|为什么|哪|谁|几点|多少)$")
_EN_QUESTION = _r(r"^(?:what|who|where|when|why|how|do|does|did|is|are|can|could|would|will|should)\b")


def _third_person_zh(text: str) -> str:
    text = re.sub(r"我(?!们)", "用户", text)
    return text.replace("我们", "用户的团队")


_ADVERBS = (r"really|also|usually|always|never|often|sometimes|just|still|absolutely|strongly|totally|generally|"
            r"normally|rarely|seldom|only|even|already|mostly|definitely|actually|truly|much|hardly|mainly|"
            r"personally|typically|regularly")
_SUBJECT_VERB = re.compile(rf"\bI\s+((?:(?:{_ADVERBS})\s+)*)([A-Za-z][A-Za-z']*)", re.IGNORECASE)
_VERB_AS_IS = {  # modals and common irregular past forms: the same after "the user"
    "can", "could", "will", "would", "shall", "should", "may", "might", "must", "can't", "cannot", "won't",
    "wouldn't", "shouldn't", "couldn't", "mustn't", "was", "wasn't", "were", "had", "hadn't", "did", "didn't",
    "went", "got", "made", "said", "took", "came", "saw", "knew", "thought", "ran", "ate", "drank", "bought",
    "brought", "left", "met", "felt", "found", "gave", "told", "kept", "lost", "paid", "sent", "spent", "sold",
    "wrote", "began", "became", "broke", "chose", "drove", "fell", "forgot", "flew", "grew", "heard", "held",
    "meant", "sat", "slept", "spoke", "stood", "swam", "taught", "understood", "won", "woke", "wore", "quit",
}
_VERB_IRREGULAR = {"am": "is", "'m": "is", "have": "has", "haven't": "hasn't", "do": "does", "don't": "doesn't",
                   "go": "goes", "be": "is", "ain't": "isn't"}
_NOT_A_VERB = {"and", "or", "but", "nor", "so", "too", "then", "now", "here", "there", "at", "in", "on", "with",
               "to", "for", "of", "from", "a", "an", "the", "myself", "alone", "both", "either"}


def conjugated(verb: str) -> str:
    """A verb after "I" as it reads after "the user": prefer → prefers, have → has, go → goes;
    modals and past forms unchanged."""
    low = verb.lower()
    if low in _VERB_IRREGULAR:
        return _VERB_IRREGULAR[low]
    if low in _VERB_AS_IS or low in _NOT_A_VERB or (low.endswith("ed") and not low.endswith("eed")):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _third_person_en(text: str) -> str:
    subs = [(r"\bI'm\b", "the user is"), (r"\bI've\b", "the user has"), (r"\bI'll\b", "the user will"),
            (r"\bI'd\b", "the user would")]
    for pat, rep in subs:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    # "My wife and I love hiking": a plural subject, its verb stays as it is
    text = re.sub(r"^((?:(?:my|our) )?\w+(?: [A-Z][a-z]+)?) and I\b", r"\1 and the user", text, flags=re.IGNORECASE)
    # "I hate olives" → "the user hates olives": the verb agrees with its new subject
    text = _SUBJECT_VERB.sub(lambda m: f"the user {m.group(1)}{conjugated(m.group(2))}", text)
    subs = [(r"\bmy\b", "the user's"), (r"\bmine\b", "the user's"), (r"\bmyself\b", "themselves"),
            (r"\bme\b", "the user"), (r"\bI\b", "the user")]
    for pat, rep in subs:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    return text


def third_person(text: str) -> str:
    """The user's words as a memory about "the user" / 用户, in the language they used."""
    text = text.strip().rstrip("。.!！?？;；,， ")
    if has_cjk(text) and language_of(text) == "zh":
        return _third_person_zh(text)
    out = _third_person_en(text)
    return out[:1].upper() + out[1:] + "."


def same_words(text: str) -> str:
    """`text` read as a statement about the user, lower-cased, without punctuation or spaces:
    equal for "我每周二跑步" and "用户每周二跑步", "I hate olives" and "The user hates olives."."""
    return re.sub(r"[\W_]+", "", third_person(text).lower())


def _tidy(x: str) -> str:
    return x.strip().lstrip("-–— ").rstrip("。.!！?？;；,，:：-–— ")




# ---- what is no statement about the user ----------------------------------------------------
#
# General word classes, not phrases of any conversation: a request to the assistant, a
# feeling of the moment, chat about the chat, a hedge or hearsay. A clause of these says
# nothing the user's memory should keep, unless the user makes it a standing rule ("以后…",
# "from now on…").

_ZH_REQUEST = re.compile(r"^(?:帮我|帮忙|请|麻烦|给我|给你|你|您|推荐|告诉我|介绍|写|改|翻译|找|查|看看|想想|别|不要|不用|"
                         r"记得|提醒我|叫我|能不能|可不可以|可以帮|来个|来点|再来|整|搞|再)|(?:一点|一些|点|就行|就好|就可以)$|"
                         r"提醒我|帮我|告诉我")
# "再正式一点", "简单点就行": how the assistant should answer this once
_ZH_ENDING_REQUEST = re.compile(r"(?:一点|一些|点|就行|就好|就可以)$")
# a message that goes on with what the one before said: "另外…", "also…"
_GOES_ON = re.compile(r"^(?:另外|还有|而且|并且|also|and|plus|oh and|btw)\b|^(?:另外|还有|而且|并且)", re.I)
_ZH_STANDING_LEAD = re.compile(r"^(?:以后|今后|从现在起|从今以后|往后|每次|下次)(?:都|你)?(?:用|别|不要|叫|回答|回复|称呼|提醒|"
                               r"说|写|给我|帮我|记得)")
_ZH_STANDING = re.compile(r"以后|今后|从现在起|从今以后|往后|每次|每年|每天都|永远|别再|不要再|都用|都要|都别|叫我|称呼我")
_ZH_MOMENT = re.compile(r"累|困|饿|渴|无聊|烦|焦虑|开心|高兴|难过|伤心|郁闷|激动|兴奋|崩溃|纠结|晚安|早安|没事|(?<!就)算了|"
                        r"随便|尴尬|忘了|忘记|搞定|决定了|想好了|知道了|明白了|懂了|问问|聊聊|说说|试试|逗|开玩笑|做梦|"
                        r"太冷|好冷|好热|天气|不错|还行|可惜|羡慕|哈哈|嘿嘿|呵呵|别扭|不对|不变|照旧|一样")
_ZH_TODAY = re.compile(r"今天|今晚|今早|刚才|刚刚|刚\S{0,3}完|现在正|这会儿|此刻|待会|一会儿")
_ZH_HEALTH = re.compile(r"病|疼|痛|发炎|发烧|感冒|咳嗽|过敏|住院|请假|受伤|骨折|拉肚子|头晕|怀孕")
_ZH_HEDGE = re.compile(r"^(?:可能|也许|大概是|好像|似乎|估计|应该是|听说|据说)")
_ZH_PLAN = re.compile(r"要|打算|计划|准备|将|会去|会在|去|出发|回来|飞|入职|考试|面试|约|预约|开会|出差|旅|搬|办|签|休|"
                      r"过生日|婚礼|聚会|比赛|截止|到期|之前")
_ZH_HABIT = re.compile(r"一般|经常|通常|总是|每|平时|习惯|常常|向来")
_ZH_LIKE = re.compile(r"喜欢|爱(?!情|人|好)|讨厌|不喜欢|偏好|受不了|看不了|感兴趣|偏爱|最爱|就算了")

_EN_STANDING = re.compile(r"\b(?:from now on|always|never(?!\s*mind)|every time|in every|any ?more|going forward|"
                          r"stop|unless i ask|in (?:the )?future|each time|call me|by default)\b", re.I)
_EN_MOMENT = re.compile(r"\b(?:tired|bored|hungry|sleepy|scared|nervous|excited|happy|sad|stressed|anxious|"
                        r"brain fog|long day|kidding|joking|never ?mind|nvm|got it|checking|alive|"
                        r"good one|thanks|thank you|weather|i'd like|i would like|i'll just|i will just|"
                        r"i decided|i guess|i mean|i meant|wish me luck|no worries|sorry|nothing yet|"
                        r"not yet|nope)\b", re.I)
# "The user gets these once a month", "The user loved it": the thing is named elsewhere
_EN_TODAY = re.compile(r"\b(?:today|tonight|right now|this morning|this afternoon|this evening|at the moment)\b", re.I)
_EN_HEALTH = re.compile(r"\b(?:sick|ill|migraine|fever|cold|flu|pain|hurts?|headache|injur\w*|surgery|hospital|"
                        r"allerg\w*|pregnant)\b", re.I)
_EN_HABIT = re.compile(r"\b(?:every|each|usually|always|often|mostly|normally|typically|regularly|times a)\b", re.I)
_EN_PLAN = re.compile(r"\b(?:will|going to|gonna|plan\w*|flying|leaving|moving|starting|starts?|appointment|exam|trip|"
                      r"visit\w*|wedding|party|meeting|interview|due|deadline|ends?|booked|travel\w*|race|"
                      r"marathon|training for|heading|taking|doing|having)\b", re.I)
_EN_LIKE = re.compile(r"\b(?:like|likes|love|loves|enjoy|enjoys|hate|hates|prefer|prefers|into|fan of|"
                      r"can't stand|dislike|dislikes|favou?rite)\b", re.I)
_EN_OBJECT_PRONOUN = re.compile(r"^the user\s+(?:\w+ly\s+)?(?!is\b|was\b|has\b)\w+\s+(?:it|them|these|those|one)\b",
                                re.I)
_EN_POLITE = re.compile(r"^(?:pls|plz|please|kindly)\s+|\s+(?:pls|plz|please)$", re.I)
_ZH_NAMED_KIN = re.compile(r"^(?:我|用户)(?:的)?(?P<kin>" + "|".join(("女儿", "儿子", "老婆", "妻子", "老公", "丈夫",
                           "男朋友", "女朋友", "同事", "经理", "老板", "姐姐", "妹妹", "哥哥", "弟弟", "妈妈", "爸爸",
                           "猫", "狗")) + r")(?P<name>[\u4e00-\u9fff]{2})(?=对|在|今|很|喜|不|有|要|吃|下|和|的|也|是|去)")
_EN_NAMED_KIN = re.compile(r"^(?:my|our)\s+(?:(?:little|older|younger|big|best)\s+)?(?P<kin>[a-z]+)\s+"
                           r"(?P<name>(?-i:[A-Z][a-z]+))\b(?!\s+(?-i:[A-Z]))", re.I)

# a correction said in one breath: "是下周二，不是周一", "我是在上海不是北京", "it's the 18th
# not the 11th", "Portland, Oregon, not Seattle"
_ZH_CORRECTION = [re.compile(r"(?:是|在|改成|改到|改为|换成)(?P<x>[^，,。；\s不]{1,12}?)[，,\s]*(?:而)?不是(?P<y>[^，,。；\s]{1,12})"),
                  re.compile(r"不是(?P<y>[^，,。；\s]{1,12}?)[，,\s]*(?:而)?是(?P<x>[^，,。；\s]{1,12})")]
_EN_CORRECTION = re.compile(r"(?P<x>(?:the\s+|a\s+)?[\w'&-]+)\s*(?P<comma>,)?\s+not\s+(?P<y>(?:the\s+|a\s+)?[\w'&-]+)", re.I)
# where a value ends inside its clause: "allergic to cashews so no cashew cream pls"
_EN_VALUE_END = re.compile(r"\s+(?:so|because|since|but|which|lol|haha\w*|pls|please|thanks)\b.*$", re.I)
_EN_TRAILING = re.compile(r"(?:\s+(?:lol|haha\w*|tbh|btw|though|then|thankfully|honestly))+$|\s*[-–—]+$", re.I)


def _until(day: date, margin_days: int) -> datetime:
    """The end of `day`, `margin_days` on: when a plan dated that day stops being kept."""
    return datetime.combine(day, time.min, tzinfo=UTC) + timedelta(days=1 + margin_days)


def _today(turn: Turn, now: datetime) -> date:
    """The day the user spoke: what "tomorrow" and "next March" count from."""
    at = turn.created_at or now
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC).date()


_DATE_NEXT = re.compile(r"^\s*[（(]|^\s*,?\s*(?:the\s+)?\d|^\s*,?\s*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
                        r"|^\s*\d+月", re.I)


def _dated(text: str, today: date) -> str:
    """The text with each relative day also said as a date: "明天生日" → "明天（4月26日）生日",
    "next Wednesday" → "next Wednesday (March 18)", for a memory read long after."""
    out, last = [], 0
    for _start, end, day in relative_days(text, today):
        if _DATE_NEXT.match(text[end:end + 24]):
            continue  # "Saturday the 18th of April", "明天（4月26日）": the date is said
        label = f"（{day.month}月{day.day}日）" if has_cjk(text) else f" ({day.strftime('%B')} {day.day})"
        out += [text[last:end], label]
        last = end
    return "".join(out) + text[last:]


@dataclass(frozen=True)
class _Generic:
    """What a clause no rule matched says, read by its words: category, how long it holds."""

    category: str
    duration: str | None
    predicate: str


_STANDING_RULE = Rule(re.compile(""), "", "rule", "high", None, "asks")


@dataclass(frozen=True)
class _Ctx:
    """Where a clause was said: the job's clock, the day the user spoke, whether the message
    sets standing rules ("from now on…"), and the whole message (a plan's date may sit in
    another sentence of it)."""

    now: datetime
    today: date
    standing: bool
    message: str = ""


@dataclass
class _Said:
    """One kept statement of this job: the operation it gave (None for a command the user
    gave, which `commands()` stored already), the sentence it came from and that sentence's
    place in the conversation."""

    op: Operation | None
    sentence: str
    order: int = 0
    text: str = ""  # a command's words (what a correction may rewrite)


class HeuristicExtractor:
    """Operations from patterns alone (no LLM): same shape as the LLM's, source="heuristic"."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def extract(self, turns: Sequence[Turn], *, now: datetime) -> Extraction:
        result = Extraction(language=language_of(" ".join(t.content for t in turns if t.role == "user")))
        reader = Reader()
        said: list[_Said] = []
        asked = False  # the assistant's last message asked something: a bare reply answers it
        standing = False  # the user is setting rules: "另外…" / "also…" in the next message goes on
        order = 0
        for turn in turns:
            if turn.role == "assistant":
                asked = bool(re.search(r"[?？]\s*$|[吗呢]\s*$", turn.content.strip()))
                continue  # the assistant's words are not the user's facts
            if turn.role != "user":
                continue
            text = unquoted(turn.content[: self.config.extraction.offline_turn_chars])  # a pasted page: its start
            standing = bool(_ZH_STANDING.search(text) or _EN_STANDING.search(text)
                            or (standing and _GOES_ON.match(text.strip())))
            ctx = _Ctx(now, _today(turn, now), standing, text)
            items, sentences = self._turn(text, reader, ctx, asked, order)
            said += items
            for k, sentence in sentences:
                said = self._corrected(said, k, sentence, now)
            order += len(sentences) + 1
            asked = False
        ops = [s.op for s in said if s.op is not None]
        result.operations = _fitting(ops + self._named(ops, now), self.config)
        return result

    def _turn(self, text: str, reader: Reader, ctx: _Ctx, asked: bool,
              order: int) -> tuple[list[_Said], list[tuple[int, str]]]:
        """What one user message states, and its sentences with their places."""
        splitter = ZH_SENTENCE if language_of(text) == "zh" else EN_SENTENCE
        kept: list[str] = []
        out: list[_Said] = []
        places: dict[str, int] = {}
        for m in splitter.finditer(text):
            sentence = m.group().strip()
            if not sentence or len(sentence) > self.config.extraction.heuristic_max_sentence_chars:
                continue
            places.setdefault(sentence, order + len(places))
            if _is_command(sentence):  # commands() handles these, in both modes
                what = (_command(sentence) or ("", "", True))[1] or (_tail(sentence) or ("", ""))[0]
                if what:
                    out.append(_Said(None, sentence, places[sentence], what))
                continue
            kept.append(sentence)
        skip = ""
        for clause in reader.read("\n".join(kept), after_question=asked):
            where = places.get(clause.sentence, order + len(places))
            if clause.sentence == skip:
                continue
            if _hypothetical(clause):
                skip = clause.sentence  # from a hypothetical clause on, nothing in the sentence holds
                continue
            if _joins(clause, out):
                continue
            op = self._clause(clause, ctx)
            if op is not None:
                out.append(_Said(op, clause.sentence, where))
        return out, sorted((k, sentence) for sentence, k in places.items())

    # -- one clause --

    def _clause(self, c: Clause, ctx: _Ctx) -> Operation | None:
        """The operation one clause gives, if it says something about the user."""
        if c.asked or c.about == "other" or not c.text or _consumed(c):
            return None
        if c.lang == "zh":
            return self._zh_clause(c, ctx)
        return self._en_clause(c, ctx)

    def _zh_clause(self, c: Clause, ctx: _Ctx) -> Operation | None:
        now, today, standing = ctx.now, ctx.today, ctx.standing
        text = c.text
        if _ZH_STANDING_LEAD.match(c.said) and not _ZH_ASKING.search(text.rstrip("吧")):
            return self._add("用户要求：" + _third_person_zh(_tidy(c.said)), _STANDING_RULE, now)  # "以后回答我都用中文吧"
        if _ZH_ASKING.search(text) or re.search(r"啥(?!都)", text):
            return None
        said = c.said if c.carried else re.sub(r"^我", "", text)
        if _ZH_REQUEST.search(said) and (c.carried or not _ZH_ENDING_REQUEST.search(said)) or _ZH_REQUEST.match(text):
            if standing or _ZH_STANDING.search(text):
                return self._add("用户要求：" + _third_person_zh(_tidy(c.said)), _STANDING_RULE, now)
            return None
        if c.carried and _in_question(c):
            return None  # "家里有豆腐和西兰花，做啥好": the setting of a question, not a fact
        found = _zh_rule(text)
        if found is not None:
            rule, m = found
            groups = {k: _tidy(v or "") for k, v in m.groupdict().items()}
            groups["x"] = _third_person_zh(groups["x"])
            content = rule.template.format(**groups)
            if content.startswith("用户") and groups["x"].count("用户"):
                content = groups["x"]  # "下周三我要…": the user is named in the words already
            return self._dated_plan(content, rule, ctx, (text, c.sentence))
        if not self._zh_says_something(c, said):
            return None
        generic = _zh_generic(text, today)
        content = _third_person_zh(_tidy(text))
        return self._generic_add(content, generic, ctx, (text, c.sentence),
                                 health_today=bool(_ZH_TODAY.search(text) and _ZH_HEALTH.search(text)))

    @staticmethod
    def _zh_says_something(c: Clause, said: str) -> bool:
        body = _tidy(said)
        if _ZH_HEDGE.match(body) or len(re.findall(r"[\u4e00-\u9fffA-Za-z0-9]", body)) < 3:
            return False
        if _ZH_TODAY.search(c.text):
            return bool(_ZH_HEALTH.search(c.text))  # today's condition holds a day; today's mood, not at all
        return not (_ZH_MOMENT.search(body) and len(body) <= 10)

    def _en_clause(self, c: Clause, ctx: _Ctx) -> Operation | None:
        now, today, standing = ctx.now, ctx.today, ctx.standing
        s = _EN_TRAILING.sub("", _tidy(c.text))
        if _EN_ASKING.match(s):
            return None
        if c.about in ("request", "none"):
            if standing or (c.about == "request" and _EN_STANDING.search(s)):
                ask = _third_person_en(_EN_POLITE.sub("", s))
                return self._add(f"The user asks: {ask}.", _STANDING_RULE, now)
            return None
        if _EN_HYPOTHETICAL.search(s):
            return None
        if c.about == "answer":
            if _EN_MOMENT.search(s) or re.search(r"\byou\b", s, re.I) or len(s.split()) < 2:
                return None
            return self._generic_add(f"The user: {s}.", _Generic("fact", None, "answer"), ctx, (s,))
        if any(rule.pattern.search(s) for rule in _EN_RULES):
            return self.statement(s, now=now, today=today, context=c.sentence, message=ctx.message)
        if _EN_MOMENT.search(s) or (_EN_TODAY.search(s) and not _EN_HEALTH.search(s)):
            return None
        content = third_person(s)
        if _EN_OBJECT_PRONOUN.match(content) or len(re.findall(r"[A-Za-z0-9]+", content)) < 4:
            return None  # "The user loved it.", "gets these once a month": a thing said elsewhere
        generic = _en_generic(s, today)
        return self._generic_add(content, generic, ctx, (s, c.sentence),
                                 health_today=bool(_EN_TODAY.search(s) and _EN_HEALTH.search(s)))

    def statement(self, sentence: str, *, now: datetime, today: date | None = None,
                  context: str = "", message: str = "") -> Operation | None:
        """The first rule an English clause matches, as an ADD. Nothing for a question, a
        hypothetical, or a value that is a negation or a pronoun. `context`: the whole
        sentence, where a plan's date may sit outside its clause."""
        if language_of(sentence) == "zh":
            return None
        s = _EN_FILLER.sub("", sentence.strip())
        if _EN_ASKING.match(s):
            return None
        for rule in _EN_RULES:
            m = rule.pattern.search(s)
            if m:
                value = _tidy(_EN_VALUE_END.sub("", m.group("x") or ""))
                if (_EN_HYPOTHETICAL.search(s[:m.start()]) or _EN_NO_VALUE.match(value)
                        or (rule.category == "fact" and _EN_NEGATED.match(value))):
                    return None  # "I wonder if I like sushi", "my name is not important"
                groups = {k: _tidy(v or "") for k, v in m.groupdict().items()}
                groups["x"] = value
                if "v" in groups:
                    groups["v"] = _THIRD_PERSON.get(groups["v"].lower(), groups["v"].lower())
                groups["x"] = _third_person_en(groups.get("x", ""))
                content = " ".join(rule.template.format(**groups).split()) + "."
                ctx = _Ctx(now, today or now.date(), False, message)
                return self._dated_plan(content, rule, ctx, (sentence, context))
        return None

    def _zh_clauses(self, sentence: str, now: datetime, *, asked: bool = False,
                    today: date | None = None) -> list[Operation]:
        """Operations from the clauses of one Chinese sentence (a fresh reader)."""
        ops = []
        for c in Reader().read(sentence + ("？" if asked else "")):
            op = self._clause(c, _Ctx(now, today or now.date(), False, sentence))
            if op is not None:
                ops.append(op)
        return ops

    # -- corrections, and the people the user names --

    def _corrected(self, said: list[_Said], k: int, sentence: str, now: datetime) -> list[_Said]:
        """Apply sentence `k`'s correction, if it makes one, to what was said before it: the
        statement holding the wrong value is dropped when the correction states the fact again
        ("I live in Portland, Oregon, not Seattle"), else its value is replaced ("it's the 18th
        not the 11th"); a command the user gave is forgotten and remembered corrected."""
        fix = _correction(sentence)
        if fix is None:
            return said
        x, y = fix
        restated = any(s.order == k and s.op is not None and x.lower() in (s.op.content or "").lower() for s in said)
        out: list[_Said] = []
        for s in said:
            words = (s.op.content if s.op is not None else s.text) or ""
            if s.order >= k or y.lower() not in words.lower() or (s.op is not None and s.op.op == "FORGET"):
                out.append(s)
            elif s.op is None:
                fixed = _replaced(s.text, y, x)
                out.append(_Said(Operation("FORGET", query=s.text, source="user",
                                           reason=f"the user corrected it: {_tidy(sentence)[:200]}"), "", s.order))
                out.append(_Said(_remember(_Topic(fixed), self.config, now), s.sentence, s.order, fixed))
            elif not restated:
                out.append(replace(s, op=replace(s.op, content=_replaced(words, y, x))))
        return out

    def _named(self, ops: list[Operation], now: datetime) -> list[Operation]:
        """A person or pet the user names in passing, kept on its own: "我和男朋友阿杰下个月要去
        日本" also says who 阿杰 is, and that outlives the trip."""
        out: list[Operation] = []
        have = " ".join(op.content or "" for op in ops)
        for op in ops:
            content = op.content or ""
            m = _ZH_NAMED_KIN.search(content.replace("用户和", "用户")) or _EN_NAMED_KIN.match(
                re.sub(r"^The user's\b", "my", content))
            if m is None or op.category == "fact" and op.expires_at is None:
                continue
            kin, name = m.group("kin"), m.group("name")
            fact = f"用户的{kin}叫{name}" if has_cjk(content) else f"The user's {kin.lower()} is named {name}."
            if fact not in have:
                out.append(self._add(fact, Rule(re.compile(""), "", "fact", "medium", None, "family"), now))
                have += fact
        return out

    # -- durations --

    @staticmethod
    def _day(rule: Rule, texts: Sequence[str], today: date) -> date | None:
        """The last day a plan's words name (its clause first, then its sentence)."""
        if rule.duration is None:
            return None
        return next((d for t in texts if t and (d := upcoming(t, today)) is not None), None)

    def _dated_plan(self, content: str, rule: Rule, ctx: _Ctx, texts: Sequence[str]) -> Operation:
        """An ADD whose relative days are also said as dates; a plan kept until its day. A plan
        whose own sentence names no day takes the one its message names elsewhere ("I'm
        training for the Berlin half marathon … end of August"), and says it."""
        day = self._day(rule, texts, ctx.today)
        if day is None and rule.duration is not None:
            day = self._day(rule, (ctx.message,), ctx.today)
            if day is not None:
                by = f"（{day.month}月{day.day}日前）" if has_cjk(content) else f" (by {day.strftime('%B')} {day.day})"
                content = content.rstrip("。.") + by + ("" if has_cjk(content) else ".")
        op = self._add(content, rule, ctx.now, day)
        if op.expires_at is None:  # kept for good: "明天" must still say which day when read next year
            op = replace(op, content=_dated(content, ctx.today))
        return op

    def _generic_add(self, content: str, g: _Generic, ctx: _Ctx, texts: Sequence[str],
                     *, health_today: bool = False) -> Operation:
        rule = Rule(re.compile(""), "", g.category, "medium", g.duration, g.predicate)
        if health_today:  # "今天嗓子发炎了": true today, not next week
            return replace(self._add(content, rule, ctx.now), expires_at=_until(ctx.today, 0))
        return self._dated_plan(content, rule, ctx, texts)

    def _add(self, content: str, rule: Rule, now: datetime, day: date | None = None) -> Operation:
        pol = self.config.policy
        category = category_for(rule.category, pol) or pol.default_category
        until, priority = retention(rule.duration, category, now, pol)  # seed 002 §4: the type's default
        if day is not None:  # a dated plan: until its day is over, and a little after
            until = _until(day, self.config.extraction.plan_margin_days)
        return Operation(
            "ADD", content=content, category=category,
            score=initial_score(rule.importance, pol), expires_at=until,
            subject="用户" if has_cjk(content) else "user", predicate=rule.predicate,
            confidence=self.config.extraction.heuristic_confidence, source="heuristic", priority=priority,
        )


def _zh_generic(text: str, today: date) -> _Generic:
    if _ZH_LIKE.search(text):
        return _Generic("preference", None, "喜好")
    if not _ZH_HABIT.search(text) and _ZH_PLAN.search(text) and upcoming(text, today) is not None:
        return _Generic("todo", "30d", "计划")
    return _Generic("fact", None, "事实")


def _en_generic(text: str, today: date) -> _Generic:
    if _EN_LIKE.search(text):
        return _Generic("preference", None, "likes")
    if not _EN_HABIT.search(text) and _EN_PLAN.search(text) and upcoming(text, today) is not None:
        return _Generic("todo", "30d", "plans")
    return _Generic("fact", None, "fact")


def _joins(c: Clause, out: list[_Said]) -> bool:
    """A Chinese clause that only goes on about the statement before it ("下周三要去北京出差，
    大概待三天，周五晚上回来") joins it; one opened by a conjunction ("也对芒果过敏"), or
    with a fact a rule knows, stands alone."""
    if c.lang != "zh" or not c.carried or c.chained or c.asked or not out or c.about == "other":
        return False
    last = out[-1]
    if last.op is None or last.sentence != c.sentence or last.op.category == "rule" or _zh_rule(c.text) is not None:
        return False
    said = _tidy(c.said)
    if (_ZH_ASKING.search(said) or _ZH_REQUEST.search(said) or _ZH_HEDGE.match(said)
            or (_ZH_MOMENT.search(said) and len(said) <= 4) or _consumed(c) or _in_question(c)):
        return False
    content = last.op.content or ""
    out[-1] = replace(last, op=replace(last.op, content=f"{_tidy(content)}，{_third_person_zh(said)}"))
    return True


def _in_question(c: Clause) -> bool:
    """Whether the clause's sentence ends by asking ("…，做啥好", "…，有配方吗")."""
    tail = re.split(r"[，,；;]", c.sentence.rstrip("。！!～~… "))[-1]
    return bool(re.search(r"[?？]$", c.sentence.strip()) or _ZH_ASKING.search(tail) or re.search(r"啥(?!都)", tail))


def _consumed(c: Clause) -> bool:
    """A clause that only says a correction's values ("是下周二", "不是周一"): the correction
    is applied to what it corrects; the clause itself states nothing."""
    fix = _correction(c.sentence)
    if fix is None:
        return False
    body = re.sub(r"^(?:我|用户)?(?:就|应该|而)?(?:是|不是)", "", _tidy(c.said))
    return body in fix or (c.lang == "en" and bool(re.match(r"^(?:it|that)(?:'s| is| was)\b", c.said, re.I)))


def _correction(sentence: str) -> tuple[str, str] | None:
    """(right, wrong) for a sentence that corrects a value, else None."""
    if has_cjk(sentence):
        for pattern in _ZH_CORRECTION:
            m = pattern.search(sentence)
            if m:
                return m.group("x"), m.group("y").rstrip("了啊呀哈的")
        return None
    m = _EN_CORRECTION.search(sentence)
    if m is None:
        return None
    x, y = m.group("x"), _EN_TRAILING.sub("", m.group("y"))
    like = (any(ch.isdigit() for ch in x) and any(ch.isdigit() for ch in y)) or (x[:1].isupper() and y[:1].isupper())
    if not (m.group("comma") or like) or re.match(r"^(?:i'm|am|is|are|was|do|does|did|i|it|that|but|and|or)$", x, re.I):
        return None
    return x, y


def _replaced(text: str, wrong: str, right: str) -> str:
    """`wrong` replaced by `right` in `text`, minding what they share: "下周一…" with
    ("下周二", "周一") → "下周二…", not "下下周二…"."""
    i = text.lower().find(wrong.lower())
    if i < 0:
        return text
    k = next((k for k in range(min(i, len(right)), 0, -1) if text[i - k:i] == right[:k]), 0)
    return text[:i - k] + right + text[i + len(wrong):]


def _hypothetical(c: Clause) -> bool:
    if c.lang == "zh":
        return bool(_ZH_HYPOTHETICAL.match(c.said or c.text))
    return bool(_EN_HYPOTHETICAL.match(_EN_FILLER.sub("", c.said or c.text)))


def _zh_rule(clause: str) -> tuple[Rule, re.Match[str]] | None:
    for rule in _ZH_RULES:
        m = rule.pattern.search(clause)
        if m:
            return rule, m
    return None


def _command(sentence: str) -> tuple[str, str, bool] | None:
    """("remember" | "forget", what, points_back) for a command sentence; None otherwise.
    `points_back`: "this / that / 这个" with nothing after it, so the referent is elsewhere."""
    s = _ZH_FILLER.sub("", _EN_FILLER.sub("", sentence.strip()))
    for kind, patterns in (("remember", (_ZH_REMEMBER, _EN_REMEMBER)), ("forget", (_ZH_FORGET, _EN_FORGET))):
        m = patterns[0].match(s) or patterns[1].match(s)
        if m is not None:
            what = _tidy(_DEICTIC_LEAD.sub("", m.group("x") or ""))
            return (kind, "", True) if what.lower() in _DEICTIC else (kind, what, False)
    return None


def _tail(sentence: str) -> tuple[str, str] | None:
    """(statement, "remember" | "forget") for "…，记住这个" / "…, remember that"."""
    s = _ZH_FILLER.sub("", _EN_FILLER.sub("", sentence.strip()))
    m = _ZH_TAIL.match(s) or _EN_TAIL.match(s)
    if m is None:
        return None
    return _tidy(m.group("rest")), "forget" if re.search(r"忘|forget", m.group("cmd"), re.I) else "remember"


def _is_command(sentence: str) -> bool:
    return _command(sentence) is not None or _tail(sentence) is not None


def is_ack(text: str) -> bool:
    """Whether a message only acknowledges ("好的", "Got it.", "好的，我记住了"): it is never
    what "this" means."""
    t = text.strip()
    while (m := _ACK_WORD.match(t)) is not None and m.end() > 0:
        t = t[m.end():]
    t = _tidy(t)
    return not t or _ACK_TAIL.fullmatch(t) is not None


def _is_question(sentence: str, end: str) -> bool:
    s = _tidy(sentence)
    return bool(_QUESTION_END.match(end)) or bool(_ZH_QUESTION.search(s)) or bool(_EN_QUESTION.match(s))


def _units(text: str, max_chars: int | None = None) -> list[tuple[str, str]]:
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
            out.append(("say", _tidy(sentence)))
        elif (cmd := _command(sentence)) is not None:
            kind, what, back = cmd
            out.append((kind + "?", "") if back else (kind, what))
        elif (tail := _tail(sentence)) is not None:
            out += [("say", tail[0]), (tail[1] + "?", "")]
        elif _is_question(sentence, text[m.end():m.end() + 1]):
            out.append(("ask", sentence))
        elif not is_ack(sentence):
            out.append(("say", _tidy(sentence)))
    return out


def is_command(text: str, max_chars: int | None = None) -> bool:
    """Whether a user message says "remember …" or "forget …" (记住…/忘掉…) anywhere."""
    return any(kind in ("remember", "forget", "remember?", "forget?") for kind, _ in _units(text, max_chars))


_REMEMBERED = "the user asked to remember it"


@dataclass
class _Topic:
    """What "this / that" points at: the user's own words (`own`), or what the assistant
    answered to the user's question."""

    text: str = ""
    own: bool = True


def _joined(parts: list[str]) -> str:
    return ("，" if language_of("".join(parts)) == "zh" else ". ").join(parts)


def commands(turns: Sequence[Turn], config: Config, *, now: datetime, after_seq: int = 0) -> list[Operation]:
    """The user's explicit "remember …" / "forget …" (seed 001 §6 phase 1.5), in zh and en,
    in the turns after `after_seq` (those before were handled already; they give context).

    "记住这个" / "remember this" / "忘掉那个" point back at what the user means: the rest of
    the same message when it says something, else the user's last statement (a command that
    pointed back keeps it), else the assistant's answer to the user's last question. An
    assistant's acknowledgement ("好的", "Got it.") is never the referent (issue 13)."""
    ops: list[Operation] = []
    topic = _Topic()
    asked = False  # the user's last message only asked: the answer is the thing under discussion
    for turn in turns:
        if turn.role == "assistant":
            if (asked or not topic.text) and not is_ack(turn.content):
                topic = _Topic(_tidy(turn.content), own=False)
            asked = False
            continue
        if turn.role != "user":
            continue
        units = _units(turn.content[: config.extraction.offline_turn_chars], config.extraction.heuristic_max_sentence_chars)
        said = [t for k, t in units if k == "say"]
        here = _Topic(_joined(said)) if said else topic
        if turn.seq > after_seq:
            for kind, what in units:
                if kind in ("say", "ask"):
                    continue
                ref = _Topic(what) if what else here
                if not ref.text:
                    continue
                if kind.startswith("remember"):
                    ops.append(_remember(ref, config, now))
                else:
                    # remembered and forgotten in the same batch: never stored at all
                    ops = [op for op in ops if not (op.op == "ADD" and op.reason == _REMEMBERED
                                                    and op.content == _remember(ref, config, now).content)]
                    ops.append(Operation("FORGET", query=ref.text, source="user",
                                         reason=f"the user asked to forget: {_tidy(turn.content)[:200]}"))
        explicit = [w for k, w in units if k in ("remember", "forget") and w]
        if said or explicit:
            topic, asked = (here if said else _Topic(explicit[-1])), False
        elif any(k == "ask" for k, _ in units):
            asked = True
    return _fitting(ops, config)


def _fitting(ops: list[Operation], config: Config) -> list[Operation]:
    """Memories cut from turns, held to the rules of a memory (`memlane.validate`): a turn may
    be far longer than a memory and hold control characters; such a cut is left out."""
    out = []
    for op in ops:
        if op.content is not None:
            text = validate.fit_memory_text(op.content, config.store.max_content_chars)
            if text is None:
                continue
            op = replace(op, content=text)
        out.append(op)
    return out


def _remember(ref: _Topic, config: Config, now: datetime) -> Operation:
    heur = HeuristicExtractor(config)
    guess = None  # "remember this" may point at a whole pasted document: no patterns on that
    if len(ref.text) <= config.extraction.heuristic_max_sentence_chars:
        guess = heur.statement(ref.text, now=now) or next(iter(heur._zh_clauses(ref.text, now)), None)
    pol = config.policy
    content = third_person(ref.text) if ref.own else ref.text
    return Operation(
        "ADD", content=content, category=guess.category if guess else pol.default_category,
        score=initial_score("high", pol), expires_at=guess.expires_at if guess else None,
        priority=guess.priority if guess else None,
        subject=guess.subject if guess else None, predicate=guess.predicate if guess else None,
        confidence=1.0, source="user", pinned=True, verified=True, reason=_REMEMBERED,
    )


__all__ = ["HeuristicExtractor", "commands", "conjugated", "is_ack", "is_command", "same_words", "third_person"]
