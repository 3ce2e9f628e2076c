"""The audited rewrite of a memory row, shared by `Memory.update` and the features that
rewrite a memory themselves (an undo): the row, its vector when its text changed and the
audit event in one transaction, then the `memory.changed` notice (signals.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.indexing import embed_one
from memlane.models import MemoryRecord, Scope

if TYPE_CHECKING:
    from memlane.parts import Embedding


def rewrite(engine: Embedding, scope: Scope, before: MemoryRecord, after: MemoryRecord, kind: str, actor: str,
            reason: str) -> MemoryRecord:
    """Store `after` over `before` (re-embedded when its text changed), audited as `kind`."""
    content_changed = after.content != before.content
    vec = embed_one(engine.store, engine.embedder, after.content, engine.config.embedding.max_chars) \
        if content_changed else None
    with engine.store.transaction():
        rowid = engine.store.update_memory(after, content_changed=content_changed)
        if vec is not None:
            engine.store.put_vectors("memories", scope, [rowid], vec[None, :])
        engine.store.add_event(scope, after.id, kind, before.snapshot(), after.snapshot(), actor, reason,
                               after.updated_at)
    engine.signals.send("memory.changed", scope)
    return after
