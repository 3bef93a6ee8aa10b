"""``goclaw forget --user U``: erase one user's data; a dry run unless ``--yes``."""

from __future__ import annotations

import click

from goclaw.cli.common import engine
from goclaw.contracts.cli import emit_json, json_option


@click.command("forget")
@click.option("--user", "-u", default=None, help="The user to erase.")
@click.option("--agent", "-a", default=None, help="Only this agent's data of the user (default: all).")
@click.option("--yes", is_flag=True, help="Erase. Without it, only count what would be erased.")
@json_option
def forget_cmd(user: str | None, agent: str | None, yes: bool, as_json: bool) -> None:
    """Erase a user's (or, with --agent alone, an agent's) files, index, sessions, episodic
    memory, KG facts and more (GDPR). A dry run unless --yes."""
    from goclaw.errors import ValidationError
    from goclaw.forget import forget_agent, forget_user

    if user is not None:
        report = forget_user(engine(), user, agent=agent, dry_run=not yes)
    elif agent is not None:
        report = forget_agent(engine(), agent, dry_run=not yes)
    else:
        raise ValidationError("name what to forget: --user U (optionally --agent A), or --agent A alone")
    who = f"user {user!r}" if user is not None else f"agent {agent!r}"
    if report.tables_not_erased:
        tables = ", ".join(report.tables_not_erased)
        click.echo(
            f"warning: not erased: {tables} (their plugin is disabled or not installed; "
            "enable it and run forget again)",
            err=True,
        )
    if as_json:
        emit_json(report.as_json())
        return
    verb = "would erase" if report.dry_run else "erased"
    click.echo(f"{verb} for {who} ({', '.join(report.agents) or 'no agents'}):")
    click.echo(f"  files: {report.files} in {len(report.folders)} folder(s)")
    for name, n in sorted(report.rows.items()):
        if n:
            click.echo(f"  {name}: {n}")
    click.echo(f"  rows in total: {report.total_rows}")
    if report.dry_run:
        click.echo("dry run: nothing was changed; run again with --yes to erase", err=True)
