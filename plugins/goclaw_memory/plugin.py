"""Plugin ``goclaw.memory``: memory indexing, hybrid search, sessions and the flush.

Contributes the ``memory`` and ``sessions`` services, the ``memory`` tables (``goclaw_schema``,
:mod:`goclaw_memory.tables`) and their erasure (``goclaw_forget_rows``), the ``sqlite`` and ``postgresql``
search backends, the ``memory_search`` / ``memory_get`` tools, the Memory Recall prompt
section and the built-in no-network reranker (``goclaw_memory_rerank``). Settings:
``[plugins.memory]`` (:class:`~goclaw_memory.settings.MemorySettings`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from goclaw import hookimpl


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    from goclaw_memory.settings import MemorySettings

    return MemorySettings


@hookimpl
def goclaw_schema() -> list[Any]:
    from goclaw.contracts.schema import SchemaComponent
    from goclaw_memory.tables import (
        MIGRATIONS,
        PG_STATS_TABLES,
        MemoryChunk,
        MemoryDocument,
        Session,
        SessionMessage,
    )

    tables = (MemoryDocument, MemoryChunk, Session, SessionMessage, *PG_STATS_TABLES)
    return [SchemaComponent("memory", tables, MIGRATIONS, "memory file index and sessions")]


@hookimpl
def goclaw_forget_rows(engine: Any, scope: Any, connection: Any) -> list[Any]:
    from goclaw_memory.erase import forget_steps

    return forget_steps(scope, connection)


@hookimpl
def goclaw_forgotten(engine: Any, scope: Any) -> None:
    from goclaw_memory.erase import forgotten

    forgotten(engine, scope)


@hookimpl
def goclaw_services(engine: Any) -> dict[str, Any]:
    from goclaw_memory.service import MemoryService
    from goclaw_memory.sessions import SessionService

    return {"memory": MemoryService(engine), "sessions": SessionService(engine)}


@hookimpl
def goclaw_startup(engine: Any) -> None:
    if engine.plugin_settings("memory").watch:
        engine.memory.watch()


@hookimpl
def goclaw_search_backends() -> dict[str, Any]:
    from goclaw_memory.backends import make_inprocess_backend, make_postgres_backend, make_sqlite_backend

    return {
        "sqlite": make_sqlite_backend,
        "postgresql": make_postgres_backend,
        "inprocess": make_inprocess_backend,
    }


@hookimpl
def goclaw_tools(engine: Any) -> list[Any]:
    from goclaw_memory.tools import make_tools

    return make_tools(engine)


@hookimpl
def goclaw_prompt_sections() -> list[Any]:
    from goclaw_memory.tools import MemoryRecallSection

    return [MemoryRecallSection()]


@hookimpl(trylast=True)
def goclaw_memory_rerank(
    engine: Any, query: str, agent: Any, user: str | None, hits: list[Any], query_vector: Any
) -> Any:
    """This plugin's own reranker, last: called through the hook only when another plugin also
    implements it (else the memory service calls it directly)."""
    from goclaw_memory.postprocess import builtin_rerank

    memory = engine.service("memory")
    return builtin_rerank(
        memory.settings,
        query,
        agent.id,
        hits,
        query_vector,
        lambda: memory.embedder()[0],
        memory.backend,
    )


@hookimpl
def goclaw_http_routes(engine: Any, auth: Any) -> Any:
    from goclaw_memory.http import router

    return router(engine, auth)
