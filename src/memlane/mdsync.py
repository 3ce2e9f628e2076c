"""A person's edits of MEMORY.md → audited operations, and forgetting in the files.

What counts as a person's edit is decided only from what memlane wrote into the file (its
`Manifest`), never from a clock:

- DELETE: the id was in the manifest of the file being read, is missing from the file now,
  and no unreadable entry could be it. A file without a manifest (hand-written, foreign,
  written by an older version) deletes nothing.
- UPDATE: a field differs from what the manifest says memlane wrote for that id; a field
  that still says what memlane wrote is stale, and the store wins.
- ADD: an entry without an id, or with an id this scope never had. One already stored (same
  category and content, or imported before: `entry_key`) is skipped, so an import that was
  killed after its commit and run again adds nothing twice. An entry in seed 001's own form
  (`### [a1b2c3] preference | 0.92 | 2026-02-20 | 12`, e.g. an EverBot file) keeps its id,
  score, date (`last_activated`), hits (`activation_count`) and section (archived): its id
  unless that id is not a valid one or is in use in this store (memory ids are unique across
  scopes), when it gets a new id and the operation's `reason` says so.
- SUPERSEDE (issue 32): content rewritten and a "(since …)" added or changed: the fact
  changed then; the memory is kept, closed at that date, and the new text replaces it. A
  rewrite that keeps memlane's date (or has none) is an UPDATE: a correction.
  A "(since …)" whose date names no day (2025-13, 2025-06-31) is refused, by line.
- SKIP: an entry of a deleted memory (the audit trail knows its id) never brings it back; an
  edit of a replaced fact's entry (an old file), or of the "(since …)" date alone, is not applied.

`md import` and consolidation's import step both call `sync_memory_md`; under
`lifecycle.markdown_primary` every write of the file is preceded by it (`refresh_memory_md`),
so a person's edit is read in before memlane writes the file again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from memlane import markdown, memory_input, userprofile, validate, writes
from memlane.errors import BackendError, MemlaneError, NotFound, ValidationError
from memlane.events import Event
from memlane.indexing import embed_one
from memlane.markdown import (
    MdEntry,
    MdOperation,
    MemoryFile,
    Written,
    atomic_write,
    content_digest,
    entry_key,
    entry_time,
    load_manifest,
    memory_path,
    parse_memory_md,
    put_memory_md,
    read_memory_file,
    remove_entries,
    scope_dir,
    written_by_memlane,
)
from memlane.models import MemoryRecord, Scope, new_id
from memlane.parts import Parts, Syncing
from memlane.policy import initial_score

log = logging.getLogger(__name__)


def plan_import(mem: Parts, scope: Scope, file: MemoryFile, name: str = "MEMORY.md") -> list[MdOperation]:
    """The operations a person's edits of `file` ask for (rules in the module docstring)."""
    records = mem.store.list_memories(scope)
    by_id = {m.id: m for m in records}
    now = mem.clock()
    manifest = load_manifest(mem, scope, file.token)
    written = manifest.entries if manifest is not None else {}
    in_file = {e.id for e in file.entries if e.id} | {s.id for s in file.skipped if s.id}
    ops: list[MdOperation] = []
    removed = [i for i in written if i not in in_file and i in by_id]
    unreadable = [s.line for s in file.skipped if s.id is None]
    if removed and unreadable:  # an entry whose id cannot be read may be any of them
        ops += [MdOperation("SKIP", i, [], by_id[i].content, line=unreadable[0],
                            reason=f"{name} line {unreadable[0]} is unreadable and may be this entry; kept")
                for i in removed]
        removed = []
    known: dict[str, str] = {}  # entry key → what already holds it
    for m in records:
        # a replaced fact holds no text against a new entry: a person may move back to Munich
        if m.id not in removed and m.status != "superseded":
            known.setdefault(entry_key(m.category, m.content), m.id)
            if isinstance(m.metadata.get("md_key"), str):
                known.setdefault(m.metadata["md_key"], m.id)
    for e in file.entries:
        old = by_id.get(e.id) if e.id else None
        e = _read_marker(e, old, now, name)
        if old is not None:
            if (op := _edit(mem, scope, e, old, written.get(old.id), name)) is not None:
                ops.append(op)
            continue
        if e.id and mem.store.events(scope, e.id, limit=1):
            ops.append(MdOperation("SKIP", e.id, [], e.content, line=e.line,
                                   reason=f"memory {e.id} was deleted; a stale entry does not bring it back"))
            continue
        key = entry_key(e.category, e.content)
        if key in known:
            ops.append(MdOperation("SKIP", known[key], [], e.content, line=e.line,
                                   reason=f"already stored ({known[key]})"))
            continue
        _check(mem, e, name, content=True)
        known[key] = f"line {e.line}"
        ops.append(MdOperation("ADD", e.id or "", ["content", "category", "score"], e.content, line=e.line,
                               category=e.category, score=e.score, key=key, last_activated=entry_time(e, now),
                               hits=e.hits, archived=e.archived, valid_from=e.since))
    _own_ids(mem, [op for op in ops if op.op == "ADD" and op.memory_id])
    ops += [MdOperation("DELETE", i, [], by_id[i].content, by_id[i].content) for i in removed]
    return ops


