"""Contracts, not imports: who may import whom, and no import circle.

* the kernel (``goclaw/``) imports no plugin, and a library only where it needs one
  (:data:`KERNEL_LIBRARY_USES`);
* ``goclaw.contracts`` sits at the bottom: it imports nothing of goclaw but its own modules and
  ``goclaw.errors``, and no library or plugin;
* a library (``libs/goclaw_*``) imports nothing of goclaw and no plugin;
* a plugin (``plugins/goclaw_*``, and the example third-party plugins under ``tests/third_party``)
  imports ``goclaw.contracts``, the hook markers (``from goclaw import hookimpl``),
  ``goclaw.errors``, libraries, its own package and third-party packages: never another kernel
  module (``goclaw.engine``, ``goclaw.store``, ...) and never another plugin. A plugin's test
  kit (its ``testing`` package, shipped for other plugins' tests and never imported by goclaw)
  may also use goclaw's public entry points, ``from goclaw import Engine`` and ``goclaw.cli``;
* no import circle among the modules of ``goclaw/``, ``libs/`` and ``plugins/``.

The first four rules count every import, function-local ones included (a lazy import is still a
dependency). The circle rule counts the imports at module scope, ``if TYPE_CHECKING:`` blocks
included (what the interpreter and the type checker load with the module); an import inside a
function body runs later and does not make a circle here. ``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``, whose own imports count).

Disabling a plugin also leaves the prompt's truncation budget intact (the last two tests).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from goclaw.contracts.host import Host
from goclaw.engine import Engine


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    return next(p for p in here.parents if (p / "pyproject.toml").is_file())


ROOT = _repo_root()

# Kernel modules that may import a library, and which library modules: the historic data
# migrations compute the stored search terms with the tokenizer the search reads them with.
KERNEL_LIBRARY_USES: dict[str, set[str]] = {
    "goclaw.store.migrations.versions.0003_retrieval_terms": {"goclaw_search.tokenize"},
    "goclaw.store.migrations.versions.0004_episodic_terms": {"goclaw_search.tokenize"},
}

# Imports that break a rule today, each to be replaced by a contract: (importing module,
# imported module). The test fails when a new one appears *and* when a listed one is fixed.
KNOWN_VIOLATIONS: set[tuple[str, str]] = {
    # The tutorial's skill tier yields the skills plugin's records; no contract describes a
    # skill record or parses a skill folder yet.
    ("goclaw_handbook", "goclaw_skills.parsing"),
}

# What a plugin may take from the goclaw package itself and from goclaw.hookspecs.
HOOK_MARKERS = frozenset({"hookimpl"})
# What a plugin's test kit (``<plugin>.testing``) may take besides: the public entry points.
TEST_KIT_ENTRY_POINTS = frozenset({("goclaw", "Engine"), ("goclaw.cli", "main")})


# --------------------------------------------------------------------------- the module graph


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (dotted), as written (relative imports resolved)
    names: tuple[str, ...]  # for ``from target import a, b``; () for ``import target``
    module_scope: bool  # not inside a function (TYPE_CHECKING blocks are module scope)


def _modules(base: Path, pattern: str) -> dict[str, Path]:
    """``{dotted name: file}`` for every package matching ``pattern`` directly under ``base``."""
    found: dict[str, Path] = {}
    for package in sorted(base.glob(pattern)):
        if not (package / "__init__.py").is_file():
            continue
        for path in package.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]

    def visit(node: ast.AST, module_scope: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(module, alias.name, (), module_scope)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - (child.level - 1)]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                yield Import(module, target, tuple(a.name for a in child.names), module_scope)
            inner = module_scope and not isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            yield from visit(child, inner)

    yield from visit(tree, True)


def _edges(imp: Import, known: set[str]) -> set[str]:
    """The known modules an import loads: ``pkg.name`` for a submodule, else the deepest known
    package or module of the dotted path."""
    out: set[str] = set()
    candidates = [f"{imp.target}.{n}" for n in imp.names] or [imp.target]
    for name in candidates:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


def _top(name: str) -> str:
    return name.split(".")[0]


@dataclass
class Tree:
    kernel: dict[str, Path]
    libraries: dict[str, Path]
    plugins: dict[str, Path]
    examples: dict[str, Path]

    @property
    def graphed(self) -> dict[str, Path]:
        return {**self.kernel, **self.libraries, **self.plugins}

    @property
    def library_packages(self) -> set[str]:
        return {_top(m) for m in self.libraries}

    @property
    def plugin_packages(self) -> set[str]:
        return {_top(m) for m in self.plugins} | {_top(m) for m in self.examples}


def _tree(root: Path) -> Tree:
    examples: dict[str, Path] = {}
    for dist in sorted((root / "tests" / "third_party").glob("goclaw-*")):
        examples.update(_modules(dist, "goclaw_*"))
    return Tree(
        kernel=_modules(root, "goclaw"),
        libraries=_modules(root / "libs", "goclaw_*"),
        plugins=_modules(root / "plugins", "goclaw_*"),
        examples=examples,
    )


# --------------------------------------------------------------------------- the rules


def _resolved(imp: Import, known: set[str]) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` per imported name: ``pkg.name`` when that is a module of the tree (a
    submodule imported from its package), else ``pkg`` with the name; ``(target, None)`` for a
    plain ``import target``."""
    if not imp.names:
        yield imp.target, None
    for name in imp.names:
        sub = f"{imp.target}.{name}"
        yield (sub, None) if sub in known else (imp.target, name)


