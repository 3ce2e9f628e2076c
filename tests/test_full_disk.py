"""A full disk: every write fails alone with a BackendError saying so, nothing acknowledged
is lost, and the database stays whole (issue 12). The disk is "full" for a child process by
RLIMIT_FSIZE, which works without privileges (writes past the limit fail with EFBIG)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw

from memlane.models import Scope
from tests.conftest import make_config

CHILD = textwrap.dedent("""
    import json, resource, signal, sys
    from memlane import Memory
    from memlane.config import Config
    from memlane.errors import MemlaneError

    from pathlib import Path
    home, room = sys.argv[1], int(sys.argv[2])
    m = Memory(Config.load(store={"home": home}, embedding={"provider": "hash", "background": False}))
    m.add_messages("s0", [{"role": "user", "content": "warm up"}], user_id="u1")
    limit = max(p.stat().st_size for p in Path(home).rglob("*") if p.is_file()) + room
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    acked, errors, raw = [], [], []
    for i in range(5000):
        try:
            call = i % 3
            if call == 0:
                m.add_messages("s1", [{"role": "user", "content": f"turn {i} " + "lorem ipsum " * 40}], user_id="u1")
            elif call == 1:
                m.add(f"memory {i} " + "dolor sit amet " * 20, user_id="u1")
            else:
                m.consolidate(user_id="u1")
                continue
            acked.append(i)
        except MemlaneError as exc:
            errors.append(type(exc).__name__ + ": " + str(exc))
            if len(errors) >= 20:
                break
        except Exception as exc:
            raw.append(type(exc).__name__ + ": " + str(exc))
            break
    print(json.dumps({"acked": acked, "errors": errors, "raw": raw}))
""")


def test_a_full_disk_fails_each_write_cleanly_and_loses_nothing(tmp_path: Path) -> None:
    home = tmp_path / "data"
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), str(400_000)], capture_output=True, text=True,
                         timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["raw"] == []
    assert result["errors"], "the disk never filled: raise the workload"
    assert all(e.startswith("BackendError") for e in result["errors"]), result["errors"][:3]
    assert any("full" in e for e in result["errors"]), result["errors"][:3]
    assert result["acked"], "nothing was written before the disk filled: give it more room"

    from memlane import Memory

    with Memory(make_config(home)) as m:  # reopened with room to spare
        conn = apsw.Connection(str(home / "memlane.db"))
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        turns = {t.content.split()[1] for t in m.get_turns("s1", user_id="u1", limit=None)}
        memories = {r.content.split()[1] for r in m.list(user_id="u1")}
        for i in result["acked"]:
            assert str(i) in (turns if i % 3 == 0 else memories), f"acknowledged write {i} lost"
        assert m.store.get_session(Scope.of("u1"), "s1") is not None
        m.add_messages("s1", [{"role": "user", "content": "after the disk was freed"}], user_id="u1")
