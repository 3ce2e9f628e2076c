"""Hostile input (issue 12): every way data gets in — the API, the agent tools, conversation
files, export files, MEMORY.md — fails with a `MemlaneError` (ValidationError / NotFound)
naming the field, and a failed call leaves the store exactly as it was.

Hypothesis draws lone surrogates, nested JSON, wrong types, huge values and NaN into each
argument or field of an otherwise valid call or file."""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memlane import MemlaneError, Memory, ValidationError
from memlane.importers import read_file
from memlane.markdown import parse_memory_md

# MEMLANE_FUZZ_EXAMPLES=5000 for a long hunt; the suite's quick run draws 60 per test
EXAMPLES = int(os.environ.get("MEMLANE_FUZZ_EXAMPLES", "60"))
FAST = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES == 60, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
TABLES = ("sessions", "turns", "memories", "episodes", "scratchpad", "extraction_jobs", "memory_events")


def deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = {"a": [v]}
    return v


surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)
hostile_text = st.one_of(
    st.text(max_size=20),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=5), surrogates, st.text(max_size=5)),
    st.sampled_from(["", "   ", "\x00", "a\nb", "x]\n### fact | 1 | 2026-01-01 | 1", "NOT-A-CATEGORY", "EDIT",
                     "x" * 300, "y" * 20_000, "z" * 250_000]),
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                        hostile_text)
json_junk = st.one_of(  # what a JSON file can hold
    json_scalar,
    st.integers(1, 300).map(deep),
    st.lists(json_scalar, max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=5), surrogates), json_scalar, max_size=3),
    st.just({"big": "x" * 70_000}),
)
junk = st.one_of(json_junk, st.sampled_from([{1: "int key"}, b"bytes", object(), datetime(1, 1, 1)]))


def fingerprint(memory: Memory) -> tuple[Any, ...]:
    records = memory.export(user_id="u1").splitlines()[1:]  # the header holds the time of the export
    return (tuple(memory.store.raw_count(t) for t in TABLES), records)


@pytest.fixture
def seeded(memory: Memory) -> tuple[Memory, str]:
    memory.add_messages("s1", [{"role": "user", "content": "I like green tea"},
                               {"role": "assistant", "content": "Noted."}], user_id="u1")
    rec = memory.add("The user likes green tea", user_id="u1", category="preference")
    return memory, rec.id


def calls(mid: str) -> dict[str, tuple[Callable[..., Any], dict[str, Any]]]:
    """Each public entry point with a valid set of arguments; a test swaps some for junk."""
    msg = {"role": "user", "content": "hello there"}
    return {
        "add": (Memory.add, {"content": "likes oolong", "user_id": "u1", "category": "fact", "importance": "low",
                             "metadata": {"k": [1]}, "confidence": 0.5, "pinned": False, "verified": None,
                             "expires_at": None, "session_id": "s1", "subject": None, "source": "user"}),
        "update": (Memory.update, {"memory_id": mid, "user_id": "u1", "content": "likes black tea", "score": 0.5,
                                   "category": "preference", "metadata": {"a": 1}, "pinned": True,
                                   "status": "active", "kind": "UPDATE", "reason": "r", "source": "agent"}),
        "get": (Memory.get, {"memory_id": mid, "user_id": "u1", "agent_id": None}),
        "delete": (Memory.delete, {"memory_id": mid, "user_id": "u1", "reason": "asked"}),
        "history": (Memory.history, {"memory_id": mid, "user_id": "u1"}),
        "list": (Memory.list, {"user_id": "u1", "category": "fact", "status": "active", "session_id": "s1",
                               "since": None, "limit": 5, "offset": 0}),
        "search": (Memory.search, {"query": "tea", "user_id": "u1", "limit": 3, "corpus": "memories",
                                   "filters": {"category": "preference"}, "activate": False}),
        "add_messages": (Memory.add_messages, {"session_id": "s2", "messages": [msg, dict(msg, role="assistant")],
                                               "user_id": "u1"}),
        "build_context": (Memory.build_context, {"session_id": "s1", "query": "tea", "user_id": "u1",
                                                 "model": None}),
        "start_session": (Memory.start_session, {"session_id": "s3", "user_id": "u1", "metadata": {"t": 1}}),
        "update_scratchpad": (Memory.update_scratchpad, {"user_id": "u1", "focus": "slides", "done": None}),
        "episodes": (Memory.episodes, {"user_id": "u1", "session_id": "s1", "limit": 5}),
        "get_turns": (Memory.get_turns, {"session_id": "s1", "user_id": "u1", "limit": 5}),
        "end_session": (Memory.end_session, {"session_id": "s1", "user_id": "u1"}),
    }


