"""Hybrid retrieval: neighbour context, filters, the three corpora, highlights, ranking
weights and activation per profile. Results are asserted, never timings."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from memlane.models import Episode, Scope
from memlane.testing import ManualClock

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def say(role: str, text: str, minutes: int) -> dict:
    return {"role": role, "content": text, "created_at": T0 + timedelta(minutes=minutes)}


def test_a_turn_is_found_through_its_neighbours(memory):
    memory.add_messages("s1", [
        say("user", "Did you try the new ramen place downtown?", 0),
        say("assistant", "Yes! The tonkotsu broth was the best I've had.", 1),
        say("user", "Unrelated: my printer is out of toner.", 2),
        say("assistant", "Order a cartridge online.", 3),
        say("user", "Also the weather is nice today.", 4),
        say("assistant", "Enjoy the sunshine.", 5),
    ], user_id="u1")
    hits = memory.search("ramen", user_id="u1", corpus="turns", limit=10)
    contents = [h.content for h in hits]
    assert contents[0].startswith("Did you try the new ramen")
    broth = next(h for h in hits if "tonkotsu" in h.content)
    assert broth.bm25_rank is not None  # matched through its neighbour, not by its own words
    far = [h for h in hits if h.content.startswith("Enjoy")]
    assert not far or far[0].bm25_rank is None  # 4 turns away: outside the context window


def test_turn_filters_by_session_role_and_time(memory):
    memory.add_messages("a", [say("user", "I booked a flight to Osaka", 0),
                              say("assistant", "Osaka is lovely in spring", 1)], user_id="u1")
    memory.add_messages("b", [say("user", "Cancel the Osaka flight", 60 * 24)], user_id="u1")
    search = lambda **f: [h.turn.session_id + ":" + h.turn.role for h in  # noqa: E731
                          memory.search("Osaka flight", user_id="u1", corpus="turns", filters=f)]
    assert set(search(session_id="a")) == {"a:user", "a:assistant"}
    assert set(search(roles=["assistant"])) == {"a:assistant"}
    assert search(since=T0 + timedelta(hours=1)) == ["b:user"]
    assert set(search(until=T0 + timedelta(minutes=5))) == {"a:user", "a:assistant"}


def test_chinese_question_finds_the_turn(memory):
    memory.add_messages("s1", [say("user", "我上周去北京出差了，住在国贸", 0),
                               say("assistant", "北京最近天气很干燥，多喝水", 1),
                               say("user", "周末想去钓鱼", 2)], user_id="u1")
    top = memory.search("我上周去哪里出差了？", user_id="u1", corpus="turns", limit=1)[0]
    assert top.content.startswith("我上周去北京出差")
    assert top.highlights == ["上周", "出差"]


def test_episodes_are_searched_with_the_same_mechanism(memory):
    scope = Scope.of("u1")
    ep = Episode(id="e1", user_id="u1", session_id="s1", summary="讨论了产品评审的演示材料",
                 goal="准备评审", outcome="完成大纲", entities=["评审"], started_at=T0, ended_at=T0,
                 created_at=T0)
    with memory.store.transaction():
        memory.store.insert_episode(ep)
    memory.flush()
    other = Episode(**{**ep.model_dump(), "id": "e2", "user_id": "u2"})
    with memory.store.transaction():
        memory.store.insert_episode(other)
    [hit] = memory.search("评审", user_id="u1", corpus="episodes")
    assert (hit.id, hit.source, hit.episode.goal) == ("e1", "episode:s1", "准备评审")
    assert memory.store.list_episodes(scope)[0].id == "e1"


def test_importance_and_recency_break_ties_between_equal_matches(make_memory):
    clock = ManualClock(T0)
    memory = make_memory(clock=clock)
    old = memory.add("the user likes jasmine tea", user_id="u1", importance="medium")
    clock.now = T0 + timedelta(days=90)
    new = memory.add("the user likes jasmine tea", user_id="u1", importance="medium")
    important = memory.add("the user likes jasmine tea", user_id="u1", importance="high")
    ranked = [h.id for h in memory.search("jasmine tea", user_id="u1", activate=False)]
    assert ranked.index(important.id) < ranked.index(new.id) < ranked.index(old.id)


def test_rrf_fusion_stays_available(make_memory):
    memory = make_memory(search={"fusion": "rrf"})
    a = memory.add("white tea from Fujian", user_id="u1")
    memory.add("a report about quarterly sales", user_id="u1")
    assert memory.search("white tea", user_id="u1")[0].id == a.id


@pytest.mark.parametrize(("profile", "activates"), [("default", True), ("scored-markdown", True),
                                                    ("companion", False), ("file-archive", False)])
def test_a_hit_activates_only_where_the_profile_says(make_memory, profile, activates):
    memory = make_memory(profile)
    rec = memory.add("用户喜欢爵士乐", user_id="u1", category="fact")
    memory.search("爵士乐", user_id="u1")
    after = memory.get(rec.id, user_id="u1")
    assert after.activation_count == (1 if activates else 0)
    assert after.score == rec.score  # a hit alone never changes the score
    memory.search("爵士乐", user_id="u1", activate=False)  # benchmarks and previews
    assert memory.get(rec.id, user_id="u1").activation_count == after.activation_count


def test_words_most_documents_hold_are_left_out_of_large_corpora(make_memory):
    from memlane.retrieval.query import drop_common

    memory = make_memory(search={"common_term_min_docs": 30, "common_term_share": 0.2})
    for i in range(40):
        memory.add(f"the user mentioned topic number {i}", user_id="u1")
    jazz = memory.add("the user plays jazz piano", user_id="u1")
    cfg = memory.config.search
    assert drop_common(memory.store, "memories", Scope.of("u1"), ["user", "jazz", "piano"], cfg) == ["jazz", "piano"]
    assert drop_common(memory.store, "memories", Scope.of("u1"), ["user", "jazz"], cfg) == ["user", "jazz"]  # two always stay
    small = make_memory(home=memory.config.home.parent / "small", search={"common_term_share": 0.2})
    small.add("the user plays jazz piano", user_id="u1")
    assert drop_common(small.store, "memories", Scope.of("u1"), ["user", "jazz", "piano"], small.config.search) == ["user", "jazz", "piano"]
    assert memory.search("user jazz piano", user_id="u1")[0].id == jazz.id


def test_other_users_rows_never_drop_a_word_from_a_query(make_memory):
    # the share of rows holding a word was counted over every user: another user's many rows
    # left a word out of this user's full-text query (influence across users, and a small
    # user's ranking decided by a big one in a shared database)
    from memlane.retrieval.query import drop_common

    memory = make_memory(search={"common_term_min_docs": 30, "common_term_share": 0.2})
    for i in range(40):
        memory.add(f"zeppelin flight number {i}", user_id="b")
    mine = memory.add("a zeppelin over the lake", user_id="a")
    for text in ("coffee at nine", "a walk in the garden", "piano lessons on friday"):
        memory.add(text, user_id="a")
    cfg = memory.config.search
    terms = ["zeppelin", "garden", "piano"]
    assert drop_common(memory.store, "memories", Scope.of("a"), terms, cfg) == terms  # a's scope is small
    hit = next(h for h in memory.search("zeppelin garden piano", user_id="a", activate=False) if h.id == mine.id)
    assert hit.bm25_rank is not None and hit.highlights == ["zeppelin"]
    # b's own scope is large and the word in every row of it: left out there, as before
    assert drop_common(memory.store, "memories", Scope.of("b"), ["zeppelin", "flight", "lake", "piano"], cfg) \
        == ["lake", "piano"]
    assert drop_common(memory.store, "memories", Scope.of("b", "bot"), terms, cfg) == terms  # an agent's: empty


def test_a_date_in_the_query_favours_what_was_said_then(memory):
    """Two sessions tell the same kind of thing; the one on the named day (or within the
    grace days after a named month) comes first, in English and in Chinese."""
    june, october = datetime(2025, 6, 20, 10, tzinfo=UTC), datetime(2025, 10, 13, 10, tzinfo=UTC)
    for sid, at, text in (("s-june", june, "We went camping by the lake, lovely trip."),
                          ("s-oct", october, "We went camping in the hills, lovely trip.")):
        memory.add_messages(sid, [{"role": "user", "content": text, "created_at": at}], user_id="u1")
    first = lambda q: memory.search(q, user_id="u1", corpus="turns", limit=2)[0].turn.session_id  # noqa: E731
    assert first("Where did we go camping on October 13, 2025?") == "s-oct"
    assert first("Where did we go camping in June?") == "s-june"
    assert first("2025年10月13日去哪里露营了 camping") == "s-oct"


def test_a_relative_date_counts_back_from_the_asking_day(memory):
    """"four weeks ago", "last month", "上周" name days counted back from the memory's clock."""
    june, october = datetime(2025, 6, 20, 10, tzinfo=UTC), datetime(2025, 10, 13, 10, tzinfo=UTC)
    for sid, at, text in (("s-june", june, "We went camping by the lake, lovely trip."),
                          ("s-oct", october, "We went camping in the hills, lovely trip.")):
        memory.add_messages(sid, [{"role": "user", "content": text, "created_at": at}], user_id="u1")
    first = lambda q: memory.search(q, user_id="u1", corpus="turns", limit=2)[0].turn.session_id  # noqa: E731
    memory.clock = lambda: datetime(2025, 11, 10, 9, tzinfo=UTC)
    assert first("Where did we go camping four weeks ago?") == "s-oct"
    assert first("Where did we go camping last month?") == "s-oct"
    assert first("Where did we go camping about 5 months ago?") == "s-june"
    memory.clock = lambda: datetime(2025, 10, 20, 9, tzinfo=UTC)  # a Monday
    assert first("上周去哪里露营了 camping") == "s-oct"
    assert first("Where did we go camping in the past three months?") == "s-oct"


