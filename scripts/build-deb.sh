#!/usr/bin/env bash
# Build the Debian packages of pgss_ng, postgresql-NN-pgss-ng, one per
# PostgreSQL major version that is both in debian/pgversions and supported
# by this system's postgresql-common (Debian 12: 15), with the usual tools
# of PostgreSQL extensions (dpkg-buildpackage, debhelper's pgxs sequence,
# pg_buildext; see debian/rules).
#
#   bash scripts/build-deb.sh [OUTDIR]      (default OUTDIR: ./dist)
#
# Needs the build dependencies of debian/control (scripts/install-deps.sh
# installs them).  Builds in a temporary copy of the tree, so that the
# checkout stays clean, and prints the path of each .deb it wrote.
set -euo pipefail

cd "$(dirname "$0")/.."
SRC=$(pwd)
OUT=${1:-$SRC/dist}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# source package name and upstream version, from debian/changelog
name=$(dpkg-parsechangelog -l debian/changelog -S Source)
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
upstream=${version%-*}

tmp=$(mktemp -d /tmp/pgss_ng_deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/$name-$upstream
mkdir "$tree"
tar -C "$SRC" --exclude=./.git --exclude=./dist -cf - . | tar -C "$tree" -xf -
# what a previous build in the checkout left would be packaged instead of
# being rebuilt for each server
make -s -C "$tree" clean PG_CONFIG=/usr/bin/pg_config >/dev/null

start=$(date +%s)
echo "build-deb: building $name $version in $tree"
(cd "$tree" &&
    DEB_BUILD_OPTIONS="noddebs parallel=$(nproc 2>/dev/null || echo 2) ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage --build=binary --no-sign)
shopt -s nullglob
debs=("$tmp"/*.deb)
[ ${#debs[@]} -gt 0 ] || { echo "build-deb: no .deb was built" >&2; exit 1; }
cp "${debs[@]}" "$OUT"/
echo "build-deb: built in $(( $(date +%s) - start ))s:"
for d in "${debs[@]}"; do
    echo "$OUT/$(basename "$d")"
done
