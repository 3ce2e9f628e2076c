"""A user's messages cut into clauses, each a statement with its subject (issue 29).

The offline extractor reads one fact per clause. People chain facts with commas and
conjunctions and say the subject once: "我不吃香菜，也对芒果过敏" is two facts about 我, "My
name is Ming and I work as a data engineer at Acme" two about "I", "我儿子5岁，叫豆豆" two
about 我儿子. So a clause that opens with a predicate takes the subject before it; one that
opens with "她" / "he" takes the person the user last named ("my sister … her name's Priya");
a person two steps away ("我朋友的表哥", "my friend's cousin") is nobody the user's memory
is about, and neither is what follows about them.

A Chinese clause without a subject is the user's unless the sentence is about someone else:
in chat, a speaker drops 我 ("接字节的offer！下个月15号入职"). An English one needs its
subject, said or carried ("…and work as a data engineer"; "Training for a marathon").

Quoted text (a letter to proofread, a sentence to translate) is not the user speaking and is
left out. A conjunction splits only where a new predicate follows it: "猫和狗", "salt and
pepper", "我还是喜欢茶" stay whole. A clause that only describes the thing the clause before
it introduced ("养了一只橘猫，叫橘子": the cat is called 橘子) stays with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from memlane.en_clauses import (
    EN_ASK,
    EN_BARE_KIN,
    EN_FILLER,
    EN_KIN,
    EN_OTHER,
    EN_PRONOUN,
    EN_REQUEST,
    EN_SELF,
    EN_SENTENCE,
    en_pieces,
    is_clause,
)
from memlane.naming import EN_KIN_WORDS as _EN_KIN_WORDS
from memlane.quoting import unquoted
from memlane.roles import JOB_HEADS, headline_role, with_article
from memlane.spoken import heading
from memlane.text import language_of


@dataclass
class Clause:
    """One clause of a user's message, ready to be read as a statement."""

    text: str  # its words, the subject carried in and a pronoun replaced by whom it names
    about: str  # "user", "kin" (someone or something of the user's), "other" (anyone else)
    asked: bool = False  # a question, or part of one
    carried: bool = False  # the subject was not said in the clause itself
    sentence: str = ""  # the sentence it is part of (dates, "from now on")
    lang: str = "en"
    said: str = ""  # the clause as said, before a subject was carried in
    chained: bool = False  # opened by a conjunction ("也对芒果过敏"): a fact of its own


# ---- Chinese --------------------------------------------------------------------------------

# a trade said as "V + what + 的": "贴砖的", "装宽带的", "跑外卖的", "开出租的" (not "好的", "是的", "我的")
_ZH_TRADE = re.compile(r"(?:开|跑|送|卖|做|搞|干|装|贴|修|教|种|养|织|唱|画|写|拉|搬|收|扫|当)[\u4e00-\u9fffA-Za-z]{1,4}的")
# the north's "I" and "oneself", read as 我 / 自己: "俺在沈阳唱二人转" is the speaker's own
_ZH_PLAIN = {"俺们": "我们", "俺家": "我家", "俺": "我", "自个儿": "自己", "自个": "自己", "寻思": "想"}
_ZH_DIALECT = re.compile("|".join(_ZH_PLAIN))
ZH_SENTENCE = re.compile(r"[^。！？!?\n～~…]+[。！？!?～~…]*")
_ZH_PUNCT = re.compile(r"[，,；;：:]\s*|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])|[\U0001F300-\U0001FAFF\u2600-\u27BF]+")
ZH_FILLER = re.compile(r"^(?:对了|另外|还有就是|还有|而且|并且|同时|其实|嗯+|哦+|噢|啊|呀|所以|但是|但|不过|可是|是的|好的|好吧|"
                       r"好主意|然后|因为|顺便说一下|顺便说一句|顺便提一下|顺便|话说|说起来|对对|对|哈哈+|呵呵|嘿嘿|诶|欸|哎|"
                       r"先记一下哈|先说一下|谢谢|嗯嗯|好|行|ok|OK|我跟你说|跟你说|告诉你|你知道吗|说真的|讲真|老实说|唉|哎呀|嘿嘿|"
                       r"不是不是|不对不对)[，,、\s～~]*")
# words a clause may open with when its subject was said before: adverbs, modal and common
# verbs, prepositions, time words (a part-of-speech list, not phrases of any data set)
_ZH_PREDICATE = re.compile(
    r"^(?:也|还|都|又|再|就|才|已经|已|正在|正|在|刚刚|刚|一直|从来|从小|从|平时|平常|一般|经常|通常|总是|常常|老是|偶尔|"
    r"每|不|没|很|非常|特别|比较|挺|超|最|更|太|有点|喜欢|爱(?!情|人|好)|讨厌|对|住|做|干|是|有|要|想|打算|计划|准备|会|能|可以|"
    r"得|需要|养|叫|当|学|来自|来|去|到|搬|用|开|买|吃|喝|穿|听|看|玩|跑|练|参加|负责|带|送|接|目前|现在|今年|明年|"
    r"下周|下个?月|下个?星期|明天|后天|周末|本科|毕业|属|姓|戒|减|怕|晕|过敏|单身|结婚|离婚|怀孕|信|打|骑|游|睡|起|"
    r"早上|晚上|中午|上午|下午|周[一二三四五六日天]|星期[一二三四五六日天]|\d+月|[一二三四五六七八九十]+月|\d+岁|"
    r"[一二三四五六七八九十两]+岁|考|申请|报|换|租|戴|恐|怀|患|得了|查出)")
