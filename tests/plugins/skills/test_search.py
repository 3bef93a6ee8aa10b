"""Skill search on the shared retrieval engine: BM25 over the shared tokenizer's terms, fused
with vector similarity, with embedding backfill."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goclaw_search.tokenize import query_terms, terms
from tests.conftest import BACKENDS, module_engine
from tests.helpers import run_cli
from tests.skills_helpers import EmbedderPlugin, concept_vector, no_builtin, write_skill

CORPUS = [
    ("pdf-tools", "PDF Tools", "Extract text and tables from PDF files; merge PDF documents."),
    ("git-helper", "Git helper", "Write commit messages, rebase branches, resolve merge conflicts."),
    ("sql-review", "SQL review", "Review SQL queries for performance: indexes, joins, query plans."),
    ("spreadsheet", "Spreadsheet", "Read and write Excel spreadsheets and CSV tables."),
    ("translator", "Translator", "Translate text between languages."),
    ("tickets", "Ticket triage", "Triage TCK-4471 style tickets and src/app.py stack traces."),
    ("a", "x", "a b c d"),
]


def reference_bm25(docs: list[str], query: str) -> list[float]:
    """BM25 brute force, written out here (no code shared with the index): every document,
    every distinct query term; k1 1.2, b 0.75, IDF ln((N - df + 0.5) / (df + 0.5) + 1).
    Only the terms come from the kernel tokenizer (the thing skill search now shares)."""
    toks = [terms(d) for d in docs]
    n = len(docs)
    avgdl = sum(len(t) for t in toks) / n
    scores = []
    for t in toks:
        s = 0.0
        for q in query_terms(query):
            df = sum(1 for d in toks if q in d)
            tf = t.count(q)
            if tf == 0:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
            s += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * len(t) / avgdl))
        scores.append(s)
    return scores


def _expected(query: str, limit: int = 5) -> list[tuple[str, float]]:
    raw = reference_bm25([f"{name} {desc}" for _s, name, desc in CORPUS], query)
    top = max(raw)
    ranked = sorted(
        ((CORPUS[i][0], s / top) for i, s in enumerate(raw) if s > 0), key=lambda x: (-x[1], x[0])
    )
    return ranked[:limit]


def _write_corpus(root: Path) -> None:
    for slug, name, desc in CORPUS:
        write_skill(root, slug, desc, name=name)


@pytest.fixture(scope="module", params=BACKENDS)
def corpus_eng(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The corpus in a workspace, one engine per database for the queries below (they only search)."""
    base = tmp_path_factory.mktemp("skills-corpus")
    _write_corpus(base / "ws" / "skills")
    with module_engine(request.param, base, plugins=no_builtin(embeddings={"provider": "none"})) as eng:
        yield eng


@pytest.mark.parametrize(
    "query",
    ["merge pdf", "pdf", "merge tables", "review sql query plans", "text text", "nothing-here", "TCK-4471"],
)
def test_lexical_search_matches_brute_force_bm25(corpus_eng: Any, query: str) -> None:
    eng = corpus_eng
    hits = eng.skills.search(query, channel="lexical")
    assert [(h.slug, round(h.score, 5)) for h in hits] == [(s, round(v, 5)) for s, v in _expected(query)]
    assert [h.slug for h in eng.skills.search(query)] == [h.slug for h in hits]  # no embedder: BM25
    with pytest.raises(Exception, match="no embedding provider"):
        eng.skills.search("pdf", channel="vector")


