"""Memory search after fusion: temporal decay, the reranker hook and MMR through the memory
service on a real SQLite index."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from goclaw import hookimpl
from tests.memory_helpers import write

NOTE = "Deploy note\n\nThe Kestrel gateway deploy was rolled back after the TLS certificate expired.\n"


@pytest.fixture
def backend() -> str:
    """Post-processing runs in the service, the same on every backend: SQLite only here."""
    return "sqlite"


def _engine(make_engine: Any, **memory: Any) -> tuple[Any, Path]:
    eng = make_engine(plugins={"memory": {"rerank": "none", **memory}})
    agent = eng.agents.create("ada")
    return eng, Path(eng.agent_dir(agent))


def _paths(hits: list[Any]) -> list[str]:
    return [h.path for h in hits]


# --------------------------------------------------------------------------- decay
def test_decay_ranks_a_newer_dated_note_above_an_equal_older_one(make_engine: Any) -> None:
    eng, root = _engine(make_engine)
    write(root, "memory/2025-01-10.md", NOTE)
    write(root, "memory/2026-01-10.md", NOTE)
    eng.memory.index("ada")
    q = "Kestrel gateway rollback"
    plain = eng.memory.search(q, "ada")
    assert _paths(plain)[:2] == ["memory/2025-01-10.md", "memory/2026-01-10.md"]  # a tie: by path
    assert plain[0].score == pytest.approx(plain[1].score)
    settings = eng.plugin_settings("memory")
    settings.decay = True
    decayed = eng.memory.search(q, "ada")
    assert _paths(decayed)[:2] == ["memory/2026-01-10.md", "memory/2025-01-10.md"]
    # one year apart, half-life 30 days: the older one is about 2**-12 of the newer one
    assert decayed[1].score / decayed[0].score == pytest.approx(0.5 ** (365 / 30), rel=0.01)


def test_decay_leaves_memory_md_and_evergreen_patterns_alone(make_engine: Any) -> None:
    eng, root = _engine(make_engine)
    write(root, "MEMORY.md", NOTE)
    write(root, "memory/2020-05-01.md", NOTE)
    old = write(root, "memory/topics/kestrel.md", NOTE)
    long_ago = time.time() - 400 * 86_400
    os.utime(old, (long_ago, long_ago))  # not dated: ages from its mtime
    eng.memory.index("ada")
    q = "Kestrel gateway rollback"
    plain = {h.path: h.score for h in eng.memory.search(q, "ada")}
    settings = eng.plugin_settings("memory")
    settings.decay = True
    decayed = {h.path: h.score for h in eng.memory.search(q, "ada")}
    assert decayed["MEMORY.md"] == pytest.approx(plain["MEMORY.md"])  # evergreen
    assert decayed["memory/2020-05-01.md"] < plain["memory/2020-05-01.md"] * 1e-6
    assert decayed["memory/topics/kestrel.md"] < plain["memory/topics/kestrel.md"] * 0.001
    assert next(iter(decayed)) == "MEMORY.md"
    settings.decay_evergreen = ["MEMORY.md", "memory/topics/*"]
    again = {h.path: h.score for h in eng.memory.search(q, "ada")}
    assert again["memory/topics/kestrel.md"] == pytest.approx(plain["memory/topics/kestrel.md"])


# --------------------------------------------------------------------------- MMR
def test_mmr_drops_a_near_duplicate_from_the_top_3(make_engine: Any) -> None:
    eng, root = _engine(make_engine)
    base = "The Kestrel gateway deploy was rolled back on {host} after the TLS certificate expired."
    write(root, "memory/a.md", "A\n\n" + base.format(host="edge-1") + "\n")
    write(root, "memory/b.md", "B\n\n" + base.format(host="edge-2") + "\n")
    write(root, "memory/c.md", "C\n\n" + base.format(host="edge-3") + "\n")
    write(root, "memory/d.md", "D\n\nKestrel gateway: the new TLS certificate is renewed by the cron job.\n")
    for i in range(6):
        write(root, f"memory/filler-{i}.md", f"F\n\nThe lunch menu on day {i} had soup and bread.\n")
    eng.memory.index("ada")
    q = "Kestrel gateway deploy TLS certificate"
    plain = _paths(eng.memory.search(q, "ada", limit=3))
    assert sorted(plain) == ["memory/a.md", "memory/b.md", "memory/c.md"]  # three near-duplicates
    eng.plugin_settings("memory").mmr = True
    diverse = _paths(eng.memory.search(q, "ada", limit=3))
    assert diverse[0] == plain[0] and "memory/d.md" in diverse
    eng.plugin_settings("memory").mmr_lambda = 1.0  # relevance only: the plain order
    assert _paths(eng.memory.search(q, "ada", limit=3)) == plain


# --------------------------------------------------------------------------- reranker hook
class Reverser:
    """A third-party reranker: reverses the candidates it is given."""

    def __init__(self, foreign: bool = False) -> None:
        self.calls: list[tuple[str, int]] = []
        self.foreign = foreign

    @hookimpl
    def goclaw_memory_rerank(self, engine: Any, query: str, agent: Any, user: Any, hits: list[Any]) -> Any:
        self.calls.append((query, len(hits)))
        out = list(reversed(hits))
        if self.foreign:
            out.insert(0, type(hits[0])("x.md", 1, 1, 9.0, "agent", "not a candidate"))
        return out


def _three_notes(root: Path) -> None:
    write(root, "memory/a.md", "A\n\nKestrel gateway deploy rolled back.\n")
    write(root, "memory/b.md", "B\n\nKestrel gateway certificate renewed.\n")
    write(root, "memory/c.md", "C\n\nKestrel dashboards moved to the new region.\n")


def _fused_then_reranked(make_engine: Any, reverser: Reverser) -> tuple[list[str], list[str]]:
    eng, root = _engine(make_engine)
    _three_notes(root)
    eng.memory.index("ada")
    fused = _paths(eng.memory.search("Kestrel gateway", "ada", limit=3, channel="lexical"))
    other = make_engine(extra_plugins=[("reverser", reverser)], plugins={"memory": {"rerank": "overlap"}})
    assert other.plugin_manager.records["reverser"].status == "active"
    reranked = _paths(other.memory.search("Kestrel gateway", "ada", limit=3, channel="lexical"))
    return fused, reranked


def test_the_reranker_hook_is_called_and_its_order_used(make_engine: Any) -> None:
    reverser = Reverser()
    fused, reranked = _fused_then_reranked(make_engine, reverser)
    assert len(fused) == 3
    assert reverser.calls == [("Kestrel gateway", 3)]  # the plugin wins over the built-in (trylast)
    assert reranked == fused[::-1]


def test_reranker_results_that_were_not_candidates_are_ignored(make_engine: Any) -> None:
    fused, reranked = _fused_then_reranked(make_engine, Reverser(foreign=True))
    assert reranked == fused[::-1]


def test_builtin_overlap_reranker(make_engine: Any) -> None:
    eng, root = _engine(make_engine)
    # the query's terms side by side beat the same terms scattered through a longer chunk
    write(root, "memory/near.md", "N\n\nThe Kestrel gateway certificate expired.\n")
    scattered = " ".join(["Kestrel"] + ["rollout"] * 6 + ["gateway"] + ["notes"] * 6 + ["certificate"])
    write(root, "memory/far.md", f"F\n\n{scattered} {scattered}\n")
    write(root, "memory/other.md", "O\n\nKestrel only.\n")
    eng.memory.index("ada")
    q = "Kestrel gateway certificate"
    settings = eng.plugin_settings("memory")
    settings.rerank_passages = settings.adaptive_weight = 0  # the overlap step alone
    before = {h.path: h.score for h in eng.memory.search(q, "ada")}
    settings.rerank = "overlap"
    after = eng.memory.search(q, "ada")
    scores = {h.path: h.score for h in after}
    assert after[0].path == "memory/near.md"
    assert scores["memory/near.md"] == pytest.approx(before["memory/near.md"])  # full coverage, adjacent
    assert scores["memory/far.md"] < before["memory/far.md"]
    assert scores["memory/other.md"] < before["memory/other.md"] * 0.9  # one term of three


def test_the_chunks_of_one_file_share_their_query_term_coverage() -> None:
    """A file whose title and body split the query's words between two chunks is covered as
    a whole; a chunk of another file, or a hit of another tier, keeps its own coverage."""
    from goclaw_memory.hybrid import MemoryHit
    from goclaw_memory.postprocess import overlap_rerank

    def hit(path: str, line: int, text: str, tier: str = "document") -> MemoryHit:
        return MemoryHit(path, line, line, 1.0, "agent", text, tier)

    title = hit("memory/a.md", 1, "Kestrel gateway")
    body = hit("memory/a.md", 3, "The certificate expired.")
    other = hit("memory/b.md", 1, "Kestrel gateway")
    session = hit("memory/a.md", 1, "Kestrel gateway", tier="session")
    ranked = overlap_rerank("Kestrel gateway certificate", [other, session, body, title], 0.3)
    scores = {(h.path, h.start_line, h.tier): h.score for h in ranked}
    alone = 0.7 + 0.3 * (2 / 3 + 1.0) / 2  # two terms of three, side by side
    assert scores[("memory/a.md", 1, "document")] == pytest.approx(1.0)  # the file holds all three
    assert scores[("memory/b.md", 1, "document")] == pytest.approx(alone)
    assert scores[("memory/a.md", 1, "session")] == pytest.approx(alone)
    assert ranked[0] is title


# Two chunks of a support team's notes (from benchmarks/synth_memory.py, seed 7): the answer to
# PASSAGE_Q is one bullet of the second, said in other words; both name the company.
PASSAGE_NOTES = {
    "memory/a.md": "- Invoice INV-723387 for Kite Ceramics paid, $3,521; no action for support.\n"
    "- Decision: pickups tickets go to Wren Mendes until Friday.\n"
    "- Kite Coffee escalation call moved to Wednesday 08:45 UTC by Hannah Duarte.\n"
    "- Order ORD-1831718 from Blue Ceramics stuck at customs in Madison; carrier trace requested.\n"
    "- Path /srv/invoices/exports/4814.csv was regenerated for the monthly report.\n"
    "- Refund request for Lumen Foods ($3,160) sent to finance with ticket TCK-56451.\n"
    "- TCK-33393: Hazel Coffee asked why refunds looked slow; Wren Okafor replied with the status "
    "page link.\n",
    "memory/b.md": "## Queue: Kite Ceramics\n"
    "- INC-9949: imports degraded for 7 minutes, Pedro Berg on call, post-mortem pending.\n"
    "- Nimbus Tea wants a call about onboarding on Tuesday at 14:00 UTC.\n"
    "- Training: Quentin Murphy shadowed Pedro Dubois on webhooks tickets.\n"
    "- The exports API key of Kite Ceramics was rotated after a leak reported in TCK-25436.\n"
    "- Path /srv/rates/exports/4927.csv was regenerated for the monthly report.\n"
    "- Dune Tea moved their warehouse from Kochi to Aarhus; addresses updated.\n"
    "- Niko Dubois closed 42 tickets; CSAT 83% this week.\n"
    "- Release v6.1.8 moved the returns settings page; macro updated by Aiko Harper.\n",
}
PASSAGE_Q = "Why did Kite Ceramics have to replace its secret credential?"


def test_the_reranker_measures_meaning_on_the_best_passage(make_engine: Any) -> None:
    """The chunk's mean vector blurs its one relevant bullet among seven others; the passage
    step (on by default with the static embedder) scores that bullet's meaning and ranks its
    chunk first. Scores only rise, and only the hybrid channel's."""
    eng, root = _engine(make_engine, rerank="overlap", rerank_passages=0)
    for rel, text in PASSAGE_NOTES.items():
        write(root, rel, text)
    eng.memory.index("ada")
    before = {h.path: h.score for h in eng.memory.search(PASSAGE_Q, "ada")}
    assert list(before) == ["memory/a.md", "memory/b.md"]
    settings = eng.plugin_settings("memory")
    settings.rerank_passages = type(settings).model_fields["rerank_passages"].default  # 20
    after = eng.memory.search(PASSAGE_Q, "ada")
    assert [h.path for h in after] == ["memory/b.md", "memory/a.md"]
    assert all(h.score >= before[h.path] for h in after)
    lexical = [(h.path, h.score) for h in eng.memory.search(PASSAGE_Q, "ada", channel="lexical")]
    eng.plugin_settings("memory").rerank_passages = 0
    assert [(h.path, h.score) for h in eng.memory.search(PASSAGE_Q, "ada", channel="lexical")] == lexical


