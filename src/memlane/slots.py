"""What a memory is about, for telling which old memory a new one replaces (issue 32,
`memlane.changes`): its words, the exclusive slots it names and the values it gives them,
whose news it is, and who holds a role for the user.

- `words`: its keywords without the subject, time words and cue words (a Chinese run's words,
  their two-character pieces, and a name the segmenter cut in two: 拼 + 多多);
- `frames`: the slots a person holds one value of at a time (`FRAMES`: home, work, partner,
  vehicle, diet — a lexicon of predicates, not of values), and `slot_values` the value it gives
  one where the words say ("lives in Leeds" → Leeds, "在腾讯上班" → 腾讯);
- `about_someone_else`: a kin's, friend's or pet's news, which changes none of the user's facts;
  a memory about the user's partner names only the partner slot (`about_partner`);
- `new_holder` / `holder`: a role one person holds for the user ("my new manager is Sarah",
  "用户的经理是老王").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memlane.text import CHINESE_STOP, CJK_RUN, has_cjk, keywords, segment

# ---- the one who holds a role for the user ------------------------------------------------

# roles one person holds for the user at a time (a second doctor is the user's new doctor; a
# second friend is not a new friend in place of the old one). A partner is one role, by any name.
_EN_ROLES = (r"manager|boss|supervisor|team lead|line manager|doctor|gp|dentist|therapist|psychiatrist|counsel?lor|"
             r"landlord|landlady|trainer|coach|tutor|advis[eo]r|mentor|accountant|lawyer|hairdresser|barber|vet|"
             r"pediatrician|paediatrician|boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?")
_ZH_ROLES = (r"经理|老板|领导|上司|主管|组长|导师|医生|大夫|主治医生|牙医|心理医生|房东|教练|私教|家教|律师|会计|"
             r"班主任|男朋友|女朋友|男友|女友|对象|老公|老婆|丈夫|妻子|未婚夫|未婚妻")
_PARTNER = frozenset({"boyfriend", "girlfriend", "partner", "husband", "wife", "fiance", "fiancé", "fiancee", "fiancée",
                      "男朋友", "女朋友", "男友", "女友", "对象", "老公", "老婆", "丈夫", "妻子", "未婚夫", "未婚妻"})
_EN_NAME = r"(?-i:(?:(?:Dr|Mr|Mrs|Ms|Prof)\.? )?[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)"
_EN_NEW_HOLDER = re.compile(
    rf"^the user(?:'s new| has a new| got a new| has got a new) (?P<role>(?:[a-z]+ )?(?:{_EN_ROLES}))\b"
    rf"(?:,? (?:who is |is |named |called |is named |is called )?(?P<name>{_EN_NAME}))?", re.I)
_EN_HOLDER = re.compile(
    rf"^the user's (?P<role>(?:[a-z]+ )?(?:{_EN_ROLES})),? (?:is (?:named |called )?|named |called )?(?P<name>{_EN_NAME})\b|"
    rf"^(?P<name2>{_EN_NAME}) is the user's (?P<role2>(?:[a-z]+ )?(?:{_EN_ROLES}))\b|"
    rf"^the user is (?:dating|seeing|married to|engaged to|with) (?P<name3>{_EN_NAME})\b", re.I)
_ZH_NEW_HOLDER = re.compile(
    rf"^用户(?:的|他们的?|们的?)?(?:换了(?:个|一个|位|一位)?)?新(?:的|来的|换的)?(?P<role>{_ZH_ROLES})(?:是|叫|名叫|，)?"
    rf"(?P<name>[\u4e00-\u9fffA-Za-z]{{1,4}}?)?(?=$|[，,。！!了]|(?:人|挺|很|特别|非常|比较))|"
    rf"^用户换了(?:个|一个|位|一位)(?P<role2>{_ZH_ROLES})")
_ZH_HOLDER = re.compile(rf"^用户(?:的|他们的?)?(?P<role>{_ZH_ROLES})(?:是|叫|名叫)(?P<name>[\u4e00-\u9fffA-Za-z]{{1,4}}?)(?=$|[，,。！!]|(?:人|挺|很|特别|非常|比较))|"
                        rf"^用户(?:的|他们的?)?(?P<role2>{_ZH_ROLES})(?P<name2>[\u4e00-\u9fffA-Za-z]{{2,3}}?)(?=$|[，,。！!])|"
                        rf"^用户(?:在)?(?:和|跟)(?P<name3>[\u4e00-\u9fffA-Za-z]{{1,4}}?)(?:在一起|谈恋爱|恋爱|约会|结婚|订婚)")


def _role(role: str) -> str:
    """A role as compared: lower-cased, a partner by any name "partner"."""
    role = " ".join(role.lower().split())
    last = role.rsplit(" ", 1)[-1]
    return "partner" if last in _PARTNER or role in _PARTNER else role


def new_holder(content: str) -> tuple[str, str] | None:
    """("manager", "Sarah") for "The user's new manager is Sarah." / "用户的新经理是李姐": a
    role one person holds for the user, and its new holder ("" when the memory names none)."""
    m = (_ZH_NEW_HOLDER if has_cjk(content) else _EN_NEW_HOLDER).match(content.strip())
    if m is None:
        return None
    role = m.group("role") or m.groupdict().get("role2") or ""
    return _role(role), (m.group("name") or "").strip()


def holder(content: str) -> tuple[str, str] | None:
    """("manager", "Tom") for "The user's manager is Tom." / "用户的男朋友叫小张" / "The user is
    dating Jake": who holds a role for the user, as the memory says; None when it says no name."""
    if new_holder(content) is not None:
        return None
    m = (_ZH_HOLDER if has_cjk(content) else _EN_HOLDER).match(content.strip())
    if m is None:
        return None
    g = m.groupdict()
    if g.get("name3"):
        return "partner", g["name3"].strip()
    role = g.get("role") or g.get("role2") or ""
    return _role(role), (g.get("name") or g.get("name2") or "").strip()



