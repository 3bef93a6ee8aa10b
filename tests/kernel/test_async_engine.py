"""``goclaw.AsyncEngine``: awaitable per-turn calls on a bounded thread pool."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from goclaw.contracts.hooks import PromptRequest
from goclaw.contracts.tools import ToolContext
from tests.memory_helpers import write


def test_async_turn_calls_run_concurrently_and_bounded(engine: Any) -> None:
    from goclaw import AsyncEngine

    engine.agents.create("ada")
    write(engine.agent_dir(engine.agents.get("ada")), "MEMORY.md", "The printer is named Gutenberg.\n")
    engine.memory.index("ada")
    aeng = AsyncEngine(engine, max_threads=3)
    running = 0
    peak = 0
    lock = threading.Lock()
    inner = engine.memory.search_response

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            time.sleep(0.05)  # long enough for the pool to fill
            return inner(*args, **kwargs)
        finally:
            with lock:
                running -= 1

    engine.memory.search_response = counted

    async def main() -> None:
        ctx = ToolContext(agent="ada", user="u1", session="k1")
        prompt = await aeng.build_prompt(PromptRequest(agent="ada", user="u1"))
        assert "ada" in prompt.prompt or prompt.prompt
        searches = [aeng.search("printer Gutenberg", "ada", "u1") for _ in range(12)]
        appends = [aeng.append("ada", f"k{i}", "user", f"message {i}", "u1") for i in range(6)]
        results = await asyncio.gather(*searches, *appends)
        assert all(r.hits[0].path == "MEMORY.md" for r in results[:12])
        res = await aeng.call_tool("memory_search", {"query": "printer"}, ctx)
        assert not res.is_error and res.data["hits"][0]["path"] == "MEMORY.md"
        res = await aeng.call_tool("memory_search", {"query": "printer", "agent": "bob"}, ctx)
        assert res.is_error
        entry = await aeng.add_memory("ada", "u1 likes jasmine tea", "u1")
        assert entry.path.startswith("users/u1/memory/")
        assert await aeng.tool_schemas("anthropic", ctx)

    asyncio.run(main())
    assert peak == 3  # concurrent, and never more than max_threads
    assert len(engine.sessions.messages("k5")) == 1
    asyncio.run(aeng.aclose())


def test_async_open_and_close(workspace: Any, database_url: str | None) -> None:
    from goclaw import AsyncEngine

    async def main() -> None:
        async with await AsyncEngine.open(workspace, database_url) as aeng:
            await aeng.run(aeng.engine.agents.create, "zed")
            assert [a.name for a in await aeng.run(aeng.engine.agents.list)] == ["zed"]

    asyncio.run(main())
    with pytest.raises(ValueError):
        AsyncEngine(None, max_threads=0)  # type: ignore[arg-type]


def test_async_with_opens_and_every_service_method_is_awaitable(
    workspace: Any, database_url: str | None
) -> None:
    from goclaw import AsyncEngine

    threads: list[str] = []

    async def main() -> None:
        async with AsyncEngine(workspace, database_url, max_threads=2) as aeng:
            agents = aeng.engine.agents
            listed = agents.list
            agents.list = lambda: (threads.append(threading.current_thread().name), listed())[1]
            await aeng.agents.create("zed")
            assert [a.name for a in await aeng.agents.list()] == ["zed"]
            await aeng.memory.writer.add("zed", "The boiler key hangs by the door.")
            hits = await aeng.memory.search("boiler key", "zed")
            assert hits and "boiler" in hits[0].snippet
            assert (await aeng.settings).tenant_id == "default"
            assert (await aeng.sessions.append("zed", "k1", "user", "hi")) is not None

    asyncio.run(main())
    assert threads and all(name.startswith("goclaw-async") for name in threads)


def test_an_unopened_async_engine_says_how_to_open_it(workspace: Any) -> None:
    from goclaw import AsyncEngine

    async def main() -> None:
        with pytest.raises(RuntimeError, match=r"async with AsyncEngine"):
            await AsyncEngine(workspace).agents.list()

    asyncio.run(main())
