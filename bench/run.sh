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
#   bash bench/run.sh --sizes           # about 25 minutes: cold_only and
#                                       # hotcold_churn at max 1,000 to
#                                       # 50,000, cold_long with and without
#                                       # text pressure; TPS, eviction time,
#                                       # shared memory, text memory
#   bash bench/run.sh --cpu             # about 6 minutes: backend CPU per
#                                       # transaction at 1 client
#   bash bench/run.sh --smoke           # a few seconds (used by t/900)
#
# Two steps: bench/pgss_bench_run.pl measures and writes the raw results
# (JSON), then bench/pgss_bench_report.pl writes the results files
# (<stamp>-<mode>.md, .json, .png) into bench/results, or --out-dir DIR,
# named --name STEM if given.  Nothing else is written.  Other options
# (rounds, duration, clients, --pgbench-scale, workloads, --ng-setting,
# --keep, ...): bash bench/run.sh --help.
#
# The PostgreSQL measured is --pg MAJOR's as scripts/pg-versions.sh finds
# it (PGSS_NG_PG_CONFIG_NN overrides), else the bin directory
# $PGSS_BENCH_PGBIN, else 15's; pgss_ng must be installed into it
# (PGSS_NG_PG=MAJOR bash scripts/build.sh).
#
# As root, the measurements run as "postgres" in a temporary directory and
# the report is written as root.  As any other user, everything runs as that
# user (no user switch); the output directory must then be writable.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
OUT=$REPO/bench/results
pg=
keep=
report_args=()
args=()
# --pg, --out-dir and --name are taken out here; the others are
# pgss_bench_run.pl's.
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help)
            perl "$HERE/pgss_bench_run.pl" --help
            exit 0
            ;;
        --pg | --out-dir | --name)
            [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
            set -- "$1=$2" "${@:3}"
            continue
            ;;
        --pg=*) pg=${1#--pg=} ;;
        --out-dir=*) OUT=${1#--out-dir=} ;;
        --name=*) report_args+=(--name "${1#--name=}") ;;
        --keep) keep=1; args+=("$1") ;;
        *) args+=("$1") ;;
    esac
    shift
done
set -- ${args[@]+"${args[@]}"}

if [ -z "$pg" ] && [ -n "${PGSS_BENCH_PGBIN:-}" ]; then
    PGBIN=$PGSS_BENCH_PGBIN
else
    # shellcheck source=../scripts/pg-versions.sh
    . "$REPO/scripts/pg-versions.sh"
    pg=${pg:-15}
    pgc=$(pgss_ng_pg_config "$pg") || exit 2
    PGBIN=$("$pgc" --bindir) || { echo "run.sh: PostgreSQL $pg: $pgc not found (bash scripts/install-deps.sh)" >&2; exit 2; }
fi

mkdir -p "$OUT"
[ -w "$OUT" ] || { echo "run.sh: output directory $OUT is not writable (use --out-dir)" >&2; exit 2; }

# Read-only: the commit the tree is at (the build measured is the installed
# one; its checksum is in the report too).
COMMIT=$(git -c safe.directory='*' -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)

WORK=$(mktemp -d /tmp/pgss_ng_bench.XXXXXX)
if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        echo "run.sh: there is no 'postgres' user to run the server as" >&2
        exit 1
    fi
    as_runner() { runuser -u postgres -- "$@"; }
else
    as_runner() { "$@"; }
fi
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -f "$WORK/run/data/postmaster.pid" ]; then
        as_runner "$PGBIN/pg_ctl" -D "$WORK/run/data" -m immediate -w stop \
            >/dev/null 2>&1 || true
    fi
    if [ -n "$keep" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# The run step reads its scripts from the work directory, which the user
# it runs as can read (as root: postgres, who may not read this tree).
mkdir "$WORK/bench"
cp "$HERE/pgss_bench_run.pl" "$HERE/PgssBench.pm" "$WORK/bench/"
[ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$WORK"

unset_pg=()
for v in $(compgen -e); do
    case $v in PG*) unset_pg+=(-u "$v") ;; esac
done

rc=0
(cd "$WORK" && as_runner env "${unset_pg[@]}" HOME="$WORK" \
    PGSS_BENCH_PGBIN="$PGBIN" PATH="$PGBIN:/usr/local/bin:/usr/bin:/bin" \
    perl "$WORK/bench/pgss_bench_run.pl" --workdir "$WORK" \
    --json-out "$WORK/result.json" --commit "$COMMIT" "$@") || rc=$?

if [ -s "$WORK/result.json" ]; then
    perl "$HERE/pgss_bench_report.pl" --json-in "$WORK/result.json" \
        --out-dir "$OUT" ${report_args[@]+"${report_args[@]}"} \
        || { r=$?; [ "$rc" -ne 0 ] || rc=$r; }
fi
exit "$rc"