# ---- what a memory is about -------------------------------------------------------------

# The slots a person holds one value of at a time, by the words that name their predicate
# (English words matched whole, Chinese ones inside the text). A lexicon of predicates, not of
# values: any city, employer or name fills them.
FRAMES: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "home": (frozenset({"live", "lives", "lived", "living", "moved", "move", "moving", "relocated", "flat",
                        "apartment", "condo", "neighbourhood", "neighborhood", "rent", "rents", "renting"}),
             ("住在", "住进", "住到", "住的", "住过", "搬到", "搬去", "搬回", "搬家", "搬出", "租房", "合租", "整租", "宿舍", "房租")),
    "work": (frozenset({"work", "works", "worked", "working", "job", "employer", "company", "hired", "office", "laid"}),
             ("工作", "上班", "公司", "入职", "跳槽", "单位", "辞职", "离职", "被裁", "裁员")),
    "partner": (frozenset({"boyfriend", "girlfriend", "partner", "husband", "wife", "fiance", "fiancé", "fiancee",
                           "fiancée", "dating", "married", "engaged", "single", "divorced"}),
                ("男朋友", "女朋友", "对象", "老公", "老婆", "丈夫", "妻子", "未婚夫", "未婚妻", "约会", "结婚", "订婚",
                 "分手", "单身", "离婚")),
    "vehicle": (frozenset({"drive", "drives", "drove", "driving", "car", "truck", "scooter"}),
                ("开车", "电动车", "提车", "买车", "开一辆", "开的")),
    "diet": (frozenset({"vegetarian", "vegan", "pescatarian", "meat", "diet"}), ("吃素", "素食", "吃肉", "荤")),
}
# predicates of more than one word: "broke up" is about a partner, "started at Dell" about work
# (an employer is a name: "started at the gym", "joined a book club" are not)
_EN_FRAME_PHRASES = {"partner": re.compile(r"\b(?:broke|split) up\b", re.I),
                     "work": re.compile(r"\bthe user (?:\w+ly |just |finally )?(?:started (?:at|with)|joined) (?-i:[A-Z])",
                                        re.I)}

