"""uvicorn's settings for `memlane serve`, chosen on purpose, and the one thing it lacks.

uvicorn times out an idle keep-alive connection but not a client that connects and then
sends its request line and headers a byte at a time: twenty such clients held twenty
connections for as long as they liked. `protocol(seconds)` is uvicorn's h11 protocol with a
deadline for every request's head (from the connection, or from the first byte of the
next request on a kept-alive one); the body has its own deadline in the guard
(`server.body_seconds`). h11 bounds a request's head at `server.max_header_bytes`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from memlane.config import ServerConfig


class _TimedHeads(H11Protocol):
    head_seconds = 10.0
    _timer: asyncio.TimerHandle | None = None
    _cycle: Any = None  # the request cycle running when the timer was armed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._timer is None and (self.cycle is None or self.cycle.response_complete):
            self._arm()  # the first byte of a new request on a kept-alive connection
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self._timer is not None and self.cycle is not self._cycle:  # a request's head arrived
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._cycle = self.cycle
        self._timer = self.loop.call_later(self.head_seconds, self._late)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _late(self) -> None:
        self._timer = None
        if self.cycle is self._cycle and not self.transport.is_closing():
            self.transport.close()  # no request line and headers in time: a slow or idle client


def protocol(head_seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request head is late."""
    return type("MemlaneH11Protocol", (_TimedHeads,), {"head_seconds": head_seconds})


def uvicorn_options(server: ServerConfig, log_level: str) -> dict[str, Any]:
    """Every uvicorn setting `memlane serve` passes (one process or several workers)."""
    return {
        "log_level": log_level,
        "access_log": False,  # the guard logs one line per request, with its id
        "http": protocol(server.header_seconds),
        "h11_max_incomplete_event_size": server.max_header_bytes,
        "limit_concurrency": server.max_connections,  # past it: 503 at once, not a queue
        "timeout_keep_alive": int(server.keep_alive_seconds),
        "timeout_graceful_shutdown": int(server.shutdown_seconds) + 1,
    }