def test_shared_tokenizer_stems_and_keeps_codes(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _write_corpus(workspace / "skills")
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    hits = eng.skills.search("merging PDF filing")  # stems: merging, merge -> merg; filing, files -> file
    assert hits[0].slug == "pdf-tools" and hits[0].source == "workspace" and hits[0].name == "PDF Tools"
    assert [h.slug for h in eng.skills.search("tck-4471")] == ["tickets"]  # a code matches whole
    assert [h.slug for h in eng.skills.search("app.py")] == ["tickets"]
    assert eng.skills.search("the of and") == []  # stopwords only: nothing matches


def test_ties_sort_by_slug_and_cut_at_max_results(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    for i in reversed(range(12)):
        write_skill(workspace / "skills", f"s{i:02d}", f"alpha doc{i}", name=f"n{i}")
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    assert [h.slug for h in eng.skills.search("alpha")] == ["s00", "s01", "s02", "s03", "s04"]
    assert len(eng.skills.search("alpha", limit=8)) == 8


def _vector_engine(make_engine, provider: str = "test"):  # type: ignore[no-untyped-def]
    plugin = EmbedderPlugin()
    eng = make_engine(plugins=no_builtin(embeddings={"provider": provider}), extra_plugins=[("emb", plugin)])
    return eng, plugin


VEC_SKILLS = [
    ("car-care", "Car care", "Maintain an automobile: oil, tyres and engine checks."),
    ("recipes", "Recipes", "Cooking pasta and pizza in a home kitchen."),
    ("refunds", "Refunds", "Handle a refund request and billing questions."),
    ("poems", "Poems", "Write a poem with rhyme."),
]


def test_hybrid_both_channels_and_vector_only_hit(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    for slug, name, desc in VEC_SKILLS:
        write_skill(workspace / "skills", slug, desc, name=name)
    eng, plugin = _vector_engine(make_engine)
    assert plugin.calls == [4]  # start-up backfill embedded every skill once
    # "vehicle" shares no word with any skill: only the vector channel can find car-care.
    hits = eng.skills.search("vehicle")
    assert hits and hits[0].slug == "car-care"
    texts = {s: f"{n}: {d}" for s, n, d in VEC_SKILLS}
    q = concept_vector("vehicle")

    def sim(slug: str) -> float:
        v = concept_vector(texts[slug])
        return sum(a * b for a, b in zip(q, v, strict=True))

    assert hits[0].score == pytest.approx(sim("car-care"), rel=1e-5)  # vector alone at weight 1.0
    # Both channels: BM25 max-normalised × 0.3 + cosine × 0.7.
    both = {h.slug: h.score for h in eng.skills.search("refund money")}
    assert both["refunds"] == pytest.approx(
        0.3 * 1.0 + 0.7 * sim_of("refund money", texts["refunds"]), rel=1e-5
    )
    lexical = eng.skills.search("refund money", channel="lexical")
    assert [h.slug for h in lexical] == ["refunds"] and lexical[0].score == pytest.approx(1.0)
    vector = eng.skills.search("refund money", channel="vector")
    assert vector[0].slug == "refunds"
    assert vector[0].score == pytest.approx(sim_of("refund money", texts["refunds"]), rel=1e-5)
    # The vectors come from the embedding cache: a new engine embeds only the query.
    plugin2 = EmbedderPlugin()
    eng2 = make_engine(plugins=no_builtin(embeddings={"provider": "test"}), extra_plugins=[("emb", plugin2)])
    eng2.skills.search("vehicle")
    assert plugin2.calls == [1]


def sim_of(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(concept_vector(a), concept_vector(b), strict=True))


def test_every_candidate_scored_on_both_channels(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    """Fusion scores every candidate on both channels: the only keyword match is not among the
    vector channel's best, yet it gets its real cosine (0.3 × 1 + 0.7 × 0.5 = 0.65) and beats the
    vector-only skills (0.7 × 0.707 = 0.49). Without its cosine it would score 0.3."""
    skills = [
        ("alpha", "Invoice deploy"),  # "invoice": the keyword match; cosine 0.5 with the query
        ("beta", "Payment billing"),  # cosine 0.707, no shared word
        ("gamma", "Rhyme verse"),  # cosine 0.707, no shared word
    ]
    for slug, desc in skills:
        write_skill(workspace / "skills", slug, desc, name=slug)
    eng, _plugin = _vector_engine(make_engine)
    hits = eng.skills.search("invoice poem", limit=1)
    expected = 0.3 + 0.7 * sim_of("invoice poem", "alpha: Invoice deploy")
    assert [h.slug for h in hits] == ["alpha"] and hits[0].score == pytest.approx(expected, rel=1e-5)
    assert {h.slug for h in eng.skills.search("invoice poem")} == {"alpha", "beta", "gamma"}


@pytest.mark.parametrize("provider", ["test-down", "test-broken"])
def test_embedder_down_falls_back_to_bm25(make_engine, workspace: Path, provider: str) -> None:  # type: ignore[no-untyped-def]
    for slug, name, desc in VEC_SKILLS:
        write_skill(workspace / "skills", slug, desc, name=name)
    eng, _plugin = _vector_engine(make_engine, provider)  # start-up backfill must not fail either
    hits = eng.skills.search("refund billing")
    assert [h.slug for h in hits] == ["refunds"] and hits[0].score == pytest.approx(1.0)
    assert eng.skills.search("vehicle") == []
    with pytest.raises(Exception, match="test"):
        eng.skills.search("vehicle", channel="vector")


def test_backfill_adds_missing_only(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    write_skill(workspace / "skills", "one", "first")
    eng, plugin = _vector_engine(make_engine)
    assert plugin.calls == [1]
    write_skill(workspace / "skills", "two", "second")
    write_skill(workspace / "skills", "three", "third")
    eng.skills.reload()
    assert eng.skills.backfill_embeddings() == 2
    assert eng.skills.backfill_embeddings() == 0
    assert plugin.calls == [1, 2]


def test_static_provider_if_registered(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    for slug, name, desc in VEC_SKILLS:
        write_skill(workspace / "skills", slug, desc, name=name)
    eng = make_engine(plugins=no_builtin())
    if "static" not in eng.hooks.embedding_providers():
        pytest.skip("the static embedding provider is not registered yet")
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "static"}))
    hits = eng.skills.search("how do I cook spaghetti", channel="vector")
    assert hits and hits[0].slug == "recipes"


def test_cli_search_channels(workspace: Path, home: Path) -> None:
    _write_corpus(workspace / "skills")
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.skills.tier.builtin"]\n[plugins.embeddings]\nprovider = "none"\n'
    )
    res = run_cli(["skills", "search", "pdf merge", "--json", "--channel", "lexical"], workspace=workspace)
    assert res.code == 0, res.err
    hits = json.loads(res.out)
    assert hits[0] == {"slug": "pdf-tools", "name": "PDF Tools", "score": 1.0, "source": "workspace"}
    assert all(set(h) == {"slug", "name", "score", "source"} for h in hits)
    hybrid = run_cli(["skills", "search", "pdf merge", "--json"], workspace=workspace)
    assert json.loads(hybrid.out) == hits  # no embedder: hybrid degrades to BM25 alone
    vec = run_cli(["skills", "search", "pdf", "--channel", "vector"], workspace=workspace)
    assert vec.code != 0 and vec.err.startswith("error: ")
