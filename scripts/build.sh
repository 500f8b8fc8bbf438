#!/usr/bin/env bash
# Build pgss_ng and install it into one PostgreSQL installation (as root):
# PG_CONFIG=/path/to/pg_config, else PGSS_NG_PG=15|16|17|18 (default 15;
# see scripts/pg-versions.sh for where each is).
# Fails on any compiler warning: the Makefile compiles with -Werror, and the
# build log is also checked for "warning:" (clang bitcode, linker, make).
set -euo pipefail

cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "build.sh: must run as root (make install writes to the installation)" >&2
    exit 1
fi

. scripts/pg-versions.sh
if [ -z "${PG_CONFIG:-}" ]; then
    PG_CONFIG=$(pgss_ng_pg_config "${PGSS_NG_PG:-15}")
fi
# PGSS_NG_ASSERTS=1: enable the extension's own Assert()s
# (-DUSE_ASSERT_CHECKING); objects are rebuilt from scratch either way, as
# they do not depend on that flag.
ASSERTS=${PGSS_NG_ASSERTS:-}
JOBS=$(nproc 2>/dev/null || echo 2)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "build: make (PG_CONFIG=$PG_CONFIG${ASSERTS:+, assertions enabled})"
make -s PG_CONFIG="$PG_CONFIG" clean
if ! make -j"$JOBS" PG_CONFIG="$PG_CONFIG" ASSERTS="$ASSERTS" 2>&1 | tee "$log"; then
    echo "build: FAILED" >&2
    exit 1
fi
if grep -q 'warning:' "$log"; then
    echo "build: FAILED: the build printed warnings:" >&2
    grep 'warning:' "$log" >&2
    exit 1
fi

echo "build: make install"
make PG_CONFIG="$PG_CONFIG" install
echo "build: installed pgss_ng into $("$PG_CONFIG" --pkglibdir)"
