#!/usr/bin/env bash
# memory.sh: the shared memory an entry takes, pgss_ng against
# pg_stat_statements, each preloaded alone in a cluster of its own beside
# an untracked one, at each MAX (pgss_ng.max, pg_stat_statements.max).
#
# Workloads (psql, simple protocol; a fresh start of the server for each):
#   onecall  MAX distinct statements (SELECT cA, cB, cC, cD FROM w), each
#            run once: an entry per statement, no eviction
#   hot      MAX distinct statements, each run CALLS times with times that
#            span two decades (a subquery over generate_series(1, n), n
#            from 1 to 10,000; about 10 us to 1 ms here)
#
# What is measured, after a full read of pgss_ng_detail (or
# pg_stat_statements) in one session, which maps every DSM segment that
# holds the extension's entries, texts and histograms into that backend:
#   named   the extension's allocations in pg_shmem_allocations (main
#           shared memory, fixed at start)
#   anon    the anonymous allocations, beyond the untracked server's
#           (where pg_stat_statements' hash entries are)
#   dsm     the DSM segments the session maps (/proc/self/maps), beyond
#           the untracked server's after the same workload: where pgss_ng's
#           DSA area grows.  DSM segments are committed whole when made
#           (posix_fallocate on Linux), so their sizes are their real cost,
#           not just the part in use
# and their sum per entry (entries: those the extension shows).  For
# pgss_ng also pgss_ng_info's accounting of what is in use: entry_bytes
# (bodies and hash elements), qtext_bytes (texts) and hist_bytes (the
# histograms), and hist_bytes per entry.  pg_stat_statements keeps its
# texts in a file, not in shared memory: that file's size is printed
# apart.
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [MAXES="5000 50000"] [CALLS=10]
#       [WORKLOADS="onecall hot"] [VARIANTS="untracked pg_stat_statements
#       pgss_ng"] [PORT=54349] [OUT=file.json] [PGSS_NG_CONF="a = 1; b = 2"]
#       bash bench/memory.sh
# Needs pgss_ng installed into that PostgreSQL (scripts/build.sh) and its
# pg_stat_statements.  About 4 minutes on 2 CPUs with the defaults (most of
# it the hot workload at 50,000).  OUT: the raw numbers as JSON lines.
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
MAXES=${MAXES:-5000 50000}
CALLS=${CALLS:-10}
WORKLOADS=${WORKLOADS:-onecall hot}
VARIANTS=${VARIANTS:-untracked pg_stat_statements pgss_ng}
PORT=${PORT:-54349}

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" MAXES="$MAXES" \
		CALLS="$CALLS" WORKLOADS="$WORKLOADS" VARIANTS="$VARIANTS" PORT="$PORT" \
		PGSS_NG_CONF="${PGSS_NG_CONF:-}" \
		OUT="${OUT:-}" bash "$(readlink -f "$0")"
fi

BIN=$("$PG_CONFIG" --bindir)
WORK=$(mktemp -d /tmp/memory.XXXXXX)
unset PGUSER PGPASSWORD PGHOST PGPORT || true
export PGDATABASE=postgres
RUNNING=()

stop()
{
	for d in "${RUNNING[@]}"; do
		"$BIN/pg_ctl" -D "$d/data" -m fast -w -t 600 stop >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}
trap stop EXIT

# statements COUNT REPEAT: COUNT distinct four-column shapes (the number's
# digits in base 100 pick the columns); with REPEAT > 0 each one is run
# REPEAT times, as a subquery over generate_series(1, n) whose n goes
# from 1 to 10,000 in even steps of its logarithm (times over two decades)
statements()
{
	awk -v n="$1" -v r="$2" 'BEGIN {
		for (k = 0; k < (r > 0 ? r : 1); k++)
			for (i = 0; i < n; i++) {
				cols = sprintf("c%d, c%d, c%d, c%d", 1 + i % 100,
					1 + int(i / 100) % 100, 1 + int(i / 10000) % 100,
					1 + int(i / 1000000) % 100)
				if (r == 0)
					printf "SELECT %s FROM w;\n", cols
				else
					printf "SELECT %s, (SELECT count(*) FROM generate_series(1, %d)) FROM w1;\n",
						cols, int(10 ^ (4 * ((k + i) % r) / (r - 1)))
			}
	}'
}

# measure VARIANT: one line of numbers (see the header), after a full read
measure()
{
	local read pattern
	case $1 in
		untracked) read="SELECT 1"; pattern='-' ;;
		pg_stat_statements) read="SELECT count(query) FROM pg_stat_statements"; pattern='pg_stat_statements%' ;;
		pgss_ng) read="SELECT count(query) + count(exec_time_p50) + count(plan_time_p50) FROM pgss_ng_detail"; pattern='pgss_ng%' ;;
	esac
	"${psql[@]}" -At -F ' ' <<SQL
