"""``goclaw agent ...`` and ``goclaw team ...`` (plugins add ``agent`` subcommands of their own:
``goclaw agent summon`` is the bootstrap plugin's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from goclaw.cli.common import engine
from goclaw.cli.lazy import KernelGroup
from goclaw.contracts.cli import emit_json, json_option, print_table

if TYPE_CHECKING:
    from goclaw.contracts.store import Agent
    from goclaw.engine import Engine


@click.group("agent", cls=KernelGroup)
def agent_group() -> None:
    """Create, list, summon and link agents."""


@agent_group.command("create")
@click.argument("name")
@click.option(
    "--type",
    "agent_type",
    type=click.Choice(["open", "predefined"]),
    default="open",
    show_default=True,
    help="open: per-user files; predefined: shared persona.",
)
@click.option("--display-name", default="", help="Human-friendly name.")
@click.option("--description", default="", help="What the agent is for.")
@click.option("--dir", "workspace_dir", default=None, help="The agent's own folder (default agents/NAME).")
@json_option
def agent_create(
    name: str, agent_type: str, display_name: str, description: str, workspace_dir: str | None, as_json: bool
) -> None:
    """Create an agent and seed its agent-level files."""
    eng = engine()
    agent = eng.agents.create(
        name, agent_type, display_name=display_name, description=description, workspace_dir=workspace_dir
    )
    eng.agent_dir(agent).mkdir(parents=True, exist_ok=True)
    if as_json:
        emit_json(_agent_dict(eng, agent))
    else:
        click.echo(f"created {agent.agent_type} agent {agent.name}")


@agent_group.command("list")
@json_option
def agent_list(as_json: bool) -> None:
    """List agents."""
    eng = engine()
    agents = eng.agents.list()
    if as_json:
        emit_json([_agent_dict(eng, a) for a in agents])
        return
    print_table(
        ["name", "type", "status", "description"],
        [(a.name, a.agent_type, a.status, a.description) for a in agents],
    )


@agent_group.command("link")
@click.argument("source")
@click.argument("target")
@click.option("--description", default="", help="When SOURCE should delegate to TARGET.")
@click.option("--remove", is_flag=True, help="Remove the link instead.")
def agent_link(source: str, target: str, description: str, remove: bool) -> None:
    """Let SOURCE delegate to TARGET (drives DELEGATION.md)."""
    eng = engine()
    if remove:
        removed = eng.agents.unlink(source, target)
        click.echo(f"unlinked {source} -> {target}" if removed else f"no link {source} -> {target}")
        return
    eng.agents.link(source, target, description)
    click.echo(f"linked {source} -> {target}")


@click.group("team")
def team_group() -> None:
    """Group agents into teams (drives TEAM.md)."""


@team_group.command("create")
@click.argument("name")
@click.option("--description", default="")
def team_create(name: str, description: str) -> None:
    """Create a team (or update its description)."""
    engine().agents.create_team(name, description)
    click.echo(f"team {name} ready")


@team_group.command("add")
@click.argument("team")
@click.argument("agent")
@click.option("--role", default="member", show_default=True)
def team_add(team: str, agent: str, role: str) -> None:
    """Add AGENT to TEAM with a role."""
    engine().agents.add_to_team(team, agent, role)
    click.echo(f"{agent} is {role} of {team}")


@team_group.command("list")
@click.option("--agent", "-a", required=True, help="Agent name.")
@json_option
def team_list(agent: str, as_json: bool) -> None:
    """List the teams an agent belongs to, with teammates."""
    teams = engine().agents.teams_of(agent)
    data = [
        {
            "team": t.name,
            "description": t.description,
            "role": role,
            "members": [{"agent": m.name, "role": r} for m, r in mates],
        }
        for t, role, mates in teams
    ]
    if as_json:
        emit_json(data)
        return
    print_table(
        ["team", "role", "teammates"],
        [(t.name, role, ", ".join(m.name for m, _ in mates)) for t, role, mates in teams],
    )


def _agent_dict(eng: Engine, agent: Agent) -> dict[str, object]:
    return {
        "id": agent.id,
        "name": agent.name,
        "type": agent.agent_type,
        "status": agent.status,
        "display_name": agent.display_name,
        "description": agent.description,
        "dir": str(eng.agent_dir(agent)),
    }
