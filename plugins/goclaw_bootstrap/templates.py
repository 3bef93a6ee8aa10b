"""The embedded default context files: templates seeded into new agents and users.

The wheel ships the repository's ``templates/`` folder as the top-level data folder
``goclaw_templates/`` in site-packages; a source checkout (and an editable install) reads
``templates/`` directly. Templates are read once per process.
"""

from __future__ import annotations

import functools
from pathlib import Path

from goclaw.errors import NotFoundError

TEMPLATE_NAMES: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "BOOTSTRAP.md",
    "BOOTSTRAP_PREDEFINED.md",
    "USER_PREDEFINED.md",
)


def template_dirs() -> list[Path]:
    """Where templates are looked for, first match wins: the repository's ``templates/``
    folder (source checkouts, editable installs), then the wheel's ``goclaw_templates/``
    beside this package in site-packages."""
    here = Path(__file__).resolve().parent
    return [here.parents[1] / "templates", here.parent / "goclaw_templates"]


@functools.cache
def load_template(name: str) -> str:
    """The text of template ``name`` (e.g. ``"SOUL.md"``)."""
    for folder in template_dirs():
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise NotFoundError(f"no template {name!r} in {', '.join(str(d) for d in template_dirs())}")
