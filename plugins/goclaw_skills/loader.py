"""The skill loader: tier resolution with a cache between version bumps.

A :class:`Snapshot` holds every tier's records, read once per loader version (the watcher
bumps the version after a change; the managed store is re-read when its database
fingerprint changes). A :class:`SkillView` is what one caller sees: records the caller may
access, resolved by tier (the highest tier's copy of a slug wins, lower copies are listed as
``shadows``), then narrowed by the allow list. Views are cached per snapshot and caller, and
each view lazily builds its search index (the retrieval engine's :class:`SearchIndex`: BM25
postings and the skill vectors on the same slots), so a prompt build or a search
never rescans the disk.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goclaw_skills.parsing import SkillProblem, SkillRecord

if TYPE_CHECKING:
    from goclaw.contracts.host import Host
    from goclaw.contracts.providers import EmbeddingProvider
    from goclaw_search.index import SearchIndex

log = logging.getLogger(__name__)


@dataclass
class ResolvedSkill:
    """The winning copy of one slug, with the lower-tier copies it shadows."""

    record: SkillRecord
    shadows: list[SkillRecord] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.record.slug

    def as_dict(self) -> dict[str, Any]:
        """The ``goclaw skills list --json`` item."""
        r = self.record
        return {
            "slug": r.slug,
            "name": r.name,
            "description": r.description,
            "source": r.source,
            "path": r.path,
            "shadows": [{"source": s.source, "path": s.path} for s in self.shadows],
        }


@dataclass
class Snapshot:
    serial: int
    version: int
    fingerprint: Any
    records: list[SkillRecord]  # in tier order (priority, tier name), then discovery order
    problems: list[SkillProblem]


def _coerce(item: Any, tier: Any) -> SkillRecord | SkillProblem | None:
    """Accept our records, or any object with a ``slug`` (third-party tiers)."""
    if isinstance(item, SkillRecord | SkillProblem):
        rec = item
    elif getattr(item, "slug", None):
        content = str(getattr(item, "content", "") or "")
        rec = SkillRecord(
            slug=str(item.slug),
            name=str(getattr(item, "name", "") or item.slug),
            description=str(getattr(item, "description", "") or ""),
            content=content,
            path=str(getattr(item, "path", "") or f"{tier.name}://{item.slug}"),
            base_dir=str(getattr(item, "base_dir", "") or ""),
            body=content,
        )
    else:
        return SkillProblem(
            repr(item)[:200], f"tier {tier.name!r} returned an object without a slug", tier.name
        )
    if isinstance(rec, SkillRecord):
        rec.source = rec.source or tier.name
        rec.priority = int(tier.priority)
    return rec


class SkillView:
    """Skills visible to one caller, in slug order, with lazily built search structures."""

    def __init__(self, resolved: list[ResolvedSkill]) -> None:
        self.skills = resolved
        self.by_slug = {r.slug: r for r in resolved}
        self._indexes: dict[tuple[str, str] | None, SearchIndex] = {}
        self._vectors: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.skills)

    def search_index(
        self, engine: Host | None = None, embedder: EmbeddingProvider | None = None
    ) -> SearchIndex:
        """The retrieval engine's index over this view: slot ``i`` is ``skills[i]``, with BM25 over
        the shared tokenizer's terms of ``name + " " + description`` and, given an embedder, the
        skill vectors of its space (:meth:`vectors`; raises when embedding fails)."""
        key = None if embedder is None else (str(embedder.provider), str(embedder.model))
        idx = self._indexes.get(key)
        if idx is not None:
            return idx
        matrix = self.vectors(engine, embedder) if engine is not None and embedder is not None else None
        from goclaw_search.index import Doc, SearchIndex
        from goclaw_search.tokenize import default_tokenizer

        with self._lock:
            idx = self._indexes.get(key)
            if idx is None:
                terms = default_tokenizer().terms
                dim = int(matrix.shape[1]) if matrix is not None and matrix.ndim == 2 else 0
                idx = SearchIndex(dim)
                idx.upsert(
                    Doc(
                        i,
                        "",
                        terms(f"{r.record.name} {r.record.description}"),
                        matrix[i] if dim else None,
                    )
                    for i, r in enumerate(self.skills)
                )
                self._indexes[key] = idx
        return idx

    def vectors(self, engine: Host, embedder: EmbeddingProvider) -> Any:
        """Row-normalised skill vectors for this view (embedding cache in the database)."""
        key = (embedder.provider, embedder.model)
        if key not in self._vectors:
            import numpy as np

            from goclaw_skills.embeddings import skill_vectors

            mat = skill_vectors(engine, embedder, [embedding_text(r.record) for r in self.skills])
            norms = np.linalg.norm(mat, axis=1, keepdims=True) if len(mat) else None
            if norms is not None:
                norms[norms == 0] = 1.0
                mat = (mat / norms).astype(np.float32)
            self._vectors[key] = mat
        return self._vectors[key]


def embedding_text(record: SkillRecord) -> str:
    """The text a skill is embedded by: ``name + ": " + description``."""
    return f"{record.name}: {record.description}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resolve(
    records: Iterable[SkillRecord], keep: Callable[[SkillRecord], bool] | None = None
) -> list[ResolvedSkill]:
    """Highest tier wins per slug (records arrive in tier order); result in slug order."""
    winners: dict[str, ResolvedSkill] = {}
    for rec in records:
        if keep is not None and not keep(rec):
            continue
        hit = winners.get(rec.slug)
        if hit is None:
            winners[rec.slug] = ResolvedSkill(rec)
        else:
            hit.shadows.append(rec)
    return [winners[s] for s in sorted(winners)]


class SkillLoader:
    """Reads the tiers once per version; hands out cached per-caller views."""

    MAX_VIEWS = 64

    def __init__(self, engine: Host, fingerprint: Callable[[], Any] | None = None) -> None:
        self.engine = engine
        self._fingerprint_fn = fingerprint
        self.version = 0
        self._serial = 0
        self._snapshot: Snapshot | None = None
        self._views: OrderedDict[Any, SkillView] = OrderedDict()
        self._lock = threading.RLock()
        self._reported: set[tuple[str, str]] = set()
        self.scans = 0  # how many times the tiers were read (tests check the cache with it)

    def bump(self) -> int:
        """Mark the tiers changed; the next snapshot re-reads them."""
        with self._lock:
            self.version += 1
            return self.version

    def tiers(self) -> list[Any]:
        from goclaw_skills.hookspecs import tiers

        return tiers(self.engine)

    def _fingerprint(self) -> Any:
        if self._fingerprint_fn is not None:
            return self._fingerprint_fn()
        from goclaw_skills.store import db_fingerprint

        return db_fingerprint(self.engine)

    def snapshot(self) -> Snapshot:
        fp = self._fingerprint()
        with self._lock:
            snap = self._snapshot
            if snap is not None and snap.version == self.version and snap.fingerprint == fp:
                return snap
            version = self.version
            records: list[SkillRecord] = []
            problems: list[SkillProblem] = []
            for tier in self.tiers():
                try:
                    items = list(tier.discover(self.engine))
                except Exception as exc:  # a broken third-party tier is reported, not fatal
                    problems.append(
                        SkillProblem(tier.name, f"tier failed: {type(exc).__name__}: {exc}", tier.name)
                    )
                    continue
                for item in items:
                    rec = _coerce(item, tier)
                    if isinstance(rec, SkillRecord):
                        records.append(rec)
                    elif rec is not None:
                        problems.append(rec)
            self.scans += 1
            self._serial += 1
            snap = Snapshot(self._serial, version, fp, records, problems)
            self._snapshot = snap
            self._views.clear()
            for p in problems:
                key = (p.path, p.reason)
                if key not in self._reported:
                    self._reported.add(key)
                    log.warning("skipped skill %s", p)
            return snap

    def view(self, key: Any, build: Callable[[Snapshot], list[ResolvedSkill]]) -> SkillView:
        snap = self.snapshot()
        full_key = (snap.serial, key)
        with self._lock:
            view = self._views.get(full_key)
            if view is not None:
                self._views.move_to_end(full_key)
                return view
        view = SkillView(build(snap))
        with self._lock:
            self._views[full_key] = view
            while len(self._views) > self.MAX_VIEWS:
                self._views.popitem(last=False)
        return view
