#!/usr/bin/env bash
# The main job on the embedded default (SQLite, no services): set up .venv, then run goclaw on
# the example workspace in examples/quickstart (copied to .quickstart/ so the original stays
# clean): index its memory, and print the assembled system prompt for a message that
# triggers memory recall and a skill.
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x .venv/bin/python ]; then
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: goclaw needs Python 3.11 or newer; python3 is $(python3 -V 2>&1 || echo missing)" >&2
    exit 2
  fi
  python3 -m venv .venv
fi
echo "==> installing goclaw into .venv" >&2
.venv/bin/python -m pip install --quiet -e . 2>&1 | grep -v "is ignored" >&2 || true

GOCLAW=.venv/bin/goclaw
WS=.quickstart
rm -rf "$WS"
cp -r examples/quickstart "$WS"
exec bash examples/quickstart/run.sh "$GOCLAW" "$WS"

