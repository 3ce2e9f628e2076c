"""MCP with the SDK's own client: over stdio (`memlane mcp`) and over streamable HTTP at
`/mcp` inside a real `memlane serve` (bearer key → scope, as on the REST routes)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memlane import Memory
from memlane.config import Config
from memlane.models import Scope

from .server_support import ROOT, Server, create_key, env, error_shape

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memlane.server.mcp import build_mcp  # noqa: E402

TOOLS = {"add_memory", "search_memory", "search_conversation_traces", "recall_memory", "get_memory",
         "update_memory", "delete_memory", "add_messages", "build_context", "update_scratchpad", "supersede_memory"}
READ_ONLY = {"search_memory", "search_conversation_traces", "recall_memory", "get_memory", "build_context"}
DESTRUCTIVE = {"update_memory", "delete_memory"}
FILES = {"memlane://scope/MEMORY.md", "memlane://scope/USER.md"}
TRANSPORTS = ["stdio", "http"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, str]]:
    home = tmp_path_factory.mktemp("mcp") / "home"
    a, b = create_key(home, "--user", "lin"), create_key(home, "--user", "mei")
    server = Server(home)
    try:
        yield server, a, b
    finally:
        server.stop()


def http_client(server: Server, key: str) -> Any:
    import httpx2

    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)


def text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@contextlib.asynccontextmanager
async def connect(transport: str, served: tuple[Server, str, str], home: Path, **extra: str) -> AsyncIterator[Client]:
    """A client of `memlane mcp --user lin` (stdio, in `home`) or of `/mcp` with lin's key."""
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=["-m", "memlane", "mcp", "--user", "lin"],
                                       env=env(home, **extra), cwd=str(ROOT))
        async with Client(params) as c:
            yield c
    else:
        server, a, _ = served
        async with http_client(server, a) as hc, Client(streamable_http_client(f"{server.url}/mcp", http_client=hc)) as c:
            yield c


