"""Forgetting for real: what `delete`, `delete_turns`, `delete_session` and `purge` remove.

A forgotten text leaves every place memlane keeps it, not only its row:

- the row, its full-text entry and its vector, in one transaction; SQLite's `secure_delete`
  and FTS5's `secure-delete` zero what they free, a WAL checkpoint drops the old page images
  (store/erase.py);
- text that quotes it: the neighbour context of adjacent turns (recomputed), the session's
  rolling summary and its episodes (a forgotten turn's words are in them);
- the embedding cache entries of its text (keyed by a hash of it: a fingerprint);
- cache files under the home (lexical postings, memory records, a purged scope's graphs) and
  temp files that writers killed mid-save left;
- for a hard delete or a purge, the audit trail's copies: an ordinary `delete` keeps the
  before-snapshot so it can be undone; `hard=True` leaves a content-free tombstone; a purge
  leaves one PURGE event with counts;
- for a purge, the scope's files directory (MEMORY.md, USER.md, .bak, history.json, memory/).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field

from memlane import archive, markdown, validate
from memlane.errors import NotFound, ValidationError
from memlane.indexing import content_hash, vector_key, vector_keys
from memlane.models import Episode, MemoryRecord, Scope, Turn
from memlane.parts import Archiving, Parts
from memlane.store import Store
from memlane.text import neighbour_context

HARD_REASON = "forgotten: hard delete"


@dataclass
class ForgetReport:
    """What a forgetting call removed: rows per table, files and cache entries."""

    counts: dict[str, int] = field(default_factory=dict)
    files: int = 0  # files and directories removed from the scope's directory
    cached_vectors: int = 0  # embedding-cache entries dropped

    def __getitem__(self, key: str) -> int:
        return self.counts.get(key, 0)


def _vector_hashes(memory: Parts, texts: Sequence[str]) -> list[str]:
    """The embedding-cache keys of texts: what indexing.embed_cached hashed for them, a long
    turn's passages included."""
    e = memory.config.embedding
    return [content_hash(k) for t in texts if t for k in vector_keys(t, e.max_chars, e.passage_chars, e.passages)]


def _episode_texts(episodes: Sequence[Episode]) -> list[str]:
    return [e.summary for e in episodes]


def after_rule_deletes(store: Store, max_chars: int, records: Sequence[MemoryRecord]) -> int:
    """Deletions by extraction or consolidation, once committed: the embedding-cache entries
    of their text and the cache files that may hold it (the audit keeps it, for an undo)."""
    if not records:
        return 0
    n = store.cache_forget([content_hash(vector_key(r.content, max_chars)) for r in records if r.content])
    store.forget_files(["memories"])
    return n


def after_delete(memory: Parts, scope: Scope, record: MemoryRecord, *, hard: bool) -> ForgetReport:
    """Called by `Memory.delete` once the row is gone: the embedding-cache entry of its
    content (and of every earlier version when `hard`), the audit copies when `hard`, the
    cache files, the WAL."""
    texts = [record.content]
    if hard:
        texts += memory.store.scrub_events(scope, record.id, HARD_REASON)
    report = ForgetReport(counts={"memories": 1})
    report.cached_vectors = memory.store.cache_forget(_vector_hashes(memory, texts))
    memory.store.forget_files(["memories"])
    return report


def delete_turns(memory: Archiving, scope: Scope, turn_ids: Sequence[str]) -> ForgetReport:
    """Forget some turns: rows, full text, vectors, the neighbour context that quotes them,
    the session's episodes and rolling summary (both may hold their words). All or none:
    NotFound when one is missing, also when a concurrent caller deleted it after this call
    looked (its delete runs in the store's write transaction), so each turn is forgotten by
    exactly one caller — what a "pop the latest turn" needs to hand each turn out once."""
    ids = _ids("turn_ids", turn_ids)
    turns = memory.store.turns_by_id(scope, ids)
    if len(turns) != len(ids):
        missing = sorted(set(ids) - {t.id for t in turns})
        raise NotFound(f"turns {', '.join(missing[:5])} not found for user {scope.user_id!r}")
    report = ForgetReport()
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session_id, []).append(t)
    texts = [t.content for t in turns]
    with memory.store.transaction():
        deleted = memory.store.delete_turns(scope, ids)
        if len(deleted) != len(ids):  # another caller deleted some since the read: it forgot them, not this one
            kept = set(deleted)
            raced = sorted(t.id for t in turns if (t.session_id, t.seq) not in kept)
            raise NotFound(f"turns {', '.join(raced[:5])} were already deleted for user {scope.user_id!r}")
        report.counts["turns"] = len(deleted)
        for session_id, gone in by_session.items():
            texts += _forget_derived(memory, scope, session_id, gone, report)
    report.cached_vectors = memory.store.cache_forget(_vector_hashes(memory, texts))
    _forget_history_file(memory, scope, set(ids))
    memory.store.forget_files(["turns", "episodes"])
    return report


