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

Facts that change (issue 32): a memory that replaced another ends its text with when it began
to hold, "(since 2024-03-15)" (so does one that began before memlane learned it); replaced
facts are history, not memory to act on, and are not listed (`memlane timeline`, the web UI
show them). A person who rewrites an entry and adds or changes its "(since …)" (a year, a
month or a day) says the fact changed then: the import supersedes the memory. A rewrite that
keeps the date, or has none, corrects the memory in place (UPDATE). A change told ahead of its
date is written as the prompt shows it: the version to come "(from 2026-09-01)", the one that
holds until then "(until 2026-09-01)". A date that names no day (2025-13) is refused by line.

The file lives in the scope's data directory (`scope_dir`): `<home>/scopes/<user>/MEMORY.md`,
or `<home>/scopes/<user>/agents/<agent>/MEMORY.md` for an agent's own memory.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import logging
import os
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Literal

from memlane import atomicfile
from memlane.errors import BackendError, ValidationError
from memlane.models import MemoryRecord, Scope
from memlane.parts import Parts

log = logging.getLogger(__name__)

MEMORY_FILE = "MEMORY.md"
_ENTRY = re.compile(r"^###(?:\s+(.*?))?\s*$")
_SECTION = re.compile(r"^##(?:\s+(.*?))?\s*$")
_ID_HEAD = re.compile(r"^\[([^\]]*)\]\s*(.*)$")
_CATEGORY = re.compile(r"^[A-Za-z][\w-]*$")
_UPDATED = re.compile(r"<!--\s*Last updated:\s*(\S+)\s*-->")
# names the manifest of what memlane wrote into this file (see `Manifest`)
_TOKEN = re.compile(r"<!--\s*memlane write:\s*([0-9a-f]{8,64})\s*-->")
# A content line that starts with "#" would read as a heading: it is written with one extra
# leading backslash and read back without it, so any text survives the round trip.
_NEEDS_ESCAPE = re.compile(r"^\\*#")
_ESCAPED = re.compile(r"^\\+#")
_HITS_MAX = 2**62  # the store's activation count is a 64-bit integer
# when a fact held, at the end of its text: "(since 2024-03-15)", "(since 2024-03)", a
# person's "（自 2024 年起）" too, and for a change told ahead of its date (issue 32) "(from …)"
# on the version to come and "(until …)" on the one holding until then, as the prompt shows
# them (`supersession.span`). One marker is read off; the text before it is the content.
# Any four-digit year: a change told ahead of its date may be dated past 2099
_SINCE = re.compile(r"\s*[(（]\s*(?:(since|from|until)\s+|自\s*)(\d{4})(?:\s*年)?(?:-(\d{1,2})(?:-(\d{1,2}))?)?"
                    r"\s*(?:起)?\s*[)）]\s*$", re.IGNORECASE)


# ---- where the files live ---------------------------------------------------------------


_NAME_MAX = 120  # not from a seed: file systems allow 255 bytes a name; room left for suffixes
_NAME_KEEP = 96  # a long id keeps this much of its spelling, then "~" and a hash of the whole id


