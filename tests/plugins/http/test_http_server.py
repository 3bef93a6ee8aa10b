"""``goclaw serve``: a real server process, real HTTP (keep-alive), on SQLite and
PostgreSQL; scoped tokens, one-line JSON errors, body limits, and scope escapes refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import run_cli
from tests.surfaces_helpers import free_port, module_database, running, seed, server_env

pytest.importorskip("fastapi")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from tests.surfaces_helpers import goclaw_cmd

    root = tmp_path_factory.mktemp(f"http-{request.param}")
    with module_database(str(request.param)) as url:
        ws = root / "ws"
        home = root / "home"
        home.mkdir()
        seed(ws, url)
        db = ["--database-url", url] if url else []
        tokens = {}
        for name, scope in {
            "admin": [],
            "u1": ["--agent", "ada", "--user", "u1"],
            "bob": ["--agent", "bob"],
        }.items():
            res = run_cli(
                ["serve", "token", "create", name, *scope, "--json"], workspace=ws, database_url=url
            )
            assert res.code == 0, res.err
            tokens[name] = json.loads(res.out)["token"]
        port = free_port()
        args = [
            *goclaw_cmd(),
            "--workspace",
            str(ws),
            *db,
            "serve",
            "--port",
            str(port),
            "--max-body",
            "20000",
            "--workers",
        ]
        with running(args, server_env(home), port, log_path=root / "server.log"):
            base = f"http://127.0.0.1:{port}/v1"
            clients = {
                n: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {t}"})
                for n, t in tokens.items()
            }
            clients["anon"] = httpx.Client(base_url=base)
            try:
                yield {"ws": ws, "url": url, "c": clients, "base": base, "log": root / "server.log"}
            finally:
                for c in clients.values():
                    c.close()


def _err(resp: httpx.Response, status: int, needle: str = "") -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert "\n" not in resp.text.strip()
    body: dict[str, Any] = resp.json()["error"]
    assert set(body) == {"type", "message"} and needle in body["message"], body
    return body


def test_auth_and_openapi(api: dict[str, Any]) -> None:
    c = api["c"]
    assert c["anon"].get("/health").json() == {"status": "ok"}
    _err(c["anon"].get("/agents"), 401, "missing bearer token")
    bad = httpx.get(api["base"] + "/agents", headers={"Authorization": "Bearer gck_nope"})
    _err(bad, 401, "unknown or revoked token")
    assert {a["name"] for a in c["admin"].get("/agents").json()} == {"ada", "bob"}
    _err(c["u1"].get("/agents"), 403, "needs an admin token")
    spec = httpx.get(api["base"].removesuffix("/v1") + "/openapi.json").json()
    assert {"/v1/prompt", "/v1/memory/search", "/v1/tools/{name}", "/v1/kg/entities"} <= set(spec["paths"])
    # tokens are stored hashed
    stored = (api["ws"] / ".goclaw" / "api_tokens.json").read_text()
    assert "gck_" not in stored and "sha256" in stored


def test_prompt_files_skills(api: dict[str, Any]) -> None:
    c = api["c"]["u1"]
    resp = c.put("/files/USER.md", json={"agent": "ada", "user": "u1", "content": "- **Name:** U1\n"})
    assert resp.status_code == 200, resp.text
    assert (
        c.get("/files/USER.md", params={"agent": "ada", "user": "u1"}).json()["content"] == "- **Name:** U1\n"
    )
    names = {f["name"] for f in c.get("/files", params={"agent": "ada", "user": "u1"}).json()}
    assert "USER.md" in names
    prompt = c.post("/prompt", json={"agent": "ada", "user": "u1", "tools": ["memory_search"]}).json()
    assert "Memory Recall" in prompt["prompt"] and "U1" in prompt["prompt"]
    assert isinstance(c.get("/skills", params={"agent": "ada", "user": "u1"}).json(), list)
    assert c.get("/skills/search", params={"q": "x", "agent": "ada", "user": "u1"}).status_code == 200
    _err(c.get("/skills/nope", params={"agent": "ada", "user": "u1"}), 404, "no skill")


def test_memory_sessions_tools_kg(api: dict[str, Any]) -> None:
    c = api["c"]["u1"]
    hits = c.post("/memory/search", json={"agent": "ada", "user": "u1", "query": "Gutenberg vault"}).json()[
        "hits"
    ]
    assert {"MEMORY.md", "users/u1/memory/2026-01-01.md"} <= {h["path"] for h in hits}
    mine = next(h for h in hits if h["path"].startswith("users/u1/"))
    got = c.get("/memory/get", params={"agent": "ada", "user": "u1", "id": mine["id"]}).json()
    assert "4711" in got["text"]
    lex = c.post(
        "/memory/search", json={"agent": "ada", "user": "u1", "query": "vault", "channel": "lexical"}
    )
    assert lex.json()["hits"][0]["id"] == mine["id"]
    added = c.post(
        "/memory", json={"agent": "ada", "user": "u1", "text": "u1 drinks oolong", "tags": ["tea"]}
    )
    assert added.status_code == 201, added.text
    entry = added.json()
    assert [
        e["id"] for e in c.get("/memory", params={"agent": "ada", "user": "u1", "tag": "tea"}).json()
    ] == [entry["id"]]
    resp = c.patch(
        "/memory", json={"agent": "ada", "user": "u1", "id": entry["id"], "text": "u1 drinks sencha"}
    )
    assert resp.status_code == 200, resp.text
    resp = c.delete("/memory", params={"agent": "ada", "user": "u1", "id": entry["id"]})
    assert resp.json()["removed_lines"] == 2
    key = "agent:ada:http-1"
    resp = c.post(
        f"/sessions/{key}/messages", json={"agent": "ada", "user": "u1", "role": "user", "content": "hi"}
    )
    assert resp.status_code == 201, resp.text
    msgs = c.get(f"/sessions/{key}/messages", params={"agent": "ada", "user": "u1"}).json()
    assert [m["content"] for m in msgs] == ["hi"]
    assert c.post(f"/sessions/{key}/end", json={"agent": "ada", "user": "u1"}).json()["status"] == "ended"
    decls = c.get("/tools", params={"agent": "ada", "user": "u1", "format": "anthropic"}).json()
    assert all("input_schema" in d and "user" not in d["input_schema"]["properties"] for d in decls)
    res = c.post(
        "/tools/memory_search", json={"agent": "ada", "user": "u1", "arguments": {"query": "vault"}}
    ).json()
    assert not res["is_error"] and res["data"]["hits"]
    assert c.get("/kg/entities", params={"agent": "ada", "user": "u1"}).status_code == 200
    assert c.get("/kg/relations", params={"agent": "ada", "user": "u1"}).status_code == 200
    assert api["c"]["admin"].post("/workers/run-once").status_code == 200
    assert api["c"]["admin"].post("/memory/index", json={"agent": "ada"}).json()["files_scanned"] >= 3


def test_memory_search_filters(api: dict[str, Any]) -> None:
    c = api["c"]["u1"]

    def paths(body: dict[str, Any]) -> list[str]:
        resp = c.post("/memory/search", json={"agent": "ada", "user": "u1", "query": "Gutenberg", **body})
        assert resp.status_code == 200, resp.text
        return sorted(h["path"] for h in resp.json()["hits"] if h["tier"] == "document")

    assert paths({"filters": {"path": "memory/"}}) == ["users/u1/memory/2026-01-01.md"]
    assert paths({"filters": {"scope": "agent"}, "channel": "lexical"}) == ["MEMORY.md"]
    assert paths({"filters": {"since": "2026-01-02"}}) == []
    assert paths({"filters": {"until": "2026-01-01"}}) == ["users/u1/memory/2026-01-01.md"]
    bad = {
        "agent": "ada",
        "user": "u1",
        "query": "Gutenberg",
        "channel": "lexical",
        "filters": {"since": "x"},
    }
    _err(c.post("/memory/search", json=bad), 422, "YYYY-MM-DD")


def test_scope_escapes_are_refused(api: dict[str, Any]) -> None:
    u1, bob = api["c"]["u1"], api["c"]["bob"]
    # params naming another user or agent, or the agent level
    _err(u1.post("/memory/search", json={"agent": "ada", "user": "u2", "query": "boat"}), 403, "user 'u2'")
    _err(u1.post("/memory/search", json={"agent": "bob", "user": "u1", "query": "x"}), 403, "agent 'bob'")
    _err(u1.post("/memory/search", json={"agent": "ada", "query": "x"}), 403, "scoped to users")
    _err(u1.put("/files/SOUL.md", json={"agent": "ada", "content": "evil"}), 403)
    _err(bob.get("/files", params={"agent": "ada"}), 403)
    # tool arguments naming the scope
    res = u1.post(
        "/tools/memory_search", json={"agent": "ada", "user": "u1", "arguments": {"query": "x", "user": "u2"}}
    )
    assert res.json()["is_error"] and "cannot be set by the model" in res.json()["text"]
    # another user's paths and hit ids
    resp = u1.get(
        "/memory/get", params={"agent": "ada", "user": "u1", "path": "users/u2/memory/2026-01-01.md"}
    )
    assert resp.status_code == 403 and "boat" not in resp.text
    hits = (
        api["c"]["admin"]
        .post("/memory/search", json={"agent": "ada", "user": "u2", "query": "boat"})
        .json()["hits"]
    )
    u2_id = next(h["id"] for h in hits if h["path"].startswith("users/u2/"))
    resp = u1.get("/memory/get", params={"agent": "ada", "user": "u1", "id": u2_id})
    _err(resp, 403, "belongs to another agent or user")
    _err(u1.delete("/memory", params={"agent": "ada", "user": "u1", "id": u2_id}), 403)
    # another user's session is not revealed
    admin = api["c"]["admin"]
    admin.post(
        "/sessions/agent:ada:u2s/messages",
        json={"agent": "ada", "user": "u2", "role": "user", "content": "x"},
    )
    _err(u1.get("/sessions/agent:ada:u2s/messages", params={"agent": "ada", "user": "u1"}), 404)
    body = {"agent": "ada", "user": "u1", "role": "user", "content": "hijack"}
    _err(u1.post("/sessions/agent:ada:u2s/messages", json=body), 404)


def test_workers_run_in_process(api: dict[str, Any]) -> None:
    import time

    c = api["c"]["u1"]
    key = "agent:ada:consolidate-me"
    for role, text in (("user", "Alice Smith will lead Project Atlas in Berlin."), ("assistant", "Noted.")):
        body = {"agent": "ada", "user": "u1", "role": role, "content": text}
        assert c.post(f"/sessions/{key}/messages", json=body).status_code == 201
    assert c.post(f"/sessions/{key}/end", json={"agent": "ada", "user": "u1"}).status_code == 200
    deadline = time.monotonic() + 60
    while True:  # the server's own worker thread consolidates the ended session
        names = {e["name"] for e in c.get("/kg/entities", params={"agent": "ada", "user": "u1"}).json()}
        if "Alice Smith" in names:
            break
        if time.monotonic() > deadline:
            status = run_cli(["workers", "status"], workspace=api["ws"], database_url=api["url"])
            events = run_cli(["workers", "events"], workspace=api["ws"], database_url=api["url"])
            log = api["log"].read_text()[-3000:]
            pytest.fail(f"not consolidated: {names}\n{status.out}{status.err}\n{events.out}\n{log}")
        time.sleep(0.5)


def test_errors_and_limits(api: dict[str, Any]) -> None:
    c = api["c"]["admin"]
    _err(c.post("/memory/search", json={"agent": "ada"}), 422, "query")
    _err(c.post("/memory/search", content=b"{not json", headers={"content-type": "application/json"}), 422)
    _err(c.post("/memory/search", json={"agent": "nobody", "query": "x"}), 404)
    _err(c.post("/memory", json={"agent": "ada", "text": "x" * 30_000}), 413, "over 20000 bytes")
    _err(c.get("/nope"), 404)
    res = c.post("/memory", json={"agent": "ada", "text": "   "})
    _err(res, 422, "needs some text")


def test_serve_refuses_without_tokens(tmp_path: Path) -> None:
    res = run_cli(["serve"], workspace=tmp_path)
    assert res.code != 0 and "no API tokens yet" in res.err
    res = run_cli(["serve", "--no-auth", "--host", "0.0.0.0"], workspace=tmp_path)
    assert res.code != 0 and "loopback" in res.err
    res = run_cli(["serve", "token", "revoke", "ghost"], workspace=tmp_path)
    assert res.code != 0 and "no token named" in res.err


def test_broken_input_keeps_the_connection(api: dict[str, Any]) -> None:
    """A real server: a lone surrogate is a clean 422 and the keep-alive connection survives;
    a chunked body over --max-body is a 413."""
    c = api["c"]["admin"]
    raw = b'{"agent": "ada", "text": "a \\ud800 b"}'
    _err(c.post("/memory", content=raw, headers={"content-type": "application/json"}), 422, "surrogate")
    assert c.get("/agents").status_code == 200  # same connection: not reset

    def chunks() -> Iterator[bytes]:
        yield b'{"agent": "ada", "text": "'
        for _ in range(25):
            yield b"x" * 1000
        yield b'"}'

    _err(c.post("/memory", content=chunks(), headers={"content-type": "application/json"}), 413, "over 20000")
