"""``goclaw prompt``: print the assembled system prompt (issue 3 builds it)."""

from __future__ import annotations

import click

from goclaw.cli.common import json_option, not_yet


@click.command("prompt")
@click.option("--agent", "-a", required=True, help="Agent name.")
@click.option("--user", "-u", default=None, help="User id.")
@click.option("--mode", type=click.Choice(["full", "minimal"]), default=None, help="Prompt mode.")
@click.option("--session-key", default=None, help="Session key (subagent/cron keys give minimal).")
@click.option("--message", default=None, help="The user's message for this turn.")
@json_option
def prompt_cmd(
    agent: str,
    user: str | None,
    mode: str | None,
    session_key: str | None,
    message: str | None,
    as_json: bool,
) -> None:
    """Print the system prompt for an agent (and user)."""
    not_yet("prompt building")


COMMANDS = [prompt_cmd]