def _read_marker(e: MdEntry, old: MemoryRecord | None, now: datetime, name: str) -> MdEntry:
    """The entry with its trailing marker read as memlane's: a date that names no day is a
    person's mistake, refused by line; "(until …)" is memlane's only where it writes it (an
    entry of a version a change to come replaces), elsewhere it is the person's text."""
    if e.mark.bad:
        raise ValidationError(f"{name} line {e.line}: since", f"{e.mark.bad!r} is not a date; write a year (2024), "
                                                              "a month (2024-03) or a day (2024-03-15)")
    if e.mark.kind == "until" and e.mark.when is not None and (
            old is None or markdown.marker(old, now) != f"until {e.mark.when.date().isoformat()}"):
        return replace(e, content=e.content + e.mark.text, mark=markdown.Marker())
    return e


def _own_ids(mem: Parts, adds: list[MdOperation]) -> None:
    """Keep each ADD's id from the file when it is a valid id no memory and no audit event of
    this store uses (ids are unique across scopes; an audited id may be restored in its own
    scope); else a new id, and `reason` says why."""
    valid = [op for op in adds if validate.MEMORY_ID.fullmatch(op.memory_id)]
    for op in adds:
        if op not in valid:
            op.reason = f"id {op.memory_id[:80]!r} is not a memory id (1-64 letters, digits, _ or -); a new id"
    taken: set[str] = set()
    for i in range(0, len(valid), 400):
        ids = [op.memory_id for op in valid[i:i + 400]]
        marks = ",".join("?" * len(ids))
        for table, column in (("memories", "id"), ("memory_events", "memory_id")):
            # one count for the batch (the events scan is the slow one), then one per id only if any is taken
            if mem.store.raw_count(table, f"{column} IN ({marks})", ids):
                taken |= {x for x in ids if mem.store.raw_count(table, f"{column} = ?", [x])}
    for op in adds:
        if op in valid and op.memory_id in taken:
            op.reason = f"id {op.memory_id} is already in use in this store; a new id"
        if op.reason:
            op.memory_id = ""


