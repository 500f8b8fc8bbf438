#!/usr/bin/env bash
# One-off measurement harness of issue 19 (see bench/results/HISTORY.md,
# "issue 19"), kept with its results; the paths are those of the machine it
# ran on (a private copy of PostgreSQL 15, builds under /tmp/i19bench).
# bench/run.sh's --sizes and --cpu modes are to replace it.  The server
# settings below are those of bench/pgss_bench_run.pl (setup_cluster),
# copied so that the numbers compare with the bench's.
#
# run.sh OUTFILE ROUNDS DURATION "VARIANTS" "WORKLOADS" "CLIENTS" [MAX]
# variants: none, pgss, or ng:<build name> (/tmp/i19bench/builds/<name>)
# One line per cell: round variant workload clients tps cpu_us_per_tx waits hot
set -uo pipefail
out=$1; rounds=$2; dur=$3; variants=($4); workloads=($5); clients=($6); max=${7:-5000}
PGBIN=/work/pg/i19-evict/bench15/usr/lib/postgresql/15/bin
PGC=$PGBIN/pg_config
LIB=$($PGC --pkglibdir); EXT=$($PGC --sharedir)/extension
D=/tmp/i19bench/data; SOCK=/tmp/i19-evict-sock; PORT=5470
TCK=$(getconf CLK_TCK)
mkdir -p $SOCK; chown postgres $SOCK
as_pg() { runuser -u postgres -- env -u PGPORT -u PGHOST LC_ALL=C "$@"; }
psqlq() { as_pg $PGBIN/psql -X -q -A -t -h $SOCK -p $PORT -d postgres -v ON_ERROR_STOP=1 "$@"; }
W=/tmp/i19bench/work; mkdir -p $W; chown postgres $W
# scripts
cat > $W/cold.sql <<'S'
\set a random(1, 100)
\set b random(1, 100)
\set c random(1, 100)
\set d random(1, 100)
SELECT c:a, c:b, c:c, c:d FROM w;
S
cat > $W/hot.sql <<'S'
\set h random(0, 3999)
\set a 1 + :h % 100
\set b 1 + :h / 100
SELECT c:a, c:b FROM w;
S
L=$(printf 'x%.0s' $(seq 1 2000))
cat > $W/cold_long.sql <<S
\\set a random(1, 100)
\\set b random(1, 100)
\\set c random(1, 100)
\\set d random(1, 100)
SELECT c:a, c:b, c:c, c:d FROM w /* $L */;
S
for h in $(seq 0 3999); do echo "SELECT c$((1 + h % 100)), c$((1 + h / 100)) FROM w;"; done > $W/warm.sql
chmod a+r $W/*
stop() { as_pg $PGBIN/pg_ctl -D $D -m fast -w stop >/dev/null 2>&1; }
stop; rm -rf $D; mkdir -p $D; chown postgres $D; chmod 700 $D
as_pg $PGBIN/initdb -D $D -U postgres -A trust -E UTF8 --no-locale >/dev/null
cat >> $D/postgresql.conf <<C
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $PORT
max_connections = 100
shared_buffers = 256MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = 8GB
checkpoint_timeout = 1h
autovacuum = off
jit = off
log_min_messages = log
log_checkpoints = off
compute_query_id = auto
include 'variant.conf'
C
start() {
  local v=$1
  case $v in
    none) echo "shared_preload_libraries = ''" ;;
    pgss) printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.max = $max\npg_stat_statements.track = top\npg_stat_statements.track_utility = on\npg_stat_statements.save = off\n" ;;
    ng:*) spec=${v#ng:}; bn=${spec%%:*}; extra=; [ "$spec" != "$bn" ] && extra=${spec#*:}
          b=/tmp/i19bench/builds/$bn
          cp $b/pgss_ng.so $LIB/pgss_ng.so; cp $b/pgss_ng--1.0.sql $b/pgss_ng.control $EXT/
          printf "shared_preload_libraries = 'pgss_ng'\npgss_ng.max = $max\npgss_ng.track = top\npgss_ng.track_utility = on\npgss_ng.track_planning = off\npgss_ng.save = off\n"
          [ -n "$extra" ] && echo "pgss_ng.query_text_memory = '$extra'" ;;
  esac > $D/variant.conf
  chown postgres $D/variant.conf
  as_pg $PGBIN/pg_ctl -D $D -l $W/server.log -w start >/dev/null
  case $v in
    pgss) psqlq -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" ;;
    ng:*) psqlq -c "SET pgss_ng.track = none" -c "DROP EXTENSION IF EXISTS pgss_ng" -c "CREATE EXTENSION pgss_ng" ;;
  esac
}
start none
psqlq -c "CREATE TABLE w ($(seq -s, 1 100 | sed 's/\([0-9]*\)/c\1 int/g'))" -c "INSERT INTO w DEFAULT VALUES" -c "VACUUM ANALYZE w"
psqlq <<'SQL'
CREATE FUNCTION sample_waits(n int, ms int)
RETURNS TABLE (ev text, samples bigint) LANGUAGE plpgsql AS $$
DECLARE acc text[] := '{}';
BEGIN
  FOR i IN 1 .. n LOOP
    PERFORM pg_sleep(ms / 1000.0);
    PERFORM pg_stat_clear_snapshot();
    acc := acc || ARRAY(SELECT CASE WHEN state = 'idle' THEN 'idle'
        WHEN wait_event IS NULL THEN 'CPU' ELSE wait_event_type || ':' || wait_event END
      FROM pg_stat_activity WHERE backend_type = 'client backend'
       AND pid <> pg_backend_pid() AND application_name = 'pgbench');
  END LOOP;
  RETURN QUERY SELECT a, count(*) FROM unnest(acc) a GROUP BY a ORDER BY 2 DESC;
END $$;
SQL
stop
pmcpu() { local pm; pm=$(head -1 $D/postmaster.pid); awk '{print $16 + $17}' /proc/$pm/stat; }
nvar=${#variants[@]}
for r in $(seq 1 $rounds); do
  for i in $(seq 0 $((nvar - 1))); do
    v=${variants[$(( (i + r - 1 + ${ROT:-0}) % nvar ))]}
    start $v
    for w in "${workloads[@]}"; do
      for c in "${clients[@]}"; do
        case $v in ng:*) psqlq -c "SET pgss_ng.track = none" -c "SELECT pgss_ng_reset()" >/dev/null;; pgss) psqlq -c "SELECT pg_stat_statements_reset()" >/dev/null;; esac
        case $w in
          hotcold_churn) psqlq -f $W/warm.sql >/dev/null; scr="-f $W/hot.sql@9 -f $W/cold.sql@1" ;;
          cold_long) scr="-f $W/cold_long.sql" ;;
          *) scr="-f $W/cold.sql" ;;
        esac
        # PREFILL: fill the table first (max * 1.2 new statements, untimed)
        if [ -n "${PREFILL:-}" ]; then as_pg $PGBIN/pgbench -n -M simple -h $SOCK -p $PORT -c 4 -j 2 -t $(( max * 12 / 40 )) $scr postgres >/dev/null 2>&1; fi
        off=$(stat -c %s $W/server.log)
        j=$(( c < 4 ? c : 4 ))
        PGOPTIONS='-c pgss_ng.track=none' as_pg env PGOPTIONS='-c pgss_ng.track=none' $PGBIN/psql -X -q -A -t -h $SOCK -p $PORT -d postgres -c "SELECT ev || '=' || samples FROM sample_waits($(( dur * 2 - 2 )), 500)" > $W/waits.out 2>&1 &
        sp=$!
        sleep 0.3
        c0=$(pmcpu)
        as_pg $PGBIN/pgbench -n -M simple -h $SOCK -p $PORT -c $c -j $j -T $dur $scr postgres > $W/pgbench.out 2>&1
        wait $sp
        for k in $(seq 1 50); do n=$(psqlq -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type='client backend' AND pid <> pg_backend_pid()"); [ "$n" = 0 ] && break; sleep 0.1; done
        c1=$(pmcpu)
        tx=$(awk '/number of transactions actually processed/ {print $6}' $W/pgbench.out | cut -d/ -f1)
        tps=$(awk '/^tps = / {print $3; exit}' $W/pgbench.out)
        cpu=$(awk -v a=$c0 -v b=$c1 -v t=$tx -v k=$TCK 'BEGIN { printf "%.1f", (b - a) / k * 1e6 / t }')
        waits=$(tr '\n' ' ' < $W/waits.out)
        ev=$(tail -c +$((off + 1)) $W/server.log | python3 /tmp/i19bench/evsum.py)
        hot=-; info=-
        case $v in ng:*)
          hot=$(psqlq -c "SET pgss_ng.track = none" -c "SELECT count(*) || '/' || coalesce(sum(calls),0) FROM pgss_ng WHERE query ~ '^SELECT c[0-9]+, c[0-9]+ FROM w\$'")
          info=$(psqlq -c "SET pgss_ng.track = none" -c "SELECT to_jsonb(i) FROM pgss_ng_info i" | tr -d ' ');;
        esac
        hotx=$(grep -A2 'SQL script 1' $W/pgbench.out | awk '/transactions/ {print $2; exit}')
        echo "$r $v $w $c tps=$tps cpu_us=$cpu tx=$tx hot=$hot hot_tx=${hotx:--} waits=[$waits] ev=$ev info=$info load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a $out
      done
    done
    stop
  done
done
