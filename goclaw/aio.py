"""``goclaw.AsyncEngine``: the per-turn calls for asyncio runtimes.

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

The pool is the engine's: ``aclose()`` (or ``async with``) waits for running calls, then closes
the engine. Everything not wrapped here is reachable with ``await aengine.run(fn, *args)``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from goclaw.contracts.hooks import PromptRequest
    from goclaw.contracts.tools import ToolContext, ToolResult
    from goclaw.engine import Engine

T = TypeVar("T")


class AsyncEngine:
    """An :class:`~goclaw.engine.Engine` whose per-turn calls are awaitable."""

    def __init__(self, engine: Engine, *, max_threads: int = 8) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.engine = engine
        self.max_threads = max_threads
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="goclaw-async")

    @classmethod
    async def open(
        cls,
        workspace: str | Path = ".",
        database_url: str | None = None,
        *,
        max_threads: int = 8,
        **kwargs: Any,
    ) -> AsyncEngine:
        """Open a workspace (``Engine.open`` in a thread) and wrap it."""
        from goclaw.engine import Engine

        loop = asyncio.get_running_loop()
        engine = await loop.run_in_executor(
            None, functools.partial(Engine.open, workspace, database_url, **kwargs)
        )
        return cls(engine, max_threads=max_threads)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run any engine call in the pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    # ------------------------------------------------------------------ per-turn calls
    async def build_prompt(self, request: PromptRequest) -> Any:
        """``engine.prompt.build(request)``: the system prompt for a turn."""
        return await self.run(self.engine.prompt.build, request)

    async def search(
        self,
        query: str,
        agent: str,
        user: str | None = None,
        *,
        limit: int | None = None,
        channel: str = "hybrid",
    ) -> Any:
        """``engine.memory.search_response``: hits plus notes."""
        return await self.run(
            self.engine.memory.search_response, query, agent, user, limit=limit, channel=channel
        )

    async def append(self, agent: str, key: str, role: str, content: str, user: str | None = None) -> Any:
        """``engine.sessions.append``: record one message of a session."""
        return await self.run(self.engine.sessions.append, agent, key, role, content, user)

    async def add_memory(self, agent: str, text: str, user: str | None = None, **kwargs: Any) -> Any:
        """``engine.memory.writer.add``: save a memory (indexed before this returns)."""
        return await self.run(self.engine.memory.writer.add, agent, text, user, **kwargs)

    async def tool_schemas(
        self, fmt: str = "openai", context: ToolContext | None = None
    ) -> list[dict[str, Any]]:
        return await self.run(self.engine.tools.schemas, fmt, context)

    async def call_tool(
        self, name: str, args: Mapping[str, Any] | str | None, context: ToolContext
    ) -> ToolResult:
        """``engine.tools.call``: one tool call under the tool calling contract."""
        return await self.run(self.engine.tools.call, name, args, context)

    # ------------------------------------------------------------------ lifecycle
    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        await loop.run_in_executor(None, self.engine.close)

    async def __aenter__(self) -> AsyncEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
