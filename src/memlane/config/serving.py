"""`memlane serve`: the server and its web UI."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from memlane.config.base import _Section


class ServerConfig(_Section):
    """`memlane serve` (issue 15); none of these come from a seed."""

    host: str = "127.0.0.1"  # loopback by default: another address needs API keys
    port: int = Field(8765, ge=0, le=65535)
    # with no key configured and a loopback bind, requests run open as this one local user
    local_user: str = "local"
    # Not from a seed (issue 28): the host names a loopback server answers to besides localhost,
    # 127.0.0.1 and [::1] (any other is refused with 421: DNS rebinding). On another bind, with
    # keys required, any name is answered unless this lists some; "*" answers every name
    allowed_hosts: list[str] = []
    # open mode (loopback, no key ever made) serves the local user but not the admin routes
    # (status, purge of any user), unless the person starting the server asks: --open-admin
    open_admin: bool = False
    # a server that has seen a key stays keyed; it reads the key store again this often to see a
    # `memlane keys reopen` run by another process (a new key closes open mode within 1 s)
    keyed_recheck_seconds: float = Field(10.0, gt=0)
    # bodies are refused with 413 before they are read past these sizes: an API or MCP call's
    # JSON, a web UI form (a request's messages are capped by max_messages_per_request too); an
    # import (POST /v1/import, the web UI's import form), room for a few thousand memories
    max_json_bytes: int = Field(2_000_000, ge=1_024)
    max_body_bytes: int = Field(8_000_000, ge=1_024)
    max_json_depth: int = Field(32, ge=2)  # deeper JSON is refused with 422, parsed off the event loop
    # a client that has not sent its request line and headers after this many seconds, or its
    # body after body_seconds, is cut off (408): slow clients cannot hold connections open
    header_seconds: float = Field(10.0, gt=0)
    body_seconds: float = Field(30.0, gt=0)
    max_header_bytes: int = Field(16_384, ge=1_024)  # a request's line and headers together
    # connections and requests at once, past which uvicorn answers 503 at once (limit_concurrency)
    max_connections: int = Field(256, ge=1)
    # one API key's requests running at once (bench/server_attack.py: with 2, one key's long
    # queries doubled another user's search p95); more wait their turn up to key_queue_seconds,
    # then 429: a key flooding the server queues behind itself, other keys keep their share
    max_requests_per_key: int = Field(1, ge=1)
    # one add_messages request over REST or MCP: 1,000 messages held the store ~0.4 s and every
    # other user's search with it; an agent adds a turn or two at a time (bulk: POST /v1/import)
    max_messages_per_request: int = Field(100, ge=1)
    max_request_chars: int = Field(400_000, ge=1)  # their characters: two of the longest turns
    # turns one API key may add a minute over REST and MCP (a token bucket; 429 past it): each
    # turn is indexed after it on the cores every user shares, and 700 turns a second from one
    # key doubled another user's search latency. Import is not counted
    max_turns_per_minute: int = Field(600, ge=1)
    key_queue_seconds: float = Field(30.0, gt=0)
    scheduler: bool = True  # run the consolidation scheduler inside the server
    shutdown_seconds: float = Field(10.0, ge=0)  # graceful shutdown waits this long for background work
    # an idle keep-alive connection is closed after this; longer than uvicorn's 5 s, so a busy
    # client's pooled connection is rarely closed under it (a reset its next request would see)
    keep_alive_seconds: float = Field(30.0, gt=0)
    # requests run the engine in up to this many threads at once (anyio's default); the store
    # serializes on one connection, and bench/server.py measured no gain from 4 under 50 clients
    threads: int = Field(40, ge=1, le=256)
    # server processes of one `memlane serve` on its port (forked, an engine each; worker 0 runs
    # the scheduler): more use more cores, each holds its own caches and embedding model
    workers: int = Field(1, ge=1, le=64)

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _hosts_from_text(cls, value: Any) -> Any:
        """From the environment: "a.example,b.example" or a JSON list."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                try:
                    return json.loads(text)
                except ValueError:
                    raise ValueError("is not a JSON list of host names") from None
            return [h.strip() for h in text.split(",") if h.strip()]
        return value


class WebConfig(_Section):
    """The web UI of `memlane serve` (issue 16); none of these come from a seed."""

    session_hours: float = Field(12.0, gt=0)  # a signed-in browser is asked for its key again after this
    page_size: int = Field(50, ge=1, le=1000)  # memories per page of the table: one screen of rows
    search_limit: int = Field(500, ge=1, le=10_000)  # a search in the table shows its best this many, paged
