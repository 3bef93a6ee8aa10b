"""goclaw's default offline embedder: a static (model2vec-style) token-embedding model.

The bundled model (``model/``) was distilled once from all-MiniLM-L6-v2 by
``scripts/distill_embedder.py``; see ``model/NOTICE`` and ``model/LICENSE-MODEL.txt``. At run time it
needs only numpy and ``tokenizers`` (``safetensors`` only if a model directory ships its matrix as
``.safetensors`` instead of ``.npy``), never torch and never the network.

A text's embedding is the mean of the rows of its WordPiece tokens (no special tokens, unknown
tokens dropped, at most ``max_tokens`` tokens), L2-normalised. A text with no known tokens (empty,
whitespace only, ...) embeds to the zero vector. The output matches ``model2vec.StaticModel.encode``
on the same files (cosine > 0.999; model2vec computes in float16, this runtime in float32).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

    from goclaw_search.passage_sketches import PassageSketch

__all__ = ["DEFAULT_MODEL_DIR", "StaticEmbedder"]

#: The model directory bundled with goclaw.
DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parent / "model"

_BATCH = 512  # texts tokenised and pooled at a time (bounds the temporary token-vector buffer)
_PIECES_MAX = 50_000  # whitespace-separated pieces whose tokens passage_similarity remembers
_PIECE_TOKENS_MAX = 200_000  # ... and their token ids at most (~8 MB; 50,000 hashes held ~60 MB)
_JOB_PIECES_MAX = 400_000  # pieces a passage_sketcher remembers across its calls (~35 MB)
_CHUNKS_MAX = 1_024  # texts whose passage sketches it remembers (~0.5 KB each)
# ... and their token ids at most (~1 MB; a chunk of short list items has dozens of passages)
_SKETCH_TOKENS_MAX = 400_000

# Loaded models shared by every embedder of the process (each engine has its own): loading the
# bundled one costs ~0.18 s and 30 MB per engine otherwise. Keyed by the files and their
# mtime/size, so a changed file is read again; the matrix is read-only, the tokenizer's settings
# (truncation) are part of the key and it is not changed after loading.
_LOADED: dict[tuple[Any, ...], tuple[Tokenizer, NDArray[np.float32]]] = {}
_LOADED_LOCK = threading.Lock()
_LOADED_MAX = 4


class StaticEmbedder:
    """Embeds texts with a static token-embedding model; loads its files lazily on first use.

    Thread-safe: loading is guarded by a lock and ``embed`` keeps no per-call state on ``self``;
    ``passage_similarity``'s caches are dictionaries filled and cleared whole (a text or piece
    missing after a concurrent clear is sketched or tokenised again).
    """

    def __init__(self, model_dir: Path | None = None) -> None:
        self._dir: Path = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        self._lock = threading.Lock()
        self._config: dict[str, Any] | None = None
        self._tokenizer: Tokenizer | None = None
        self._matrix: NDArray[np.float32] | None = None
        self._pieces: dict[str, list[int]] = {}  # piece of text -> its token ids (passages)
        self._sketches: dict[str, PassageSketch] = {}  # text -> its passage sketch
        self._sketch_tokens = 0  # token ids in _sketches (approximate under concurrent searches)
        self._piece_tokens = 0  # token ids in _pieces (likewise)
        self._queries: dict[str, NDArray[np.float32]] = {}  # the last queries' unit embeddings

    # -- identity -------------------------------------------------------------------------------

    @property
    def provider(self) -> str:
        return "goclaw-static"

    @property
    def model(self) -> str:
        """A stable id of the model's files, e.g. ``"minilm-l6-static-256"``."""
        return str(self._conf().get("model_id") or f"{self._dir.name}-static-{self.dim}")

    @property
    def dim(self) -> int:
        return int(self._conf()["dim"])

    @property
    def model_dir(self) -> Path:
        return self._dir

    def __repr__(self) -> str:
        return f"StaticEmbedder(model_dir={str(self._dir)!r})"

    # -- loading --------------------------------------------------------------------------------

    def _conf(self) -> dict[str, Any]:
        if self._config is None:
            path = self._dir / "config.json"
            if not path.is_file():
                raise FileNotFoundError(f"static embedding model not found: no {path}")
            conf = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(conf, dict) or "dim" not in conf:
                raise ValueError(f"{path} is not a goclaw static-model config (no 'dim')")
            self._config = conf
        return self._config

    def load(self) -> None:
        """Load the tokenizer and the embedding matrix now (otherwise done by the first ``embed``)."""
        if self._matrix is not None:
            return
        with self._lock:
            if self._matrix is not None:
                return
            import numpy as np
            from tokenizers import Tokenizer

            conf = self._conf()
            files = conf.get("files") or {}
            tok_path = self._dir / str(files.get("tokenizer", "tokenizer.json"))
            emb_path = self._dir / str(files.get("embeddings", "embeddings.npy"))
            max_tokens = conf.get("max_tokens")
            key = (*_file_key(tok_path), *_file_key(emb_path), max_tokens, conf.get("dim"))
            with _LOADED_LOCK:
                shared = _LOADED.get(key)
            if shared is not None:
                self._tokenizer, self._matrix = shared
                return
            tokenizer = Tokenizer.from_file(str(tok_path))
            tokenizer.no_padding()
            if max_tokens:
                tokenizer.enable_truncation(int(max_tokens))
            else:
                tokenizer.no_truncation()

            if emb_path.suffix == ".safetensors":
                from safetensors.numpy import load_file  # optional dependency

                tensors = load_file(str(emb_path))
                raw = tensors["embeddings"] if "embeddings" in tensors else next(iter(tensors.values()))
            else:
                raw = np.load(emb_path, allow_pickle=False)
            matrix = np.ascontiguousarray(raw, dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[1] != int(conf["dim"]):
                raise ValueError(f"{emb_path}: shape {matrix.shape} does not match dim {conf['dim']}")
            if matrix.shape[0] < tokenizer.get_vocab_size():
                raise ValueError(
                    f"{emb_path}: {matrix.shape[0]} rows for a vocabulary of {tokenizer.get_vocab_size()}"
                )
            matrix.setflags(write=False)  # shared by every embedder of the process
            with _LOADED_LOCK:
                while len(_LOADED) >= _LOADED_MAX:
                    del _LOADED[next(iter(_LOADED))]
                _LOADED[key] = (tokenizer, matrix)
            self._tokenizer = tokenizer
            self._matrix = matrix

    # -- inference ------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32 array of shape ``(len(texts), dim)`` with unit-norm (or zero) rows."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a list of strings, not a single string")
        self.load()
        assert self._matrix is not None and self._tokenizer is not None
        out = np.zeros((len(texts), self._matrix.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            batch = texts[start : start + _BATCH]
            out[start : start + len(batch)] = self._embed_batch(batch)
        if len(texts) == 1:  # a search's query: its passage step scores with it next
            self._remember_query(texts[0], out[0])
        return out

    def passage_similarity(self, query: str, texts: Sequence[str]) -> NDArray[np.float32]:
        """For each text, the best cosine between ``query`` and one of its passages (list items
        and paragraphs with the headings above them: :func:`goclaw_search.passages.passages`),
        each embedded as :meth:`embed` would (without its cut at ``max_tokens``); 0 when none is
        positive. The memory reranker re-measures its best hits with it (docs/memory.md), as it
        would not with a hosted model.

        Each text's passage sketch (:meth:`passage_sketches`) is remembered (a few hundred
        bytes); the memory index keeps its chunks' sketches itself, so a search passes them to
        :func:`goclaw_search.passage_sketches.sketch_cosines` and this runs only for text
        the index has no sketch of."""
        from goclaw_search.passage_sketches import SketchBatch, sketch_cosines

        known = self._sketches
        found = {t: sk for t in texts if (sk := known.get(t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        made = dict(zip(missing, self.passage_sketches(missing), strict=True))
        found.update(made)
        batch = SketchBatch.of([found[t] for t in texts])
        tokens = sum(len(sk.tokens) for sk in made.values())
        if len(known) + len(made) > _CHUNKS_MAX or self._sketch_tokens + tokens > _SKETCH_TOKENS_MAX:
            known.clear()
            self._sketch_tokens = 0
        known.update(made)
        self._sketch_tokens += tokens
        return sketch_cosines(batch, self.token_similarity(query, batch.tokens))

    def passage_sketches(self, texts: Sequence[str]) -> list[PassageSketch]:
        """Each text's passage sketch (:class:`goclaw_search.passage_sketches.PassageSketch`:
        its segments' token ids, which segments make each passage, each passage's norm), what
        :meth:`token_similarity` scores a query against (``PassageSketchingEmbedder``)."""
        from goclaw_embeddings.static_passages import sketches

        return sketches(self, texts)

    def passage_sketcher(self) -> Callable[[Sequence[str]], list[PassageSketch]]:
        """:meth:`passage_sketches` for one job's run of calls (the memory plugin's background
        sketching, 64 texts a call): the pieces it tokenises are remembered across its calls,
        up to ``_JOB_PIECES_MAX`` (~35 MB), and dropped with it. The embedder's own cache
        (``_PIECES_MAX``) is too small for a bulk load's pieces: 100k chunks tokenised 407–441k
        pieces for 258k distinct ones, ~2.5 s of CPU."""
        from goclaw_embeddings.static_passages import sketcher

        return sketcher(self, _JOB_PIECES_MAX)

    def token_similarity(self, query: str, token_ids: Any) -> NDArray[np.float32]:
        """For each token id, its row's dot product with the query's unit embedding (0 for all
        when the query embeds to nothing): a passage's cosine is the sum over its tokens
        divided by its sketch's norm."""
        from goclaw_embeddings.static_passages import token_scores

        return token_scores(self, query, token_ids)

    token_similarity_takes_vectors = True  # query: the text or embed([text])[0] (PassageSketchingEmbedder)

    def token_rows(self) -> NDArray[np.float32]:
        """The token rows ``E_t`` (float32) :meth:`token_similarity` scores with: a search
        scores its hits' sketches against them and the query's vector in one call."""
        self.load()
        assert self._matrix is not None
        return self._matrix

    def _unit_query(self, query: str) -> NDArray[np.float32] | None:
        """The query's embedding scaled to norm 1 (a model may not normalize); None if it is 0.
        The last few texts embedded alone are remembered: a search embeds its query alone just
        before its passage step (saves ~0.1 ms of tokenizing per search)."""
        import numpy as np

        found = self._queries.get(query)
        if found is None:
            vec = self.embed([query])[0]
            norm = float(np.linalg.norm(vec))
            found = vec / np.float32(norm) if norm else vec
        return found if found.any() else None

    def _remember_query(self, text: str, vector: NDArray[np.float32]) -> None:
        import numpy as np

        norm = float(np.linalg.norm(vector))
        if len(self._queries) >= 8:
            self._queries.clear()
        self._queries[text] = vector / np.float32(norm) if norm else vector.copy()

    def _piece_lookup(self, words: AbstractSet[str]) -> dict[str, list[int]]:
        """The token ids of each of these whitespace pieces: from the piece cache, the others
        tokenised in one call and remembered within the cache's bounds (a search's few texts;
        a bulk call remembers its pieces itself: goclaw_embeddings.static_passages)."""
        found: dict[str, list[int]] = {}
        pieces = self._pieces
        for w in words:
            ids = pieces.get(w)
            if ids is not None:
                found[w] = ids
        new = list(words - found.keys())
        if new:
            ids = self._piece_ids(new)
            added = sum(map(len, ids))
            if len(pieces) + len(new) > _PIECES_MAX or self._piece_tokens + added > _PIECE_TOKENS_MAX:
                pieces.clear()
                self._piece_tokens = 0
            if len(new) <= _PIECES_MAX and added <= _PIECE_TOKENS_MAX:
                pieces.update(zip(new, ids, strict=True))
                self._piece_tokens += added
            found.update(zip(new, ids, strict=True))
        return found

    def _piece_ids(self, words: list[str]) -> list[list[int]]:
        """The token ids of each piece of text, unknown tokens dropped as :meth:`embed` does."""
        assert self._tokenizer is not None
        conf = self._conf()
        unk = conf.get("unk_token_id")
        drop = int(unk) if unk is not None and conf.get("drop_unk_tokens", True) else None
        encodings = self._tokenizer.encode_batch(words, add_special_tokens=False)
        return [[t for t in e.ids if t != drop] for e in encodings]

    def _embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        assert self._matrix is not None and self._tokenizer is not None
        conf = self._conf()
        n = len(texts)
        out = np.zeros((n, self._matrix.shape[1]), dtype=np.float32)
        if n == 0:
            return out

        # Cut absurdly long texts before tokenising (the tokenizer truncates to max_tokens anyway);
        # the same shortcut as model2vec, so long texts embed identically under both.
        max_tokens = conf.get("max_tokens")
        if max_tokens:
            cut = int(max_tokens) * int(conf.get("median_token_length") or 16)
            prepared = [t[:cut] if isinstance(t, str) else _not_str(t) for t in texts]
        else:
            prepared = [t if isinstance(t, str) else _not_str(t) for t in texts]

        tok = self._tokenizer
        encode = getattr(tok, "encode_batch_fast", None) or tok.encode_batch
        encodings = encode(prepared, add_special_tokens=False)

        id_lists = [e.ids for e in encodings]
        lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=n)
        total = int(lengths.sum())
        if total == 0:
            return out
        ids = np.fromiter(chain.from_iterable(id_lists), dtype=np.int64, count=total)
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        unk = conf.get("unk_token_id")
        if unk is not None and conf.get("drop_unk_tokens", True):
            keep = ids != int(unk)
            ids, rows = ids[keep], rows[keep]
        if ids.size == 0:
            return out

        counts = np.bincount(rows, minlength=n)
        ends = np.cumsum(counts)
        starts = ends - counts
        matrix = self._matrix
        # One small gather per text: it stays in cache, which is several times faster than gathering
        # the whole batch's token vectors at once and reducing them.
        for i, a, b in zip(range(n), starts.tolist(), ends.tolist(), strict=True):
            if b > a:
                np.sum(matrix.take(ids[a:b], axis=0), axis=0, out=out[i])
        nonempty = counts > 0
        means = out[nonempty] / counts[nonempty, None].astype(np.float32)
        if conf.get("normalize", True):
            norms = np.linalg.norm(means, axis=1, keepdims=True)
            means = np.divide(means, norms, out=np.zeros_like(means), where=norms > 0)
        out[nonempty] = means
        return out


def _file_key(path: Path) -> tuple[str, int, int]:
    try:
        st = path.stat()
    except OSError:  # missing: loading reports it
        return (str(path), -1, -1)
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def _not_str(value: object) -> str:
    raise TypeError(f"embed() needs strings, got {type(value).__name__}")
