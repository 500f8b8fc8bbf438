#!/usr/bin/env bash
# Run the pg_regress suite (sql/*.sql vs expected/*.out) once against a
# PostgreSQL server running under valgrind memcheck, then classify the
# valgrind errors.  Opt-in ("make check-valgrind"); scripts/test.sh does not
# run it.  See docs/valgrind.md.
#
# It tests the INSTALLED pgss_ng ($(pg_config --pkglibdir)/pgss_ng.so): build
# and install first (scripts/build.sh).
#
# Who runs it:
#   - a non-root user (e.g. postgres): runs in place; the tree is only read.
#   - root: initdb refuses root, so the script copies the tree (without .git)
#     to a temp dir owned by postgres and runs itself there as postgres
#     (runuser), with a clean PG* environment; the copy is removed afterwards.
#
# Steps: initdb a throwaway cluster in a temp dir, configure it like
# sql/pgss_ng.conf (+ what pg_regress --temp-instance adds), start postgres
# under valgrind (Unix socket in a private dir, no TCP), create the
# "regression" database the way pg_regress would, run
#   pg_regress --use-existing <the Makefile's REGRESS tests>
# stop the server, then summarize the valgrind logs:
#   - total errors (valgrind's "ERROR SUMMARY" lines) and distinct contexts,
#     by kind and by the object of the innermost frame;
#   - every error whose stack (any stack of the report: access, allocation,
#     free, origin) has a frame in pgss_ng (in pgss_ng.so, or in one of
#     src/**/*.c), printed in full, each marked COUNTED (pgss_ng's own code is
#     at work) or "hook pass-through" (the innermost pgss_ng frame only
#     calls the next hook: pg_stat_statements.so or standard_*).
# Exit status: non-zero if the regression suite failed, if the server could
# not be started, or if an "Invalid read", "Invalid write" or
# "uninitialised" error is COUNTED against pgss_ng (with
# PGSS_NG_VALGRIND_STRICT=1: has a pgss_ng frame anywhere).
#
# scripts/valgrind.sh --analyze OUTDIR   only re-classifies an earlier run.
#
# Environment (all optional):
#   PG_CONFIG                   pg_config of the target server
#                               (default /usr/lib/postgresql/15/bin/pg_config)
#   PGSS_NG_REGRESS             test names (default: the Makefile's REGRESS)
#   PGSS_NG_VALGRIND_OUT        output dir (default: a new /tmp/pgss_ng_valgrind.XXXXXX);
#                               kept: valgrind.<pid>.log, postmaster.log,
#                               regression.diffs, results/, summary.txt
#   PGSS_NG_VALGRIND_OPTS       extra valgrind options (e.g. --track-origins=yes)
#   PGSS_NG_VALGRIND_TIMEOUT    seconds allowed for pg_regress (default 7200)
#   PGSS_NG_VALGRIND_STRICT     1: fail on any such error with a pgss_ng frame
#   PGSS_NG_VALGRIND_KEEP_DATA  1: keep the cluster's data dir (default: removed)
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
TREE=$(pwd)

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
case $PG_CONFIG in
    */*) ;;
    *) PG_CONFIG=$(command -v "$PG_CONFIG") || { echo "valgrind.sh: no pg_config" >&2; exit 2; } ;;
esac

# Drop the caller's libpq settings (PGHOST, PGOPTIONS, ...), keeping ours.
for v in $(compgen -e); do
    case $v in
        PGSS_NG_*|PG_CONFIG) ;;
        PG*) unset "$v" ;;
    esac
done

# ------------------------------------------------------------ classify
# analyze OUTDIR: classify OUTDIR/valgrind.*.log into OUTDIR/summary.txt;
# returns 1 if an Invalid read/write or uninitialised error counts against
# pgss_ng (see the rules below and docs/valgrind.md).
analyze() {
    # Source files of pgss_ng, to recognize its frames when it has debug info
    # (valgrind then prints "(/path/src/DIR/FILE.c:LINE)" instead of "(in pgss_ng.so)").
    local srcs so
    so="$("$PG_CONFIG" --pkglibdir)/pgss_ng.so"
    srcs=$(cd "$TREE/src" && find . -name '*.c' -printf '%P\n' | sed 's/\.c$//' | sort | paste -sd '|')

    local rc=0
    perl - "$so" "$srcs" "$1" "${PGSS_NG_VALGRIND_STRICT:-0}" >"$1/summary.txt" <<'PERL' || rc=$?
use strict; use warnings;
my ($so, $srcs, $out, $strict) = @ARGV;
# a frame of pgss_ng: in pgss_ng.so (no debug info) or at one of its src/**/*.c
my $so_re  = qr/\(in \Q$so\E\)|\(in [^)]*\/pgss_ng\.so\)/;
my $src_re = $srcs ne '' ? qr/[(\/]src\/(?:$srcs)\.c:\d+\)/ : qr/(?!)/;
my $frame_re = qr/^\s+(?:at|by) 0x[0-9A-Fa-f]+: /;
# Where pgss_ng's hooks hand control on, unchanged, to the rest of the hook
# chain: the previous hook (pg_stat_statements, loaded before pgss_ng) or
# PostgreSQL's standard_* function.
my $pass_re = qr/\(in [^)]*\/pg_stat_statements\.so\)|: standard_(?:ExecutorStart|ExecutorRun|ExecutorFinish|ExecutorEnd|ProcessUtility|planner) /;
sub is_ng { my $l = shift; return $l =~ $so_re || $l =~ $src_re; }