def check_clean(memory: Memory, call: Callable[[], Any]) -> Any:
    """Run a call: it succeeds, or raises a MemlaneError and changes nothing."""
    before = fingerprint(memory)
    try:
        return call()
    except MemlaneError as exc:
        assert fingerprint(memory) == before, "a failed call changed the store"
        str(exc).encode("utf-8")  # the message can be printed and sent as JSON
        return None


@FAST
@given(data=st.data())
def test_public_api_rejects_bad_arguments_cleanly(seeded: tuple[Memory, str], data: st.DataObject) -> None:
    memory, mid = seeded
    name = data.draw(st.sampled_from(sorted(calls(mid))))
    fn, args = calls(mid)[name]
    for key in list(args):
        if data.draw(st.booleans()):
            args[key] = data.draw(junk, label=f"{name}.{key}")
    if name == "add_messages" and data.draw(st.booleans()):  # junk inside one message
        field = data.draw(st.sampled_from(["role", "content", "name", "tool_calls", "created_at", "metadata"]))
        args["messages"] = [{"role": "user", "content": "ok"}, {"role": "user", "content": "x", field: data.draw(junk)}]
    check_clean(memory, lambda: fn(memory, **args))


TOOL_ARGS = {"query": "tea", "limit": 3, "category": "fact", "session_id": "s1", "content": "likes tea",
             "importance": "high", "memory_id": "abc", "reason": "r", "current_focus": "x", "finished_task": "y"}


@FAST
@given(data=st.data())
def test_tool_calls_from_a_model_fail_as_tool_errors(seeded: tuple[Memory, str], data: st.DataObject) -> None:
    memory, _ = seeded
    tools = memory.tools(user_id="u1", session_id="s1")
    name = data.draw(st.one_of(st.sampled_from([s["function"]["name"] for s in tools.schemas]), hostile_text))
    args = {k: data.draw(st.one_of(st.just(v), junk)) for k, v in TOOL_ARGS.items() if data.draw(st.booleans())}
    raw = data.draw(st.one_of(st.just(args), st.builds(lambda a: json.dumps(a, default=str), st.just(args)),
                              st.sampled_from(["{", "[1]", "null", '{"a":' * 5000 + "1" + "}" * 5000]), junk))
    before = fingerprint(memory)
    reply = check_clean(memory, lambda: tools.handle({"id": "c1", "function": {"name": name, "arguments": raw}}))
    if reply is not None and "error" in json.loads(reply["content"]):
        assert fingerprint(memory) == before


def mutate(doc: Any, data: st.DataObject) -> Any:
    """`doc` with one value somewhere in it replaced by junk."""
    paths: list[list[Any]] = [[]]
    stack: list[tuple[list[Any], Any]] = [([], doc)]
    while stack:
        path, v = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else []
        for k, child in items:
            paths.append([*path, k])
            stack.append(([*path, k], child))
    path = data.draw(st.sampled_from(paths))
    new = data.draw(st.one_of(json_junk, st.just("MISSING")))
    if not path:
        return new
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if new == "MISSING" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc


def locomo() -> dict[str, Any]:
    return {"sample_id": "c1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a cat"}],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is the cat?"}]}}


def openai() -> Any:
    return [{"role": "user", "content": "hi", "created_at": "2026-01-01T09:00:00"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "metadata": {"m": 1}}]


