"""The API's reference from its OpenAPI schema, for people: every route with its parameters,
body and responses, then every schema's fields. One walk of the schema, rendered twice:
HTML for the server's own `/docs` page (no script, nothing from a CDN) and Markdown for the
documentation site (docs/hooks.py renders it at build time, so the page cannot drift)."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class Row:
    cells: list[str]  # plain text; `code` spans marked with backticks


@dataclass
class Operation:
    method: str
    path: str
    tag: str
    summary: str
    description: str
    parameters: list[Row] = field(default_factory=list)
    body: str | None = None  # "application/json: NewMemory"
    responses: list[Row] = field(default_factory=list)


def type_of(schema: dict[str, Any]) -> str:
    """A JSON schema as a short type: `⟦MemoryOut⟧`, `list[⟦HitOut⟧]`, `string | null`, `"a" | "b"`."""
    if "$ref" in schema:
        return f"⟦{schema['$ref'].rsplit('/', 1)[-1]}⟧"  # a link to the schema, in either rendering
    if "anyOf" in schema:
        return " | ".join(type_of(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(f'"{v}"' for v in schema["enum"])
    if "const" in schema:
        return f'"{schema["const"]}"'
    kind = schema.get("type")
    if kind == "array":
        return f"list[{type_of(schema.get('items', {}))}]"
    if kind == "object" or (kind is None and "additionalProperties" in schema):
        extra = schema.get("additionalProperties")
        return f"object of {type_of(extra)}" if isinstance(extra, dict) and extra else "object"
    if isinstance(kind, list):
        return " | ".join(kind)
    return str(kind or "any")


def _limits(schema: dict[str, Any]) -> str:
    found = [f"{name} {schema[key]}" for key, name in (("minimum", "≥"), ("maximum", "≤"), ("exclusiveMinimum", ">"),
                                                        ("exclusiveMaximum", "<")) if key in schema]
    for option in schema.get("anyOf", []):
        found.append(_limits(option))
    return ", ".join(f for f in found if f)


def _content(block: dict[str, Any]) -> str:
    parts = [f"{media}: {type_of(c.get('schema', {}))}" for media, c in block.get("content", {}).items()]
    return "; ".join(parts)


def operations(schema: dict[str, Any]) -> list[Operation]:
    """Every documented operation, in the schema's order."""
    ops: list[Operation] = []
    for path, methods in schema.get("paths", {}).items():
        for method in METHODS:
            op = methods.get(method)
            if op is None:
                continue
            params = [Row([f"`{p['name']}`", p["in"], type_of(p.get('schema', {})),
                           "yes" if p.get("required") else "no",
                           _default(p.get("schema", {})), " ".join(filter(None, [
                               p.get("description") or p.get("schema", {}).get("description", ""),
                               _limits(p.get("schema", {}))]))])
                      for p in op.get("parameters", [])]
            body = op.get("requestBody")
            responses = [Row([f"`{status}`", r.get("description", ""), _content(r)])
                         for status, r in op.get("responses", {}).items()]
            ops.append(Operation(method.upper(), path, (op.get("tags") or ["other"])[0], op.get("summary", ""),
                                 (op.get("description") or "").strip(), params,
                                 _content(body) + ("" if body.get("required") else " (optional)") if body else None,
                                 responses))
    return ops


def common_errors(schema: dict[str, Any]) -> list[Row]:
    """The error responses every /v1 operation documents alike: listed once, not per route."""
    per_op = [op.get("responses", {}) for path, methods in schema.get("paths", {}).items() if path.startswith("/v1/")
              for method, op in methods.items() if method in METHODS]
    if not per_op:
        return []
    shared = [s for s, r in per_op[0].items() if s[0] in "45" and all(o.get(s) == r for o in per_op)]
    return [Row([f"`{s}`", per_op[0][s].get("description", ""), _content(per_op[0][s])]) for s in shared]


def _own(op: Operation, common: list[Row]) -> list[Row]:
    shared = {r.cells[0] for r in common} if op.path.startswith("/v1/") else set()
    return [r for r in op.responses if r.cells[0] not in shared]