# Classify one stack (list of frame lines, innermost first):
#   ''      no pgss_ng frame
#   'own'   a pgss_ng frame, and the innermost one is pgss_ng's own code at
#           work (it is frame 0, or it calls something other than the hook
#           chain: libc, xxhash, a PostgreSQL function, ...)
#   'pass'  the innermost pgss_ng frame only passes control to the next hook
#           or standard_* (PostgreSQL's or pg_stat_statements' code did it)
sub classify_stack {
    my @fr = @_;
    for my $i (0 .. $#fr) {
        next unless is_ng($fr[$i]);
        return 'own' if $i == 0;
        return $fr[$i - 1] =~ $pass_re ? 'pass' : 'own';
    }
    return '';
}

my @logs = sort glob("$out/valgrind.*.log");
my ($n_err, $n_ctx, $n_nosum, $n_blocks) = (0, 0, 0, 0);
my (%kind, %kind_obj, @ng, @crash);
for my $f (@logs) {
    open my $fh, '<', $f or die "$f: $!";
    my @lines = map { chomp; s/^==\d+== ?//; $_ } <$fh>;
    close $fh;
    my $cmd = (grep { /^Command: / } @lines)[0] // '';
    $cmd =~ s/^Command: //;
    my $had_sum = 0;
    # paragraphs: blocks of lines separated by empty lines
    my @blocks; my $cur = [];
    for (@lines) {
        if ($_ eq '') { push @blocks, $cur if @$cur; $cur = []; }
        else { push @$cur, $_; }
    }
    push @blocks, $cur if @$cur;
    for my $b (@blocks) {
        for (@$b) {
            if (/^ERROR SUMMARY: (\d+) errors from (\d+) contexts/) {
                $n_err += $1; $n_ctx += $2; $had_sum = 1;
            }
        }
        next unless @$b >= 2 && $b->[1] =~ $frame_re;
        my $head = $b->[0];
        if ($head =~ /^Process terminating/) {
            push @crash, [$f, $cmd, $b];
            next;
        }
        $n_blocks++;
        (my $k = $head) =~ s/ of size \d+//;
        $k =~ s/^(Syscall param \S+?)\(.*?\)/$1/;
        $k =~ s/ \d+ bytes//;
        $kind{$k}++;
        # innermost frame naming an object (frames with debug info, e.g.
        # libc's, name a source file instead), or pgss_ng
        my $obj = '?';
        for (@$b[1 .. $#$b]) {
            last unless $_ =~ $frame_re;
            if ($_ =~ $src_re) { $obj = 'pgss_ng.so'; last; }
            if (/\(in ([^)]+)\)\s*$/) { $obj = $1; last; }
        }
        $obj =~ s{.*/}{};
        $kind_obj{"$k  [in $obj]"}++;
        # the stacks of the report: the error's, then allocation/free/origin
        my (@stacks, $st);
        for my $i (1 .. $#$b) {
            if ($b->[$i] =~ $frame_re) { push @stacks, ($st = []) unless $st; push @$st, $b->[$i]; }
            else { $st = undef; }
        }
        my @cls = map { classify_stack(@$_) } @stacks;
        next unless grep { $_ ne '' } @cls;
        push @ng, { file => $f, cmd => $cmd, block => $b, kind => $k,
                    own => (grep { $_ eq 'own' } @cls) ? 1 : 0,
                    where => join(', ', map { ($_ == 0 ? 'error stack' : "stack " . ($_ + 1)) . ": $cls[$_]" }
                                        grep { $cls[$_] ne '' } 0 .. $#cls) };
    }
    $n_nosum++ unless $had_sum;
}

my $serious = qr/Invalid read|Invalid write|uninitialised/i;
my @own  = grep { $_->{own} } @ng;
my $bad_involved = grep { $_->{kind} =~ $serious } @ng;
my $bad_own      = grep { $_->{kind} =~ $serious } @own;
my $bad = $strict ? $bad_involved : $bad_own;
printf "processes (valgrind log files):          %d%s\n", scalar @logs,
    $n_nosum ? " ($n_nosum without an ERROR SUMMARY: killed?)" : '';
printf "valgrind errors, all processes:          %d (%d distinct contexts; %d reports in the logs)\n",
    $n_err, $n_ctx, $n_blocks;
print  "reports by kind and innermost named object:\n";
printf "  %6d  %s\n", $kind_obj{$_}, $_ for sort { $kind_obj{$b} <=> $kind_obj{$a} || $a cmp $b } keys %kind_obj;
printf "process crashes (fatal signals):         %d\n", scalar @crash;
printf "reports with a pgss_ng frame (any stack): %d (Invalid read/write or uninitialised: %d)\n",
    scalar @ng, $bad_involved;
printf "  pgss_ng's own code (counted):           %d (Invalid read/write or uninitialised: %d)\n",
    scalar @own, $bad_own;
printf "  only via its hook pass-through:         %d\n", scalar(@ng) - scalar(@own);
for my $c (@crash) {
    print "\n---- crash: $c->[0] ($c->[1])\n";
    print "$_\n" for @{$c->[2]};
}
for my $e (@ng) {
    printf "\n---- %s: %s (%s)\n     pgss_ng frames: %s\n", ($e->{own} ? 'COUNTED' : 'hook pass-through'),
        $e->{file}, $e->{cmd}, $e->{where};
    print "$_\n" for @{$e->{block}};
}
print "\nRESULT: ", ($bad ? "FAIL" : "OK"), " ($bad Invalid read/write or uninitialised error(s) ",
      ($strict ? "with a pgss_ng frame, strict mode" : "in pgss_ng's own code"), ")\n";
exit($bad ? 1 : 0);
PERL
    if [ "$rc" -gt 1 ]; then
        echo "valgrind.sh: could not analyze the valgrind logs" >&2
    fi
    return "$rc"
}

# --analyze DIR: only (re)classify the logs of an earlier run.
if [ "${1:-}" = "--analyze" ]; then
    [ -d "${2:-}" ] || { echo "usage: valgrind.sh [--analyze OUTDIR]" >&2; exit 2; }
    rc=0
    analyze "$2" || rc=$?
    cat "$2/summary.txt"
    exit "$rc"
fi

if [ $# -ne 0 ]; then
    echo "usage: valgrind.sh [--analyze OUTDIR]" >&2
    exit 2
fi

# ------------------------------------------------------------ root: re-exec
if [ "$(id -u)" -eq 0 ]; then
    WORK=$(mktemp -d /tmp/pgss_ng_valgrind_tree.XXXXXX)
    tar -C "$TREE" --exclude=./.git --exclude='./tmp_check*' --exclude=./results \
        -cf - . | tar -C "$WORK" -xf -
    chown -R postgres:postgres "$WORK"
    if [ -n "${PGSS_NG_VALGRIND_OUT:-}" ]; then
        mkdir -p "$PGSS_NG_VALGRIND_OUT"
        chown postgres:postgres "$PGSS_NG_VALGRIND_OUT"
    fi
    echo "valgrind.sh: running as root: switching to postgres in a copy of the tree ($WORK)"
    rc=0
    (cd "$WORK" && runuser -u postgres -- env \
        HOME="$WORK" LC_ALL=C.UTF-8 PATH="/usr/local/bin:/usr/bin:/bin" \
        bash "$WORK/scripts/valgrind.sh") || rc=$?
    rm -rf "$WORK"
    exit "$rc"
fi

# ------------------------------------------------------------ setup
PGBIN=$("$PG_CONFIG" --bindir)
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
PGXS=$("$PG_CONFIG" --pgxs)
PG_REGRESS=$(dirname "$(dirname "$PGXS")")/test/regress/pg_regress
SO="$PKGLIBDIR/pgss_ng.so"
export PATH="$PGBIN:$PATH"

for f in "$SO" "$PG_REGRESS" "$PGBIN/postgres"; do
    [ -e "$f" ] || { echo "valgrind.sh: $f not found (build and install pgss_ng first: scripts/build.sh)" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind not installed (apt-get install -y valgrind)" >&2; exit 2; }

if [ -n "${PGSS_NG_REGRESS:-}" ]; then
    read -r -a TESTS <<< "$PGSS_NG_REGRESS"
else
    # shellcheck disable=SC2016  # $(REGRESS) is for make
    read -r -a TESTS <<< "$(make -s --no-print-directory -C "$TREE" PG_CONFIG="$PG_CONFIG" \
        --eval='print-var-REGRESS: ; @echo $(REGRESS)' print-var-REGRESS)"
fi
[ ${#TESTS[@]} -gt 0 ] || { echo "valgrind.sh: no regression tests" >&2; exit 2; }

OUT=${PGSS_NG_VALGRIND_OUT:-$(mktemp -d /tmp/pgss_ng_valgrind.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT"/data "$OUT"/sock "$OUT"/results "$OUT"/valgrind.*.log \
       "$OUT"/regression.* "$OUT"/postmaster.log "$OUT"/summary.txt
DATA=$OUT/data
SOCK=$OUT/sock
PORT=54329          # only a Unix socket in a private dir: no clash possible
mkdir -m 700 "$SOCK"
if [ ${#SOCK} -gt 90 ]; then
    echo "valgrind.sh: socket dir path too long: $SOCK" >&2; exit 2
fi
REGRESS_TIMEOUT=${PGSS_NG_VALGRIND_TIMEOUT:-7200}
STARTUP_TIMEOUT=600
STOP_TIMEOUT=900

log() { echo "=== valgrind: $*"; }

log "valgrind $(valgrind --version | sed 's/^valgrind-//'), $("$PGBIN/postgres" --version)"
so_sum=$(sha256sum "$SO" | cut -c1-16)
if [ -f "$TREE/pgss_ng.so" ]; then
    if cmp -s "$SO" "$TREE/pgss_ng.so"; then so_tree="same as the tree's build"
    else so_tree="DIFFERS from the tree's pgss_ng.so: rebuild/reinstall?"; fi
else
    so_tree="the tree has no build to compare with"
fi
log "pgss_ng: $SO ($(stat -c %y "$SO" | cut -d. -f1), sha256 $so_sum..., $so_tree)"
log "tests (${#TESTS[@]}): ${TESTS[*]}"
log "output: $OUT"

# ------------------------------------------------------------ cluster
log "initdb"
if ! initdb -D "$DATA" --no-locale -E UTF8 -A trust --no-sync >"$OUT/initdb.log" 2>&1; then
    cat "$OUT/initdb.log" >&2
    echo "valgrind.sh: initdb failed" >&2
    exit 2
fi
{
    echo
    echo "# ---- sql/pgss_ng.conf"
    cat "$TREE/sql/pgss_ng.conf"
    echo
    echo "# ---- as pg_regress --temp-instance"
    echo "log_autovacuum_min_duration = 0"
    echo "log_checkpoints = on"
    echo "log_line_prefix = '%m %b[%p] %q%a '"
    echo "log_lock_waits = on"
    echo "log_temp_files = 128kB"
    echo "max_prepared_transactions = 2"
    echo
    echo "# ---- valgrind run"
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$SOCK'"
    echo "port = $PORT"
    echo "logging_collector = off"
} >>"$DATA/postgresql.conf"

# shellcheck disable=SC2206
VG_OPTS=(--tool=memcheck --trace-children=yes --track-origins=no
         --read-var-info=no --num-callers=30 --error-limit=no
         --leak-check=no --fullpath-after=
         --log-file="$OUT/valgrind.%p.log"
         ${PGSS_NG_VALGRIND_OPTS:-})

PM_PID=
stop_server() {   # stop_server MODE
    [ -n "$PM_PID" ] || return 0
    if kill -0 "$PM_PID" 2>/dev/null; then
        pg_ctl stop -D "$DATA" -m "$1" -w -t "$STOP_TIMEOUT" >>"$OUT/pg_ctl.log" 2>&1 || true
    fi
    local i
    for ((i = 0; i < 60; i++)); do
        kill -0 "$PM_PID" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "$PM_PID" 2>/dev/null; then
        echo "valgrind.sh: postmaster $PM_PID still running; killing it" >&2
        kill -KILL "$PM_PID" 2>/dev/null || true
    fi
    wait "$PM_PID" 2>/dev/null
    PM_PID=
}
trap 'stop_server immediate' EXIT
trap 'exit 130' INT TERM HUP PIPE

log "starting postgres under valgrind"
valgrind "${VG_OPTS[@]}" "$PGBIN/postgres" -D "$DATA" -F \
    >"$OUT/postmaster.log" 2>&1 </dev/null &
PM_PID=$!

ready=0
for ((i = 0; i < STARTUP_TIMEOUT; i++)); do
    if ! kill -0 "$PM_PID" 2>/dev/null; then
        break
    fi
    if pg_isready -q -h "$SOCK" -p "$PORT" -d postgres; then
        ready=1
        break
    fi
    sleep 1
done
if [ "$ready" -ne 1 ]; then
    echo "valgrind.sh: the server did not start within ${STARTUP_TIMEOUT}s" >&2
    tail -n 50 "$OUT/postmaster.log" >&2
    exit 2
fi
log "server ready after ~${i}s (postmaster pid $PM_PID)"

# The database, as pg_regress creates it without --use-existing
# (--no-locale, ENCODING = UTF8 in the Makefile).
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT")
if ! "${PSQL[@]}" -d postgres >"$OUT/createdb.log" 2>&1 <<'EOF'
CREATE DATABASE "regression" TEMPLATE=template0 ENCODING='UTF8' LC_COLLATE='C' LC_CTYPE='C';
ALTER DATABASE "regression" SET lc_messages TO 'C';
ALTER DATABASE "regression" SET lc_monetary TO 'C';
ALTER DATABASE "regression" SET lc_numeric TO 'C';
ALTER DATABASE "regression" SET lc_time TO 'C';
ALTER DATABASE "regression" SET bytea_output TO 'hex';
ALTER DATABASE "regression" SET timezone_abbreviations TO 'Default';
EOF
then
    cat "$OUT/createdb.log" >&2
    echo "valgrind.sh: could not create the regression database" >&2
    exit 2
fi

# ------------------------------------------------------------ pg_regress
log "pg_regress (timeout ${REGRESS_TIMEOUT}s)"
t0=$(date +%s)
regress_rc=0
(cd "$TREE" && timeout --kill-after=60 "$REGRESS_TIMEOUT" "$PG_REGRESS" \
    --use-existing --host="$SOCK" --port="$PORT" \
    --inputdir=. --outputdir="$OUT" --bindir="$PGBIN" \
    "${TESTS[@]}") 2>&1 | tee "$OUT/pg_regress.log" || regress_rc=$?
t1=$(date +%s)
r_ok=$(grep -cE ' \.\.\. ok( |$)' "$OUT/pg_regress.log" || true)
r_bad=$(grep -cE ' \.\.\. (FAILED|failed)' "$OUT/pg_regress.log" || true)
if [ "$regress_rc" -eq 0 ] && [ "$r_ok" -ne ${#TESTS[@]} ]; then
    regress_rc=1
fi
log "pg_regress: exit $regress_rc, $r_ok ok, $r_bad failed, $((t1 - t0))s"
if [ "$regress_rc" -ne 0 ] && [ -s "$OUT/regression.diffs" ]; then
    echo "--- regression.diffs (first 300 lines)"
    head -n 300 "$OUT/regression.diffs"
fi

log "stopping the server"
stop_server fast
trap - EXIT
if [ "${PGSS_NG_VALGRIND_KEEP_DATA:-0}" != 1 ]; then
    rm -rf "$DATA"
fi
rmdir "$SOCK" 2>/dev/null || true

summary_rc=0
analyze "$OUT" || summary_rc=$?

log "summary (also in $OUT/summary.txt)"
cat "$OUT/summary.txt"
log "regression suite: $( [ "$regress_rc" -eq 0 ] && echo passed || echo FAILED ) ($r_ok ok, $r_bad failed of ${#TESTS[@]})"
log "logs kept in $OUT"

status=0
[ "$regress_rc" -eq 0 ] || status=1
[ "$summary_rc" -eq 0 ] || status=1
log "result: $( [ "$status" -eq 0 ] && echo OK || echo FAILED )"
exit "$status"