def _edit(mem: Parts, scope: Scope, e: MdEntry, old: MemoryRecord, w: Written | None,
          name: str) -> MdOperation | None:
    """UPDATE for the fields a person changed: different from what memlane wrote and from
    the store. Without a record of what was written (a file older than the kept manifests,
    a hand copy), a field is a person's only when it differs from every version of the memory
    the audit trail holds; one that shows an older version is stale, and the store is kept."""
    score = None if e.score is None else f"{e.score:.2f}"
    shown = markdown.shown_start(old, mem.clock())
    redated = e.since is not None and e.since.date() != shown
    if w is None:
        differs = e.content != old.content or e.category != old.category or score not in (None, f"{old.score:.2f}")
        if not differs:
            return _redated(old, e) if redated else None
        digests, cats, scores = _versions(mem, scope, old.id)
        fields = [f for f, new in (("content", e.content != old.content and content_digest(e.content) not in digests),
                                   ("category", e.category != old.category and e.category not in cats),
                                   ("score", score not in (None, f"{old.score:.2f}") and score not in scores)) if new]
        if not fields:
            return MdOperation("SKIP", old.id, [], e.content, old.content, e.line,
                               reason="shows an older version of the memory (memlane has no record of writing "
                                      "this file); the store is kept")
        _check(mem, e, name, content="content" in fields, category="category" in fields)
        return _change(old, e, fields, redated, name)
    fields = []
    if content_digest(e.content) != w.digest and e.content != old.content:
        fields.append("content")
    if e.category != w.category and e.category != old.category:
        fields.append("category")
    if score is not None and score != w.score and score != f"{old.score:.2f}":
        fields.append("score")
    if not fields:
        return _redated(old, e) if redated and e.content == old.content else None
    _check(mem, e, name, content="content" in fields, category="category" in fields)
    return _change(old, e, fields, redated, name)


def _change(old: MemoryRecord, e: MdEntry, fields: list[str], redated: bool, name: str) -> MdOperation:
    """A person's edit of an entry: the fact changed (new text and a new "(since …)") or a
    correction (UPDATE). A replaced fact's entry (a file older than the change) is not edited."""
    if old.superseded_by is not None:  # replaced, or to be from a later date
        return MdOperation("SKIP", old.id, [], e.content, old.content, e.line,
                           reason=f"memory {old.id} was replaced by {old.superseded_by}; edit that entry")
    if not (redated and "content" in fields):
        return MdOperation("UPDATE", old.id, fields, e.content, old.content, e.line, category=e.category,
                           score=e.score)
    assert e.since is not None and e.since_end is not None
    began = old.valid_from or old.created_at
    # "(since 2026)" of a fact memlane learned in March 2026: from when the old one began
    if e.since_end <= began:
        raise ValidationError(f"{name} line {e.line}: since", f"{e.since.date().isoformat()} is before the fact it "
                                                              f"replaces began to hold ({began.date().isoformat()})")
    return MdOperation("SUPERSEDE", old.id, [*fields, "valid_from"], e.content, old.content, e.line,
                       category=e.category, score=e.score, valid_from=max(e.since, began))


def _redated(old: MemoryRecord, e: MdEntry) -> MdOperation:
    """Only the "(since …)" of an entry changed: when a fact began is set by a change
    (`memlane supersede --valid-from`), not by editing the date; the store is kept."""
    return MdOperation("SKIP", old.id, [], e.content, old.content, e.line,
                       reason="only the \"(since …)\" date changed; rewrite the fact with its date to record a "
                              "change, or use `memlane supersede`")


def _versions(mem: Parts, scope: Scope, memory_id: str) -> tuple[set[str], set[str], set[str]]:
    """Every content (digest), category and score (as the file shows it) the memory had."""
    digests, cats, scores = set(), set(), set()
    for ev in mem.store.events(scope, memory_id, limit=100_000):
        for snap in (ev.before, ev.after):
            if snap:
                digests.add(content_digest(str(snap.get("content", ""))))
                cats.add(str(snap.get("category", "")))
                if isinstance(snap.get("score"), int | float):
                    scores.add(f"{snap['score']:.2f}")
    return digests, cats, scores


def _check(mem: Parts, e: MdEntry, name: str, *, content: bool, category: bool = True) -> None:
    """The checks the API applies (memlane.validate), before anything is written."""
    if category:
        validate.category(f"{name} line {e.line}: category", e.category, mem.config.policy.categories,
                          mem.config.profile)
    if content:
        validate.memory_text(f"{name} line {e.line}: content", e.content, mem.config.store.max_content_chars)


