"""Bring a database to the schema this goclaw knows, or refuse it (issue 2 §5).

* an empty database is created at the head revision;
* an older one is upgraded in place, inside one transaction (SQLite holds a write lock,
  PostgreSQL an advisory lock, so two processes opening at once migrate once);
* a database stamped with a revision this goclaw does not know (a newer goclaw wrote it) is
  refused with a clear message, never touched;
* a database that has tables but no goclaw stamp is refused too: it is not ours.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, text

from goclaw.errors import StoreError

if TYPE_CHECKING:
    from goclaw.store.database import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
VERSION_TABLE = "goclaw_schema_version"
_PG_LOCK_KEY = 0x60C1A3  # any constant; namespaced by the database


def _alembic_config(connection: Any = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("version_table", VERSION_TABLE)
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


_REVISION = re.compile(r"^revision\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN = re.compile(r"^down_revision\s*=\s*(?:['\"]([^'\"]+)['\"]|None)", re.M)


@cache
def known_revisions() -> tuple[str, frozenset[str]]:
    """(head revision, every revision this goclaw ships).

    Read from the migration files' ``revision``/``down_revision`` lines rather than through
    Alembic, whose import costs ~0.15 s on every start; Alembic is imported only to upgrade.
    """
    revisions: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        rev, down = _REVISION.search(text), _DOWN.search(text)
        if rev is None or down is None:
            continue
        revisions[rev.group(1)] = down.group(1)
    parents = {d for d in revisions.values() if d is not None}
    heads = [r for r in revisions if r not in parents]
    if len(heads) != 1:
        raise StoreError(f"goclaw's migrations have {len(heads)} heads; this is a packaging bug")
    return heads[0], frozenset(revisions)


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        row = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).first()
        return None if row is None else str(row[0])


def upgrade(db: Database, target: str | None = None) -> str:
    """Migrate ``db`` to the head revision (or ``target``); returns the revision it is at."""
    head, known = known_revisions()
    goal = target or head
    current = current_revision(db)
    if current == goal:
        return goal
    if current is not None and current not in known:
        raise StoreError(
            f"the database schema ({current}) is newer than this goclaw understands (up to {head}); "
            "upgrade goclaw, or point it at another database"
        )
    from alembic import command

    conn = db.engine.connect().execution_options(goclaw_write=True)
    try:
        with conn.begin():
            if db.backend == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            # Re-check under the lock: another process may have migrated meanwhile.
            insp = inspect(conn)
            if not insp.has_table(VERSION_TABLE):
                foreign = [t for t in insp.get_table_names() if not t.startswith(("sqlite_", "alembic"))]
                if foreign:
                    raise StoreError(
                        "the database already holds tables that goclaw did not create "
                        f"({', '.join(sorted(foreign)[:5])}); use an empty database"
                    )
            command.upgrade(_alembic_config(conn), goal)
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(f"could not migrate the database to {goal}: {exc}") from exc
    finally:
        conn.close()
    return goal
