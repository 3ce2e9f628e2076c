"""Moving a scope's memory between homes: `Memory.export` / `Memory.import_`.

JSONL is lossless: a header line, then one record a line —

    {"memlane_export": 1, "user_id": "lin", "agent_id": "", "exported_at": "...", "counts": {...}}
    {"type": "session", "record": {...}}
    {"type": "turn", "record": {...}}        # with archive state, metadata, tool calls
    {"type": "memory", "record": {...}}      # every field, scores and timestamps as they were
    {"type": "episode", "record": {...}}
    {"type": "event", "record": {...}}       # the audit trail, deleted memories' too
    {"type": "scratchpad", "record": {...}}

Import is all or nothing, into any scope (`user_id=` moves the data to another user), and
idempotent: a record already in the target scope is skipped, so importing twice adds nothing.
A memory id another scope of the store uses is replaced by a new one, and every reference to
it follows (a change's `supersedes` / `superseded_by`, an unsure change's flag, merged
duplicates, audit snapshots); a reference to a memory the import does not hold is dropped.
Vectors are not exported; they are rebuilt by the target's embedder. Queued extraction jobs
are not exported either: export after the queue has drained.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memlane import validate
from memlane.config import MAX_ID_CHARS, Config
from memlane.errors import ValidationError
from memlane.importers import read_text
from memlane.indexing import index_neighbours
from memlane.markdown import render_memory_md
from memlane.models import (
    Episode,
    MemoryEvent,
    MemoryRecord,
    Scope,
    Scratchpad,
    Session,
    Turn,
    new_id,
)
from memlane.parts import Parts, Porting
from memlane.store import Store
from memlane.supersession import FLAG

FORMAT_VERSION = 1
ExportFormat = Literal["jsonl", "md"]
_MODELS: dict[str, type[BaseModel]] = {
    "session": Session, "turn": Turn, "memory": MemoryRecord, "episode": Episode,
    "event": MemoryEvent, "scratchpad": Scratchpad,
}
_ALL = 1_000_000_000  # list_* limits: an export takes everything


def export_scope(mem: Parts, scope: Scope, fmt: str = "jsonl") -> str:
    """The scope as JSONL (lossless) or as MEMORY.md text (memories only, for people)."""
    if fmt == "md":
        return render_memory_md(mem.store.list_memories(scope), now=mem.clock(),
                                archive_below=mem.config.policy.archive_below)
    if fmt != "jsonl":
        raise ValidationError("format", f"must be jsonl or md, got {fmt!r}")
    store = mem.store
    groups: list[tuple[str, list[Any]]] = [
        ("session", sorted(store.list_sessions(scope, limit=_ALL), key=lambda s: (s.started_at, s.id))),
        ("turn", store.get_turns(scope)),
        ("memory", store.list_memories(scope)),
        ("episode", sorted(store.list_episodes(scope, limit=_ALL), key=lambda e: (e.ended_at, e.id))),
        ("event", store.events(scope, limit=_ALL)),
    ]
    pad = store.get_scratchpad(scope)
    if pad is not None:
        groups.append(("scratchpad", [pad]))
    header = {"memlane_export": FORMAT_VERSION, "user_id": scope.user_id, "agent_id": scope.agent_id,
              "exported_at": mem.clock().isoformat(), "counts": {kind: len(rows) for kind, rows in groups}}
    lines = [json.dumps(header, ensure_ascii=False)]
    for kind, rows in groups:
        lines += [json.dumps({"type": kind, "record": r.model_dump(mode="json")}, ensure_ascii=False) for r in rows]
    return "\n".join(lines) + "\n"


def is_export(path: Path) -> bool:
    """True when the file starts with a memlane export header line."""
    try:
        with path.open(encoding="utf-8-sig") as fh:
            first = fh.readline(4096)
        head = json.loads(first)
    # not text, not JSON, nested past the parser's depth (a RecursionError): not an export,
    # and the conversation reader says what is wrong with it
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(head, dict) and "memlane_export" in head


@dataclass
class ImportReport:
    file: str
    user_id: str
    agent_id: str
    added: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)


def check_record(kind: str, rec: Any, config: Config) -> Any:
    """An exported record held to the rules the API holds its input to (`memlane.validate`):
    an export file is input too. Returns it with times made aware (naive = UTC)."""
    store, limit, turn_limit = config.store, config.store.max_content_chars, config.store.max_turn_chars
    # audit snapshots hold a whole memory: room for its content and metadata
    snap: dict[str, Any] = {"max_depth": store.max_metadata_depth + 2, "max_bytes": store.max_metadata_bytes + 8 * limit}
    times = {k: validate.optional_when(f"{kind}.{k}", getattr(rec, k)) for k in type(rec).model_fields
             if k.endswith("_at") or k == "last_activated"}
    if kind == "session":
        validate.ident("session.id", rec.id)
        validate.text("session.summary", rec.summary, turn_limit, setting="store.max_turn_chars", required=False,
                      controls=True)
        validate.metadata("session.metadata", rec.metadata, store, validate.SESSION_KEYS)
        validate.integer("session.message_count", rec.message_count, 0)
        validate.integer("session.extraction_count", rec.extraction_count, 0)
    elif kind == "turn":
        validate.memory_id(rec.id, "turn.id")
        validate.ident("turn.session_id", rec.session_id)
        validate.integer("turn.seq", rec.seq, 0)
        validate.integer("turn.token_count", rec.token_count, 0)
        validate.tool_calls("turn.tool_calls", rec.tool_calls, store)
        validate.text("turn.content", rec.content, turn_limit, setting="store.max_turn_chars",
                      required=not rec.tool_calls, controls=True)
        validate.optional_text("turn.name", rec.name, MAX_ID_CHARS, controls=True)
        validate.metadata("turn.metadata", rec.metadata, store)
    elif kind == "memory":
        validate.memory_id(rec.id, "memory.id")
        content = validate.memory_text("memory.content", rec.content, limit)
        validate.category("memory.category", rec.category, config.policy.categories, config.profile)
        validate.ident("memory.kind", rec.kind)
        validate.number("memory.score", rec.score, 0.0, 1.0)
        validate.number("memory.confidence", rec.confidence, 0.0, 1.0)
        validate.integer("memory.activation_count", rec.activation_count, 0)
        validate.optional_text("memory.subject", rec.subject, MAX_ID_CHARS)
        validate.optional_text("memory.predicate", rec.predicate, MAX_ID_CHARS)
        validate.optional_ident("memory.source_session", rec.source_session)
        validate.metadata("memory.metadata", rec.metadata, store, validate.MEMORY_KEYS)
        rec = rec.model_copy(update={"category": rec.category.strip().lower(), "content": content})
    elif kind == "episode":
        validate.memory_id(rec.id, "episode.id")
        validate.ident("episode.session_id", rec.session_id)
        for name in ("summary", "goal", "outcome"):
            validate.text(f"episode.{name}", getattr(rec, name), turn_limit, setting="store.max_turn_chars",
                          required=name == "summary", controls=True)
        validate.json_value("episode.entities", rec.entities + rec.tools_used, max_depth=2,
                            max_bytes=store.max_metadata_bytes)
        validate.number("episode.score", rec.score, -1e9, 1e9)
    elif kind == "event":
        validate.memory_id(rec.memory_id, "event.memory_id")
        validate.ident("event.actor", rec.actor)
        validate.text("event.reason", rec.reason, limit, required=False, controls=True)
        validate.json_value("event.before", rec.before, **snap)
        validate.json_value("event.after", rec.after, **snap)
    elif kind == "scratchpad":
        validate.text("scratchpad.current_focus", rec.current_focus, limit, required=False, controls=True)
        validate.json_value("scratchpad.recent_tasks", rec.recent_tasks, max_depth=3,
                            max_bytes=store.max_metadata_bytes)
    return rec.model_copy(update=times)


def _read(path: Path, config: Config) -> tuple[dict[str, Any], list[tuple[int, str, Any]]]:
    text = read_text(path, config.store.max_import_bytes)
    header: dict[str, Any] | None = None
    records: list[tuple[int, str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError("file", f"{path} line {n}: not valid JSON ({exc.msg})") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise ValidationError("file", f"{path} line {n}: holds an integer too long to read "
                                          f"({str(exc).split(':')[0]})") from None
        except RecursionError:
            raise ValidationError("file", f"{path} line {n}: JSON nested too deeply") from None
        if header is None:
            if not isinstance(obj, dict) or obj.get("memlane_export") != FORMAT_VERSION:
                raise ValidationError("file", f"{path} line {n}: not a memlane export "
                                      f'(the first line must be {{"memlane_export": {FORMAT_VERSION}, ...}})')
            header = obj
            continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        if not isinstance(kind, str) or kind not in _MODELS:
            raise ValidationError("file", f"{path} line {n}: unknown record type {str(kind)[:40]!r}; "
                                          f"one of {', '.join(_MODELS)}")
        try:
            rec = _MODELS[kind].model_validate(obj.get("record"))
        except PydanticValidationError as exc:
            e = exc.errors()[0]
            where = ".".join([kind, *(str(p) for p in e["loc"])])
            raise ValidationError("file", f"{path} line {n}: {where}: {e['msg'][:200]}") from None
        try:
            records.append((n, kind, check_record(kind, rec, config)))
        except ValidationError as exc:
            raise ValidationError(exc.field, f"{str(exc)[len(exc.field) + 2:]} ({path} line {n}: {kind}); "
                                             "nothing was imported") from None
    if header is None:
        raise ValidationError("file", f"{path} is empty")
    return header, records


def import_scope(mem: Porting, path: Path, *, user_id: str | None = None, agent_id: str | None = None) -> ImportReport:
    """Import a memlane JSONL export into `user_id` (default: the exported scope)."""
    path = Path(path)
    header, records = _read(path, mem.config)
    try:
        scope = Scope.of(user_id or header.get("user_id"), agent_id if agent_id is not None else header.get("agent_id"))
    except ValidationError as exc:  # the header's scope: say where it came from
        raise ValidationError(exc.field, f"{str(exc)[len(exc.field) + 2:]} ({path} line 1: the header); "
                                         "nothing was imported") from None
    report = ImportReport(str(path), scope.user_id, scope.agent_id)
    store = mem.store
    own = {"user_id": scope.user_id, "agent_id": scope.agent_id}
    touched: dict[str, list[int]] = {}

    def count(kind: str, added: bool) -> None:
        bucket = report.added if added else report.skipped
        bucket[kind] = bucket.get(kind, 0) + 1

    def taken(table: str, rec_id: str) -> bool:
        return store.raw_count(table, "id = ?", [rec_id]) > 0

    with store.transaction():
        ids = _id_map(store, scope, records)
        have_eps = {(e.session_id, e.started_at, e.summary) for e in store.list_episodes(scope, limit=_ALL)}
        for _, kind, rec in records:
            if kind == "session":
                fresh = store.get_session(scope, rec.id) is None
                if fresh:
                    store.put_session(rec.model_copy(update=own))
                count(kind, fresh)
            elif kind == "turn":
                same = store.raw_count("turns", "user_id = ? AND agent_id = ? AND session_id = ? AND seq = ?",
                                       [scope.user_id, scope.agent_id, rec.session_id, rec.seq]) > 0
                if not same:
                    store.insert_turn(rec.model_copy(update={**own, "id": new_id(16) if taken("turns", rec.id) else rec.id}))
                    touched.setdefault(rec.session_id, []).append(rec.seq)
                count(kind, not same)
            elif kind == "memory":
                fresh = rec.id in ids.fresh
                if fresh:
                    store.insert_memory(ids.relink(rec).model_copy(update=own))
                count(kind, fresh)
            elif kind == "episode":
                fresh = (rec.session_id, rec.started_at, rec.summary) not in have_eps
                if fresh:
                    store.insert_episode(rec.model_copy(update={**own, "id": new_id() if taken("episodes", rec.id) else rec.id}))
                count(kind, fresh)
            elif kind == "event":
                fresh = rec.memory_id in ids.fresh or rec.memory_id in ids.fresh_trails
                if fresh:
                    store.add_event(scope, ids.every[rec.memory_id], rec.kind, ids.relink_snapshot(rec.before),
                                    ids.relink_snapshot(rec.after), rec.actor, rec.reason, rec.created_at)
                count(kind, fresh)
            elif kind == "scratchpad":
                fresh = store.get_scratchpad(scope) is None
                if fresh:
                    store.put_scratchpad(rec.model_copy(update=own))
                count(kind, fresh)
        for session_id, seqs in touched.items():
            index_neighbours(mem.store, mem.config.search.neighbour_window, scope, session_id, min(seqs), max(seqs))
    mem.flush()  # vectors are a cache: the target's embedder rebuilds them
    return report


# ---- memory ids: kept where free, new where taken, and every link following them --------------


@dataclass
class _IdMap:
    """Exported memory id → its id in the target scope. `memories`: every exported memory (a
    new one's id, or the stored copy's); `trails`: deleted memories the export's audit trail
    names (restorable from it); `fresh`: the exported memories to insert."""

    memories: dict[str, str]
    trails: dict[str, str]
    fresh: set[str]
    fresh_trails: set[str]  # deleted memories whose trail is imported

    @cached_property
    def every(self) -> dict[str, str]:
        return {**self.trails, **self.memories}

    @cached_property
    def here(self) -> set[str]:
        """The memories the scope holds after the import, by their ids here."""
        return set(self.memories.values())

    @cached_property
    def known(self) -> set[str]:
        """Those and the deleted memories whose trail the scope holds, by their ids here."""
        return set(self.every.values())

    def relink(self, rec: MemoryRecord) -> MemoryRecord:
        """The memory under its id here, and its links to other memories (a change's two sides,
        an unsure change's flag, the duplicates merged into it) named by their ids here: a
        link to a memory the import neither brought nor found is dropped, never left naming
        another user's memory or none."""
        meta = _relinked_metadata(rec.metadata, self.memories, self.here, self.every)
        return rec.model_copy(update={
            "id": self.memories[rec.id], "metadata": meta,
            "supersedes": _one(rec.supersedes, self.memories, self.here),
            "superseded_by": _one(rec.superseded_by, self.memories, self.here),
        })

    def relink_snapshot(self, snap: dict[str, Any] | None) -> dict[str, Any] | None:
        """An audit snapshot with the same ids as the memories it describes (undo and restore
        read their links back); a deleted version keeps its link while its trail came in."""
        if not snap:
            return snap
        every = self.every
        out = dict(snap)
        for key in ("id", "supersedes", "superseded_by"):
            if isinstance(out.get(key), str):
                out[key] = every.get(out[key], out[key]) if key == "id" else _one(out[key], every, self.known)
        if isinstance(out.get("metadata"), dict):
            out["metadata"] = _relinked_metadata(out["metadata"], every, self.known, every)
        return out


def _one(old: str | None, ids: dict[str, str], here: set[str]) -> str | None:
    new = ids.get(old) if old is not None else None
    return new if new in here else None


def _relinked_metadata(meta: dict[str, Any], ids: dict[str, str], here: set[str],
                       trails: dict[str, str]) -> dict[str, Any]:
    out = dict(meta)
    flag = out.get(FLAG)
    if isinstance(flag, dict) and isinstance(flag.get("ids"), list):
        named = [n for n in (_one(i, ids, here) for i in flag["ids"]) if n is not None]
        if named:
            out[FLAG] = {**flag, "ids": named}
        else:  # nothing left it may replace: no flag
            out.pop(FLAG)
    if isinstance(out.get("merged"), list):  # deleted duplicates: named while their trail is here
        out["merged"] = [trails[i] for i in out["merged"] if i in trails]
    return out


def _id_map(store: Store, scope: Scope, records: list[tuple[int, str, Any]]) -> _IdMap:
    """Which exported memories are new to the scope, and each exported id's id here. Ids are
    unique across a store's scopes: one another scope uses (a memory, or a deleted one's trail,
    which it may restore) is not reused; a memory already here (same id, or the same text and
    creation time under another id: a copy re-imported) keeps its id and is not imported."""
    have = {(m.content, m.created_at): m.id for m in store.list_memories(scope)}
    memories: dict[str, str] = {}
    fresh: list[str] = []
    for _, kind, r in records:
        if kind == "memory":
            stored = r.id if store.get_memory(scope, r.id) is not None else have.get((r.content, r.created_at))
            memories[r.id] = stored or r.id
            if stored is None:
                fresh.append(r.id)
    # a deleted memory's trail goes only into a scope that has never heard of that memory,
    # under its own id or (a copy re-imported where that id was taken) the id it came in under
    first: dict[str, MemoryEvent] = {}
    for _, k, r in records:
        if k == "event" and r.memory_id not in memories:
            first.setdefault(r.memory_id, r)
    new_trails = [i for i in first if not store.events(scope, i, limit=1)]
    used = _in_use(store, scope, [*fresh, *new_trails])
    memories |= {i: new_id() if i in used else i for i in fresh}
    trails = {i: i for i in first}
    if moved := [i for i in new_trails if i in used]:
        came = {_trail_key(e): e.memory_id for e in store.events(scope, limit=_ALL)}
        for i in moved:
            trails[i] = came.get(_trail_key(first[i])) or new_id()
            if _trail_key(first[i]) in came:
                new_trails.remove(i)
    return _IdMap(memories, trails, set(fresh), set(new_trails))


def _trail_key(e: MemoryEvent) -> tuple[Any, ...]:
    """An audit event as itself, whatever memory id it is filed under (and its snapshots'
    links: they follow the ids too)."""
    return e.kind, e.created_at, e.actor, e.reason, *((s or {}).get("content") for s in (e.before, e.after))


def _in_use(store: Store, scope: Scope, ids: list[str]) -> set[str]:
    """The ids another scope of the store holds: a memory's (one indexed look-up each), or a
    deleted one's audit trail. The trail has no index on the id alone: it is counted for
    halves of a batch, down to the ids it holds, so a few ids in use cost a few scans."""
    found = {i for i in ids if store.raw_count("memories", "id = ?", [i])}
    other, whose = "NOT (user_id = ? AND agent_id = ?)", [scope.user_id, scope.agent_id]
    rest = [i for i in ids if i not in found]
    if not rest or not store.raw_count("memory_events", other, whose):
        return found

    def held(batch: list[str]) -> set[str]:
        marks = ",".join("?" * len(batch))
        if not store.raw_count("memory_events", f"memory_id IN ({marks}) AND {other}", [*batch, *whose]):
            return set()
        if len(batch) == 1:
            return set(batch)
        return held(batch[:len(batch) // 2]) | held(batch[len(batch) // 2:])

    for start in range(0, len(rest), 400):
        found |= held(rest[start:start + 400])
    return found