def apply_operations(mem: Syncing, scope: Scope, ops: list[MdOperation], name: str = "MEMORY.md") -> list[MemoryRecord]:
    """Planned operations → audited changes (actor "import"); the caller holds the
    transaction. Returns the memories deleted."""
    uid, aid = scope.user_id, scope.agent_id or None
    deleted = []
    for op in ops:
        if op.op == "ADD":
            op.memory_id = _insert(mem, scope, op, name).id
        elif op.op == "UPDATE":
            mem.update(op.memory_id, actor="import", reason=f"{name} line {op.line} edited",
                       content=op.content if "content" in op.fields else None,
                       category=op.category if "category" in op.fields else None,
                       score=op.score if "score" in op.fields else None, user_id=uid, agent_id=aid)
        elif op.op == "SUPERSEDE":
            _supersede(mem, scope, op, name)
        elif op.op == "DELETE":
            deleted.append(mem.delete(op.memory_id, actor="import", reason=f"removed from {name}",
                                      user_id=uid, agent_id=aid))
    return deleted


def _supersede(mem: Syncing, scope: Scope, op: MdOperation, name: str) -> MemoryRecord:
    """`Memory.supersede` of an entry a person rewrote with a new "(since …)" (actor "import"):
    the new text as the person's word, the old memory closed at that date and kept."""
    old = mem.store.get_memory(scope, op.memory_id)
    if old is None:
        raise NotFound(f"memory {op.memory_id!r} is gone; import the file again")
    category = op.category if "category" in op.fields else None
    new, _ = memory_input.successor(mem.config, scope, mem.clock(), old, op.content, None, op.valid_from, category)
    return writes.supersede(mem, scope, old, new, None, "import", f"{name} line {op.line}: the fact changed")[1]


def _insert(mem: Syncing, scope: Scope, op: MdOperation, name: str) -> MemoryRecord:
    """`Memory.add` of an imported entry, with what the entry says: its id, score, date,
    hits and section (audited ADD, actor "import")."""
    now = mem.clock()
    when = op.last_activated or now
    rec = MemoryRecord(
        id=op.memory_id or new_id(), user_id=scope.user_id, agent_id=scope.agent_id, content=op.content,
        category=op.category, score=initial_score(op.score, mem.config.policy), created_at=min(when, now),
        updated_at=now, last_activated=when, activation_count=op.hits, source="import",
        status="archived" if op.archived else "active", metadata={"md_key": op.key}, valid_from=op.valid_from,
    )
    vec = embed_one(mem.store, mem.embedder, rec.content, mem.config.embedding.max_chars)
    reason = f"{name} line {op.line}" + (f": {op.reason}" if op.reason else "")
    with mem.store.transaction():
        rowid = mem.store.insert_memory(rec)
        mem.store.put_vectors("memories", scope, [rowid], vec[None, :])
        mem.store.add_event(scope, rec.id, "ADD", None, rec.snapshot(), "import", reason, now)
    mem.signals.send("rows.written")
    if rec.score >= mem.config.events.important_score:  # as `Memory.add` (seed 004 §11.2)
        mem.events.emit(Event.memory_important(scope, rec.id, rec.content, rec.category, rec.score, now))
    return rec


def sync_memory_md(mem: Syncing, scope: Scope, file: MemoryFile, name: str = "MEMORY.md", *,
                   dry_run: bool = False) -> tuple[list[MdOperation], list[MemoryRecord]]:
    """Plan and apply in one write transaction, so two processes importing the same file
    take turns and the second finds the first one's work done. Returns (operations, deleted)."""
    if dry_run:
        return plan_import(mem, scope, file, name), []
    # the caller rewrites the files once, at the end
    with mem.signals.mute("memory.changed", "memory.forgotten"), mem.store.transaction():
        ops = plan_import(mem, scope, file, name)
        deleted = apply_operations(mem, scope, ops, name)
    return ops, deleted


