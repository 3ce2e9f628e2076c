"""The `memlane` command: readable tables by default, `--json` for machines.

Errors memlane raises on purpose print one line and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from memlane.api import Memory
from memlane.config import PROFILES, Config
from memlane.errors import MemlaneError
from memlane.importers import read_file
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

UserOpt = Annotated[str, typer.Option("--user", "-u", envvar="MEMLANE_USER", help="Whose memory (user_id).")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id within the user's scope.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
_state: dict[str, Any] = {"home": None, "profile": None, "embedder": None}


@app.callback()
def _global(
    home: Annotated[Path | None, typer.Option("--home", envvar="MEMLANE_HOME", help="Data directory.")] = None,
    profile: Annotated[str | None, typer.Option("--profile", envvar="MEMLANE_PROFILE",
                                                help=f"One of: {', '.join(PROFILES)}.")] = None,
    embedder: Annotated[str | None, typer.Option("--embedder", envvar="MEMLANE_EMBEDDER",
                                                 help="e5 (default), hash, openai, minilm, use.")] = None,
) -> None:
    _state.update(home=home, profile=profile, embedder=embedder)


def _config(home: Path | None = None) -> Config:
    overrides: dict[str, Any] = {}
    home = home or _state["home"]
    if home is not None:
        overrides["store"] = {"home": str(home)}
    if _state["embedder"]:
        overrides["embedding"] = {"provider": _state["embedder"]}
    if _state["profile"]:
        overrides["profile"] = _state["profile"]
    return Config.from_env(**overrides)


@contextmanager
def _memory(home: Path | None = None, *, background: bool = False) -> Iterator[Memory]:
    cfg = _config(home)
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


def _memory_table(mems: Sequence[MemoryRecord], title: str = "Memories") -> Table:
    table = Table(title=title, show_lines=False)
    for col in ("id", "category", "score", "status", "hits", "last activated", "content"):
        table.add_column(col, overflow="fold")
    for m in mems:
        table.add_row(m.id, m.category, f"{m.score:.2f}", m.status + (" 📌" if m.pinned else ""),
                      str(m.activation_count), _short(m.last_activated), m.content)
    return table


def _hit_table(hits: Sequence[Hit], title: str) -> Table:
    table = Table(title=title)
    for col in ("#", "score", "source", "content"):
        table.add_column(col, overflow="fold")
    for i, h in enumerate(hits, 1):
        table.add_row(str(i), f"{h.score:.3f}", h.source, h.content)
    return table


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err, transient=True)


def _parse_time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{name}: not an ISO date/time such as 2026-11-01 or 2026-11-01T09:00") from None


# ---- commands ---------------------------------------------------------------------------


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="What to remember.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    category: Annotated[str | None, typer.Option("--category", "-c", help="A category of the profile.")] = None,
    importance: Annotated[str | None, typer.Option("--importance", "-i", help="high, medium, low or 0–1.")] = None,
    pinned: Annotated[bool, typer.Option("--pin", help="Core memory: never decays.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Store one memory.

    Example: memlane add "用户对花生过敏" --user lin --category fact --importance high
    """
    with _memory() as mem:
        rec = mem.add(content, user_id=user, agent_id=agent, category=category, importance=importance, pinned=pinned)
    if as_json:
        _emit_json(rec)
    else:
        out.print(f"added [bold]{rec.id}[/] ({rec.category}, score {rec.score:.2f})")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (any language).")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 10,
    corpus: Annotated[str, typer.Option("--in", help="memories, turns or episodes.")] = "memories",
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search (full text + vectors) of memories, conversation turns or episodes.

    Example: memlane search "过敏" --user lin      memlane search "conference" --in turns
    """
    with _memory() as mem:
        mem.flush()
        filters = {"category": category} if category else None
        hits = mem.search(query, user_id=user, agent_id=agent, limit=limit, corpus=corpus, filters=filters)  # type: ignore[arg-type]
    if as_json:
        _emit_json(hits)
    elif hits:
        out.print(_hit_table(hits, f"{corpus} matching {query!r}"))
    else:
        out.print(f"no {corpus} match {query!r}")


@app.command("list")
def list_(
    user: UserOpt = "default",
    agent: AgentOpt = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    status: Annotated[str | None, typer.Option("--status", help="active or archived.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Memories from this session.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Created at or after (ISO).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Created at or before (ISO).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0)] = None,
    as_json: JsonOpt = False,
) -> None:
    """List memories, best score first.

    Example: memlane list --user lin --category preference --status active
    """
    with _memory() as mem:
        mems = mem.list(user_id=user, agent_id=agent, category=category, status=status, session_id=session,
                        since=_parse_time(since, "--since"), until=_parse_time(until, "--until"), limit=limit)
    if as_json:
        _emit_json(mems)
    else:
        out.print(_memory_table(mems, f"Memories of {user}") if mems else "no memories")


@app.command()
def show(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one memory with all its fields.

    Example: memlane show 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        rec = mem.get(memory_id, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(rec)
        return
    table = Table(show_header=False, title=f"memory {rec.id}")
    for key, value in rec.model_dump(mode="json").items():
        table.add_row(key, json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value))
    out.print(table)


@app.command()
def edit(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    content: Annotated[str | None, typer.Option("--content", help="New text (re-embedded).")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    importance: Annotated[str | None, typer.Option("--importance", "-i")] = None,
    pin: Annotated[bool | None, typer.Option("--pin/--unpin")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory; the change is audited.

    Example: memlane edit 3f9a1c2b7d --content "用户对花生和腰果过敏" --user lin
    """
    with _memory() as mem:
        rec = mem.update(memory_id, user_id=user, agent_id=agent, content=content, category=category,
                         importance=importance, pinned=pin)
    if as_json:
        _emit_json(rec)
    else:
        out.print(f"updated [bold]{rec.id}[/]: {rec.content}")


