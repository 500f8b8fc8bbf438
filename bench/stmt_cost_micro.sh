#!/usr/bin/env bash
# stmt_cost_micro.sh: what tracking one statement costs a backend, in
# instructions (valgrind's callgrind): the untracked server, pg_stat_statements
# and pgss_ng, each preloaded alone in a cluster of its own.
#
# Instructions do not move with the machine's load, which on a shared 2-CPU
# machine moves backend CPU time per transaction by 2x between rounds
# (bench/run.sh --cpu): this is the steady companion of that measurement.
# They do not see what instructions hide: cache misses, and system calls
# (pg_stat_statements opens, writes and closes its text file for each new
# entry; that is a few instructions here and a few microseconds of CPU).
#
# Workloads (psql, simple protocol, one table w of 100 int columns):
#   hot      one statement with a constant, again and again (the entry
#            exists: jumbling, lookup, counting)
#   trickle  4,950 known two-column shapes in turn
#   cold     every statement new (SELECT cA, cB, cC, cD FROM w, distinct);
#            the table is full, so every new entry means an eviction
#            (pg_stat_statements: a sort of all entries every MAX/20 new
#            ones; pgss_ng: a bounded run)
# The table is filled with MAX * 6/5 other statements first, then the hot
# and trickle ones run twice (all of them known, at MAX 5000); the
# workloads run in the order given (cold last: it evicts).
# Each variant's cluster is filled, then restarted under callgrind; each
# workload runs in a session of N1 statements and in one of N2: the
# difference of the two backends' totals over N2 - N1 is one statement
# (the session's start and end cancel out).
#
# Printed: instructions per statement of each variant, the extra over the
# untracked server, and pgss_ng's extra against pg_stat_statements'.
# PLANS=1 adds the variant pgss_ng_noplans (pgss_ng with
# pgss_ng.track_plans off; pgss_ng runs with it on) and prints what plan
# rows cost per statement: pgss_ng's instructions less pgss_ng_noplans'.
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [MAX=5000] [N1=200] [N2=2200] \
#       [WORKLOADS="hot trickle cold"] [PORT=54339] [KEEP=1] \
#       bash bench/stmt_cost_micro.sh
# Needs pgss_ng installed into that PostgreSQL (scripts/build.sh), its
# pg_stat_statements, and valgrind.  About 2 minutes on 2 CPUs.  KEEP=1
# keeps the work directory (the callgrind files, for callgrind_annotate).
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
MAX=${MAX:-5000}
N1=${N1:-200}
N2=${N2:-2200}
WORKLOADS=${WORKLOADS:-hot trickle cold}
PORT=${PORT:-54339}

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" MAX="$MAX" \
		N1="$N1" N2="$N2" WORKLOADS="$WORKLOADS" PORT="$PORT" \
		KEEP="${KEEP:-}" PLANS="${PLANS:-}" bash "$(readlink -f "$0")"
fi
command -v valgrind >/dev/null || { echo "stmt_cost_micro.sh: needs valgrind" >&2; exit 2; }
[ "$N2" -gt "$N1" ] || { echo "stmt_cost_micro.sh: N2 must exceed N1" >&2; exit 2; }

BIN=$("$PG_CONFIG" --bindir)
WORK=$(mktemp -d /tmp/stmtcost.XXXXXX)
unset PGUSER PGPASSWORD PGHOST PGPORT || true
export PGDATABASE=postgres
RUNNING=()

stop()
{
	for d in "${RUNNING[@]}"; do
		"$BIN/pg_ctl" -D "$d/data" -m fast -w -t 600 stop >/dev/null 2>&1 || true
	done
	[ -n "${KEEP:-}" ] && echo "kept: $WORK" || rm -rf "$WORK"
}
trap stop EXIT

# statements FIRST COUNT: COUNT distinct four-column selects, numbered from
# FIRST (the number's digits in base 100 pick the columns)
statements()
{
	awk -v f="$1" -v n="$2" 'BEGIN {
		for (i = f; i < f + n; i++)
			printf "SELECT c%d, c%d, c%d, c%d FROM w;\n", 1 + i % 100,
				1 + int(i / 100) % 100, 1 + int(i / 10000) % 100,
				1 + int(i / 1000000) % 100
	}'
}

