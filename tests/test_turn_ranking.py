"""Turn ranking in a user's chat with an assistant (issue 14): the assistant's long replies
echo the user's words, so "what did I …" must still find the user's own turn, "what did you
recommend" the assistant's, and the priors tuned on two friends' chit-chat must not hand the
rank to whoever writes longest."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memlane import Memory
from memlane.retrieval.query import asked_role, asks_accumulated
from memlane.testing import ManualClock

USER_FACT = "I redeemed a $5 coupon on coffee creamer at Target last Sunday. Do you know other ways to save on groceries?"
REPLY = ("Great job redeeming that coupon on coffee creamer at Target! Saving on groceries is easier than it "
         "looks. " + "Plan meals around weekly sales, compare unit prices, join loyalty programs, buy store brands, "
         "and stack manufacturer coupons with store coupons whenever Target or other stores allow it. " * 6)
RECOMMENDATION = ("For your trip I recommend the Aurora Hotel near the river: quiet rooms, a rooftop bar and a "
                  "short walk to the old town.")


def _chat(mem: Memory) -> None:
    mem.add_messages("groceries", [
        {"role": "user", "content": USER_FACT},
        {"role": "assistant", "content": REPLY},
        {"role": "user", "content": "Thanks! I will try the store brands."},
        {"role": "assistant", "content": "You're welcome. Store brands often match the big names in quality."},
    ], user_id="u")
    mem.add_messages("trip", [
        {"role": "user", "content": "I'm going to Lisbon in May with my sister. Where should we stay?"},
        {"role": "assistant", "content": RECOMMENDATION},
        {"role": "user", "content": "Is the Aurora Hotel expensive? My budget for the hotel is tight."},
    ], user_id="u")
    mem.flush()


def _top(mem: Memory, query: str) -> str:
    return mem.search(query, user_id="u", corpus="turns", limit=3)[0].content


def test_first_person_questions_find_the_users_turn_not_the_echo(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _chat(mem)
    assert _top(mem, "Where did I redeem a coupon on coffee creamer?") == USER_FACT


def test_questions_about_what_the_assistant_said_find_its_turn(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _chat(mem)
    assert _top(mem, "Which hotel did you recommend for the Lisbon trip?") == RECOMMENDATION


def test_without_the_role_prior_and_length_cap_the_echo_wins(make_memory: Callable[..., Memory]) -> None:
    """The same chat ranked as before issue 14: the long echo outranks the user's own turn.
    (Guards that the test above exercises the new priors, not luck.)"""
    mem = make_memory(search={"role_prior": 0.0, "turn_length_cap": 10**9, "question_max_chars": 10**9})
    _chat(mem)
    assert _top(mem, "Where did I redeem a coupon on coffee creamer?") == REPLY


@pytest.mark.parametrize(("query", "role"), [
    ("What was my previous occupation?", "user"),
    ("我喜欢什么样的音乐？", "user"),
    ("What did you recommend for my trip?", "assistant"),
    ("I was going through our previous conversation about eggs; remind me how many?", "assistant"),
    ("你给我推荐过哪些郊外徒步的好地方？", "assistant"),
    ("Can you suggest some activities I can do in the evening?", "user"),  # a request, not a recall
    ("What did Melanie paint?", None),
])
def test_who_a_query_asks_about(query: str, role: str | None) -> None:
    assert asked_role(query) == role


@pytest.mark.parametrize(("query", "accumulated"), [
    ("What books has Melanie read?", True), ("Hi there. Which cities have you visited?", True),
    ("Quick one\nwhat games have I played with you?", True),
    ("How many hours have I spent on my sculpture?", True), ("What has Caroline painted?", True),
    ("你给我推荐过哪些画家？", True), ("我去过几次北京？", True),
    ("What pets does Jolene have?", False), ("How many tomato plants do I have in my gardens?", False),
    ("What is the total number of goals I have in the league?", False),  # having, not having done
    ("What is the board game where you have to find the imposter?", False),
    ("What did Caroline research?", False), ("我喜欢什么样的音乐？", False),
])
def test_which_queries_ask_what_has_built_up(query: str, accumulated: bool) -> None:
    assert asks_accumulated(query) is accumulated


FILLER = ("We talked through watering schedules, mulch, companion planting with basil and marigolds, "
          "staking, pruning suckers and when to feed with compost tea. ")
BALCONY = [f"My tomato plants in the balcony garden, week {i}: the tomato plants are fine. " + FILLER * 3
           for i in range(1, 6)]
ALLOTMENT = "At the allotment garden I planted eight tomato plants in a raised bed. " + FILLER * 3


def _two_gardens(mem: Memory) -> None:
    for i, text in enumerate(BALCONY):
        mem.add_messages("balcony", [{"role": "user", "content": text},
                                     {"role": "assistant", "content": f"Noted, week {i + 1}."}], user_id="u")
    mem.add_messages("allotment", [{"role": "user", "content": ALLOTMENT},
                                   {"role": "assistant", "content": "Eight seedlings, got it."}], user_id="u")
    mem.flush()


@pytest.mark.parametrize(("spread_chars", "found"), [(250, True), (10**9, False)])
def test_long_turns_spread_the_session_prior(make_memory: Callable[..., Memory], spread_chars: int,
                                             found: bool) -> None:
    """A question whose answer spans two sessions of long turns: the session holding most
    of the matching turns must not fill the top with itself (issue 14, LongMemEval's
    multi-session questions); with the prior whole (the chars past any turn) it does."""
    mem = make_memory(search={"session_spread_chars": spread_chars})
    _two_gardens(mem)
    top = [h.content for h in mem.search("How many tomato plants do I have in my gardens?", user_id="u",
                                          corpus="turns", limit=3)]
    assert len(top) == 3 and (ALLOTMENT in top) is found
    assert top[0] in BALCONY


def _three_days(mem: Memory, clock: ManualClock) -> None:
    """A first conversation about a puppy, a second about a trip (both ended, an episode each),
    and the one going on now, whose words are what a content-free question would match."""
    ended = {
        "day1": ["I just adopted a beagle puppy and named him Biscuit.",
                 "Congratulations on Biscuit! Beagles are curious and friendly.",
                 "He already chewed one of my shoes."],
        "day2": ["I'm planning a hiking trip to the Dolomites in September.",
                 "The Dolomites are beautiful in September; book the huts early.",
                 "Which hut is best for the first night?"],
    }
    for session, (asked, answered, added) in ended.items():
        mem.add_messages(session, [{"role": "user", "content": asked}, {"role": "assistant", "content": answered},
                                   {"role": "user", "content": added}], user_id="u")
        mem.end_session(session, user_id="u", wait=True)
        clock.advance(days=1)
    mem.add_messages("day3", [
        {"role": "user", "content": "Let's talk about the conversation I had with my boss: what did we "
                                    "talk about in the review, and what should I say next time we talk?"},
    ], user_id="u")
    mem.flush()


def test_last_time_reads_past_empty_sessions_and_sessions_begun_after_the_clock(
        make_memory: Callable[..., Memory]) -> None:
    """"Last time" is the last conversation that said something, begun by now, other than the
    one going on: a session the app opened and closed without a word since, and sessions
    imported ahead of the clock (more of them than one listing reads), do not hide it."""
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    mem = make_memory(clock=clock)
    _three_days(mem, clock)  # day3 goes on
    for i in range(10):
        mem.add_messages(f"ahead{i}", [{"role": "user", "content": f"A plan for later number {i}.",
                                        "created_at": datetime(2026, 6, 1 + i, tzinfo=UTC)}], user_id="u")
        mem.end_session(f"ahead{i}", user_id="u", wait=True)
    clock.advance(minutes=5)
    mem.start_session("ping", user_id="u")
    mem.end_session("ping", user_id="u", wait=True)
    clock.advance(minutes=5)
    mem.flush()
    top = [h.turn.session_id for h in mem.search("What did we talk about last time?", user_id="u",
                                                 corpus="turns", limit=2) if h.turn]
    assert top == ["day2", "day2"]


def test_an_agent_asked_about_last_time_means_its_own_last_conversation(
        make_memory: Callable[..., Memory]) -> None:
    """An agent reads its user's shared memories too; "last time" there is the agent's last
    conversation with the user, not the last one the user had without it: a shared memory of
    that one gains nothing over a shared memory the question's words find."""
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    mem = make_memory(clock=clock)
    mem.add_messages("home1", [{"role": "user", "content": "Hello there."}], user_id="u")
    mem.end_session("home1", user_id="u", wait=True)
    bees = mem.add("The user keeps three hives of bees in the garden.", user_id="u", session_id="home0")
    car = mem.add("The user's car is a blue estate.", user_id="u", session_id="home1")
    clock.advance(days=1)
    mem.add_messages("bot1", [{"role": "user", "content": "Good morning."}], user_id="u", agent_id="bot")
    mem.end_session("bot1", user_id="u", agent_id="bot", wait=True)
    mem.add("The user drinks jasmine tea.", user_id="u", agent_id="bot", session_id="bot1")
    mem.flush()
    hits = [h.id for h in mem.search("What did you say about my bees last time?", user_id="u", agent_id="bot",
                                     limit=3, activate=False, min_score=0.0)]
    assert hits[0] == bees.id and car.id in hits  # the car is the user's own last conversation's


