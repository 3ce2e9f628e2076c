"""Which part of a person's life a question about them asks for, and which parts a memory
tells (issue 32's current-value questions, issue 29's memory search): "what's my job again?"
asks for work, and "The user is a graphic designer." tells it, though the two share no word and
e5-small ranks "The user's girlfriend is Jess." first. A memory that tells what was asked gets
`search.slot_prior` on top of its relevance (`memlane.retrieval.search`).

A lexicon of a few life slots a person holds and is asked about (work, home, partner, vehicle,
school, pet, exercise, diet), in English and Chinese: words that ask for a slot, and words that
tell one. A question that asks for none, or for more than one, gets no prior."""

from __future__ import annotations

import re

from memlane.naming import EN_KIN_WORDS
from memlane.roles import JOB_HEADS
from memlane.slots import about_someone_else, frames

_ASKS: dict[str, re.Pattern[str]] = {
    "work": re.compile(r"\b(?:job|jobs|work|works|working|occupation|profession|career|employer|company|"
                       r"do for (?:a )?living|for (?:a )?living)\b|工作|上班|职业|做什么的|干什么的|干啥的|哪个公司|什么公司|单位",
                       re.I),
    "home": re.compile(r"\b(?:live|lives|(?<!for a )(?<!for )living|home|house|apartment|flat|address|reside|rent|"
                       r"renting)\b|住|搬到|家在|房子|租房|买房",
                       re.I),
    "partner": re.compile(r"\b(?:partner|girlfriend|boyfriend|wife|husband|spouse|married|dating|relationship|single|"
                          r"fianc[eé]e?)\b"
                          r"|对象|女朋友|男朋友|女友|男友|老婆|老公|爱人|结婚|恋爱|感情|单身", re.I),
    "vehicle": re.compile(r"\b(?:car|cars|drive|drives|driving|vehicle|truck|motorcycle|motorbike|bike|bicycle|ride|rides|"
                         r"commute)\b|什么车|开的|车", re.I),
    "school": re.compile(r"\b(?:school|study|studying|studies|university|college|degree|major|course|student)\b"
                         r"|学校|读书|专业|大学|上学|读研|学位", re.I),
    "pet": re.compile(r"\b(?:pet|pets|dog|dogs|cat|cats|puppy|kitten)\b|宠物|养的|狗|猫", re.I),
    "exercise": re.compile(r"\b(?:exercise|workout|work out|working out|train|training|gym|sport|sports|fitness|keep fit)\b"
                           r"|锻炼|健身|运动|训练", re.I),
    "diet": re.compile(r"\b(?:diet|vegetarian|vegan|eat|eats|eating|food|meals?)\b|吃素|饮食|吃肉", re.I),
}
# what tells a slot beyond the exclusive slots' own words (`memlane.slots.FRAMES`, read as well):
# a job noun, a pet, a sport, a school
_TELLS: dict[str, re.Pattern[str]] = {
    "work": re.compile(rf"(?<![-\w])(?:{JOB_HEADS})s?\b|\bemployed\b|\bfor a living\b"
                       # work of one's own: "runs his own rice-noodle-roll shop", "owns a bakery downtown"
                       r"|\b(?:runs?|owns?|opened|started)\s+(?:(?:his|her|their|my)\s+own|an?)\s+(?:[\w-]+\s+){0,3}?"
                       r"(?:shop|store|business|restaurant|caf[eé]|bakery|salon|studio|company|firm|practice|clinic|stall|"
                       r"farm|agency)(?=\s*(?:[.,;]|$|(?:in|on|at|near|called|named|downtown|since|with)\b))"
                       # what the user is: "用户是审计师", "用户在德勤做审计师", "用户是银行柜员"
                       r"|(?:是|当|做|任|成了)(?:一名|一个|一位|个|名)?[\u4e00-\u9fff]{0,6}?"
                       r"(?:师|(?:店|职|柜|公务|程序|服务|销售|快递|外卖|运动|演|驾驶|研究|业务|营业|收银|乘务|飞行|调度|质检|"
                       r"保洁|安检|检验|操作|技术|文|分析|审计|设计|保安|护理|化验|会计)员|医生|护士|司机|经理|老板|主管|记者|编辑)"
                       r"(?:[。.，,]|$)"
                       r"|^用户(?:自己|和[^，,。]{1,6})?(?:开了?|经营|开着)(?:一)?(?:家|个|间)[\u4e00-\u9fff]{1,6}"
                       r"(?:店|馆|公司|工作室|餐厅|诊所|摊)",
                       re.I),
    "home": re.compile(r"\b(?:owns? (?:a|an|the) (?:\w+ )?(?:house|flat|apartment|condo|home)|mortgage)\b|住|搬|租|房贷|买了房|房子",
                       re.I),
    "partner": re.compile(r"女友|男友|恋爱"),
    "vehicle": re.compile(r"\b(?:suv|motorcycle|motorbike|sedan|hatchback|pickup)\b|开的是|车", re.I),
    "school": re.compile(r"\b(?:student|studies|studied|studying|study|university|college|school|degree|major|phd|"
                         r"master'?s|bachelor'?s|graduated|alumn\w*|elementary|kindergarten)\b"
                         r"|学生|读研|读博|大学|学院|专业|研究生|本科|学校|毕业|小学|中学|高中|幼儿园", re.I),
    "pet": re.compile(r"\b(?:pet|dog(?!\s+(?:walker|sitter|groomer|trainer)s?\b)|cat|puppy|kitten|parrot|rabbit|hamster|"
                      r"turtles?|tortoise|goldfish|lizard|snake|budgie)\b"
                      r"|宠物|狗|猫|兔|龟|鹦鹉|仓鼠", re.I),
    "exercise": re.compile(r"\b(?:gym|running|jogs|jogging|swims|swimming|swim|climbs|climbing|yoga|pilates|cycling|"
                           r"weightlifting|workouts?|works out|hikes|hiking|boxing|crossfit|laps|marathon)\b"
                           r"|健身|跑步|游泳|攀岩|瑜伽|骑行|锻炼|普拉提|撸铁|马拉松", re.I),
    "diet": re.compile(r"\b(?:keto|gluten)\b"),
}


