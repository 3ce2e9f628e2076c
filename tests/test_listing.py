"""A memory listing is filtered, sorted and paged by the store (issue 31): the API, REST and
the web UI's table read one page of rows, never the whole scope, on both backends."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest

from memlane import Memory
from memlane.errors import ValidationError
from memlane.testing import ManualClock
from tests.conftest import T0
from tests.webui_support import login, ui_site


def _fill(mem: Memory, clock: ManualClock) -> dict[str, str]:
    ids = {}
    for i, (text, source, score) in enumerate([("lin likes tea", "user", 0.9), ("lin walks at dawn", "agent", 0.3),
                                                ("lin has a cat", "extractor", 0.6), ("lin reads sci-fi", "agent", 0.5),
                                                ("lin plays go", "import", 0.7)]):
        clock.now = T0 + timedelta(hours=i)
        ids[text] = mem.add(text, user_id="lin", importance=score, source=source,  # type: ignore[arg-type]
                            verified=source == "user").id
    mem.update(ids["lin has a cat"], user_id="lin", pinned=True)
    mem.add("mei's own", user_id="mei", source="agent")
    return ids


def test_filters_sort_and_pages_happen_in_the_store(make_memory: Callable[..., Memory]) -> None:
    clock = ManualClock(T0)
    mem = make_memory(clock=clock)
    _fill(mem, clock)

    def contents(**kw: object) -> list[str]:
        return [m.content for m in mem.list(user_id="lin", **kw)]  # type: ignore[arg-type]

    assert contents() == ["lin likes tea", "lin plays go", "lin has a cat", "lin reads sci-fi", "lin walks at dawn"]
    assert contents(source="agent") == ["lin reads sci-fi", "lin walks at dawn"]
    assert contents(verified=True) == ["lin likes tea"] and contents(pinned=True) == ["lin has a cat"]
    assert contents(min_score=0.5, max_score=0.7) == ["lin plays go", "lin has a cat", "lin reads sci-fi"]
    assert contents(sort="created_at", descending=False) == [
        "lin likes tea", "lin walks at dawn", "lin has a cat", "lin reads sci-fi", "lin plays go"]
    assert contents(sort="content", limit=2, offset=1) == ["lin reads sci-fi", "lin plays go"]
    assert mem.count(user_id="lin") == 5 and mem.count(user_id="lin", source="agent", max_score=0.4) == 1
    assert mem.count(user_id="mei", source="agent") == 1  # every filter stays in its scope
    for bad in ({"sort": "score; DROP TABLE memories"}, {"source": "robot"}, {"min_score": 2}, {"verified": "yes"}):
        with pytest.raises(ValidationError):
            mem.list(user_id="lin", **bad)  # type: ignore[arg-type]


def test_rest_and_the_web_ui_page_through_the_store(make_memory: Callable[..., Memory], sqlite_only: None) -> None:
    clock = ManualClock(T0)
    mem = make_memory(clock=clock, web={"page_size": 2})
    _fill(mem, clock)
    reads: list[int | None] = []
    listing = mem.store.list_memories

    def spy(*a: object, **kw: object) -> object:
        reads.append(kw.get("limit"))  # type: ignore[arg-type]
        return listing(*a, **kw)  # type: ignore[arg-type]

    mem.store.list_memories = spy  # type: ignore[method-assign]
    with ui_site(mem, "server") as site, httpx.Client(
            base_url=site.base, headers={"Authorization": f"Bearer {site.key['lin']}"}, timeout=30) as c:
        body = c.get("/v1/memories", params={"source": "agent", "sort": "created_at", "order": "asc", "limit": 1}).json()
        assert [m["content"] for m in body["memories"]] == ["lin walks at dawn"]
        assert (body["total"], body["next_offset"]) == (2, 1)
        assert c.get("/v1/memories", params={"sort": "bogus"}).status_code == 422
        page = login(site.base, site.key["lin"]).get("/memories", params={"sort": "score", "page": 2}).text
        assert re.findall(r"lin (?:likes tea|plays go|has a cat|reads sci-fi|walks at dawn)", page).count("lin has a cat") \
            and "lin likes tea" not in page  # page 2 of 2-row pages: the 3rd and 4th best
        assert reads and None not in reads  # every listing read a page, none the whole scope
