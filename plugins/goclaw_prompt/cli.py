"""``goclaw prompt``: print the assembled system prompt."""

from __future__ import annotations

import sys

import click

from goclaw.contracts.cli import emit_json, engine, json_option


@click.command("prompt")
@click.option("--agent", "-a", required=True, help="Agent name.")
@click.option("--user", "-u", default=None, help="User id (seeds the user's files on first use).")
@click.option("--mode", default=None, help="Prompt mode: full, task or minimal (or a plugin's mode).")
@click.option(
    "--session-key", default=None, help="Session key (subagent, cron and heartbeat keys give minimal)."
)
@click.option("--message", default=None, help="The user's message for this turn (slash commands).")
@click.option("--channel", default=None, help="The channel the user talks through.")
@click.option("--tool", "tools", multiple=True, help="A tool offered this turn (NAME or NAME=description).")
@click.option("--sandbox", is_flag=True, help="Tools run in a sandbox.")
@click.option("--extra", "extra_prompt", default=None, help="Extra prompt text (wrapped in <extra_context>).")
@json_option
def prompt_cmd(
    agent: str,
    user: str | None,
    mode: str | None,
    session_key: str | None,
    message: str | None,
    channel: str | None,
    tools: tuple[str, ...],
    sandbox: bool,
    extra_prompt: str | None,
    as_json: bool,
) -> None:
    """Print the system prompt for an agent (and user)."""
    from goclaw.contracts.hooks import PromptRequest, ToolInfo

    infos = tuple(ToolInfo(*(t.split("=", 1) if "=" in t else (t, ""))) for t in tools)
    request = PromptRequest(
        agent=agent,
        user=user,
        mode=mode,
        session_key=session_key,
        message=message,
        tools=infos,
        channel=channel,
        sandbox=sandbox,
        extra_prompt=extra_prompt,
    )
    result = engine().prompt.build(request)
    if as_json:
        emit_json(result.as_dict())
        return
    sys.stdout.write(result.prompt)
