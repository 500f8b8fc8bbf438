#!/usr/bin/env bash
# compat_read.sh: what reading pg_stat_statements through pgss_ng_compat
# costs against reading the same columns from pgss_ng itself (issue 21:
# at most 1.05x), in one throw-away cluster with only pgss_ng preloaded.
#
# The table is filled with ~4,750 distinct statements (SELECT cA, cB FROM
# w, 1 <= A < B <= 98, on a 100-column table; pgss_ng.max = 5000).  Then,
# ROUNDS times, each pair of variants below runs in one session: CALLS
# reads of each, in blocks alternating A B B A (B A A B every other round),
# and the server CPU time of one read of each is taken from the backend's
# /proc/PID/schedstat around each block (less sensitive to the machine's
# load than latency); the ratio of the pair is taken per round:
#   compat       SELECT * FROM pg_stat_statements(false)
#   ng_cols      SELECT <the same columns> FROM pgss_ng(false)
#   compat_text  SELECT * FROM pg_stat_statements            (the view)
#   ng_text      SELECT <the same columns> FROM pgss_ng(true)
# "The same columns" are the compat view's, by their pgss_ng names (1.10's
# blk_read_time is pgss_ng's shared_blk_read_time).  Printed: each round's
# ms per read and ratios, then the medians of the rounds.  Interleaving
# and the median of per-round ratios are what keep a shared machine's
# swings out of the ratio; compare the ms themselves only at a similar
# load.  The load
# (uptime) is printed before and after.
#
# Usage (as root or postgres; root re-runs itself as postgres):
#   PG_CONFIG=/path/to/pg_config [ROUNDS=7] [CALLS=30] [PORT=54339] \
#       [WORK_PARENT=/tmp] bash bench/compat_read.sh
# Needs pgss_ng (with pgss_ng_compat) installed into that PostgreSQL
# (scripts/build.sh).
set -euo pipefail

: "${PG_CONFIG:?set PG_CONFIG to the pg_config of the PostgreSQL to use}"
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-30}
PORT=${PORT:-54339}
NCOLS=100
NPAIR=98

if [ "$(id -u)" -eq 0 ]; then
	exec runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" ROUNDS="$ROUNDS" \
		CALLS="$CALLS" PORT="$PORT" WORK_PARENT="${WORK_PARENT:-/tmp}" \
		bash "$(readlink -f "$0")"
fi

WORK=$(mktemp -d "${WORK_PARENT:-/tmp}/compat_read.XXXXXX")
BIN=$("$PG_CONFIG" --bindir)
unset PGUSER PGPASSWORD PGHOST PGPORT PGDATABASE || true
trap '"$BIN/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

"$BIN/initdb" -D "$WORK/data" -A trust >/dev/null
cat >>"$WORK/data/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
listen_addresses = ''
shared_preload_libraries = 'pgss_ng'
pgss_ng.max = 5000
pgss_ng.save = off
shared_buffers = 128MB
max_connections = 20
CONF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/log" -w start >/dev/null
psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -d postgres)

"${psql[@]}" -c "CREATE EXTENSION pgss_ng; CREATE EXTENSION pgss_ng_compat;"
"${psql[@]}" -c "CREATE TABLE w ($(seq -f 'c%g int' -s ', ' 1 $NCOLS))"
for ((a = 1; a < NPAIR; a++)); do
	for ((b = a + 1; b <= NPAIR; b++)); do
		echo "SELECT c$a, c$b FROM w;"
	done
done | "${psql[@]}" -o /dev/null
cols=$("${psql[@]}" -Atc "
	SELECT string_agg(CASE attname
	                    WHEN 'blk_read_time' THEN 'shared_blk_read_time'
	                    WHEN 'blk_write_time' THEN 'shared_blk_write_time'
	                    ELSE attname::text END, ', ' ORDER BY attnum)
	FROM pg_attribute
	WHERE attrelid = 'pg_stat_statements'::regclass AND attnum > 0")
echo "$("$BIN/postgres" --version): $("${psql[@]}" -Atc \
	'SELECT count(*) FROM pg_stat_statements') rows in pg_stat_statements" \
	"($("${psql[@]}" -Atc "SELECT count(*) FROM pg_attribute
	   WHERE attrelid = 'pg_stat_statements'::regclass AND attnum > 0") columns)," \
	"$("${psql[@]}" -Atc 'SELECT count(*) FROM pgss_ng') in pgss_ng"

NAMES=(compat ng_cols compat_text ng_text)
declare -A QUERY=(
	[compat]="SELECT * FROM pg_stat_statements(false)"
	[ng_cols]="SELECT $cols FROM pgss_ng(false)"
	[compat_text]="SELECT * FROM pg_stat_statements"
	[ng_text]="SELECT $cols FROM pgss_ng(true)"
)

# pair_round A B FIRST: one session; after a warm-up read of each, four
# blocks of CALLS/2 reads, A B B A (FIRST = A) or B A A B, each block's
# server CPU taken from schedstat before and after it; prints "ms_A ms_B",
# the CPU (ms) of one read of each
pair_round()
{
	local a=$1 b=$2 order blk i
	local ss="split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1)::bigint"
	if [ "$3" = "$a" ]; then order=("$a" "$b" "$b" "$a"); else order=("$b" "$a" "$a" "$b"); fi
	{
		echo '\o /dev/null'
		echo "${QUERY[$a]};"
		echo "${QUERY[$b]};"
		for blk in "${order[@]}"; do
			echo "SELECT $ss AS t0 \\gset"
			for ((i = 0; i < CALLS / 2; i++)); do echo "${QUERY[$blk]};"; done
			echo "SELECT $ss - :t0 AS d \\gset"
			echo "\\echo $blk :d"
		done
	} | "${psql[@]}" -At |
		awk -v a="$a" -v b="$b" -v n="$CALLS" '
			{ t[$1] += $2 }
			END { printf "%.3f %.3f\n", t[a] / n / 1e6, t[b] / n / 1e6 }'
}

ratio() { echo "scale=3; $1 / $2" | bc -l; }
med() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "load before: $(uptime)"
for ((r = 0; r < ROUNDS; r++)); do
	line="round $((r + 1)) (ms per read):"
	for pair in "compat ng_cols nt" "compat_text ng_text text"; do
		read -r a b tag <<<"$pair"
		if ((r % 2)); then first=$b; else first=$a; fi
		read -r ma mb <<<"$(pair_round "$a" "$b" "$first")"
		echo "$ma" >>"$WORK/ms.$a"
		echo "$mb" >>"$WORK/ms.$b"
		ratio "$ma" "$mb" >>"$WORK/ratio.$tag"
		line="$line $a=$ma $b=$mb ($(tail -1 "$WORK/ratio.$tag")x)"
	done
	echo "$line"
done
echo "load after: $(uptime)"
echo "medians over $ROUNDS rounds ($CALLS reads each, server CPU ms per read):"
for n in "${NAMES[@]}"; do
	printf '  %-12s %-45.45s %8.3f\n' "$n" "${QUERY[$n]}" "$(med <"$WORK/ms.$n")"
done
echo "  compat / ng_cols, median of the per-round ratios: $(med <"$WORK/ratio.nt")x"
echo "  compat_text / ng_text, median of the per-round ratios: $(med <"$WORK/ratio.text")x"
