"""The OpenAI Agents SDK's quickstart with memlane as the session and the long-term memory
(`pip install 'memlane[openai-agents]'`).

    python examples/openai_agents_memory.py --user lin --session monday --message "I'm allergic to peanuts, remember that"
    python examples/openai_agents_memory.py --user lin --session tuesday --message "What snack would you suggest?"
    python examples/openai_agents_memory.py --base-url http://localhost:11434/v1 --model qwen2.5 --message "hi"

The swap from the SDK's quickstart: `session=MemlaneSession(...)` instead of
`SQLiteSession(...)`, `tools=memlane_tools(...)` and `instructions=memlane_instructions(...)`.
The session keeps the conversation (a new process continues it); the tools and the
instructions carry what the user said in other sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from memlane import open_memory
from memlane.integrations.openai_agents import MemlaneSession, memlane_instructions, memlane_tools


async def chat(args: argparse.Namespace) -> None:
    # Chat Completions works with any OpenAI-compatible server (Ollama, vLLM, a local stub)
    client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key or None)
    model = OpenAIChatCompletionsModel(model=args.model, openai_client=client)
    with open_memory(args.home) as memory:
        session = MemlaneSession(args.session, memory, user_id=args.user)
        agent = Agent(
            name="Assistant",
            model=model,
            instructions=memlane_instructions(memory, user_id=args.user, session=session,
                                              base="You are a helpful assistant. Keep answers short."),
            tools=memlane_tools(memory, user_id=args.user, session=session),
        )
        for text in args.message:
            result = await Runner.run(agent, text, session=session)
            print(f"assistant> {result.final_output}", flush=True)
        memory.end_session(args.session, user_id=args.user)  # extraction and the episode, per memlane's rules


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible API root (default: the SDK's)")
    parser.add_argument("--api-key", default=None, help="default: OPENAI_API_KEY")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--user", default="default")
    parser.add_argument("--session", default="chat")
    parser.add_argument("--home", default=None, help="memlane data directory (default: MEMLANE_HOME)")
    parser.add_argument("--message", action="append", required=True)
    parser.add_argument("--tracing", action="store_true", help="send the SDK's traces to OpenAI (off by default)")
    args = parser.parse_args(argv)
    set_tracing_disabled(not args.tracing)
    asyncio.run(chat(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
