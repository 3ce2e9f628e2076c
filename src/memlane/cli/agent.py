"""Commands around an agent's sessions: context, consolidate, scheduler."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from memlane.cli.common import (
    AgentOpt,
    JsonOpt,
    UserOpt,
    _emit_json,
    _extract_sessions,
    _fit,
    _memory,
    _print_extraction,
    _short,
    app,
    err,
    out,
)
from memlane.lifecycle import ConsolidationReport, Scheduler


@app.command()
def context(
    user: UserOpt,
    session: Annotated[str | None, typer.Option("--session", "-s", help="The session whose history to show.")] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", help="The current message: picks relevant memories.")] = None,
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
    for warning in ctx.warnings:
        err.print(f"[yellow]warning:[/] {warning}", highlight=False)
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


def _consolidation_table(report: ConsolidationReport) -> Table:
    title = ("would change" if report.dry_run else "changed") + f" at {_short(report.now)}"
    table = Table(title=title)
    # one scope: no user column, so reason and content keep the width; both wrap at words
    scopes = {(a.user_id, a.agent_id) for a in report.actions}
    cols = ("user", "id", "step", "action", "score") if len(scopes) > 1 else ("id", "step", "action", "score")
    for col in cols:
        table.add_column(col, no_wrap=True)
    for col in ("reason", "content"):
        table.add_column(col, overflow="fold", ratio=1)
    for a in report.actions:
        before = "" if a.before is None else f"{a.before:.2f}"
        after = "" if a.after is None else f"{a.after:.2f}"
        score = f"{before}→{after}" if a.action != "DELETE" and before else before or after
        row = [a.memory_id, a.step, a.action, score, a.reason, _fit(a.content, 60)]
        if len(scopes) > 1:
            row.insert(0, a.user_id + (f"/{a.agent_id}" if a.agent_id else ""))
        table.add_row(*row)
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
    if all_scopes == (user is not None):
        raise typer.BadParameter("give --user (or set MEMLANE_USER) for one scope, or --all for every scope")
    if all_scopes and agent is not None:  # it would be ignored: --all runs every scope, agents' too
        raise typer.BadParameter("--agent picks an agent within one --user's scope; --all runs every scope",
                                 param_hint="--agent")
    with _memory() as mem:
        report = mem.consolidate(user_id=None if all_scopes else user, agent_id=agent, dry_run=dry_run)
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
        def on_run(report: ConsolidationReport) -> None:
            if as_json:  # one object a run, whether it ran or not (see below)
                _emit_json({"ran": True, **report.to_dict()})
            else:
                _print_consolidation(report, False)

        sched = Scheduler(mem, on_run=on_run)
        if once:
            if sched.tick() is None:  # not due: say so, in JSON too (cron logs want one object a run)
                polled = sched.last_poll
                next_run = sched.next_run(mem.clock())
                if as_json:
                    _emit_json({"ran": False, "next_run": next_run.isoformat(),
                                "queued_turns": polled.sweep.turns if polled else 0,
                                "jobs_run": len(polled.jobs) if polled else 0})
                    return
                extra = (f"; queued {polled.sweep.turns} idle turns, ran {len(polled.jobs)} due extraction jobs"
                         if polled else "")
                out.print(f"not due; next run at {_short(next_run)}{extra}")
            return
        out.print(f"scheduler running; next run at {_short(sched.next_run(mem.clock()))} (Ctrl-C stops)")
        sched.start()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            sched.stop()


@app.command()
def extract(
    user: UserOpt,
    agent: AgentOpt = None,
    session: Annotated[list[str] | None, typer.Option("--session", "-s", help="Only this session (repeatable).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Extract memories now from the turns not extracted yet (imported conversations, say), one
    session at a time: the LLM when MEMLANE_LLM_BASE_URL is set, the offline heuristics otherwise.
    A session whose LLM call fails stays queued for `memlane consolidate` / the scheduler.

    Example: memlane import chat.jsonl --user lin; memlane extract --user lin
    """
    with _memory() as mem:
        ids = session or [s.id for s in sorted(mem.sessions(user_id=user, agent_id=agent), key=lambda s: s.started_at)]
        rows = _extract_sessions(mem, [(user, sid) for sid in ids], agent)
    if as_json:
        _emit_json({"sessions": rows, "added": sum(r["added"] for r in rows)})
        return
    _print_extraction(rows)
