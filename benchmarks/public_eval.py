#!/usr/bin/env python3
"""Memory search on public test collections, against plain BM25 and LanceDB, in one run.

Collections (each read from ``--data DIR``, default ``$GOCLAW_EVAL_DATA``; nothing is
downloaded by this script and none of the data is in the repository):

* BEIR SciFact and BEIR NFCorpus, in BEIR's layout: ``DIR/scifact/corpus.jsonl``,
  ``queries.jsonl`` and ``qrels/test.tsv`` (likewise ``DIR/nfcorpus/``). Metric: nDCG@10 over
  the judged test queries (trec_eval's linear gains, as BEIR's evaluation). Published
  reference: bm25s (Lucene scoring, k1 1.5, b 0.75, English stopwords, Snowball stemmer) scores
  0.687 on SciFact and 0.321 on NFCorpus (the bm25s authors' benchmark table, github
  xhluca/bm25-benchmarks); the ``bm25s`` row must land within 0.01 of those for a run to count.
  A set whose folder is missing is skipped with a note.
* Cranfield and CISI, the classic small collections, in their original SMART formats: the
  document file (``.I`` id, then ``.T`` title, ``.A``, ``.B``, ``.W`` text, ``.X``), the query
  file and the judgements, in ``DIR/cranfield/`` (``cran.all.1400``, ``cran.qry``, ``cranqrel``)
  and ``DIR/cisi/`` (``CISI.ALL``, ``CISI.QRY``, ``CISI.REL``). A document is its ``.T`` title
  and ``.W`` text, a query its ``.W`` text, each field's lines joined by single spaces.
  Cranfield: 1,400 documents, 225 queries; ``cranqrel`` numbers the queries 1 to 225 in file
  order (``cran.qry``'s own ``.I`` numbers skip), and grades a pair 1 (a complete answer) to 4
  (minimum interest), as Cleverdon defined them, or -1 (one per query, undefined in the scale).
  Gain = 5 - grade (1 -> 4 ... 4 -> 1) so the most relevant documents weigh most, and -1 -> 0
  (not relevant), for every system. CISI: 1,460 documents, 112 queries of which 76 have
  judgements (binary, gain 1); the 76 are evaluated. Metric: nDCG@10 (as BEIR's), recall@10
  alongside. No bm25s figure is published for these: the ``bm25-numpy`` system (Lucene's
  BM25 written here in numpy, k1 1.5, b 0.75, on bm25s's own tokens) checks the ``bm25s`` row.
* LoCoMo (github snap-research/locomo, ``data/locomo10.json``, or the ten per-conversation
  files of ``data/locomo10.zip``): ``DIR/locomo/locomo10.json`` or ``DIR/locomo/*.json``. Ten
  long conversations; 1,982 questions name their evidence turns. Metric: recall@10 of the
  evidence turns among the first ten turns a system returns.

How the collections become memory (one workspace per collection, SQLite, default settings
unless ``--set`` changes one):

* a BEIR, Cranfield or CISI document is one memory file ``memory/<n>.md``: ``# <title>``, a
  blank line, its text;
* a LoCoMo conversation is one agent; each session one file ``memory/session-NN.md``: a heading
  ``# Session N: <date and time>``, then one paragraph per turn, ``Speaker: text`` (a shared
  photo's caption in brackets after the text). A search hit covers the turns of its line range;
  a system's turn list is its hits' turns in order, and the baselines index one document per turn
  (the same paragraph).

Systems: goclaw ``hybrid`` (the default search), ``lexical`` and ``vector`` (``channel=``), each
with ``limit=10`` as a user asks (the documents of those ten hits are scored, a repeated document
counted once), plus bm25s and LanceDB's full-text index (its defaults) over title + text, and
on request (``--systems``) ``bm25-numpy``, a second BM25 implementation to validate the first.
``--embedder`` picks goclaw's embedder (``static``: the bundled default; any other value is
written as ``[plugins.embeddings] provider``, ``--embedder-model`` as its ``model``,
``--embedder-dir`` as its ``model_dir``: another static model folder, for instance).

Getting the data. BEIR's archives are at the BEIR project's download site; copies on GitHub: the
SciFact test queries and qrels in BEIR's layout (github Kirloxious/CSI4107_Assignment2, folder
``scifact/``), the SciFact corpus as AllenAI's release (github sumithra-p-v/claimverifier,
``data/scifact.zip``, ``corpus_train.csv``); ``prepare-scifact`` turns that CSV into BEIR's
``corpus.jsonl`` (BEIR's text is the abstract's sentences joined by spaces)::

    python benchmarks/public_eval.py prepare-scifact corpus_train.csv DIR/scifact

Cranfield and CISI need no conversion: copy the three files into ``DIR/cranfield`` and
``DIR/cisi``. Complete copies on GitHub: Cranfield in github noramtboraas/information-retrieval
(``cran.all.1400``, ``cran.qry``, ``cranqrel``, with CRLF line ends, read as they are), CISI in
github Shakiba-Alipour/Information-Retrieval-on-CISI (``CISI.ALL``, ``CISI.QRY``, ``CISI.REL``).
Then::

    nice -n 10 python benchmarks/public_eval.py --data DIR --out benchmarks/results/DATE-public-eval.md

Settings: ``--set KEY=VALUE`` changes a ``[plugins.memory]`` setting for every goclaw row;
``--variant LABEL:KEY=VALUE,KEY=VALUE`` (repeatable) adds a ``goclaw hybrid LABEL`` row searched
with those settings on the same index, so a sweep embeds each collection once. ``--work DIR``
keeps the workspaces: a rerun finds every file unchanged and indexes nothing (the ``onnx``
embedder needs ~20 CPU-minutes for SciFact's 14,137 chunks, once).

Needs the ``bench`` extra (bm25s, PyStemmer, LanceDB).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

K = 10
PUBLISHED_BM25S = {"scifact": 0.687, "nfcorpus": 0.321}
BEIR_SETS = ("scifact", "nfcorpus")
SMART_FILES = {
    "cranfield": ("cran.all.1400", "cran.qry", "cranqrel"),
    "cisi": ("CISI.ALL", "CISI.QRY", "CISI.REL"),
}


# --------------------------------------------------------------------------- data


@dataclass
class Collection:
    """One evaluation set: documents (id -> (title, text)), queries and judgements."""

    name: str
    metric: str  # "ndcg@10" | "recall@10"
    docs: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    # LoCoMo: the conversation each query belongs to, and each conversation's sessions
    # (file name -> heading, [(turn id, paragraph)]).
    group_of: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, dict[str, tuple[str, list[tuple[str, str]]]]] = field(default_factory=dict)


def load_beir(folder: Path) -> Collection:
    docs: dict[str, tuple[str, str]] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                docs[str(d["_id"])] = (d.get("title") or "", d.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as f:
        for line in f:
            row = line.split()  # BEIR's "query-id corpus-id score", or TREC's with an iteration
            if len(row) == 4:
                row = [row[0], row[2], row[3]]
            if len(row) != 3 or not row[2].lstrip("-").isdigit():
                continue  # the header
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                if str(q["_id"]) in qrels:
                    queries[str(q["_id"])] = q["text"]
    return Collection(folder.name, "ndcg@10", docs, queries, qrels)


def _locomo_samples(folder: Path) -> list[dict[str, Any]]:
    single = folder / "locomo10.json"
    if single.is_file():
        found = json.loads(single.read_text(encoding="utf-8"))
        return [
            s["conversation"] | {"qa": s["qa"], "_id": str(s.get("sample_id", i))}
            for i, s in enumerate(found)
        ]
    out = []
    for p in sorted(folder.glob("*.json")):
        d = json.loads(p.read_text(encoding="utf-8"))
        out.append(d | {"_id": p.stem})
    return out


def load_locomo(folder: Path) -> Collection:
    docs: dict[str, tuple[str, str]] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    group_of: dict[str, str] = {}
    sessions: dict[str, dict[str, tuple[str, list[tuple[str, str]]]]] = {}
    for sample in _locomo_samples(folder):
        conv = "c" + re.sub(r"[^A-Za-z0-9]", "", sample["_id"])
        files: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        n = 1
        while f"session_{n}" in sample:
            turns = []
            for t in sample[f"session_{n}"]:
                text = " ".join(str(t.get("text", "")).split())
                if t.get("blip_caption"):
                    text += f" [shares a photo: {t['blip_caption']}]"
                turn = f"{conv}:{t['dia_id']}"
                para = f"{t['speaker']}: {text}"
                turns.append((turn, para))
                docs[turn] = ("", para)
            heading = f"Session {n}: {sample.get(f'session_{n}_date_time', '')}".rstrip(": ")
            files[f"session-{n:02d}.md"] = (heading, turns)
            n += 1
        sessions[conv] = files
        for i, qa in enumerate(sample["qa"]):
            evidence = [e.strip() for e in qa.get("evidence") or [] for e in e.split(";") if e.strip()]
            if not evidence:
                continue
            qid = f"{conv}-q{i}"
            queries[qid] = qa["question"]
            qrels[qid] = {f"{conv}:{e}": 1 for e in evidence}
            group_of[qid] = conv
    return Collection("locomo", "recall@10", docs, queries, qrels, group_of, sessions)


def smart_records(text: str) -> list[tuple[str, dict[str, str]]]:
    """The SMART format of Cranfield and CISI: ``.I <id>`` opens a record, a line holding only a
    field marker (``.T``, ``.W``, ...) opens a field; returns (id, {marker letter: text}), each
    field's lines joined by single spaces (a repeated marker continues its field)."""
    records: list[tuple[str, dict[str, str]]] = []
    at = ""
    for line in text.splitlines():
        m = re.fullmatch(r"\.([A-Z])(?:\s+(\S+))?\s*", line)
        if m and m.group(1) == "I" and m.group(2):
            records.append((m.group(2), {}))
            at = ""
        elif m and not m.group(2):
            at = m.group(1)
        elif records and at:
            fields = records[-1][1]
            fields[at] = " ".join((fields.get(at, "") + " " + line).split())
    return records