def _default(schema: dict[str, Any]) -> str:
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`" if schema.get("default") is not None else ""


def fields(schema: dict[str, Any]) -> list[Row]:
    """A component schema's fields: name, type, required, default, description."""
    required = set(schema.get("required", []))
    return [Row([f"`{name}`", type_of(prop), "yes" if name in required else "no", _default(prop),
                 " ".join(filter(None, [prop.get("description", ""), _limits(prop)]))])
            for name, prop in schema.get("properties", {}).items()]


# ---- Markdown (the documentation site) ------------------------------------------------------


def _md_table(head: list[str], rows: list[Row]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md_cell(c) for c in r.cells) + " |" for r in rows]
    return [*out, ""]


def _md_cell(text: str) -> str:
    text = re.sub(r"⟦(\w+)⟧", lambda m: f"[`{m.group(1)}`](#{anchor(m.group(1))})", text)
    return text.replace("|", "\\|").replace("\n", " ")


def anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def markdown(schema: dict[str, Any]) -> str:
    """The whole reference as Markdown: routes by tag, then the schemas (each with an anchor)."""
    common = common_errors(schema)
    lines = ["## Errors", "", "Besides its own responses below, every `/v1` route may answer:", "",
             *_md_table(["status", "when", "body"], common)]
    ops = operations(schema)
    for tag in dict.fromkeys(op.tag for op in ops):
        described = {t["name"]: t.get("description", "") for t in schema.get("tags", [])}
        lines += [f"## {tag}", "", described.get(tag, ""), ""]
        for op in (o for o in ops if o.tag == tag):
            lines += [f"### `{op.method} {op.path}`", "", f"**{op.summary}.** {op.description}", ""]
            if op.parameters:
                lines += ["Parameters:", "", *_md_table(["name", "in", "type", "required", "default", "what"],
                                                       op.parameters)]
            if op.body:
                lines += [f"Body: {_md_cell(op.body)}", ""]
            lines += ["Responses:", "", *_md_table(["status", "when", "body"], _own(op, common))]
    lines += ["## Schemas", ""]
    for name, comp in schema.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name} {{ #{anchor(name)} }}", "", comp.get("description", "").strip(), ""]
        rows = fields(comp)
        lines += _md_table(["field", "type", "required", "default", "what"], rows) if rows else \
            [_md_cell(type_of(comp)), ""]
    return "\n".join(lines)


# ---- HTML (the server's /docs page) --------------------------------------------------------


def _cell(text: str) -> str:
    """Escaped text with `code` spans."""
    parts = html.escape(text).split("`")
    text = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
    return re.sub(r"⟦(\w+)⟧", lambda m: f"<a href=#{anchor(m.group(1))}><code>{m.group(1)}</code></a>", text)


def _html_table(head: list[str], rows: list[Row]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r.cells) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{trs}</table>"


def html_page(schema: dict[str, Any]) -> str:
    """The routes with parameters, bodies and responses, and the schemas: one page, no script."""
    info = schema.get("info", {})
    common = common_errors(schema)
    toc, body = [], []
    for op in operations(schema):
        ident = re.sub(r"[^a-z0-9]+", "-", f"{op.method} {op.path}".lower()).strip("-")
        toc.append(f"<li><a href=#{ident}><code>{op.method} {html.escape(op.path)}</code></a> {_cell(op.summary)}</li>")
        body.append(f"<h3 id={ident}><code>{op.method} {html.escape(op.path)}</code></h3>"
                    f"<p><b>{_cell(op.summary)}.</b> {_cell(op.description)}</p>")
        if op.parameters:
            body.append(_html_table(["name", "in", "type", "required", "default", "what"], op.parameters))
        if op.body:
            body.append(f"<p>Body: {_cell(op.body)}</p>")
        body.append(_html_table(["status", "when", "body"], _own(op, common)))
    schemas = [f"<h3 id={anchor(name)}>{html.escape(name)}</h3><p>{_cell(comp.get('description', ''))}</p>"
               + _html_table(["field", "type", "required", "default", "what"], fields(comp))
               for name, comp in schema.get("components", {}).get("schemas", {}).items()]
    return ("<!doctype html><meta charset=utf-8><title>memlane API</title>"
            "<style>body{font:14px system-ui;margin:2em;max-width:70em}td,th{padding:.2em .8em;"
            "vertical-align:top;text-align:left}table{border-collapse:collapse}tr{border-bottom:1px solid #ddd}"
            "</style>"
            f"<h1>memlane API {html.escape(str(info.get('version', '')))}</h1>"
            f"<p>{_cell(str(info.get('description', '')))}</p><p>The machine-readable schema: "
            "<a href=/openapi.json>/openapi.json</a>.</p><h2>Errors</h2><p>Besides its own responses, every "
            "<code>/v1</code> route may answer:</p>" + _html_table(["status", "when", "body"], common)
            + "<h2>Routes</h2><ul>" + "".join(toc) + "</ul>"
            + "".join(body) + "<h2>Schemas</h2>" + "".join(schemas))
