"""What every `memlane` command shares: the app, global options, output helpers.

Errors memlane raises on purpose print one line and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from memlane import supersession, validate
from memlane.api import Memory
from memlane.config import PROFILES, Config
from memlane.errors import ConfigError, ValidationError
from memlane.importers import ConversationImport
from memlane.models import Hit, MemoryRecord

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="memlane: long-term memory for LLM agents. Data lives in MEMLANE_HOME (default ~/.memlane).",
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

# required: a forgotten --user must not quietly write into someone else's memory
UserOpt = Annotated[str, typer.Option("--user", "-u", envvar="MEMLANE_USER", show_envvar=True,
                                      help="Whose memory (user_id); required, or set MEMLANE_USER.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id within the user's scope.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
_state: dict[str, Any] = {"home": None, "profile": None, "embedder": None}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            out.print(f"memlane {version('memlane')}", highlight=False)
        except PackageNotFoundError:  # run from a source tree that was never installed
            out.print("memlane (not installed)", highlight=False)
        raise typer.Exit()


@app.callback()
def _global(
    # no envvar= here: Config.from_env reads MEMLANE_HOME / _PROFILE / _EMBEDDER itself, so
    # `memlane config` can tell a flag from the environment
    home: Annotated[Path | None, typer.Option("--home", help="Data directory (else MEMLANE_HOME, else ~/.memlane).")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help=f"One of: {', '.join(PROFILES)} "
                                                "(else MEMLANE_PROFILE, else memlane.toml's).")] = None,
    embedder: Annotated[str | None, typer.Option("--embedder", help="e5 (default), hash, openai, minilm, use "
                                                 "(else MEMLANE_EMBEDDER).")] = None,
    _show_version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print memlane's version and exit.")] = False,
) -> None:
    _state.update(home=home, profile=profile, embedder=embedder)


def _config(home: Path | None = None) -> Config:
    """The configuration every command runs with: as `open_memory(home)` resolves it, with the
    global --home / --profile / --embedder flags as arguments (they win over memlane.toml)."""
    overrides: dict[str, Any] = {}
    if _state["embedder"]:
        overrides["embedding"] = {"provider": _state["embedder"]}
    if _state["profile"]:
        overrides["profile"] = _state["profile"]
    try:
        return Config.from_env(home=home or _state["home"], **overrides)
    except OSError as exc:  # memlane.toml is a directory, or unreadable
        raise ConfigError(f"cannot read {exc.filename}: {exc.strerror}; fix or remove the file") from exc


def _store_config(home: Path | None = None) -> Config:
    """`_config()` for a command that opens the store: the data directory checked first, so a
    file there, a path that cannot be created or written, or a memlane.db that is no database
    is one line saying what to do, not a traceback from deep inside the store."""
    cfg = _config(home)
    source = cfg.sources.get("store.home", "default")
    where = {"argument": "--home", "env MEMLANE_HOME": "MEMLANE_HOME", "default": "the default"}.get(source, source)
    _usable_dir(cfg.home, f"data directory {cfg.home} (from {where})",
                "point --home or MEMLANE_HOME at a directory you can write (a missing one is created)")
    if cfg.store.backend == "sqlite":
        _sqlite_file(cfg.db_path, "move it away or choose another --home")
    return cfg


def _usable_dir(path: Path, what: str, fix: str) -> None:
    """A directory memlane can write in, made if missing; else a ConfigError naming `what`."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 in the path: SQLite cannot open it
        raise ConfigError(f"{what}: the path is not UTF-8 text; {fix}") from None
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} is a file, not a directory; {fix}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {what}: {exc.strerror}; {fix}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} is not writable; {fix}")


_SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def _sqlite_file(path: Path, fix: str) -> None:
    """Nothing, a new (empty) file, or a SQLite database at `path`; else a ConfigError."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:  # a directory of that name, no permission
        raise ConfigError(f"cannot open the database {path}: {exc.strerror}; {fix}") from exc
    if head and head != _SQLITE_HEADER:
        raise ConfigError(f"{path} is not a SQLite database; {fix}")


def _confirm(question: str, command: str) -> bool:
    """Ask on the terminal. Without one (a pipe, cron, CI) there is no one to answer: say to
    pass --yes (exit 1, as a refusal), rather than read end-of-file and report "interrupted"."""
    if not sys.stdin.isatty():
        raise ValidationError("--yes", f"`memlane {command}` asks for confirmation, which needs a terminal; "
                                       "pass --yes to confirm non-interactively")
    return typer.confirm(question)


def _category(mem: Memory, category: str | None) -> str | None:
    """A --category the profile knows, or a usage error naming the ones it does."""
    if category is not None and category not in mem.config.policy.categories:
        raise typer.BadParameter(f"{category!r} is not a category of profile {mem.config.profile}; "
                                 f"choose one of {', '.join(mem.config.policy.categories)}",
                                 param_hint="--category")
    return category


def _fit(text: str, width: int) -> str:
    """One line of at most `width` characters, cut at a word where there is one, with …"""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: width - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > width // 2 else cut).rstrip() + "…"


@contextmanager
def _memory(home: Path | None = None, *, background: bool = False) -> Iterator[Memory]:
    cfg = _store_config(home)
    cfg.embedding.background = background  # one-shot commands embed in line, then exit
    mem = Memory(cfg)
    try:
        yield mem
    finally:
        mem.close()


def _emit_json(data: Any) -> None:
    def conv(x: Any) -> Any:
        if isinstance(x, BaseModel):
            return x.model_dump(mode="json", exclude_none=True)
        if isinstance(x, list):
            return [conv(i) for i in x]
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        return x

    sys.stdout.write(json.dumps(conv(data), ensure_ascii=False, indent=2) + "\n")


def _short(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t else ""


def _validity(m: MemoryRecord | None) -> str:
    """When a fact that changed held, compactly ("  (since 2024-03-15)", "  (2019-06-01 –
    2024-03-15)"); nothing for a memory that never changed (issue 32)."""
    if m is None or not (m.supersedes or m.superseded_by or m.status == "superseded"):
        return ""
    return f"  [dim]({escape(supersession.span(m))})[/]"


def _memory_table(mems: Sequence[MemoryRecord], title: str = "Memories") -> Table:
    """id, category, score and content: at 80 columns content keeps about half the width
    (`show` and `--json` give every field)."""
    table = Table(title=title, show_lines=False)
    for col in ("id", "category", "score"):
        table.add_column(col, no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1)
    for m in mems:
        # ✓: a person confirmed it; an unmarked agent's or extractor's memory still fades
        mark = "📌" if m.pinned else (m.status if m.status != "active" else "✓" if m.verified else "")
        table.add_row(m.id, m.category, f"{m.score:.2f}" + (f" {mark}" if mark else ""),
                      escape(m.content) + _validity(m))
    return table


def _hit_table(hits: Sequence[Hit], title: str) -> Table:
    table = Table(title=title)
    for col in ("#", "score", "source", "content"):
        table.add_column(col, overflow="fold")
    for i, h in enumerate(hits, 1):
        replaced = " [dim]superseded[/]" if h.memory is not None and h.memory.status == "superseded" else ""
        table.add_row(str(i), f"{h.score:.3f}", h.source, escape(h.content) + _validity(h.memory) + replaced)
    return table


def _progress() -> Progress:
    # no bar where no one watches (a pipe, a log): it would leave only a blank line there
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err, transient=True, disable=not err.is_terminal)


def _parse_time(value: str | None, name: str) -> datetime | None:
    """An ISO date or time; a year ("2024") or a month ("2024-03") is its first day, as a
    person says when a fact changed ("since March 2024"): `validate.when`, as REST and MCP."""
    if value is None:
        return None
    try:
        return validate.when(name, value)
    except ValidationError as exc:
        raise typer.BadParameter(str(exc)) from None


# ---- commands ---------------------------------------------------------------------------


def _import_with_progress(mem: Memory, convs: Sequence[Any], total: int, user: str,
                          agent: str | None) -> tuple[ConversationImport, int]:
    with _progress() as bar:
        task = bar.add_task("storing turns", total=total)
        # embed=False: the vectors are made below, where the bar can follow them
        n = mem.import_conversations(convs, user_id=user, agent_id=agent, embed=False,
                                     progress=lambda k: bar.advance(task, k))
        emb = bar.add_task("embedding", total=total)
        embedded = mem.flush(progress=lambda k: bar.advance(emb, k))
    return n, embedded


def _extract_sessions(mem: Memory, sessions: Sequence[tuple[str, str]], agent: str | None) -> list[dict[str, Any]]:
    """`Memory.extract` on each (user, session), now, with a progress bar; one row a session."""
    rows: list[dict[str, Any]] = []
    with _progress() as bar:
        task = bar.add_task("extracting", total=len(sessions))
        for user, sid in sessions:
            job = mem.extract(sid, user_id=user, agent_id=agent)
            rows.append({"user": user, "session": sid, "status": job.status, "extractor": job.extractor,
                         "added": len(job.added), "updated": len(job.updated) + len(job.reinforced),
                         "deleted": len(job.deleted), "error": job.error})
            bar.advance(task)
    return rows


def _print_extraction(rows: Sequence[dict[str, Any]]) -> None:
    added = sum(r["added"] for r in rows)
    failed = [r for r in rows if r["error"]]
    out.print(f"extracted {added} memories from {len(rows)} session(s)"
              + (f"; {len(failed)} queued for retry: {failed[0]['error']}" if failed else ""), highlight=False)
