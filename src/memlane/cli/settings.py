"""`memlane config`: the effective configuration, where each value came from, and the
reference of every setting (generated from the models in memlane.config and their comments)."""

from __future__ import annotations

import inspect
import json
import re
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.table import Table

from memlane import config as config_module
from memlane.cli.common import JsonOpt, _config, _emit_json, _fit, app, out
from memlane.config import ENV_OTHER, Config, env_name

_SECRET = re.compile(r"api_key|dsn|password|token|database_url", re.I)  # a URL may hold a password


def _settings(cfg: Config) -> list[tuple[str, Any]]:
    """("section.field", value) for every setting, in the models' order."""
    rows: list[tuple[str, Any]] = [("profile", cfg.profile)]
    for section in Config.model_fields:
        value = getattr(cfg, section)
        if isinstance(value, BaseModel):
            dumped = value.model_dump(mode="json")
            rows += [(f"{section}.{name}", dumped[name]) for name in type(value).model_fields]
    return rows


def _shown(key: str, value: Any) -> Any:
    return "***" if value and _SECRET.search(key) else value  # never print a key


@app.command("config")
def config_(
    changed: Annotated[bool, typer.Option("--changed", help="Only settings that differ from the defaults.")] = False,
    reference: Annotated[bool, typer.Option("--reference", help="Print the Markdown reference of every setting.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the effective configuration and where each value came from: default, profile NAME,
    the memlane.toml file, env MEMLANE_X, or argument (a --home / --profile / --embedder flag).
    Resolved as every command and `open_memory(home)` resolve it.

    Example: memlane --home ./data config --changed      memlane config --json
    """
    if reference:
        out.print(config_reference(), markup=False, highlight=False, soft_wrap=True)
        return
    cfg = _config()
    sources = cfg.sources
    rows = [(k, _shown(k, v), sources.get(k, "default")) for k, v in _settings(cfg)]
    if changed:
        rows = [r for r in rows if r[2] != "default"]
    toml = cfg.toml_path
    files = {"home": str(cfg.home), "database": str(cfg.db_path),
             "toml_file": str(toml) if toml else None, "toml_file_exists": bool(toml and toml.is_file())}
    if as_json:
        _emit_json({**files, "settings": {k: {"value": v, "source": s} for k, v, s in rows}})
        return
    state = "" if files["toml_file_exists"] else " (absent: defaults, profile and env only)"
    out.print(f"data directory: {files['home']}\nconfig file:    {toml}{state}", highlight=False)
    table = Table(title=f"profile {cfg.profile}")
    table.add_column("setting", no_wrap=True)
    table.add_column("value", overflow="fold", ratio=1)
    table.add_column("source", overflow="fold")
    for key, value, source in rows:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(key, _fit(text, 200), source)
    out.print(table)


def config_reference() -> str:
    """Markdown: one table per section, each setting with its default, its environment
    variable and the comment beside it in memlane/config/ (the seed it comes from)."""
    default = Config()
    lines = ["| setting | default | environment | what it is |", "|---|---|---|---|"]
    lines.append("| `profile` | `default` | `MEMLANE_PROFILE` | " + _comments(Config).get("profile", "") + " |")
    for section in Config.model_fields:
        model = getattr(default, section)
        if not isinstance(model, BaseModel):
            continue
        notes = _comments(type(model))
        dumped = model.model_dump(mode="json")
        for name in type(model).model_fields:
            value = json.dumps(dumped[name], ensure_ascii=False)
            value = value if len(value) <= 40 else value[:39] + "…"
            lines.append(f"| `{section}.{name}` | `{value}` | `{env_name(section, name)}` | "
                         f"{notes.get(name, '').replace('|', '/')} |")
    others = ", ".join(f"`{n}`" for n in ENV_OTHER)
    return "\n".join(lines) + f"\n\nAlso read from the environment: {others}.\n"


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """Each field's comment in memlane/config/: the lines above it and the one beside it."""
    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):
        return {}
    notes: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("# "))
            continue
        m = re.match(r"(\w+)\s*:\s*[^=]+=.*?(?:#\s*(.*))?$", stripped)
        if m and m.group(1) in model.model_fields and line.startswith("    ") and not line.startswith("     "):
            notes[m.group(1)] = " ".join([*pending, m.group(2) or ""]).strip()
        if stripped and not stripped.startswith("#"):
            pending = []
    return notes


_ = config_module  # the module whose source the reference reads
