#!/usr/bin/env bash
# Install what pgss_ng needs to build and test on Debian 12, from Debian's apt
# repositories. Idempotent: does nothing (not even apt-get update) when every
# package is already installed. Run as root.
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
    gdb                      # t/060_wait_events.pl holds a backend inside a lock
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
    exit 0
fi

echo "install-deps: installing ${missing[*]}"
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