@pytest.mark.parametrize(("query", "session"), [
    ("What did we talk about in our first conversation?", "day1"),
    ("What did we talk about last time?", "day2"),
    ("你还记得我们第一次聊天时聊了什么吗？", "day1"),
    ("上次我们聊了什么？", "day2"),
])
@pytest.mark.parametrize("prior", [1.5, 0.0])
def test_a_conversation_named_by_its_order_is_found_without_its_words(
        make_memory: Callable[..., Memory], query: str, session: str, prior: float) -> None:
    """"Our first conversation" is the scope's first session and "last time" the last one
    before the conversation going on now; their turns hold none of the question's words
    (without the prior, the open session's talk-talk-talk wins)."""
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    mem = make_memory(clock=clock, search={"named_session_prior": prior})
    _three_days(mem, clock)
    top = [h.turn.session_id for h in mem.search(query, user_id="u", corpus="turns", limit=2) if h.turn]
    if prior:
        assert top == [session, session]
        episodes = mem.search(query, user_id="u", corpus="episodes", limit=2)
        assert episodes[0].episode is not None and episodes[0].episode.session_id == session
    else:
        assert session not in top[:1]


# every turn prior off: the search reads no turn windows, so the named prior finds turns' sessions itself
NO_TURN_PRIORS = {"session_prior": 0.0, "turn_length_prior": 0.0, "question_penalty": 0.0, "reply_prior": 0.0,
                  "speaker_prior": 0.0, "dense_neighbour_weights": []}


