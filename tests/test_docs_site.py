"""The documentation site builds in strict mode (issue 33): a broken link, a missing anchor or a
page missing from the navigation fails the build, and the pages generated from the code —
the configuration reference, the HTTP API, the Python API, the home page — hold what the code
has, with nothing loaded from another site."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

pytest.importorskip("mkdocs")
pytest.importorskip("material")
pytest.importorskip("mkdocstrings_handlers.python")
pytest.importorskip("fastapi")

ROOT = Path(__file__).parents[1]
BUILD_SECONDS = 60  # the budget for this file on 2 shared cores


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=project, capture_output=True, text=True, timeout=BUILD_SECONDS * 3,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("site")
    started = time.monotonic()
    done = build(ROOT, out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < BUILD_SECONDS
    yield out


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def test_every_page_in_the_navigation_is_built(site: Path) -> None:
    nav = re.findall(r":\s*([\w/.-]+\.md)\s*$|^\s*-\s*([\w/.-]+\.md)\s*$",
                     (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    listed = {a or b for a, b in nav}
    written = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert listed == written, (listed ^ written)
    for md in listed:
        stem = md[:-len("index.md")] if md == "index.md" or md.endswith("/index.md") else md[:-len(".md")]
        html = site / stem / "index.html"
        assert html.is_file(), md


def test_the_configuration_reference_is_generated_from_the_code(site: Path) -> None:
    from memlane.config import Config, env_name

    html = page(site, "reference/configuration")
    cfg = Config()
    for section in Config.model_fields:
        value = getattr(cfg, section)
        if isinstance(value, BaseModel):
            for name in type(value).model_fields:
                assert f"<code>{section}.{name}</code>" in html, f"{section}.{name}"
                assert env_name(section, name) in html


def test_the_http_api_page_is_generated_from_the_schema(site: Path) -> None:
    from memlane.config import Config
    from memlane.server.app import create_app

    schema = create_app(Config(), mcp=False, scheduler=False).openapi()
    html = page(site, "reference/http-api")
    for path, methods in schema["paths"].items():
        for method in methods:
            assert f"{method.upper()} {path}" in html, (method, path)
    for name in schema["components"]["schemas"]:
        assert f'id="schema-{name.lower()}"' in html, name
    assert "HTTPValidationError" not in html


def test_the_python_api_is_generated_from_the_docstrings(site: Path) -> None:
    import memlane

    html = page(site, "reference/python-api")
    for name in memlane.__all__:
        assert f'id="memlane.{name}"' in html, name
    assert 'id="memlane.Memory.add_messages"' in html and 'id="memlane.Memory.build_context"' in html


def test_the_home_page_is_the_readme_and_nothing_comes_from_another_site(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Long-term memory for LLM agents" in home and 'href="getting-started/install/"' in home
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert not re.search(r"""<(?:script|link|img)[^>]+(?:src|href)=["']?(?:https?:)?//""", text), html
        assert "fonts.googleapis" not in text, html


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    for name in ("mkdocs.yml", "README.md", "RELIABILITY.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "src").symlink_to(ROOT / "src")
    glossary = tmp_path / "docs" / "glossary.md"
    glossary.write_text(glossary.read_text(encoding="utf-8") + "\nSee [the missing page](nowhere.md).\n",
                        encoding="utf-8")
    done = build(tmp_path, tmp_path / "site")
    assert done.returncode != 0 and "nowhere.md" in done.stderr
