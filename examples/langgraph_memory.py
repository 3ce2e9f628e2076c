"""A LangGraph agent whose long-term memory is memlane (`pip install 'memlane[langmem]' langchain-openai`).

    python examples/langgraph_memory.py --user lin --thread t1 --message "Remember that I'm allergic to peanuts"
    python examples/langgraph_memory.py --user lin --thread t2 --message "What should I cook tonight?"
    OPENAI_BASE_URL=http://localhost:11434/v1 python examples/langgraph_memory.py --model qwen2.5 --message "hi"

LangGraph's and LangMem's own quickstart, with one line changed: the store is
`MemlaneStore(open_memory(...))` instead of `InMemoryStore(index=...)`. The agent saves
memories with LangMem's `manage_memory` tool and looks them up with `search_memory`; the
prompt injects the memories relevant to the last message, as LangMem's quickstart does.
Memories live in memlane's data directory, so a new thread — or a new process — recalls
them, and the namespace `("memories", user)` keeps each user's apart.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.prebuilt import create_react_agent
from langmem import create_manage_memory_tool, create_search_memory_tool

from memlane import open_memory
from memlane.integrations.langgraph import MemlaneStore

NAMESPACE = ("memories", "{langgraph_user_id}")  # element 1 names the memlane user (MemlaneStore's user_at=1)


def prompt(state: dict[str, Any], config: RunnableConfig) -> list[Any]:
    """LangMem's quickstart prompt: the memories relevant to the last message, then the chat."""
    user = config["configurable"]["langgraph_user_id"]
    found = get_store().search(("memories", user), query=str(state["messages"][-1].content))
    lines = "\n".join(f"- {item.value['content']}" for item in found)
    system = f"You are a helpful assistant.\n\n## Memories\n{lines or '(none yet)'}"
    return [{"role": "system", "content": system}, *state["messages"]]


def build_agent(model: Any, store: MemlaneStore, checkpointer: Any = None) -> Any:
    tools = [create_manage_memory_tool(namespace=NAMESPACE), create_search_memory_tool(namespace=NAMESPACE)]
    return create_react_agent(model, tools=tools, prompt=prompt, store=store, checkpointer=checkpointer)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--user", default="default")
    parser.add_argument("--thread", default="1", help="LangGraph thread id (a conversation)")
    parser.add_argument("--home", default=None, help="memlane data directory (default: MEMLANE_HOME)")
    parser.add_argument("--message", action="append", required=True)
    args = parser.parse_args(argv)
    with open_memory(args.home) as memory:
        agent = build_agent(ChatOpenAI(model=args.model), MemlaneStore(memory), InMemorySaver())
        config: RunnableConfig = {"configurable": {"thread_id": args.thread, "langgraph_user_id": args.user}}
        for text in args.message:
            result = agent.invoke({"messages": [{"role": "user", "content": text}]}, config=config)
            print(f"assistant> {result['messages'][-1].content}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