_KIN = (r"女儿|儿子|孩子|小孩|宝宝|老婆|妻子|太太|爱人|丈夫|老公|先生|妈妈|爸爸|母亲|父亲|爸妈|父母|哥哥|姐姐|弟弟|妹妹|"
        r"男朋友|女朋友|男友|女友|对象|未婚妻|未婚夫|爷爷|奶奶|外婆|外公|姥姥|姥爷|经理|老板|领导|同事|室友|朋友|闺蜜|"
        r"猫|狗|医生|房东|家人|公婆|岳父|岳母|婆婆|表哥|表姐|表弟|表妹|堂哥|堂姐|邻居|同学|老师|外甥女|外甥|侄女|侄子|"
        r"舅舅|舅妈|姑姑|姨妈|小姨|阿姨|叔叔|婶婶|公公|媳妇|老伴|孙子|孙女|外孙女|外孙|搭档|合伙人|师傅|老妈|老爸|"
        r"哥们|闺女|妈|爸|哥|姐|弟|妹")
# kin the user speaks of as several people: whom a later 他们 means
_ZH_PLURAL_KIN = re.compile(r"爸妈|父母|孩子们|家人|公婆|爷爷奶奶|外公外婆|姥姥姥爷|岳父母|两个孩子|俩孩子")
_ZH_SELF = re.compile(r"^(?:我们|咱们|我(?!的?(?:" + _KIN + r")))(?:的)?")
_ZH_KIN = re.compile(rf"^(?:我们家|咱们家|咱家|我(?:的|家)?|咱)[大小二]?(?:{_KIN})(?:(?![倒也都还就又才却])[\u4e00-\u9fff]{{0,3}}?(?=叫|是|对|在|今年|也|很|特别|喜欢|不|有|下周|[，,]|$))?")
# bare at a clause's start, these are the user's own: "老板叫郑凯", "猫平时不进卧室"
_ZH_BARE_KIN = re.compile(r"^(?:老婆|妻子|太太|老公|丈夫|女儿|儿子|孩子|宝宝|老板|领导|经理|猫|狗|爸妈|父母|妈妈|爸爸|医生|房东|"
                          r"老妈|老爸|男朋友|女朋友|男友|女友|媳妇|老伴|闺女)")
# a person of a person: 我朋友的表哥, 我同事的表弟
_ZH_REMOTE = re.compile(rf"^(?:我的?|咱)(?:(?:大学|高中|初中|小学|中学|以前|老)的?)?(?:{_KIN})家?(?:的|她|他)"
                        rf"(?:{_KIN}|[\u4e00-\u9fff]{{1,3}}(?:哥|姐|弟|妹|叔|姨|舅|妈|爸))")  # also 我大学室友她爸
_ZH_PRONOUN = re.compile(r"^(?:他们|她们|它们|他(?!人)|她|它)")
# someone else inside the clause, with no 我: 听说他改养奶牛了, 结果他对羊毛过敏
_ZH_THIRD = re.compile(r"^(?!.*我).*(?:(?<![其吉])他|她|(?<!其)它|听说|据说)")
_ZH_TIME_LEAD = re.compile(r"^(?:(?:下下|下|这|本)?个?(?:周|星期|礼拜)[一二三四五六日天]?|明天|后天|今天|今晚|周末|下个?月(?:初|底|中)?|"
                           r"\d{1,2}月\d{1,2}[日号]|\d{1,2}月(?:份)?|\d{1,2}[日号]|明年|今年|最近|现在|目前|平时|以后|那天|"
                           r"早上|晚上|上午|下午|中午)+")


def is_time(clause: str) -> bool:
    """Whether a Chinese clause is a time and nothing else ("后天", "下周三晚上")."""
    return _ZH_TIME_LEAD.fullmatch(clause) is not None


# two characters after a kin word that are no name: "我妈生日", "我爸身体"
_NOT_NAME = (r"(?:生日|今年|最近|现在|身体|工作|公司|家里|那边|这边|年纪|退休|平时|特别|一直|已经|非常|每天|以前|天天|整天|"
             r"总是|经常|常常|老是|刚刚|刚才|今天|昨天|"
             r"以后|明天|后天|下周|上周|周末|晚上|早上|住院|上班|上学|出差|做饭|说过|也是|还是|就是|不是|不太)")
_ZH_KIN_ANY = re.compile(rf"(?:我们家|咱家|我|和|跟|与|带|陪|给)(?:的|家)?[大小二]?({_KIN})((?!{_NOT_NAME})[\u4e00-\u9fff]{{2}}(?=$|[，,。是也的对在今很喜不有要吃下和去])|"
                         rf"[A-Za-z]+)?")
# what others call the user ("大家都叫我静静"), not what they ask the user to do ("同事喊我去喝酒")
ZH_CALLED_ME = (r"(?:大家|朋友们?|同事们?|家里人|家人|身边的人|他们|别人)(?:都|一般|平时|经常)?(?:叫|喊|称呼)我"
                r"(?!去|来|一起|吃|喝|帮|陪|出|回|过去|到|别|不|做|干|上|下)")
