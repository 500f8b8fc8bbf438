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
# Workloads (psql, simple protocol, one table w of 100 int columns, but
# prepared):
#   prepared one named prepared statement, extended protocol: pgbench -S
#            -M prepared, one client, a fixed count of transactions (the
#            pgbench tables at scale 1; no parsing or jumbling per
#            execution: the hooks' own cost, nearly alone)
#   hot      one statement with a constant, again and again (the entry
#            exists: jumbling, lookup, counting)
#   trickle  4,950 known two-column shapes in turn
#   cold     every statement new (SELECT cA, cB, cC, cD FROM w, distinct);
#            the table is full, so every new entry means an eviction
#            (pg_stat_statements: a sort of all entries every MAX/20 new
#            ones; pgss_ng: a bounded run)
# The table is filled with MAX * 6/5 other statements first, then the hot
# and trickle ones run three times (all of them known, at MAX 5000; the
# third time reaches the shapes whose entries the second one made again
# after an eviction, so that each plan's text is captured before the
# measure, as in a steady state); the workloads run in the order given
# (cold last: it evicts).
# Each variant's cluster is filled, then restarted under callgrind; each
# workload runs in a session of N1 statements and in one of N2: the
# difference of the two backends' totals over N2 - N1 is one statement
# (the session's start and end cancel out).
#
# Printed: instructions per statement of each variant, the extra over the
# untracked server, and pgss_ng's extra against pg_stat_statements'.
# With WAITS_OFF=1 a fourth variant, pgss_ng with wait sampling off
# (pgss_ng.wait_sample_period = 0), and what sampling on costs a statement
# (the key a backend publishes while it runs).
# PROFILE=1 adds, for each tracked variant and workload, the functions of
# the extension (and the hooks' callees it names) with their inclusive
# instructions per statement (callgrind_annotate --inclusive=yes on both
# sessions' backends, the difference over N2 - N1), and for each workload
# every function's exclusive instructions per statement beyond the
# untracked server's, both variants side by side.
# PLANS=1 adds the variant pgss_ng_noplans (pgss_ng with
# pgss_ng.track_plans off; pgss_ng runs with it on) and prints what plan
# rows cost per statement: pgss_ng's instructions less pgss_ng_noplans'.
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [MAX=5000] [N1=200] [N2=2200] \
#       [WORKLOADS="prepared hot trickle cold"] [PORT=54339] [KEEP=1] \
#       [PROFILE=1] [WAITS_OFF=1] bash bench/stmt_cost_micro.sh
# Needs pgss_ng installed into that PostgreSQL (scripts/build.sh), its
# pg_stat_statements and pgbench, and valgrind (PROFILE: callgrind_annotate
# and python3).  About 3 minutes on 2 CPUs.  KEEP=1 keeps the work
# directory (the callgrind files, for callgrind_annotate).
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
MAX=${MAX:-5000}
N1=${N1:-200}
N2=${N2:-2200}
WORKLOADS=${WORKLOADS:-prepared hot trickle cold}
PORT=${PORT:-54339}

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" MAX="$MAX" \
		N1="$N1" N2="$N2" WORKLOADS="$WORKLOADS" PORT="$PORT" \
		KEEP="${KEEP:-}" PROFILE="${PROFILE:-}" PLANS="${PLANS:-}" \
		WAITS_OFF="${WAITS_OFF:-}" TMPDIR="${TMPDIR:-/tmp}" \
		bash "$(readlink -f "$0")"
fi
command -v valgrind >/dev/null || { echo "stmt_cost_micro.sh: needs valgrind" >&2; exit 2; }
[ "$N2" -gt "$N1" ] || { echo "stmt_cost_micro.sh: N2 must exceed N1" >&2; exit 2; }

BIN=$("$PG_CONFIG" --bindir)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/stmtcost.XXXXXX")
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

# pid_of FILE DIR PORT: run a session, print its backend's pid
pid_of()
{
	"$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$2" -p "$3" -f "$1" | tail -1
}

