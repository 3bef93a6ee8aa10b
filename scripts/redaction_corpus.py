"""Recall and false positives of the redactor on tests/data/secrets_corpus.jsonl.

tests/data/secrets_holdout.jsonl holds 25 more secrets of formats no detector was written or
tuned for (added after the detectors were done): its recall says how the detectors generalise.

    python scripts/redaction_corpus.py            # the current redactor (goclaw_text.redaction)
    python scripts/redaction_corpus.py --before   # also the redactor of commit 8130828, from git
    python scripts/redaction_corpus.py -v         # list every miss and false positive

A secret counts as caught when none of its parts survives; a benign line is a false
positive when the redactor changes it at all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "secrets_corpus.jsonl"
HOLDOUT = ROOT / "tests" / "data" / "secrets_holdout.jsonl"
# The last commit before goclaw_text.redaction replaced it.
BEFORE = ("8130828", "plugins/goclaw_consolidation/redact.py")


def load(path: Path = CORPUS) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(redact: Callable[[str], str], verbose: bool = False, path: Path = CORPUS) -> dict[str, object]:
    entries = load(path)
    secrets = [e for e in entries if e["label"] == "secret"]
    benign = [e for e in entries if e["label"] == "benign"]
    missed, false_pos = [], []
    start = time.perf_counter()
    for e in secrets:
        out = redact(str(e["text"]))
        if any(str(s) in out for s in e["secrets"]):  # type: ignore[attr-defined]
            missed.append(e["kind"])
    for e in benign:
        if redact(str(e["text"])) != e["text"]:
            false_pos.append(e["kind"])
    elapsed = time.perf_counter() - start
    result = {
        "secrets": len(secrets),
        "caught": len(secrets) - len(missed),
        "recall": round((len(secrets) - len(missed)) / len(secrets), 3),
        "benign": len(benign),
        "false_positives": len(false_pos),
        "fp_rate": round(len(false_pos) / len(benign), 3) if benign else None,
        "ms_per_line": round(elapsed * 1000 / len(entries), 2),
    }
    if verbose:
        result["missed"], result["false_positive_kinds"] = missed, false_pos
    return result


def old_redactor() -> Callable[[str], str]:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BEFORE[0]}:{BEFORE[1]}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("old_redact")
    sys.modules["old_redact"] = module  # dataclasses look their module up
    exec(compile(source, "old_redact.py", "exec"), module.__dict__)
    return module.redact  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", action="store_true", help="also score the redactor of commit 8130828")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    from goclaw_text.redaction import redact

    for label, path in (("corpus ", CORPUS), ("holdout", HOLDOUT)):
        if args.before:
            print(label, "before", json.dumps(score(old_redactor(), args.verbose, path)))
        print(label, "after ", json.dumps(score(redact, args.verbose, path)))


if __name__ == "__main__":
    main()
