"""A parsed import into the store: turns by conversation, memories in one transaction; on a
dry run only counted. What is already there (by import key) is not added again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memlane import validate
from memlane.errors import ValidationError
from memlane.importers import Conversation, message_key
from memlane.importing.common import MemoryItem, Parsed, Skipped
from memlane.ingest import import_conversations
from memlane.messages import check_messages
from memlane.models import MemoryRecord, Scope, new_id
from memlane.policy import importance_score

if TYPE_CHECKING:
    from memlane.parts import Importing

log = logging.getLogger(__name__)
ACTOR = "import"
KEY = "import_key"  # a memory's identity in its source, in its metadata


def store_parsed(mem: Importing, parsed: Parsed, report: Any, progress: Callable[[int, int], None] | None) -> None:
    scope = Scope.of(report.user_id, report.agent_id or None)
    total = sum(len(c.messages) for c in parsed.conversations) + len(parsed.memories)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    for conv in parsed.conversations:
        _conversation(mem, scope, conv, parsed, report)
        tick(len(conv.messages))
    _memories(mem, scope, parsed.memories, report, tick)


def _conversation(mem: Importing, scope: Scope, conv: Conversation, parsed: Parsed, report: Any) -> None:
    cfg = mem.config
    where = f"session {conv.session_id[:80]!r}"
    try:
        sid = validate.ident(f"{where}: id", conv.session_id)
        msgs = check_messages(conv.messages, cfg.store, f"{where}: messages")
    except ValidationError as exc:
        report.skipped.append(Skipped(where, str(exc)))
        return
    keys = [message_key(conv.source, sid, j, m.role, m.content) for j, m in enumerate(msgs)]
    have = mem.store.turn_import_keys(scope, keys)
    fresh = [j for j, k in enumerate(keys) if k not in have]
    report.already += len(keys) - len(fresh)
    if not fresh:
        if not report.dry_run:  # stored by an earlier run, perhaps one killed before it finished
            _describe_session(mem, scope, sid, parsed.session_meta.get(sid, {}))
            report.stored_ids.append(sid)
        return
    if not report.dry_run:
        try:
            done = import_conversations(mem, mem.signals, [conv], scope.user_id, scope.agent_id or None, embed=False)
        except ValidationError as exc:  # a rule the parse could not see (a message's metadata)
            report.skipped.append(Skipped(where, str(exc)))
            return
        _describe_session(mem, scope, sid, parsed.session_meta.get(sid, {}))
        fresh = fresh[:done.turns]
    report.sessions += 1
    report.turns += len(fresh)
    report.session_ids.append(sid)
    room = mem.config.store.import_preview_items - len(report.preview)
    report.preview += [f"{sid} · {msgs[j].role}: {_line(msgs[j].content)}" for j in fresh[:max(room, 0)]]


def _describe_session(mem: Importing, scope: Scope, sid: str, meta: dict[str, Any]) -> None:
    """The source's title and times in the session's metadata (the web UI shows the title)."""
    session = mem.store.get_session(scope, sid)
    if session is None or not meta:
        return
    extra = {f"import_{k}" if k != "title" else k: v for k, v in meta.items() if v is not None}
    try:
        merged = validate.metadata("session.metadata", {**session.metadata, **extra}, mem.config.store,
                                   validate.SESSION_KEYS)
    except ValidationError as exc:  # the turns are stored: the title is only a nicety
        log.warning("imported session %s keeps no title: %s", sid, exc)
        return
    if merged == session.metadata:  # a second run: already described
        return
    session.metadata = merged or {}
    mem.store.put_session(session)


def _memories(mem: Importing, scope: Scope, items: list[MemoryItem], report: Any, tick: Callable[[int], None]) -> None:
    cfg = mem.config
    now = mem.clock()
    score = importance_score(None, cfg.policy)
    records: list[MemoryRecord] = []
    seen: set[str] = set()  # the file's own repeats
    for item in items:
        if item.key in seen:
            report.already += 1
            continue
        try:
            content = validate.memory_text(f"{item.where}: content", item.content, cfg.store.max_content_chars)
            category = (validate.category(f"{item.where}: category", item.category, cfg.policy.categories, cfg.profile)
                        if item.category else cfg.policy.default_category)
            metadata = validate.metadata(f"{item.where}: metadata", {**item.metadata, KEY: item.key}, cfg.store,
                                         validate.MEMORY_KEYS) or {}
        except ValidationError as exc:
            report.skipped.append(Skipped(item.where, str(exc)))
            continue
        seen.add(item.key)
        created = min(item.created_at or now, now)
        updated = min(max(item.updated_at or created, created), now)
        # dated by the source; last used now: an old memory brought in is in use again, and
        # decay counts from here rather than archiving years-old imports at the next pass
        records.append(MemoryRecord(
            # 16 hex digits: the default 10 (40 bits) collide by the birthday bound near a million
            # ids, and a bulk import of that many then failed whole on the primary key
            id=new_id(16), user_id=scope.user_id, agent_id=scope.agent_id, content=content, category=category,
            score=score, created_at=created, updated_at=updated, last_activated=now, source="import",
            pinned=item.pinned, metadata=metadata, valid_from=created))
    if report.dry_run:
        records = _new(mem, scope, records, report)
    elif records:
        # what is already there is read inside the write transaction, the scope held: two
        # imports of one file at once (two processes) store each memory once
        with mem.store.transaction():
            mem.store.lock_scope(scope)
            records = _new(mem, scope, records, report)
            mem.store.insert_memories(records)  # vectors by the indexer (`Memory.flush`)
            for rec in records:
                mem.store.add_event(scope, rec.id, "ADD", None, rec.snapshot(), ACTOR,
                                    f"imported from {rec.metadata.get('source', 'a file')}", now)
    report.memories += len(records)
    room = max(cfg.store.import_preview_items - len(report.preview), 0)
    report.preview += [f"memory ({r.category}{', pinned' if r.pinned else ''}): {_line(r.content)}"
                       for r in records[:room]]
    tick(len(items))
    if records and not report.dry_run:
        mem.signals.send("rows.written")
        mem.signals.send("memory.changed", scope)


def _new(mem: Importing, scope: Scope, records: list[MemoryRecord], report: Any) -> list[MemoryRecord]:
    """`records` less those an earlier import stored (counted in `report.already`)."""
    have = {m.metadata.get(KEY) for m in mem.store.list_memories(scope) if m.metadata.get(KEY)}
    fresh = [r for r in records if r.metadata[KEY] not in have]
    report.already += len(records) - len(fresh)
    return fresh


def _line(text: str, chars: int = 120) -> str:
    """A preview line: the text's start on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[:chars - 1] + "…"
