"""An English sentence cut into clauses (`en_pieces`): each clause with its kind ("self", "kin",
"other", "verb", "be", …), "I" or "I'm" carried into one that opens with a verb, a subject said
without ("Training for a half marathon", "arborist here") filled in. `memlane.clauses` reads whose
each clause is; the patterns it shares with this are public here."""

from __future__ import annotations

import re

from memlane.naming import EN_KIN_WORDS as _EN_KIN_WORDS
from memlane.roles import with_article

_EN_TITLE_DOT = (r"(?:(?<=\b[Mm]r)|(?<=\b[Mm]rs)|(?<=\b[Mm]s)|(?<=\b[Dd]r)|(?<=\b[Pp]rof)|(?<=\bSt))\.\s+"
                 r"(?=[A-Z]|[a-z]+\b(?!\s+(?:i|we|my|the|and|but|then|so)\b))")  # "Mr. Okafor", "dr. okafor": no end
EN_SENTENCE = re.compile(rf"[^.!?;\n]+(?:(?:\.(?:\d|[a-z]\.)|{_EN_TITLE_DOT})[^.!?;\n]*)*[.!?;]*")
EN_FILLER = re.compile(r"^(?:by the way|also|oh|ooh|ok|okay|well|so|and|but|actually|btw|yes|yeah|yep|hi there|hello there|"
                       r"hey there|hi+|hel+o+|he+y+|yo|ngl|imo|fyi|not gonna lie|to be honest|finally|honestly|ironically|luckily|"
                       r"(?:un)?fortunately|sadly|thankfully|funn(?:il)?y enough|for context|for reference|seriously|literally|frankly|personally|genuinely|good (?:morning|afternoon|evening)|side note|(?:that |which )?means|"
                       r"anyway|plus|oh and|and also|haha+|lol|hmm+|hm|ugh|wow|nice|perfect|great|cool|thanks|thx|ta|"
                       r"fwiw|tbh|ah|right|sure|alright|hah|heh|hehe|omg|um+|uh+|big news|guess what|fun fact|"
                       r"quick update|update|gracias|merci|cheers|no wait|wait|oops|sorry|[-–—(]+)(?:\b|(?<=[-–—(]))[,!.:\s]*", re.I)
_EN_SPLIT = re.compile(r"(?:(?<!\s)|(?!\s))(?:\s*,\s*(?:(?:and|but|so|plus|or|because|while|though|although|whereas)\s+)?(?:also\s+)?"
                       r"|\s+(?:and|but|plus|because|while|though|although|whereas)\s+(?:also\s+)?"
                       r"|\s+[-–—]+\s+|\s+so\s+(?=(?:i|i'm|i've|i'll|my|we|it|it's|that|that's|there|there's|he|he's|she|she's|"
                       r"they|they're|everyone|everybody|nobody)\b))", re.I)
_ADVERB = (r"really|also|usually|always|never|often|sometimes|just|still|absolutely|totally|generally|normally|"
           r"rarely|only|even|already|mostly|definitely|actually|recently|currently|now|mainly|typically|"
           r"regularly|occasionally|basically|kind of|sort of|pretty much")
EN_SELF = re.compile(r"^(?:i|i'm|i've|i'd|i'll|im|we|we're|we've|we'll|me and|as a|as an)\b", re.I)
EN_KIN = re.compile(rf"^(?:my|our)\s+(?:(?:little|older|younger|big|best|new|current|old)\s+)?(?:{_EN_KIN_WORDS})\b"
                     r"(?:\s+(?-i:[A-Z][a-zà-ÿ]+))?", re.I)
_EN_MINE = re.compile(r"^(?:my|our)\b", re.I)
EN_BARE_KIN = re.compile(rf"^(?:{_EN_KIN_WORDS})\b(?:\s+(?-i:[A-Z][a-z]+))?(?=\s+(?:is|was|said|says|thinks|wants|has|likes|"
                          r"loves|hates|works|lives|keeps|needs|makes|does|doesn't|told|recommended|suggested|gets|got|will|"
                          r"can|can't|passed|died|had|[a-z]+ed)\b)", re.I)  # "Wife Barb keeps the thermostat low"
EN_PRONOUN = re.compile(r"^(?:he's|she's|he|she|her|his|him)\b", re.I)
EN_OTHER = re.compile(r"^(?:they|it|you|it's|that|that's|there|there's|this|these|those|their|they're|your|"
                       r"you're|people|someone|everyone|anyone)\b", re.I)