# A slot's value where the words give it: "lives in Leeds" → Leeds, "在腾讯上班" → 腾讯. A weak
# cue ("now", 现在) closes a memory only when both give the same slot different values.
_EN_NAMEISH = r"(?-i:(?:the |a |an )?[A-Z][\w'&.-]*(?: [A-Z][\w'&.-]*){0,3})"
_SLOT_VALUE_EN: dict[str, re.Pattern[str]] = {
    "home": re.compile(rf"\b(?:live|lives|living|lived|based|moved|relocated|settled)\s+(?:\w+\s+)?(?:in|to|near)\s+"
                       rf"(?P<v>{_EN_NAMEISH})", re.I),
    "work": re.compile(rf"\b(?:work|works|working|worked|job|employed|started)\s+(?:(?:\w+ly|full-time|part-time|now|still)\s+)?"
                       rf"(?:at|for)\s+(?P<v>{_EN_NAMEISH})|\bjoined\s+(?P<v2>{_EN_NAMEISH})", re.I),
    "partner": re.compile(rf"\b(?:dating|seeing|married to|engaged to|boyfriend|girlfriend|partner|husband|wife|"
                          rf"fianc[eé]e?)(?:,| is| is named)?\s+(?P<v>{_EN_NAMEISH})|\b(?P<v2>single)\b", re.I),
    "vehicle": re.compile(r"\b(?:drive|drives|driving|ride|rides|riding)\s+(?:a|an|the)\s+(?P<v>[\w-]+(?:\s+[\w-]+)?)", re.I),
    "diet": re.compile(r"\b(?P<v>vegetarian|vegan|pescatarian|carnivore|keto|(?:eat|eats|eating) meat)\b", re.I),
}
_ZH_VAL = r"[\u4e00-\u9fffA-Za-z0-9]{2,8}?"
_SLOT_VALUE_ZH: dict[str, re.Pattern[str]] = {
    "home": re.compile(rf"(?:住在|搬到|搬去|搬回|住进)(?P<v>{_ZH_VAL})(?=$|[，,。了的]|住|去|来|那)|在(?P<v2>{_ZH_VAL})住"),
    "work": re.compile(rf"在(?P<v>{_ZH_VAL})(?:上班|工作|实习|当|做)|(?:入职|加入|跳槽到|换到|去了)(?P<v2>{_ZH_VAL})(?=$|[，,。了]|上班|工作)"),
    "partner": re.compile(r"(?:男朋友|女朋友|男友|女友|对象|老公|老婆)(?:是|叫)?(?P<v>[\u4e00-\u9fffA-Za-z]{2,4}?)(?=$|[，,。])|"
                          r"(?:和|跟)(?P<v2>[\u4e00-\u9fffA-Za-z]{1,4}?)(?:在一起|谈恋爱|恋爱|约会|结婚|订婚)|(?P<v3>单身)"),
    "vehicle": re.compile(rf"开(?:一辆|辆|的是)?(?P<v>{_ZH_VAL})(?=$|[，,。])"),
    "diet": re.compile(r"(?P<v>吃素|素食|吃肉|吃荤)"),
}

# a stay that is not a change of home or work: "in Paris now for a conference", "在北京出差"
TEMPORARY = re.compile(r"\bfor (?:a|the|this|my|our) (?:conference|trip|visit|holiday|vacation|week|weekend|few days|"
                        r"couple of (?:days|weeks)|business trip|work trip|meeting|wedding|funeral|summer|winter|"
                        r"holidays|semester|term)\b|"
                        r"\bon (?:a |my |our )?(?:trip|holiday|vacation|business|work trip|leave)\b|\bvisiting\b|"
                        r"\bthis week(?:end)?\b|出差|旅游|旅行|度假|玩几天|这几天|这周|暂时|临时|探亲|开会|暑假|寒假", re.I)

