"""Seed 002 §4 retention at the session's end: TRANSIENT memories "end_session 时清理".

A memory is TRANSIENT when its duration was `transient` or `session` (metadata "priority",
`policy.retention`) or the nightly pass demoted it. With `policy.transient_ends_with_session`
(the progressive profile), ending a session deletes the TRANSIENT memories made in it —
audited DELETEs an undo can bring back. Those of sessions still running, and demoted ones,
live out their one day (`expires_at`) and go at the next consolidation.
"""

from __future__ import annotations

from memlane.models import MemoryRecord, Scope
from memlane.parts import Editing
from memlane.policy import ALWAYS_PROTECTED, PRIORITY

ACTOR = "end_session"


def end_of_session(memory: Editing, scope: Scope, session_id: str) -> list[MemoryRecord]:
    """Delete the session's TRANSIENT memories (when the profile says so); returns them."""
    if not memory.config.policy.transient_ends_with_session:
        return []
    doomed = [m for m in memory.store.list_memories(scope, session_id=session_id)
              if m.metadata.get(PRIORITY) == "transient" and not m.pinned and m.category not in ALWAYS_PROTECTED]
    return [memory.delete(m.id, user_id=scope.user_id, agent_id=scope.agent_id or None, actor=ACTOR,
                          reason=f"TRANSIENT: cleared when session {session_id} ended (seed 002)")
            for m in doomed]


__all__ = ["end_of_session"]
