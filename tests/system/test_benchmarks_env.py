"""The benchmarks' environment: every third-party module a benchmark imports is
installed by goclaw's own dependencies or its ``bench`` extra, and benchmarks/README.md says to
install that extra before its first command."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
# Import names that differ from their distribution's name (and may not be installed here).
ALIASES = {"Stemmer": "pystemmer", "sqlean": "sqlean-py", "sklearn": "scikit-learn", "yaml": "pyyaml"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(req: str) -> str:
    return _norm(re.split(r"[\s<>=!~;\[]", req.strip(), maxsplit=1)[0])


def _imported_modules() -> set[str]:
    local = {p.stem for p in BENCH.glob("*.py")}
    found: set[str] = set()
    for path in BENCH.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    ours = {m for m in found if m == "goclaw" or m.startswith("goclaw_")}
    return {m for m in found if m not in sys.stdlib_module_names and m not in local} - ours


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())  # scans every installed distribution: once


def _distribution(module: str) -> str:
    if module in ALIASES:
        return ALIASES[module]
    dists = _packages_distributions().get(module)
    return _norm(dists[0]) if dists else _norm(module)


def test_every_benchmark_import_is_in_the_bench_extra_or_the_core() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    core = {_requirement_name(r) for r in project["dependencies"]}
    bench: set[str] = set()
    for req in extras.get("bench", []):
        own = re.fullmatch(r"goclaw\[([^\]]+)\]", req.strip())  # our own extras, e.g. goclaw[mcp,http]
        for r in [x for e in own.group(1).split(",") for x in extras[e.strip()]] if own else [req]:
            bench.add(_requirement_name(r))
    missing = {m: _distribution(m) for m in _imported_modules() if _distribution(m) not in core | bench}
    assert not missing, f"benchmarks import modules no install of '.[bench]' provides: {missing}"
    # The peers the benchmark docs compare against are all in the extra.
    assert {"rank-bm25", "lancedb", "chromadb", "sqlite-vec", "sqlean-py", "bm25s", "pystemmer"} <= bench


def test_benchmarks_readme_installs_the_extra_before_its_first_command() -> None:
    for page in (BENCH / "README.md", ROOT / "docs" / "benchmarks.md"):
        text = page.read_text(encoding="utf-8")
        first_run = text.index("python benchmarks/")
        assert "pip install -e '.[bench]'" in text[:first_run], page
