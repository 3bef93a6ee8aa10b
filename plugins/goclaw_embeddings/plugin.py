"""Plugin ``goclaw.embeddings``: the embedding-provider registry.

Providers, selected by ``[plugins.embeddings] provider``:

* ``static`` (default): the bundled static model distilled from all-MiniLM-L6-v2 (256-d,
  numpy + tokenizers, offline, no download at run time);
* ``litellm``: hosted models through litellm (``model = "text-embedding-3-small"``, ...);
* ``onnx``: all-MiniLM-L6-v2 on onnxruntime (the ``onnx`` extra: no torch, no download at run
  time), or another ONNX export in ``model_dir``;
* ``sentence-transformers``: a local full transformer (the ``transformers`` extra);
* ``none``: no vectors; memory search runs full-text only.

Heavy imports (numpy, tokenizers, litellm, onnxruntime, torch) happen only when a provider is built.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from goclaw import hookimpl


class EmbeddingsSettings(BaseModel):
    """``[plugins.embeddings]``"""

    provider: str = Field(
        default="static", description="static | onnx | litellm | sentence-transformers | none"
    )
    model: str | None = Field(
        default=None, description="model for litellm / sentence-transformers (static ignores it)"
    )
    model_dir: str | None = Field(
        default=None, description="static, onnx: a model folder to use instead of the default one"
    )
    threads: int | None = Field(
        default=None, ge=1, description="onnx: threads per embedding call (default: onnxruntime's)"
    )
    batch_size: int = Field(default=128, ge=1, le=4096, description="texts per embedding call")
    max_retries: int = Field(default=3, ge=0, le=10, description="litellm: retries per batch")
    timeout: float = Field(default=60.0, gt=0, description="litellm: seconds per call")
    dimensions: int | None = Field(
        default=None, ge=1, description="litellm: request this many dimensions (if the model can)"
    )
    api_base: str | None = Field(default=None, description="litellm: custom endpoint")
    api_key: str | None = Field(default=None, description="litellm: key (prefer the env variable)")
    skip_key_check: bool = Field(default=False, description="litellm: do not check the key at start")
    device: str | None = Field(default=None, description="sentence-transformers: cpu, cuda, ...")
    options: dict[str, Any] = Field(default_factory=dict, description="extra litellm.embedding kwargs")


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return EmbeddingsSettings


def _static(engine: Any) -> Any:
    from pathlib import Path

    from goclaw_embeddings.static_model import StaticEmbedder

    settings: EmbeddingsSettings = engine.plugin_settings("embeddings")
    return StaticEmbedder(Path(settings.model_dir) if settings.model_dir else None)


def _onnx(engine: Any) -> Any:
    from pathlib import Path

    from goclaw_embeddings.onnx_model import OnnxEmbedder

    settings: EmbeddingsSettings = engine.plugin_settings("embeddings")
    return OnnxEmbedder(Path(settings.model_dir) if settings.model_dir else None, settings.threads)


def _litellm(engine: Any) -> Any:
    from goclaw_embeddings.providers import LiteLLMEmbedder

    return LiteLLMEmbedder(engine.plugin_settings("embeddings"))


def _sentence_transformers(engine: Any) -> Any:
    from goclaw_embeddings.providers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(engine.plugin_settings("embeddings"))


def _none(engine: Any) -> None:
    return None


@hookimpl
def goclaw_embedding_providers() -> dict[str, Any]:
    return {
        "static": _static,
        "onnx": _onnx,
        "litellm": _litellm,
        "sentence-transformers": _sentence_transformers,
        "none": _none,
    }
