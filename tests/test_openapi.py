"""The OpenAPI schema says what the server does (issue 33): it is a valid OpenAPI document,
every operation has a summary, a description, its parameters, its body and its responses,
errors have the shape the server really sends (`{error, detail}`, not FastAPI's
HTTPValidationError), and real answers of a running server validate against the schema —
called through a small client driven by the schema alone (operation ids, parameter places)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
jsonschema = pytest.importorskip("jsonschema")
spec_validator = pytest.importorskip("openapi_spec_validator")

from .server_support import Server, create_key  # noqa: E402

BODY_METHODS = {"post", "put", "patch"}


@dataclass
class Api:
    """A client made from the schema: an operation id, its parameters by name, a JSON body."""

    server: Server
    schema: dict[str, Any]
    key: str
    admin: str

    def operation(self, op_id: str) -> tuple[str, str, dict[str, Any]]:
        for path, methods in self.schema["paths"].items():
            for method, op in methods.items():
                if op.get("operationId") == op_id:
                    return method, path, op
        raise KeyError(op_id)

    def call(self, op_id: str, *, key: str | None = "", body: Any = None, headers: dict[str, str] | None = None,
             **params: Any) -> tuple[httpx.Response, dict[str, Any]]:
        method, path, op = self.operation(op_id)
        query: dict[str, Any] = {}
        for p in op.get("parameters", []):
            if p["name"] in params:
                value = params.pop(p["name"])
                if p["in"] == "path":
                    path = path.replace("{" + p["name"] + "}", str(value))
                else:
                    query[p["name"]] = value
        assert not params, f"{op_id} documents no parameter {sorted(params)}"
        auth = {"Authorization": f"Bearer {self.key if key == '' else key}"} if key is not None else {}
        with httpx.Client(base_url=self.server.url, timeout=30) as c:
            r = c.request(method.upper(), path, params=query, json=body, headers={**auth, **(headers or {})})
        return r, op

    def check(self, r: httpx.Response, op: dict[str, Any]) -> Any:
        """The answer's status is documented for the operation, and its body fits that schema."""
        documented = op["responses"]
        assert str(r.status_code) in documented, (op["operationId"], r.status_code, sorted(documented))
        content = documented[str(r.status_code)].get("content", {})
        media = r.headers["content-type"].split(";")[0]
        assert media in content, (op["operationId"], media, sorted(content))
        body = r.json() if media == "application/json" else r.text
        schema = {**content[media]["schema"], "components": self.schema["components"]}
        jsonschema.Draft202012Validator(schema).validate(body)
        return body


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    home = tmp_path_factory.mktemp("openapi") / "home"
    key, admin = create_key(home, "--user", "lin"), create_key(home, "--admin")
    server = Server(home)
    try:
        schema = httpx.get(f"{server.url}/openapi.json", timeout=30).json()
        yield Api(server, schema, key, admin)
    finally:
        server.stop()


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            yield method, path, op


def test_the_schema_is_valid_openapi(api: Api) -> None:
    spec_validator.validate(api.schema)
    assert api.schema["openapi"].startswith("3.1")
    assert api.schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"


def test_every_operation_documents_itself_and_the_real_error_shape(api: Api) -> None:
    text = str(api.schema)
    assert "HTTPValidationError" not in text  # FastAPI's 422 shape, which the server never sends
    error = api.schema["components"]["schemas"]["Error"]
    assert {"error", "detail"} <= set(error["required"]) and {"field", "request_id"} <= set(error["properties"])
    ops = list(operations(api.schema))
    assert len(ops) >= 35
    for method, path, op in ops:
        name = f"{method.upper()} {path}"
        assert op.get("summary") and op.get("description"), name
        successes = {s: r for s, r in op["responses"].items() if s.startswith("2")}
        assert successes and all(r.get("content") for r in successes.values()), name
        assert all(r["content"][m].get("schema") for r in successes.values() for m in r["content"]), name
        for status, response in op["responses"].items():
            if status[0] in "45" and path != "/healthz":
                assert response["content"] == {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}, \
                    (name, status)
        if path.startswith("/v1/"):
            assert {"401", "422", "503"} <= set(op["responses"]), name
            assert op["security"] == [{"apiKey": []}], name
        if "{memory_id}" in path or ("{session_id}" in path and method != "post"):
            assert "404" in op["responses"], name
        if "{" in path:
            named = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert named == {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}, name


def test_every_route_that_reads_a_body_declares_it(api: Api) -> None:
    from memlane.server import routes

    for router in (routes.v1, routes.admin):
        for route in router.routes:
            for method in {m.lower() for m in route.methods} & BODY_METHODS:  # type: ignore[attr-defined]
                op = api.schema["paths"][route.path][method]  # type: ignore[attr-defined]
                source = inspect.getsource(route.endpoint)  # type: ignore[attr-defined]
                reads = "request.body()" in source or "request.json()" in source or "body:" in source
                if reads:
                    assert op.get("requestBody", {}).get("content"), (method, route.path)  # type: ignore[attr-defined]