def load_smart(folder: Path) -> Collection:
    """Cranfield or CISI from their original files (the docstring says what is read and how)."""
    read = [(folder / f).read_text(encoding="utf-8", errors="replace") for f in SMART_FILES[folder.name]]
    docs = {i: (f.get("T", ""), f.get("W", "")) for i, f in smart_records(read[0])}
    queries = {i: f.get("W", "") for i, f in smart_records(read[1])}
    cran = folder.name == "cranfield"
    if cran:  # cranqrel numbers the queries in file order
        queries = {str(n): text for n, text in enumerate(queries.values(), start=1)}
    qrels: dict[str, dict[str, int]] = {}
    for line in read[2].splitlines():
        row = line.split()
        if len(row) >= 3:
            grade = int(float(row[2]))
            gain = (5 - grade if 1 <= grade <= 4 else 0) if cran else 1
            qrels.setdefault(str(int(row[0])), {})[str(int(row[1]))] = gain
    queries = {q: text for q, text in queries.items() if any(qrels.get(q, {}).values())}
    return Collection(folder.name, "ndcg@10", docs, queries, qrels)


def prepare_scifact(csv_path: Path, out: Path) -> int:
    """AllenAI's SciFact corpus CSV (``doc_id,title,abstract,structured``; the abstract a list
    of sentences in numpy's print form) -> BEIR's ``corpus.jsonl``."""
    csv.field_size_limit(1 << 30)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with csv_path.open(encoding="utf-8") as f, (out / "corpus.jsonl").open("w", encoding="utf-8") as w:
        for row in csv.DictReader(f):
            sentences = [
                ast.literal_eval(tok.string)
                for tok in tokenize.generate_tokens(io.StringIO(row["abstract"]).readline)
                if tok.type == tokenize.STRING
            ]
            w.write(
                json.dumps({"_id": row["doc_id"], "title": row["title"], "text": " ".join(sentences)}) + "\n"
            )
            n += 1
    return n


