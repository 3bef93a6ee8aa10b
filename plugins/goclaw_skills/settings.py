"""``[plugins.skills]`` settings."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SkillsSettings(BaseModel):
    """``[plugins.skills]``"""

    inline_max_skills: int = Field(
        default=20, ge=0, description="inline mode only with at most this many skills"
    )
    inline_max_tokens: int = Field(
        default=3500,
        ge=0,
        description="inline mode only when the names' and descriptions' tokens (engine.tokenizer) fit",
    )
    max_results: int = Field(default=5, ge=1, le=100, description="skill_search results")
    lexical_weight: float = Field(default=0.3, ge=0, description="BM25 weight in hybrid search")
    vector_weight: float = Field(default=0.7, ge=0, description="vector weight in hybrid search")
    watch: bool = Field(default=True, description="hot reload: watch skill folders once prompts are built")
    debounce_ms: int = Field(default=500, ge=0, description="hot-reload trailing debounce")
    max_skill_bytes: int = Field(default=256 * 1024, ge=1, description="larger SKILL.md files are skipped")
    db_check_seconds: float = Field(
        default=2.0,
        ge=0,
        description="trust the managed store/system_configs this long before re-checking for writes by "
        "other processes (in-process writes are seen at once; 0 = check on every use)",
    )
    backfill_embeddings: bool = Field(default=True, description="embed skills lacking vectors at start-up")
