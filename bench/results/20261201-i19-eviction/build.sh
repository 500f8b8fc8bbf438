#!/usr/bin/env bash
# build.sh NAME COMMIT [log]: build pgss_ng at COMMIT against the private
# PostgreSQL 15 copy into /tmp/i19bench/builds/NAME; with "log", with the
# measurement-only patch logpatch.py (one LOG line per eviction run).
set -euo pipefail
name=$1; commit=$2; log=${3:-}
PGC=/work/pg/i19-evict/bench15/usr/lib/postgresql/15/bin/pg_config
S=/tmp/i19bench/src-$name; B=/tmp/i19bench/builds/$name
rm -rf "$S" "$B"; mkdir -p "$S" "$B"
git -C /work/wt/i19-evict archive "$commit" | tar -x -C "$S"
flags=
if [ -n "$log" ]; then
  python3 "$(dirname "$0")/logpatch.py" "$S"
  flags='-Wall -Wno-declaration-after-statement'
fi
make -s -C "$S" PG_CONFIG=$PGC -j2 ${flags:+PG_CFLAGS="$flags"} >/dev/null
cp "$S/pgss_ng.so" "$S/pgss_ng--1.0.sql" "$S/pgss_ng.control" "$B/"
echo "$commit${log:++log}" > "$B/commit"
