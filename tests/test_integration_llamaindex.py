"""memlane.integrations.llamaindex: `MemlaneMemoryBlock` inside LlamaIndex's own `Memory` and
chat engine, with LlamaIndex's MockLLM (it answers with the prompt it was given, so a reply
shows what the model saw) — issue 33."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="LlamaIndex is not installed: pip install 'memlane[llamaindex]'")

from llama_index.core.chat_engine import SimpleChatEngine  # noqa: E402
from llama_index.core.llms import ChatMessage, MockLLM  # noqa: E402
from llama_index.core.memory import Memory as ChatMemory  # noqa: E402

from memlane import Memory  # noqa: E402
from memlane.errors import MissingExtra, ValidationError  # noqa: E402
from memlane.integrations.llamaindex import MemlaneMemoryBlock, as_openai, calls_of, fitted  # noqa: E402

from .conftest import make_config  # noqa: E402

EXAMPLE = Path(__file__).parents[1] / "examples" / "llamaindex_memory.py"
SAID = ["Remember that I am allergic to peanuts.", "My sister Mei lives in Kyoto and teaches piano.",
        "I went hiking in the Alps last autumn.", "The weather is lovely today."]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(make_config(tmp_path)) as m:
        yield m


def chat(memory: Memory, user: str, session: str, token_limit: int = 60) -> tuple[SimpleChatEngine, ChatMemory]:
    """LlamaIndex's documented setup: `Memory.from_defaults(memory_blocks=[...])` in a chat engine;
    a small window, so the conversation overflows it into memlane."""
    chat_memory = ChatMemory.from_defaults(session_id=session, token_limit=token_limit,
                                           memory_blocks=[MemlaneMemoryBlock(memory=memory, user_id=user)])
    return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=chat_memory), chat_memory


def test_a_new_session_recalls_what_an_earlier_one_flushed(memory: Memory) -> None:
    engine, _ = chat(memory, "lin", "s1")
    for text in SAID:
        engine.chat(text)
    # what overflowed LlamaIndex's window is memlane's now: turns of the session, in order
    turns = memory.get_turns("s1", user_id="lin")
    assert [t.content for t in turns if t.role == "user"] == SAID[:len([t for t in turns if t.role == "user"])]
    assert len([t for t in turns if t.role == "user"]) >= 2 and {t.role for t in turns} == {"user", "assistant"}
    # the "remember that…" rule pinned a memory at once, through memlane's own path
    assert [m.content for m in memory.list(user_id="lin")] == ["The user is allergic to peanuts."]

    later, chat_memory = chat(memory, "lin", "s2")
    reply = later.chat("Where does my sister live?").response  # MockLLM: the prompt it was given
    assert "Mei lives in Kyoto" in reply and "allergic to peanuts" in reply
    assert "Kyoto" in chat_memory.get("Where does my sister live?")[0].content  # the system message
    # another user sees none of it
    other, _ = chat(memory, "bob", "s3")
    reply = other.chat("Where does my sister live? Am I allergic to peanuts?").response
    assert "Kyoto" not in reply and "The user is allergic" not in reply


def test_flush_at_the_end_hands_over_the_window_and_ends_the_session(memory: Memory) -> None:
    engine, chat_memory = chat(memory, "lin", "s1", token_limit=100_000)  # nothing overflows
    engine.chat("My sister Mei lives in Kyoto.")
    assert memory.sessions(user_id="lin") == []
    block = chat_memory.memory_blocks[0]
    assert isinstance(block, MemlaneMemoryBlock)
    assert block.flush(chat_memory) == 2
    [session] = memory.sessions(user_id="lin")
    assert session.id == "s1" and session.ended_at is not None
    assert [t.content for t in memory.get_turns("s1", user_id="lin")][0] == "My sister Mei lives in Kyoto."
    assert block.flush(chat_memory, end_session=False) == 0  # nothing is handed over twice
    assert len(memory.get_turns("s1", user_id="lin")) == 2


def test_the_block_text_is_memlanes_context_within_the_budget(memory: Memory) -> None:
    memory.add("The user is allergic to peanuts", user_id="lin", category="fact", importance="high")
    for i in range(30):
        memory.add(f"The user visited museum number {i} in Paris", user_id="lin", category="fact")
    block = MemlaneMemoryBlock(memory=memory, user_id="lin")
    question = [ChatMessage(role="user", content="Which museum in Paris did I visit?")]
    text = asyncio.run(block.aget(question, session_id="new"))
    assert "allergic to peanuts" in text and "museum number" in text
    assert "Memory system" not in text  # memlane's tool self-description only when asked for
    assert "Memory system" in asyncio.run(MemlaneMemoryBlock(memory=memory, user_id="lin", include_tools=True)
                                          .aget(question))
    small = MemlaneMemoryBlock(memory=memory, user_id="lin", max_tokens=40)
    from memlane.text import estimate_tokens

    assert 0 < estimate_tokens(asyncio.run(small.aget(question))) <= 40
    cut = asyncio.run(block.atruncate(text, estimate_tokens(text) // 2))
    assert cut is not None and text.startswith(cut.rstrip("…")) and estimate_tokens(cut) < estimate_tokens(text)
    assert asyncio.run(block.atruncate(text, 10_000)) is None
    assert asyncio.run(MemlaneMemoryBlock(memory=memory, user_id="nobody").aget(question)) == ""


def test_messages_as_memlane_takes_them(memory: Memory) -> None:
    assert as_openai(ChatMessage(role="model", content="hi")) == {"role": "assistant", "content": "hi"}
    assert as_openai(ChatMessage(role="tool", content="42", additional_kwargs={"tool_call_id": "c1"})) == \
        {"role": "tool", "content": "42", "tool_call_id": "c1"}
    calls = [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]
    assert as_openai(ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": calls})) == \
        {"role": "assistant", "content": "", "tool_calls": calls}
    assert as_openai(ChatMessage(role="assistant", content="")) is None
    block = MemlaneMemoryBlock(memory=memory, user_id="lin", session_id="mine")
    asyncio.run(block.aput([ChatMessage(role="user", content="hello"), ChatMessage(role="assistant", content="")],
                           session_id="theirs"))
    assert [t.content for t in memory.get_turns("mine", user_id="lin")] == ["hello"]  # the block's own session
    with pytest.raises(ValidationError, match="session_id"):
        asyncio.run(MemlaneMemoryBlock(memory=memory, user_id="lin").aput([ChatMessage(role="user", content="x")]))
    with pytest.raises(ValidationError, match="memory"):
        MemlaneMemoryBlock(memory=object(), user_id="lin")
    with pytest.raises(ValidationError, match="user_id"):
        MemlaneMemoryBlock(memory=memory, user_id=" ")


def test_import_without_llamaindex_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_index.core.memory.memory", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "memlane.integrations.llamaindex")
    with pytest.raises(MissingExtra, match=r"pip install 'memlane\[llamaindex\]'") as err:
        importlib.import_module("memlane.integrations.llamaindex")
    assert isinstance(err.value, ImportError)  # `except ImportError` makes the adapter optional


# ---- what LlamaIndex flushes is never lost (issue 33, att33) --------------------------------


def test_fitted_cuts_a_long_text_and_says_so_and_cleans_what_memlane_refuses() -> None:
    long = fitted({"role": "user", "content": "x" * 250}, 100)
    assert len(long["content"]) == 100 and long["metadata"] == {"cut_from": 250}
    assert long["content"].startswith("x") and "cut by memlane" in long["content"]
    assert long["content"].endswith("characters not kept (store.max_turn_chars)]")
    assert fitted({"role": "user", "content": "a\x00b\ud800c"}, 100)["content"] == "ab\ufffdc"
    assert fitted({"role": "user", "content": "short"}, 100) == {"role": "user", "content": "short"}


def test_calls_of_keeps_order_within_memlanes_per_call_caps() -> None:
    msgs = [{"role": "user", "content": "x" * n} for n in (5, 5, 5, 9, 1, 1)]
    calls = calls_of(msgs, max_count=3, max_chars=10)
    assert [[len(m["content"]) for m in c] for c in calls] == [[5, 5], [5], [9, 1], [1]]
    assert [m for c in calls for m in c] == msgs


def test_a_pasted_document_is_kept_cut_and_the_chat_goes_on(memory: Memory) -> None:
    limit = memory.config.store.max_turn_chars
    chat_memory = ChatMemory.from_defaults(session_id="s1", token_limit=40_000,
                                           memory_blocks=[MemlaneMemoryBlock(memory=memory, user_id="lin")])
    document = "Here is my document: " + "word " * (limit // 4)

    async def talk() -> list[Any]:
        await chat_memory.aput(ChatMessage(role="user", content=document))
        asked = await chat_memory.aget()  # the block asks memlane with the document as the query
        await chat_memory.aput(ChatMessage(role="assistant", content="Thanks, I read it."))
        await chat_memory.aput(ChatMessage(role="user", content="My sister Mei lives in Kyoto. \x00"))
        return asked

    assert asyncio.run(talk())
    turns = memory.get_turns("s1", user_id="lin")
    assert [t.role for t in turns][:2] == ["user", "assistant"]
    assert len(turns[0].content) == limit and turns[0].content.startswith("Here is my document: word word")
    assert turns[0].metadata["cut_from"] == len(document)


def test_a_flush_larger_than_one_call_goes_in_several_in_order(memory: Memory) -> None:
    cfg = memory.config.store
    many = [ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"message {i}")
            for i in range(cfg.max_messages_per_call + 5)]
    block = MemlaneMemoryBlock(memory=memory, user_id="lin", session_id="big")
    asyncio.run(block.aput(many))
    assert [t.content for t in memory.get_turns("big", user_id="lin", limit=10_000)] == [m.content for m in many]


@pytest.mark.parametrize("field,kw", [("user_id", {"user_id": "li\ud800n"}), ("user_id", {"user_id": "a\nb"}),
                                      ("user_id", {"user_id": "u" * 1_000}),
                                      ("agent_id", {"user_id": "lin", "agent_id": "a\tb"}),
                                      ("session_id", {"user_id": "lin", "session_id": "s\n1"})])
def test_the_block_checks_its_scope_and_session_when_made(memory: Memory, field: str, kw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as err:
        MemlaneMemoryBlock(memory=memory, **kw)
    assert err.value.field == field


def test_example_remembers_across_sessions_and_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")
    spec = importlib.util.spec_from_file_location("llamaindex_memory", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    home = str(tmp_path / "home")
    assert example.main(["--mock", "--user", "lin", "--session", "s1", "--home", home,
                         "--message", "My sister Mei lives in Kyoto."]) == 0
    capsys.readouterr()
    assert example.main(["--mock", "--user", "lin", "--session", "s2", "--home", home,
                         "--message", "Where does my sister live?"]) == 0
    assert "Mei lives in Kyoto" in capsys.readouterr().out
    assert example.main(["--mock", "--user", "bob", "--session", "s3", "--home", home,
                         "--message", "Where does my sister live?"]) == 0
    assert "Kyoto" not in capsys.readouterr().out
    with Memory(make_config(Path(home))) as m:
        assert [s.ended_at is not None for s in m.sessions(user_id="lin")] == [True, True]
