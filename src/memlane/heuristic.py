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
from datetime import UTC, date, datetime

from memlane import changes, chatter, grammar, validate
from memlane import statements as st
from memlane.clauses import ZH_SENTENCE, Clause, Reader, is_time, opens_with_predicate
from memlane.commands import (
    EN_LEAD_FILLER,
    command,
    is_ack,
    is_command,
    is_command_sentence,
    tail_command,
    units,
)
from memlane.config import Config
from memlane.dates import upcoming
from memlane.en_clauses import EN_SENTENCE
from memlane.extraction import Extraction, Operation, unrepeated
from memlane.models import Turn
from memlane.naming import named_asides
from memlane.policy import category_for, initial_score, retention
from memlane.quoting import unpasted, unquoted
from memlane.spoken import as_meant, offers
from memlane.statements import conjugated, same_words, third_person  # re-exported: jobs, the tests
from memlane.text import cleaned, has_cjk, language_of

_NOW = re.compile(r"现在|如今|目前|\b(?:these days|nowadays|now)\b", re.I)


def _timed(op: Operation, c: Clause, ctx: _Ctx, mine: bool | None = None) -> Operation:
    """The ADD with what the clause says of time (issue 32): the change it tells, if it is the
    user's own ("I moved to…"; not "my brother moved to…"), and when the fact began — the date
    its sentence gives ("since March", "去年十月开始"), else when the user said it — or, told as
    past, when it ended ("until 2021"). `mine`: already known (a clause joined to the one before)."""
    if op.op != "ADD" or not op.content:
        return op
    said = ctx.at or ctx.now
    if mine is None:
        # the user's own: said of the user, or of someone doing something to the user
        # ("我的医生给我换成了西格列汀", "my doctor put me on lisinopril": the user's medication)
        mine = c.about not in ("kin", "other") or bool(re.search(r"(?<=.)用户|(?<=.)\bthe user\b", op.content))
    # a role one person holds for the user changed hands ("my new manager is Sarah"): the user's slot
    mine = mine or changes.new_holder(op.content) is not None
    found = _cue(op.content, c.sentence) if mine else None
    start = changes.since(c.sentence or c.text, said, changed=found is not None)
    return replace(op, change=found, mine=mine, valid_from=start or said, valid_to=changes.until(c.sentence or c.text, said))


def _cue(content: str, sentence: str) -> changes.Cue | None:
    """The change a clause tells, with the sentence that told it (it may name the old value)."""
    found = changes.cue(content)
    if (found is None or found.weak) and _NOW.search(content) and sentence:
        # "我换工作了，现在在宝马上班": the clause says "now", its sentence tells the change; the
        # clause holds the new value, so an ending told beside it ("quit Costa, I tutor now")
        # is a change here, not the end of what the clause names
        told = changes.cue(sentence)
        if told is not None and not told.weak and not told.of:
            found = replace(told, kind="change") if told.kind == "end" else told
    return replace(found, told=sentence) if found is not None and sentence else found


def _today(turn: Turn, now: datetime) -> date:
    """The day the user spoke: what "tomorrow" and "next March" count from."""
    at = turn.created_at or now
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC).date()


