"""Long turns: a fact in the middle of a long reply is found by meaning (its passage's
vector), and a turn's passage vectors live and die with the turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from memlane import Memory
from memlane.indexing import content_hash, passages
from memlane.store import PASSAGE_BASE

FILLER = ("Here is a general overview of budgeting apps and how people compare them before choosing one. "
          * 12)
FACT = "Your sister Imogen keeps her violin at the conservatory locker number forty two. "
LONG_REPLY = FILLER + FACT + FILLER  # ~2,500 characters, the fact in the middle


def _fill(mem: Memory) -> list[str]:
    # near misses: each shares a few of the fact's words, none holds it
    msgs = [{"role": "user", "content": t} for t in (
        "My sister is learning the violin this year.", "The conservatory opens at nine.",
        "Is locker number twelve still free?", "Imogen said she might visit in spring.",
        "Forty two is a fine answer to most things.", "Where do people keep a violin?")]
    msgs.insert(3, {"role": "assistant", "content": LONG_REPLY})
    turns = mem.add_messages("s1", msgs, user_id="u")
    mem.flush()
    return [t.id for t in turns]


@pytest.mark.parametrize("count", [0, 30])
def test_a_fact_deep_in_a_long_reply_is_found_by_its_meaning(make_memory: Callable[..., Memory],
                                                              count: int) -> None:
    # the dense side alone decides: no neighbour smoothing or turn priors in the way;
    # short passages: the hash embedder is a bag of words, and a fact diluted in 500 characters
    # of filler is no nearer than a near miss (e5 finds it at 500: bench/retrieval.py)
    mem = make_memory(embedding={"passages": count, "passage_chars": 100},
                      search={"dense_neighbour_weights": [], "turn_length_prior": 0.0, "question_penalty": 0.0,
                              "session_prior": 0.0, "reply_prior": 0.0})
    _fill(mem)
    # the words of the query match nothing: only the dense side can find the turn
    vector = mem.embedder.embed([FACT], query=True)[0]
    hits = mem.search("qqq", user_id="u", corpus="turns", limit=3, query_vector=vector)
    top = hits[0].content if hits else ""
    assert (top == LONG_REPLY) is (count > 0)


def test_passage_vectors_go_with_their_turn(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    ids = _fill(mem)
    n_passages = mem.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,))
    assert n_passages == len(passages(LONG_REPLY, 200, 500, 8)) >= 4
    assert mem.store.raw_count("vec_turns", "rowid < ?", (PASSAGE_BASE,)) == len(ids)
    long_id = next(t.id for t in mem.get_turns(user_id="u") if t.content == LONG_REPLY)
    mem.delete_turns([long_id], user_id="u")
    assert mem.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == 0
    vector = mem.embedder.embed([FACT], query=True)[0]
    assert all(h.content != LONG_REPLY for h in mem.search("qqq", user_id="u", corpus="turns", query_vector=vector))
    mem.purge(user_id="u")
    assert mem.store.raw_count("vec_turns") == 0


def test_forgetting_a_long_turn_drops_its_passages_cached_vectors(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _fill(mem)
    hashes = sorted({content_hash(p) for p in passages(LONG_REPLY, 200, 500, 8)})
    model = mem.embedder.model_id
    assert len(mem.store.cache_get(model, hashes)) == len(hashes) > 0
    long_id = next(t.id for t in mem.get_turns(user_id="u") if t.content == LONG_REPLY)
    mem.delete_turns([long_id], user_id="u")
    assert mem.store.cache_get(model, hashes) == {}


def test_a_new_embedder_rebuilds_passages_once(make_memory: Callable[..., Memory], tmp_path) -> None:
    mem = make_memory(home=tmp_path / "h")
    _fill(mem)
    before = mem.store.raw_count("vec_turns")
    mem.close()
    again = make_memory(home=tmp_path / "h", embedding={"dimensions": 128})  # another model id: re-embed
    again.flush()
    assert again.store.raw_count("vec_turns") == before
    again.flush()  # nothing pending, nothing doubled
    assert again.store.raw_count("vec_turns") == before


@pytest.mark.parametrize("text", ["短" * 3000, "word " * 900, "x" * 5000, "a. " * 2000, "\n" * 4000 + "tail"])
def test_passages_cover_the_text_in_bounded_pieces(text: str) -> None:
    out = passages(text, 200, 500, 8)
    assert 1 <= len(out) <= 8
    assert all(0 < len(p) <= 500 + 125 for p in out)
    assert "".join(p.replace(" ", "").replace("\n", "") for p in out) in text.replace(" ", "").replace("\n", "")


@pytest.mark.parametrize("weight", [0.5, 1.0])
def test_a_passage_raises_its_turn_by_passage_weight(make_memory: Callable[..., Memory], weight: float) -> None:
    # a long turn holds many vectors, so its best one is likelier to be near any query: at
    # 0.5 its own key still counts, and a short turn stating the fact comes first, with the
    # long reply next, above the near misses; at 1.0 a turn is its best vector
    mem = make_memory(embedding={"passages": 30, "passage_chars": 100},
                      search={"dense_neighbour_weights": [], "turn_length_prior": 0.0, "question_penalty": 0.0,
                              "session_prior": 0.0, "reply_prior": 0.0, "passage_weight": weight})
    short = "Imogen keeps the violin in a locker at the conservatory."
    msgs = [{"role": "user", "content": t} for t in (
        "My sister is learning the violin this year.", "The conservatory opens at nine.", short,
        "Is locker number twelve still free?")]
    msgs.insert(2, {"role": "assistant", "content": LONG_REPLY})
    mem.add_messages("s1", msgs, user_id="u")
    mem.flush()
    vector = mem.embedder.embed([FACT], query=True)[0]
    top = [h.content for h in mem.search("qqq", user_id="u", corpus="turns", limit=2, query_vector=vector)]
    assert top == ([short, LONG_REPLY] if weight < 1 else [LONG_REPLY, short])


def test_turns_embedded_without_passages_get_them_when_passages_are_turned_on(
        make_memory: Callable[..., Memory], tmp_path) -> None:
    # a store from before passages (or with embedding.passages 0) holds its long turns as their
    # key alone: turned on, they are embedded again, once; turned off, their passages go
    ranking = {"dense_neighbour_weights": [], "turn_length_prior": 0.0, "question_penalty": 0.0,
               "session_prior": 0.0, "reply_prior": 0.0}
    mem = make_memory(home=tmp_path / "h", embedding={"passages": 0, "passage_chars": 100}, search=ranking)
    _fill(mem)
    assert mem.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == 0
    mem.close()
    again = make_memory(home=tmp_path / "h", embedding={"passages": 30, "passage_chars": 100}, search=ranking)
    again.flush()
    n_passages = again.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,))
    assert n_passages == len(passages(LONG_REPLY, 200, 100, 30)) > 0
    vector = again.embedder.embed([FACT], query=True)[0]
    assert again.search("qqq", user_id="u", corpus="turns", limit=1, query_vector=vector)[0].content == LONG_REPLY
    again.close()
    same = make_memory(home=tmp_path / "h", embedding={"passages": 30, "passage_chars": 100}, search=ranking)
    assert same.flush() == 0  # the same settings: nothing embedded again
    same.close()
    off = make_memory(home=tmp_path / "h", embedding={"passages": 0, "passage_chars": 100}, search=ranking)
    off.flush()
    assert off.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == 0
    assert off.store.raw_count("vec_turns") == 7
    off.store.set_meta("turn_vector_keys", "not:a:setting")  # a damaged value opens, and re-embeds
    off.close()
    damaged = make_memory(home=tmp_path / "h", embedding={"passages": 30, "passage_chars": 100}, search=ranking)
    damaged.flush()
    assert damaged.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == n_passages


# ---- key first (issue 34): every key before any passage, passages in a second pass --------


class _Recording:
    """The hash embedder, keeping the order of what it embedded (passages, not queries)."""

    def __init__(self, on_passage: Callable[[], None] | None = None) -> None:
        from memlane.embeddings.hashing import HashEmbedder

        self._inner = HashEmbedder()
        self.model_id, self.dimensions = self._inner.model_id, self._inner.dimensions
        self.seen: list[str] = []
        self._on_passage = on_passage

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not query:
            self.seen += texts
            if self._on_passage is not None and any(t in PASSAGE_TEXTS or t in _LONG_PASSAGES for t in texts):
                hook, self._on_passage = self._on_passage, None
                hook()
        return self._inner.embed(texts, query=query)


PASSAGE_TEXTS = set(passages(LONG_REPLY, 200, 100, 30))
KEY_FIRST = {"passages": 30, "passage_chars": 100}


def _long(i: int) -> str:
    """A long turn of its own: every passage differs from another turn's (none from the cache)."""
    return f"Reply {i}. " + LONG_REPLY.replace("overview", f"overview {i}")


