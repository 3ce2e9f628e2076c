"""Conversation files in: malformed ones fail with a named field and import nothing; a file
imported again — after a crash, or by a retry — adds nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memlane import Memory, ValidationError
from memlane.importers import Conversation, read_file

LOCOMO = {"sample_id": "c1", "conversation": {
    "speaker_a": "Ann", "speaker_b": "Bob",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                  {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely!"}]}}


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def locomo_with(**changes: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(LOCOMO))
    doc["conversation"].update(changes)
    return doc


@pytest.mark.parametrize(("name", "data", "field"), [
    ("no-speaker.json", locomo_with(session_1=[{"text": "who said this?"}]), "session_1[0].speaker"),
    ("turn-not-object.json", locomo_with(session_1=["hello"]), "session_1[0]"),
    ("numeric-locomo-date.json", locomo_with(session_1_date_time=1683554160), "session_1_date_time"),
    ("sessions-number.json", {"sessions": 5}, "sessions"),
    ("session-not-object.json", {"sessions": [[1, 2]]}, "sessions[0]"),
    ("numeric-started-at.json", {"sessions": [{"started_at": 5, "messages": [{"content": "hi"}]}]},
     "sessions[0].started_at"),
    ("numeric-created-at.json", [{"role": "user", "content": "hi", "created_at": 1683554160}],
     "sessions[0].messages[0].created_at"),
    ("surrogate.json", '[{"role": "user", "content": "bad \\ud800 text"}]', "sessions[0].messages[0].content"),
    ("surrogate-name.json", '[{"role": "user", "content": "ok", "name": "\\udfff"}]', "sessions[0].messages[0].name"),
    ("deep.json", '{"messages": ' + "[" * 50_000 + "]" * 50_000 + "}", "file"),
    ("deep-metadata.json", [{"role": "user", "content": "hi", "metadata": json.loads("{\"a\":" * 40 + "1" + "}" * 40)}],
     "sessions[0].messages[0].metadata" + ".a" * 8),
    ("role.json", [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}],
     "sessions[0].messages[1].role"),
    ("empty.json", [], "file"),
])
def test_a_malformed_file_names_the_field_and_imports_nothing(memory: Memory, tmp_path: Path, name: str,
                                                              data: Any, field: str) -> None:
    path = write(tmp_path / name, data)
    with pytest.raises(ValidationError) as info:
        memory.import_conversations(read_file(path, 10**8), user_id="u1")
    assert info.value.field == field
    assert memory.store.raw_count("turns") == 0 and memory.store.raw_count("sessions") == 0


def test_a_refused_message_names_file_session_and_index_and_nothing_is_imported(memory: Memory,
                                                                                tmp_path: Path) -> None:
    too_long = "x" * (memory.config.store.max_turn_chars + 1)
    path = write(tmp_path / "chat.jsonl", "\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "a", "session_id": "one"}, {"role": "user", "content": "b", "session_id": "two"},
        {"role": "assistant", "content": too_long, "session_id": "two"}]))
    with pytest.raises(ValidationError) as info:
        memory.import_conversations(read_file(path, 10**8), user_id="u1")
    assert info.value.field == "sessions[1].messages[1].content"
    assert "chat.jsonl" in str(info.value) and "'two'" in str(info.value) and "store.max_turn_chars" in str(info.value)
    assert memory.store.raw_count("turns") == 0


def test_importing_the_same_file_again_skips_every_message(memory: Memory, tmp_path: Path) -> None:
    path = write(tmp_path / "locomo.json", LOCOMO)
    first = memory.import_conversations(read_file(path, 10**8), user_id="u1")
    assert (first.turns, first.skipped) == (2, 0)
    again = memory.import_conversations(read_file(path, 10**8), user_id="u1")
    assert (again.turns, again.skipped) == (0, 2)
    # the file grew: only the new message is stored, after the others
    doc = locomo_with(session_1=[*LOCOMO["conversation"]["session_1"], {"speaker": "Ann", "text": "She is fine."}])
    grown = memory.import_conversations(read_file(write(path, doc), 10**8), user_id="u1")
    assert (grown.turns, grown.skipped) == (1, 2)
    assert [t.content for t in memory.get_turns("session_1", user_id="u1")] == [
        "Ann: I adopted a cat.", "Bob: Lovely!", "Ann: She is fine."]
    # the same words in another file are another conversation; live turns are never skipped
    other = memory.import_conversations(read_file(write(tmp_path / "copy.json", LOCOMO), 10**8), user_id="u1")
    assert other.turns == 2
    memory.add_messages("session_1", [{"role": "user", "content": "Ann: I adopted a cat."}], user_id="u1")
    assert memory.stats(user_id="u1").turns == 6


def test_two_conversations_in_one_call_are_imported_once_each(memory: Memory) -> None:
    conv = [Conversation("s1", [{"role": "user", "content": "hi"}]), Conversation("s2", [{"content": "hi"}])]
    assert memory.import_conversations(conv, user_id="u1").turns == 2
    assert memory.import_conversations(conv, user_id="u1").skipped == 2


def _cli(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "MEMLANE_HOME": str(home), "MEMLANE_EMBEDDER": "hash"}
    return subprocess.Popen([sys.executable, "-m", "memlane", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_an_import_killed_at_any_moment_then_rerun_has_every_turn_once(tmp_path: Path) -> None:
    n = 2000
    path = write(tmp_path / "big.jsonl", "\n".join(
        json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} about topic {i % 37}",
                    "session_id": f"s{i // 500}"}) for i in range(n)))
    home = tmp_path / "home"
    for delay in (0.8, 1.5, 2.2):  # python start-up, parsing, the transaction, embedding
        proc = _cli(home, "import", str(path), "--user", "u1", "--json")
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc = _cli(home, "import", str(path), "--user", "u1", "--json")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["turns"] + result["skipped"] == n
    with _open(home) as mem:
        turns = mem.get_turns(user_id="u1")
        assert len(turns) == n
        assert sorted(t.content for t in turns) == sorted(f"message {i} about topic {i % 37}" for i in range(n))


def _open(home: Path) -> Memory:
    from memlane.api import open_memory

    return open_memory(home, embedding={"provider": "hash", "background": False})