@dataclass(frozen=True)
class _Ctx:
    """Where a clause was said: the job's clock, the day the user spoke, whether the message
    sets standing rules ("from now on…"), and the whole message (a plan's date may sit in
    another sentence of it)."""

    now: datetime
    today: date
    standing: bool
    message: str = ""
    offer_reply: str = ""  # the message's first sentence, when it answers the assistant's offer
    question: str = ""  # the assistant's question just before, when it asked one (not an offer)
    first: str = ""  # the message's first sentence: where a bare answer stands
    questions: int = 0  # how many questions the assistant's message asked
    asked_user: bool = False  # one of them asks the user with a question word ("怎么称呼、在哪个城市？")
    at: datetime | None = None  # when the user said it: a fact holds from then unless the text says when
    playing: bool = False  # a game or quiz is on: what the user says bare is a move, not a fact


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
        reader = Reader(runon_chars=self.config.extraction.offline_runon_chars)
        said: list[_Said] = []
        asked = False  # the assistant's last message asked something: a bare reply answers it
        offered = False  # it offered to do something: a bare reply accepts or declines
        standing = False  # the user is setting rules: "另外…" / "also…" in the next message goes on
        order = 0
        question, questions, asked_user = "", 0, False
        asides: list[tuple[str, str]] = []  # the user's people named in passing: "my husband Walt"
        playing = False  # the user started a game or a quiz ("我们来玩飞花令", "quiz me on capitals")
        for turn in turns:
            if turn.role == "assistant":
                offered = offers(turn.content)  # "want me to …?": the reply says yes or no, no fact
                asked = (bool(re.search(r"[?？]\s*$|[吗呢]\s*$", turn.content.strip())) and not st.HOW_FEEL.search(turn.content)
                         and not offered)
                question = grammar.last_question(turn.content) if asked else ""
                questions = len(re.findall(r"[?？]", turn.content)) if asked else 0
                asked_user = asked and grammar.zh_asks_user(turn.content)
                continue  # the assistant's words are not the user's facts
            if turn.role != "user":
                continue
            text = as_meant(unquoted(unpasted(turn.content[: self.config.extraction.offline_turn_chars])),
                            self.config.extraction.offline_runon_words)  # a pasted page: its start
            if st.ZH_RIDDLE.search(text):
                continue  # a riddle to guess: the game's words
            standing = bool(st.ZH_STANDING.search(text) or grammar.en_standing(text)
                            or (standing and st.GOES_ON.match(text.strip())))
            first = next((m.group().strip() for m in ZH_SENTENCE.finditer(text) if m.group().strip()), "")
            ctx = _Ctx(now, _today(turn, now), standing, text, first if offered else "", question, first, questions,
                       asked_user, turn.created_at or now, playing)
            playing = playing or st.starts_game(text)
            asides += named_asides(text)
            items, sentences = self._turn(text, reader, ctx, asked, order)
            said += items
            for k, sentence in sentences:
                said = self._corrected(said, k, sentence, now)
            order += len(sentences) + 1
            asked = offered = False
            question, questions, asked_user = "", 0, False
        ops = unrepeated([replace(s.op, content=cleaned(s.op.content)) if s.op.content else s.op
                          for s in said if s.op is not None])
        ops += self._named(ops, now)
        result.operations = _fitting(ops + self._asides(ops, asides, now), self.config)
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
            if is_command_sentence(sentence):  # commands() handles these, in both modes
                what = (command(sentence) or ("", "", True))[1] or (tail_command(sentence) or ("", ""))[0]
                if what:
                    out.append(_Said(None, sentence, places[sentence], what))
                continue
            kept.append(chatter.material_cut(sentence))
            if st.ZH_MATERIAL_LEAD.search(sentence) or st.EN_MATERIAL_LEAD.match(sentence):
                kept[-1] = ""
                break  # "给你讲个笑话：…", "story time: …": what follows is told, not the user's own
        skip = ""
        follows = True  # the clause before gave a statement: a bare clause after it may go on with it
        for clause in reader.read("\n".join(kept), after_question=asked):
            where = places.get(clause.sentence, order + len(places))
            if clause.sentence == skip:
                continue
            if st.hypothetical(clause):
                skip = clause.sentence  # from a hypothetical clause on, nothing in the sentence holds
                continue
            if follows and _joins(clause, out):
                last = out[-1]  # the joined words may tell the change ("做了全飞秒，终于不用戴眼镜了")
                if last.op is not None:
                    out[-1] = replace(last, op=_timed(last.op, clause, ctx, mine=last.op.mine))
                continue
            op = self._clause(clause, ctx)
            if (op is not None and st.en_there(op.content or "") and out and (before := out[-1].op) is not None
                    and (before.content or "").startswith("The user")):  # "…, I live there now": the place said before
                out[-1] = replace(out[-1], op=replace(before, content=st.there_joined(before.content or "", op.content or "")))
                continue
            if op is None and clause.lang == "zh" and st.zh_to_the_chat(clause.said):
                follows = False  # "我知道费利威，就是贵": the verdict goes with the reply, no statement
            elif op is not None:
                follows = True
            if not ctx.playing and st.starts_game(clause.said):
                ctx = replace(ctx, playing=True)  # "我们来玩飞花令，我先：床前明月光": the moves follow
            if op is not None and _after_rule(clause, op, out, _answers_user(clause, ctx)):
                continue
            if op is not None:
                out.append(_Said(_timed(op, clause, ctx), clause.sentence, where))
        return out, sorted((k, sentence) for sentence, k in places.items())

    # -- one clause --

    def _clause(self, c: Clause, ctx: _Ctx) -> Operation | None:
        """The operation one clause gives, if it says something about the user."""
        addressed = c.lang == "zh" and c.about == "other" and re.match(r"^(?:你|您)", c.said)  # "你跟我说话简单点": an ask
        if c.asked or (c.about == "other" and not addressed) or not c.text or st.consumed(c) or (ctx.playing and (c.carried or c.about == "answer")):
            return None
        op = self._zh_clause(c, ctx) if c.lang == "zh" else self._en_clause(c, ctx)
        return op if op is None or _holds(op) else None

    def _zh_clause(self, c: Clause, ctx: _Ctx) -> Operation | None:
        now, today, standing = ctx.now, ctx.today, ctx.standing
        text = c.text
        if (st.ZH_STANDING_LEAD.match(c.said) and not st.ZH_ASKING.search(text.rstrip("吧"))
                and not grammar.ZH_NEXT_TIME_TASK.match(c.said)):
            return self._add("用户要求：" + st.third_person_zh(st.tidy(c.said)), st.STANDING_RULE, now)  # "以后回答我都用中文吧"
        if st.ZH_ASKING.search(text) or re.search(r"啥(?!都)", text):
            return None
        said = c.said if c.carried else re.sub(r"^我", "", text)
        if (st.ZH_REQUEST.search(said) and (c.carried or not st.ZH_ENDING_REQUEST.search(said)) or st.ZH_REQUEST.match(text)
                or (st.ZH_ENDING_REQUEST.search(said) and st.ZH_ANSWER_VERB.match(said))):
            task = grammar.ZH_TASK_ASK.match(re.sub(r"^(?:你|您)", "", said))  # "帮我想个菜单", "提醒我一下": for now
            if (((standing and not task) or st.ZH_STANDING.search(text)) and st.ZH_HOW_TO_ANSWER.search(said)) or (
                    st.ZH_ANSWER_FORM.search(said) and not st.zh_today(c.sentence)):  # "今天网不好，回复简短点": for today
                ask = re.sub(r"^(?:你|您)(?:就|也|以后)?", "", st.tidy(c.said))  # the one asked is the assistant
                return self._add("用户要求：" + st.third_person_zh(re.sub(r"[啊呀哈吧]+$", "", ask)), st.STANDING_RULE, now)
            return None  # a request for now ("帮我查一下"), or a courtesy ("以后请多关照")
        if (st.ZH_WISH_NOW.match(text) or st.ZH_TRY.search(said) or st.ZH_BARE_OPINION.match(text)
                or st.ZH_PROPOSAL.match(text) or st.ZH_PROPOSAL.match(said) or st.ZH_KNOWING.match(said) or (c.carried and st.ZH_AT_HAND.match(said))
                or st.ZH_LIST_ITEM.match(st.tidy(said)) or st.ZH_GAME_TURN.match(st.tidy(text))):
            return None  # "想找几首…的歌", "下次带去给指挥听听", "我觉得不专业", "第三条我会加上": the moment's
        if (c.about == "kin" and st.ZH_HEARSAY.match(text)) or st.ZH_ABOUT_CHAT.search(text) or st.ZH_WE_EPISODE.match(st.tidy(text)) or st.ZH_TASK.search(text):
            return None  # "我同事说他邻居家小孩也花生过敏": a third person's news
        verdict = st.ZH_VERDICT.match(said)
        if (verdict is not None and st.zh_rule(text) is None and not chatter.zh_about_the_chat(said) and not re.match(r"[这那你它他她]", said) and not st.zh_today(said)
                and not st.ZH_MOMENT.search(verdict.group("n"))):  # "今天天气不错": the day's, not a taste
            return self._add("用户觉得" + st.tidy(said), st.Rule(re.compile(""), "", "preference", "medium", None, "喜好"), now)
        if (c.carried and c.about == "user" and st.in_question(c) and st.ZH_SETTING.match(said)
                and not st.ZH_HEALTH.search(said)):
            return None  # "家里有豆腐和西兰花，做啥好": what is at hand sets a question; "有糖尿病，…哪个好" is a fact
        found = st.zh_rule(text)
        if found is not None and not (c.carried and found[0].predicate == "名字"):  # "…一条金毛，叫旺财": the dog's
            rule, m = found
            groups = {k: st.tidy(v or "") for k, v in m.groupdict().items()}
            groups["x"] = st.third_person_zh(groups["x"])
            content = rule.template.format(**groups)
            if rule.template == "用户{x}" and groups["x"].count("用户"):
                content = groups["x"]  # "下周三我要…": the user is named in the words already
            return self._dated_plan(content, rule, ctx, (text, c.sentence))
        if chatter.zh_no_fact(c, opens_message=re.sub(r"^[\W喂嘿哎诶]+", "", ctx.message).startswith(c.said)) or (
                ctx.offer_reply == c.sentence and c.carried):
            return None  # "同事都这么叫我", "思路可以", "要的" (yes to an offer): nothing of the user's
        if not self._zh_says_something(c, said):
            return None
        generic = st.zh_generic(text, today)
        content = st.third_person_zh(st.tidy(text))
        refused = grammar.zh_yes_no_answer(ctx.question, c.said) if _opens(c, ctx) and c.carried else None
        if is_time(re.sub(r"^我|[吧啊呀呢哈]+$", "", st.tidy(text))):  # "后天": when, of what the question asked, or of nothing
            content = (grammar.zh_when_answer(ctx.question, c.said) if _opens(c, ctx) else None) or ""
            if not content:
                return None
        elif refused is not None:
            content = refused  # "安卓能接受吗？" + "不接受": the question says what is refused
        elif c.carried and c.about == "user" and not opens_with_predicate(c.said):
            bare = grammar.zh_bare(c.said, c.sentence, opens=_opens(c, ctx), question=ctx.question,
                                   questions=ctx.questions, listed=_answers_user(c, ctx))  # "成都", "咖啡也戒了快半年了": the user's, said bare
            if bare is None:
                return None
            content = bare
        return self._generic_add(content, generic, ctx, (text, c.sentence),
                                 health_today=bool(st.zh_today(text) and st.ZH_HEALTH.search(text)))

    @staticmethod
    def _zh_says_something(c: Clause, said: str) -> bool:
        body = st.tidy(said)
        size = len(re.findall(r"[\u4e00-\u9fffA-Za-z0-9]", body))
        if st.ZH_HEDGE.match(body) or size < 2 or st.ZH_EMPTY.match(body) or st.ZH_CRAVING.match(body):
            return False  # "到了", "我知道", "想吃火锅了": the moment, not the person
        if st.zh_today(c.text) or (c.carried and st.zh_today(c.sentence)) or chatter.zh_days_story(c):
            return bool(st.ZH_HEALTH.search(c.text))  # today's condition holds a day; today's mood, not at all
        return not (st.ZH_MOMENT.search(body) and len(body) <= 10)

    def _en_clause(self, c: Clause, ctx: _Ctx) -> Operation | None:
        now, today, standing = ctx.now, ctx.today, ctx.standing
        s = st.EN_ASK_AFTER.sub("", st.EN_TRAILING.sub("", st.tidy(c.text)))
        if st.EN_ASKING.match(s):
            return None
        if st.en_quoted(s) or st.EN_ABOUT_CHAT.search(s) or (
                c.about == "kin" and st.EN_TODAY.search(s) and not (st.EN_HEALTH.search(s) or st.EN_LASTING.search(s))):
            return None  # "and 'two tickets please'": words to work on, not the user's
        if c.about in ("request", "none"):
            signed = st.EN_SIGNED.pattern.search(s)
            if signed is not None:  # "sign it Dana Whitfield": a name, given in passing
                return self._add(st.EN_SIGNED.template.format(x=signed.group("x")) + ".", st.EN_SIGNED, now)
            if (standing and (c.about == "request" or st.EN_BARE_ASK.search(s))) or (
                    c.about == "request" and (st.EN_STANDING.search(s) or (
                        st.EN_ANSWER_FORM.match(s) and not st.EN_TODAY.search(c.sentence) and not st.EN_THIS_ONE.match(s)))):
                ask = st.third_person_en(st.EN_POLITE.sub("", s))
                if len(re.findall(r"[A-Za-z0-9]+", ask)) < 2 or ask.lower() in ("please", "pls", "plz"):
                    return None  # ", please", "thanks": politeness, no rule
                return self._add(f"The user asks: {ask}.", st.STANDING_RULE, now)
            return None
        if st.EN_WOULD.match(s):
            return None  # "I'd pick fly for sure": what the user would do, asked of a wish or a game
        s = st.before_doubt(s)
        bare = st.EN_POINTER_PHRASE.sub("", s)  # "is flying in from Perth for it": the trip is named elsewhere
        s = bare if len(bare.split()) >= 4 and not re.search(r"\b(?:it|them|this|that|him|her)\b", bare, re.I) else s
        s = st.EN_WE_BOOKED.sub("we have ", s)
        if st.EN_WE_LASTING.match(s):
            s = re.sub(r"^we\b", "I", s, flags=re.I)  # "we moved to Leeds": the user moved, with the family
        if (not s or st.EN_NEED_OUTPUT.search(s) or st.EN_WE_EPISODE.match(s) or st.EN_HEARSAY.match(s)
                or st.EN_TASK.search(s)):
            return None  # "if …", "need invitation wording", "we moved it": no standing fact of the user
        if c.about == "answer":
            if st.EN_MOMENT.search(s) or re.search(r"\byou\b", s, re.I) or (len(s.split()) < 2 and not ctx.question):
                return None
            said = (grammar.en_answer(ctx.question, s, framed_only=len(s.split()) < 2) if ctx.question
                    else f"The user: {s}.")  # else an item of "about me:"
            if said is None:
                return None
            return self._generic_add(said, st.Generic("fact", None, "answer"), ctx, (s,))
        if any(rule.pattern.search(s) for rule in st.EN_RULES):
            op = self.statement(s, now=now, today=today, context=c.sentence, message=ctx.message)
            return None if op is None or st.EN_POINTS_AWAY.search(op.content or "") else op
        if st.EN_MOMENT.search(s) or (st.EN_TODAY.search(s) and not st.EN_HEALTH.search(s)) or chatter.en_no_fact(
                c, s, dated=any(upcoming(t, today) for t in (s, c.sentence))):
            return None
        content = st.third_person(s)
        if (st.EN_OBJECT_PRONOUN.match(content) or len(re.findall(r"[A-Za-z0-9]+", content)) < 4
                or st.EN_POINTS_AWAY.search(content)):
            return None  # "The user loved it.", "gets these once a month": a thing said elsewhere
        generic = st.en_generic(s, today)
        return self._generic_add(content, generic, ctx, (s, c.sentence),
                                 health_today=bool(st.EN_TODAY.search(c.sentence) and st.EN_HEALTH.search(s)))  # "…so keep it short today"

    def statement(self, sentence: str, *, now: datetime, today: date | None = None,
                  context: str = "", message: str = "") -> Operation | None:
        """The first rule an English clause matches, as an ADD. Nothing for a question, a
        hypothetical, or a value that is a negation or a pronoun. `context`: the whole
        sentence, where a plan's date may sit outside its clause."""
        if language_of(sentence) == "zh":
            return None
        s = EN_LEAD_FILLER.sub("", sentence.strip())
        if st.EN_ASKING.match(s):
            return None
        for rule in st.EN_RULES:
            m = rule.pattern.search(s)
            if m and rule.predicate == "family" and st.en_generic(s, today or now.date()).category == "todo":
                rule = replace(rule, category="todo", duration="30d")  # "my sister is visiting this weekend": a plan
            if m:
                value = st.tidy(st.EN_VALUE_END.sub("", m.group("x") or m.groupdict().get("y") or ""))
                if (st.EN_HYPOTHETICAL.search(s[:m.start()]) or st.EN_NO_VALUE.match(value)
                        or (rule.category == "fact" and st.EN_NEGATED.match(value))):
                    return None  # "I wonder if I like sushi", "my name is not important"
                groups = {k: st.tidy(v or "") for k, v in m.groupdict().items()}
                groups["x"], groups["y"] = value, ""  # "y": a second phrasing's value, said as x
                if "v" in groups:
                    groups["v"] = st.THIRD_PERSON.get(groups["v"].lower(), groups["v"].lower())
                if rule.predicate == "plans" and groups["v"] in ("has to", "needs to", "must") and not any(
                        upcoming(t, today or now.date()) for t in (sentence, context) if t):
                    return None  # "I need to stock up on snacks": the task at hand, no plan with a day
                groups["x"] = st.third_person_en(groups.get("x", ""))
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
        fix = st.correction(sentence)
        if fix is None:
            return self._day_corrected(said, k, sentence, now)
        x, y = fix
        restating = [(s.op.content or "") for s in said if s.order == k and s.op is not None and x.lower() in (s.op.content or "").lower()]
        out: list[_Said] = []
        fixed_any = False
        for s in said:
            words = (s.op.content if s.op is not None else s.text) or ""
            if s.order >= k or y.lower() not in words.lower() or (s.op is not None and s.op.op == "FORGET"):
                out.append(s)
                continue
            # a correction said bare ("是下周四 10月22 不是周五") restates nothing: it mends what came before
            restated = any(not st.bare_fix(r, x, y) for r in restating)
            if s.op is None:
                fixed = st.replaced(s.text, y, x)
                out.append(_Said(Operation("FORGET", query=s.text, source="user",
                                           reason=f"the user corrected it: {st.tidy(sentence)[:200]}"), "", s.order))
                out.append(_Said(_remember(_Topic(fixed), self.config, now), s.sentence, s.order, fixed))
            elif not restated:
                out.append(replace(s, op=replace(s.op, content=st.replaced(words, y, x))))
                fixed_any = True
        if fixed_any:  # the correction's own words were used to mend: they are no statement of their own
            out = [s for s in out if not (s.order == k and s.op is not None and x.lower() in (s.op.content or "").lower()
                                          and y.lower() in (s.op.content or "").lower())]
        return out

    @staticmethod
    def _day_corrected(said: list[_Said], k: int, sentence: str, now: datetime) -> list[_Said]:
        """A correction naming only the right day ("不是不是，是下周六，8月15号") puts it in place
        of the day in the user's last dated statement before it."""
        right = st.day_correction(sentence)
        if right is None:
            return said
        for i in range(len(said) - 1, -1, -1):
            s = said[i]
            content = s.op.content if s.op is not None else None
            m = st.DAY_SAID.search(content or "")
            if s.order >= k or s.op is None or content is None or m is None:
                continue
            fixed = st.day_replaced(content, m, right, now.date())
            return [*said[:i], replace(s, op=replace(s.op, content=fixed)), *said[i + 1:]]
        return said

    def _named(self, ops: list[Operation], now: datetime) -> list[Operation]:
        """A person or pet the user names in passing, kept on its own: "我和男朋友阿杰下个月要去
        日本" also says who 阿杰 is, and that outlives the trip."""
        out: list[Operation] = []
        have = " ".join(op.content or "" for op in ops)
        for op in ops:
            content = op.content or ""
            m = st.ZH_NAMED_KIN.search(content.replace("用户和", "用户")) or st.EN_NAMED_KIN.match(
                re.sub(r"^The user's\b", "my", content))
            if m is None or op.category == "fact" and op.expires_at is None:
                continue
            kin, name = m.group("kin"), m.group("name")
            fact = f"用户的{kin}叫{name}" if has_cjk(content) else f"The user's {kin.lower()} is named {name}."
            if fact not in have:
                out.append(self._add(fact, st.Rule(re.compile(""), "", "fact", "medium", None, "family"), now))
                have += fact
        return out

    def _asides(self, ops: list[Operation], asides: list[tuple[str, str]], now: datetime) -> list[Operation]:
        """Whom the user named in passing ("my husband Walt put up a fence": a day's story, but
        who Walt is lasts), kept on its own when no memory names them yet."""
        out: list[Operation] = []
        have = " ".join(op.content or "" for op in ops)
        for who, name in asides:
            if name not in have:
                out.append(self._add(f"The user's {who} is named {name}.",
                                     st.Rule(re.compile(""), "", "fact", "medium", None, "family"), now))
                have += " " + name
        return out

    # -- durations --

    @staticmethod
    def _day(rule: st.Rule, texts: Sequence[str], today: date) -> date | None:
        """The last day a plan's words name (its clause first, then its sentence)."""
        if rule.duration is None:
            return None
        return next((d for t in texts if t and (d := upcoming(t, today)) is not None), None)

    def _dated_plan(self, content: str, rule: st.Rule, ctx: _Ctx, texts: Sequence[str]) -> Operation:
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
            op = replace(op, content=st.dated(content, ctx.today))
        return op

    def _generic_add(self, content: str, g: st.Generic, ctx: _Ctx, texts: Sequence[str],
                     *, health_today: bool = False) -> Operation:
        rule = st.Rule(re.compile(""), "", g.category, "medium", g.duration, g.predicate)
        if health_today:  # "今天嗓子发炎了": true today, not next week
            return replace(self._add(content, rule, ctx.now), expires_at=st.until(ctx.today, 0))
        return self._dated_plan(content, rule, ctx, texts)

    def _add(self, content: str, rule: st.Rule, now: datetime, day: date | None = None) -> Operation:
        pol = self.config.policy
        category = category_for(rule.category, pol) or pol.default_category
        expires, priority = retention(rule.duration, category, now, pol)  # seed 002 §4: the type's default
        if day is not None:  # a dated plan: until its day is over, and a little after
            expires = st.until(day, self.config.extraction.plan_margin_days)
        return Operation(
            "ADD", content=content, category=category,
            score=initial_score(rule.importance, pol), expires_at=expires,
            subject="用户" if has_cjk(content) else "user", predicate=rule.predicate,
            confidence=self.config.extraction.heuristic_confidence, source="heuristic", priority=priority,
        )


