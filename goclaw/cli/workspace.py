"""``goclaw init``."""

from __future__ import annotations

import click

from goclaw.cli.common import state

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
def init_cmd() -> None:
    """Create goclaw.toml, the workspace folders and the database."""
    ws = state().workspace
    ws.mkdir(parents=True, exist_ok=True)
    config = ws / "goclaw.toml"
    created = []
    if not config.exists():
        config.write_text(DEFAULT_CONFIG, encoding="utf-8")
        created.append("goclaw.toml")
    for folder in ("skills", ".agents/skills", "agents"):
        path = ws / folder
        if not path.exists():
            path.mkdir(parents=True)
            created.append(folder + "/")
    engine = state().engine()
    what = ", ".join(created) if created else "nothing new"
    click.echo(f"goclaw workspace ready in {engine.workspace} ({what}; database: {engine.db.backend})")
