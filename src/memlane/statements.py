"""How a user's words read as statements about the user (issue 29): the patterns of what
people say of themselves (我对…过敏, I prefer…), the words that make a clause no statement
(a request to the assistant, a feeling of the moment, chat about the chat, a question), the
same words said of "the user" / 用户, corrections and dates. Text in, text out: the offline
extractor (`memlane.heuristic`) decides with these what a conversation leaves behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from memlane.clauses import ZH_CALLED_ME, Clause
from memlane.dates import relative_days, upcoming
from memlane.en_clauses import EN_FILLER
from memlane.text import has_cjk, language_of


@dataclass(frozen=True)
class Rule:
    """A shape of statement and how a memory says it: "我对{x}过敏" → "用户对{x}过敏"."""

    pattern: re.Pattern[str]
    template: str
    category: str
    importance: str = "medium"
    duration: str | None = None  # a plan's: kept until the date it names, else this long
    predicate: str | None = None


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


_ZH_TIME = r"(?:下周[一二三四五六日天]?|下个?星期[一二三四五六日天]?|下个?月|明天|后天|本周[一二三四五六日天]?|这周[一二三四五六日天]?|周[一二三四五六日天]|月底|年底|\d+月\d+[日号])"
_ZH_RULES = [
    Rule(_r(r"^我对(?P<x>.{1,20}?)过敏"), "用户对{x}过敏", "fact", "high", None, "过敏"),
    Rule(_r(r"^我(?:的名字)?叫(?!了|过|个|一|在)(?P<x>[\u4e00-\u9fff·A-Za-z]{2,8})$"), "用户叫{x}", "fact", "high", None, "名字"),
    Rule(_r(r"^我的名字(?:是|叫)(?P<x>.{1,16})$"), "用户叫{x}", "fact", "high", None, "名字"),
    # what others call the user: "大家都叫我静静", "朋友们叫我阿飞" (not "叫我小王就行", a request)
    Rule(_r("^" + ZH_CALLED_ME + r"(?P<x>[\u4e00-\u9fffA-Za-z]{1,6})$"), "大家叫用户{x}", "fact", "high", None, "昵称"),
    Rule(_r(r"^我(?P<a>(?:现在|已经|从来|一般|平时|基本)?)不(?P<v>吃|喝)(?P<x>.{1,30})"), "用户{a}不{v}{x}", "preference", "high", None, "饮食"),
    Rule(_r(r"^我(?P<a>(?:现在|已经|从来|一般|平时|基本|真的|实在)?)(?P<v>吃不了|不能吃|吃不惯|不敢吃|喝不了|不能喝|喝不惯)(?P<x>.{1,30})"),
         "用户{a}{v}{x}", "preference", "high", None, "饮食"),
    Rule(_r(r"^我对(?P<x>.{1,20}?)(?:也|都|一直|完全|真的)?(?:不感冒|无感|没兴趣|不感兴趣|没什么兴趣)"), "用户对{x}不感兴趣",
         "preference", "medium", None, "不喜欢"),
    Rule(_r(r"^我(?P<a>比较|很|非常|特别|最|挺|超|更)?(?P<v>讨厌|不喜欢|受不了|不爱|(?<=[最很超])烦(?![死透人躁恼心了]))(?P<x>.{1,40})"), "用户{a}{v}{x}", "preference", "medium", None, "不喜欢"),
    Rule(_r(r"^我(?P<a>比较|很|非常|特别|最|挺|超|更|一直)?(?P<v>喜欢|爱|偏好|偏爱)(?P<x>.{2,40})"), "用户{a}{v}{x}", "preference", "medium", None, "喜欢"),
    Rule(_r(rf"^(?:我)?(?P<x>{_ZH_TIME}.*要.+)"), "用户{x}", "todo", "high", "30d", "计划"),
    Rule(_r(rf"^(?P<x>.*要在{_ZH_TIME}.+)"), "用户{x}", "todo", "high", "30d", "计划"),
    Rule(_r(r"^我(?P<x>(?:现在|目前)?在.+?(?:当|做|担任|工作|上班|上学|读书).*)"), "用户{x}", "fact", "medium", None, "工作"),
    Rule(_r(r"^我(?P<x>家里?养了.+|养了.+)"), "用户{x}", "fact", "medium", None, "宠物"),
    Rule(_r(r"^我(?P<r>女儿|儿子|孩子|老婆|妻子|丈夫|老公|妈妈|爸爸|母亲|父亲|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|经理|老板|领导)(?P<x>.+)"), "用户的{r}{x}", "fact", "medium", None, "家人"),
    Rule(_r(r"^(?P<t>每天|每周|每晚|周末|平时|早上|晚上)?我(?P<x>(?:一般|经常|通常|总是|每天|习惯).+)"), "用户{t}{x}", "workflow", "medium", None, "习惯"),
    Rule(_r(r"^我们(?P<x>.*(?:用|使用|采用).+)"), "用户团队{x}", "project", "medium", None, "技术栈"),
    Rule(_r(r"^(?P<x>(?:以后|今后|下次|之后|周末|晚上)?.*(?:千万别|别再|不要再|别给我|不要给我|别帮我|不要帮我|以后别|以后不要).+)"), "用户要求：{x}", "rule", "high", None, "要求"),
]

# a value runs to its clause's comma, and on through what only narrows it ("sci-fi, especially Ted Chiang")
_VAL = r"[^,;]+(?:,\s*(?:especially|particularly|mainly|mostly|including|such as|like)\b[^,;]+)*"
# adverbs a speaker puts between "I" and the verb: "I kinda like", "I absolutely can't stand"
_EN_ADV = (r"(?:(?:really|also|absolutely|totally|honestly|genuinely|kinda|kind of|sorta|sort of|pretty much|just|"
           r"still|usually|generally|actually|truly|seriously|definitely|secretly|low-?key|much|strongly|also|"
           r"[a-z]+ly)\s+)*")
_EN_TIME = r"(?:next (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow|tonight|this (?:week|weekend|friday|month)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|by (?:monday|tuesday|wednesday|thursday|friday|the end of))"
# a name given for a message the assistant writes: "sign it Dana Whitfield, CI/CT"
EN_SIGNED = Rule(_r(r"^(?:(?:please|pls|and|also)\s+)*sign (?:it|this|that|the \w+|off)(?: as| with)?[:,]?\s+['\"‘“]?"
                    r"(?!(?-i:Love|Best|Cheers|Thanks|Regards|Warmly|Sincerely|Yours|XOXO)\b)"
                    r"(?P<x>(?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)+|[A-Z][\w'-]+(?=\s*,\s*(?-i:[A-Z]))))"), "The user's name is {x}", "fact", "high", None, "name")
EN_RULES = [
    Rule(_r(rf"\bI(?:'m| am) (?:very |severely |badly )?allergic to (?P<x>{_VAL})"), "The user is allergic to {x}", "fact", "high", None, "allergic to"),
    # a name is its capitalised words, all of them ("Mary Ann Lee"), and never the "and" after it
    Rule(_r(r"(?:\bmy |^)name(?: is|'s) (?P<x>(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)|[a-z][\w'-]*)"), "The user's name is {x}",
         "fact", "high", None, "name"),
    Rule(_r(r"\b(?:call me|I(?:'m| am) called) (?P<x>(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))"), "The user's name is {x}",
         "fact", "high", None, "name"),
    EN_SIGNED,
    # a name others use: "I go by Sam", "everyone calls me Jo"
    Rule(_r(r"\b(?:I go by|(?:everyone|everybody|people|friends|my friends|most people) (?:calls?|know) me(?: as)?) "
            r"(?P<x>(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))"), "The user goes by {x}", "fact", "high", None, "name"),
    Rule(re.compile(r"^I(?:'m| am) (?P<x>[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)+)$"), "The user's name is {x}", "fact", "high",
         None, "name"),
    Rule(_r(r"^(?:[a-z]+,\s*)?this is (?P<x>(?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?))$"), "The user's name is {x}", "fact",
         "high", None, "name"),
    Rule(_r(r"\bI (?:don't|do not|never|can't|cannot|no longer) (?P<v>eat|drink) (?P<x>[^,;]+?)(?: any ?more)?(?=[,;]|$)"), "The user does not {v} {x}", "preference", "high", None, "diet"),
    Rule(_r(rf"\bI {_EN_ADV}prefer (?P<x>{_VAL})"), "The user prefers {x}", "preference", "medium", None, "prefers"),
    # a dislike in its many phrasings: "can't stand", "not a fan of", "not into", "don't care for"
    Rule(_r(rf"\bI {_EN_ADV}(?:hate|dislike|detest|despise|can't stand|cannot stand|can not stand|can't bear|"
            rf"(?:don't|do not) {_EN_ADV}(?:like|enjoy|care for)|never liked)\s+(?P<x>{_VAL})|"
            rf"\bI(?:'m| am) {_EN_ADV}not {_EN_ADV}(?:a (?:big |huge |great )?fan of|into|big on|keen on|crazy about|"
            rf"fond of)\s+(?P<y>{_VAL})"), "The user dislikes {x}{y}", "preference", "medium", None, "dislikes"),
    Rule(_r(rf"\bI {_EN_ADV}(?:like|love|enjoy|adore) (?P<x>{_VAL})"), "The user likes {x}", "preference", "medium", None, "likes"),
    Rule(_r(rf"(?P<t>{_EN_TIME})?[^,;]*?\bI (?P<v>have to|need to|must|will(?! not\b)|am going to|'m going to|plan to) (?P<x>[^,;]+)"), "The user {v} {x}", "todo", "high", "30d", "plans"),
    Rule(_r(r"\bI(?:'m| am) (?P<v>training|practicing|practising|preparing|studying|saving) for (?P<x>[^,;]+(?:,\s*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b)?)"), "The user is {v} for {x}", "fact", "medium", "30d", "preparing for"),
    Rule(_r(r"\bI work (?P<p>at|for|as|on) (?P<x>[^,;]+)"), "The user works {p} {x}", "fact", "medium", None, "works"),
    Rule(_r(r"\bI (?P<v>run|swim|go|do|play|train|cook|read|work out|walk|visit|call|check) (?P<x>[^,;]*\b(?:every|each|on) [^,;]+)"), "The user {v} {x}", "workflow", "medium", None, "habit"),
    Rule(_r(r"^my (?P<x>(?:wife|husband|partner|daughter|son|kids?|children|mother|mom|father|dad|sister|brother|manager|boss|dog|cat)\b.+)"), "The user's {x}", "fact", "medium", None, "family"),
    Rule(_r(r"^(?:please )?(?P<v>always|never) (?P<x>[^,;]+)"), "The user asks to {v} {x}", "rule", "high", None, "asks"),
]
THIRD_PERSON = {"have to": "has to", "need to": "needs to", "am going to": "is going to", "'m going to": "is going to",
                 "plan to": "plans to", "go": "goes", "do": "does", "run": "runs", "swim": "swims", "play": "plays",
                 "train": "trains", "cook": "cooks", "read": "reads", "work out": "works out", "walk": "walks",
                 "visit": "visits", "call": "calls", "check": "checks"}

QUESTION_END = re.compile(r"[?？]")
# Not statements about the user (issue 18): a question (我对什么过敏？ / Do I prefer tea?), a
# hypothetical (如果我… / if I…) or a doubt (I wonder if I…). The offline extractor skips them.
# a question word before 都 / 也 is no question: "哪也不去", "什么都吃", "谁都知道"
ZH_ASKING = re.compile(r"什么(?!都|也)|(?<!不)怎么(?!都|也)|(?<![不没])咋(?!都|也)|为什么|为啥|为何|问下|请问|哪(?!怕|儿?[都也]|里[都也])|谁(?![都也])|(?<!好)(?:几点|几个|几岁|几天|几次|几号)|几$|多少|多久|多大|多远|是否|"
                        r"([\u4e00-\u9fff])[不没]\1|(?:吗|呢|么|吧|嘛)$|还是.{1,16}?(?:好|对|合适|更好|比较好|划算)$|(?<!了)(?<=[\u4e00-\u9fff])不$")  # "在不": 在不在
_ZH_HYPOTHETICAL = re.compile(r"^(?:那|那么|可|但)?(?:我|你|他|她)?(?:如果|假如|要是|万一|假设|倘若|假使|如若|若是|即使|就算|哪怕|设想|想象一下|难道)")
EN_ASKING = _r(r"^(?:(?:what|who|whom|whose|which|where|why|how)\b(?!\s+I\b)|"
                r"when\s+(?:is|are|was|were|do|does|did|can|could|should|will|would|shall)\b|"
                r"(?:do|does|did|is|are|am|was|were|can|could|would|will|shall|should|may|might|have|has|had|must)"
                r"(?:n't)?\s+(?:I|you|we|they|he|she|it|my|the|there|this|that)\b)")
EN_HYPOTHETICAL = _r(r"\b(?:if|unless|whether|suppose|supposing|imagine|imagining|assume|assuming|in case|"
                      r"wonder|wondering|not sure|unsure|don't know|do not know|doubt|pretend|hypothetically|wish)\b")
# what a value must not be: a bare pronoun or a word that names nothing ("I like it", "my
# name is important"); a fact's value also not a negation ("my name is not important")
EN_NO_VALUE = _r(r"^(?:it|this|that|these|those|them|you|him|her|one|something|anything|everything|important|"
                  r"unimportant|irrelevant|secret|private|unknown|mind)$")
EN_NEGATED = _r(r"^(?:not|no|never|none|nothing|nobody|neither|n't)\b")
ZH_QUESTION = re.compile(r"(?:吗|呢|么|什么|怎么|为什么|哪|谁|几点|多少)$")
EN_QUESTION = _r(r"^(?:what|who|where|when|why|how|do|does|did|is|are|can|could|would|will|should)\b")


def third_person_zh(text: str) -> str:
    text = re.sub(r"(?:我们|咱们|咱)家", "用户家", text)  # 我们家小孙子: the user's grandson
    text = re.sub(r"(?:我们|咱们|我|咱)俩", "用户两人", text)  # 我们俩住在…: the user and the one just named
    text = re.sub(r"我们(?=公司|学校|团队|部门|小区|班|单位|组)", "用户的", text)  # 我们公司: the user's company
    text = re.sub(r"(?<!自)我(?!们)", "用户", text)  # 自我介绍 stays a word
    return text.replace("我们", "用户他们")  # "we": the user and the people just named, not a team


_ADVERBS = (r"really|also|usually|always|never|often|sometimes|just|still|absolutely|strongly|totally|generally|"
            r"normally|rarely|seldom|only|even|already|mostly|definitely|actually|truly|much|hardly|mainly|"
            r"personally|typically|regularly|kinda|kind of|sorta|sort of|pretty much|honestly|literally|barely|"
            r"probably|secretly|low-?key|no longer|"
            # any other adverb in -ly, but not the verbs that end so ("I fly", "I reply")
            r"(?!(?:fly|apply|reply|rely|supply|ally|bully|rally|tally|multiply|comply|imply)\b)[a-z]{2,}ly")
_SUBJECT_VERB = re.compile(rf"\bI\s+((?:(?:{_ADVERBS})\s+)*)([A-Za-z][A-Za-z']*(?:-[A-Za-z]+)*)", re.IGNORECASE)
_VERB_AS_IS = {  # modals and common irregular past forms: the same after "the user"
    "can", "could", "will", "would", "shall", "should", "may", "might", "must", "can't", "cannot", "won't",
    "wouldn't", "shouldn't", "couldn't", "mustn't", "was", "wasn't", "were", "had", "hadn't", "did", "didn't",
    "went", "got", "made", "said", "took", "came", "saw", "knew", "thought", "ran", "ate", "drank", "bought",
    "brought", "left", "met", "felt", "found", "gave", "told", "kept", "lost", "paid", "sent", "spent", "sold",
    "wrote", "began", "became", "broke", "chose", "drove", "fell", "forgot", "flew", "grew", "heard", "held",
    "meant", "sat", "slept", "spoke", "stood", "swam", "taught", "understood", "won", "woke", "wore", "quit",
}
_VERB_IRREGULAR = {"am": "is", "'m": "is", "are": "is", "were": "was", "aren't": "isn't", "weren't": "wasn't",
                   "have": "has", "haven't": "hasn't", "'ve": "has", "do": "does", "don't": "doesn't", "go": "goes",
                   "be": "is", "ain't": "isn't", "'d": "would", "'ll": "will", "gotta": "has to", "wanna": "wants to",
                   "gonna": "is going to", "hafta": "has to"}
_NOT_A_VERB = {"not", "no", "never", "and", "or", "but", "nor", "so", "too", "then", "now", "here", "there", "at", "in", "on", "with",
               "to", "for", "of", "from", "a", "an", "the", "myself", "alone", "both", "either"}


def conjugated(verb: str) -> str:
    """A verb after "I" as it reads after "the user": prefer → prefers, have → has, go → goes;
    modals and past forms unchanged."""
    low = verb.lower()
    if "-" in low.strip("-"):  # "hand-build" → "hand-builds"
        head, _, last = verb.rpartition("-")
        return f"{head}-{conjugated(last)}"
    if low in _VERB_IRREGULAR:
        return _VERB_IRREGULAR[low]
    if low in _VERB_AS_IS or low in _NOT_A_VERB or (low.endswith("ed") and not low.endswith("eed")):
        return verb
    if low.endswith(("n't", "ing", "en")) and low not in ("listen", "open", "happen", "threaten", "soften", "fasten"):
        return verb  # "can't", "wasn't"; a participle ("been", "being") after an elided auxiliary
    if re.search(r"[^su]s$", low) or low in ("does", "goes", "has", "is"):
        return verb  # said already as "the user" says it: "works", "likes" (never "workses")
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


# words quoted inside a clause are said as they were: "never suggest I 'reach out to a professional'"
_QUOTED_WORDS = re.compile(r"(?<![A-Za-z])['\"“‘][^'\"”’\n]{2,}['\"”’](?![A-Za-z])")


def third_person_en(text: str) -> str:
    quotes = [m.group() for m in _QUOTED_WORDS.finditer(text)]
    if quotes:  # each quote kept as said; only the words around it change person
        parts = _QUOTED_WORDS.split(text)
        out = [_third_person_en(p) for p in parts]
        return "".join(x for pair in zip(out, [*quotes, ""], strict=True) for x in pair)
    return _third_person_en(text)


def _third_person_en(text: str) -> str:
    subs = [(r"\bI'm\b", "the user is"), (r"\bI've\b", "the user has"), (r"\bI'll\b", "the user will"),
            (r"\bI'd\b", "the user would")]
    for pat, rep in subs:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    text = re.sub(r"(?<=[a-z])'s (?=\d+\b(?! ?(?:%|am|pm|years? (?:ago|old)\b)))", " is ", text)  # "my son's 14"
    # "My wife and I love hiking": a plural subject, its verb stays as it is; "Jake and I": the
    # user first, so what is said of the user is read as such (a breakup, a trip that is over)
    text = re.sub(r"^((?-i:[A-Z][a-z]+)) and I\b", r"the user and \1", text)
    text = re.sub(r"^((?:(?:my|our) )?\w+(?: [A-Z][a-z]+)?) and I\b", r"\1 and the user", text, flags=re.IGNORECASE)
    # "I hate olives" → "the user hates olives": the verb agrees with its new subject
    text = _SUBJECT_VERB.sub(lambda m: f"the user {m.group(1)}{conjugated(m.group(2))}", text)
    subs = [(r"\bmy\b", "the user's"), (r"\bmine\b", "the user's"), (r"\bmyself\b", "themselves"),
            (r"\bme\b", "the user"), (r"\bI\b(?!-\d)", "the user"), (r"\bour\b", "the user's"),  # not "I-40"
            (r"\bwe're\b", "the user and others are"), (r"\bwe've\b", "the user and others have"),
            (r"\bwe\b", "the user and others")]
    for pat, rep in subs:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    return text


def third_person(text: str) -> str:
    """The user's words as a memory about "the user" / 用户, in the language they used."""
    text = text.strip().rstrip("。.!！?？;；,， ")
    if has_cjk(text) and language_of(text) == "zh":
        return third_person_zh(text)
    out = third_person_en(text)
    return out[:1].upper() + out[1:] + "."


