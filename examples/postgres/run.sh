#!/usr/bin/env bash
# The quick-start tour on PostgreSQL + pgvector instead of the embedded SQLite database.
#
#   bash examples/postgres/run.sh [--database-url] URL [GOCLAW] [WORKSPACE]
#   GOCLAW_DATABASE_URL=URL bash examples/postgres/run.sh
#
# URL        postgresql://USER:PASSWORD@HOST:5432/DB (the pgvector extension must be
#            available in that database; see examples/README.md)
# GOCLAW     the goclaw executable (default: .venv/bin/goclaw if present, else goclaw)
# WORKSPACE  the workspace folder (default: .quickstart-pg). Memory files stay on disk in the
#            workspace; the database holds agents, context files, skills and the search index.
#            Keep using the same folder with the same database.
set -euo pipefail
cd "$(dirname "$0")/../.."   # the repository root

URL=""
if [ "${1:-}" = "--database-url" ]; then
  URL="${2:-}"
  shift 2 || true
elif [[ "${1:-}" == postgres* ]]; then
  URL="$1"
  shift
fi
URL="${URL:-${GOCLAW_DATABASE_URL:-}}"
if [ -z "$URL" ]; then
  echo "usage: bash examples/postgres/run.sh [--database-url] postgresql://USER:PASS@HOST:5432/DB [GOCLAW] [WORKSPACE]" >&2
  echo "       (or set GOCLAW_DATABASE_URL)" >&2
  exit 2
fi
case "$URL" in
  postgres://* | postgresql://* | postgresql+psycopg://*) ;;
  *) echo "error: not a PostgreSQL URL: ${URL%%://*}://..." >&2; exit 2 ;;
esac

if [ -n "${1:-}" ]; then
  G="$1"
elif [ -x .venv/bin/goclaw ]; then
  G=.venv/bin/goclaw
else
  G=goclaw
fi
WS="${2:-.quickstart-pg}"

printf '==> PostgreSQL: %s\n' "$(printf '%s' "$URL" | sed -E 's#://([^:/@]+):[^@]*@#://\1:***@#')" >&2
# Fail early, with goclaw's one-line message, when the database cannot be reached.
"$G" -w "$(mktemp -d)" --database-url "$URL" agent list >/dev/null

GOCLAW_ARGS="--database-url $URL" exec bash examples/quickstart/run.sh "$G" "$WS"
