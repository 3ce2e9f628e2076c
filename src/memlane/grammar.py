"""What makes a clause a fact about the user: a predicate that holds beyond the moment (issue 29).

The offline extractor's patterns (`memlane.statements`) know shapes of statements; what no
pattern knows falls back to the clause as said. That fallback keeps a clause only when it has
a predicate about the user, of a kind a memory can hold — a state, a habit, a plan:

- a bare answer ("june 20th", "杭州 滨江") takes its predicate from the assistant's question
  ("When's the wedding?" → "The user's wedding is on june 20th"; "你在哪个城市？" → "用户在杭州
  滨江"); after no question, or one that only asks yes or no, it says nothing of its own;
- a Chinese topic–comment ("咖啡也戒了快半年了") needs a verb of state, habit or plan in its
  comment; a verdict on the thing at hand ("狸花猫可以", "春泥跟前面不搭") has none;
- an English clause told in the past ("had to call AAA", "got home and realized…") is the
  day's story unless its verb changes how things stand (moved, quit, adopted) or its body
  (tore, broke); one speaking to the assistant ("I swear I told you") is about the chat;
- someone around the user (a friend, a coworker, a neighbour) is kept only by name: their
  news is theirs ("my buddy Dave is still on two packs a day").

Word classes of the two languages, not phrases of any labelled conversation.
"""

from __future__ import annotations

import re

from memlane.naming import EN_KIN_WORDS
from memlane.spoken import heading
from memlane.statements import EN_STANDING, conjugated, third_person_en, third_person_zh, tidy

# ---- the assistant's question ----------------------------------------------------------------

# tried only where a sentence begins, not again from each of its characters (quadratic)
_EN_QUESTION = re.compile(r"(?:(?<![^.!?])|(?![^.!?]))[^.!?]*\?")
_ZH_QUESTION = re.compile(r"(?:(?<![^。！？!?.])|(?![^。！？!?.]))[^。！？!?.]*[？?]")


def last_question(text: str) -> str:
    """The assistant's last question, split at its commas ("How old are you, and have you run
    before?" asks two things; the first is answered first), or ""."""
    found = (_ZH_QUESTION if re.search(r"[\u4e00-\u9fff]", text) else _EN_QUESTION).findall(text.strip())
    return found[-1].strip() if found and re.search(r"[?？]\s*$", text.strip()) else ""


# a question that asks only yes or no: its answer says nothing unless it says more
_EN_YES_NO = re.compile(r"^(?:and\s+|so\s+)?(?:do|does|did|are|is|was|were|have|has|can|could|would|will|should|shall)\s+"
                        r"(?:you|your|it|there|they|he|she)\b", re.I)
_ZH_YES_NO = re.compile(r"(?:吗|(?<!什)么|嘛|不)[？?]?$|[\u4e00-\u9fff]([不没])[\u4e00-\u9fff]")

