"""Commands on memories and conversation turns: add, search, list, show, edit, delete, restore, undo,
history, stats, import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from memlane.cli.common import (
    AgentOpt,
    JsonOpt,
    UserOpt,
    _emit_json,
    _hit_table,
    _import_with_progress,
    _memory,
    _memory_table,
    _parse_time,
    _short,
    app,
    out,
)
from memlane.importers import read_file
from memlane.portable import is_export


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
        # a person typed it: verified by the user (seed 003)
        rec = mem.add(content, user_id=user, agent_id=agent, category=category, importance=importance,
                      pinned=pinned, verified=True)
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
    min_score: Annotated[float, typer.Option("--min-score", min=0.0, max=1.0,
                                             help="Drop hits less relevant than this (0-1).")] = 0.0,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search (full text + vectors) of memories, conversation turns or episodes.

    Example: memlane search "过敏" --user lin      memlane search "conference" --in turns
    """
    with _memory() as mem:
        mem.flush()
        filters = {"category": category} if category else None
        hits = mem.search(query, user_id=user, agent_id=agent, limit=limit, corpus=corpus, filters=filters,  # type: ignore[arg-type]
                          min_score=min_score)
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
    hard: Annotated[bool, typer.Option("--hard", help="Also scrub its text from the audit trail (no undo).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete a memory: its text leaves every index, cache and file; its history stays for
    an undo unless --hard.

    Example: memlane delete 3f9a1c2b7d --user lin      memlane delete 3f9a1c2b7d --user lin --hard
    """
    with _memory() as mem:
        rec = mem.delete(memory_id, user_id=user, agent_id=agent, actor="cli", hard=hard)
    if as_json:
        _emit_json({"deleted": rec.id, "content": rec.content})
    else:
        out.print(f"deleted [bold]{rec.id}[/]: {rec.content}")


@app.command()
def restore(
    memory_id: Annotated[str, typer.Argument(help="The deleted memory's id (`memlane history` still shows it).")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring a deleted memory back from the audit trail, under the same id.

    Example: memlane restore 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        rec = mem.restore(memory_id, user_id=user, agent_id=agent, actor="cli")
    if as_json:
        _emit_json(rec)
    else:
        out.print(f"restored [bold]{rec.id}[/] ({rec.category}, score {rec.score:.2f}): {rec.content}")


@app.command()
def undo(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt = "default",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revert a memory's last change: a deletion is restored, an addition removed, an edit
    rolled back. Run it again to redo.

    Example: memlane undo 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        event = mem.undo(memory_id, user_id=user, agent_id=agent, actor="cli")
    if as_json:
        _emit_json(event)
    else:
        state = event.after or event.before or {}
        out.print(f"{event.kind} [bold]{memory_id}[/] ({event.reason}): {state.get('content', '')}")


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
    """Import a conversation file as turns (all or nothing), then embed it with a progress bar;
    importing the same file again skips the turns already stored. A `memlane export` JSONL
    file restores the whole scope into --user.

    Example: memlane import chat.jsonl --user lin
    """
    if is_export(path):  # a `memlane export` file: the whole scope, not a conversation
        from memlane.cli.files import import_scope_export  # registered after the everyday commands

        import_scope_export(path, user, agent, as_json)
        return
    with _memory() as mem:
        convs = read_file(path, mem.config.store.max_import_bytes)
        total = sum(len(c.messages) for c in convs)
        done, embedded = _import_with_progress(mem, convs, total, user, agent)
    result = {"file": str(path), "sessions": len(convs), "turns": done.turns, "skipped": done.skipped,
              "embedded": embedded}
    if as_json:
        _emit_json(result)
    else:
        again = f"; {done.skipped} already imported, skipped" if done.skipped else ""
        out.print(f"imported {done.turns} turns in {len(convs)} sessions from {path} ({embedded} embedded{again})")
