"""The reranker's passage step from the sketches the memory index keeps
(goclaw_memory.passage_sketch): same scores as reading the hits' text, without reading it, on
SQLite (the sqlite backend) and PostgreSQL (inprocess; postgresql from the sketches it stores),
after a restart too; a third-party
embedder gets it through goclaw.contracts.providers.PassageSketchingEmbedder."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw import hookimpl
from tests.memory_helpers import write
from tests.plugins.memory.test_postprocess import PASSAGE_NOTES, PASSAGE_Q

# The in-memory engine's: on PostgreSQL ``inprocess`` (``auto`` selects ``postgresql`` there).
pytestmark = pytest.mark.usefixtures("in_memory_search")

MORE = {  # a few more chunks: headings over several passages, a code fence, a heading-only chunk
    "memory/c.md": "# 2026-11-12 (Thu)\n\n## TCK-4471 approved\n- Mei Lin approved the refund of $349 for "
    "Kite Ceramics.\n- Dana Whitfield informed by email.\n\n## Deploys\n```sh\n# rollback\nkubectl rollout "
    "undo deploy/kestrel\n```\n",
    "memory/d.md": "# Kite Ceramics\n## Contacts\n### Billing\n",
}


def _engine(make_engine: Any, **memory: Any) -> tuple[Any, Path]:
    eng = make_engine(plugins={"memory": {"rerank": "overlap", **memory}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in {**PASSAGE_NOTES, **MORE}.items():
        write(root, rel, text)
    eng.memory.index("ada")
    return eng, root


def _scored(eng: Any, query: str = PASSAGE_Q) -> list[tuple[str, int, float]]:
    return [(h.path, h.start_line, h.score) for h in eng.memory.search(query, "ada", limit=10)]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the texts the static embedder is asked to score from their text."""
    from goclaw_embeddings.static_model import StaticEmbedder

    asked: list[int] = []
    real = StaticEmbedder.passage_similarity

    def spy(self: Any, query: str, texts: Sequence[str]) -> Any:
        asked.append(len(texts))
        return real(self, query, texts)

    monkeypatch.setattr(StaticEmbedder, "passage_similarity", spy)
    return asked


def _b_above_a(scored: list[tuple[str, int, float]]) -> bool:
    """The answer's chunk (b) ranks above the other chunk of the company (a)."""
    paths = [p for p, _l, _s in scored]
    return paths.index("memory/b.md") < paths.index("memory/a.md")


def _text_path(eng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng.memory.backend, "chunk_sketches", lambda *args: None)
    monkeypatch.setattr(eng.memory.backend, "passage_cosines", lambda *args: None)  # the one-call path


QUERIES = [PASSAGE_Q, "Who approved the refund for Kite Ceramics?", "kestrel rollback", "billing contacts"]


def _as_from_the_text(eng: Any, monkeypatch: pytest.MonkeyPatch, asked: list[int]) -> None:
    """The searches read no text from sketches (``asked``: passage_similarity's calls) and
    score as the text path does once the backend's sketches are hidden."""
    sketched = {q: _scored(eng, q) for q in QUERIES}
    assert asked == []
    assert _b_above_a(sketched[PASSAGE_Q])
    _text_path(eng, monkeypatch)
    for q in QUERIES:
        text = _scored(eng, q)
        assert [r[:2] for r in text] == [r[:2] for r in sketched[q]]
        np.testing.assert_allclose([r[2] for r in text], [r[2] for r in sketched[q]], rtol=1e-6)
    assert asked and all(n > 0 for n in asked)


