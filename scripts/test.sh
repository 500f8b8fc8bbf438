# Run the whole pgss_ng test suite on each supported PostgreSQL version:
# install dependencies, then for each version and pass build and install
# the extension and, as the unprivileged "postgres" user in a throwaway copy
# of this tree, run
#   (a) the pg_regress suite (sql/*.sql vs expected/*.out)  -- make check-regress
#   (b) the isolation suite (specs/*.spec)                   -- make check-isolation
#   (c) the TAP suite (t/*.pl)                               -- make check-tap
# Each suite starts its own temporary server(s). Run as root.
#
# PGSS_NG_PG_VERSIONS selects the versions (default "15 16 17 18"; where
# each is installed: scripts/pg-versions.sh, e.g. PG_CONFIG or
# PGSS_NG_PG_CONFIG_15 for another PostgreSQL 15).  On 15 the suites run
# twice: first against a build with the extension's own assertions enabled
# (-DUSE_ASSERT_CHECKING), then against the normal build; on the other
# versions only the latter.  PGSS_NG_PASSES="release" runs only release
# passes.
# One result line per version and pass ("=== result: PostgreSQL 18
# release: ..."); the last line printed is "N passed, N failed"
# (regression and isolation tests + TAP files, over all passes).
set -euo pipefail

cd "$(dirname "$0")/.."
SRC=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: must run as root (try: sudo bash scripts/test.sh)" >&2
    exit 1
fi

. scripts/pg-versions.sh
VERSIONS=${PGSS_NG_PG_VERSIONS:-$PGSS_NG_ALL_VERSIONS}
declare -A PG_CONFIGS
for v in $VERSIONS; do
    PG_CONFIGS[$v]=$(pgss_ng_pg_config "$v")
done
PASSES=${PGSS_NG_PASSES:-assert release}

echo "=== test: installing dependencies"
bash scripts/install-deps.sh

# Run a command as postgres in $WORK, with a clean PG* environment.
as_pg() {
    local unset_pg=() v
    for v in $(compgen -e); do
        case $v in PG*) unset_pg+=(-u "$v") ;; esac
    done
    (cd "$WORK" && runuser -u postgres -- env "${unset_pg[@]}" \
        HOME="$WORK" LC_ALL=C.UTF-8 PATH="$PGBIN:/usr/local/bin:/usr/bin:/bin" \
        "$@")
}

make_var() {  # print a variable of the Makefile
    make -s --no-print-directory -C "$WORK" PG_CONFIG="$PG_CONFIG" \
        --eval="print-var-$1: ; @echo \$($1)" "print-var-$1"
}

passed=0
failed=0
status=0

