"""An agent on the official OpenAI SDK (`pip install openai`) with memlane's context and tools.

    python examples/openai_sdk_agent.py --model gpt-4o-mini --user lin --message "晚饭吃什么？"
    python examples/openai_sdk_agent.py --base-url http://localhost:11434/v1 --model qwen2.5 --message "hi"

The SDK's own objects go straight in: the reply message into `add_messages`, each of its
`tool_calls` into `tools.handle`; the `tool` messages that come back carry their
`tool_call_id`, and `build_context(...).messages()` gives them back in the same shape next time.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from openai import OpenAI

from memlane import Memory, open_memory


def chat(client: Any, memory: Memory, model: str, user_id: str, session_id: str, text: str,
         max_tool_rounds: int = 4) -> str:
    """One user message in, the assistant's reply out; every message is stored as a turn."""
    memory.add_messages(session_id, [{"role": "user", "content": text}], user_id=user_id)
    messages: list[Any] = memory.build_context(session_id, text, user_id=user_id, model=model).messages()
    tools = memory.tools(user_id=user_id, session_id=session_id)
    for round_ in range(max_tool_rounds + 1):
        offer = tools.schemas if round_ < max_tool_rounds else []  # the last round must answer
        reply = client.chat.completions.create(model=model, messages=messages, **({"tools": offer} if offer else {}))
        message = reply.choices[0].message
        messages.append(message)
        memory.add_messages(session_id, [message], user_id=user_id)  # the SDK object as it is
        if not message.tool_calls:
            return message.content or ""
        results = [tools.handle(call) for call in message.tool_calls]  # SDK tool-call objects
        messages.extend(results)
        memory.add_messages(session_id, results, user_id=user_id)
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible API root (default: the SDK's)")
    parser.add_argument("--api-key", default=None, help="default: OPENAI_API_KEY")
    parser.add_argument("--model", required=True)
    parser.add_argument("--user", default="default")
    parser.add_argument("--session", default="chat")
    parser.add_argument("--home", default=None, help="memlane data directory (default: MEMLANE_HOME)")
    parser.add_argument("--message", action="append", required=True)
    args = parser.parse_args(argv)
    client = OpenAI(base_url=args.base_url, api_key=args.api_key or None)
    with open_memory(args.home) as memory:  # close() on the way out, whatever happens
        for text in args.message:
            print(f"assistant> {chat(client, memory, args.model, args.user, args.session, text)}", flush=True)
        memory.end_session(args.session, user_id=args.user)  # -> list[RuleResult]: what ran
    return 0


if __name__ == "__main__":
    sys.exit(main())