EN_ASK = re.compile(r"^(?:(?:what|how|where|when|why|who|which)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|can|could|"
                     r"should|would|will|to|about|much|many|long|often|else)\b)|what's|whats|hows|wheres|whos|can you|could you|would you|"
                     r"will you|do you|any|is there|are there|is it|should i|can i|could i|do i|did i|am i|would i|"
                     r"(?:is|was|are|were|does|do|did|can|could|should|would|will|has|have)\s+(?:that|this|it|they)\b|"
                     r"shall|wdyt|thoughts|ideas|tips|suggestions|recommendations|advice|anything|anyone|"
                     r"any (?:tips|ideas|suggestions|recommendations|advice|thoughts)|"
                     r"(?:what|which|how|where|who|when|why)\s+(?:\w+\s+){1,3}(?:should|can|could|do|does|would|will|is|"
                     r"are)\s+(?:i|you|we)\b)", re.I)
EN_REQUEST = re.compile(r"^(?:from now on|going forward|in (?:the )?future|pls|plz|please|can you|could you|would you|help me|remind me|tell me|give me|show me|"
                         r"let me know|make|write|explain|summari[sz]e|translate|proofread|recommend|suggest|find|"
                         r"list|check|fix|keep|stop|use|don't|do not|always|never|avoid|answer|reply|respond|call me|"
                         r"ignore|disregard|forget|delete|erase|override|pretend|act as|"
                         r"no more)\b", re.I)
# verbs a first-person clause opens with once "I" was said: "…and work as a data engineer"
_EN_VERB = re.compile(
    rf"^(?:(?:{_ADVERB})\s+)*(?:am|have|has|had|do|don't|does|doesn't|did|didn't|never|can|can't|cannot|could|"
    r"will|won't|would|should|must|need|needs|want|wants|plan|plans|work|works|worked|live|lives|lived|like|"
    r"likes|love|loves|loved|enjoy|enjoys|hate|hates|dislike|prefer|prefers|speak|speaks|use|uses|play|plays|run|"
    r"runs|go|goes|went|moved|move|study|studies|studied|learn|learned|teach|teaches|own|owns|drive|drives|"
    r"eat|eats|drink|drinks|cook|cooks|read|reads|write|writes|watch|watches|practice|practise|train|trains|"
    r"visit|visits|take|takes|keep|keeps|try|tries|got|get|gets|started|start|quit|stopped|became|grew|was|"
    r"were|sleep|wake|volunteer|volunteers|coach|coaches|collect|collects|bike|cycle|swim|swims|hike|hikes|"
    r"grew up|was born|belong|support|follow|manage|manages|lead|leads|ride|rides|wear|wears|"
    r"avoid|avoids|can't stand|attend|attends|switched|decided)\b", re.I)
# what "I'm" carries into "…and training for a marathon", "…and allergic to nuts"
_EN_BE_CARRIED = re.compile(r"^(?:(?:also|now|currently|still|really)\s+)?(?:[a-z]+ing|allergic|married|divorced|"
                            r"single|based|from|originally|retired|pregnant|vegan|vegetarian|lactose|gluten|"
                            r"intolerant|engaged|left-handed|right-handed)\b", re.I)
_NOT_GERUND = re.compile(r"^(?:thing|nothing|something|anything|everything|morning|evening|king|ring|spring|string|"
                         r"wedding|building|meeting|during|ceiling|pudding|clothing|feeling|sibling|darling|"
                         r"being|earring|awning|lightning|painting|ping|sing|bring|sting|swing|wing|thing|"
                         # adjectives in -ing: "interesting, thx" says nothing of the user
                         r"interesting|amazing|boring|exciting|annoying|confusing|surprising|fascinating|"
                         r"frustrating|tempting|relaxing|exhausting|disappointing|depressing|inspiring|refreshing|"
                         r"terrifying|embarrassing|shocking|stunning|charming|promising|outstanding|satisfying|"
                         r"hilarious|touching|worrying|puzzling|encouraging|insulting|overwhelming)$", re.I)
_BE = re.compile(r"\b(?:i'm|i am|im)\b", re.I)
# "like" and "just" that are no verb: "like I said", "like under 150 words", "just checking"
_NOT_VERB = re.compile(r"^(?:like|just)\s+(?:(?:i|you|he|she|we|they|that|this|under|over|about|around|once|twice|maybe|"
                       r"totally|really|literally|a|an|the)\b|[\d$€£¥~])|^just\s+\w+ing\b", re.I)
