"""memlane: long-term memory for LLM agents.

    from memlane import Memory
    m = Memory()                       # ~/.memlane, offline embedder, no API key
    m.add_messages("s1", [{"role": "user", "content": "我对花生过敏"}], user_id="u1")
    m.add("用户对花生过敏", user_id="u1", category="fact", importance="high")
    m.search("过敏", user_id="u1")
"""

from memlane.aio import AsyncMemory
from memlane.api import Memory, open_memory
from memlane.config import PROFILES, Config
from memlane.errors import (
    BackendError,
    ConfigError,
    ExtractionError,
    MemlaneError,
    NotFound,
    ValidationError,
)
from memlane.models import (
    Activity,
    Episode,
    Forecast,
    Hit,
    MemoryEvent,
    MemoryRecord,
    Message,
    Session,
    Stats,
    Turn,
)
from memlane.retrieval.filters import Filters

__version__ = "0.1.0"

__all__ = [
    "Activity",
    "AsyncMemory",
    "BackendError",
    "Config",
    "ConfigError",
    "Episode",
    "ExtractionError",
    "Filters",
    "Forecast",
    "Hit",
    "MemlaneError",
    "Memory",
    "MemoryEvent",
    "MemoryRecord",
    "Message",
    "NotFound",
    "PROFILES",
    "Session",
    "Stats",
    "Turn",
    "ValidationError",
    "open_memory",
]
