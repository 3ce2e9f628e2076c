"""Seed 002's `attachments` table ("文件/媒体记忆") and its nightly clean-up ("清理过期附件"),
and seed 002's session level: per-session variables and the current task.

    att = memory.attachments.add("ticket.pdf", user_id="lin", data=pdf_bytes, session_id="s1",
                                 description="G2 上海→北京 3月5日", duration="7d")
    memory.attachments.get(att.id, user_id="lin").data == pdf_bytes
    memory.session_state.update("s1", user_id="lin", current_task="订去北京的高铁",
                                variables={"city": "北京"})

An attachment keeps its bytes (at most `store.max_attachment_bytes`) or a `uri` naming where
they are, with a name, a media type and a description; one with an `expires_at` is deleted by
the first consolidation after it (the expire step). Deleting a session deletes its
attachments; `purge` deletes a scope's (every table with a user_id column).
"""

from __future__ import annotations

import builtins
import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from memlane import validate
from memlane.config import MAX_ID_CHARS
from memlane.errors import NotFound, ValidationError
from memlane.models import Attachment, Scope, new_id
from memlane.parts import Parts
from memlane.policy import duration_name, expires_at
from memlane.text import highlights, keywords

VARIABLES = "variables"  # session metadata: the session's variables (seed 002 会话变量)
CURRENT_TASK = "current_task"  # session metadata: its current task (seed 002 当前任务)


class Attachments:
    """A scope's attachments, through `Memory.attachments`."""

    def __init__(self, memory: Parts) -> None:
        self.memory = memory

    def add(self, name: str, *, user_id: str, agent_id: str | None = None, data: bytes | None = None,
            uri: str | None = None, media_type: str = "application/octet-stream", description: str = "",
            session_id: str | None = None, duration: str | None = None, expires_at: datetime | None = None,
            metadata: dict[str, Any] | None = None) -> Attachment:
        """Store a file (its bytes, or a `uri`); `duration` ("7d", "short_term", …) or `expires_at`
        makes the nightly pass delete it once past."""
        scope = Scope.of(user_id, agent_id)
        store_cfg = self.memory.config.store
        name = validate.text("name", name, MAX_ID_CHARS)
        media_type = validate.text("media_type", media_type, MAX_ID_CHARS)
        description = validate.text("description", description, store_cfg.max_content_chars, required=False)
        uri = validate.optional_text("uri", uri, 4096, controls=True)
        session_id = validate.optional_ident("session_id", session_id)
        if data is not None and not isinstance(data, bytes | bytearray | memoryview):
            raise ValidationError("data", f"must be bytes, got {type(data).__name__}")
        if data is None and uri is None:
            raise ValidationError("data", "give the file's bytes (data) or where it is (uri)")
        blob = None if data is None else bytes(data)
        if blob is not None and len(blob) > store_cfg.max_attachment_bytes:
            raise ValidationError("data", f"{len(blob)} bytes is over store.max_attachment_bytes "
                                          f"({store_cfg.max_attachment_bytes}); store a uri instead")
        now = self.memory.clock()
        until = validate.optional_when("expires_at", expires_at)
        if duration is not None:
            if until is not None:
                raise ValidationError("duration", "give duration or expires_at, not both")
            until = _expiry(duration, now, self.memory)
        att = Attachment(
            id=new_id(), user_id=scope.user_id, agent_id=scope.agent_id, session_id=session_id, name=name,
            media_type=media_type, description=description, uri=uri, data=blob, size=len(blob or b""),
            sha256=hashlib.sha256(blob).hexdigest() if blob is not None else "", created_at=now,
            expires_at=until, metadata=validate.metadata("metadata", metadata, store_cfg) or {},
        )
        with self.memory.store.transaction():
            self.memory.store.put_attachment(att)
        return att.model_copy(update={"data": None})

    def get(self, attachment_id: str, *, user_id: str, agent_id: str | None = None) -> Attachment:
        """One attachment with its bytes."""
        scope = Scope.of(user_id, agent_id)
        att = self.memory.store.get_attachment(scope, validate.ident("attachment_id", attachment_id))
        if att is None:
            raise NotFound(f"attachment {attachment_id!r} not found for user {user_id!r}")
        return att

    def list(self, *, user_id: str, agent_id: str | None = None, session_id: str | None = None) -> list[Attachment]:
        """The scope's attachments (a session's), without their bytes, oldest first."""
        return self.memory.store.list_attachments(Scope.of(user_id, agent_id),
                                                  session_id=validate.optional_ident("session_id", session_id))

    def find(self, query: str, *, user_id: str, agent_id: str | None = None, limit: int = 3,
             min_score: float = 0.0) -> builtins.list[tuple[Attachment, float]]:
        """The scope's attachments whose name, description or extracted text (metadata "text")
        hold the query's keywords, with the share they hold, best first (seed 002's 文件/媒体记忆,
        found by `search_memory`). Expired ones are left out."""
        words = keywords(query)
        if not words:
            return []
        now = self.memory.clock()
        found: builtins.list[tuple[Attachment, float]] = []
        for att in self.list(user_id=user_id, agent_id=agent_id):
            if att.expires_at is not None and att.expires_at <= now:
                continue
            text = " ".join([att.name, att.description, str(att.metadata.get("text", ""))])
            score = len(highlights(words, text)) / len(words)
            if score > 0 and score >= min_score:
                found.append((att, score))
        found.sort(key=lambda f: (-f[1], f[0].created_at))
        return found[:limit]

    def delete(self, attachment_id: str, *, user_id: str, agent_id: str | None = None) -> Attachment:
        att = self.get(attachment_id, user_id=user_id, agent_id=agent_id)
        self.memory.store.delete_attachments(Scope.of(user_id, agent_id), [att.id])
        self.memory.store.forget_files([])  # the freed pages leave the WAL too
        return att.model_copy(update={"data": None})