_ZH_CALLED_ME = re.compile("^" + ZH_CALLED_ME)
_ZH_OTHER = re.compile(r"^(?:你|您|这|那|大家|别人|有人|人家|谁|说(?=给|要|让|是|他|她|我))")  # "说给我涨一千五": someone said
_ZH_CHAIN = re.compile(r"(?:而且|并且|同时|但是|可是|不过(?!敏)|(?<![哪谁么儿])也(?!许)|还(?!是|好|行|不错|可以|挺|有))")
_ZH_CONJ_START = re.compile(r"^(?:也|还|而且|并且|同时|另外|但|不过|可是|还有|以及)")
_ZH_ALSO = re.compile(r"^(?:也|又)(?!是|行|好|不错|可以)|^还(?!是|行|好|不错|可以|没|不|在)")  # 还没, 还在: not yet, still
# "养了一只橘猫" / "有两只猫" introduce things; "叫橘子" / "一只叫年糕" then describe them
_ENTITY_END = re.compile(r"(?:[一两二三四五六七八九十几]|(?<!\d)\d+|了|有)(?:只|个|条|位|匹|辆|套|台|家|所|头|盆)[\u4e00-\u9fff]{1,8}$")
_DESCRIBES = re.compile(r"^(?:它|他|她)?(?:叫|名字叫|名叫|今年|已经|才|快|是(?:只|一只|个|一个|条)|[一二三四五六七八九十两\d]+岁|"
                        r"[一两二三四五六七八九十\d](?:只|个|条|位)(?:叫|是))")
_ZH_ASKED = re.compile(r"[?？]")
# someone named by a noun, then a verb of saying: "牙医说…", "房东讲…"
_ZH_OTHER_SAYS = re.compile(r"^(?!平时|一般|经常|总是|每天|现在|以前|最近|也|还|都)[\u4e00-\u9fff]{1,4}?"
                            r"(?:说(?!话)|讲(?!话|究|课)|告诉我|提到)")
# the people next door, downstairs, across: "我们楼下那家的狗…" is their news
_ZH_NEIGHBOURS = re.compile(r"^(?:我们|咱们|我家|咱家|我)?(?:楼下|楼上|隔壁|对门|对面|邻居)(?:那家|那户|那个|家|的)"
                            r"|^(?:我们|咱们|我)(?:部门|公司|单位|组里|团队|办公室|科室|班上|队里)(?:新来的|里的|的)?"
                            r"(?:同事|实习生|新人|主管|领导|经理|老板)")  # and the people at work: their news is theirs
# someone asked the user something, told as a story: "上次学校体检医生问我…"
_ZH_ASKED_ME = re.compile(r"^[^我，,]{1,10}?问(?:过|了)?我")
# the user as the object of a doer left out: "一个人把我带大", "从小让我学琴"
# the user as the object of what someone else does, the doer left out or not the user's kin (a
# referent is carried by _ZH_DONE_TO_ME first): "天天跟着我", "刚给我按了一下", "同事喊我去喝酒"
# (not a request to the assistant, "别给我…", "叫我老周就行", nor a doer named: "她又给我安排了相亲")
_ZH_DONE_BY = re.compile(r"^(?:(?!别|不要|下次|以后|你|您|他|她|它)[^我，,]){0,6}?"
                         rf"(?:(?:咬|跟着|吓|吵醒|盯着|挠|舔|(?:叫|喊)(?=我去)|拽|(?:能|可以|要)给)我|跟我对)(?!的|们|家|{_KIN})")
# a bare name after a clause that tells of someone new in the user's life: theirs (kin are read apart)
_ZH_BARE_NAME = re.compile(r"^(?:姓|叫|名叫)[\u4e00-\u9fff]{1,3}$")
_ZH_MET = re.compile(r"(?:换|认识|找|请|约|碰到|遇到|遇见|加|来)了(?:一)?[个位名][^，,]{0,6}(?:医生|大夫|老师|教练|师傅|律师|同事|"
                     r"领导|老板|经理|房东|室友|邻居|阿姨|保姆|助理|客户|司机|护士|网友|朋友)$")
_ZH_DONE_TO_ME = re.compile(r"^(?:一个人|独自|自己|亲手|从小|一直|都|也|还|就|辛辛苦苦|含辛茹苦)*(?:把|让|带|教|逼|劝|养|供)我")
# a verb of saying: the clauses after it report someone's words
_ZH_SAYS = re.compile(r"^[^，,]{0,4}(?:说|讲|告诉|提到|觉得|认为)")


def opens_with_predicate(clause: str) -> bool:
    """Whether a Chinese clause opens with a verb, an adverb or a time word (its subject
    left out), rather than with a noun ("成都", "咖啡也戒了")."""
    return _ZH_PREDICATE.match(clause) is not None


def zh_subject(clause: str) -> str | None:
    """The user-side subject a Chinese clause opens with: 我, 我们, 我女儿, 我的经理…"""
    m = _ZH_KIN.match(clause) or _ZH_SELF.match(clause)
    return m.group() if m else None


