"""``engine.skills``: the Python API behind the CLI, the prompt section, slash commands and tools.

Who sees what: filesystem tiers are visible to every caller; managed-store
skills only per :func:`goclaw_skills.store.list_accessible` (a pinned agent grant shows the pinned
version); then the allow list narrows by slug — the per-request ``skill_filter`` when given,
else the agent's ``settings["skill_allow_list"]`` (missing/None = all, [] = none). Resolution
by tier happens over what the caller may access, so a hidden managed skill never shows up,
not even as a shadow. ``include_all=True`` is the operator's view (the CLI without
``--agent``/``--user``): every tier, every managed row.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw.errors import FeatureUnavailableError, GoclawError, NotFoundError, ValidationError
from goclaw_skills import store, store_files
from goclaw_skills.changes import DbChanges
from goclaw_skills.lint import LintResult as LintResult  # re-exported: defined here before
from goclaw_skills.lint import lint_results, lint_targets
from goclaw_skills.loader import ResolvedSkill, SkillLoader, SkillView, embedding_text, resolve
from goclaw_skills.parsing import SkillProblem, SkillRecord, parse_skill_text
from goclaw_skills.scan import scan_skill_text

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.store import Agent
    from goclaw_skills.settings import SkillsSettings
    from goclaw_skills.watcher import SkillWatcher

log = logging.getLogger(__name__)
CHANNELS = ("hybrid", "lexical", "vector")


@dataclass
class SkillHit:
    """One ``skill_search`` result (JSON: ``{"slug","name","score","source"}``)."""

    slug: str
    name: str
    score: float
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "name": self.name, "score": round(self.score, 6), "source": self.source}


class SkillsService:
    def __init__(self, engine: Host) -> None:
        self.engine = engine
        self.changes = DbChanges(engine, lambda: self.settings.db_check_seconds)
        self.loader = SkillLoader(
            engine, lambda: self.changes.get("fingerprint", lambda: store.db_fingerprint(engine))
        )
        self.watcher: SkillWatcher | None = None
        engine.on_close(self.close)

    @property
    def settings(self) -> SkillsSettings:
        s: SkillsSettings = self.engine.plugin_settings("skills")
        return s

    # ------------------------------------------------------------------ callers
    def _agent(self, agent: str | Agent | None) -> Agent | None:
        if agent is None or agent == "":
            return None
        if isinstance(agent, str):
            return self.engine.agents.get(agent)
        return agent

    @staticmethod
    def allow_list(agent: Agent | None, skill_filter: Any = None) -> tuple[str, ...] | None:
        """The effective allow list: the request filter overrides the agent's."""
        if skill_filter is not None:
            return tuple(skill_filter)
        if agent is None:
            return None
        value = (agent.settings or {}).get("skill_allow_list")
        return None if value is None else tuple(value)

    def view(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        include_all: bool = False,
    ) -> SkillView:
        """The skills this caller may see (cached until the tiers or grants change)."""
        a = self._agent(agent)
        user = user or None
        allow = self.allow_list(a, skill_filter)
        agent_id = a.id if a is not None else None
        key = (agent_id, user, allow, include_all)

        def build(snap: Any) -> list[ResolvedSkill]:
            records: list[SkillRecord] = snap.records
            if not include_all and any(r.managed for r in records):
                access = store.list_accessible(self.engine, agent_id, user)
                records = [
                    self._pinned(r, access.pinned)
                    for r in records
                    if not r.managed or r.skill_id in access.skill_ids
                ]
            resolved = resolve(records)
            if allow is not None:
                wanted = set(allow)
                resolved = [r for r in resolved if r.slug in wanted]
            return resolved

        return self.loader.view(key, build)

    def _pinned(self, rec: SkillRecord, pinned: dict[str, int]) -> SkillRecord:
        version = pinned.get(rec.skill_id or "")
        if version is None or version == rec.version or rec.skill_id is None:
            return rec
        content = store.version_content(self.engine, rec.skill_id, version)
        if content is None:
            return rec
        base = store_files.base_dir(self.engine, rec.slug, version) or f"managed://{rec.slug}"
        parsed = parse_skill_text(content, rec.slug, path=rec.path, base_dir=base, source=rec.source)
        return dataclasses.replace(
            rec,
            name=parsed.name,
            description=parsed.description,
            content=parsed.content,
            frontmatter=parsed.frontmatter,
            body=parsed.body,
            base_dir=parsed.base_dir,
            version=version,
        )

    # ------------------------------------------------------------------ listing
    def list(
        self,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        include_all: bool = False,
    ) -> list[ResolvedSkill]:
        """Resolved skills in slug order, each with the copies it shadows."""
        return list(self.view(agent, user, skill_filter, include_all=include_all).skills)

    def problems(self) -> list[SkillProblem]:
        """Malformed SKILL.md files skipped by the last scan (path and reason)."""
        return list(self.loader.snapshot().problems)

    def show(
        self,
        slug: str,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        include_all: bool = False,
    ) -> ResolvedSkill:
        hit = self.view(agent, user, skill_filter, include_all=include_all).by_slug.get(slug)
        if hit is None:
            raise NotFoundError(f"no skill {slug!r} is available here")
        return hit

    def use(
        self, slug: str, agent: str | Agent | None = None, user: str | None = None, skill_filter: Any = None
    ) -> str:
        """The ``use_skill`` tool: the full SKILL.md with ``{baseDir}`` resolved (GoClaw #1477)."""
        view = self.view(agent, user, skill_filter)
        hit = view.by_slug.get(slug)
        if hit is None:
            lowered = slug.strip().lower()
            hit = next((r for r in view.skills if r.record.name.lower() == lowered), None)
        if hit is None:
            raise NotFoundError(f"no skill {slug!r} is available here; use skill_search to find one")
        return hit.record.instructions()

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        agent: str | Agent | None = None,
        user: str | None = None,
        skill_filter: Any = None,
        *,
        channel: str = "hybrid",
        limit: int | None = None,
        include_all: bool = False,
    ) -> list[SkillHit]:
        """BM25 and vector similarity fused over the skills the caller may see.

        The view's :class:`~goclaw_search.index.SearchIndex` scores every skill on both
        channels (the shared tokenizer's terms; the skill vectors), and
        :func:`~goclaw_search.fusion.fuse` applies BM25 / best BM25 × ``lexical_weight``
        + cosine × ``vector_weight``; a channel with no hit leaves the other at weight 1.0."""
        if channel not in CHANNELS:
            raise ValidationError(f"unknown search channel {channel!r}: use hybrid, lexical or vector")
        cfg = self.settings
        k = limit or cfg.max_results
        view = self.view(agent, user, skill_filter, include_all=include_all)
        if not len(view) or not query.strip():
            return []
        from goclaw_search.fusion import fuse
        from goclaw_search.tokenize import query_terms

        index, vector = view.search_index(), None
        if channel in ("hybrid", "vector"):
            found = self._vector_scores(view, query, required=channel == "vector")
            if found is not None:
                index, vector = found
        lexical = index.bm25(query_terms(query)) if channel in ("hybrid", "lexical") else None
        scored = fuse(
            lexical,
            vector,
            None,
            limit=k,
            text_weight=cfg.lexical_weight,
            vector_weight=cfg.vector_weight,
        )
        out = []
        for s in scored:
            rec = view.skills[s.slot].record
            out.append(SkillHit(rec.slug, rec.name, s.score, rec.source))
        return out

    def _vector_scores(self, view: SkillView, query: str, *, required: bool) -> tuple[Any, Any] | None:
        """``(the view's index with vectors, cosine of every skill)``, or ``None`` (BM25 only)
        when no embedder is configured or embedding fails; with ``required`` (the
        vector channel alone) those raise instead."""
        try:
            embedder = self.engine.embedder()
        except GoclawError as exc:
            if required:
                raise
            log.info("skill search: embedder unavailable (%s); BM25 only", exc)
            return None
        if embedder is None:
            if required:
                raise FeatureUnavailableError(
                    "no embedding provider is configured ([plugins.embeddings] provider); "
                    "use --channel lexical"
                )
            return None
        try:
            qvec = embedder.embed([query])[0]
            index = view.search_index(self.engine, embedder)
        except Exception as exc:  # the embedding service failed: degrade to BM25
            if required:
                raise FeatureUnavailableError(f"embedding failed: {type(exc).__name__}: {exc}") from None
            log.warning("skill search: embedding failed (%s: %s); BM25 only", type(exc).__name__, exc)
            return None
        cosine = index.cosine(qvec)
        return (index, cosine) if cosine is not None else None

    def backfill_embeddings(self) -> int:
        """Embed every loaded skill lacking a cached vector; returns the count."""
        try:
            embedder = self.engine.embedder()
        except GoclawError as exc:
            log.info("skill embedding backfill skipped: %s", exc)
            return 0
        if embedder is None:
            return 0
        from goclaw_skills.embeddings import backfill

        texts = sorted({embedding_text(r) for r in self.loader.snapshot().records})
        try:
            return backfill(self.engine, embedder, texts)
        except Exception as exc:  # start-up must not fail because the embedder is down
            log.warning("skill embedding backfill failed: %s: %s", type(exc).__name__, exc)
            return 0

    # ------------------------------------------------------------------ lint
    def lint(self, paths: list[Path] | None = None) -> list[LintResult]:
        """Agent Skills checks for every skill in every tier (or in ``paths``)."""
        items: list[SkillRecord | SkillProblem] = []
        if paths:
            items = lint_targets(paths, self.settings.max_skill_bytes)
        else:
            snap = self.loader.snapshot()
            items = [*snap.records, *snap.problems]
        return lint_results(items)

    # ------------------------------------------------------------------ managed store
    def add(
        self, path: str | Path, *, owner: str = "", visibility: str | None = None, slug: str | None = None
    ) -> dict[str, Any]:
        """Add a skill folder, SKILL.md or ZIP to the managed store (a new version if it exists).

        A SKILL.md the content scan flags (:mod:`goclaw_skills.scan`) is refused with a
        :class:`~goclaw.errors.ValidationError`; :meth:`force_add` adds it anyway."""
        return self._add(Path(path), owner, visibility, slug, force=False)

    def force_add(
        self, path: str | Path, *, owner: str = "", visibility: str | None = None, slug: str | None = None
    ) -> dict[str, Any]:
        """:meth:`add` even when the content scan flags the SKILL.md (a person reviewed it);
        the findings come back in ``scan_findings``."""
        return self._add(Path(path), owner, visibility, slug, force=True)

    def _add(
        self, path: Path, owner: str, visibility: str | None, slug: str | None, *, force: bool
    ) -> dict[str, Any]:
        found_slug, text, _names = store.read_skill_source(path)
        findings = scan_skill_text(text)
        if findings and not force:
            more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
            raise ValidationError(
                f"refusing to add {slug or found_slug}: the content scan flagged {findings[0]}{more}; "
                "review the skill (goclaw skills lint PATH lists every finding) and add it with "
                "--force if it is safe"
            )
        files = store_files.read_skill_files(path)
        row, created = store.add_skill(
            self.engine,
            text,
            slug or found_slug,
            owner=owner,
            visibility=visibility,
            files_digest=files.digest(),
        )
        store_files.write_version(self.engine, row.slug, row.version, text, files)
        self.loader.bump()
        return {
            "slug": row.slug,
            "name": row.name,
            "version": row.version,
            "visibility": row.visibility,
            "owner": row.owner_id,
            "created": created,
            "files": sorted(files.files),
            "ignored_files": files.ignored,
            "scan_findings": findings,
        }

    def grant(
        self,
        slug: str,
        *,
        agent: str | None = None,
        user: str | None = None,
        pinned_version: int | None = None,
        granted_by: str = "",
    ) -> None:
        store.grant(
            self.engine, slug, agent=agent, user=user, pinned_version=pinned_version, granted_by=granted_by
        )
        self.loader.bump()

    def revoke(self, slug: str, *, agent: str | None = None, user: str | None = None) -> bool:
        removed = store.revoke(self.engine, slug, agent=agent, user=user)
        self.loader.bump()
        return removed

    def set_visibility(self, slug: str, visibility: str, *, owner: str | None = None) -> None:
        store.set_visibility(self.engine, slug, visibility, owner=owner)
        self.loader.bump()

    def list_accessible(self, agent: str | Agent | None = None, user: str | None = None) -> list[str]:
        """Slugs of the managed skills the caller may use (:func:`goclaw_skills.store.list_accessible`)."""
        a = self._agent(agent)
        access = store.list_accessible(self.engine, a.id if a else None, user)
        return sorted(r.slug for r in store.managed_rows(self.engine) if r.id in access.skill_ids)

    def managed(self) -> list[dict[str, Any]]:
        return [
            {
                "slug": r.slug,
                "name": r.name,
                "version": r.version,
                "visibility": r.visibility,
                "owner": r.owner_id,
                "status": r.status,
            }
            for r in store.managed_rows(self.engine)
        ]

    # ------------------------------------------------------------------ system_configs
    def slash_config(self) -> Any:
        """The four ``skills.slash_commands.*`` settings (cached like the managed store)."""
        from goclaw_skills.slash import read_config

        return self.changes.get("slash_config", lambda: read_config(self.engine))

    def set_config(self, key: str, value: str) -> None:
        from goclaw_skills.slash import set_system_config

        set_system_config(self.engine, key, value)

    # ------------------------------------------------------------------ hot reload
    @property
    def version(self) -> int:
        return self.loader.version

    def reload(self) -> None:
        """Forget the cache; the next use re-reads every tier."""
        self.loader.bump()

    def roots(self) -> list[Path]:
        out: list[Path] = []
        for tier in self.loader.tiers():
            try:
                out.extend(Path(r) for r in tier.roots(self.engine))
            except Exception:  # a broken third-party tier: nothing to watch
                log.debug("tier %s roots failed", getattr(tier, "name", tier), exc_info=True)
        return out

    def watch(self) -> SkillWatcher:
        """Start the hot-reload watcher (idempotent); it stops when the engine closes."""
        if self.watcher is None:
            from goclaw_skills.watcher import SkillWatcher

            self.watcher = SkillWatcher(self.roots, self.loader.bump, self.settings.debounce_ms / 1000)
        self.watcher.start()
        return self.watcher

    def ensure_watching(self) -> None:
        if self.settings.watch and (self.watcher is None or not self.watcher.running):
            self.watch()

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.changes.close()
