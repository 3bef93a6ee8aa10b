"""Each plugin owns its tables and migration chain: the ``goclaw_schema`` hook.

A database made by an older goclaw (every table created by the kernel's chain 0001-0004, built
here with those very files from tests/legacy_schema) upgrades in place on SQLite and PostgreSQL:
rows kept, each plugin's chain stamped, a second open a no-op. A fresh database gets every
enabled component; a disabled plugin's tables appear once it is enabled; a newer stamp is
refused per component; a third-party plugin brings its own chain and erasure steps.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import inspect, text

from goclaw import hookimpl
from goclaw.contracts.schema import ForgetStep, SchemaComponent
from goclaw.engine import Engine
from goclaw.errors import PluginError, StoreError
from goclaw.store import migrate
from goclaw.store.database import Database
from goclaw_search.tokenize import default_tokenizer
from tests.legacy_schema import T0, build_legacy, insert

NO_EMBED = {"embeddings": {"provider": "none"}}
CHUNK = "Refund for TCK-4471 sent to the customer"


def _heads(engine: Any) -> dict[str, str]:
    comps = engine.hooks.schema_components()
    heads = {c.name: migrate.chain_revisions(c.migrations)[0] for c in comps}
    return {"kernel": migrate.known_revisions()[0], **heads}


def _tables(db: Database) -> set[str]:
    with db.engine.connect() as conn:
        return set(inspect(conn).get_table_names())


def _legacy_rows(db: Database) -> None:
    lex = " ".join(default_tokenizer().terms(CHUNK))
    with db.engine.begin() as conn:
        insert(conn, "agents", id="a1", tenant_id="default", name="legacy", display_name="",
               agent_type="open", status="active", description="from 0004", settings="{}",
               created_at=T0, updated_at=T0)  # fmt: skip
        insert(conn, "memory_documents", id=1, agent_id="a1", user_id="", path="MEMORY.md",
               content_hash="h", size=40, mtime=0, chunk_count=1, indexed_at=T0)  # fmt: skip
        insert(conn, "memory_chunks", id=1, document_id=1, agent_id="a1", user_id="", path="MEMORY.md",
               start_line=1, end_line=1, text=CHUNK, lex=lex, chunk_hash="c")  # fmt: skip
        insert(conn, "skills", id="s1", tenant_id="default", slug="refunds", name="Refunds",
               description="how to refund", version=2, owner_id="", visibility="private", status="active",
               content="---\nname: Refunds\n---\nbody", frontmatter="{}", content_hash="x",
               created_at=T0, updated_at=T0)  # fmt: skip
        for v in (1, 2):
            insert(conn, "skill_versions", skill_id="s1", version=v, content=f"v{v}", frontmatter="{}",
                   content_hash=f"x{v}", created_at=T0)  # fmt: skip
        insert(conn, "skill_agent_grants", skill_id="s1", agent_id="a1", pinned_version=1,
               granted_by="ops", created_at=T0)  # fmt: skip
        insert(conn, "skill_user_grants", skill_id="s1", user_id="u1", granted_by="ops", created_at=T0)
        insert(conn, "sessions", key="k1", agent_id="a1", user_id="u1", status="open", compaction_count=0,
               flushed_cycle=-1, summary="", created_at=T0, updated_at=T0)  # fmt: skip
        insert(conn, "session_messages", session_key="k1", seq=1, role="user", content="hello",
               token_count=1, compacted=False, created_at=T0)  # fmt: skip
        insert(conn, "episodic_summaries", id="e1", tenant_id="default", agent_id="a1", user_id="u1",
               session_key="k1", summary="Refunds for TCK-4471", l0_abstract="Refunds", key_topics="[]",
               lex="refund tck-4471 tck 4471", source_type="session", source_id="k1:0", turn_count=1,
               token_count=3, created_at=T0)  # fmt: skip
        for eid, name in (("n1", "Alice"), ("n2", "Atlas")):
            insert(conn, "kg_entities", id=eid, tenant_id="default", agent_id="a1", user_id="u1", name=name,
                   normalized_name=name.lower(), entity_type="thing", description="", confidence=1.0,
                   properties="{}", source_id="e1", valid_from=T0, created_at=T0, updated_at=T0)  # fmt: skip
        insert(conn, "kg_relations", id="r1", tenant_id="default", agent_id="a1", user_id="u1",
               source_entity_id="n1", target_entity_id="n2", relation_type="leads", confidence=1.0,
               properties="{}", source_id="e1", valid_from=T0, created_at=T0)  # fmt: skip
        insert(conn, "kg_dedup_candidates", agent_id="a1", user_id="u1", entity_a_id="n1", entity_b_id="n2",
               cosine=0.9, name_similarity=0.5, status="pending", created_at=T0)  # fmt: skip
        insert(conn, "channel_memory_extraction_items", agent_id="a1", channel="general", user_id="u1",
               content="we ship Friday", status="pending", created_at=T0)  # fmt: skip


COUNTS = {
    "agents": 1,
    "memory_documents": 1,
    "memory_chunks": 1,
    "skills": 1,
    "skill_versions": 2,
    "skill_agent_grants": 1,
    "skill_user_grants": 1,
    "sessions": 1,
    "session_messages": 1,
    "episodic_summaries": 1,
    "kg_entities": 2,
    "kg_relations": 1,
    "kg_dedup_candidates": 1,
    "channel_memory_extraction_items": 1,
}


def _counts(db: Database) -> dict[str, int]:
    with db.engine.connect() as conn:
        return {t: int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()) for t in COUNTS}


def test_a_pre_split_database_upgrades_in_place(
    workspace: Path, database_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database.for_workspace(workspace, database_url)
    build_legacy(db, "0004")
    _legacy_rows(db)
    assert migrate.stamps(db) == {"kernel": "0004"}
    db.dispose()

    with Engine.open(workspace, database_url=database_url, plugins=NO_EMBED) as engine:
        assert migrate.stamps(engine.db) == _heads(engine)
        assert {"memory", "skills", "episodic", "kg", "channel_memory"} <= set(_heads(engine))
        assert _counts(engine.db) == COUNTS
        assert engine.agents.get("legacy").description == "from 0004"
        if engine.db.backend == "postgresql":  # (SQLite searches an index file these raw rows lack)
            hits = engine.memory.search("TCK-4471", "legacy", channel="lexical")
            assert [h.path for h in hits] == ["MEMORY.md"]
            with engine.db.engine.connect() as conn:
                tsv = conn.execute(text("SELECT tsv::text FROM memory_chunks WHERE id = 1")).scalar()
                assert "'tck-4471'" in tsv
                tsv = conn.execute(text("SELECT tsv::text FROM episodic_summaries WHERE id = 'e1'")).scalar()
                assert "'tck-4471'" in tsv
        assert [e.name for e in engine.kg.entities("legacy", "u1")] == ["Alice", "Atlas"]

    # A second open migrates nothing: Alembic is not even asked.
    import alembic.command

    def _no(*_a: Any, **_k: Any) -> None:
        raise AssertionError("a second open ran a migration")

    monkeypatch.setattr(alembic.command, "upgrade", _no)
    with Engine.open(workspace, database_url=database_url, plugins=NO_EMBED) as engine:
        assert migrate.stamps(engine.db) == _heads(engine)
        assert _counts(engine.db) == COUNTS


def test_a_fresh_database_gets_every_enabled_component(make_engine: Any) -> None:
    engine = make_engine(plugins=NO_EMBED)
    assert migrate.stamps(engine.db) == _heads(engine)
    names = _tables(engine.db)
    for comp in engine.hooks.schema_components():
        assert set(comp.table_names) <= names, comp.name
    if engine.db.backend == "postgresql":
        with engine.db.engine.connect() as conn:
            for table in ("memory_chunks", "episodic_summaries"):
                cols = {c["name"] for c in inspect(conn).get_columns(table)}
                assert {"lex", "tsv"} <= cols, table


def test_the_migrations_create_what_the_models_declare(make_engine: Any) -> None:
    """Every chain's result matches the SQLModel tables (autogenerate finds nothing to do)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlmodel import SQLModel

    engine = make_engine(plugins=NO_EMBED)

    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        if type_ == "table" and (name or "").startswith(migrate.VERSION_TABLE):
            return False
        if type_ == "table" and reflected and compare_to is None:
            return False  # a table of a plugin this test run did not import
        if type_ == "column" and name == "tsv":
            return False
        if type_ == "index" and name in KG_PARTIAL_UNIQUE:
            return False  # declared by the migrations only; checked below
        return not (type_ == "index" and name and (name.endswith("_tsv") or "_hnsw_" in name))

    with engine.db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"include_object": include, "compare_type": False})
        diff = compare_metadata(ctx, SQLModel.metadata)
    assert diff == []