def test_tools_and_annotations(served: tuple[Server, str, str]) -> None:
    server, a, _ = served

    async def run() -> None:
        async with http_client(server, a) as hc, Client(streamable_http_client(f"{server.url}/mcp", http_client=hc)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            for name, tool in tools.items():
                assert tool.description and len(tool.description) > 30, name
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is (name in READ_ONLY), name
                assert tool.annotations.destructive_hint is (name in DESTRUCTIVE), name

    anyio.run(run)


def test_http_round_trip_in_the_keys_scope(served: tuple[Server, str, str]) -> None:
    server, a, b = served
    out: dict[str, Any] = {}

    async def run() -> None:
        async with http_client(server, a) as hc, Client(streamable_http_client(f"{server.url}/mcp", http_client=hc)) as c:
            added = await c.call_tool("add_memory", {"content": "lin drinks jasmine tea every morning",
                                                     "importance": "high"})
            assert not added.is_error, text(added)
            out["id"] = added.structured_content["id"]
            hits = await c.call_tool("search_memory", {"query": "jasmine tea"})
            assert out["id"] in text(hits)
            stored = await c.call_tool("add_messages", {"session_id": "m1", "messages": [
                {"role": "user", "content": "remind me to water the orchids"}]})
            assert stored.structured_content["stored"] == 1
            traces = await c.call_tool("search_conversation_traces", {"query": "orchids"})
            assert "orchids" in text(traces)
            changed = await c.call_tool("update_memory", {"memory_id": out["id"], "content": "lin drinks oolong tea"})
            assert "oolong" in text(changed)
            ctx = await c.call_tool("build_context", {"session_id": "m1", "query": "tea"})
            assert "oolong" in text(ctx)
            pad = await c.call_tool("update_scratchpad", {"current_focus": "garden"})
            assert not pad.is_error
            md = await c.read_resource("memlane://scope/MEMORY.md")
            assert "oolong" in md.contents[0].text
            with pytest.raises(Exception, match="Unknown resource"):
                await c.read_resource("memlane://scope/secrets.txt")
            missing = await c.call_tool("get_memory", {"memory_id": "0000000000"})
            assert missing.is_error and "not found" in text(missing)
        async with http_client(server, b) as hc, Client(streamable_http_client(f"{server.url}/mcp", http_client=hc)) as c:
            other = await c.call_tool("get_memory", {"memory_id": out["id"]})
            assert other.is_error and "oolong" not in text(other)
            assert "oolong" not in text(await c.call_tool("search_memory", {"query": "oolong tea"}))
            gone = await c.call_tool("delete_memory", {"memory_id": out["id"]})
            assert gone.is_error
            assert "oolong" not in (await c.read_resource("memlane://scope/MEMORY.md")).contents[0].text

    anyio.run(run)
    with server.client(a) as rest:  # the same engine and scope as REST
        assert rest.get(f"/v1/memories/{out['id']}").json()["content"] == "lin drinks oolong tea"
        assert rest.get("/v1/sessions/m1/turns").json()["turns"][0]["content"] == "remind me to water the orchids"


def test_http_mcp_needs_a_key(served: tuple[Server, str, str]) -> None:
    server, _, _ = served
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    error_shape(httpx.post(f"{server.url}/mcp", json=init, headers=accept, timeout=30), 401)
    error_shape(httpx.post(f"{server.url}/mcp", json=init, timeout=30,
                           headers={**accept, "Authorization": "Bearer ml_x_revoked"}), 401)


def test_stdio_round_trip(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "memlane", "mcp", "--user", "lin"],
                                   env=env(tmp_path / "home"), cwd=str(ROOT))

    async def run() -> None:
        with anyio.fail_after(120):
            async with Client(params) as c:
                assert {t.name for t in (await c.list_tools()).tools} == TOOLS
                added = await c.call_tool("add_memory", {"content": "lin prefers window seats on trains",
                                                         "category": "preference"})
                assert not added.is_error, text(added)
                assert "window seats" in text(await c.call_tool("search_memory", {"query": "window seats"}))
                uris = {str(r.uri) for r in (await c.list_resources()).resources}
                assert uris == {"memlane://scope/MEMORY.md", "memlane://scope/USER.md"}
                user_md = (await c.read_resource("memlane://scope/USER.md")).contents[0].text
                assert "window seats" in user_md

    anyio.run(run)
    done = subprocess.run([sys.executable, "-m", "memlane", "list", "--user", "lin", "--json"],
                                        env=env(tmp_path / "home"), capture_output=True, text=True, timeout=120)
    assert "window seats" in done.stdout  # stored in the home, for the CLI and the server alike


