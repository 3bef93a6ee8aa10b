"""The ``onnx`` embedding provider: all-MiniLM-L6-v2 on onnxruntime (the ``onnx`` extra)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goclaw.errors import GoclawError
from goclaw_embeddings import onnx_model
from goclaw_embeddings.onnx_model import DEFAULT_MODEL_ID, OnnxEmbedder
from tests.plugins.embeddings.offline import run_offline
from tests.plugins.embeddings.test_static_embedder import PAIRS

DIM = 384
HAS_EXTRA = (
    importlib.util.find_spec("onnxruntime") is not None and onnx_model.default_model_file() is not None
)
needs_extra = pytest.mark.skipif(
    not HAS_EXTRA, reason="the onnx extra is not installed (pip install 'goclaw[onnx]')"
)


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    if not HAS_EXTRA:
        pytest.skip("the onnx extra is not installed (pip install 'goclaw[onnx]')")
    return OnnxEmbedder(threads=1)


@needs_extra
def test_loads_and_embeds_offline() -> None:
    run_offline(
        """
        from goclaw_embeddings.onnx_model import OnnxEmbedder
        e = OnnxEmbedder(threads=1)
        v = e.embed(["offline embedding works", ""])
        assert v.shape == (2, 384) and e.dim == 384
        """
    )


def test_shape_dtype_and_unit_norm(embedder: OnnxEmbedder) -> None:
    out = embedder.embed(["hello world", "", "a longer text about the database migration plan"])
    assert out.shape == (3, DIM) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, DIM)
    assert embedder.model == DEFAULT_MODEL_ID and embedder.provider == "goclaw-onnx"


def test_rejects_a_bare_string_and_non_strings(embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("one string")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        embedder.embed(["fine", 3])  # type: ignore[list-item]


def test_padding_does_not_change_an_embedding(embedder: OnnxEmbedder) -> None:
    """Texts are batched by length and padded: a short text embeds the same alone and beside
    long ones."""
    short = "the release is on friday"
    alone = embedder.embed([short])[0]
    beside = embedder.embed(["word " * 200, short, "another rather longer sentence " * 10])[1]
    assert float(alone @ beside) > 0.9999


def test_long_text_is_cut_at_the_models_length(embedder: OnnxEmbedder) -> None:
    long = " ".join(f"word{i}" for i in range(600))
    a, b = embedder.embed([long, long + " and something else entirely at the end"])
    assert float(a @ b) > 0.9999


@pytest.mark.parametrize(("text", "paraphrase", "unrelated"), PAIRS)
def test_paraphrase_closer_than_unrelated(
    embedder: OnnxEmbedder, text: str, paraphrase: str, unrelated: str
) -> None:
    v = embedder.embed([text, paraphrase, unrelated])
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3


@needs_extra
def test_the_model_file_is_checked_against_its_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_model, "MODEL_SHA256", "0" * 64)
    monkeypatch.setattr(onnx_model, "_SESSIONS", {})
    with pytest.raises(GoclawError, match=r"sha256 .* expected 000000000000"):
        OnnxEmbedder().embed(["x"])


@needs_extra
def test_a_model_folder_without_its_files_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GoclawError, match=r"provider 'onnx': no .*model\.onnx"):
        OnnxEmbedder(tmp_path)


@pytest.mark.parametrize("missing", ["onnxruntime", onnx_model.MODEL_PACKAGE])
def test_without_the_extra_the_error_names_it(
    workspace: Any, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    from goclaw.engine import Engine

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == missing else find_spec(name, *a)
    )
    with (
        Engine.open(workspace, plugins={"embeddings": {"provider": "onnx"}}) as eng,
        pytest.raises(GoclawError, match=r"goclaw\[onnx\]"),
    ):
        eng.embedder()


@needs_extra
def test_memory_search_finds_a_paraphrase_through_the_onnx_provider(workspace: Any) -> None:
    from goclaw.engine import Engine

    with Engine.open(workspace, plugins={"embeddings": {"provider": "onnx", "threads": 1}}) as eng:
        emb = eng.embedder()
        assert emb is not None and emb.provider == "goclaw-onnx" and emb.dim == DIM
        eng.agents.create("ada")
        folder = Path(eng.agent_dir(eng.agents.get("ada"))) / "memory"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "pets.md").write_text("# Pets\n\nMy dog loves running on the beach.\n", encoding="utf-8")
        (folder / "db.md").write_text(
            "# Database\n\nThe SQL server refused connections after thirty seconds.\n", encoding="utf-8"
        )
        eng.memory.index("ada")
        hits = eng.memory.search("database connection timed out", "ada", channel="vector")
        assert hits and hits[0].path == "memory/db.md"