def test_turns_that_state_rank_above_turns_that_ask(memory):
    memory.add_messages("s1", [
        say("user", "Do you know which pottery class in the city I should take this spring?", 0),
        say("assistant", "Sure, let me think.", 1),
        say("user", "Unrelated chat about the weather and the traffic.", 2),
        say("user", "Weekend plans are still open, nothing fixed.", 3),
        say("user", "I signed up for the pottery class at the community centre on Tuesdays.", 4),
    ], user_id="u1")
    top = memory.search("pottery class", user_id="u1", corpus="turns", limit=2)
    assert top[0].content.startswith("I signed up")
    memory.config.search.turn_length_prior = memory.config.search.question_penalty = 0.0
    top = memory.search("pottery class", user_id="u1", corpus="turns", limit=2)
    assert top[0].content.startswith("Do you know")  # BM25 and the vectors alone prefer the question


@pytest.mark.parametrize("lexical_threshold", [0, 10**9])  # the lexical cache, or FTS5 itself
def test_the_dense_query_leaves_out_words_most_rows_hold(make_memory, lexical_threshold):
    """In a conversation every turn starts with a speaker's name: embedded with the query, the
    names pull it towards every turn alike, so the dense side gets the query without them.
    Only a turn's own text counts: its neighbours column holds every name."""
    memory = make_memory(search={"lexical_threshold": lexical_threshold})
    lines = [f"Caroline: note {i} about the garden" if i % 2 else f"Melanie: reply {i} on the weather"
             for i in range(60)] + ["Caroline: I painted a sunrise over the lake last week."]
    for i in range(5, 60, 10):  # in 7 turns' own text, in half the neighbour columns
        lines[i] += " A sunrise walk."
    memory.add_messages("s1", [say("user", text, i) for i, text in enumerate(lines)], user_id="u1")
    seen: list[str] = []

    def embed(text: str):
        seen.append(text)
        return memory.embedder.embed([text], query=True)[0]

    hits = memory.search("What did Caroline's friend paint at sunrise?", user_id="u1", corpus="turns", limit=3,
                         query_vector=embed)
    assert seen == ["What did friend paint at sunrise?"]  # "Caroline" is in half the turns: left out
    assert hits[0].content.startswith("Caroline: I painted")
    memory.search("Caroline", user_id="u1", corpus="turns", query_vector=embed)
    assert seen[-1] == "Caroline"  # nothing would be left: the query stays whole
    memory.config.search.dense_common_share = 1.0
    memory.search("What did Caroline paint?", user_id="u1", corpus="turns", query_vector=embed)
    assert seen[-1] == "What did Caroline paint?"


