"""Plugin ``goclaw.slash_commands``: the four skill slash commands.

``/<slug> prompt``, ``/use <slug-or-name> prompt`` (alias ``/activate``), ``/list-skills`` and
``/help <slug-or-name>``. Tenant settings come from ``system_configs``:
``skills.slash_commands.enabled`` (true), ``.suggest_not_found`` (true), ``.partial_matching``
(false) and ``.prefix`` (``/``; exactly one non-space character, else ``/``). A first token
that looks like a path (contains ``/``, ``\\`` or ``.``) is not a command; an unknown command
with no close suggestion passes the message through unchanged: a word under 3
chars never gets one, and the edit distance allowed grows with the word's length (at most 3),
so ``/ok thanks`` reaches the model. Every lookup runs over the caller's own view
(grants, allow list, request filter), so activation, listing, help and suggestions never reveal
a hidden skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goclaw import hookimpl
from goclaw.contracts.hooks import SlashResult

if TYPE_CHECKING:
    from goclaw.contracts.host import Host, PromptContext
    from goclaw_skills.loader import SkillView

KEY_PREFIX = "skills.slash_commands."
DEFAULT_MESSAGE = "Use the activated skill to help with the user's request."
MAX_DISTANCE = 3


@dataclass(frozen=True)
class SlashConfig:
    enabled: bool = True
    suggest_not_found: bool = True
    partial_matching: bool = False
    prefix: str = "/"


def _bool(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def read_config(engine: Host) -> SlashConfig:
    from sqlmodel import select

    from goclaw.contracts.store import SystemConfig

    with engine.db.session() as s:
        rows = s.exec(
            select(SystemConfig.key, SystemConfig.value).where(
                SystemConfig.tenant_id == engine.settings.tenant_id,
                SystemConfig.key.startswith(KEY_PREFIX),  # type: ignore[attr-defined]
            )
        ).all()
    values = {k[len(KEY_PREFIX) :]: v for k, v in rows}
    prefix = values.get("prefix")
    if prefix is None or len(prefix) != 1 or prefix.isspace():
        prefix = "/"
    return SlashConfig(
        enabled=_bool(values.get("enabled"), True),
        suggest_not_found=_bool(values.get("suggest_not_found"), True),
        partial_matching=_bool(values.get("partial_matching"), False),
        prefix=prefix,
    )


def set_system_config(engine: Host, key: str, value: str) -> None:
    from goclaw.contracts.columns import utcnow
    from goclaw.contracts.store import SystemConfig

    def _do(s: Any) -> None:
        row = s.get(SystemConfig, (engine.settings.tenant_id, key)) or SystemConfig(
            tenant_id=engine.settings.tenant_id, key=key
        )
        row.value = str(value)
        row.updated_at = utcnow()
        s.add(row)

    engine.db.run_write(_do)


# --------------------------------------------------------------------------- parsing and matching


@dataclass(frozen=True)
class Parsed:
    kind: str  # list | help | use | direct
    target: str  # what names the skill (plus, for use/direct, the prompt after it)


def looks_like_path(token: str) -> bool:
    return any(c in token for c in "/\\.")


def parse(text: str, prefix: str) -> Parsed | None:
    t = (text or "").strip()
    if not t.startswith(prefix):
        return None
    body = t[len(prefix) :].strip()
    if not body:
        return None
    parts = body.split(None, 1)
    first = parts[0]
    rest = parts[1].strip() if len(parts) > 1 else ""
    if looks_like_path(first):
        return None
    word = first.lower()
    if word == "list-skills":
        return Parsed("list", "")
    if word == "help":
        return Parsed("help", rest) if rest else None
    if word in ("use", "activate"):
        return Parsed("use", rest) if rest else None
    return Parsed("direct", body)


def match(view: SkillView, raw: str, partial: bool) -> tuple[str, str] | None:
    """``(slug, remainder)`` for the skill ``raw`` names (slug or name, case-insensitive).

    Exact match, or ``raw`` starting with the value plus a space; with partial matching, a
    value starting with the first word. The longest match wins; a tie between two skills is
    no match.
    """
    low = raw.lower()
    first = low.split(None, 1)[0] if low.split() else ""
    best: dict[str, tuple[int, str]] = {}
    for s in view.skills:
        for value in {s.record.slug.lower(), s.record.name.lower()}:
            if not value:
                continue
            found: tuple[int, str] | None = None
            if low == value:
                found = (len(value), "")
            elif low.startswith(value) and len(low) > len(value) and low[len(value)].isspace():
                found = (len(value), raw[len(value) :].strip())
            elif partial and first and value.startswith(first):
                found = (len(first), raw[len(first) :].strip())
            if found is not None and (s.slug not in best or found[0] > best[s.slug][0]):
                best[s.slug] = found
    if not best:
        return None
    top = max(score for score, _r in best.values())
    winners = [slug for slug, (score, _r) in best.items() if score == top]
    if len(winners) != 1:
        return None
    return winners[0], best[winners[0]][1]


def edit_distance(a: str, b: str) -> int:
    """Edit distance where swapping two neighbouring letters counts as one edit (``pfd`` → ``pdf``)."""
    if a == b:
        return 0
    rows: list[list[int]] = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            d = min(rows[-1][j] + 1, cur[j - 1] + 1, rows[-1][j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, rows[-2][j - 2] + 1)
            cur.append(d)
        rows = [rows[-1], cur]
    return rows[-1][-1]


MIN_SUGGEST_CHARS = 3  # "/ok thanks", "/hi": too short to be a typo of anything, never a command
MIN_PREFIX_CHARS = 4  # "/front" may be an abbreviation; "/the" is a word


def allowed_distance(length: int) -> int:
    """Edits tolerated for a typed word of ``length`` chars: 1 up to 5 chars, 2 up to 8, then 3.

    The bound grows with the word, so a short word of prose (``/why is this``) is never "close"
    to a skill just because every short string is within 3 edits of every other one.
    """
    return min(MAX_DISTANCE, 1 if length <= 5 else 2 if length <= 8 else 3)


def _words(value: str) -> set[str]:
    return {w for w in re.split(r"[^0-9a-z]+", value) if w}


def suggestions(view: SkillView, target: str, limit: int = 3) -> list[str]:
    """Skills the unknown command ``target`` plausibly misspells or abbreviates, closest first.

    Nothing for a word under 3 chars. A word of 4+ chars that starts a slug or name, or is one
    of its words (``/design``), is distance 0; otherwise the edit distance to the slug, the name
    or (4+ chars) their first ``len(target)`` chars must be within :func:`allowed_distance`.
    """
    t = target.strip().lower()
    if len(t) < MIN_SUGGEST_CHARS:
        return []
    limit_d = allowed_distance(len(t))
    scored: list[tuple[int, str]] = []
    for s in view.skills:
        slug, name = s.record.slug.lower(), s.record.name.lower()
        long_enough = len(t) >= MIN_PREFIX_CHARS
        if long_enough and (slug.startswith(t) or name.startswith(t) or t in _words(slug) | _words(name)):
            d = 0
        else:
            candidates = [slug, name] + ([slug[: len(t)], name[: len(t)]] if long_enough else [])
            d = min(edit_distance(t, c) for c in candidates if c)
        if d <= limit_d:
            scored.append((d, s.slug))
    return [slug for _d, slug in sorted(scored)[:limit]]


# --------------------------------------------------------------------------- the commands


def _prepare(text: str, ctx: PromptContext, kinds: tuple[str, ...]) -> tuple[Parsed, SlashConfig, Any] | None:
    engine = ctx.engine
    if not engine.has_service("skills"):
        return None
    cfg = engine.skills.slash_config()
    if not cfg.enabled:
        return None
    parsed = parse(text, cfg.prefix)
    if parsed is None or parsed.kind not in kinds:
        return None
    view = engine.skills.view(ctx.agent, ctx.user or None, ctx.request.skill_filter)
    return parsed, cfg, view


def _unknown(command: str, target: str, cfg: SlashConfig, view: Any, prefix: str) -> SlashResult | None:
    if not cfg.suggest_not_found:
        return None
    found = suggestions(view, target)
    if not found:
        return None  # nothing close: the message passes through unchanged
    listed = ", ".join(f"`{prefix}{s}`" for s in found)
    return SlashResult(
        command=command,
        reply=f"No skill matches `{target}`. Did you mean: {listed}?",
        suggestions=found,
    )


class ListSkillsCommand:
    """``/list-skills``: the caller's skills, sorted by slug."""

    name = "list-skills"
    order = 10

    def handle(self, text: str, ctx: PromptContext) -> SlashResult | None:
        prep = _prepare(text, ctx, ("list",))
        if prep is None:
            return None
        _parsed, _cfg, view = prep
        if not len(view):
            return SlashResult(command=self.name, reply="No skills are available.")
        lines = ["Available skills:"]
        lines += [f"- `{s.slug}` - {s.record.description or s.record.name}" for s in view.skills]
        return SlashResult(command=self.name, reply="\n".join(lines))


