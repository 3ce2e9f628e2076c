"""The lexical cache (store/lexindex.py) ranks exactly as FTS5 does: with "scope" statistics
as FTS5 over a database holding only the scope's rows, with "corpus" statistics as FTS5 over
the shared table. It stays fresh across stores and restarts, and never shows one scope's rows
to another."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

from memlane import Memory
from memlane.models import MemoryRecord, Scope, Turn
from memlane.retrieval.query import analyse
from memlane.store.lexindex import COLUMNS, LexSettings, Tokenizer
from memlane.store.migrations import scope_token
from memlane.store.postings import build
from memlane.store.sqlite import SQLiteStore
from memlane.text import index_term

NOW = datetime(2025, 1, 1, tzinfo=UTC)
EN = ["run", "runs", "running", "runner", "ran", "cook", "cooking", "cooked", "coffee", "espresso", "pasta", "travel", "travelling", "tokyo", "lisbon", "meeting", "meetings", "deadline", "python", "database", "allergy", "peanuts", "garden", "kitchen"]
ZH = ["咖啡", "橘猫", "猫", "过敏", "花生", "东京", "旅行", "会议", "数据库", "跑步", "花园"]
SCOPES = [Scope(user_id=u, agent_id=a) for u in ("u1", "u2", "u3") for a in ("", "bot")]
U1 = Scope(user_id="u1")
SIZES = [1200, 400, 150, 40, 8, 1]  # rows of SCOPES[i] in `fill_uneven`


def sentence(rng: random.Random) -> str:
    words = rng.choices(EN + ZH, k=rng.randint(1, 14))
    return " ".join(words) + rng.choice([".", "!", "?", ""])


def memory(i: int, scope: Scope, content: str) -> MemoryRecord:
    return MemoryRecord(id=f"m{i}", user_id=scope.user_id, agent_id=scope.agent_id, content=content,
                        category="fact", score=0.5, created_at=NOW, updated_at=NOW, last_activated=NOW)


def queries(rng: random.Random, n: int) -> list[str]:
    """FTS5 matches as search builds them, some with repeated or unknown words."""
    out = []
    for _ in range(n):
        words = rng.sample(EN + ZH, rng.randint(1, 4))
        if rng.random() < 0.2:
            words.append(rng.choice(["running", "zebra", "橘猫", words[0]]))
        out.append(analyse(" ".join(words))[1])
    return out


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[Callable[..., SQLiteStore]]:
    made: list[SQLiteStore] = []

    def factory(threshold: int = 0, statistics: str = "scope") -> SQLiteStore:
        settings = LexSettings(threshold=threshold, statistics=statistics)  # type: ignore[arg-type]
        store = SQLiteStore(tmp_path / "memlane.db", lexical=settings)
        made.append(store)
        return store

    yield factory
    for s in made:
        s.close()


def fill(store: SQLiteStore, n: int, seed: int = 0, start: int = 0) -> None:
    rng = random.Random(seed)
    store.insert_memories([memory(start + i, rng.choice(SCOPES), sentence(rng)) for i in range(n)])


def fill_uneven(store: SQLiteStore, seed: int = 0) -> None:
    """SCOPES[i] holding SIZES[i] memories, interleaved as in a shared server."""
    rng = random.Random(seed)
    owners = [s for s, n in zip(SCOPES, SIZES, strict=True) for _ in range(n)]
    rng.shuffle(owners)
    store.insert_memories([memory(i, s, sentence(rng)) for i, s in enumerate(owners)])


def alone(store: SQLiteStore, corpus: str, scope: Scope) -> Callable[..., list[tuple[int, float]]]:
    """FTS5's own ranking over a new database holding only the scope's rows of `corpus`, as
    they are now in the store, under the same rowids: the reference of "scope" statistics."""
    fts, cols = COLUMNS[corpus]
    names = ", ".join([*cols, "scope"])
    token = scope_token(scope.user_id, scope.agent_id)
    source = apsw.Connection(str(store.path), flags=apsw.SQLITE_OPEN_READONLY)
    rows = source.execute(f"SELECT rowid, {names} FROM {fts} WHERE {fts} MATCH ?", (f'scope : "{token}"',)).fetchall()
    source.close()
    db = apsw.Connection(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE {fts} USING fts5({names}, tokenize='porter unicode61')")
    db.executemany(f"INSERT INTO {fts}(rowid, {names}) VALUES ({', '.join('?' * (len(cols) + 2))})", rows)

    def rank(match: str, limit: int, weights: Sequence[float] = (1.0,)) -> list[tuple[int, float]]:
        w = ", ".join(str(x) for x in [*weights, *[1.0] * (len(cols) - len(weights)), 0.0])
        return [(int(r), float(s)) for r, s in db.execute(
            f"SELECT rowid, bm25({fts}, {w}) AS s FROM {fts} WHERE {fts} MATCH ? ORDER BY s LIMIT ?", (match, limit))]

    return rank


def same_ranking(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    return [r for r, _ in got] == [r for r, _ in want] and [s for _, s in got] == pytest.approx(
        [s for _, s in want], rel=1e-9)


def test_scope_statistics_rank_memories_as_fts5_over_the_scope_alone(
        open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    fill_uneven(store)
    matches = queries(random.Random(11), 30)
    for round_ in range(2):
        found = 0
        for scope in SCOPES:
            reference = alone(store, "memories", scope)
            for match in matches:
                got = store.fts("memories", scope, match, 20)
                assert same_ranking(got, reference(match, 20)), (round_, match, scope)
                found += bool(got)
        assert found > 75
        # rows added, replaced and deleted after the build: the delta and dead rows count too
        rng = random.Random(12)
        for i in range(40):
            store.insert_memory(memory(5000 + 100 * round_ + i, SCOPES[i % 4], sentence(rng)))
        for i in range(round_, 300, 9):
            owner = next(s for s in SCOPES if store.get_memory(s, f"m{i}") is not None)
            store.delete_memory(owner, f"m{i}")
    assert store.lexical.builds == 1  # the cache answered


def test_scope_statistics_rank_turns_as_fts5_over_the_scope_alone(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    rng = random.Random(13)
    owners = [s for s, n in zip(SCOPES, [700, 250, 60, 9, 0, 0], strict=True) for _ in range(n)]
    rng.shuffle(owners)
    rows: list[tuple[int, str, Scope]] = []
    for i, scope in enumerate(owners):
        turn = Turn(id=f"t{i}", user_id=scope.user_id, agent_id=scope.agent_id, session_id=f"s{i // 20}",
                    seq=i % 20 + 1, role="user", content=sentence(rng), created_at=NOW, token_count=5)
        rows.append((store.insert_turn(turn), turn.content, scope))
    for i, (rowid, body, scope) in enumerate(rows):  # neighbours' text (same scope) as context
        near = [c for _, c, s in rows[max(0, i - 3) : i + 4] if s == scope and c != body]
        store.set_turn_context(rowid, body, " ".join(near))
    for scope in SCOPES[:4]:
        reference = alone(store, "turns", scope)
        for match in queries(random.Random(14), 40):
            got = store.fts("turns", scope, match, 30, (1.0, 0.3))
            assert same_ranking(got, reference(match, 30, (1.0, 0.3))), (match, scope)
    assert store.lexical.builds == 1


def test_corpus_statistics_rank_memories_exactly_as_fts5(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store(statistics="corpus")
    fill(store, 3000)
    for i in range(50):  # the single-row write path too
        store.insert_memory(memory(5000 + i, SCOPES[i % len(SCOPES)], sentence(random.Random(i))))
    found = 0
    for match in queries(random.Random(1), 120):
        for scope in SCOPES:
            got = store.fts("memories", scope, match, 20)
            assert got == store.fts5("memories", scope, match, 20), (match, scope)
            found += bool(got)
    assert found > 500
    assert store.lexical.builds == 1  # the cache answered


def test_corpus_statistics_rank_turns_exactly_as_fts5_with_column_weights(
        open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store(statistics="corpus")
    rng = random.Random(2)
    rows: list[tuple[int, str]] = []
    for i in range(1500):
        scope = SCOPES[i % 3]
        turn = Turn(id=f"t{i}", user_id=scope.user_id, agent_id=scope.agent_id, session_id=f"s{i // 20}",
                    seq=i % 20 + 1, role="user", content=sentence(rng), created_at=NOW, token_count=5)
        rows.append((store.insert_turn(turn), turn.content))
    for i, (rowid, body) in enumerate(rows):  # neighbours' text as context, as add_messages does
        store.set_turn_context(rowid, body, " ".join(c for _, c in rows[max(0, i - 2) : i + 3] if c != body))
    for match in queries(random.Random(3), 80):
        for scope in SCOPES[:3]:
            got = store.fts("turns", scope, match, 30, (1.0, 0.3))
            assert got == store.fts5("turns", scope, match, 30, (1.0, 0.3)), (match, scope)
    assert store.lexical.builds == 1


@pytest.mark.parametrize("statistics", ["scope", "corpus"])
def test_a_word_in_every_row_ranks_exactly(open_store: Callable[..., SQLiteStore], statistics: str) -> None:
    """Rows holding only a near-zero-idf word are skipped when they cannot reach the top k;
    the answer stays FTS5's, also when they can (too few other matches). One scope: both
    statistics are the table's."""
    store = open_store(statistics=statistics)
    rng = random.Random(6)
    u9 = Scope(user_id="u9")
    store.insert_memories([memory(i, u9, "note " + sentence(rng)) for i in range(6000)])
    store.insert_memory(memory(9000, u9, "note zeppelin"))
    for words in ["note coffee", "note zeppelin", "note pasta 猫", "note", "zeppelin note running"]:
        for limit in (1, 5, 20, 100):
            assert store.fts("memories", u9, analyse(words)[1], limit) == store.fts5(
                "memories", u9, analyse(words)[1], limit), (words, limit)


