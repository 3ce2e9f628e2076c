"""The parts of the engine a feature module works with, instead of the whole `Memory` façade.

A module that needs only the configuration, the store, the clock and the LLM takes `Parts`:
its imports then point downward only (to `config`, `store`, `llm`), and any face of the one
core — `Memory`, the server, the CLI, `AsyncMemory`'s sync core — passes itself, or a test
passes the parts alone. Modules move to it one by one (issue 15's design note); those that
still call back into `Memory` (search, add, update) take the façade until their own calls are
parts too.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from memlane.config import Config
from memlane.llm import LLM
from memlane.store import Store


class Parts(Protocol):
    """Configuration, store, clock and LLM of one engine (`Memory` is one)."""

    config: Config
    store: Store
    clock: Callable[[], datetime]
    llm: LLM | None