def same_words(text: str) -> str:
    """`text` read as a statement about the user, lower-cased, without punctuation or spaces:
    equal for "我每周二跑步" and "用户每周二跑步", "I hate olives" and "The user hates olives."."""
    return re.sub(r"[\W_]+", "", third_person(text).lower())


_THANKS_END = re.compile(r"(?:(?<![，,\s])|(?![，,\s]))[，,\s]*(?:谢谢你?|谢啦|多谢)[。.!！~～]*$")
_LAUGH_END = re.compile(r"(?:哈{2,}|嘿{2,}|呵{2,}|嘻{2,}|h{3,}|2{3,})[。.!！~～]*$")


def tidy(x: str) -> str:
    """The text without the punctuation and dashes around it."""
    x = _LAUGH_END.sub("", x.strip())  # "特别爱吃冰淇淋哈哈": the laugh is no part of the fact
    x = _THANKS_END.sub("", x)  # "简短点谢谢"
    return x.strip().lstrip("-–—,，;；:： ").rstrip("。.!！?？;；,，:：-–— ")


# ---- what is no statement about the user ----------------------------------------------------
#
# General word classes, not phrases of any conversation: a request to the assistant, a
# feeling of the moment, chat about the chat, a hedge or hearsay. A clause of these says
# nothing the user's memory should keep, unless the user makes it a standing rule ("以后…",
# "from now on…").