# prepared_pid COUNT DIR PORT: run pgbench -S -M prepared, one client, COUNT
# transactions; print its client's backend pid: the last connection it
# made (logged by log_connections; its first one reads the scale and is
# closed before the client connects)
prepared_pid()
{
	local before
	before=$(wc -l <"$2/vg.log")
	"$BIN/pgbench" -n -S -M prepared -c 1 -t "$1" --random-seed=1 \
		-h "$2" -p "$3" postgres >/dev/null 2>&1
	tail -n +"$((before + 1))" "$2/vg.log" |
		sed -n 's/^\([0-9][0-9]*\) .*connection authorized.*application_name=pgbench.*/\1/p' |
		tail -1
}

total_of()
{
	sed -n 's/^summary: //p; s/^totals: //p' "$1" | head -1
}

# profile FILE1 FILE2 N: inclusive instructions per statement of the
# extension's functions, (FILE2 - FILE1) / N, largest first
profile()
{
	python3 - "$1" "$2" "$3" <<'PY'
import re, subprocess, sys
def incl(f):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes",
                          "--threshold=100", f], capture_output=True,
                         text=True).stdout
    r = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+?):(\S+) \[(\S+)\]", line) \
            or re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+?):(\S+)", line)
        if m:
            name = m.group(3)
            r[name] = r.get(name, 0) + int(m.group(1).replace(",", ""))
    return r
a, b, n = incl(sys.argv[1]), incl(sys.argv[2]), int(sys.argv[3])
d = {k: (b.get(k, 0) - a.get(k, 0)) / n for k in b}
# each hook's own cost: its inclusive cost less the standard function's
print("    hooks, own (inclusive less the standard function they call):")
tot = 0
for k in sorted(d):
    m = re.match(r"^(pgss|pgss_ng)_(planner|ExecutorStart|ExecutorRun|"
                 r"ExecutorFinish|ExecutorEnd|ProcessUtility|post_parse_analyze)$", k)
    if m and d[k] >= 1 and ("standard_" + m.group(2) in d or
                            m.group(2) == "post_parse_analyze"):
        own = d[k] - d.get("standard_" + m.group(2), 0)
        tot += own
        print("    %10.0f  %s" % (own, k))
if tot == 0:
    print("    (none: the server's functions have no symbols)")
else:
    print("    %10.0f  (sum)" % tot)
print("    functions, inclusive:")
keep = re.compile(r"^(pgss|pg_stat_statements|pgss_ng|store_|count_|flush_|find_ref|"
                  r"find_live|call_|next_|begin_|merge_|note_|stmt_|kind_|lookup_|"
                  r"InstrAlloc|InstrEndLoop|GetCurrentTimestamp|clock_gettime|"
                  r"__sigsetjmp|sigsetjmp|GetUserId|hash_search|dshash_|"
                  r"LWLock|log2|exp2|frexp|get_hash_value|hash_bytes|XXH|"
                  r"standard_)")
for v, k in sorted(((v, k) for k, v in d.items() if keep.match(k)), reverse=True):
    if v >= 1:
        print("    %10.0f  %s" % (v, k))
PY
}

