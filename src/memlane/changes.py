"""Facts that change, on the write path (issue 32): which new memory replaces which old one.

The offline extractor marks a statement that tells a change — "moved to", "switched to", "no
longer", "quit", "搬到", "换成", "不再", "辞职", "已经不在…了" — with its `Cue`, and the sentence
that told it (which may name the old value the memory leaves out).
At merge time (`memlane.jobs`) `judge` looks for the memory it replaces among the scope's
active ones: one about the same thing with a different value. That is read from two sides,
neither a list of phrases to expect:

- the words both share once the subject, the cue and time words are left out ("用户的医生…
  换成西格列汀" and "用户的医生让用户吃二甲双胍" share 医生; "no longer doing adult nursing" and
  "…exam for adult nursing" share nursing), plus the slot both name (`FRAMES`: where the
  user lives, works, whom they are with, what they drive, what they eat — a predicate's words,
  so "moved to Berlin" and "lives in Munich" are both about home);
- with e5, the embedder's similarity of the old memory to the new one with its cue words
  removed (`policy.change_sure_by_model` / `change_unsure_by_model`); another embedder (the
  tests' hash one) has no such scale, and the words decide alone.

Some cues are narrower. "Now", "these days", 现在 are weak: they close a memory only where the
statement gives an exclusive slot a value other than the old memory's (`slot_values`: "lives in
Leeds now" closes "lives in York"; "I'm now thinking about dinner", "in Paris now for a
conference" close nothing). A new holder of a role one person holds for the user ("my new
manager is Sarah", 新经理) closes who held it, not what they did; a breakup closes the partner
it names; a sale closes owning the thing, not using it. A partner's, kin's or friend's news
changes no slot of the user's but the partner.

One sure candidate is superseded; two, or one only half sure, are flagged for review (the new
memory's metadata `{"may_supersede": {"ids": [ids], "at": …}}`), never resolved silently. A new
memory without a cue that fills an exclusive slot (home, employer, partner, vehicle, diet)
with another value than an old one is flagged, never superseded.

`since` reads when a change began from the text ("since March", "去年十月开始", "last week I
moved"), `until` when a fact told as past ended ("I lived in Dayton until 2021"), both by
`memlane.dates` against the time the turn was said; `lenient_date` reads an LLM's date.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import cached_property
from typing import Literal

from memlane.dates import Period, Span, mentioned_period, upcoming
from memlane.slots import (
    FRAMES,
    TEMPORARY,
    about_partner,
    about_someone_else,
    frame_word,
    frames,
    holder,
    new_holder,
    slot_values,
    words,
)
from memlane.text import CJK_RUN, has_cjk

CueKind = Literal["change", "end", "again"]


@dataclass(frozen=True)
class Cue:
    """A statement's words that tell a change: `kind` "change" (a new value: moved to,
    switched to, 换成), "end" (the old one ended: no longer, quit, 不再, 辞职) or "again" (an
    ended one is back: back on, 又开始, 复吸); `words` as found, left out when comparing.

    `weak`: "now", "these days", 现在 — words that often change nothing ("I'm now thinking
    about dinner"): such a cue closes a memory only where the statement gives an exclusive
    slot another value than the old memory's (`slot_values`). `of`: what the cue changes when
    it is narrower than "the thing named": "thing" (sold: what the user owned of it),
    "holder:<role>" (my new manager: who holds a role one person holds for the user).
    `told`: the sentence that told it, which may name the old value ("二甲双胍吃了胃不舒服，
    医生给我换成西格列汀了")."""

    kind: CueKind
    words: str
    weak: bool = False
    of: str = ""
    told: str = field(default="", compare=False)


# English: read on the memory's words ("The user moved to…", "…now the user…")
_EN_END = re.compile(
    r"n't \w+(?: [\w'-]+){0,3} any ?more\b|"
    r"\b(?:no longer|not \w+(?: [\w'-]+){0,3} any ?more|quit|quitting|stopped|gave up|has given up|broke up|split up|"
    r"left (?:(?:the user's|my|his|her|their) (?:job|position|role|company|employer|team)|(?-i:[A-Z]))|"
    r"was laid off|got laid off|been laid off|retired from|dropped out of|got divorced|divorced)\b", re.I)
_EN_AGAIN = re.compile(r"\b(?:back on|back to|went back to|started \w+ing again|(?<=\w )again\b|relapsed)\b", re.I)
_EN_CHANGE = re.compile(
    r"\b(?:moved|moving|relocated|has moved|have moved) (?:to|into|down to|up to|back to|over to|out)\b|"
    r"\bswitched (?:to|over to|from)\b|\bchanged (?:to|jobs|careers|over to)\b|\binstead of\b|"
    r"\bstarted (?:working (?:at|for|as)|work (?:at|for)|a new job|the new job|at)\b|\bnew job\b|\bjoined\b|\bgot promoted\b|"
    r"\bpromoted to\b|"
    r"\bgot (?:engaged|married)\b|\bis (?:now )?(?:engaged|married) to\b|\bnew (?:place|flat|apartment|house|car|phone)\b",
    re.I)
# "now" and its kin: weak (see `Cue`); "right now", "from now on", "for now", "just now" are the moment
_EN_WEAK = re.compile(r"\b(?:these days|nowadays)\b|(?<!\bright )(?<!\bfrom )(?<!\bfor )(?<!\bjust )(?<!\buntil )"
                      r"(?<!\bby )\bnow\b(?! on\b)", re.I)
# Chinese
_ZH_END = re.compile(r"不再|再也不|不用再|不用(?=[\u4e00-\u9fff]{1,6}了)|已经不|早就不|不在(?=[\u4e00-\u9fff]{1,8}?(?:干|做|上班|工作|住|读|练|学)?了)|"
                     r"戒(?!指)|辞职|辞了|离职|被裁|裁员|分手|分了|离婚|退了|停了|不干了|不做了|不练了|不学了")
_ZH_AGAIN = re.compile(r"又开始|又回到|重新开始|又恢复|复吸|又[抽喝吃]上")
_ZH_CHANGE = re.compile(r"搬到|搬去|搬回|搬出去|搬家|换成|换到|换了|改成|改到|改吃|改喝|改打|改去|改用|改练|改学|改[为做]|"
                        r"现在改|转正|跳槽|入职|升职|升了|当上|换工作|结婚了|订婚了|领证|在一起了|开始[\u4e00-\u9fff]{1,4}了")
_ZH_WEAK = re.compile(r"现在|如今|目前")

# what the user owned, sold: "sold the/my car", "把车卖了", "特斯拉卖掉了" (an ending of that thing only)
_EN_SOLD = re.compile(r"\bsold (?:the user's|the|my|our|his|her|their)(?: old)? (?P<t>[\w-]+(?: [\w-]+)?)", re.I)
_ZH_SOLD = re.compile(r"把(?P<t>[\u4e00-\u9fffA-Za-z0-9]{1,8}?)(?:给)?卖(?:掉)?了|(?P<t2>[\u4e00-\u9fffA-Za-z0-9]{1,8}?)(?:已经)?卖掉了|"
                      r"(?P<t3>[\u4e00-\u9fffA-Za-z0-9]{1,8}?)(?:转手|出手)了")
_EN_SOLD_VERB = re.compile(r"\bsold\b", re.I)
_ZH_SOLD_VERB = re.compile(r"卖掉了|卖了|转手了|出手了")


def cue(content: str) -> Cue | None:
    """The change a statement tells, if it tells one (ending first: "不再喝咖啡，改喝绿茶"
    ends the coffee and begins the tea, and what it replaces is the coffee); a new holder of a
    role ("my new manager is Sarah"); else a weak cue ("now", 现在), if any."""
    zh = has_cjk(content)
    if (held := new_holder(content)) is not None:
        return Cue("change", "新" if zh else "new", of=f"holder:{held[0]}")
    if (_ZH_SOLD if zh else _EN_SOLD).search(content) is not None:
        return Cue("end", "卖" if zh else "sold", of="thing")
    order = (("again", _ZH_AGAIN), ("end", _ZH_END), ("change", _ZH_CHANGE)) if zh else (
        ("again", _EN_AGAIN), ("end", _EN_END), ("change", _EN_CHANGE))
    for kind, pattern in order:
        for m in pattern.finditer(content):
            if not _unsaid(content, m.start(), zh):
                return Cue(kind, m.group())  # type: ignore[arg-type]
    for m in (_ZH_WEAK if zh else _EN_WEAK).finditer(content):
        if not _unsaid(content, m.start(), zh):
            return Cue("change", m.group(), weak=True)
    return None


# a change denied, wished, weighed or planned is none: "not moving to Paris", "thinking about
# moving", "might move", "没有搬到", "不打算搬到", "想搬到", "差点辞职" (the word before the cue, in
# its clause). A change told with its date ahead ("moving to Leeds next month") is one: `since`
# dates it.
_EN_UNSAID = re.compile(
    r"\b(?:not|never|n't|no|nor|neither|thinking (?:about|of)|thought about|considering|considered|consider|"
    r"(?:plan|plans|planned|planning|want|wants|wanted|hope|hopes|hoped|hoping|intend|intends|intending|"
    r"expect|expects|decided not|would like|'d like|wish|wishes|need|needs|try|tries|trying|tried) to|"
    r"might|may|could|would|should|'d|wanna|maybe|perhaps|possibly|almost|nearly|dream(?:s|ing|ed)? (?:of|about)|"
    r"tempted|if|unless|whether|about to)\b|n't\b", re.I)
_ZH_UNSAID = re.compile(r"没有|没|不会|不打算|不想|不要|不准备|不能|别|差点|险些|想|打算|准备|考虑|计划|可能|也许|或许|如果|要是|假如|"
                        r"希望|梦想|说不定|犹豫|是否|要不要|会不会|能不能|该不该")
_CLAUSE_START = re.compile(r"[,.;:!?，。；：！？]|\b(?:but|and|so|then)\b|但|但是|可是|不过|然后|所以", re.I)


def _denied(content: str) -> bool:
    """Whether a statement names a change only to deny, wish or plan it (`_unsaid`)."""
    zh = has_cjk(content)
    return any(pattern.search(content) is not None
               for pattern in ((_ZH_END, _ZH_CHANGE) if zh else (_EN_END, _EN_CHANGE, _EN_PLAIN_CHANGE)))


# a change's verb as a plan or a denial says it ("might move to", "didn't switch to")
_EN_PLAIN_CHANGE = re.compile(r"\b(?:move|relocate|switch|change|quit|leave|join|marry|divorce|sell)\b", re.I)


def _unsaid(content: str, at: int, zh: bool) -> bool:
    """Whether the change cue at `at` is denied, wished or planned in its clause (see above)."""
    start = max((m.end() for m in _CLAUSE_START.finditer(content, 0, at)), default=0)
    before = _SURPRISE.sub(" ", content[start:at])  # "没想到会搬到杭州": it happened, unlooked for
    return (_ZH_UNSAID if zh else _EN_UNSAID).search(before) is not None


_SURPRISE = re.compile(r"没(?:有)?想到|想不到|没(?:有)?料到|万万没想到|\b(?:never|didn't|did not) (?:thought|think|expect(?:ed)?)\b"
                       r"(?: (?:i'd|the user would|to))?", re.I)


def cue_words(content: str) -> list[str]:
    """Every cue's words in the text (all of them are left out when comparing)."""
    pats = (_ZH_AGAIN, _ZH_END, _ZH_CHANGE, _ZH_WEAK, _ZH_SOLD_VERB) if has_cjk(content) else (
        _EN_AGAIN, _EN_END, _EN_CHANGE, _EN_WEAK, _EN_SOLD_VERB)
    return [w for p in pats for m in p.finditer(content) for w in _ANY_MORE.sub(r"\1 | \3", m.group()).split(" | ")]


# "not live in Oslo anymore": the cue is the "not" and the "anymore"; what lies between is the
# fact that ended, compared as such
_ANY_MORE = re.compile(r"^(not|n't) (.+) (any ?more)$", re.I)


# ---- the judgement -------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """An active memory as `judge` sees it: its id, content, and (e5) similarity to the new
    memory with the cue removed; None when the embedder gives no comparable scale."""

    id: str
    content: str
    similarity: float | None = None


@dataclass
class Verdict:
    """What a new memory does to the old ones: closes `supersede`, flags `review`."""

    supersede: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.supersede or self.review)


@dataclass(frozen=True)
class Thresholds:
    """e5's bands (`policy.change_sure_by_model` / `change_unsure_by_model`); None: words alone."""

    sure: float | None = None
    unsure: float | None = None


def _points(new_words: set[str], new_frames: set[str], old: str) -> tuple[int, set[str], bool]:
    """How much two memories are about one thing: shared words, plus one for a shared slot."""
    old_words = words(old, cue_words(old))
    shared = new_words & old_words
    slot = bool(new_frames & frames(old) & set(FRAMES))
    return len(shared) + int(slot), shared, slot


def _slot_told(new: str, old: str, drop: Sequence[str]) -> bool:
    """Whether a change fills the slot both memories name: its cue names that slot ("搬到",
    "new job", "跳槽") or it gives the slot another value ("moved to Berlin"). "Moved to a new
    team at work" names home by its verb and work by "at work": it changes neither."""
    both = frames(new) & frames(old)
    if both & frames(" ".join(drop)):
        return True
    new_values, old_values = slot_values(new), slot_values(old)
    return any(s in new_values and not (new_values[s] & old_values.get(s, set())) for s in both)


def _another_value(new: str, old: str, shared: set[str]) -> bool:
    """Whether the two memories give one exclusive slot different values ("lives in Leeds" and
    "lives in York"), and share nothing beyond the slot's own words ("now working with Python
    at Siemens" and "works at Siemens" are one employer)."""
    if any(not frame_word(w) for w in shared):
        return False
    new_values, old_values = slot_values(new), slot_values(old)
    return any(slot in old_values and not (vals & old_values[slot]) for slot, vals in new_values.items())


# what the user owns of a thing, as a memory tells it: "has a Civic", "drives a Honda", "用户的车"
_EN_OWNS = r"(?:\bhas|\bhave|\bhad|\bowns|\bowned|\bbought|\bgot|\bdrives|\bdrove|\brides|\brode|\bthe user's)\s+(?:[\w-]+\s+){0,3}?"
_ZH_OWNS = r"(?:有|开|骑|买了|养|用户的)[^，,。]{0,6}?"


def _owns(content: str, things: set[str], vehicle: bool) -> bool:
    """Whether a memory says the user owns one of `things` (or, `vehicle`, drives one)."""
    if vehicle and re.search(r"\b(?:drives|drove|driving|rides|riding|owns|has)\b|开|骑", content, re.I):
        return True
    owns = _ZH_OWNS if has_cjk(content) else _EN_OWNS
    return any(re.search(owns + re.escape(t), content, re.I) for t in things)


_ZH_VEHICLE = frozenset({"车", "车子", "汽车", "小车", "轿车", "摩托", "摩托车", "电动车"})


def _sold_frames(new: str) -> set[str]:
    """"用户的车卖掉了": a thing too short to be a word of its own still names the vehicle."""
    m = _ZH_SOLD.search(new)
    thing = next((g for g in m.groups() if g), "") if m is not None else ""
    return {"vehicle"} if re.sub(r"^用户(?:的)?|^的", "", thing) in _ZH_VEHICLE else set()


def _sold_only(new: str, new_frames: set[str], candidates: Sequence[Candidate], max_review: int) -> Verdict:
    """A sale naming only the kind of thing ("用户的车卖掉了"): the one memory of the user owning
    such a thing is closed; two are flagged."""
    owned = [c.id for c in candidates if c.content != new and not about_someone_else(c.content)
             and new_frames & frames(c.content) and _owns(c.content, set(), True)]
    return Verdict(supersede=owned) if len(owned) == 1 else Verdict(review=owned[:max_review])


def _names(name: str) -> set[str]:
    return set(re.sub(r"\b(?:dr|mr|mrs|ms|prof)\b\.?", " ", name.lower()).split()) or {name.lower()}


def _new_holder(new: str, role: str, candidates: Sequence[Candidate], max_review: int) -> Verdict:
    """"My new manager is Sarah": the memories saying who held that role before (another name)
    are closed; a new holder told without a name only flags them."""
    told = new_holder(new)
    name = told[1] if told is not None else ""
    held = [(c, h) for c in candidates if c.content != new and (h := holder(c.content)) is not None and h[0] == role
            and not (name and _names(h[1]) & _names(name))]
    if not held:
        return Verdict()
    if name and len({frozenset(_names(h[1])) for _, h in held}) == 1:
        return Verdict(supersede=[c.id for c, _ in held])  # every memory of the one person who held it
    return Verdict(review=[c.id for c, _ in held][:max_review])


def judge(new: str, found: Cue | None, candidates: Sequence[Candidate], thresholds: Thresholds,
          max_review: int = 3) -> Verdict:
    """Which of `candidates` (active memories of the scope, the new one excluded) the new
    memory replaces (`found`: its cue) or may replace (no cue: flagged at most)."""
    if found is not None and found.of.startswith("holder:"):
        return _new_holder(new, found.of.partition(":")[2], candidates, max_review)
    if found is None and _denied(new):
        return Verdict()  # "not moving to Paris", "不打算搬到北京": the slot is not filled again either
    drop = cue_words(new)
    new_words = words(new, drop)
    new_frames = frames(new) | (_sold_frames(new) if found is not None and found.of == "thing" else set())
    if about_someone_else(new):
        return Verdict()
    if not new_words:
        if found is not None and found.of == "thing" and new_frames:
            return _sold_only(new, new_frames, candidates, max_review)
        # "用户去年跳槽了", "我们分手了": the slot the cue names changed, to a value not said; flagged
        named_slots = frames(" ".join(drop)) & new_frames if found is not None and not found.weak else set()
        return Verdict(review=[c.id for c in candidates if c.content != new and not about_someone_else(c.content)
                               and named_slots & frames(c.content)][:max_review])
    temporary = bool(TEMPORARY.search(f"{new} {found.told if found is not None else ''}"))
    if found is not None and found.weak and temporary:
        found = None  # "in Paris now for a conference": a stay, no change
    # the old value the sentence that told the change names ("二甲双胍吃了胃不舒服，…换成西格列汀了")
    named = words(found.told, cue_words(found.told)) - new_words if found is not None and found.told else set()
    zh = has_cjk(new)
    # a breakup ends the relationship, not every memory naming the person
    partner_end = found is not None and found.kind == "end" and "partner" in new_frames
    sure: list[str] = []
    unsure: list[str] = []
    for c in candidates:
        if c.content == new or about_someone_else(c.content):
            continue
        if about_partner(new) != about_partner(c.content) and "partner" not in new_frames & frames(c.content):
            continue  # the partner's own news changes none of the user's facts but the partner
        points, shared, slot = _points(new_words, new_frames, c.content)
        old_words = words(c.content, cue_words(c.content))
        if shared or slot:
            points += int(bool(named & old_words))
        if points == 0:
            continue
        if partner_end and ("partner" not in frames(c.content) or all(frame_word(w) for w in shared)):
            continue  # "broke up with Jake" closes Jake, not the husband after him
        if found is not None and found.of == "thing" and not _owns(c.content, shared, "vehicle" in new_frames & frames(c.content)):
            continue  # "sold my old guitar" ends owning it, not playing it
        kind = found.kind if found is not None else None
        if found is not None and (found.weak or kind == "again") and not temporary and _another_value(new, c.content, shared):
            kind = "change"  # "lives in Leeds now" after "lives in York"; "single again" after "dating Jake"
        elif found is not None and found.weak:
            kind = None  # "now" alone changes nothing: at most a slot filled twice, flagged
        elif kind == "change" and slot and not _slot_told(new, c.content, drop):
            points, slot = points - 1, False  # the slot is named, not changed: its word is no evidence
            if points == 0:
                continue
        # a change needs another value: new words the old lacks, and old words the new lacks
        if kind in (None, "change") and (not new_words - old_words or not old_words - new_words - shared):
            continue
        if kind == "again" and ((told := cue(c.content)) is None or told.kind != "end"):
            continue  # "back on coffee" replaces the memory that it had stopped, nothing else
        if kind == "end" and (told := cue(c.content)) is not None and told.kind == "end":
            continue  # an ending does not end an ending ("戒奶茶" again: the same fact)
        if kind is None:
            # no cue: only an exclusive slot filled twice, and only ever flagged
            if slot and (thresholds.unsure is None or c.similarity is None or c.similarity >= thresholds.unsure):
                unsure.append(c.id)
            continue
        # two things in common; or the one an ending names ("戒奶茶" and "天天喝奶茶"); or the
        # exclusive slot a change fills anew ("moved to Berlin" and "lives in Munich": home)
        strong = points >= 2 or slot or (kind != "change" and bool(shared))
        if thresholds.sure is not None and c.similarity is not None:
            # the words decide; e5 lifts a one-word match it finds close, and doubts a strong
            # one it finds far (its scale alone does not separate them: see the config). Not in
            # Chinese, where e5 put unrelated candidates up to 0.94, above the band that lifts
            # ("下夜班改喝柠檬水" is no change of "这周夜班多" at 0.91)
            low = thresholds.unsure if thresholds.unsure is not None else thresholds.sure
            if (strong and c.similarity >= low) or (c.similarity >= thresholds.sure and not zh):
                sure.append(c.id)
            elif strong or c.similarity >= low:
                unsure.append(c.id)  # half sure: the words or the embedder, not both
        elif strong:
            sure.append(c.id)
        else:
            unsure.append(c.id)
    if len(sure) == 1:
        return Verdict(supersede=sure)
    return Verdict(review=(sure + unsure)[:max_review])


_SUBJECT = re.compile(r"\bthe user(?:'s)?\b|用户(?:的)?|[:：]", re.I)


def core(content: str) -> str:
    """What a memory says of its thing, for the embedder: without the subject every memory
    shares (e5 puts "The user is a pharmacist" at 0.9 of "The user is back on coffee") and
    without cue words ("The user moved to Berlin." → "Berlin.")."""
    text = content
    for w in cue_words(content):
        text = text.replace(w, " ")
    text = " ".join(_SUBJECT.sub(" ", text).split()).strip(" ,，.。")
    return text or content


class _Turn:
    """One turn of the person's as `said_at` and `told_by_person` read it, each part found
    once, when first asked for."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def keywords(self) -> set[str]:
        return words(self.text)

    @cached_property
    def pairs(self) -> frozenset[str]:
        """Its Chinese runs' two-character pieces: a Chinese word none of whose pieces is
        here is not in the turn, known without searching the whole turn for it."""
        return frozenset(r[i:i + 2] for r in CJK_RUN.findall(self.text) for i in range(len(r) - 1))

    def holds(self, w: str) -> bool:
        """Whether the Chinese word `w` (a run of two characters or more) is in the turn."""
        return all(w[i:i + 2] in self.pairs for i in range(len(w) - 1)) and w in self.text

    @cached_property
    def cue(self) -> Cue | None:
        return cue(self.text)

    @cached_property
    def values(self) -> dict[str, set[str]]:
        return slot_values(self.text)

    @cached_property
    def told(self) -> set[str]:
        return words(self.text, cue_words(self.text))

    @cached_property
    def lower(self) -> str:
        return self.text.lower()


class Heard:
    """The person's turns as read for the memories of one job, each turn read once: read again
    for every memory, a long turn of changes (600 × "我搬到城市N了。") made a job quadratic in
    its length, 158 s for 5.9 KB."""

    def __init__(self) -> None:
        self._turns: dict[str, _Turn] = {}

    def turn(self, text: str) -> _Turn:
        if (found := self._turns.get(text)) is None:
            found = self._turns[text] = _Turn(text)
        return found


def told_by_person(new: str, old: str, said: Sequence[str], heard: Heard | None = None) -> bool:
    """Whether the person's own words (`said`: their turns) tell the change from `old` to
    `new`: a turn with a change cue naming something of the new memory the old one lacks.
    An LLM's guess about a memory the person stated or confirmed needs this to close it. A
    weak cue ("now") tells a change only where the turn gives the old memory's slot another
    value ("I live in Berlin now"). `heard`: the turns read already, for the job's other memories."""
    heard = heard or Heard()
    fresh = words(new, cue_words(new)) - words(old)
    old_values = slot_values(old)

    def tells(turn: _Turn) -> bool:
        found = turn.cue
        if found is None or (found.weak and not any(
                slot in old_values and not (vals & old_values[slot]) for slot, vals in turn.values.items())):
            return False
        return bool(turn.told & fresh) or any(w in turn.lower for w in fresh)

    return any(tells(heard.turn(t)) for t in said)


def said_at(content: str, turns: Sequence[tuple[str, datetime | None]], heard: Heard | None = None) -> datetime | None:
    """When a memory's fact was said: the time of the last of the person's turns sharing the
    most words with it (else their last turn); None when the turns carry no time. `heard`: the
    turns read already, for the job's other memories."""
    heard = heard or Heard()
    mine = words(content)
    zh = [w for w in mine if has_cjk(w)]
    best: tuple[int, datetime] | None = None
    for text, at in turns:
        if at is None:
            continue
        turn = heard.turn(text)
        score = len(mine & turn.keywords) + sum(1 for w in zh if turn.holds(w))
        if best is None or score >= best[0]:
            best = (score, at)
    return best[1] if best is not None else None


# ---- when: the text's dates, resolved against the time the turn was said --------------------

_ZH_NUM = "零一二两三四五六七八九十"


def _zh_number(s: str) -> int | None:
    if s.isdigit():
        return int(s)
    if not s or any(ch not in _ZH_NUM for ch in s):
        return None
    digits = {ch: i for i, ch in enumerate("零一二三四五六七八九")} | {"两": 2}
    if "十" in s:
        tens, _, ones = s.partition("十")
        return (digits.get(tens, 1) if tens else 1) * 10 + (digits.get(ones, 0) if ones else 0)
    return digits.get(s) if len(s) == 1 else None


def _zh_digits(text: str) -> str:
    """"去年十月" → "去年10月", "八月一号" → "8月1号": the forms `memlane.dates` reads."""
    def month(m: re.Match[str]) -> str:
        n = _zh_number(m.group(1))
        return f"{n}月" if n is not None and 1 <= n <= 12 else m.group()

    def day(m: re.Match[str]) -> str:
        n = _zh_number(m.group(1))
        return f"{n}{m.group(2)}" if n is not None and 1 <= n <= 31 else m.group()

    text = re.sub(r"([一二三四五六七八九十]{1,3})月(?:份)?", month, text)
    return re.sub(r"(?<=月)([一二三四五六七八九十]{1,3})([号日])", day, text)


def _at(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _resolved(found: Period | Span | None, said: date, shift: int | None) -> date | None:
    """The first day a date names, not after `said`: a month without its year is the last one
    that began by then ("since March" said in June 2024 is 2024-03-01; said in February, 2023's)."""
    if found is None:
        return None
    if isinstance(found, Span):
        return found.start if found.start <= said else None
    if found.month is None and found.year is None:
        return None
    year = found.year
    if year is None:
        year = said.year + (shift or 0)
        if shift is None:
            try:
                if date(year, found.month or 1, found.day or 1) > said:
                    year -= 1
            except ValueError:
                return None
    try:
        day = date(year, found.month or 1, found.day or 1)
    except ValueError:
        return None
    return day if day <= said else None


_EN_SINCE = re.compile(r"\b(?:since|starting|started|as of|beginning|from)\b\s+(?P<d>[^.,;!?]{1,40})", re.I)
_EN_ON_THE = re.compile(r"\b(?:since|on|from) the (\d{1,2})(?:st|nd|rd|th)\b(?! of)", re.I)
_EN_WHEN = re.compile(r"\b(?:in|on|last|ago|yesterday|this)\b", re.I)
_ZH_SINCE = re.compile(r"(?P<d>[^，,。；;！!？?]{1,16}?)(?:开始|起|以来)|从(?P<d2>[^，,。；;！!？?]{1,12})")
_EN_UNTIL = re.compile(r"\b(?:until|till|up to)\b\s+(?P<d>[^.,;!?]{1,30})", re.I)
_EN_PAST = re.compile(r"\b(?:lived|worked|was|were|used to|had|drove|studied|played|smoked)\b", re.I)
_ZH_UNTIL = re.compile(r"(?:到|直到)(?P<d>[^，,。；;！!？?]{1,12}?)(?:为止|之前|才)")
_ZH_PAST = re.compile(r"以前|之前|那时|当时|曾经")


_ZH_YEAR = {"今年": 0, "去年": -1, "前年": -2}


def _first_day(text: str, said: date) -> date | None:
    lowered = _zh_digits(text)
    shift = None
    if (y := re.search(r"(今年|去年|前年)(?=\d{1,2}月)", lowered)) is not None:
        shift = _ZH_YEAR[y.group(1)]  # "去年10月": the month of that year, read without the word
        lowered = lowered[:y.start()] + " " + lowered[y.end():]
    found = _resolved(mentioned_period(lowered, said), said, shift)
    if found is None and (m := _EN_ON_THE.search(text)) is not None:
        day = int(m.group(1))
        month_start = said.replace(day=1)
        for _ in range(3):  # this month's, else the month before (a 31st may wait two)
            try:
                if (candidate := month_start.replace(day=day)) <= said:
                    return candidate
            except ValueError:
                pass
            month_start = (month_start - timedelta(days=1)).replace(day=1)
    return found


def since(text: str, said: datetime, changed: bool = False) -> datetime | None:
    """When the fact the text states began, where it says so: after "since / from / starting"
    ("since the 1st of June", "从今年三月开始", "去年十月开始"), or, for a statement that tells a
    change (`changed`), any date it names ("switched to matcha in march", "上周搬到滨江", "last
    week I moved"). Never after `said`; None when the text names no such date."""
    day = said.date()
    if changed and _FROM.search(text) and not _PAST_NAMED.search(text) \
            and (ahead := _ahead_start(text, day)) is not None:
        return _at(ahead)  # "from 1 September I live in…", said in February: this September
    for m in _EN_SINCE.finditer(text):
        found = _first_day(m.group(), day)  # with its "since": "since March" names a month
        if found is not None:
            return _at(found)
    on = _EN_ON_THE.search(text)  # "on the 2nd" names a start only in a change ("started on the 2nd")
    if on is not None and (changed or on.group().lower().startswith("since")) and (
            found := _first_day(on.group(), day)) is not None:
        return _at(found)
    for z in _ZH_SINCE.finditer(text):
        piece = z.group("d") or z.group("d2") or ""
        found = _first_day(piece, day)
        if found is not None:
            return _at(found)
    if changed and (has_cjk(text) or _EN_WHEN.search(text)):
        found = _first_day(text, day)
        if found is not None:
            return _at(found)
    if changed and (ahead := _ahead_start(text, day)) is not None:
        return _at(ahead)
    return None


# a change told ahead of its date: "from next month", "starting September 1st", "下个月开始",
# "从9月1号起", "next week I'm moving", "明年就搬到…"
_AHEAD = re.compile(r"\b(?:from|starting|as of|beginning|next|will|'ll|going to|in (?:a|two|three|\d+) (?:weeks?|months?))\b"
                    r"|开始|起|下个?|明年|下周|下星期|要|将|会", re.I)
_FROM = re.compile(r"\b(?:from|starting|beginning|as of)\b|从|起|开始", re.I)
_PAST_NAMED = re.compile(r"去年|前年|上个?月|上周|上星期|昨天|前天|以前|之前|\d{4}\s*年|\b(?:last|ago|yesterday|since|\d{4})\b",
                         re.I)
_NAMES_DAY = re.compile(r"\d{1,2}\s*(?:st|nd|rd|th|日|号)|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|周[一二三四五六日天]|"
                        r"星期[一二三四五六日天]|\b\d{1,2}\b", re.I)
_NAMES_WEEK = re.compile(r"\bweeks?\b|周|星期|礼拜", re.I)
_NEXT_YEAR = re.compile(r"明年|下个?月|下周|下星期|\bnext\b|\bin (?:a|two|three|\d+) (?:weeks?|months?)\b", re.I)
_NAMES_YEAR_ONLY = re.compile(r"\bnext year\b|明年(?![\d一二三四五六七八九十]+月)", re.I)


def _ahead_start(text: str, said: date) -> date | None:
    """The first day of the future a change names for itself, or None: the day it names, else
    the start of the week, month or year ("next month" said on 9 February: 1 March)."""
    if not _AHEAD.search(text) or (end := upcoming(text, said)) is None or end <= said:
        return None
    if end.year > said.year and not _NEXT_YEAR.search(text):
        return None  # "从一月开始…" said in February: this January, past (`since` reads it)
    if _NAMES_DAY.search(_zh_digits(text)):
        return end
    if _NAMES_WEEK.search(text):
        return end - timedelta(days=6)
    if _NAMES_YEAR_ONLY.search(text):
        return date(end.year, 1, 1)
    return end.replace(day=1)


def until(text: str, said: datetime) -> datetime | None:
    """When a fact told as past ended ("lived in Dayton until 2021" → 2021-01-01; "到去年才…"),
    where the text says so; None for a fact told as holding, or a date still ahead."""
    day = said.date()
    if not (_EN_PAST.search(text) or _ZH_PAST.search(text)):
        return None
    for pattern in (_EN_UNTIL, _ZH_UNTIL):
        for m in pattern.finditer(text):
            found = _first_day("in " + m.group("d"), day)  # "until 2021" names the year as "in 2021" does
            if found is not None:
                return _at(found)
    return None


def lenient_date(value: object, now: datetime, ahead_days: int = 0) -> datetime | None:
    """A date an LLM gave ("2026-03-01", "2026-03", "2026", "March 2026", an ISO time), as a
    UTC datetime; None for anything else, or a date more than `ahead_days` after `now` or
    before 1900 (refused quietly: the operation is kept without it)."""
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        return None
    text = value.strip()
    at: datetime | None = None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        at = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except ValueError:
        if (m := re.fullmatch(r"((?:19|20)\d\d)(?:-(\d{1,2}))?", text)) is not None:
            try:
                at = _at(date(int(m.group(1)), int(m.group(2) or 1), 1))
            except ValueError:
                return None
        else:
            found = mentioned_period(_zh_digits(text.lower()))
            if isinstance(found, Period) and found.year is not None:
                try:
                    at = _at(date(found.year, found.month or 1, found.day or 1))
                except ValueError:
                    return None
    if at is None or at.year < 1900 or at > now + timedelta(days=1 + ahead_days):
        return None
    return at.astimezone(UTC)


__all__ = ["FRAMES", "Candidate", "Cue", "Heard", "Thresholds", "Verdict", "about_someone_else", "core", "cue", "cue_words", "frames",
           "holder", "judge", "lenient_date", "new_holder", "said_at", "since", "slot_values", "told_by_person", "until",
           "words"]
