"""Hatchling build hook: compiles goclaw's optional C accelerator (``libs/goclaw_search/_accel.c``,
issue 11: indexing speed) next to its source, for wheels and editable installs alike.

Optional by design: without a C compiler or the Python headers, or with ``GOCLAW_NO_ACCEL=1``,
the build goes on and goclaw runs the pure-Python equivalents (identical results, slower
indexing). A wheel that holds the compiled module is tagged for this interpreter and platform.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "libs/goclaw_search/_vec.c"
# Each optional extension module, built next to its source: the accelerator, the passage
# sketcher (libs/goclaw_search/_sketch.c, used by goclaw_embeddings.static_passages), the
# vector-channel kernels (libs/goclaw_search/_vec.c, used by goclaw_search.vecq) and the
# reranker's features and passage scores (libs/goclaw_search/_rerank.c, goclaw_search.rerank).
SOURCES = (SOURCE,)


class AccelBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if os.environ.get("GOCLAW_NO_ACCEL") == "1":
            return
        root = Path(self.root)
        for name in SOURCES:
            source = root / name
            if not source.exists():
                continue
            target = source.with_name(source.stem + str(sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
            if not _compile(source, target):
                continue
            if version != "editable":  # an editable install imports it from the source tree
                build_data["artifacts"].append(target.relative_to(root).as_posix())
                build_data["pure_python"] = False
                build_data["infer_tag"] = True


def _link_flags(platform: str | None = None) -> list[str]:
    """How an extension module is linked: on macOS a bundle whose Python symbols are resolved
    when the interpreter loads it (``-undefined dynamic_lookup``: the linker refuses undefined
    symbols otherwise, and linking libpython would tie the module to one Python build); a
    shared object elsewhere."""
    if (platform or sys.platform) == "darwin":
        return ["-bundle", "-undefined", "dynamic_lookup"]
    return ["-shared"]


def _compile(source: Path, target: Path) -> bool:
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    tmp = target.with_name(target.name + ".tmp")
    cmd = [*cc, "-O2", "-fPIC", *_link_flags(), f"-I{include}", str(source), "-o", str(tmp)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"goclaw: C accelerator not built ({exc}); using pure Python", file=sys.stderr)
        return False
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or ["compiler failed"])[-1]
        print(f"goclaw: C accelerator not built ({detail}); using pure Python", file=sys.stderr)
        tmp.unlink(missing_ok=True)
        return False
    os.replace(tmp, target)
    return True
