"""MEMORY.md exactly as seed 001 §2.3 draws it, read tolerantly and synced both ways.

    # Agent Memory

    <!-- Last updated: 2026-02-20T10:30:00 -->
    <!-- Total entries: 15 -->

    ## Active Memories

    ### [a1b2c3] preference | 0.92 | 2026-02-20 | 12
    用户喜欢简洁的代码风格，不喜欢过多注释

    ## Archived Memories

    ### [x1y2z3] fact | 0.18 | 2026-01-10 | 2
    用户曾尝试用 Vue 写前端，但后来放弃了

A person adds a memory by writing an entry without an id: `### fact | 0.7` (the score is
optional: `### preference`) followed by its text. `memlane md import` turns every difference
between the file and the store into an audited operation (actor and source "import").

The file lives in the scope's data directory (`scope_dir`): `<home>/scopes/<user>/MEMORY.md`,
or `<home>/scopes/<user>/agents/<agent>/MEMORY.md` for an agent's own memory.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from memlane import validate
from memlane.errors import BackendError, ValidationError
from memlane.models import MemoryRecord, Scope

if TYPE_CHECKING:
    from memlane.api import Memory

log = logging.getLogger(__name__)

MEMORY_FILE = "MEMORY.md"
_ENTRY = re.compile(r"^###(?:\s+(.*?))?\s*$")
_SECTION = re.compile(r"^##(?:\s+(.*?))?\s*$")
_ID_HEAD = re.compile(r"^\[([^\]]*)\]\s*(.*)$")
_CATEGORY = re.compile(r"^[A-Za-z][\w-]*$")
_UPDATED = re.compile(r"<!--\s*Last updated:\s*(\S+)\s*-->")
# A content line that starts with "#" would read as a heading: it is written with one extra
# leading backslash and read back without it, so any text survives the round trip.
_NEEDS_ESCAPE = re.compile(r"^\\*#")
_ESCAPED = re.compile(r"^\\+#")


# ---- where the files live ---------------------------------------------------------------


def _encode(part: str) -> str:
    """A file-name-safe, reversible spelling of an id: a–z 0–9 _ - stay, everything else
    (upper case too, so Lin and lin differ on case-insensitive file systems) becomes %XX."""
    out = []
    for ch in part:
        if ch.isascii() and (ch.islower() or ch.isdigit() or ch in "_-"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def scope_dir(home: Path, scope: Scope) -> Path:
    """The scope's data directory for human-readable files and the seed-000 archive."""
    path = home / "scopes" / _encode(scope.user_id)
    return path / "agents" / _encode(scope.agent_id) if scope.agent_id else path


