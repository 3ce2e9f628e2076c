"""Importers of other tools' exports (issue 33): what each format stores (content, roles,
dates, scopes, metadata), that a second run adds nothing, that a dry run writes nothing, that
a bad record is skipped and named while the rest land, and hostile input."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory, ValidationError
from memlane.testing import HashEmbedder
from tests.conftest import make_config

DATA = Path(__file__).parent / "data" / "imports"
LISBON = "6650a1b2-0000-4000-8000-00000000c0de"


@pytest.fixture(params=["sqlite", "postgres"])
def backend_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A Memory on SQLite, or on a PostgreSQL database of its own (the turn and memory writes)."""
    store: dict[str, Any] = {}
    if request.param == "postgres":
        store["database_url"] = request.getfixturevalue("pg_url")
    mem = Memory(make_config(tmp_path / "data", store=store), embedder=HashEmbedder())
    yield mem
    mem.close()


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    mem = Memory(make_config(tmp_path / "data"), embedder=HashEmbedder())
    yield mem
    mem.close()


def counts(mem: Memory, user: str = "lin") -> tuple[int, int]:
    return len(mem.get_turns(user_id=user)), len(mem.list(user_id=user))


def test_chatgpt_live_branch_roles_dates_and_parts(backend_memory: Memory) -> None:
    mem = backend_memory
    report = mem.import_from(DATA / "chatgpt_conversations.json", user_id="lin")
    assert (report.format, report.sessions, report.turns, report.memories) == ("chatgpt", 2, 8, 0)
    turns = mem.get_turns(LISBON, user_id="lin")
    said = [(t.role, t.content) for t in turns]
    assert said[0] == ("user", "I'm planning a trip to Lisbon in May with my sister Ana.")
    assert ("assistant", "Lisbon in May is lovely: try the pastéis de nata in Belém.") in said
    assert not any("rainy" in c for _, c in said)  # the regenerated answer is off the live branch
    assert not any(r == "system" for r, _ in said)  # the hidden, empty system message
    image = next(t for t in turns if "hotel" in t.content)
    assert image.metadata["content_type"] == "multimodal_text"
    assert image.metadata["parts"][0]["asset_pointer"] == "file-service://file-abc123"
    tool = next(t for t in turns if t.role == "tool")
    assert tool.content == "0.4 km" and tool.name == "python" and tool.metadata["content_type"] == "execution_output"
    code = next(t for t in turns if t.metadata.get("recipient") == "python")
    assert code.metadata["parts"] == [{"language": "python"}]
    # dated by the source (2024-05-06), not by the import; a message without a time: the one before it
    assert turns[0].created_at == datetime.fromtimestamp(1715000000, tz=UTC)
    assert all(t.created_at.year == 2024 for t in turns)
    assert [t.created_at for t in turns] == sorted(t.created_at for t in turns)
    session = mem.get_session(LISBON, user_id="lin")
    assert session.metadata["title"] == "Trip to Lisbon"
    # the conversation whose parent links loop is skipped and named; the rest landed
    assert [s.record for s in report.skipped] == ["chatgpt_conversations.json: conversations[1] ('A loop')"]
    assert "loop" in report.skipped[0].reason
    again = mem.import_from(DATA / "chatgpt_conversations.json", user_id="lin")
    assert (again.turns, again.already) == (0, 8)
    assert len(mem.get_turns(user_id="lin")) == 8
    assert mem.get_turns(user_id="bob") == []  # another user's scope stays empty


def test_claude_text_blocks_attachments_and_a_bad_sender(memory: Memory) -> None:
    report = memory.import_from(DATA / "claude_conversations.json", user_id="lin")
    assert (report.format, report.turns) == ("claude", 3)
    turns = memory.get_turns("5a1c0de0-1111-4222-8333-444455556666", user_id="lin")
    first = turns[0]
    assert first.role == "user" and first.content.startswith("Here is the quote from the builder")
    assert "[attachment: quote.txt]\nOak cabinets: 4,200 EUR" in first.content  # extracted_content appended
    assert first.metadata["attachments"] == ["quote.txt"]
    assert first.created_at == datetime(2024, 3, 2, 10, 0, tzinfo=UTC)
    assert turns[1].metadata["blocks"][0]["type"] == "tool_use"  # kept, not dropped
    assert turns[2].content == "What about the tiles?"  # no content blocks: the text field
    assert report.skipped[0].record.endswith("chat_messages[3]") and "robot" in report.skipped[0].reason
    assert memory.get_session(turns[0].session_id, user_id="lin").metadata["title"] == "Kitchen renovation"