def test_http_lists_the_files_and_reads_them_in_the_keys_scope(served: tuple[Server, str, str]) -> None:
    server, a, b = served

    async def files(key: str, add: str) -> dict[str, str]:
        async with http_client(server, key) as hc, Client(streamable_http_client(f"{server.url}/mcp", http_client=hc)) as c:
            added = await c.call_tool("add_memory", {"content": add, "category": "preference"})
            assert not added.is_error, text(added)
            listed = {str(r.uri): r for r in (await c.list_resources()).resources}
            assert set(listed) == FILES
            assert all(r.mime_type == "text/markdown" for r in listed.values())
            return {uri: (await c.read_resource(uri)).contents[0].text for uri in sorted(FILES)}

    async def run() -> None:
        lin = await files(a, "lin keeps bees on the roof")
        mei = await files(b, "mei collects stamps from Iceland")
        assert all("bees" in t and "stamps" not in t for t in lin.values()), lin
        assert all("stamps" in t and "bees" not in t for t in mei.values()), mei  # never another key's user

    anyio.run(run)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tool_schemas_list_the_allowed_values(transport: str, served: tuple[Server, str, str], tmp_path: Path) -> None:
    categories = Config.load("default").policy.categories

    async def run() -> None:
        with anyio.fail_after(120):
            async with connect(transport, served, tmp_path / "home") as c:
                schemas = {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
        for name in ("search_memory", "add_memory", "update_memory"):
            assert schemas[name]["category"]["enum"] == categories, name
        for name in ("add_memory", "update_memory"):
            importance = schemas[name]["importance"]
            assert {"type": "string", "enum": ["high", "medium", "low"]} in importance["anyOf"], name
            assert {"type": "number", "minimum": 0, "maximum": 1} in importance["anyOf"], name
            assert "high" in importance["description"], name

    anyio.run(run)


def test_tool_schemas_list_the_profiles_categories(served: tuple[Server, str, str], tmp_path: Path) -> None:
    async def run() -> None:
        with anyio.fail_after(120):
            async with connect("stdio", served, tmp_path / "home", MEMLANE_PROFILE="companion") as c:
                tools = {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
                assert tools["add_memory"]["category"]["enum"] == ["system", "core", "fact", "episode"]
                added = await c.call_tool("add_memory", {"content": "lin is a beekeeper", "category": "core"})
                assert not added.is_error, text(added)

    anyio.run(run)


BAD_ARGUMENTS = [
    ("search_memory", {"query": "tea", "limit": 0}, "limit: must be an integer from 1 to 20, got 0"),
    ("search_memory", {"query": "tea", "limit": "abc"}, "limit: must be an integer from 1 to 20, got 'abc'"),
    ("get_memory", {"memory_id": "x" * 70}, "memory_id: must be a string of at most 64 characters, got 70 characters"),
    ("search_memory", {}, "query: is required (a string of at most"),
    ("search_memory", {"query": "tea", "category": "nope"}, "category: unknown category 'nope'; profile 'default' allows: fact"),
    ("add_memory", {"content": "lin likes tea", "category": "nope"}, "category: unknown category 'nope'"),
    ("add_memory", {"content": "lin likes tea", "importance": ["high"]},
     "importance: must be one of high, medium, low or a number from 0 to 1, got a list"),
    ("add_messages", {"session_id": "s1", "messages": "hi"}, "messages: must be a list of objects, got 'hi'"),
    ("add_messages", {"session_id": "s1", "messages": [1]}, "messages[0]: must be an object, got 1"),
    ("update_memory", {"memory_id": "abc", "verified": True}, "verified: an agent cannot set it; a person confirms"),
    ("update_memory", {"memory_id": "abc", "pinned": True}, "pinned: an agent cannot set it"),
    ("add_memory", {"content": "lin likes tea", "source": "user"}, "source: an agent cannot set it"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_arguments_get_a_short_message(transport: str, served: tuple[Server, str, str], tmp_path: Path) -> None:
    async def run() -> None:
        with anyio.fail_after(120):
            async with connect(transport, served, tmp_path / "home") as c:
                for name, args, message in BAD_ARGUMENTS:
                    result = await c.call_tool(name, args)
                    said = text(result)
                    assert result.is_error, (name, args, said)
                    assert said.startswith(f"Error executing tool {name}: {message}"), (name, args, said)
                    assert "\n" not in said and "pydantic" not in said and len(said) < 300, said

    anyio.run(run)


def test_an_agent_writes_unconfirmed_memories_and_cannot_confirm_them(make_memory: Callable[..., Memory]) -> None:
    """What an agent stores over MCP is its own word (source agent, not verified, not pinned):
    it fades until a person confirms it, and no tool lets the agent confirm it itself."""
    mem = make_memory()
    server = build_mcp(lambda rctx: mem, lambda rctx: Scope.of("lin"))

    def state(memory_id: str) -> tuple[str, bool, bool]:
        rec = mem.get(memory_id, user_id="lin")
        return rec.source, rec.verified, rec.pinned

    async def run() -> None:
        async with Client(server) as c:
            schemas = {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
            assert not {"verified", "pinned", "source"} & (set(schemas["update_memory"]) | set(schemas["add_memory"]))
            added = await c.call_tool("add_memory", {"content": "lin drinks jasmine tea", "importance": "high"})
            mid = added.structured_content["id"]
            assert state(mid) == ("agent", False, False)
            for arg in ("verified", "pinned"):
                refused = await c.call_tool("update_memory", {"memory_id": mid, arg: True})
                assert refused.is_error and f"{arg}: an agent cannot set it" in text(refused)
            assert state(mid) == ("agent", False, False)
            assert [e.kind for e in mem.history(mid, user_id="lin")] == ["ADD"]  # nothing half done

            person = mem.add("lin is allergic to peanuts", user_id="lin", verified=True, pinned=True, actor="web")
            reranked = await c.call_tool("update_memory", {"memory_id": person.id, "importance": "high"})
            assert not reranked.is_error and state(person.id) == ("user", True, True)  # still the person's words
            # text the agent rewrites is its own: unconfirmed again, until a person confirms it anew
            rewritten = await c.call_tool("update_memory", {"memory_id": person.id,
                                                            "content": "lin is allergic to peanuts and cashews"})
            assert not rewritten.is_error and state(person.id) == ("agent", False, False)
            last = mem.history(person.id, user_id="lin")[-1]
            assert (last.kind, last.actor, last.before["verified"], last.after["source"]) == (
                "UPDATE", "agent", True, "agent")

    anyio.run(run)


def test_an_agent_records_a_change_and_asks_about_the_past(make_memory: Callable[..., Memory]) -> None:
    """Issue 32 over MCP: `supersede_memory` keeps the old fact, closed where the new one began,
    and the new one is the agent's words (source agent, unconfirmed, unpinned, even where the old
    one was a person's pinned fact); `search_memory` takes `as_of` and `include_superseded`, and its
    hits say when a changed fact held; `get_memory` gives the timeline."""
    from datetime import UTC, datetime

    from memlane.testing import ManualClock

    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    mem = make_memory(clock=clock)
    server = build_mcp(lambda rctx: mem, lambda rctx: Scope.of("lin"))
    old = mem.add("lin works at Siemens", user_id="lin", category="fact", pinned=True, verified=True, actor="web")
    clock.now = datetime(2026, 4, 1, tzinfo=UTC)  # told after the change began

    async def run() -> None:
        async with Client(server) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert {"as_of", "include_superseded"} <= set(tools["search_memory"].input_schema["properties"])
            assert tools["supersede_memory"].annotations.destructive_hint is False
            done = await c.call_tool("supersede_memory", {"memory_id": old.id, "content": "lin works at SAP",
                                                          "valid_from": "2026-03-15", "reason": "new job"})
            assert not done.is_error, text(done)
            new = done.structured_content
            assert (new["supersedes"], new["source"], new["verified"], new["pinned"]) == (old.id, "agent", False, False)
            assert new["valid_from"].startswith("2026-03-15")
            closed = mem.get(old.id, user_id="lin")
            assert (closed.status, closed.superseded_by, closed.valid_to) == (
                "superseded", new["id"], datetime(2026, 3, 15, tzinfo=UTC))
            assert [e.actor for e in mem.history(old.id, user_id="lin")][-1] == "agent"

            now = (await c.call_tool("search_memory", {"query": "lin works at"})).structured_content["memories"]
            assert [h["id"] for h in now] == [new["id"]]
            then = await c.call_tool("search_memory", {"query": "lin works at", "as_of": "2026-03-05"})
            hits = then.structured_content["memories"]
            assert [h["id"] for h in hits] == [old.id] and hits[0]["valid"] == "2026-03-01 – 2026-03-15"
            month = await c.call_tool("search_memory", {"query": "lin works at", "as_of": "2026-03"})  # the CLI's forms
            assert not month.is_error and [h["id"] for h in month.structured_content["memories"]] == [old.id], text(month)
            both = await c.call_tool("search_memory", {"query": "lin works at", "include_superseded": True})
            assert {h["id"] for h in both.structured_content["memories"]} == {old.id, new["id"]}

            got = (await c.call_tool("get_memory", {"memory_id": old.id})).structured_content
            assert [v["id"] for v in got["timeline"]] == [old.id, new["id"]]
            assert got["timeline"][1]["valid"] == "since 2026-03-15" and got["valid_to"].startswith("2026-03-15")
            plain = mem.add("lin keeps bees", user_id="lin")
            assert "timeline" not in (await c.call_tool("get_memory", {"memory_id": plain.id})).structured_content

            again = await c.call_tool("supersede_memory", {"memory_id": old.id, "content": "lin works at BMW"})
            assert again.is_error and "already superseded" in text(again)
            early = await c.call_tool("supersede_memory", {"memory_id": new["id"], "content": "lin works at BMW",
                                                           "valid_from": "2020-01-01"})
            assert early.is_error and "valid_from" in text(early)
            bad = await c.call_tool("search_memory", {"query": "x", "as_of": "someday"})
            assert bad.is_error and "as_of" in text(bad)
            assert len(mem.list(user_id="lin")) == 3  # the refusals wrote nothing

    anyio.run(run)
