"""A memory's forecast and a scope's activity come from the engine (issue 31), and every face
gives the same answer: the API, REST over real HTTP, the CLI and (tests/test_webui_http.py)
the web UI. A forecast is a promise: consolidation acts on the day it names, not before."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from memlane import Memory
from memlane.errors import NotFound, ValidationError
from memlane.testing import HashEmbedder, ManualClock
from tests.conftest import T0
from tests.test_cli import run


@pytest.mark.parametrize("profile", ["default", "companion"])
def test_consolidation_acts_on_the_day_the_forecast_names(make_memory: Callable[..., Memory], profile: str) -> None:
    clock = ManualClock(T0)
    mem = make_memory(profile, clock=clock)
    m = mem.add("林晓周二跑步", user_id="lin", category="fact", importance="high")
    pinned = mem.add("林晓对花生过敏", user_id="lin", category="fact")
    mem.update(pinned.id, user_id="lin", pinned=True)
    fc = mem.forecast(m.id, user_id="lin")
    assert fc.state == "due" and fc.when is not None and fc.action in ("ARCHIVE", "DELETE", "DEMOTE"), fc
    assert (fc.memory_id, fc.score, fc.score_now) == (m.id, m.score, m.score)
    assert mem.forecast(pinned.id, user_id="lin").state == "protected"

    clock.now = fc.when - timedelta(days=1)
    mem.consolidate(user_id="lin")
    assert mem.get(m.id, user_id="lin").status == "active"
    later = mem.forecast(m.id, user_id="lin")
    assert later.when == fc.when and later.score_now < fc.score_now  # the same day, from a day before it
    clock.now = fc.when + timedelta(hours=1)
    mem.consolidate(user_id="lin")
    gone = [m.id for m in mem.list(user_id="lin", status="active")]
    assert m.id not in gone and pinned.id in gone
    if fc.action == "ARCHIVE":
        assert mem.forecast(m.id, user_id="lin").state == "archived"
    with pytest.raises(NotFound):
        mem.forecast(m.id, user_id="mei")  # another user's id is not found


def test_activity_replays_the_audit_trail_day_by_day(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(T0)
    mem = make_memory(clock=clock)
    a = mem.add("林晓周三开会", user_id="lin", category="fact")
    b = mem.add("林晓周四出差", user_id="lin", category="fact")
    mem.add("mei's own memory", user_id="mei")
    clock.advance(days=2)
    mem.update(a.id, user_id="lin", status="archived")
    clock.advance(days=1)
    mem.delete(b.id, user_id="lin")
    act = mem.activity(user_id="lin")
    assert act.days == [(T0 + timedelta(days=i)).date().isoformat() for i in range(4)]
    assert (act.active, act.archived, act.deleted) == ([2, 2, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1])
    short = mem.activity(user_id="lin", days=2)
    assert short.days == act.days[-2:] and short.active == [1, 0]  # the window starts mid-history
    assert mem.activity(user_id="nobody").days == []
    with pytest.raises(ValidationError, match="days"):
        mem.activity(user_id="lin", days=0)


def test_rest_and_cli_give_the_engines_forecast_and_activity(tmp_path: Path) -> None:
    from tests.server_support import Server, error_shape

    home = tmp_path / "home"
    run(home, "add", "林晓对花生过敏", "--user", "lin", "-c", "fact")  # a person typed it: protected
    with Memory(home=home, embedder=HashEmbedder()) as m:  # an extracted memory, as a chat leaves it
        added = m.add("林晓周二跑步", user_id="lin", category="fact", source="extractor").model_dump(mode="json")
    cli = json.loads(run(home, "forecast", added["id"], "--user", "lin", "--json").stdout)
    assert cli["state"] == "due" and cli["memory_id"] == added["id"]
    said = run(home, "forecast", added["id"], "--user", "lin").stdout
    assert f"{cli['action']} on {cli['when'][:10]}" in said, said
    act = json.loads(run(home, "activity", "--user", "lin", "--json").stdout)
    assert act["active"][-1] == 2 and act["days"][-1] == act["days"][0]
    assert "--days" in run(home, "activity", "--user", "lin", "--days", "0", check=2, process=True).stderr

    key, other = (run(home, "keys", "create", "--user", user).stdout.strip() for user in ("lin", "mei"))
    server = Server(home)
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as c:
            rest = c.get(f"/v1/memories/{added['id']}/forecast").json()
            assert (rest["state"], rest["action"], rest["when"][:10]) == (cli["state"], cli["action"], cli["when"][:10])
            assert c.get("/v1/activity").json()["active"] == act["active"]
            error_shape(c.get("/v1/activity", params={"days": 0}), 422)
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {other}"}, timeout=30) as c:
            error_shape(c.get(f"/v1/memories/{added['id']}/forecast"), 404)
            assert c.get("/v1/activity").json()["days"] == []
    finally:
        server.stop()
