#!/usr/bin/env bash
# waits_sampler_cpu.sh: the CPU the wait sampler costs, as the CPU time of
# the "pgss_ng writer" process (/proc/PID/schedstat, ns) over a window of
# WINDOW seconds, in % of one core, with N connections (default 10 100 500)
# held by pgbench, in each state:
#   idle      connected, no statement (pgbench's \sleep: nothing published)
#   sleeping  all in one tracked statement (SELECT pg_sleep(...)): every
#             slot has a key, one entry takes all the samples
#   distinct  each in a statement of its own (pg_sleep with count(cK) over
#             an empty table of N columns): N entries take a sample each
#             tick, the most work adding them
#   busy      pgbench -S (select-only, CPU bound), N clients: the sampler
#             competes for the CPU with the backends (only N <= BUSY_MAX)
# and, for comparison, the same writer with sampling off (period 0) while
# N connections sleep.  On a machine with few cores, BUSY_MAX (default 100)
# keeps the CPU-bound case to what the machine can run.  With ROUNDS > 1
# the states of each N are measured in rotated order ROUNDS times, each
# line is one measurement, and a last line per N gives the medians: on a
# shared machine the writer's floor (its wake-ups) moves with the load.
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [N="10 100 500"] [WINDOW=10] [ROUNDS=1] \
#       [PERIOD=10] [BUSY_MAX=100] [PORT=54360] bash bench/waits_sampler_cpu.sh
# Needs pgss_ng installed into that PostgreSQL (scripts/build.sh) and its
# pgbench.  About WINDOW x (4 x |N| + 2) seconds.
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
N=${N:-10 100 500}
WINDOW=${WINDOW:-10}
PERIOD=${PERIOD:-10}
BUSY_MAX=${BUSY_MAX:-100}
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-54360}

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" N="$N" \
		WINDOW="$WINDOW" PERIOD="$PERIOD" BUSY_MAX="$BUSY_MAX" PORT="$PORT" \
		ROUNDS="$ROUNDS" \
		bash "$(readlink -f "$0")"
fi

BIN=$("$PG_CONFIG" --bindir)
WORK=$(mktemp -d /tmp/waitscpu.XXXXXX)
unset PGUSER PGPASSWORD PGHOST PGPORT || true
export PGDATABASE=postgres PGHOST=$WORK PGPORT=$PORT
maxn=0
for n in $N; do [ "$n" -gt "$maxn" ] && maxn=$n; done

cleanup()
{
	"$BIN/pg_ctl" -D "$WORK/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN/initdb" -D "$WORK/data" -A trust >/dev/null
cat >>"$WORK/data/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
listen_addresses = ''
shared_preload_libraries = 'pgss_ng'
pgss_ng.wait_sample_period = $PERIOD
max_connections = $((maxn + 20))
autovacuum = off
fsync = off
CONF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/log" -w start >/dev/null
psql=("$BIN/psql" -X -q -At -v ON_ERROR_STOP=1)
"${psql[@]}" -c 'CREATE EXTENSION pgss_ng'
"${psql[@]}" -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 "$maxn"))"
"$BIN/pgbench" -i -q -s 1 >/dev/null 2>&1
# the writer (no database connection: not in pg_stat_activity) by its title
pm=$(head -1 "$WORK/data/postmaster.pid")
writer=$(ps --ppid "$pm" -o pid=,args= | awk '/pgss_ng writer/ { print $1 }')
[ -n "$writer" ] || { echo "waits_sampler_cpu.sh: no pgss_ng writer" >&2; exit 1; }
# cpu_ns: the writer's CPU time so far (ns, the scheduler's own count)
cpu_ns()
{
	awk '{ print $1 }' "/proc/$writer/schedstat"
}

# measure STATE N: start pgbench holding N connections in STATE, wait until
# they are all connected, measure the writer over WINDOW seconds
measure()
{
	local state=$1 n=$2 script=$WORK/$1.sql dur=$((WINDOW + 30)) opts=()
	case $state in
		idle) echo "\\sleep ${dur} s" >"$script" ;;
		sleeping|off) echo "SELECT pg_sleep($dur);" >"$script" ;;
		distinct)
			printf '%s\n' '\set k :client_id + 1' \
				"SELECT pg_sleep($dur), count(c:k) FROM w;" >"$script"
			opts=(-M simple) ;;
		busy) script= ;;
	esac
	if [ -n "$script" ]; then
		"$BIN/pgbench" -n -c "$n" -j 4 -t 1 "${opts[@]}" -f "$script" >/dev/null 2>&1 &
	else
		"$BIN/pgbench" -n -S -c "$n" -j 2 -T $((WINDOW + 5)) >/dev/null 2>&1 &
	fi
	local pgb=$!
	for ((i = 0; i < 600; i++)); do
		[ "$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name = 'pgbench'")" -ge "$n" ] && break
		sleep 0.1
	done
	sleep 1
	local t0 c0 c1 t1
	t0=$(date +%s.%N)
	c0=$(cpu_ns)
	sleep "$WINDOW"
	c1=$(cpu_ns)
	t1=$(date +%s.%N)
	awk -v s="$state" -v n="$n" -v d=$((c1 - c0)) -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "  %-9s %5d %10.3f %%\n", s, n, 100 * d / 1e9 / (t1 - t0) }' |
		tee -a "$WORK/results"
	"${psql[@]}" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
	kill "$pgb" 2>/dev/null || true
	wait "$pgb" 2>/dev/null || true
	for ((i = 0; i < 600; i++)); do
		[ "$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'")" -eq 0 ] && break
		sleep 0.1
	done
}

echo "$("$BIN/postgres" --version), $(nproc) CPUs: CPU of the pgss_ng writer over ${WINDOW} s, % of one core"
echo "  state     conns  writer CPU   (period $PERIOD ms)"
for n in $N; do
	states=(idle sleeping distinct)
	[ "$n" -le "$BUSY_MAX" ] && states+=(busy)
	for ((r = 0; r < ROUNDS; r++)); do
		for ((k = 0; k < ${#states[@]}; k++)); do
			measure "${states[(k + r) % ${#states[@]}]}" "$n"
		done
	done
	if [ "$ROUNDS" -gt 1 ]; then
		line="  medians  $(printf '%5d' "$n"):"
		for state in "${states[@]}"; do
			line="$line $state $(awk -v s="$state" -v n="$n" '$1 == s && $2 == n { print $3 }' "$WORK/results" |
				sort -g | awk '{ v[NR] = $1 } END { printf "%.3f%%", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
		done
		echo "$line"
	fi
done
"${psql[@]}" -c "ALTER SYSTEM SET pgss_ng.wait_sample_period = 0" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
echo "  (sampling off: period 0)"
for n in $N; do
	measure off "$n"
done
"${psql[@]}" -c "SELECT wait_events_dropped, wait_samples_lost FROM pgss_ng_info" |
	awk -F'|' '{ printf "  pgss_ng_info: wait_events_dropped %s, wait_samples_lost %s\n", $1, $2 }'
