"""memlane's web UI: server-rendered pages over one `Memory`, mounted into `memlane serve`.

    from memlane.webui import Fixed, WebUI
    WebUI(Fixed(memory, key_store)).mount(app)   # or Fixed(memory, local_user="me"): loopback, no keys

Pages: Memories, a memory's history, Conversations, Files, Insight, Forget me; zh / en."""

from memlane.webui.app import Backend, Fixed, WebUI
from memlane.webui.auth import KeyStore, Principal

__all__ = ["Backend", "Fixed", "KeyStore", "Principal", "WebUI"]
