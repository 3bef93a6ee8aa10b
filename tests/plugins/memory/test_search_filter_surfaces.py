"""Search filters on every surface the memory plugin owns (Python, CLI, the ``memory_search``
tool that MCP serves) with one-line errors for bad input, and an id on every hit, extra
tiers' included. The HTTP and MCP servers' own checks are in tests/plugins/http and mcp; what
each backend does with a filter is in goclaw_memory.testing.filter_suite (run by every backend suite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.contracts.hooks import SearchHit
from goclaw.contracts.tools import ToolContext
from goclaw.errors import ValidationError
from tests.helpers import run_cli
from tests.memory_helpers import write


class PastSessions:
    @hookimpl
    def goclaw_memory_search_extra(self, engine: Any, query: str, agent: Any, user: Any, limit: int) -> Any:
        extra = {"created_at": "2026-05-02T10:00:00"}
        return [
            SearchHit(
                id="ep-1",
                score=0.9,
                text="a session about kites",
                path="episodic:s1",
                tier="episodic",
                extra=extra,
            )
        ]


@pytest.fixture
def eng(make_engine: Any) -> Any:
    e = make_engine(extra_plugins=[("past-sessions", PastSessions())])
    root = Path(e.agent_dir(e.agents.create("ada")))
    write(root, "MEMORY.md", "# Kites\n\nThe red kite flies best in March.\n")
    write(root, "memory/2026-05-01.md", "Bought a blue kite at the market.\n")
    e.memory.index("ada")
    return e


@pytest.mark.parametrize(
    ("filters", "needle"),
    [
        ({"since": "May 1st"}, "use YYYY-MM-DD"),
        ({"since": "2026-05-02", "until": "2026-05-01"}, "is after"),
        ({"colour": "red"}, "unknown filter 'colour'"),
        ({"tags": ["bad tag!"]}, "invalid tag"),
        ({"path": "../secrets"}, "bad path prefix"),
        ({"scope": "user"}, "needs a user"),
        ({"scope": "team"}, "unknown scope"),
    ],
)
def test_bad_filters_are_one_line_errors(eng: Any, filters: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValidationError) as err:
        eng.memory.search("kite", "ada", filters=filters)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_every_hit_has_an_id_and_extra_tiers_follow_filters(eng: Any) -> None:
    hits = eng.memory.search("kite", "ada")
    assert {h.tier for h in hits} == {"document", "episodic"} and all(h.id for h in hits)
    assert next(h for h in hits if h.tier == "episodic").as_json()["id"] == "ep-1"
    dated = eng.memory.search("kite", "ada", filters={"since": "2026-05-01"})
    assert {(h.tier, h.path) for h in dated} == {
        ("episodic", "episodic:s1"),
        ("document", "memory/2026-05-01.md"),
    }
    assert [h.tier for h in eng.memory.search("kite", "ada", filters={"path": "memory/"})] == ["document"]


def test_a_backend_without_filters_is_refused_clearly(eng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng.memory.backend, "filters", False)
    with pytest.raises(ValidationError, match="cannot filter by tags, dates or path"):
        eng.memory.search("kite", "ada", filters={"path": "memory/"})
    assert eng.memory.search("kite", "ada", filters={"scope": "agent"})  # scope needs no backend support


def test_the_tool_takes_filters(eng: Any) -> None:
    ctx = ToolContext(agent="ada")
    res = eng.tools.call("memory_search", {"query": "kite", "filters": {"until": "2026-05-01"}}, ctx)
    assert [h["path"] for h in res.data["hits"]] == ["memory/2026-05-01.md"]
    assert all(h["id"] for h in eng.tools.call("memory_search", {"query": "kite"}, ctx).data["hits"])
    bad = eng.tools.call("memory_search", {"query": "kite", "filters": {"since": "2026-99-01"}}, ctx)
    assert bad.is_error and "YYYY-MM-DD" in bad.text


def test_the_cli_takes_filters(eng: Any, workspace: Path, database_url: Any) -> None:
    args = {"workspace": workspace, "database_url": database_url}
    res = run_cli(
        ["memory", "search", "kite", "--since", "2026-05-01", "--path", "memory/", "--json"], **args
    )
    assert res.code == 0, res.err
    assert [h["path"] for h in json.loads(res.out)] == ["memory/2026-05-01.md"]
    res = run_cli(["memory", "search", "kite", "--json"], **args)
    ids = [h["id"] for h in json.loads(res.out)]
    assert ids and all(ids)
    res = run_cli(["memory", "search", "kite"], **args)  # the text form names each hit's id too
    assert res.code == 0 and all(i in res.out for i in ids), res.out
    res = run_cli(["memory", "search", "kite", "--until", "yesterday"], **args)
    assert res.code != 0 and res.err.startswith("error:") and len(res.err.strip().splitlines()) == 1