# frames: (question, how its answer reads as a fact about the user)
_PRONOUN = r"(?:you|your|the)"
_EN_FRAMES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bhow old are you\b", re.I), "The user is {a}"),
    (re.compile(r"\bhow old (?:is|are) (?:your|the) (?P<n>[\w\s'-]{1,30}?)\s*(?:now|today)?\?", re.I), "The user's {n} is {a}"),
    (re.compile(r"\bwhere are you (?P<v>based|from|located|living|staying|moving(?: to)?)\b", re.I), "The user is {v} {in}{a}"),
    (re.compile(r"\bwhere are you\?", re.I), "The user is in {a}"),
    (re.compile(r"\bwhere do you (?P<v>live|work|stay)\b", re.I), "The user {v3} {in}{a}"),
    (re.compile(r"\b(?:which|what) (?:city|town|country|area|neighbou?rhood|state|part of [\w\s]+?)\b[^?]*\byou\b", re.I),
     "The user is in {a}"),
    (re.compile(r"\bwhat(?:'s| is) (?:your|the) (?P<n>[\w\s'-]{1,30}?)\?", re.I), "The user's {n} is {a}"),
    (re.compile(r"\bwhat do you do(?: for (?:a living|work))?\?", re.I), "The user works as {a}"),
    (re.compile(r"\bwho(?:'s| is) (?:your|the) (?P<n>[\w\s'-]{1,30}?)\?", re.I), "The user's {n} is {a}"),
    (re.compile(r"\bwhen(?:'s| is| are) (?:your|the) (?P<n>[\w\s'-]{1,30}?)\?", re.I), "The user's {n} is {on}{a}"),
    (re.compile(r"\bwhen (?:do|will|are) you (?P<v>[\w\s'-]{1,30}?)\?", re.I), "The user {v3} {on}{a}"),
    (re.compile(r"\b(?:which|what) (?P<n>[\w\s-]{1,20}?) (?P<aux>could|can|would|will|do) you (?P<v>[\w\s'-]{1,30}?)\?", re.I),
     "The user {aux3} {a}"),
    (re.compile(r"\bhow many (?P<n>[\w\s-]{1,20}?) do you have\b", re.I), "The user has {a} {n}"),
    (re.compile(r"\b(?:what should i call you|what's your name|what is your name)\b", re.I), "The user's name is {a}"),
    (re.compile(r"^(?:and\s+)?(?:anything|anyone|anybody) (?P<n>\w+ing\b[\w\s'-]{0,40}?)\?", re.I), "The user: {a} {n}"),
    (re.compile(r"^(?:and\s+)?any (?P<n>[\w\s,-]{1,40}?)(?: (?:i|we) should\b[^?]*| to [^?]*)?\?", re.I), "The user's {n}: {a}"),
]
_DATE_LIKE = re.compile(r"^(?:\d|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|(?:mon|tue|wed|thu|fri|sat|sun)"
                        r"[a-z]*\b|the\s+\d)", re.I)
# possessive: a word is not split into up to three (cubic: 216 s on an answer of 2,000 letters)
_PLACE_LIKE = re.compile(r"^(?-i:[A-Z])|^(?:[a-z]++\s*+){1,3}(?:,|$)", re.I)


def _fill_en(template: str, m: re.Match[str], answer: str) -> str:
    groups = {k: (v or "").strip() for k, v in m.groupdict().items()}
    v = groups.get("v", "")
    aux = groups.get("aux", "").lower()
    words = v.split()
    groups["v3"] = " ".join([conjugated(words[0]), *words[1:]]) if words else ""
    groups["aux3"] = (" ".join([conjugated(words[0]), *words[1:]]) if aux == "do" else f"{aux} {v}") if words else aux
    groups["on"] = "on " if _DATE_LIKE.match(answer) else ""
    groups["in"] = "" if v.endswith((" to", "from")) else ("in " if _PLACE_LIKE.match(answer) else "")
    groups["n"] = re.sub(r"\byour\b", "the user's", groups.get("n", ""), flags=re.I)  # the assistant's "your"
    text = template.format(a=answer, **{k: groups.get(k, "") for k in ("n", "v", "v3", "aux3", "on", "in")})
    return " ".join(text.split())


# a question that offers the choices: "Are you going as a student, a parent, or a coach?"
_EN_CHOICE = re.compile(r"\b(?:are|were) you (?P<v>(?:going|coming|travell?ing|signing up|registered|here|joining|working) as )?"
                        r"(?P<opts>[\w' ,-]{1,200}? or [\w' -]{1,60})\?", re.I)


def _en_chosen(question: str, answer: str) -> str | None:
    """The choice a bare answer picks among those the assistant offered, as a fact: "coach" to
    "Are you going as a student, a parent, or a coach?" → "The user is going as a coach."."""
    m = _EN_CHOICE.search(question)
    if m is None:
        return None
    options = [o.strip() for o in re.split(r",\s*(?:or\s+)?|\s+or\s+", m.group("opts")) if o.strip()]
    said = re.sub(r"^(?:an?|the)\s+", "", answer.strip().rstrip(".!").lower())
    picked = next((o for o in options if re.sub(r"^(?:an?|the)\s+", "", o.lower()) == said), None)
    if picked is None:
        return None
    return f"The user is {(m.group('v') or '').lower()}{picked}."


