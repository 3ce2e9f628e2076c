"""A complete tool-calling chat loop: memlane's context and tools with any OpenAI-compatible server.

    python examples/agent_loop.py --base-url http://localhost:11434/v1 --model qwen2.5 --user lin
    python examples/agent_loop.py --base-url https://api.openai.com/v1 --model gpt-4o-mini \\
        --api-key "$OPENAI_API_KEY" --user lin --message "What should I cook tonight?"

Each user message is stored first (nothing the user says is lost, whatever happens next).
`build_context` then gives the system prompt (memory tools, scratchpad, core memories,
relevant memories, session summary) and the recent history; the model may call the memory
tools (search_memory → search_conversation_traces → ...) for up to --max-tool-rounds rounds;
every assistant and tool message is stored as a turn too. At the end (EOF, /quit, or after
the --message list) the session ends: the configured rules queue extraction and write the
session's episode.

The data directory and embedder come from the environment as for the `memlane` command
(MEMLANE_HOME, MEMLANE_PROFILE, MEMLANE_EMBEDDER, ...).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from memlane import Memory
from memlane.api import open_memory
from memlane.errors import BackendError
from memlane.models import new_id
from memlane.tools import MemoryTools


class ChatClient:
    """`POST {base_url}/chat/completions` with tools; returns the assistant message dict."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 60.0) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self.model = model

    def chat(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        try:
            resp = self.http.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise BackendError(f"chat request to {self.http.base_url} failed: {exc}") from exc
        if resp.status_code != 200:
            raise BackendError(f"chat request failed with HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            message: dict[str, Any] = resp.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"the server's reply is not an OpenAI chat completion: {resp.text[:300]}") from exc
        return message

    def close(self) -> None:
        self.http.close()


def run_turn(memory: Memory, client: ChatClient, text: str, *, user_id: str, session_id: str,
             model: str | None = None, max_tool_rounds: int = 4) -> str:
    """One user message in, the assistant's final reply out; every message is stored."""
    memory.add_messages(session_id, [{"role": "user", "content": text}], user_id=user_id)
    ctx = memory.build_context(session_id, text, user_id=user_id, model=model)
    tools = MemoryTools(memory, user_id=user_id, session_id=session_id)
    messages = ctx.messages()
    for _ in range(max_tool_rounds + 1):
        reply = client.chat(messages, tools.schemas)
        calls = reply.get("tool_calls") or []
        content = reply.get("content") or ""
        if not calls:
            memory.add_messages(session_id, [{"role": "assistant", "content": content or "(no reply)"}],
                                user_id=user_id)
            return content
        call_message = {"role": "assistant", "content": content or None, "tool_calls": calls}
        results = [tools.handle(call) for call in calls]
        messages += [call_message, *results]
        # stored as sent (a call without text is described by its arguments, so the traces
        # search finds them); build_context(...).messages() gives both back in this shape
        memory.add_messages(session_id, [call_message, *results], user_id=user_id)
    # the model kept calling tools: ask once more without tools so the user gets an answer
    reply = client.chat(messages, [])
    content = reply.get("content") or ""
    memory.add_messages(session_id, [{"role": "assistant", "content": content or "(no reply)"}], user_id=user_id)
    return content


def inputs(messages: Sequence[str] | None) -> Iterable[str]:
    if messages:
        yield from messages
        return
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            return
        line = line.strip()
        if line in ("/quit", "/exit"):
            return
        if line:
            yield line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible API root, e.g. http://localhost:11434/v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default="")
    parser.add_argument("--user", default="default")
    parser.add_argument("--session", default=None, help="Session id (default: a new one).")
    parser.add_argument("--home", default=None, help="memlane data directory (default: MEMLANE_HOME).")
    parser.add_argument("--message", action="append", help="Send these messages instead of reading stdin.")
    parser.add_argument("--max-tool-rounds", type=int, default=4)
    args = parser.parse_args(argv)

    session_id = args.session or f"chat-{new_id(8)}"
    memory = open_memory(args.home)
    client = ChatClient(args.base_url, args.model, args.api_key)
    try:
        memory.start_session(session_id, user_id=args.user)
        for text in inputs(args.message):
            reply = run_turn(memory, client, text, user_id=args.user, session_id=session_id, model=args.model,
                             max_tool_rounds=args.max_tool_rounds)
            print(f"assistant> {reply}", flush=True)
        if memory.get_session(session_id, user_id=args.user).message_count:
            memory.end_session(session_id, user_id=args.user)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
        memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
