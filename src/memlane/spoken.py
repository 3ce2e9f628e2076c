"""How people write in chat, read before the offline extractor's patterns (issue 29).

A message is typed fast and mended on the fly: "im 15", "dont", "u"; "我下个月3号要去成都出差，
哦不对，是4号"; "my daughter's name is Isabel - sorry, autocorrect - Isobel"; a heading before a
colon ("Quick intro: …", "先说好：…", "Heads up: …") that only announces what follows. This
module gives the words as meant, so the clause reader sees one statement per fact:

- chat spellings written out (`as_meant`): im → I'm, dont → don't, u → you, fav → favourite;
- a self-repair inside a sentence applied (`repaired`): the value said before a repair marker
  ("no wait", "sorry", "不对", "说错了") is replaced by the one of the same kind after it (a
  day, a time, a count with its unit, a capitalised name), and the marker and its apology go;
- a heading read for what it is (`heading`): an attribute ("Name: Ming" → "my name is Ming"),
  an announcement about the speaker ("Things about me:", "先做个自我介绍："), whose list is the
  user's, or a lead-in ("Heads up:", "先说好：") that says nothing itself;
- an assistant's question read for what it asks (`offers`): an offer ("Want me to …?", "需要我
  列个清单吗？") is answered "yes" / "maybe later", never with a fact about the user.
"""

from __future__ import annotations

import re

from memlane.text import language_of

# ---- chat spellings -------------------------------------------------------------------------

_EN_SPELLINGS = [
    (re.compile(r"\bi(?=\s|'|$)(?![.]\w)"), "I"),
    (re.compile(r"\bim\b", re.I), "I'm"),
    (re.compile(r"\bive\b", re.I), "I've"),
    (re.compile(r"\b(do|does|did|is|are|was|were|have|has|had|should|would|could|ca|wo)nt\b", re.I), r"\1n't"),
    (re.compile(r"\bu\b(?!-)"), "you"),
    (re.compile(r"\bur\b"), "your"),
    (re.compile(r"\bfave?\b", re.I), "favourite"),
    (re.compile(r"\b(?:cuz|coz|cos)\b", re.I), "because"),
    (re.compile(r"\btho\b", re.I), "though"),
    (re.compile(r"\btryna\b", re.I), "trying to"),
    (re.compile(r"\bw/(?=\s)|\bw(?=\s+(?:my|our|the|a|his|her|their)\b)", re.I), "with"),
    (re.compile(r"\bshud\b", re.I), "should"),
]


def as_meant(text: str, runon_words: int | None = None) -> str:
    """A user's message with chat spellings written out and self-repairs applied; an English
    run of `runon_words` words or more without a mark cut where "I" opens a new clause."""
    if language_of(text) == "en":
        for pattern, written in _EN_SPELLINGS:
            text = pattern.sub(written, text)
        text = _EN_EMOJI_ASK.sub(r"\1. ", text)  # "… on the boat 😞 what can I do": the question is its own
        if runon_words is not None:
            text = _EN_STRETCH.sub(lambda m: _cut_run(m.group(), runon_words), text)
    return repaired(text)


# ---- run-on English -------------------------------------------------------------------------

_EN_EMOJI_ASK = re.compile(r"([\U0001F300-\U0001FAFF\u2600-\u27BF])\s+(?=(?:what|how|where|when|why|who|which|can|could|"
                           r"should|do|does|is|are|any)\b)", re.I)
_EN_STRETCH = re.compile(r"[^.!?,;:\n()]+")
# "I" after one of these goes on the clause before ("before I forget", "so I can", "I think I"):
# conjunctions, prepositions, verbs that take a clause; elsewhere it opens a new one
_EN_GOES_ON = re.compile(r"(?:and|but|or|so|because|bc|cause|that|if|when|whenever|before|after|while|until|since|unless|"
                         r"than|as|where|which|who|what|how|why|whether|once|though|think|know|guess|hope|wish|mean|"
                         r"said|say|feel|felt|thought|believe|bet|swear|promise|like|where|till|cuz)(?<!s)(?:s|ed|ing)?$|"
                         r"^(?:realiz|realis|notic|figur|suppos|assum|decid)(?:e|es|ed|ing)$|"
                         r"^(?:remember|hear|doubt|admit)(?:s|ed|ing)?$|^heard$|"
                         r"^(?:can|could|do|does|did|should|would|will|shall|am|may|might|must|was|were)$", re.I)  # not "forget": "before I forget, I'm…"; "what can I do": asked
