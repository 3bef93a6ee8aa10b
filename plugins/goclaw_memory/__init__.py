"""Memory: indexing, hybrid search on SQLite and PostgreSQL, flush (spec §14-§16)."""