KG_PARTIAL_UNIQUE = {"uq_kg_entities_current": "kg_entities", "uq_kg_relations_current": "kg_relations"}


def test_the_knowledge_graph_is_unique_among_current_rows_only(make_engine: Any) -> None:
    """The partial unique indexes the models leave out (see goclaw_kg.tables) exist, unique and
    restricted to current rows, on every backend."""
    from sqlalchemy import inspect

    engine = make_engine(plugins=NO_EMBED)
    with engine.db.engine.connect() as conn:
        insp = inspect(conn)
        for index_name, table in KG_PARTIAL_UNIQUE.items():
            (index,) = [i for i in insp.get_indexes(table) if i["name"] == index_name]
            where = " ".join(str(v) for v in index.get("dialect_options", {}).values())
            assert index["unique"] and "valid_until IS NULL" in where, index


def test_a_disabled_plugins_tables_wait_until_it_is_enabled(make_engine: Any) -> None:
    off = make_engine(plugins={"disable": ["goclaw.skills", "goclaw.kg"], **NO_EMBED})
    assert not {"skills", "kg"} & set(migrate.stamps(off.db))
    assert not {"skills", "skill_versions", "skill_agent_grants", "kg_entities", "kg_relations"} & _tables(
        off.db
    )
    assert {"memory_chunks", "sessions", "episodic_summaries"} <= _tables(off.db)
    on = make_engine(plugins=NO_EMBED)
    assert migrate.stamps(on.db) == _heads(on)
    assert {"skills", "skill_versions", "skill_agent_grants", "skill_user_grants"} <= _tables(on.db)
    assert {"kg_entities", "kg_relations", "kg_dedup_candidates"} <= _tables(on.db)
    on.agents.create("ada")
    assert on.kg.entities("ada") == []


