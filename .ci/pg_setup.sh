#!/usr/bin/env bash
# Install and start PostgreSQL + pgvector for goclaw's tests (Debian 12/13).
#
# Idempotent: safe to re-run; when everything is already in place it only
# starts the cluster if needed and checks role/database/extension.
#
# - Debian 13 (trixie) and any release that ships postgresql-NN-pgvector:
#   installs it from apt.
# - Debian 12 (bookworm): builds pgvector from Debian trixie's *source*
#   package, fetched through a TEMPORARY deb-src entry (never a `deb` entry,
#   which would drag in trixie binaries such as libc).
#
# Progress goes to stderr; stdout gets exactly one line, the last one:
#   GOCLAW_TEST_DATABASE_URL=postgresql+psycopg://goclaw:goclaw@127.0.0.1:5432/goclaw_test
#
# Environment knobs:
#   GOCLAW_PG_FAST=0   do not apply the test-speed settings
#                      (fsync/synchronous_commit/full_page_writes = off).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C

PG_PORT=5432
DB_USER=goclaw
DB_PASS=goclaw
DB_NAME=goclaw_test
URL="postgresql+psycopg://${DB_USER}:${DB_PASS}@127.0.0.1:${PG_PORT}/${DB_NAME}"
SRC_SUITE_FALLBACK=trixie        # the suite whose source package we build on older releases
TMP_SRC_BASENAME=goclaw-pgvector-src

START_TS=$(date +%s)
LOG=$(mktemp /tmp/goclaw-pg-setup.XXXXXX.log)
TMP_SRC_FILE=""
BUILD_DIR=""

step() { printf '[pg_setup] %s\n' "$*" >&2; }
die() {
    printf '[pg_setup] ERROR: %s\n' "$*" >&2
    if [ -s "$LOG" ]; then
        printf '[pg_setup] ---- last lines of %s ----\n' "$LOG" >&2
        tail -n 40 "$LOG" >&2 || true
    fi
    exit 1
}
# run CMD...: run quietly (output to $LOG); on failure show the log tail.
run() {
    printf '+ %s\n' "$*" >>"$LOG"
    "$@" >>"$LOG" 2>&1 || die "command failed: $*"
}
APT_OPTS=(-q -y -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300
          -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
apt_update() { run apt-get -q -o DPkg::Lock::Timeout=300 -o APT::Update::Error-Mode=any update; }
apt_install() { run apt-get "${APT_OPTS[@]}" install --no-install-recommends "$@"; }

cleanup() {
    local rc=$?
    if [ -n "$BUILD_DIR" ] && [ -d "$BUILD_DIR" ]; then rm -rf "$BUILD_DIR"; fi
    if [ -n "$TMP_SRC_FILE" ] && [ -e "$TMP_SRC_FILE" ]; then
        rm -f "$TMP_SRC_FILE"
        step "removed temporary source $TMP_SRC_FILE; refreshing apt lists"
        apt-get -qq -o DPkg::Lock::Timeout=300 update >>"$LOG" 2>&1 || true
    fi
    if [ "$rc" -eq 0 ]; then rm -f "$LOG"; fi
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || die "must run as root"

# ---------------------------------------------------------------- distro ----
# shellcheck disable=SC1091
. /etc/os-release
CODENAME=${VERSION_CODENAME:-}
DEB_MAJOR=$(cut -d. -f1 /etc/debian_version 2>/dev/null || true)
if [ -z "$CODENAME" ]; then
    case "$DEB_MAJOR" in
        12) CODENAME=bookworm ;;
        13) CODENAME=trixie ;;
        *) CODENAME=$(sed -n 's#^\([a-z]*\)/sid$#\1#p' /etc/debian_version 2>/dev/null || true) ;;
    esac
fi
step "system: ${PRETTY_NAME:-unknown} (codename ${CODENAME:-?})"

pkg_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }
have_vector() { [ -f "/usr/share/postgresql/$1/extension/vector.control" ] && [ -f "/usr/lib/postgresql/$1/lib/vector.so" ]; }

