#!/usr/bin/env bash
# The main job on the embedded default (SQLite, no services): set up .venv, then run goclaw on
# the example workspace in examples/quickstart (copied to .quickstart/ so the original stays
# clean): index its memory, and print the assembled system prompt for a message that
# triggers memory recall and a skill.
set -euo pipefail
cd "$(dirname "$0")/.."
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
echo "==> installing goclaw into .venv" >&2
.venv/bin/python -m pip install --quiet -e . 2>&1 | grep -v "is ignored" >&2 || true

GOCLAW=.venv/bin/goclaw
WS=.quickstart
rm -rf "$WS"
if [ -d examples/quickstart ]; then
  cp -r examples/quickstart "$WS"
  exec bash examples/quickstart/run.sh "$GOCLAW" "$WS"
fi

# Fallback while the example workspace does not exist: the kernel tour.
$GOCLAW -w "$WS" init
$GOCLAW -w "$WS" agent create support --type predefined --description "Customer support"
$GOCLAW -w "$WS" agent create scratchpad --type open
$GOCLAW -w "$WS" agent list
$GOCLAW -w "$WS" plugins --all
