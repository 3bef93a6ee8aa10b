"""Re-embedding at the end of an index run: chunks with no vector, or another model's, get one of
the configured embedder (from the embedding cache when it holds their text), in transactions of
:data:`BATCH_CHUNKS`, each replacing the agent's version token."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, text

from goclaw.contracts.search import ChunkRecord, Space
from goclaw_memory.chunking import DEFAULT_MAX_CHUNK_LEN, TextChunk, chunk_text
from goclaw_memory.embedding_cache import vectors_for
from goclaw_memory.index_scan import BATCH_CHUNKS
from goclaw_memory.index_writes import CHUNKS, as_float32, bump_version, vector_param
from goclaw_search.tokenize import default_tokenizer

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from goclaw.contracts.host import Host
    from goclaw.contracts.providers import EmbeddingProvider
    from goclaw_memory.index_changes import ChangeSet
    from goclaw_memory.index_scan import IndexReport, Progress


def reembed(
    engine: Host,
    changes: ChangeSet | None,
    agent_id: str,
    scopes: Sequence[str],
    embedder: EmbeddingProvider,
    space: Space,
    report: IndexReport,
    progress: Progress | None,
    agent_dir: Path | None = None,
    max_chunk_len: int = DEFAULT_MAX_CHUNK_LEN,
) -> None:
    """Give vectors of ``space`` to the agent's chunks (of ``scopes``) that have none or another
    model's; record what changed in ``changes``. A chunk's vector is of its text with its heading
    path (:attr:`TextChunk.indexed`), read again from its file under ``agent_dir``."""
    stale = stale_chunks(engine, agent_id, scopes, space)
    if not stale:
        return
    total = len(stale)
    if progress:
        progress("embed", 0, total)
    for i in range(0, total, BATCH_CHUNKS):
        part = stale[i : i + BATCH_CHUNKS]
        chunks = with_context(agent_dir, part, max_chunk_len)
        vectors = vectors_for(engine, chunks, embedder, space, report)
        found = [(int(r[0]), vectors[c.hash]) for r, c in zip(part, chunks, strict=True) if c.hash in vectors]
        if not found:
            break
        tokens = _write_vectors(engine, agent_id, space, found)
        if changes is not None:
            info = {int(r[0]): r for r in part}
            changes.record(
                tokens, (cid for cid, _ in found), (_record(info[cid], space, v) for cid, v in found)
            )
        report.reembedded += len(found)
        if progress:
            progress("embed", min(total, i + len(part)), total)


def with_context(agent_dir: Path | None, rows: Sequence[Any], max_len: int) -> list[TextChunk]:
    """The chunks of :func:`stale_chunks` rows with their heading paths, from their files as
    chunked now (a chunk whose file no longer has it at those lines: its text alone; the next
    index run re-chunks that file anyway)."""
    found = in_files(agent_dir, rows, max_len)
    return [c if c is not None else TextChunk(r[2], r[5], r[6]) for c, r in zip(found, rows, strict=True)]


def in_files(agent_dir: Path | None, rows: Sequence[Any], max_len: int) -> list[TextChunk | None]:
    """Each row (``text`` at 2, ``user_id`` and ``path`` at 3 and 4, ``start_line`` and
    ``end_line`` at 5 and 6) as its file chunks now, with its heading path; None where the file
    no longer holds that chunk."""
    files: dict[tuple[str, str], dict[tuple[int, int, str], TextChunk]] = {}
    out: list[TextChunk | None] = []
    for r in rows:
        key = (r[3], r[4])
        if key not in files:
            files[key] = {}
            if agent_dir is not None:
                try:
                    body = (agent_dir / r[4]).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    body = ""
                files[key] = {(c.start_line, c.end_line, c.text): c for c in chunk_text(body, max_len)}
        out.append(files[key].get((r[5], r[6], r[2])))
    return out


def stale_chunks(engine: Host, agent_id: str, scopes: Sequence[str], space: Space) -> list[Any]:
    """``(id, chunk_hash, text, user_id, path, start_line, end_line, lex)`` of the chunks
    without a vector of ``space``."""
    provider, model, dim = space
    with engine.db.session() as s:
        return list(
            s.execute(
                select(
                    CHUNKS.c.id,
                    CHUNKS.c.chunk_hash,
                    CHUNKS.c.text,
                    CHUNKS.c.user_id,
                    CHUNKS.c.path,
                    CHUNKS.c.start_line,
                    CHUNKS.c.end_line,
                    CHUNKS.c.lex,
                ).where(
                    CHUNKS.c.agent_id == agent_id,
                    CHUNKS.c.user_id.in_(list(scopes)),
                    (CHUNKS.c.embedding_model.is_(None))
                    | (CHUNKS.c.embedding_provider != provider)
                    | (CHUNKS.c.embedding_model != model)
                    | (CHUNKS.c.embedding_dim != dim),
                )
            ).all()
        )


def _write_vectors(
    engine: Host, agent_id: str, space: Space, found: list[tuple[int, Any]]
) -> tuple[str, str]:
    pg = engine.db.backend == "postgresql"
    stmt = text(
        "UPDATE memory_chunks SET embedding = "
        + ("CAST(:emb AS vector)" if pg else ":emb")
        + ", embedding_provider = :p, embedding_model = :m, embedding_dim = :d WHERE id = :cid"
    )

    def _do(session: Session) -> tuple[str, str]:
        vec = vector_param(pg)
        meta = {"p": space[0], "m": space[1], "d": space[2]}
        session.connection().execute(stmt, [{"cid": cid, "emb": vec(v), **meta} for cid, v in found])
        return bump_version(session, agent_id)

    return engine.db.run_write(_do)


def _record(row: Any, space: Space, vector: Any) -> ChunkRecord:
    """The search backend's record of a re-embedded chunk (terms from its stored ``lex``)."""
    terms = row[7].split() if row[7] is not None else default_tokenizer().terms(row[2])
    return ChunkRecord(
        int(row[0]),
        row[3],
        row[4],
        int(row[5]),
        int(row[6]),
        row[2],
        row[1],
        terms,
        space,
        as_float32(vector),
    )
