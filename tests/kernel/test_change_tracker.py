"""goclaw.changes.ChangeTracker: committed writes invalidate the right engine's cache."""

from __future__ import annotations

from pathlib import Path

from goclaw.contracts.store import SystemConfig
from goclaw.engine import Engine


def test_a_second_engine_with_a_same_named_tracker_does_not_steal_the_invalidation(tmp_path: Path) -> None:
    """Found in the full suite: every tracker listens to every session, and trackers of the same
    name shared one session flag, so engine A's listener could consume engine B's "a watched
    table changed" flag and B kept serving a stale cached value."""
    a = Engine.open(tmp_path / "a")
    b = Engine.open(tmp_path / "b")
    try:
        ta = a.change_tracker("same", (SystemConfig,))
        tb = b.change_tracker("same", (SystemConfig,))
        loads: list[int] = []
        assert tb.cached("k", 60, lambda: loads.append(1) or "old") == "old"

        def _write(session: object) -> None:
            session.add(SystemConfig(tenant_id=b.settings.tenant_id, key="x", value="1"))  # type: ignore[attr-defined]

        before_a, before_b = ta.generation, tb.generation
        b.db.run_write(_write)
        assert tb.generation == before_b + 1  # B's write invalidates B's cache ...
        assert ta.generation == before_a  # ... and not A's
        assert tb.cached("k", 60, lambda: "new") == "new"
    finally:
        a.close()
        b.close()
