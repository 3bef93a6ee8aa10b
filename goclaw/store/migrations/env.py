"""Alembic environment shared by every migration chain (the kernel's and each plugin component's):
goclaw always passes an open connection and the chain's version table (goclaw.store.migrate).
For ``migrate.new_revision`` it also passes one component's metadata and table names, so
autogenerate compares only that component's tables."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import goclaw.store.models  # noqa: F401  (registers the tables on SQLModel.metadata)

config = context.config
connection = config.attributes["connection"]
tables = config.attributes.get("goclaw_tables")  # None: every table
target_metadata = config.attributes.get("goclaw_metadata", SQLModel.metadata)


def include_object(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
    """Full-text structures are made by hand in migrations; autogenerate must not drop them,
    nor another chain's version table or (for one component) another component's tables."""
    if type_ == "table" and name and name.startswith("goclaw_schema_version"):
        return False
    if type_ == "table" and tables is not None and name not in tables:
        return False
    if type_ == "table" and name and (name.endswith("_fts") or "_fts_" in name):
        return False
    if type_ == "column" and name == "tsv":
        return False
    return not (type_ == "index" and name and (name.endswith("_tsv") or "_hnsw_" in name))


context.configure(
    include_object=include_object,
    version_table=config.get_main_option("version_table") or "goclaw_schema_version",
    version_table_schema=connection.dialect.default_schema_name,  # not one further on the search_path
    connection=connection,
    target_metadata=target_metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
