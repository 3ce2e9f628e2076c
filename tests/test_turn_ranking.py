"""Turn ranking in a user's chat with an assistant (issue 14): the assistant's long replies
echo the user's words, so "what did I …" must still find the user's own turn, "what did you
recommend" the assistant's, and the priors tuned on two friends' chit-chat must not hand the
rank to whoever writes longest."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memlane import Memory
from memlane.search import asked_role

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