def _holds(op: Operation) -> bool:
    """Whether a clause's memory has a predicate about the user that holds past the moment
    (`memlane.grammar.holds`); a rule for the assistant is read by its own patterns."""
    content = op.content or ""
    return op.category == "rule" or content.startswith(("The user asks", _ZH_RULE_LEAD)) or grammar.holds(content)


def _opens(c: Clause, ctx: _Ctx) -> bool:
    """Whether the clause is the first words of its message: what answers the assistant's question."""
    return c.sentence == ctx.first and 0 <= ctx.first.find(c.said) <= 3


def _answers_user(c: Clause, ctx: _Ctx) -> bool:
    """Whether the clause stands in the first sentence of a reply to the assistant's question
    about the user: an item of the answer ("深圳", "布洛芬可以"), wherever it stands in that sentence."""
    return ctx.asked_user and c.sentence == ctx.first and c.carried


def _joins(c: Clause, out: list[_Said]) -> bool:
    """A Chinese clause that only goes on about the statement before it ("下周三要去北京出差，
    大概待三天，周五晚上回来") joins it; one opened by a conjunction ("也对芒果过敏"), or
    with a fact a rule knows, stands alone."""
    if c.lang != "zh" or not c.carried or c.chained or c.asked or not out or c.about == "other":
        return False
    last = out[-1]
    dose = st.ZH_DOSE.match(st.tidy(c.said)) is not None  # "叶酸已经在吃了，每天一粒": how much of it
    if last.op is None or last.sentence != c.sentence or last.op.category == "rule" or (
            st.zh_rule(c.text) is not None and not dose):
        return False
    said = st.tidy(c.said)
    if (st.ZH_ASKING.search(said) or st.ZH_REQUEST.search(said) or st.ZH_HEDGE.match(said) or st.ZH_TASK.search(said)
            or (st.ZH_MOMENT.search(said) and len(said) <= 4) or st.consumed(c)
            or (st.in_question(c) and st.ZH_SETTING.match(said))):
        return False
    content = last.op.content or ""
    out[-1] = replace(last, op=replace(last.op, content=f"{st.tidy(content)}，{st.third_person_zh(said)}"))
    return True