# words that say when or how much, not what: they never make two memories about one thing
_TIME_EN = frozenset({"today", "yesterday", "tomorrow", "week", "weeks", "month", "months", "year", "years", "day",
                      "days", "morning", "mornings", "night", "nights", "evening", "time", "times", "since", "ago",
                      "last", "next", "still", "anymore", "already", "user", "users", "others", "first", "new",
                      "old", "lot", "bit", "way", "well", "good", "better", "great", "pretty", "kind", "little",
                      "every", "always", "never", "currently", "recently", "finally", "january", "february",
                      "march", "april", "may", "june", "july", "august", "september", "october", "november",
                      "december", "weekend", "weekends", "said", "says", "think", "thinks", "want", "wants",
                      "feel", "feels", "make", "makes", "going", "keep", "keeps"})
_TIME_ZH = ("用户", "现在", "时候", "时间", "今天", "昨天", "明天", "每天", "天天", "一天", "今年", "去年", "明年",
            "最近", "以前", "之前", "后来", "已经", "开始", "终于", "一直", "上周", "上个月", "这周", "周末", "个月",
            "一年", "两年", "半年", "感觉", "觉得", "真的", "有点", "不错", "挺好", "好多", "一下")


_COUNTED = re.compile(r"^[零一二两三四五六七八九十百几半多每这那]")  # "两个月", "一杯": how much, not what


# one character that is a verb or a preposition of its own, not a piece of a name (叫小张, 开一辆)
_ZH_PARTICLES = CHINESE_STOP | frozenset("叫开去和跟把被给让用做是有到从对向为当像比住换搬吃喝买卖养骑回")


def _joined_segments(text: str) -> list[str]:
    """A Chinese name the segmenter cut into one character and a word ("拼多多" → 拼 + 多多,
    and 多多 reads as a count): the two joined, as the run holds them."""
    out: list[str] = []
    for run in CJK_RUN.findall(text):
        parts = segment(run)
        for a, b in zip(parts, parts[1:], strict=False):
            if len(a) == 1 and len(b) >= 2 and a not in _ZH_PARTICLES and b not in CHINESE_STOP:
                out.append(a + b)
    return out


def words(content: str, drop: Iterable[str] = ()) -> set[str]:
    """What a memory is about: its keywords (lower-cased; a Chinese run's words and each
    two-character piece of them, so 奶茶店 meets 奶茶) without the subject, time words and the
    cue words `drop`."""
    text = content
    for w in drop:
        text = text.replace(w, " ")
    out: set[str] = set()
    for w in [*keywords(text), *_joined_segments(text)]:
        w = w.lower()
        if CJK_RUN.fullmatch(w):
            if any(t in w for t in _TIME_ZH) and len(w) <= 3:
                continue
            out.add(w) if len(w) >= 2 else None
            out.update(w[i:i + 2] for i in range(len(w) - 1) if len(w) > 2)
        elif w not in _TIME_EN and len(w) >= 3 and not w.isdigit():
            out.add(w[:-1] if w.endswith("s") and len(w) > 4 else w)  # cheap singular: "lives" ~ "live"
    return {w for w in out if not _COUNTED.match(w) and not any(w == t or (len(w) == 2 and w in t) for t in _TIME_ZH)}


# memories about someone else of the user's: their move is not the user's ("用户妹刚搬去上海",
# "The user's brother Felix moved to Berlin"). A partner is the user's own slot, not listed
# (男朋友 is no 朋友); nor is a fact the user shares ("my sister and I moved to Leeds")
_OTHERS_EN = re.compile(r"^the user's (?:[\w-]+ ){0,2}?(?:brother|sister|sibling|mother|mom|mum|father|dad|parent|son|"
                        r"daughter|kid|child|children|baby|friend|cousin|colleague|coworker|co-worker|boss|manager|"
                        r"roommate|flatmate|housemate|neighbou?r|aunt|uncle|niece|nephew|grand\w+|in-law|team|"
                        r"landlord|teacher|client|cat|dog)s?\b", re.I)