ZH_REQUEST = re.compile(r"^(?:帮我|帮忙|请|麻烦|给我|给你|你|您|推荐|告诉我|介绍|写|改|翻译|找|查|看看|想想|别|不要|不用|换|讲|"
                         r"说说|算|解释|总结|列|继续|重新|发|把(?![^，,？?]{1,8}?(?:卖|戒|辞|送人|转让|捐)(?:掉|了))|讲讲|举|分析|生成|画|"
                         r"记得|提醒我|叫我|陪我|考考我|能不能|可不可以|可以帮|来[出讲说玩猜写做]?[个点几]|再来|整|搞|再)|(?:一点|一些|点|就行|就好|就可以|(?<!了)一下)(?:谢谢|谢啦|多谢|哈|啊|呀|吧)?$|"
                         r"提醒我|帮我|告诉我|以后请|给我(?:挂|订|约|预约|安排|查)(?!了|过)|(?:解释|讲解|介绍|总结|分析|翻译|润色|改写|展开)一下|"
                         r"^用[^，,]{1,12}?(?:的话|的方式|的语气|的口吻|语气|口吻)|"  # "用小学生能听懂的话解释…": how to answer, now
                         r"^要(?:详细|具体|完整|简单|简短)?的?(?:步骤|例子|示例|表格|清单|大纲|模板|代码|答案|版本|链接|原文|出处)|"
                         r"给我(?:猜|看看?|听听?|讲讲?|说说?|读|念|算算?|查查?|想想?|写)(?:一下|下)?$")  # "出个谜语给我猜"
# "再正式一点", "简单点就行": how the assistant should answer this once
ZH_ENDING_REQUEST = re.compile(r"(?:一点|一些|点|就行|就好|就可以|(?<!了)一下)(?:谢谢|谢啦|多谢|哈|啊|呀|吧)?$")
# a clause about how the assistant answers: "回复我的时候简短一点" asks, for now
ZH_ANSWER_VERB = re.compile(r"^(?:我)?(?:回复|回答|答|写|说|讲|解释|翻译|改|列|总结)")
# an assistant's question about how something feels: its answer ("hard but fun") is the moment's
HOW_FEEL = re.compile(r"\bhow (?:are you finding|do you like|was it|was the|did it go|is it going|are things|do you feel)|"
                      r"\bhow(?:'s| is| was) your (?:day|week|weekend|morning|evening|night)\b|\bhow are you(?: doing)?\W*$|"
                      r"\bhow's (?:it|that|the)\b|感觉怎么样|觉得怎么样|怎么样了", re.I)