$read \\g /dev/null
SELECT coalesce(sum(allocated_size) FILTER (WHERE name LIKE '$pattern'), 0),
       coalesce(sum(allocated_size) FILTER (WHERE name = '<anonymous>'), 0),
       (SELECT coalesce(sum(('x' || lpad(split_part(r, '-', 2), 16, '0'))::bit(64)::bigint
                          - ('x' || lpad(split_part(r, '-', 1), 16, '0'))::bit(64)::bigint), 0)
          FROM (SELECT split_part(l, ' ', 1) AS r
                  FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') l
                 WHERE l LIKE '%/dev/shm/PostgreSQL.%') m)
  FROM pg_shmem_allocations;
SQL
}

# extra VARIANT: entries and the variant's own accounting
extra()
{
	case $1 in
		untracked) echo "0 0 0 0 0" ;;
		pg_stat_statements)
			"${psql[@]}" -At -F ' ' -c "SELECT count(*), 0, 0, 0,
				(SELECT size FROM pg_stat_file('pg_stat_tmp/pgss_query_texts.stat', true))
				FROM pg_stat_statements" ;;
		pgss_ng)
			# (columns of pgss_ng 1.1: 0 with an older one)
			"${psql[@]}" -At -F ' ' -c "SELECT entries,
				coalesce((to_jsonb(i) ->> 'entry_bytes')::bigint, 0),
				coalesce((to_jsonb(i) ->> 'qtext_allocated_bytes')::bigint, qtext_bytes),
				coalesce((to_jsonb(i) ->> 'hist_bytes')::bigint, 0), 0
				FROM pgss_ng_info i" ;;
	esac
}

echo "$("$BIN/postgres" --version): shared memory per entry (bench/memory.sh, CALLS $CALLS)"
printf '  %-8s %6s %-18s %7s %10s %10s %10s %10s %11s %s\n' workload max variant entries named anon dsm total "per entry" \
	"pgss_ng: entry_bytes qtext_allocated_bytes hist_bytes (per entry) | pgss: text file"
port=$PORT
for max in $MAXES; do
	declare -A BASE=()
	for v in $VARIANTS; do
		dir=$WORK/$v.$max
		mkdir -p "$dir"
		"$BIN/initdb" -D "$dir/data" -A trust >/dev/null
		case $v in
			untracked) spl= ;;
			*) spl=$v ;;
		esac
		cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
listen_addresses = ''
shared_preload_libraries = '$spl'
pg_stat_statements.max = $max
pg_stat_statements.save = off
pgss_ng.max = $max
pgss_ng.save = off
autovacuum = off
fsync = off
max_connections = 10
max_parallel_workers_per_gather = 0
CONF
		# PGSS_NG_CONF: settings of the pgss_ng variant only, "; "-separated
		[ $v = pgss_ng ] && [ -n "${PGSS_NG_CONF:-}" ] &&
			tr ';' '\n' <<<"$PGSS_NG_CONF" >>"$dir/data/postgresql.conf"
		psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port")
		"$BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
		RUNNING+=("$dir")
		[ $v = untracked ] || "${psql[@]}" -c "CREATE EXTENSION $v"
		"${psql[@]}" -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 100));
			CREATE TABLE w1 (LIKE w); INSERT INTO w1 DEFAULT VALUES"
		for w in $WORKLOADS; do
			case $w in
				onecall) statements "$max" 0 ;;
				hot) statements "$max" "$CALLS" ;;
			esac >"$dir/$w.sql"
			"$BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w restart >/dev/null
			"${psql[@]}" -o /dev/null -f "$dir/$w.sql"
			read -r named anon dsm < <(measure $v)
			read -r entries eb qb hb tf < <(extra $v)
			if [ $v = untracked ]; then
				BASE[$w.anon]=$anon BASE[$w.dsm]=$dsm
			fi
			anon=$((anon - ${BASE[$w.anon]:-0})) dsm=$((dsm - ${BASE[$w.dsm]:-0}))
			total=$((named + anon + dsm))
			if [ "$entries" -gt 0 ]; then per=$((total / entries)); else per=-; fi
			case $v in
				pgss_ng) own="$eb $qb $hb ($((hb / (entries > 0 ? entries : 1))))" ;;
				pg_stat_statements) own="| ${tf:-0}" ;;
				*) own= ;;
			esac
			printf '  %-8s %6d %-18s %7d %10d %10d %10d %10d %11s %s\n' \
				"$w" "$max" "$v" "$entries" "$named" "$anon" "$dsm" "$total" "$per" "$own"
			if [ -n "${OUT:-}" ]; then
				printf '{"version":"%s","workload":"%s","max":%d,"variant":"%s","entries":%d,"named":%d,"anon":%d,"dsm":%d,"entry_bytes":%d,"qtext_bytes":%d,"hist_bytes":%d,"text_file":%d}\n' \
					"$("$BIN/postgres" --version | awk '{print $3}')" "$w" "$max" "$v" "$entries" \
					"$named" "$anon" "$dsm" "$eb" "$qb" "$hb" "${tf:-0}" >>"$OUT"
			fi
		done
		"$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
		port=$((port + 1))
	done
done