# --------------------------------------------------------------------------- metrics


def ndcg_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = K) -> float:
    """trec_eval's nDCG@k (linear gains): the ideal ranking from every judged document."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = K) -> float:
    want = {d for d, r in rels.items() if r > 0}
    return len(want & set(ranked[:k])) / len(want) if want else 0.0


def score(c: Collection, ranked: dict[str, list[str]], fn: Callable[..., float] | None = None) -> float:
    fn = fn or (ndcg_at_k if c.metric == "ndcg@10" else recall_at_k)
    return sum(fn(ranked.get(q, []), c.qrels[q]) for q in c.queries) / len(c.queries)


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# --------------------------------------------------------------------------- baselines


def bm25s_rank(c: Collection) -> Callable[[str, str], list[str]]:
    """bm25s as its authors benchmark it: Lucene, k1 1.5, b 0.75, English stopwords, Snowball."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    by_group: dict[str, tuple[Any, list[str]]] = {}
    for group, ids in _groups(c).items():
        tok = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=stemmer)
        corpus = tok.tokenize(_texts(c, ids), update_vocab=True, return_as="tuple", show_progress=False)
        model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        model.index(corpus, show_progress=False)
        by_group[group] = (model, ids, tok)  # type: ignore[assignment]

    def rank(qid: str, text: str) -> list[str]:
        model, ids, tok = by_group[c.group_of.get(qid, "")]  # type: ignore[misc]
        q = tok.tokenize([text], update_vocab=False, return_as="ids", show_progress=False)
        if not q or not q[0]:
            return []
        res, _ = model.retrieve(q, k=min(K, len(ids)), show_progress=False)
        return [ids[i] for i in res[0]]

    return rank


