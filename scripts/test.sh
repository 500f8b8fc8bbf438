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
# PGSS_NG_PG_CONFIG_15 for another PostgreSQL 15).  On each version the
# suites run twice: first against a build with the extension's own
# assertions enabled (-DUSE_ASSERT_CHECKING; the servers themselves are
# release builds), then against the normal build, which stays installed.
# PGSS_NG_PASSES="release" runs only release passes.
# Before the passes, once: META.json is checked and, when 15 is among the
# versions, the Debian package is built, installed, smoke-tested and
# purged (run_packaging below; PGSS_NG_PACKAGE=0 leaves the package out).
# One result line for that ("=== result: packaging: ...") and one per
# version and pass ("=== result: PostgreSQL 18 release: ..."); the last
# line printed is "N passed, N failed, N skipped" (regression and isolation
# tests + TAP files, over all passes, and the two packaging checks).  A TAP
# file that skips itself (plan skip_all) is skipped, not passed; the test
# points that a file skips ("ok N # skip WHY") are listed with their
# reasons.  With CI set (CI=true, as .ci/run runs), a skipped TAP file
# fails the run, and so does a skipped test point that does not say why.
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

# t/060_tracking_call_rollback.pl, t/550_locks_wait_events.pl and
# t/210_qtext_privacy.pl drive a backend with gdb, run as postgres like
# the server.  Yama's ptrace_scope 1 (a
# debugger may attach to its own descendants only) or 2 (only with
# CAP_SYS_PTRACE) forbids that: it is lowered to 0 for this run and put
# back at exit.  3 cannot be lowered before a reboot: those files then
# skip, which fails a CI run.
ptrace_scope=/proc/sys/kernel/yama/ptrace_scope
if [ -r "$ptrace_scope" ]; then
    ptrace_scope_was=$(cat "$ptrace_scope")
    case $ptrace_scope_was in
        1|2)
            if echo 0 2>/dev/null > "$ptrace_scope"; then
                trap 'echo "$ptrace_scope_was" > "$ptrace_scope"' EXIT
                echo "=== test: kernel.yama.ptrace_scope $ptrace_scope_was -> 0 for gdb (restored at exit)"
            else
                echo "=== test: kernel.yama.ptrace_scope is $ptrace_scope_was and cannot be lowered: gdb cannot attach to a backend"
            fi ;;
        3)  echo "=== test: kernel.yama.ptrace_scope is 3: gdb cannot attach to a backend" ;;
    esac
fi

