"""``goclaw workers prune``: the episodic plugin's subcommand of the kernel's ``workers`` group
(declared in the manifest, imported only when it runs)."""

from __future__ import annotations

import click

from goclaw.contracts.cli import emit_json, engine, json_option


@click.command("prune")
@json_option
def prune_cmd(as_json: bool) -> None:
    """Delete expired episodic summaries now (retention; also runs every 6 h in workers run)."""
    n = engine().service("episodic").prune_expired()
    if as_json:
        emit_json({"pruned": n})
    else:
        click.echo(f"pruned {n} expired episodic summaries")
