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
from memlane.lifecycle import ConsolidationReport, Scheduler
from memlane.markdown import atomic_write
from memlane.models import Hit, MemoryRecord
from memlane.portable import is_export

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
    """Import a conversation file as turns (all or nothing), then embed it with a progress bar;
    a `memlane export` JSONL file restores the whole scope into --user.

    Example: memlane import chat.jsonl --user lin
    """
    if is_export(path):  # a `memlane export` file: the whole scope, not a conversation
        _import_scope_export(path, user, agent, as_json)
        return
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
        # ending each session runs extraction: the LLM when MEMLANE_LLM_BASE_URL is set,
        # the offline heuristic extractor otherwise
        report["extraction"] = {"extractor": "llm" if mem.llm is not None else "heuristic", "jobs": []}
        for conv in convs:
            for result in mem.end_session(conv.session_id, user_id=conv.user_id or user):
                if result.action == "extract" and result.result is not None:
                    job = result.result
                    report["extraction"]["jobs"].append({"session": job.session_id, "status": job.status,
                                                         "error": job.error, **job.stats})
        report["sessions"] = [s.model_dump(mode="json") for s in mem.sessions(user_id=user)]
        report["memories"] = mem.list(user_id=user)
        for q in data["questions"]:
            report["searches"].append({
                "query": q,
                "memories": mem.search(q, user_id=user, limit=3, activate=False),
                "turns": mem.search(q, user_id=user, limit=3, corpus="turns"),
            })
        report["stats"] = mem.stats(user_id=user)
        report["files"] = {"memory_md": str(mem.md_export(user_id=user)), "user_md": str(mem.user_profile(user_id=user))}
    if as_json:
        _emit_json(report)
        return
    _print_demo(report)
    out.print(f"human-readable memory: {report['files']['memory_md']}\nuser profile:          {report['files']['user_md']}")


def _print_demo(report: dict[str, Any]) -> None:
    out.rule("[bold]memlane demo")
    out.print(f"data directory: {report['home']}  (no server, no API key, embedder: {report['stats'].embedder})")
    sessions = Table(title="Stored conversation")
    for col in ("session", "started", "turns"):
        sessions.add_column(col)
    for s in sorted(report["sessions"], key=lambda s: s["started_at"]):
        sessions.add_row(s["id"], s["started_at"][:16], str(s["message_count"]))
    out.print(sessions)
    if report.get("extraction"):
        how = report["extraction"]["extractor"]
        note = ("offline, by the heuristic extractor (set MEMLANE_LLM_BASE_URL for an LLM)" if how == "heuristic"
                else "by the LLM")
        failed = [j for j in report["extraction"]["jobs"] if j["status"] == "retrying"]
        out.print(f"memories extracted {note} when each session ended"
                  + (f"; {len(failed)} job(s) queued for retry: {failed[0]['error']}" if failed else ""))
    if report["memories"]:
        out.print(_memory_table(report["memories"], "Memories"))
    for s in report["searches"]:
        if s["memories"]:
            out.print(_hit_table(s["memories"], f"search memories: {s['query']}"))
        out.print(_hit_table(s["turns"], f"search conversation: {s['query']}"))


