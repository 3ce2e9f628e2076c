"""What "记住这个 / remember this / 忘掉那个" point at (issue 13): the content the user means,
never an acknowledgement; applied at once, without the LLM, in every profile."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memlane import Memory
from memlane.testing import ScriptedLLM
from tests.conftest import PROFILE_NAMES


def user(c: str) -> dict[str, str]:
    return {"role": "user", "content": c}


def bot(c: str) -> dict[str, str]:
    return {"role": "assistant", "content": c}


REMEMBER = [
    # (the conversation, the memory it pins)
    ([user("我的车牌是浙A12345"), bot("好的"), user("记住这个")], "用户的车牌是浙A12345"),
    ([user("我的车牌是浙A12345。记住这个")], "用户的车牌是浙A12345"),
    ([user("我的车牌是浙A12345，帮我记住")], "用户的车牌是浙A12345"),
    ([user("请记住这个：我的车牌是浙A12345")], "用户的车牌是浙A12345"),
    ([user("My locker code is 4512."), bot("Got it."), user("Remember this.")], "The user's locker code is 4512."),
    ([user("My locker code is 4512, remember that!")], "The user's locker code is 4512."),
    ([user("Remember this: my locker code is 4512.")], "The user's locker code is 4512."),
    ([user("My locker code is 4512."), bot("Sure, I'll remember that."), user("Thanks! Please remember it.")],
     "The user's locker code is 4512."),
    # nothing stated by the user: the answer to their question is what is under discussion
    ([user("女儿学校几点上课？"), bot("工作日早上8点15分上课"), user("记住这个")], "工作日早上8点15分上课"),
]


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize("with_llm", [False, True])
def test_remember_this_pins_what_the_user_meant(make_memory: Callable[..., Memory], profile: str,
                                                 with_llm: bool) -> None:
    m = make_memory(profile)
    if with_llm:
        m.llm = ScriptedLLM()  # commands are applied without it (it has no reply queued)
    for i, (turns, want) in enumerate(REMEMBER):
        m.add_messages(f"s{i}", turns, user_id=f"u{i}")
        pinned = [(x.content, x.source, x.verified) for x in m.list(user_id=f"u{i}") if x.pinned]
        assert pinned == [(want, "user", True)], turns


def test_an_acknowledgement_alone_gives_nothing_to_remember(memory: Memory) -> None:
    memory.add_messages("s1", [bot("好的"), user("记住这个")], user_id="u1")
    memory.add_messages("s2", [bot("Got it."), user("Remember this.")], user_id="u1")
    assert memory.list(user_id="u1") == []


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize("with_llm", [False, True])
def test_forget_that_deletes_the_memory_meant_audited_and_restorable(make_memory: Callable[..., Memory],
                                                                     profile: str, with_llm: bool) -> None:
    m = make_memory(profile)
    if with_llm:
        m.llm = ScriptedLLM()
    tea = m.add("用户喜欢喝白茶", user_id="u1")
    m.add_messages("s1", [user("我的车牌是浙A12345"), bot("好的"), user("记住这个"), bot("好的，我记住了"),
                          user("忘掉那个")], user_id="u1")
    assert [x.id for x in m.list(user_id="u1")] == [tea.id]
    # English, the statement in an earlier message of the conversation, a memory stored before
    code = m.add("The user's locker code is 4512.", user_id="u1")
    m.add_messages("s2", [user("My locker code is 4512."), bot("Noted."), user("Actually, forget that.")],
                   user_id="u1")
    assert [x.id for x in m.list(user_id="u1")] == [tea.id]
    [_, ev] = m.history(code.id, user_id="u1")
    assert (ev.kind, ev.actor) == ("DELETE", "extract:user") and "forget that" in ev.reason
    back = m.restore(code.id, user_id="u1")
    assert back.content == "The user's locker code is 4512."
    assert {x.id for x in m.list(user_id="u1")} == {tea.id, code.id}


def test_forget_that_with_nothing_meant_deletes_nothing(memory: Memory) -> None:
    kept = memory.add("用户喜欢喝白茶", user_id="u1")
    memory.add_messages("s1", [bot("好的"), user("忘掉那个")], user_id="u1")
    assert [x.id for x in memory.list(user_id="u1")] == [kept.id]


@pytest.mark.parametrize("words, kept", [
    (["我喜欢茶", "记住这个", "我也喜欢红茶", "记住这个", "忘掉我喜欢茶"], ["用户也喜欢红茶"]),
    (["I like tea", "remember this", "I also like green tea", "remember this", "forget that I like tea"],
     ["The user also likes green tea."]),
    (["我喜欢茶", "记住这个", "我也喜欢红茶", "记住这个", "忘掉所有关于茶的"], []),
])
def test_forgetting_takes_the_memory_meant_not_every_one_sharing_its_words(
        make_memory: Callable[..., Memory], words: list[str], kept: list[str]) -> None:
    m = make_memory()
    for i, text in enumerate(words):
        m.add_messages("s1", [{"role": "user", "content": text}], user_id="u1")
        if i == 3:
            assert len(m.list(user_id="u1")) == 2
    assert sorted(r.content for r in m.list(user_id="u1")) == kept
