#!/usr/bin/env bash
# The quick-start tour on the example workspace "Parcelwise support".
#
#   bash examples/quickstart/run.sh [GOCLAW] [WORKSPACE]
#
# GOCLAW     the goclaw executable (default: goclaw on PATH)
# WORKSPACE  the workspace to run in (default: .quickstart). If it has no goclaw.toml yet,
#            this example folder is copied into it first, so the original stays clean.
#
# scripts/quickstart.sh calls this with .venv/bin/goclaw and a fresh copy in .quickstart/.
# Every step is safe to run again: existing agents are kept, context files are rewritten
# from seed/, and memory indexing skips unchanged files. Extra arguments for the database
# (e.g. --database-url ...) can be given in GOCLAW_ARGS (see examples/postgres/run.sh).
set -euo pipefail

EXAMPLE="$(cd "$(dirname "$0")" && pwd)"   # the ORIGINAL example folder (seed files)
G="${1:-goclaw}"
WS="${2:-.quickstart}"
read -r -a EXTRA <<<"${GOCLAW_ARGS:-}"
# Offline by construction: no model is configured, and litellm must not fetch its price map.
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1

step() { printf '\n==> %s\n' "$*" >&2; }
note() { printf '    %s\n' "$*" >&2; }
gc() { "$G" -w "$WS" ${EXTRA[@]+"${EXTRA[@]}"} "$@"; }

if ! command -v "$G" >/dev/null 2>&1; then
  echo "error: goclaw executable not found: $G (install with: pip install -e .)" >&2
  exit 2
fi

# --- 1. workspace -----------------------------------------------------------------------
step "workspace: $WS"
if [ ! -f "$WS/goclaw.toml" ]; then
  mkdir -p "$WS"
  # Copy the example (config, skills, memory files) without the seed folder and this script.
  (cd "$EXAMPLE" && tar --exclude=./seed --exclude=./run.sh -cf - .) | (cd "$WS" && tar -xf -)
  note "copied the example workspace from $EXAMPLE"
fi
gc init

# --- 2. agents --------------------------------------------------------------------------
step "agents: 'support' (predefined, shared persona) and 'scratchpad' (open, per-user)"
# `agent create` refuses an existing name: create only the agents that are missing.
existing="$(gc agent list --json | python3 -c 'import json, sys; print(" ".join(a["name"] for a in json.load(sys.stdin)))')"
has_agent() { [[ " $existing " == *" $1 "* ]]; }
created_support=0
if has_agent support; then
  note "support: already exists"
else
  created_support=1
  gc agent create support --type predefined --display-name "Wren (Parcelwise support)" \
    --description "Support copilot for the Parcelwise customer-support team: researches tickets, checks refund and escalation policy, drafts merchant replies."
fi
if has_agent scratchpad; then
  note "scratchpad: already exists"
else
  gc agent create scratchpad --type open \
    --description "A personal assistant: notes, reminders, drafts. Each user shapes their own."
fi

# --- 3. context files -------------------------------------------------------------------
step "context files: load Wren's persona into the agent level (the admin path)"
for f in SOUL.md IDENTITY.md AGENTS.md TOOLS.md USER_PREDEFINED.md; do
  gc files set --agent support "$f" <"$EXAMPLE/seed/support/$f"
done
# Ada already works with Wren: give her a profile and end her first-run ritual
# (writing BOOTSTRAP.md empty deletes it).
gc files set --agent support --user ada USER.md <"$EXAMPLE/seed/support/users/ada/USER.md"
printf '' | gc files set --agent support --user ada BOOTSTRAP.md

# --- 4. memory --------------------------------------------------------------------------
step "memory: index agents/support (MEMORY.md, daily notes, users/ada/)"
gc memory index --agent support
gc memory index --agent scratchpad >/dev/null

step "memory search, lexical channel: an exact code finds its notes"
note "goclaw memory search 'TCK-4471' --agent support --channel lexical"
gc memory search "TCK-4471" --agent support --channel lexical

step "memory search, vector channel: a paraphrase finds a fact that shares no keyword"
note "goclaw memory search 'which customer would like us to telephone instead of writing?' --agent support --channel vector"
gc memory search "which customer would like us to telephone instead of writing?" --agent support --channel vector

# --- 5. skills --------------------------------------------------------------------------
step "skills: every tier resolved (workspace skills/ shadows .agents/skills/ for 'escalation')"
gc skills list

# --- 6. episodic memory (optional) ------------------------------------------------------
# A short past session, summarised by the episodic worker (deterministic fallback: no LLM).
# Its abstract is auto-injected into the prompt below when the message is about it.
step "episodic memory: record last Friday's session and run the consolidation workers once"
KEY="agent:support:ada:2026-11-27"
if [ "$created_support" = 0 ]; then
  note "already recorded when the agent was created"
elif gc session append --agent support --user ada --key "$KEY" --role user \
  "Acme's AP team says on TCK-4471 that the \$349 refund (re_3QxT7mK2Lp9, issued 13 Nov) is not on their statement yet. Today is the 10th business day." >/dev/null &&
  gc session append --agent support --user ada --key "$KEY" --role assistant \
    "Plan for TCK-4471: on Monday 30 Nov Ada asks Mei Lin to trace refund re_3QxT7mK2Lp9 with Stripe, then replies to Acme AP with the trace result. No compensation beyond the agreed \$349 refund and \$180 SLA credit without Luis and Mei." >/dev/null &&
  gc session end --key "$KEY" >/dev/null &&
  gc workers run --once; then
  :
else
  note "skipped: sessions/workers are not available in this build (the prompt still works)"
fi

# --- 7. the prompt ----------------------------------------------------------------------
MESSAGE="/refund-policy Acme Outdoor's accounts payable team says they still can't see the refund from TCK-4471 on their statement. What exactly did we agree with them, and can I offer anything more to smooth it over?"
step "prompt: the system prompt Wren gets when Ada sends:"
note "$MESSAGE"
note "(the slash command activates the refund-policy skill; the facts are only in memory)"
gc prompt --agent support --user ada --message "$MESSAGE" \
  --tool "memory_search=Search MEMORY.md and memory/*.md (full text + vectors)" \
  --tool "memory_get=Read lines of a memory file" \
  --tool "use_skill=Load a skill's full instructions by slug" \
  --tool "skill_search=Find skills by keywords" \
  --tool "read_context_file=Read a context file (AGENTS.md, USER.md, ...)" \
  --tool "write_context_file=Write a per-user context file (USER.md, BOOTSTRAP.md)"

step "done. Try next:"
note "$G -w $WS memory search 'Kitebox label limit raise' --agent support"
note "$G -w $WS skills search 'outage compensation' --agent support"
note "$G -w $WS prompt --agent support --user ada --message '/escalation a merchant mentions their lawyer' --json"
note "$G -w $WS memory search 'how does Ada want answers formatted' --agent support --user ada"
note "$G -w $WS eval $EXAMPLE/eval/questions.jsonl   # recall, MRR, nDCG per channel (docs/eval.md)"
note "$G -w $WS prompt --agent scratchpad --user ada --mode minimal"