_VERB_ELLIPSIS = re.compile(r"^(?:(?:just|recently|finally|officially|already)\s+)?(?:love|loves|like|likes|enjoy|hate|dislike|can't|cannot|can not|"
                            r"don't(?!\s+(?:mention|include|use|say|add|put|write|forget|make|send|tell|call|list|show|give|"
                            r"bother|worry|let|be|do|go|start|stop|change|remove|sign|cc|copy|reply|answer|explain|bring)\b)|adore|speak|"
                            r"got|finished|passed|graduated|started|quit|adopted|booked|joined|turned|had(?=\s+(?:a|an|my)\s|\s+(?:surgery|covid|cancer|chemo|pneumonia|shingles|bronchitis|the flu)\b)|gotta|"
                            r"prefer|work|live|moved|need|plan|planning|"
                            r"allergic|vegan|vegetarian|currently|usually|mostly)\b", re.I)
# "walk 11 dogs a day", "teach 5 classes a week": what the speaker does, how often
# (not "budget 180 euros a night": an amount is no habit)
_HABIT = re.compile(r"^(?!(?:budget|about|around|maybe|like|only|just|max|up|over|under|roughly|approx|costs?|pay|paid|"
                    r"rent|salary|earn|make|makes)\b)[a-z]+\s+(?:\d+|a few|several|two|three|four|five|six|seven|eight|"
                    r"nine|ten|twelve)\s+(?!(?:euros?|dollars?|bucks|pounds?|quid|usd|eur|gbp|rmb|yuan|yen|k)\b)"
                    r"[\w-]+(?:\s+[\w-]+)?\s+(?:a|per|each|every)\s+(?:day|week|month|night|shift|year)\b")
_SUBORDINATE = re.compile(r"^(?:since|because|as|cause|cuz|given that|now that)\s+(?=i\b|i'm\b|my\b)", re.I)
_AS_A = re.compile(r"^as an? ", re.I)
# someone named by whose they are: "my wife's sister", "Mom's friend", "our neighbour"
_PERSON = re.compile(r"(?<![\w-])(?:(?:my|our|the)\s+(?:[\w-]+'s\s+)?|[\w-]+'s\s+)[\w-]+", re.I)
def _en_opens(text: str, be: bool) -> str | None:
    """How a piece after a comma or conjunction continues: "self" (its own first-person
    subject), "kin", "other" (someone else's), "ask" (a question), "verb" ("I" carried in),
    "be" ("I'm" carried in), or None when it is no clause ("salt and pepper")."""
    t = text.strip()
    if re.match(r"^(?:i|me)\s+(?:are|were|have been)\b", t, re.I):
        return None  # "my partner Alex and I are moving": one subject of two people
    if re.match(r"^(?:if|unless|even if|even though|even when|in case)\b", t, re.I) or re.match(
            r"^(?:maybe|perhaps|probably|hopefully)\s+(?:i|i'll|we|we'll)\b", t, re.I):
        return "other"  # "…, if that helps the theme", "…, maybe I bring it up then": what came before still holds
    if EN_SELF.match(t) or _SUBORDINATE.match(t):
        return "self"
    if _EN_MINE.match(t) or EN_PRONOUN.match(t):
        return "kin"
    if EN_ASK.match(t):
        return "ask"
    if re.match(r"^[a-z]+\s+me\b", t, re.I) and not _EN_VERB.match(t):
        return "request"  # "wish me luck", "send me the list"
    if _EN_VERB.match(t) and not _NOT_VERB.match(t):
        return "verb"
    word = re.match(r"^(?:(?:also|now|currently|still|really)\s+)?([a-z'-]+)", t, re.I)
    if be and _EN_BE_CARRIED.match(t) and word and not _NOT_GERUND.match(word.group(1)):
        return "be"
    if EN_OTHER.match(t) or EN_REQUEST.match(t) or re.match(r"^[A-Z][a-z]+\s+(?:is|was|has|works|lives|loves|likes)\b", t):
        return "other"
    return None


_EN_NEW_SUBJECT = re.compile(r"(?:the|today|tonight|tomorrow|yesterday)\b(?:\s+[\w'-]+){0,3}?\s+(?:is|was|are|were|will be)\b",
                             re.I)
_NOT_WHO = (r"(?:new|same|me|not|right|over|in|out|back|still|already|almost|finally|just|all|you|we|us|it|they|from|"
            r"nobody|everyone|anyone|someone|everybody|somebody|nothing|something|i|im|i'm|the|a|an|my|your|our|"
            r"is|are|was|were|be|been|get|got|stay|stuck|live|work|come|came|go|went|sitting|waiting|this|that|"
            r"first|time|long|lurker|newbie|noob|newb)")  # "first time here", "long time lurker here"
_HERE = re.compile(rf"^(?!{_NOT_WHO}\b)((?:[a-z-]+\s+){{0,2}}(?!{_NOT_WHO}\b)[a-z-]+)\s+here\b(?=\s*(?:[,.(!—–-]|$|so\b|and\b))",
                   re.I)