def en_answer(question: str, answer: str, *, framed_only: bool = False) -> str | None:
    """A bare English answer as a fact, its predicate taken from the assistant's question; the
    answer as said ("The user: …") when the question asks about the user and fits no frame;
    None when it asks only yes or no, or about nothing of the user's."""
    answer = tidy(answer)
    if not question or not answer or re.match(r"^(?:yes|yeah|yep|no|nope|nah|not|sure|ok|maybe|probably)\b", answer, re.I):
        return None
    if (chosen := _en_chosen(question, answer)) is not None:
        return chosen
    for part in re.split(r",\s*(?:and\s+)?(?=\w+\s)", question)[:1] + [question]:
        part = part if part.endswith("?") else part + "?"
        for pattern, template in _EN_FRAMES:
            m = pattern.search(part)
            if m is not None:
                return third_person_en(_fill_en(template, m, answer)).rstrip(".") + "."
    own_subject = re.match(r"(?:it|that|this|there|he|she|they)\b", answer, re.I)  # "it's raining AGAIN": no answer
    if (re.search(r"\b(?:you|your)\b", question, re.I) or (elliptic(question) and not own_subject)) and not framed_only:
        return f"The user: {answer}."  # "What's the role?" is the user's; a frame would say no more
    return None


# a verb or a subject of its own: a question with none ("Budget?", "Kids or pets?", "how often and
# how many?") goes on with what the user was saying, so its answer is the user's; a word in -ed
# after another word is a verb ("…, booked already?"), not one that opens a noun phrase ("Raised
# beds or in-ground?") nor one in -eed ("what breed?"); a word in -es is as often a plural noun
_EN_VERBAL = re.compile(r"\b(?:is|are|was|were|am|be|been|do|does|did|can|could|would|will|should|shall|may|might|must|has|"
                        r"have|had|he|she|they|it|we|i)\b|'(?:s|re|ll|d|ve)\b|(?<=\w\s)\w+(?<!e)ed\b", re.I)


def elliptic(question: str) -> bool:
    """Whether the assistant's question, read from its last dash or comma, has no verb or subject
    of its own ("Kids or pets?"): it asks after the user's own matter."""
    tail = re.split(r"[—–:;]|\s-\s|,", question)[-1].strip()
    return bool(re.search(r"\w", tail)) and _EN_VERBAL.search(tail) is None


# Chinese: the answer takes the place of the question word ("你在哪个城市？" + "杭州" → "你在杭州")
_ZH_WH = re.compile(r"哪个城市|哪座城市|哪个地方|哪个区|哪里|哪儿|哪[天年月周](?:几)?|哪|几岁了?|多大了?|几号|几点|多少钱?|什么时候|怎么称呼|叫什么(?:名字)?|什么|"
                    r"几[\u4e00-\u9fff]|多[久远长高重]")
_ZH_WH_AS = {"怎么称呼": "叫{a}", "叫什么": "叫{a}", "叫什么名字": "叫{a}"}


# a question whose question word is its subject ("什么东西越洗越脏？", "哪个国家的首都是…"): a
# riddle or a quiz asks of a thing, and its answer says nothing of the user
_ZH_ASKS_THING = re.compile(r"^(?:什么(?!时候)|哪(?:个|种|一)[\u4e00-\u9fff]{0,3}?(?:东西|国家|城市|动物|字))")


def zh_asks_thing(question: str) -> bool:
    """Whether a Chinese question asks of a thing, its question word the subject (a riddle, a quiz)."""
    q = re.split(r"[：:]", question.strip())[-1]  # "再来一个：什么东西…": what follows the heading
    return _ZH_ASKS_THING.match(q.strip()) is not None


