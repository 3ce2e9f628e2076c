"""Memory search as an agent receives it (issue 29): either language finds the other, a word
every memory holds is no relevance, and searching is reading — below the floor nothing is
returned by default, over any surface, and nothing below it counts as use."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from memlane import Memory
from memlane.crosslingual import PARALLEL, language_axes
from memlane.testing import HashEmbedder
from tests.conftest import T0

# one user's memories, half in each language, each answering one question in the other
MIXED = {
    "works": "The user works as a nurse at St. Mary's Hospital.",
    "tea": "The user prefers green tea to coffee.",
    "sister": "The user's sister Anna lives in Lyon.",
    "cello": "The user plays the cello in a community orchestra.",
    "porto": "The user grew up in Porto.",
    "marathon": "The user is training for a half marathon in March.",
    "peanut": "用户对花生过敏。",
    "cat": "用户养了一只叫麻薯的猫。",
    "vegetarian": "用户吃素。",
    "noise": "用户不喜欢吵闹的餐厅。",
    "bike": "用户每天骑自行车上班。",
    "dentist": "用户下周二要去看牙医。",
}
ACROSS = [  # a question in one language, its answer written in the other
    ("用户在哪里上班？", "works"), ("用户的妹妹住在哪个城市？", "sister"), ("用户会什么乐器？", "cello"),
    ("Is the user allergic to anything?", "peanut"), ("Does the user have a pet?", "cat"),
    ("How does the user get to work?", "bike"),
]


@pytest.fixture(scope="module")
def e5() -> object:
    from memlane.embeddings.local import E5Embedder

    return E5Embedder()


def _filled(make_memory: Callable[..., Memory], e5: object, **search: object) -> tuple[Memory, dict[str, str]]:
    mem = make_memory(embedding={"provider": "e5"}, embedder=e5, search=search)
    ids = {key: mem.add(text, user_id="u").id for key, text in MIXED.items()}
    return mem, ids


def test_a_question_finds_its_answer_in_the_other_language(make_memory: Callable[..., Memory], e5: object) -> None:
    mem, ids = _filled(make_memory, e5)
    for question, key in ACROSS:
        top = [h.id for h in mem.search(question, user_id="u", limit=3, activate=False, min_score=0)]
        assert ids[key] in top, (question, [MIXED[k] for k, i in ids.items() if i in top])
    # the embedder alone puts every memory of the question's language first: the correction is what finds them
    plain, plain_ids = _filled(make_memory, e5, language_alignment_min=2.0)
    found = sum(plain_ids[key] in [h.id for h in plain.search(q, user_id="u", limit=3, activate=False, min_score=0)]
                for q, key in ACROSS)
    assert found < len(ACROSS)


def test_only_an_embedder_that_aligns_languages_gets_a_correction(e5: object) -> None:
    english, chinese = [en for en, _ in PARALLEL], [zh for _, zh in PARALLEL]
    for embedder, aligned in ((e5, True), (HashEmbedder(), False)):
        axes = language_axes(embedder.embed(english), embedder.embed(chinese),  # type: ignore[attr-defined]
                             embedder.embed(english, query=True), embedder.embed(chinese, query=True),  # type: ignore[attr-defined]
                             0.05)
        assert (axes is not None) is aligned
        if axes is not None:  # the direction tells the languages apart
            assert all(axes.chinese(float(v @ axes.passage_axis)) for v in embedder.embed(["用户喜欢爬山。"]))  # type: ignore[attr-defined]
            assert not any(axes.chinese(float(v @ axes.passage_axis))
                           for v in embedder.embed(["The user likes hiking."]))  # type: ignore[attr-defined]
            assert np.allclose(axes.basis @ axes.basis.T, np.eye(len(axes.basis)), atol=1e-5)


def test_a_word_every_memory_holds_is_no_relevance(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    facts = ["The user is vegetarian.", "The user's sister lives in Lyon.", "The user prefers green tea.",
             "The user plays the cello.", "The user grew up in Porto.", "The user has a cat named Mochi.",
             "The user runs every morning.", "The user dislikes noisy restaurants.", "The user reads sci-fi novels.",
             "The user works at Acme as a data engineer."]
    ids = [mem.add(f, user_id="u").id for f in facts]
    weak = mem.search("which car does the user own", user_id="u", activate=False, min_score=0)
    assert all(h.score < mem.config.search.min_relevance for h in weak)  # "user" alone: relevance to none
    hits = mem.search("where does the user work", user_id="u", activate=False)
    assert [h.id for h in hits] == [ids[-1]]
    # the same in Chinese: 用户 is in every memory
    zh = make_memory(home=mem.config.home.parent / "zh")
    for f in ["用户吃素", "用户的妹妹住在里昂", "用户喜欢绿茶", "用户会拉大提琴", "用户在波尔图长大", "用户养了一只猫",
              "用户每天早上跑步", "用户不喜欢吵闹的餐厅", "用户喜欢读科幻小说", "用户在Acme公司当数据工程师"]:
        zh.add(f, user_id="u")
    assert [h.content for h in zh.search("用户在哪家公司工作", user_id="u", activate=False)] == ["用户在Acme公司当数据工程师"]


def test_searching_is_reading_below_the_floor(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(clock=lambda: T0)
    peanut = mem.add("用户对花生过敏", user_id="u")
    others = [mem.add(t, user_id="u") for t in ("The user prefers pytest.", "用户喜欢川菜", "The user likes jazz.")]
    floor = mem.config.search.min_relevance
    assert mem.search("quantum chromodynamics", user_id="u") == []  # nothing relevant: nothing returned
    everything = mem.search("quantum chromodynamics", user_id="u", min_score=0)  # asked for: returned, not used
    assert everything and all(h.score < floor for h in everything)
    assert all(mem.get(m.id, user_id="u").activation_count == 0 for m in [peanut, *others])
    hits = mem.search("花生过敏", user_id="u", min_score=0)  # a relevant hit is a use; the weak ones beside it not
    assert hits[0].id == peanut.id and hits[0].score >= floor
    assert mem.get(peanut.id, user_id="u").activation_count == 1
    assert all(mem.get(m.id, user_id="u").activation_count == 0 for m in others)
    # turns are the trace, ranked by their conversation: every hit found, as before
    mem.add_messages("s", [{"role": "user", "content": "Did you try the ramen place?"},
                           {"role": "assistant", "content": "Yes, the tonkotsu broth was great."}], user_id="u")
    mem.flush()
    assert len(mem.search("ramen", user_id="u", corpus="turns")) == 2


def test_the_cli_and_rest_leave_out_weak_hits_as_the_api_does(make_memory: Callable[..., Memory], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch, sqlite_only: None) -> None:
    """The surfaces, not the stores: one backend."""
    pytest.importorskip("uvicorn")
    from memlane.cli import app
    from tests.webui_support import ui_site

    home = tmp_path / "home"
    mem = make_memory(home=home)
    mem.add("用户对花生过敏", user_id="lin")
    mem.add("The user likes jazz.", user_id="lin")
    with ui_site(mem, "server") as site, httpx.Client(
            base_url=site.base, headers={"Authorization": f"Bearer {site.key['lin']}"}, timeout=30) as c:
        assert c.post("/v1/search", json={"query": "quantum physics"}).json()["hits"] == []
        assert len(c.post("/v1/search", json={"query": "quantum physics", "min_score": 0}).json()["hits"]) == 2
        assert [h["content"] for h in c.post("/v1/search", json={"query": "花生"}).json()["hits"]] == ["用户对花生过敏"]
    mem.close()
    monkeypatch.setenv("MEMLANE_HOME", str(home))
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")
    runner = CliRunner()
    assert "no memories match" in runner.invoke(app, ["search", "quantum physics", "--user", "lin"]).output
    assert "jazz" in runner.invoke(app, ["search", "quantum physics", "--user", "lin", "--min-score", "0"]).output


def test_a_question_asking_for_a_part_of_the_user_s_life_favours_memories_telling_it(
        make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    from memlane.retrieval.slots import asked_slot, tells

    assert asked_slot("What's my job again?") == "work" and asked_slot("Do you remember what I do for a living?") == "work"
    assert asked_slot("我现在开的什么车？") == "vehicle" and asked_slot("我现在在哪个学校？") == "school"
    assert asked_slot("What is the user allergic to?") is None  # no slot: no prior
    assert asked_slot("Where do I live and work?") is None  # two: no prior
    assert tells("The user is a graphic designer.", "work") and tells("用户是药剂师。", "work")
    assert not tells("The user's girlfriend is Jess.", "work") and tells("The user's girlfriend is Jess.", "partner")
    assert not tells("The user owns a flat in the high-tech zone.", "work")
    # someone else's slot, or a slot's word in a phrase of its own, is no answer about the user
    assert asked_slot("what did my daughter study this year?") is None and asked_slot("我同事开的什么车") is None
    assert asked_slot("what's my relationship with my boss?") is None and asked_slot("我对象叫什么") == "partner"
    assert asked_slot("what bike do I ride to work?") is None  # a vehicle and work: no one slot
    assert not tells("The user's sister drives a Jeep.", "vehicle") and not tells("用户的同事养了一只猫。", "pet")
    assert not tells("The user repairs guitars for a living.", "home")
    assert not tells("The user is single-handedly organising the reunion.", "partner")
    assert not tells("The user's dog walker is named Sam.", "pet") and tells("The user studied history at Ohio State.", "school")
    # a job the user does, in Chinese or as a business of one's own; not one the user meets or wants
    assert tells("用户在德勤做审计师。", "work") and tells("用户是银行柜员", "work") and tells("用户自己开了一家肠粉店。", "work")
    assert tells("The user runs his own rice-noodle-roll shop.", "work") and tells("The user owns a bakery downtown.", "work")
    assert not any(tells(m, "work") for m in ("用户被店员骂了", "用户周末去见律师", "用户约了理发师", "用户是会员。", "用户讨厌销售员",
                                              "用户家楼下开了一家奶茶店", "The user runs errands at the store",
                                              "The user started a business plan class"))
    assert asked_slot("我现在的感情状态是什么？") == "partner" and asked_slot("我和同事感情怎么样") is None
    # end to end: the words "job" and "designer" share nothing, the prior puts the job first
    for prior, first in ((0.0, None), (2.0, "The user is a graphic designer.")):
        mem = make_memory(home=tmp_path / f"slot{prior}", search={"slot_prior": prior})
        for fact in ["The user's girlfriend is Jess again.", "The user is a graphic designer.",
                     "The user likes my tea again."]:
            mem.add(fact, user_id="u")
        hits = mem.search("what's my job again?", user_id="u", activate=False, min_score=0, limit=3)
        if first is not None:
            assert hits[0].content == first
        else:
            assert hits[0].content != "The user is a graphic designer."


def test_a_question_about_the_user_passes_over_someone_else_s_memory(
        make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    from memlane.retrieval.slots import asks_of_self, told_of_other

    assert asks_of_self("Where do I work, do you remember?") and asks_of_self("我现在住哪")
    assert asks_of_self("where does the user work?")
    assert not asks_of_self("Where does my sister work?") and not asks_of_self("What does John do?")
    assert told_of_other("John is working on a website for a local business.") and told_of_other("Caroline's mom has cancer.")
    assert not told_of_other("The user is an auditor at Deloitte.") and not told_of_other("Tuesday is the user's gym day.")
    assert not told_of_other("Rex is the user's dog.") and not told_of_other("Jess is the user's girlfriend.")
    # end to end: the words put John's job first; the penalty puts the user's own first
    for penalty, first in ((0.0, "John works at a website company."), (1.0, "The user works at a bank.")):
        mem = make_memory(home=tmp_path / f"other{penalty}", search={"other_subject_penalty": penalty, "slot_prior": 0})
        for fact in ["John works at a website company.", "The user works at a bank."]:
            mem.add(fact, user_id="u")
        hits = mem.search("which website company do I work at?", user_id="u", activate=False, min_score=0, limit=2)
        assert hits[0].content == first