def own() -> dict[str, Any]:
    return {"sessions": [{"session_id": "a", "started_at": "2026-01-01T09:00:00+00:00",
                          "messages": [{"role": "user", "content": "I live in Oslo"}]},
                         {"messages": [{"role": "assistant", "content": "ok", "name": "bot"}]}]}


@FAST
@given(data=st.data())
def test_malformed_conversation_files_fail_cleanly(memory: Memory, tmp_path_factory: pytest.TempPathFactory,
                                                   data: st.DataObject) -> None:
    doc = mutate(data.draw(st.sampled_from([locomo, openai, own]))(), data)
    path = tmp_path_factory.mktemp("imp") / data.draw(st.sampled_from(["c.json", "c.jsonl"]))
    if path.suffix == ".jsonl" and isinstance(doc, list):
        text = "\n".join(json.dumps(m) for m in doc)
    else:
        text = json.dumps(doc)
    path.write_text(text, encoding="utf-8")

    def run() -> Any:
        return memory.import_conversations(read_file(path, 10_000_000), user_id="imp")
    first = check_clean(memory, run)
    if first is not None:  # a valid file imports, and importing it again adds nothing
        again = run()
        assert again.turns == 0 and again.skipped == first.turns + first.skipped


def test_deeply_nested_files_fail_cleanly(memory: Memory, tmp_path: Path) -> None:
    for name, text in (("deep.json", '{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                       ("deep.jsonl", '{"role": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}")):
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ValidationError, match="nested too deeply"):
            memory.import_conversations(read_file(tmp_path / name, 10**8), user_id="imp")
    assert memory.store.raw_count("turns") == 0


_first_export: dict[int, str] = {}


@FAST
@given(data=st.data())
def test_malformed_export_files_import_all_or_nothing(seeded: tuple[Memory, str],
                                                      tmp_path_factory: pytest.TempPathFactory,
                                                      data: st.DataObject) -> None:
    memory, _ = seeded
    exported = _first_export.setdefault(id(memory), memory.export(user_id="u1"))  # the same file each example
    lines = [json.loads(x) for x in exported.splitlines()]
    i = data.draw(st.integers(0, len(lines) - 1))
    lines[i] = mutate(lines[i], data)
    path = tmp_path_factory.mktemp("exp") / "u.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    target = data.draw(st.sampled_from(["u-port", None]))
    before = tuple(memory.store.raw_count(t) for t in TABLES)
    try:
        report = memory.import_(path, user_id=target)
    except MemlaneError:
        assert tuple(memory.store.raw_count(t) for t in TABLES) == before
        return
    # what was let in reads back, renders as MEMORY.md and round-trips
    user = report.user_id
    memory.export(user_id=user)
    memory.md_export(user_id=user)
    assert memory.md_import(user_id=user, dry_run=True) == []


md_line = st.one_of(
    st.sampled_from(["## Active Memories", "## Archived Memories", "## Shopping", "### [abc] fact | 0.5 | 2026-01-01 | 1",
                     "### [] fact", "### fact", "### preference | 0.9", "### [x] nope | NaN | x | -1",
                     "### [zz] fact | 2 | 2026-01-01 | 1", "<!-- Last updated: 2026-01-01T00:00:00 -->",
                     "\\### escaped", "likes tea", "", "### [a]b] fact | 0.1 | 2026-13-40 | 9"]),
    hostile_text.map(lambda s: s.replace("\r", "")),
)


@FAST
@given(lines=st.lists(md_line, max_size=12))
def test_memory_md_parsing_never_raises(lines: list[str]) -> None:
    parsed = parse_memory_md("\n".join(lines))
    assert all(e.content for e in parsed.entries)


@FAST
@given(lines=st.lists(md_line, max_size=12), dry_run=st.booleans())
def test_memory_md_import_fails_cleanly(seeded: tuple[Memory, str], lines: list[str], dry_run: bool) -> None:
    memory, _ = seeded
    if not memory.list(user_id="md"):
        memory.add("The user likes green tea", user_id="md", category="preference")
    path = memory.md_export(user_id="md")
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    check_clean(memory, lambda: memory.md_import(user_id="md", dry_run=dry_run))


# ---- the reported cases, by name ---------------------------------------------------------


@pytest.mark.parametrize(("call", "field"), [
    (lambda m, mid: m.update(mid, user_id="u1", kind="EDIT"), "kind"),
    (lambda m, mid: m.add("a\ud800b", user_id="u1"), "content"),
    (lambda m, mid: m.add("ok", user_id="u\udc00"), "user_id"),
    (lambda m, mid: m.add("ok", user_id="u1", metadata=deep(50)), "metadata.a[0].a[0].a[0].a[0]"),
    (lambda m, mid: m.add("ok", user_id="u1", metadata={"x": math.nan}), "metadata.x"),
    (lambda m, mid: m.add("ok", user_id="u1", confidence=True), "confidence"),
    (lambda m, mid: m.add("ok", user_id="u1", importance=[1]), "importance"),
    (lambda m, mid: m.update(mid, user_id="u1", score=math.inf), "score"),
    (lambda m, mid: m.get("x]\n### fact", user_id="u1"), "memory_id"),
    (lambda m, mid: m.list(user_id="u1", limit="5"), "limit"),
    (lambda m, mid: m.search("tea", user_id="u1", filters={"since": 5}), "filters.since"),
    (lambda m, mid: m.add_messages("s1", [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}],
                                   user_id="u1"), "messages[1].role"),
    (lambda m, mid: m.add_messages("s1", "hello", user_id="u1"), "messages"),
    (lambda m, mid: m.add_messages("s\n1", [{"content": "ok"}], user_id="u1"), "session_id"),
    # memlane's own metadata keys, in a shape its later steps could not read
    (lambda m, mid: m.add("ok", user_id="u1", metadata={"merged": 5}), "metadata.merged"),
    (lambda m, mid: m.update(mid, user_id="u1", metadata={"review": {"at": "2026-01-01"}}), "metadata.review"),
    (lambda m, mid: m.start_session("s1", user_id="u1", metadata={"compacted_through": "x"}),
     "metadata.compacted_through"),
])
def test_reported_bad_calls_name_their_field(seeded: tuple[Memory, str], call: Callable[..., Any], field: str) -> None:
    memory, mid = seeded
    before = fingerprint(memory)
    with pytest.raises(ValidationError) as info:
        call(memory, mid)
    assert info.value.field == field
    assert fingerprint(memory) == before
    assert memory.history(mid, user_id="u1") and memory.export(user_id="u1")