def _is_contract(module: str) -> bool:
    return module.split(".")[:2] == ["goclaw", "contracts"]


def _violations(tree: Tree) -> set[tuple[str, str]]:
    """``(importing module, imported module)`` for every import that breaks a rule."""
    libraries, plugins = tree.library_packages, tree.plugin_packages
    known = {*tree.graphed, *tree.examples}
    found: set[tuple[str, str]] = set()

    def check(modules: dict[str, Path], allowed: Callable[[str, str, str | None], bool]) -> None:
        for module, path in modules.items():
            for imp in _imports(module, path):
                for target, name in _resolved(imp, known):
                    if not allowed(module, target, name):
                        found.add((module, target))

    def kernel(module: str, target: str, name: str | None) -> bool:
        top = _top(target)
        if module == "goclaw.contracts" or module.startswith("goclaw.contracts."):
            return top not in libraries | plugins and (
                top != "goclaw"
                or target == "goclaw.errors"
                or target.split(".")[:2] == ["goclaw", "contracts"]
            )
        if top in libraries:
            return target in KERNEL_LIBRARY_USES.get(module, set())
        return top not in plugins

    def library(module: str, target: str, name: str | None) -> bool:
        return _top(target) != "goclaw" and _top(target) not in plugins

    def plugin(module: str, target: str, name: str | None) -> bool:
        top = _top(target)
        if top in plugins:
            return top == _top(module)
        if top != "goclaw":
            return True  # a library or a third-party package
        if target == "goclaw.errors" or _is_contract(target):
            return True
        if module.split(".")[1:2] == ["testing"] and (target, name) in TEST_KIT_ENTRY_POINTS:
            return True
        return target in ("goclaw", "goclaw.hookspecs") and name in HOOK_MARKERS

    check(tree.kernel, kernel)
    check(tree.libraries, library)
    check({**tree.plugins, **tree.examples}, plugin)
    return found


