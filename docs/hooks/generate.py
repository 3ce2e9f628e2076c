"""mkdocs hooks: the pages generated from the code at build time, so they cannot drift.

A page holds a marker line where generated Markdown goes:
- `<!-- generated: config-reference -->`: every setting of memlane.config with its default,
  environment variable and note (`memlane config --reference` prints the same);
- `<!-- generated: readme -->`: the README (the site's home page is the repository's);
- `<!-- generated: http-api -->`: every route of `memlane serve` from its OpenAPI schema, with
  parameters, bodies, responses and the schemas (`memlane.server.apidoc`, as `/docs` shows it).
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"


def on_config(config: Any) -> Any:
    # the code of this tree, not whichever memlane the environment installed (mkdocs restores
    # sys.path after loading a hook, so this runs here rather than at import)
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    return config


@functools.cache
def config_reference() -> str:
    from memlane.cli.settings import config_reference as render

    return render()


@functools.cache
def http_api() -> str:
    from memlane.config import Config
    from memlane.server import apidoc
    from memlane.server.app import create_app

    # the schema only: no engine is opened (that happens in the app's lifespan, never run here)
    app = create_app(Config(), mcp=False, scheduler=False)
    return apidoc.markdown(app.openapi())


def readme() -> str:
    """The README, the repository's front page, as the site's: its links into docs/ made
    relative to the site's root (it is read afresh: `mkdocs serve` shows edits)."""
    text = (SRC.parent / "README.md").read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/", "](", text)


GENERATED = {"config-reference": config_reference, "http-api": http_api, "readme": readme}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for name, render in GENERATED.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