def test_a_newer_component_is_refused_unless_disabled(make_engine: Any) -> None:
    engine = make_engine(plugins=NO_EMBED)
    with engine.db.engine.begin() as conn:
        conn.execute(text(f"UPDATE {migrate.version_table('memory')} SET version_num = 'memory_9999'"))
    with pytest.raises(StoreError) as err:
        make_engine(plugins=NO_EMBED)
    assert "'memory' tables' schema (memory_9999) is newer than this goclaw" in str(err.value)
    # With the memory plugin disabled its tables are not this goclaw's business.
    other = make_engine(plugins={"disable": ["goclaw.memory"], **NO_EMBED})
    assert migrate.stamps(other.db)["memory"] == "memory_9999"


# --------------------------------------------------------------------------- a third-party chain

NOTES = sa.Table(
    "notes",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("agent_id", sa.String(64), nullable=False),
    sa.Column("user_id", sa.String(255), nullable=False),
    sa.Column("body", sa.Text, nullable=False),
)
REV1 = '''
    """notes: create"""
    import sqlalchemy as sa
    from alembic import op

    revision = "notes_0001"
    down_revision = None

    def upgrade():
        op.create_table(
            "notes",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("agent_id", sa.String(64), sa.ForeignKey("agents.id", ondelete="CASCADE")),
            sa.Column("user_id", sa.String(255), nullable=False),
        )
'''
REV2 = '''
    """notes: a body column, filled for existing rows"""
    import sqlalchemy as sa
    from alembic import op

    revision = "notes_0002"
    down_revision = "notes_0001"

    def upgrade():
        op.add_column("notes", sa.Column("body", sa.Text, nullable=False, server_default="(none)"))
'''


