"""The offline extractor: Chinese and English patterns for what users state explicitly.

Used when no LLM is configured (`Memory.llm is None`); it yields the same `Operation`s as
the LLM path, with `source="heuristic"`. It only catches first-person statements of a known
shape (我叫…, 我对…过敏, I prefer…, I'm allergic to…); an LLM reads far more.

`commands()` runs in both modes: the user's own "记住…/remember that…" becomes a pinned,
verified memory from the user, and "忘掉…/forget…" a FORGET the worker resolves to DELETEs
(seed 001 §6 phase 1.5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memlane import validate
from memlane.config import Config
from memlane.extraction import Extraction, Operation
from memlane.models import Turn
from memlane.policy import category_for, initial_score, retention
from memlane.text import has_cjk, language_of

_ZH_SENTENCE = re.compile(r"[^。！？!?\n]+")
_ZH_CLAUSE = re.compile(r"[，,；;：:]")
_EN_SENTENCE = re.compile(r"[^.!?;\n]+(?:\.\d[^.!?;\n]*)*")
_ZH_FILLER = re.compile(r"^(?:对了|另外|还有|而且|其实|嗯|哦|所以|但是|不过|是的|好的|好主意|然后|因为|顺便说一下|顺便)[，,、\s]*")
_EN_CLAUSE = re.compile(r",\s*(?:so|and|but|because|while)\s+(?=I\b)", re.I)
_EN_FILLER = re.compile(r"^(?:by the way|also|oh|ok|okay|well|so|and|but|actually|btw|yes|yeah|hi|hello)\b[,\s]*", re.I)


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    template: str
    category: str
    importance: str = "medium"
    duration: str | None = None
    predicate: str | None = None
    rest: bool = False  # keep the rest of the sentence after the clause (它叫橘子，三岁了…)


def _r(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


_ZH_TIME = r"(?:下周[一二三四五六日天]?|下个?星期[一二三四五六日天]?|下个?月|明天|后天|本周[一二三四五六日天]?|这周[一二三四五六日天]?|周[一二三四五六日天]|月底|年底|\d+月\d+[日号])"
_ZH_RULES = [
    Rule(_r(r"^我对(?P<x>.{1,20}?)过敏"), "用户对{x}过敏", "fact", "high", None, "过敏"),
    Rule(_r(r"^我(?:的名字)?(?:叫|是)(?!了|过|个|一|在)(?P<x>[\u4e00-\u9fff·A-Za-z]{2,8})$"), "用户叫{x}", "fact", "high", None, "名字"),
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

_EN_TIME = r"(?:next (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow|tonight|this (?:week|weekend|friday|month)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|by (?:monday|tuesday|wednesday|thursday|friday|the end of))"
_EN_RULES = [
    Rule(_r(r"\bI(?:'m| am) (?:very |severely |badly )?allergic to (?P<x>[^,;]+)"), "The user is allergic to {x}", "fact", "high", None, "allergic to"),
    Rule(_r(r"\bmy name is (?P<x>[A-Za-z][\w'-]*(?: [A-Z][\w'-]*)?)"), "The user's name is {x}", "fact", "high", None, "name"),
    Rule(_r(r"\b(?:call me|I(?:'m| am) called) (?P<x>[A-Z][\w'-]*)"), "The user's name is {x}", "fact", "high", None, "name"),
    Rule(_r(r"\bI (?:don't|do not|never|can't|cannot|no longer) (?P<v>eat|drink) (?P<x>[^,;]+?)(?: any ?more)?(?=[,;]|$)"), "The user does not {v} {x}", "preference", "high", None, "diet"),
    Rule(_r(r"\bI (?:really |strongly |much |also |usually )?prefer (?P<x>[^,;]+)"), "The user prefers {x}", "preference", "medium", None, "prefers"),
    Rule(_r(r"\bI (?:really |also |absolutely )?(?:hate|dislike|can't stand|don't like|do not like) (?P<x>[^,;]+)"), "The user dislikes {x}", "preference", "medium", None, "dislikes"),
    Rule(_r(r"\bI (?:really |also |absolutely )?(?:like|love|enjoy) (?P<x>[^,;]+)"), "The user likes {x}", "preference", "medium", None, "likes"),
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
_ZH_ASKING = re.compile(r"什么|怎么|为什么|为何|哪(?!怕)|谁|几点|几个|几岁|几天|几次|几号|多少|多久|是否|"
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
    text = re.sub(r"^((?:my|our) \w+|[A-Z][a-z]+) and I\b", r"\1 and the user", text, flags=re.IGNORECASE)
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


def _clauses(sentence: str) -> list[str]:
    """Clauses of a Chinese sentence, fillers dropped; a clause without a subject after a
    我-clause inherits it (我叫林晓，在一家公司当工程师 → 我在一家公司当工程师)."""
    parts = [_ZH_FILLER.sub("", p.strip()) for p in _ZH_CLAUSE.split(sentence)]
    out: list[str] = []
    first_person = False
    for p in parts:
        if not p:
            continue
        if p.startswith("我"):
            first_person = True
        elif first_person and p[0] in "在养不很比最喜讨对每住做是有要想":
            p = "我" + p
        out.append(p)
    return out


def _tidy(x: str) -> str:
    return x.strip().rstrip("。.!！?？;；,，:： ")


class HeuristicExtractor:
    """Operations from patterns alone (no LLM): same shape as the LLM's, source="heuristic"."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def extract(self, turns: Sequence[Turn], *, now: datetime) -> Extraction:
        result = Extraction(language=language_of(" ".join(t.content for t in turns if t.role == "user")))
        max_chars = self.config.extraction.heuristic_max_sentence_chars
        read = self.config.extraction.offline_turn_chars
        for turn in turns:
            if turn.role != "user":
                continue
            content = turn.content[:read]  # a pasted page is read by its start: bounded work
            splitter = _ZH_SENTENCE if language_of(content) == "zh" else _EN_SENTENCE
            for m in splitter.finditer(content):
                sentence = m.group().strip()
                if not sentence or len(sentence) > max_chars:
                    continue
                if _is_command(sentence):
                    continue  # commands() handles these, in both modes
                asked = bool(_QUESTION_END.match(content[m.end():m.end() + 1]))
                if language_of(sentence) == "zh":
                    result.operations.extend(self._zh_clauses(sentence, now, asked=asked))
                    continue
                if asked or _EN_ASKING.match(_EN_FILLER.sub("", sentence)) or _EN_HYPOTHETICAL.match(
                        _EN_FILLER.sub("", sentence)):
                    continue  # a question or a hypothetical states nothing about the user
                for clause in _EN_CLAUSE.split(sentence):
                    op = self.statement(clause, now=now)
                    if op is not None:
                        result.operations.append(op)
        result.operations = _fitting(result.operations, self.config)
        return result

    def statement(self, sentence: str, *, now: datetime) -> Operation | None:
        """The first rule an English sentence (or one Chinese clause) matches, as an ADD.
        Nothing for a question, a hypothetical, or a value that is a negation or a pronoun."""
        if language_of(sentence) == "zh":
            return None
        s = _EN_FILLER.sub("", sentence.strip())
        if _EN_ASKING.match(s):
            return None
        for rule in _EN_RULES:
            m = rule.pattern.search(s)
            if m:
                value = _tidy(m.group("x") or "")
                if (_EN_HYPOTHETICAL.search(s[:m.start()]) or _EN_NO_VALUE.match(value)
                        or (rule.category == "fact" and _EN_NEGATED.match(value))):
                    return None  # "I wonder if I like sushi", "my name is not important"
                groups = {k: _tidy(v or "") for k, v in m.groupdict().items()}
                if "v" in groups:
                    groups["v"] = _THIRD_PERSON.get(groups["v"].lower(), groups["v"].lower())
                groups["x"] = _third_person_en(groups.get("x", ""))
                content = " ".join(rule.template.format(**groups).split())
                return self._add(content + ".", rule, now)
        return None

    def _zh_clauses(self, sentence: str, now: datetime, *, asked: bool = False) -> list[Operation]:
        """Operations from the clauses of a Chinese sentence; `asked`: it ended with "？", so
        its last clause is a question. A question clause states nothing; from a hypothetical
        clause (如果/假如…) on, nothing in the sentence does."""
        clauses = _clauses(sentence)
        for i, clause in enumerate(clauses):
            if _ZH_HYPOTHETICAL.match(clause):
                clauses = clauses[:i]
                break
        if asked and clauses:
            clauses[-1] = ""  # the "？" belongs to the last clause: 我对花生过敏，你推荐什么？
        clauses = [c if c and not _ZH_ASKING.search(c) else "" for c in clauses]
        ops: list[Operation] = []
        i = 0
        while i < len(clauses):
            clause = clauses[i]
            for rule in (_ZH_RULES if clause else ()):
                m = rule.pattern.search(clause)
                if not m:
                    continue
                groups = {k: _tidy(v or "") for k, v in m.groupdict().items()}
                if rule.rest and i + 1 < len(clauses):
                    # the rest of the statement, up to a question clause ("" here)
                    rest = list(clauses[i + 1:])
                    rest = rest[:rest.index("")] if "" in rest else rest
                    groups["x"] = "，".join([groups["x"], *rest])
                    i += len(rest)
                groups["x"] = _third_person_zh(groups["x"])
                ops.append(self._add(rule.template.format(**groups), rule, now))
                break
            i += 1
        return ops

    def _add(self, content: str, rule: Rule, now: datetime) -> Operation:
        pol = self.config.policy
        category = category_for(rule.category, pol) or pol.default_category
        until, priority = retention(rule.duration, category, now, pol)  # seed 002 §4: the type's default
        return Operation(
            "ADD", content=content, category=category,
            score=initial_score(rule.importance, pol), expires_at=until,
            subject="用户" if has_cjk(content) else "user", predicate=rule.predicate,
            confidence=self.config.extraction.heuristic_confidence, source="heuristic", priority=priority,
        )


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
