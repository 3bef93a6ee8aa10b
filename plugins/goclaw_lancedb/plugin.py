"""Plugin ``goclaw.lancedb``: the ``lancedb`` memory search backend.

An optional backend with an index of its own: LanceDB's full-text index and exact vector
search in a folder next to the database, kept up to date through the search contract's write
side (``apply_changes``). Install ``pip install 'goclaw[lancedb]'`` and select it with::

    [plugins.memory]
    backend = "lancedb"

Settings ``[plugins.lancedb]``: ``path`` (the LanceDB folder; default ``<database>.lancedb``
next to a SQLite database, ``.goclaw/lancedb`` in the workspace otherwise).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from pydantic import BaseModel, Field

from goclaw import hookimpl
from goclaw.errors import ConfigError


class LanceDBSettings(BaseModel):
    """``[plugins.lancedb]``"""

    path: str = Field(default="", description="LanceDB folder (default: next to the database)")


def make_backend(engine: Any) -> Any:
    """The backend, or a one-line error when the extra is not installed."""
    missing = [m for m in ("lancedb", "pyarrow") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(
            f"the lancedb memory backend needs {' and '.join(missing)}: pip install 'goclaw[lancedb]'"
        )
    from goclaw_lancedb.backend import LanceDBSearchBackend, lance_folder

    settings = engine.plugin_settings("lancedb")
    return LanceDBSearchBackend(engine, lance_folder(engine, settings.path))


@hookimpl
def goclaw_settings_model() -> type[BaseModel]:
    return LanceDBSettings


@hookimpl
def goclaw_search_backends() -> dict[str, Any]:
    return {"lancedb": make_backend}
