"""What "记住这个 / remember this / 忘掉那个" point at (issue 13): the content the user means,
never an acknowledgement; applied at once, without the LLM, in every profile."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memlane import Memory
from memlane.errors import BackendError
from memlane.models import Scope
from memlane.testing import ManualClock, ScriptedLLM
from tests.conftest import PROFILE_NAMES

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


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


# ---- issue 30, row 4 (seed 001 "忘掉那个"): forgotten, and it stays forgotten ---------------

TRIP_ZH, TRIP_EN = "用户下周三要去北京出差", "The user is flying to Berlin next Wednesday for work."
FORGET_THAT = [
    # (the user's statement, the assistant's reply, the request; what must not come back)
    ("我下周三要去北京出差", "好的", "忘掉那个", "北京"),
    ("我下周三要去北京出差", "好的", "算了，忘掉那个", "北京"),
    ("我下周三要去北京出差", "好的，你下周三要去北京出差，我帮你记着", "忘掉那个", "北京"),
    ("我下周三要去北京出差", "好的", "别记这个", "北京"),
    ("我下周三要去北京出差", "好的", "刚才那个不用记了", "北京"),
    ("I'm flying to Berlin next Wednesday for work.", "Got it.", "Forget that.", "Berlin"),
    ("I'm flying to Berlin next Wednesday for work.", "Got it.", "Never mind, forget it.", "Berlin"),
    ("I'm flying to Berlin next Wednesday for work.", "Sure, you're flying to Berlin next Wednesday.",
     "Forget that.", "Berlin"),
]


class _Restating(ScriptedLLM):
    """An LLM that re-adds the trip at every extraction call, whatever the turns say; any
    other call (a summary, an episode) gets a sentence."""

    def __init__(self, content: str) -> None:
        super().__init__()
        self.content = content
        self.extractions = 0

    def complete(self, messages, *, json_schema=None):  # type: ignore[no-untyped-def]
        if "operations" not in str(json_schema or ""):
            return "聊了近况。" if "北京" in self.content else "A chat about the week."
        self.extractions += 1
        self.enqueue({"operations": [{"op": "ADD", "content": self.content, "category": "fact"}]})
        return super().complete(messages, json_schema=json_schema)


def _kept(m: Memory, word: str) -> list[str]:
    """The memories holding `word`, the companion's episode of the session included."""
    return [x.content for x in m.list(user_id="u1") if word in x.content]


@pytest.mark.parametrize("profile", ["default", "companion"])
@pytest.mark.parametrize("with_llm", [False, True])
@pytest.mark.parametrize("said, reply, asked, word", FORGET_THAT)
def test_forget_that_stays_forgotten_through_the_sessions_extractions(
        make_memory: Callable[..., Memory], profile: str, with_llm: bool, said: str, reply: str, asked: str,
        word: str) -> None:
    m = make_memory(profile, clock=ManualClock(T0))
    llm = _Restating(TRIP_ZH if word == "北京" else TRIP_EN) if with_llm else None
    m.llm = llm
    for k, turn in enumerate([user(said), bot(reply), user(asked)]):
        m.clock.now = T0 + timedelta(minutes=k)
        m.add_messages("s1", [turn], user_id="u1")  # one turn at a time: the companion's monitor runs
    assert _kept(m, word) == []
    m.clock.now = T0 + timedelta(minutes=5)
    m.end_session("s1", user_id="u1")
    assert _kept(m, word) == []
    # the audit: once deleted (when the monitor had stored it), never added back
    trip = [e for e in m.audit(user_id="u1") if word in str(e.after or e.before)]
    kinds = [e.kind for e in trip]
    assert "ADD" not in kinds[kinds.index("DELETE"):] if "DELETE" in kinds else kinds == []
    # the turns stay, the trace of it; the session keeps what was asked
    assert [t.content for t in m.get_turns("s1", user_id="u1")] == [said, reply, asked]
    session = m.store.get_session(Scope.of("u1"), "s1")
    assert session is not None
    assert [e["seq"] for e in session.metadata["forgotten"]] == [3]
    if llm is not None:
        assert llm.extractions >= 1  # the LLM did re-add it, and was refused


