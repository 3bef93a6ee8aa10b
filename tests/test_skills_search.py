"""BM25 (spec §10) and hybrid skill search (spec §11), with embedding backfill."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from goclaw_skills.search import BM25Index, hybrid_merge, tokenize
from tests.helpers import run_cli
from tests.test_skills_common import EmbedderPlugin, concept_vector, no_builtin, write_skill

CORPUS = [
    ("pdf-tools", "PDF Tools", "Extract text and tables from PDF files; merge PDF documents."),
    ("git-helper", "Git helper", "Write commit messages, rebase branches, resolve merge conflicts."),
    ("sql-review", "SQL review", "Review SQL queries for performance: indexes, joins, query plans."),
    ("spreadsheet", "Spreadsheet", "Read and write Excel spreadsheets and CSV tables."),
    ("translator", "Translator", "Translate text between languages."),
    ("a", "x", "a b c d"),  # one-letter tokens only: never matches anything
]


def reference_bm25(docs: list[str], query: str) -> list[float]:
    """The spec §10 formula written out independently (no shared code with the index)."""

    def tok(s: str) -> list[str]:
        out, cur = [], ""
        for ch in s.lower():
            if ch.isalnum():
                cur += ch
            else:
                out.append(cur)
                cur = ""
        out.append(cur)
        return [t for t in out if len(t) > 1]

    toks = [tok(d) for d in docs]
    n = len(docs)
    avgdl = sum(len(t) for t in toks) / n
    scores = []
    for t in toks:
        s = 0.0
        for q in tok(query):
            df = sum(1 for d in toks if q in d)
            tf = t.count(q)
            if tf == 0:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
            s += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * len(t) / avgdl))
        scores.append(s)
    return scores


def test_tokenizer() -> None:
    assert tokenize("Hello, WORLD! a_b x-y 42 é über-Straße") == ["hello", "world", "42", "über", "straße"]


@pytest.mark.parametrize(
    "query", ["pdf", "merge tables", "review sql query plans", "text text", "nothing-here"]
)
def test_bm25_matches_formula(query: str) -> None:
    docs = [f"{name} {desc}" for _s, name, desc in CORPUS]
    expected = reference_bm25(docs, query)
    got = BM25Index(docs).scores(query)
    assert list(got) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    top = BM25Index(docs).top(query, 5)
    ranked = sorted(((i, s) for i, s in enumerate(expected) if s > 0), key=lambda x: (-x[1], x[0]))[:5]
    assert [i for i, _ in top] == [i for i, _ in ranked]


def test_bm25_ties_keep_document_order_and_cut_at_k() -> None:
    docs = [f"alpha doc{i}" for i in range(12)]
    top = BM25Index(docs).top("alpha", 5)
    assert [i for i, _ in top] == [0, 1, 2, 3, 4]
    assert BM25Index([]).top("x", 5) == []


def test_hybrid_merge_rules() -> None:
    lex = [("a", 4.0), ("b", 2.0)]
    vec = [("b", 0.9), ("c", 0.5)]
    both = dict(hybrid_merge(lex, vec))
    assert both == pytest.approx({"a": 0.3, "b": 0.3 * 0.5 + 0.7 * 0.9, "c": 0.7 * 0.5})
    assert hybrid_merge(lex, [])[0] == ("a", 1.0)  # lexical alone at weight 1.0, max-normalised
    assert dict(hybrid_merge(lex, [])) == pytest.approx({"a": 1.0, "b": 0.5})
    assert dict(hybrid_merge([], vec)) == pytest.approx({"b": 0.9, "c": 0.5})
    assert hybrid_merge([], []) == []
    assert len(hybrid_merge([(str(i), float(i + 1)) for i in range(9)], [], limit=5)) == 5


def _write_corpus(root: Path) -> None:
    for slug, name, desc in CORPUS:
        write_skill(root, slug, desc, name=name)


def test_lexical_search_through_engine(make_engine, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    _write_corpus(workspace / "skills")
    eng = make_engine(plugins=no_builtin(embeddings={"provider": "none"}))
    docs = [f"{name} {desc}" for _s, name, desc in CORPUS]
    raw = reference_bm25(docs, "merge pdf")
    top = max(raw)
    hits = eng.skills.search("merge pdf")
    expected = sorted(
        ((CORPUS[i][0], s / top) for i, s in enumerate(raw) if s > 0), key=lambda x: (-x[1], x[0])
    )
    assert [(h.slug, round(h.score, 9)) for h in hits] == [(s, round(v, 9)) for s, v in expected]
    assert hits[0].source == "workspace" and hits[0].name == "PDF Tools"
    with pytest.raises(Exception, match="no embedding provider"):
        eng.skills.search("pdf", channel="vector")


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