def expire(memory: Parts, scope: Scope, now: datetime, *, dry_run: bool = False) -> list[Attachment]:
    """Seed 002 §7 清理过期附件: delete the scope's attachments past their expires_at."""
    gone = memory.store.list_attachments(scope, expired_at=now)
    if gone and not dry_run:
        memory.store.delete_attachments(scope, [a.id for a in gone])
    return gone


def _expiry(duration: str, now: datetime, memory: Parts) -> datetime | None:
    if not isinstance(duration, str):
        raise ValidationError("duration", f"must be a string like 7d / 24h / short_term, got {type(duration).__name__}")
    return expires_at(duration_name(duration), now, memory.config.policy)


# ---- per-session variables and the current task (seed 002 "Session 级别") ------------------------


class SessionState(BaseModel):
    """A session's current task and variables."""

    session_id: str
    current_task: str = ""
    variables: dict[str, Any] = {}


class SessionStates:
    """Per-session state, through `Memory.session_state`; kept in the session's row, so it
    lives and is forgotten with the session."""

    def __init__(self, memory: Parts) -> None:
        self.memory = memory

    def get(self, session_id: str, *, user_id: str, agent_id: str | None = None) -> SessionState:
        scope = Scope.of(user_id, agent_id)
        session = self.memory.store.get_session(scope, validate.ident("session_id", session_id))
        if session is None:
            raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
        return SessionState(session_id=session_id, current_task=str(session.metadata.get(CURRENT_TASK, "")),
                            variables=dict(session.metadata.get(VARIABLES) or {}))

    def update(self, session_id: str, *, user_id: str, agent_id: str | None = None,
               current_task: str | None = None, variables: dict[str, Any] | None = None,
               unset: list[str] | None = None) -> SessionState:
        """Set the current task and/or merge `variables` in (a None value removes a key, as
        does naming it in `unset`)."""
        scope = Scope.of(user_id, agent_id)
        cfg = self.memory.config.store
        validate.ident("session_id", session_id)
        current_task = validate.optional_text("current_task", current_task, cfg.max_content_chars)
        variables = validate.metadata("variables", variables, cfg) if variables is not None else {}
        if unset is not None and (not isinstance(unset, list) or not all(isinstance(k, str) for k in unset)):
            raise ValidationError("unset", "must be a list of variable names")
        with self.memory.store.transaction():
            session = self.memory.store.get_session(scope, session_id)
            if session is None:
                raise NotFound(f"session {session_id!r} not found for user {user_id!r}")
            merged = dict(session.metadata.get(VARIABLES) or {})
            for key, value in (variables or {}).items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            for key in unset or []:
                merged.pop(key, None)
            validate.metadata("variables", merged, cfg)  # the merged whole stays within the bounds
            session.metadata[VARIABLES] = merged
            if current_task is not None:
                session.metadata[CURRENT_TASK] = current_task
            self.memory.store.put_session(session)
        return self.get(session_id, user_id=user_id, agent_id=agent_id)


__all__ = ["Attachments", "SessionState", "SessionStates", "expire"]