def test_a_reply_ranks_through_the_question_it_answers(memory):
    """The query's words are in the question; the answer that follows shares none of them."""
    memory.add_messages("s1", [
        say("user", "What is your favourite weekend hobby these days?", 0),
        say("assistant", "Sailing on the bay with my brother, most Saturdays.", 1),
        say("user", "Unrelated: the printer is out of toner again.", 2),
        say("assistant", "Order a cartridge online.", 3),
        say("user", "Also the weather is nice today.", 4),
        say("user", "My neighbour has a new hobby, a hobby for rainy days.", 5),
    ], user_id="u1")

    def rank(text: str) -> int:
        hits = memory.search("favourite weekend hobby", user_id="u1", corpus="turns", limit=6)
        return next(i for i, h in enumerate(hits) if h.content.startswith(text))

    assert rank("Sailing") < rank("My neighbour")
    memory.config.search.reply_prior = 0.0
    assert rank("Sailing") > rank("My neighbour")


def test_a_query_naming_one_speaker_favours_their_turns(memory):
    """Turns carry who said them; a query naming one speaker prefers that speaker's turns,
    in English (any case, possessive) and in Chinese. Naming both favours neither."""
    def said(name: str, text: str, minutes: int) -> dict:
        return {**say("user", text, minutes), "name": name}

    memory.add_messages("s1", [said("Caroline", "I went to a pottery class on Friday.", 0),
                               said("Melanie", "I went to a pottery class on Sunday.", 1),
                               said("小林", "我周五去上了陶艺课。", 2),
                               said("小王", "我周日去上了陶艺课。", 3)], user_id="u1")
    first = lambda q: memory.search(q, user_id="u1", corpus="turns", limit=4)[0].turn.name  # noqa: E731
    assert first("When did melanie go to a pottery class?") == "Melanie"
    assert first("Caroline's pottery class: which day?") == "Caroline"
    assert first("小王哪天去上陶艺课？") == "小王"
    assert first("小林哪天去上陶艺课？") == "小林"
    memory.config.search.speaker_prior = 0.0
    assert {first("When did Melanie go to a pottery class?"), first("When did Caroline go to a pottery class?")} \
        == {first("When did Caroline or Melanie go to a pottery class?")}  # without the prior: one order


