"""``goclaw channel-memory enable|disable|ingest|list|approve|reject`` (passive channel memory)."""

from __future__ import annotations

import json
import sys

import click

from goclaw.contracts.cli import agent_option, emit_json, engine, json_option, print_table


@click.group("channel-memory")
def channel_group() -> None:
    """Passive channel memory: opt-in per channel, redacted, reviewed before it is remembered."""


@channel_group.command("enable")
@agent_option()
@click.option("--channel", "-c", required=True)
@click.option("--exclude-user", multiple=True, help="Never remember this sender (repeatable).")
@click.option("--exclude-pattern", multiple=True, help="Regex always redacted (repeatable).")
@click.option("--auto-approve/--review", default=None, help="Skip the review step (default: review).")
@json_option
def channel_enable(
    agent: str,
    channel: str,
    exclude_user: tuple[str, ...],
    exclude_pattern: tuple[str, ...],
    auto_approve: bool | None,
    as_json: bool,
) -> None:
    """Turn passive memory on for a channel."""
    cfg = (
        engine()
        .service("channel_memory")
        .configure(
            agent,
            channel,
            enabled=True,
            excluded_users=exclude_user or None,
            excluded_patterns=exclude_pattern or None,
            auto_approve=auto_approve,
        )
    )
    emit_json(cfg) if as_json else click.echo(f"passive memory enabled for {channel}")


@channel_group.command("disable")
@agent_option()
@click.option("--channel", "-c", required=True)
def channel_disable(agent: str, channel: str) -> None:
    """Turn passive memory off for a channel."""
    engine().service("channel_memory").configure(agent, channel, enabled=False)
    click.echo(f"passive memory disabled for {channel}")


@channel_group.command("ingest")
@agent_option()
@click.option("--channel", "-c", required=True)
@click.option("--user", "-u", default=None, help="Scope the memories to this user (default: agent level).")
@json_option
def channel_ingest(agent: str, channel: str, user: str | None, as_json: bool) -> None:
    """Read a pending-message group from stdin (JSON lines {"user","text"}, or plain lines)."""
    messages = []
    for line in sys.stdin.read().splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        messages.append(obj if isinstance(obj, dict) else {"user": "", "text": line})
    items = engine().service("channel_memory").ingest(agent, channel, messages, user=user)
    if as_json:
        emit_json(items)
    else:
        click.echo(
            f"{len(items)} candidate(s) recorded" if items else "nothing recorded (channel off or empty)"
        )


@channel_group.command("list")
@agent_option(required=False)
@click.option("--channel", "-c", default=None)
@click.option("--status", type=click.Choice(["pending", "approved", "rejected"]), default=None)
@json_option
def channel_list(agent: str | None, channel: str | None, status: str | None, as_json: bool) -> None:
    """List extracted candidates."""
    items = engine().service("channel_memory").items(agent, channel, status)
    if as_json:
        emit_json(items)
        return
    print_table(
        ["id", "channel", "status", "content"],
        [(i["id"], i["channel"], i["status"], i["content"][:80]) for i in items],
    )


@channel_group.command("approve")
@click.argument("item_id", type=int)
def channel_approve(item_id: int) -> None:
    """Approve a candidate: it becomes an episodic memory (source_type=channel)."""
    item = engine().service("channel_memory").approve(item_id)
    click.echo(f"approved {item_id} -> episodic {item['episodic_id']}")


@channel_group.command("reject")
@click.argument("item_id", type=int)
def channel_reject(item_id: int) -> None:
    """Reject a candidate."""
    engine().service("channel_memory").reject(item_id)
    click.echo(f"rejected {item_id}")
