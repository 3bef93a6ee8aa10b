"""``goclaw init``."""

from __future__ import annotations

import json

import click

from goclaw.cli.common import state
from goclaw.errors import ConfigError

DEFAULT_CONFIG = """\
# goclaw workspace configuration. Environment variables GOCLAW_* override these keys
# (nested keys joined by "__", e.g. GOCLAW_PLUGINS__STRICT=true).

# database_url = "postgresql://user:password@localhost:5432/goclaw"   # default: .goclaw/goclaw.db
# product_name = "GoClaw"

[plugins]
# disable = []        # plugin names as `goclaw plugins --all` prints them
# strict = false      # a failing third-party plugin aborts instead of being skipped

# [plugins.llm]
# model = "gpt-4o-mini"   # any litellm model; unset = deterministic fallbacks, no network
"""


@click.command("init")
@click.option(
    "--disable", multiple=True, metavar="PLUGIN", help="Disable PLUGIN in the new goclaw.toml (repeatable)."
)
def init_cmd(disable: tuple[str, ...]) -> None:
    """Create goclaw.toml, the workspace folders and the database.

    Tables are made for the plugins that goclaw.toml and GOCLAW_* leave enabled."""
    from goclaw.config import PluginsConfig
    from goclaw.plugins import discover

    ws = state().workspace
    config = ws / "goclaw.toml"
    if disable and config.exists():
        raise ConfigError(f"{config} exists: add {', '.join(disable)} to its [plugins] disable instead")
    if disable:  # an unknown name is an error listing the known ones
        discover().blocked(PluginsConfig(disable=list(disable)))
    ws.mkdir(parents=True, exist_ok=True)
    created = []
    if not config.exists():
        names = f"disable = {json.dumps(list(disable))}  #" if disable else "# disable = []        #"
        config.write_text(DEFAULT_CONFIG.replace("# disable = []        #", names), encoding="utf-8")
        created.append("goclaw.toml")
    for folder in ("skills", ".agents/skills", "agents"):
        path = ws / folder
        if not path.exists():
            path.mkdir(parents=True)
            created.append(folder + "/")
    engine = state().engine()
    what = ", ".join(created) if created else "nothing new"
    click.echo(f"goclaw workspace ready in {engine.workspace} ({what}; database: {engine.db.backend})")