def test_the_passage_step_is_off_without_an_embedder_that_offers_it(make_engine: Any) -> None:
    """A provider without passage_similarity (here the static model under another name and
    class) is never asked to embed passages; the order is the overlap reranker's."""
    from tests.memory_helpers import EmbedderPlugin

    plugin = EmbedderPlugin()
    eng = make_engine(
        extra_plugins=[("testemb", plugin)],
        plugins={"memory": {"rerank": "overlap"}, "embeddings": {"provider": "counting"}},
    )
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in PASSAGE_NOTES.items():
        write(root, rel, text)
    eng.memory.index("ada")
    embedded = len(plugin.counting.texts)
    assert [h.path for h in eng.memory.search(PASSAGE_Q, "ada")] == ["memory/a.md", "memory/b.md"]
    assert plugin.counting.texts[embedded:] == [PASSAGE_Q]  # the query only


@pytest.mark.parametrize("memory", [{"fusion": "rrf"}, {"rerank_passages": 0}, {"rerank": "none"}])
def test_the_passage_step_runs_only_with_the_weighted_fusion_and_the_overlap_reranker(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, memory: dict[str, Any]
) -> None:
    """Its formula re-measures the vector share of the weighted sum; other fusions' scores are
    not made of one, and the step belongs to the built-in reranker."""
    from goclaw_embeddings.static_model import StaticEmbedder

    calls: list[Any] = []
    monkeypatch.setattr(StaticEmbedder, "passage_similarity", lambda *args: calls.append(args))
    eng, root = _engine(make_engine, **{"rerank": "overlap", **memory})
    for rel, text in PASSAGE_NOTES.items():
        write(root, rel, text)
    eng.memory.index("ada")
    assert len(eng.memory.search(PASSAGE_Q, "ada")) == 2
    assert calls == []