class NotesPlugin:
    def __init__(self, folder: Path, name: str = "notes") -> None:
        self.component = SchemaComponent(name, (NOTES,), folder)

    @hookimpl
    def goclaw_schema(self) -> list[SchemaComponent]:
        return [self.component]

    @hookimpl
    def goclaw_forget_rows(self, engine: Any, scope: Any, connection: Any) -> list[ForgetStep]:
        clause = NOTES.c.agent_id.in_(scope.agent_ids)
        return [ForgetStep(NOTES, clause if scope.whole_agent else clause & (NOTES.c.user_id == scope.user))]


def test_a_third_party_chain_is_created_upgraded_and_erased(make_engine: Any, tmp_path: Path) -> None:
    from goclaw.forget import forget_user

    chain = tmp_path / "notes_migrations"
    chain.mkdir()
    (chain / "notes_0001.py").write_text(textwrap.dedent(REV1))
    first = make_engine(extra_plugins=[("notes", NotesPlugin(chain))], plugins=NO_EMBED)
    assert migrate.stamps(first.db)["notes"] == "notes_0001"
    ada = first.agents.create("ada")
    with first.db.engine.begin() as conn:
        for user in ("u1", "u2"):
            conn.execute(
                text("INSERT INTO notes (agent_id, user_id) VALUES (:a, :u)"), {"a": ada.id, "u": user}
            )

    (chain / "notes_0002.py").write_text(textwrap.dedent(REV2))  # the plugin's next release
    migrate.chain_revisions.cache_clear()
    second = make_engine(extra_plugins=[("notes", NotesPlugin(chain))], plugins=NO_EMBED)
    assert migrate.stamps(second.db)["notes"] == "notes_0002"
    with second.db.engine.connect() as conn:
        assert conn.execute(text("SELECT user_id, body FROM notes ORDER BY user_id")).all() == [
            ("u1", "(none)"),
            ("u2", "(none)"),
        ]
    assert forget_user(second, "u1").rows["notes"] == 1
    assert forget_user(second, "u1", dry_run=False).rows["notes"] == 1
    with second.db.engine.connect() as conn:
        assert conn.execute(text("SELECT user_id FROM notes")).scalars().all() == ["u2"]


def test_component_names_are_checked(make_engine: Any, tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="'memory' is provided by both"):
        make_engine(extra_plugins=[("mine", NotesPlugin(tmp_path, "memory"))], plugins=NO_EMBED)
    with pytest.raises(StoreError, match="invalid schema component name"):
        make_engine(extra_plugins=[("bad", NotesPlugin(tmp_path, "Bad-Name"))], plugins=NO_EMBED)


OPEN = """
import sys
from goclaw.engine import Engine
url = sys.argv[2] or None
Engine.open(sys.argv[1], database_url=url, plugins={"embeddings": {"provider": "none"}}).close()
"""


@pytest.mark.slow
def test_two_processes_opening_a_pre_split_database_migrate_it_once(
    workspace: Path, database_url: str | None
) -> None:
    db = Database.for_workspace(workspace, database_url)
    build_legacy(db, "0004")
    _legacy_rows(db)
    db.dispose()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, str(workspace), database_url or ""],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    db = Database.for_workspace(workspace, database_url)
    assert _counts(db) == COUNTS
    assert set(migrate.stamps(db)) >= {"kernel", "memory", "skills"}
    db.dispose()


