"""The ``lancedb`` search backend (plugin ``goclaw.lancedb``) passes the same
backend behaviour tests as the built-in SQLite and PostgreSQL backends: every test of
tests/plugins/memory/test_search.py runs again here with ``[plugins.memory] backend = "lancedb"`` (set
through the environment, so the CLI tests select it too), on a SQLite and a PostgreSQL
workspace database. Only the test of the SQLite backend's own in-memory index is left out.
"""

from __future__ import annotations

import pytest

pytest.importorskip("lancedb")

from tests.plugins.memory import test_search as suite
from tests.plugins.memory.test_search import plugin  # noqa: F401 - fixtures used by the suite

SQLITE_ONLY = {"test_sqlite_vector_cache_is_patched_in_process_and_matches_a_reload"}

for _name in dir(suite):
    if _name.startswith("test_") and _name not in SQLITE_ONLY:
        globals()[_name] = getattr(suite, _name)


select_backend, eng = suite.backend_fixtures("lancedb")
