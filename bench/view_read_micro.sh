#!/usr/bin/env bash
# view_read_micro.sh: the latency of one full read of the statistics, pgss_ng
# against pg_stat_statements, both preloaded in one throw-away cluster.
#
# Both tables are filled with the same ~4,750 distinct statements
# (SELECT cA, cB FROM w, 1 <= A < B <= 98, on a 100-column table), with
# pg_stat_statements.max = pgss_ng.max = 5000.  Then, ROUNDS times, one
# pgbench client (-n, simple protocol) runs each read for SECS seconds, the
# variants interleaved within every round:
#   pgss       SELECT * FROM pg_stat_statements
#   pgss_nt    SELECT * FROM pg_stat_statements(false)
#   ng         SELECT * FROM pgss_ng
#   ng_nt      SELECT * FROM pgss_ng(false)
#   ng_detail  SELECT * FROM pgss_ng_detail   (builds that have it)
# With BASE_PG_CONFIG (another installation of the same major version with
# another pgss_ng build, e.g. main's), a second cluster is filled the same
# way and its reads join every round as ng_base and ng_nt_base.
# Printed: each round's mean latencies, the median of the rounds (ms) and
# the ratios to pg_stat_statements, then the server CPU time of one read
# (ms, the backend's /proc/PID/schedstat over CPU_CALLS reads in one
# session: less sensitive to the machine's load than latency).  The load
# (uptime) is printed before and after: compare latencies only at a
# similar load.  With CALLGRIND=1, last, the instructions of one read of
# each variant: each cluster is restarted under valgrind's callgrind
# (collecting inside PortalRun only: execution and output, not parsing
# and planning), and each read runs in a session of 1 read and in one of
# 1 + CG_READS reads; the difference over CG_READS is one read.  Counts of
# instructions do not move with the machine's load: the way to compare
# two builds on a busy machine (a minute or two per variant).
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [BASE_PG_CONFIG=...] [ROUNDS=7] [SECS=5] \
#       [CPU_CALLS=20] [CALLGRIND=1 [CG_READS=5]] [PORT=54329] \
#       bash bench/view_read_micro.sh
# Needs pgss_ng installed into that PostgreSQL (scripts/build.sh) and its
# pg_stat_statements (and valgrind, for CALLGRIND=1).  KEEP=1 leaves the
# clusters running (their socket directories and ports are printed), e.g.
# for perf record on a backend.
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
ROUNDS=${ROUNDS:-7}
SECS=${SECS:-5}
CPU_CALLS=${CPU_CALLS:-20}
CALLGRIND=${CALLGRIND:-}
CG_READS=${CG_READS:-5}
PORT=${PORT:-54329}
NCOLS=100
NPAIR=98

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" \
		BASE_PG_CONFIG="${BASE_PG_CONFIG:-}" ROUNDS="$ROUNDS" SECS="$SECS" \
		CPU_CALLS="$CPU_CALLS" PORT="$PORT" KEEP="${KEEP:-}" \
		CALLGRIND="$CALLGRIND" CG_READS="$CG_READS" \
		bash "$(readlink -f "$0")"
fi

WORK=$(mktemp -d /tmp/vrmicro.XXXXXX)
unset PGUSER PGPASSWORD PGHOST PGPORT || true
export PGDATABASE=postgres
CLUSTERS=()

stop()
{
	for c in "${CLUSTERS[@]}"; do
		"$(cut -d: -f1 <<<"$c")/pg_ctl" -D "$WORK/$(cut -d: -f2 <<<"$c")/data" \
			-m fast stop >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}
[ -n "${KEEP:-}" ] || trap stop EXIT