def import_memory_md(mem: Syncing, scope: Scope, path: Path | None = None, *,
                     dry_run: bool = False) -> list[MdOperation]:
    """`memlane md import`: apply a person's edits (all or nothing), then rewrite the scope's
    file so new entries show their ids and stale ones are gone (reading its own edits in
    first, when `path` is another file)."""
    source = path or memory_path(mem, scope)
    if not source.is_file():
        raise ValidationError("file", f"{source} does not exist; `memlane md export` writes it")
    file = read_memory_file(source)
    if not file.entries and not file.has_sections and file.token is None:
        raise ValidationError("file", f"{source} has no '## Active Memories' section and no entries; "
                                      "refusing to read it as MEMORY.md")
    ops, deleted = sync_memory_md(mem, scope, file, source.name, dry_run=dry_run)
    if ops and not dry_run:
        refresh_memory_md(mem, scope)
        forget_in_files(mem, scope, deleted)
    return ops


def forget_in_files(mem: Parts, scope: Scope, deleted: list[MemoryRecord], *, user_md: bool = True) -> None:
    """Deleted memories leave MEMORY.md, its backup and (when they are profile memories)
    USER.md, in every profile: their entries are cut out of the files as they stand, so a
    person's edits not yet imported stay."""
    if not deleted:
        return
    ids = {m.id for m in deleted}
    path = memory_path(mem, scope)
    for p in (path, path.with_name(path.name + ".bak")):
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not any(f"[{i}]" in text for i in ids):
            continue  # the common case, without parsing a large file
        file = parse_memory_md(text)
        if ids & ({e.id for e in file.entries if e.id} | {s.id for s in file.skipped if s.id}):
            atomic_write(p, remove_entries(text, ids))
    profile = scope_dir(mem.config.home, scope) / userprofile.USER_FILE
    if user_md and profile.exists() and any(m.category in userprofile.PROFILE_CATEGORIES for m in deleted):
        userprofile.write_user_md(mem, scope, summarize=False)


# ---- seed 001: MEMORY.md as the primary store ------------------------------------------------


@dataclass
class Refresh:
    """One `refresh_memory_md`: the person's edits it applied, and whether the file was
    written (`error` says why not)."""

    written: bool = False
    ops: list[MdOperation] = field(default_factory=list)
    error: str | None = None


def refresh_memory_md(mem: Syncing, scope: Scope, *, attempts: int = 5) -> Refresh:
    """Read a person's edits of MEMORY.md in (audited, actor "import"), then rewrite it.

    A file byte for byte as memlane wrote it is not parsed. A file that cannot be imported
    (a person's typo) is left as it is, with a warning, until it is fixed. When the file
    changes between the read and the write (a person saved it, another process wrote it),
    the whole step starts again, up to `attempts` times. A file that cannot be read or
    written raises BackendError."""
    path = memory_path(mem, scope)
    done = Refresh()
    for _ in range(attempts):
        try:
            raw: bytes | None = path.read_bytes()
        except FileNotFoundError:
            raw = None
        except OSError as exc:
            raise BackendError(f"cannot read {path}: {exc}; check that it is a readable file") from exc
        deleted: list[MemoryRecord] = []
        if raw is not None and not written_by_memlane(mem, scope, raw):
            try:
                file = _parse(raw, path)
                ops, deleted = sync_memory_md(mem, scope, file, path.name)
            except MemlaneError as exc:
                done.error = f"{path} not imported, so not rewritten (fix it; `memlane md import` checks it): {exc}"
                break
            done.ops += [op for op in ops if op.op != "SKIP"]
        if put_memory_md(mem, scope, path, raw):
            forget_in_files(mem, scope, deleted)
            done.written = True
            return done
    else:
        done.error = f"{path} kept changing while memlane wrote it; the next write tries again"
    log.warning("%s", done.error)
    return done


def _parse(raw: bytes, path: Path) -> MemoryFile:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError("file", f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return parse_memory_md(text)


def after_change(mem: Syncing, scope: Scope) -> None:
    """Seed 001 (`lifecycle.markdown_primary`): MEMORY.md is rewritten after every save, the
    person's edits read in first. Called after extraction jobs too; a write that fails there
    is logged, never the job's failure (its changes are committed): the next write retries."""
    if not mem.config.lifecycle.markdown_primary:
        return
    try:
        refresh_memory_md(mem, scope)
    except MemlaneError as exc:
        log.warning("MEMORY.md of user %r not rewritten: %s", scope.user_id, exc)