@app.command()
def delete(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a memory with its index entries; its history stays.

    Example: memlane delete 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        rec = mem.delete(memory_id, user_id=user, agent_id=agent, actor="cli")
    if as_json:
        _emit_json({"deleted": rec.id, "content": rec.content})
    else:
        out.print(f"deleted [bold]{rec.id}[/]: {rec.content}")


@app.command()
def history(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The audit trail of one memory: every ADD, UPDATE, BOOST, DELETE ...

    Example: memlane history 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        events = mem.history(memory_id, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(events)
        return
    table = Table(title=f"history of {memory_id}")
    for col in ("when", "event", "actor", "score", "content / reason"):
        table.add_column(col, overflow="fold")
    for e in events:
        state = e.after or e.before or {}
        table.add_row(_short(e.created_at), e.kind, e.actor, f"{state.get('score', 0):.2f}",
                      (state.get("content") or "") + (f"  ({e.reason})" if e.reason else ""))
    out.print(table)


@app.command()
def stats(user: UserOpt = "default", agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """Counts of what a scope holds, and the database size.

    Example: memlane stats --user lin --json
    """
    with _memory() as mem:
        s = mem.stats(user_id=user, agent_id=agent)
    if as_json:
        _emit_json(s)
        return
    table = Table(show_header=False, title=f"memlane stats for {user}")
    for key, value in s.model_dump().items():
        table.add_row(key, json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value))
    out.print(table)


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="LoCoMo JSON, OpenAI-messages JSON or JSONL.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import a conversation file as turns (all or nothing), then embed it with a progress bar.

    Example: memlane import chat.jsonl --user lin
    """
    with _memory() as mem:
        convs = read_file(path, mem.config.store.max_import_bytes)
        total = sum(len(c.messages) for c in convs)
        n, embedded = _import_with_progress(mem, convs, total, user, agent)
    result = {"file": str(path), "sessions": len(convs), "turns": n, "embedded": embedded}
    if as_json:
        _emit_json(result)
    else:
        out.print(f"imported {n} turns in {len(convs)} sessions from {path} ({embedded} embedded)")


def _import_with_progress(mem: Memory, convs: Sequence[Any], total: int, user: str,
                          agent: str | None) -> tuple[int, int]:
    with _progress() as bar:
        task = bar.add_task("storing turns", total=total)
        n = mem.import_conversations(convs, user_id=user, agent_id=agent,
                                     progress=lambda k: bar.advance(task, k))
        emb = bar.add_task("embedding", total=total)
        embedded = mem.flush(progress=lambda k: bar.advance(emb, k))
    return n, embedded


@app.command()
def demo(
    home: Annotated[Path | None, typer.Option("--home", help="Keep the demo data here (default: a temp dir).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import a bundled Chinese + English conversation into a fresh data dir and search it.

    Example: memlane demo
    """
    from memlane.importers import parse

    data = json.loads(resources.files("memlane.data").joinpath("sample_conversation.json").read_text("utf-8"))
    target = home or Path(tempfile.mkdtemp(prefix="memlane-demo-"))
    user = "lin"
    report: dict[str, Any] = {"home": str(target), "searches": []}
    with _memory(target) as mem:
        convs = parse(data, "sample_conversation.json")
        total = sum(len(c.messages) for c in convs)
        n, _ = _import_with_progress(mem, convs, total, user, None)
        report["turns"] = n
        report["sessions"] = [s.model_dump(mode="json") for s in mem.sessions(user_id=user)]
        report["memories"] = mem.list(user_id=user)
        for q in data["questions"]:
            report["searches"].append({
                "query": q,
                "memories": mem.search(q, user_id=user, limit=3, activate=False),
                "turns": mem.search(q, user_id=user, limit=3, corpus="turns"),
            })
        report["stats"] = mem.stats(user_id=user)
    if as_json:
        _emit_json(report)
        return
    _print_demo(report)


def _print_demo(report: dict[str, Any]) -> None:
    out.rule("[bold]memlane demo")
    out.print(f"data directory: {report['home']}  (no server, no API key, embedder: {report['stats'].embedder})")
    sessions = Table(title="Stored conversation")
    for col in ("session", "started", "turns"):
        sessions.add_column(col)
    for s in sorted(report["sessions"], key=lambda s: s["started_at"]):
        sessions.add_row(s["id"], s["started_at"][:16], str(s["message_count"]))
    out.print(sessions)
    if report["memories"]:
        out.print(_memory_table(report["memories"], "Memories"))
    for s in report["searches"]:
        if s["memories"]:
            out.print(_hit_table(s["memories"], f"search memories: {s['query']}"))
        out.print(_hit_table(s["turns"], f"search conversation: {s['query']}"))


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: MemlaneError → one line on stderr, exit 1."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="memlane")
    except MemlaneError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(1)