# a message that goes on with what the one before said: "另外…", "also…"
GOES_ON = re.compile(r"^(?:另外|还有|而且|并且|also|and|plus|oh and|btw)\b|^(?:另外|还有|而且|并且)", re.I)
ZH_STANDING_LEAD = re.compile(r"^(?:以后|今后|从现在起|从今以后|往后|每次|下次)(?:都|你)?(?:用|别|不要|叫|回答|回复|称呼|提醒|"
                               r"说|写|给我|帮我|记得)")
# how the assistant should answer, said as a request: it holds past this conversation even without
# "以后" ("说话简单点", "代码示例尽量用Rust", "别整那些英文词儿"; "use short sentences", "no emojis")
ZH_ANSWER_FORM = re.compile(r"(?:回答|回复|说话|讲话|消息|代码|示例|例子|code|example).{0,12}?(?:用|简单|简短|短|长|详细|要点|列|分点|通俗|白话)|"
                            r"(?:别|不要|少|不用)(?:用|整|夹|带|说|写|发)?.{0,6}?(?:英文|英语|术语|表情|emoji|大段|长篇)", re.I)
EN_ANSWER_FORM = re.compile(r"^(?:please\s+|pls\s+|kindly\s+)?(?:use|keep|avoid|skip|stick to|stop using|no|don't use|do not use|"
                            r"answer|reply|respond|talk|speak)\b.*\b(?:answers?|repl(?:y|ies)|responses?|sentences?|spelling|"
                            r"emojis?|jargon|examples?|bullet(?: points)?|paragraphs?|tone|words|format(?:ting)?|units?)\b", re.I)
# a bare ask with no verb, in a message that sets rules: "no emojis", "only metric units", "shorter answers"
EN_BARE_ASK = re.compile(r"^(?:no|not|only|just|less|more|fewer|shorter|longer|simpler|plain|metric|british|american)\s+\w|"
                         r"^(?:when|whenever|if|every time)\s+you\b|\b(?:pls|plz|please)\b", re.I)
# what a standing rule is about: how the assistant answers, calls, reminds, writes
ZH_HOW_TO_ANSWER = re.compile(r"用|回答|回复|说|写|叫|称呼|提醒|别|不要|不用|记得|给我|帮我|推荐|发|列|加|格式|语言|中文|英文|"
                               r"简短|详细|长|短|表情|标点|代码|注释")
ZH_STANDING = re.compile(r"(?<![点时天号前后\d])以后|今后|从现在起|从今以后|往后|每次|每年|每天都|永远|别再|不要再|都用|都要|都别|叫我|称呼我")
ZH_MOMENT = re.compile(r"累|困|饿|渴|无聊|烦|焦虑|开心|高兴|难过|伤心|郁闷|激动|兴奋|崩溃|纠结|晚安|早安|没事|(?<!就)算了|"
                        r"随便|尴尬|忘了|忘记|搞定|决定了|想好了|知道了|明白了|懂了|问问|聊聊|说说|试试|逗|开个?玩笑|做梦|"
                        r"太冷|好冷|好热|天气|不错|还行|可惜|羡慕|哈哈|嘿嘿|呵呵|别扭|不对|不变|照旧|一样|笑死|死了|死我了|"
                        r"早上好|晚上好|中午好|下午好|你好|您好|再见|拜拜|不聊了|脑洞|紧张|[听看]不懂|想不起来|有[个件]事|痛苦|要得|"
                        r"说不清|说不好|记不清|搞不懂|拿不准|懒得|[急气吓愁]得(?:不行|要死|半死|要命)|"
                        r"^先(?:走|撤|睡|忙|下|出[车门发]|去)[\u4e00-\u9fff]{0,2}了")
# a bare verb of knowing or agreeing, or a verb and 了 with no object: "我知道", "看过了"
ZH_EMPTY = re.compile(r"^(?:也|都|就|还|挺|很|蛮|真|太|不用了|早就|早|早都)?(?:知道|明白|懂|同意|理解|记得|晓得|清楚|确定|可以|行|好|收到|这样|这些|这个|这么多|那样|[\u4e00-\u9fff]{1,2}过?了|"
                      r"没[\u4e00-\u9fff]{1,2}过|没(?:好|完)|放心)(?:了|的|啊|呀|吧|呢)?$")
# a verb of knowing as the clause's verb: "我知道费利威", "听说过这个牌子" answer the assistant, they say nothing lasting
ZH_KNOWING = re.compile(r"^我?(?:也|都|早就|当然|其实)?(?:知道|听说过|听过|了解过|见过|看到过)(?!怎么)")
# a verdict on something at hand, pointed at with 这 ("张总这措辞也太官方了"): the moment's, not the user's
ZH_AT_HAND = re.compile(r"^[^我，,]{0,6}?这(?!周|个?月|学期|星期|礼拜|阵子|几天|段时间|次|年|两天|里|边)[个段篇句种些]?"
                        r"[\u4e00-\u9fff]{0,4}?(?:也|真|太|好|挺|有点|蛮|可|怎么)")


# an item of the assistant's list, named by its place: "第三条我会加上", "第二点删掉"
ZH_LIST_ITEM = re.compile(r"^(?:那|这)?(?:第[一二三四五六七八九十\d]+|最后一|头一|上一)[条点项步段句个行]")
# whose turn it is in a game: "我先来", "轮到你了"
# a riddle told to be guessed ("一加一不是二 打一字"): the game's words, none of them the user's
ZH_RIDDLE = re.compile(r"打一(?:个)?(?:字|物|动物|成语|水果|地名|人名|词|食物|植物|国家|城市|职业|用品|日常用品|称谓|数字|字母)"
                       r"(?=[\s，,。！!？?~]|$)|猜(?:一|个)?(?:字谜|谜语|灯谜)")
ZH_GAME_TURN = re.compile(r"^(?:我|你)先(?:来|出|开始)|^轮到(?:你|我)|^该(?:你|我)(?:出|来|猜|问|说|答)?了")


def zh_to_the_chat(said: str) -> bool:
    """Whether a Chinese clause answers the chat itself: what the user knows of a thing the
    assistant named, a verdict on a thing at hand, an item of its list, a turn in a game."""
    body = tidy(said)
    return bool(ZH_KNOWING.match(body) or ZH_AT_HAND.match(body) or ZH_LIST_ITEM.match(body) or ZH_GAME_TURN.match(body))


# an answer that says what the user would do, not what they do: "I'd pick fly", "I'd die in like 2 days"
EN_WOULD = re.compile(r"^(?:i|we|the user)(?:'d|\s+would)\s+(?!(?:really\s+|much\s+)?(?:like|love|prefer|rather|appreciate|never|not|"
                      r"be (?:happy|glad|grateful|interested)|die without|kill for)\b)", re.I)
# a proposal to do something together now: "我们来玩飞花令", "咱们一起来想想"
ZH_PROPOSAL = re.compile(r"^(?:我们|咱们|咱)(?:一起|俩|两个)?来(?!自)|^来(?:玩|猜|比|赌)")
# a game or a quiz begins: what the user says bare afterwards are moves, not facts about them
ZH_GAME = re.compile(r"(?:玩|来)(?:个|一个|一局|一把|一轮)?(?:游戏|飞花令|成语接龙|词语接龙|接龙|猜谜|猜谜语|谜语|脑筋急转弯|"
                     r"真心话|问答|知识竞赛|二十个问题)|考考我|出(?:个|几道|道|一道)?题(?:目)?(?:考我|给我)")
EN_GAME = re.compile(r"\b(?:would you rather|what if (?:you|i|we) (?:had|could|were|was)|let'?s play|wanna play|want to play|play a game|quiz me|test me on|trivia|twenty questions|"
                     r"20 questions|word chain|riddle me)\b", re.I)