def test_a_long_turn_is_stored_whole_and_a_refused_one_is_named(memory: Memory) -> None:
    long_turn = "word " * 4_759  # 23,795 characters, as in LongMemEval
    turns = memory.add_messages("s1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": long_turn}],
                                user_id="u1")
    assert turns[1].content == long_turn
    assert memory.search("word", user_id="u1", corpus="turns")
    too_long = "x" * (memory.config.store.max_turn_chars + 1)
    with pytest.raises(ValidationError) as info:
        memory.add_messages("s1", [{"content": "fine"}, {"content": "fine"}, {"content": too_long}], user_id="u1")
    assert info.value.field == "messages[2].content" and "store.max_turn_chars" in str(info.value)
    assert memory.stats(user_id="u1").turns == 2
    with pytest.raises(ValidationError, match="store.max_content_chars"):  # a memory keeps its own limit
        memory.add(long_turn, user_id="u1")
    # a whole document pasted after "remember": stored, and the offline extractor stays fast
    start = time.monotonic()
    memory.add_messages("s2", [{"content": "Remember that " + "my build box is slow " * 9_000}], user_id="u1")
    memory.end_session("s2", user_id="u1")
    assert time.monotonic() - start < 10  # was quadratic: 27 s at 40,000 characters


def test_times_are_checked_and_naive_ones_are_utc(memory: Memory) -> None:
    t = memory.add_messages("s1", [{"content": "hi", "created_at": "2026-01-01T09:00:00"}], user_id="u1")[0]
    assert t.created_at == datetime(2026, 1, 1, 9, tzinfo=UTC)
    with pytest.raises(ValidationError) as info:
        memory.add_messages("s1", [{"content": "hi", "created_at": 1767258000}], user_id="u1")
    assert info.value.field == "messages[0].created_at"


