"""Memory: indexing, hybrid search on SQLite and PostgreSQL, flush."""
