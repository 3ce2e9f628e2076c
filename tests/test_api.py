"""The Python API: validation, scope isolation and search in Chinese and English."""

from __future__ import annotations

import asyncio

import pytest

from memlane import AsyncMemory, NotFound, ValidationError
from memlane.models import Scope


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.add("   ", user_id="u1"), "content"),
        (lambda m: m.add("", user_id="u1"), "content"),
        (lambda m: m.add("x", user_id="u1", category="gossip"), "category"),
        (lambda m: m.add("x", user_id="u1", importance=1.5), "importance"),
        (lambda m: m.add("x", user_id="u1", importance=-0.1), "importance"),
        (lambda m: m.add("x", user_id="u1", importance="urgent"), "importance"),
        (lambda m: m.add("x", user_id=""), "user_id"),
        (lambda m: m.add("x", user_id=None), "user_id"),
        (lambda m: m.add("x", user_id="u1", source="robot"), "source"),
        (lambda m: m.add("x" * 20_000, user_id="u1"), "content"),
        (lambda m: m.add_messages("s", [{"role": "user", "content": " "}], user_id="u1"), "messages[0].content"),
        (lambda m: m.add_messages("s", [{"role": "robot", "content": "hi"}], user_id="u1"), "messages[0].role"),
        (lambda m: m.add_messages("s", [], user_id="u1"), "messages"),
        (lambda m: m.search("  ", user_id="u1"), "query"),
        (lambda m: m.search("x", user_id="u1", filters={"colour": "red"}), "filters"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(memory, call, field):
    with pytest.raises(ValidationError) as info:
        call(memory)
    assert info.value.field == field
    assert memory.store.raw_count("memories") == 0
    assert memory.store.raw_count("turns") == 0
    assert memory.store.raw_count("memory_events") == 0


def test_a_bad_message_in_a_batch_writes_none_of_it(memory):
    good = {"role": "user", "content": "first"}
    with pytest.raises(ValidationError, match=r"messages\[1\]\.content"):
        too_long = "y" * (memory.config.store.max_turn_chars + 1)
        memory.add_messages("s1", [good, {"role": "user", "content": too_long}], user_id="u1")
    assert memory.store.raw_count("turns") == 0
    assert memory.store.raw_count("sessions") == 0


VERBS = {
    "get": lambda m, mid: m.get(mid, user_id="B"),
    "update": lambda m, mid: m.update(mid, user_id="B", content="hacked"),
    "delete": lambda m, mid: m.delete(mid, user_id="B"),
    "history": lambda m, mid: m.history(mid, user_id="B"),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_user_b_cannot_touch_user_a_by_id(memory, verb):
    rec = memory.add("A 的秘密：银行卡密码提示是橘子", user_id="A")
    with pytest.raises(NotFound):
        VERBS[verb](memory, rec.id)
    assert memory.get(rec.id, user_id="A").content == rec.content


@pytest.mark.parametrize("corpus", ["memories", "turns"])
def test_user_b_never_sees_user_a_in_search_list_or_stats(memory, corpus):
    memory.add("A 的秘密：银行卡密码提示是橘子", user_id="A")
    memory.add_messages("s1", [{"role": "user", "content": "A 的秘密：银行卡密码提示是橘子"}], user_id="A")
    memory.add("unrelated", user_id="B")
    assert memory.search("橘子 秘密", user_id="B", corpus=corpus) == [] or all(
        "秘密" not in h.content for h in memory.search("橘子 秘密", user_id="B", corpus=corpus)
    )
    assert [m.content for m in memory.list(user_id="B")] == ["unrelated"]
    assert memory.get_turns(user_id="B") == []
    stats = memory.stats(user_id="B")
    assert (stats.memories, stats.turns) == (1, 0)
    # the same user under another agent is another scope too: it lists and writes its own, and
    # reads only the user's shared memories besides (Scope.readable), never their turns
    assert memory.list(user_id="A", agent_id="other") == []
    found = memory.search("橘子", user_id="A", agent_id="other", corpus=corpus)
    assert [h.content for h in found] == (["A 的秘密：银行卡密码提示是橘子"] if corpus == "memories" else [])


def test_chinese_search_finds_one_and_two_character_words(memory):
    texts = {
        "cat": "我养了一只橘猫，叫橘子",
        "waist": "最近腰不太舒服，久坐就疼",
        "allergy": "我对花生过敏",
        "fish": "周末喜欢去钓鱼",
        "tea": "下午只喝白茶",
    }
    ids = {k: memory.add(v, user_id="u1").id for k, v in texts.items()}
    for query, key in [("猫", "cat"), ("腰", "waist"), ("过敏", "allergy"), ("鱼", "fish"), ("橘猫", "cat"),
                       ("我对什么过敏？", "allergy"), ("茶", "tea")]:
        hits = memory.search(query, user_id="u1", limit=1)
        assert hits and hits[0].id == ids[key], query


def test_english_search_matches_inflected_forms(memory):
    run = memory.add("She ran her first marathon and loves running", user_id="u1")
    paint = memory.add("Melanie painted a sunrise over the lake", user_id="u1")
    for query, expected in [("runs", run.id), ("marathons", run.id), ("painting", paint.id), ("lakes", paint.id)]:
        hits = memory.search(query, user_id="u1", limit=1)
        assert hits[0].id == expected, query
        assert hits[0].bm25_rank == 1, query


def test_update_reembeds_and_is_audited(memory):
    rec = memory.add("likes coffee", user_id="u1", importance="low")
    updated = memory.update(rec.id, user_id="u1", content="prefers green tea", importance="high")
    assert (updated.content, updated.score) == ("prefers green tea", 0.8)
    assert memory.search("green tea", user_id="u1", limit=1)[0].id == rec.id
    assert memory.search("coffee", user_id="u1", limit=1, min_score=0.0)[0].bm25_rank is None  # old words gone from FTS
    kinds = [(e.kind, (e.before or {}).get("content"), (e.after or {}).get("content")) for e in memory.history(rec.id, user_id="u1")]
    assert kinds == [("ADD", None, "likes coffee"), ("UPDATE", "likes coffee", "prefers green tea")]


def test_an_agents_memory_is_stored_as_such_and_a_person_confirms_it(memory):
    """source "agent" on either store, read back from the row (not a cache); confirming it and an
    agent's rewrite are each one audited UPDATE saying who."""
    said = memory.tools(user_id="u1").call("remember", {"content": "the user waters the orchids on Sundays"})
    rec = memory.store.get_memory(Scope.of("u1"), said["id"])
    assert rec is not None and (rec.source, rec.verified, rec.pinned) == ("agent", False, False)
    assert [m.id for m in memory.list(user_id="u1")] == [rec.id]
    memory.update(rec.id, user_id="u1", verified=True, actor="web")
    memory.update(rec.id, user_id="u1", content="the user waters the orchids on Saturdays", source="agent",
                  verified=False, actor="agent")
    with pytest.raises(ValidationError) as info:
        memory.update(rec.id, user_id="u1", source="robot")
    assert info.value.field == "source"
    trail = [(e.kind, e.actor, e.after["source"], e.after["verified"]) for e in memory.history(rec.id, user_id="u1")]
    assert trail == [("ADD", "agent", "agent", False), ("UPDATE", "web", "agent", True),
                     ("UPDATE", "agent", "agent", False)]


def test_list_filters_by_category_status_session_and_time(memory):
    a = memory.add("fact one", user_id="u1", category="fact", session_id="s1")
    b = memory.add("pref one", user_id="u1", category="preference", importance="high")
    memory.update(a.id, user_id="u1", status="archived")
    assert [m.id for m in memory.list(user_id="u1")] == [b.id, a.id]  # best score first
    assert [m.id for m in memory.list(user_id="u1", category="fact")] == [a.id]
    assert [m.id for m in memory.list(user_id="u1", status="active")] == [b.id]
    assert [m.id for m in memory.list(user_id="u1", session_id="s1")] == [a.id]
    assert memory.list(user_id="u1", since=b.created_at.replace(year=2100)) == []
    # archived memories are not searched unless asked for
    assert a.id not in [h.id for h in memory.search("fact one", user_id="u1")]
    assert a.id in [h.id for h in memory.search("fact one", user_id="u1", filters={"status": "archived"})]


def test_expired_memories_are_never_returned(memory):
    from datetime import timedelta

    rec = memory.add("temporary note about the demo", user_id="u1",
                     expires_at=memory.clock() - timedelta(minutes=1))
    assert rec.id not in [h.id for h in memory.search("temporary demo note", user_id="u1")]


def test_async_memory_wraps_the_same_core(memory):
    async def run():
        am = AsyncMemory(memory)
        rec = await am.add("异步写入的记忆", user_id="u1")
        hits = await am.search("异步", user_id="u1")
        return rec, hits

    rec, hits = asyncio.run(run())
    assert hits[0].id == rec.id
    assert memory.get(rec.id, user_id="u1").content == "异步写入的记忆"


def test_empty_texts_and_punctuation_queries_do_not_break_search(memory):
    memory.add("用户喜欢猫", user_id="u1")
    memory.add_messages("s", [{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function"}]},
                              {"role": "user", "content": "猫"}], user_id="u1")
    assert memory.search("？", user_id="u1") == []
    assert memory.search("猫", user_id="u1", corpus="turns")[0].content == "猫"


def test_add_with_a_chosen_id_then_that_id_again_is_a_conflict(memory):
    """`memory_id`: a caller's own key for a memory (a framework store's item key); the scope
    held while it is checked, so of writers adding one id at once exactly one adds it."""
    from concurrent.futures import ThreadPoolExecutor

    from memlane.errors import Conflict

    rec = memory.add("Lin's locker code is 1234", user_id="u1", memory_id="locker_u1")
    assert rec.id == "locker_u1" and memory.get("locker_u1", user_id="u1").content == rec.content
    with pytest.raises(Conflict) as info:
        memory.add("Lin's locker code is 9876", user_id="u1", memory_id="locker_u1")
    assert info.value.field == "memory_id"
    with pytest.raises(ValidationError) as info:
        memory.add("x", user_id="u1", memory_id="no spaces/here")
    assert info.value.field == "memory_id"

    def add(i: int) -> str:
        try:
            return memory.add(f"code {i}", user_id="u1", memory_id="raced").content
        except Conflict:
            return "conflict"

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(add, range(8)))
    assert results.count("conflict") == 7
    assert [m.content for m in memory.list(user_id="u1") if m.id == "raced"] == [
        next(r for r in results if r != "conflict")]
    memory.delete("raced", user_id="u1")
    assert memory.add("code again", user_id="u1", memory_id="raced").content == "code again"  # a deleted id is free


def test_the_distinct_flag_is_a_boolean(memory):
    with pytest.raises(ValidationError) as info:
        memory.add("x", user_id="u1", metadata={"distinct": "yes"})
    assert info.value.field == "metadata.distinct"
