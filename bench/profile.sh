#!/usr/bin/env bash
# profile.sh: a CPU profile of what tracking costs, on a throwaway cluster.
#
#   bash bench/profile.sh cold|select|trickle SECONDS OUTFILE   (as root)
#
# Starts a cluster of Debian's PostgreSQL 15 with pgss_ng preloaded
# (pgss_ng.max = 5000; the installed pgss_ng.so, see scripts/build.sh),
# runs pgbench with 2 clients (cold: every statement a new four-column
# select, after a 5 s fill so that each new entry evicts; select: -S -M
# prepared; trickle: 4,950 hot two-column selects, known after a 6 s
# warm-up), records the 2 backends with perf (cpu-clock, DWARF call
# graphs) for SECONDS, and writes pgbench's TPS and bench/perf_costs.py's
# cost items to OUTFILE.  Needs perf (apt-get install -y linux-perf).
# See docs/performance.md, "Profiles: where the CPU goes".
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
what=$1; secs=$2; out=$3
BIN=/usr/lib/postgresql/15/bin
D=$(mktemp -d /tmp/prof.XXXX); chown postgres: $D
as_pg() { runuser -u postgres -- "$@"; }
as_pg $BIN/initdb -D $D/data -A trust >/dev/null
cat >> $D/data/postgresql.conf <<C
shared_preload_libraries = 'pgss_ng'
pgss_ng.max = 5000
pgss_ng.track = top
pgss_ng.track_utility = on
shared_buffers = 256MB
fsync = off
synchronous_commit = off
full_page_writes = off
autovacuum = off
listen_addresses = ''
unix_socket_directories = '$D'
port = 5499
C
as_pg $BIN/pg_ctl -D $D/data -l $D/log -w start >/dev/null
export PGHOST=$D PGPORT=5499
printf "CREATE EXTENSION pgss_ng;\nSELECT format('CREATE TABLE w (%%s)', string_agg(format('c%%s int', i), ', ')) FROM generate_series(1,100) i \\gexec\n" > $D/setup.sql; chown postgres $D/setup.sql
as_pg $BIN/psql -q -d postgres -f $D/setup.sql
if [ $what = cold ]; then
  printf '\\set a random(1, 100)\n\\set b random(1, 100)\n\\set c random(1, 100)\n\\set d random(1, 100)\nSELECT c:a, c:b, c:c, c:d FROM w;\n' > $D/cold.sql; chown postgres $D/cold.sql
  # fill the table first: every new statement then evicts
  as_pg $BIN/pgbench -n -M simple -c 2 -j 2 -T 5 -f $D/cold.sql postgres >/dev/null
  args="-n -M simple -f $D/cold.sql"
elif [ $what = trickle ]; then
  # 4,950 hot shapes, all known after the warm-up (no eviction at max 5000)
  printf '\\set h random(0, 4949)\n\\set a 1 + :h %% 100\n\\set b 1 + :h / 100\nSELECT c:a, c:b FROM w;\n' > $D/hot.sql; chown postgres $D/hot.sql
  as_pg $BIN/pgbench -n -M simple -c 2 -j 2 -T 6 -f $D/hot.sql postgres >/dev/null
  args="-n -M simple -f $D/hot.sql"
else
  as_pg $BIN/pgbench -i -s 2 -q postgres >/dev/null 2>&1
  args="-S -M prepared"
fi
as_pg $BIN/pgbench $args -c 2 -j 2 -T $((secs + 4)) postgres > $D/pgbench.out 2>&1 &
sleep 2
pids=$(as_pg $BIN/psql -Atq -d postgres -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = 'pgbench'")
perf record -q -e cpu-clock -F 999 --call-graph dwarf,16384 -p $pids -o $D/prof.data -- sleep $secs >/dev/null 2>&1
wait
perf script -i $D/prof.data -F comm,pid,ip,sym,dso > $D/prof.txt 2>/dev/null
{ echo "== $what, $secs s, load $(cut -d' ' -f1-3 /proc/loadavg)"; grep -E "tps|latency" $D/pgbench.out; python3 "$HERE/perf_costs.py" $D/prof.txt; } > $out
as_pg $BIN/pg_ctl -D $D/data -m fast -w stop >/dev/null
rm -rf $D
cat $out
