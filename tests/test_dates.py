"""The dates a query names, and the periods they stand for."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memlane.dates import Period, Span, mentioned_period, named_session


@pytest.mark.parametrize(("text", "period"), [
    ("What did Melanie paint on October 13, 2023?", Period(2023, 10, 13)),
    ("What did Gina find on 1 February, 2023?", Period(2023, 2, 1)),
    ("Where was John in the last week of August 2023?", Period(2023, 8)),
    ("When did Melanie go camping in June?", Period(None, 6)),
    ("How many times has she gone to the beach in 2023?", Period(2023)),
    ("我2023年10月13日去了哪里", Period(2023, 10, 13)),
    ("2023年10月做了什么", Period(2023, 10)),
    ("3月5号的会议", Period(None, 3, 5)),
    ("10月的时候", Period(None, 10)),
    ("What did I tell you on May 2nd?", Period(None, 5, 2)),  # a day without its year
    ("We talked about films on April 30th", Period(None, 4, 30)),
    ("What did I cook on the 5th of May?", Period(None, 5, 5)),
    ("I may go to the beach", None),  # "may" the verb is no month
    ("You may need 3 days", None),
    ("May I ask something?", None),
    ("nothing dated here", None),
])
def test_mentioned_period(text, period):
    assert mentioned_period(text) == period


def test_a_period_contains_its_days_and_the_grace_after():
    june = Period(None, 6)
    assert june.contains(datetime(2021, 6, 30, tzinfo=UTC))
    assert not june.contains(datetime(2021, 7, 3, tzinfo=UTC))
    assert june.contains(datetime(2021, 7, 3, tzinfo=UTC), grace_days=7)
    dec = Period(2023, 12)
    assert dec.contains(datetime(2024, 1, 5, tzinfo=UTC), grace_days=7)  # across the year
    day = Period(2023, 10, 13)
    assert day.contains(datetime(2023, 10, 13, 23, 0, tzinfo=UTC)) and not day.contains(datetime(2023, 10, 14, tzinfo=UTC))
    assert not Period(2023, 2, 30).contains(datetime(2023, 3, 2, tzinfo=UTC), grace_days=7)  # no such day


def test_nearness_is_whole_inside_the_period_and_fades_over_the_grace():
    day = Period(None, 5, 4)
    near = [day.nearness(datetime(2023, 5, d, 12, tzinfo=UTC), grace_days=7) for d in range(3, 13)]
    assert near[0] == 0.0 and near[1] == 1.0  # the day before, the day itself
    assert all(a > b for a, b in zip(near[1:-1], near[2:-1], strict=False)) and near[-1] == 0.0


WED = date(2023, 5, 24)  # the asking day of the relative dates below, a Wednesday


@pytest.mark.parametrize(("text", "span"), [
    ("What did I say yesterday?", Span(date(2023, 5, 23), date(2023, 5, 24))),
    ("I bought it four weeks ago", Span(date(2023, 4, 19), date(2023, 5, 4))),  # that week, give or take
    ("A few days ago, I mentioned a park", Span(date(2023, 5, 20), date(2023, 5, 23))),
    ("the trips in the past three months", Span(date(2023, 2, 23), date(2023, 5, 25))),
    ("in the last 2 weeks", Span(date(2023, 5, 10), date(2023, 5, 25))),
    ("what did we do last weekend", Span(date(2023, 5, 20), date(2023, 5, 22))),
    ("last week", Span(date(2023, 5, 15), date(2023, 5, 22))),  # the calendar week before
    ("last month", Span(date(2023, 4, 1), date(2023, 5, 1))),
    ("last year", Span(date(2022, 1, 1), date(2023, 1, 1))),
    ("上周我说了什么", Span(date(2023, 5, 15), date(2023, 5, 22))),
    ("三天前", Span(date(2023, 5, 20), date(2023, 5, 23))),
    ("十二个月前", Span(date(2022, 2, 28), date(2022, 8, 28))),  # about a year ago: ± a quarter
    ("最近两个月看了什么书", Span(date(2023, 3, 25), date(2023, 5, 25))),
    ("前天", Span(date(2023, 5, 22), date(2023, 5, 23))),
    ("这个月", Span(date(2023, 5, 1), date(2023, 5, 25))),
    ("How many days ago did I watch the game?", None),  # asks for a count, names no day
    ("我最近去厦门旅游了", None),  # "lately" has no span
    ("on May 2nd, two weeks ago", Period(None, 5, 2)),  # an absolute date wins
    # the tail of a longer number is no number: not "000 days", "345 days", "二十天", "5 years"
    ("1000天前", None), ("12345天前", None), ("一百二十天前", None), ("1,000 days ago", None),
    ("1.5 years ago", None), ("他2天前来过", Span(date(2023, 5, 21), date(2023, 5, 24))),
])
def test_relative_dates(text, span):
    assert mentioned_period(text, WED) == span
    assert mentioned_period(text) == (span if isinstance(span, Period) else None)  # no clock, no span


@pytest.mark.parametrize(("text", "window"), [
    ("What trips did I take In The Past Three Months?", "in the past three months"),
    ("over the last 2 weeks, what did I cook", "over the last 2 weeks"),
    ("最近两个月看了什么书", "最近两个月"),
    # evidence says these too ("a year ago", "last weekend"): they stay in the words searched
    ("What did Evan start one year ago?", ""), ("what did we do last weekend", ""), ("三天前", ""),
    ("in the last two weeks of August 2023", None),  # an absolute date wins: no window
])
def test_a_window_back_from_today_is_named_by_its_words(text, window):
    """The words of "in the past N units" only bound when (search leaves them out of its
    words); other relative dates are often what the evidence says too."""
    found = mentioned_period(text, WED)
    assert (found.window if isinstance(found, Span) else None) == window


def test_a_span_fades_over_the_grace_after_it():
    s = Span(date(2023, 5, 1), date(2023, 5, 8))
    assert s.nearness(datetime(2023, 4, 30, tzinfo=UTC)) == 0.0 and s.nearness(datetime(2023, 5, 7, tzinfo=UTC)) == 1.0
    assert 0 < s.nearness(datetime(2023, 5, 9, tzinfo=UTC), grace_days=3) < s.nearness(datetime(2023, 5, 8, tzinfo=UTC), grace_days=3)


@pytest.mark.parametrize(("text", "which"), [
    ("Do you remember what we talked about during our first conversation?", "first"),
    ("When we first met, what did I say my job was?", "first"),
    ("What did we discuss the first time?", "first"),
    ("你还记得我们第一次对话的时候，聊了什么话题吗？", "first"),
    ("What did we talk about last time?", "last"),
    ("Remind me of our most recent chat", "last"),
    ("The last time I talked to you, you said something about pasta", "last"),
    ("上次我们聊了什么", "last"),
    ("上次聊天你说的那本书叫什么？", "last"),
    # a topic names the conversation: the words find it ("previous" is any earlier one)
    ("I was going through our previous conversation about making a French omelette", None),
    ("In our last conversation about budgets you said", None),
    # the speaker's own first or last time, not ours
    ("What was the first time I went to Paris?", None),
    ("the last time I talked to my mom", None),
    ("We talked about going to Rome last time I was there", None),
    ("我上次去医院是什么时候", None),
    ("What did James prepare for the first time in the cooking class?", None),
    # phrasings users type
    ("what did you say last time?", "last"),
    ("What did I tell you last time", "last"),
    ("上次你推荐的电影是什么", "last"),
    ("我上次跟你说的那家餐厅叫什么", "last"),
    ("上回咱们说到哪儿了", "last"),
    ("你和我第一次聊天聊了什么", "first"),
    # another party's conversation, a talk at a conference, someone else's first meeting
    ("What did my boss say in the last conversation with him?", None),
    ("What was my first conversation with my boss about?", None),
    ("Can you remind me who gave the last talk at the conference?", None),
    ("What did the trainer say in my first session at the gym?", None),
    ("the last discussion in the board meeting", None),
    ("Where did my wife and I go when we first met?", None),
    ("Where did we go the first time we met, my wife and I?", None),
    ("the last time we talked with the landlord, what did he say?", None),
    ("Do you remember when we talked about the first time we went to Paris?", None),
    ("last time I checked the price was 20 dollars", None),
    ("我和女朋友第一次见面是在哪里", None),
    ("我第一次谈恋爱是几岁", None),
    ("我上次谈恋爱是什么时候", None),
    ("他上次说要来吃饭", None),
    ("老板上次说的项目截止日期是哪天", None),
    ("我和老板上次聊天说了什么", None),
    ("最近一次交流会在哪里举行", None),
])
def test_a_conversation_named_by_its_order(text, which):
    assert named_session(text) == which