@pytest.mark.parametrize(("corpus", "priors"), [("memories", {}), ("episodes", {}), ("turns", {}),
                                                ("turns", NO_TURN_PRIORS)])
def test_the_named_conversations_rows_join_the_candidates(make_memory: Callable[..., Memory], corpus: str,
                                                          priors: dict[str, object]) -> None:
    """A pool too small to hold the named session's rows by words or vectors (one candidate a
    side) still ranks them first: they join the candidates, whatever the corpus."""
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    mem = make_memory(clock=clock, search={"fts_candidates": 1, "vector_candidates": 1, **priors})
    _three_days(mem, clock)
    for i, session in enumerate(["day1", "day2", "day3"] * 4):
        mem.add(f"Note {i}: we talked about the conversation and what to talk about next.", user_id="u",
                session_id=session)
    mem.flush()
    hits = mem.search("What did we talk about last time?", user_id="u", corpus=corpus, limit=1)
    assert hits
    top = hits[0]
    session = (top.memory.source_session if top.memory else top.episode.session_id if top.episode
               else top.turn.session_id if top.turn else None)
    assert session == "day2"


def test_an_open_session_silent_past_the_idle_timeout_is_last_time(make_memory: Callable[..., Memory]) -> None:
    """An app that never ends its sessions asks "last time" before storing the new
    conversation's first message: the newest open session, silent longer than
    extraction.idle_minutes (seed 001's idle timeout), is that last conversation — while it is
    still going on, the one before it is."""
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    mem = make_memory(clock=clock)
    _three_days(mem, clock)  # day3 is open: a message just now

    def last() -> str | None:
        hits = mem.search("What did we talk about last time?", user_id="u", corpus="turns", limit=1)
        return hits[0].turn.session_id if hits and hits[0].turn else None

    assert last() == "day2"
    clock.advance(minutes=mem.config.extraction.idle_minutes + 1)
    assert last() == "day3"