_ZH_RULE_LEAD = "用户要求："


def _after_rule(c: Clause, op: Operation, out: list[_Said], answering: bool = False) -> bool:
    """A Chinese clause said after a rule in the same sentence: a bare "how" joins the rule
    ("以后别给我发那么长，简短点": one rule); a clause without a subject of its own is the
    reason for it ("别叫我亲，听着跟淘宝客服似的") and is no fact. True: nothing more to keep."""
    last = out[-1] if out else None
    if c.lang != "zh" or last is None or last.op is None or last.sentence != c.sentence:
        return False
    before = last.op.content or ""
    if not before.startswith(_ZH_RULE_LEAD):
        return False
    content = op.content or ""
    if content.startswith(_ZH_RULE_LEAD) and len(st.tidy(c.said)) <= 4:  # "简短点": how, said of the rule before
        out[-1] = replace(last, op=replace(last.op, content=f"{st.tidy(before)}，{content[len(_ZH_RULE_LEAD):]}"))
        return True
    # a clause with a predicate of its own ("做外贸的"), or an item answering the assistant, is no reason
    return (not content.startswith(_ZH_RULE_LEAD) and c.carried and st.zh_rule(c.text) is None
            and not answering and not grammar.zh_topic_fact(c.said))


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
    return _fitting([op for _, op in _read_commands(turns, config, now, after_seq)], config)