def test_mem0_both_shapes_scopes_dates_and_categories(backend_memory: Memory) -> None:
    mem = backend_memory
    report = mem.import_from(DATA / "mem0_get_all.json", user_id="lin", source_user="alex")
    assert report.memories == 2
    skipped = {s.record: s.reason for s in report.skipped}
    assert "mem0 user 'sam'" in skipped["mem0_get_all.json: memories[3]"]  # another user's: never mixed in
    assert "has no text" in skipped["mem0_get_all.json: memories[2]"]  # a bad record, named
    got = {m.content: m for m in mem.list(user_id="lin")}
    veg = got["Is vegetarian and allergic to peanuts"]
    assert veg.category == "preference" and veg.source == "import"
    assert veg.created_at == datetime(2024, 7, 20, 8, 30, tzinfo=UTC)
    assert veg.updated_at == datetime(2024, 7, 21, 8, 30, tzinfo=UTC)
    assert veg.metadata["mem0_id"] == "3c90c3cc-0d44-4b50-8888-8dd25736052a"
    assert veg.metadata["tags"] == ["food", "health"] and veg.metadata["mem0_metadata"] == {"source": "onboarding"}
    assert got["Works as a nurse in Porto"].category == "fact"
    assert [e.kind for e in mem.history(veg.id, user_id="lin")] == ["ADD"]
    assert mem.history(veg.id, user_id="lin")[0].actor == "import"
    # the platform's paged shape; one user in the file: taken as --user's
    paged = mem.import_from(DATA / "mem0_results.json", format="mem0", user_id="lin")
    assert paged.memories == 2 and not paged.skipped
    assert mem.list(user_id="sam") == []
    assert mem.import_from(DATA / "mem0_get_all.json", user_id="lin", source_user="alex").memories == 0
    assert len(mem.list(user_id="lin")) == 4
    assert mem.search("peanuts", user_id="lin")[0].id == veg.id


def test_letta_agent_file_messages_and_blocks(memory: Memory) -> None:
    report = memory.import_from(DATA / "letta_agent.af", user_id="lin")
    assert (report.format, report.turns, report.memories) == ("letta", 3, 4)
    turns = memory.get_turns("letta-sam_companion", user_id="lin")
    assert [(t.role, t.content) for t in turns][:2] == [
        ("user", "Hi Sam, I just moved to Utrecht."), ("assistant", "Welcome to Utrecht! How is the new flat?")]
    assert turns[1].metadata["thoughts"].startswith("User moved") and turns[1].metadata["in_context"] is True
    assert turns[0].metadata["in_context"] is False
    assert turns[1].metadata["tool_calls"][0]["function"]["name"] == "core_memory_append"
    assert turns[0].created_at == datetime(2025, 5, 1, 9, 1, tzinfo=UTC)
    session = memory.get_session("letta-sam_companion", user_id="lin")
    assert session.metadata["import_system"] == "You are Sam, a companion with memory."
    mems = {m.content: m for m in memory.list(user_id="lin")}
    assert mems["Lives in Utrecht"].pinned and mems["First name: Mira"].pinned
    assert "Last name: ?" not in mems  # a placeholder the agent had not filled
    persona = next(m for c, m in mems.items() if c.startswith("persona (sam_companion): I am Sam"))
    assert not persona.pinned and persona.metadata["letta_block"] == "persona"
    again = memory.import_from(DATA / "letta_agent.af", user_id="lin")
    assert (again.turns, again.memories, again.already) == (0, 0, 7)


def test_markdown_notes_bullets_sections_front_matter(memory: Memory, tmp_path: Path) -> None:
    notes = shutil.copytree(DATA / "notes", tmp_path / "notes")
    report = memory.import_from(notes, user_id="lin")
    assert report.format == "markdown"
    mems = {m.content: m for m in memory.list(user_id="lin")}
    assert set(mems) == {"My sister Ana lives in Lisbon #family", "Ana prefers trains to planes and books window seats",
                         "Ana's birthday is on 12 June; she likes orchids.", "Tomatoes go in after the last frost",
                         "1. not a number list item", "Water the basil daily"}
    ana = mems["My sister Ana lives in Lisbon #family"]
    assert ana.created_at == datetime(2023, 11, 4, tzinfo=UTC) and ana.updated_at == datetime(2024, 1, 10, tzinfo=UTC)
    assert ana.metadata["tags"] == ["family", "sister"] and ana.metadata["note"] == "people/Ana.md"
    assert ana.metadata["front_matter"]["title"] == "Ana"
    assert mems["Ana prefers trains to planes and books window seats"].category == "preference"
    assert mems["Ana's birthday is on 12 June; she likes orchids."].metadata["section"] == "Birthday"
    garden = mems["Water the basil daily"]  # no front matter: the file's time
    assert garden.created_at.year == datetime.now(UTC).year
    assert memory.import_from(notes, format="markdown", user_id="lin").memories == 0
    (notes / "people" / "Ana.md").write_text("- Ana moved to Porto\n", "utf-8")  # an edit: only the new entry
    assert memory.import_from(notes, user_id="lin").memories == 1


@pytest.mark.parametrize("name", ["chatgpt_conversations.json", "claude_conversations.json", "mem0_results.json",
                                  "letta_agent.af", "notes"])