def _forget_derived(memory: Archiving, scope: Scope, session_id: str, gone: Sequence[Turn],
                    report: ForgetReport) -> list[str]:
    """After turns of a session were deleted (in the caller's transaction): recompute the
    neighbours' context, drop the episodes and a summary that covered them; returns the
    texts dropped (for the embedding cache)."""
    seqs = sorted(t.seq for t in gone)
    w = memory.config.search.neighbour_window
    if w:  # each turn within w of a deleted one quoted it in its context column
        rows = memory.store.turn_rows(scope, session_id, seqs[0] - 2 * w, seqs[-1] + 2 * w)
        by_seq = {seq: (rowid, text) for rowid, seq, text in rows}
        for seq in sorted(by_seq):
            if any(abs(seq - s) <= w for s in seqs):
                context = neighbour_context({s: t for s, (_, t) in by_seq.items()}, seq, w)
                memory.store.set_turn_context(by_seq[seq][0], by_seq[seq][1], context)
    episodes = memory.store.list_episodes(scope, session_id=session_id, limit=10_000)
    for e in episodes:
        memory.store.delete_episode(scope, e.id)
    report.counts["episodes"] = report.counts.get("episodes", 0) + len(episodes)
    session = memory.store.get_session(scope, session_id)
    texts = _episode_texts(episodes)
    if session is not None:
        session.message_count = max(0, session.message_count - len(gone))
        if session.summary and seqs[0] <= int(session.metadata.get("compacted_through", 0)):
            # the rolling summary holds the forgotten turns' words: the rest is summarised again
            session.summary = ""
            session.metadata["compacted_through"] = 0
        memory.store.put_session(session)
    return texts


def delete_session(memory: Archiving, scope: Scope, session_id: str) -> ForgetReport:
    """Forget a conversation: the session, its turns, episodes and extraction jobs."""
    _session_id(session_id)
    if memory.store.get_session(scope, session_id) is None and not memory.store.raw_count(
            "turns", "user_id = ? AND agent_id = ? AND session_id = ?", (scope.user_id, scope.agent_id, session_id)):
        raise NotFound(f"session {session_id!r} not found for user {scope.user_id!r}")
    turns = memory.store.get_turns(scope, session_id=session_id)
    episodes = memory.store.list_episodes(scope, session_id=session_id, limit=10_000)
    ids = {t.id for t in turns}
    report = ForgetReport(counts=memory.store.delete_session(scope, session_id))
    report.cached_vectors = memory.store.cache_forget(
        _vector_hashes(memory, [t.content for t in turns] + _episode_texts(episodes)))
    _forget_history_file(memory, scope, ids)
    memory.store.forget_files(["turns", "episodes"])
    return report


def purge(memory: Archiving, user_id: str, agent_id: str | None, *, actor: str = "api") -> ForgetReport:
    """Forget a whole scope (every agent scope of the user when `agent_id` is None): every
    row in every table, cached vectors of its texts, its files and its caches. The audit
    keeps one content-free PURGE event with the counts."""
    scope = Scope.of(user_id, agent_id)
    texts = memory.store.scope_texts(user_id, agent_id)
    counts, scopes = memory.store.delete_scope(user_id, agent_id)
    report = ForgetReport(counts={k: v for k, v in counts.items() if v})
    report.cached_vectors = memory.store.cache_forget(_vector_hashes(memory, texts))
    home = memory.config.home
    target = markdown.scope_dir(home, scope)
    if target.exists():
        report.files = sum(1 for _ in target.rglob("*")) + 1
        shutil.rmtree(target, ignore_errors=True)
    memory.store.forget_files(["memories", "turns", "episodes"], scopes)
    if report.counts or report.files:  # a user never stored gets no audit row either
        memory.store.add_event(scope, "*", "PURGE", None, {"counts": report.counts, "files": report.files,
                                                           "all_agents": agent_id is None},
                               actor, "purge", memory.clock())
    return report


def _forget_history_file(memory: Archiving, scope: Scope, turn_ids: set[str]) -> None:
    """Drop the forgotten turns from the scope's history.json (seed 000's view of the turns);
    a summary already written under memory/ is a person's file and stays."""
    if not turn_ids:
        return
    fa = archive.file_archive(memory, scope)
    if not fa.history_path.exists():
        return
    try:
        msgs = fa.load()
    except ValidationError:
        return  # a broken file is the archive's to report, never overwritten here
    kept = [m for m in msgs if m.id not in turn_ids]
    if len(kept) != len(msgs):
        fa.save(kept)


def _ids(field_name: str, ids: Sequence[str]) -> list[str]:
    if not isinstance(ids, list | tuple):
        raise ValidationError(field_name, f"must be a list of ids, got {type(ids).__name__}")
    if not ids:
        raise ValidationError(field_name, "must name at least one id")
    return list(dict.fromkeys(validate.ident(f"{field_name}[{i}]", v) for i, v in enumerate(ids)))


def _session_id(session_id: str) -> str:
    return validate.ident("session_id", session_id)


__all__ = ["ForgetReport", "after_delete", "delete_session", "delete_turns", "purge"]