def _circles(tree: Tree) -> list[list[str]]:
    """The strongly connected components (more than one module) of the module-scope graph."""
    modules = tree.graphed
    known = set(modules)
    graph = {
        m: sorted({e for imp in _imports(m, p) if imp.module_scope for e in _edges(imp, known)} - {m})
        for m, p in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        # Tarjan's algorithm, iteratively: (node, position in its edge list).
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            edges = graph[node]
            if i < len(edges):
                work.append((node, i + 1))
                nxt = edges[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(components)


# --------------------------------------------------------------------------- the checker can fail


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_sees_every_kind_of_breach(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "goclaw/__init__.py": "",
            "goclaw/errors.py": "",
            "goclaw/engine.py": "from goclaw import hooks\n",
            "goclaw/hooks.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from goclaw.engine import Engine\n"
            ),
            "goclaw/contracts/__init__.py": "",
            "goclaw/contracts/host.py": "from goclaw.store import models\n",
            "goclaw/store/__init__.py": "",
            "goclaw/store/models.py": "def f():\n    from goclaw_memory import service\n",
            "libs/goclaw_text/__init__.py": "from goclaw.errors import x\n",
            "plugins/goclaw_memory/__init__.py": "",
            "plugins/goclaw_memory/service.py": (
                "from goclaw import hookimpl\nfrom goclaw.contracts.host import Host\n"
                "from goclaw.errors import E\nfrom goclaw_text import y\nimport numpy\n"
                "def g():\n    from goclaw.engine import Engine\n"
            ),
            "plugins/goclaw_skills/__init__.py": (
                "from goclaw import Engine\nfrom .tables import t\nfrom goclaw_memory.service import s\n"
            ),
            "plugins/goclaw_skills/tables.py": "from goclaw_skills import s\n",
        },
    )
    tree = _tree(tmp_path)
    assert _violations(tree) == {
        ("goclaw.contracts.host", "goclaw.store.models"),
        ("goclaw.store.models", "goclaw_memory.service"),
        ("goclaw_text", "goclaw.errors"),
        ("goclaw_memory.service", "goclaw.engine"),
        ("goclaw_skills", "goclaw"),
        ("goclaw_skills", "goclaw_memory.service"),
    }
    # a TYPE_CHECKING-only circle, and one through a package __init__ (relative import)
    assert _circles(tree) == [["goclaw.engine", "goclaw.hooks"], ["goclaw_skills", "goclaw_skills.tables"]]


# --------------------------------------------------------------------------- the tree


def test_imports_cross_no_boundary() -> None:
    found = _violations(_tree(ROOT))
    new = sorted(found - KNOWN_VIOLATIONS)
    fixed = sorted(KNOWN_VIOLATIONS - found)
    assert not new, f"imports across a boundary (use goclaw.contracts, a service or a hook): {new}"
    assert not fixed, f"fixed, remove from KNOWN_VIOLATIONS: {fixed}"


def test_no_import_circle() -> None:
    circles = _circles(_tree(ROOT))
    assert not circles, f"import circles (TYPE_CHECKING imports included): {circles}"


def test_the_engine_is_a_host(workspace: Path) -> None:
    """Every member of the Host Protocol exists on an open engine (mypy checks the types where
    the kernel hands the engine to a Host parameter)."""
    with Engine.open(workspace) as engine:
        assert isinstance(engine, Host)


# --------------------------------------------------------------------------- truncation


def test_truncation_holds_with_bootstrap_disabled(workspace: Path) -> None:
    """With goclaw.bootstrap off, the prompt still truncates AGENTS.md to the budget."""
    (workspace / "goclaw.toml").write_text(
        '[plugins]\ndisable = ["goclaw.bootstrap"]\n[plugins.prompt]\nmax_chars_per_file = 1000\n'
    )
    with Engine.open(workspace) as engine:
        engine.agents.create("ada")
        engine.files.set("ada", "AGENTS.md", "a" * 2500 + "\n" + "z" * 2499)
        result = engine.prompt.build_for("ada")
    [agents] = [f for f in result.files if f["name"] == "AGENTS.md"]
    assert agents["original_chars"] == 5000
    assert agents["truncated"] and agents["chars"] <= 1000
    assert "[...truncated, read AGENTS.md for full content...]" in result.prompt
    assert "a" * 701 not in result.prompt and "z" * 200 in result.prompt


def test_truncation_settings_are_the_prompts(workspace: Path) -> None:
    with Engine.open(workspace, plugins={"prompt": {"total_max_chars": 300}}) as engine:
        assert engine.plugin_settings("prompt").total_max_chars == 300
        assert not hasattr(engine.plugin_settings("bootstrap"), "total_max_chars")