def zh_answer(question: str, answer: str) -> str | None:
    """A short Chinese answer put where the question's question word stood ("你几号的航班？" +
    "18号早上" → "用户18号早上的航班"); None when the question asks only yes or no, or has no
    question word to fill."""
    q = re.sub(r"^(?:好的|好|嗯|那|那么|请问|对了)[，,\s]*", "", question.strip()).rstrip("？? ")
    if _ZH_WH.search(q) and re.search(r"[你您]", q) and q.endswith("吗"):  # "我可以问一下你在哪个城市吗": embedded
        q = q[re.search(r"[你您]", q).start():-1]  # type: ignore[union-attr]
    if not q or _zh_yes_no(q) or "你" not in q and "您" not in q and not re.match(r"^[\u4e00-\u9fff]{1,6}(?:几|多)", q):
        return None
    m = _ZH_WH.search(q)
    if m is None or re.match(r"^[它他她]", q) or zh_asks_thing(q):  # "它一天吃几顿？": asks of someone the answer does not name
        return None
    fill = _ZH_WH_AS.get(m.group(), "{a}").format(a=tidy(answer))
    said = q[:m.start()] + fill + q[m.end():]
    said = re.sub(r"^(?:你|您)(?:现在|目前|平时)?", "我", said)
    if not said.startswith("我"):
        said = "我的" + said  # "孩子几岁？" asks of the user's child
    return third_person_zh(said.replace("你", "我").replace("您", "我"))


_ZH_ASKS_WHEN = re.compile(r"什么时候|啥时候|哪天|哪[年月]|哪一天|几号|几点|几月|星期几|周几|礼拜几")


def zh_when_answer(question: str, answer: str) -> str | None:
    """A time said alone ("后天", "周末吧") put in the place of a question that asked when ("你哪天的
    航班？" → "用户后天的航班"); None for any other question, or none."""
    if not question or not _ZH_ASKS_WHEN.search(question):
        return None
    return zh_answer(question, re.sub(r"[吧啊呀呢哈]+$", "", answer))


def _zh_yes_no(q: str) -> bool:
    """Whether a Chinese question asks only yes or no: "吗" or "有没有", with no question word
    ("你在哪个城市吗" asks which city; "有什么忌口吗" asks for a list)."""
    return bool(_ZH_YES_NO.search(q.rstrip("？? ") + "？")) and _ZH_WH.search(q) is None


def answers(question: str, lang: str) -> bool:
    """Whether the assistant's question asks the user something a bare reply can answer (a
    question word, not yes or no)."""
    if not question:
        return False
    if lang == "zh":
        return _ZH_WH.search(question) is not None
    return not _EN_YES_NO.match(question.strip())


def zh_yes_no_answer(question: str, answer: str) -> str | None:
    """A Chinese "no" that repeats the question's verb ("安卓能接受吗？" + "不接受" → "用户不接受
    安卓"): the question supplies what is refused; None for any other reply."""
    q = question.strip().rstrip("？? ")
    m = re.match(r"^(?P<neg>不|没|不太|不能|不会)(?P<v>[\u4e00-\u9fff]{1,3})$", tidy(answer))
    if m is None or not q.endswith(("吗", "么", "嘛")):
        return None
    at = q.find(m.group("v"))
    topic = re.sub(r"(?:你|您)?(?:也|还|都)?(?:能|可以|会|要|想)?$", "", q[:at]) if at > 0 else ""
    if not topic or re.search(r"[你您我]", topic):
        return None
    return f"用户{m.group('neg')}{m.group('v')}{topic}"


# ---- requests and standing rules -------------------------------------------------------------

# a task for the assistant now: "帮我想个菜单", "提醒我一下", "再说一遍"; a rule only with "以后" in it
ZH_TASK_ASK = re.compile(r"^(?:帮我|帮忙|提醒我|给我|替我|再)")
# "下次你提醒我跟医生说一声": one occasion, not a rule for every time
ZH_NEXT_TIME_TASK = re.compile(r"^下次(?:你|您)?(?:记得)?(?:提醒|帮)")
# "never" / "always" said of the user ("I've never made one", "never have"), not of how to answer
_EN_SELF_NEVER = re.compile(r"\b(?:I|I've|I'd|we|he|she|they|have|has|had)\s+(?:\w+\s+)?(?:never|always)\b|"
                            r"\b(?:never|always)\s+(?:have|had|has|made|been|did|liked|tried|seen|done|was|were)\b", re.I)