def test_real_errors_match_the_documented_shape(api: Api) -> None:
    r, op = api.call("get_memory_v1_memories__memory_id__get", key=None, memory_id="abc")
    assert r.status_code == 401 and api.check(r, op)["error"] == "Unauthorized"
    r, op = api.call("get_memory_v1_memories__memory_id__get", memory_id="nothere123")
    assert r.status_code == 404 and api.check(r, op)["error"] == "NotFound"
    # the engine's own validation, and FastAPI's (a query parameter out of range): one shape
    r, op = api.call("search_v1_search_post", body={"query": "a\x00b"})  # NUL: not text
    body = api.check(r, op)
    assert r.status_code == 422 and body["error"] == "ValidationError" and body["field"] == "query"
    r, op = api.call("list_memories_v1_memories_get", limit=0)
    assert r.status_code == 422 and api.check(r, op)["field"] == "limit"
    r, op = api.call("search_v1_search_post", body={"query": "x", "nope": 1})
    assert r.status_code == 422 and api.check(r, op)["field"] == "nope"
    r, op = api.call("purge_v1_admin_purge_post", body={"user_id": "someone"})
    assert r.status_code == 403 and api.check(r, op)["error"] == "Forbidden"
    r, op = api.call("list_sessions_v1_sessions_get", headers={"Host": "evil.example"})
    assert r.status_code == 421 and api.check(r, op)["error"] == "MisdirectedRequest"
    added, op = api.call("add_memory_v1_memories_post", body={"content": "用户对花生过敏", "category": "fact"})
    r, op = api.call("restore_memory_v1_memories__memory_id__restore_post", memory_id=added.json()["id"])
    assert r.status_code == 409 and api.check(r, op)["error"] == "Conflict"
    with httpx.Client(base_url=api.server.url, timeout=30) as c:  # a body a plain form could send
        r = c.post("/v1/search", content=b"query=x", headers={"Authorization": f"Bearer {api.key}",
                                                             "Content-Type": "text/plain"})
    assert r.status_code == 415 and api.check(r, api.operation("search_v1_search_post")[2])["error"]
    r, op = api.call("export_v1_export_get", format="pdf")  # a text route's error is JSON too
    assert r.status_code == 422 and api.check(r, op)["field"] == "format"


def test_real_answers_match_the_documented_schemas(api: Api) -> None:
    r, op = api.call("add_memory_v1_memories_post", body={"content": "I prefer green tea", "category": "preference"})
    memory = api.check(r, op)
    assert r.status_code == 201
    for op_id in ("get_memory_v1_memories__memory_id__get", "memory_history_v1_memories__memory_id__history_get",
                  "memory_timeline_v1_memories__memory_id__timeline_get",
                  "memory_forecast_v1_memories__memory_id__forecast_get",
                  "pin_memory_v1_memories__memory_id__pin_post"):
        r, op = api.call(op_id, memory_id=memory["id"])
        assert r.status_code == 200 and api.check(r, op)
    r, op = api.call("add_messages_v1_sessions__session_id__messages_post", session_id="s1",
                     body={"messages": [{"role": "user", "content": "I am allergic to peanuts"}]})
    assert api.check(r, op)["stored"] == 1
    r, op = api.call("search_v1_search_post", body={"query": "tea", "min_score": 0})
    assert api.check(r, op)["hits"]
    checked = [("list_memories_v1_memories_get", {}), ("list_sessions_v1_sessions_get", {}),
               ("session_turns_v1_sessions__session_id__turns_get", {"session_id": "s1"}),
               ("build_context_v1_context_post", {"body": {"session_id": "s1", "query": "tea"}}),
               ("tool_schemas_v1_tools_get", {"format": "anthropic"}),
               ("end_session_v1_sessions__session_id__end_post", {"session_id": "s1", "body": {"wait": True}}),
               ("list_episodes_v1_episodes_get", {}), ("stats_v1_stats_get", {}),
               ("activity_v1_activity_get", {"days": 7}), ("get_scratchpad_v1_scratchpad_get", {}),
               ("call_tool_v1_tools_call_post", {"body": {"name": "search_memory", "arguments": {"query": "tea"}}}),
               ("consolidate_v1_consolidate_post", {"body": {"dry_run": True}}),
               ("export_v1_export_get", {}),
               ("import__v1_import_post", {"from": "mem0", "dry_run": True,
                                           "body": [{"id": "m1", "memory": "Likes oolong", "user_id": "x"}, 7]}),
               ("delete_memory_v1_memories__memory_id__delete", {"memory_id": memory["id"]})]
    for op_id, params in checked:
        r, op = api.call(op_id, **params)
        assert r.status_code == 200, (op_id, r.text[:300])
        api.check(r, op)
    r, op = api.call("healthz_healthz_get", key=None)
    assert api.check(r, op)["status"] == "ok"


def test_the_docs_page_shows_bodies_responses_and_errors(api: Api) -> None:
    page = httpx.get(f"{api.server.url}/docs", timeout=30).text
    assert "<script" not in page and "://" not in page
    for shown in ("NewMemory", "MemoryOut", "Error", "POST /v1/memories", "<code>content</code>", "409"):
        assert shown in page, shown