_WHEN = re.compile(r"(?:on\s+|in\s+|at\s+)?(?:this\s+|next\s+|the\s+)?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
                   r"tomorrow|tonight|today|\d|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|end of|"
                   r"early|late|mid|soon|almost here|coming up|week|weekend|month)", re.I)


def _en_ellipsis(text: str) -> str:
    """A sentence said without its "I": "Training for a half marathon in March" → "I'm
    training…", "Love hiking" → "I love hiking", "as a nurse, …" → "I'm a nurse, …"; a gerund
    that is the subject ("Swimming is fun") is left alone."""
    if _AS_A.match(text):
        return "I'm " + text[3:]
    if re.match(r"^(?:home|back|off|away|out|stuck|sick|ill|laid up|in bed)\s+(?:with|from|sick|today|for|in|at|on)\b",
                text, re.I):
        return "I'm " + text[:1].lower() + text[1:]  # "home with a migraine today": where or how the speaker is
    if re.match(r"^not\s+(?:into|a fan|a big fan|big on|keen|interested|a huge fan|an? [\w-]+ person)\b", text, re.I):
        return "I'm " + text[:1].lower() + text[1:]
    # "arborist here, 14 yrs…", "single mom here": who the speaker is; one capitalised word may
    # be a name ("Sarah here"), which is no role
    if (here := _HERE.match(text)) and not re.fullmatch(r"(?-i:[A-Z][a-z'-]*)", here.group(1)):
        who = here.group(1) if here.group(1)[1:2].isupper() else here.group(1)[:1].lower() + here.group(1)[1:]
        return f"I'm {with_article(who)}{text[here.end():]}"
    m = re.match(r"^([A-Za-z'-]+)(\s+\S+)?", text)
    if m is None:
        return text
    first, after = m.group(1), (m.group(2) or "").strip().lower()
    if after in ("is", "was", "are", "were", "has", "makes", "helps", "keeps", "'s"):
        return text
    if _HABIT.match(text) and not _NOT_VERB.match(text):
        return "I " + text
    if gerund := re.match(r"^\w+ing(?:\s+[\w'-]+){0,5}?\s+(?:is|was|are|were|starts|begins|ends)\b", text, re.I):
        # "shearing day is saturday", "lambing starts end of February": the user's event and when; else
        # ("opening weekend of rifle season is…" without a time) the gerund's phrase is a subject of its own
        return "my " + text if _WHEN.match(text[gerund.end():].lstrip()) else text
    if first.lower().endswith("ing") and len(first) > 4 and not _NOT_GERUND.match(first):
        return "I'm " + text[:1].lower() + text[1:]
    if first.lower() in ("usually", "mostly", "currently") and not (_EN_VERB.match(text) or after.endswith("ing")):
        return text  # "mostly indie rock, some jazz": an answer, no verb to carry "I" into
    if (_VERB_ELLIPSIS.match(text) and after not in ("i", "you", "he", "she", "we", "they", "it", "that", "this")
            and not _NOT_VERB.match(text) and not re.match(r"^don't\s+\w+\s+me\b", text, re.I)):  # "like 5 a day", "don't judge me"
        prefix = "I'm " if first.lower() in ("allergic", "vegan", "vegetarian", "currently") else "I "
        return prefix + text[:1].lower() + text[1:]
    return text