def _encode(part: str) -> str:
    """A file-name-safe spelling of an id: a–z 0–9 _ - stay, everything else (upper case
    too, so Lin and lin differ on case-insensitive file systems) becomes %XX. A spelling
    longer than `_NAME_MAX` (a 256-character id, 100 CJK characters) is cut and ends in
    "~" + 20 hex of the id's SHA-256 ("~" is never part of a spelling, so no short id's
    name can equal it); shorter ones are unchanged."""
    out = []
    for ch in part:
        if ch.isascii() and (ch.islower() or ch.isdigit() or ch in "_-"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    name = "".join(out)
    if len(name) <= _NAME_MAX:
        return name
    cut = name[:_NAME_KEEP]
    if "%" in cut[-2:]:  # never split an %XX escape
        cut = cut[: cut.rindex("%")]
    digest = hashlib.sha256(part.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"{cut}~{digest}"


def scope_dir(home: Path, scope: Scope) -> Path:
    """The scope's data directory for human-readable files and the seed-000 archive."""
    path = home / "scopes" / _encode(scope.user_id)
    return path / "agents" / _encode(scope.agent_id) if scope.agent_id else path


def atomic_write(path: Path, text: str | bytes, *, backup: bool = False) -> None:
    """Write through a temp file and os.replace, so readers see the old or the new file,
    never half of one; with `backup`, the previous file goes to `<name>.bak` first, the same
    way. Temp files that killed writers left behind are removed."""
    try:
        if backup and path.exists():
            atomicfile.replace(path.with_name(path.name + ".bak"), path.read_bytes())
        # a lone surrogate must not fail the write
        atomicfile.replace(path, text if isinstance(text, bytes) else text.encode("utf-8", "replace"))
    except OSError as exc:
        raise BackendError(f"cannot write {path}: {exc}; check the directory's permissions and free space") from exc


# ---- the format ---------------------------------------------------------------------------


@dataclass
class Marker:
    """The trailing "(…)" read off an entry's text (`split_since`)."""

    text: str = ""  # as written, with the space before it
    kind: str = ""  # "since" (also "自 … 起"), "from" or "until"
    when: datetime | None = None  # the first day of the year, month or day it names
    end: datetime | None = None  # the end of that period
    bad: str = ""  # the date as written, when it names no day (2025-13, 2025-06-31)


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
    mark: Marker = field(default_factory=lambda: Marker())  # "(since …)" at the end of its text

    @property
    def since(self) -> datetime | None:
        """When the fact began to hold, by its "(since …)" or "(from …)"."""
        return self.mark.when if self.mark.kind != "until" else None

    @property
    def since_end(self) -> datetime | None:
        """The end of the year, month or day `since` names."""
        return self.mark.end if self.mark.kind != "until" else None


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
    token: str | None = None  # the `memlane write` stamp: which manifest says what memlane wrote here


def _is_archived(mem: MemoryRecord, archive_below: float) -> bool:
    # seed 001 §7.1: score < 0.2 is in the Archived section, as is anything archived by policy
    return mem.status == "archived" or mem.score < archive_below


def _order(mems: list[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(mems, key=lambda m: (-m.score, m.created_at, m.id))


def listed(memories: list[MemoryRecord], now: datetime) -> list[MemoryRecord]:
    """The memories MEMORY.md holds: not the superseded ones (history, shown by the timeline),
    nor those a change dated before `now` replaced (the next consolidation marks them)."""
    return [m for m in memories if not m.replaced(now)]


def since_shown(m: MemoryRecord) -> date | None:
    """The day "(since …)" shows for `m`: when it replaced another, began to hold on another day
    than memlane learned it, or its own text ends like a marker (the marker then protects it)."""
    start = (m.valid_from or m.created_at).astimezone(UTC)
    if m.supersedes or start.date() != m.created_at.astimezone(UTC).date() or _SINCE.search(m.content):
        return start.date()
    return None


def marker(m: MemoryRecord, now: datetime) -> str | None:
    """What MEMORY.md writes after `m`'s text, as the prompt says it (`supersession.span`): a
    version a change to come replaces holds "until" that day, a version yet to begin holds
    "from" its day, any other "since" its day (`since_shown`), or nothing."""
    start = (m.valid_from or m.created_at).astimezone(UTC)
    if start > now:
        return f"from {start.date().isoformat()}"
    if m.superseded_by is not None and m.valid_to is not None and m.valid_to > now:
        return f"until {m.valid_to.astimezone(UTC).date().isoformat()}"
    since = since_shown(m)
    return None if since is None else f"since {since.isoformat()}"


def shown_start(m: MemoryRecord, now: datetime) -> date | None:
    """The day `marker` names as when `m` began to hold ("since" or "from"), else None."""
    shown = marker(m, now)
    return None if shown is None or shown.startswith("until") else date.fromisoformat(shown.split()[1])


def split_since(text: str) -> tuple[str, Marker]:
    """(content, the marker) of an entry's text: one trailing "(since …)", "(from …)" or
    "(until …)" read off; "2024" names the year (from its first day), "2024-03" the month."""
    found = _SINCE.search(text)
    if found is None:
        return text, Marker()
    year, month, day = int(found.group(2)), found.group(3), found.group(4)
    mark = Marker(text[found.start():], (found.group(1) or "since").lower())
    try:
        when = datetime(year, int(month or 1), int(day or 1), tzinfo=UTC)
    except ValueError:  # a person's mistake: refused by line when the file is imported
        mark.bad = "-".join(g for g in found.group(2, 3, 4) if g)
        return text[:found.start()].rstrip(), mark
    try:
        if day is not None:
            end = when + timedelta(days=1)
        elif month is not None:
            end = datetime(year + (when.month == 12), when.month % 12 + 1, 1, tzinfo=UTC)
        else:
            end = datetime(year + 1, 1, 1, tzinfo=UTC)
    except (ValueError, OverflowError):  # a change dated in 9999 (issue 32): its period ends with time itself
        end = datetime.max.replace(tzinfo=UTC)
    mark.when, mark.end = when, end
    return text[:found.start()].rstrip(), mark


def render_memory_md(memories: list[MemoryRecord], *, now: datetime, archive_below: float = 0.2,
                     token: str | None = None) -> str:
    """The whole file, regenerated (seed 001: every save is a full rewrite). `token` names the
    manifest recorded for this write. Superseded memories are left out (`listed`)."""
    memories = listed(memories, now)
    active = _order([m for m in memories if not _is_archived(m, archive_below)])
    archived = _order([m for m in memories if _is_archived(m, archive_below)])
    lines = [
        "# Agent Memory", "",
        f"<!-- Last updated: {now.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')} -->",
        f"<!-- Total entries: {len(memories)} -->",
        *([f"<!-- memlane write: {token} -->"] if token else []), "",
        "## Active Memories", "",
    ]
    for mem in active:
        lines += _entry_lines(mem, now)
    lines += ["## Archived Memories", ""]
    for mem in archived:
        lines += _entry_lines(mem, now)
    return "\n".join(lines).rstrip("\n") + "\n"


def _entry_lines(mem: MemoryRecord, now: datetime) -> list[str]:
    head = (f"### [{mem.id}] {mem.category} | {mem.score:.2f} | "
            f"{mem.last_activated.date().isoformat()} | {mem.activation_count}")
    shown = marker(mem, now)
    text = mem.content + (f" ({shown})" if shown is not None else "")
    body = [("\\" + ln if _NEEDS_ESCAPE.match(ln) else ln) for ln in text.split("\n")]
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
        elif result.token is None and (t := _TOKEN.search(line)) is not None:
            result.token = t.group(1)
    flush()
    return result


def _finish(result: MemoryFile, line: int, head: str, body: list[str], archived: bool) -> None:
    content, mark = split_since("\n".join(ln[1:] if _ESCAPED.match(ln) else ln for ln in body).strip())
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
        if not 0 <= hits <= _HITS_MAX:
            return _skip(result, line, f"hits {parts[3][:40]} is not a count from 0 to {_HITS_MAX}", mem_id)
    if mem_id is not None and any(e.id == mem_id for e in result.entries):
        return _skip(result, line, f"id {mem_id} appears twice; the first entry is kept", None)
    result.entries.append(MdEntry(mem_id, category, score, last, hits, content, archived, line, mark))


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


# ---- operations ------------------------------------------------------------------------------

# SUPERSEDE: a rewritten entry with a new "(since …)": the fact changed (issue 32)
OpKind = Literal["ADD", "UPDATE", "SUPERSEDE", "DELETE", "SKIP"]


@dataclass
class MdOperation:
    """One difference between the file and the store, as it was (or would be) applied; SKIP
    is one that is not applied, and `reason` says why."""

    op: OpKind
    memory_id: str
    fields: list[str]
    content: str
    before: str = ""
    line: int = 0
    reason: str = ""
    category: str = ""
    score: float | None = None
    key: str = ""  # ADD: `entry_key`, kept in the new memory's metadata
    # ADD: what the entry says beyond content/category/score (seed 001 §2.3), kept on import
    last_activated: datetime | None = None
    hits: int = 0
    archived: bool = False
    valid_from: datetime | None = None  # ADD, SUPERSEDE: when the fact began to hold


def entry_time(e: MdEntry, now: datetime) -> datetime:
    """The entry's `last_activated` as a time (a bare date is its midnight, UTC); `now` when it
    has none or names a time after `now`."""
    t = _parse_stamp(e.last_activated) if e.last_activated else None
    return now if t is None or t > now else t


def entry_key(category: str, content: str) -> str:
    """A stable identity for an entry without an id, so importing it twice adds it once."""
    return "md:" + content_digest(f"{category.lower()}\n{content}")


# ---- what memlane wrote: the manifest --------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One entry as memlane wrote it: what a person's edit is measured against."""

    category: str
    score: str  # as the file shows it, two decimals
    digest: str  # `content_digest` of the content


@dataclass
class Manifest:
    """Exactly the entries one write of MEMORY.md held. Recorded in the store before the file
    is replaced and named by the file's `memlane write` stamp, so a file read back is always
    compared with what it held when memlane wrote it, whichever writer's file won a race."""

    token: str
    entries: dict[str, Written]


def content_digest(text: str) -> str:
    """Content as the parser reads it back (line ends normalised, stripped)."""
    norm = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return hashlib.sha256(norm.encode("utf-8", "replace")).hexdigest()[:24]


def _manifest_key(scope: Scope) -> str:
    digest = hashlib.sha256(f"{scope.user_id}\x00{scope.agent_id}".encode("utf-8", "replace")).hexdigest()[:20]
    return f"md:manifest:{digest}"


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def save_manifest(mem: Parts, scope: Scope, token: str, records: list[MemoryRecord], sha: str = "") -> None:
    """Keep the manifest in one of the scope's `md_manifests_kept` slots (a ring: the oldest
    write's manifest goes). Its first line is the token and the hash of the bytes written."""
    key, kept = _manifest_key(scope), mem.config.lifecycle.md_manifests_kept
    entries = {m.id: [m.category, f"{m.score:.2f}", content_digest(m.content)] for m in records}
    with mem.store.transaction():
        n = int(mem.store.meta(f"{key}:next") or 0)
        mem.store.set_meta(f"{key}:{n % kept}", f"{token} {sha}".rstrip() + "\n" + json.dumps(entries, ensure_ascii=False))
        mem.store.set_meta(f"{key}:next", str(n + 1))


def _slot(mem: Parts, scope: Scope, token: str) -> tuple[str, str] | None:
    """(hash, manifest json) of the write `token` names, if its slot is still kept."""
    key = _manifest_key(scope)
    for slot in range(mem.config.lifecycle.md_manifests_kept):
        raw = mem.store.meta(f"{key}:{slot}")
        if not raw:
            continue
        head, _, body = raw.partition("\n")
        tok, _, sha = head.partition(" ")
        if tok == token:
            return sha, body
    return None


def written_by_memlane(mem: Parts, scope: Scope, data: bytes) -> bool:
    """True when `data` is byte for byte a file memlane wrote (its hash is in the manifest its
    stamp names): such a file holds no edit of a person's and need not be parsed."""
    found = _TOKEN.search(data[:2048].decode("utf-8", "replace"))
    slot = _slot(mem, scope, found.group(1)) if found else None
    return slot is not None and slot[0] == file_hash(data)


def load_manifest(mem: Parts, scope: Scope, token: str | None) -> Manifest | None:
    """The manifest a file's stamp names; None for a file memlane did not write (or wrote
    so many writes ago that its manifest is gone)."""
    found = _slot(mem, scope, token) if token else None
    if not token or found is None:
        return None
    try:
        entries = json.loads(found[1])
        return Manifest(token, {str(i): Written(str(c), str(s), str(d)) for i, (c, s, d) in entries.items()})
    except (ValueError, TypeError, AttributeError):
        log.warning("the manifest of MEMORY.md write %s is damaged; the file is read as one memlane did not write",
                    token)
        return None


def drop_manifests(mem: Parts, scope: Scope) -> None:
    """Forget what memlane wrote for the scope (a purge): its files then delete nothing."""
    key = _manifest_key(scope)
    with mem.store.transaction():
        for slot in range(mem.config.lifecycle.md_manifests_kept):
            if mem.store.meta(f"{key}:{slot}") is not None:
                mem.store.set_meta(f"{key}:{slot}", "")


# ---- writing the file ---------------------------------------------------------------------


def memory_path(mem: Parts, scope: Scope) -> Path:
    return scope_dir(mem.config.home, scope) / MEMORY_FILE


class _Unread:
    """`expect` not given: replace whatever the file holds."""


UNREAD = _Unread()


def write_memory_md(mem: Parts, scope: Scope, path: Path | None = None) -> Path:
    """Render the scope's memories to MEMORY.md: the manifest first, then the backup (without
    memories deleted since), then the atomic replace."""
    target = path or memory_path(mem, scope)
    put_memory_md(mem, scope, target)
    return target


def put_memory_md(mem: Parts, scope: Scope, target: Path, expect: bytes | None | _Unread = UNREAD) -> bool:
    """`write_memory_md`; with `expect` (the bytes read before, None: there was no file) the
    file is only replaced while it still holds them, and False says it did not (a person
    saved it meanwhile: read it again)."""
    records = listed(mem.store.list_memories(scope), mem.clock())  # the manifest holds exactly what the file does
    token = secrets.token_hex(8)
    text = render_memory_md(records, now=mem.clock(), archive_below=mem.config.policy.archive_below, token=token)
    data = text.encode("utf-8", "replace")  # a lone surrogate must not fail the write
    # manifest before file: a crash in between leaves the old file, whose manifest is still kept
    save_manifest(mem, scope, token, records, file_hash(data))
    if isinstance(expect, _Unread):
        backup = _backup_text(mem, scope, target, {m.id for m in records})
        if backup is not None:
            atomic_write(target.with_name(target.name + ".bak"), backup)
        atomic_write(target, data)
        return True
    if expect is not None:
        atomic_write(target.with_name(target.name + ".bak"), _backup_of(mem, scope, expect, {m.id for m in records}))
    try:
        return _swap_in(target, data, expect)
    except OSError as exc:
        raise BackendError(f"cannot write {target}: {exc}; check the directory's permissions and free space") from exc


def _swap_in(target: Path, data: bytes, expect: bytes | None) -> bool:
    """Put `data` at `target` unless the file no longer holds `expect`, never losing a version
    a person saved in between: a new file is linked in only if none appeared; an existing one
    is exchanged atomically with ours (Linux `renameat2`), and when what came out is not what
    we read, exchanged back. Where the exchange is not supported, the check and the replace
    leave a window of microseconds."""
    tmp = atomicfile.temp_copy(target, data)
    try:
        if expect is None:
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            return True
        try:
            swapped = _exchange(tmp, str(target))
        except FileNotFoundError:  # the file was removed since it was read: read again
            return False
        if swapped:
            if Path(tmp).read_bytes() == expect:
                return True
            if not _exchange(tmp, str(target)):  # pragma: no cover - worked a moment ago
                raise OSError(errno.EIO, "cannot exchange back", str(target))
            return False
        if _read(target) != expect:
            return False
        os.replace(tmp, target)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
try:
    _renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
except OSError:  # pragma: no cover - no C library to load
    _renameat2 = None


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths; False where the system cannot."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    if err == errno.ENOENT:
        raise FileNotFoundError(err, os.strerror(err), b)
    raise OSError(err, os.strerror(err), b)


def can_exchange(directory: Path) -> bool:
    """Whether `directory`'s file system swaps files atomically (see `_swap_in`)."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as d:
        a, b = Path(d, "a"), Path(d, "b")
        a.write_bytes(b"a")
        b.write_bytes(b"b")
        return _exchange(str(a), str(b))


def _backup_text(mem: Parts, scope: Scope, target: Path, live: set[str]) -> str | bytes | None:
    """The current file for `.bak`, minus entries of memories that were deleted: a backup
    must not bring forgotten text back. A file that is not UTF-8 is kept byte for byte."""
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BackendError(f"cannot read {target} to back it up: {exc}") from exc
    return _backup_of(mem, scope, raw, live)


def _backup_of(mem: Parts, scope: Scope, raw: bytes, live: set[str]) -> str | bytes:
    try:
        old = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    file = parse_memory_md(old)
    ids = {e.id for e in file.entries if e.id} | {s.id for s in file.skipped if s.id}
    gone = {i for i in ids - live if mem.store.events(scope, i, limit=1)}
    return remove_entries(old, gone) if gone else old


def remove_entries(text: str, ids: set[str]) -> str:
    """`text` without the `### [id] …` blocks of `ids` (a heading ends a block)."""
    out: list[str] = []
    dropping = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if (m := _ENTRY.match(line)) is not None:
            head = _ID_HEAD.match(m.group(1) or "")
            dropping = head is not None and head.group(1).strip() in ids
        elif _SECTION.match(line) is not None:
            dropping = False
        if not dropping:
            out.append(line)
    return "\n".join(out)