def atomic_write(path: Path, text: str, *, backup: bool = False) -> None:
    """Write through a temp file and os.replace, so readers see the old or the new file,
    never half of one; with `backup`, the previous file is copied to `<name>.bak` first."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if backup and path.exists():
            shutil.copy2(path, path.with_name(path.name + ".bak"))
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise BackendError(f"cannot write {path}: {exc}; check the directory's permissions and free space") from exc


# ---- the format ---------------------------------------------------------------------------


@dataclass
class MdEntry:
    """One `###` block. `id` is None for an entry a person added by hand."""

    id: str | None
    category: str
    score: float | None
    last_activated: str
    hits: int
    content: str
    archived: bool = False
    line: int = 0


@dataclass
class Skipped:
    line: int
    reason: str
    id: str | None = None


@dataclass
class MemoryFile:
    entries: list[MdEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    last_updated: datetime | None = None
    has_sections: bool = False


def _is_archived(mem: MemoryRecord, archive_below: float) -> bool:
    # seed 001 §7.1: score < 0.2 is in the Archived section, as is anything archived by policy
    return mem.status == "archived" or mem.score < archive_below


def _order(mems: list[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(mems, key=lambda m: (-m.score, m.created_at, m.id))


def render_memory_md(memories: list[MemoryRecord], *, now: datetime, archive_below: float = 0.2) -> str:
    """The whole file, regenerated (seed 001: every save is a full rewrite)."""
    active = _order([m for m in memories if not _is_archived(m, archive_below)])
    archived = _order([m for m in memories if _is_archived(m, archive_below)])
    lines = [
        "# Agent Memory", "",
        f"<!-- Last updated: {now.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')} -->",
        f"<!-- Total entries: {len(memories)} -->", "",
        "## Active Memories", "",
    ]
    for mem in active:
        lines += _entry_lines(mem)
    lines += ["## Archived Memories", ""]
    for mem in archived:
        lines += _entry_lines(mem)
    return "\n".join(lines).rstrip("\n") + "\n"


def _entry_lines(mem: MemoryRecord) -> list[str]:
    head = (f"### [{mem.id}] {mem.category} | {mem.score:.2f} | "
            f"{mem.last_activated.date().isoformat()} | {mem.activation_count}")
    body = [("\\" + ln if _NEEDS_ESCAPE.match(ln) else ln) for ln in mem.content.split("\n")]
    return [head, *body, ""]


def parse_memory_md(text: str) -> MemoryFile:
    """Parse tolerantly: a broken entry is skipped with a warning naming its line, the rest
    load. CRLF and lone CR line ends are read as LF."""
    result = MemoryFile()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    archived = False
    head: tuple[int, str] | None = None
    body: list[str] = []

    def flush() -> None:
        if head is not None:
            _finish(result, head[0], head[1], body, archived)

    for n, line in enumerate(lines, 1):
        if (m := _ENTRY.match(line)) is not None:
            flush()
            head, body = (n, m.group(1) or ""), []
        elif (s := _SECTION.match(line)) is not None:
            flush()
            head, body = None, []
            result.has_sections = True
            archived = "archived" in (s.group(1) or "").lower()
        elif head is not None:
            body.append(line)
        elif result.last_updated is None and (u := _UPDATED.search(line)) is not None:
            result.last_updated = _parse_stamp(u.group(1))
    flush()
    return result


def _finish(result: MemoryFile, line: int, head: str, body: list[str], archived: bool) -> None:
    content = "\n".join(ln[1:] if _ESCAPED.match(ln) else ln for ln in body).strip()
    mem_id: str | None = None
    rest = head
    if (m := _ID_HEAD.match(head)) is not None:
        mem_id, rest = m.group(1).strip(), m.group(2)
        if not mem_id:
            return _skip(result, line, "empty [id]", None)
    parts = [p.strip() for p in rest.split("|")]
    if not content:
        return _skip(result, line, "entry has no content", mem_id)
    if mem_id is not None and len(parts) != 4:
        return _skip(result, line, f"expected 'category | score | last_activated | hits', got {rest!r}", mem_id)
    if mem_id is None and len(parts) not in (1, 2, 4):
        return _skip(result, line, f"a new entry is '### category' or '### category | score', got {head!r}", None)
    category = parts[0].lower()
    if not _CATEGORY.match(category):
        return _skip(result, line, f"bad category {parts[0]!r}", mem_id)
    score: float | None = None
    if len(parts) > 1 and parts[1]:
        try:
            score = float(parts[1])
        except ValueError:
            return _skip(result, line, f"score {parts[1]!r} is not a number", mem_id)
        if not 0.0 <= score <= 1.0:
            return _skip(result, line, f"score {score} is outside [0, 1]", mem_id)
    last, hits = "", 0
    if len(parts) == 4:
        last = parts[2]
        try:
            date.fromisoformat(last[:10])
            hits = int(parts[3])
        except ValueError:
            return _skip(result, line, f"bad last_activated {parts[2]!r} or hits {parts[3]!r}", mem_id)
        if hits < 0:
            return _skip(result, line, f"hits {hits} is negative", mem_id)
    if mem_id is not None and any(e.id == mem_id for e in result.entries):
        return _skip(result, line, f"id {mem_id} appears twice; the first entry is kept", None)
    result.entries.append(MdEntry(mem_id, category, score, last, hits, content, archived, line))


def _skip(result: MemoryFile, line: int, reason: str, mem_id: str | None) -> None:
    log.warning("MEMORY.md line %d: %s; entry skipped", line, reason)
    result.skipped.append(Skipped(line, reason, mem_id))


def _parse_stamp(value: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def read_memory_file(path: Path) -> MemoryFile:
    """A missing or empty file is an empty memory, not an error (seed 001 §7.1)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return MemoryFile()
    except UnicodeDecodeError as exc:
        raise ValidationError("file", f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise BackendError(f"cannot read {path}: {exc}") from exc
    return parse_memory_md(text)


def read_memory_md(path: Path) -> list[MdEntry]:
    return read_memory_file(path).entries


# ---- syncing with the store ---------------------------------------------------------------

OpKind = Literal["ADD", "UPDATE", "DELETE"]


@dataclass
class MdOperation:
    """One difference between the file and the store, as it was (or would be) applied."""

    op: OpKind
    memory_id: str
    fields: list[str]
    content: str
    before: str = ""
    line: int = 0


def memory_path(mem: Memory, scope: Scope) -> Path:
    return scope_dir(mem.config.home, scope) / MEMORY_FILE


def write_memory_md(mem: Memory, scope: Scope, path: Path | None = None) -> Path:
    """Render the scope's memories to MEMORY.md (backup + atomic replace)."""
    target = path or memory_path(mem, scope)
    records = mem.store.list_memories(scope)
    text = render_memory_md(records, now=mem.clock(), archive_below=mem.config.policy.archive_below)
    atomic_write(target, text, backup=True)
    return target


def plan_sync(file: MemoryFile, records: list[MemoryRecord]) -> list[MdOperation]:
    """The operations that make the store say what the file says."""
    by_id = {m.id: m for m in records}
    ops: list[MdOperation] = []
    for e in file.entries:
        old = by_id.get(e.id) if e.id else None
        if old is None:
            ops.append(MdOperation("ADD", e.id or "", ["content", "category", "score"], e.content, line=e.line))
            continue
        changed = []
        if e.content != old.content:
            changed.append("content")
        if e.category != old.category:
            changed.append("category")
        # the file shows two decimals: only a different rounded value is an edit
        if e.score is not None and round(old.score, 2) != round(e.score, 2):
            changed.append("score")
        if changed:
            ops.append(MdOperation("UPDATE", old.id, changed, e.content, old.content, e.line))
    in_file = {e.id for e in file.entries if e.id} | {s.id for s in file.skipped if s.id}
    for old in records:
        if old.id in in_file:
            continue
        # a memory born after the file was written is not missing from it: keep it
        if file.last_updated is not None and old.created_at.replace(microsecond=0) > file.last_updated:
            continue
        ops.append(MdOperation("DELETE", old.id, [], old.content, old.content))
    return ops


def import_memory_md(
    mem: Memory, scope: Scope, path: Path | None = None, *, dry_run: bool = False
) -> list[MdOperation]:
    """Apply a person's edits of MEMORY.md as audited operations (all or nothing), then
    rewrite the file so new entries show their ids."""
    source = path or memory_path(mem, scope)
    if not source.is_file():
        raise ValidationError("file", f"{source} does not exist; `memlane md export` writes it")
    file = read_memory_file(source)
    if not file.entries and not file.has_sections:
        # an emptied or foreign file would otherwise delete every memory of the scope
        raise ValidationError(
            "file", f"{source} has no '## Active Memories' section and no entries; refusing to delete every memory"
        )
    cats = mem.config.policy.categories
    limit = mem.config.store.max_content_chars
    by_line = {e.line: e for e in file.entries}
    records = mem.store.list_memories(scope)
    ops = plan_sync(file, records)
    for op in ops:
        e = by_line.get(op.line)
        if e is None:
            continue
        # the checks the API applies (memlane.validate), before anything is written
        validate.category(f"{source.name} line {e.line}: category", e.category, cats, mem.config.profile)
        validate.text(f"{source.name} line {e.line}: content", e.content, limit)
    if dry_run or not ops:
        return ops
    paused, mem._md_paused = mem._md_paused, True
    try:
        with mem.store.transaction():
            apply_operations(mem, scope, ops, by_line, source.name)
    finally:
        mem._md_paused = paused
    write_memory_md(mem, scope)
    return ops


def apply_operations(mem: Memory, scope: Scope, ops: list[MdOperation], by_line: dict[int, MdEntry],
                     file_name: str = "MEMORY.md") -> None:
    """Turn planned operations into audited memory changes (actor "import"); the caller
    holds the transaction. `by_line` maps a file line to its parsed entry."""
    uid, aid = scope.user_id, scope.agent_id or None
    for op in ops:
        e = by_line.get(op.line)
        if op.op == "ADD" and e is not None:
            rec = mem.add(e.content, category=e.category, importance=e.score, source="import",
                          actor="import", user_id=uid, agent_id=aid)
            op.memory_id = rec.id
        elif op.op == "UPDATE" and e is not None:
            mem.update(op.memory_id, actor="import", reason=f"{file_name} line {e.line} edited",
                       content=e.content if "content" in op.fields else None,
                       category=e.category if "category" in op.fields else None,
                       score=e.score if "score" in op.fields else None, user_id=uid, agent_id=aid)
        elif op.op == "DELETE":
            mem.delete(op.memory_id, actor="import", reason=f"removed from {file_name}",
                       user_id=uid, agent_id=aid)
