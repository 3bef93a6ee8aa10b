"""goclaw-handbook: the plugin built in the plugin-author tutorial (docs/tutorial.md).

It gives every agent of a team three things, configured in ``[plugins.handbook]``:

1. a prompt section, "Team handbook", with the on-call rota (``on_call``);
2. a skill tier, ``handbook``, that serves the team's shared skills folder (``skills_dir``)
   between the project tier (2) and the personal tier (3);
3. a memory search backend, ``synonyms``, that expands the team's jargon (``synonyms``)
   before delegating to the default backend of the database in use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from goclaw import hookimpl


class HandbookSettings(BaseModel):
    """``[plugins.handbook]``"""

    on_call: str = Field(default="", description="who is on call this week")
    skills_dir: str = Field(default="", description="folder of team-shared <slug>/SKILL.md skills")
    synonyms: dict[str, list[str]] = Field(default_factory=dict, description="term -> expansions")


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return HandbookSettings


# --------------------------------------------------------------------------- 1. a prompt section


@dataclass
class HandbookSection:
    name: str = "team_handbook"
    order: float = 8.5  # after Current Time (8), before Messaging (9)
    modes: frozenset[str] = frozenset({"full"})

    def render(self, ctx: Any) -> str | None:
        settings: HandbookSettings = ctx.engine.plugin_settings("handbook")
        if not settings.on_call:
            return None  # nothing to say: the section is left out
        return f"## Team handbook\nOn call this week: {settings.on_call}. Page them for sev-1 incidents."


@hookimpl
def goclaw_prompt_sections() -> list[Any]:
    return [HandbookSection()]


# --------------------------------------------------------------------------- 2. a skill tier


class HandbookTier:
    """Skills from the team's shared folder; same-slug skills in higher tiers override them."""

    name = "handbook"
    priority = 3  # ties with the personal tier are broken by name: "handbook" < "personal"

    def roots(self, engine: Any) -> list[Path]:
        folder = engine.plugin_settings("handbook").skills_dir
        return [Path(folder).expanduser()] if folder else []

    def discover(self, engine: Any) -> Any:
        from goclaw_skills.parsing import discover_folder  # the skills plugin's folder scanner

        for root in self.roots(engine):
            yield from discover_folder(root, source=self.name)


@hookimpl
def goclaw_skill_tiers() -> list[Any]:
    return [HandbookTier()]


# --------------------------------------------------------------------------- 3. a search backend


class SynonymBackend:
    """Expands jargon in full-text queries, then lets the built-in backend do the work."""

    name = "synonyms"

    def __init__(self, engine: Any) -> None:
        # Wrap what backend = "auto" selects: "sqlite" on SQLite, "postgresql" on PostgreSQL.
        default = "sqlite" if engine.db.backend == "sqlite" else "postgresql"
        self.base = engine.hooks.registry("goclaw_search_backends", "search backend")[default](engine)
        table = engine.plugin_settings("handbook").synonyms
        self.synonyms = {k.lower(): v for k, v in table.items()}

    def expand(self, query: str) -> str:
        words = query.split()
        extra = [s for w in words for s in self.synonyms.get(w.lower(), [])]
        return " ".join([*words, *extra])

    def search(self, query: Any) -> Any:
        from dataclasses import replace

        from goclaw_search.tokenize import query_term_counts

        text = self.expand(query.text)
        terms, counts = query_term_counts(text)  # a repeated word counts as often in BM25
        return self.base.search(replace(query, text=text, terms=tuple(terms), term_counts=tuple(counts)))

    def __getattr__(self, attr: str) -> Any:
        # rows(), apply_changes(), prepare_vectors(), ...: unchanged from the built-in backend.
        return getattr(self.base, attr)


@hookimpl
def goclaw_search_backends() -> dict[str, Any]:
    return {"synonyms": SynonymBackend}
