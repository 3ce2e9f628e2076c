"""Facts that change, told offline (issue 32): the change cues of `memlane.changes`, end to end
through `Memory` (SQLite, the heuristic extractor, the hash embedder). Each change is told a
way of its own — "now" with a slot given another value, a role's new holder, a breakup, a sale,
a return, the old value named in the telling sentence — and closes the memory it replaces.
The false friends close nothing: a trip, someone else's move, a hypothetical, a "now" that
changes nothing, a second pet or child, a hobby beside the old one. A wrong supersession hides
a true fact; a missed one leaves a flag or two memories, so the guards are the stricter tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memlane import Memory
from memlane.changes import (
    Candidate,
    Thresholds,
    cue,
    holder,
    judge,
    new_holder,
    slot_values,
    told_by_person,
)
from memlane.testing import ManualClock

MakeMemory = Callable[..., Memory]
T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)


def conversation(make_memory: MakeMemory, *sessions: Sequence[str]) -> Memory:
    """Each session's user turns, a month apart, each session ended (extraction runs)."""
    clock = ManualClock(T0)
    m = make_memory(clock=clock)
    for i, turns in enumerate(sessions):
        clock.now = T0 + timedelta(days=30 * i)
        m.add_messages(f"s{i}", [{"role": "user", "content": t} for t in turns], user_id="u1")
        m.end_session(f"s{i}", user_id="u1")
    return m


def closed(m: Memory) -> dict[str, str]:
    """Each superseded memory's content, with the content of the memory that closed it."""
    every = {r.id: r for s in ("active", "superseded", "archived") for r in m.list(user_id="u1", status=s)}
    return {r.content: every[r.superseded_by].content for r in every.values()
            if r.status == "superseded" and r.superseded_by in every}


def current(m: Memory) -> set[str]:
    return {r.content for r in m.list(user_id="u1", status="active")}


# ---- changes told, each closing the memory it replaces --------------------------------------

CHANGES = [
    # "now" closes only where it gives an exclusive slot another value
    (["I live in York."], ["I live in Leeds now."], "The user lives in York.", "The user lives in Leeds now."),
    (["I'm vegetarian."], ["I'm vegan now."], "The user is vegetarian.", "The user is vegan now."),
    (["I work at Dell."], ["I work at Google now."], "The user works at Dell.", "The user works at Google now."),
    (["我住在上海"], ["我现在住在杭州"], "用户住在上海", "用户现在住在杭州"),
    (["我在阿里工作"], ["我现在在腾讯上班"], "用户在阿里工作", "用户现在在腾讯上班"),
    (["我吃素"], ["我现在吃肉了"], "用户吃素", "用户现在吃肉了"),
    # an employer by its name
    (["I work at Dell as an engineer."], ["I started at Google last week."],
     "The user works at Dell as an engineer.", "The user started at Google last week."),
    # the role one person holds for the user, to a new holder
    (["My manager is Tom."], ["My new manager is Sarah."], "The user's manager is Tom.", "The user's new manager is Sarah."),
    (["我的经理是老王"], ["我们新经理是李姐"], "用户的经理是老王", "用户他们新经理是李姐"),
    # a breakup closes the partner (男朋友 is no friend of the user's)
    (["我男朋友叫小张"], ["我和小张分手了"], "用户的男朋友叫小张", "用户和小张分手了"),
    (["I'm dating Jake."], ["I broke up with Jake last week."], "The user is dating Jake.", "The user broke up with Jake last week."),
    # a return to another value, and "again" of a slot
    (["I'm dating Jake."], ["I'm single again."], "The user is dating Jake.", "The user is single again."),
    (["I'm vegetarian."], ["I eat meat again."], "The user is vegetarian.", "The user eats meat again."),
    # the user moving with someone else moves the user
    (["I live in York."], ["My sister and I moved to Leeds."], "The user lives in York.",
     "The user's sister and the user moved to Leeds."),
    (["我住在上海"], ["我和老公搬到杭州了"], "用户住在上海", "用户和老公搬到杭州了"),
    # a company the segmenter cuts in two (拼 + 多多) is still one name
    (["我在拼多多上班"], ["我不在拼多多干了"], "用户在拼多多上班", "用户不在拼多多干了"),
    # a sale ends owning the thing
    (["我开一辆特斯拉"], ["我的车卖掉了"], "用户开一辆特斯拉", "用户的车卖掉了"),
    # the telling sentence names the old value the new memory leaves out
    (["医生让我每天吃二甲双胍"], ["二甲双胍吃了胃老不舒服，医生上礼拜给我换成西格列汀了"],
     "用户的医生让用户每天吃二甲双胍", "用户的医生上礼拜给用户换成西格列汀了"),
    # a cue in the clause joined to the one before it
    (["我六百度近视，一直戴眼镜"], ["上周做了全飞秒，终于不用戴眼镜了"], "用户六百度近视，一直戴眼镜",
     "用户：上周做了全飞秒，终于不用戴眼镜了"),
]


