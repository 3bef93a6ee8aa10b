"""Versioned schema migrations (Alembic). See :mod:`goclaw.store.migrate`."""
