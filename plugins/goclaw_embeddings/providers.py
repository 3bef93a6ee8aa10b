"""Embedding providers: hosted models through litellm and a local
full-transformer model through sentence-transformers. The offline default (``static``) is
:class:`~goclaw_embeddings.static_model.StaticEmbedder` itself.

Every provider has ``provider``, ``model`` and ``dim`` (recorded on each stored vector so a model
change re-embeds instead of mixing spaces) and ``embed(texts) -> float32 (n, dim)``, rows
L2-normalised. Errors are :class:`EmbeddingError` with one-line messages that name the plugin.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goclaw.errors import ConfigError, GoclawError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from goclaw_embeddings.plugin import EmbeddingsSettings


class EmbeddingError(GoclawError):
    """An embedding provider could not start or a call failed (plugin goclaw.embeddings)."""


def _normalise(matrix: Any) -> NDArray[np.float32]:
    import numpy as np

    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: NDArray[np.float32] = (arr / norms).astype(np.float32, copy=False)
    return out


def import_litellm() -> Any:
    """Import litellm without it fetching its model-cost map from the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMEmbedder:
    """Hosted embeddings (OpenAI, Voyage, Ollama, Azure, ...) through ``litellm.embedding``.

    Batched (``batch_size`` texts per call), retried with exponential backoff on transient
    errors (``max_retries``), and refusing to start with a one-line error when the model's API
    key is missing. ``dim`` comes from ``dimensions`` when configured, else from one probe call.
    """

    provider = "litellm"

    def __init__(self, settings: EmbeddingsSettings) -> None:
        if not settings.model:
            raise ConfigError(
                "embedding provider 'litellm' needs a model: set [plugins.embeddings] model "
                '(e.g. "text-embedding-3-small" or "ollama/nomic-embed-text")'
            )
        self.settings = settings
        self.model = settings.model
        self._dim: int | None = settings.dimensions
        litellm = import_litellm()
        if not settings.api_key and not settings.api_base and not settings.skip_key_check:
            try:
                env = litellm.validate_environment(model=self.model)
            except Exception:  # an unknown provider prefix: let the first call report it
                env = {"keys_in_environment": True, "missing_keys": []}
            missing = [k for k in env.get("missing_keys") or [] if not os.environ.get(k)]
            if missing:
                raise EmbeddingError(
                    f"embedding provider 'litellm' (plugin goclaw.embeddings): model {self.model} "
                    f"needs {', '.join(missing)} in the environment (not set)"
                )

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._call(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        texts = [t if t.strip() else " " for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = max(1, self.settings.batch_size)
        parts = [self._call(texts[i : i + size]) for i in range(0, len(texts), size)]
        out = np.vstack(parts)
        if self._dim is None:
            self._dim = int(out.shape[1])
        elif out.shape[1] != self._dim:
            raise EmbeddingError(
                f"embedding model {self.model} returned {out.shape[1]}-d vectors, expected {self._dim}"
            )
        return out

    def _call(self, batch: Sequence[str]) -> NDArray[np.float32]:
        litellm = import_litellm()
        kwargs: dict[str, Any] = dict(self.settings.options)
        if self.settings.dimensions:
            kwargs.setdefault("dimensions", self.settings.dimensions)
        if self.settings.api_base:
            kwargs.setdefault("api_base", self.settings.api_base)
        if self.settings.api_key:
            kwargs.setdefault("api_key", self.settings.api_key)
        delay = 0.5
        for attempt in range(self.settings.max_retries + 1):
            try:
                response = litellm.embedding(
                    model=self.model, input=list(batch), timeout=self.settings.timeout, **kwargs
                )
                break
            except Exception as exc:
                permanent = type(exc).__name__ in {
                    "AuthenticationError",
                    "BadRequestError",
                    "NotFoundError",
                    "PermissionDeniedError",
                    "UnsupportedParamsError",
                }
                if permanent or attempt == self.settings.max_retries:
                    first = " ".join(str(exc).split())[:300]
                    raise EmbeddingError(
                        f"embedding provider 'litellm': {self.model} failed after {attempt + 1} "
                        f"attempt(s): {type(exc).__name__}: {first}"
                    ) from exc
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 8.0)
        data = sorted(
            (_item(d) for d in response.data), key=lambda pair: pair[0] if pair[0] is not None else 0
        )
        if len(data) != len(batch):
            raise EmbeddingError(
                f"embedding provider 'litellm': {self.model} returned {len(data)} vectors for "
                f"{len(batch)} texts"
            )
        return _normalise([vec for _i, vec in data])


def _item(d: Any) -> tuple[int | None, list[float]]:
    if isinstance(d, dict):
        return d.get("index"), d["embedding"]
    return getattr(d, "index", None), d.embedding


class SentenceTransformerEmbedder:
    """A full transformer run locally (the ``transformers`` extra): better quality, slower."""

    provider = "sentence-transformers"

    def __init__(self, settings: EmbeddingsSettings) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbeddingError(
                "embedding provider 'sentence-transformers' is not installed: "
                "pip install 'goclaw[transformers]' (install torch==2.13.0 first for the CPU build)"
            ) from None
        self.model = settings.model or "sentence-transformers/all-MiniLM-L6-v2"
        try:
            self._st = SentenceTransformer(self.model, device=settings.device or "cpu")
        except Exception as exc:
            raise EmbeddingError(
                f"embedding provider 'sentence-transformers': cannot load {self.model}: {exc}"
            ) from exc
        dim = self._st.get_sentence_embedding_dimension()
        self.dim = int(dim) if dim else int(self._st.encode(["probe"]).shape[1])
        self.batch_size = settings.batch_size

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        vectors = self._st.encode(list(texts), batch_size=self.batch_size, show_progress_bar=False)
        return _normalise(vectors)
