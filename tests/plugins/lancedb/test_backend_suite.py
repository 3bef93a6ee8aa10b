"""The ``lancedb`` search backend (plugin ``goclaw.lancedb``) passes the same backend behaviour
tests as the built-in SQLite and PostgreSQL backends: every test of the shipped suite
(goclaw_memory.testing.backend_suite) runs again here with ``[plugins.memory] backend =
"lancedb"`` (set through the environment, so the CLI tests select it too), on a SQLite and a
PostgreSQL workspace database.
"""

from __future__ import annotations

import pytest

pytest.importorskip("lancedb")

from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the suite's tests and fixtures


@pytest.fixture
def search_backend() -> str:
    return "lancedb"
