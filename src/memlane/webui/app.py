"""The web UI: the plumbing every page shares (plumbing.py) with the pages mounted on it
(`memory_pages`, `scope_pages`, `session_pages`). The pages import the plumbing, this
module imports the pages: the imports point one way."""

from __future__ import annotations

from fastapi import FastAPI

from memlane.webui import memory_pages, scope_pages, session_pages
from memlane.webui.plumbing import (
    HERE,
    Backend,
    Ctx,
    Denied,
    Fixed,
    Plumbing,
    Redirect,
    loopback,
    safe_next,
)


class WebUI(Plumbing):
    """The web UI: `mount(app)` adds its routes to a FastAPI app.

    `WebUI(Fixed(memory, keys))`, or `WebUI(Fixed(memory, local_user="me"))` for one local
    user without keys; `memlane serve` passes a backend reading its own app state."""

    def mount(self, app: FastAPI) -> None:
        session_pages.register(self)
        memory_pages.register(self)
        scope_pages.register(self)
        app.include_router(self.router)


__all__ = ["HERE", "Backend", "Ctx", "Denied", "Fixed", "Plumbing", "Redirect", "WebUI", "loopback", "safe_next"]
