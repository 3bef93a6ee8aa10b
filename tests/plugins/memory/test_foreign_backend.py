"""A third-party search backend that raises: the error names the backend and its plugin (a
goclaw error, so the CLI prints one line and the HTTP API a 500, not "internal error ... please
report it"), keeps the original as its cause, and the backend stays the object it registered."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from goclaw.errors import PluginError
from tests.memory_helpers import write


class Flaky:
    """Delegates to the built-in backend; ``search`` fails like a buggy plugin."""

    name = "flaky"

    def __init__(self, engine: Any) -> None:
        self.base = engine.hooks.registry("goclaw_search_backends", "search backend")[
            "sqlite" if engine.db.backend == "sqlite" else "inprocess"
        ](engine)
        self.label = "flaky backend"

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.base, attr)

    def search(self, query: Any) -> Any:
        raise KeyError("shard-7")


class AcmePlugin:
    @hookimpl
    def goclaw_search_backends(self) -> dict[str, Any]:
        return {"flaky": Flaky}


def test_a_failing_third_party_backend_is_named(make_engine: Any, caplog: pytest.LogCaptureFixture) -> None:
    eng = make_engine(extra_plugins=[("acme-search", AcmePlugin())], plugins={"memory": {"backend": "flaky"}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    write(root, "MEMORY.md", "The ferry leaves at noon.\n")
    eng.memory.index("ada")  # writes go through: only search fails
    backend = eng.memory.backend
    assert isinstance(backend.inner, Flaky) and backend.label == "flaky backend"
    assert type(backend).__module__ == __name__ and type(backend).__name__ == "Flaky"
    with caplog.at_level(logging.DEBUG, logger="goclaw_memory"), pytest.raises(PluginError) as caught:
        eng.memory.search("ferry", "ada")
    message = str(caught.value)
    assert "search backend 'flaky' of plugin 'acme-search' failed in search()" in message
    assert "KeyError: 'shard-7'" in message and "\n" not in message
    assert isinstance(caught.value.__cause__, KeyError)
    assert "Traceback" in caplog.text and "shard-7" in caplog.text  # the debug log keeps it


def test_a_failing_factory_is_named(make_engine: Any) -> None:
    class Broken:
        @hookimpl
        def goclaw_search_backends(self) -> dict[str, Any]:
            def factory(engine: Any) -> Any:
                raise RuntimeError("no licence key")

            return {"broken": factory}

    eng = make_engine(extra_plugins=[("acme-broken", Broken())], plugins={"memory": {"backend": "broken"}})
    eng.agents.create("ada")
    with pytest.raises(PluginError, match="'broken' of plugin 'acme-broken' failed in its factory: Runtime"):
        eng.memory.search("x", "ada")


def test_the_built_in_backend_is_not_wrapped(make_engine: Any) -> None:
    eng = make_engine()
    from goclaw_memory.foreign_backend import ForeignBackend

    assert not isinstance(eng.memory.backend, ForeignBackend)


def test_over_http_a_500_naming_the_plugin(make_engine: Any, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from goclaw_http.server import create_app

    eng = make_engine(extra_plugins=[("acme-search", AcmePlugin())], plugins={"memory": {"backend": "flaky"}})
    eng.agents.create("ada")
    with TestClient(create_app(eng, None)) as client:
        resp = client.post("/v1/memory/search", json={"agent": "ada", "query": "ferry"})
    assert resp.status_code == 500, resp.text
    error = resp.json()["error"]
    assert error["type"] == "PluginError" and "of plugin 'acme-search' failed in search()" in error["message"]
    assert "Traceback" in caplog.text and "KeyError: 'shard-7'" in caplog.text  # the server's log