def test_the_search_scores_passages_from_the_index_as_from_the_text(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each embedded chunk is sketched when it enters the index; the passage step then reads no
    text (passage_similarity is never called) and gives the scores the text path gives."""
    asked = _spy(monkeypatch)
    eng, _root = _engine(make_engine)
    _as_from_the_text(eng, monkeypatch, asked)


def test_the_sketches_are_saved_with_the_index(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, workspace: Path, database_url: str | None
) -> None:
    """A new process loads the saved index with its sketches: no text is read there either."""
    eng, _root = _engine(make_engine)
    before = _scored(eng)
    eng.close()
    asked = _spy(monkeypatch)
    again = make_engine(plugins={"memory": {"rerank": "overlap"}})
    assert _scored(again) == before
    assert asked == []
    agent = again.agents.get("ada")
    state = again.memory.backend._states[agent.id]
    assert state.index.psk.has[: state.index.n].all()


def test_an_index_built_with_the_step_off_scores_from_the_text(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sketches cost indexing time and memory only when the step will read them; chunks
    indexed without one (the step was off, or another embedder) are scored from their text."""
    eng, _root = _engine(make_engine, rerank_passages=0)
    agent = eng.agents.get("ada")
    eng.memory.search(PASSAGE_Q, "ada")
    assert not eng.memory.backend._states[agent.id].index.psk.has.any()
    asked = _spy(monkeypatch)
    eng.plugin_settings("memory").rerank_passages = 20
    assert _b_above_a(_scored(eng))
    assert asked


def test_the_database_search_backend_scores_from_the_sketches_it_stores(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """backend = "postgresql" keeps no index in memory but stores each embedded chunk's sketch
    in memory_sketches and reads it with the hits' rows: no text is read, and the scores are the
    text path's."""
    if backend != "postgresql":
        pytest.skip("the postgresql search backend needs PostgreSQL")
    asked = _spy(monkeypatch)
    eng, _root = _engine(make_engine, backend="postgresql")
    _as_from_the_text(eng, monkeypatch, asked)


class WordHashEmbedder:
    """A static model written from scratch: a word's token is its crc32 modulo 512, a text's
    vector the normalised sum of its tokens' rows of a fixed random matrix."""

    provider = "test-wordhash"
    model = "wordhash-512x24"
    dim = 24

    def __init__(self) -> None:
        self.rows = np.random.default_rng(3).standard_normal((512, self.dim)).astype(np.float32)
        self.sketched: list[int] = []
        self.scored_texts: list[int] = []

    def _ids(self, text: str) -> list[int]:
        return [zlib.crc32(w.lower().encode()) % 512 for w in text.split()]

    def embed(self, texts: Sequence[str]) -> Any:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            if ids := self._ids(t):
                v = self.rows[ids].sum(axis=0)
                out[i] = v / np.linalg.norm(v)
        return out

    def passage_similarity(self, query: str, texts: Sequence[str]) -> Any:
        from goclaw_search.passages import best_passage_cosine

        self.scored_texts.append(len(texts))
        return best_passage_cosine(self.embed, query, texts)

    def passage_sketches(self, texts: Sequence[str]) -> list[Any]:
        from goclaw_search.passage_sketches import PassageSketch
        from goclaw_search.passages import passage_layout

        self.sketched.append(len(texts))
        out = []
        for text in texts:
            segments, layout = passage_layout(text)
            ids = [self._ids(s) for s in segments]
            keep = {i: n for n, i in enumerate(i for i, s in enumerate(ids) if s)}
            parts = [[keep[i] for i in p if i in keep] for p in layout]
            parts = [p for p in parts if p]
            sums = [sum((self.rows[ids[i]].sum(axis=0) for i in p), np.zeros(self.dim)) for p in parts]
            out.append(
                PassageSketch(
                    np.array([t for i in keep for t in ids[i]], dtype=np.uint16),
                    np.array([len(ids[i]) for i in keep], dtype=np.uint16),
                    np.array([i for p in parts for i in p], dtype=np.uint8),
                    np.array([len(p) for p in parts], dtype=np.uint8),
                    np.array([np.linalg.norm(s) for s in sums], dtype=np.float32),
                )
            )
        return out

    def token_similarity(self, query: str, token_ids: Any) -> Any:
        q = self.embed([query])[0]
        return (self.rows[np.asarray(token_ids, dtype=np.int64)] @ q).astype(np.float32)


def test_a_third_party_embedder_gets_sketched_passages_through_the_contract(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """goclaw.contracts.providers.PassageSketchingEmbedder: a provider that sketches its
    passages has them kept in the index and scored from there, with the figures of its own
    passage_similarity."""
    from goclaw.contracts.providers import PassageSketchingEmbedder

    embedder = WordHashEmbedder()
    assert isinstance(embedder, PassageSketchingEmbedder)

    class Plugin:
        @hookimpl
        def goclaw_embedding_providers(self) -> dict[str, Any]:
            return {"wordhash": lambda engine: embedder}

    eng = make_engine(
        extra_plugins=[("wordhash", Plugin())],
        plugins={"memory": {"rerank": "overlap"}, "embeddings": {"provider": "wordhash"}},
    )
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in {**PASSAGE_NOTES, **MORE}.items():
        write(root, rel, text)
    eng.memory.index("ada")
    assert sum(embedder.sketched) == 4  # each chunk once, as it entered the index
    sketched = {q: _scored(eng, q) for q in QUERIES}
    assert embedder.scored_texts == []
    _text_path(eng, monkeypatch)
    for q in QUERIES:
        text = _scored(eng, q)
        assert [r[:2] for r in text] == [r[:2] for r in sketched[q]]
        np.testing.assert_allclose([r[2] for r in text], [r[2] for r in sketched[q]], rtol=1e-5)
    assert embedder.scored_texts


class OlderBackend:
    """A backend written to the search contract before ``chunk_sketches`` (no subclass of
    SearchBackend): it delegates the members it knows to the built-in one."""

    name = "older"

    def __init__(self, engine: Any) -> None:
        self.base = engine.hooks.registry("goclaw_search_backends", "search backend")[
            "sqlite" if engine.db.backend == "sqlite" else "inprocess"
        ](engine)

    def open(self, source: Any) -> None:
        self.base.open(source)

    def search(self, query: Any) -> Any:
        return self.base.search(query)

    def rows(self, agent_id: str, ids: Sequence[int]) -> Any:
        return self.base.rows(agent_id, ids)

    def prepare_vectors(self, dim: int) -> None:
        self.base.prepare_vectors(dim)

    def bulk_load(self, dim: int) -> Any:
        return self.base.bulk_load(dim)

    def apply_changes(self, changes: Any) -> None:
        self.base.apply_changes(changes)

    def invalidate(self, agent_id: str | None = None) -> None:
        self.base.invalidate(agent_id)

    def close(self) -> None:
        self.base.close()


def test_a_backend_without_chunk_sketches_gets_the_step_from_the_text(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Plugin:
        @hookimpl
        def goclaw_search_backends(self) -> dict[str, Any]:
            return {"older": OlderBackend}

    asked = _spy(monkeypatch)
    eng = make_engine(extra_plugins=[("older", Plugin())], plugins={"memory": {"backend": "older"}})
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in {**PASSAGE_NOTES, **MORE}.items():
        write(root, rel, text)
    eng.memory.index("ada")
    assert _b_above_a(_scored(eng))
    assert asked and "passage step failed" not in caplog.text