def test_stemmed_and_chinese_words_are_found(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    fill(store, 200)
    runs = store.insert_memory(memory(900, U1, "She runs every morning"))
    cat = store.insert_memory(memory(901, U1, "我家的橘猫很胖"))
    assert runs in [r for r, _ in store.fts("memories", U1, analyse("running")[1], 500)]
    assert cat in [r for r, _ in store.fts("memories", U1, analyse("猫")[1], 500)]
    assert store.lexical.builds == 1


def test_phrases_and_scope_tokens_are_left_to_fts5(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    fill(store, 300)
    rowid = store.insert_memory(memory(900, U1, "the foo_bar flag and foo bar"))
    assert rowid in [r for r, _ in store.fts("memories", U1, '"foo_bar"', 50)]
    # "foo_bar" is the phrase "foo bar" to FTS5; a scope's token would match the scope column
    for match in ['"foo_bar" OR "coffee"', f'"{scope_token("u2", "")}"', 'coffee AND pasta']:
        assert store.fts("memories", U1, match, 50) == store.fts5("memories", U1, match, 50)


def lexical_ids(mem: Memory, query: str) -> list[str]:
    """Ids of u1's hits found by their words (the dense side finds neighbours of any query)."""
    return [h.id for h in mem.search(query, user_id="u1", activate=False, limit=50) if h.bm25_rank is not None]


def test_changes_are_seen_in_this_and_another_process(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    home = tmp_path / "shared"
    first = make_memory(home=home)
    fill(first.store, 300)  # type: ignore[arg-type]
    ids = lexical_ids
    assert ids(first, "zeppelin") == []
    assert first.store.lexical.builds == 1  # type: ignore[attr-defined]

    added = first.add("a zeppelin over the garden", user_id="u1")
    assert ids(first, "zeppelin") == [added.id]
    first.update(added.id, user_id="u1", content="a blimp over the garden")
    assert ids(first, "zeppelin") == []
    assert ids(first, "blimp") == [added.id]

    second = make_memory(home=home)
    other = second.add("zeppelins at dawn", user_id="u1")
    second.update(added.id, user_id="u1", content="a zeppelin again")
    assert set(ids(first, "zeppelin")) == {added.id, other.id}
    assert ids(first, "blimp") == []
    second.delete(other.id, user_id="u1")
    owner = next(s for s in SCOPES if second.store.get_memory(s, "m0") is not None)  # a row of the build
    gone = first.store.memory_rowid(owner, "m0")
    second.delete("m0", user_id=owner.user_id, agent_id=owner.agent_id or None)
    assert ids(first, "zeppelin") == [added.id]
    assert gone not in [r for r, _ in first.store.fts("memories", owner, '"coffee" OR "run" OR "猫"', 10**6)]
    for scope in SCOPES:
        reference = alone(first.store, "memories", scope)  # type: ignore[arg-type]
        for match in queries(random.Random(4), 40):
            assert same_ranking(first.store.fts("memories", scope, match, 20), reference(match, 20))


def test_corpus_statistics_are_a_setting(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(search={"lexical_statistics": "corpus"})
    fill(mem.store, 300)  # type: ignore[arg-type]
    for match in queries(random.Random(15), 30):
        for scope in SCOPES:
            assert mem.store.fts("memories", scope, match, 20) == mem.store.fts5(  # type: ignore[attr-defined]
                "memories", scope, match, 20)
    assert mem.store.lexical.builds == 1  # type: ignore[attr-defined]


def test_scopes_never_mix(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    fill(store, 500)
    for scope in SCOPES:
        got = [r for r, _ in store.fts("memories", scope, '"coffee" OR "咖啡" OR "run"', 1000)]
        assert got
        assert store.memories_by_rowid(scope, got).keys() == set(got)
    both = [store.insert_memory(memory(900 + i, s, "unicorn unicorn")) for i, s in enumerate(SCOPES[:2])]
    assert [r for r, _ in store.fts("memories", SCOPES[0], '"unicorn"', 10)] == [both[0]]
    assert [r for r, _ in store.fts("memories", SCOPES[1], '"unicorn"', 10)] == [both[1]]
    assert store.fts("memories", Scope(user_id="nobody"), '"unicorn"', 10) == []


def test_a_reopened_store_loads_the_saved_cache(open_store: Callable[..., SQLiteStore], tmp_path: Path) -> None:
    store = open_store()
    fill(store, 1200)  # smaller postings are rebuilt, not saved
    match = analyse("coffee running 咖啡")[1]
    before = store.fts("memories", U1, match, 30)
    assert store.lexical.builds == 1
    store.close()
    files = list((tmp_path / "lexindex").glob("*.npz"))
    assert len(files) == 1

    # changed while no process held the cache: the log carries it to the next one
    writer = open_store(threshold=10**9)
    late = writer.insert_memory(memory(5000, U1, "coffee coffee running"))
    writer.close()

    again = open_store()
    got = again.fts("memories", U1, match, 30)
    assert (again.lexical.builds, again.lexical.loads) == (0, 1)
    assert same_ranking(got, alone(again, "memories", U1)(match, 30)) and got != before
    assert late in [r for r, _ in got]
    again.close()

    files[0].write_bytes(files[0].read_bytes()[:200])  # damaged: rebuilt from SQLite
    third = open_store()
    assert third.fts("memories", U1, match, 30) == got
    assert (third.lexical.builds, third.lexical.loads) == (1, 0)
    third.close()

    # the meta is intact, the arrays do not fit together: rebuilt, and the file replaced
    with np.load(files[0]) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["rowid"] = arrays["rowid"][:-1]
    np.savez(files[0], **arrays)
    fourth = open_store()
    assert fourth.fts("memories", U1, match, 30) == got
    assert (fourth.lexical.builds, fourth.lexical.loads) == (1, 0)
    fourth.close()
    fifth = open_store()
    assert fifth.fts("memories", U1, match, 30) == got
    assert (fifth.lexical.builds, fifth.lexical.loads) == (0, 1)


def test_corpora_below_the_threshold_use_fts5_and_keep_no_log(
        open_store: Callable[..., SQLiteStore], tmp_path: Path) -> None:
    store = open_store(threshold=1000)
    fill(store, 200)
    store.fts("memories", U1, '"coffee"', 10)
    store.scope_documents("memories", U1, ["coffe"], min_docs=10)
    store.insert_memory(memory(900, U1, "more coffee"))
    assert store.lexical.builds == 0
    assert store.raw_count("text_log") == 0
    assert not (tmp_path / "lexindex").exists()


def test_scope_documents_come_from_the_cache(open_store: Callable[..., SQLiteStore]) -> None:
    store = open_store()
    fill(store, 600)
    rowid = store.insert_memory(memory(900, U1, "zeppelin"))
    counts, total = store.scope_documents("memories", U1, ["coffe", "zeppelin", "nothing"], min_docs=10)
    assert store.lexical.builds == 1
    assert counts == {"coffe": len(store.fts5("memories", U1, '"coffee"', 10**6)), "zeppelin": 1, "nothing": 0}
    assert total == store.count_memories(U1)
    store.delete_memory(U1, "m900")
    assert store.scope_documents("memories", U1, ["zeppelin"])[0] == {"zeppelin": 0}
    assert rowid not in [r for r, _ in store.fts("memories", U1, '"zeppelin"', 5)]


def test_every_corpus_is_ranked_by_the_cache_by_default(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memlane.db")
    try:
        assert store.fts("memories", U1, '"coffee"', 10) == []  # an empty corpus too
        assert store.scope_documents("memories", U1, ["coffe"]) == ({"coffe": 0}, 0)
        rows = [store.insert_memory(memory(i, U1, text)) for i, text in enumerate(
            ["coffee at nine", "more coffee, less tea", "a walk in the garden"])]
        store.insert_memory(memory(9, SCOPES[2], "coffee coffee coffee"))
        assert [r for r, _ in store.fts("memories", U1, '"coffee"', 10)] == [rows[0], rows[1]]
        assert same_ranking(store.fts("memories", U1, '"coffee" OR "garden"', 10),
                            alone(store, "memories", U1)('"coffee" OR "garden"', 10))
        assert (store.lexical.builds, store.raw_count("text_log") > 0) == (1, True)
    finally:
        store.close()
    assert not (tmp_path / "lexindex").exists()  # postings this small are rebuilt, not saved


@pytest.mark.parametrize("threshold", [0, 10**9])  # from the cache; from FTS5
def test_scope_documents_count_the_scopes_rows(open_store: Callable[..., SQLiteStore], threshold: int) -> None:
    store = open_store(threshold=threshold)
    fill_uneven(store)
    store.insert_memory(memory(9000, U1, "zeppelin over the garden"))
    store.delete_memory(SCOPES[1], next(m.id for m in store.list_memories(SCOPES[1])))
    words = ["coffee", "running", "zeppelin", "猫", "花生", "nothing"]
    terms = [index_term(w) for w in words]  # "coffe": which FTS5 would stem again, to "coff"
    for scope in SCOPES:
        counts, total = store.scope_documents("memories", scope, terms)
        assert total == store.count_memories(scope)
        reference = alone(store, "memories", scope)
        assert counts == {t: len(reference(f'"{w}"', 10**6)) for t, w in zip(terms, words, strict=True)}
        assert counts["coffe"] > 0 or total < 10
    assert store.scope_documents("memories", U1, ["zeppelin"])[0] == {"zeppelin": 1}
    assert store.scope_documents("memories", Scope(user_id="nobody"), ["coffe"]) == ({"coffe": 0}, 0)
    size = store.count_memories(U1)  # min_docs: a scope that small need not count its words
    assert store.scope_documents("memories", U1, ["zeppelin"], min_docs=size) == ({"zeppelin": 1}, size)
    assert store.scope_documents("memories", U1, ["zeppelin"], min_docs=size + 1)[1] == size
    assert store.lexical.builds == (1 if threshold == 0 else 0)


@pytest.mark.parametrize("per_scope", [True, False])
@pytest.mark.parametrize("ncols", [1, 2])
def test_folding_the_delta_keeps_the_ranking(ncols: int, per_scope: bool) -> None:
    """Rows added and removed after a build rank the same before and after they are folded in."""
    tokenizer = Tokenizer(apsw.Connection(":memory:"))
    rng = random.Random(5)
    scopes = ["zsA", "zsB", "zsC"]
    postings = build([(i, *[sentence(rng) for _ in range(ncols)], rng.choice(scopes)) for i in range(1, 400)],
                     ncols, tokenizer.document)
    for rowid in range(1, 400, 7):
        postings.remove(rowid)
    for rowid in [*range(3, 400, 11), *range(400, 460)]:  # replaced rows and new ones, a new scope and word
        postings.remove(rowid)
        text = [sentence(rng) + rng.choice(["", " zeppelin"]) for _ in range(ncols)]
        postings.add(rowid, [tokenizer.document(t) for t in text], [rng.choice([*scopes, "zsD"])])
    tids = [postings.terms.get(w) for w in ["coffe", "run", "猫", "花生", "zeppelin"]]
    weights = [1.0, 0.3][:ncols]
    before = {s: postings.rank(postings.scopes[s], tids, weights, 15, per_scope) for s in [*scopes, "zsD"]}
    totals = postings.scope_docs.copy(), postings.scope_tokens.copy()
    postings.fold()
    assert not postings.d_rowid and not postings.dead
    assert {s: postings.rank(postings.scopes[s], tids, weights, 15, per_scope) for s in [*scopes, "zsD"]} == before
    assert [a[: len(postings.scope_names)].tolist() for a in totals] == [
        postings.scope_docs.tolist(), postings.scope_tokens.tolist()]
    assert all(before.values())


def test_few_long_rows_are_saved_too(open_store: Callable[..., SQLiteStore], tmp_path: Path) -> None:
    """200 rows of ~150 words: few documents, but a build each new process would pay (issue 14)."""
    store = open_store()
    rng = random.Random(3)
    store.insert_memories([memory(i, U1, " ".join(sentence(rng) for _ in range(15))) for i in range(200)])
    before = store.fts("memories", U1, analyse("coffee running")[1], 10)
    store.close()
    assert len(list((tmp_path / "lexindex").glob("*.npz"))) == 1
    again = open_store()
    assert again.fts("memories", U1, analyse("coffee running")[1], 10) == before
    assert again.lexical.builds == 0  # loaded, not rebuilt


def test_an_import_leaves_the_postings_caught_up_for_the_first_search(make_memory: Callable[..., Memory]) -> None:
    from memlane.importers import Conversation

    mem = make_memory()
    mem.add_messages("before", [{"role": "user", "content": "the zeppelin left at dawn"}], user_id="u1")
    assert ids_of_turns(mem, "zeppelin") == 1  # postings built, then the import changes the corpus
    convs = [Conversation(f"s{i}", [{"role": "user", "content": f"zeppelin tour number {i} over the garden"}])
             for i in range(50)]
    assert mem.import_conversations(convs, user_id="u1").turns == 50
    postings = mem.store.lexical.postings("turns")  # type: ignore[attr-defined]
    # the 50 imported turns are in the postings already: the first search applies nothing
    assert postings is not None and postings.n_docs == 51
    seq = postings.seq
    assert ids_of_turns(mem, "zeppelin") == 51
    assert mem.store.lexical.postings("turns").seq == seq  # type: ignore[attr-defined]


def ids_of_turns(mem: Memory, word: str) -> int:
    return len(mem.search(word, user_id="u1", corpus="turns", limit=100))
