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
  killed after its commit and run again adds nothing twice.
- SKIP: an entry of a deleted memory (the audit trail knows its id) never brings it back.

`md import` and consolidation's import step both call `sync_memory_md`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memlane import userprofile, validate
from memlane.errors import ValidationError
from memlane.markdown import (
    MdEntry,
    MdOperation,
    MemoryFile,
    Written,
    atomic_write,
    content_digest,
    entry_key,
    load_manifest,
    memory_path,
    parse_memory_md,
    read_memory_file,
    remove_entries,
    scope_dir,
    write_memory_md,
)
from memlane.models import MemoryRecord, Scope

if TYPE_CHECKING:
    from memlane.api import Memory


def plan_import(mem: Memory, scope: Scope, file: MemoryFile, name: str = "MEMORY.md") -> list[MdOperation]:
    """The operations a person's edits of `file` ask for (rules in the module docstring)."""
    records = mem.store.list_memories(scope)
    by_id = {m.id: m for m in records}
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
        if m.id not in removed:
            known.setdefault(entry_key(m.category, m.content), m.id)
            if isinstance(m.metadata.get("md_key"), str):
                known.setdefault(m.metadata["md_key"], m.id)
    for e in file.entries:
        old = by_id.get(e.id) if e.id else None
        if old is not None:
            if (op := _edit(mem, e, old, written.get(old.id), name)) is not None:
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
        ops.append(MdOperation("ADD", "", ["content", "category", "score"], e.content, line=e.line,
                               category=e.category, score=e.score, key=key))
    ops += [MdOperation("DELETE", i, [], by_id[i].content, by_id[i].content) for i in removed]
    return ops


def _edit(mem: Memory, e: MdEntry, old: MemoryRecord, w: Written | None, name: str) -> MdOperation | None:
    """UPDATE for the fields a person changed: different from what memlane wrote and from
    the store. Without a record of what was written, a difference cannot be told from a stale
    file: the store is kept and the entry reported."""
    score = None if e.score is None else f"{e.score:.2f}"
    if w is None:
        if e.content != old.content or e.category != old.category or score not in (None, f"{old.score:.2f}"):
            return MdOperation("SKIP", old.id, [], e.content, old.content, e.line,
                               reason="differs from the store, but memlane has no record of writing this "
                                      "entry, so it may be stale; the store is kept")
        return None
    fields = []
    if content_digest(e.content) != w.digest and e.content != old.content:
        fields.append("content")
    if e.category != w.category and e.category != old.category:
        fields.append("category")
    if score is not None and score != w.score and score != f"{old.score:.2f}":
        fields.append("score")
    if not fields:
        return None
    _check(mem, e, name, content="content" in fields, category="category" in fields)
    return MdOperation("UPDATE", old.id, fields, e.content, old.content, e.line, category=e.category, score=e.score)


def _check(mem: Memory, e: MdEntry, name: str, *, content: bool, category: bool = True) -> None:
    """The checks the API applies (memlane.validate), before anything is written."""
    if category:
        validate.category(f"{name} line {e.line}: category", e.category, mem.config.policy.categories,
                          mem.config.profile)
    if content:
        validate.memory_text(f"{name} line {e.line}: content", e.content, mem.config.store.max_content_chars)


def apply_operations(mem: Memory, scope: Scope, ops: list[MdOperation], name: str = "MEMORY.md") -> list[MemoryRecord]:
    """Planned operations → audited changes (actor "import"); the caller holds the
    transaction. Returns the memories deleted."""
    uid, aid = scope.user_id, scope.agent_id or None
    deleted = []
    for op in ops:
        if op.op == "ADD":
            rec = mem.add(op.content, category=op.category, importance=op.score, source="import", actor="import",
                          metadata={"md_key": op.key}, user_id=uid, agent_id=aid)
            op.memory_id = rec.id
        elif op.op == "UPDATE":
            mem.update(op.memory_id, actor="import", reason=f"{name} line {op.line} edited",
                       content=op.content if "content" in op.fields else None,
                       category=op.category if "category" in op.fields else None,
                       score=op.score if "score" in op.fields else None, user_id=uid, agent_id=aid)
        elif op.op == "DELETE":
            deleted.append(mem.delete(op.memory_id, actor="import", reason=f"removed from {name}",
                                      user_id=uid, agent_id=aid))
    return deleted


def sync_memory_md(mem: Memory, scope: Scope, file: MemoryFile, name: str = "MEMORY.md", *,
                   dry_run: bool = False) -> tuple[list[MdOperation], list[MemoryRecord]]:
    """Plan and apply in one write transaction, so two processes importing the same file
    take turns and the second finds the first one's work done. Returns (operations, deleted)."""
    if dry_run:
        return plan_import(mem, scope, file, name), []
    paused, mem._md_paused = mem._md_paused, True  # the caller rewrites the files once, at the end
    try:
        with mem.store.transaction():
            ops = plan_import(mem, scope, file, name)
            deleted = apply_operations(mem, scope, ops, name)
    finally:
        mem._md_paused = paused
    return ops, deleted


def import_memory_md(mem: Memory, scope: Scope, path: Path | None = None, *,
                     dry_run: bool = False) -> list[MdOperation]:
    """`memlane md import`: apply a person's edits (all or nothing), then rewrite the file so
    new entries show their ids and stale ones are gone."""
    source = path or memory_path(mem, scope)
    if not source.is_file():
        raise ValidationError("file", f"{source} does not exist; `memlane md export` writes it")
    file = read_memory_file(source)
    if not file.entries and not file.has_sections and file.token is None:
        raise ValidationError("file", f"{source} has no '## Active Memories' section and no entries; "
                                      "refusing to read it as MEMORY.md")
    ops, deleted = sync_memory_md(mem, scope, file, source.name, dry_run=dry_run)
    if ops and not dry_run:
        write_memory_md(mem, scope)
        forget_in_files(mem, scope, deleted)
    return ops


def forget_in_files(mem: Memory, scope: Scope, deleted: list[MemoryRecord], *, user_md: bool = True) -> None:
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
