"""`AsyncMemory`: the sync core run in a worker thread — a thin wrapper, not a copy."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from memlane.api import Memory


class AsyncMemory:
    """Every public method of `Memory`, awaitable. `AsyncMemory(Memory(...))` or `AsyncMemory(config)`."""

    def __init__(self, memory: Memory | Any = None, **kwargs: Any) -> None:
        self.sync = memory if isinstance(memory, Memory) else Memory(memory, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        attr = getattr(self.sync, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)

        return call

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.sync.close)
