"""How setuptools puts the wheel together beyond pyproject.toml (its metadata and build
requirements): which folders are which top-level packages, their data files, and goclaw's one
compiled module.

* ``goclaw`` (the kernel), ``libs/goclaw_*`` (the libraries) and ``plugins/goclaw_*`` (the
  built-in plugins) are top-level packages, with their subpackages; ``templates/`` is the
  data package ``goclaw_templates`` (not inside ``goclaw/``). Nothing else: no ``plugins`` or
  ``libs`` package, and an editable install maps just these names to their folders.
* ``goclaw_search._vec`` (``libs/goclaw_search/_vec.pyx``, Cython, with the int8 dots in
  ``_vec_dots.h``, plain C, and the term table's loop over a batch's pieces in
  ``_pieces.pxi``, ``_dense.pxi`` and ``_lexpos.pxi``, Cython, included): the vector channel's
  kernels, the bulk indexing loops (the tokenizer's pieces, new term ids, postings), the
  postgresql backend's dense BM25 and the query terms' positions in stored term strings, an
  optional extension.
  Without a C compiler the build goes on without it and ``goclaw_search.vecq`` and
  ``goclaw_search.term_table`` run their numpy versions (the same results, slower searches
  and indexing).
"""

from __future__ import annotations

import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, find_namespace_packages, setup

EXCLUDE = ["*__pycache__*"]


def _packages() -> dict[str, str]:
    """Every package and its folder."""
    found = {"goclaw": "goclaw"}
    found.update(
        {
            f"goclaw.{p}": f"goclaw/{p.replace('.', '/')}"
            for p in find_namespace_packages("goclaw", exclude=EXCLUDE)
        }
    )
    for root in ("libs", "plugins"):
        for name in find_namespace_packages(root, include=["goclaw_*"], exclude=EXCLUDE):
            found[name] = f"{root}/{name.replace('.', '/')}"
    found["goclaw_templates"] = "templates"
    return found


# Floats rounded as written (no contracted multiply-add): the kernels give numpy's bits.
FLAGS = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off"]
VEC = Extension(
    "goclaw_search._vec", ["libs/goclaw_search/_vec.pyx"], extra_compile_args=FLAGS, optional=True
)
PACKAGES = _packages()
MODULES = cythonize([VEC], build_dir=str(Path("build", "cython")), quiet=True)
for module in MODULES:
    module.optional = True  # (cythonize makes new Extension objects, without the flag)

setup(
    packages=sorted(PACKAGES),
    package_dir=PACKAGES,
    package_data={
        "goclaw.store.migrations": ["*.mako"],
        "goclaw_embeddings.minilm": ["*"],
        "goclaw_embeddings.model": ["*"],
        "goclaw_skills.builtin": ["*/SKILL.md"],
        "goclaw_templates": ["*.md"],
    },
    ext_modules=MODULES,
)
