"""Commands on memories and conversation turns: add, search, list, show, edit, supersede, timeline,
verify, delete, restore, undo, history, stats, import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import TaskID
from rich.table import Table

from memlane import importing, supersession
from memlane.cli.common import (
    AgentOpt,
    JsonOpt,
    UserOpt,
    _category,
    _emit_json,
    _extract_sessions,
    _hit_table,
    _memory,
    _memory_table,
    _parse_time,
    _print_extraction,
    _progress,
    _short,
    _store_config,
    _validity,
    app,
    out,
)
from memlane.errors import MemlaneError
from memlane.importers import read_file
from memlane.importing.common import load_json
from memlane.portable import is_export

_SHOWN_SKIPS = 20  # not from a seed: skipped records printed; --json lists them all


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="What to remember.")],
    user: UserOpt,
    agent: AgentOpt = None,
    category: Annotated[str | None, typer.Option("--category", "-c", help="A category of the profile.")] = None,
    importance: Annotated[str | None, typer.Option("--importance", "-i", help="high, medium, low or 0–1.")] = None,
    pinned: Annotated[bool, typer.Option("--pin", help="Core memory: never decays.")] = False,
    valid_from: Annotated[str | None, typer.Option(
        "--valid-from", help="Since when it holds: 2019-06-01, 2019-06 or 2019 (default: now).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Store one memory.

    Example: memlane add "用户对花生过敏" --user lin --category fact --importance high
    """
    start = _parse_time(valid_from, "--valid-from")
    with _memory() as mem:
        # a person typed it: verified by the user (seed 003)
        rec = mem.add(content, user_id=user, agent_id=agent, category=category, importance=importance,
                      pinned=pinned, verified=True, actor="cli", valid_from=start)
    if as_json:
        _emit_json(rec)
    else:
        out.print(f"added [bold]{rec.id}[/] ({rec.category}, score {rec.score:.2f})")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (any language).")],
    user: UserOpt,
    agent: AgentOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 10,
    corpus: Annotated[str, typer.Option("--in", help="memories, turns or episodes.")] = "memories",
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    min_score: Annotated[float | None, typer.Option(
        "--min-score", min=0.0, max=1.0,
        help="Drop hits less relevant than this (0-1); default: the relevance floor, search.min_relevance. "
             "0 shows every hit found.")] = None,
    as_of: Annotated[str | None, typer.Option(
        "--as-of", help="The facts that held at this date (2024-03-15, 2024-03), replaced ones included.")] = None,
    include_superseded: Annotated[bool, typer.Option(
        "--include-superseded", help="Also facts a newer one replaced (a question about the past finds them "
                                     "anyway).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search (full text + vectors) of memories, conversation turns or episodes.

    Example: memlane search "过敏" --user lin      memlane search "conference" --in turns
    Example: memlane search "where does lin live" --user lin --as-of 2023-06
    """
    when = _parse_time(as_of, "--as-of")
    with _memory() as mem:
        mem.flush()
        filters = {"category": _category(mem, category)} if category else None
        hits = mem.search(query, user_id=user, agent_id=agent, limit=limit, corpus=corpus, filters=filters,  # type: ignore[arg-type]
                          min_score=min_score, as_of=when, include_superseded=include_superseded or None)
    if as_json:
        _emit_json(hits)
    elif hits:
        out.print(_hit_table(hits, f"{corpus} matching {query!r}"))
    else:
        out.print(f"no {corpus} match {query!r}")


@app.command("list")
def list_(
    user: UserOpt,
    agent: AgentOpt = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    status: Annotated[str | None, typer.Option("--status", help="active, archived or superseded (facts a newer "
                                                                "one replaced).")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Memories from this session.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Created at or after (ISO).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Created at or before (ISO).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0)] = None,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many (a page).")] = 0,
    source: Annotated[str | None, typer.Option("--source", help="user, extractor, heuristic, import, agent...")] = None,
    verified: Annotated[bool | None, typer.Option("--verified/--unverified", help="Confirmed by a person or not.")] = None,
    pinned: Annotated[bool | None, typer.Option("--pinned/--unpinned")] = None,
    min_score: Annotated[float | None, typer.Option("--min-score", min=0, max=1)] = None,
    max_score: Annotated[float | None, typer.Option("--max-score", min=0, max=1)] = None,
    sort: Annotated[str, typer.Option("--sort", help="score, updated_at, created_at, last_activated, "
                                                     "activation_count or content.")] = "score",
    ascending: Annotated[bool, typer.Option("--ascending", help="Smallest first.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List memories, best score first, filtered and sorted.

    Example: memlane list --user lin --category preference --status active
    Example: memlane list --user lin --source agent --unverified --sort created_at
    Example: memlane list --user lin --status superseded
    """
    with _memory() as mem:
        mems = mem.list(user_id=user, agent_id=agent, category=_category(mem, category), status=status, session_id=session,
                        since=_parse_time(since, "--since"), until=_parse_time(until, "--until"), limit=limit,
                        offset=offset, source=source, verified=verified, pinned=pinned, min_score=min_score,
                        max_score=max_score, sort=sort, descending=not ascending)
    if as_json:
        _emit_json(mems)
    else:
        out.print(_memory_table(mems, f"Memories of {user}") if mems else "no memories")


@app.command()
def show(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt,
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
    user: UserOpt,
    agent: AgentOpt = None,
    content: Annotated[str | None, typer.Option("--content", help="New text (re-embedded).")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c")] = None,
    importance: Annotated[str | None, typer.Option("--importance", "-i")] = None,
    pin: Annotated[bool | None, typer.Option("--pin/--unpin")] = None,
    verify: Annotated[bool | None, typer.Option("--verify/--unverify", help="Confirm it (it stops fading), "
                                                "or withdraw the confirmation.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory; the change is audited.

    Example: memlane edit 3f9a1c2b7d --content "用户对花生和腰果过敏" --user lin
    """
    if content is None and category is None and importance is None and pin is None and verify is None:
        raise typer.BadParameter("nothing to change: give --content, --category, --importance, --pin/--unpin "
                                 "or --verify/--unverify")
    with _memory() as mem:
        before = mem.get(memory_id, user_id=user, agent_id=agent)
        # values it already holds are no change: an edit that changes nothing is not audited
        content = None if content == before.content else content
        category = None if category == before.category else category
        pin = None if pin == before.pinned else pin
        verify = None if verify == before.verified else verify
        if content is None and category is None and importance is None and pin is None and verify is None:
            raise typer.BadParameter(f"memory {memory_id} already holds these values; nothing changed")
        rec = mem.update(memory_id, user_id=user, agent_id=agent, content=content, category=category,
                         importance=importance, pinned=pin, verified=verify, actor="cli")
    if as_json:
        _emit_json(rec)
    else:
        out.print(f"updated [bold]{rec.id}[/]: {rec.content}")


@app.command()
def supersede(
    memory_id: Annotated[str, typer.Argument(help="The memory whose fact changed.")],
    user: UserOpt,
    content: Annotated[str | None, typer.Argument(help="The fact as it is now (or give --by).")] = None,
    agent: AgentOpt = None,
    by: Annotated[str | None, typer.Option("--by", help="A stored memory that replaces it, instead of new text.")] = None,
    valid_from: Annotated[str | None, typer.Option(
        "--valid-from", help="When the new fact began to hold: 2025-01-15, 2025-01 or 2025 (default: now).")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c", help="The new fact's category (default: "
                                                                         "the old one's).")] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why, for the history.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """The fact changed: the new one replaces the memory, which is kept with when it held (out
    of the prompt and the default search; `memlane timeline` shows both). Use `edit` to correct
    a memory that was wrong all along.

    Example: memlane supersede 3f9a1c2b7d "用户住在柏林" --valid-from 2025-01 --user lin
    Example: memlane supersede 3f9a1c2b7d --by 8e1f0a9c44 --user lin
    """
    start = _parse_time(valid_from, "--valid-from")
    with _memory() as mem:
        rec = mem.supersede(memory_id, content, user_id=user, agent_id=agent, by=by, valid_from=start,
                            category=_category(mem, category), actor="cli", reason=reason)
        old = mem.get(memory_id, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(rec)
    else:
        out.print(f"[bold]{rec.id}[/] {escape(rec.content)}{_validity(rec)} replaces [bold]{old.id}[/] "
                  f"{escape(old.content)}{_validity(old)}")


@app.command()
def timeline(
    memory_id: Annotated[str, typer.Argument(help="Any version of the fact.")],
    user: UserOpt,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every version of a fact that changed, oldest first, with when each held.

    Example: memlane timeline 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        versions = mem.timeline(memory_id, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(versions)
        return
    table = Table(title=f"timeline of {memory_id}")
    for col in ("id", "held", "status", "content"):
        table.add_column(col, overflow="fold", no_wrap=col != "content")
    for m in versions:
        table.add_row(m.id, supersession.span(m), m.status, escape(m.content))
    out.print(table)


@app.command()
def verify(
    memory_id: Annotated[str, typer.Argument(help="The memory's id (`memlane list` shows them).")],
    user: UserOpt,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Confirm a memory as a person: one an agent or an extractor wrote becomes verified and
    stops fading. Audited (actor cli); `memlane edit ID --unverify` takes it back.

    Example: memlane verify 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        before = mem.get(memory_id, user_id=user, agent_id=agent)
        rec = before if before.verified else mem.update(memory_id, user_id=user, agent_id=agent, verified=True,
                                                       actor="cli", reason="confirmed by a person")
    if as_json:
        _emit_json(rec)
    else:
        already = " (already verified)" if before.verified else ""
        out.print(f"verified [bold]{rec.id}[/]{already}: {rec.content}")


@app.command()
def delete(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt,
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
    user: UserOpt,
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
    user: UserOpt,
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
    user: UserOpt,
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
def forecast(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    user: UserOpt,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What the decay policy will do to a memory if nothing touches it again, and when.

    Example: memlane forecast 3f9a1c2b7d --user lin
    """
    with _memory() as mem:
        fc = mem.forecast(memory_id, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(fc)
        return
    verdict = {"protected": "protected: never decays (pinned, verified or a kept category)",
               "archived": "archived", "superseded": "superseded: kept as history, never decays",
               "due_now": f"{fc.action} at the next consolidation",
               "none": f"nothing within {fc.horizon_days} days",
               "due": f"{fc.action} on {fc.when.date().isoformat() if fc.when else '?'}"}[fc.state]
    out.print(f"{memory_id}: {verdict}; score {fc.score:.3f} (now {fc.score_now:.3f}), "
              f"×{fc.daily_factor:g} a day after {fc.grace_days:g} days' grace"
              + (f"; expires {fc.expires_at.date().isoformat()}" if fc.expires_at else ""))


@app.command()
def activity(
    user: UserOpt,
    agent: AgentOpt = None,
    days: Annotated[int, typer.Option(help="The last this many days.", min=1, max=3650)] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Active, archived and deleted memories at the end of each day, from the audit trail.

    Example: memlane activity --user lin --days 14
    """
    with _memory() as mem:
        act = mem.activity(user_id=user, agent_id=agent, days=days)
    if as_json:
        _emit_json(act)
        return
    table = Table(title=f"memories of {user}, day by day")
    for col in ("day", "active", "archived", "deleted"):
        table.add_column(col, justify="left" if col == "day" else "right")
    for row in zip(act.days, act.active, act.archived, act.deleted, strict=True):
        table.add_row(*(str(v) for v in row))
    out.print(table)


@app.command()
def stats(user: UserOpt, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
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
    paths: Annotated[list[Path], typer.Argument(help="Files or folders: another tool's export (see --from), LoCoMo "
                                                     "JSON, OpenAI-messages JSON / JSONL, or a `memlane export` file.")],
    user: UserOpt,
    agent: AgentOpt = None,
    source: Annotated[str | None, typer.Option(
        "--from", help="The export's format: chatgpt (conversations.json), claude (conversations.json), mem0 "
                       "(get_all output or a platform export), letta (an .af agent file) or markdown (a folder of "
                       "notes). Detected when the file's shape is unambiguous.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be added (counts and the first few "
                                                            "items); write nothing.")] = False,
    source_user: Annotated[str | None, typer.Option(
        "--source-user", help="mem0: the mem0 user whose memories to take from a file holding several "
                              "(default: the file's only user, else --user).")] = None,
    session_prefix: Annotated[str | None, typer.Option(
        "--session-prefix", help="Conversation files: put PREFIX: before each file's session ids instead of the "
                                 "file's name; '' keeps the ids as they are (sessions of the same id then merge).")] = None,
    extract: Annotated[bool, typer.Option("--extract", help="Then extract memories from the imported sessions.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Import conversations and memories from another tool, or conversation files, with a progress bar.

    Another tool's export (--from, or detected): ChatGPT and Claude conversations become sessions
    of turns dated as they were said; mem0 memories, Letta memory blocks and markdown notes become
    memories (audited ADD, source "import", their dates kept). A bad record is skipped and named,
    the rest imported; importing again adds nothing; --dry-run writes nothing. docs/importing.md
    lists the fields read.

    Conversation files (LoCoMo, OpenAI messages): each file all or nothing; `chat.jsonl`'s
    session_1 is stored as `chat:session_1`. A `memlane export` file restores the whole scope.

    Example: memlane import --from chatgpt conversations.json --user lin --dry-run
    Example: memlane import --from mem0 memories.json --user lin --source-user alex
    Example: memlane import --from markdown ~/vault --user lin      memlane import agent.af --user lin --extract
    Example: memlane import chat.jsonl --user lin      memlane import locomo/ --user lin --extract
    """
    fmt = source.strip().lower() if source else _foreign_format(paths)
    if fmt is not None:
        _import_foreign(paths, fmt, user, agent, dry_run, source_user, extract, as_json)
        return
    if dry_run or source_user:
        raise typer.BadParameter("--dry-run and --source-user are for another tool's export: name it with --from")
    files = _conversation_files(paths)
    exports = [f for f in files if is_export(f)]
    if exports:  # a `memlane export` file: the whole scope, not a conversation
        if len(files) > 1:
            raise typer.BadParameter(f"{exports[0]} is a `memlane export` file: import it on its own")
        from memlane.cli.files import import_scope_export  # registered after the everyday commands

        import_scope_export(files[0], user, agent, as_json)
        return
    stems = [f.stem for f in files]
    with _memory() as mem:
        batches = []
        for f in files:  # every file parsed before any is stored: a broken one stops the import
            convs = read_file(f, mem.config.store.max_import_bytes)
            prefix = session_prefix if session_prefix is not None else (f.stem if stems.count(f.stem) == 1 else f.name)
            for conv in convs:
                conv.session_id = f"{prefix}:{conv.session_id}" if prefix else conv.session_id
            batches.append((f, convs))
        total = sum(len(c.messages) for _, convs in batches for c in convs)
        reports = []
        with _progress() as bar:
            task = bar.add_task("storing turns", total=total)
            for f, convs in batches:  # one transaction a file
                done = mem.import_conversations(convs, user_id=user, agent_id=agent, embed=False,
                                                progress=lambda k: bar.advance(task, k))
                reports.append({"file": str(f), "sessions": done.sessions, "turns": done.turns,
                                "skipped": done.skipped})
            emb = bar.add_task("embedding", total=total)
            embedded = mem.flush(progress=lambda k: bar.advance(emb, k))
        sessions = [(c.user_id or user, c.session_id) for _, convs in batches for c in convs]
        jobs = _extract_sessions(mem, sessions, agent) if extract else None
    result: dict[str, Any] = {
        **({"file": str(files[0])} if len(files) == 1 else {}), "files": reports,
        "sessions": sum(r["sessions"] for r in reports), "turns": sum(r["turns"] for r in reports),
        "skipped": sum(r["skipped"] for r in reports), "embedded": embedded,
    }
    if jobs is not None:
        result["extraction"] = jobs
    if as_json:
        _emit_json(result)
        return
    skipped = result["skipped"]
    again = f"; {skipped} already imported, skipped" if skipped else ""
    where = str(files[0]) if len(files) == 1 else f"{len(files)} files"
    out.print(f"imported {result['turns']} turns in {result['sessions']} sessions from {where} "
              f"({embedded} embedded{again})")
    if jobs is not None:
        _print_extraction(jobs)


def _foreign_format(paths: list[Path]) -> str | None:
    """Another tool's format, when one path's shape says so unambiguously: a folder of only
    markdown notes, an .md or .af file, a JSON file only one importer recognises; else None
    (memlane's own conversation and export formats)."""
    if len(paths) != 1:
        return None
    path = paths[0]
    if path.is_dir():
        own = any(p.is_file() and p.suffix.lower() in (".json", ".jsonl") for p in path.iterdir())
        return "markdown" if not own and any(path.rglob("*.md")) else None
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix == ".af":
        return "letta"
    if suffix != ".json" or not path.is_file() or is_export(path):
        return None
    try:
        data = load_json(path, _store_config().store.max_import_bytes)
        return importing.detect(path, data)
    except MemlaneError:  # not JSON, or no other tool's shape: the conversation reader says what is wrong
        return None


def _import_foreign(paths: list[Path], fmt: str, user: str, agent: str | None, dry_run: bool,
                    source_user: str | None, extract: bool, as_json: bool) -> None:
    """`memlane import --from FORMAT`: each path parsed and stored (a bad record skipped and
    named), then the new rows embedded and, with --extract, the new sessions extracted."""
    reports = []
    with _memory() as mem, _progress() as bar:
        for path in paths:
            task = bar.add_task(f"{'checking' if dry_run else 'importing'} {path.name}", total=None)

            def moved(done: int, total: int, task: TaskID = task) -> None:
                bar.update(task, total=total, completed=done)

            reports.append(importing.import_from(mem, path, fmt, user_id=user, agent_id=agent, dry_run=dry_run,
                                                 source_user=source_user, progress=moved))
        embedded = 0
        if not dry_run:
            emb = bar.add_task("embedding", total=None)
            embedded = mem.flush(progress=lambda k: bar.advance(emb, k))
        sessions = [(user, sid) for r in reports for sid in [*r.session_ids, *r.stored_ids]]
        jobs = _extract_sessions(mem, sessions, agent) if extract and not dry_run else None
    if as_json:
        _emit_json({"imports": [r.to_dict() for r in reports], "embedded": embedded,
                    **({"extraction": jobs} if jobs is not None else {})})
        return
    for r in reports:
        verb = "would import" if r.dry_run else "imported"
        again = f"; {r.already} already imported" if r.already else ""
        out.print(f"{verb} {r.turns} turns in {r.sessions} sessions and {r.memories} memories from {r.file} "
                  f"({r.format}{again}{'' if r.dry_run else f', {embedded} embedded'})", highlight=False)
        for item in r.preview:
            out.print(f"  + {escape(item)}", highlight=False)
        for s in r.skipped[:_SHOWN_SKIPS]:
            out.print(f"  [yellow]skipped[/] {escape(s.record)}: {escape(s.reason)}", highlight=False)
        if len(r.skipped) > _SHOWN_SKIPS:
            out.print(f"  … and {len(r.skipped) - _SHOWN_SKIPS} more skipped (--json lists them all)")
    if jobs is not None:
        _print_extraction(jobs)


def _conversation_files(paths: list[Path]) -> list[Path]:
    """The files to import: each path given, a folder's .json / .jsonl files (sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".json", ".jsonl"))
            if not found:
                raise typer.BadParameter(f"{path} holds no .json or .jsonl file")
            files += found
        else:
            files.append(path)  # read_file says what is wrong with a missing one
    if len({f.resolve() for f in files}) != len(files):
        raise typer.BadParameter("a file is named twice")
    return files
