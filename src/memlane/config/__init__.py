"""Every tunable number, once, with the seed it comes from.

Layering: defaults ← profile ← memlane.toml ← MEMLANE_* environment ← arguments. The
environment is read only by `Config.from_env()` (the CLI, `open_memory` and `Memory(home=…)`
call it), never at import time. `memlane config` shows each value and where it came from.

Seeds are the five design documents in shared/seeds/: 000 file-archive, 001 scored-markdown,
002 progressive, 003 companion, 004 consolidator.

The sections live in the modules named for what they hold: `base` (the section base, shared
limits), `storage`, `retrieval`, `writing`, `sessions`, `events`, `serving`, `profiles` and
`loading` (`Config`, TOML and environment); every name is re-exported here.
"""

from __future__ import annotations

from memlane.config.base import MAX_ID_CHARS, _Section
from memlane.config.events import (
    ACTION_ALIASES,
    RISK_ORDER,
    EventCondition,
    EventRule,
    EventsConfig,
    RiskLevel,
)
from memlane.config.loading import (
    _ENV_ALIASES,
    ENV_OTHER,
    Config,
    _env_overrides,
    _leaves,
    _merge,
    _section_fields,
    env_name,
)
from memlane.config.profiles import PROFILES, PROFILES_NAMES
from memlane.config.retrieval import EmbeddingConfig, SearchConfig
from memlane.config.serving import ServerConfig, WebConfig
from memlane.config.sessions import ContextConfig, SessionConfig
from memlane.config.storage import ArchiveConfig, LifecycleConfig, StoreConfig
from memlane.config.writing import DecayRule, ExtractionConfig, LLMConfig, PolicyConfig

__all__ = [
    "ACTION_ALIASES", "ENV_OTHER", "MAX_ID_CHARS", "PROFILES", "PROFILES_NAMES", "RISK_ORDER",
    "ArchiveConfig", "Config", "ContextConfig", "DecayRule", "EmbeddingConfig", "EventCondition",
    "EventRule", "EventsConfig", "ExtractionConfig", "LLMConfig", "LifecycleConfig", "PolicyConfig",
    "RiskLevel", "SearchConfig", "ServerConfig", "SessionConfig", "StoreConfig", "WebConfig",
    "_ENV_ALIASES", "_Section", "_env_overrides", "_leaves", "_merge", "_section_fields", "env_name",
]
