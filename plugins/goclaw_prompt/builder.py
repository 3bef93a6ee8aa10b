"""The ``prompt`` service: build an agent's system prompt.

One build: resolve the agent, seed the user's files on the first prompt for (agent, user),
pick the mode, load context files from every source (merged by name, later source wins,
base-only files survive), keep the mode's allow-listed files, add virtual files unless
BOOTSTRAP.md is pending, run the truncation pipeline over all of them, run slash commands, then
render every section of the mode in ``(order, name)`` order, leaving out empty ones.

A warm build touches no database: agents and context files are cached and invalidated by writes
(see :func:`goclaw.contracts.files.context_tracker`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goclaw.contracts.files import BOOTSTRAP_FILE, KNOWN_FILES, VIRTUAL_FILES, cache_seconds, context_tracker
from goclaw.contracts.hooks import ContextFile, PromptRequest, SlashResult
from goclaw.contracts.host import PromptContext
from goclaw.errors import ValidationError
from goclaw_prompt import hookspecs
from goclaw_prompt.modes import pick_mode
from goclaw_prompt.truncate import TruncateConfig, build_context_files

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent

log = logging.getLogger(__name__)


@dataclass
class PromptResult:
    """A built system prompt and what went into it (``goclaw prompt --json``)."""

    prompt: str
    mode: str
    sections: list[dict[str, Any]] = field(default_factory=list)  # {"name", "chars"}
    files: list[dict[str, Any]] = field(default_factory=list)  # {"name", "chars", "truncated", ...}
    skills_mode: str | None = None
    activated_skill: str | None = None
    reply: str | None = None
    slash: SlashResult | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "mode": self.mode,
            "sections": [dict(s) for s in self.sections],
            "files": [dict(f) for f in self.files],
            "skills_mode": self.skills_mode,
            "activated_skill": self.activated_skill,
            "reply": self.reply,
        }


def file_order(f: ContextFile) -> tuple[int, int, str]:
    """Prompt order: the known files in ``KNOWN_FILES`` order, other stored files by name, then
    virtual files (DELEGATION.md, TEAM.md, AVAILABILITY.md, then plugin-added ones by name)."""
    if f.virtual:
        rank = VIRTUAL_FILES.index(f.name) if f.name in VIRTUAL_FILES else len(VIRTUAL_FILES)
        return (2, rank, f.name)
    if f.name in KNOWN_FILES:
        return (0, KNOWN_FILES.index(f.name), f.name)
    return (1, 0, f.name)


def merge_sources(layers: list[list[ContextFile]]) -> dict[str, ContextFile]:
    """Merge file lists by name; a later layer overrides an earlier one, earlier-only files
    survive. A blank later copy does not hide a non-blank earlier one (the user's
    copy is read first, the agent-level one is the fallback)."""
    merged: dict[str, ContextFile] = {}
    for layer in layers:
        for f in layer:
            earlier = merged.get(f.name)
            if earlier is not None and not (f.content or "").strip() and (earlier.content or "").strip():
                continue
            merged[f.name] = f
    return merged


class PromptService:
    """``engine.prompt``."""

    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self._seeded: set[tuple[str, str]] = set()

    # ------------------------------------------------------------------ public API
    def build_for(self, agent: str, user: str | None = None, **kwargs: Any) -> PromptResult:
        """Convenience: ``build(PromptRequest(agent=agent, user=user, **kwargs))``."""
        return self.build(PromptRequest(agent=agent, user=user, **kwargs))

    def build(self, request: PromptRequest) -> PromptResult:
        engine = self.engine
        agent = self._agent(request.agent)
        user = request.user or ""
        if user:
            self._seed_user(agent, user)

        # a subagent/cron key beats --mode
        mode = pick_mode(request, lambda r: hookspecs.resolve_mode(engine, r))
        modes = hookspecs.modes(engine)
        if mode not in modes:
            raise ValidationError(
                f"unknown prompt mode {mode!r}; registered modes: {', '.join(sorted(modes))}"
            )
        allow = modes[mode].file_allowlist

        ctx = PromptContext(engine=engine, request=request, agent=agent, user=user, mode=mode)
        files = self._context_files(ctx, allow)

        kept = build_context_files(files, self._truncate_config())
        ctx.files = [ContextFile(t.name, t.content, t.source, t.virtual) for t in kept]
        file_report = [
            {
                "name": t.name,
                "chars": t.chars,
                "truncated": t.truncated,
                "original_chars": t.original_chars,
                "source": t.source,
                "virtual": t.virtual,
            }
            for t in kept
        ]

        slash = self._slash(ctx)
        parts, section_report = self._render_sections(ctx, mode)

        return PromptResult(
            prompt="\n\n".join(parts) + "\n",
            mode=mode,
            sections=section_report,
            files=file_report,
            skills_mode=ctx.state.get("skills_mode"),
            activated_skill=ctx.state.get("activated_skill"),
            reply=slash.reply if slash is not None else None,
            slash=slash,
        )

    # ------------------------------------------------------------------ steps
    def _context_files(self, ctx: PromptContext, allow: frozenset[str] | None) -> list[ContextFile]:
        """Every source's files merged by name and kept by the mode's allow-list, plus the
        virtual files unless BOOTSTRAP.md is pending, in :func:`file_order`. Sets
        ``ctx.bootstrapping`` and ``ctx.files`` (the same list, as the virtual-file hooks see it)."""
        hooks = self.engine.hooks
        merged = merge_sources(
            [
                hooks.guard("context-file source", source.name, lambda s=source: s.load(ctx), [])
                for source in hookspecs.context_file_sources(self.engine)
            ]
        )
        files = [f for f in merged.values() if allow is None or f.name in allow]
        ctx.bootstrapping = any(f.name == BOOTSTRAP_FILE and (f.content or "").strip() for f in files)
        ctx.files = files
        if not ctx.bootstrapping:
            for vf in hookspecs.virtual_context_files(self.engine, ctx):
                if vf.name in merged or (allow is not None and vf.name not in allow):
                    continue
                files.append(ContextFile(vf.name, vf.content, "virtual", virtual=True))
        files.sort(key=file_order)
        return files

    def _render_sections(self, ctx: PromptContext, mode: str) -> tuple[list[str], list[dict[str, Any]]]:
        """The mode's non-empty sections in ``(order, name)`` order, and their report."""
        hooks = self.engine.hooks
        parts: list[str] = []
        section_report: list[dict[str, Any]] = []
        for section in hookspecs.sections(self.engine):
            if mode not in section.modes:
                continue
            # A third-party section that raises is reported and left out, not fatal.
            text = hooks.guard("prompt section", section.name, lambda s=section: s.render(ctx), None)
            if not text or not text.strip():
                continue
            text = text.strip("\n")
            parts.append(text)
            section_report.append({"name": section.name, "chars": len(text)})
        return parts, section_report

    def _agent(self, name: str) -> Agent:
        engine = self.engine
        key = ("agent", engine.settings.tenant_id, name)
        agent: Agent = context_tracker(engine).cached(
            key, cache_seconds(engine), lambda: engine.agents.get(name)
        )
        return agent

    def _seed_user(self, agent: Agent, user: str) -> None:
        """The first prompt for (agent, user) seeds the user's files (once per process;
        the seeder itself never overwrites and skips users who already have files)."""
        key = (agent.id, user)
        if key in self._seeded:
            return
        if self.engine.has_service("seeder"):
            self.engine.service("seeder").seed_user(agent, user)
        self._seeded.add(key)

    def _truncate_config(self) -> TruncateConfig:
        """``[plugins.prompt]``'s truncation settings: the prompt's own, so the budget holds
        whatever other plugins are disabled."""
        cfg = self.engine.plugin_settings("prompt")
        if isinstance(cfg, TruncateConfig):
            return cfg
        return TruncateConfig.model_validate(
            {k: v for k, v in cfg.model_dump().items() if k in TruncateConfig.model_fields}
        )

    def _slash(self, ctx: PromptContext) -> SlashResult | None:
        message = ctx.request.message
        if not message:
            return None
        hooks = self.engine.hooks
        for command in hookspecs.slash_commands(self.engine):
            # A third-party command that raises is reported and passed over, not fatal.
            result = hooks.guard(
                "slash command", command.name, lambda c=command: c.handle(message, ctx), None
            )
            if result is not None:
                ctx.state["slash"] = result
                return result
        return None
