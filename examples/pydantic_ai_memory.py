"""pydantic-ai's quickstart with memlane as its long-term memory (`pip install 'memlane[pydantic-ai]'`).

    python examples/pydantic_ai_memory.py --user lin --session monday --message "I'm allergic to peanuts, remember that"
    python examples/pydantic_ai_memory.py --user lin --session tuesday --message "What snack would you suggest?"
    python examples/pydantic_ai_memory.py --base-url http://localhost:11434/v1 --model qwen2.5 --message "hi"

The swap from pydantic-ai's quickstart: one capability, `MemlaneMemory(...)`, which gives the
agent memlane's tools, puts memlane's context (core memories, the memories relevant to the
prompt) into each model request, and stores each run's messages as turns of the session.
The message history within a process is pydantic-ai's own (`message_history=`), as usual.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from memlane import open_memory
from memlane.integrations.pydantic_ai import MemlaneMemory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible API root (default: OpenAI's)")
    parser.add_argument("--api-key", default=None, help="default: OPENAI_API_KEY")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--user", default="default")
    parser.add_argument("--session", default="chat")
    parser.add_argument("--home", default=None, help="memlane data directory (default: MEMLANE_HOME)")
    parser.add_argument("--message", action="append", required=True)
    args = parser.parse_args(argv)
    model = OpenAIChatModel(args.model, provider=OpenAIProvider(base_url=args.base_url, api_key=args.api_key))
    with open_memory(args.home) as memory:
        agent = Agent(model, instructions="You are a helpful assistant. Keep answers short.",
                      capabilities=[MemlaneMemory(memory, user_id=args.user, session_id=args.session)])
        history: list[Any] = []
        for text in args.message:
            result = agent.run_sync(text, message_history=history)
            history = result.all_messages()
            print(f"assistant> {result.output}", flush=True)
        memory.end_session(args.session, user_id=args.user)  # extraction and the episode, per memlane's rules
    return 0


if __name__ == "__main__":
    sys.exit(main())