# ------------------------------------------------- pg_regress, isolation
# run_regress_suite LABEL TARGET MAKEVAR OUTDIR SRC
#   Runs "make TARGET" (a pg_regress-style suite whose test names are the
#   Makefile variable MAKEVAR), counts its ok/failed tests, and on failure
#   prints OUTDIR/regression.diffs and the server log.
run_regress_suite() {
    local label=$1 target=$2 var=$3 outdir=$4 src=$5 rc=0 r_ok r_bad
    local -a tests
    read -r -a tests <<< "$(make_var "$var")"
    if [ ${#tests[@]} -eq 0 ]; then
        echo "=== test: no $src: skipping the $label suite"
        return
    fi
    echo "=== test: $label suite (${#tests[@]} tests): ${tests[*]}"
    as_pg make PG_CONFIG="$PG_CONFIG" "$target" 2>&1 | tee "$WORK/$target.log" || rc=$?
    # "test NAME ... ok" (PostgreSQL 15) or TAP-like "ok N - NAME" (16+)
    r_ok=$(grep -cE ' \.\.\. ok( |$)|^ok [0-9]+ +[-+] ' "$WORK/$target.log" || true)
    r_bad=$(grep -cE ' \.\.\. (FAILED|failed)|^not ok [0-9]+ +[-+] ' "$WORK/$target.log" || true)
    if [ "$rc" -ne 0 ] && [ $((r_ok + r_bad)) -lt ${#tests[@]} ]; then
        # the runner stopped early (initdb or server start failed, ...)
        r_bad=$(( ${#tests[@]} - r_ok ))
    fi
    passed=$((passed + r_ok))
    failed=$((failed + r_bad))
    if [ "$rc" -ne 0 ] || [ "$r_bad" -ne 0 ]; then
        status=1
        echo "=== test: $label suite FAILED"
        if [ -s "$outdir/regression.diffs" ]; then
            echo "--- $label regression.diffs (first 1000 lines)"
            head -n 1000 "$outdir/regression.diffs"
        fi
        for log in "$WORK"/tmp_check/log/postmaster.log "$WORK"/tmp_check_iso/log/postmaster.log; do
            if [ -f "$log" ]; then
                echo "--- $log (last 100 lines)"
                tail -n 100 "$log"
            fi
        done
    else
        echo "=== test: $label suite passed"
    fi
}


# ---------------------------------------------------------------- TAP
run_tap_suite() {
    shopt -s nullglob
    TAP_FILES=("$WORK"/t/*.pl)
    shopt -u nullglob
    if [ ${#TAP_FILES[@]} -eq 0 ]; then
        echo "=== test: no t/*.pl: skipping the TAP suite"
    else
        echo "=== test: TAP suite (${#TAP_FILES[@]} files)"
        rc=0
        as_pg make PG_CONFIG="$PG_CONFIG" PROVE_FLAGS="--verbose --timer" check-tap \
            2>&1 | tee "$WORK/check-tap.log" || rc=$?
        t_total=${#TAP_FILES[@]}
        bad_files=()
        if grep -qE '^Files=[0-9]+, Tests=' "$WORK/check-tap.log"; then
            t_total=$(sed -nE 's/^Files=([0-9]+), Tests=.*/\1/p' "$WORK/check-tap.log" | tail -n 1)
            read -r -a bad_files <<< "$(sed -n '/^Test Summary Report/,$p' "$WORK/check-tap.log" \
                        | awk '/^t\/[^ ]+\.pl +\(/ {print $1}' | sort -u | tr '\n' ' ')"
            t_bad=${#bad_files[@]}
        else
            t_bad=$t_total   # prove did not get to its summary
        fi
        if [ "$rc" -ne 0 ] && [ "$t_bad" -eq 0 ]; then
            t_bad=1          # failed, but not attributable to a file
        fi
        passed=$((passed + t_total - t_bad))
        failed=$((failed + t_bad))
        if [ "$rc" -ne 0 ] || [ "$t_bad" -ne 0 ]; then
            status=1
            echo "=== test: TAP suite FAILED"
            # Logs of the failed files (tmp_check/log/regress_log_NAME and the
            # server logs NAME_NODE.log), or all logs if that is not known.
            logs=()
            if [ ${#bad_files[@]} -gt 0 ]; then
                for b in "${bad_files[@]}"; do
                    b=$(basename "$b" .pl)
                    logs+=("$WORK/tmp_check/log/regress_log_$b" "$WORK/tmp_check/log/${b}_"*.log)
                done
            else
                logs=("$WORK"/tmp_check/log/*)
            fi
            for f in "${logs[@]}"; do
                [ -f "$f" ] || continue
                echo "--- ${f#"$WORK"/} (last 100 lines)"
                tail -n 100 "$f"
            done
        else
            echo "=== test: TAP suite passed"
        fi
    fi

}

# ---------------------------------------------------------------- passes
results=()
for version in $VERSIONS; do
    PG_CONFIG=${PG_CONFIGS[$version]}
    PGBIN=$("$PG_CONFIG" --bindir)
    for pass in $PASSES; do
        case $pass in
            assert)  [ "$version" = 15 ] || continue ;;
            release) ;;
            *) echo "test.sh: unknown pass \"$pass\"" >&2; exit 1 ;;
        esac
        label="PostgreSQL $version $pass"
        t_start=$(date +%s)
        passed_before=$passed
        failed_before=$failed
        echo "=== test: $label: building and installing pgss_ng ($("$PG_CONFIG" --version), $PG_CONFIG)"
        build_rc=0
        case $pass in
            assert)  PG_CONFIG="$PG_CONFIG" PGSS_NG_ASSERTS=1 bash scripts/build.sh || build_rc=$? ;;
            release) PG_CONFIG="$PG_CONFIG" bash scripts/build.sh || build_rc=$? ;;
        esac
        if [ "$build_rc" -ne 0 ]; then
            failed=$((failed + 1))
            status=1
            results+=("=== result: $label: build FAILED")
            echo "${results[-1]}"
            continue
        fi

        # A copy of the tree that postgres can write (the checkout may not
        # even be reachable by postgres). Kept if something fails, removed
        # otherwise.
        WORK=$(mktemp -d /tmp/pgss_ng_test.XXXXXX)
        tar -C "$SRC" --exclude=./.git -cf - . | tar -C "$WORK" -xf -
        chown -R postgres:postgres "$WORK"
        echo "=== test: $label: work tree $WORK (owned by postgres)"

        status_before=$status
        status=0
        run_regress_suite regression check-regress REGRESS "$WORK" "sql/*.sql"
        run_regress_suite isolation check-isolation ISOLATION "$WORK/output_iso" "specs/*.spec"
        run_tap_suite
        if [ "$status" -eq 0 ]; then
            rm -rf "$WORK"
            verdict=passed
        else
            verdict="FAILED; logs kept in $WORK"
        fi
        status=$((status | status_before))
        results+=("=== result: $label: $((passed - passed_before)) passed, $((failed - failed_before)) failed, $(( $(date +%s) - t_start ))s ($verdict)")
        echo "${results[-1]}"
    done
done

printf '%s\n' "${results[@]}"
echo "$passed passed, $failed failed"
exit "$status"
