"""``goclaw session append|end|episodes``.

``append`` and ``end`` go through ``engine.sessions`` (the memory plugin); ``end`` publishes
``run.completed`` so the consolidation workers pick the session up. ``episodes`` lists the
episodic summaries the workers wrote.
"""

from __future__ import annotations

import click

from goclaw.contracts.cli import agent_option, emit_json, engine, json_option, print_table, user_option


@click.group("session")
def session_group() -> None:
    """Record session messages, end runs, list episodic summaries."""


@session_group.command("append")
@agent_option()
@user_option()
@click.option("--key", "-k", required=True, help="Session key.")
@click.option("--role", type=click.Choice(["user", "assistant"]), required=True)
@click.argument("text", nargs=-1, required=True)
@json_option
def session_append(
    agent: str, user: str | None, key: str, role: str, text: tuple[str, ...], as_json: bool
) -> None:
    """Append a message to a session (created on first use)."""
    eng = engine()
    content = " ".join(text)
    result = eng.sessions.append(agent, key, role, content, user=user)
    if as_json:
        seq = getattr(result, "seq", None)
        emit_json({"session_key": key, "role": role, "seq": seq, "chars": len(content)})
    else:
        click.echo(f"appended {role} message to {key}")


@session_group.command("end")
@click.option("--key", "-k", required=True, help="Session key.")
@json_option
def session_end(key: str, as_json: bool) -> None:
    """End a run: publishes run.completed for the consolidation workers."""
    from goclaw.errors import NotFoundError

    eng = engine()
    try:  # a session of another tenant's agent is unknown here
        eng.agents.get(eng.sessions.get(key).agent_id)
    except NotFoundError:
        raise NotFoundError(f"unknown session {key!r}") from None
    result = eng.sessions.end(key)
    if as_json:
        emit_json(
            {
                "session_key": key,
                "status": getattr(result, "status", "ended"),
                "compaction_count": getattr(result, "compaction_count", 0),
                "event": "run.completed",
            }
        )
    else:
        click.echo(f"ended {key}; run.completed published")


@session_group.command("episodes")
@agent_option()
@user_option(help="User id: agent-level plus this user's summaries (omit for agent level only).")
@click.option("--limit", default=50, show_default=True)
@click.option("--include-expired", is_flag=True)
@json_option
def session_episodes(agent: str, user: str | None, limit: int, include_expired: bool, as_json: bool) -> None:
    """List episodic summaries (newest first)."""
    from goclaw.contracts.records import episode_dict

    eng = engine()
    a = eng.agents.get(agent)  # within the engine's tenant, like every public path
    rows = eng.episodic.list(a.id, user, limit=limit, include_expired=include_expired)
    data = [episode_dict(r) for r in rows]
    if as_json:
        emit_json(data)
        return
    print_table(
        ["id", "session", "created", "abstract"],
        [(d["id"][:12], d["session_key"], d["created_at"][:19], d["l0_abstract"]) for d in data],
    )
