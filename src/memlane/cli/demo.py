"""`memlane demo`: the bundled conversation, imported, extracted, searched and written out."""

from __future__ import annotations

import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from memlane.cli.common import (
    JsonOpt,
    _config,
    _emit_json,
    _hit_table,
    _import_with_progress,
    _memory,
    _memory_table,
    _state,
    app,
    err,
    out,
)


@app.command()
def demo(
    home: Annotated[Path | None, typer.Option(
        "--home", help="Keep the demo data here (default: the global --home / MEMLANE_HOME, else a temp dir).")] = None,
    as_json: JsonOpt = False,
    serve_ui: Annotated[bool, typer.Option(
        "--serve", help="Then serve it: the web UI at http://127.0.0.1:8765 shows the demo user's memories.")] = False,
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="With --serve: the port (default server.port).")] = None,
) -> None:
    """Import a bundled Chinese + English conversation into a fresh data dir and search it.

    Example: memlane demo --serve   (then open http://127.0.0.1:8765)
    """
    from memlane.importers import parse

    data = json.loads(resources.files("memlane.data").joinpath("sample_conversation.json").read_text("utf-8"))
    # a data directory the user chose (demo --home, memlane --home, MEMLANE_HOME), else a fresh one
    target = home or _state["home"] or (_config().home if os.environ.get("MEMLANE_HOME") else None) \
        or Path(tempfile.mkdtemp(prefix="memlane-demo-"))
    user = "lin"
    report: dict[str, Any] = {"home": str(target), "searches": []}
    with _memory(target) as mem:
        convs = parse(data, "sample_conversation.json")
        total = sum(len(c.messages) for c in convs)
        n, _ = _import_with_progress(mem, convs, total, user, None)
        report["turns"] = n.turns
        # ending each session runs extraction: the LLM when MEMLANE_LLM_BASE_URL is set,
        # the offline heuristic extractor otherwise
        report["extraction"] = {"extractor": "llm" if mem.llm is not None else "heuristic", "jobs": []}
        report["llm"] = mem.config.llm.base_url or None
        report["embedder_provider"] = mem.config.embedding.provider
        for conv in convs:
            for result in mem.end_session(conv.session_id, user_id=conv.user_id or user, wait=True):
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
    else:
        _print_demo(report)
        out.print(f"human-readable memory: {report['files']['memory_md']}\nuser profile:          "
                  f"{report['files']['user_md']}")
    if serve_ui:  # the same `memlane serve`, on the demo's data, open for the demo user on loopback
        from memlane.cli.server import serve

        _state["home"] = target
        cfg = _config()
        err.print(f"web UI: http://{cfg.server.host}:{port or cfg.server.port}/ (Ctrl-C stops)", highlight=False)
        serve(host=None, port=port, user=user, log_level="warning")


def _print_demo(report: dict[str, Any]) -> None:
    out.rule("[bold]memlane demo")
    llm = f"LLM at {report['llm']}" if report.get("llm") else "no LLM (offline heuristics)"
    out.print(f"data directory: {report['home']}  ({llm}, embedder: {report['stats'].embedder})", highlight=False)
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
        jobs = report["extraction"]["jobs"]
        failed = [j for j in jobs if j["status"] == "retrying"]
        if failed and len(failed) == len(jobs):  # say it plainly: nothing was extracted
            out.print(f"no memories extracted: the LLM failed ({failed[0]['error']}); {len(failed)} job(s) "
                      "stay queued for `memlane consolidate` / `memlane extract`", highlight=False)
        else:
            out.print(f"memories extracted {note} when each session ended"
                      + (f"; {len(failed)} job(s) queued for retry: {failed[0]['error']}" if failed else ""),
                      highlight=False)
    if report["memories"]:
        out.print(_memory_table(report["memories"], "Memories"))
    for s in report["searches"]:
        if s["memories"]:
            out.print(_hit_table(s["memories"], f"search memories: {s['query']}"))
        out.print(_hit_table(s["turns"], f"search conversation: {s['query']}"))
