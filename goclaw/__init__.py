"""goclaw: the context engine for AI agents.

``goclaw.Engine`` is the facade (``Engine.open(workspace=...)``); ``goclaw.hookimpl`` is the
marker plugin authors use. Importing ``goclaw`` is cheap: everything, pluggy included, loads on
first use (``goclaw --help`` needs none of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goclaw.aio import AsyncEngine
    from goclaw.engine import Engine
    from goclaw.hookspecs import hookimpl

__all__ = ["AsyncEngine", "Engine", "hookimpl"]


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        from goclaw.hookspecs import hookimpl

        return hookimpl
    if name == "Engine":
        from goclaw.engine import Engine

        return Engine
    if name == "AsyncEngine":
        from goclaw.aio import AsyncEngine

        return AsyncEngine
    raise AttributeError(f"module 'goclaw' has no attribute {name!r}")
