"""Forgetting for real (issue 12): a forgotten text leaves every file under the home —
database, -wal, -shm, caches, MEMORY.md, history.json — while other data stays searchable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from memlane import Memory
from memlane.models import Episode, Scope
from memlane.store.postings import Postings
from tests.cli_support import run_cli
from tests.conftest import make_config

LATIN, CJK, META = "zorblaxquintessa", "秘密花园钥匙藏在", "plumtreevaultkey"
SECRETS = (LATIN, CJK, META)
# low thresholds: the memory cache and the lexical postings exist, and are saved, at test size
CACHES = {"search": {"memory_cache_threshold": 1, "lexical_threshold": 0}}


def leaks(home: Path, secrets: Iterable[str] = SECRETS) -> list[tuple[str, str]]:
    """(file, secret) for every file under home holding a secret's UTF-8 bytes."""
    found = []
    for path in sorted(home.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found += [(str(path.relative_to(home)), s) for s in secrets if s.encode() in data]
    return found


def _fill_other_user(m: Memory) -> None:
    """Enough rows of another user for the lexical postings to be saved to disk (≥ 1,000)."""
    said = [{"role": "user", "content": f"bob talks about topic{i} and gardening"} for i in range(1050)]
    for part in (said[:525], said[525:]):  # store.max_messages_per_call: 1,000 a call
        m.add_messages("b0", part, user_id="bob")
    for i in range(20):
        m.add(f"bob grows tomato variety {i} in the garden", user_id="bob")


def _fill_secret_user(m: Memory, user: str = "alice", agent: str | None = None, session: str = "s1",
                      *, memories: bool = True) -> list[str]:
    """A session whose turns and episode hold the secrets; with `memories`, memories (one
    updated), the scratchpad and MEMORY.md hold them too."""
    turns = m.add_messages(session, [
        {"role": "user", "content": "hello there, a quiet morning"},
        {"role": "user", "content": f"my code word is {LATIN}, and {CJK} the old oak",
         "metadata": {"note": META}},
        {"role": "assistant", "content": "noted; anything else?"},
        {"role": "user", "content": "no, thanks"},
    ], user_id=user, agent_id=agent)
    m.store.insert_episode(Episode(
        id=f"ep-{user}-{session}", user_id=user, agent_id=agent or "", session_id=session,
        summary=f"talked about {LATIN} and {CJK}", goal=META, started_at=turns[0].created_at,
        ended_at=turns[-1].created_at, created_at=turns[-1].created_at))
    if memories:
        m.add(f"{user} hides the key: {LATIN} {CJK}", user_id=user, agent_id=agent, metadata={"where": META})
        mem = m.add("a memory to be changed", user_id=user, agent_id=agent)
        m.update(mem.id, content=f"changed to {META}", user_id=user, agent_id=agent)
        m.update_scratchpad(user_id=user, agent_id=agent, focus=f"remember {LATIN}")
        m.md_export(user_id=user, agent_id=agent)
    return [t.id for t in turns]


def _warm(m: Memory, user: str) -> None:
    """Build (and save) every in-process cache over both users' rows."""
    for corpus in ("memories", "turns", "episodes"):
        m.search(f"gardening {LATIN}", user_id=user, corpus=corpus)  # type: ignore[arg-type]


def _filled(m: Memory, home: Path, *, memories: bool) -> Memory:
    _fill_other_user(m)
    if not memories:
        m.add_messages("s0", [{"role": "user", "content": "an innocent chat about the weather"}], user_id="alice")
    _fill_secret_user(m, memories=memories)
    _warm(m, "alice")
    _warm(m, "bob")
    assert leaks(home), "the test must start with the secrets on disk"
    assert list((home / "lexindex").glob("*.npz")), "the lexical postings must be on disk"
    assert list((home / "memcache").glob("*.npz")), "the memory cache must be on disk"
    return m


@pytest.fixture
def filled(make_memory: Callable[..., Memory], tmp_path: Path) -> Memory:
    """Bob's rows, and alice's secrets in turns, an episode, memories (one updated, so in the
    audit twice), the scratchpad and MEMORY.md."""
    return _filled(make_memory(**CACHES), tmp_path / "data", memories=True)


@pytest.fixture
def conversation(make_memory: Callable[..., Memory], tmp_path: Path) -> Memory:
    """Bob's rows, and alice's secrets in one conversation only (session s1: turns, episode),
    beside an innocent one (s0)."""
    return _filled(make_memory(**CACHES), tmp_path / "data", memories=False)


def _bob_intact(m: Memory) -> None:
    assert len(m.get_turns(user_id="bob")) == 1050
    assert "garden" in m.search("tomato garden", user_id="bob")[0].content
    assert m.search("topic7", user_id="bob", corpus="turns")


@pytest.mark.parametrize("kind", ["filled", "conversation"])
def test_purge_leaves_no_byte_of_the_user_under_home(kind: str, request: pytest.FixtureRequest,
                                                      tmp_path: Path) -> None:
    m = request.getfixturevalue(kind)
    _fill_secret_user(m, agent="helper", session="s2")  # an agent scope of the same user
    turns = len(m.get_turns(user_id="alice")) + len(m.get_turns(user_id="alice", agent_id="helper"))
    report = m.purge(user_id="alice")
    assert report["turns"] == turns and report["episodes"] == 2
    assert leaks(tmp_path / "data") == []
    _bob_intact(m)
    assert m.get_turns(user_id="alice") == [] and m.list(user_id="alice", agent_id="helper") == []
    [tomb] = [e for e in m.store.events(Scope.of("alice")) if e.kind == "PURGE"]
    assert tomb.before is None and LATIN not in json.dumps(tomb.after)
    m.close()  # saving the caches on close brings nothing back
    assert leaks(tmp_path / "data") == []


def test_purge_of_one_agent_scope_keeps_the_users_other_scopes(conversation: Memory) -> None:
    m = conversation
    before = m.get_turns(user_id="alice")
    _fill_secret_user(m, agent="helper", session="s2")
    m.purge(user_id="alice", agent_id="helper")
    assert m.list(user_id="alice", agent_id="helper") == []
    assert m.get_turns(user_id="alice", agent_id="helper") == []
    assert m.get_turns(user_id="alice") == before  # the user's own scope stays


def test_delete_session_forgets_the_conversation(conversation: Memory, tmp_path: Path) -> None:
    m = conversation
    report = m.delete_session("s1", user_id="alice")
    assert report["turns"] == 4 and report["episodes"] == 1 and report["sessions"] == 1
    assert [x.id for x in m.sessions(user_id="alice")] == ["s0"]
    assert not any(LATIN in h.content for h in m.search(LATIN, user_id="alice", corpus="turns"))
    assert leaks(tmp_path / "data") == []
    assert [t.content for t in m.get_turns(user_id="alice")] == ["an innocent chat about the weather"]
    _bob_intact(m)


def test_delete_turns_recomputes_the_neighbours_context(conversation: Memory, tmp_path: Path) -> None:
    m = conversation
    turns = m.get_turns("s1", user_id="alice")
    secret = [t for t in turns if LATIN in t.content]
    report = m.delete_turns([t.id for t in secret], user_id="alice")
    assert report["turns"] == 1 and report["episodes"] == 1
    left = m.get_turns("s1", user_id="alice")
    assert [t.content for t in left] == [t.content for t in turns if t not in secret]
    # the neighbours are still found by their own words, and no longer by the forgotten ones
    assert m.search("quiet morning", user_id="alice", corpus="turns")
    assert not any(LATIN in h.content for h in m.search(LATIN, user_id="alice", corpus="turns"))
    assert leaks(tmp_path / "data") == []


@pytest.mark.parametrize("hard", [False, True])
def test_delete_removes_the_text_from_caches_and_files(make_memory: Callable[..., Memory], tmp_path: Path,
                                                      hard: bool) -> None:
    m = make_memory(**CACHES)
    _fill_other_user(m)
    mem = m.add(f"the vault code was {LATIN}", user_id="carol")
    _warm(m, "carol")
    m.update(mem.id, content=f"the vault code is {CJK}", metadata={"k": META}, user_id="carol")  # LATIN: audit only
    _warm(m, "carol")  # (MEMORY.md after a delete: tests/test_markdown.py)
    m.delete(mem.id, user_id="carol", hard=hard)
    found = leaks(tmp_path / "data")
    if hard:
        assert found == []
        assert all(e.before is None and e.after is None for e in m.history(mem.id, user_id="carol"))
    else:  # only the audit trail keeps it, for an undo
        assert {f for f, _ in found} <= {"memlane.db"}
        assert m.history(mem.id, user_id="carol")[-1].before["content"].startswith("the vault")  # type: ignore[index]
    assert m.store.raw_count("embedding_cache") == m.store.raw_count("embedding_cache")  # sanity: table readable
    _bob_intact(m)


@pytest.mark.parametrize("when", ["after delete returned", "between commit and scrub"])
def test_delete_then_kill_leaves_nothing_after_reopen(tmp_path: Path, when: str) -> None:
    """kill -9 right after `delete` returns, or after the store committed a forgetting but
    before its files were scrubbed: on reopen the text is in no file."""
    home = tmp_path / "data"
    if when == "after delete returned":  # the secret is in a memory
        setup = 'mem = m.add(f"kill me {LATIN} {CJK}", user_id="dave", metadata={"k": META})'
        forget = 'm.delete(mem.id, user_id="dave", hard=True)'
    else:  # in a turn; the store commits, the process dies before Memory scrubs the files
        setup = '[turn] = m.add_messages("s1", [{"role": "user", "content": f"kill me {LATIN} {CJK}"}], user_id="dave")'
        forget = 'm.store.delete_turns(Scope.of("dave"), [turn.id])'
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from memlane import Memory
        from memlane.models import Scope
        from memlane.testing import HashEmbedder
        from tests.conftest import make_config
        from tests.test_forget import CACHES, _fill_other_user, _warm, LATIN, CJK, META
        m = Memory(make_config({str(home)!r}, **CACHES), embedder=HashEmbedder())
        _fill_other_user(m)
        {setup}
        _warm(m, "dave"); _warm(m, "bob")
        m.store.lexical.close()  # the postings with the secret are on disk
        assert any(LATIN.encode() in p.read_bytes() for p in m.store.path.parent.rglob("*.npz"))
        {forget}
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                          capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert (leaks(home) == []) == (when == "after delete returned")
    m = Memory(make_config(home, **CACHES))
    assert leaks(home) == []  # the open scrubbed what the dead process could not
    try:
        assert m.search(LATIN, user_id="dave") == []
        assert m.search("topic3", user_id="bob", corpus="turns")
    finally:
        m.close()
    assert leaks(home) == []


def test_two_writers_in_one_process_save_a_cache_side_by_side(make_memory: Callable[..., Memory],
                                                                tmp_path: Path) -> None:
    """Two Memory objects of one process saving the same cache file at once (they once shared
    one temp name, and a save failed): every save succeeds, no temp file is left."""
    a, b = make_memory(**CACHES), make_memory(**CACHES)
    _fill_other_user(a)
    path = tmp_path / "data" / "lexindex" / "memlane-turns.npz"
    postings = []
    for m in (a, b):
        m.search("topic3", user_id="bob", corpus="turns")
        postings.append(m.store.lexical.postings("turns"))
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(p: Postings) -> None:
        start.wait()
        try:
            for _ in range(40):
                p.save(path)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(p,)) for p in postings if p is not None]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(threads) == 2 and errors == []
    assert list((tmp_path / "data").rglob("*.tmp")) == []
    assert b.search("topic3", user_id="bob", corpus="turns")