def _zh_chained(piece: str) -> list[tuple[str, bool]]:
    """One comma-free piece cut before each conjunction that starts a new predicate; with
    each part, whether a conjunction opened it."""
    out: list[tuple[str, bool]] = []
    start = 0
    for m in _ZH_CHAIN.finditer(piece):
        left, right = piece[start:m.start()], piece[m.end():]
        subject = zh_subject(left) or ""
        opens = subject or _ZH_PREDICATE.match(left.strip())  # "爱情片也一般般": a topic, no predicate yet
        if re.search(r"说|告诉|提到", left):
            break  # "我同事说他表弟也对花生过敏": what was said runs to the end, and is theirs
        phrase = re.fullmatch(r"(?:对|跟|和|把|给|向|比|被|在|从|往|为)[^，,]{1,8}", left.strip())  # "对海鲜也不感冒": no verb yet
        own = left.rstrip().endswith("自己")  # "我想自己也开个抖音": 自己 is the subject said again
        if opens and not phrase and not own and len(left) - len(subject) >= 3 and right and _ZH_PREDICATE.match(right):
            out.append((left, start > 0 or bool(_ZH_CONJ_START.match(left.strip()))))
            start = m.end()
    out.append((piece[start:], start > 0 or bool(_ZH_CONJ_START.match(piece.strip()))))
    return out


# a pronoun that opens a new clause in unmarked speech ("…住一个月他对鸡蛋过敏你帮我想想…"), unless a
# verb or preposition before it takes it as its object ("跟你说", "帮我想想", "让他来")
_ZH_RUN_SUBJECT = re.compile(r"(?<![跟和给让叫帮对陪带把被请问找像比与同替为向教送说是使令])(?=我们|我|你|他们|她们|他|她)")


def _zh_runs(part: str, limit: int | None) -> list[str]:
    """A long stretch of Chinese said without punctuation (voice input, an elderly typist) cut
    before each pronoun that starts a new clause; a stretch under `limit` is left whole."""
    if limit is None or len(part) < limit:
        return [part]
    cuts = [m.start() for m in _ZH_RUN_SUBJECT.finditer(part) if m.start() > 0]
    return [part[a:b] for a, b in zip([0, *cuts], [*cuts, len(part)], strict=True) if part[a:b].strip()]


def _strip_zh_filler(p: str) -> str:
    p = p.strip()
    while (m := ZH_FILLER.match(p)) is not None and m.end() > 0:
        p = p[m.end():].strip()
    return p


# ---- English --------------------------------------------------------------------------------

_EN_KIN_ANY = re.compile(rf"\b(?:my|our)\s+(?:(?:little|older|younger|big|best|new|current|old)\s+)?(?:{_EN_KIN_WORDS})\b"
                         r"(?:\s+(?-i:[A-Z][a-zà-ÿ]+))?", re.I)
# words of time or circumstance before the subject: "Next week I…", "On Fridays my…", "When I fly I…"
_EN_LEAD = re.compile(r"^(?:(?:next|this|last|on|in|at|by|every|each|after|before|when|whenever|while|once|during|"
                      r"from|until|tomorrow|today|tonight|yesterday|week|weekend|weekends|month|year|morning|"
                      r"mornings|evening|evenings|night|nights|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|the|a|"
                      r"few|couple|of|days|weeks|months|years|later|soon|lately|sometimes|then|\d\w*),?\s+)+"
                      r"(?=(?:i|i'm|i've|i'll|i'd|my|we|we're)\b)", re.I)
# a few words and a comma before the subject: "Heads up, I'm …", "Fun fact, my …"
_EN_ASIDE = re.compile(r"^(?P<lead>[^,]{1,30}),\s*(?=(?-i:I|I'm|I've|I'll|I'd|my|My|we|We)\b)"
                       r"|^(?P<said>(?:the )?(?:problem|thing|issue|truth|catch|reason|point|(?:good|bad) news|funny thing)"
                       r" is(?: that)?,?)\s+(?=(?:i|i'm|i've|my|we)\b)"
                       r"|^(?P<you>(?:and |but |also |oh )?(?:before|when|if|in case|since) you\b[^,]{1,60}),\s*"
                       r"(?=(?-i:I|I'm|I've|my|My)\b)", re.I)  # "before you suggest soba, I'm allergic to buckwheat"
_EN_WHEN = re.compile(r"\d|\b(?:next|this|last|tomorrow|tonight|today|yesterday|week|weekend|month|year|monday|tuesday|"
                      r"wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|"
                      r"september|october|november|december|spring|summer|autumn|fall|winter|morning|evening)\b", re.I)
_EN_REMOTE = re.compile(rf"^(?:my|our)\s+(?:(?:best|old|older|younger|little|big)\s+)?(?:{_EN_KIN_WORDS})'s\s+"
                        rf"(?:(?:ex|step|future|new|old|older|younger|little|big)[-\s])?(?:{_EN_KIN_WORDS})\b", re.I)
# kin of several people, whom "they" names; kin the user says they have ("I have a 3-year-old son")
_EN_PLURAL_KIN = re.compile(r"\b(?:kids|children|parents|twins|in-laws|siblings|family|boys|girls|sons|daughters|cats|dogs)\b",
                            re.I)
_EN_HAVE_KIN = re.compile(rf"\b(?:have|got|adopted|has)\s+(?:a|an|one|two|three|\d+)\s+(?:[\w-]+\s+){{0,2}}?"
                          rf"(?P<kin>{_EN_KIN_WORDS})\b", re.I)