def en_standing(text: str) -> bool:
    """Whether an English message sets rules for the assistant ("from now on…", "never use…"),
    not counting a "never" / "always" that says how the user is."""
    return bool(EN_STANDING.search(_EN_SELF_NEVER.sub(" ", text)))


# ---- a Chinese comment on a topic ----------------------------------------------------------

# verbs of state, habit and plan: what a topic–comment clause must hold to say how the user is
_ZH_STANDING_VERB = re.compile(r"[在住是有要叫姓属戒吃喝抽养做当读学考练跑带送接买租搬开]|(?<!不)用|一般|平时|经常|总|常常|"
                               r"每[天周月年晚次]|打算|准备|计划|约了|(?<!说)过敏|不耐|[病症疼痛]|发炎|怀孕")
# a count or an age: "两个，老大五岁" says how many and how old
_ZH_COUNT = re.compile(r"\d|岁|(?<![一二两三四五六七八九十百千万])[一二两三四五六七八九十百千万]+[个只岁年月天次块元]")  # from a run's start: linear
# the chat's own business: the assistant addressed, what was said, a verdict on what is at hand
_ZH_ABOUT_HERE = re.compile(r"你|您|说了|不搭|怪怪|可以$|行$|没用|打扰")


def zh_topic_fact(said: str) -> bool:
    """Whether a Chinese clause said bare, with its topic first ("咖啡也戒了快半年了", "狸花猫可以"),
    holds a predicate of state, habit or plan about the user."""
    body = tidy(said)
    return bool(_ZH_STANDING_VERB.search(body) or _ZH_COUNT.search(body)) and not _ZH_ABOUT_HERE.search(body)


# a run that asks; narrower than statements.ZH_ASKING, which also counts a final 吧 and "对不对"
# ("成绩中等吧 数学差": the answer goes on)
_ZH_ASKED = re.compile(r"(?:吗|呢)$|为什么|为啥|怎么(?!都|也)|什么(?!都|也)|谁(?!都|也)")


def zh_bare(said: str, sentence: str, *, opens: bool, question: str, questions: int,
            listed: bool = False) -> str | None:
    """A Chinese clause said bare, its topic first, as a memory: an answer to the assistant's
    question takes the question's predicate ("你在哪个城市？" + "杭州" → "用户在杭州"); otherwise
    it must hold a predicate of its own ("咖啡也戒了快半年了"), or it says nothing ("狸花猫可以").
    `opens`: the clause is the first words of its message; `questions`: how many the assistant asked;
    `listed`: the clause stands in the first sentence of a reply to a question about the user."""
    said = tidy(said)
    if (head := heading(sentence)) is not None and head[0] == "self":
        return "用户：" + third_person_zh(said)  # "先做个自我介绍：陈嘉怡，31，深圳": the user's, item by item
    at = sentence.find(said)
    if at > 0 and any(_ZH_ASKED.search(run) for run in re.split(r"[\s，,]+", sentence[:at]) if run):
        return None  # "为什么降落时耳朵会疼 越往下越疼": what goes on from the user's own question
    answering = opens and bool(question) and answers(question, "zh") and not zh_asks_thing(question)
    topic = re.match(r"^([\u4e00-\u9fff]{1,4}?)(?:也|都|还|就)", said)
    if topic is not None and topic.group(1) + "呢" in sentence:
        return None  # "那高铁呢 高铁也不能开啊": the comment goes on with the question about it
    if answering and questions == 1 and len(said) <= 10 and not zh_has_verb(said):
        framed = zh_answer(question, said)
        if framed is not None:
            return framed
    if answering or (listed and len(said) <= _ZH_ITEM_CHARS) or zh_topic_fact(said):
        return "用户：" + third_person_zh(said)
    return None


# an item of a reply ("深圳", "布洛芬可以") is short; a longer clause needs a predicate of its own
_ZH_ITEM_CHARS = 8


def zh_asks_user(text: str) -> bool:
    """Whether the assistant's message asks the user something with a question word, in any of
    its questions, and speaks to the user ("退烧药你平时吃什么？有没有药物过敏？", "介绍一下自己？比如
    怎么称呼、在哪个城市？"), not only of a thing the user spoke of ("是什么品种？")."""
    return bool(re.search(r"[你您]|自己", text)) and any(_ZH_WH.search(q) and not zh_asks_thing(q)
                                                         for q in _ZH_QUESTION.findall(text))