def test_whatever_gets_in_goes_out_and_back_in(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    """Turns may be long and hold terminal colours; memories cut from them keep a memory's
    rules, so an export of anything the API let in imports again."""
    src = make_memory()
    paste = "\x1b[31mERROR\x1b[0m build failed\r\n" * 50
    src.add_messages("s1", [{"role": "user", "content": paste},
                            {"role": "user", "content": "Remember that " + "my build box is slow " * 2000},
                            {"role": "user", "content": "I prefer \x1b[1mdark\x1b[0m mode in every editor."}],
                     user_id="u1")
    src.end_session("s1", user_id="u1")
    src.add("windows\r\nline ends", user_id="u1")
    assert all(len(m.content) <= src.config.store.max_content_chars and "\x1b" not in m.content
               for m in src.list(user_id="u1"))
    assert src.get_turns("s1", user_id="u1")[0].content == paste
    path = tmp_path / "u1.jsonl"
    path.write_text(src.export(user_id="u1"), encoding="utf-8")
    dst = make_memory(home=tmp_path / "other")
    report = dst.import_(path)
    assert report.added["turn"] == 3 and report.added.get("memory", 0) == len(src.list(user_id="u1"))


def _deep(depth: int) -> Any:
    out: Any = 1
    for _ in range(depth):
        out = {"a": out}
    return out


_LATE_BAD = [None, 5, "", "\ud800", "x" * 100_000, {"a": {"b": 1}}, _deep(5_000), [1], float("nan"), True, b"bytes",
             "a\x00b"]


@pytest.mark.parametrize("call", [
    lambda m, v: m.attachments.add(v, data=b"x", user_id="u1"),
    lambda m, v: m.attachments.add("n", data=v, user_id="u1"),
    lambda m, v: m.attachments.add("n", uri=v, user_id="u1"),
    lambda m, v: m.attachments.add("n", data=b"x", duration=v, user_id="u1"),
    lambda m, v: m.attachments.add("n", data=b"x", metadata=v, user_id="u1"),
    lambda m, v: m.attachments.get(v, user_id="u1"),
    lambda m, v: m.session_state.update("s1", user_id="u1", variables=v),
    lambda m, v: m.events.stored(user_id="u1", limit=v),
    lambda m, v: m.events.run_pending(v, user_id="u1"),
    lambda m, v: m.delete_turns(v, user_id="u1"),
    lambda m, v: m.delete_session(v, user_id="u1"),
    lambda m, v: m.restore(v, user_id="u1"),
    lambda m, v: m.undo(v, user_id="u1"),
    lambda m, v: m.search("hello", user_id="u1", min_score=v),
    lambda m, v: m.tools(user_id="u1").handle({"id": v, "function": {"name": "search_memory", "arguments": "{}"}}),
    lambda m, v: m.tools(user_id="u1").handle({"id": "c1", "function": {"name": "remember", "arguments": v}}),
    lambda m, v: m.tools(user_id="u1").handle({"type": "tool_use", "id": v, "name": "search_memory", "input": v}),
])
def test_later_entry_points_refuse_bad_input_cleanly(memory: Memory, call: Any) -> None:
    """Attachments, session state, stored events, forgetting and undo check their input with
    the same validators: a MemlaneError, never a raw exception."""
    memory.add_messages("s1", [{"role": "user", "content": "hello"}], user_id="u1")
    for value in _LATE_BAD:
        with contextlib.suppress(MemlaneError):  # anything else escapes and fails the test
            call(memory, value)