declare -A IR PROF
port=$PORT
VARIANTS="untracked pg_stat_statements pgss_ng${PLANS:+ pgss_ng_noplans}${WAITS_OFF:+ pgss_ng_waits_off}"
for v in $VARIANTS; do
	dir=$WORK/$v
	mkdir -p "$dir"
	"$BIN/initdb" -D "$dir/data" -A trust >/dev/null
	case $v in
		untracked) spl= ;;
		pgss_ng_waits_off)
			spl=pgss_ng
			echo 'pgss_ng.wait_sample_period = 0' >>"$dir/data/postgresql.conf" ;;
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
log_connections = on
log_line_prefix = '%p '
CONF
	"$BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
	RUNNING+=("$dir")
	psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port")
	[ $v = untracked ] || "${psql[@]}" -c "CREATE EXTENSION $spl"
	"${psql[@]}" -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 100))"
	statements 0 $((MAX * 6 / 5)) >"$dir/fill.sql"
	"${psql[@]}" -o /dev/null -f "$dir/fill.sql"
	{ workload hot 1 /dev/stdout; workload trickle 4950 /dev/stdout; } | grep -v pg_backend_pid >"$dir/warm.sql"
	"${psql[@]}" -o /dev/null -f "$dir/warm.sql" -f "$dir/warm.sql" -f "$dir/warm.sql"
	if [[ " $WORKLOADS " == *" prepared "* ]]; then
		"$BIN/pgbench" -i -q -s 1 -h "$dir" -p "$port" postgres >/dev/null 2>&1
		"$BIN/pgbench" -n -S -M prepared -c 1 -t 20 -h "$dir" -p "$port" postgres >/dev/null
	fi
	"$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$dir/cg.%p" \
		"$BIN/postgres" -D "$dir/data" >"$dir/vg.log" 2>&1 &
	for ((i = 0; i < 300; i++)); do
		"$BIN/pg_isready" -q -h "$dir" -p "$port" && break
		sleep 1
	done
	for w in $WORKLOADS; do
		if [ "$w" = prepared ]; then
			# the same accounts once first: shared buffers are cold after the restart
			prepared_pid "$N2" "$dir" "$port" >/dev/null
			echo "$v $w $(prepared_pid "$N1" "$dir" "$port") $(prepared_pid "$N2" "$dir" "$port")" >>"$WORK/pids"
			continue
		fi
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
		[ -n "${PROFILE:-}" ] && [ $v != untracked ] &&
			PROF[$v.$w]=$(profile "$dir/cg.$p1" "$dir/cg.$p2" $((N2 - N1)))
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
if [ -n "${PROFILE:-}" ]; then
	for w in $WORKLOADS; do
		for v in pg_stat_statements pgss_ng; do
			echo "$v, $w: inclusive instructions per statement"
			echo "${PROF[$v.$w]}"
		done
	done
	# exclusive instructions per statement beyond the untracked server, by
	# function, of both tracked variants side by side
	for w in $WORKLOADS; do
		echo "$w: exclusive instructions per statement beyond untracked"
		python3 - "$WORK" "$w" $((N2 - N1)) <<'PY'
import re, subprocess, sys, os
def excl(f):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", f],
                         capture_output=True, text=True).stdout
    r = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+?):(\S+)", line)
        if m:
            r[m.group(3)] = r.get(m.group(3), 0) + int(m.group(1).replace(",", ""))
    return r
work, w, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = {}
for line in open(os.path.join(work, "pids")):
    v, ww, a, b = line.split()
    if ww == w:
        A, B = excl(f"{work}/{v}/cg.{a}"), excl(f"{work}/{v}/cg.{b}")
        d[v] = {k: (B.get(k, 0) - A.get(k, 0)) / n for k in set(A) | set(B)}
u, s, g = d["untracked"], d["pg_stat_statements"], d["pgss_ng"]
rows = []
for k in set(u) | set(s) | set(g):
    es, eg = s.get(k, 0) - u.get(k, 0), g.get(k, 0) - u.get(k, 0)
    if abs(es) >= 3 or abs(eg) >= 3:
        rows.append((eg - es, es, eg, k))
print("    %8s %8s %8s  %s" % ("ng-pgss", "pgss", "pgss_ng", "function"))
for r in sorted(rows, reverse=True):
    print("    %8.0f %8.0f %8.0f  %s" % r)
print("    sum: pgss %.0f, pgss_ng %.0f" % (sum(r[1] for r in rows),
                                           sum(r[2] for r in rows)))
PY
	done
fi
if [ -n "${WAITS_OFF:-}" ]; then
	echo "pgss_ng, wait sampling on (pgss_ng.wait_sample_period = 10) against off (0): instructions per statement"
	for w in $WORKLOADS; do
		printf '  %-8s %12d %12d %+d\n' "$w" "${IR[pgss_ng.$w]}" "${IR[pgss_ng_waits_off.$w]}" \
			$((IR[pgss_ng.$w] - IR[pgss_ng_waits_off.$w]))
	done
fi
if [ -n "${PLANS:-}" ]; then
	echo "plan rows (pgss_ng.track_plans on less off), instructions per statement:"
	for w in $WORKLOADS; do
		printf '  %-8s %12d\n' "$w" $((IR[pgss_ng.$w] - IR[pgss_ng_noplans.$w]))
	done
fi
