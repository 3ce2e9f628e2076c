"""A folder of markdown notes (Obsidian, basic-memory, any `.md` files): memories, not turns.

Each note: YAML-style front matter between `---` lines (title, tags, aliases, dates are kept;
read by a small parser of `key: value`, `key: [a, b]` and `- item` lists, never by a YAML
engine that could build objects), then the body split at its headings. In each section every
bullet (`-`, `*`, `+`, `1.`, a task `- [ ]`) is one memory, with its indented continuation
lines; a section without bullets is one memory of its text. basic-memory's observations
(`- [preference] likes green tea #tea`) give their category when the profile has it, and
`#tags` anywhere become tags. Dates: the front matter's created / date and updated /
modified, else the file's modification time. Folders whose name starts with "." (`.obsidian`,
`.git`) are not read.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlane.errors import ValidationError
from memlane.importers import read_text
from memlane.importing.common import MemoryItem, Parsed, Skipped, clean, when

SOURCE = "markdown"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_OBSERVATION = re.compile(r"^\[([^\]\n]{1,40})\]\s+(.*)$")
_TAG = re.compile(r"(?:^|\s)#([\w/-]{1,60})", re.UNICODE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_KEEP = ("title", "tags", "aliases", "type", "permalink")
_CREATED = ("created", "date", "created_at")
_UPDATED = ("updated", "modified", "updated_at", "last_modified")


def note_files(root: Path, max_bytes: int) -> list[Path]:
    """The `.md` files under `root` (or `root` itself), sorted; their sizes together within
    `max_bytes` (store.max_import_bytes)."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise ValidationError("file", f"{root} does not exist")
    files = sorted(p for p in root.rglob("*.md") if p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(root).parts[:-1]))
    if not files:
        raise ValidationError("file", f"{root} holds no .md file")
    total = sum(p.stat().st_size for p in files)
    if total > max_bytes:
        raise ValidationError("file", f"{root}'s notes are {total} bytes; the limit is {max_bytes} "
                                      "(store.max_import_bytes)")
    return files


def parse_folder(root: Path, max_bytes: int, categories: list[str], max_chars: int) -> Parsed:
    out = Parsed()
    inside = root.resolve()
    for path in note_files(root, max_bytes):
        name = path.name if root.is_file() else path.relative_to(root).as_posix()
        if not root.is_file() and not path.resolve().is_relative_to(inside):
            # a link out of the folder (as its linked folders are not walked): what is imported
            # is what the folder holds, not a file elsewhere on the machine it points at
            out.skipped.append(Skipped(name, "a link to a file outside the folder: not read"))
            continue
        try:
            text = read_text(path, max_bytes)
        except ValidationError as exc:
            out.skipped.append(Skipped(name, str(exc)))
            continue
        mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        parse_note(text, name, mtime, categories, max_chars, out)
    return out


def parse_note(text: str, name: str, mtime: datetime, categories: list[str], max_chars: int, out: Parsed) -> None:
    """One note's memories into `out` (a bad entry is skipped and named: file and line)."""
    text = clean(text.replace("\r\n", "\n"))
    front, body, first = front_matter(text)
    created = _date(front, _CREATED, name, out) or mtime
    updated = _date(front, _UPDATED, name, out) or max(created, mtime)
    kept = {k: front[k] for k in _KEEP if k in front}
    note_tags = _as_list(front.get("tags"))
    title = front.get("title") if isinstance(front.get("title"), str) else Path(name).stem
    for line, section, entry in _entries(body, first):
        where = f"{name} line {line}"
        category = None
        obs = _OBSERVATION.match(entry)
        if obs and obs.group(1).strip().lower() in categories:
            category, entry = obs.group(1).strip().lower(), obs.group(2)
        tags = [*note_tags, *(t for t in _TAG.findall(entry) if t not in note_tags)]
        content = entry.strip()
        if not content:
            continue
        if len(content) > max_chars:
            out.skipped.append(Skipped(where, f"is {len(content)} characters; a memory holds at most {max_chars} "
                                              "(store.max_content_chars): split it"))
            continue
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:24]
        md: dict[str, Any] = {"source": SOURCE, "note": name, "note_title": title, "line": line,
                              **({"section": section} if section else {}), **({"tags": tags} if tags else {}),
                              **({"front_matter": kept} if kept else {})}
        out.memories.append(MemoryItem(content, f"{SOURCE}:{name}:{digest}", category, created, updated,
                                       metadata=md, where=where))


def front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """(front matter, the body, the body's first line number). No closing `---`: no front matter."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 1
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return _fields(lines[1:end]), "\n".join(lines[end + 1:]), end + 2
    return {}, text, 1


def _fields(lines: list[str]) -> dict[str, Any]:
    """`key: value`, `key: [a, b]`, and `key:` followed by `- item` lines; anything else
    (nested maps, multi-line strings) is not read."""
    out: dict[str, Any] = {}
    key = None
    for raw in lines:
        item = re.match(r"^\s+-\s+(.*)$", raw) or re.match(r"^-\s+(.*)$", raw)
        if item and key is not None and isinstance(out.get(key), list):
            out[key].append(_scalar(item.group(1)))
            continue
        m = re.match(r"^([A-Za-z_][\w-]{0,60})\s*:\s*(.*)$", raw)
        if not m:
            continue
        key, value = m.group(1).lower(), m.group(2).strip()
        if not value:
            out[key] = []
        elif value.startswith("[") and value.endswith("]"):
            out[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            out[key] = _scalar(value)
    return out


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t.strip().lstrip("#") for t in re.split(r"[,\s]+", value) if t.strip()]
    return [str(t).lstrip("#") for t in value if str(t).strip()] if isinstance(value, list) else []


def _date(front: dict[str, Any], keys: tuple[str, ...], name: str, out: Parsed) -> datetime | None:
    for k in keys:
        if isinstance(front.get(k), str) and front[k]:
            try:
                return when(front[k], f"{name}: front matter {k}")
            except ValidationError as exc:
                out.skipped.append(Skipped(f"{name}: front matter {k}", f"{exc}; the file's time is used"))
    return None


def _entries(body: str, first: int) -> list[tuple[int, str, str]]:
    """(line, section heading, text) of every bullet, and of each bullet-less section."""
    found: list[tuple[int, str, str]] = []
    section, text_start, has_bullets = "", 0, False
    text_lines: list[str] = []
    bullet: list[Any] | None = None  # [line, indent, text]
    fenced = False

    def close_section() -> None:
        text = "\n".join(text_lines).strip()
        if text and not has_bullets:
            found.append((text_start, section, text))

    for n, line in enumerate(body.split("\n"), first):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading:
            close_section()
            section, text_lines, text_start, has_bullets, bullet = heading.group(2).strip(), [], 0, False, None
            continue
        b = None if fenced else _BULLET.match(line)
        if b:
            has_bullets = True
            bullet = [n, len(b.group(1)), b.group(2).strip()]
            found.append((n, section, bullet[2]))
            continue
        if bullet is not None and line.strip() and (len(line) - len(line.lstrip())) > bullet[1]:
            bullet[2] += " " + line.strip()  # a bullet's continuation line
            found[-1] = (bullet[0], section, bullet[2])
            continue
        bullet = None
        if line.strip() or text_lines:
            text_start = text_start or n
            text_lines.append(line)
    close_section()
    return found
