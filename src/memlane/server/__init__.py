"""memlane's server: REST (FastAPI) and MCP over one engine per process (issue 15).

    from memlane.server import create_app
    app = create_app(Config.from_env())          # uvicorn.run(app, host="127.0.0.1", port=8765)

Modules: `app` (create_app, lifespan), `auth` (who a request is; the dependencies below),
`keys` (API keys, hashed in the home's database), `routes` (`/v1`), `schemas` (request
bodies, `jsonable`), `errors` (`{error, detail}` JSON, request ids, body limits), `mcp`.

A router of another feature (the web UI) gets the engine and the request's scope from the
same dependencies the `/v1` routes use, and so inherits auth, open mode and isolation:

    from fastapi import APIRouter
    from memlane.server.auth import MemoryDep, ScopeDep, AdminDep   # Annotated[..., Depends(...)]
    from memlane.server.schemas import jsonable, who

    router = APIRouter(prefix="/ui/api")

    @router.get("/memories")
    def memories(mem: MemoryDep, scope: ScopeDep) -> dict:
        return {"memories": jsonable(mem.list(**who(scope)))}

    app = create_app(config); app.include_router(router)

- `get_memory(request) -> Memory` (`MemoryDep`): the process's one `Memory`; 503 while the
  server starts or stops. Call only its public methods.
- `get_scope(request) -> Scope` (`ScopeDep`): the key's scope (`Authorization: Bearer <key>`);
  an admin key names one with `X-Memlane-User` / `X-Memlane-Agent`; open mode (loopback, no
  key configured): `server.local_user`. Pass it on with `**who(scope)`, never a client's ids.
- `get_principal(request) -> Principal` (`PrincipalDep`): the key itself (`.key_id`, `.admin`).
- `require_admin` (`AdminDep`): 403 unless an admin key (or open mode, the local operator).
- Raise `memlane.errors` exceptions (mapped to 404/422/502/503) or `errors.ApiError(status,
  error, detail)`; every error body is `{"error", "detail"[, "field"], "request_id"}`.
"""

from memlane.server.app import create_app
from memlane.server.auth import get_memory, get_principal, get_scope, require_admin
from memlane.server.keys import KeyStore, Principal

__all__ = ["KeyStore", "Principal", "create_app", "get_memory", "get_principal", "get_scope", "require_admin"]
