#!/usr/bin/env bash
# view_read_micro.sh: the latency of one full read of the statistics, pgss_ng
# against pg_stat_statements, both preloaded in one throw-away cluster.
#
# Both tables are filled with the same ~4,750 distinct statements
# (SELECT cA, cB FROM w, 1 <= A < B <= 98, on a 100-column table), with
# pg_stat_statements.max = pgss_ng.max = 5000.  Then, ROUNDS times, one
# pgbench client (-n, simple protocol) runs each of the four reads for SECS
# seconds, the variants interleaved within every round:
#   pgss       SELECT * FROM pg_stat_statements
#   pgss_nt    SELECT * FROM pg_stat_statements(false)
#   ng         SELECT * FROM pgss_ng
#   ng_nt      SELECT * FROM pgss_ng(false)
# and the median of the rounds' mean latencies (ms) is printed with the
# ratios ng/pgss and ng_nt/pgss_nt.  The machine's load (uptime) is printed
# before and after: compare numbers only at a similar load.
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [ROUNDS=7] [SECS=5] [PORT=54329] \
#       bash bench/view_read_micro.sh
# Needs pgss_ng installed into that PostgreSQL (scripts/build.sh) and its
# pg_stat_statements.  KEEP=1 leaves the cluster running (its data
# directory and port are printed) for profiling.
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
ROUNDS=${ROUNDS:-7}
SECS=${SECS:-5}
PORT=${PORT:-54329}
NCOLS=100
NPAIR=98

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" ROUNDS="$ROUNDS" \
		SECS="$SECS" PORT="$PORT" KEEP="${KEEP:-}" bash "$(readlink -f "$0")"
fi

BIN=$("$PG_CONFIG" --bindir)
WORK=$(mktemp -d /tmp/vrmicro.XXXXXX)
DATA=$WORK/data
export PGHOST=$WORK PGPORT=$PORT PGDATABASE=postgres
unset PGUSER PGPASSWORD || true

stop() { "$BIN/pg_ctl" -D "$DATA" -m fast stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
[ -n "${KEEP:-}" ] || trap stop EXIT

"$BIN/initdb" -D "$DATA" -A trust >/dev/null
cat >>"$DATA/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
listen_addresses = ''
shared_preload_libraries = 'pg_stat_statements,pgss_ng'
pg_stat_statements.max = 5000
pgss_ng.max = 5000
shared_buffers = 128MB
max_connections = 20
CONF
"$BIN/pg_ctl" -D "$DATA" -l "$WORK/log" -w start >/dev/null
psql() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -c "CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pgss_ng;"
psql -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 $NCOLS))"
psql -c "INSERT INTO w SELECT $(seq -f '%g' -s ', ' 1 $NCOLS)"
for ((a = 1; a < NPAIR; a++)); do
	for ((b = a + 1; b <= NPAIR; b++)); do
		echo "SELECT c$a, c$b FROM w;"
	done
done >"$WORK/fill.sql"
psql -o /dev/null -f "$WORK/fill.sql"

echo "SELECT * FROM pg_stat_statements;" >"$WORK/pgss.sql"
echo "SELECT * FROM pg_stat_statements(false);" >"$WORK/pgss_nt.sql"
echo "SELECT * FROM pgss_ng;" >"$WORK/ng.sql"
echo "SELECT * FROM pgss_ng(false);" >"$WORK/ng_nt.sql"
VARIANTS="pgss pgss_nt ng ng_nt"

echo "entries: pg_stat_statements $(psql -Atc 'SELECT count(*) FROM pg_stat_statements'), pgss_ng $(psql -Atc 'SELECT count(*) FROM pgss_ng')"
echo "load before: $(uptime)"
# warm-up: one short pass of each
for v in $VARIANTS; do
	"$BIN/pgbench" -n -f "$WORK/$v.sql" -c 1 -T 1 >/dev/null 2>&1
done
for ((r = 1; r <= ROUNDS; r++)); do
	line="round $r:"
	for v in $VARIANTS; do
		lat=$("$BIN/pgbench" -n -f "$WORK/$v.sql" -c 1 -T "$SECS" 2>/dev/null |
			sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p')
		echo "$lat" >>"$WORK/lat.$v"
		line="$line $v=$lat"
	done
	echo "$line"
done
echo "load after: $(uptime)"

med() { sort -g "$WORK/lat.$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for v in $VARIANTS; do eval "m_$v=$(med $v)"; done
echo "median latency (ms) over $ROUNDS rounds of ${SECS}s:"
printf '  pg_stat_statements        %8.3f\n' "$m_pgss"
printf '  pgss_ng                   %8.3f  ratio %.2f\n' "$m_ng" "$(echo "$m_ng / $m_pgss" | bc -l)"
printf '  pg_stat_statements(false) %8.3f\n' "$m_pgss_nt"
printf '  pgss_ng(false)            %8.3f  ratio %.2f\n' "$m_ng_nt" "$(echo "$m_ng_nt / $m_pgss_nt" | bc -l)"
if [ -n "${KEEP:-}" ]; then
	echo "cluster kept: PGHOST=$WORK PGPORT=$PORT data $DATA (stop: $BIN/pg_ctl -D $DATA stop)"
fi
