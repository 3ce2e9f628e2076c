"""Forgetting: a whole user (`purge`), a conversation (`sessions delete`), some turns (`turns delete`)."""

from __future__ import annotations

from typing import Annotated

import typer

from memlane.cli.common import AgentOpt, JsonOpt, _confirm, _emit_json, _memory, app, err, out
from memlane.forget import ForgetReport

sessions_app = typer.Typer(
    no_args_is_help=True,
    help="Conversations of a scope: list them, or forget one.\n\n"
         "Example: memlane sessions list --user lin; memlane sessions delete s1 --user lin",
)
app.add_typer(sessions_app, name="sessions")
turns_app = typer.Typer(
    no_args_is_help=True,
    help="Conversation turns: forget some of them.\n\nExample: memlane turns delete 9c1f0a2b3d4e5f60 --user lin",
)
app.add_typer(turns_app, name="turns")

UserReq = Annotated[str, typer.Option("--user", "-u", help="The user whose data is forgotten.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def _report(report: ForgetReport, what: str, as_json: bool) -> None:
    if as_json:
        _emit_json({"forgotten": what, "counts": report.counts, "files": report.files,
                    "cached_vectors": report.cached_vectors})
        return
    parts = [f"{n} {table}" for table, n in sorted(report.counts.items()) if n]
    if report.files:
        parts.append(f"{report.files} files")
    out.print(f"forgot {what}: {', '.join(parts) or 'nothing was stored'}")


@app.command()
def purge(
    user: UserReq,
    agent: AgentOpt = None,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Forget a user: every turn, session, episode, memory, job, audit row, file and cache of
    theirs (of one agent scope with --agent). The audit keeps one PURGE event with counts.

    Example: memlane purge --user lin --yes
    """
    what = f"user {user!r}" + (f" (agent {agent!r})" if agent else " (all agents)")
    if not yes and not _confirm(f"Forget everything of {what}? This cannot be undone", "purge"):
        err.print("nothing was deleted")
        raise typer.Exit(1)
    with _memory() as mem:
        report = mem.purge(user_id=user, agent_id=agent, actor="cli")
    _report(report, what, as_json)


@sessions_app.command("list")
def sessions_list(user: UserReq, agent: AgentOpt = None, as_json: JsonOpt = False) -> None:
    """The scope's sessions, newest first.

    Example: memlane sessions list --user lin
    """
    with _memory() as mem:
        found = mem.sessions(user_id=user, agent_id=agent)
    if as_json:
        _emit_json(found)
        return
    for s in found:
        out.print(f"{s.id}\t{s.started_at:%Y-%m-%d %H:%M}\t{s.message_count} messages")
    if not found:
        out.print("no sessions")


@sessions_app.command("delete")
def sessions_delete(
    session_id: Annotated[str, typer.Argument(help="The session's id.")],
    user: UserReq,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a conversation: its turns, episodes and jobs, wherever memlane kept them.

    Example: memlane sessions delete s1 --user lin
    """
    with _memory() as mem:
        report = mem.delete_session(session_id, user_id=user, agent_id=agent)
    _report(report, f"session {session_id!r}", as_json)


@turns_app.command("delete")
def turns_delete(
    turn_ids: Annotated[list[str], typer.Argument(help="The turns' ids (memlane search --in turns --json).")],
    user: UserReq,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget turns; their neighbours' search context and the session's summary forget them too.

    Example: memlane turns delete 9c1f0a2b3d4e5f60 --user lin
    """
    with _memory() as mem:
        report = mem.delete_turns(turn_ids, user_id=user, agent_id=agent)
    _report(report, f"{len(turn_ids)} turn(s)", as_json)