def bm25_numpy_rank(c: Collection, k1: float = 1.5, b: float = 0.75) -> Callable[[str, str], list[str]]:
    """A second BM25, to check the ``bm25s`` row: Lucene's formula (idf ln(1 + (N - df + 0.5) /
    (df + 0.5)), tf / (tf + k1 (1 - b + b dl / avgdl))) summed over the query's tokens, written
    here in numpy on the tokens of bm25s's own tokenizer (same stopwords, same stemmer)."""
    import bm25s
    import numpy as np
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    by_group: dict[str, Any] = {}
    for group, ids in _groups(c).items():
        tok = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=stemmer)
        docs = tok.tokenize(_texts(c, ids), update_vocab=True, return_as="ids", show_progress=False)
        dl = np.array([len(d) for d in docs], np.float64)
        norm = k1 * (1 - b + b * dl / max(dl.mean(), 1e-9))
        postings: dict[int, dict[int, int]] = {}
        for n, d in enumerate(docs):
            for t in d:
                postings.setdefault(t, {}).setdefault(n, 0)
                postings[t][n] += 1
        arrays = {t: (np.array(list(p)), np.array(list(p.values()), np.float64)) for t, p in postings.items()}
        by_group[group] = (tok, ids, arrays, norm)

    def rank(qid: str, text: str) -> list[str]:
        tok, ids, arrays, norm = by_group[c.group_of.get(qid, "")]
        scores = np.zeros(len(ids))
        for t in tok.tokenize([text], update_vocab=False, return_as="ids", show_progress=False)[0]:
            if t not in arrays:  # the empty token bm25s gives a query of unknown words
                continue
            where, tf = arrays[t]
            idf = math.log(1 + (len(ids) - len(where) + 0.5) / (len(where) + 0.5))
            scores[where] += idf * tf / (tf + norm[where])
        top = np.argsort(-scores, kind="stable")[:K]
        return [ids[i] for i in top if scores[i] > 0]

    return rank


def _texts(c: Collection, ids: Sequence[str]) -> list[str]:
    """What the baselines index of each document: title and text."""
    return [f"{c.docs[i][0]} {c.docs[i][1]}".strip() for i in ids]