@app.command()
def context(
    session: Annotated[str | None, typer.Option("--session", "-s", help="The session whose history to show.")] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", help="The current message: picks relevant memories.")] = None,
    user: UserOpt = "default",
    agent: AgentOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Derive budgets from this model's window.")] = None,
    show_prompt: Annotated[bool, typer.Option("--prompt", help="Also print the rendered system prompt.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The context an agent would get: each block with its tokens and budget.

    Example: memlane context --session s1 --query "晚饭吃什么" --user lin --model gpt-4o
    """
    with _memory() as mem:
        mem.flush()
        ctx = mem.build_context(session, query, user_id=user, agent_id=agent, model=model)
    if as_json:
        _emit_json(ctx.to_dict())
        return
    b = ctx.budgets
    window = f", model {b.model} ({b.window} tokens, {b.reserve} reserved for the reply)" if b.model else ""
    table = Table(title=f"context for {user}" + (f" / {session}" if session else "") + window)
    for col in ("block", "tokens", "budget", "items", "text"):
        table.add_column(col, overflow="fold")
    for block in ctx.blocks:
        flat = " ⏎ ".join(line for line in block.text.splitlines() if line.strip())
        text = flat if len(flat) <= 240 else flat[:240] + "…"  # --prompt prints it whole
        table.add_row(block.name, str(block.tokens), str(block.budget), str(block.items), text)
    table.add_row("total", str(ctx.tokens), "", "", "")
    out.print(table)
    if show_prompt:
        out.rule("system prompt")
        out.print(ctx.system_prompt, markup=False, highlight=False)


# ---- human-readable memory, the seed-000 archive, export (issue 7) -------------------------

md_app = typer.Typer(
    no_args_is_help=True,
    help="MEMORY.md (seed 001): write it from the store, or apply a person's edits back.\n\n"
         "Example: memlane md export --user lin; edit the file; memlane md import --user lin",
)
app.add_typer(md_app, name="md")


@md_app.command("export")
def md_export(
    user: UserOpt = "default",
    agent: AgentOpt = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write MEMORY.md here instead.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write MEMORY.md and USER.md into the scope's data directory (a .bak keeps the old MEMORY.md).

    Example: memlane md export --user lin
    """
    with _memory() as mem:
        paths = {"memory_md": str(mem.md_export(user_id=user, agent_id=agent, path=output)),
                 "user_md": str(mem.user_profile(user_id=user, agent_id=agent))}
    if as_json:
        _emit_json(paths)
    else:
        out.print(f"wrote {paths['memory_md']}\nwrote {paths['user_md']}")


@md_app.command("import")
def md_import(
    path: Annotated[Path | None, typer.Argument(help="The edited file (default: the scope's MEMORY.md).")] = None,
    user: UserOpt = "default",
    agent: AgentOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the operations, apply nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply a person's edits of MEMORY.md: edited → UPDATE, removed → DELETE, `### category | score`
    without an id → ADD; each audited with actor "import".

    Example: memlane md import --user lin --dry-run
    """
    with _memory() as mem:
        ops = mem.md_import(path, user_id=user, agent_id=agent, dry_run=dry_run)
    if as_json:
        _emit_json([{"op": o.op, "memory_id": o.memory_id, "fields": o.fields, "content": o.content,
                     "before": o.before, "line": o.line} for o in ops])
        return
    if not ops:
        out.print("MEMORY.md and the store agree: nothing to do")
        return
    table = Table(title=("would apply" if dry_run else "applied") + f" {len(ops)} operation(s)")
    for col in ("op", "id", "fields", "line", "content"):
        table.add_column(col, overflow="fold")
    for o in ops:
        text = f"{o.before} → {o.content}" if o.op == "UPDATE" and "content" in o.fields else o.content
        table.add_row(o.op, o.memory_id, ", ".join(o.fields), str(o.line or ""), text)
    out.print(table)


@app.command()
def archive(
    user: UserOpt = "default",
    agent: AgentOpt = None,
    if_due: Annotated[bool, typer.Option("--if-due", help="Only when seed 000's triggers hold.")] = False,
    query: Annotated[str | None, typer.Option("--query", "-q", help="Then show the ## Memory block for this input.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Archive history.json into memory/ (raw ≤ 5 days, daily, then monthly summaries), by hand.

    Example: memlane archive --user lin --query "上次部署遇到什么问题"
    """
    with _memory() as mem:
        report = mem.archive(user_id=user, agent_id=agent, force=not if_due)
        block = mem.archive_context(query, user_id=user, agent_id=agent) if query else None
        where = mem.data_dir(user_id=user, agent_id=agent)
    if as_json:
        _emit_json({**report.__dict__, "dir": str(where), "memory_block": block})
        return
    table = Table(show_header=False, title=f"archive of {user} in {where}")
    for key in ("ran", "reason", "archived", "failed", "removed", "history", "unarchived"):
        table.add_row(key, str(getattr(report, key)))
    table.add_row("by age", ", ".join(f"{k} {v}" for k, v in report.buckets.items()))
    table.add_row("files", "\n".join(report.files))
    table.add_row("events", ", ".join(report.events))
    out.print(table)
    if query is not None:
        out.print(block or f"no archived file matches {query!r}", markup=False, highlight=False)


@app.command()
def export(
    user: UserOpt = "default",
    agent: AgentOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl (lossless, for import) or md.")] = "jsonl",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Export a whole scope: memories, turns, sessions, episodes and the audit trail.

    Example: memlane export --user lin --format jsonl --output lin.jsonl
    """
    with _memory() as mem:
        text = mem.export(user_id=user, agent_id=agent, format=fmt)
    if output is None:
        sys.stdout.write(text)
        return
    atomic_write(output, text)
    if as_json:
        _emit_json({"file": str(output), "format": fmt, "bytes": len(text.encode("utf-8"))})
    else:
        out.print(f"exported {user} as {fmt} to {output}")


def _import_scope_export(path: Path, user: str, agent: str | None, as_json: bool) -> None:
    with _memory() as mem:
        report = mem.import_(path, user_id=user, agent_id=agent)
    if as_json:
        _emit_json(report.__dict__)
        return
    plural = {"memory": "memories"}
    added = ", ".join(f"{v} {plural.get(k, k + 's')}" for k, v in report.added.items()) or "nothing new"
    skipped = ", ".join(f"{v} {plural.get(k, k + 's')}" for k, v in report.skipped.items())
    out.print(f"imported {added} into {report.user_id}" + (f" (already there: {skipped})" if skipped else ""))


# ---- lifecycle (issue 6) -----------------------------------------------------------------


def _consolidation_table(report: ConsolidationReport) -> Table:
    title = ("would change" if report.dry_run else "changed") + f" at {_short(report.now)}"
    table = Table(title=title)
    for col in ("user", "id", "step", "action", "score"):
        table.add_column(col, no_wrap=True)
    for col in ("reason", "content"):
        table.add_column(col, overflow="fold", ratio=1)
    for a in report.actions:
        before = "" if a.before is None else f"{a.before:.3f}"
        after = "" if a.after is None else f"{a.after:.3f}"
        score = f"{before} → {after}" if a.action != "DELETE" and before else before or after
        table.add_row(a.user_id + (f"/{a.agent_id}" if a.agent_id else ""), a.memory_id, a.step, a.action, score,
                      a.reason, a.content[:40])
    return table


def _print_consolidation(report: ConsolidationReport, as_json: bool) -> None:
    if as_json:
        _emit_json(report.to_dict())
        return
    if report.actions:
        out.print(_consolidation_table(report))
    else:
        out.print("nothing to change" if report.dry_run else "nothing changed")
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items() if v)
    out.print(f"{len(report.scopes)} scope(s); " + (counts or "no changes")
              + (f"; files: {len(report.files)}" if report.files else ""))
    for s in report.locked:
        err.print(f"skipped {s.user_id}: an extraction holds its lock; the next run takes it")
    for e in report.errors:
        err.print(f"[yellow]warning:[/] {e}", highlight=False)


@app.command()
def consolidate(
    user: Annotated[str | None, typer.Option("--user", "-u", envvar="MEMLANE_USER", help="Whose memory (user_id).")] = None,
    agent: AgentOpt = None,
    all_scopes: Annotated[bool, typer.Option("--all", help="Every scope in the store.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change and why; write nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the lifecycle pass: drain the extraction queue, merge duplicates, decay, demote /
    archive / delete, clean expired, review, refresh MEMORY.md + USER.md, archive old turns.
    Prints each change: memory id, action, score from → to, and the rule behind it.

    Example: memlane consolidate --user lin --dry-run      memlane consolidate --all --json
    """
    if all_scopes and user is not None:
        raise typer.BadParameter("give --user or --all, not both")
    with _memory() as mem:
        report = mem.consolidate(user_id=None if all_scopes else user or "default", agent_id=agent,
                                 dry_run=dry_run)
    _print_consolidation(report, as_json)


@app.command()
def scheduler(
    once: Annotated[bool, typer.Option("--once", help="Run if due, then exit (for cron).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run consolidation for every scope on the schedule: every lifecycle.schedule_hours
    (6 h, seed 000) or daily at lifecycle.nightly_at (03:00 under progressive, seed 002).
    Runs in the foreground until Ctrl-C.

    Example: memlane scheduler      memlane --profile progressive scheduler --once
    """
    import threading

    with _memory(background=True) as mem:
        sched = Scheduler(mem, on_run=lambda r: _print_consolidation(r, as_json))
        if once:
            if sched.tick() is None and not as_json:
                out.print(f"not due; next run at {_short(sched.next_run(mem.clock()))}")
            return
        out.print(f"scheduler running; next run at {_short(sched.next_run(mem.clock()))} (Ctrl-C stops)")
        sched.start()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            sched.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: MemlaneError → one line on stderr, exit 1."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="memlane")
    except MemlaneError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(1)


