"""memory: chunk vectors kept in the row on PostgreSQL

Revision ID: memory_0006
Revises: memory_0005
Create Date: 2026-12-05 23:45:00

pgvector's ``vector`` type is stored ``EXTERNAL``: once a chunk's row passes ~2 KB (a 256-d
vector is 1 KB, the text and its terms the rest) the vector moves to the TOAST table, and an
exact scan or a candidate's cosine fetches it from there (a few buffer reads per row: an exact
scan of 3,000 chunks took ~9 ms instead of ~2). ``MAIN`` keeps the vector in the row and moves
the text out first. A catalog change only: rows written from now on are laid out this way;
existing rows keep their layout until rewritten (``VACUUM FULL memory_chunks`` or pg_repack;
docs/postgres.md). Nothing changes on SQLite.
"""

from __future__ import annotations

from alembic import op

revision = "memory_0006"
down_revision = "memory_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE memory_chunks ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE memory_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL")
