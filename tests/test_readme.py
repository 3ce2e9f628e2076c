"""The README's examples, and the documentation site's, run as shown (issues 18 and 33).

Which blocks run: a fenced block directly after a `<!-- test -->` line, in README.md or in a page
of docs/ (the README first, then the pages in path order). A marked ```python block
runs whole, as a script, in a fresh `python` subprocess whose working directory is a tmp dir,
with MEMLANE_HOME in a tmp dir, the hash embedder (MEMLANE_EMBEDDER=hash) and the OpenAI SDK
pointed at an OpenAI-compatible stub on 127.0.0.1 (OPENAI_BASE_URL / OPENAI_API_KEY). A marked
```sh block runs only its `memlane …` and `python …` lines, as `sys.executable -m memlane …` and
`sys.executable …` from the repository root; its other lines (`make run`, `source
.venv/bin/activate`, `pip install …`) install and activate, which the test's own interpreter
has already done, and are skipped. Unmarked blocks are fragments (they use names such as
`tool_call` defined elsewhere) and are not run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .stubs import openai_stub

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md"))}
MARKED = re.compile(r"^<!-- test -->\n```(\w+)\n(.*?)^```$", re.M | re.S)
BLOCKS = [(lang, body) for text in (README, *PAGES.values()) for lang, body in MARKED.findall(text)]
PYTHON = [body for lang, body in BLOCKS if lang == "python"]
SHELL = [body for lang, body in BLOCKS if lang == "sh"]


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def model(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """A model that searches memory once per user message, then answers."""
    last = body["messages"][-1]
    if last["role"] == "user":
        call = {"id": "call_1", "type": "function",
                "function": {"name": "search_memory", "arguments": json.dumps({"query": "过敏"})}}
        return 200, completion({"content": None, "tool_calls": [call]})
    return 200, completion({"content": "推荐番茄炒蛋，不含花生。"})


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "OPENAI_"))}
    src = str(ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return {**env, "MEMLANE_HOME": str(tmp_path / "home"), "MEMLANE_EMBEDDER": "hash", **extra}


def test_the_front_page_and_getting_started_mark_their_examples_for_testing():
    front = MARKED.findall(README)
    assert [lang for lang, _ in front] == ["python"]  # the agent loop; the server and framework ones need more
    started = "".join(text for path, text in PAGES.items() if path.startswith("docs/getting-started/"))
    assert started.count("<!-- test -->") >= 3
    assert len(PYTHON) >= 3 and SHELL
    assert "open_memory" in PYTHON[0] and "end_session" in PYTHON[0] and "tools.handle" in PYTHON[0]


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_blocks_run_as_shown(index: int, tmp_path: Path) -> None:
    pytest.importorskip("openai", reason="the OpenAI SDK is not installed: pip install 'memlane[openai]'")
    script = tmp_path / "block.py"
    script.write_text(PYTHON[index], encoding="utf-8")
    agent_loop = "chat.completions" in PYTHON[index]
    with openai_stub(model) as (base_url, seen):
        env = clean_env(tmp_path, OPENAI_BASE_URL=base_url, OPENAI_API_KEY="stub")
        for _ in range(2 if agent_loop else 1):  # the README says: run it twice
            proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
    if agent_loop:
        assert len(seen) == 8 and all(body["tools"] for _, body in seen)
        assert "番茄炒蛋" in proc.stdout
        # the second user message's context carries what the first stored, tool turns included
        second = seen[2][1]["messages"]
        assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool", "assistant", "user"]
        assert "用户对花生过敏" not in seen[0][1]["messages"][0]["content"]
        assert "用户对花生过敏" in seen[4][1]["messages"][0]["content"]  # end_session distilled it


def test_shell_blocks_run_their_memlane_and_python_lines(tmp_path: Path) -> None:
    ran = 0
    for body in SHELL:
        for line in body.splitlines():
            command = shlex.split(line.split("#", 1)[0])
            if not command or command[0] not in ("memlane", "python"):
                continue
            argv = [sys.executable, "-m", "memlane", *command[1:]] if command[0] == "memlane" \
                else [sys.executable, *command[1:]]
            proc = subprocess.run(argv, cwd=ROOT, env=clean_env(tmp_path), capture_output=True, text=True,
                                  timeout=120)
            assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
            assert proc.stdout.strip(), line
            ran += 1
    assert ran >= 3
