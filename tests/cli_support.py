"""Run `memlane` in this process, as the console script runs it in a new one.

A `python -m memlane` subprocess spends ~1 s of CPU importing before it does anything; tests
about what a command prints and its exit code call `memlane.cli.main(argv)` here instead. Each
call sees what a fresh process would: its own environment, no terminal on stdin, stdout and
stderr as UTF-8 byte streams, SystemExit as the exit code, an escaped exception as a traceback
and exit 1. Tests about the process itself (signals, a terminal, argv bytes that are not UTF-8,
a second process) keep spawning one: `run_cli(..., process=True)`.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import typer.main

from memlane.cli import main

JOIN_SECONDS = 30.0  # how long a command's leftover thread may take to end, as at interpreter exit
_build_command = typer.main.get_command
_built: dict[int, tuple[Any, Any]] = {}


def _command_once(app: Any) -> Any:
    """typer rebuilds the click command from every signature on each `main` call (~90 ms, most
    of an in-process run); a process builds it once, so the tests build it once too."""
    if id(app) not in _built:
        _built[id(app)] = (app, _build_command(app))
    return _built[id(app)][1]


@contextmanager
def _environment(env: Mapping[str, str], unset: Iterable[str]) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        for key in unset:
            os.environ.pop(key, None)
        os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _exit_code(exc: SystemExit, stderr: io.TextIOBase) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=stderr)  # sys.exit("message"), as the interpreter reports it
    return 1


def run_cli(args: Sequence[str], env: Mapping[str, str] | None = None, *, unset: Iterable[str] = (),
            clean: bool = False, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`memlane ARGS` with `env` added to this process's environment less `unset` (with `clean`,
    less every MEMLANE_ variable but conftest's MEMLANE_CACHE_DIR, which keeps the word table
    out of ~/.cache): in this process, or with `process` in a real `python -m memlane`."""
    unset = {*unset, *(k for k in os.environ if clean and k.startswith("MEMLANE_") and k != "MEMLANE_CACHE_DIR")}
    if process:
        base = {k: v for k, v in os.environ.items() if k not in unset}
        return subprocess.run([sys.executable, "-m", "memlane", *args], capture_output=True, text=True,
                              env={**base, **(env or {})}, timeout=120, stdin=subprocess.DEVNULL)
    out, err = io.BytesIO(), io.BytesIO()
    # a process's own streams: stdout strict (main() switches it to backslashreplace), stderr
    # backslashreplace, as Python starts them
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    threads = set(threading.enumerate())
    streams = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(), stdout, stderr  # stdin: no terminal, empty
    get_command, typer.main.get_command = typer.main.get_command, _command_once
    extra = dict(env or {})
    if "COLUMNS" not in os.environ and any(os.isatty(fd) for fd in (0, 1, 2)):  # pytest -s on a terminal
        extra["COLUMNS"] = "80"  # rich sizes tables by fds 0-2: a child with pipes for them gets 80
    try:
        with _environment(extra, unset):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = _exit_code(exc, stderr)
            except Exception:  # what the interpreter does with one that escapes (Ctrl-C still stops pytest)
                traceback.print_exc(file=stderr)
                code = 1
    finally:
        typer.main.get_command = get_command
        sys.stdin, sys.stdout, sys.stderr = streams
    stdout.flush()
    stderr.flush()
    # at exit a process waits for its threads and ends its daemon threads; here a thread still
    # running would outlive the command into later calls and tests: run such a command as a process
    started = set(threading.enumerate()) - threads
    for thread in started:
        if not thread.daemon:
            thread.join(JOIN_SECONDS)
    left = [t for t in started if t.is_alive()]
    assert not left, f"memlane {' '.join(args)[:80]} left threads running: {left}"
    return subprocess.CompletedProcess(["memlane", *args], code, out.getvalue().decode("utf-8"),
                                       err.getvalue().decode("utf-8"))