# "start date is May 4th", "goal is sub 1:50": a bare noun says "my"
_EN_BARE_NOUN = re.compile(r"^(?!(?:the|a|an|this|that|it|there|he|she|they|you|we|what|which|who)\b)"
                           r"(?P<n>[a-z][a-z-]*(?:\s+[a-z][a-z-]*)?)(?:\s+is\s+|'s\s+|\s+(?=[$€£]?\d))", re.I)
# "…, it's remote", "…, which is great": says more of what the clause before it named
_EN_DESCRIBES = re.compile(r"^(?:it's|it is|which is|which was)\s+(?!in\b|on\b|at\b|for\b|to\b|like\b)\w+", re.I)
# what a bare noun names when it is the user's: "start date is May 4th", "goal is sub 1:50"
_EN_ATTRIBUTE = re.compile(r"^favou?rite\b|\b(?:date|goal|target|budget|name|birthday|deadline|job|role|title|plan|address|number|"
                           r"size|schedule|salary|commute|flight|appointment|appt|exam|interview|favou?rite|pb|time)$", re.I)
_EN_POSSESSIVE = re.compile(r"\bmy\b", re.I)
# "fantasy is ok-ish", "plain paragraphs are better": a bare noun judged, the speaker's taste
_EN_EVALUATION = re.compile(r"^(?!(?:the|a|an|this|that|it|there|he|she|they|you|we|what|which|who)\b)[a-z][a-z-]*"
                            r"(?:\s+[a-z][a-z-]*)?\s+(?:is|are)\s+(?:(?:so|too|really|pretty|kinda|just)\s+)?(?:"
                            r"ok-ish|okay-ish|great|good|bad|better|worse|best|the best|overrated|underrated|boring|"
                            r"annoying|amazing|awesome|terrible|meh|so-so|not for me|my favou?rite|(?:the|my) (?:dream|goal|top pick))\b", re.I)
# a request whose words are the user's own, to be passed on: "add that I'm in Portland", "mention the
# release moved", "write a slack msg to my team: I'm OOO friday" (not pasted text to work on)
_EN_TOLD = re.compile(r"^(?:(?:pls|please|can you|could you|and|also)\s+)*(?:(?:add|mention|say|note|include|"
                      r"tell (?:them|him|her|everyone|people|the \w+)|let (?:them|him|her|everyone|people|the \w+) know)"
                      r"\s+(?:that\s+)?|(?:help me\s+)?(?:write|draft|send|text|compose)\b[^:]{0,60}:\s*)(?P<c>.+)", re.I)
# someone named doing something for the user, now or as a habit: "Priya's covering on-call for me"
_EN_FOR_ME = re.compile(r"^(?-i:[A-Z][a-z]+)(?:'s|\s+is|\s+will be)?\s+\w+(?:ing|s)\b.*\b(?:for|with) me\b", re.I)
# a list of what the user goes without: "no pork, no shellfish" (one "no X" is an idiom: "no worries")
_EN_NONE_OF = re.compile(r"^no\s+[a-z-]+(?:\s*,\s*(?:and\s+|or\s+)?no\s+[a-z-]+)+$", re.I)
# a tag that asks about the whole sentence ("…, right?"), not a request of its own ("…, ideas?")
_EN_TAG = re.compile(r"^(?:right|correct|yeah|yes|no|huh|eh|ok|okay|true|isn't it|aren't i|don't i|didn't i|won't i|"
                     r"or not|yeah\?)$", re.I)
# an emoji standing between two words ends a sentence: "on break rn 🥱 i stock shelves…" (not
# "a 🍕 and pasta", "love 🍕 with friends": an emoji in a noun's place)
_EN_EMOJI_END = re.compile(r"(?<![\w'])(?P<before>[\w']+)\s+[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\uFE0F\u200D]+\s+"
                           r"(?=(?P<after>[\w']+))")
_EN_EMOJI_BEFORE = frozenset({"a", "an", "the", "my", "our", "your", "his", "her", "their", "of", "to", "with", "for",
                              "in", "on", "at", "and", "or", "from", "by"})  # "a 🍕 and pasta": the emoji is a noun
_EN_EMOJI_AFTER = frozenset({"and", "or", "with", "for", "in", "on", "at", "to", "of", "from", "by", "is", "are", "was",
                             "were", "'s"})
# "been a longshoreman at the port of oakland 11 yrs": how long the speaker has done the job
_BEEN_A = re.compile(rf"^been\s+an?\s+(?:[\w-]+\s+){{0,3}}?(?:{JOB_HEADS})s?\b", re.I)


def _emoji_ends(text: str) -> str:
    return _EN_EMOJI_END.sub(lambda m: m["before"] + (" " if m["before"].lower() in _EN_EMOJI_BEFORE
                                                       or m["after"].lower() in _EN_EMOJI_AFTER else ". "), text)


# a writer naming themself as a message opens ("Hello dear, this is Margaret")
_EN_THIS_IS = re.compile(r"^(?:[A-Za-z]+,\s*)?this is (?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)$", re.I)


# ---- the reader -----------------------------------------------------------------------------