# workload NAME COUNT FILE: the statements of one session
workload()
{
	case $1 in
		cold) statements $((100000000 + RANDOM_BASE)) "$2" ;;
		hot) awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print "SELECT c1 FROM w WHERE c2 = 7;" }' ;;
		trickle) awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) { h = i % 4950; printf "SELECT c%d, c%d FROM w;\n", 1 + h % 100, 2 + int(h / 100) } }' ;;
	esac >"$3"
	echo 'SELECT pg_backend_pid();' >>"$3"
}

# pid_of FILE DIR: run a session, print its backend's pid
pid_of()
{
	"$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$2" -p "$3" -f "$1" | tail -1
}

total_of()
{
	sed -n 's/^summary: //p; s/^totals: //p' "$1" | head -1
}

declare -A IR
port=$PORT
VARIANTS="untracked pg_stat_statements pgss_ng${PLANS:+ pgss_ng_noplans}"
for v in $VARIANTS; do
	dir=$WORK/$v
	mkdir -p "$dir"
	"$BIN/initdb" -D "$dir/data" -A trust >/dev/null
	case $v in
		untracked) spl= ;;
		pgss_ng_noplans) spl=pgss_ng ;;
		*) spl=$v ;;
	esac
	cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
listen_addresses = ''
shared_preload_libraries = '$spl'
pg_stat_statements.max = $MAX
pgss_ng.max = $MAX
pgss_ng.track_plans = $([ $v = pgss_ng_noplans ] && echo off || echo on)
autovacuum = off
fsync = off
max_connections = 10
CONF
	"$BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
	RUNNING+=("$dir")
	psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port")
	[ $v = untracked ] || "${psql[@]}" -c "CREATE EXTENSION $spl"
	"${psql[@]}" -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 100))"
	statements 0 $((MAX * 6 / 5)) >"$dir/fill.sql"
	"${psql[@]}" -o /dev/null -f "$dir/fill.sql"
	{ workload hot 1 /dev/stdout; workload trickle 4950 /dev/stdout; } | grep -v pg_backend_pid >"$dir/warm.sql"
	"${psql[@]}" -o /dev/null -f "$dir/warm.sql" -f "$dir/warm.sql"
	"$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$dir/cg.%p" \
		"$BIN/postgres" -D "$dir/data" >"$dir/vg.log" 2>&1 &
	for ((i = 0; i < 300; i++)); do
		"$BIN/pg_isready" -q -h "$dir" -p "$port" && break
		sleep 1
	done
	for w in $WORKLOADS; do
		RANDOM_BASE=$((1000000 * ${#w}))
		workload "$w" "$N1" "$dir/$w.1.sql"
		RANDOM_BASE=$((RANDOM_BASE + 500000))
		workload "$w" "$N2" "$dir/$w.2.sql"
		echo "$v $w $(pid_of "$dir/$w.1.sql" "$dir" "$port") $(pid_of "$dir/$w.2.sql" "$dir" "$port")" >>"$WORK/pids"
	done
	# the counts are written when the backends exit
	"$BIN/pg_ctl" -D "$dir/data" -m fast -w -t 600 stop >/dev/null
	while read -r vv w p1 p2; do
		[ "$vv" = "$v" ] || continue
		IR[$v.$w]=$((($(total_of "$dir/cg.$p2") - $(total_of "$dir/cg.$p1")) / (N2 - N1)))
	done <"$WORK/pids"
	port=$((port + 1))
done

echo "$("$BIN/postgres" --version), max $MAX: instructions per statement (callgrind, $N1 and $N2 statements)"
printf '  %-8s %12s %20s %16s %14s %s\n' workload untracked pg_stat_statements pgss_ng "extra pgss" "extra pgss_ng (ratio)"
for w in $WORKLOADS; do
	u=${IR[untracked.$w]} s=${IR[pg_stat_statements.$w]} n=${IR[pgss_ng.$w]}
	printf '  %-8s %12d %20d %16d %14d %d (%s)\n' "$w" "$u" "$s" "$n" $((s - u)) $((n - u)) \
		"$(awk -v a=$((n - u)) -v b=$((s - u)) 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')"
done
if [ -n "${PLANS:-}" ]; then
	echo "plan rows (pgss_ng.track_plans on less off), instructions per statement:"
	for w in $WORKLOADS; do
		printf '  %-8s %12d\n' "$w" $((IR[pgss_ng.$w] - IR[pgss_ng_noplans.$w]))
	done
fi
