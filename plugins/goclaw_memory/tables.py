"""The memory plugin's tables (component ``memory``; migrations in ``migrations/``).

``memory_documents`` is one indexed memory file, ``memory_chunks`` its chunks with their
retrieval terms and vectors; ``sessions`` and ``session_messages`` are the ``sessions``
service's conversation records (revision ``memory_0002``). Backend-specific search structures
(PostgreSQL's ``tsv`` column and GIN index) are made by the migrations; HNSW indexes by the
PostgreSQL backend at run time. Never change a table here without adding a revision under ``migrations/``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

from goclaw.contracts.columns import created_field, text_field, vector_field

MIGRATIONS = Path(__file__).parent / "migrations"


class MemoryDocument(SQLModel, table=True):
    __tablename__ = "memory_documents"
    __table_args__ = (UniqueConstraint("agent_id", "user_id", "path", name="uq_memory_documents"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)  # "" = agent-level memory
    path: str = Field(max_length=1024)  # relative to the agent folder, POSIX separators
    content_hash: str = Field(max_length=64)
    size: int = Field(default=0)
    mtime: float = Field(default=0.0)
    chunk_count: int = Field(default=0)
    indexed_at: datetime = created_field()


class MemoryChunk(SQLModel, table=True):
    __tablename__ = "memory_chunks"
    __table_args__ = (
        Index("ix_memory_chunks_scope", "agent_id", "user_id"),
        Index("ix_memory_chunks_document", "document_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    document_id: int = Field(foreign_key="memory_documents.id", ondelete="CASCADE")
    agent_id: str = Field(max_length=64)
    user_id: str = Field(default="", max_length=255)
    path: str = Field(max_length=1024)
    start_line: int
    end_line: int
    text: str = text_field()
    # The retrieval engine's terms of ``text`` (goclaw_search.tokenize), space-separated:
    # the in-memory BM25 index is rebuilt from them and PostgreSQL's tsv is generated from them.
    lex: str | None = Field(default=None, sa_type=Text)
    chunk_hash: str = Field(max_length=64)
    embedding: Any = vector_field()
    embedding_provider: str | None = Field(default=None, max_length=128)
    embedding_model: str | None = Field(default=None, max_length=255)
    embedding_dim: int | None = Field(default=None)


# --------------------------------------------------------------------------- sessions


class Session(SQLModel, table=True):
    __tablename__ = "sessions"

    key: str = Field(primary_key=True, max_length=512)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    user_id: str = Field(default="", max_length=255)
    status: str = Field(default="open", max_length=16)  # open | ended
    compaction_count: int = Field(default=0)
    flushed_cycle: int = Field(default=-1)  # compaction cycle whose memory flush already ran
    summary: str = text_field()  # the latest compaction summary
    created_at: datetime = created_field()
    updated_at: datetime = created_field()


class SessionMessage(SQLModel, table=True):
    __tablename__ = "session_messages"
    __table_args__ = (UniqueConstraint("session_key", "seq", name="uq_session_messages_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    session_key: str = Field(foreign_key="sessions.key", max_length=512, ondelete="CASCADE")
    seq: int
    role: str = Field(max_length=32)
    content: str = text_field()
    token_count: int = Field(default=0)
    compacted: bool = Field(default=False)
    created_at: datetime = created_field()


# The ``postgresql`` backend's per-agent BM25 statistics and postings, created by the
# migrations (goclaw_memory.pg_stats: on PostgreSQL kept by triggers that backend installs;
# elsewhere empty and unused). Declared here so the schema names them (``goclaw forget``
# reports undeclared tables).
_PG_ONLY = MetaData()
PG_STATS_TABLES = (
    Table(
        "memory_agent_stats",
        _PG_ONLY,
        Column("agent_id", String(64), nullable=False),
        Column("chunks", BigInteger, nullable=False),
        Column("terms", BigInteger, nullable=False),
        Index("ix_memory_agent_stats", "agent_id"),
    ),
    Table(
        "memory_term_stats",
        _PG_ONLY,
        Column("agent_id", String(64), nullable=False),
        Column("term", Text, nullable=False),
        Column("df", Integer, nullable=False),
        Column("max_tf", Integer, nullable=False),
        Index("ix_memory_term_stats", "agent_id", "term"),
    ),
    # Packed postings (goclaw_memory.pg_postings): per (agent, term, user) one row of ordinals,
    # frequencies and chunk lengths; the chunks written since the last compaction as one row per
    # (chunk, term) in memory_delta; each packed chunk's ordinal; deleted ordinals until the
    # next compaction drops them from the lists; each agent's next ordinal.
    Table(
        "memory_packed",
        _PG_ONLY,
        Column("agent_id", String(64), nullable=False),
        Column("term", Text, nullable=False),
        Column("user_id", String(255), nullable=False),
        Column("ords", LargeBinary, nullable=False),
        Column("tfs", LargeBinary, nullable=False),
        Column("lens", LargeBinary, nullable=False),
        Index("ix_memory_packed", "agent_id", "term", "user_id", unique=True),
    ),
    Table(
        "memory_delta",
        _PG_ONLY,
        Column("agent_id", String(64), nullable=False),
        Column("term", Text, nullable=False),
        Column("user_id", String(255), nullable=False),
        Column("chunk_id", BigInteger, nullable=False),
        Column("tf", Integer, nullable=False),
        Column("len", Integer, nullable=False),
        Index("ix_memory_delta", "agent_id", "term", "user_id"),
        Index("ix_memory_delta_chunk", "chunk_id"),
    ),
    Table(
        "memory_ords",
        _PG_ONLY,
        Column("agent_id", String(64), nullable=False),
        Column("ord", Integer, nullable=False),
        Column("chunk_id", BigInteger, nullable=False),
        Index("ix_memory_ords", "agent_id", "ord", unique=True),
        Index("ix_memory_ords_chunk", "chunk_id"),
    ),
    Table(
        "memory_tombs",
        _PG_ONLY,
        Column("agent_id", String(64), nullable=False),
        Column("ord", Integer, nullable=False),
        Column("user_id", String(255), nullable=False),
        Column("lex", Text),
        Index("ix_memory_tombs", "agent_id", "ord"),
    ),
    Table(
        "memory_packed_agents",
        _PG_ONLY,
        Column("agent_id", String(64), primary_key=True),
        Column("next_ord", Integer, nullable=False),
        # Changes with every compaction (the compacting transaction's id): a process's cached
        # lists of the agent (goclaw_memory.pg_postings.ListCache) are current while it holds.
        Column("generation", BigInteger, nullable=False),
    ),
    # Each chunk's passage sketch for the reranker's passage step (goclaw_memory.pg_sketches):
    # valid while the chunk's hash is ``chunk_hash``, made by the embedder of ``space``.
    Table(
        "memory_sketches",
        _PG_ONLY,
        Column("agent_id", String(64), primary_key=True),
        Column("chunk_id", BigInteger, primary_key=True),
        Column("chunk_hash", String(64), nullable=False),
        Column("space", Text, nullable=False),
        Column("sketch", LargeBinary, nullable=False),
    ),
)


def pg_stats_ddl(*names: str) -> tuple[str, ...]:
    """``CREATE ... IF NOT EXISTS`` statements of the named :data:`PG_STATS_TABLES` and their
    indexes, as the migrations and the ``postgresql`` backend's install run them (the types
    rendered for PostgreSQL, which SQLite accepts too): the tables are declared once, here."""
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex, CreateTable

    dialect = postgresql.dialect()
    out: list[str] = []
    for table in (t for t in PG_STATS_TABLES if t.name in names):
        out.append(str(CreateTable(table, if_not_exists=True).compile(dialect=dialect)).strip())
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            out.append(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
    return tuple(out)