@pytest.mark.parametrize(("before", "after", "old", "new"), CHANGES, ids=[c[3] for c in CHANGES])
def test_a_change_told_closes_the_memory_it_replaces(make_memory: MakeMemory, before: list[str], after: list[str],
                                                     old: str, new: str) -> None:
    m = conversation(make_memory, before, after)
    assert closed(m) == {old: new}
    assert new in current(m)


def test_a_new_doctor_closes_who_the_doctor_was_not_what_the_doctor_prescribed(make_memory: MakeMemory) -> None:
    m = conversation(make_memory, ["My doctor is Dr. Patel.", "My doctor put me on lisinopril."],
                     ["I have a new doctor, Dr. Lee."])
    assert closed(m) == {"The user's doctor is Dr. Patel.": "The user has a new doctor, Dr. Lee."}
    assert "The user's doctor put the user on lisinopril." in current(m)


def test_a_return_closes_the_value_between(make_memory: MakeMemory) -> None:
    m = conversation(make_memory, ["I live in York."], ["I live in Leeds."], ["I moved back to York in May."])
    assert closed(m) == {"The user lives in Leeds.": "The user moved back to York in May."}
    assert "The user lives in York." in current(m)


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    (["我在阿里工作"], ["去年跳槽了"], "用户在阿里工作", "用户去年跳槽了"),  # to an employer not said
    (["我男朋友叫小张"], ["我们分手了"], "用户的男朋友叫小张", "用户他们分手了"),  # with whom, not said
    (["My husband Tom is a chef."], ["I'm divorced now."], "The user's husband Tom is a chef.", "The user is divorced now."),
])
def test_a_change_without_its_value_is_flagged_not_closed(make_memory: MakeMemory, before: list[str], after: list[str],
                                                          old: str, new: str) -> None:
    m = conversation(make_memory, before, after)
    assert closed(m) == {}
    got = {r.content: r for r in m.list(user_id="u1")}
    assert got[new].metadata["may_supersede"]["ids"] == [got[old].id]


# ---- false friends: nothing closes ----------------------------------------------------------

FALSE_FRIENDS = [
    (["I live in Munich."], ["I'm in Paris now for a conference."]),  # a trip
    (["I live in Leeds."], ["I'm living in Paris now for the summer."]),
    (["I live in Munich."], ["I'm in Munich now."]),  # the same value
    (["I live in Leeds."], ["I live in the city centre now."]),  # no other value given
    (["I live in Munich."], ["My friend Anna moved to Berlin."]),  # someone else's move
    (["I live in York."], ["My sister moved to Leeds."]),
    (["I work at Dell."], ["My brother started at Google last week."]),
    (["I work at Siemens."], ["Leo started at Riverside Montessori in january. he actually likes school now"]),
    (["I work at Siemens."], ["My husband works at BMW now."]),  # the partner's job is not the user's
    (["I live in Munich."], ["My husband moved to Berlin for work."]),
    (["我在阿里工作"], ["我老公现在在腾讯上班"]),
    (["My husband Tom is a chef."], ["I got divorced from Mark in 2010."]),  # another partner's ending
    (["I work at Dell."], ["If I switched jobs, I'd go to Google."]),  # a hypothetical
    (["I cook dinner every night."], ["I'm now thinking about dinner."]),  # "now" that changes nothing
    (["I work at Dell as a data engineer."], ["ugh long week. I'm now working late every night, my manager keeps piling on"]),
    (["I work at Dell as an engineer."], ["I'm now a manager at Dell."]),  # the same employer
    (["I have a maths exam on Friday."], ["I quit Costa at christmas, I tutor GCSE maths now."]),  # the ending is Costa's
    (["I drink coffee every morning."], ["I'm drinking green tea now too."]),
    (["I have a cat named Milo."], ["We got a second cat, Luna!"]),  # a second pet, a second child
    (["I have a cat named Milo."], ["We adopted a dog now, his name is Rex."]),
    (["I have a son, Leo."], ["We had a baby girl, Mia!"]),
    (["I play tennis on Sundays."], ["I started learning the piano."]),  # a hobby beside the old one
    (["I play tennis on Sundays."], ["I also play chess now."]),
    (["I work at Dell."], ["I started working from home in March."]),  # how, not where
    (["I work at Dell on the data team."], ["I moved to a new team at work."]),
    (["I work at Dell."], ["I joined a book club last month."]),
    (["My doctor put me on lisinopril."], ["I have a new doctor."]),
    (["I bake cakes for my kids' birthdays."], ["Honestly I'm now so into sourdough, baking every weekend."]),
    (["我住在上海"], ["我现在在北京出差"]),
    (["我住在上海"], ["我朋友小李搬到深圳了"]),
    (["我在阿里工作"], ["如果我换工作，我想去腾讯"]),
    (["我每天晚上做饭"], ["我现在在想晚饭吃什么"]),
    (["我养了一只猫，叫咪咪"], ["我又养了一只猫，叫花花"]),
    (["我有一个儿子"], ["我们家添了个女儿"]),
    (["我每周打网球"], ["我最近开始学吉他了"]),
    (["我喜欢打羽毛球"], ["我现在开始学游泳了"]),
    (["我每天早上喝咖啡"], ["我现在也喝绿茶"]),
    (["我在阿里工作"], ["我最近换到新的项目组了"]),
    (["我在阿里工作"], ["我朋友跳槽去腾讯了"]),
    (["我在医院上夜班，经常很累"], ["瘦了三斤，下夜班改喝柠檬水了"]),
]


