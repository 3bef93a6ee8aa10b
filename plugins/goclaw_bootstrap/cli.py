"""``goclaw agent summon``: the bootstrap plugin's subcommand of the kernel's ``agent`` group
(declared in the manifest, imported only when it runs)."""

from __future__ import annotations

import click

from goclaw.contracts.cli import emit_json, engine, json_option


@click.command("summon")
@click.argument("name")
@click.argument("description")
@click.option(
    "--type",
    "agent_type",
    type=click.Choice(["open", "predefined"]),
    default="predefined",
    show_default=True,
    help="Type used when the agent does not exist yet.",
)
@json_option
def summon_cmd(name: str, description: str, agent_type: str, as_json: bool) -> None:
    """Generate SOUL, IDENTITY, AGENTS and TOOLS from a description with one LLM call."""
    result = engine().service("summoner").summon(name, description, agent_type=agent_type)
    data = (
        result if isinstance(result, dict) else getattr(result, "as_dict", lambda: {"result": str(result)})()
    )
    if as_json:
        emit_json(data)
    else:
        click.echo(data.get("message") or f"summoned {name}")
