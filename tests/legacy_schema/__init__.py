"""The kernel's migration chain of older goclaw releases (revisions 0001-0004, their upgrade
code as those releases ran it), when the kernel created every feature's table. Tests build such
databases with it, then open them with the current code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

VERSIONS = Path(__file__).parent / "versions"
T0 = "2026-01-01 00:00:00"


def build_legacy(db: Any, target: str = "0004") -> None:
    """Migrate an empty ``db`` with the pre-split chain up to ``target`` (stamped in the kernel's
    version table, as an older goclaw left it)."""
    from alembic import command

    from goclaw.store.migrate import KERNEL, Chain, _alembic_config

    conn = db.engine.connect().execution_options(goclaw_write=True)
    try:
        with conn.begin():
            command.upgrade(_alembic_config(conn, Chain(KERNEL, VERSIONS)), target)
    finally:
        conn.close()


def insert(conn: Any, table: str, **values: Any) -> None:
    """One row by raw SQL (the legacy tables, whatever today's models say)."""
    from sqlalchemy import text

    cols = ", ".join(values)
    params = ", ".join(f":{k}" for k in values)
    conn.execute(text(f"INSERT INTO {table} ({cols}) VALUES ({params})"), values)
