#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine, then run every check CI runs:
# ruff, mypy (kernel), mkdocs --strict, and pytest on SQLite AND PostgreSQL + pgvector.
#
#   bash scripts/test.sh            # full suite
#   bash scripts/test.sh -k memory  # extra arguments go to pytest
#
# PostgreSQL: if GOCLAW_TEST_DATABASE_URL is set it is used as is; otherwise, as root on
# Debian, .ci/pg_setup.sh installs and starts PostgreSQL with pgvector. Without either, the
# PostgreSQL half of the suite is skipped (CI requires it: GOCLAW_REQUIRE_POSTGRES=1).
set -euo pipefail
cd "$(dirname "$0")/.."

export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 NO_MKDOCS_2_WARNING=1

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
echo "==> installing goclaw and its test tools into .venv" >&2
.venv/bin/python -m pip install --quiet --upgrade pip 2>/dev/null || true
.venv/bin/python -m pip install --quiet -e ".[dev]" 2>&1 | grep -v "is ignored" >&2 || true
.venv/bin/python -c "import goclaw, goclaw_memory" # fail loudly if the install did not work

# Guard against the compromised litellm releases' credential-stealing .pth file.
.venv/bin/python - <<'PY'
import glob, site, sys
bad = [f for d in site.getsitepackages() for f in glob.glob(d + "/*.pth")
       if "litellm" in f.lower()]
sys.exit(f"suspicious .pth files: {bad}" if bad else 0)
PY

if [ -z "${GOCLAW_TEST_DATABASE_URL:-}" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> starting PostgreSQL + pgvector (.ci/pg_setup.sh)" >&2
    line=$(bash .ci/pg_setup.sh | tail -n 1)
    export "${line?}"
  else
    echo "==> GOCLAW_TEST_DATABASE_URL not set and cannot install PostgreSQL: its tests will be skipped" >&2
  fi
fi

echo "==> ruff" >&2
.venv/bin/ruff check goclaw libs plugins tests benchmarks scripts setup.py
.venv/bin/ruff format --check goclaw libs plugins tests benchmarks scripts setup.py
echo "==> mypy (kernel)" >&2
.venv/bin/mypy
echo "==> mkdocs build --strict" >&2
.venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
echo "==> pytest" >&2
.venv/bin/python -m pytest -q -n 2 "$@"
if [ $# -eq 0 ]; then
  # The search library once more without its compiled module (what a build without a C
  # compiler runs): the numpy versions of the vector kernels.
  echo "==> pytest tests/libs/search, GOCLAW_SEARCH_NUMPY=1" >&2
  GOCLAW_SEARCH_NUMPY=1 .venv/bin/python -m pytest -q -n 2 tests/libs/search
fi