def en_pieces(sentence: str) -> list[tuple[str, str]]:
    """(kind, piece) for each clause of an English sentence, "I" or "I'm" carried into a
    clause that opens with a verb; a lead-in with no clause of its own ("Next month, …")
    stays with what follows."""
    s = _introduction(_strip_en_filler(sentence))
    s = _SUBORDINATE.sub("", _en_ellipsis(s))
    out: list[tuple[str, str]] = []
    start, carried, kind0 = 0, "", ""
    subject = _en_subject(s)  # whom a clause opening with a verb is about: "My brother lives … and works …"
    be = bool(_BE.search(s[:40]))
    for m in _EN_SPLIT.finditer(s):
        left, right = s[start:m.start()], s[m.end():]
        kind = _en_opens(right, be)
        if kind == "verb" and (re.search(r"\bso\s+$", m.group(), re.I) or subject is None):
            kind = None  # ", so use it in samples": a request to the assistant, not the user's doing
        if kind is None and re.search(r"\band\s+$", m.group(), re.I) and _EN_NEW_SUBJECT.match(right):
            kind = "other"  # "…class III license and tonight is my last night shift"
        if left.count("(") > left.count(")"):
            continue  # no clause ends inside brackets
        dash = bool(re.search(r"[-–—]", m.group()))
        if dash and kind is None:
            kind = "other"
        if re.fullmatch(r"\s+and\s+", m.group(), re.I) and (
                re.search(r"\b(?:me|I)\s*$", left)
                or (re.match(r"i\s", right, re.I) and _PERSON.fullmatch(left.strip()))):
            continue  # "the film night me and my dad do", "my wife's sister and I": one subject of two people
        if kind == "self" and not out and not is_clause(left) and re.search(r"\b(?:but|so)\b", m.group(), re.I):
            start = m.end()  # "random but I can't stand tomatoes", "long story short, I quit": a lead-in
            continue
        if kind is None or not (is_clause(carried + left) or dash):  # "I'm 74, retired carpenter, I drive…"
            continue
        if re.search(r"\bwhile\s+$", m.group(), re.I) and len(right.split()) <= 3:
            continue  # "…do video calls while we work": when it happens, no clause of its own
        if kind == "other" and re.search(r"\bso\b", m.group(), re.I):
            kind = "so"  # "…passed away, so it's his first birthday without her": a consequence, no description
        out.append((kind0, carried + left))
        carried = (subject or "I ") if kind == "verb" else "I'm " if kind == "be" else ""
        kind0 = kind
        if kind in ("self", "kin", "other", "so"):
            be = bool(_BE.search(right[:40]))
            subject = _en_subject(right)
        start = m.end()
    out.append((kind0, carried + s[start:]))
    return [(k, _SUBORDINATE.sub("", _strip_en_filler(p))) for k, p in out if p.strip()]


# "I'm Maria Fernandes, senior accountant at …": a name, then what the person is
_INTRO = re.compile(r"^(?:i'm|i am|im|this is)\s+(?P<name>(?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,2}))\s*,\s*"
                    r"(?P<role>(?!(?:and|but|so|i|you|what|how|can|could|nice|thanks|it|it's|that|that's|this|they|he|she)\b)"
                    r"[a-z0-9][^,;]*)", re.I)


def _introduction(s: str) -> str:
    """A self-introduction said as "I'm <Name>, <role>" read as "my name is <Name> and I'm a
    <role>", so each half is a clause of its own."""
    m = _INTRO.match(s)
    if m is None:
        return s
    role = m.group("role")
    if role[:1].isdigit():
        return f"my name is {m.group('name')} and I'm {role}{s[m.end():]}"  # "I'm Zoe, 16"
    if _EN_VERB.match(role) or re.match(r"^(?:just|recently|currently|now)\s+\w+ed\b|^\w+ed\b", role, re.I):
        return f"my name is {m.group('name')} and I {role}{s[m.end():]}"  # "I'm Wei, just moved to Toronto"
    if not re.match(r"^(?:a|an|the|from|in|at|on|based|originally|living|working|\w+ing)\b", role, re.I):
        role = ("an " if role[:1].lower() in "aeiou" else "a ") + role
    return f"my name is {m.group('name')} and I'm {role}{s[m.end():]}"


def _en_subject(text: str) -> str | None:
    """The subject a clause opens with, as a verb after it would take it: "I ", "my brother ",
    "she "; None for anyone else's."""
    t = _strip_en_filler(text)
    kin = EN_KIN.match(t)
    if kin is not None:
        return kin.group() + " "
    pronoun = re.match(r"^(?:he|she)\b", t, re.I)
    if pronoun is not None:
        return pronoun.group() + " "
    if EN_OTHER.match(t) or EN_REQUEST.match(t):
        return None  # "use British spelling … and never suggest …": the one asked does it, not "I"
    return "I "


def _strip_en_filler(text: str) -> str:
    s = text.strip()
    if s.endswith(")") and "(" not in s:
        s = s[:-1].rstrip()  # the end of an aside: "(side note, …, ugh)"
    while (m := EN_FILLER.match(s)) is not None and m.end() > 0:
        s = s[m.end():].strip()
    return s


def is_clause(text: str) -> bool:
    """Whether a piece says something of its own (a verb), not just "Next month" or "My
    manager, Tom"."""
    t = text.strip()
    return bool(re.search(r"\b(?:i|we|they|he|she)\s+\w|\b(?:it|there|everyone|everybody|nobody|someone)\s+[a-z]+ed\b|\b(?:i'm|i've|i'd|im|is|are|am|was|were|has|have|had|do|"
                          r"does|did|can|will|would|whats|hows|wheres|whos)\b|'s\s", t, re.I)
                or any(_EN_VERB.match(t[m.start():]) for m in re.finditer(r"\b\w", t)) or EN_BARE_KIN.match(t) is not None)