def test_a_dry_run_writes_nothing(memory: Memory, name: str) -> None:
    report = memory.import_from(DATA / name, user_id="lin", dry_run=True)
    assert report.dry_run and (report.turns or report.memories) and report.preview
    assert counts(memory) == (0, 0)
    assert memory.sessions(user_id="lin") == []
    real = memory.import_from(DATA / name, user_id="lin")
    assert (real.turns, real.memories) == (report.turns, report.memories)


def chatgpt(*convs: dict[str, Any]) -> list[dict[str, Any]]:
    return list(convs)


def conv(mapping: dict[str, Any], current: Any, cid: str = "c1") -> dict[str, Any]:
    return {"title": "t", "create_time": 1715000000, "mapping": mapping, "current_node": current, "conversation_id": cid}


def user(text: Any, parent: str | None = None) -> dict[str, Any]:
    return {"message": {"author": {"role": "user"}, "content": {"content_type": "text", "parts": [text]},
                        "create_time": 1715000000}, "parent": parent, "children": []}


GOOD = conv({"a": user("a fine message")}, "a", "good")


@pytest.mark.parametrize(("case", "data", "reason"), [
    ("missing current node", [conv({"a": user("hi")}, "nowhere"), GOOD], "'nowhere' is not a node"),
    ("cycle", [conv({"a": user("x", "b"), "b": user("y", "a")}, "a"), GOOD], "loop"),
    ("mapping not an object", [conv([1, 2], "a"), GOOD], "mapping"),  # type: ignore[arg-type]
    ("not an object", [7, GOOD], "an object"),
])
def test_a_hostile_chatgpt_conversation_is_skipped_and_the_rest_land(memory: Memory, tmp_path: Path, case: str,
                                                                      data: Any, reason: str) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), "utf-8")
    report = memory.import_from(path, format="chatgpt", user_id="lin")
    assert report.turns == 1 and len(report.skipped) == 1, case
    assert report.skipped[0].record.startswith("conversations.json: conversations[0]") and reason in report.skipped[0].reason


def test_non_string_parts_and_lone_surrogates_are_kept_safely(memory: Memory, tmp_path: Path) -> None:
    msg = user("x")
    msg["message"]["content"]["parts"] = [42, {"deep": json.loads('{"a":' * 30 + "1" + "}" * 30)}, "bad \ud800 text"]
    path = tmp_path / "c.json"
    path.write_text(json.dumps([conv({"a": msg}, "a")]), "utf-8")  # json escapes the surrogate as \ud800
    report = memory.import_from(path, format="chatgpt", user_id="lin")
    assert report.turns == 1 and not report.skipped
    turn = memory.get_turns(user_id="lin")[0]
    assert turn.content == "bad \ufffd text"
    assert turn.metadata["parts"][0] == 42 and isinstance(turn.metadata["parts"][1], str)  # too deep: as text


@pytest.mark.parametrize(("content", "field"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"results": 5}', "not a mem0 file"),
    ("", "is empty"),
])
def test_a_whole_file_that_cannot_be_read_is_one_clear_error(memory: Memory, tmp_path: Path, content: str,
                                                              field: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, "utf-8")
    with pytest.raises(ValidationError, match=field):
        memory.import_from(path, format="mem0", user_id="lin")
    assert counts(memory) == (0, 0)


def test_a_file_over_the_import_limit_is_refused(tmp_path: Path) -> None:
    mem = Memory(make_config(tmp_path / "data", store={"max_import_bytes": 1000}), embedder=HashEmbedder())
    try:
        path = tmp_path / "big.json"
        path.write_text(json.dumps([{"memory": "x" * 2000, "user_id": "lin"}]), "utf-8")
        with pytest.raises(ValidationError, match="store.max_import_bytes"):
            mem.import_from(path, format="mem0", user_id="lin")
    finally:
        mem.close()


def test_an_ambiguous_or_unknown_shape_asks_for_the_format(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}', "utf-8")
    with pytest.raises(ValidationError, match="cannot tell the format"):
        memory.import_from(path, user_id="lin")
    with pytest.raises(ValidationError, match="format"):
        memory.import_from(path, format="evernote", user_id="lin")


def test_extraction_afterwards_goes_through_the_queue(memory: Memory) -> None:
    report = memory.import_from(DATA / "claude_conversations.json", user_id="lin", extract=True)
    assert report.extraction_jobs == 1
    jobs = memory.extraction_jobs(user_id="lin")
    assert [j.session_id for j in jobs] == ["5a1c0de0-1111-4222-8333-444455556666"]


Progress = Callable[[int, int], None]


def test_progress_is_reported(memory: Memory) -> None:
    from memlane.importing import import_from

    seen: list[tuple[int, int]] = []
    import_from(memory, DATA / "letta_agent.af", None, user_id="lin", agent_id=None, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (7, 7)
