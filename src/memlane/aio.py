"""`AsyncMemory`: the sync core run in a worker thread — a thin wrapper, not a copy.

Every method is declared here (typed from `Memory`'s own signature), so editors, mypy and
`help()` see them; none blocks the event loop. `tools()` gives tools whose `handle` is
awaitable too.

    async with AsyncMemory(open_memory("~/.memlane").config) as m:
        await m.add_messages("s1", [{"role": "user", "content": "我对花生过敏"}], user_id="lin")
        tools = m.tools(user_id="lin", session_id="s1")
        messages.append(await tools.handle(call))
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from memlane.api import Memory
from memlane.config import Config
from memlane.events import EventBus
from memlane.tools import MemoryTools, Schemas

P = ParamSpec("P")
R = TypeVar("R")


def _threaded(method: Callable[Concatenate[Memory, P], R]) -> Callable[Concatenate[AsyncMemory, P],
                                                                        Coroutine[Any, Any, R]]:
    """`Memory.method` as an awaitable method of `AsyncMemory`, run in a worker thread."""

    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self.sync, *args, **kwargs)

    return call


class AsyncTools:
    """`MemoryTools` with awaitable `handle` / `call`: the tools run in a worker thread."""

    def __init__(self, tools: MemoryTools) -> None:
        self.sync = tools

    @property
    def schemas(self) -> Schemas:
        return self.sync.schemas

    @property
    def names(self) -> Sequence[str]:
        return self.sync.names

    async def handle(self, tool_call: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.handle, tool_call)

    ahandle = handle

    async def call(self, name: str, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.call, name, arguments)


class AsyncMemory:
    """Every public method of `Memory`, awaitable. `AsyncMemory(Memory(...))` or `AsyncMemory(config)`."""

    def __init__(self, memory: Memory | Any = None, **kwargs: Any) -> None:
        self.sync = memory if isinstance(memory, Memory) else Memory(memory, **kwargs)

    @property
    def config(self) -> Config:
        return self.sync.config

    @property
    def events(self) -> EventBus:
        """The sync core's event bus: `subscribe` / `register_action` as on `Memory`."""
        return self.sync.events

    def tools(self, *, user_id: str, agent_id: str | None = None, session_id: str | None = None) -> AsyncTools:
        """The agent tools bound to one scope; `await tools.handle(call)` keeps the loop free."""
        return AsyncTools(self.sync.tools(user_id=user_id, agent_id=agent_id, session_id=session_id))

    add_messages = _threaded(Memory.add_messages)
    end_session = _threaded(Memory.end_session)
    extract = _threaded(Memory.extract)
    drain = _threaded(Memory.drain)
    flush = _threaded(Memory.flush)
    import_conversations = _threaded(Memory.import_conversations)
    get_turns = _threaded(Memory.get_turns)
    sessions = _threaded(Memory.sessions)
    start_session = _threaded(Memory.start_session)
    get_session = _threaded(Memory.get_session)
    compact_session = _threaded(Memory.compact_session)
    episodes = _threaded(Memory.episodes)
    scratchpad = _threaded(Memory.scratchpad)
    update_scratchpad = _threaded(Memory.update_scratchpad)
    build_context = _threaded(Memory.build_context)
    add = _threaded(Memory.add)
    get = _threaded(Memory.get)
    list = _threaded(Memory.list)
    update = _threaded(Memory.update)
    delete = _threaded(Memory.delete)
    delete_turns = _threaded(Memory.delete_turns)
    delete_session = _threaded(Memory.delete_session)
    purge = _threaded(Memory.purge)
    history = _threaded(Memory.history)
    restore = _threaded(Memory.restore)
    undo = _threaded(Memory.undo)
    search = _threaded(Memory.search)
    data_dir = _threaded(Memory.data_dir)
    md_export = _threaded(Memory.md_export)
    md_import = _threaded(Memory.md_import)
    user_profile = _threaded(Memory.user_profile)
    archive = _threaded(Memory.archive)
    archive_context = _threaded(Memory.archive_context)
    export = _threaded(Memory.export)
    import_ = _threaded(Memory.import_)
    consolidate = _threaded(Memory.consolidate)
    feedback = _threaded(Memory.feedback)
    stats = _threaded(Memory.stats)
    close = _threaded(Memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["AsyncMemory", "AsyncTools"]