def test_the_dense_query_leaves_out_chinese_names_most_rows_hold(memory):
    lines = [f"小林：第{i}天在花园里浇花" if i % 2 else f"小王：第{i}天的天气不错" for i in range(60)]
    memory.add_messages("s1", [say("user", text, i) for i, text in enumerate(lines)], user_id="u1")
    seen: list[str] = []

    def embed(text: str):
        seen.append(text)
        return memory.embedder.embed([text], query=True)[0]

    memory.search("小林上周画了什么日出？", user_id="u1", corpus="turns", query_vector=embed)
    assert "小林" not in seen[-1] and "日出" in seen[-1]  # the name is in half the turns: left out
    memory.search("小林和小王", user_id="u1", corpus="turns", query_vector=embed)
    assert seen[-1] == "小林和小王"  # nothing would be left: the query stays whole


def test_filters_on_fact_columns_keep_what_filters_on_records_keep():
    """Search filters candidates on fact columns (numpy), then each returned record again:
    both must keep the same memories."""
    import random

    import numpy as np

    from memlane.models import MemoryFacts, MemoryRecord
    from memlane.retrieval.filters import Filters
    from memlane.retrieval.filters import keep_memory as _keep_memory
    from memlane.retrieval.filters import kept_facts as _kept_facts

    rng = random.Random(3)
    records = [MemoryRecord(
        id=f"m{i}", user_id="u1", content="x", category=rng.choice(["fact", "todo", "rule"]), score=rng.random(),
        created_at=T0 + timedelta(days=rng.randint(-30, 30)), updated_at=T0,
        last_activated=T0 - timedelta(hours=rng.randint(0, 900)), status=rng.choice(["active", "archived"]),
        source_session=rng.choice([None, "s1", "s2"]),
        expires_at=rng.choice([None, T0 - timedelta(days=1), T0 + timedelta(days=1)])) for i in range(300)]
    facts = MemoryFacts.of_rows([(i, m.score, m.last_activated.timestamp(), m.expires_at and m.expires_at.timestamp(),
                                  m.created_at.timestamp(), m.status, m.category, m.source_session)
                                 for i, m in enumerate(records)])
    for f in [Filters(), Filters(status=None), Filters(include_expired=True), Filters(category="todo"),
              Filters(category=["fact", "rule"], status="archived"), Filters(session_id="s2"),
              Filters(since=T0 - timedelta(days=5), until=T0 + timedelta(days=5), status=None)]:
        kept = _kept_facts(facts, f, T0)
        assert kept.rowid.tolist() == [i for i, m in enumerate(records) if _keep_memory(m, f, T0)], f
        assert np.array_equal(kept.score, facts.score[kept.rowid])