# setup NAME PG_CONFIG PORT: start and fill a cluster in $WORK/NAME
setup()
{
	local name=$1 bin port=$3 dir=$WORK/$1
	bin=$("$2" --bindir)
	mkdir -p "$dir"
	"$bin/initdb" -D "$dir/data" -A trust >/dev/null
	cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
listen_addresses = ''
shared_preload_libraries = 'pg_stat_statements,pgss_ng'
pg_stat_statements.max = 5000
pgss_ng.max = 5000
shared_buffers = 128MB
max_connections = 20
CONF
	"$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w start >/dev/null
	CLUSTERS+=("$bin:$name")
	local psql="$bin/psql -X -q -v ON_ERROR_STOP=1 -h $dir -p $port"
	$psql -c "CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pgss_ng;"
	$psql -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 $NCOLS))"
	$psql -c "INSERT INTO w SELECT $(seq -f '%g' -s ', ' 1 $NCOLS)"
	$psql -o /dev/null -f "$WORK/fill.sql"
	echo "$name: $("$bin/postgres" --version), entries: pg_stat_statements" \
		"$($psql -Atc 'SELECT count(*) FROM pg_stat_statements')," \
		"pgss_ng $($psql -Atc 'SELECT count(*) FROM pgss_ng')"
}

for ((a = 1; a < NPAIR; a++)); do
	for ((b = a + 1; b <= NPAIR; b++)); do
		echo "SELECT c$a, c$b FROM w;"
	done
done >"$WORK/fill.sql"

# variant table: name cluster-dir bindir port query
BIN=$("$PG_CONFIG" --bindir)
setup cur "$PG_CONFIG" "$PORT"
VARIANTS=(
	"pgss cur $BIN $PORT SELECT * FROM pg_stat_statements"
	"pgss_nt cur $BIN $PORT SELECT * FROM pg_stat_statements(false)"
	"ng cur $BIN $PORT SELECT * FROM pgss_ng"
	"ng_nt cur $BIN $PORT SELECT * FROM pgss_ng(false)"
)
if "$BIN/psql" -X -Atq -h "$WORK/cur" -p "$PORT" \
	-c "SELECT 'pgss_ng_detail'::regclass" >/dev/null 2>&1; then
	VARIANTS+=("ng_detail cur $BIN $PORT SELECT * FROM pgss_ng_detail")
fi
if [ -n "${BASE_PG_CONFIG:-}" ]; then
	BBIN=$("$BASE_PG_CONFIG" --bindir)
	setup base "$BASE_PG_CONFIG" $((PORT + 1))
	VARIANTS+=(
		"ng_base base $BBIN $((PORT + 1)) SELECT * FROM pgss_ng"
		"ng_nt_base base $BBIN $((PORT + 1)) SELECT * FROM pgss_ng(false)"
	)
fi
for v in "${VARIANTS[@]}"; do
	read -r name _ _ _ q <<<"$v"
	echo "$q;" >"$WORK/$name.sql"
done

run_variant()	# run_variant SECS variant-line: prints the mean latency
{
	local name dir bin port q
	read -r name dir bin port q <<<"$2"
	"$bin/pgbench" -n -h "$WORK/$dir" -p "$port" -f "$WORK/$name.sql" \
		-c 1 -T "$1" 2>/dev/null |
		sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}

echo "load before: $(uptime)"
for v in "${VARIANTS[@]}"; do run_variant 1 "$v" >/dev/null; done	# warm-up
for ((r = 1; r <= ROUNDS; r++)); do
	line="round $r:"
	for v in "${VARIANTS[@]}"; do
		read -r name _ <<<"$v"
		lat=$(run_variant "$SECS" "$v")
		echo "$lat" >>"$WORK/lat.$name"
		line="$line $name=$lat"
	done
	echo "$line"
done
echo "load after: $(uptime)"

med()
{
	sort -g "$WORK/lat.$1" | awk '{ a[NR] = $1 }
		END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { echo "$1 / $2" | bc -l; }
# the pg_stat_statements read a variant compares with (none for its own)
base_of()
{
	case $1 in
		ng | ng_base | ng_detail) echo pgss ;;
		ng_nt | ng_nt_base) echo pgss_nt ;;
	esac
}
declare -A M
for v in "${VARIANTS[@]}"; do
	read -r name _ <<<"$v"
	M[$name]=$(med "$name")
done
echo "median latency (ms) over $ROUNDS rounds of ${SECS}s, 1 client:"
printf '  %-12s %-40s %8.3f\n' pgss "SELECT * FROM pg_stat_statements" "${M[pgss]}"
printf '  %-12s %-40s %8.3f\n' pgss_nt "SELECT * FROM pg_stat_statements(false)" "${M[pgss_nt]}"
for v in "${VARIANTS[@]}"; do
	read -r name _ _ _ q <<<"$v"
	base=$(base_of "$name")
	[ -n "$base" ] || continue
	printf '  %-12s %-40s %8.3f  %.2fx %s\n' "$name" "$q" "${M[$name]}" \
		"$(ratio "${M[$name]}" "${M[$base]}")" "$base"
