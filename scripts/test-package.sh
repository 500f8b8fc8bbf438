#!/usr/bin/env bash
# Test the Debian package for Debian's PostgreSQL 15, as CI does (run by
# scripts/test.sh before its passes; as root, on Debian 12):
#   1. scripts/build-deb.sh builds postgresql-15-pgss-ng;
#   2. "apt-get install ./postgresql-15-pgss-ng_*.deb" installs it into
#      /usr/lib/postgresql/15 and /usr/share/postgresql/15;
#   3. debian/tests/smoke checks it in a throwaway cluster with pgss_ng
#      preloaded;
#   4. the package is purged, also when a step failed.
# A pgss_ng that "make install" put into Debian's PostgreSQL 15 before is
# saved first and put back after the purge, so the package neither
# replaces nor leaves files there.  Runs on one machine take turns (flock).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "test-package.sh: must run as root" >&2
    exit 1
fi

pkg=postgresql-15-pgss-ng
pg15=/usr/lib/postgresql/15
apt_get() { apt-get -y -q -o DPkg::Lock::Timeout=300 "$@"; }
installed() { dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed; }

exec 9> /run/lock/pgss_ng-package.lock
flock 9
tmp=$(mktemp -d /tmp/pgss_ng_package.XXXXXX)
ok=
cleanup() {
    if installed; then
        apt_get purge "$pkg" >/dev/null || echo "test-package: could not purge $pkg" >&2
    fi
    if [ -f "$tmp/saved.tar" ]; then
        tar -C / -xf "$tmp/saved.tar"
        echo "test-package: put back the make-installed pgss_ng of $pg15"
    fi
    if [ -n "$ok" ]; then
        rm -rf "$tmp"
    else
        echo "test-package: FAILED; the build's files are in $tmp" >&2
    fi
}
trap cleanup EXIT

if installed; then
    apt_get purge "$pkg"    # left by an interrupted run
fi
bash scripts/build-deb.sh "$tmp/debs"
deb=$(ls "$tmp"/debs/"$pkg"_*.deb)

files=()
for f in "$pg15"/lib/pgss_ng.so "$pg15"/lib/bitcode/pgss_ng* /usr/share/postgresql/15/extension/pgss_ng*; do
    [ -e "$f" ] && files+=("$f")
done
if [ ${#files[@]} -gt 0 ]; then
    tar -C / -cf "$tmp/saved.tar.tmp" "${files[@]#/}"
    mv "$tmp/saved.tar.tmp" "$tmp/saved.tar"
    rm -rf "${files[@]}"
    echo "test-package: saved the make-installed pgss_ng of $pg15"
fi

echo "test-package: apt-get install $deb"
apt_get install --no-install-recommends "$deb"
dpkg-query -W -f '${Package} ${Version}: ${Status}\n' "$pkg"
for f in monitoring/pgss_ng_queries.yaml monitoring/pgss_ng_dashboard.json; do
    cmp "$f" "/usr/share/doc/$pkg/examples/$(basename "$f")"
done
bash debian/tests/smoke
ok=1
