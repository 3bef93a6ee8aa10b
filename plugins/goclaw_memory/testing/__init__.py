"""The memory plugin's test kit, shipped for plugin authors: the search-backend conformance
suite every built-in backend passes, the pytest fixtures it runs on, and its helpers.

Run the suite against your backend (registered with ``goclaw_search_backends``) in your own
project, with nothing of goclaw's repository::

    # conftest.py
    pytest_plugins = ["goclaw_memory.testing.fixtures"]

    # test_my_backend.py
    import pytest
    from goclaw_memory.testing.backend_suite import *  # noqa: F403 - the tests and their fixtures

    @pytest.fixture
    def search_backend() -> str:
        return "mybackend"  # [plugins.memory] backend for every test of the suite

:mod:`goclaw_memory.testing.fixtures` gives ``workspace`` (a fresh folder, with a private
``HOME``), ``database_url`` (every test runs on embedded SQLite, and again on PostgreSQL with a
private schema when ``GOCLAW_TEST_DATABASE_URL`` names a server with pgvector;
``GOCLAW_REQUIRE_POSTGRES=1`` turns its absence into a failure) and ``make_engine``.
:mod:`goclaw_memory.testing.helpers` gives ``write``, ``chunk_rows``, ``run_cli`` and the
test embedding providers (``EmbedderPlugin``).
"""