done

echo "server CPU of one read (ms; $CPU_CALLS reads in one session):"
for v in "${VARIANTS[@]}"; do
	read -r name dir bin port q <<<"$v"
	ss="split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1)::bigint"
	{
		echo '\o /dev/null'
		echo "$q;"
		echo "SELECT $ss AS t0 \\gset"
		for ((i = 0; i < CPU_CALLS; i++)); do echo "$q;"; done
		echo '\o'
		echo "SELECT round((($ss - :t0) / $CPU_CALLS / 1e6)::numeric, 2);"
	} >"$WORK/cpu.sql"
	printf '  %-12s %s\n' "$name" \
		"$("$bin/psql" -X -Atq -h "$WORK/$dir" -p "$port" -f "$WORK/cpu.sql" | tail -1)"
done
if [ -n "$CALLGRIND" ]; then
	echo "instructions of one read (callgrind, inside PortalRun; $CG_READS reads):"
	for c in "${CLUSTERS[@]}"; do
		cbin=${c%%:*} cname=${c#*:}
		"$cbin/pg_ctl" -D "$WORK/$cname/data" -m fast -w stop >/dev/null
		valgrind --tool=callgrind --trace-children=yes --collect-atstart=no \
			--toggle-collect=PortalRun \
			--callgrind-out-file="$WORK/$cname/cg.%p" \
			"$cbin/postgres" -D "$WORK/$cname/data" >"$WORK/$cname/vg.log" 2>&1 &
		for ((i = 0; i < 300; i++)); do
			port=$(sed -n 's/^port = //p' "$WORK/$cname/data/postgresql.conf" | tail -1)
			"$cbin/pg_isready" -q -h "$WORK/$cname" -p "$port" && break
			sleep 1
		done
	done
	for v in "${VARIANTS[@]}"; do
		read -r name dir bin port q <<<"$v"
		pids=()
		for n in 1 $((CG_READS + 1)); do
			{
				echo '\o /dev/null'
				for ((i = 0; i < n; i++)); do echo "$q;"; done
				echo '\o'
				echo 'SELECT pg_backend_pid();'
			} >"$WORK/cg.sql"
			pids+=("$("$bin/psql" -X -Atq -h "$WORK/$dir" -p "$port" -f "$WORK/cg.sql" | tail -1)")
		done
		echo "$name $dir ${pids[*]}" >>"$WORK/cg.map"
	done
	# the counts are written when the backends exit; stop the servers
	for c in "${CLUSTERS[@]}"; do
		"${c%%:*}/pg_ctl" -D "$WORK/${c#*:}/data" -m fast -w -t 600 stop >/dev/null
	done
	declare -A IR
	while read -r name dir p1 pn; do
		i1=$(sed -n 's/^summary: //p; s/^totals: //p' "$WORK/$dir/cg.$p1" | head -1)
		in=$(sed -n 's/^summary: //p; s/^totals: //p' "$WORK/$dir/cg.$pn" | head -1)
		IR[$name]=$(((in - i1) / CG_READS))
	done <"$WORK/cg.map"
	for v in "${VARIANTS[@]}"; do
		read -r name _ _ _ q <<<"$v"
		base=$(base_of "$name")
		if [ -n "$base" ]; then
			printf '  %-12s %-40s %12d  %.3fx %s\n' "$name" "$q" "${IR[$name]}" \
				"$(ratio "${IR[$name]}" "${IR[$base]}")" "$base"
		else
			printf '  %-12s %-40s %12d\n' "$name" "$q" "${IR[$name]}"
		fi
	done
	# stopped: nothing for stop() to do, nothing to keep
	CLUSTERS=()
fi
if [ -n "${KEEP:-}" ]; then
	for c in "${CLUSTERS[@]}"; do echo "cluster kept: $WORK/${c#*:} (pg_ctl -D $WORK/${c#*:}/data stop)"; done
fi