ZH_CRAVING = re.compile(r"^(?:好|有点|突然)?想\S{1,6}了$")
ZH_TODAY = re.compile(r"今天|今晚|今早|刚才|刚刚|刚\S{0,3}完|刚下[\u4e00-\u9fff]{0,2}(?:班|课|机|车|船)|刚(?:到|回)家|现在正|这会儿|此刻|待会|一会儿")
# a time past that makes "刚…完" no matter of today: "上周刚考完驾照"
ZH_PAST = re.compile(r"上周|上个?星期|上个?月|去年|前年|昨天|前天|前几天|之前|以前")
ZH_HEALTH = re.compile(r"病|症|疼|痛|发炎|发烧|感冒|咳嗽|过敏|住院|请假|受伤|骨折|拉肚子|头晕|怀孕")
ZH_HEDGE = re.compile(r"^(?:可能|也许|大概是|好像|似乎|估计|应该是|听说|据说|还没想好|没想好|还没定|没定|不确定|还在考虑|说不准|不一定)")
# an opinion of the thing just talked about, with no thing named: "我觉得不专业", "感觉还行"
ZH_BARE_OPINION = re.compile(r"^(?:我)?(?:(?:觉得|感觉|认为)(?:有点|挺|很|太|不太|不|比较|还|蛮|真)?[\u4e00-\u9fff]{1,3}|"
                             r"就是(?:(?:有点|太|挺|很|比较|不太)[\u4e00-\u9fff]{1,2}|[\u4e00-\u9fff]))(?:的|了|啊|吧)?$")
# a try of the moment, said with a doubled verb: "我下次带去给指挥听听", "第二句再改改"
ZH_TRY = re.compile(r"(听|看|试|聊|问|想|说|改|走|逛|尝|玩|找|查|读|练|弄|整|研究|翻|算|理|收|擦|洗|歇|瞧|摸)\1|"
                    r"(?:^|我)(?:刚|刚刚|又)?[看瞄瞅扫瞥翻查]了(?:一)?眼")  # "看了眼短信": a glance, over as it is said
# a wish that asks the assistant for something now: "想找几首…的歌", "想问一下", "想了解一下"
ZH_WISH_NOW = re.compile(r"^(?:我)?(?:想|想要|需要)(?:找|问|查|看|了解|弄|搞|写|学|知道|请教|咨询|听)(?:一下|几|一些|一个|个|点|下|些)")
# someone's report of a third person: "我同事说他邻居家小孩也花生过敏"
ZH_HEARSAY = re.compile(r"^[^，,]{0,8}?(?:说|讲|告诉我|提到)(?:过)?(?:他|她|他们|她们|它|[^，,我]{0,6}的)")
# a thing judged, with no verb of the user's: "周杰伦也还行", "爱情片一般般"
ZH_VERDICT = re.compile(r"^(?!我)(?P<n>[\u4e00-\u9fffA-Za-z]{2,8}?)(?:也|都|倒|就|还)?(?:还行|还可以|一般般?|不错|挺好|不怎么样|无感|不感冒|"
                        r"欣赏不来|接受不了|吃不惯|听不惯)(?:吧|啦|的)?$")
# a bare count that says how much of the thing before ("叶酸已经在吃了，每天一粒")
ZH_DOSE = re.compile(r"^(?:每|一)[天周月晚次年日顿餐](?:早上|晚上|中午)?[\d一二两三四五六七八九十半几]+[\u4e00-\u9fff]{0,2}$")
EN_MATERIAL_LEAD = re.compile(r"^(?:(?:ok|okay|so|alright|hey)[,\s]+)?(?:story time|funny story|here'?s a (?:joke|story)|"
                              r"(?:let me |i'll |i will |i'm gonna |i want to )?tell you (?:a|this) (?:joke|story)|"
                              r"(?:a )?joke for you|(?:heard|hear) this one)\b", re.I)
# material to work on, not the user speaking: a joke, a story, a passage
ZH_MATERIAL_LEAD = re.compile(r"(?:讲|说|分享)(?:个|一个|一段|段)(?:笑话|故事|段子)|(?:笑话|故事|段子)[：:]")
_ZH_PLAN = re.compile(r"要|打算|计划|准备|将|会去|会在|去|出发|回来|飞|入职|考(?!虑)|面试|约|预约|开会|出差|旅|搬|办|签|(?<!退)休|"
                      r"过生日|婚礼|聚会|比赛|截止|到期|之前")
# what was done before, a time it lasted: "之前在宝马实习过三个月" is no plan for three months from now
_ZH_DONE = re.compile(r"(?:之前|以前|曾经|当年)[^，,]{0,12}?过|[\u4e00-\u9fff]过[一二两三四五六七八九十几\d半]+个?(?:月|年|周|天|星期|礼拜)")
# a plan not to do something is a decision that lasts: "I will not be buying a table saw"
_EN_DECIDED_NOT = re.compile(r"\b(?:will not|won't|not going to|never going to|am not going to|'m not going to)\b", re.I)
_ZH_HABIT = re.compile(r"一般|经常|通常|总是|每|平时|习惯|常常|向来")
_ZH_LIKE = re.compile(r"喜欢|爱(?!情|人|好)|讨厌|不喜欢|偏好|受不了|看不了|感兴趣|偏爱|最爱|就算了")

EN_STANDING = re.compile(r"\b(?:from now on|always|never(?!\s*mind|\s+(?:\w+ed|had|did|was|were|went|got|liked|knew|ate|saw)\b)|every time|in every|any ?more|going forward|"
                          r"even (?:if|when)|whenever|"
                          r"stop (?:\w+ing|it|that)|unless i ask|in (?:the )?future|each time|call me (?-i:[A-Z])\w*|by default)\b", re.I)
# the chat itself judged: "I love this answer", "good idea", "makes sense"
EN_ABOUT_CHAT = re.compile(r"\b(?:(?:this|that|your) (?:answer|response|reply|idea|suggestion|explanation)|(?:great|good) "
                           r"(?:idea|point)|makes sense|sounds good)\b|^(?:that\s+|this\s+|it\s+)?(?:sounds|looks|seems)\b", re.I)
# what happens on a day and lasts: "my dog turned 3 today", "my sister got engaged today"
EN_LASTING = re.compile(r"\b(?:turn(?:s|ed)|born|birthday|graduat\w+|married|engaged|passed away|died|started|retired|"
                        r"adopted|diagnosed|promoted|hired)\b", re.I)
EN_MOMENT = re.compile(r"\b(?:just saying|saying hi|just wanted to say|nothing much|not much|thx|ty|cheers|tired|bored|hungry|sleepy|scared(?! of)|nervous(?! about| of)|excited|happy|sad|stressed|anxious(?! about| of)|"
                        r"brain fog|long day|kidding|joking|never ?mind|nvm|got it|checking|alive|"
                        r"good one|thanks|thank you|weather|i'd like|i would like|i'll just|i will just|"
                        r"i decided|i guess|i (?:do(?:n't)? )?think so|i hope so|i suppose|i believe so|i mean|i meant|wish me luck|no worries|sorry|nothing yet|"
                        r"not yet|nope)\b", re.I)
# "The user gets these once a month", "The user loved it": the thing is named elsewhere
EN_TODAY = re.compile(r"\b(?:today|tonight|right now|this morning|this afternoon|this evening|at the moment)\b", re.I)
EN_HEALTH = re.compile(r"\b(?:sick|ill|migraine|fever|cold|flu|pain|hurts?|headache|injur\w*|surgery|hospital|"
                        r"allerg\w*|pregnant|fasting|blood (?:test|work|draw)|scan|x-ray|mri|dentist|vaccin\w*|"
                        r"meds|medication|antibiotics|sore|nause\w*|throwing up)\b", re.I)
_EN_HABIT = re.compile(r"\b(?:every|each|usually|always|often|mostly|normally|typically|regularly|times a)\b", re.I)
_EN_PLAN = re.compile(r"\b(?:will|going to|gonna|plan\w*|flying|leaving|moving|starting|starts?|appointment|exam|trip|"
                      r"visit\w*|wedding|party|meeting|interview|due|deadline|ends?|booked|travel\w*|race|"
                      r"marathon|training for|heading|taking|doing|having|getting|married|turns?|off work|"
                      r"vacation|holiday|on leave|away|visiting|arriving|coming)\b", re.I)
