"""``goclaw.AsyncEngine``: every engine call, awaitable, for asyncio runtimes.

``async with AsyncEngine(workspace) as aengine:`` opens the workspace (in a thread) and closes it
on exit. Every attribute path of the engine is awaitable through it, services included: ``await
aengine.memory.search(...)``, ``await aengine.agents.create("ada")``, ``await aengine.settings``
(a value, read in the pool). Nothing is resolved before the await: resolving ``engine.memory``
may open the service, which belongs off the event loop too. The first shorthands
(``build_prompt``, ``search``, ``append``, ...) are paths (:data:`SHORTHANDS`).

Concurrency model. goclaw's engine is synchronous and thread-safe: services share one SQLAlchemy
connection pool, SQLite writes are serialised by the store (busy timeout and retries), and
PostgreSQL handles concurrent sessions itself. ``AsyncEngine`` runs each call in a thread pool
of its own with at most ``max_threads`` workers (default 8), so

* the event loop never blocks on the database, an embedding or a file;
* at most ``max_threads`` engine calls run at once; further awaits queue in the pool (the
  bound keeps a burst of turns from opening more database connections than the pool holds);
* calls from one coroutine run in the order it awaits them; calls from different coroutines
  run concurrently, each in its own transaction — a search never sees half of an append;
* cancelling an await stops waiting, not the call: a write that started completes.

The pool is the engine's: ``aclose()`` (or leaving ``async with``) waits for running calls, then
closes the engine.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from goclaw.engine import Engine

T = TypeVar("T")

SHORTHANDS = {"build_prompt": "prompt.build", "search": "memory.search_response", "append": "sessions.append"}
SHORTHANDS |= {"add_memory": "memory.writer.add", "tool_schemas": "tools.schemas", "call_tool": "tools.call"}


class AsyncEngine:
    """An :class:`~goclaw.engine.Engine` whose every call is awaitable: ``AsyncEngine(workspace,
    *args, **kwargs)`` (``Engine.open``'s) opens on ``async with``; ``AsyncEngine(engine)``
    wraps an open engine."""

    def __init__(
        self, workspace: str | os.PathLike[str] | Engine = ".", *args: Any, max_threads: int = 8, **kw: Any
    ) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        opens = isinstance(workspace, str | os.PathLike)
        self._engine: Engine | None = None if opens else workspace  # type: ignore[assignment]
        self._open = (workspace, args, kw) if opens else None
        self.max_threads = max_threads
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="goclaw-async")

    @property
    def engine(self) -> Engine:
        """The synchronous engine."""
        if self._engine is None:
            raise RuntimeError("the AsyncEngine is not open: use `async with AsyncEngine(...)`")
        return self._engine

    @classmethod
    async def open(
        cls, workspace: str | Path = ".", *args: Any, max_threads: int = 8, **kw: Any
    ) -> AsyncEngine:
        """An open AsyncEngine (``Engine.open`` in a thread); ``async with`` it to close it."""
        return await cls(workspace, *args, max_threads=max_threads, **kw).__aenter__()

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run any callable in the pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Awaitable(self, tuple(SHORTHANDS.get(name, name).split(".")))

    # ------------------------------------------------------------------ lifecycle
    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        if self._engine is not None:
            await loop.run_in_executor(None, self._engine.close)

    async def __aenter__(self) -> AsyncEngine:
        if self._engine is None and self._open is not None:
            from goclaw.engine import Engine

            workspace, args, kwargs = self._open
            self._engine = await self.run(Engine.open, workspace, *args, **kwargs)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Awaitable:
    """``aengine.<path>``: called, runs ``engine.<path>(...)`` in the pool; awaited, reads
    ``engine.<path>`` there; an attribute of it extends the path."""

    __slots__ = ("_aengine", "_path")

    def __init__(self, aengine: AsyncEngine, path: tuple[str, ...]) -> None:
        self._aengine, self._path = aengine, path

    def __getattr__(self, name: str) -> _Awaitable:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Awaitable(self._aengine, (*self._path, name))

    def _resolve(self) -> Any:
        return functools.reduce(getattr, self._path, self._aengine.engine)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return await self._aengine.run(lambda: self._resolve()(*args, **kwargs))

    def __await__(self) -> Generator[Any, None, Any]:
        return self._aengine.run(self._resolve).__await__()
