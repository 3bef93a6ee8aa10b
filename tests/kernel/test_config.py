"""Configuration: goclaw.toml, GOCLAW_* overrides, per-plugin tables, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from goclaw.config import load_settings
from goclaw.engine import Engine
from goclaw.errors import ConfigError
from tests.helpers import run_cli


def test_defaults_without_a_config_file(workspace: Path) -> None:
    settings = load_settings(workspace)
    assert settings.database_url is None
    assert settings.product_name == "GoClaw"
    assert settings.plugins.disable == []
    assert settings.plugins.strict is False


def test_toml_is_read(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('product_name = "Acme"\n[plugins]\nstrict = true\n')
    settings = load_settings(workspace)
    assert settings.product_name == "Acme"
    assert settings.plugins.strict is True


def test_environment_overrides_toml(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "goclaw.toml").write_text('product_name = "Acme"\n')
    monkeypatch.setenv("GOCLAW_PRODUCT_NAME", "FromEnv")
    monkeypatch.setenv("GOCLAW_PLUGINS__STRICT", "true")
    settings = load_settings(workspace)
    assert settings.product_name == "FromEnv"
    assert settings.plugins.strict is True


def test_bad_toml_is_one_line(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text("product_name = \n")
    with pytest.raises(ConfigError) as err:
        load_settings(workspace)
    assert "not valid TOML" in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_top_level_key_names_the_key(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('databse_url = "x"\n')
    with pytest.raises(ConfigError, match="databse_url"):
        load_settings(workspace)


def test_bad_value_names_key_and_value(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins]\nstrict = "sometimes"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(workspace)
    assert "plugins.strict" in str(err.value)
    assert "sometimes" in str(err.value)


def test_plugin_table_validated_by_its_model(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins.llm]\ntimeout = "soon"\n')
    with pytest.raises(ConfigError) as err:
        Engine.open(workspace)
    assert "[plugins.llm]" in str(err.value) and "timeout" in str(err.value)


def test_plugin_table_values_reach_the_plugin(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text('[plugins.llm]\nmodel = "gpt-4o-mini"\ntimeout = 5\n')
    with Engine.open(workspace) as engine:
        settings = engine.plugin_settings("llm")
        assert settings.model == "gpt-4o-mini"
        assert settings.timeout == 5.0


def test_unknown_plugin_table_is_an_error(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text("[plugins.memroy]\nbackend = 'sqlite'\n")
    with pytest.raises(ConfigError) as err:
        Engine.open(workspace)
    assert "memroy" in str(err.value) and "memory" in str(err.value)


def test_cli_reports_bad_config_on_one_line(workspace: Path) -> None:
    (workspace / "goclaw.toml").write_text("[plugins\n")
    result = run_cli(["agent", "list"], workspace=workspace)
    assert result.code == 2
    assert result.err.startswith("error: ")
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err


# --------------------------------------------------------------------------- strict plugin tables


@pytest.mark.parametrize(
    ("toml", "key", "known"),
    [
        ("[plugins.memory]\nmax_resluts = 3\n", "max_resluts", "max_results"),
        ("[plugins.skills]\ninline_max_skils = 3\n", "inline_max_skils", "inline_max_skills"),
        ("[plugins.memory.flush]\nmax_iteratons = 3\n", "max_iteratons", "max_iterations"),
    ],
)
def test_unknown_key_in_plugin_table_names_key_and_known_ones(
    workspace: Path, toml: str, key: str, known: str
) -> None:
    (workspace / "goclaw.toml").write_text(toml)
    with pytest.raises(ConfigError) as err:
        Engine.open(workspace)
    message = str(err.value)
    assert repr(key) in message and known in message and "known keys" in message
    result = run_cli(["agent", "list"], workspace=workspace)
    assert result.code == 2 and result.err.count("\n") == 1 and key in result.err
    assert "Traceback" not in result.err


def test_unknown_key_in_third_party_plugin_table(workspace: Path) -> None:
    from pydantic import BaseModel

    from goclaw import hookimpl

    class HelloSettings(BaseModel):
        greeting: str = "hi"

    class Hello:
        @hookimpl
        def goclaw_settings_model(self) -> type[BaseModel]:
            return HelloSettings

    with pytest.raises(ConfigError, match=r"\[plugins\.hello\]: unknown key 'greting'.*greeting"):
        Engine.open(workspace, plugins={"hello": {"greting": "x"}}, extra_plugins=[("hello", Hello())])


def test_json_env_values_for_dict_list_and_nested_settings(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOCLAW_PLUGINS__LLM__OPTIONS", '{"temperature": 0, "top_p": 0.5}')
    monkeypatch.setenv("GOCLAW_PLUGINS__PROMPT__SPAWN_TOOLS", '["spawn", "fork"]')
    monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__FLUSH", '{"max_iterations": 3}')
    with Engine.open(workspace) as engine:
        assert engine.plugin_settings("llm").options == {"temperature": 0, "top_p": 0.5}
        assert engine.plugin_settings("prompt").spawn_tools == ["spawn", "fork"]
        assert engine.plugin_settings("memory").flush.max_iterations == 3


def test_bad_json_env_value_is_one_line(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOCLAW_PLUGINS__LLM__OPTIONS", '{"temperature": ')
    result = run_cli(["agent", "list"], workspace=workspace)
    assert result.code == 2 and result.err.count("\n") == 1
    assert "[plugins.llm]" in result.err and "options" in result.err and "JSON" in result.err


def test_unknown_key_inside_nested_env_table(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOCLAW_PLUGINS__MEMORY__FLUSH", '{"max_iteratons": 3}')
    with pytest.raises(ConfigError, match=r"\[plugins\.memory\.flush\]: unknown key 'max_iteratons'"):
        Engine.open(workspace)


def test_settings_or_defaults_falls_back_only_when_the_table_is_not_the_plugins() -> None:
    from pydantic import BaseModel

    from goclaw.contracts.host import settings_or_defaults
    from goclaw.errors import FeatureUnavailableError

    class Table(BaseModel):
        size: int = 3

    class Engine:
        def __init__(self, value: object) -> None:
            self.value = value

        def plugin_settings(self, feature: str) -> object:
            if self.value is None:
                raise FeatureUnavailableError(f"no settings for plugin feature {feature!r}")
            return self.value

    mine = Table(size=9)
    assert settings_or_defaults(Engine(mine), "x", Table) is mine
    assert settings_or_defaults(Engine(None), "x", Table) == Table()  # plugin disabled
    assert settings_or_defaults(Engine({"size": 9}), "x", Table) == Table()  # replaced by another model
