"""A LlamaIndex chat engine whose long-term memory is memlane (`pip install 'memlane[llamaindex]'`).

    python examples/llamaindex_memory.py --user lin --session s1 --message "My sister Mei lives in Kyoto."
    python examples/llamaindex_memory.py --user lin --session s2 --message "Where does my sister live?"
    python examples/llamaindex_memory.py --mock --message "hi"   # LlamaIndex's MockLLM: echoes its prompt

LlamaIndex's own `Memory.from_defaults(...)`, with memlane's block in `memory_blocks`: the
chat LlamaIndex flushes out of its window becomes turns of a memlane session, and every
reply is written with memlane's context for the user's message. The model is
`llama_index.llms.openai.OpenAI` when that package is installed (OPENAI_BASE_URL /
OPENAI_API_KEY as usual), else — or with `--mock` — LlamaIndex's MockLLM, offline.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory as ChatMemory

from memlane import Memory, open_memory
from memlane.integrations.llamaindex import MemlaneMemoryBlock


def make_llm(model: str, mock: bool) -> Any:
    if not mock:
        try:
            from llama_index.llms.openai import OpenAI  # type: ignore[import-not-found]
        except ImportError:
            print("llama-index-llms-openai is not installed: using MockLLM", file=sys.stderr)
        else:
            return OpenAI(model=model)
    return MockLLM()


def chat_memory(memory: Memory, user: str, session: str, token_limit: int) -> ChatMemory:
    """LlamaIndex's own Memory, with memlane as its long-term memory block."""
    return ChatMemory.from_defaults(session_id=session, token_limit=token_limit,
                                    memory_blocks=[MemlaneMemoryBlock(memory=memory, user_id=user)])  # the one line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--mock", action="store_true", help="LlamaIndex's MockLLM (offline)")
    parser.add_argument("--user", default="default")
    parser.add_argument("--session", default="chat", help="the conversation (LlamaIndex's session_id)")
    parser.add_argument("--home", default=None, help="memlane data directory (default: MEMLANE_HOME)")
    parser.add_argument("--token-limit", type=int, default=30_000,
                        help="LlamaIndex's chat window; older messages flush into memlane")
    parser.add_argument("--message", action="append", required=True)
    args = parser.parse_args(argv)
    with open_memory(args.home) as memory:
        chat = chat_memory(memory, args.user, args.session, args.token_limit)
        engine = SimpleChatEngine.from_defaults(llm=make_llm(args.model, args.mock), memory=chat)
        for text in args.message:
            print(f"assistant> {engine.chat(text).response}", flush=True)
        # the conversation is over: what is still in LlamaIndex's window goes to memlane too,
        # and the session ends (memlane's queue extracts its memories)
        chat.memory_blocks[0].flush(chat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
