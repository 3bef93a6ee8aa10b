"""The search-backend contract is true: every built-in backend implements
:class:`goclaw.contracts.search.SearchBackend` member by member, and the semantics its
docstrings promise hold (``invalidate`` leaves nothing derived from erased rows on disk)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar

import pytest

from goclaw.contracts.search import IndexChanges, IndexSource, SearchBackend
from goclaw.engine import Engine
from tests.kernel.test_contracts import _members, _shape
from tests.memory_helpers import write


def _check(backend: Any) -> None:
    assert isinstance(backend, SearchBackend)
    for member, declared in _members(SearchBackend).items():
        assert hasattr(backend, member), f"{backend.name}.{member} missing"
        if inspect.isfunction(declared):
            assert _shape(getattr(type(backend), member)) == _shape(declared), (backend.name, member)


def test_builtin_backends_implement_the_contract(engine: Engine, make_engine: Any) -> None:
    backend = engine.memory.backend
    # auto: the exact ranking on both databases, sqlite on SQLite, the database-side postgresql
    # on PostgreSQL (docs/decisions.md).
    assert backend.name == {"sqlite": "sqlite", "postgresql": "postgresql"}[engine.db.backend]
    _check(backend)
    for name in ("inprocess", "postgresql") if engine.db.backend == "postgresql" else ("inprocess",):
        chosen = make_engine(plugins={"memory": {"backend": name}}).memory.backend
        assert chosen.name == name
        _check(chosen)


def test_lancedb_backend_implements_the_contract(workspace: Path) -> None:
    pytest.importorskip("lancedb")
    with Engine.open(workspace, plugins={"memory": {"backend": "lancedb"}}) as engine:
        _check(engine.memory.backend)


def test_the_service_hands_the_backend_its_index(engine: Engine) -> None:
    """``open`` receives an :class:`IndexSource` whose version, fingerprints and records are
    exactly what ``apply_changes`` was told."""
    seen: dict[str, Any] = {}
    agent = engine.agents.create("ada")
    write(engine.agent_dir(agent), "MEMORY.md", "The harbour ferry leaves at noon.\n")
    backend = engine.memory.backend
    original = backend.apply_changes

    def spy(changes: IndexChanges) -> None:
        seen["changes"] = changes
        original(changes)

    backend.apply_changes = spy  # type: ignore[method-assign]
    source = _source(engine)
    assert source.version(agent.id) == ""
    engine.memory.index("ada")
    changes = seen["changes"]
    assert changes.complete and changes.version_before == ""
    assert changes.version_after == source.version(agent.id) != ""
    [rec] = changes.records.values()
    fp = source.fingerprints(agent.id, changes.space)
    assert fp == {rec.id: (rec.chunk_hash, "", "MEMORY.md", 1, True)}
    [again] = source.records(agent.id, [rec.id], changes.space)
    assert (again.text, list(again.terms), again.space) == (rec.text, list(rec.terms), rec.space)
    assert list(source.records("someone-else", [rec.id], changes.space)) == []
    assert backend.rows("someone-else", [rec.id]) == {}
    assert backend.rows(agent.id, [rec.id])[rec.id].text == rec.text


def _source(engine: Engine) -> IndexSource:
    from goclaw_memory.source import ChunkTableSource

    source = ChunkTableSource(engine)
    assert isinstance(source, IndexSource)
    return source


def test_forget_leaves_no_saved_index_of_the_erased_user(workspace: Path) -> None:
    """The SQLite backend saves each agent's index beside the database (terms and user ids);
    ``forget`` invalidated only the copy in memory, so the erased user's terms stayed on disk."""
    from goclaw.forget import forget_user

    with Engine.open(workspace) as engine:
        agent = engine.agents.create("ada")
        write(engine.agent_dir(agent), "MEMORY.md", "Team notes.\n")
        write(engine.agent_dir(agent), "users/u1/MEMORY.md", "The quokkazebra password is secret.\n")
        engine.memory.index("ada")
        assert engine.memory.search("quokkazebra", "ada", "u1")
        saved = Path(str(engine.db.engine.url.database) + ".index")
        assert any("quokkazebra" in p.read_text(errors="ignore") for p in saved.rglob("vocab.txt"))
        forget_user(engine, "u1", dry_run=False)
        left = [p for p in saved.rglob("*") if p.is_file() and b"quokkazebra" in p.read_bytes()]
        assert left == []
        assert engine.memory.search("team notes", "ada")  # rebuilt from the table


class _Recorder(SearchBackend):
    """The least a backend implements when it subclasses the contract (the rest has defaults)."""

    name = "recorder"
    calls: ClassVar[list[str]] = []

    def open(self, source: IndexSource) -> None:
        self.calls.append(f"open:{type(source).__name__}")

    def search(self, query: Any) -> Any:
        from goclaw.contracts.search import SearchResult

        self.calls.append("search")
        return SearchResult([])

    def rows(self, agent_id: str, ids: Any) -> dict[int, Any]:
        return {}

    def apply_changes(self, changes: IndexChanges) -> None:
        self.calls.append(f"apply:{len(changes.records)}")

    def invalidate(self, agent_id: str | None = None) -> None:
        self.calls.append("invalidate")

    def close(self) -> None:
        self.calls.append("close")


class _RecorderPlugin:
    from goclaw import hookimpl

    @hookimpl
    def goclaw_search_backends(self) -> dict[str, Any]:
        return {"recorder": lambda engine: _Recorder()}


def test_the_service_drives_the_backend_lifecycle(workspace: Path) -> None:
    """open (with the service's IndexSource) first, apply_changes per index run, close with
    the engine; bulk_load and prepare_vectors come from the contract's defaults."""
    _Recorder.calls = []
    engine = Engine.open(
        workspace, plugins={"memory": {"backend": "recorder"}}, extra_plugins=[("rec", _RecorderPlugin())]
    )
    agent = engine.agents.create("ada")
    write(engine.agent_dir(agent), "MEMORY.md", "One fact.\n")
    engine.memory.index("ada", bulk=True)
    assert engine.memory.search("fact", "ada") == []
    engine.memory.invalidate(agent.id)
    engine.close()
    assert _Recorder.calls == ["open:ChunkTableSource", "apply:1", "search", "invalidate", "close"]


def test_no_plugin_probes_backend_methods() -> None:
    """Every call the memory plugin makes on a backend is a contract member:
    no plugin probes a backend with ``getattr(<backend>, ...)`` / ``hasattr(<backend>, ...)``."""
    import ast

    root = Path(__file__).resolve().parents[2] / "plugins"
    found = []
    for path in sorted(root.glob("goclaw_*/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            probe = isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr")
            if probe and node.args and "backend" in ast.unparse(node.args[0]).lower():
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []


def test_lancedb_reads_the_memory_index_only_through_the_contract() -> None:
    """The LanceDB plugin read ``worker_state`` and ``memory_chunks`` directly to catch up; it
    now gets the version token, fingerprints and records from the ``IndexSource``."""
    root = Path(__file__).resolve().parents[2] / "plugins" / "goclaw_lancedb"
    for path in sorted(root.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for name in ("memory_chunks", "memory_documents", "worker_state", "sqlalchemy", "execute("):
            assert name not in source, f"{path.name} uses {name}"