def zh_has_verb(said: str) -> bool:
    """Whether a Chinese clause has a verb of its own (not a bare name, place, day or count)."""
    return bool(_ZH_STANDING_VERB.search(tidy(said)))


# ---- English narrative -----------------------------------------------------------------------

# verbs that change how things stand, though said in the past ("I quit smoking", "we moved")
_EN_LASTING_CHANGE = re.compile(r"\b(?:switched|moved|joined|became|started|retired|graduated|adopted|married|engaged|"
                                r"took over|inherited|founded|co-founded|opened (?:a|an|my|our|the user's) |"
                                r"promoted|diagnosed|passed away|passed|died|proposed|gave birth|had (?:a|her|his|their) baby|"
                                r"turned|born|quit|stopped|gave up|bought|sold (?:my|our|his|her|the user's|the) |closed on|got (?:a|an|my|our|the user's) |"
                                r"went (?:from|up|down|back to|vegan|vegetarian|part-time|full-time|freelance)|said|told|tore|broke|sprained|fractured|"
                                r"lost (?:my|his|her|our) (?:job|mom|dad|mother|father|husband|wife)|"
                                r"left (?:my|his|her|our|the user's|a|the) (?:job|position|role|company|firm|practice)|resigned|"
                                r"(?:was|got|been) (?:laid off|fired|let go)|"
                                r"have been|has been|'ve been|been)\b", re.I)
# what happened to the user's health, though told as a day's story: a history a helper should know
# ("had a stroke in 2024", "got heat exhaustion last tuesday", "had surgery on my knee in March")
_EN_HEALTH = re.compile(r"\b(?:had|got|suffered|survived|underwent|caught|came down with)\s+(?:(?:a|an|the|my|the user's|"
                        r"bad|mild|severe|minor|major|emergency|small|big|nasty|knee|hip|back|heart|eye|brain|"
                        r"kidney|shoulder|wrist)\s+)*(?:stroke(?! of)|heart attack|surgery|operation|seizure|concussion|"
                        r"transplant|miscarriage|c-section|heat (?:exhaustion|stroke)|flu|covid|pneumonia|infection|"
                        r"fracture|injury|cancer|tumou?r|biopsy|chemo|appendicitis|kidney stones?|bronchitis|shingles|"
                        r"allergic reaction|panic attacks?|breakdown|burnout|hernia|blood clot|diagnosis|"
                        r"(?:knee|hip|back|eye|heart|shoulder|wrist|ankle|foot) (?:surgery|replacement|injury|problems))\b",
                        re.I)
_EN_PAST_IRREGULAR = ("went|had|got|made|said|took|came|saw|knew|thought|ran|ate|drank|brought|left|met|felt|found|"
                      "gave|told|kept|lost|paid|sent|spent|sold|wrote|began|fell|forgot|flew|heard|held|sat|slept|"
                      "spoke|stood|swam|taught|understood|won|woke|wore|did|was|were|swore|swear|realized|realised")
# the verb a clause's subject does, first: "the user had to call…", "the user's sister changed…"
_EN_FIRST_VERB = re.compile(rf"^(?:the user|the user's [\w-]+(?: (?!(?:is|was|are|were|has|had|have|just|then|also|got|did|does|do|never|still)\b)(?-i:[a-z]+(?<!ly)))?(?: (?-i:[A-Z][a-z]+))?|the user and (?:others|(?-i:[A-Z][a-z]+)))\s+(?:\w+ly\s+|just\s+|then\s+)*"
                            rf"(?P<v>{_EN_PAST_IRREGULAR}|[a-z]+ed)\b(?!')", re.I)  # "won't" is no "won"
_EN_TIMELESS = re.compile(r"\b(?:since|ago|for (?:(?:\d+|a|two|three|many|several) )?(?:years?|months?|decades?|ages)|"
                          r"all (?:my|the user's) life|every|always|usually)\b",
                          re.I)


