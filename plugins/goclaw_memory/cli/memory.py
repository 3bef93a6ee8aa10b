"""``goclaw memory index|search|get|watch``.

The memory plugin's commands, declared in its manifest (:mod:`goclaw_memory.manifest`) and
imported only when ``goclaw memory`` runs.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from goclaw.contracts.cli import emit_json, engine, json_option, user_option

if TYPE_CHECKING:
    from goclaw.contracts.host import Host


def _agent_name(eng: Host, agent: str | None) -> str:
    """``--agent`` may be omitted when the workspace has exactly one agent."""
    if agent:
        return agent
    from goclaw.errors import ValidationError

    agents = eng.agents.list()
    if len(agents) == 1:
        return agents[0].name
    raise ValidationError(
        f"--agent is required (this workspace has {len(agents)} agents)"
        if agents
        else "no agents yet; create one with: goclaw agent create NAME"
    )


@click.group("memory")
def memory_group() -> None:
    """Index, search, read and watch memory files (MEMORY.md, memory/**/*.md)."""


@memory_group.command("index")
@click.option("--agent", "-a", default=None, help="Agent name (default: every agent).")
@user_option("Index only this user's memory (default: the agent folder and every users/<U>/).")
@click.option(
    "--bulk",
    is_flag=True,
    help="PostgreSQL: drop the vector index during this load and rebuild it once after (much "
    "faster for large loads; other agents' vector searches scan exactly meanwhile).",
)
@json_option
def memory_index(agent: str | None, user: str | None, bulk: bool, as_json: bool) -> None:
    """Index memory files: unchanged files are skipped, changed ones re-chunked and embedded."""
    eng = engine()
    show_bar = not as_json and sys.stderr.isatty()
    if show_bar:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=True,
        ) as bar:
            tasks: dict[str, Any] = {}

            def progress(stage: str, done: int, total: int) -> None:
                label = "indexing files" if stage == "index" else "embedding chunks"
                if stage not in tasks:
                    tasks[stage] = bar.add_task(label, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            report = eng.memory.index(agent, user, progress=progress, bulk=bulk)
    else:
        report = eng.memory.index(agent, user, bulk=bulk)
    if as_json:
        data = report.as_json()
        data.pop("changed_paths", None)
        emit_json(data)
    else:
        click.echo(
            f"files scanned: {report.files_scanned}, skipped unchanged: {report.skipped_unchanged}, "
            f"re-chunked: {report.rechunked}, removed: {report.removed}, "
            f"chunks embedded: {report.chunks_embedded}, cache hits: {report.cache_hits}"
            + (f", re-embedded: {report.reembedded}" if report.reembedded else "")
            + f" ({report.seconds:.2f} s)"
        )
    _note_skipped(report)
    if report.embedding_error:
        click.echo(
            f"note: no vectors written ({report.embedding_error}); full-text search still works", err=True
        )


def _note_skipped(report: Any) -> None:
    """Name the files an index run skipped (reported, never fatal)."""
    skipped = getattr(report, "skipped_files", None) or []
    if skipped:
        n = len(skipped)
        click.echo(f"note: skipped {n} file{'s' if n != 1 else ''} that cannot be indexed:", err=True)
        for item in skipped:
            click.echo(f"  {item['path']}: {item['reason']}", err=True)


@memory_group.command("search")
@click.argument("query")
@click.option("--agent", "-a", default=None, help="Agent name (optional when there is one agent).")
@user_option("Also search this user's memory (default: agent-level memory only).")
@click.option(
    "--channel",
    type=click.Choice(["hybrid", "lexical", "vector"]),
    default="hybrid",
    show_default=True,
    help="Run both channels or one alone.",
)
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=None, help="Hits to return (default 6).")
@click.option("--tag", "tags", multiple=True, help="Only chunks with this tag (repeat: every one).")
@click.option("--since", default=None, help="Only memory dated this day (YYYY-MM-DD) or later.")
@click.option("--until", default=None, help="Only memory dated this day (YYYY-MM-DD) or earlier.")
@click.option("--path", "path_prefix", default=None, help="Only files under this path prefix (memory/).")
@click.option(
    "--scope", type=click.Choice(["agent", "user"]), default=None, help="Only agent-level or the user's own."
)
@json_option
def memory_search(
    query: str,
    agent: str | None,
    user: str | None,
    channel: str,
    limit: int | None,
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    path_prefix: str | None,
    scope: str | None,
    as_json: bool,
) -> None:
    """Search memory: full text (any term) and vectors.

    Hybrid search fuses the channels 0.7 text / 0.3 vector by default ([plugins.memory]
    text_weight, vector_weight). The filters (--tag, --since, --until, --path, --scope) apply
    before the cut to --limit."""
    eng = engine()
    filters = {"tags": list(tags), "since": since, "until": until, "path": path_prefix, "scope": scope}
    response = eng.memory.search_response(
        query, _agent_name(eng, agent), user, limit=limit, channel=channel, filters=filters
    )
    for note in response.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        emit_json([h.as_json() for h in response.hits])
        return
    if not response.hits:
        click.echo("no matches")
        return
    for h in response.hits:
        snippet = " ".join(h.snippet.split())
        if len(snippet) > 160:
            snippet = snippet[:157] + "..."
        tier = "" if h.tier == "document" else f" [{h.tier}]"
        hit_id = f"  {h.id}" if h.id else ""
        click.echo(f"{h.score:.3f}  {h.path}:{h.start_line}-{h.end_line}  ({h.scope}){tier}{hit_id}")
        click.echo(f"       {snippet}")


@memory_group.command("get")
@click.argument("path")
@click.option("--agent", "-a", default=None, help="Agent name (optional when there is one agent).")
@user_option("Read this user's memory too (default: agent-level memory only).")
@click.option("--from", "from_line", type=click.IntRange(1), default=None, help="First line (1-based).")
@click.option("--to", "to_line", type=click.IntRange(1), default=None, help="Last line (inclusive).")
@json_option
def memory_get(
    path: str, agent: str | None, user: str | None, from_line: int | None, to_line: int | None, as_json: bool
) -> None:
    """Print lines of a memory file (paths as search shows them)."""
    eng = engine()
    result = eng.memory.get(_agent_name(eng, agent), path, user, from_line=from_line, to_line=to_line)
    if as_json:
        emit_json(result)
    else:
        click.echo(result["text"])


@memory_group.command("watch")
@click.option("--agent", "-a", default=None, help="Agent name (default: every agent).")
@user_option("Watch only this user's memory.")
@click.option(
    "--debounce-ms", type=click.IntRange(0), default=None, help="Quiet time before re-indexing (1500)."
)
def memory_watch(agent: str | None, user: str | None, debounce_ms: int | None) -> None:
    """Index, then re-index memory files as they change, until interrupted."""
    import time

    eng = engine()
    first = eng.memory.index(agent, user)
    click.echo(
        f"indexed: {first.rechunked} changed, {first.skipped_unchanged} unchanged; watching (Ctrl-C stops)"
    )
    _note_skipped(first)

    def on_index(report: Any) -> None:
        changed = ", ".join(report.changed_paths[:5]) or "nothing"
        click.echo(f"re-indexed {report.agent}: {changed}")
        _note_skipped(report)

    watcher = eng.memory.watch(agent, user, debounce_ms=debounce_ms, on_index=on_index)
    try:
        while True:
            time.sleep(0.5)
    finally:
        watcher.stop()


from goclaw_memory.cli.quality import memory_doctor  # noqa: E402 (doctor)
from goclaw_memory.cli.write import add_write_commands  # noqa: E402 (add|correct|delete|list)

add_write_commands(memory_group)
memory_group.add_command(memory_doctor)
