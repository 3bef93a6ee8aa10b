"""Plugin ``goclaw.embeddings``. Provider registry; filled in by issue 5."""

from __future__ import annotations

from typing import Any

from goclaw import hookimpl
from pydantic import BaseModel, Field


class EmbeddingsSettings(BaseModel):
    """``[plugins.embeddings]``"""

    provider: str = Field(default="none", description="embedding provider name, or 'none'")


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return EmbeddingsSettings


@hookimpl
def goclaw_embedding_providers() -> dict[str, Any]:
    return {}