_OTHERS_ZH = re.compile(r"^用户(?:的)?(?:[\u4e00-\u9fff]{0,2}?)(?:妹妹?|姐姐?|哥哥?|弟弟?|爸爸?|妈妈?|父母|爸妈|儿子|女儿|"
                        r"孩子|(?<![男女])朋友|同事|室友|闺蜜|表[哥姐弟妹]|堂[哥姐弟妹]|邻居|领导|老板|房东|老师|猫|狗)")
_WITH_USER = re.compile(r"^the user's [^,.;]{1,40}? and the user\b|^用户(?:的)?[\u4e00-\u9fff]{1,6}?[和跟]用户|^用户[和跟]", re.I)


_ANSWER = re.compile(r"^(?:the user|用户)\s*[:：]\s*", re.I)
# after "The user: ", a name or a capitalised word opens someone else's news ("The user: Leo
# started at Riverside Montessori"), not the user's
_EN_NAMED_OPENING = re.compile(r"(?-i:[A-Z])[\w'-]*\b(?<!\bI)(?<!\bI'm)", re.I)


def about_someone_else(content: str) -> bool:
    """Whether a memory is about another person (or pet) of the user's, not the user."""
    if (m := _ANSWER.match(content)) is not None:  # "The user: the user's husband works at Dell now"
        rest = content[m.end():]
        if _EN_NAMED_OPENING.match(rest) and not re.match(r"the user\b", rest, re.I):
            return True
        content = rest if rest.lower().startswith(("the user", "用户")) else content
    return bool(_OTHERS_EN.match(content) or _OTHERS_ZH.match(content)) and not _WITH_USER.match(content)


# a memory whose subject is the user's partner: the partner slot is the user's, the partner's
# home or job is not ("The user's husband moved to Berlin for work")
_PARTNER_SUBJECT = re.compile(r"^(?:the user[:：]\s*)?the user's (?:[\w-]+ ){0,2}?(?:boyfriend|girlfriend|partner|husband|wife|"
                              r"fianc[eé]e?)\b|^用户[:：]?(?:的)?(?:男朋友|女朋友|男友|女友|对象|老公|老婆|丈夫|妻子|未婚夫|未婚妻)", re.I)


def about_partner(content: str) -> bool:
    """Whether a memory's subject is the user's partner (not the user with the partner)."""
    return bool(_PARTNER_SUBJECT.match(content)) and not _WITH_USER.match(content)


def _slots_of(content: str, found: Iterable[str]) -> set[str]:
    """The slots found, the partner's own left out of a memory about the partner."""
    if about_partner(content):
        return set(found) & {"partner"}
    return set(found)


def frames(content: str) -> set[str]:
    """The exclusive slots a memory names (`FRAMES`)."""
    lowered = content.lower()
    latin = set(re.findall(r"[a-zéè]+", lowered))
    found = {name for name, (en, zh) in FRAMES.items() if latin & en or any(w in content for w in zh)}
    return _slots_of(content, found | {name for name, p in _EN_FRAME_PHRASES.items() if p.search(content)})


def slot_values(content: str) -> dict[str, set[str]]:
    """The value each slot the memory names is given, as words ("lives in Leeds" → {"home":
    {"leeds"}}); a slot named without a value is left out."""
    patterns = _SLOT_VALUE_ZH if has_cjk(content) else _SLOT_VALUE_EN
    out: dict[str, set[str]] = {}
    for slot, p in patterns.items():
        for m in p.finditer(content):
            value = next((v for v in m.groupdict().values() if v), "")
            got = words(value) or ({value.lower()} if value else set())
            if got:
                out.setdefault(slot, set()).update(got)
    return {slot: v for slot, v in out.items() if slot in _slots_of(content, out)}


def frame_word(w: str) -> bool:
    """Whether a word names a slot's predicate ("live", "上班"), not its value."""
    return any(w in en or w.rstrip("s") in en or any(w in z or z in w for z in zh) for en, zh in FRAMES.values())


__all__ = ["FRAMES", "TEMPORARY", "about_partner", "about_someone_else", "frame_word", "frames", "holder",
           "new_holder", "slot_values", "words"]
