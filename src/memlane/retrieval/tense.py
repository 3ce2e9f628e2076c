"""Whether a question asks about how things were or how they changed (issue 32).

A superseded memory (supersession.py) is out of the default search: "where does the user
live?" must find Berlin, not Munich beside it. A question about the past — "where did I live
before Berlin?", "what was my old job?", "我以前在哪家公司？", "原来住哪" — or about the change
itself — "when did I move?", "how long was I at Siemens?", "how many times did I switch
jobs?", "我换过几次工作" — wants the replaced facts too. These are the words that say so; a
date in the question (`dates.mentioned_period`) says so as well, and is the search's own.
"""

from __future__ import annotations

import re

_EN = re.compile(
    r"\b(?:before|used to|use to|previous(?:ly)?|formerly|former|earlier|originally|at first|at the time|back then"
    r"|back when|no longer|any ?more|old (?!friend|age)\w+|last (?:year|month|summer|winter|spring|fall|autumn|time)"
    r"|first(?!-| (?:name|aid)\b)|(?:last|old) (?:job|home|place|apartment|flat|car|phone|school|company|employer|city"
    r"|address|partner)"
    r"|(?:ago|since|until|till|prior to)\b|ever (?:had|lived|worked|been|owned|used)"
    r"|how long|how many (?:times|years|months)|how often did|when(?: exactly)? (?:did|was|were|had|have)|what year|which year"
    r"|chang(?:e|ed|es|ing)|switch(?:ed|es)?|mov(?:e|ed) (?:from|to|out|house|in)|quit|left (?:my|the)"
    r"|history|timeline|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_ZH = re.compile(
    r"以前|之前|原来|原先|原本|本来|过去|当初|当时|早先|曾经|从前|先前|起初|一开始|刚开始|最开始|最早|最初|那时|那会|那阵|"
    r"去年|前年|上个月|上一?[个份家所套辆部]|前一?[个份家任]|旧的|老的|"
    r"不再|已经不|换过|换了几|搬过|搬了几|改过|几次|多少次|多久|多长时间|几年(?!级)|多少年|什么时候|哪一?天|哪个月|几月几[号日]|"
    r"哪一?年|变化|变过|改变|历史|(?:19|20)\d\d年"
)


def asks_about_past(query: str) -> bool:
    """Whether `query` asks about an earlier state of things or a change (the module docstring)."""
    return bool(_EN.search(query) or _ZH.search(query))