# a question about someone else of the user's asks for their slot, which the user's own memories
# do not tell: "what did my daughter study?", "我同事开的什么车"
# (a bare "her" may be the user asked about: "what does the user do on her weekends?")
_SOMEONE_ELSE = re.compile(rf"\b(?:my|our|his|her|their|the user's)\s+(?:(?:little|older|younger|big|best|new|old)\s+)?"
                           rf"(?:{EN_KIN_WORDS})\b"
                           r"|(?:我|咱|用户)(?:的|们的?|家|和|跟|与)?(?:妈|爸|父亲|母亲|儿子|女儿|孩子|哥|姐|弟|妹|爷爷|奶奶|外公|外婆|同事|朋友|"
                           r"同学|老板|领导|室友|邻居)", re.I)
_PARTNER_WORDS = re.compile(r"\b(?:partner|girlfriend|boyfriend|wife|husband|spouse|fianc[eé]e?)\b|对象|女朋友|男朋友|老婆|老公|爱人",
                            re.I)


# an exclusive slot's word in a phrase of its own: "for a living" (work, not home), "single-handedly"
_NOT_SLOT_WORDS = re.compile(r"\bfor a living\b|\bsingle-\w+", re.I)


def asked_slot(query: str) -> str | None:
    """The one slot a question about the user asks for, or None (none, several, or a question
    about someone else of the user's)."""
    asked = {name for name, pattern in _ASKS.items() if pattern.search(query)}
    if len(asked) != 1:
        return None
    slot = asked.pop()
    if _SOMEONE_ELSE.search(_PARTNER_WORDS.sub("", query)):  # "my wife" asks for the partner slot itself
        return None
    return slot


# the user asking of themselves, or an agent asking of the user: "where do I work?", "我现在住哪",
# "where does the user work?"
_OF_SELF = re.compile(r"\b(?:i|i'm|i've|i'd|my|me|mine|the user(?:'s)?)\b|我(?!们)|用户", re.I)
# a memory whose subject is someone named, not the user: "John is working on a website…", "Melanie
# carves out me-time…" (a name, then a verb; not "The user…", "Tuesday…", "I…")
_NAMED_SUBJECT = re.compile(r"^(?!The\b|This\b|That\b|These\b|Those\b|It\b|There\b|They\b|He\b|She\b|We\b|I\b|"
                            r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b)(?-i:[A-Z][a-z'-]+)(?: (?-i:[A-Z][a-z'-]+))?"
                            r"(?:'s? [a-z]+)? (?:is|was|are|were|has|had|will|would|can|could|[a-z]+s|[a-z]+ed)\b")


def asks_of_self(query: str) -> bool:
    """Whether a question is the user's about themselves ("where do I work?"), not about someone
    of theirs ("where does my sister work?") nor anyone else."""
    return bool(_OF_SELF.search(query)) and not _SOMEONE_ELSE.search(_PARTNER_WORDS.sub("", query))


def told_of_other(content: str) -> bool:
    """Whether a memory's subject is someone named other than the user, and the user is not in
    it ("Rex is the user's dog." is the user's)."""
    return _NAMED_SUBJECT.match(content) is not None and not re.search(r"\bthe user\b|用户", content, re.I)


def tells(content: str, slot: str) -> bool:
    """Whether a memory tells the slot of the user's (its words, or the exclusive slots
    `memlane.slots` reads): not a kin's or a friend's news ("The user's sister drives a Jeep"),
    except the partner's, who is the partner slot."""
    if slot != "partner" and about_someone_else(content):
        return False
    return bool(_TELLS[slot].search(content)) or slot in frames(_NOT_SLOT_WORDS.sub(" ", content))


__all__ = ["asked_slot", "asks_of_self", "tells", "told_of_other"]