_EN_LIKE = re.compile(r"\b(?:like|likes|love|loves|enjoy|enjoys|hate|hates|prefer|prefers|into|fan of|not for|my thing|"
                      r"can't stand|dislike|dislikes|favou?rite)\b", re.I)
# a memory that ends on a word pointing elsewhere: "The user keeps mixing it up.", "The user
# definitely doesn't want that.": the thing is named in another message, the memory says nothing
EN_POINTS_AWAY = re.compile(r"\b(?:it|them|that|this|these|those|one|him|her)(?:\s+(?:up|out|down|off|over|back|again|too|"
                            r"either|anymore|any more|now|then|later|first))?[.!]?$", re.I)
# a phrase at a clause's end that only points at what was said before: "…from Perth for it"
EN_POINTER_PHRASE = re.compile(r"(?<!\s)\s+(?:for|to|about|with|from|at|on|in|by|without|after|before|because of)\s+"
                               r"(?:it|this|that|them|him|her)$", re.I)
# what the user asks the assistant to produce, said as a need: "need invitation wording", "I want ideas"
EN_NEED_OUTPUT = re.compile(r"\b(?:need|want|would like|'d like|could use|looking for)\s+(?:some\s+|a\s+|an\s+|the\s+)?"
                            r"(?:[\w-]+\s+)?(?:wording|ideas?|help|advice|tips|suggestions|recommendations|recipes?|"
                            r"outline|draft|template|names|feedback|examples|options|a plan|a list|list|summary|"
                            r"translation|text|caption|message|email|speech|toast|script|quiz|plans?|menu|itinerary|schedule|"
                            r"routine|workout|programme|program|playlist)\b", re.I)
# the task at hand, not a fact of the user's life: "I'm getting a null pointer exception", "trying to fix
# this bug", "这段代码老是报错"
EN_TASK = re.compile(r"\b(?:trying to (?:fix|debug|figure out|solve|understand|(?:get|make) (?:it|this|that|these|those|my code|my head)\b)|getting (?:an?|the|this|some)\b[^,;]{0,40}?"
                     r"\b(?:error|exception|warning|crash)|(?:fix|debug|solve) (?:this|the|a|my) (?:bug|error|issue|problem)|"
                     r"stuck on|this (?:bug|error|code|script|function|query|issue|snippet|paragraph|email|essay))\b", re.I)
ZH_TASK = re.compile(r"报错|出错|异常|[Bb][Uu][Gg]|跑不起来|运行不了|编译不过|卡住了|这段代码|这个函数|这段话|这篇|被封")
# the chat itself judged: "我觉得你说得对", "这个方法不错"
ZH_ABOUT_CHAT = re.compile(r"你说|你讲|你的(?:建议|回答|方法|意见|说法)|这个(?:建议|回答|方法|主意|办法)")
# someone else's news the user passes on: "my coworker told me he watches movies every night"
EN_HEARSAY = re.compile(r"^(?:the user's|my|our)\s+[\w\s-]{1,30}?\b(?:told (?:me|the user)|said|says|mentioned|thinks|"
                        r"heard)\s+(?:that\s+)?(?:he|she|they|his|her|their|it)\b", re.I)
# "我们上周去海边玩了": an outing of the user and others, past and done
ZH_WE_EPISODE = re.compile(r"^我们.*(?:上周|上个?星期|上个?月|昨天|前天|那天|上次|周末|去年).*了$")
# "we moved it", "we went to the beach yesterday": an episode of the user and others, nothing lasting
EN_WE_EPISODE = re.compile(r"^(?:we|the user and others)\s+(?:\w+ly\s+)?(?:went|had|did|saw|got|made|watched|ate|tried|"
                           r"moved|visited|met|played|spent|took|came|left|bought|found|[a-z]+ed)\b", re.I)
# what a couple or a family does once and lives with after: the user's own change ("we moved to Leeds")
EN_WE_LASTING = re.compile(r"^(?:we|the user and others)\s+(?:\w+ly\s+|just\s+|finally\s+)?(?:moved (?:to|into|out|back|abroad|house)|"
                           r"bought (?:a|an|our|the) (?:house|home|flat|apartment|condo|place|car)|sold (?:our|the) |"
                           r"got (?:married|engaged|divorced|an? (?:new |used |second )?(?:dog|cat|puppy|kitten|car|truck|house|home|"
                           r"apartment|flat|condo)(?!\s+(?:wash|seat|payment|loan|repair|service|accident|crash|ride|alarm|insurance|"
                           r"sitter|walker|bed|toy|treat|food|show|tour|viewing|inspection|party|warming)\b))|adopted|had (?:a|our) (?:baby|son|daughter)|"
                           r"broke up|split up|separated)\b", re.I)
# "we got a wedding gig in Laredo june 6": an engagement the user and others have, not an episode
EN_WE_BOOKED = re.compile(r"^we\s+(?:just\s+)?got\s+(?=(?:a|an|another|our)\s+(?:[\w-]+\s+){0,2}?(?:gig|show|game|match|"
                          r"tournament|concert|recital|performance|competition|race|booking)s?\b)", re.I)
EN_OBJECT_PRONOUN = re.compile(r"^the user\s+(?:(?:will|would|can|could|might|may|should|must|is going to|wants to|"
                               r"needs to|has to)\s+)?(?:\w+ly\s+)?(?!is\b|was\b|has\b)\w+\s+(?:it|them|these|those|one)\b",
                                re.I)
EN_POLITE = re.compile(r"^(?:pls|plz|please|kindly)\s+|(?<!\s)\s+(?:pls|plz|please)$", re.I)
ZH_NAMED_KIN = re.compile(r"^(?:我|用户)(?:的)?(?P<kin>" + "|".join(("女儿", "儿子", "老婆", "妻子", "老公", "丈夫",
                           "男朋友", "女朋友", "同事", "经理", "老板", "姐姐", "妹妹", "哥哥", "弟弟", "妈妈", "爸爸",
                           "猫", "狗")) + r")(?P<name>[\u4e00-\u9fff]{2})(?=对|在|今|很|喜|不|有|要|吃|下|和|的|也|是|去)")
EN_NAMED_KIN = re.compile(r"^(?:my|our)\s+(?:(?:little|older|younger|big|best)\s+)?(?P<kin>[a-z]+)\s+"
                           r"(?P<name>(?-i:[A-Z][a-z]+))\b(?!\s+(?-i:[A-Z]))", re.I)

# a correction said in one breath: "是下周二，不是周一", "我是在上海不是北京", "it's the 18th
# not the 11th", "Portland, Oregon, not Seattle"
_ZH_CORRECTION = [re.compile(r"(?:是|在|改成|改到|改为|换成)(?P<x>[^，,。；\s不](?:[^，,。；不]{0,15}?[^，,。；\s不])?)[，,\s]*(?:而)?不是(?P<y>[^，,。；\s]{1,12})"),
                  re.compile(r"不是(?P<y>[^，,。；\s]{1,12}?)[，,\s]*(?:而)?是(?P<x>[^，,。；\s]{1,12})")]
# not tried again from inside a word but for its article, nor \s*,?\s+ backtracked into each other:
# on an 8,000-character run of \w or of spaces either took seconds
_EN_CORRECTION = re.compile(r"(?:(?<![\w'&-])|(?=(?:the|a)\s))(?P<x>(?:the\s+|a\s+)?[\w'&-]+)(?:\s*+(?P<comma>,)\s++|\s++)not\s+(?P<y>(?:the\s+|a\s+)?[\w'&-]+)", re.I)
# where a value ends inside its clause: "allergic to cashews so no cashew cream pls"
EN_VALUE_END = re.compile(r"(?<!\s)(?:\s+(?:so|because|since|but|which|lol|haha\w*|pls|please|thanks)\b.*$|\s+at all$)", re.I)
_CORRECTING = re.compile(r"不对|说错|更正|纠正|搞错|记错|弄错|口误|我是说|\b(?:sorry|actually|wait|i meant|i mean|"
                         r"correction|oops|typo|my bad|scratch that|no no)\b", re.I)