# words that open the next clause with the "I" after them: "…to 190 also I'm moving"
# `(?<!\s)` / `(?:(?<!C)|(?!C))`: a match is tried only where a run of C (spaces, commas) begins,
# never again from inside it — the leftmost match found is the same, found in linear time (tried
# from every space of "I" + 8,000 spaces + "moved", such patterns took seconds a turn)
_EN_OPENER = re.compile(r"(?<!\s)\s+(?:also|plus|then|anyway|btw)$", re.I)
_EN_I = re.compile(r"(?<!\s)\s+(?=I(?:'m|'ve|'ll)?\s)")


def _cut_run(stretch: str, words: int) -> str:
    if len(stretch.split()) < words:
        return stretch
    out, last = [], 0
    for m in _EN_I.finditer(stretch):
        before = stretch[last:m.start()].split()
        if before and not _EN_GOES_ON.match(before[-1]) and len(before) >= 2:
            head = stretch[last:m.start()]
            opener = _EN_OPENER.search(head)
            cut = opener.start() if opener else len(head)
            out.append(head[:cut] + "." + head[cut:] + " ")
            last = m.end()
    return "".join(out) + stretch[last:]


# ---- self-repairs ---------------------------------------------------------------------------

# what a speaker says to take back the value just said ("no wait", "sorry", "不对", "我是说")
_EN_MARKER = re.compile(r"(?<!\s)(?:(?<![,–—-])|(?![,–—-]))"
                        r"(?:(?:\s*[,–—-]+\s*|\s+)(?:no,?\s+wait|no,?\s+sorry|sorry|wait|i mean|i meant|or rather|"
                        r"make that|correction)\b[\s,:;–—-]*|\s*[,–—-]+\s*(?:no|nope|actually)\b[\s,:;–—-]*)", re.I)
_ZH_MARKER = re.compile(r"(?:(?<![，,、\s])|(?![，,、\s]))[，,、\s]*(?:哦|啊|呃|哎|噢|嗯)?(?:不对|说错了|打错了|口误|我是说|更正一下|纠正一下)"
                        r"(?:[，,、\s]*不对)*[，,、\s]*(?:应该|其实)?(?:是)?")
