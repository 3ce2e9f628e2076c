"""Extension points: another installed package adds an embedder, an LLM provider, an
event-rule action, a conversation importer or a store backend to memlane by declaring an
entry point, with no change to memlane (issue 31). In its pyproject.toml:

    [project.entry-points."memlane.embedders"]
    toy = "toy_memlane:make_embedder"      # (EmbeddingConfig) -> Embedder

    [project.entry-points."memlane.llms"]
    mine = "my_llm:make_llm"               # (LLMConfig) -> LLM

    [project.entry-points."memlane.actions"]
    notify = "my_hooks:notify"             # (Event) -> Any, usable in events.rules[].actions

    [project.entry-points."memlane.importers"]
    slack = "my_import:parse"              # (data, origin) -> list[Conversation] | None (not mine)

    [project.entry-points."memlane.stores"]
    duck = "my_store:open_store"           # (Config) -> Store (memlane.store.protocol)

Then `embedding.provider = "toy"`, `llm.provider = "mine"`, a rule's `actions = ["notify"]`,
`memlane import export.json` on a Slack export, or `store.backend = "duck"` work as the built-in
ones do. memlane's own names win over a plugin's of the same name (embedders "e5", "hash", ...;
stores "sqlite" and "postgres"); an unknown name is a ConfigError listing the known ones, and a
plugin that fails to load is one naming its package, never a crash at import time. A plugin
store keeps the server's API keys in SQLite under `store.home`, as the "sqlite" backend does.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

from memlane.errors import ConfigError

Kind = Literal["embedders", "llms", "actions", "importers", "stores"]


@cache
def installed(kind: Kind) -> dict[str, EntryPoint]:
    """The entry points of group `memlane.<kind>` by name (read once per process)."""
    return {ep.name: ep for ep in entry_points(group=f"memlane.{kind}")}


def load(kind: Kind, name: str) -> Any:
    """The object plugin `name` of `kind` names; ConfigError when none is installed or it fails to load."""
    ep = installed(kind).get(name)
    if ep is None:
        raise ConfigError(f"no memlane {kind[:-1]} plugin {name!r} is installed")
    try:
        return ep.load()
    except Exception as exc:  # a plugin's import error is its package's, named
        raise ConfigError(f"the memlane {kind[:-1]} plugin {name!r} ({ep.value}) failed to load: {exc}") from exc


def load_all(kind: Kind) -> dict[str, Any]:
    return {name: load(kind, name) for name in installed(kind)}
