"""Tests for goclaw's default offline embedder (the bundled static MiniLM-derived model)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from goclaw_embeddings.static_model import DEFAULT_MODEL_DIR, StaticEmbedder
from tests.plugins.embeddings.offline import run_offline, subprocess_env

MODEL_ID = "minilm-l6-static-256-v2"
DIM = 256

PAIRS = [
    # (text, paraphrase, unrelated)
    (
        "how do I reset my password",
        "I forgot my password, how can I change it?",
        "the weather in Paris is sunny today",
    ),
    ("install the python package with pip", "use pip to install the library", "she baked a chocolate cake"),
    (
        "the database connection timed out",
        "could not connect to the SQL server in time",
        "my dog loves the beach",
    ),
]


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


# -- the bundled files -------------------------------------------------------------------------


def test_bundled_model_files_are_real_and_small() -> None:
    conf = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    assert conf["model_id"] == MODEL_ID and conf["dim"] == DIM and conf["normalize"] is True
    emb_path = DEFAULT_MODEL_DIR / conf["files"]["embeddings"]
    raw = emb_path.read_bytes()
    assert not raw.startswith(b"version https://git-lfs"), "embedding matrix is a Git LFS pointer"
    assert hashlib.sha256(raw).hexdigest() == conf["files"]["embeddings_sha256"]
    tok_raw = (DEFAULT_MODEL_DIR / conf["files"]["tokenizer"]).read_bytes()
    assert hashlib.sha256(tok_raw).hexdigest() == conf["files"]["tokenizer_sha256"]
    matrix = np.load(emb_path, allow_pickle=False)
    assert matrix.shape == (conf["vocab_size"], DIM)
    assert np.isfinite(matrix.astype(np.float32)).all()
    total = sum(p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file())
    assert total <= 20 * 1024 * 1024
    for name in ("LICENSE-MODEL.txt", "NOTICE"):
        text = (DEFAULT_MODEL_DIR / name).read_text(encoding="utf-8")
        assert "all-MiniLM-L6-v2" in text and "Apache" in text


# -- identity and laziness ---------------------------------------------------------------------


def test_identity(embedder: StaticEmbedder) -> None:
    assert embedder.provider == "goclaw-static"
    assert embedder.model == MODEL_ID
    assert embedder.dim == DIM
    assert isinstance(embedder.dim, int)


def test_import_and_construction_are_lazy() -> None:
    # Loaded as a plain file in a fresh interpreter, so no package __init__ can import numpy first.
    module_file = Path(sys.modules[StaticEmbedder.__module__].__file__ or "")
    code = textwrap.dedent(
        f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("sm", {str(module_file)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        e = mod.StaticEmbedder()
        assert e.dim == {DIM} and e.model == {MODEL_ID!r} and e.provider == "goclaw-static"
        heavy = [m for m in ("numpy", "tokenizers") if m in sys.modules]
        assert not heavy, heavy
        v = e.embed(["hello world"])
        assert v.shape == (1, {DIM}), v.shape
        print("ok")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=subprocess_env()
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


# -- embed() contract --------------------------------------------------------------------------


def test_shape_dtype_and_unit_norm(embedder: StaticEmbedder) -> None:
    texts = ["hello world", "A slightly longer sentence about context engines.", "x", "Ünïcödé café 東京"]
    vecs = embedder.embed(texts)
    assert isinstance(vecs, np.ndarray)
    assert vecs.dtype == np.float32
    assert vecs.shape == (len(texts), DIM)
    assert np.isfinite(vecs).all()
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_empty_inputs(embedder: StaticEmbedder) -> None:
    none = embedder.embed([])
    assert none.shape == (0, DIM) and none.dtype == np.float32

    texts = ["", "   \n\t  ", "real text here", "\u200b", "🚀🚀🚀"]
    vecs = embedder.embed(texts)
    assert vecs.shape == (5, DIM)
    assert not np.isnan(vecs).any()
    norms = np.linalg.norm(vecs, axis=1)
    assert norms[0] == 0.0 and norms[1] == 0.0 and norms[3] == 0.0  # no tokens -> zero vector
    assert norms[4] == 0.0  # only unknown tokens, which are dropped -> zero vector
    assert abs(norms[2] - 1.0) < 1e-5
    np.testing.assert_allclose(vecs[2], embedder.embed(["real text here"])[0], atol=1e-6)


def test_rejects_a_bare_string_and_non_strings(embedder: StaticEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("a single string")
    with pytest.raises(TypeError):
        embedder.embed(["ok", 42])  # type: ignore[list-item]


def test_deterministic_and_batch_independent(embedder: StaticEmbedder) -> None:
    texts = [f"chunk number {i}: the quick brown fox jumps over {i % 13} lazy dogs" for i in range(1100)]
    a = embedder.embed(texts)  # crosses the internal batch boundary
    b = embedder.embed(texts)
    assert np.array_equal(a, b)
    c = StaticEmbedder().embed(texts[1020:1030])
    np.testing.assert_allclose(a[1020:1030], c, atol=1e-6)
    singles = np.vstack([embedder.embed([t]) for t in texts[:5]])
    np.testing.assert_allclose(a[:5], singles, atol=1e-6)
    assert not np.allclose(a[0], a[1])


def test_long_text_is_truncated_to_max_tokens(embedder: StaticEmbedder) -> None:
    head = " ".join(f"alpha{i}" for i in range(600))  # far more than 512 tokens
    tail = " completely different ending about cooking pasta" * 300
    vecs = embedder.embed([head, head + tail, "xyz " * 100_000, "x" * 100_000])
    assert np.isfinite(vecs).all()
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vecs[0], vecs[1], atol=1e-6)  # the tail lies past the token limit
    # one "word" longer than WordPiece's 100-character limit is a single unknown token -> zero vector
    assert float(np.linalg.norm(vecs[3])) == 0.0


@pytest.mark.parametrize(("text", "paraphrase", "unrelated"), PAIRS)
def test_paraphrase_closer_than_unrelated(
    embedder: StaticEmbedder, text: str, paraphrase: str, unrelated: str
) -> None:
    q, p, u = embedder.embed([text, paraphrase, unrelated])
    sim_p, sim_u = float(q @ p), float(q @ u)
    assert sim_p > 0.5, sim_p
    assert sim_p > sim_u + 0.3, (sim_p, sim_u)
    assert sim_u < 0.3, sim_u


def test_ranking_prefers_relevant_chunk(embedder: StaticEmbedder) -> None:
    docs = [
        "To change your password open Settings, choose Security and click Reset password.",
        "Our office is closed on public holidays.",
        "The invoice total includes VAT at the standard rate.",
    ]
    q = embedder.embed(["how do I reset my password"])[0]
    scores = embedder.embed(docs) @ q
    assert int(np.argmax(scores)) == 0, scores


# -- other model directories -------------------------------------------------------------------


def test_custom_model_dir(tmp_path: Path) -> None:
    conf = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    conf["model_id"] = "custom-copy"
    conf["files"]["embeddings"] = "emb32.npy"
    (tmp_path / "config.json").write_text(json.dumps(conf), encoding="utf-8")
    (tmp_path / "tokenizer.json").write_bytes((DEFAULT_MODEL_DIR / "tokenizer.json").read_bytes())
    np.save(tmp_path / "emb32.npy", np.load(DEFAULT_MODEL_DIR / "embeddings.npy").astype(np.float32))
    custom = StaticEmbedder(tmp_path)
    assert custom.model == "custom-copy" and custom.dim == DIM
    np.testing.assert_allclose(
        custom.embed(["hello there"]), StaticEmbedder().embed(["hello there"]), atol=1e-6
    )


def test_missing_model_dir_raises(tmp_path: Path) -> None:
    missing = StaticEmbedder(tmp_path / "nope")
    with pytest.raises(FileNotFoundError):
        _ = missing.dim
    with pytest.raises(FileNotFoundError):
        missing.embed(["x"])


# -- offline -----------------------------------------------------------------------------------


def test_embeds_without_any_network_access() -> None:
    run_offline(
        """
        from goclaw_embeddings.static_model import StaticEmbedder
        e = StaticEmbedder()
        v = e.embed(["offline embedding works", ""])
        assert v.shape == (2, e.dim)
        """
    )


def test_embedders_of_one_process_share_the_loaded_model(tmp_path: Path) -> None:
    """Every engine has its own embedder; the files are read once per process (~0.18 s and
    30 MB each otherwise), read-only, and read again when they change."""
    import shutil

    a, b = StaticEmbedder(), StaticEmbedder()
    a.load()
    b.load()
    assert a._matrix is b._matrix and a._tokenizer is b._tokenizer
    assert a._matrix is not None and not a._matrix.flags.writeable
    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    before = StaticEmbedder(copy)
    before.load()
    assert before._matrix is not a._matrix  # another folder: its own files
    raw = np.load(copy / "embeddings.npy")
    np.save(copy / "embeddings.npy", -raw)  # the same folder, changed
    after = StaticEmbedder(copy)
    np.testing.assert_allclose(
        after.embed(["reset my password"]), -before.embed(["reset my password"]), atol=1e-6
    )


# --------------------------------------------------------------------------- passages
NOTES = [
    "# 2026-11-12 (Thu)\n\n## TCK-4471 approved\n- Mei Lin approved at 10:05 UTC: refund $349\n"
    "  (duplicate Scale fee on INV-20931) to the card on file.\n- Dana Whitfield informed by email.",
    "## Queue: Kite Ceramics\n- The exports API key of Kite Ceramics was rotated after a leak (TCK-25436).\n"
    "- Dune Tea moved their warehouse from Kochi to Aarhus; addresses updated.",
    "Café crème, naïve résumé — 東京 ünïcödé\ttabs\u00a0and\u2003odd spaces.",
    "",
    "   \n\n",
]


@pytest.mark.parametrize(
    "query", ["Why did Kite Ceramics replace its secret credential?", "Mei refund", "résumé in Tokyo"]
)
def test_passage_similarity_equals_embedding_each_passage(query: str) -> None:
    """The fast path (tokens remembered per whitespace piece, passage vectors per text) gives
    what embedding every passage with embed() gives, also on a second, cached call."""
    from goclaw_search.passages import best_passage_cosine

    emb = StaticEmbedder()
    want = best_passage_cosine(emb.embed, query, NOTES)
    np.testing.assert_allclose(emb.passage_similarity(query, NOTES), want, atol=1e-5)
    np.testing.assert_allclose(emb.passage_similarity(query, NOTES), want, atol=1e-5)
    assert want[0] > 0 and want[3] == want[4] == 0.0


def test_passage_similarity_when_its_caches_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    import goclaw_embeddings.static_model as sm
    from goclaw_search.passages import best_passage_cosine

    monkeypatch.setattr(sm, "_PIECES_MAX", 5)
    monkeypatch.setattr(sm, "_CHUNKS_MAX", 1)
    emb = StaticEmbedder()
    for query in ("Kite Ceramics key", "warehouse Aarhus"):
        want = best_passage_cosine(emb.embed, query, NOTES)
        np.testing.assert_allclose(emb.passage_similarity(query, NOTES), want, atol=1e-5)
    assert len(emb._sketches) <= 1


def test_passage_similarity_of_a_query_that_does_not_embed() -> None:
    assert StaticEmbedder().passage_similarity("", NOTES[:2]).tolist() == [0.0, 0.0]


def test_passage_similarity_is_a_cosine_with_a_model_that_does_not_normalize(tmp_path: Path) -> None:
    """A model whose config says ``"normalize": false`` embeds queries of norm other than 1;
    the passage step compares its result with the search's cosine, so it must be a cosine too
    (it was the cosine times the query's norm: 0.64 instead of 0.49 here)."""
    import shutil

    copy = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    conf = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    conf["normalize"] = False
    (copy / "config.json").write_text(json.dumps(conf), encoding="utf-8")
    raw = StaticEmbedder(copy)
    query = "Why did Kite Ceramics replace its secret credential?"
    assert abs(float(np.linalg.norm(raw.embed([query])[0])) - 1.0) > 0.05  # not a unit vector
    np.testing.assert_allclose(
        raw.passage_similarity(query, NOTES), StaticEmbedder().passage_similarity(query, NOTES), atol=5e-4
    )


def test_the_passage_sketch_cache_is_bounded_by_its_tokens() -> None:
    """A chunk of short list items (ticket ids, names) has dozens of passages, not the ~8 the
    cache was sized by: the texts' sketches it remembers are bounded by the token ids they hold
    (400,000, ~1 MB), not only by the number of texts."""
    import goclaw_embeddings.static_model as sm

    emb = StaticEmbedder()
    texts = ["\n".join(f"- TCK-{i * 1000 + j} escalated to tier two" for j in range(90)) for i in range(600)]
    for k in range(0, len(texts), 20):
        emb.passage_similarity("ticket TCK-5", texts[k : k + 20])
    held = sum(len(sk.tokens) for sk in emb._sketches.values())
    assert 0 < held <= sm._SKETCH_TOKENS_MAX  # ~430,000 tokens for the 600 texts
    assert len(emb._sketches) < 600
    assert emb.passage_similarity("ticket TCK-5", texts[-1:])[0] > 0  # the last one is still there


def test_the_piece_cache_is_bounded_by_its_tokens() -> None:
    """Whitespace pieces are remembered with their token ids: 50,000 words are a few MB, but
    50,000 commit hashes or UUIDs (~28 tokens each) held ~60 MB; the cache is also bounded by
    the token ids it holds (200,000, ~8 MB)."""
    import secrets

    emb = StaticEmbedder()
    hashes = [secrets.token_hex(20) for _ in range(2 * 14 * 500)]  # ~26 tokens each
    texts = [
        "\n".join(f"- deploy {hashes[2 * j]} by {hashes[2 * j + 1]}" for j in range(14 * i, 14 * i + 14))
        for i in range(500)
    ]
    for k in range(0, len(texts), 20):
        emb.passage_similarity("deploy commit", texts[k : k + 20])
    assert sum(len(v) for v in emb._pieces.values()) <= 200_000  # ~360,000 before