def test_a_failing_passage_step_keeps_the_overlap_order(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from goclaw_embeddings.static_model import StaticEmbedder

    def broken(*args: Any) -> Any:
        raise RuntimeError("boom")

    eng, root = _engine(make_engine, rerank="overlap")
    for rel, text in PASSAGE_NOTES.items():
        write(root, rel, text)
    eng.memory.index("ada")
    monkeypatch.setattr(StaticEmbedder, "passage_similarity", broken)
    monkeypatch.setattr(StaticEmbedder, "token_similarity", broken)  # the chunks' sketches' path
    monkeypatch.setattr(StaticEmbedder, "token_rows", broken)  # ... scored in one call
    assert [h.path for h in eng.memory.search(PASSAGE_Q, "ada")] == ["memory/a.md", "memory/b.md"]
    assert "passage step failed" in caplog.text


def test_the_candidate_pool_is_only_asked_for_when_something_reads_it(make_engine: Any) -> None:
    """With no reranker (built-in off, none installed) and no MMR, the backend is asked for
    3 x limit candidates, not the reranker's pool; the pool is asked for as soon as the built-in
    reranker, MMR or another plugin's reranker will read it."""

    terms: list[Any] = []

    def asked(eng: Any) -> int:
        seen: list[int] = []
        backend = eng.memory.backend
        real = backend.search

        def spy(query: Any) -> Any:
            seen.append(query.candidates)
            result = real(query)
            terms.append((query.rerank_terms, [r.terms for r in (result.rows or {}).values()]))
            return result

        backend.search = spy
        eng.memory.search("Kestrel gateway", "ada", limit=4)
        return seen[-1]

    eng, root = _engine(make_engine, rerank_candidates=50)
    _three_notes(root)
    eng.memory.index("ada")
    assert asked(eng) == 12
    # nothing reranks: no terms asked for, and the SQLite backend looks none up
    assert terms[-1][0] is False and terms[-1][1] and all(t is None for t in terms[-1][1])
    pool = {"rerank_candidates": 50}
    assert asked(make_engine(plugins={"memory": {"rerank": "overlap", **pool}})) == 50
    assert terms[-1][0] is True and any(t for t in terms[-1][1])  # the reranker reads them
    assert asked(make_engine(plugins={"memory": {"rerank": "none", "mmr": True, **pool}})) == 50
    plugins = {"memory": {"rerank": "none", **pool}}
    other = make_engine(extra_plugins=[("reverser", Reverser())], plugins=plugins)
    assert asked(other) == 50


def test_decay_reads_the_whole_candidate_pool(make_engine: Any) -> None:
    """Decay re-sorts the candidates before the cut, so it reads the reranker's pool like a
    reranker or MMR: a recent note that fusion ranks below 3 x limit still rises to the top
    (with a 3 x limit pool it was never a candidate)."""
    eng, root = _engine(make_engine, decay=True, rerank_candidates=20)
    for day in range(1, 6):  # five old notes that match the query better than the new one
        body = f"Note {day}\n\nKestrel gateway rollback, Kestrel gateway.\n"
        write(root, f"memory/2020-01-0{day}.md", body)
    write(root, "memory/2026-01-10.md", "Recent\n\nThe Kestrel proxy was moved to another rack today.\n")
    eng.memory.index("ada")
    hits = eng.memory.search("Kestrel gateway rollback", "ada", limit=1)
    assert _paths(hits) == ["memory/2026-01-10.md"]


def test_a_third_party_embedder_offers_the_passage_step_through_the_contract(make_engine: Any) -> None:
    """goclaw.contracts.providers.PassageScoringEmbedder: any provider with passage_similarity
    gets the step, here one written from scratch (embed() per passage, no fast path)."""
    import numpy as np

    from goclaw.contracts.providers import PassageScoringEmbedder
    from goclaw_search.passages import passages
    from tests.memory_helpers import CountingEmbedder

    class PassageEmbedder(CountingEmbedder):
        provider = "test-passages"

        def __init__(self) -> None:
            super().__init__()
            self.asked: list[int] = []

        def passage_similarity(self, query: str, texts: Sequence[str]) -> Any:
            self.asked.append(len(texts))
            q = self.embed([query])[0]
            return np.asarray(
                [max(0.0, float(np.max(self.embed(passages(t)) @ q))) if passages(t) else 0.0 for t in texts],
                dtype=np.float32,
            )

    embedder = PassageEmbedder()
    assert isinstance(embedder, PassageScoringEmbedder)

    class Plugin:
        @hookimpl
        def goclaw_embedding_providers(self) -> dict[str, Any]:
            return {"passages": lambda engine: embedder}

    eng = make_engine(
        extra_plugins=[("passemb", Plugin())],
        plugins={"memory": {"rerank": "overlap"}, "embeddings": {"provider": "passages"}},
    )
    root = Path(eng.agent_dir(eng.agents.create("ada")))
    for rel, text in PASSAGE_NOTES.items():
        write(root, rel, text)
    eng.memory.index("ada")
    assert [h.path for h in eng.memory.search(PASSAGE_Q, "ada")] == ["memory/b.md", "memory/a.md"]
    assert embedder.asked == [2]
