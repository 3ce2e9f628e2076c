"""Files written whole or not at all: the data goes to a temp file beside the target, is
fsync'd, and is renamed over it (os.replace is atomic), so a reader sees the old file or the new
one, never half of one. Temp files a killed writer left are removed on the next write: they
may hold text that was deleted since."""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path


def temp_copy(path: Path, data: bytes) -> str:
    """`data` written and fsync'd to a temp file beside `path` (the caller renames it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    # the writer's pid in the name tells a live writer's temp file from a dead one's
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def replace(path: Path, data: bytes) -> None:
    """`path` now holds `data`, whole (see the module)."""
    tmp = temp_copy(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_stale_temps(path: Path) -> None:
    """`.<name>.<pid>-<random>.tmp` of a process that is gone (or, from older versions, with
    no pid at all) is a leftover of a killed writer: it may hold text that was deleted since."""
    prefix = f".{path.name}."
    for tmp in path.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        middle = tmp.name[len(prefix):-len(".tmp")]
        if "." in middle:
            continue  # another file's temp (`.MEMORY.md.bak.<pid>-….tmp`)
        pid, sep, _ = middle.partition("-")
        if sep and pid.isdigit() and _alive(int(pid)):
            continue
        tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True
