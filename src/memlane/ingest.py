"""Turns in: stored durably in one transaction before anything else runs, then the work that
follows them, subscribed to the engine's `turns.stored` notice (signals.py) — a compaction
when the session outgrew its window, an extraction a command or the turn count calls for,
the scratchpad's topic (seed 002 §4) and seed 000's history.json. What fails there is
logged, never the caller's failure: the turns are stored and acknowledged, and the session's
next extraction job or archive run redoes it from them. A conversation import is history,
not a conversation going on: stored the same way, with no follow-up work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from memlane import archive, sessions, validate
from memlane.errors import MemlaneError, ValidationError
from memlane.importers import Conversation, ConversationImport, message_key
from memlane.indexing import index_neighbours
from memlane.messages import check_messages
from memlane.models import Message, Scope, Session, Turn, new_id
from memlane.parts import Following, Parts
from memlane.signals import Signals
from memlane.text import estimate_tokens

log = logging.getLogger(__name__)


def store_turns(parts: Parts, signals: Signals, scope: Scope, session_id: str, msgs: Sequence[Message],
                import_keys: Sequence[str] | None = None) -> list[Turn]:
    """Append `msgs` to the session (created if new) in one transaction, each turn's
    neighbours indexed with it; then `rows.written` and `turns.stored`."""
    now = parts.clock()
    store = parts.store
    with store.transaction():
        session = store.get_session(scope, session_id) or Session(
            id=session_id, user_id=scope.user_id, agent_id=scope.agent_id, started_at=msgs[0].created_at or now)
        seq = store.next_seq(scope, session_id)
        turns = [Turn(
            id=new_id(16), user_id=scope.user_id, agent_id=scope.agent_id, session_id=session_id,
            seq=seq + i, role=msg.role, content=msg.content, name=msg.name, tool_calls=msg.tool_calls,
            created_at=msg.created_at or now, token_count=estimate_tokens(msg.content), metadata=msg.metadata,
        ) for i, msg in enumerate(msgs)]
        store.insert_turns(turns, import_keys)  # one batch: a few round trips on PostgreSQL
        index_neighbours(store, parts.config.search.neighbour_window, scope, session_id, turns[0].seq, turns[-1].seq)
        session.message_count += len(turns)
        session.ended_at = None
        store.put_session(session)
    signals.send("rows.written")
    signals.send("turns.stored", scope, session_id, turns)  # committed: only now may an LLM summarise them
    return turns


def after_turns(engine: Following, scope: Scope, session_id: str, turns: Sequence[Turn]) -> None:
    """The follow-up work of stored turns (a `turns.stored` subscriber)."""
    from memlane import topics  # on first use: its grammars take ~0.2 s to compile

    extraction = engine.extraction
    try:  # seed 002 §3–4: the compiler names the task first; a switch archives the old one
        topics.track_topic(engine, scope, session_id, turns)
    except Exception:  # the turns are stored; the next turn's tracking reads them again
        log.exception("after storing turns of session %s: the scratchpad's topic failed", session_id)
    try:
        if extraction.background():  # never wait on the LLM's summary: the worker compacts
            if needs_compaction(engine, scope, session_id):
                extraction.worker.submit(lambda: sessions.maybe_compact(engine, scope, session_id),
                                         key=("compact", scope, session_id))
        else:
            sessions.maybe_compact(engine, scope, session_id)
        extraction.after_turns(scope, session_id, turns)
    except Exception:
        # what failed here (compaction, a command) is redone by the session's next extraction job
        log.exception("after storing turns of session %s: follow-up work failed", session_id)
    try:  # seed 000: history.json per turn
        archive.after_turns(engine, scope, turns)
    except Exception:  # the turns are stored; history.json is synced again by the next run
        log.exception("after storing turns of session %s: history.json failed", session_id)


def needs_compaction(parts: Parts, scope: Scope, session_id: str) -> bool:
    session = parts.store.get_session(scope, session_id)
    through = sessions.compacted_through(session) if session else 0
    return parts.store.next_seq(scope, session_id) - 1 - through > parts.config.session.compaction_cap


def import_conversations(parts: Parts, signals: Signals, conversations: Sequence[Conversation], user_id: str,
                         agent_id: str | None, *, progress: Callable[[int], None] | None = None,
                         embed: bool = True) -> ConversationImport:
    """`Memory.import_conversations`: every message checked first, then all stored in one
    transaction; a message already imported (same file, session, position, role, content)
    is skipped, so importing a file again after a crash completes it."""
    if isinstance(conversations, Conversation) or not isinstance(conversations, Iterable):
        raise ValidationError("conversations", "must be a list of Conversation (see memlane.importers)")
    plan: list[tuple[Scope, str, list[Message], list[str]]] = []
    for i, conv in enumerate(conversations):
        where = f"sessions[{i}]"
        if not isinstance(conv, Conversation):
            raise ValidationError(where, f"must be a Conversation, got {type(conv).__name__}")
        try:
            scope = Scope.of(user_id if conv.user_id is None else conv.user_id, agent_id)
            sid = validate.ident(f"{where}.session_id", conv.session_id)
            msgs = check_messages(conv.messages, parts.config.store, f"{where}.messages")
        except ValidationError as exc:
            origin = f"{conv.source}, " if conv.source else ""
            raise ValidationError(exc.field, f"{str(exc)[len(exc.field) + 2:]} ({origin}session "
                                             f"{str(conv.session_id)[:60]!r}); nothing was imported") from None
        keys = [message_key(conv.source, sid, j, m.role, m.content) for j, m in enumerate(msgs)]
        plan.append((scope, sid, msgs, keys))
    stored = skipped = 0
    # history, not a conversation going on: no follow-up work, the vectors once at the end
    with signals.mute("rows.written", "turns.stored"), parts.store.transaction():
        for scope, sid, msgs, keys in plan:
            have = parts.store.turn_import_keys(scope, keys)
            fresh = [j for j, k in enumerate(keys) if k not in have]
            if fresh:
                store_turns(parts, signals, scope, sid, [msgs[j] for j in fresh], [keys[j] for j in fresh])
            stored += len(fresh)
            skipped += len(msgs) - len(fresh)
            if progress:
                progress(len(msgs))
    if stored:
        try:  # the import's cost, not the first search's (~1 ms a turn)
            parts.store.settle_text()
        except MemlaneError as exc:  # the turns are committed: the next search catches up instead
            log.warning("imported %d turns; their words are indexed at the next search (%s)", stored, exc)
    if embed:
        signals.send("rows.written")
    return ConversationImport(sessions=len(plan), turns=stored, skipped=skipped)
