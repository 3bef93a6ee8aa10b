"""The memory write API: add, correct, delete, list — Python and CLI."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from goclaw.contracts.tools import ToolContext
from goclaw.errors import NotFoundError, PermissionDeniedError, ValidationError
from tests.helpers import run_cli


@pytest.fixture
def eng(engine: Any) -> Any:
    engine.agents.create("ada")
    return engine


def _paths(eng: Any, query: str, user: str | None = None) -> list[str]:
    return [h.path for h in eng.memory.search(query, "ada", user, channel="lexical")]


def test_add_appends_to_the_dated_file_and_indexes_at_once(eng: Any) -> None:
    w = eng.memory.writer
    e1 = w.add("ada", "The deploy window is Thursday afternoon.", tags=["deploy", "#ops"], day="2026-12-01")
    e2 = w.add("ada", "Staging lives on host kiwi.", day="2026-12-01", metadata={"source": "chat", "n": 2})
    u1 = w.add("ada", "Alice prefers tea over coffee.", user="alice", day="2026-12-01")
    assert e1.path == e2.path == "memory/2026-12-01.md"
    assert u1.path == "users/alice/memory/2026-12-01.md" and u1.scope == "user"
    text = (eng.agent_dir(eng.agents.get("ada")) / e1.path).read_text()
    assert text.count("<!-- goclaw-memory ") == 2 and "tags=deploy,ops" in text
    assert (e1.start_line, e1.end_line, e2.start_line) == (1, 2, 4)
    # searchable immediately, in the right scope only
    assert _paths(eng, "deploy window Thursday") == ["memory/2026-12-01.md"]
    assert _paths(eng, "tea coffee") == []
    assert _paths(eng, "tea coffee", "alice") == ["users/alice/memory/2026-12-01.md"]
    listed = w.list("ada")
    assert [e.id for e in listed] == [e2.id, e1.id]  # newest first
    assert listed[0].metadata == {"n": 2, "source": "chat"} and listed[1].tags == ["deploy", "ops"]
    assert [e.id for e in w.list("ada", tag="deploy")] == [e1.id]
    assert [e.id for e in w.list("ada", "alice")] == [u1.id]
    for bad in ("", "   ", "x" * 20_001, "a\n<!-- goclaw-memory id=mem_0123456789 added=x -->"):
        with pytest.raises(ValidationError):
            w.add("ada", bad)
    with pytest.raises(ValidationError):
        w.add("ada", "ok", tags=["no spaces"])
    with pytest.raises(ValidationError):
        w.add("ada", "ok", day="yesterday")
    with pytest.raises(ValidationError):
        w.add("ada", "ok", user="../bob")


def test_correct_and_delete_by_id_path_and_hit_id(eng: Any) -> None:
    w = eng.memory.writer
    e1 = w.add("ada", "The office wifi is called Meadow.", day="2026-12-01")
    e2 = w.add("ada", "Lunch is at noon.", day="2026-12-01")
    res = w.correct("ada", "The office wifi is called Prairie.", id=e1.id)
    assert _paths(eng, "Prairie") == ["memory/2026-12-01.md"] and _paths(eng, "Meadow") == []
    entry = next(e for e in w.list("ada") if e.id == e1.id)
    assert entry.text == "The office wifi is called Prairie." and entry.corrected
    got = eng.memory.get("ada", res["path"], from_line=res["start_line"], to_line=res["end_line"])
    assert got["text"] == "The office wifi is called Prairie."
    # by a memory_search hit id (what a model or runtime holds): a hit is one entry; a range
    # over two entries is refused
    hit = eng.tools.call("memory_search", {"query": "Lunch noon"}, ToolContext(agent="ada")).data["hits"][0]
    assert (hit["start_line"], hit["end_line"]) == (e2.start_line, e2.end_line)
    with pytest.raises(ValidationError, match="span 2 memories"):
        w.correct("ada", "Lunch is at one.", path=e1.path, lines=(e1.start_line, e2.end_line))
    e3 = w.add("ada", "Dinner is at seven.", day="2026-12-02")
    hit = eng.tools.call("memory_search", {"query": "Dinner seven"}, ToolContext(agent="ada")).data["hits"][0]
    w.correct("ada", "Dinner is at eight.", id=hit["id"])
    assert [e.text for e in w.list("ada") if e.id == e3.id] == ["Dinner is at eight."]
    assert _paths(eng, "Dinner eight") == ["memory/2026-12-02.md"]
    # by path + lines
    listed = {e.id: e for e in w.list("ada")}
    line = listed[e2.id].start_line + 1
    w.correct("ada", "Lunch is at two.", path="memory/2026-12-01.md", lines=(line, line))
    assert "Lunch is at two." in eng.memory.get("ada", "memory/2026-12-01.md")["text"]
    w.delete("ada", id=e1.id)
    assert [e.id for e in w.list("ada")] == [e3.id, e2.id] and _paths(eng, "Prairie wifi") == []
    w.delete("ada", id=e2.id)
    assert not (eng.agent_dir(eng.agents.get("ada")) / "memory/2026-12-01.md").exists()
    assert _paths(eng, "Lunch") == []
    with pytest.raises(NotFoundError):
        w.delete("ada", id=e2.id)
    with pytest.raises(ValidationError):
        w.delete("ada")


def test_writes_never_leave_their_scope(eng: Any) -> None:
    w = eng.memory.writer
    alice = w.add("ada", "Alice's locker code is 1234.", user="alice", day="2026-12-01")
    shared = w.add("ada", "The team meets on Mondays.", day="2026-12-01")
    with pytest.raises(NotFoundError):  # bob cannot see alice's entry id
        w.delete("ada", "bob", id=alice.id)
    with pytest.raises(NotFoundError):  # the agent level is another scope too
        w.delete("ada", "alice", id=shared.id)
    with pytest.raises(PermissionDeniedError):
        w.correct("ada", "pwned", "bob", path="users/alice/memory/2026-12-01.md", lines=(1, 2))
    hit = eng.tools.call("memory_search", {"query": "locker code"}, ToolContext(agent="ada", user="alice"))
    alice_hit = hit.data["hits"][0]["id"]
    with pytest.raises(PermissionDeniedError):
        w.delete("ada", "bob", id=alice_hit)
    with pytest.raises(PermissionDeniedError):
        w.delete("ada", None, id=alice_hit)
    assert [e.id for e in w.list("ada", "alice")] == [alice.id]
    assert _paths(eng, "locker code", "alice") == ["users/alice/memory/2026-12-01.md"]


def test_concurrent_adds_lose_nothing(eng: Any) -> None:
    w = eng.memory.writer
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(4):
                w.add("ada", f"fact number {n}-{i} about zebras", day="2026-12-02")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    entries = w.list("ada")
    assert len(entries) == 16 and len({e.id for e in entries}) == 16
    assert sorted(e.text for e in entries) == sorted(
        f"fact number {n}-{i} about zebras" for n in range(4) for i in range(4)
    )


def test_cli_add_correct_delete_list(eng: Any, workspace: Path, database_url: str | None) -> None:
    args = {"workspace": workspace, "database_url": database_url}
    res = run_cli(
        [
            "memory",
            "add",
            "Bob likes green tea",
            "--user",
            "bob",
            "-t",
            "drinks",
            "--meta",
            "src=cli",
            "--json",
        ],
        **args,
    )
    assert res.code == 0, res.err
    added = json.loads(res.out)
    assert added["tags"] == ["drinks"] and added["metadata"] == {"src": "cli"}
    res = run_cli(["memory", "add", "--agent", "ada", "--date", "2026-01-05"], stdin="From stdin.\n", **args)
    assert res.code == 0 and "memory/2026-01-05.md" in res.out
    res = run_cli(["memory", "list", "--user", "bob", "--json"], **args)
    assert [e["id"] for e in json.loads(res.out)] == [added["id"]]
    res = run_cli(["memory", "correct", "Bob likes black tea", "--user", "bob", "--id", added["id"]], **args)
    assert res.code == 0, res.err
    res = run_cli(["memory", "search", "black tea", "--user", "bob", "--json"], **args)
    assert json.loads(res.out)[0]["path"] == added["path"]
    res = run_cli(["memory", "delete", "--user", "bob", "--id", added["id"]], **args)
    assert res.code == 0 and "deleted 2 line(s)" in res.out
    for bad in (
        ["memory", "delete", "--user", "bob", "--id", added["id"]],
        ["memory", "delete", "--path", "memory/2026-01-05.md"],
        ["memory", "correct", "x", "--path", "../goclaw.toml", "--from", "1"],
        ["memory", "add", "x", "--meta", "novalue"],
        ["memory", "add", "x", "--user", "../evil"],
    ):
        res = run_cli(bad, **args)
        assert res.code != 0 and res.err.startswith("error:") and "Traceback" not in res.err, (bad, res.err)


def test_memory_add_tool_writes_the_context_scope(eng: Any) -> None:
    ctx = ToolContext(agent="ada", user="carol")
    res = eng.tools.call("memory_add", {"text": "Carol's cat is named Miso.", "tags": ["pets"]}, ctx)
    assert not res.is_error and res.data["path"].startswith("users/carol/memory/")
    assert eng.memory.writer.list("ada", "carol")[0].tags == ["pets"]
    assert eng.memory.writer.list("ada") == []
    res = eng.tools.call("memory_add", {"text": "x", "user": "dave"}, ctx)
    assert res.is_error and "cannot be set by the model" in res.text
    hits = eng.tools.call("memory_search", {"query": "cat Miso"}, ctx).data["hits"]
    assert hits[0]["path"] == res_path(eng, "carol")


def res_path(eng: Any, user: str) -> str:
    return eng.memory.writer.list("ada", user)[0].path