_LONG_PASSAGES = {p for i in range(8) for p in passages(_long(i), 200, 100, 30)}


def _long_turns(mem: Memory, session: str, n: int) -> None:
    from memlane.importers import Conversation

    mem.import_conversations([Conversation(session, [{"role": "assistant", "content": _long(i)} for i in range(n)])],
                             user_id="u", embed=False)


def test_every_key_is_embedded_before_any_passage(make_memory: Callable[..., Memory]) -> None:
    rec = _Recording()
    mem = make_memory(embedding=KEY_FIRST, embedder=rec)
    _long_turns(mem, "s1", 5)
    assert mem.flush() == 5
    keys = [i for i, t in enumerate(rec.seen) if t.startswith("Reply ")]
    extra = [i for i, t in enumerate(rec.seen) if t in _LONG_PASSAGES]
    assert len(keys) == 5 and extra and max(keys) < min(extra)
    # and the turns hold key and passages as before
    per_turn = [len(passages(_long(i), 200, 100, 30)) for i in range(5)]
    assert mem.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == sum(per_turn)
    assert mem.store.pending_passages(10) == []


def test_a_turn_is_searchable_by_its_key_while_its_passages_wait_and_a_kill_between_the_passes_loses_none(
        make_memory: Callable[..., Memory], tmp_path) -> None:
    from memlane.indexing import index_keys

    ranking = {"dense_neighbour_weights": [], "turn_length_prior": 0.0, "question_penalty": 0.0,
               "session_prior": 0.0, "reply_prior": 0.0}
    mem = make_memory(home=tmp_path / "h", embedding=KEY_FIRST, search=ranking)
    msgs = _fill_unembedded(mem)
    # the first pass alone, as a process killed before the second leaves it
    assert index_keys(mem.store, mem.embedder, max_chars=200, passage_chars=100, max_passages=30) == len(msgs)
    assert [r[2] for r in mem.store.pending_passages(10)] == [LONG_REPLY]
    assert mem.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == 0
    assert mem.stats(user_id="u").turns_unembedded == 0  # every turn has its key
    # searchable by its key's meaning; the fact deep in it not yet
    key = mem.embedder.embed([LONG_REPLY[:200]], query=True)[0]
    assert mem.search("qqq", user_id="u", corpus="turns", limit=1, query_vector=key)[0].content == LONG_REPLY
    fact = mem.embedder.embed([FACT], query=True)[0]
    assert all(h.content != LONG_REPLY for h in mem.search("qqq", user_id="u", corpus="turns", limit=1,
                                                           query_vector=fact))
    mem.close()
    again = make_memory(home=tmp_path / "h", embedding=KEY_FIRST, search=ranking)
    assert again.flush() == 0  # no key to embed: only the passages left waiting
    assert again.store.pending_passages(10) == []
    assert again.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == len(passages(LONG_REPLY, 200, 100, 30))
    assert again.search("qqq", user_id="u", corpus="turns", limit=1, query_vector=fact)[0].content == LONG_REPLY