def en_told_story(content: str) -> bool:
    """Whether an English memory (about "the user") tells what happened once, in the past, and
    changes nothing that lasts ("The user had to call AAA")."""
    m = _EN_FIRST_VERB.match(content)
    if m is None:
        return False
    if m.group("v").lower() in ("was", "were") and not re.search(r"\b(?:was|were)\s+\w+ing\b", content, re.I):
        return False  # "I was born in…", "was a teacher for 20 years": how the user is
    return not (_EN_LASTING_CHANGE.search(content) or _EN_TIMELESS.search(content) or _EN_HEALTH.search(content))


def en_to_assistant(content: str) -> bool:
    """Whether a memory speaks of the chat with the assistant ("The user swears the user told you")."""
    return bool(re.search(r"\b(?:told|tell|said (?:it )?to|mentioned (?:it )?to|showed|sent|asked) you\b", content, re.I))


def zh_to_assistant(content: str) -> bool:
    """Whether a Chinese memory speaks to the assistant ("不打扰你了", "再说一遍")."""
    return bool(re.search(r"[你您]|再[\u4e00-\u9fff]{0,4}一[遍次下]", content))


def zh_told_story(content: str) -> bool:
    """Whether a Chinese memory tells a moment that is over ("用户刚下单了", "吵醒用户了") or
    points at a thing named elsewhere ("用户转给她", "用户天天在家看着它")."""
    body = content.replace("用户", "")
    if re.search(r"[着给陪帮跟看带让](?<![吉其])[她他它](?:们)?[了吧呢啊]?$", body) or re.fullmatch(
            r"[\u4e00-\u9fff]{1,3}(?<![吉其])[她他它](?:们)?[了吧呢啊]?", body):
        return True  # "用户转告她": a one-off act on someone named elsewhere
    return bool(re.fullmatch(r"(?:刚|刚刚|刚才)?[\u4e00-\u9fff]{1,4}了", body)) and "刚" in body


# a predicate of its auxiliary alone: "The user never has.", "The user is definitely not."
_EN_BARE_AUX = re.compile(r"^the user\s+(?:\w+\s+){0,2}?(?:has|have|is|am|was|does|did|can|will|would)(?:n't)?"
                          r"(?:\s+(?:\w+ly|not|never|too|either))*\s*(?:,|\.?$)", re.I)
# a plan with no what and no when: "The user will stay."
_EN_BARE_PLAN = re.compile(r"^the user\s+(?:will|would|is going to|might)\s+\w+\.?$", re.I)


# a clause that ends on an auxiliary, its verb left to the question before: "The user feels like the user did."
_EN_ENDS_AUX = re.compile(r"\b(?:the user|I)\s+(?:did|do|does|was|is|am|have|has|had|will|would|can|could)\.?$", re.I)
# a step of the moment, with no day: "The user will check the user's texts."
_EN_NOW_STEP = re.compile(r"^the user(?:'ll| will) (?:just |probably |maybe )?(?:check|look|ask|see|try|text|call|search|find|think|wait|"
                          r"google|dig|scroll|figure)\b(?:\s+\S+){0,3}\.?$", re.I)


# a predicate pointing at what was said before ("The user does this after work"), a bare state of the
# moment ("The user is off.", "The user and others are still finalizing."), what the user knows or swears
_EN_POINTED = re.compile(r"^the user(?: and others)? (?:\w+ly |just |also )?(?:does|do|did|is doing|likes|loves|hates|uses|wants|needs|"
                         r"(?:will|'ll) (?:\w+ly )?\w+) (?:this|that|it|them|these|those|her|him)\b", re.I)
_EN_BARE_STATE = re.compile(r"^the user(?: and others)? (?:is|are|was|were) (?:still |just |currently |now )?"
                            r"(?:so |really |totally |completely |kinda |pretty )?(?:off|out|back|done|here|"
                            r"in|up|ok|okay|fine|alright|all right|good|great|well|better|fried|wiped|beat|toast|"
                            r"exhausted|drained|wrecked|swamped|slammed|[a-z]+ing|done with (?:that|this|it|them)(?: \w+)?)"
                            r"\.?$", re.I)