@pytest.mark.parametrize(("before", "after"), FALSE_FRIENDS, ids=[f[1][0] for f in FALSE_FRIENDS])
def test_a_false_friend_closes_nothing(make_memory: MakeMemory, before: list[str], after: list[str]) -> None:
    m = conversation(make_memory, before, after)
    assert closed(m) == {}
    assert m.list(user_id="u1", status="superseded") == []


# ---- the pieces ---------------------------------------------------------------------------


def test_now_is_a_weak_cue_and_a_strong_one_comes_first() -> None:
    assert cue("The user is now thinking about dinner.").weak  # type: ignore[union-attr]
    assert cue("用户现在住在杭州").weak  # type: ignore[union-attr]
    strong = cue("The user switched to matcha now.")
    assert strong is not None and (strong.kind, strong.weak) == ("change", False)
    for moment in ("The user needs it right now.", "From now on the user wants short answers.", "The user is fine for now."):
        assert cue(moment) is None


def test_a_slot_and_its_value() -> None:
    assert slot_values("The user lives in Leeds now.") == {"home": {"leed"}}
    assert slot_values("The user works from home now.") == {}  # "home" is no employer
    assert slot_values("用户现在在腾讯上班") == {"work": {"腾讯"}}
    assert slot_values("The user is vegan now.") == {"diet": {"vegan"}}


def test_who_holds_a_role() -> None:
    assert new_holder("The user's new manager is Sarah.") == ("manager", "Sarah")
    assert new_holder("The user has a new doctor, Dr. Lee.") == ("doctor", "Dr. Lee")
    assert new_holder("The user's new boyfriend is really sweet.") == ("partner", "")
    assert holder("The user's boyfriend Jake is a chef.") == ("partner", "Jake")
    assert holder("The user is dating Jake.") == ("partner", "Jake")
    assert holder("用户的男朋友叫小张") == ("partner", "小张")
    assert holder("The user's doctor put the user on lisinopril.") is None


def test_e5_does_not_lift_a_one_word_chinese_match() -> None:
    """e5 puts unrelated Chinese candidates up to 0.94: one shared word and a high cosine are no
    change there; in English the same cosine lifts it (the config's bands)."""
    band = Thresholds(sure=0.9, unsure=0.8)
    zh = "用户：下夜班改喝柠檬水"
    assert judge(zh, cue(zh), [Candidate("a", "就是用户这周夜班多，医院排班排得人都傻了", 0.91)], band).supersede == []
    en = "The user switched to green tea."
    assert judge(en, cue(en), [Candidate("a", "The user drinks black tea every day.", 0.95)], band).supersede == ["a"]


def test_a_persons_now_tells_a_change_only_with_another_value() -> None:
    """An LLM may close a memory the person stated only on the person's own words of change."""
    munich, berlin = "The user lives in Munich.", "The user lives in Berlin."
    assert told_by_person(berlin, munich, ["I live in Berlin now"])
    assert told_by_person(berlin, munich, ["I moved to Berlin last month"])
    assert not told_by_person(berlin, munich, ["I'm now thinking about Berlin"])