# an apology for the slip, said with the repair: it goes with it
_EN_ADMIT = re.compile(r"^\s*[,–—-]*\s*(?:my bad|typo|autocorrect|oops|I mixed (?:it|them|that) up)\b[^,;.]*", re.I)
_ZH_ADMIT = re.compile(r"^[，,、\s]*(?:我)?(?:记错了|说错了|搞错了|打错了|写错了|口误了?|记混了|老?记反了?|总?记反了?)[^，,。；;]*")
# words allowed between the marker and the new value: "sorry, autocorrect - Isobel", "it's the 9th"
_EN_BRIDGE = re.compile(r"^(?:(?:it's|it is|its|the|on|at|autocorrect|typo|i mean)\b[\s,:–—-]*){0,2}", re.I)
_ZH_BRIDGE = re.compile(r"^(?:应该是|是|在|就是)?")
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|march|april|may|june|july|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
# a value and its kind: what a repair may replace with a value of the same kind
_EN_VALUES = [
    ("time", re.compile(r"\b\d{1,2}(?:[:.]\d{2})(?:\s*[ap]\.?m\.?)?\b|\b\d{1,2}\s*[ap]\.?m\.?\b", re.I)),
    ("ordinal", re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b", re.I)),
    ("weekday", re.compile(rf"\b{_WEEKDAY}\b", re.I)),
    ("month", re.compile(rf"\b{_MONTH}\b", re.I)),
    ("number", re.compile(r"\b\d+(?:\.\d+)?\b")),
    ("name", re.compile(r"\b(?!I\b)[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)*")),
]
_ZH_NUMERAL = r"(?:\d+|[一二两三四五六七八九十百]+)"
# not from inside a run of digits or numerals (unless a weekday ends just before: "周一二号")
_ZH_VALUE = re.compile(rf"(?:下下|下|这|本)?个?(?:周|星期|礼拜)[一二三四五六日天]|"
                       rf"(?:(?<!\d)|(?!\d))(?:(?<![一二两三四五六七八九十百])|(?<=[周期拜][一二三四五六日天])|(?![一二两三四五六七八九十百]))"
                       rf"{_ZH_NUMERAL}(?P<unit>号|日|岁|年级|点半|点|月|个|只|块|天|周|年|楼|层|班|人|次)|"
                       r"(?<![A-Za-z0-9])(?P<code>[A-Za-z]{1,3}-?\d{1,6}[A-Za-z]?|\d{1,4}[A-Za-z]{1,2})(?![A-Za-z0-9])")  # a seat, a booth, a room: "F23"


def _en_value(text: str, *, first: bool) -> tuple[str, re.Match[str]] | None:
    """The first (or last) value in English text, with its kind."""
    found: list[tuple[str, re.Match[str]]] = []
    for kind, pattern in _EN_VALUES:
        hits = list(pattern.finditer(text))
        if hits:
            found.append((kind, hits[0] if first else hits[-1]))
    if not found:
        return None
    return (min if first else max)(found, key=lambda kv: kv[1].start())


def _zh_kind(m: re.Match[str]) -> str:
    return m.group("unit") or ("code" if m.group("code") else "weekday")


def repaired(text: str) -> str:
    """The text with each self-repair inside a sentence applied: "on the 2nd of June no wait
    the 9th" → "on the 9th of June", "下个月3号要去成都出差，哦不对，是4号，我记错了" → "下个月
    4号要去成都出差". A marker with no value of the same kind on both sides is left alone."""
    zh = language_of(text) == "zh"
    marker = _ZH_MARKER if zh else _EN_MARKER
    for _ in range(3):  # a message rarely mends more than once or twice
        fixed = _repair_once(text, marker, zh)
        if fixed is None:
            break
        text = fixed
    return text


def _repair_once(text: str, marker: re.Pattern[str], zh: bool) -> str | None:
    for m in marker.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        before, after = text[start:m.start()], text[m.end():]
        if re.search(r"[.!?。！？]\s*$", before) or not before.strip():
            continue  # a marker opening a sentence corrects an earlier message (`statements.correction`)
        bridge = (_ZH_BRIDGE if zh else _EN_BRIDGE).match(after)
        rest = after[bridge.end() if bridge else 0:]
        if zh:
            new = _ZH_VALUE.match(rest)
            if new is None:
                continue
            old = next((v for v in reversed(list(_ZH_VALUE.finditer(before))) if _zh_kind(v) == _zh_kind(new)), None)
        else:
            if re.match(r"(?:I|I'm|I've|we|he|she|they|my|you)\b", rest, re.I):
                continue  # "…, actually I was born in Paris": a new clause, not a value mended
            found = _en_value(rest, first=True)
            if found is None or found[1].start() != 0:
                continue
            kind, new = found
            olds = [v for k, p in _EN_VALUES if k == kind for v in p.finditer(before)
                    if not (kind == "name" and re.search(r"(?:^|[.!?]\s*)$", before[:v.start()]))]  # "My …"
            old = olds[-1] if olds else None
        if old is None:
            continue
        tail = rest[new.end():]
        if zh:
            tail = re.sub(r"^[了的啊呀]+", "", tail)
            tail = _ZH_ADMIT.sub("", tail)
        else:
            tail = re.sub(r"^[^,;.!?–—]*", "", tail) if re.match(r"\s+with\b", tail) else tail  # "Isobel with an O"
            tail = _EN_ADMIT.sub("", tail)
        head = text[:start] + before[:old.start()] + new.group() + before[old.end():]
        return head + tail
    return None


# ---- headings -------------------------------------------------------------------------------

_EN_HEAD = re.compile(r"^(?P<h>[A-Za-z][\w' -]{0,40}?)\s*:(?!//|\d)\s*(?P<rest>.*)$", re.S)
_ZH_HEAD = re.compile(r"^(?P<h>[^：:，,。！？!?]{1,12}?)\s*[：:](?!//|\d)\s*(?P<rest>.*)$", re.S)
# an attribute named before its value: "Name: Ming", "职业：律师"
_EN_KEY = re.compile(r"^(?:my\s+)?(?:(?:full\s+)?name|age|job|role|title|occupation|location|city|hometown|birthday|"
                     r"pronouns|email|phone|allergies|diet|languages?|time ?zone|goal|budget|address)$", re.I)
_ZH_KEY = re.compile(r"^(?:我的)?(?:名字|姓名|全名|年龄|职业|工作|单位|公司|城市|地址|生日|专业|学校|爱好|过敏源?|饮食|籍贯|老家)$")
# an announcement about the speaker: what its list says is the user's
_EN_ABOUT_ME = re.compile(r"\b(?:me|my|myself|mine|intro|introduction|about|background|bio)\b", re.I)
_ZH_ABOUT_ME = re.compile(r"我|自己|介绍|背景|情况")
# a heading that is a request: what follows is material (`heuristic._material_cut` reads it)
_EN_HEAD_ASKS = re.compile(r"\b(?:can|could|would|will|please|pls|translate|fix|check|proofread|rewrite|summari[sz]e|"
                           r"explain|write|edit|i|i'm|we)\b", re.I)


def heading(sentence: str) -> tuple[str, str] | None:
    """(kind, rest) for a sentence opened by a heading before a colon; kind is "key" (the
    rest is the value of an attribute, given as a statement: "Name: Ming" → "my name is Ming"),
    "self" (the rest is about the speaker) or "lead" (the heading says nothing itself)."""
    zh = language_of(sentence) == "zh"
    m = (_ZH_HEAD if zh else _EN_HEAD).match(sentence.strip())
    if m is None:
        return None
    head, rest = m.group("h").strip(), m.group("rest").strip()
    if zh:
        if _ZH_KEY.match(head) or re.fullmatch(r"我的[\u4e00-\u9fffA-Za-z]{1,6}", head):  # "我的爱好：…"
            return "key", (f"{head}是{rest}" if head.startswith("我的") else f"我的{head}是{rest}") if rest else ""
        if re.search(r"[帮请把给你您]|翻译|改|看看|[吗呢？?]", head):
            return None
        return ("self" if _ZH_ABOUT_ME.search(head) else "lead"), rest
    if len(head.split()) > 6 or _EN_HEAD_ASKS.search(head):
        return None
    if _EN_KEY.match(head) or re.fullmatch(r"(?:my|our)\s+[\w'-]+(?:\s+[\w'-]+)?", head, re.I):  # "My kids: …"
        noun = "my " + re.sub(r"^(?:my|our)\s+", "", head, flags=re.I).lower()
        verb = "are" if re.search(r"(?<!s)s$", noun) else "is"
        return "key", f"{noun} {verb} {rest}" if rest else ""
    return ("self" if _EN_ABOUT_ME.search(head) else "lead"), rest


# ---- the assistant's questions --------------------------------------------------------------

# an offer to do something, asked as a question: its answer is "yes" / "maybe later"
_EN_OFFER = re.compile(r"\b(?:(?:do you )?want me to|would you like(?: me to)?|(?:shall|should|can|may) i(?! ask)|"
                       r"want (?:a|an|some|more|any|me)\b|how about|need (?:me|help)\b|"
                       r"want (?:\w+[-\s]?){1,3}(?:too|as well)\b)", re.I)
_ZH_OFFER = re.compile(r"需要我|要我|要不要|需不需要|用不用|我(?:可以|来|帮你|给你)(?!问)")
_LAST_QUESTION = re.compile(r"(?:(?<![^.!?。！？\n])|(?![^.!?。！？\n]))[^.!?。！？\n]*[?？]\s*$")


def offers(text: str) -> bool:
    """Whether an assistant's message ends by offering to do something ("Want me to plan day
    trips too?", "需要我列个完整菜单吗？"): the user's reply accepts or declines it."""
    m = _LAST_QUESTION.search(text.strip())
    if m is None:
        return False
    question = m.group()
    return bool(_ZH_OFFER.search(question) if language_of(question) == "zh" else _EN_OFFER.search(question))


__all__ = ["as_meant", "heading", "offers", "repaired"]
