"""Full-text helpers of the PostgreSQL search backend (:mod:`goclaw_memory.pg_backend`):
document frequencies read from the planner's statistics, the "common terms" split,
``tsquery`` literals and BM25 from a chunk's stored terms."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

K1, B = 1.2, 0.75


@dataclass(frozen=True)
class _PgStats:
    """Document frequencies estimated from ``pg_stats`` (table-wide, all agents)."""

    df: dict[str, int]
    rows: float
    unlisted: float  # lexemes missing from ``df`` are rarer than this
    avgdl: float = 0.0  # terms per chunk, from a sample (0 = unknown)

    def freq(self, term: str) -> float:
        return float(self.df.get(term, self.unlisted / 2))

    def idf(self, term: str, n: float) -> float:
        d = min(self.freq(term), n)
        return math.log(1.0 + (n - d + 0.5) / (d + 0.5))


def split_terms(
    terms: Sequence[str], doc_freq: dict[str, int], budget: int, *, keep_rarest: bool = False
) -> tuple[list[str], list[str]]:
    """``(selective, common)``: the rarest terms whose matches together stay within ``budget``,
    and the rest (query order kept in both). Terms of unknown frequency count as rare.
    With ``keep_rarest`` the rarest term is selective even when it alone exceeds the budget."""
    ordered = sorted(range(len(terms)), key=lambda i: (doc_freq.get(terms[i], 0), i))
    kept: set[int] = set()
    total = 0
    for i in ordered:
        n = doc_freq.get(terms[i], 0)
        if total + n > budget and (kept or not keep_rarest):
            break
        kept.add(i)
        total += n
    return (
        [t for i, t in enumerate(terms) if i in kept],
        [t for i, t in enumerate(terms) if i not in kept],
    )


def tsquery_literal(terms: Sequence[str], op: str = " | ") -> str:
    """A ``tsquery`` literal of these exact lexemes (cast, never parsed: no normalisation, no
    operators from user input)."""
    return op.join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def bm25_from_lex(lex: str, terms: Sequence[str], idf: dict[str, float], avgdl: float) -> float:
    """BM25 of one chunk from its stored space-separated terms."""
    padded = f" {lex} "
    dl = lex.count(" ") + 1 if lex else 0
    norm = K1 * (1 - B + B * dl / max(avgdl, 1e-9))
    score = 0.0
    for t in terms:
        tf = padded.count(f" {t} ")
        if tf:
            score += idf[t] * tf * (K1 + 1) / (tf + norm)
    return score


def read_pg_stats(conn: Any) -> _PgStats:
    """Rows per common lexeme of ``memory_chunks.tsv`` from ``pg_stats`` (empty statistics
    when the table was never analysed and is empty). Database errors propagate."""
    stats = _PgStats({}, 0.0, 0.0)
    row = conn.execute(
        text(
            "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
            "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
            "AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = s.schemaname) "
            "WHERE s.tablename = 'memory_chunks' AND s.attname = 'tsv' "
            "AND s.schemaname = current_schema()"
        )
    ).first()
    total = conn.execute(text("SELECT count(*) FROM memory_chunks")).scalar_one() if row is None else 0
    if row is not None and row[0] is not None and row[1] is not None:
        total = max(0.0, float(row[2] or 0))
        elems, freqs = list(row[0]), [float(f) for f in row[1]]
        # After one frequency per element PostgreSQL appends the minimum, the maximum
        # and the null fraction: lexemes not listed are rarer than that minimum.
        floor = freqs[len(elems)] if len(freqs) > len(elems) else 0.0
        df = {e: int(f * total) for e, f in zip(elems, freqs, strict=False)}
        stats = _PgStats(df, total, floor * total, sample_avgdl(conn, total))
    elif total:
        stats = _PgStats({}, float(total), 2.0, sample_avgdl(conn, float(total)))
    return stats


def sample_avgdl(conn: Any, rows: float) -> float:
    """Mean terms per chunk over a sample of about 2,000 chunks (0.0 when empty)."""
    percent = min(100.0, max(0.01, 100.0 * 2000 / max(rows, 1.0)))
    value = conn.execute(
        text(
            "SELECT avg(array_length(string_to_array(lex, ' '), 1)) FROM (SELECT lex FROM "
            f"memory_chunks TABLESAMPLE SYSTEM ({percent:.4f}) WHERE lex <> '' LIMIT 2000) AS s"
        )
    ).scalar()
    return float(value or 0.0)
