"""``goclaw_memory_rerank`` hands a reranker the query's embedding (``query_vector``, for
query speed): a third-party implementation without the argument keeps working, one that names it
gets the search's vector, and the built-in passage step scores with it instead of embedding the
query again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw import hookimpl
from tests.memory_helpers import write


@pytest.fixture
def backend() -> str:
    return "sqlite"


NOTES = {
    "memory/a.md": "# Kite Ceramics\n\n- Kestrel gateway deploy rolled back.\n- Billing moved to March.\n",
    "memory/b.md": "# Vendors\n\n- Kestrel gateway certificate renewed by Dana.\n",
    "memory/c.md": "# Regions\n\nKestrel dashboards moved to the new region.\n",
}


class OldReranker:
    """Written to the hook before ``query_vector``: five arguments."""

    def __init__(self) -> None:
        self.given: list[list[str]] = []

    @hookimpl
    def goclaw_memory_rerank(self, engine: Any, query: str, agent: Any, user: Any, hits: list[Any]) -> Any:
        self.given.append([h.path for h in hits])
        return list(reversed(hits))


class NewReranker:
    """Names ``query_vector``: gets the search's query embedding (or None)."""

    def __init__(self) -> None:
        self.vectors: list[Any] = []

    @hookimpl
    def goclaw_memory_rerank(
        self, engine: Any, query: str, agent: Any, user: Any, hits: list[Any], query_vector: Any
    ) -> Any:
        self.vectors.append(query_vector)
        return None  # keep the order: the built-in answers next


def _engine(make_engine: Any, plugin: Any) -> Any:
    eng = make_engine(extra_plugins=[("reranker", plugin)], plugins={"memory": {"rerank": "overlap"}})
    assert eng.plugin_manager.records["reranker"].status == "active"
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in NOTES.items():
        write(root, rel, text)
    eng.memory.index("ada")
    return eng


def test_a_reranker_without_query_vector_keeps_working(make_engine: Any) -> None:
    old = OldReranker()
    eng = _engine(make_engine, old)
    hits = eng.memory.search("Kestrel gateway", "ada", limit=3)
    assert len(old.given) == 1
    assert [h.path for h in hits] == old.given[0][::-1][:3]


def test_a_reranker_naming_query_vector_gets_the_search_embedding(make_engine: Any) -> None:
    new = NewReranker()
    eng = _engine(make_engine, new)
    hybrid = eng.memory.search("Kestrel gateway", "ada", limit=3)
    assert len(new.vectors) == 1 and hybrid
    want = eng.embedder().embed(["Kestrel gateway"])[0]
    got = new.vectors[0]
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert np.array_equal(got, want)
    eng.memory.search("Kestrel gateway", "ada", limit=3, channel="lexical")  # no embedding made
    assert new.vectors[1] is None


def test_a_reranker_may_name_only_the_arguments_it_reads() -> None:
    """pluggy passes an implementation the arguments it names, query_vector among them."""
    seen: list[Any] = []

    class Spy:
        @hookimpl
        def goclaw_memory_rerank(self, hits: list[Any], query_vector: Any) -> Any:
            seen.append(query_vector)
            return hits

    import pluggy

    from goclaw import hookspecs
    from goclaw_memory import hookspecs as memory_hookspecs

    pm = pluggy.PluginManager(hookspecs.NAME)
    pm.add_hookspecs(memory_hookspecs)
    pm.register(Spy())
    out = pm.hook.goclaw_memory_rerank(
        engine=None, query="q", agent=None, user=None, hits=[1], query_vector=None
    )
    assert out == [1] and seen == [None]


def test_the_passage_step_scores_with_the_query_vector(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The built-in reranker scores passages against the search's embedding: the query is
    embedded once per search (by the service), on the one-call path (the embedder's token rows)
    and on the token_similarity path alike, with the scores of scoring from the query's text."""
    from goclaw_embeddings.static_model import StaticEmbedder

    embedded: list[int] = []
    real_embed, real_similarity = StaticEmbedder.embed, StaticEmbedder.token_similarity

    def embed(self: Any, texts: Any) -> Any:
        embedded.append(len(texts))
        return real_embed(self, texts)

    monkeypatch.setattr(StaticEmbedder, "embed", embed)
    eng = _engine(make_engine, NewReranker())
    query = "Kestrel gateway deploy"

    def scored() -> list[tuple[str, float]]:
        embedded.clear()
        hits = [(h.path, h.score) for h in eng.memory.search(query, "ada", limit=3)]
        assert embedded == [1]  # the service's; the passage step embeds nothing
        return hits

    one_call = scored()
    monkeypatch.setattr(StaticEmbedder, "token_rows", None)  # -> token_similarity(vector, ids)
    asked: list[Any] = []

    def spy(self: Any, q: Any, token_ids: Any) -> Any:
        asked.append(q)
        return real_similarity(self, q, token_ids)

    monkeypatch.setattr(StaticEmbedder, "token_similarity", spy)
    with_vector = scored()
    assert asked and all(isinstance(q, np.ndarray) for q in asked)
    monkeypatch.setattr(
        StaticEmbedder, "token_similarity", lambda self, q, ids: real_similarity(self, query, ids)
    )
    from_text = [(h.path, h.score) for h in eng.memory.search(query, "ada", limit=3)]
    assert one_call == with_vector
    assert [p for p, _s in from_text] == [p for p, _s in one_call]
    np.testing.assert_allclose([s for _p, s in from_text], [s for _p, s in one_call], rtol=1e-6)
