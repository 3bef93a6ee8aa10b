"""Embedding providers: static default, litellm (mocked), extras."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from goclaw.errors import GoclawError


class _Handler:
    """A litellm CustomLLM embedding handler: deterministic vectors, counts calls (no network)."""

    def __init__(self, litellm: Any, dim: int = 8, fail_first: int = 0) -> None:
        self.dim = dim
        self.batches: list[list[str]] = []
        self.fail_first = fail_first
        base = litellm.CustomLLM
        handler = self

        class H(base):  # type: ignore[misc, valid-type]
            def embedding(self, model: str, input: list[str], model_response: Any, *a: Any, **kw: Any) -> Any:
                if handler.fail_first > 0:
                    handler.fail_first -= 1
                    raise RuntimeError("transient upstream error")
                handler.batches.append(list(input))
                model_response.data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": [float(len(t) + j) for j in range(handler.dim)],
                    }
                    for i, t in enumerate(input)
                ]
                return model_response

        self.instance = H()


@pytest.fixture(scope="module")
def litellm_module() -> Any:
    from goclaw_embeddings.providers import import_litellm

    return import_litellm()


@pytest.fixture
def handler(litellm_module: Any, monkeypatch: pytest.MonkeyPatch) -> _Handler:
    h = _Handler(litellm_module)
    monkeypatch.setattr(
        litellm_module, "custom_provider_map", [{"provider": "localx", "custom_handler": h.instance}]
    )
    litellm_module.custom_provider_map = [{"provider": "localx", "custom_handler": h.instance}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    return h


def test_default_provider_is_static(workspace: Any) -> None:
    from goclaw.engine import Engine

    with Engine.open(workspace) as eng:
        emb = eng.embedder()
        assert emb is not None and emb.provider == "goclaw-static" and emb.dim == 256
        out = emb.embed(["hello world", ""])
        assert out.shape == (2, 256) and out.dtype == np.float32
        assert abs(float(np.linalg.norm(out[0])) - 1.0) < 1e-4


def test_none_provider(workspace: Any) -> None:
    from goclaw.engine import Engine

    with Engine.open(workspace, plugins={"embeddings": {"provider": "none"}}) as eng:
        assert eng.embedder() is None


def test_litellm_batches_and_normalises(workspace: Any, handler: _Handler) -> None:
    from goclaw.engine import Engine

    cfg = {"provider": "litellm", "model": "localx/emb", "batch_size": 2, "skip_key_check": True}
    with Engine.open(workspace, plugins={"embeddings": cfg}) as eng:
        emb = eng.embedder()
        before = len(handler.batches)  # other plugins (skills backfill) may embed at start-up
        out = emb.embed(["a", "bb", "ccc", "dddd", "eeeee"])
        assert [len(b) for b in handler.batches[before:]] == [2, 2, 1]
        assert out.shape == (5, 8) and emb.dim == 8
        expected = np.array([len("ccc") + j for j in range(8)], dtype=np.float32)
        assert np.allclose(out[2], expected / np.linalg.norm(expected), atol=1e-6)


def test_litellm_retries_transient_errors(workspace: Any, handler: _Handler, monkeypatch: Any) -> None:
    from goclaw.engine import Engine
    from goclaw_embeddings import providers

    monkeypatch.setattr(providers.time, "sleep", lambda s: None)
    handler.fail_first = 2
    cfg = {"provider": "litellm", "model": "localx/emb", "max_retries": 3, "skip_key_check": True}
    with Engine.open(workspace, plugins={"embeddings": cfg}) as eng:
        assert eng.embedder().embed(["x"]).shape == (1, 8)
    handler.fail_first = 5
    cfg["max_retries"] = 1
    with Engine.open(workspace, plugins={"embeddings": cfg}) as eng, pytest.raises(GoclawError) as err:
        eng.embedder().embed(["x"])
    assert "after 2 attempt(s)" in str(err.value) and "\n" not in str(err.value)


def test_litellm_missing_key_is_one_clear_line(
    workspace: Any, litellm_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goclaw.engine import Engine

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = {"provider": "litellm", "model": "text-embedding-3-small"}
    with Engine.open(workspace, plugins={"embeddings": cfg}) as eng:
        with pytest.raises(GoclawError) as err:
            eng.embedder()
        msg = str(err.value)
        assert "OPENAI_API_KEY" in msg and "litellm" in msg and "\n" not in msg
        # Memory search degrades to full text and says why.
        eng.agents.create("ada")
        root = eng.agent_dir(eng.agents.get("ada"))
        root.mkdir(parents=True, exist_ok=True)
        (root / "MEMORY.md").write_text("The kettle is in the kitchen.\n")
        report = eng.memory.index("ada")
        assert "OPENAI_API_KEY" in (report.embedding_error or "")
        response = eng.memory.search_response("kettle", "ada")
        assert [h.path for h in response.hits] == ["MEMORY.md"]
        assert "OPENAI_API_KEY" in response.notes[0]


def test_litellm_needs_a_model(workspace: Any) -> None:
    from goclaw.engine import Engine

    with (
        Engine.open(workspace, plugins={"embeddings": {"provider": "litellm"}}) as eng,
        pytest.raises(GoclawError, match="needs a model"),
    ):
        eng.embedder()


def test_sentence_transformers_is_optional(workspace: Any) -> None:
    from goclaw.engine import Engine

    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only on machines with the extra
        pytest.skip("sentence-transformers is installed here")
    with (
        Engine.open(workspace, plugins={"embeddings": {"provider": "sentence-transformers"}}) as eng,
        pytest.raises(GoclawError, match=r"goclaw\[transformers\]"),
    ):
        eng.embedder()


def test_unknown_provider(workspace: Any) -> None:
    from goclaw.engine import Engine

    with (
        Engine.open(workspace, plugins={"embeddings": {"provider": "nope"}}) as eng,
        pytest.raises(GoclawError, match="unknown embedding provider"),
    ):
        eng.embedder()
