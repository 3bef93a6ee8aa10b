"""Configuration: goclaw.toml, GOCLAW_* overrides, per-plugin tables, one-line errors (issue 2 §4)."""

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
