"""pgvector on PostgreSQL connections: the binary adapters behind
:class:`goclaw.contracts.columns.Vector` (the column types themselves are a contract, in
:mod:`goclaw.contracts.columns`)."""

from __future__ import annotations

from typing import Any


def register_pg_vectors(raw: Any) -> bool:
    """Register pgvector's psycopg adapters on a raw psycopg connection, so vectors travel in
    binary (a float32 ``numpy.ndarray`` parameter; formatting a 256-d vector as text costs
    ~130 µs in Python, the binary form ~2 µs). The store calls this on every pool checkout
    until it succeeds; ``False`` while the database has no ``vector`` type yet (before the
    first migration). Leaves no transaction open."""
    adapters = getattr(raw, "adapters", None)
    if adapters is None:
        return False
    if adapters.types.get("vector") is not None:
        return True
    from pgvector.psycopg.vector import register_vector_info
    from psycopg import pq
    from psycopg.types import TypeInfo

    idle = raw.info.transaction_status == pq.TransactionStatus.IDLE
    try:
        info = TypeInfo.fetch(raw, "vector")
        if info is None:
            return False
        register_vector_info(raw, info)
        return True
    finally:
        if idle:
            raw.rollback()
