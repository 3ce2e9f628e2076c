"""memlane's web UI: server-rendered pages over one `Memory`, mounted into `memlane serve`.

    from memlane.webui import WebUI
    WebUI(memory, keys=key_store).mount(app)   # or open_user="local" on loopback without keys

Pages: Memories, a memory's history, Conversations, Files, Insight, Forget me; zh / en."""

from memlane.webui.app import WebUI
from memlane.webui.auth import KeyStore, Principal

__all__ = ["KeyStore", "Principal", "WebUI"]