def lance_rank(c: Collection, folder: Path) -> Callable[[str, str], list[str]]:
    """LanceDB's full-text index with its defaults, one table per group."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(folder))
    tables: dict[str, tuple[Any, list[str]]] = {}
    for group, ids in _groups(c).items():
        data = pa.table(
            {
                "n": pa.array(list(range(len(ids))), pa.int64()),
                "text": pa.array(_texts(c, ids)),
            }
        )
        t = db.create_table(f"t{group or 'all'}", data, mode="overwrite")
        t.create_fts_index("text", replace=True)
        tables[group] = (t, ids)

    def rank(qid: str, text: str) -> list[str]:
        t, ids = tables[c.group_of.get(qid, "")]
        clean = re.sub(r"[^\w\s]", " ", text).strip()  # the query parser's operators
        if not clean:
            return []
        rows = t.search(clean, query_type="fts").limit(K).select(["n"]).to_list()
        return [ids[int(r["n"])] for r in rows]

    return rank


def _groups(c: Collection) -> dict[str, list[str]]:
    if not c.sessions:
        return {"": list(c.docs)}
    return {
        conv: [t for _h, turns in files.values() for t, _p in turns] for conv, files in c.sessions.items()
    }


# --------------------------------------------------------------------------- goclaw


def write_memory(c: Collection, agent_dir: Path, group: str) -> dict[str, dict[int, str]]:
    """The collection's documents as memory files; returns path -> {line: doc or turn id}."""
    mem = agent_dir / "memory"
    shutil.rmtree(mem, ignore_errors=True)
    mem.mkdir(parents=True)
    lines_of: dict[str, dict[int, str]] = {}
    if not c.sessions:
        for n, (doc, (title, text)) in enumerate(c.docs.items()):
            path = f"memory/{n}.md"
            body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
            (agent_dir / path).write_text(body, encoding="utf-8")
            lines_of[path] = {i + 1: doc for i in range(body.count("\n") + 1)}
        return lines_of
    for name, (heading, turns) in c.sessions[group].items():
        path = f"memory/{name}"
        out = [f"# {heading}", ""]
        at: dict[int, str] = {}
        for turn, para in turns:
            at[len(out) + 1] = turn
            out += [para, ""]
        (agent_dir / path).write_text("\n".join(out), encoding="utf-8")
        lines_of[path] = at
    return lines_of


