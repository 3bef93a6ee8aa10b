"""``goclaw kg entities|relations|candidates|merge|reject|supersede``."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from goclaw.contracts.cli import agent_option, emit_json, engine, json_option, print_table, user_option


def _as_of(value: str | None) -> datetime | None:
    if value is None:
        return None
    from goclaw.errors import ValidationError

    text = value.strip().replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(
            f"--as-of {value!r} is not an ISO 8601 time (e.g. 2026-01-31T12:00:00Z)"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


@click.group("kg")
def kg_group() -> None:
    """The temporal knowledge graph: entities, relations, dedup review."""


@kg_group.command("entities")
@agent_option()
@user_option(help="User id: agent-level plus this user's facts (omit for agent level only).")
@click.option("--as-of", "as_of", default=None, help="Facts valid at this ISO 8601 time (default: now).")
@click.option("--history", is_flag=True, help="Every version, closed ones included.")
@json_option
def kg_entities(agent: str, user: str | None, as_of: str | None, history: bool, as_json: bool) -> None:
    """List entities with their validity."""
    from goclaw.contracts.records import entity_dict

    rows = [
        entity_dict(e)
        for e in engine().kg.entities(agent, user, as_of=_as_of(as_of), include_history=history)
    ]
    if as_json:
        emit_json(rows)
        return
    print_table(
        ["name", "type", "confidence", "valid_from", "valid_until"],
        [(r["name"], r["type"], r["confidence"], r["valid_from"], r["valid_until"] or "") for r in rows],
    )


@kg_group.command("relations")
@agent_option()
@user_option(help="User id: agent-level plus this user's facts (omit for agent level only).")
@click.option("--as-of", "as_of", default=None, help="Facts valid at this ISO 8601 time (default: now).")
@click.option("--history", is_flag=True, help="Every version, closed ones included.")
@json_option
def kg_relations(agent: str, user: str | None, as_of: str | None, history: bool, as_json: bool) -> None:
    """List relations with their validity."""
    from goclaw.contracts.records import relation_dict

    rows = [
        relation_dict(r, names)
        for r, names in engine().kg.relations(agent, user, as_of=_as_of(as_of), include_history=history)
    ]
    if as_json:
        emit_json(rows)
        return
    print_table(
        ["source", "relation", "target", "confidence", "valid_from", "valid_until"],
        [
            (
                r["source"],
                r["relation"],
                r["target"],
                r["confidence"],
                r["valid_from"],
                r["valid_until"] or "",
            )
            for r in rows
        ],
    )


@kg_group.command("candidates")
@agent_option(required=False)
@click.option(
    "--status",
    type=click.Choice(["pending", "merged", "rejected", "all"]),
    default="pending",
    show_default=True,
)
@json_option
def kg_candidates(agent: str | None, status: str, as_json: bool) -> None:
    """Near-duplicate entity pairs the dedup worker left for review."""
    rows = engine().kg.candidates(agent, None if status == "all" else status)
    if as_json:
        emit_json(rows)
        return
    print_table(
        ["id", "entity_a", "entity_b", "cosine", "name_sim", "status"],
        [
            (r["id"], r["entity_a"], r["entity_b"], r["cosine"], r["name_similarity"], r["status"])
            for r in rows
        ],
    )


@kg_group.command("merge")
@click.argument("candidate_id", type=int)
def kg_merge(candidate_id: int) -> None:
    """Accept a dedup candidate: merge the pair (never across types; nothing deleted)."""
    engine().kg.review_candidate(candidate_id, accept=True)
    click.echo(f"candidate {candidate_id} merged")


@kg_group.command("reject")
@click.argument("candidate_id", type=int)
def kg_reject(candidate_id: int) -> None:
    """Reject a dedup candidate: the two entities stay distinct."""
    engine().kg.review_candidate(candidate_id, accept=False)
    click.echo(f"candidate {candidate_id} rejected")


@kg_group.command("supersede")
@click.argument("entity_id")
@click.option("--name", default=None)
@click.option("--description", default=None)
@click.option("--at", "at", default=None, help="ISO 8601 time the change takes effect (default: now).")
@json_option
def kg_supersede(
    entity_id: str, name: str | None, description: str | None, at: str | None, as_json: bool
) -> None:
    """Replace a current entity: the old row is closed, the new one starts (one transaction)."""
    from goclaw.contracts.records import entity_dict

    new = engine().kg.supersede_entity(entity_id, name=name, description=description, at=_as_of(at))
    if as_json:
        emit_json(entity_dict(new))
    else:
        click.echo(f"superseded {entity_id} by {new.id}")