def test_the_episodic_plugin_reads_sessions_through_the_service(make_engine: Any) -> None:
    """The session tables are the memory plugin's: auto-injection and the episodic worker read
    them through ``engine.sessions`` (the latest user turns, one run's messages)."""
    from goclaw_episodic.autoinject import recent_user_turns
    from goclaw_episodic.worker import session_messages

    engine = make_engine(plugins=NO_EMBED)
    engine.agents.create("ada")
    for i in range(6):
        engine.sessions.append("ada", "k", "user" if i % 2 == 0 else "assistant", f"turn {i}")
    assert recent_user_turns(engine, "k") == "turn 2 | turn 4"
    assert recent_user_turns(engine, "unknown") == ""
    row, msgs = session_messages(engine, "k", 3, 5)  # seq counts from 1
    assert row.agent_id == engine.agents.get("ada").id
    assert msgs == [
        ("user", "turn 2", msgs[0][2]),
        ("assistant", "turn 3", msgs[1][2]),
        ("user", "turn 4", msgs[2][2]),
    ]
    off = make_engine(plugins={"disable": ["goclaw.memory"], **NO_EMBED})
    assert recent_user_turns(off, "k") == "" and session_messages(off, "k") == (None, [])


def test_a_plugin_author_generates_the_next_revision(make_engine: Any, tmp_path: Path) -> None:
    """``migrate.new_revision``: Alembic autogenerate on one component's tables only (no kernel or
    other plugin table in the diff), the file lands in the chain and the next open applies it."""
    from goclaw.contracts.store import Agent

    chain = tmp_path / "notes_migrations"
    chain.mkdir()
    (chain / "notes_0001.py").write_text(textwrap.dedent(REV1))
    first = make_engine(extra_plugins=[("notes", NotesPlugin(chain))], plugins=NO_EMBED)
    md = sa.MetaData()
    Agent.__table__.to_metadata(md)  # type: ignore[attr-defined]  # so the foreign key resolves
    notes_v2 = sa.Table(
        "notes",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("agent_id", sa.String(64), sa.ForeignKey("agents.id", ondelete="CASCADE")),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("pinned", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    path = migrate.new_revision(
        first.db, SchemaComponent("notes", (notes_v2,), chain), "pin notes", "notes_0002"
    )
    source = path.read_text()
    assert "add_column" in source and "'pinned'" in source, source
    assert "drop_table" not in source and "create_table" not in source, source  # nothing else compared
    plugin = NotesPlugin(chain)
    second = make_engine(extra_plugins=[("notes", plugin)], plugins=NO_EMBED)
    assert migrate.stamps(second.db)["notes"] == "notes_0002"
    with second.db.engine.connect() as conn:
        assert "pinned" in {c["name"] for c in inspect(conn).get_columns("notes")}


@pytest.mark.parametrize("off", ["goclaw.episodic", "goclaw.kg"])
def test_a_features_workers_are_idle_while_its_tables_are_absent(make_engine: Any, off: str) -> None:
    """The workers of a feature (its own default plugins) stay on when the feature's plugin is
    disabled, but its tables are then not created: they skip instead of failing."""
    from goclaw.events import WorkerRunner

    engine = make_engine(plugins={"disable": [off], **NO_EMBED})
    engine.agents.create("ada")
    engine.sessions.append("ada", "k", "user", "Alice Smith leads Project Atlas on Postgres.")
    engine.sessions.append("ada", "k", "assistant", "Noted: Alice Smith leads Project Atlas.")
    engine.sessions.end("k")
    runner = WorkerRunner(engine)
    for _ in range(3):  # run.completed, then episodic.created, then entity.upserted
        report = runner.run_once()
        assert report.failed == report.dead == 0, off
    if off == "goclaw.kg":
        assert len(engine.episodic.list(engine.agents.get("ada").id, "")) == 1  # episodic still works


# --------------------------------------------------------------------------- ownership guards

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_has_exactly_one_owner(workspace: Path) -> None:
    """Each table is the kernel's (goclaw.store.models.KERNEL_TABLES: its private ones and the
    shared ones of goclaw.contracts.store) or one component's, never both or none."""
    from sqlmodel import SQLModel

    from goclaw.store.models import KERNEL_TABLES

    kernel_tables = {t.__table__ for t in KERNEL_TABLES}  # type: ignore[attr-defined]
    with Engine.open(workspace, plugins=NO_EMBED) as engine:
        owners: dict[str, list[str]] = {}
        for comp in engine.hooks.schema_components():
            for name in comp.table_names:
                owners.setdefault(name, []).append(comp.name)
        for table in SQLModel.metadata.sorted_tables:
            owners.setdefault(table.name, [])
            if table in kernel_tables:
                owners[table.name].append("kernel")
    bad = {name: who for name, who in owners.items() if len(who) != 1}
    assert not bad, bad
    assert {"agents", "events", "embedding_cache"} <= {n for n, w in owners.items() if w == ["kernel"]}
    assert owners["memory_chunks"] == ["memory"] and owners["kg_entities"] == ["kg"]


def test_kernel_code_writes_no_plugin_table(workspace: Path) -> None:
    """No SQL in goclaw/ (its historic migrations aside) names a plugin's table."""
    import re

    with Engine.open(workspace, plugins=NO_EMBED) as engine:
        names = sorted({n for c in engine.hooks.schema_components() for n in c.table_names})
    sql = re.compile(rf"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+({'|'.join(names)})\b", re.I)
    found = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in (ROOT / "goclaw").rglob("*.py")
        if "migrations" not in path.parts
        for m in sql.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_a_chain_with_two_heads_or_a_long_revision_is_a_packaging_error(tmp_path: Path) -> None:
    for name, body in (
        ("a.py", 'revision = "x_0001"\ndown_revision = None\n'),
        ("b.py", 'revision = "x_0002"\ndown_revision = None\n'),
    ):
        (tmp_path / name).write_text(body)
    with pytest.raises(StoreError, match="2 heads"):
        migrate.chain_revisions(tmp_path)
    (tmp_path / "b.py").write_text(f'revision = "{"x" * 33}"\ndown_revision = "x_0001"\n')
    with pytest.raises(StoreError, match="over 32 characters"):
        migrate.chain_revisions(tmp_path)


def test_forget_names_the_tables_of_a_disabled_plugin(workspace: Path, database_url: str | None) -> None:
    """A disabled plugin's tables are not erased (nobody declares them); forget says so."""
    from goclaw.forget import forget_user
    from tests.helpers import run_cli

    db = Database.for_workspace(workspace, database_url)
    build_legacy(db, "0004")  # a pre-split database: the KG tables exist, with u1's rows
    _legacy_rows(db)
    db.dispose()
    off = {"disable": ["goclaw.kg"], **NO_EMBED}
    with Engine.open(workspace, database_url=database_url, plugins=off) as engine:
        dry = forget_user(engine, "u1")
        assert dry.tables_not_erased == ["kg_dedup_candidates", "kg_entities", "kg_relations"]
        assert "kg_entities" not in dry.rows and dry.rows["sessions"] == 1
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.kg"]\n[plugins.embeddings]\nprovider = "none"\n'
    )
    res = run_cli(["forget", "--user", "u1"], workspace=workspace, database_url=database_url)
    assert res.code == 0 and "warning: not erased: kg_dedup_candidates, kg_entities, kg_relations" in res.err
    (workspace / "goclaw.toml").write_text('[plugins.embeddings]\nprovider = "none"\n')  # enabled again
    with Engine.open(workspace, database_url=database_url) as engine:
        assert forget_user(engine, "u1").tables_not_erased == []
        assert forget_user(engine, "u1").rows["kg_entities"] == 2
