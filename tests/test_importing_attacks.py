"""Attacks on the importers (issue 33 review): realistic exports with the fields real ones
carry, a second export of the same account, another agent's file, other users' records and
hostile bodies. Each test names the defect it pins."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory, ValidationError
from memlane.testing import HashEmbedder
from tests.conftest import make_config


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    mem = Memory(make_config(tmp_path / "data"), embedder=HashEmbedder())
    yield mem
    mem.close()


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), "utf-8")
    return path


# ---- ChatGPT --------------------------------------------------------------------------------


def gpt_node(nid: str, parent: str | None, role: str | None, content: dict[str, Any] | None, t: float | None = None,
             **extra: Any) -> dict[str, Any]:
    msg = None if role is None else {
        "id": nid, "author": {"role": role, "name": extra.pop("name", None), "metadata": {}}, "create_time": t,
        "update_time": None, "content": content, "status": "finished_successfully", "end_turn": extra.pop("end_turn", None),
        "weight": 1.0, "metadata": extra.pop("metadata", {}), "recipient": extra.pop("recipient", "all"), "channel": None}
    return {"id": nid, "message": msg, "parent": parent, "children": []}


def gpt_conversation(cid: str, nodes: list[dict[str, Any]], title: str = "t") -> dict[str, Any]:
    mapping = {n["id"]: n for n in nodes}
    for n in nodes:
        if n["parent"]:
            mapping[n["parent"]]["children"].append(n["id"])
    return {"title": title, "create_time": 1718000000.514793, "update_time": 1718000900.25, "mapping": mapping,
            "moderation_results": [], "current_node": nodes[-1]["id"], "plugin_ids": None, "conversation_id": cid,
            "gizmo_id": None, "is_archived": False, "default_model_slug": "o3", "id": cid}


def reasoning_conversation() -> dict[str, Any]:
    return gpt_conversation("c-reason", [
        gpt_node("root", None, None, None),
        gpt_node("u1", "root", "user", {"content_type": "text", "parts": ["What should I cook with chickpeas?"]},
                 1718000010.123),
        gpt_node("th", "u1", "assistant", {"content_type": "thoughts", "thoughts": [
            {"summary": "Considering recipes", "content": "A curry fits a vegetarian.", "chunks": [], "finished": True}],
            "source_analysis_msg_id": "x"}, 1718000012.5, metadata={"reasoning_status": "is_reasoning"}),
        gpt_node("rr", "th", "assistant", {"content_type": "reasoning_recap", "content": "Thought for 4 seconds"},
                 1718000013.0, metadata={"reasoning_status": "reasoning_ended"}),
        gpt_node("a1", "rr", "assistant", {"content_type": "text", "parts": ["Try a chickpea and spinach curry."]},
                 1718000014.75, end_turn=True),
    ])


def test_chatgpt_reasoning_is_not_a_turn_but_the_answers_metadata(memory: Memory, tmp_path: Path) -> None:
    """Defect: o1/o3 `thoughts` and `reasoning_recap` messages became assistant turns reading
    "[thoughts]" and "[reasoning_recap]", searched, embedded and extracted as if said."""
    report = memory.import_from(write(tmp_path, "conversations.json", [reasoning_conversation()]), user_id="lin")
    turns = memory.get_turns("c-reason", user_id="lin")
    assert [(t.role, t.content) for t in turns] == [
        ("user", "What should I cook with chickpeas?"), ("assistant", "Try a chickpea and spinach curry.")]
    assert report.turns == 2
    thoughts = json.dumps(turns[1].metadata["thoughts"])
    assert "A curry fits a vegetarian." in thoughts and "Thought for 4 seconds" in thoughts


def test_chatgpt_a_continued_conversation_adds_only_its_new_turns(memory: Memory, tmp_path: Path) -> None:
    """Held: a second export after the conversation went on adds only the new turns, and a
    conversation found in two files is stored once."""
    conv = reasoning_conversation()
    memory.import_from(write(tmp_path, "a.json", [conv]), user_id="lin")
    conv["mapping"]["a1"]["children"] = ["u2"]
    conv["mapping"]["u2"] = gpt_node("u2", "a1", "user", {"content_type": "text", "parts": ["And for dessert?"]},
                                     1718000100.0)
    conv["current_node"] = "u2"
    other = gpt_conversation("c-new", [gpt_node("r", None, None, None), gpt_node(
        "n1", "r", "user", {"content_type": "text", "parts": ["A new one"]}, 1718100000)])
    again = memory.import_from(write(tmp_path, "b.json", [other, conv]), user_id="lin")
    assert (again.turns, again.already) == (2, 2)
    assert [t.content for t in memory.get_turns("c-reason", user_id="lin")][-1] == "And for dessert?"
    assert len(memory.get_turns(user_id="lin")) == 4


# ---- mem0 -----------------------------------------------------------------------------------


def test_mem0_whole_number_ids_are_the_memorys_identity(memory: Memory, tmp_path: Path) -> None:
    """Defect: an id that is a number (a self-hosted mem0 on a vector store with integer ids)
    was dropped: not kept as mem0_id, and two memories of the same text became one."""
    rows = [{"id": 17, "memory": "Walks the dog at 7", "hash": "a1", "metadata": None, "categories": None,
             "created_at": "2024-07-20T01:30:00.123456-07:00", "updated_at": None, "user_id": "alex"},
            {"id": 18, "memory": "Walks the dog at 7", "hash": "a1", "metadata": None, "categories": None,
             "created_at": "2024-08-20T01:30:00-07:00", "updated_at": None, "user_id": "alex"}]
    report = memory.import_from(write(tmp_path, "m.json", {"results": rows, "relations": []}), user_id="lin")
    assert report.memories == 2 and not report.skipped
    assert sorted(m.metadata["mem0_id"] for m in memory.list(user_id="lin")) == ["17", "18"]
    assert memory.import_from(tmp_path / "m.json", user_id="lin").memories == 0


def test_mem0_a_user_id_that_is_a_number_never_mixes_users(memory: Memory, tmp_path: Path) -> None:
    """Defect: the user filter read only text user ids, so records of mem0 users 1 and 2 (ids
    as numbers) all landed in one memlane user."""
    rows = [{"id": "a", "memory": "User one likes tea", "user_id": 1, "categories": ["food"]},
            {"id": "b", "memory": "User two likes coffee", "user_id": 2, "categories": ["food"]},
            {"id": "c", "memory": "Someone's list", "user_id": {"nested": True}}]
    report = memory.import_from(write(tmp_path, "m.json", rows), user_id="lin", source_user="1")
    assert [m.content for m in memory.list(user_id="lin")] == ["User one likes tea"]
    assert report.memories == 1 and len(report.skipped) == 2
    assert all("user" in s.reason for s in report.skipped)


# ---- Letta ----------------------------------------------------------------------------------


def letta_file(name: str, said: str, fact: str, day: str) -> dict[str, Any]:
    """An agent file as Letta writes it today: ids local to the file (agent-0, block-0,
    message-0), so every single-agent export names its agent "agent-0"."""
    def msg(n: int, role: str, content: Any, **extra: Any) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": content, "id": f"message-{n}", "agent_id": "agent-0",
                "tool_calls": None, "tool_call_id": None, "tool_returns": [], "created_at": f"{day}T10:0{n}:00+00:00",
                **extra}
    return {
        "agents": [{"name": name, "memory_blocks": [], "block_ids": ["block-0", "block-1"], "tool_ids": ["tool-0"],
                    "system": f"You are {name}.", "agent_type": "letta_v1_agent", "id": "agent-0",
                    "in_context_message_ids": ["message-0", "message-2"],
                    "messages": [
                        msg(0, "system", [{"type": "text", "text": f"You are {name}."}]),
                        msg(1, "user", [{"type": "text", "text": json.dumps({"type": "user_message", "message": said})}]),
                        msg(2, "assistant", [{"type": "reasoning", "reasoning": "A fact.", "is_native": True}],
                            tool_calls=[{"id": "call_1", "type": "function", "function": {
                                "name": "send_message", "arguments": json.dumps({"message": "Noted!"})}}]),
                        msg(3, "tool", [{"type": "text", "text": '{"status": "OK", "message": "None"}'}],
                            name="send_message", tool_call_id="call_1")]}],
        "groups": [], "files": [], "sources": [], "tools": [], "mcp_servers": [], "metadata": {},
        "blocks": [{"value": f"\nFirst name: Chad\nLast name: ?\n{fact}\n", "limit": 5000, "label": "human",
                    "read_only": False, "metadata": {}, "id": "block-0"},
                   {"value": f"I am {name}.", "limit": 5000, "label": "persona", "metadata": {}, "id": "block-1"}],
    }


def test_letta_two_agents_files_keep_two_sessions(memory: Memory, tmp_path: Path) -> None:
    """Defect: two agents exported separately are both "agent-0" in their files, so both went
    into the session "letta-agent-0", and the second agent's reply, keyed like the first's,
    was counted as already imported and lost."""
    memory.import_from(write(tmp_path, "travel.af", letta_file("travel_agent", "I fly to Oslo.", "Job: pilot",
                                                               "2025-01-02")), user_id="lin")
    second = memory.import_from(write(tmp_path, "cook.af", letta_file("cooking_agent", "I bought a wok.",
                                                                      "Diet: vegetarian", "2025-03-04")), user_id="lin")
    assert (second.turns, second.already) == (2, 1)  # the one fact both agents knew
    sessions = {s.id: s for s in memory.sessions(user_id="lin")}
    assert len(sessions) == 2
    cook = next(s for s in sessions.values() if s.metadata["title"] == "Letta agent cooking_agent")
    assert [t.content for t in memory.get_turns(cook.id, user_id="lin")] == ["I bought a wok.", "Noted!"]
    # the same fact known to both agents is one pinned memory, not two
    facts = [m.content for m in memory.list(user_id="lin") if m.pinned]
    assert sorted(facts) == ["Diet: vegetarian", "First name: Chad", "Job: pilot"]
    again = memory.import_from(tmp_path / "cook.af", user_id="lin")  # idempotent still
    assert (again.turns, again.memories) == (0, 0)


def test_letta_the_reply_tools_receipt_is_not_a_turn(memory: Memory, tmp_path: Path) -> None:
    """Defect: send_message's receipt ({"status": "OK", "message": "None"}) followed every
    reply as a tool turn: noise searched and embedded."""
    memory.import_from(write(tmp_path, "a.af", letta_file("a", "Hi.", "Job: pilot", "2025-01-02")), user_id="lin")
    assert [t.role for t in memory.get_turns(user_id="lin")] == ["user", "assistant"]


def test_letta_first_generation_blocks_keep_their_dates(memory: Memory, tmp_path: Path) -> None:
    """Defect: a first-generation .af's core_memory blocks carry created_at / updated_at, but
    their memories were dated by the import."""
    agent = {"agent_type": "memgpt_agent", "name": "memgpt_agent", "version": "0.6.47",
             "core_memory": [{"label": "human", "value": "Lives in Utrecht", "limit": 5000, "is_template": False,
                              "created_at": "2025-03-01T10:00:00", "updated_at": "2025-04-01T11:00:00",
                              "metadata_": {}, "template_name": None, "description": None}],
             "in_context_message_indices": [0], "messages": [
                 {"created_at": "2025-04-01T03:47:19.404412", "role": "user", "content": [{"type": "text", "text": "Hi"}],
                  "tool_calls": [], "tool_returns": [], "name": None, "tool_call_id": None}]}
    memory.import_from(write(tmp_path, "old.af", agent), user_id="lin")
    m = memory.list(user_id="lin")[0]
    assert (m.created_at.isoformat(), m.updated_at.isoformat()) == ("2025-03-01T10:00:00+00:00",
                                                                  "2025-04-01T11:00:00+00:00")


# ---- markdown over REST ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a\x00b.md", "x" * 300 + ".md", "/".join(["d"] * 3000) + "/a.md"])
def test_rest_note_names_the_disk_refuses_are_a_clear_error(tmp_path: Path, name: str) -> None:
    """Defect: a note name with a NUL, or too long for the file system, raised ValueError /
    OSError out of write_notes: a 500 naming the server's temporary folder."""
    from memlane.server.routes import write_notes

    with pytest.raises(ValidationError, match="notes\\[") as caught:
        write_notes(tmp_path / "notes", json.dumps({"notes": {name: "- a fact"}}).encode())
    assert str(tmp_path) not in str(caught.value)