# a request tacked on after the fact: "We're vegetarian, so no meat recipes please"
EN_ASK_AFTER = re.compile(r"(?:(?<!\s)|(?!\s))(?:,?\s+so\s+(?:no|please|pls|don't|do not|can you|could you|make|give|keep|avoid|add|put|include|remove|take out|leave out|skip|write|use)\b.*$|"
                          r",\s*(?:and\s+)?(?:can|could|would|will) you\b.*$)", re.I)
EN_TRAILING = re.compile(r"(?<!\s)(?:(?<![-–—])|(?![-–—]))(?:(?:\s+(?:lol|haha\w*|tbh|btw|though|thankfully|honestly)|(?<!\bby)(?<!\buntil)(?<!\btill)(?<!\bsince)(?<!\bbefore)(?<!\bafter)(?<!\bfrom)\s+then)+$|\s*[-–—]+$)", re.I)


def until(day: date, margin_days: int) -> datetime:
    """The end of `day`, `margin_days` on: when a plan dated that day stops being kept."""
    return datetime.combine(day, time.min, tzinfo=UTC) + timedelta(days=1 + margin_days)


_DATE_NEXT = re.compile(r"^\s*[（(]|^\s*,?\s*(?:the\s+)?\d|^\s*,?\s*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
                        r"|^\s*\d+月", re.I)


def dated(text: str, today: date) -> str:
    """The text with each relative day also said as a date: "明天生日" → "明天（4月26日）生日",
    "next Wednesday" → "next Wednesday (March 18)", for a memory read long after."""
    if _ZH_HABIT.search(text) or _EN_HABIT.search(text):
        return text  # "我们家一般周日吃火锅": every Sunday, not the next one
    out, last = [], 0
    for _start, end, day in relative_days(text, today):
        if _DATE_NEXT.match(text[end:end + 24]):
            continue  # "Saturday the 18th of April", "明天（4月26日）": the date is said
        label = f"（{day.month}月{day.day}日）" if has_cjk(text) else f" ({day.strftime('%B')} {day.day})"
        out += [text[last:end], label]
        last = end
    return "".join(out) + text[last:]


@dataclass(frozen=True)
class Generic:
    """What a clause no rule matched says, read by its words: category, how long it holds."""

    category: str
    duration: str | None
    predicate: str


STANDING_RULE = Rule(re.compile(""), "", "rule", "high", None, "asks")


# a change from a day on, which lasts past it: "starting next month", "从下个月起"
_EN_FROM_ON = re.compile(r"\b(?:starting|start|beginning)\s+(?:a new job\b|work\b|(?:at|with)\s+(?!\d))|"
                         r"\b(?:starting|from|as of|beginning|effective)\s+(?:next|this|in|on|the|tomorrow|monday|tuesday|"
                         r"wednesday|thursday|friday|saturday|sunday|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
                         re.I)
_ZH_FROM_ON = re.compile(r"从\S{1,8}(?:开始|起)(?!.*(?:到|至))")


def zh_generic(text: str, today: date) -> Generic:
    if _ZH_LIKE.search(text):
        return Generic("preference", None, "喜好")
    if _ZH_FROM_ON.search(text):
        return Generic("fact", None, "事实")  # "从下个月开始带团队": a change that lasts
    if not _ZH_HABIT.search(text) and not _ZH_DONE.search(text) and _ZH_PLAN.search(text) and upcoming(text, today) is not None:
        return Generic("todo", "30d", "计划")
    return Generic("fact", None, "事实")


def en_generic(text: str, today: date) -> Generic:
    if _EN_LIKE.search(text):
        return Generic("preference", None, "likes")
    if _EN_FROM_ON.search(text):
        return Generic("fact", None, "fact")  # "managing 5 people starting next month": a change that lasts
    if (not _EN_HABIT.search(text) and not _EN_DECIDED_NOT.search(text) and _EN_PLAN.search(text)
            and upcoming(text, today) is not None):
        return Generic("todo", "30d", "plans")
    return Generic("fact", None, "fact")


# what is at hand for the question that follows ("家里有豆腐和西兰花", "手上有一万块"): not a fact to keep
ZH_SETTING = re.compile(r"^(?:家里|冰箱里?|手上|手头|手里|现在|这边|身上)?(?:只)?(?:有|剩)")


def zh_today(text: str) -> bool:
    """Whether a Chinese clause speaks of today ("今天嗓子发炎了", "刚跑完步"), not of a day past
    ("上周刚考完驾照")."""
    return bool(ZH_TODAY.search(text)) and not ZH_PAST.search(text)


def in_question(c: Clause) -> bool:
    """Whether the clause's sentence ends by asking ("…，做啥好", "…，有配方吗")."""
    tail = re.split(r"[，,；;]", c.sentence.rstrip("。！!～~… "))[-1]
    return bool(re.search(r"[?？]$", c.sentence.strip()) or ZH_ASKING.search(tail) or re.search(r"啥(?!都)", tail))


def consumed(c: Clause) -> bool:
    """A clause that only says a correction's values ("是下周二", "不是周一"): the correction
    is applied to what it corrects; the clause itself states nothing."""
    if day_correction(c.sentence) is not None:  # "是下周六，8月15号，我记错了": each piece is the correction's
        body = re.sub(r"^(?:我|用户)?(?:就|应该|而)?(?:是|不是)|^(?:it's|it is)\s+", "", tidy(c.said), flags=re.I)
        return bool(DAY_SAID.fullmatch(body) or _CORRECTING.search(c.said) or not body)
    fix = correction(c.sentence)
    if fix is None or not _CORRECTING.search(c.sentence):
        return False  # "我不是北京人，是天津的" states a fact; "不对，是周二不是周一" corrects one
    body = re.sub(r"^(?:我|用户)?(?:就|应该|而)?(?:是|不是)", "", tidy(c.said))
    return body in fix or (c.lang == "en" and bool(re.match(r"^(?:it|that)(?:'s| is| was)\b", c.said, re.I)))


# a day as a message says it, with the date a memory added after it: what a correction naming
# only the right day replaces ("下周五（8月14日）", "on the 24th (June 24)")
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_EN_DAY = rf"(?:{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?|the\s+\d{{1,2}}(?:st|nd|rd|th)|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS})"
# "it's july 1 not june 30": a day corrected, each said in more than one word
_EN_DAY_CORRECTION = re.compile(rf"(?<![\w'])(?P<x>{_EN_DAY})\s*,?\s+not\s+(?P<y>{_EN_DAY})\b", re.I)
DAY_SAID = re.compile(rf"(?:(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)\b(?![\s-]*(?:year|grade|floor|place|gen|generation|edition|"
                      rf"period|quarter|round|degree|time|attempt|try|kid|child|baby|book|album|season)s?\b)|(?:(?:next|this|coming)\s+)?(?:mon|tues|wednes|thurs|fri|"
                      rf"satur|sun)day\b|tomorrow\b|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
                      r"(?:下下|下|这|本)?个?(?:周|星期|礼拜)[一二三四五六日天]|明天|后天|\d{1,2}月\d{1,2}[日号]|\d{1,2}[日号])"
                      r"(?:\s*[（(][^）)]{1,16}[）)])?(?:\s*[，,]\s*(?:\d{1,2}月\d{1,2}[日号]|" + _MONTHS + r"\s+\d{1,2}\w*))?", re.I)
_DAY_FIX = re.compile(r"(?:是|改成|改到|改为|换成|\bit's|\bit is|\bit was|\bmake that|\bactually)\s*(?P<x>" + DAY_SAID.pattern + ")",
                      re.I)


_ZH_NO_LEAD = re.compile(r"^\s*(?:不是|不对)(?:[，,\s]*(?:不是|不对))*[，,\s]+")


def day_correction(sentence: str) -> str | None:
    """The right day of a correction that names no wrong one ("不是不是，是下周六，8月15号，我记错了",
    "correction: it's the 26th"): it replaces the day the user said last."""
    if not _CORRECTING.search(sentence) and not re.match(r"^\s*(?:不是|不对|no\b|nope\b)", sentence, re.I):
        return None
    if correction(sentence) is not None:
        return None
    m = _DAY_FIX.search(sentence)
    return tidy(m.group("x")) if m else None