def test_forgetting_unknown_things_is_a_clear_error(memory: Memory) -> None:
    from memlane.errors import NotFound, ValidationError
    with pytest.raises(NotFound):
        memory.delete_session("nope", user_id="u1")
    with pytest.raises(NotFound):
        memory.delete_turns(["nope"], user_id="u1")
    with pytest.raises(ValidationError):
        memory.delete_turns("abc", user_id="u1")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.delete_turns(5, user_id="u1")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.delete_session({"id": 1}, user_id="u1")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.purge(user_id="")
    assert memory.purge(user_id="never-seen").counts == {}
    assert memory.store.raw_count("memory_events") == 0


def test_a_turn_another_caller_deleted_meanwhile_is_not_found_and_nothing_is_deleted(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two callers forget one turn: both find it, one deletes it first. The second must hear
    NotFound (it forgot nothing), and a turn it named alongside must stay: all or none."""
    from memlane.errors import NotFound
    a, b = memory.add_messages("s1", [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}],
                               user_id="u1")
    looked = memory.store.turns_by_id

    def look_then_lose_the_race(scope: Scope, ids: list[str]) -> list[object]:
        found = looked(scope, ids)
        memory.store.delete_turns(scope, [b.id])  # the other caller's delete commits now
        return found  # type: ignore[return-value]

    monkeypatch.setattr(memory.store, "turns_by_id", look_then_lose_the_race)
    with pytest.raises(NotFound, match="already deleted"):
        memory.delete_turns([a.id, b.id], user_id="u1")
    monkeypatch.undo()
    assert [t.content for t in memory.get_turns("s1", user_id="u1")] == ["first"]


def test_concurrent_deletes_of_one_turn_succeed_once(memory: Memory) -> None:
    from memlane.errors import NotFound
    turns = memory.add_messages("s1", [{"role": "user", "content": f"m{i}"} for i in range(6)], user_id="u1")
    outcomes: list[str] = []
    barrier = threading.Barrier(6)

    def forget(turn_id: str) -> None:
        barrier.wait()
        try:
            memory.delete_turns([turn_id], user_id="u1")
            outcomes.append("deleted")
        except NotFound:
            outcomes.append("not found")

    for turn in turns[:2]:
        threads = [threading.Thread(target=forget, args=(turn.id,)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(outcomes) == ["deleted"] * 2 + ["not found"] * 10
    assert len(memory.get_turns("s1", user_id="u1")) == 4


def test_cli_forgets_a_session_and_purges_a_user(tmp_path: Path) -> None:
    home = tmp_path / "cli"
    env = {"MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}

    def run(*args: str, check: int = 0, process: bool = False) -> str:
        proc = run_cli(args, env, process=process)  # in this process unless `process` (tests/cli_support.py)
        assert proc.returncode == check, (proc.stdout, proc.stderr)
        return proc.stdout

    conv = tmp_path / "chat.jsonl"
    conv.write_text(json.dumps({"role": "user", "content": f"my secret is {LATIN} {CJK}"}, ensure_ascii=False),
                    encoding="utf-8")
    run("import", str(conv), "--user", "erin")
    run("add", f"erin keeps {META}", "--user", "erin")
    [session] = json.loads(run("sessions", "list", "--user", "erin", "--json"))
    gone = json.loads(run("sessions", "delete", session["id"], "--user", "erin", "--json"))
    assert gone["counts"]["turns"] == 1
    assert {s for _, s in leaks(home)} == {META}  # only the memory holds a secret now
    run("purge", "--user", "erin", check=1)  # no --yes, no terminal: nothing happens
    assert leaks(home)
    purged = json.loads(run("purge", "--user", "erin", "--yes", "--json", process=True))
    assert purged["counts"]["memories"] == 1
    assert leaks(home) == []


def test_another_process_cache_does_not_write_a_forgotten_text_back(make_memory: Callable[..., Memory],
                                                                   tmp_path: Path) -> None:
    """A second Memory (another process's view) holds postings with the secret, unsaved;
    the first forgets the turn; when the second closes and saves, the secret stays gone."""
    a, b = make_memory(**CACHES), make_memory(**CACHES)
    _fill_other_user(a)
    b.search("topic3", user_id="bob", corpus="turns")  # b's postings, saved to disk
    [turn] = b.add_messages("s9", [{"role": "user", "content": f"the pin is {LATIN}"}], user_id="gus")
    b.search(LATIN, user_id="gus", corpus="turns")  # b's postings now hold the secret, unsaved
    a.delete_turns([turn.id], user_id="gus")
    assert leaks(tmp_path / "data") == []
    b.close()
    assert leaks(tmp_path / "data") == []
    assert list((tmp_path / "data" / "lexindex").glob("*turns.npz")), "b saved its postings on close"


def test_temp_files_of_dead_writers_are_removed_on_open(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lex = tmp_path / "data" / "lexindex"
    lex.mkdir(parents=True)
    stale = [lex / f"memlane-turns.npz.{dead.pid}.tmp", lex / f"memlane-turns.npz.{dead.pid}-1-ab12.tmp"]
    alive = lex / f"memlane-turns.npz.{os.getpid()}-1-cd34.tmp"  # a writer of this process, still saving
    for path in [*stale, alive]:
        path.write_bytes(LATIN.encode())
    make_memory()
    assert [p.exists() for p in stale] == [False, False] and alive.exists()


def test_deletions_by_rules_and_extraction_leave_no_copy_outside_the_database(
        make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    """A memory consolidation expires, or an extraction deletes, leaves the cache files and
    the embedding cache like one `delete` removed (the audit keeps it, for an undo)."""
    from datetime import timedelta

    from memlane.indexing import content_hash, vector_key
    from memlane.testing import ScriptedLLM

    m = make_memory(**CACHES)
    _fill_other_user(m)
    expiring = m.add(f"the gate code was {LATIN}", user_id="carol", source="extractor",
                     expires_at=m.clock() - timedelta(days=1))
    extracted = m.add(f"carol stores {CJK}", user_id="carol", source="extractor")
    _warm(m, "carol")
    assert leaks(tmp_path / "data", (LATIN, CJK)) != []
    m.consolidate(user_id="carol")
    m.llm = ScriptedLLM(json.dumps({"operations": [{"op": "DELETE", "id": extracted.id, "reason": "outdated"}]}))
    m.add_messages("s9", [{"role": "user", "content": "that storage thing is outdated now"}], user_id="carol")
    m.end_session("s9", user_id="carol", wait=True)
    assert m.store.get_memory(Scope.of("carol"), extracted.id) is None
    assert {f for f, _ in leaks(tmp_path / "data", (LATIN, CJK))} <= {"memlane.db"}
    cut = m.config.embedding.max_chars
    keys = [content_hash(vector_key(r.content, cut)) for r in (expiring, extracted)]
    assert m.store.cache_get(m.embedder.model_id, keys) == {}
    _bob_intact(m)