# ---- two imports at once; an import killed half way ------------------------------------------


def test_two_imports_of_one_file_at_once_store_each_memory_once(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect: the memories already imported were read before the write transaction, so two
    processes importing one mem0 file at once both stored everything (20,000 records: 40,000
    memories). Here the second import runs entirely while the first checks its records."""
    import memlane.importing.store as store

    rows = [{"id": f"m{i}", "memory": f"Fact number {i}", "user_id": "alex"} for i in range(30)]
    path = write(tmp_path, "m.json", rows)
    first = Memory(make_config(tmp_path / "data"), embedder=HashEmbedder())
    second = Memory(make_config(tmp_path / "data"), embedder=HashEmbedder())
    check = store.validate.memory_text
    raced: list[int] = []

    def racing(*args: Any, **kw: Any) -> str:
        if not raced:
            raced.append(-1)  # the second import's own checks go straight through
            raced[0] = second.import_from(path, user_id="lin").memories
        return check(*args, **kw)

    monkeypatch.setattr(store.validate, "memory_text", racing)
    try:
        report = first.import_from(path, user_id="lin")
        assert raced == [30]
        assert (report.memories, report.already) == (0, 30)
        assert len(first.list(user_id="lin", limit=1000)) == 30
    finally:
        first.close()
        second.close()


def test_a_rerun_after_a_killed_import_extracts_and_titles_what_the_first_stored(memory: Memory,
                                                                                 tmp_path: Path) -> None:
    """Defects (kill -9 half way through `memlane import --extract`, then the same command):
    extraction was queued only for sessions that got new turns, so every conversation stored
    before the kill was never extracted (measured: 57 of 100); and a conversation whose turns
    were committed just before the kill never got its title. Here the first run stands for the
    killed one: its turns are in, its titles and extraction are not."""
    import memlane.importing.store as store

    path = write(tmp_path, "conversations.json", [reasoning_conversation()])
    describe = store._describe_session
    store._describe_session = lambda *a: None  # type: ignore[assignment]  # killed before the title
    try:
        memory.import_from(path, user_id="lin")
    finally:
        store._describe_session = describe  # type: ignore[assignment]
    assert "title" not in memory.get_session("c-reason", user_id="lin").metadata
    again = memory.import_from(path, user_id="lin", extract=True)
    assert (again.turns, again.extraction_jobs, again.stored_ids) == (0, 1, ["c-reason"])
    assert memory.get_session("c-reason", user_id="lin").metadata["title"] == "t"
    assert memory.import_from(path, user_id="lin", extract=True).extraction_jobs == 0  # nothing left to extract


# ---- hostile files --------------------------------------------------------------------------


def test_a_link_out_of_the_notes_folder_is_not_read(memory: Memory, tmp_path: Path) -> None:
    """Defect: a notes folder's symbolic link to a .md file elsewhere was read and imported
    (linked folders were not walked, linked files were)."""
    secret = tmp_path / "elsewhere" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("- the contents of a file outside the vault\n", "utf-8")
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "a.md").write_text("- Water the basil daily\n", "utf-8")
    (notes / "inside.md").symlink_to(notes / "a.md")  # a link within the folder is fine
    (notes / "link.md").symlink_to(secret)
    report = memory.import_from(notes, user_id="lin")
    assert sorted(m.metadata["note"] for m in memory.list(user_id="lin")) == ["a.md", "inside.md"]
    assert [(s.record, s.reason) for s in report.skipped] == [("link.md", "a link to a file outside the folder: "
                                                                          "not read")]


def test_a_zipped_export_says_to_unzip_it(memory: Memory, tmp_path: Path) -> None:
    """Defect: the export as downloaded (a zip) was refused as "not UTF-8 text (byte 11);
    convert it to UTF-8", which sends a person the wrong way."""
    import zipfile

    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("conversations.json", json.dumps([reasoning_conversation()]))
    for fmt in ("chatgpt", "letta"):
        with pytest.raises(ValidationError, match="zip archive: unzip it"):
            memory.import_from(path, format=fmt, user_id="lin")


def test_a_million_ids_do_not_collide(memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect: imported memories took 10-hex-digit ids (40 bits); a mem0 file of a million
    records collided on one (birthday bound) and the whole import failed on the primary key
    (measured). Here the id source repeats after 10 ids unless asked for 16 digits."""
    import memlane.importing.store as store

    real = store.new_id
    made: list[int] = []

    def short(length: int = 10) -> str:
        made.append(length)
        return real(length) if length >= 16 else f"{len(made) % 10:010d}"

    monkeypatch.setattr(store, "new_id", short)
    rows = [{"memory": f"Fact {i}"} for i in range(25)]
    assert memory.import_from(write(tmp_path, "m.json", rows), format="mem0", user_id="lin").memories == 25
