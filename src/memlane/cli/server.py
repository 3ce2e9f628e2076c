"""`memlane serve` (REST + MCP over HTTP), `memlane mcp` (MCP over stdio) and `memlane keys`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from memlane import validate
from memlane.cli.common import AgentOpt, JsonOpt, _emit_json, _store_config, app, err, out
from memlane.config import Config
from memlane.errors import ConfigError
from memlane.models import Scope

if TYPE_CHECKING:
    from memlane.server.keys import KeyStore

keys_app = typer.Typer(
    no_args_is_help=True,
    help="API keys of `memlane serve`: each bound to one user (and agent), or an admin key.\n\n"
         "Example: memlane keys create --user lin; memlane keys list; memlane keys revoke 3f9a1c2b7d4e",
)
app.add_typer(keys_app, name="keys")


def _keystore(cfg: Config) -> KeyStore:
    """The home's key table (opening the store first creates or migrates the database)."""
    from memlane.server.keys import KeyStore
    from memlane.store import open_store

    open_store(cfg).close()
    return KeyStore.open(cfg)


@keys_app.command("create")
def keys_create(
    user: Annotated[str | None, typer.Option("--user", "-u", help="The user the key acts as.")] = None,
    agent: AgentOpt = None,
    admin: Annotated[bool, typer.Option("--admin", help="An operator key: any scope (X-Memlane-User), "
                                                        "status, purge.")] = False,
    name: Annotated[str, typer.Option("--name", help="A note: who or what uses the key.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create an API key and print it (once: only its hash is stored).

    Example: memlane keys create --user lin --agent coder --name "lin's laptop"
    """
    if not admin and not user:
        raise typer.BadParameter("give --user (the key's scope) or --admin", param_hint="--user")
    keys = _keystore(_store_config())
    try:
        key, info = keys.create(user_id=user, agent_id=agent, admin=admin, name=name)
    finally:
        keys.close()
    if as_json:
        _emit_json({"key": key, **info.as_dict()})
        return
    out.print(key, highlight=False, soft_wrap=True)
    who = "admin" if admin else f"user {user!r}" + (f", agent {agent!r}" if agent else "")
    err.print(f"key {info.id} for {who}; store it now, it is not shown again", highlight=False)


@keys_app.command("list")
def keys_list(
    all_: Annotated[bool, typer.Option("--all", help="Include revoked keys.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The API keys (ids and scopes, never the keys themselves).

    Example: memlane keys list --all
    """
    keys = _keystore(_store_config())
    try:
        infos = keys.list(include_revoked=all_)
    finally:
        keys.close()
    if as_json:
        _emit_json([i.as_dict() for i in infos])
        return
    table = Table(title="API keys")
    for col in ("id", "user", "agent", "admin", "name", "created", "revoked"):
        table.add_column(col)
    for i in infos:
        table.add_row(i.id, i.user_id or "", i.agent_id, "yes" if i.admin else "", i.name,
                      i.created_at.strftime("%Y-%m-%d %H:%M"), i.revoked_at.strftime("%Y-%m-%d %H:%M")
                      if i.revoked_at else "")
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id, as `memlane keys list` shows it.")],
    as_json: JsonOpt = False,
) -> None:
    """Revoke an API key: every server on this home refuses it from its next request.

    Example: memlane keys revoke 3f9a1c2b7d4e
    """
    keys = _keystore(_store_config())
    try:
        info = keys.revoke(key_id)
    finally:
        keys.close()
    if as_json:
        _emit_json(info.as_dict())
        return
    out.print(f"revoked key {info.id}", highlight=False)


@keys_app.command("reopen")
def keys_reopen(as_json: JsonOpt = False) -> None:
    """Run a loopback server open again (no key needed) once every key is revoked.

    A server on a home where keys were made stays keyed after the last one is revoked, so a
    key rotated by revoke-then-create never leaves a window open. This forgets the revoked keys.

    Example: memlane keys revoke 3f9a1c2b7d4e; memlane keys reopen
    """
    keys = _keystore(_store_config())
    try:
        gone = keys.reopen()
    finally:
        keys.close()
    if as_json:
        _emit_json({"forgotten": gone, "open": True})
        return
    out.print(f"forgot {gone} revoked key(s): a loopback `memlane serve` on this home runs open again "
              "(for server.local_user, within 10 s)", highlight=False)


_LOG_LEVELS = ("debug", "info", "warning", "error")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option("--host", help="Address to bind (default server.host, 127.0.0.1); "
                                                            "any non-loopback address needs API keys.")] = None,
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="Port (default server.port, 8765).")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="The local user of open mode (loopback, "
                                                                  "no keys); default server.local_user.")] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning or error.")] = "info",
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1, max=64, help=(
        "Server processes on the one port, an engine each (default server.workers)."))] = None,
    open_admin: Annotated[bool, typer.Option("--open-admin", help=(
        "On loopback without keys, let the local user use the admin routes too (status, purge "
        "any user); default server.open_admin."))] = False,
) -> None:
    """Serve the REST API (/v1, docs at /docs) and MCP over HTTP (/mcp) on one engine per process.

    Example: memlane serve --port 8765   (then: curl -H "Authorization: Bearer $KEY" localhost:8765/v1/stats)
    """
    import uvicorn

    from memlane.server import create_app
    from memlane.server.auth import is_loopback
    from memlane.server.protocol import uvicorn_options

    if log_level.lower() not in _LOG_LEVELS:
        raise typer.BadParameter(f"{log_level!r} is not one of {', '.join(_LOG_LEVELS)}", param_hint="--log-level")
    if host is not None:
        validate.ident("--host", host)  # getaddrinfo fails on a lone surrogate with a traceback
    cfg = _store_config()
    if user:
        cfg.server.local_user = Scope.of(user).user_id
    if open_admin:
        cfg.server.open_admin = True
    bind = host or cfg.server.host
    if not is_loopback(bind):  # refuse before binding, not after
        keys = _keystore(cfg)
        try:
            if not keys.any_active():
                raise ConfigError(f"refusing to serve on {bind} without API keys: create one with "
                                  "`memlane keys create --user USER` (or bind to 127.0.0.1)")
        finally:
            keys.close()
    level = log_level.lower()
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = uvicorn_options(cfg.server, level)
    port = cfg.server.port if port is None else port
    n = cfg.server.workers if workers is None else workers
    if n > 1:
        from memlane.server import workers as supervisor

        raise typer.Exit(supervisor.serve(cfg, bind=bind, port=port, workers=n, **options))
    uvicorn.run(create_app(cfg, host=bind), host=bind, port=port, **options)


@app.command()
def mcp(
    user: Annotated[str, typer.Option("--user", "-u", envvar="MEMLANE_USER", show_envvar=True,
                                      help="Whose memory the MCP client reads and writes.")],
    agent: AgentOpt = None,
) -> None:
    """Serve MCP over stdio for one scope (Claude Desktop, Cursor, any MCP client that starts a command).

    Example: memlane mcp --user lin   (in claude_desktop_config.json: "command": "memlane", "args": ["mcp", "--user", "lin"])
    """
    from memlane.api import Memory
    from memlane.lifecycle import Scheduler
    from memlane.server.mcp import stdio_mcp

    logging.basicConfig(level=logging.WARNING)  # stdout is the protocol: logs go to stderr
    scope = Scope.of(user, agent)
    mem = Memory(_store_config())
    sched = Scheduler(mem) if mem.config.server.scheduler else None
    try:
        if sched is not None:
            sched.start()
        stdio_mcp(mem, scope).run("stdio")
    finally:
        if sched is not None:
            sched.stop()
        mem.settle(mem.config.server.shutdown_seconds)
        mem.close()