@pytest.mark.parametrize("profile", ["default", "companion"])
def test_a_forget_binds_a_job_that_runs_after_it(make_memory: Callable[..., Memory], profile: str) -> None:
    """The statement's extraction failed (LLM down) and is retried after the request: it is
    refused then too — the request was kept on the session, not only in its own job."""
    m = make_memory(profile, clock=ManualClock(T0), extraction={"every_n_user_messages": 1, "min_message_chars": 1})
    m.llm = ScriptedLLM(BackendError("server down"))
    m.add_messages("s1", [user("我下周三要去北京出差")], user_id="u1")
    [failed] = m.extraction_jobs(user_id="u1")
    assert failed.attempts == 1 and _kept(m, "北京") == []
    m.llm = _Restating(TRIP_ZH)
    m.add_messages("s1", [bot("好的"), user("算了，忘掉那个")], user_id="u1")
    m.clock.now = failed.next_at
    reports = m.drain()
    assert [r.status for r in reports] == ["done"] and m.llm.extractions == 2
    assert any("issue 30" in r.reason for r in reports[0].rejected)
    m.end_session("s1", user_id="u1")
    assert _kept(m, "北京") == []


def test_said_again_after_the_request_is_remembered(make_memory: Callable[..., Memory]) -> None:
    """The request covers the turns up to it: the same plan stated anew later is stored."""
    m = make_memory()
    m.add_messages("s1", [user("我下周三要去北京出差"), bot("好的"), user("忘掉那个"), bot("好的，已经忘了"),
                          user("其实行程又定了，我下周三要去北京出差")], user_id="u1")
    m.end_session("s1", user_id="u1")
    assert _kept(m, "北京") == [TRIP_ZH]


@pytest.mark.parametrize("words", ["别记错了哦", "不要记恨他", "算了", "Never mind.", "Don't forget the milk."])
def test_words_near_a_forget_forget_nothing(make_memory: Callable[..., Memory], words: str) -> None:
    m = make_memory()
    m.add_messages("s1", [user("我的车牌是浙A12345"), bot("好的"), user("记住这个"), bot("好的，我记住了"),
                          user(words)], user_id="u1")
    m.end_session("s1", user_id="u1")
    assert "用户的车牌是浙A12345" in [x.content for x in m.list(user_id="u1")]


@pytest.mark.parametrize("with_llm", [False, True])
def test_a_long_companion_chat_does_not_summarise_what_was_forgotten(make_memory: Callable[..., Memory],
                                                                      with_llm: bool) -> None:
    """Past 30 messages the companion compacts the history into its episode memory, mid-session:
    the forgotten plan is in neither the summary nor that memory."""
    m = make_memory("companion", clock=ManualClock(T0))
    m.llm = _Restating(TRIP_ZH) if with_llm else None
    chat = [user("我下周三要去北京出差"), bot("好的，你下周三要去北京出差"), user("算了，忘掉那个"), bot("好的")]
    chat += [user(f"今天第{i}件小事是整理书架") if i % 2 == 0 else bot("嗯嗯") for i in range(40)]
    for k, turn in enumerate(chat):
        m.clock.now = T0 + timedelta(minutes=k)
        m.add_messages("s1", [turn], user_id="u1")
    session = m.store.get_session(Scope.of("u1"), "s1")
    assert session is not None and session.metadata.get("compactions", 0) >= 1
    assert "北京" not in session.summary and _kept(m, "北京") == []
    assert any(x.category == "episode" for x in m.list(user_id="u1"))  # the episode was written
    m.end_session("s1", user_id="u1")
    assert _kept(m, "北京") == []