def test_a_short_page_is_the_start_of_a_longer_one_even_among_ties(mem):
    # identical texts at one instant tie on every signal; the page size must not pick among
    # them differently (ids are random: sorting by them reordered only what a page held)
    memory = mem
    for i in range(6):
        memory.add_messages(f"s{i}", [say("user", "I adopted a cat called Mochi", 0)], user_id="u1")
        memory.add("The user adopted a cat called Mochi", user_id="u1", session_id=f"s{i}", importance=0.5)
    memory.flush()
    for corpus in ("turns", "memories"):
        hits = memory.search("cat Mochi", user_id="u1", corpus=corpus, limit=10, activate=False)
        hits[0].highlights.append("edited")  # a hit is the caller's: its twin keeps its own list
        assert hits[1].highlights == ["cat", "mochi"]
        full = [h.id for h in hits]
        assert len(full) == 6
        for limit in (1, 2, 3, 5):
            page = memory.search("cat Mochi", user_id="u1", corpus=corpus, limit=limit, activate=False)
            assert [h.id for h in page] == full[:limit], (corpus, limit)


def test_a_filter_finds_its_turns_among_a_long_history_of_better_matches(memory):
    # 300 turns of one session outrank the other session's only match: a filter applied to the
    # scope's best 100 candidates alone returned nothing
    memory.add_messages("big", [say("user", f"the cat sat on mat number {i}", i) for i in range(300)], user_id="u1")
    memory.add_messages("small", [say("assistant", "Long ago, in a land far beyond the hills and rivers, "
                                  "lived a small grey cat with many stories to tell about the world", 400)],
                        user_id="u1")
    memory.flush()
    for filters in ({"session_id": "small"}, {"roles": ["assistant"]}, {"since": T0 + timedelta(minutes=350)}):
        hits = memory.search("cat", user_id="u1", corpus="turns", limit=5, filters=filters)
        assert [h.turn.session_id for h in hits] == ["small"], filters
    assert memory.search("cat", user_id="u1", corpus="turns", filters={"session_id": "none"}) == []


def test_a_page_wider_than_the_index_beam_is_served(make_memory):
    # over ann_threshold vectors the store searches an HNSW index: a page of 600 turns widens
    # the pool past 400 candidates to 1,600, past pgvector's bound of 1,000 for hnsw.ef_search
    # (a BackendError)
    memory = make_memory(search={"ann_threshold": 5})
    memory.add_messages("s", [say("user", f"the cat number {i} likes fish", i) for i in range(450)], user_id="u1")
    memory.flush()
    hits = memory.search("cat fish", user_id="u1", corpus="turns", limit=600)
    assert len(hits) == 450 == len({h.id for h in hits})


def test_a_page_pasted_as_the_query_is_searched(memory):
    # distinct words past search.max_query_terms: PostgreSQL's tsquery of them all exceeded its
    # stack depth (a BackendError), and counting each one took minutes; the first words decide.
    # A long query is read by its start and end (issue 34: its question is often last), and
    # only past search.max_query_chars is it refused
    from string import ascii_lowercase

    from memlane.errors import ValidationError
    from memlane.text import keywords

    memory.add_messages("s", [say("user", "the w3x violin lesson", 0), say("user", "an unrelated turn", 1)],
                        user_id="u1")
    cfg = memory.config.search
    words = ["w3x"] + [a + b for a in ascii_lowercase for b in ascii_lowercase] + [f"w{i}x" for i in range(20_000)]
    page = " ".join(words)
    assert len(keywords(page[:cfg.query_read_chars])) > cfg.max_query_terms
    for query in (page, page[4:] + " the violin"):  # the word that finds it: first, then last
        hits = memory.search(query, user_id="u1", corpus="turns", limit=1)
        assert [h.content for h in hits] == ["the w3x violin lesson"], query[-20:]
    with pytest.raises(ValidationError, match="search.max_query_chars") as caught:
        memory.search("w" * (cfg.max_query_chars + 1), user_id="u1", corpus="turns", limit=1)
    assert caught.value.field == "query"
    memory.add("the user takes a w3x violin lesson on Fridays", user_id="u1")
    ctx = memory.build_context(None, "x" * 100_000 + " what about my violin?", user_id="u1")
    assert "violin lesson on Fridays" in ctx.render()


@pytest.mark.parametrize("bad", ["nan", "width", "list", "none"])
def test_a_query_vector_function_returning_no_vector_is_refused(memory, bad):
    import numpy as np

    from memlane.errors import ValidationError

    memory.add_messages("s", [say("user", "my cat is called Mochi", 0)], user_id="u1")
    dims = memory.embedder.dimensions
    made = {"nan": np.full(dims, np.nan, np.float32), "width": np.ones(dims + 1, np.float32),
            "list": [0.1] * dims, "none": None}[bad]
    for corpus in ("turns", "memories"):
        with pytest.raises(ValidationError) as err:
            memory.search("cat", user_id="u1", corpus=corpus, query_vector=lambda text: made)
        assert err.value.field == "query_vector"


