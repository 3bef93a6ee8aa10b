"""Bring a database to the schema this goclaw knows, or refuse it.

The schema is made of independent Alembic chains: the kernel's (``goclaw/store/migrations``,
stamped in ``goclaw_schema_version``) and one per plugin component (the ``goclaw_schema`` hook,
:class:`goclaw.contracts.schema.SchemaComponent`, stamped in ``goclaw_schema_version_<name>``).

* an empty database gets the kernel's tables and every enabled component's tables;
* an older one is upgraded in place, every chain inside one transaction (SQLite holds a write
  lock, PostgreSQL an advisory lock, so two processes opening at once migrate once);
* a chain stamped with a revision this goclaw does not know (a newer goclaw wrote it) is refused
  with a clear message naming the component, never touched;
* a database that has tables but no goclaw stamp is refused too: it is not ours;
* a component whose plugin is disabled is left as it is (created or upgraded once enabled).

One version table per chain, not branch labels in one: ``docs/decisions.md`` says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, text
from sqlalchemy.exc import DBAPIError

from goclaw.contracts.schema import COMPONENT_NAME, SchemaComponent
from goclaw.errors import StoreError

if TYPE_CHECKING:
    from goclaw.store.database import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
KERNEL = "kernel"
VERSION_TABLE = "goclaw_schema_version"
_PG_LOCK_KEY = 0x60C1A3  # any constant; namespaced by the database


@dataclass(frozen=True)
class Chain:
    """One migration chain: its component name and its folder of revision files."""

    name: str
    versions: Path


KERNEL_CHAIN = Chain(KERNEL, MIGRATIONS_DIR / "versions")


def version_table(component: str) -> str:
    """The table holding ``component``'s stamp."""
    return VERSION_TABLE if component == KERNEL else f"{VERSION_TABLE}_{component}"


def chains(components: Iterable[SchemaComponent] = ()) -> list[Chain]:
    """The kernel's chain, then each component's, in name order (names validated)."""
    found = [KERNEL_CHAIN]
    for comp in sorted(components, key=lambda c: c.name):
        if not COMPONENT_NAME.match(comp.name) or comp.name == KERNEL:
            raise StoreError(
                f"invalid schema component name {comp.name!r}: use [a-z][a-z0-9_]*, not 'kernel'"
            )
        found.append(Chain(comp.name, Path(comp.migrations)))
    return found


def _alembic_config(connection: Any, chain: Chain = KERNEL_CHAIN) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))  # env.py, shared by every chain
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("version_locations", str(chain.versions))
    cfg.set_main_option("version_table", version_table(chain.name))
    cfg.attributes["connection"] = connection
    return cfg


