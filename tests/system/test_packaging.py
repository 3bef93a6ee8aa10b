"""The built wheel works in a fresh virtual environment.

The wheel is built from this checkout and installed with ``--no-deps`` into a new venv whose
dependencies come from the test venv's site-packages through a ``.pth`` line (nothing is
downloaded; the editable install's import hook is NOT active there, so every goclaw module
that runs comes from the wheel). The example plugin is pip-installed into the same venv.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.helpers import source_copy

ROOT = Path(__file__).resolve().parents[2]


def _venv_with_test_deps(env_dir: Path) -> tuple[Path, Path, str]:
    """A new venv whose dependencies come from the test venv through a .pth line (nothing is
    downloaded); returns (venv folder, its python, its site-packages)."""
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    deps = [p for p in site.getsitepackages() if "site-packages" in p]
    Path(purelib, "zz_test_deps.pth").write_text("\n".join(deps) + "\n")
    return env_dir, py, purelib


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    src = source_copy(tmp_path_factory.mktemp("src"))
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(src)],
        check=True,
        capture_output=True,
    )
    [wheel] = dist.glob("goclaw-*.whl")
    env_dir, py, _ = _venv_with_test_deps(tmp_path_factory.mktemp("venv"))
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    subprocess.run(
        [*pip, "--no-build-isolation", str(ROOT / "tests" / "third_party" / "goclaw-hello")],
        check=True,
        capture_output=True,
    )
    return env_dir


def _run(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "GOCLAW_WORKSPACE"}}
    return subprocess.run(
        [str(env_dir / "bin" / "goclaw"), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_wheel_contains_kernel_plugins_and_templates(wheel_venv: Path, tmp_path: Path) -> None:
    py = wheel_venv / "bin" / "python"
    probe = subprocess.run(
        [
            str(py),
            "-c",
            "import goclaw, goclaw_memory, goclaw_skills, pathlib, json, importlib.util;"
            "from goclaw_embeddings.onnx_model import TOKENIZER_DIR;"
            "root = pathlib.Path(goclaw.__file__).parent;"
            "print(json.dumps({'kernel': str(root), 'memory': goclaw_memory.__file__,"
            " 'templates': sorted(p.name for p in (root.parent / 'goclaw_templates').glob('*.md')),"
            " 'onnx_tokenizer': (TOKENIZER_DIR / 'tokenizer.json').is_file(),"
            " 'plugins_importable': importlib.util.find_spec('plugins') is not None,"
            " 'test_kit': importlib.util.find_spec('goclaw_memory.testing.backend_suite') is not None}))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    info = json.loads(probe.stdout)
    assert str(wheel_venv) in info["kernel"], "goclaw must come from the wheel, not the checkout"
    assert str(wheel_venv) in info["memory"]
    assert info["plugins_importable"] is False, "'plugins' must never be an importable name"
    assert info["test_kit"], "the backend suite ships for plugin authors"
    assert info["onnx_tokenizer"], "the onnx provider's tokenizer must ship in the wheel"
    for name in ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md"):
        assert name in info["templates"]
    # An editable install must not create a real site-packages/goclaw/ folder that would
    # shadow the editable redirect (it did once, through force-included templates).
    seeded = subprocess.run(
        [
            str(wheel_venv / "bin" / "python"),
            "-c",
            "import goclaw_bootstrap.templates as t; print(t.load_template('SOUL.md')[:40])",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert seeded.returncode == 0 and seeded.stdout.strip(), seeded.stderr


def test_wheel_cli_lists_every_plugin_active(wheel_venv: Path, tmp_path: Path) -> None:
    from goclaw.plugins import builtin_plugins, discover

    result = _run(wheel_venv, "plugins", "--all", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    installed = discover().plugins
    for name in builtin_plugins():
        assert rows[name]["status"] == "active", name
        # A transport (goclaw.http, goclaw.mcp) implements no hook: its command is what it adds.
        assert rows[name]["hooks"] or installed[name].commands(), name
    assert rows["hello"]["status"] == "active"
    assert rows["hello"]["distribution"] == "goclaw-hello"


def test_wheel_cli_runs_the_kernel_tour(wheel_venv: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert _run(wheel_venv, "-w", str(ws), "init", cwd=tmp_path).returncode == 0
    created = _run(
        wheel_venv, "-w", str(ws), "agent", "create", "packaged", "--type", "predefined", cwd=tmp_path
    )
    assert created.returncode == 0, created.stderr
    listed = _run(wheel_venv, "-w", str(ws), "agent", "list", "--json", cwd=tmp_path)
    assert [a["name"] for a in json.loads(listed.stdout)] == ["packaged"]


def test_editable_install_imports_the_checkout(tmp_path: Path) -> None:
    """`pip install -e .` (what scripts/quickstart.sh does) must import goclaw from the checkout
    (a copy of it: the install builds the compiled module in place), and only the packages."""
    _env_dir, py, purelib = _venv_with_test_deps(tmp_path / "editable")
    src = source_copy(tmp_path / "checkout")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-e",
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    assert not Path(purelib, "goclaw").exists(), "a real goclaw/ folder would shadow the checkout"
    probe = subprocess.run(
        [
            str(py),
            "-c",
            "import goclaw.cli, goclaw_bootstrap.templates as t; import goclaw, importlib.util;"
            "print(goclaw.__file__); print(len(t.load_template('AGENTS.md')));"
            "print(sum(importlib.util.find_spec(n) is not None for n in ('plugins', 'libs', 'templates')))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    kernel_file, template_chars, folders = probe.stdout.split()
    assert kernel_file.startswith(str(src))
    assert int(template_chars) > 100
    assert folders == "0", "only the listed packages are importable, no 'plugins' or 'libs'"


def test_the_psycopg_pin_has_the_client_side_read_deadline() -> None:
    """pg_direct stops waiting for a server that no longer answers through
    ``Connection.wait(timeout=...)`` and ``psycopg.errors._WaitTimeout``, both new in psycopg
    3.3.6; with an older psycopg (``>=3.2`` allowed 3.2.0-3.3.5) a memory search read waited
    forever, silently (the fallback connection class keeps the server's timeout only)."""
    import inspect
    import tomllib

    import psycopg
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pin = next(Requirement(r) for r in project["dependencies"] if Requirement(r).name == "psycopg")
    assert not pin.specifier.contains("3.3.5") and pin.specifier.contains("3.3.6")
    assert "timeout" in inspect.signature(psycopg.Connection.wait).parameters
    assert hasattr(psycopg.errors, "_WaitTimeout")
