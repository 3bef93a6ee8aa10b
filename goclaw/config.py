"""Configuration: ``<workspace>/goclaw.toml``, overridden by ``GOCLAW_*`` environment variables.

Precedence (highest first): arguments given to :meth:`goclaw.Engine.open`, environment
variables (``GOCLAW_DATABASE_URL``, ``GOCLAW_PLUGINS__STRICT=true``, nested keys joined by
``__``), then ``goclaw.toml``. Each plugin's own table ``[plugins.<feature>]`` is validated by
the model that plugin declares (hook ``goclaw_settings_model``). Any error is one line that
names the key and the problem.
"""

from __future__ import annotations

import difflib
import json
import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from goclaw.errors import ConfigError

CONFIG_FILE = "goclaw.toml"


class PluginsConfig(BaseModel):
    """The ``[plugins]`` table. Feature tables (``[plugins.memory]``) are extra keys here."""

    model_config = ConfigDict(extra="allow")

    disable: list[str] = Field(default_factory=list, description="plugin names not to load")
    only: list[str] | None = Field(
        default=None, description="load only these plugins (plus the essential ones)"
    )
    autoload: bool = Field(default=True, description="load third-party plugins from entry points")
    strict: bool = Field(default=False, description="a failing plugin is fatal instead of skipped")

    def feature_tables(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class EventsSettings(BaseModel):
    """The ``[events]`` table: the kernel's durable event queue, on whatever plugins are
    disabled."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=5, ge=1, le=100, description="attempts before dead-letter")
    backoff_base_seconds: float = Field(default=2.0, ge=0, description="first retry delay; doubles")
    backoff_max_seconds: float = Field(default=600.0, ge=0, description="longest retry delay")
    lease_seconds: float = Field(default=300.0, ge=1, description="a claim older than this is retaken")
    poll_interval_seconds: float = Field(default=1.0, gt=0, description="idle poll (SQLite)")
    batch_size: int = Field(default=10, ge=1, le=1000, description="deliveries claimed at once")


class Settings(BaseSettings):
    """Workspace settings (the top level of ``goclaw.toml``)."""

    model_config = SettingsConfigDict(
        env_prefix="GOCLAW_",
        env_nested_delimiter="__",
        extra="forbid",
        toml_file=None,
    )

    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; unset = embedded SQLite at .goclaw/goclaw.db. "
        "Use postgresql://user:pass@host/db for PostgreSQL + pgvector.",
    )
    product_name: str = Field(default="GoClaw", description="name used by the Identity section")
    tenant_id: str = Field(default="default", description="tenant scope for multi-tenant setups")
    tokenizer: str = Field(
        default="o200k_base", description="token counting: o200k_base, cl100k_base, chars (÷ 4) or a plugin's"
    )
    agents_dir: str = Field(default="agents", description="folder holding each agent's own folder")
    events: EventsSettings = Field(default_factory=EventsSettings)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))


def _one_line(err: PydanticValidationError, where: str) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    msg = first.get("msg", "invalid value")
    value = first.get("input")
    shown = "" if isinstance(value, dict | list) or value is None else f" (got {value!r})"
    more = len(err.errors()) - 1
    tail = f"; and {more} more problem(s)" if more > 0 else ""
    return f"{where}: {loc}: {msg}{shown}{tail}"


def load_settings(workspace: Path, **overrides: Any) -> Settings:
    """Read and validate the workspace settings; raise :class:`ConfigError` on any problem."""
    path = workspace / CONFIG_FILE
    if path.exists():
        try:
            with path.open("rb") as fh:
                tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:  # one line, not "internal error"
            raise ConfigError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
        except RecursionError:
            raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    cls = type(
        "WorkspaceSettings",
        (Settings,),
        {"model_config": {**Settings.model_config, "toml_file": path if path.exists() else None}},
    )
    try:
        settings: Settings = cls(**{k: v for k, v in overrides.items() if v is not None})
    except PydanticValidationError as exc:
        raise ConfigError(_one_line(exc, f"{path} / GOCLAW_* environment")) from None
    except RecursionError:  # a GOCLAW_* JSON value nested thousands deep
        raise ConfigError(f"{path} / GOCLAW_* environment: a value is nested too deeply") from None
    return settings


def validate_plugin_table(feature: str, model: type[BaseModel], table: Any) -> BaseModel:
    """Parse one ``[plugins.<feature>]`` table with its plugin's model.

    Strict: a key the model does not declare, at any depth, is an error naming
    the key and the known ones, unless the model itself allows extra keys. A string given to a
    list, dict or nested-model setting is read as JSON, which is how such a value arrives from
    an environment variable (``GOCLAW_PLUGINS__LLM__OPTIONS='{"temperature": 0}'``).
    """
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"plugins.{feature}: must be a table, got {type(table).__name__}")
    table = _strict_table(model, table, f"plugins.{feature}")
    try:
        return model.model_validate(table)
    except PydanticValidationError as exc:
        raise ConfigError(_one_line(exc, f"[plugins.{feature}]")) from None


_COMPLEX_ORIGINS = (dict, list, set, frozenset, tuple, Mapping)


def _members(annotation: Any) -> tuple[Any, ...]:
    """The alternatives of a union annotation (``X | None``), else the annotation itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return (annotation,)


def _submodel(annotation: Any) -> type[BaseModel] | None:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    return None


def _is_complex(annotation: Any) -> bool:
    for member in _members(annotation):
        origin = get_origin(member) or member
        if isinstance(origin, type) and (
            issubclass(origin, BaseModel) or issubclass(origin, _COMPLEX_ORIGINS)
        ):
            return True
    return False


def _strict_table(model: type[BaseModel], table: dict[str, Any], where: str) -> dict[str, Any]:
    """Reject unknown keys (recursing into nested models) and decode JSON strings (see above)."""
    if model.model_config.get("extra") == "allow":
        return table
    by_key: dict[str, Any] = {}
    for name, field_info in model.model_fields.items():
        by_key[name] = field_info
        if field_info.alias:
            by_key[field_info.alias] = field_info
    out: dict[str, Any] = {}
    for key, value in table.items():
        info = by_key.get(key)
        if info is None:
            known = sorted(model.model_fields)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"[{where}]: unknown key {key!r}{hint}; known keys: {', '.join(known) or 'none'}"
            )
        if isinstance(value, str) and _is_complex(info.annotation) and value.strip()[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"[{where}]: {key}: not valid JSON: {exc.msg} (got {value!r})") from None
        sub = _submodel(info.annotation)
        if sub is not None and isinstance(value, dict):
            value = _strict_table(sub, value, f"{where}.{key}")
        out[key] = value
    return out