class Goclaw:
    """One workspace per collection (an agent per LoCoMo conversation), indexed by goclaw."""

    def __init__(
        self,
        c: Collection,
        ws: Path,
        embedder: str,
        model: str | None,
        overrides: dict[str, Any],
        model_dir: Path | None = None,
    ) -> None:
        from goclaw.engine import Engine

        ws.mkdir(parents=True, exist_ok=True)
        if embedder != "static" or model or model_dir:
            lines = ["[plugins.embeddings]", f'provider = "{embedder}"']
            if model:
                lines.append(f'model = "{model}"')
            if model_dir:
                lines.append(f"model_dir = {json.dumps(str(Path(model_dir).resolve()))}")
            (ws / "goclaw.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.c = c
        self.engine = Engine.open(ws)
        self.settings = self.engine.plugin_settings("memory")
        self.base = self.settings.model_copy()
        self.configure(overrides)
        self.lines: dict[str, dict[str, dict[int, str]]] = {}
        self.index_s = 0.0
        known = {a.name for a in self.engine.agents.list()}
        for group in _groups(c):
            agent = group or "eval"
            if agent not in known:
                self.engine.agents.create(agent)
            agent_dir = Path(self.engine.agent_dir(self.engine.agents.get(agent)))
            self.lines[agent] = write_memory(c, agent_dir, group)
            t = time.perf_counter()
            self.engine.memory.index(agent)
            self.index_s += time.perf_counter() - t
        self.distinct: dict[str, list[int]] = {}

    def configure(self, overrides: dict[str, Any]) -> None:
        """The memory settings as opened, then ``overrides`` (a variant starts from the same
        base); only the overridden ones count as set by the user, as in a ``goclaw.toml``."""
        for key in type(self.base).model_fields:
            setattr(self.settings, key, getattr(self.base, key))
        for key, value in overrides.items():
            setattr(self.settings, key, value)
        self.settings.__pydantic_fields_set__ = set(self.base.model_fields_set) | set(overrides)

    def rank(self, channel: str, key: str | None = None) -> Callable[[str, str], list[str]]:
        def rank(qid: str, text: str) -> list[str]:
            agent = self.c.group_of.get(qid) or "eval"
            hits = self.engine.memory.search_response(
                text, agent, limit=K, channel=channel, include_extra=False
            ).hits
            at = self.lines[agent]
            found: list[str] = []
            for h in hits:
                lines = at.get(h.path, {})
                if self.c.sessions:  # the turns of the hit's line range, in order
                    found += [lines[n] for n in range(h.start_line, h.end_line + 1) if n in lines]
                elif h.start_line in lines:
                    found.append(lines[h.start_line])
            # distinct documents among the hits (LoCoMo: the number of hits)
            self.distinct.setdefault(key or channel, []).append(
                len(hits) if self.c.sessions else len({h.path for h in hits})
            )
            return unique(found)

        return rank

    def close(self) -> None:
        self.engine.close()


# --------------------------------------------------------------------------- run


def run_set(
    c: Collection,
    work: Path,
    systems: Sequence[str],
    embedder: str,
    model: str | None,
    overrides: dict[str, Any],
    variants: Sequence[tuple[str, dict[str, Any]]] = (),
    model_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Every system on ``c``; each variant (label, settings over ``overrides``) adds a
    ``goclaw hybrid <label>`` row searched on the same index."""
    rows: list[dict[str, Any]] = []
    goc: Goclaw | None = None
    todo = list(systems) + [f"goclaw hybrid {label}" for label, _o in variants]
    extra = dict(variants)
    for system in todo:
        t = time.perf_counter()
        if system.startswith("goclaw"):
            if goc is None:
                goc = Goclaw(c, work / f"ws-{c.name}", embedder, model, overrides, model_dir)
            label = system.split(maxsplit=2)[2] if system.count(" ") > 1 else None
            goc.configure(overrides | extra[label] if label is not None else overrides)
            rank = goc.rank(system.split()[1], system)
        elif system == "bm25s":
            rank = bm25s_rank(c)
        elif system == "bm25-numpy":
            rank = bm25_numpy_rank(c)
        elif system == "lancedb-fts":
            rank = lance_rank(c, work / f"lance-{c.name}")
        else:
            raise SystemExit(f"unknown system {system!r}")
        ranked = {q: rank(q, text) for q, text in c.queries.items()}
        row: dict[str, Any] = {"set": c.name, "system": system, c.metric: round(score(c, ranked), 4)}
        if c.metric != "recall@10":
            row["recall@10"] = round(score(c, ranked, recall_at_k), 4)
        row["seconds"] = round(time.perf_counter() - t, 1)
        if goc is not None and system.startswith("goclaw"):
            d = goc.distinct.get(system, [])
            row["distinct@10"] = round(sum(d) / len(d), 2) if d else None
        if system == "bm25s" and c.name in PUBLISHED_BM25S:
            row["published"] = PUBLISHED_BM25S[c.name]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if goc is not None:
        goc.close()
    return rows


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    sets = unique(r["set"] for r in rows)
    systems = unique(r["system"] for r in rows)
    by = {(r["set"], r["system"]): r for r in rows}
    metric = {r["set"]: ("nDCG@10 (recall@10)" if "ndcg@10" in r else "recall@10") for r in rows}
    head = "| system | " + " | ".join(f"{s} {metric[s]}" for s in sets) + " |"
    out = [
        f"# Public collections, {date.today().isoformat()}",
        "",
        f"Command: `python benchmarks/public_eval.py {' '.join(sys.argv[1:])}`",
        f"Embedder: {args.embedder}{' ' + args.embedder_model if args.embedder_model else ''}; "
        f"settings changed: {args.set or 'none'}",
        "",
        head,
        "|---|" + "---:|" * len(sets),
    ]
    for system in systems:
        cells = []
        for s in sets:
            r = by.get((s, system))
            if r is None:
                cells.append("")
            elif "ndcg@10" in r:
                cells.append(f"{r['ndcg@10']:.4f} ({r['recall@10']:.4f})")
            else:
                cells.append(f"{r['recall@10']:.4f}")
        out.append(f"| {system} | " + " | ".join(cells) + " |")
    out += [
        "",
        "| set | bm25s | published bm25s | goclaw distinct results in 10 hits (hybrid / lexical / vector) |",
    ]
    out.append("|---|---:|---:|---|")
    for s in sets:
        b = by.get((s, "bm25s"), {})
        d = " / ".join(
            str(by.get((s, f"goclaw {ch}"), {}).get("distinct@10", ""))
            for ch in ("hybrid", "lexical", "vector")
        )
        out.append(f"| {s} | {b.get('ndcg@10', b.get('recall@10', ''))} | {b.get('published', '')} | {d} |")
    return "\n".join(out) + "\n"


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["prepare-scifact"]:
        if len(argv) != 3:
            print("usage: public_eval.py prepare-scifact CORPUS_CSV OUT_DIR", file=sys.stderr)
            return 2
        print(f"{prepare_scifact(Path(argv[1]), Path(argv[2]))} documents")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=os.environ.get("GOCLAW_EVAL_DATA"))
    ap.add_argument("--sets", default="scifact,nfcorpus,cranfield,cisi,locomo")
    ap.add_argument(
        "--systems",
        default="goclaw hybrid,goclaw lexical,goclaw vector,bm25s,lancedb-fts",
        help="comma-separated",
    )
    ap.add_argument("--embedder", default="static")
    ap.add_argument("--embedder-model", default=None)
    ap.add_argument(
        "--embedder-dir", type=Path, default=None, help="the embedder's model folder (its model_dir setting)"
    )
    ap.add_argument(
        "--set", action="append", default=[], help="memory setting for goclaw, KEY=VALUE (repeatable)"
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="LABEL:KEY=VALUE,KEY=VALUE: one more goclaw hybrid row with these settings, on the same index",
    )
    ap.add_argument(
        "--work", type=Path, default=None, help="keep the workspaces here (a rerun reuses their index)"
    )
    ap.add_argument("--queries", type=int, default=0, help="only the first N queries of each set (0: all)")
    ap.add_argument("--out", type=Path, default=None, help="write the dated Markdown table here")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.data is None or not Path(args.data).is_dir():
        print(
            "error: give the data folder with --data or GOCLAW_EVAL_DATA (see the docstring)", file=sys.stderr
        )
        return 2
    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"error: --set {item!r}: use KEY=VALUE", file=sys.stderr)
            return 2
        overrides[key] = _value(value)
    variants: list[tuple[str, dict[str, Any]]] = []
    for item in args.variant:
        label, sep, body = item.partition(":")
        pairs = [p.partition("=") for p in body.split(",") if p.strip()]
        if not sep or not label.strip() or any(not eq for _k, eq, _v in pairs):
            print(f"error: --variant {item!r}: use LABEL:KEY=VALUE,KEY=VALUE", file=sys.stderr)
            return 2
        variants.append((label.strip(), {k.strip(): _value(v.strip()) for k, _eq, v in pairs}))
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="goclaw-public-eval-") as scratch:
        tmp = str(args.work) if args.work else scratch
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            folder = Path(args.data) / name
            if not folder.is_dir():
                print(f"note: {folder} is missing; {name} skipped", file=sys.stderr)
                continue
            load = load_locomo if name == "locomo" else load_smart if name in SMART_FILES else load_beir
            c = load(folder)
            if args.queries:
                c.queries = dict(list(c.queries.items())[: args.queries])
            print(f"{name}: {len(c.docs):,} documents, {len(c.queries):,} queries", flush=True)
            model, model_dir = args.embedder_model, args.embedder_dir
            rows += run_set(c, Path(tmp), systems, args.embedder, model, overrides, variants, model_dir)
    if not rows:
        print("error: no collection found under the data folder", file=sys.stderr)
        return 2
    text = table(rows, args)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