# --------------------------------------------------- choose a PG version ----
# 1. the version of an existing cluster configured on our port;
# 2. else the newest installed server;
# 3. else the version Debian's `postgresql` metapackage points to.
PG_VER=""
PG_CLUSTER=main
if command -v pg_lsclusters >/dev/null 2>&1; then
    read -r PG_VER PG_CLUSTER < <(pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3==p {print $1, $2; exit}') || true
    PG_CLUSTER=${PG_CLUSTER:-main}
fi
if [ -z "$PG_VER" ]; then
    PG_VER=$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/postgres' 2>/dev/null \
             | awk -F/ '{print $5}' | sort -n | tail -n1 || true)
fi
APT_UPDATED=0
if [ -z "$PG_VER" ] || ! pkg_installed "postgresql-$PG_VER"; then
    step "apt-get update"
    apt_update; APT_UPDATED=1
    if [ -z "$PG_VER" ]; then
        PG_VER=$(apt-cache show --no-all-versions postgresql 2>/dev/null \
                 | sed -n 's/^Depends:.*postgresql-\([0-9][0-9]*\).*/\1/p' | head -n1)
        [ -n "$PG_VER" ] || die "cannot determine the PostgreSQL version from apt (package 'postgresql')"
    fi
    step "installing postgresql-$PG_VER"
    apt_install "postgresql-$PG_VER" "postgresql-client-$PG_VER"
fi
step "PostgreSQL major version: $PG_VER"
PG_BIN=/usr/lib/postgresql/$PG_VER/bin

# --------------------------------------------------------------- pgvector ----
write_temp_deb_src() {   # $1 = suite; writes $TMP_SRC_FILE
    local suite=$1 srcdir deb822 list_line uri opts signed SRCDIR=""
    srcdir=/etc/apt/sources.list.d/
    eval "$(apt-config shell SRCDIR Dir::Etc::sourceparts/d)"
    srcdir=${SRCDIR:-$srcdir}

    # Preferred: copy URI + Signed-By from the machine's deb822 Debian stanza.
    for deb822 in "${srcdir%/}/debian.sources" "${srcdir%/}"/*.sources; do
        [ -f "$deb822" ] || continue
        case "$deb822" in *"$TMP_SRC_BASENAME"*) continue ;; esac
        local stanza
        stanza=$(awk -v code="$CODENAME" '
            function flush() {
                if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled !~ /^[ \t]*no/ && uris != "" && !done) {
                    n = split(suites, s, /[ \t]+/); hit = 0
                    for (i = 1; i <= n; i++) if (s[i] == code) hit = 1
                    if (hit || (code == "" && uris !~ /security/)) {
                        split(uris, u, /[ \t]+/); printf "URIs: %s\n%s", u[1], signed; done = 1
                    }
                }
                types = uris = suites = signed = enabled = ""; insig = 0
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]/ { if (insig) signed = signed $0 "\n"; next }
            { insig = 0; key = tolower($1); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
              if (key == "types:") types = val
              else if (key == "uris:") uris = val
              else if (key == "suites:") suites = val
              else if (key == "enabled:") enabled = tolower(val)
              else if (key == "signed-by:") { signed = $0 "\n"; insig = 1 } }
            END { flush() }' "$deb822")
        if [ -n "$stanza" ]; then
            TMP_SRC_FILE="${srcdir%/}/${TMP_SRC_BASENAME}.sources"
            {
                echo "# TEMPORARY (goclaw .ci/pg_setup.sh): source-only entry to build pgvector; removed after use."
                echo "Types: deb-src"
                printf '%s\n' "$stanza" | sed -n '1p'
                echo "Suites: $suite"
                echo "Components: main"
                printf '%s\n' "$stanza" | sed -n '2,$p'
            } >"$TMP_SRC_FILE"
            return 0
        fi
    done

    # Fallback: classic one-line sources.list.
    local SRCLIST=/etc/apt/sources.list f files=()
    eval "$(apt-config shell SRCLIST Dir::Etc::sourcelist/f)"
    for f in "${SRCLIST:-/etc/apt/sources.list}" "${srcdir%/}"/*.list; do
        [ -f "$f" ] && files+=("$f")
    done
    [ "${#files[@]}" -gt 0 ] || return 1
    list_line=$(cat "${files[@]}" \
                | awk -v code="$CODENAME" '$1=="deb" {
                      line=$0; sub(/^deb[ \t]+/, "", line); opts=""
                      if (line ~ /^\[/) { opts=substr(line, 2, index(line, "]")-2); line=substr(line, index(line, "]")+1) }
                      n=split(line, f, /[ \t]+/); j=0
                      for (i=1; i<=n; i++) if (f[i] != "") g[++j]=f[i]
                      if (g[2]==code || (code=="" && g[1] !~ /security/)) { print g[1] "\t" opts; exit } }')
    [ -n "$list_line" ] || return 1
    uri=${list_line%%$'\t'*}
    opts=${list_line#*$'\t'}
    signed=$(printf '%s\n' "$opts" | tr ' ' '\n' | sed -n 's/^signed-by=//p' | head -n1)
    if [ -z "$signed" ] && [ -f /usr/share/keyrings/debian-archive-keyring.gpg ]; then
        signed=/usr/share/keyrings/debian-archive-keyring.gpg
    fi
    TMP_SRC_FILE="${srcdir%/}/${TMP_SRC_BASENAME}.list"
    {
        echo "# TEMPORARY (goclaw .ci/pg_setup.sh): source-only entry to build pgvector; removed after use."
        if [ -n "$signed" ]; then
            echo "deb-src [signed-by=$signed] $uri $suite main"
        else
            echo "deb-src $uri $suite main"
        fi
    } >"$TMP_SRC_FILE"
}

build_pgvector_from_source() {
    local suite=$SRC_SUITE_FALLBACK
    [ "$CODENAME" = "$SRC_SUITE_FALLBACK" ] && suite=$CODENAME
    step "pgvector: no apt package for PostgreSQL $PG_VER; building Debian $suite's pgvector source"
    apt_install "postgresql-server-dev-$PG_VER" build-essential dpkg-dev
    write_temp_deb_src "$suite" || die "no Debian apt source found to derive a deb-src entry from"
    step "temporary deb-src entry: $TMP_SRC_FILE"
    apt_update
    BUILD_DIR=$(mktemp -d /tmp/goclaw-pgvector.XXXXXX)
    chmod 755 "$BUILD_DIR"
    if id _apt >/dev/null 2>&1; then chown _apt "$BUILD_DIR"; fi
    (cd "$BUILD_DIR" && run apt-get -q -o DPkg::Lock::Timeout=300 source pgvector)
    local src
    src=$(find "$BUILD_DIR" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
    [ -n "$src" ] || die "apt-get source pgvector produced no source tree"
    step "building $(basename "$src") (make OPTFLAGS=\"\")"
    # OPTFLAGS="": no -march=native, so the library runs on any x86-64 CPU.
    # with_llvm=no: skip JIT bitcode (needs no clang at install time).
    run make -C "$src" PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" with_llvm=no -j"$(nproc)"
    run make -C "$src" PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" with_llvm=no install
    # remove the temporary source now (the EXIT trap does it too, on failure)
    rm -f "$TMP_SRC_FILE"; TMP_SRC_FILE=""
    step "removed temporary deb-src entry; refreshing apt lists"
    apt_update
}

if have_vector "$PG_VER"; then
    step "pgvector: already installed for PostgreSQL $PG_VER"
else
    [ "$APT_UPDATED" = 1 ] || { step "apt-get update"; apt_update; APT_UPDATED=1; }
    cand=$(apt-cache policy "postgresql-$PG_VER-pgvector" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -n "$cand" ] && [ "$cand" != "(none)" ]; then
        step "pgvector: installing postgresql-$PG_VER-pgvector ($cand) from apt"
        apt_install "postgresql-$PG_VER-pgvector"
    else
        case "${ID:-}" in
            debian) build_pgvector_from_source ;;
            *) die "postgresql-$PG_VER-pgvector is not available from apt on this system; install pgvector by hand (see docs/postgres.md)" ;;
        esac
    fi
    have_vector "$PG_VER" || die "pgvector files still missing under /usr/share/postgresql/$PG_VER/extension"
fi

# ---------------------------------------------------------------- cluster ----
cluster_field() {  # $1 = column number of pg_lsclusters -h for our cluster
    pg_lsclusters -h "$PG_VER" "$PG_CLUSTER" 2>/dev/null | awk -v c="$1" '{print $c; exit}'
}
# set_conf KEY VALUE: set a postgresql.conf parameter (VALUE as written in the
# file, quotes included). pg_conftool is not used for this: it writes
# 127.0.0.1 unquoted (a syntax error) and triples explicit quotes.
set_conf() {
    local conf="/etc/postgresql/$PG_VER/$PG_CLUSTER/postgresql.conf"
    if grep -Eq "^[[:space:]]*$1[[:space:]]*=" "$conf"; then
        sed -i -E "s|^[[:space:]]*$1[[:space:]]*=.*|$1 = $2\t\t# set by goclaw .ci/pg_setup.sh|" "$conf"
    else
        printf '%s = %s\t\t# set by goclaw .ci/pg_setup.sh\n' "$1" "$2" >>"$conf"
    fi
}
if [ -z "$(cluster_field 1)" ]; then
    step "creating cluster $PG_VER/$PG_CLUSTER on port $PG_PORT"
    run pg_createcluster -p "$PG_PORT" "$PG_VER" "$PG_CLUSTER"
fi
if [ "$(cluster_field 3)" != "$PG_PORT" ]; then
    step "setting port $PG_PORT on cluster $PG_VER/$PG_CLUSTER (was $(cluster_field 3))"
    [ "$(cluster_field 4)" = online ] && run pg_ctlcluster "$PG_VER" "$PG_CLUSTER" stop
    set_conf port "$PG_PORT"
fi
# ssl=on with a missing snakeoil cert/key would stop the server from starting.
if [ "$(pg_conftool -s "$PG_VER" "$PG_CLUSTER" show ssl 2>/dev/null || true)" = on ]; then
    cert=$(pg_conftool -s "$PG_VER" "$PG_CLUSTER" show ssl_cert_file 2>/dev/null || true)
    key=$(pg_conftool -s "$PG_VER" "$PG_CLUSTER" show ssl_key_file 2>/dev/null || true)
    if { [ -n "$cert" ] && [ ! -r "$cert" ]; } || { [ -n "$key" ] && [ ! -r "$key" ]; }; then
        step "ssl certificate/key missing; setting ssl = off"
        set_conf ssl off
    fi
fi

STATUS=$(cluster_field 4)
if [ "$STATUS" != online ]; then
    # Debian's default listen_addresses='localhost' needs name resolution at
    # start; a machine whose /etc/hosts lacks localhost then gets no TCP socket.
    # Listen on the literal address the tests use (applied at start, so a
    # running server is never restarted for this).
    la=$(pg_conftool -s "$PG_VER" "$PG_CLUSTER" show listen_addresses 2>/dev/null || true)
    if ! printf '%s' "$la" | grep -Eq '(^|[ ,])(127\.0\.0\.1|\*|0\.0\.0\.0)([ ,]|$)'; then
        step "listen_addresses = '127.0.0.1' (was '${la:-default}')"
        set_conf listen_addresses "'127.0.0.1'"
    fi
    # Memory for the searches' working set (postings, chunks, HNSW) in the server's own cache:
    # a quarter of RAM, at most 2 GB, when shared_buffers is still Debian's 128MB (applied at
    # start: a running server is never restarted for this).
    sb=$(pg_conftool -s "$PG_VER" "$PG_CLUSTER" show shared_buffers 2>/dev/null || true)
    if [ -z "$sb" ] || [ "$sb" = 128MB ]; then
        mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
        sb_mb=$(( mem_mb / 4 < 2048 ? mem_mb / 4 : 2048 ))
        if [ "$sb_mb" -gt 128 ]; then
            step "shared_buffers = ${sb_mb}MB, effective_cache_size = $(( mem_mb / 2 ))MB"
            set_conf shared_buffers "${sb_mb}MB"
            set_conf effective_cache_size "$(( mem_mb / 2 ))MB"
        fi
    fi
    DATA_DIR=$(cluster_field 6)
    PIDFILE="$DATA_DIR/postmaster.pid"
    if [ -f "$PIDFILE" ]; then
        # A server killed uncleanly leaves postmaster.pid; if its PID has been
        # reused by another process, postgres refuses to start.
        oldpid=$(head -n1 "$PIDFILE" 2>/dev/null || true)
        if [ -z "$oldpid" ] || ! kill -0 "$oldpid" 2>/dev/null \
           || [ "$(cat "/proc/$oldpid/comm" 2>/dev/null || true)" != postgres ]; then
            step "removing stale $PIDFILE (pid ${oldpid:-?} is not a running postgres)"
            rm -f "$PIDFILE"
        fi
    fi
    install -d -m 2775 -o postgres -g postgres /var/run/postgresql
    step "starting cluster $PG_VER/$PG_CLUSTER"
    if ! pg_ctlcluster "$PG_VER" "$PG_CLUSTER" start >>"$LOG" 2>&1; then
        tail -n 20 "/var/log/postgresql/postgresql-$PG_VER-$PG_CLUSTER.log" >>"$LOG" 2>/dev/null || true
        die "pg_ctlcluster $PG_VER $PG_CLUSTER start failed"
    fi
else
    step "cluster $PG_VER/$PG_CLUSTER already running"
fi

step "waiting for the server on 127.0.0.1:$PG_PORT"
ready=0
for _ in $(seq 1 120); do
    if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 1; then ready=1; break; fi
    sleep 0.5
done
[ "$ready" = 1 ] || die "PostgreSQL did not become ready on 127.0.0.1:$PG_PORT"

# -------------------------------------------------- role, database, ext ----
pg_admin() {  # psql as the postgres superuser over the local socket
    runuser -u postgres -- "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" "$@"
}

step "ensuring role $DB_USER and database $DB_NAME"
pg_admin -d postgres >>"$LOG" 2>&1 <<SQL || die "creating role $DB_USER failed"
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN SUPERUSER PASSWORD '$DB_PASS';
  ELSE
    ALTER ROLE $DB_USER LOGIN SUPERUSER PASSWORD '$DB_PASS';
  END IF;
END
\$\$;
SQL
if [ "$(pg_admin -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]; then
    pg_admin -d postgres -c "CREATE DATABASE $DB_NAME OWNER $DB_USER" >>"$LOG" 2>&1 \
        || die "creating database $DB_NAME failed"
else
    pg_admin -d postgres -c "ALTER DATABASE $DB_NAME OWNER TO $DB_USER" >>"$LOG" 2>&1 \
        || die "setting owner of $DB_NAME failed"
fi
pg_admin -d "$DB_NAME" >>"$LOG" 2>&1 <<'SQL' || die "creating extension vector failed"
CREATE EXTENSION IF NOT EXISTS vector;
DO $$
BEGIN
  IF (SELECT extversion FROM pg_extension WHERE extname = 'vector')
     IS DISTINCT FROM (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') THEN
    ALTER EXTENSION vector UPDATE;
  END IF;
END
$$;
SQL

# ------------------------------------------------ speed settings (tests) ----
if [ "${GOCLAW_PG_FAST:-1}" != 0 ]; then
    cur=$(pg_admin -d postgres -tAc "SELECT current_setting('fsync') || current_setting('synchronous_commit') || current_setting('full_page_writes')")
    if [ "$cur" != offoffoff ]; then
        step "test-speed settings: fsync/synchronous_commit/full_page_writes = off (ALTER SYSTEM)"
        pg_admin -d postgres >>"$LOG" 2>&1 <<'SQL' || die "ALTER SYSTEM failed"
ALTER SYSTEM SET fsync = off;
ALTER SYSTEM SET synchronous_commit = off;
ALTER SYSTEM SET full_page_writes = off;
SELECT pg_reload_conf();
SQL
    fi
fi

# ------------------------------------------------------------ final check ----
info=$(PGPASSWORD="$DB_PASS" PGCONNECT_TIMEOUT=5 "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 \
        -h 127.0.0.1 -p "$PG_PORT" -U "$DB_USER" -d "$DB_NAME" \
        -c "SELECT current_setting('server_version') || ' / pgvector ' || extversion FROM pg_extension WHERE extname = 'vector'" 2>>"$LOG") \
    || die "cannot connect as $DB_USER over TCP (password auth) to $DB_NAME"
[ -n "$info" ] || die "extension vector missing in $DB_NAME"
step "ready: PostgreSQL $info ($(( $(date +%s) - START_TS )) s)"
echo "GOCLAW_TEST_DATABASE_URL=$URL"