@dataclass
class Reader:
    """Reads one user's messages in order, remembering whom "she" / "他" names."""

    referent: str | None = None  # the user's person or thing last named: "my sister", "我老婆"
    remote: bool = False  # the last person named is nobody of the user's (我朋友的表哥)
    names: set[str] = field(default_factory=set)  # names the user gave their people and pets
    # a Chinese run this long without a mark is cut where a new subject starts (config
    # `extraction.offline_runon_chars`); None: read as marked
    runon_chars: int | None = None
    previous: str = ""  # the Chinese clause read last: "换了个新医生，姓李" names the doctor
    previous_about: str = ""  # and whom it was about: "她说她老公…，孩子都…" goes on with her words

    def read(self, text: str, *, after_question: bool = False) -> Iterator[Clause]:
        """The clauses of one user message. `after_question`: the assistant just asked
        something, so a bare phrase ("后端开发" / "product designer") answers about the user."""
        text = unquoted(text)
        if language_of(text) == "zh":
            yield from self._zh(_ZH_DIALECT.sub(lambda m: _ZH_PLAIN[m.group()], text), after_question)
        else:
            yield from self._en(text, after_question)

    # -- Chinese --

    def _zh(self, text: str, after_question: bool) -> Iterator[Clause]:
        topic: str | None = "我"  # a Chinese speaker drops 我: a bare clause is theirs
        first = True
        for m in ZH_SENTENCE.finditer(text):
            sentence = m.group().strip()
            if not sentence:
                continue
            asked = bool(_ZH_ASKED.search(sentence[-2:]))
            body = sentence.rstrip("。！？!?～~… ")
            head = heading(body)
            if head is not None:  # "先说好：我受不了…", "先做个自我介绍：陈嘉怡，31，深圳"
                body = head[1]
            pieces = [p for part in _ZH_PUNCT.split(body) for run in _zh_runs(part, self.runon_chars)
                      for p in _zh_chained(run)]
            out: list[Clause] = []
            for raw, chained in pieces:
                p = _strip_zh_filler(raw)
                if not p:
                    continue
                if first and not after_question and _ZH_TRADE.fullmatch(p):
                    p = "我是" + p  # "贴砖的 手上全是口子": the message opens with what the writer does
                first = False
                if out and _ENTITY_END.search(out[-1].text) and _DESCRIBES.match(p):
                    out[-1].text = f"{out[-1].text}，{p}"  # describes the thing just introduced
                    self._learn_zh(p)
                    continue
                clause, topic = self._zh_clause(p, topic)
                clause.sentence, clause.lang, clause.said, clause.chained = sentence, "zh", p, chained
                out.append(clause)
            if asked and out:
                out[-1].asked = True  # the "？" belongs to the last clause: 我对花生过敏，你推荐什么？
            yield from out

    def _zh_clause(self, p: str, topic: str | None) -> tuple[Clause, str | None]:
        lead = _ZH_TIME_LEAD.match(p)
        when, core = (p[:lead.end()], p[lead.end():]) if lead else ("", p)  # "下周三我要…": 我 after a time
        clause, topic = self._zh_subject(when, core, p, topic)
        self._learn_zh(clause.text)
        self.previous, self.previous_about = p, clause.about
        return clause, topic

    def _zh_subject(self, when: str, core: str, p: str, topic: str | None) -> tuple[Clause, str | None]:
        if _ZH_REMOTE.match(core) or _ZH_NEIGHBOURS.match(core):
            self.referent, self.remote = None, True
            return Clause(p, "other"), None
        kin = _ZH_KIN.match(core)
        if kin is not None:  # "医生说不能喝冰的，也不能吃辣": what follows their words is theirs to say
            return Clause(p, "kin"), None if _ZH_SAYS.search(core[kin.end():]) else kin.group()
        own = _ZH_SELF.match(core)
        if own is not None:
            body = _ZH_ALSO.sub("", core[own.end():], count=1)  # "我也对芒果过敏" says "我对芒果过敏"
            return Clause(when + core[:own.end()] + body, "user"), "我"
        pronoun = _ZH_PRONOUN.match(core)
        if pronoun is not None:
            plural = pronoun.group().endswith("们")
            if self.referent is None or self.remote or plural != bool(_ZH_PLURAL_KIN.search(self.referent)):
                return Clause(p, "other"), None  # 他们 names the user's parents, never one person
            return Clause(when + self.referent + core[pronoun.end():], "kin"), self.referent
        bare = _ZH_BARE_KIN.match(core)
        if bare is not None and self.previous_about == "other" and (
                self.remote or re.match(r"^(?:她|他)们?(?:跟我|和我)?说", self.previous)):
            # "她说她老公一年回来两次，孩子都快不认识爸爸了", "我大学同学…她在银行 孩子才两岁": still theirs
            return Clause(p, "other"), None
        if bare is not None:
            self.referent, self.remote = "我的" + bare.group(), False
            return Clause(when + "我的" + core, "kin"), None if _ZH_SAYS.search(core[bare.end():]) else "我的" + bare.group()
        name = next((n for n in self.names if core.startswith(n)), None)
        if name is not None:
            return Clause(p, "kin"), name
        if _ZH_CALLED_ME.match(core):
            return Clause(p, "user"), topic  # "大家都叫我静静": the user's name, said by others
        if _ZH_OTHER.match(core) or topic is None or _ZH_THIRD.search(core):
            # "据说是前主人教的，现在怎么都改不掉": what follows hearsay is the hearsay's too
            return Clause(p, "other"), None if re.search(r"听说|据说", core) else topic
        if _ZH_ASKED_ME.match(core):  # "上次体检医生问我…": someone's question to the user, told
            return Clause(p, "other"), None
        if _ZH_DONE_TO_ME.match(core) and self.referent is not None and not self.remote:
            # "感谢我妈，一个人把我带大": the doer left out is the one just named
            return Clause(when + self.referent + core, "kin"), topic
        if _ZH_DONE_BY.match(core):  # "最近老咬我拖鞋", "同事喊我去喝酒": someone's doing to the user
            return Clause(p, "other"), None
        if "我" in core:  # "医生让我少吃盐", "住的话我比较喜欢民宿": the user is in it already
            return Clause(p, "user"), topic
        if _ZH_OTHER_SAYS.match(core):  # "牙医说不能吃太硬的，也…": someone's words, and what follows them
            return Clause(p, "other"), None
        if _ZH_BARE_NAME.match(core) and _ZH_MET.search(self.previous):
            return Clause(p, "other"), None  # "我换了个新医生，姓李": the name of the person just met
        body = _ZH_ALSO.sub("", p, count=1)
        return Clause(topic + body, "user" if topic == "我" else "kin", carried=True), topic

    def _learn_zh(self, text: str) -> None:
        """The names and the people a clause mentions: whom a later 她 / 他 means."""
        for m in re.finditer(r"(?:叫|名叫|名字叫|全名|全名叫)([\u4e00-\u9fff]{2,3}?)(?=$|[，,。是也的对在今很喜不有要吃下和去])", text):
            self.names.add(m.group(1))
        found = None
        for m in _ZH_KIN_ANY.finditer(text):
            found = m
        if found is not None and not _ZH_REMOTE.search(text):
            name = found.group(2) or ""
            if name:
                self.names.add(name)
            self.referent, self.remote = "我" + found.group(1) + name, False

    # -- English --

    def _en(self, text: str, after_question: bool) -> Iterator[Clause]:
        text = _emoji_ends(text)
        sentences = [m.group().strip() for m in EN_SENTENCE.finditer(text) if m.group().strip()]
        listing = False  # a heading about the user ("Things about me:") opened a list of bare items
        for n, sentence in enumerate(sentences):
            asked = sentence.endswith("?")
            body = sentence.rstrip(".!?; ")
            head = heading(body)
            if head is not None:  # "Heads up: my standup moved", "Quick intro: Priya, staff engineer"
                body, mine = head[1], head[0] == "self"
                listing = listing or (mine and not body)
            else:
                mine = False
            # who is writing: the message's opening words ("Plumber in Austin, ugh." after "Called the
            # plumber." is the plumber), a job said as "been a …" ("my husband? been a longshoreman…": his)
            if n == 0 and not after_question and _BEEN_A.match(body):
                body = "I've " + body
            elif n == 0 and not after_question and (role := headline_role(body)) is not None:
                who = role if role[1:2].isupper() else role[:1].lower() + role[1:]  # "PTA (…) in Toledo"
                rest = re.sub(r"^\s+here\b", "", body[len(role):], flags=re.I)  # "…in Nashville here"
                body = f"I'm {with_article(who)}{rest}"
            pieces = en_pieces(body)
            out: list[Clause] = []
            for kind, p in pieces:
                if not p:
                    continue
                if out and out[-1].about in ("user", "kin") and _EN_DESCRIBES.match(p) and kind != "so":
                    out[-1].text = f"{out[-1].text}, {p}"  # "…at Fernleaf and it's remote": the job is
                    continue
                clause = self._en_clause(p, kind)
                if n == 0 and not out and _EN_THIS_IS.match(p):
                    clause.about = "user"  # "Hello dear, this is Margaret": who is writing
                if clause.about == "none" and ((after_question and n == 0 and not out) or (
                        (mine or listing) and not EN_OTHER.match(p))):
                    clause.about = "answer"  # "product designer, fully remote"; an item of "about me:"
                clause.sentence, clause.lang, clause.said = sentence, "en", p
                out.append(clause)
            if asked and out:
                # the "?" asks in the last clause; a tag ("…, right?") asks about the whole
                last = out[-1]
                last.asked = True
                if _EN_TAG.match(last.text) and len(out) > 1:
                    for c in out:
                        c.asked = True
            yield from out

    def _en_clause(self, p: str, kind: str) -> Clause:
        clause = self._en_about(p, kind)
        named = [m for m in _EN_KIN_ANY.finditer(p)]
        if clause.about not in ("user", "kin") and named and not re.match(
                rf"'s\s+(?:{_EN_KIN_WORDS})\b", p[named[-1].end():], re.I):
            self.referent, self.remote = named[-1].group(), False  # "a message for my dad? He's turning 60"
        if clause.about in ("user", "kin"):
            if named and not re.match(rf"'s\s+(?:{_EN_KIN_WORDS})\b", p[named[-1].end():], re.I):
                self.referent, self.remote = named[-1].group(), False  # not "my friend's cousin"
            elif (had := _EN_HAVE_KIN.search(p)) is not None:
                self.referent, self.remote = "my " + had.group("kin"), False  # "I have a son named Leo … he's"
        return clause

    def _en_about(self, p: str, kind: str) -> Clause:
        if re.match(rf"^(?=[A-Z])(?i:{_EN_KIN_WORDS})(?: (?-i:[A-Z][a-z]+))? and I\b", p):
            p = "my " + p[:1].lower() + p[1:]  # "Wife and I are moving": the user's wife, no name
        lead = _EN_LEAD.match(p)
        if lead is not None and lead.end() > 0:  # "Next week I have to…", "When I fly I prefer…"
            clause = self._en_about(p[lead.end():], kind)
            return Clause(p[:lead.end()] + clause.text, clause.about, clause.asked, clause.carried)
        aside = _EN_ASIDE.match(p)
        said: str | None = aside.group("lead") if aside is not None else None
        if aside is not None and (said is None or not is_clause(said)):  # "Heads up, I'm moving…": a lead-in
            clause = self._en_about(p[aside.end():], kind)
            keep = p[:aside.end()] if said and _EN_WHEN.search(said) else ""  # "In May, I…" keeps its time
            return Clause(keep + clause.text, clause.about, clause.asked, clause.carried)
        if kind == "ask" or EN_ASK.match(p):
            return Clause(p, "other", asked=True)
        if _EN_REMOTE.match(p):
            self.referent, self.remote = None, True
            return Clause(p, "other")
        kin = EN_KIN.match(p)
        if kin is not None:
            self.referent, self.remote = kin.group(), False
            self._learn_en_names(p)
            return Clause(p, "kin")
        if (EN_SELF.match(p) or (kind in ("verb", "be") and not EN_PRONOUN.match(p)) or re.match(r"^my\b", p, re.I)
                or re.match(r"^(?-i:[A-Z][a-z]+) and I\b", p)):  # "Jake and I broke up": the user is one of the two
            self._learn_en_names(p)
            return Clause(p, "user", carried=kind in ("verb", "be"))
        if bare := EN_BARE_KIN.match(p):
            p = p[:1].lower() + p[1:]  # "Wife Barb keeps…" → "my wife Barb keeps…"
            self.referent, self.remote = "my " + p[:bare.end()], False
            return Clause("my " + p, "kin")
        plural = re.match(r"^(?:they're|they|their)\b", p, re.I)
        if plural and self.referent and not self.remote and _EN_PLURAL_KIN.search(self.referent):
            word = plural.group().lower()  # "my kids are 6 and 9 … they're obsessed with Minecraft"
            rest = (" are" if word == "they're" else "") + p[plural.end():]
            return Clause(self.referent + ("'s" if word == "their" else "") + rest, "kin")
        pronoun = EN_PRONOUN.match(p)
        if pronoun is not None:
            if self.referent is None or self.remote:
                return Clause(p, "other")
            word = pronoun.group().lower()
            who = self.referent + ("'s" if word in ("her", "his") else "")
            rest = p[pronoun.end():]
            if word in ("he's", "she's"):
                rest = (" has" if re.match(r"\s+(?:been|got|had|gone)\b", rest) else " is") + rest  # "he's been"
            return Clause(who + rest, "kin")
        if any(p.startswith(n) for n in self.names):
            return Clause(p, "kin")
        told = _EN_TOLD.match(p)
        if told is not None and is_clause(told.group("c")):
            clause = self._en_about(told.group("c"), "")  # "add that I'm in Portland": the user's words to send
            return clause if clause.about != "none" else Clause(clause.text, "user")
        if EN_REQUEST.match(p) or kind == "request":
            return Clause(p, "request")
        if _EN_FOR_ME.match(p):
            return Clause(p, "user")  # "Priya's covering on-call for me": an arrangement of the user's
        if _EN_NONE_OF.match(p):
            return Clause(p, "answer")  # "no pork, no shellfish": what the user goes without
        bare = _EN_BARE_NOUN.match(p)
        if bare is not None and not EN_OTHER.match(p) and _EN_ATTRIBUTE.search(bare.group("n")):
            return Clause("my " + p, "user", carried=True)  # "start date is May 4th"
        if _EN_POSSESSIVE.search(p) and not EN_OTHER.match(p):
            return Clause(p, "user")  # "the reason for the rush is my contract…"
        if _EN_EVALUATION.match(p):
            head = p[:1] if p[1:2].isupper() else p[:1].lower()  # "CMU is the dream" keeps its capitals
            return Clause("I think " + head + p[1:], "user", carried=True)  # "fantasy is ok-ish"
        return Clause(p, "none")

    def _learn_en_names(self, p: str) -> None:
        for m in re.finditer(r"\b(?:named|called|name's|name is)\s+((?-i:[A-Z][a-zà-ÿ]+))", p, re.I):
            self.names.add(m.group(1))
        kin = EN_KIN.match(p)
        if kin is not None and (name := re.search(r"(?-i:[A-Z][a-zà-ÿ]+)$", kin.group())):
            self.names.add(name.group())


__all__ = ["EN_FILLER", "EN_SENTENCE", "ZH_FILLER", "ZH_SENTENCE", "Clause", "Reader", "is_time",
           "opens_with_predicate",
           "zh_subject"]
