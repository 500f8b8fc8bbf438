#!/usr/bin/env bash
# pgss_ng demo: install dependencies, build and install the extension, start a
# throwaway PostgreSQL server with pgss_ng preloaded, run a 10-second
# pgbench TPC-B load and show what pgss_ng recorded. The server and its data
# directory are removed at the end, also on failure. Run as root.
# PGSS_NG_PG=16|17|18 selects the server version (default 15), e.g.
#   PGSS_NG_PG=18 bash scripts/demo.sh
set -euo pipefail

cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "demo.sh: must run as root (try: sudo bash scripts/demo.sh)" >&2
    exit 1
fi

. scripts/pg-versions.sh
export PGSS_NG_PG=${PGSS_NG_PG:-15}
PG_CONFIG=$(pgss_ng_pg_config "$PGSS_NG_PG")
export PG_CONFIG

say() { printf '\n=== %s\n' "$*"; }

say "Installing dependencies"
# the demo needs no postgres_exporter (only the tests scrape with it)
PGSS_NG_NO_TOOLS=1 bash scripts/install-deps.sh
PGBIN=$("$PG_CONFIG" --bindir)
say "Building and installing pgss_ng ($("$PG_CONFIG" --version))"
bash scripts/build.sh

DIR=$(mktemp -d /tmp/pgss_ng_demo.XXXXXX)
chown postgres:postgres "$DIR"
PGDATA_DIR=$DIR/data
LOG=$DIR/server.log

as_pg() { (cd "$DIR" && runuser -u postgres -- "$@"); }

# Keep the original stdout/stderr: an error inside a redirected command
# (e.g. "as_pg ... >/dev/null") runs the EXIT trap with that redirection.
exec 3>&1 4>&2
cleanup() {
    local rc=$?
    exec 1>&3 2>&4
    if [ -f "$PGDATA_DIR/postmaster.pid" ]; then
        say "Stopping the server"
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null || true
    fi
    if [ "$rc" -ne 0 ] && [ -f "$LOG" ]; then
        echo "--- server log (last 40 lines):"
        tail -n 40 "$LOG" || true
    fi
    rm -rf "$DIR"
    if [ "$rc" -eq 0 ]; then say "Done; removed $DIR"; else say "FAILED (exit $rc); removed $DIR"; fi
}
trap cleanup EXIT

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=5499
while port_in_use "$PORT"; do
    PORT=$((PORT + 1))
    [ "$PORT" -lt 5600 ] || { echo "no free port in 5499-5599" >&2; exit 1; }
done

say "Creating a throwaway cluster in $PGDATA_DIR (port $PORT, localhost only)"
as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --no-locale >"$DIR/initdb.log" \
    || { cat "$DIR/initdb.log"; exit 1; }
cat >>"$PGDATA_DIR/postgresql.conf" <<CONF

# pgss_ng demo
port = $PORT
listen_addresses = 'localhost'
unix_socket_directories = '$DIR'
shared_preload_libraries = 'pgss_ng'
CONF

say "Starting the server"
as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$LOG" -w start >/dev/null

PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$DIR" -p "$PORT" -U postgres -d postgres)
PGBENCH=("$PGBIN/pgbench" -h "$DIR" -p "$PORT" -U postgres)

say "CREATE EXTENSION pgss_ng"
as_pg "${PSQL[@]}" -c "CREATE EXTENSION pgss_ng"

say "pgbench -i -s 10 (1,000,000 accounts)"
as_pg env PGOPTIONS="-c client_min_messages=warning" "${PGBENCH[@]}" -i -q -s 10 postgres

say "Resetting pgss_ng so that only the benchmark is shown"
as_pg "${PSQL[@]}" -c "SELECT pgss_ng_reset()" >/dev/null

say "pgbench -c 4 -j 2 -T 10 (TPC-B, 10 seconds)"
as_pg "${PGBENCH[@]}" -c 4 -j 2 -T 10 postgres

say "Top 10 statements by total_exec_time (pgss_ng view)"
as_pg "${PSQL[@]}" -P pager=off <<'SQL'
SELECT calls,
       round(total_exec_time::numeric, 2) AS total_exec_ms,
       round(mean_exec_time::numeric, 3)  AS mean_exec_ms,
       rows,
       left(query, 60)                    AS query
  FROM pgss_ng
 ORDER BY total_exec_time DESC
 LIMIT 10;
SQL

say "pgss_ng_info"
as_pg "${PSQL[@]}" -P pager=off -c "SELECT * FROM pgss_ng_info"