def _fill_unembedded(mem: Memory) -> list[str]:
    msgs = ["My sister is learning the violin this year.", "The conservatory opens at nine.", LONG_REPLY,
            "Is locker number twelve still free?"]
    from memlane.importers import Conversation

    mem.import_conversations([Conversation("s1", [{"role": "user", "content": t} for t in msgs])], user_id="u",
                             embed=False)
    return msgs


def test_turns_waiting_for_passages_are_cut_again_under_new_settings(make_memory: Callable[..., Memory],
                                                                     tmp_path) -> None:
    from memlane.indexing import index_keys

    mem = make_memory(home=tmp_path / "h", embedding=KEY_FIRST)
    _fill_unembedded(mem)
    index_keys(mem.store, mem.embedder, max_chars=200, passage_chars=100, max_passages=30)
    mem.close()
    # a longer key: the waiting turn's key changed too, and it is embedded again from its key
    other = make_memory(home=tmp_path / "h", embedding={**KEY_FIRST, "max_chars": 300})
    other.flush()
    assert other.store.pending_passages(10) == []
    assert other.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == len(passages(LONG_REPLY, 300, 100, 30))
    other.close()
    # passages off while one waits: it keeps its key alone and waits no more
    off = make_memory(home=tmp_path / "h2", embedding=KEY_FIRST)
    _fill_unembedded(off)
    index_keys(off.store, off.embedder, max_chars=200, passage_chars=100, max_passages=30)
    off.close()
    none = make_memory(home=tmp_path / "h2", embedding={"passages": 0})
    none.flush()
    assert none.store.pending_passages(10) == []
    assert none.store.raw_count("vec_turns", "rowid >= ?", (PASSAGE_BASE,)) == 0
    assert none.store.raw_count("vec_turns") == 4


def test_the_indexer_takes_new_turns_keys_before_the_passages_left(make_memory: Callable[..., Memory]) -> None:
    # a long import's passages are being embedded when a new turn comes: its key goes next,
    # before the passages of the turns still waiting
    holder: dict[str, Memory] = {}

    def write() -> None:
        holder["mem"].add_messages("late", [{"role": "user", "content": "Late news: the violin is sold."}],
                                   user_id="u")

    rec = _Recording(on_passage=write)
    mem = make_memory(embedding={**KEY_FIRST, "background": True, "passage_step": 1}, embedder=rec)
    holder["mem"] = mem
    _long_turns(mem, "s1", 4)
    assert mem.vectors.wait_idle(30)
    late = rec.seen.index("Late news: the violin is sold.")
    passage_runs = [i for i, t in enumerate(rec.seen) if t in _LONG_PASSAGES]
    assert passage_runs and passage_runs[0] < late < passage_runs[-1]
    assert mem.store.pending_passages(10) == []
