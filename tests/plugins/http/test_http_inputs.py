"""``goclaw serve`` in process (the ASGI app): hostile or broken input is refused with a clean
4xx before anything is stored, the OpenAPI document says what the server does, and a disabled
feature's endpoints answer 501."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from goclaw.engine import Engine

TOO_DEEP = {"a": json.loads("[" * 300 + "]" * 300)}  # under the 2,000-character bound


def _client(engine: Any, tokens: Any = None, max_body: int = 20_000) -> TestClient:
    from goclaw_http.server import create_app

    return TestClient(create_app(engine, tokens, max_body=max_body), raise_server_exceptions=False)


@pytest.fixture
def api(engine: Any) -> Iterator[TestClient]:
    engine.agents.create("ada")
    with _client(engine) as client:
        yield client


def _err(resp: Any, status: int, needle: str = "") -> str:
    assert resp.status_code == status, resp.text
    message: str = resp.json()["error"]["message"]
    assert needle in message, message
    return message


def test_deep_metadata_is_refused_before_it_is_stored(api: TestClient, engine: Any) -> None:
    body = {"agent": "ada", "user": "u1", "text": "deep", "metadata": TOO_DEEP}
    _err(api.post("/v1/memory", json=body), 422, "at most 8 deep")
    assert api.get("/v1/memory", params={"agent": "ada", "user": "u1"}).json() == []
    ok = {"agent": "ada", "user": "u1", "text": "shallow", "metadata": {"a": {"b": [1, [2]]}}}
    assert api.post("/v1/memory", json=ok).status_code == 201


def test_a_deep_marker_already_stored_lists_without_metadata(api: TestClient, engine: Any) -> None:
    folder = engine.agent_dir(engine.agents.get("ada")) / "users" / "u1" / "memory"
    folder.mkdir(parents=True)
    meta = json.dumps(TOO_DEEP, separators=(",", ":"))
    (folder / "2026-01-02.md").write_text(
        f"<!-- goclaw-memory id=mem_0123456789 added=2026-01-02T00:00:00Z meta={meta} -->\nold entry\n"
    )
    listed = api.get("/v1/memory", params={"agent": "ada", "user": "u1"})
    assert listed.status_code == 200, listed.text
    assert [(e["id"], e["metadata"], e["text"]) for e in listed.json()] == [
        ("mem_0123456789", {}, "old entry")
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"agent": "ada", "user": "u1", "text": "a \\ud800 b"}',
        b'{"agent": "ada", "user": "u1", "text": "a", "metadata": {"k": "\\udfff"}}',
    ],
)
def test_a_lone_surrogate_is_a_clean_422(api: TestClient, raw: bytes) -> None:
    resp = api.post("/v1/memory", content=raw, headers={"content-type": "application/json"})
    _err(resp, 422, "lone surrogate")
    assert api.get("/v1/memory", params={"agent": "ada", "user": "u1"}).json() == []


def test_a_surrogate_elsewhere_is_a_422_not_a_500(api: TestClient) -> None:
    raw = b'{"agent": "ada", "user": "u1", "role": "user", "content": "x \\ud800"}'
    resp = api.post(
        "/v1/sessions/agent:ada:s1/messages", content=raw, headers={"content-type": "application/json"}
    )
    _err(resp, 422, "not valid Unicode")


def test_a_chunked_body_over_the_limit_is_413(engine: Any) -> None:
    engine.agents.create("ada")

    def chunks() -> Iterator[bytes]:
        yield b'{"agent": "ada", "text": "'
        for _ in range(30):
            yield b"x" * 1000
        yield b'"}'

    with _client(engine, max_body=20_000) as client:
        resp = client.post("/v1/memory", content=chunks(), headers={"content-type": "application/json"})
        _err(resp, 413, "over 20000 bytes")
        small = client.post(
            "/v1/memory",
            content=iter([b'{"agent": "ada", ', b'"text": "hi"}']),
            headers={"content-type": "application/json"},
        )
        assert small.status_code == 201, small.text


def test_limit_below_one_is_refused(api: TestClient) -> None:
    for limit in (-1, 0):
        _err(api.get("/v1/memory", params={"agent": "ada", "user": "u1", "limit": limit}), 422, "limit")


def test_search_honours_a_limit_over_fifty(api: TestClient, engine: Any) -> None:
    folder = engine.agent_dir(engine.agents.get("ada")) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(70):
        (folder / f"note-{i:02d}.md").write_text(f"the walrus count {i} is recorded here\n")
    engine.memory.index("ada")
    body = {"agent": "ada", "query": "walrus count recorded", "limit": 60}
    hits = api.post("/v1/memory/search", json=body).json()["hits"]
    assert len(hits) == 60
    _err(api.post("/v1/memory/search", json={**body, "limit": 1001}), 422, "limit")


def test_a_broken_token_file_does_not_disclose_its_path(engine: Any, workspace: Path) -> None:
    from goclaw_http.tokens import TokenStore

    tokens = TokenStore(workspace)
    secret = tokens.create("admin")
    tokens.path.write_text("{not json", encoding="utf-8")
    with _client(engine, tokens) as client:
        resp = client.get("/v1/agents", headers={"Authorization": f"Bearer {secret}"})
    message = _err(resp, 500, ".goclaw/api_tokens.json is not a valid token file")
    assert str(workspace) not in resp.text and message.startswith(".goclaw/")


def test_openapi_declares_security_typed_answers_and_the_error_shape(api: TestClient) -> None:
    spec = api.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"],
    }
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert schemas["ErrorOut"]["properties"]["error"] == {"$ref": "#/components/schemas/ErrorDetail"}
    assert "security" not in spec["paths"]["/v1/health"]["get"]
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            ok = op["responses"].get("200") or op["responses"]["201"]
            schema = ok["content"]["application/json"]["schema"]
            assert "$ref" in schema.get("items", schema), f"{method} {path}: untyped answer {schema}"
            if path == "/v1/health":
                continue
            assert op["security"] == [{"bearer": []}], (method, path)
            for status in ("401", "403", "404", "413", "422", "501"):
                error = op["responses"][status]["content"]["application/json"]["schema"]
                assert error == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)
    search = spec["paths"]["/v1/memory/search"]["post"]["responses"]["200"]
    assert search["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/SearchOut"}
    assert schemas["SearchBody"]["properties"]["limit"]["anyOf"][0]["maximum"] == 1000


def test_a_disabled_feature_answers_501(workspace: Path, database_url: str | None) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.memory"]\n', encoding="utf-8")
    with Engine.open(workspace, database_url=database_url) as eng, _client(eng) as client:
        eng.agents.create("ada")
        resp = client.post("/v1/memory/search", json={"agent": "ada", "query": "x"})
        _err(resp, 501, "plugin goclaw.memory is disabled")
        _err(client.get("/v1/memory/get", params={"agent": "ada", "path": "MEMORY.md"}), 501, "memory")
        _err(client.get("/v1/sessions/k/messages", params={"agent": "ada"}), 501, "'sessions'")
        _err(client.get("/v1/nothing-here"), 404)
        assert client.get("/v1/kg/nothing").status_code == 404  # its plugin is on