def test_highlights_find_every_form_the_stemmer_joins():
    from memlane.text import highlights

    # the prefix shortcut of issue 14 must not lose the stemmer's irregular forms
    assert highlights(["died", "lies", "tied", "running"], "He was dying, lying, tying knots, runs") == [
        "died", "lies", "tied", "running"]


_WORDS = ["cat", "garden", "music", "trip", "coffee", "piano", "river", "book", "train", "market", "dog", "rain"]


def _mixed(i: int) -> str:
    """Three of a dozen words and one of its own: candidates whose scores spread and tie."""
    return " ".join(random.Random(i).sample(_WORDS, 3) + [f"note{i}"])


def test_a_page_is_the_start_of_every_longer_page(make_memory):
    # a page longer than the default candidate pool (50 dense, 100 lexical) ranked a larger
    # pool, whose statistics (BM25 best, dense mean and spread, the session prior's best and
    # the speakers' length means) reordered the first page: limit=10 then limit=100 disagreed
    memory = make_memory(clock=ManualClock(T0))
    for s in range(8):
        memory.add_messages(f"s{s}", [say(("user", "assistant")[i % 2], _mixed(100 * s + i) * (1 + i % 3), i)
                                      for i in range(40)], user_id="u1")
    for i in range(160):
        memory.add(_mixed(5000 + i), user_id="u1", session_id=f"s{i % 8}", importance=(i % 5) / 5)
    for i in range(12):  # an agent's own memories: its searches read the user's shared ones too
        memory.add(_mixed(6000 + i), user_id="u1", agent_id="bot")
    with memory.store.transaction():
        for i in range(120):
            memory.store.insert_episode(Episode(
                id=f"e{i}", user_id="u1", session_id=f"s{i % 8}", summary=_mixed(7000 + i), goal="", outcome="",
                started_at=T0 + timedelta(hours=i), ended_at=T0 + timedelta(hours=i), created_at=T0))
    memory.flush()
    query = "cat garden music"
    cases = [("turns", None, None, 0.0), ("turns", {"session_id": "s3"}, None, 0.0),
             ("turns", {"roles": ["assistant"]}, None, 0.0), ("turns", None, None, 0.5),
             ("memories", None, None, 0.0), ("memories", {"session_id": "s2"}, None, 0.0),
             ("memories", None, "bot", 0.0), ("memories", None, None, 0.5),
             ("episodes", None, None, 0.0), ("episodes", {"session_id": "s1"}, None, 0.0)]

    def page(corpus: str, filters: dict | None, agent: str | None, min_score: float,
             limit: int) -> list[tuple[str, float]]:
        return [(h.id, h.score) for h in memory.search(query, user_id="u1", agent_id=agent, corpus=corpus, limit=limit,
                                                         filters=filters, activate=False, min_score=min_score)]

    for case in cases:
        full = page(*case, 400)
        assert len(full) >= (15 if case[1] or case[3] else 120), case
        assert all(score >= case[3] for _, score in full)
        for limit in (1, 7, 10, 50, 51, 100, 150):
            assert page(*case, limit) == full[:limit], (case, limit)


def test_a_tool_calls_arguments_are_found_and_scored_as_the_turns_words(memory):
    """Seed 002's traces: what an agent passed a tool ("memo": "靠窗座位优先") is searchable like
    the turn's own text, with a real score and highlights, in a turn that also says something."""
    chat = [{"role": "user", "content": f"今天聊点别的话题，第{i}次"} for i in range(20)]
    call = {"id": "c1", "type": "function",
            "function": {"name": "book_train", "arguments": '{"to": "上海", "memo": "靠窗座位优先"}'}}
    chat += [{"role": "user", "content": "帮我订明天去上海的高铁"},
             {"role": "assistant", "content": "好的，我来帮你订票。", "tool_calls": [call]},
             {"role": "tool", "name": "book_train", "content": "已预订 G102 次 08:00"}]
    memory.add_messages("s", chat, user_id="u1")
    hits = memory.search("靠窗座位", user_id="u1", corpus="turns", limit=5, min_score=memory.config.search.min_relevance)
    assert hits and hits[0].turn is not None and hits[0].turn.tool_calls
    assert hits[0].score == pytest.approx(1.0) and set(hits[0].highlights) == {"靠窗", "座位"}
