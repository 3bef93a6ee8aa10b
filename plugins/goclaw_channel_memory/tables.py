"""The channel-memory plugin's table (component ``channel_memory``; migrations in ``migrations/``).

``channel_memory_extraction_items``: passive channel memory candidates, redacted, awaiting
review. Never change the table here without adding a revision under ``migrations/``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from goclaw.contracts.columns import created_field, text_field, ts_field

MIGRATIONS = Path(__file__).parent / "migrations"


class ChannelMemoryItem(SQLModel, table=True):
    """Passive channel memory candidates, redacted, awaiting review."""

    __tablename__ = "channel_memory_extraction_items"
    __table_args__ = (Index("ix_channel_memory_scope", "agent_id", "channel"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_id: str = Field(foreign_key="agents.id", max_length=64, ondelete="CASCADE")
    channel: str = Field(max_length=255)
    user_id: str = Field(default="", max_length=255)
    content: str = text_field()
    status: str = Field(default="pending", max_length=16)  # pending | approved | rejected
    episodic_id: str | None = Field(default=None, max_length=64)
    created_at: datetime = created_field()
    reviewed_at: datetime | None = ts_field(nullable=True)