# Run a command as postgres in $WORK, with a clean PG* environment.
as_pg() {
    local unset_pg=() v
    for v in $(compgen -e); do
        case $v in
            PGSS_NG_TOOLS_DIR) ;;   # where t/610_compat_exporter.pl finds postgres_exporter
            PG*) unset_pg+=(-u "$v") ;;
        esac
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
skipped=0
status=0
skip_notes=()   # "LABEL: t/FILE.pl: WHY" of every skip, for the summary
case ${CI:-} in true|1|yes) ci=1 ;; *) ci= ;; esac

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
        # Files that skipped themselves ("t/NAME.pl .. skipped: WHY") and
        # test points skipped inside the others ("ok N # skip WHY").
        local -a skip_files skip_points
        mapfile -t skip_files < <(sed -nE \
            's/^(\[[0-9:]+\] )?(t\/[^ ]+\.pl) \.+ skipped: ?(.*)$/\2: \3/p' \
            "$WORK/check-tap.log")
        mapfile -t skip_points < <(awk '
            match($0, /(t\/[^ ]+\.pl) \.+ ?$/) { f = substr($0, RSTART, RLENGTH); sub(/ \.+ ?$/, "", f) }
            /^ok [0-9]+ # skip/ { why = $0; sub(/^ok [0-9]+ # skip ?/, "", why); n[f "\t" why]++ }
            END { for (k in n) { split(k, a, "\t"); print a[1] ": " n[k] " test(s) skipped: " (a[2] == "" ? "(no reason given)" : a[2]) } }
            ' "$WORK/check-tap.log" | sort)
        t_skip=${#skip_files[@]}
        passed=$((passed + t_total - t_bad - t_skip))
        failed=$((failed + t_bad))
        skipped=$((skipped + t_skip))
        local s skip_fail=()
        for s in "${skip_files[@]}"; do
            skip_notes+=("$label: $s")
            echo "=== test: TAP file skipped: $s"
            [ -n "$ci" ] && skip_fail+=("${s%%: *}")
        done
        for s in "${skip_points[@]}"; do
            skip_notes+=("$label: $s")
            echo "=== test: $s"
            [ -n "$ci" ] && [[ $s == *"(no reason given)" ]] && skip_fail+=("${s%%: *}")
        done
        if [ ${#skip_fail[@]} -gt 0 ]; then
            echo "=== test: CI: a skipped TAP file, or a test point skipped without a" \
                 "reason, fails the run: ${skip_fail[*]}"
        fi
        if [ "$rc" -ne 0 ] || [ "$t_bad" -ne 0 ] || [ ${#skip_fail[@]} -gt 0 ]; then
            status=1
            echo "=== test: TAP suite FAILED"
            # Logs of the failed (or, in CI, skipped) files
            # (tmp_check/log/regress_log_NAME and the server logs
            # NAME_NODE.log), or all logs if that is not known.
            logs=()
            bad_files+=("${skip_fail[@]}")
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

# ------------------------------------------------------------ packaging
# run_packaging: once, before the passes (which "make install" into the
# same PostgreSQL 15 installation):
#   1. META.json: PGXN's validator and the tree's versions
#      (scripts/check-meta.sh);
#   2. when 15 is among the versions: the Debian package for Debian's
#      PostgreSQL 15, built, installed with apt-get, smoke-tested and
#      purged (scripts/test-package.sh).
# Each counts one test.
run_packaging() {
    local t_start p_before f_before
    t_start=$(date +%s)
    p_before=$passed
    f_before=$failed
    echo "=== test: packaging: META.json (scripts/check-meta.sh)"
    if bash scripts/check-meta.sh; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); status=1
        echo "=== test: packaging: META.json FAILED"
    fi
    if [[ " $VERSIONS " != *" 15 "* ]] || [ "${PGSS_NG_PACKAGE:-1}" = 0 ]; then
        echo "=== test: packaging: the Debian package (PostgreSQL 15 only): not run"
    else
        echo "=== test: packaging: the Debian package (scripts/test-package.sh)"
        if bash scripts/test-package.sh; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); status=1
            echo "=== test: packaging: the Debian package FAILED"
        fi
    fi
    results+=("=== result: packaging: $((passed - p_before)) passed, $((failed - f_before)) failed, 0 skipped, $(( $(date +%s) - t_start ))s")
    echo "${results[-1]}"
}

# ---------------------------------------------------------------- passes
results=()
run_packaging
for version in $VERSIONS; do
    PG_CONFIG=${PG_CONFIGS[$version]}
    PGBIN=$("$PG_CONFIG" --bindir)
    for pass in $PASSES; do
        case $pass in
            assert|release) ;;
            *) echo "test.sh: unknown pass \"$pass\"" >&2; exit 1 ;;
        esac
        label="PostgreSQL $version $pass"
        t_start=$(date +%s)
        passed_before=$passed
        failed_before=$failed
        skipped_before=$skipped
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
        results+=("=== result: $label: $((passed - passed_before)) passed, $((failed - failed_before)) failed, $((skipped - skipped_before)) skipped, $(( $(date +%s) - t_start ))s ($verdict)")
        echo "${results[-1]}"
    done
done

printf '%s\n' "${results[@]}"
if [ ${#skip_notes[@]} -gt 0 ]; then
    printf '=== skipped: %s\n' "${skip_notes[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
