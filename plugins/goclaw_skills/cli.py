"""``goclaw skills list|search|show|lint|add|grant|revoke|visibility``.

Without ``--agent``/``--user`` the commands show the operator's view (every tier, every
managed skill); with them, exactly what that caller may see (grants, allow list).
JSON shapes: list items ``{"slug","name","description","source","path",
"shadows"}``; search hits ``{"slug","name","score","source"}``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from goclaw.contracts.cli import emit_json, engine, json_option, print_table


def _agent_user(f: Any) -> Any:
    f = click.option("--user", "-u", default=None, help="Caller's user id (grants, private skills).")(f)
    return click.option("--agent", "-a", default=None, help="Caller agent (grants, allow list).")(f)


@click.group("skills")
def skills_group() -> None:
    """List, search, lint, add and grant skills."""


@skills_group.command("list")
@_agent_user
@json_option
def skills_list(agent: str | None, user: str | None, as_json: bool) -> None:
    """List skills with their winning tier and the lower-tier copies they shadow."""
    skills = engine().skills
    # A skipped skill is reported once, by the loader's warning; the command does not repeat it.
    items = skills.list(agent, user, include_all=agent is None and user is None)
    if as_json:
        emit_json([i.as_dict() for i in items])
        return
    print_table(
        ["slug", "name", "source", "shadows", "description"],
        [
            (
                i.slug,
                i.record.name,
                i.record.source,
                ",".join(s.source for s in i.shadows),
                i.record.description,
            )
            for i in items
        ],
    )


@skills_group.command("search")
@click.argument("query")
@_agent_user
@click.option(
    "--channel",
    type=click.Choice(["hybrid", "lexical", "vector"]),
    default="hybrid",
    show_default=True,
    help="Search channel: BM25 + vectors, BM25 only, or vectors only.",
)
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=None, help="Results (default 5).")
@json_option
def skills_search(
    query: str, agent: str | None, user: str | None, channel: str, limit: int | None, as_json: bool
) -> None:
    """Search skills by keywords (BM25, plus vectors when an embedder is configured)."""
    hits = engine().skills.search(
        query, agent, user, channel=channel, limit=limit, include_all=agent is None and user is None
    )
    if as_json:
        emit_json([h.as_dict() for h in hits])
        return
    print_table(
        ["slug", "name", "score", "source"], [(h.slug, h.name, f"{h.score:.4f}", h.source) for h in hits]
    )


@skills_group.command("show")
@click.argument("slug")
@_agent_user
@json_option
def skills_show(slug: str, agent: str | None, user: str | None, as_json: bool) -> None:
    """Print a skill's SKILL.md ({baseDir} resolved)."""
    hit = engine().skills.show(slug, agent, user, include_all=agent is None and user is None)
    if as_json:
        data = hit.as_dict()
        r = hit.record
        data.update(
            {
                "metadata": r.metadata,
                "frontmatter": r.frontmatter,
                "version": r.version,
                "visibility": r.visibility,
                "content": r.instructions(),
            }
        )
        emit_json(data)
        return
    text = hit.record.instructions()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@skills_group.command("lint")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@json_option
def skills_lint(paths: tuple[Path, ...], as_json: bool) -> None:
    """Check skills against the Agent Skills spec (all tiers, or PATHS); non-zero exit on problems."""
    results = engine().skills.lint(list(paths) or None)
    bad = [r for r in results if r.problems]
    if as_json:
        emit_json([r.as_dict() for r in results])
    else:
        for r in bad:
            for p in r.problems:
                click.echo(f"{r.path}: {p}")
        click.echo(f"{len(results)} skill(s) checked, {len(bad)} with problems", err=True)
    if bad:
        sys.exit(1)


@skills_group.command("add")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--owner", default="", help="Owner user id (private skills are visible to the owner only).")
@click.option(
    "--visibility",
    type=click.Choice(["private", "internal", "public"]),
    default=None,
    help="Access mode (new skills: private).",
)
@click.option("--slug", default=None, help="Slug to store it under (default: the folder or archive name).")
@click.option("--force", is_flag=True, help="Add it even when the content scan flags it.")
@json_option
def skills_add(
    path: Path, owner: str, visibility: str | None, slug: str | None, force: bool, as_json: bool
) -> None:
    """Add a skill folder, SKILL.md or ZIP to the managed store (a new version if it exists).

    The SKILL.md is scanned first (downloads piped into a shell, sending secrets elsewhere,
    prompt-injection phrases); a flagged skill is refused unless --force."""
    skills = engine().skills
    add = skills.force_add if force else skills.add
    info = add(path, owner=owner, visibility=visibility, slug=slug)
    for finding in info["scan_findings"]:
        click.echo(f"warning: added despite the content scan: {finding}", err=True)
    if as_json:
        emit_json(info)
        return
    verb = "added" if info["created"] else "updated"
    kept = f", {len(info['files'])} file(s) besides SKILL.md" if info["files"] else ""
    click.echo(f"{verb} {info['slug']} version {info['version']} ({info['visibility']}{kept})")
    if info["ignored_files"]:
        click.echo(
            f"warning: ignored {len(info['ignored_files'])} file(s) (symlinks, or outside the "
            f"skill's folder): {', '.join(info['ignored_files'][:5])}",
            err=True,
        )
    if info["visibility"] == "private" and not info["owner"]:
        click.echo("warning: a private skill without --owner is visible to nobody but operators", err=True)


@skills_group.command("grant")
@click.argument("slug")
@click.option("--agent", "-a", default=None, help="Grant this agent.")
@click.option("--user", "-u", default=None, help="Grant this user.")
@click.option("--pin", "pinned_version", type=int, default=None, help="Pin the agent to this version.")
@click.option("--by", "granted_by", default="", help="Who grants (audit).")
def skills_grant(
    slug: str, agent: str | None, user: str | None, pinned_version: int | None, granted_by: str
) -> None:
    """Grant a managed skill to an agent and/or a user."""
    engine().skills.grant(slug, agent=agent, user=user, pinned_version=pinned_version, granted_by=granted_by)
    who = " and ".join(x for x in (f"agent {agent}" if agent else "", f"user {user}" if user else "") if x)
    click.echo(f"granted {slug} to {who}", err=True)


@skills_group.command("revoke")
@click.argument("slug")
@click.option("--agent", "-a", default=None, help="Revoke this agent's grant.")
@click.option("--user", "-u", default=None, help="Revoke this user's grant.")
def skills_revoke(slug: str, agent: str | None, user: str | None) -> None:
    """Remove an agent and/or user grant."""
    removed = engine().skills.revoke(slug, agent=agent, user=user)
    click.echo(f"revoked {slug}" if removed else f"no such grant on {slug}", err=True)


@skills_group.command("visibility")
@click.argument("slug")
@click.argument("visibility", type=click.Choice(["private", "internal", "public"]))
@click.option("--owner", default=None, help="Also set the owner.")
def skills_visibility(slug: str, visibility: str, owner: str | None) -> None:
    """Set a managed skill's access mode: private, internal or public."""
    engine().skills.set_visibility(slug, visibility, owner=owner)
    click.echo(f"{slug} is now {visibility}", err=True)