_EN_KNOWS = re.compile(r"^the user (?:knows|knew|swears|swore|bets|guesses|realizes|realised|realized) (?:that )?"
                       r"(?!how to\b)\w+(?:'s)?(?: \w+)? (?:is|are|was|were|has|have|had|will|would|can|could|almost|just|"
                       r"never|always|\w+ed)\b", re.I)


# a person of the user's named and nothing said of them: "The user's mom." (not "The user's divorce.")
_EN_BARE_KIN = re.compile(rf"The user's (?:(?:best|older|younger|little|big|new|old) )?(?:{EN_KIN_WORDS})\.?")


def en_empty_predicate(content: str) -> bool:
    """Whether an English memory's predicate says nothing: an auxiliary alone, a plan of one
    bare verb, a clause ending on its auxiliary, a step of the moment, a pointer to what was
    said before, a bare state of the moment, or what the user knows or swears of something else."""
    return bool(_EN_BARE_AUX.match(content) or _EN_BARE_PLAN.match(content) or _EN_ENDS_AUX.search(content)
                or _EN_BARE_KIN.fullmatch(content) is not None
                or _EN_POINTED.match(content) or _EN_BARE_STATE.match(content) or _EN_KNOWS.match(content)
                or (_EN_NOW_STEP.match(content) and not re.search(r"\d|\b(?:tomorrow|tonight|today|next|on|by|this|later)\b",
                                                                 content, re.I)))


def holds(content: str) -> bool:
    """Whether a memory cut from one clause has a predicate about the user that holds past the
    moment: not the day's story, not words to the assistant, not a bare auxiliary, not the news
    of a friend or coworker."""
    if around_news(content):
        return False
    if re.search(r"[\u4e00-\u9fff]", content):
        return not (zh_to_assistant(content) or zh_told_story(content))
    return not (en_told_story(content) or en_to_assistant(content) or en_empty_predicate(content))


# ---- people around the user ------------------------------------------------------------------

# people near the user whose own lives are theirs: friends, coworkers, neighbours, classmates
_EN_AROUND = re.compile(r"^the user's (?:best |old |close )?(?:friend|buddy|pal|bestie|coworker|co-worker|colleague|"
                        r"neighbou?r|classmate|roommate|flatmate|housemate|teammate)s?\b", re.I)
_ZH_AROUND = re.compile(r"^(?:用户的?|我的?|我们|咱们)(?:(?:部门|公司|单位|组里|团队|办公室|科室|班上|队里|楼里)(?:新来的|里的|的)?)?"
                        # from which time of life: 大学室友, 高中同学, 以前的同事
                        r"(?:(?:大学|高中|初中|小学|中学|研究生|读书时|以前|之前|前|老)的?)?"
                        r"(?:同事|朋友|邻居|同学|室友|闺蜜|哥们|网友|实习生|新人)")
_NAMED = re.compile(r"\b(?:is named|name is|name's|called|goes by)\b|叫(?!我|用户)|全名|名字|本名|姓")
_USER_IN = re.compile(r"\b(?:the user|me|us)\b(?!'s)|用户(?!的?(?:同事|朋友|邻居|同学|室友|闺蜜|哥们|网友))")


def around_news(content: str) -> bool:
    """Whether a memory tells the news of someone around the user (not family), without naming
    them or saying anything of the user's: that is theirs to keep."""
    m = _EN_AROUND.match(content) or _ZH_AROUND.match(content)
    if m is None:
        return False
    rest = content[m.end():]
    return not (_NAMED.search(rest) or _USER_IN.search(rest))


__all__ = ["zh_asks_thing", "answers", "around_news", "en_answer", "en_empty_predicate", "en_to_assistant", "en_told_story",
           "ZH_NEXT_TIME_TASK", "ZH_TASK_ASK", "en_standing", "holds", "zh_bare", "zh_has_verb",
           "last_question", "zh_answer", "zh_when_answer", "zh_to_assistant", "zh_told_story", "zh_topic_fact", "zh_yes_no_answer"]
