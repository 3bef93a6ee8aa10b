"""Each plugin owns its commands, declared and imported only when they run."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import click
import pytest

from goclaw.cli.lazy import LazyGroup, block_reason
from goclaw.cli.registry import KERNEL_COMMANDS
from goclaw.config import PluginsConfig
from goclaw.contracts.commands import CommandSpec
from goclaw.errors import FeatureUnavailableError, PluginError
from goclaw.plugins import builtin_plugins, discover
from tests.helpers import run_cli
from tests.plugin_install import on_sys_path, pip_install_target

INSTALLED = discover()
BUILTINS = builtin_plugins()
# Each built-in's commands, as its manifest declares them, with the plugin filled in.
PLUGIN_COMMANDS = tuple(
    CommandSpec(s.name, s.help, s.target, plugin=name, startup=s.startup)
    for name in BUILTINS
    for s in INSTALLED.plugins[name].commands()
)
ALL = (*KERNEL_COMMANDS, *PLUGIN_COMMANDS)


def _first_paragraph(command: click.Command) -> str:
    return " ".join((command.help or "").split("\n\n")[0].split())


@pytest.mark.parametrize("spec", ALL, ids=[s.name for s in ALL])
def test_each_declaration_matches_its_command(spec: CommandSpec) -> None:
    module, _, attribute = spec.target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    assert command.name == spec.name.split()[-1]  # "workers prune": a kernel group's subcommand
    assert " ".join(spec.help.split()) == _first_paragraph(command), "the --help line drifted"
    if spec.plugin:  # a feature's commands live in its plugin's package
        assert module.split(".")[0] == BUILTINS[spec.plugin].split(".")[0]
    else:
        assert module.startswith("goclaw.cli.")


def test_feature_commands_left_the_kernel() -> None:
    owned = {s.name: s.plugin for s in PLUGIN_COMMANDS}
    assert owned["memory"] == owned["session"] == owned["eval"] == "goclaw.memory"
    assert owned["skills"] == "goclaw.skills"
    assert owned["kg"] == "goclaw.kg" and owned["channel-memory"] == "goclaw.channel_memory"
    assert owned["workers prune"] == "goclaw.episodic" and owned["agent summon"] == "goclaw.bootstrap"
    assert owned["serve"] == "goclaw.http" and owned["mcp"] == "goclaw.mcp"  # transports are plugins
    root = Path(importlib.import_module("goclaw.cli").__file__ or "").parent
    moved = {"memory.py", "memory_write.py", "memory_quality.py", "session.py", "skills.py"}
    moved |= {"files.py", "prompt.py", "kg.py", "channel_memory.py", "serve.py", "mcp.py"}
    assert not moved & {p.name for p in root.iterdir()}
    assert {s.name for s in KERNEL_COMMANDS} == {
        "agent",
        "team",
        "forget",
        "init",
        "plugins",
        "workers",
    }  # the kernel's own mechanisms; no feature


def _run_help_and_list_modules(*args: str) -> set[str]:
    code = (
        "import sys, io, contextlib; from goclaw.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main([*sys.argv[1:], '--help'])\n"
        "    except SystemExit: pass\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_help_imports_no_command_module_and_no_plugin() -> None:
    """``--help`` reads the plugins' manifests (and their packages' ``__init__``), nothing else
    of them: no plugin module, no command module, nothing heavy, not even pluggy."""
    modules = _run_help_and_list_modules()
    command_modules = {s.target.split(":")[0] for s in ALL}
    assert not modules & command_modules
    manifests = {ep.value for ep in metadata.entry_points(group="goclaw.manifests")}
    assert {m for m in modules if m.startswith("goclaw_")} <= manifests | {m.split(".")[0] for m in manifests}
    assert not modules & set(BUILTINS.values())
    heavy = {"litellm", "numpy", "sqlalchemy", "sqlmodel", "watchdog", "bm25s", "pydantic", "rich"}
    assert not modules & heavy
    assert "pluggy" not in modules and "goclaw.hookspecs" not in modules


def test_one_command_imports_only_its_own_module() -> None:
    modules = _run_help_and_list_modules("skills")
    assert "goclaw_skills.cli" in modules
    assert not {"goclaw_memory.cli.memory", "goclaw_kg.cli", "goclaw_prompt.cli"} & modules


# --------------------------------------------------------------------------- a disabled feature


@pytest.mark.parametrize(
    ("config", "argv", "message"),
    [
        (
            'disable = ["goclaw.memory"]',
            ["memory", "search", "x", "--json"],
            "error: 'goclaw memory' is provided by plugin goclaw.memory, which is disabled in goclaw.toml",
        ),
        (
            'disable = ["goclaw.memory"]',
            ["session", "--help"],
            "error: 'goclaw session' is provided by plugin goclaw.memory, which is disabled in goclaw.toml",
        ),
        (
            'disable = ["goclaw.consolidation"]',  # the old name of episodic + kg + channel memory
            ["kg", "entities", "--agent", "ada"],
            "error: 'goclaw kg' is provided by plugin goclaw.kg, which is disabled in goclaw.toml",
        ),
        (
            'disable = ["goclaw.kg"]',
            ["kg", "entities", "--agent", "ada"],
            "error: 'goclaw kg' is provided by plugin goclaw.kg, which is disabled in goclaw.toml",
        ),
        (
            'disable = ["goclaw.channel_memory"]',
            ["channel-memory", "list"],
            "error: 'goclaw channel-memory' is provided by plugin goclaw.channel_memory, "
            "which is disabled in goclaw.toml",
        ),
        (
            'only = ["goclaw.memory"]',
            ["skills", "list"],
            "error: 'goclaw skills' is provided by plugin goclaw.skills, which plugins.only leaves out "
            "in goclaw.toml",
        ),
    ],
)
def test_disabled_feature_command_says_so_in_one_line(
    workspace: Path, config: str, argv: list[str], message: str
) -> None:
    (workspace / "goclaw.toml").write_text(f"[plugins]\n{config}\n")
    result = run_cli(argv, workspace=workspace)
    assert result.code == FeatureUnavailableError.exit_code
    assert result.err == message + "\n"
    assert result.out == ""


OWNERS = sorted({s.plugin for s in PLUGIN_COMMANDS} - INSTALLED.essential)


@pytest.mark.parametrize("owner", OWNERS)
def test_disabling_a_feature_touches_only_its_own_commands(workspace: Path, owner: str) -> None:
    """Meta-test: for every built-in that owns commands, disabled, each of its commands answers
    in one line and every other command still loads (its --help works)."""
    (workspace / "goclaw.toml").write_text(f'[plugins]\ndisable = ["{owner}"]\n')
    for spec in ALL:
        result = run_cli([spec.name, "--help"], workspace=workspace)
        if spec.plugin == owner:
            assert result.code == FeatureUnavailableError.exit_code, (spec.name, result)
            assert result.err == (
                f"error: 'goclaw {spec.name}' is provided by plugin {owner}, "
                "which is disabled in goclaw.toml\n"
            )
        else:
            assert (result.code, result.err) == (0, ""), (spec.name, result)
            assert result.out.startswith(f"Usage: goclaw {spec.name} ")


def test_disabled_by_environment_names_the_variable(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOCLAW_PLUGINS__DISABLE", '["goclaw.skills"]')
    result = run_cli(["skills", "list"], workspace=workspace)
    assert result.err == (
        "error: 'goclaw skills' is provided by plugin goclaw.skills, "
        "which is disabled by GOCLAW_PLUGINS__DISABLE\n"
    )
    assert result.code != 0


@pytest.mark.parametrize(
    ("variable", "value"),
    [("goclaw_plugins__disable", '["goclaw.skills"]'), ("GOCLAW_PLUGINS", '{"disable": ["goclaw.skills"]}')],
)
def test_disabled_by_any_spelling_of_the_environment_names_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    (workspace / "goclaw.toml").write_text("[plugins]\nstrict = false\n")
    monkeypatch.setenv(variable, value)
    result = run_cli(["skills", "list"], workspace=workspace)
    assert result.err.endswith(f"which is disabled by {variable}\n") and result.code != 0


def test_help_lists_no_command_of_a_disabled_feature(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.skills", "goclaw.kg"]\n')
    listed = run_cli(["--help"], workspace=workspace).out
    names = {line.split()[0] for line in listed.split("Commands:")[1].splitlines() if line.strip()}
    assert {"memory", "agent", "init"} <= names and not names & {"skills", "kg"}
    plain = workspace.parent / "plain"
    plain.mkdir()
    assert "kg" in run_cli(["--help"], workspace=plain).out.split("Commands:")[1]
    result = run_cli(["kg", "--help"], workspace=workspace)
    assert "provided by plugin goclaw.kg, which is disabled in goclaw.toml" in result.err


def test_disabled_feature_is_not_imported(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.memory"]\n')
    code = (
        "import sys; from goclaw.cli import main\n"
        "try: main(['--workspace', sys.argv[1], 'memory', 'index'])\n"
        "except SystemExit as e: print(e.code)\n"
        "print(sorted(m for m in sys.modules if m.startswith('goclaw_memory')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, timeout=60
    )
    imported = str(["goclaw_memory", "goclaw_memory.manifest"])  # its declarations, no code
    assert out.stdout.split("\n")[:2] == [str(FeatureUnavailableError.exit_code), imported], out
    assert out.stderr.count("\n") == 1 and "goclaw.memory, which is disabled" in out.stderr


def test_other_commands_still_work_with_a_feature_disabled(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["goclaw.memory", "goclaw.skills"]\n')
    assert run_cli(["agent", "create", "ada"], workspace=workspace).code == 0
    result = run_cli(["prompt", "--agent", "ada", "--json"], workspace=workspace)
    assert result.code == 0, result.err
    assert json.loads(result.out)["prompt"]


def test_broken_config_leaves_the_error_to_the_command(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text("[plugins\n")
    result = run_cli(["memory", "--help"], workspace=workspace)
    assert result.code == 0 and "index" in result.out
    result = run_cli(["memory", "index"], workspace=workspace)
    assert result.code != 0 and result.err.startswith("error: ") and "not valid TOML" in result.err


# --------------------------------------------------------------------------- the mechanism


@click.command("memory")
def _replacement_memory() -> None:
    """A replacement memory command."""
    click.echo("replacement")


MEMORY = CommandSpec("memory", "Memory.", "goclaw_memory.cli.memory:memory_group")


def _group() -> LazyGroup:
    return LazyGroup("root", specs=[CommandSpec("plugins", "Plugins.", "goclaw.cli.plugins:plugins_cmd")])


def _reason(config: PluginsConfig) -> Any:
    return lambda plugin: block_reason(config, plugin, INSTALLED)


def _command(group: LazyGroup, name: str) -> click.Command | None:
    return group.get_command(click.Context(group), name)


def test_a_plugin_cannot_take_an_active_builtins_or_the_kernels_name(tmp_path: Path) -> None:
    group = _group()
    mine = CommandSpec("memory", "Mine.", f"{__name__}:_replacement_memory")
    kernel = CommandSpec("plugins", "Mine.", f"{__name__}:_replacement_memory")
    declared = [("goclaw.memory", MEMORY), ("mine", mine), ("other", kernel)]
    group.set_plugin_specs(declared, _reason(PluginsConfig()))
    with pytest.raises(PluginError, match=r"'goclaw memory' is provided by both 'goclaw\.memory' and 'mine'"):
        _command(group, "memory")
    with pytest.raises(PluginError, match="both 'the goclaw kernel' and 'other'"):
        _command(group, "plugins")


def test_a_replacement_takes_a_disabled_builtins_name() -> None:
    group = _group()
    mine = CommandSpec("memory", "Mine.", f"{__name__}:_replacement_memory")
    declared = [("goclaw.memory", MEMORY), ("mine", mine)]
    group.set_plugin_specs(declared, _reason(PluginsConfig(disable=["goclaw.memory"])))
    assert _command(group, "memory") is _replacement_memory
    assert group.spec("memory") == CommandSpec("memory", "Mine.", mine.target, plugin="mine")


def test_two_plugins_declaring_one_name_conflict() -> None:
    group = _group()
    a = CommandSpec("hi", "A.", f"{__name__}:_replacement_memory")
    group.set_plugin_specs([("a", a), ("b", a)])
    with pytest.raises(PluginError, match="'goclaw hi' is provided by both 'a' and 'b'"):
        _command(group, "hi")


def test_a_plugin_command_that_cannot_load_is_one_plugin_error() -> None:
    group = _group()
    group.set_plugin_specs(
        [
            ("gone", CommandSpec("gone", "Gone.", "no_such_module_anywhere:cmd")),
            ("odd", CommandSpec("odd", "Odd.", f"{__name__}:ALL")),
        ],
    )
    with pytest.raises(PluginError, match="of plugin 'gone' cannot be loaded from no_such_module"):
        _command(group, "gone")
    with pytest.raises(PluginError, match="is a tuple, not a click command"):
        _command(group, "odd")


def test_a_bad_target_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="not 'module:attribute'"):
        CommandSpec("x", "X.", "just_a_module")


def test_help_lists_declarations_with_clicks_shortening() -> None:
    group = _group()
    group.set_plugin_specs([("goclaw.memory", MEMORY)])
    text = group.get_help(click.Context(group, info_name="root"))
    assert text.endswith("Commands:\n  memory   Memory.\n  plugins  Plugins.")


# --------------------------------------------------------------------------- third-party plugins


@pytest.fixture(scope="module")
def hello_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_target("goclaw-hello", tmp_path_factory.mktemp("hello-site"))


@pytest.fixture
def hello_installed(hello_site: Path) -> Iterator[Path]:
    with on_sys_path(hello_site):
        yield hello_site


def test_plugin_command_is_listed_without_being_imported(hello_installed: Path, workspace: Path) -> None:
    result = run_cli(["--help"], workspace=workspace)
    assert result.code == 0, result.err
    assert "  hello " in result.out and "Say hello (from the goclaw-hello plugin)." in result.out
    assert "  wave " in result.out  # the eager form still works
    assert "goclaw_hello.cli" not in sys.modules
    result = run_cli(["hello", "ada"], workspace=workspace)
    assert (result.code, result.out) == (0, "hello, ada\n"), result.err
    assert "goclaw_hello.cli" in sys.modules


def test_an_unloaded_command_module_is_imported_again(hello_installed: Path, workspace: Path) -> None:
    """The CLI group lives for the process; a command it loaded before its module was unloaded
    (a plugin reinstalled in a long-lived process, or another test's install) is imported
    again rather than run from the stale module (this made the test above fail when it ran
    after test_plugin_manager in one process)."""
    assert run_cli(["hello", "ada"], workspace=workspace).code == 0
    del sys.modules["goclaw_hello.cli"]
    result = run_cli(["hello", "bo"], workspace=workspace)
    assert (result.code, result.out) == (0, "hello, bo\n"), result.err
    assert "goclaw_hello.cli" in sys.modules


def test_eager_plugin_command_runs(hello_installed: Path, workspace: Path) -> None:
    result = run_cli(["wave"], workspace=workspace)
    assert (result.code, result.out) == (0, "*waves*\n"), result.err


def test_disabled_plugin_has_no_commands(hello_installed: Path, workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\ndisable = ["hello"]\n')
    result = run_cli(["hello"], workspace=workspace)
    assert result.code == 2 and result.err.startswith("error: No such command 'hello'")


def test_the_guide_shows_the_tested_command_code() -> None:
    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "plugins.md").read_text(encoding="utf-8")
    command = (root / "tests/third_party/goclaw-hello/goclaw_hello/cli.py").read_text(encoding="utf-8")
    assert command.rstrip("\n") + "\n```" in guide  # inline, as tested
    plugin = (root / "tests/third_party/goclaw-hello/goclaw_hello/__init__.py").read_text(encoding="utf-8")
    declared = 'CommandSpec("hello", "Say hello (from the goclaw-hello plugin).", "goclaw_hello.cli:hello")'
    assert declared in plugin and guide.count(declared) == 2  # section 1 and "Add commands"
