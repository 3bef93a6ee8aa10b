"""``goclaw plugins``: what is installed, and what each plugin implements."""

from __future__ import annotations

import click

from goclaw.cli.common import state
from goclaw.contracts.cli import emit_json, json_option, print_table


@click.command("plugins")
@click.option("--all", "show_all", is_flag=True, help="Include the built-in default plugins.")
@json_option
def plugins_cmd(show_all: bool, as_json: bool) -> None:
    """List plugins: name, distribution, version, hooks and status (active/blocked/failed)."""
    from goclaw.config import load_settings
    from goclaw.plugins import build_plugin_manager

    settings = load_settings(state().workspace.resolve())
    manager = build_plugin_manager(settings.plugins)
    records = [r for _, r in sorted(manager.records.items()) if show_all or not r.builtin]
    if as_json:
        emit_json([r.as_dict() for r in records])
        return
    if not records:
        click.echo("no third-party plugins installed (use --all to list the built-ins)")
        return
    print_table(
        ["name", "distribution", "version", "status", "hooks"],
        [
            (
                r.name,
                r.distribution,
                r.version,
                r.status + (f": {r.error}" if r.error else ""),
                ", ".join(h.removeprefix("goclaw_") for h in r.hooks),
            )
            for r in records
        ],
    )
