"""Importers of other tools' exports (issue 33): ChatGPT, Claude.ai, mem0, Letta agent files and
a folder of markdown notes. `Memory.import_from` is the entry; docs/importing.md says which
fields each format's reader takes.

Every import is a plan first (`parse`: conversations and memories, and the records skipped
with why), then stored (`store`) — or, on a dry run, only counted:

- turns go through `ingest.import_conversations`, one conversation at a time, so a bad one is
  skipped and named while the rest land; each message's import key (format, session, place,
  role, text) makes a second run add nothing;
- memories are inserted with their source times, audited as ADD (actor "import", source
  "import"), each keyed in its metadata (`import_key`), so a second run adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import validate
from memlane.errors import ValidationError
from memlane.importing import chatgpt, claude, letta, mem0, notes
from memlane.importing.common import Parsed, Skipped, load_json
from memlane.importing.store import store_parsed
from memlane.models import Scope

if TYPE_CHECKING:
    from memlane.parts import Importing

FORMATS = ("chatgpt", "claude", "mem0", "letta", "markdown")


@dataclass
class ImportReport:
    """What an import did, or (dry_run) would do."""

    format: str
    file: str
    user_id: str
    agent_id: str
    dry_run: bool
    sessions: int = 0  # sessions that got (or would get) turns
    turns: int = 0  # turns added (or that would be)
    memories: int = 0  # memories added (or that would be)
    already: int = 0  # turns and memories an earlier import stored: not added again
    skipped: list[Skipped] = field(default_factory=list)  # bad records, another user's: named, not imported
    preview: list[str] = field(default_factory=list)  # the first few items added (or that would be)
    session_ids: list[str] = field(default_factory=list)  # the sessions that got new turns
    # the file's sessions an earlier import stored whole: a re-run after one was killed still
    # extracts them (extraction takes only turns not yet extracted, so this costs nothing twice)
    stored_ids: list[str] = field(default_factory=list)
    extraction_jobs: int = 0  # extraction jobs queued for them (extract=True)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect(path: Path, data: Any) -> str:
    """The format of an unambiguous file; else a ValidationError asking for `--from`."""
    if path.is_dir() or path.suffix.lower() in (".md", ".markdown"):
        return "markdown"
    found = [name for name, mod in (("chatgpt", chatgpt), ("claude", claude), ("mem0", mem0), ("letta", letta))
             if mod.looks_like(data)]
    if len(found) == 1:
        return found[0]
    raise ValidationError("format", f"{path}: cannot tell the format{' (' + ' or '.join(found) + ')' if found else ''}; "
                                    f"name it: one of {', '.join(FORMATS)}")


def parse(mem: Importing, path: Path, fmt: str | None, *, user_id: str, source_user: str | None = None) -> tuple[str, Parsed]:
    """(format, what the file holds). Errors about the whole file raise; bad records are skipped."""
    cfg = mem.config.store
    policy = mem.config.policy
    if fmt is not None and fmt not in FORMATS:
        raise ValidationError("format", f"must be one of {', '.join(FORMATS)}, got {str(fmt)[:40]!r}")
    if fmt == "markdown" or (fmt is None and (path.is_dir() or path.suffix.lower() in (".md", ".markdown"))):
        return "markdown", notes.parse_folder(path, cfg.max_import_bytes, policy.categories, cfg.max_content_chars)
    if path.is_dir():
        raise ValidationError("file", f"{path} is a directory; only --from markdown reads a folder")
    data = load_json(path, cfg.max_import_bytes)
    fmt = fmt or detect(path, data)
    origin = path.name
    if fmt == "chatgpt":
        return fmt, chatgpt.parse(data, origin, cfg.import_part_chars)
    if fmt == "claude":
        return fmt, claude.parse(data, origin, cfg)
    if fmt == "mem0":
        return fmt, mem0.parse(data, origin, user_id, source_user, policy.categories, cfg.import_part_chars)
    return fmt, letta.parse(data, origin, policy.categories, policy.default_category, cfg.max_content_chars,
                            cfg.import_part_chars)


def import_from(mem: Importing, path: str | Path, fmt: str | None, *, user_id: str, agent_id: str | None,
                dry_run: bool = False, source_user: str | None = None, extract: bool = False,
                progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Parse `path` (a file, or a folder of notes) and store what it holds in the scope
    (dry_run: count it only). `progress(done, total)` is called as records are stored."""
    Scope.of(user_id, agent_id)  # the scope's ids checked before the file is read
    validate.boolean("dry_run", dry_run)
    validate.boolean("extract", extract)
    validate.optional_ident("source_user", source_user)
    fmt, parsed = parse(mem, validate.path("path", path), fmt, user_id=user_id, source_user=source_user)
    report = ImportReport(fmt, str(path), user_id, agent_id or "", dry_run, skipped=list(parsed.skipped))
    store_parsed(mem, parsed, report, progress)
    if extract and not dry_run:  # through the usual queue: the worker (or `memlane drain`) runs them
        scope = Scope.of(user_id, agent_id)
        report.extraction_jobs = sum(mem.jobs.enqueue(scope, sid, mem.clock()) is not None
                                     for sid in [*report.session_ids, *report.stored_ids])
    return report