def correction(sentence: str) -> tuple[str, str] | None:
    """(right, wrong) for a sentence that corrects a value, else None."""
    if has_cjk(sentence):
        sentence = _ZH_NO_LEAD.sub("", sentence)  # "不是不是，是下周六": the 不是 is said to the assistant
        for pattern in _ZH_CORRECTION:
            m = pattern.search(sentence)
            if m:
                return m.group("x"), m.group("y").rstrip("了啊呀哈的")
        return None
    if day := _EN_DAY_CORRECTION.search(sentence):
        return day.group("x"), day.group("y")
    m = _EN_CORRECTION.search(sentence)
    if m is None:
        return None
    x, y = m.group("x"), EN_TRAILING.sub("", m.group("y"))
    like = (any(ch.isdigit() for ch in x) and any(ch.isdigit() for ch in y)) or (x[:1].isupper() and y[:1].isupper())
    if not (m.group("comma") or like) or re.match(r"^(?:i'm|am|is|are|was|do|does|did|i|it|that|but|and|or)$", x, re.I):
        return None
    return x, y


def replaced(text: str, wrong: str, right: str) -> str:
    """`wrong` replaced by `right` in `text`, minding what they share: "下周一…" with
    ("下周二", "周一") → "下周二…", not "下下周二…"."""
    i = text.lower().find(wrong.lower())
    if i < 0:
        return text
    k = next((k for k in range(min(i, len(right)), 0, -1) if text[i - k:i] == right[:k]), 0)
    return text[:i - k] + right + text[i + len(wrong):]


def en_quoted(s: str) -> bool:
    """Whether an English clause is only a quoted phrase: words handed over, not said."""
    return bool(re.fullmatch(r"(?:and\s+|or\s+|also\s+)?(['\"“‘]).+(['\"”’])", s.strip(), re.I))


def before_doubt(s: str) -> str:
    """An English clause up to the word that makes the rest a doubt or a condition ("our kid
    is 4 and already asking if he can name them"): empty when the doubt is the clause's own
    ("I wonder if I like sushi", "if I move…"), or no clause is left before it."""
    m = EN_HYPOTHETICAL.search(s)
    if m is None:
        return s
    head = s[:m.start()].rstrip(" ,")
    if re.search(r"\b(?:would|could|might)\b|'d\b", head, re.I):
        return ""  # "he'd say thanks if he could": what would be, not what is
    if re.search(r"\b(?:wonder\w*|not sure|unsure|know|ask\w*|decid\w*|see|check|debating|thinking about|even)$", head, re.I):
        # the doubt is someone's doing: "…is 4 and already asking if…" keeps what came before "and"
        cut = re.match(r"^(?P<h>.+?)\s+(?:and|but|so)\s+(?:\w+\s+){0,2}\w+$", head)
        head = cut.group("h") if cut else ""
    elif m.group().lower() not in ("if", "whether", "unless"):
        return ""
    return head if len(head.split()) >= 3 else ""


def day_replaced(content: str, m: re.Match[str], right: str, today: date) -> str:
    """`content` with the day `m` found in it replaced by `right`, said as a date too when it
    is a relative one ("the 26th" is read next year too)."""
    fixed = content[:m.start()] + right + content[m.end():]
    if not re.search(r"\d+月\d+|\d{1,2}\s*\(|[A-Z][a-z]+ \d", right):
        fixed = dated(fixed, today)
    return fixed


def hypothetical(c: Clause) -> bool:
    """Whether the clause opens a hypothetical (如果… / if…): nothing after it holds."""
    if c.lang == "zh":
        return bool(_ZH_HYPOTHETICAL.match(c.said or c.text))
    return bool(EN_HYPOTHETICAL.match(EN_FILLER.sub("", c.said or c.text)))


def zh_rule(clause: str) -> tuple[Rule, re.Match[str]] | None:
    """The first Chinese rule the clause matches, with its match."""
    for rule in _ZH_RULES:
        m = rule.pattern.search(clause)
        if m:
            return rule, m
    return None



# a request on the piece at hand ("keep it under 50 words", "make this shorter"): for now, no standing rule
EN_THIS_ONE = re.compile(r"^(?:(?:please|pls|and|also|but)\s+)*[a-z]+\s+(?:it|this|that|them|these|those)\b", re.I)


def starts_game(text: str) -> bool:
    """Whether the user starts a game or a quiz ("我们来玩飞花令", "quiz me on capitals")."""
    return bool(ZH_GAME.search(text) or EN_GAME.search(text))


def bare_fix(content: str, right: str, wrong: str) -> bool:
    """Whether a statement is only its correction: the subject, the right and the wrong value and
    the words that join them, nothing more."""
    rest = re.sub(r"（[^）]*）|\([^)]*\)", " ", content.lower())  # the day a plan was dated by: "（10月16日）"
    rest = rest.replace(right.lower(), " ").replace(wrong.lower(), " ")
    rest = re.sub(r"用户[：:]?|the user|\b(?:is|it's|it is|not|no)\b|不是|是|在|[\W_]", "", rest)
    return len(rest) <= 1


__all__ = ["en_there", "there_joined", "EN_ANSWER_FORM", "EN_BARE_ASK", "EN_POINTER_PHRASE", "ZH_ANSWER_FORM", "EN_ASKING", "EN_HEALTH", "EN_HYPOTHETICAL", "EN_MOMENT", "EN_NAMED_KIN", "EN_NEGATED", "EN_NO_VALUE",
           "EN_OBJECT_PRONOUN", "EN_POLITE", "EN_QUESTION", "EN_RULES", "EN_STANDING", "EN_TODAY",
           "EN_TRAILING", "EN_ASK_AFTER", "EN_VALUE_END", "GOES_ON", "Generic", "QUESTION_END", "Rule", "STANDING_RULE",
           "THIRD_PERSON", "ZH_ASKING", "ZH_CRAVING", "ZH_EMPTY", "ZH_ENDING_REQUEST", "ZH_HEALTH",
           "ZH_HEDGE", "ZH_HOW_TO_ANSWER", "ZH_MOMENT", "ZH_NAMED_KIN", "ZH_QUESTION", "ZH_REQUEST", "ZH_SETTING", "ZH_PAST", "ZH_BARE_OPINION", "ZH_TRY", "ZH_WISH_NOW",
           "ZH_HEARSAY", "ZH_ABOUT_CHAT", "ZH_KNOWING", "ZH_AT_HAND", "EN_THIS_ONE", "starts_game", "bare_fix", "EN_WOULD", "EN_SIGNED", "zh_to_the_chat", "ZH_PROPOSAL", "ZH_GAME", "EN_GAME", "EN_LASTING", "EN_ABOUT_CHAT", "ZH_VERDICT", "EN_TASK", "ZH_TASK", "EN_HEARSAY", "ZH_WE_EPISODE", "ZH_ANSWER_VERB", "HOW_FEEL", "ZH_DOSE", "ZH_MATERIAL_LEAD", "EN_MATERIAL_LEAD",
           "ZH_STANDING", "ZH_STANDING_LEAD", "ZH_TODAY", "conjugated", "consumed", "correction", "dated",
           "en_generic", "en_quoted", "before_doubt", "day_replaced", "hypothetical", "zh_today", "DAY_SAID", "day_correction", "in_question", "replaced", "same_words", "third_person",
           "third_person_en", "third_person_zh", "tidy", "until", "zh_generic", "zh_rule"]


_EN_THERE = re.compile(r"^the user (?!and\b|'s\b)(?:\w+ ){0,2}?\w+ (?:it |over |back |out )?there\b(?!'s| (?:is|are|was|were|will|has|have)\b)", re.I)


def en_there(content: str) -> bool:
    """Whether an English memory's place is "there": the one a statement before it named ("I
    moved to Berlin, I live there now")."""
    return _EN_THERE.match(content) is not None


def there_joined(prev: str, content: str) -> str:
    """`content` (`en_there`) joined to the statement before it, so the place stays with it."""
    return f"{prev.rstrip('.')} and {content[len('the user '):].rstrip('.')}."