_REVISION = re.compile(r"^revision\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN = re.compile(r"^down_revision\s*=\s*(?:['\"]([^'\"]+)['\"]|None)", re.M)


@cache
def chain_revisions(versions: Path) -> tuple[str, frozenset[str]]:
    """(head revision, every revision) of the chain in ``versions``.

    Read from the files' ``revision``/``down_revision`` lines rather than through Alembic,
    whose import costs ~0.15 s on every start; Alembic is imported only to upgrade.
    """
    revisions: dict[str, str | None] = {}
    for path in sorted(Path(versions).glob("*.py")):
        source = path.read_text(encoding="utf-8")
        rev, down = _REVISION.search(source), _DOWN.search(source)
        if rev is None or down is None:
            continue
        revisions[rev.group(1)] = down.group(1)
    long = sorted(r for r in revisions if len(r) > 32)  # Alembic's version_num is VARCHAR(32)
    if long:
        raise StoreError(f"the migrations in {versions} have revision ids over 32 characters: {long[0]}")
    parents = {d for d in revisions.values() if d is not None}
    heads = [r for r in revisions if r not in parents]
    if len(heads) != 1:
        raise StoreError(f"the migrations in {versions} have {len(heads)} heads; this is a packaging bug")
    return heads[0], frozenset(revisions)


def known_revisions() -> tuple[str, frozenset[str]]:
    """(head, every revision) of the kernel's chain."""
    return chain_revisions(KERNEL_CHAIN.versions)


def _schema(conn: Any) -> str:
    """Where goclaw's tables live: SQLite's ``main``, PostgreSQL's ``current_schema()`` (the first
    existing schema of the search_path, where CREATE TABLE puts them; the schemas after it are ignored)."""
    if conn.dialect.default_schema_name is None:
        path = conn.exec_driver_sql("SHOW search_path").scalar()
        raise StoreError(f"the search_path ({path}) names no existing schema: run CREATE SCHEMA <name> first")
    return str(conn.dialect.default_schema_name)


def _stamps(conn: Any, wanted: Sequence[Chain] | None = None) -> dict[str, str]:
    """``{component: revision}`` for every version table present (only ``wanted`` if given)."""
    schema = _schema(conn)
    found: dict[str, str] = {}
    for table in sorted(inspect(conn).get_table_names(schema)):
        component = KERNEL if table == VERSION_TABLE else table.removeprefix(VERSION_TABLE + "_")
        if component == table or (wanted is not None and component not in {c.name for c in wanted}):
            continue  # not a version table, or not a wanted one
        row = conn.execute(text(f'SELECT version_num FROM "{schema}".{table}')).first()
        if row is not None:
            found[component] = str(row[0])
    return found


def _known_stamps(conn: Any, wanted: Sequence[Chain]) -> dict[str, str] | None:
    """The steady state in one round trip: every wanted version table read by one statement;
    ``None`` when one is missing (a new database, a newly enabled plugin) or empty."""
    own = f'"{_schema(conn)}".'
    sql = " UNION ALL ".join(
        f"SELECT '{c.name}', version_num FROM {own}{version_table(c.name)}" for c in wanted
    )
    try:
        rows = conn.execute(text(sql)).all()
    except DBAPIError:
        conn.rollback()
        return None
    found = {str(name): str(rev) for name, rev in rows}
    return found if len(found) == len(wanted) else None


def stamps(db: Database) -> dict[str, str]:
    """Every chain's stamp found in ``db`` (enabled or not): ``{"kernel": "0005", ...}``."""
    with db.engine.connect() as conn:
        return _stamps(conn)


def current_revision(db: Database, component: str = KERNEL) -> str | None:
    return stamps(db).get(component)


def _refuse_newer(current: dict[str, str], wanted: Sequence[Chain]) -> None:
    for chain in wanted:
        head, known = chain_revisions(chain.versions)
        stamp = current.get(chain.name)
        if stamp is not None and stamp not in known:
            what = "the database schema" if chain.name == KERNEL else f"the {chain.name!r} tables' schema"
            raise StoreError(
                f"{what} ({stamp}) is newer than this goclaw understands (up to {head}); "
                "upgrade goclaw, or point it at another database"
            )


def new_revision(db: Database, component: SchemaComponent, message: str, rev_id: str) -> Path:
    """Write the next revision of ``component``'s chain (a plugin author's tool): Alembic
    autogenerate compares the component's tables with ``db``, which must be at the chain's head
    (open it with the plugin's current release first). Returns the new file."""
    from alembic import command

    chain = Chain(component.name, Path(component.migrations))
    tables = [getattr(t, "__table__", t) for t in component.tables]
    before = set(chain.versions.glob("*.py"))
    with db.engine.connect() as conn:
        cfg = _alembic_config(conn, chain)
        cfg.attributes["goclaw_tables"] = {t.name for t in tables}
        cfg.attributes["goclaw_metadata"] = list({id(t.metadata): t.metadata for t in tables}.values())
        command.revision(cfg, message, autogenerate=True, rev_id=rev_id, version_path=str(chain.versions))
    chain_revisions.cache_clear()
    [created] = set(chain.versions.glob("*.py")) - before
    return created


def upgrade(db: Database, target: str | None = None, components: Iterable[SchemaComponent] = ()) -> str:
    """Migrate the kernel's chain to its head (or ``target``), then each component's chain to its
    head; returns the kernel revision the database is at."""
    wanted = chains(components)
    goals = {c.name: chain_revisions(c.versions)[0] for c in wanted}
    if target is not None:
        goals[KERNEL] = target
    with db.engine.connect() as conn:
        current = _known_stamps(conn, wanted) or _stamps(conn, wanted)
    _refuse_newer(current, wanted)
    if all(current.get(name) == goal for name, goal in goals.items()):
        return goals[KERNEL]
    from alembic import command

    conn = db.engine.connect().execution_options(goclaw_write=True)
    try:
        with conn.begin():
            if db.backend == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            # Re-check under the lock: another process may have migrated meanwhile.
            insp, own = inspect(conn), _schema(conn)
            if not insp.has_table(VERSION_TABLE, own):
                foreign = [t for t in insp.get_table_names(own) if not t.startswith(("sqlite_", "alembic"))]
                if foreign:
                    raise StoreError(
                        "the database already holds tables that goclaw did not create "
                        f"({', '.join(sorted(foreign)[:5])}); use an empty database"
                    )
            current = _stamps(conn, wanted)
            _refuse_newer(current, wanted)
            for chain in wanted:
                if current.get(chain.name) != goals[chain.name]:
                    command.upgrade(_alembic_config(conn, chain), goals[chain.name])
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(f"could not migrate the database: {exc}") from exc
    finally:
        conn.close()
    return goals[KERNEL]
