#!/usr/bin/env bash
# pgss_ng benchmark: untracked vs pg_stat_statements vs pgss_ng on one
# throwaway PostgreSQL cluster.  See docs/performance.md.
#
#   bash bench/run.sh --quick           # < 5 minutes
#   bash bench/run.sh --quick --pg 18   # on PostgreSQL 18 (15, the default,
#                                       # 16, 17, 18: scripts/pg-versions.sh)
#   bash bench/run.sh --full            # about 35 minutes on 2 cores: 3
#                                       # rounds of 10 s runs at 1, 4, 16
#                                       # and 64 clients, every workload
#                                       # (budget 1 h, hard limit 1.5 h)
#   bash bench/run.sh --scale           # about 6 minutes: 1 round of 5 s
#                                       # runs at 1, 4, 16 and 64 clients,
#                                       # the pgbench workloads; TPS and
#                                       # top wait events per client count
#   bash bench/run.sh --smoke           # a few seconds (used by t/900)
#
# Other options (rounds, duration, clients, --pgbench-scale, workloads,
# --out-dir, --update-docs, ...): bash bench/run.sh --help.
#
# As root, the measurements run as "postgres" in a temporary directory and
# the report is written as root.  As any other user, everything runs as that
# user (no user switch); the output directory must then be writable
# (default bench/results, or --out-dir DIR).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
PGBIN=${PGSS_BENCH_PGBIN:-/usr/lib/postgresql/15/bin}

# --pg MAJOR (taken out here; the other options are pgss_bench.pl's): the
# installation of that PostgreSQL version, which must have pgss_ng
# installed (PGSS_NG_PG=MAJOR bash scripts/build.sh).
args=()
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) exec perl "$HERE/pgss_bench.pl" --help ;;
        --pg | --pg=*)
            if [ "$1" = --pg ]; then
                [ $# -ge 2 ] || { echo "run.sh: --pg needs a version" >&2; exit 2; }
                v=$2; shift
            else
                v=${1#--pg=}
            fi
            # shellcheck source=../scripts/pg-versions.sh
            . "$REPO/scripts/pg-versions.sh"
            pgc=$(pgss_ng_pg_config "$v") || exit 2
            PGBIN=$("$pgc" --bindir) || { echo "run.sh: PostgreSQL $v: $pgc not found (bash scripts/install-deps.sh)" >&2; exit 2; }
            export PGSS_BENCH_PGBIN=$PGBIN
            ;;
        *) args+=("$1") ;;
    esac
    shift
done
set -- ${args[@]+"${args[@]}"}

# Read-only: the commit the tree is at (the build measured is the installed
# one; its checksum is in the report too).
COMMIT=$(git -c safe.directory='*' -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)

if [ "$(id -u)" -ne 0 ]; then
    exec perl "$HERE/pgss_bench.pl" --commit "$COMMIT" --repo "$REPO" "$@"
fi

# ---- root: run the measurements as postgres
if ! id postgres >/dev/null 2>&1; then
    echo "run.sh: there is no 'postgres' user to run the server as" >&2
    exit 1
fi
WORK=$(mktemp -d /tmp/pgss_ng_bench.XXXXXX)
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -f "$WORK/run/data/postmaster.pid" ]; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/run/data" -m immediate -w stop \
            >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir "$WORK/bench"
cp "$HERE/pgss_bench.pl" "$WORK/bench/"
chown -R postgres:postgres "$WORK"

unset_pg=()
for v in $(compgen -e); do
    case $v in PG*) unset_pg+=(-u "$v") ;; esac
done

rc=0
(cd "$WORK" && runuser -u postgres -- env "${unset_pg[@]}" HOME="$WORK" \
    PGSS_BENCH_PGBIN="$PGBIN" PATH="$PGBIN:/usr/local/bin:/usr/bin:/bin" \
    perl "$WORK/bench/pgss_bench.pl" --phase run --workdir "$WORK" \
    --json-out "$WORK/result.json" --commit "$COMMIT" "$@") || rc=$?

if [ -s "$WORK/result.json" ]; then
    perl "$HERE/pgss_bench.pl" --phase report --json-in "$WORK/result.json" \
        --repo "$REPO" "$@" || { r=$?; [ "$rc" -ne 0 ] || rc=$r; }
fi
exit "$rc"