def forget_requests(turns: Sequence[Turn], config: Config, *, now: datetime,
                    after_seq: int = 0) -> list[tuple[int, str]]:
    """(seq of the user's turn, what it asks to forget) for each "forget …" / "别记这个" in
    the turns after `after_seq`, read as `commands` reads them (issue 30)."""
    return [(seq, op.query or "") for seq, op in _read_commands(turns, config, now, after_seq)
            if op.op == "FORGET" and op.query]


def _read_commands(turns: Sequence[Turn], config: Config, now: datetime,
                   after_seq: int) -> list[tuple[int, Operation]]:
    """`commands`, each operation with the seq of the turn that said it."""
    ops: list[tuple[int, Operation]] = []
    topic = _Topic()
    asked = False  # the user's last message only asked: the answer is the thing under discussion
    for turn in turns:
        if turn.role == "assistant":
            if (asked or not topic.text) and not is_ack(turn.content):
                topic = _Topic(st.tidy(turn.content), own=False)
            asked = False
            continue
        if turn.role != "user":
            continue
        read = units(turn.content[: config.extraction.offline_turn_chars], config.extraction.heuristic_max_sentence_chars)
        said = [t for k, t in read if k == "say"]
        here = _Topic(_joined(said)) if said else topic
        if turn.seq > after_seq:
            for kind, what in read:
                if kind in ("say", "ask"):
                    continue
                ref = _Topic(what) if what else here
                if not ref.text:
                    continue
                if kind.startswith("remember"):
                    ops.append((turn.seq, _remember(ref, config, now)))
                else:
                    # remembered and forgotten in the same batch: never stored at all
                    gone = _remember(ref, config, now).content
                    ops = [(seq, op) for seq, op in ops
                           if not (op.op == "ADD" and op.reason == _REMEMBERED and op.content == gone)]
                    ops.append((turn.seq, Operation("FORGET", query=ref.text, source="user",
                                                    reason=f"the user asked to forget: {st.tidy(turn.content)[:200]}")))
        explicit = [w for k, w in read if k in ("remember", "forget") and w]
        if said or explicit:
            topic, asked = (here if said else _Topic(explicit[-1])), False
        elif any(k == "ask" for k, _ in read):
            asked = True
    return ops


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
    content = st.third_person(ref.text) if ref.own else ref.text
    return Operation(
        "ADD", content=content, category=guess.category if guess else pol.default_category,
        score=initial_score("high", pol), expires_at=guess.expires_at if guess else None,
        priority=guess.priority if guess else None,
        subject=guess.subject if guess else None, predicate=guess.predicate if guess else None,
        confidence=1.0, source="user", pinned=True, verified=True, reason=_REMEMBERED,
    )


__all__ = ["HeuristicExtractor", "commands", "conjugated", "forget_requests", "is_ack", "is_command", "same_words",
           "third_person"]