class HelpCommand:
    """``/help <slug-or-name>``: description and usage of one skill."""

    name = "help"
    order = 20

    def handle(self, text: str, ctx: PromptContext) -> SlashResult | None:
        prep = _prepare(text, ctx, ("help",))
        if prep is None:
            return None
        parsed, cfg, view = prep
        hit = match(view, parsed.target, cfg.partial_matching)
        if hit is None:
            return _unknown(self.name, parsed.target, cfg, view, cfg.prefix)
        r = view.by_slug[hit[0]].record
        p = cfg.prefix
        reply = (
            f"{r.name} (`{r.slug}`)\n\n{r.description or '(no description)'}\n\n"
            f"Use it with `{p}{r.slug} <your request>` or `{p}use {r.slug} <your request>`."
        )
        return SlashResult(command=self.name, skill=None, reply=reply)


class ActivateCommand:
    """Activate a skill for this turn: ``/use <slug-or-name> prompt`` (and ``/activate``), or
    ``/<slug> prompt`` directly; an unknown target gets suggestions (or passes through)."""

    def __init__(self, name: str, order: int, kind: str) -> None:
        self.name = name
        self.order = order
        self._kind = kind

    def handle(self, text: str, ctx: PromptContext) -> SlashResult | None:
        prep = _prepare(text, ctx, (self._kind,))
        if prep is None:
            return None
        parsed, cfg, view = prep
        hit = match(view, parsed.target, cfg.partial_matching)
        if hit is None:
            return _unknown(self.name, parsed.target.split()[0], cfg, view, cfg.prefix)
        return SlashResult(command=self.name, skill=hit[0], message=hit[1] or DEFAULT_MESSAGE)


@hookimpl
def goclaw_slash_commands() -> list[Any]:
    return [
        ListSkillsCommand(),
        HelpCommand(),
        ActivateCommand("use", 30, "use"),  # /use <slug-or-name> prompt
        ActivateCommand("skill", 90, "direct"),  # /<slug> prompt
    ]