@pytest.mark.parametrize(("query", "said", "trip"), [
    ("What trips did I take in the past three months?",
     ["I've been collecting stamps for three months now, over two hundred of them.",
      "For the past three months I've gone to the gym every morning."],
     "I'm back from a camping trip to Yosemite with my sister."),
    ("最近三个月我去了哪些地方旅行？",
     ["我最近三个月一直在学吉他，每个月都练习。", "最近三个月我每天早上都跑步。"],
     "上个月我去云南旅行了，风景很美。"),
])
def test_a_window_back_from_today_bounds_the_search_and_is_not_its_words(
        make_memory: Callable[..., Memory], query: str, said: list[str], trip: str) -> None:
    """"In the past three months" says when, not what: the date prior favours what was said
    in the window, and turns merely saying "three months" (issue 14, LongMemEval's "three
    trips in the past three months") do not outrank the trip. The one before the window
    holds the question's topic too, and stays below."""
    clock = ManualClock(datetime(2023, 2, 1, 9, 0, tzinfo=UTC))
    mem = make_memory(clock=clock)
    before = "I'm planning a trip to Kyoto in the spring." if trip.isascii() else "我在计划春天去京都旅行。"
    for i, text in enumerate([before, said[0], trip, said[1]]):
        mem.add_messages(f"s{i}", [{"role": "user", "content": text}], user_id="u")
        mem.end_session(f"s{i}", user_id="u", wait=True)
        clock.advance(days=30)
    mem.flush()
    top = [h.content for h in mem.search(query, user_id="u", corpus="turns", limit=4)]
    assert top[0] == trip and top.index(before) > top.index(trip)


BOOK_CLUB = ["I joined a club at the library this month.", "We meet on Tuesdays and drink tea.",
             "For the club I have read Dune and two other science fiction books.",
             "There are twelve of us, and we argue a lot.", "Next month we pick a new title."]
COOKING = ["I cooked a mushroom risotto tonight.",
           "While the risotto simmered on the stove for forty minutes, stirring now and then, I read Circe.",
           "It needed more salt."]
BOOK_CLUB_ZH = ["这个月我加入了图书馆的一个俱乐部。", "我们每周二见面喝茶。", "为了俱乐部我读过《沙丘》和另外两本科幻书，都是好书。",
                "我们一共十二个人，经常争论。", "下个月我们要挑新的题目。"]
COOKING_ZH = ["今晚我做了蘑菇烩饭。", "等饭的时候我读过《喀耳刻》。", "还要多放点盐。"]


@pytest.mark.parametrize("query", ["What books have I read?", "我读过哪些书？"])
def test_what_has_built_up_over_time_is_not_sought_in_one_conversation(
        make_memory: Callable[..., Memory], query: str) -> None:
    """"What books have I read?" asks for answers spread over conversations. The session
    prior (answers cluster by session) lifts the book club's small talk around the book read
    there above the book read while cooking; such a question goes without it (the control:
    the session prior's 0.4 for it too)."""
    mem = make_memory()
    club, cooking = (BOOK_CLUB, COOKING) if query.isascii() else (BOOK_CLUB_ZH, COOKING_ZH)
    for session, lines in (("club", club), ("cooking", cooking)):
        mem.add_messages(session, [{"role": "user", "content": t} for t in lines], user_id="u")
    mem.flush()

    def rank() -> int:
        hits = [h.content for h in mem.search(query, user_id="u", corpus="turns", limit=8)]
        return hits.index(cooking[1]) if cooking[1] in hits else len(hits)

    spread = rank()
    mem.config.search.accumulated_session_prior = mem.config.search.session_prior
    assert spread < rank() and spread < 4
