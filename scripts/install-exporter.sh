#!/usr/bin/env bash
# Build the Go tools of the exporter tests (called by scripts/install-deps.sh;
# run as root):
#  - the postgres_exporter releases that t/610_compat_exporter.pl and
#    t/650_monitoring_exporter.pl scrape a pgss_ng server with;
#  - t/lib/promql_names, Prometheus' own PromQL parser, with which
#    t/650_monitoring_exporter.pl reads the metric names of the dashboard
#    (monitoring/pgss_ng_dashboard.json).
#
# Each release is fetched from the Go module proxy as the exact module
# version ("go mod download -json MODULE@VERSION"; "go install MODULE@VERSION"
# needs a version list the proxy does not serve here), its checksum
# compared with the one pinned below, and ./cmd/postgres_exporter built in a
# writable copy of the module directory.  Its dependencies come from the
# proxy too, verified against the module's own go.sum, as are those of
# t/lib/promql_names against its go.sum.  Nothing else is contacted: GOPROXY
# loses any "direct" entry, GOTOOLCHAIN=local, and the module and build
# caches are a temporary directory removed afterwards.
#
# The binaries are cached in $PGSS_NG_TOOLS_DIR (default /opt/pgss_ng/tools)
# as postgres_exporter-VERSION/postgres_exporter, next to a file holding the
# module checksum they were built from, and promql_names/promql_names next
# to the checksum of its sources: what is already there is not rebuilt.
# Building both releases took 99 s and 165 s on this project's shared
# 2-core machines, most of it compiling the first one's dependencies;
# promql_names, built after them, about a minute more.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-exporter.sh: must run as root" >&2
    exit 1
fi

MODULE=github.com/prometheus-community/postgres_exporter
# version and the module's h1: checksum (go.sum's, as the proxy served it
# on 2026-12-01): v0.17.1 reads the pg_stat_statements view, v0.19.1 the
# pg_stat_statements(boolean) function.
RELEASES=(
    "v0.17.1 h1:+gByb2KEhVoQ9Klf+JQHua9ff6+aT5YtkGJB2p65/iE="
    "v0.19.1 h1:5qEW78eJYYImZukEEw2iy//tNlTmhmt3mMc+AVGR6LU="
)
TOOLS=${PGSS_NG_TOOLS_DIR:-/opt/pgss_ng/tools}

# release_ok DIR SUM: is DIR a finished build of the module with that sum?
release_ok() {
    [ -x "$1/postgres_exporter" ] && [ "$(cat "$1/module.sum" 2>/dev/null)" = "$2" ] &&
        "$1/postgres_exporter" --version >/dev/null 2>&1
}

todo=()
for r in "${RELEASES[@]}"; do
    read -r version sum <<< "$r"
    if release_ok "$TOOLS/postgres_exporter-$version" "$sum"; then
        echo "install-exporter: postgres_exporter $version already in $TOOLS"
    else
        todo+=("$r")
    fi
done

# promql_names: its sources' checksum, and whether that build is there
PROMQL_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../t/lib/promql_names" && pwd)
promql_sum=$(cd "$PROMQL_SRC" && cat go.mod go.sum main.go | sha256sum | cut -d' ' -f1)
promql_todo=1
if [ -x "$TOOLS/promql_names/promql_names" ] &&
   [ "$(cat "$TOOLS/promql_names/sources.sum" 2>/dev/null)" = "$promql_sum" ]; then
    echo "install-exporter: promql_names already in $TOOLS"
    promql_todo=
fi
[ ${#todo[@]} -gt 0 ] || [ -n "$promql_todo" ] || exit 0

if ! command -v go >/dev/null; then
    echo "install-exporter: no go on the PATH: Go is needed to build postgres_exporter" >&2
    exit 1
fi

work=$(mktemp -d /tmp/pgss_ng_exporter.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
proxy=$(go env GOPROXY | tr ',|' '\n\n' | grep -vx -e direct -e off -e '' | paste -sd, -)
export GOPROXY=${proxy:-https://proxy.golang.org}
export GOMODCACHE=$work/mod GOCACHE=$work/cache GOPATH=$work/gopath
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -mod=readonly -buildvcs=false"
mkdir -p "$TOOLS"

for r in "${todo[@]}"; do
    read -r version sum <<< "$r"
    start=$(date +%s)
    echo "install-exporter: building postgres_exporter $version (GOPROXY=$GOPROXY)"
    (cd "$work" && go mod download -json "$MODULE@$version") > "$work/$version.json"
    got=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Sum"])' < "$work/$version.json")
    if [ "$got" != "$sum" ]; then
        echo "install-exporter: $MODULE@$version: checksum $got, expected $sum" >&2
        exit 1
    fi
    dir=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])' < "$work/$version.json")
    cp -r "$dir" "$work/src-$version"
    chmod -R u+w "$work/src-$version"
    out=$TOOLS/.postgres_exporter-$version.new   # same file system: renamed at the end
    rm -rf "$out"
    mkdir "$out"
    (cd "$work/src-$version" &&
        go build -trimpath -o "$out/postgres_exporter" \
            -ldflags "-X github.com/prometheus/common/version.Version=${version#v}" \
            ./cmd/postgres_exporter)
    echo "$sum" > "$out/module.sum"
    "$out/postgres_exporter" --version
    chmod -R go+rX "$out"
    rm -rf "$TOOLS/postgres_exporter-$version.old"
    if [ -e "$TOOLS/postgres_exporter-$version" ]; then
        mv "$TOOLS/postgres_exporter-$version" "$TOOLS/postgres_exporter-$version.old"
    fi
    mv "$out" "$TOOLS/postgres_exporter-$version"
    rm -rf "$TOOLS/postgres_exporter-$version.old"
    echo "install-exporter: postgres_exporter $version installed in $TOOLS ($(( $(date +%s) - start ))s)"
done

if [ -n "$promql_todo" ]; then
    start=$(date +%s)
    echo "install-exporter: building promql_names (GOPROXY=$GOPROXY)"
    cp -r "$PROMQL_SRC" "$work/promql_names"
    out=$TOOLS/.promql_names.new
    rm -rf "$out"
    mkdir "$out"
    (cd "$work/promql_names" && go build -trimpath -o "$out/lib/promql_names" .)
    echo "$promql_sum" > "$out/sources.sum"
    chmod -R go+rX "$out"
    rm -rf "$TOOLS/promql_names"
    mv "$out" "$TOOLS/promql_names"
    echo "install-exporter: promql_names installed in $TOOLS ($(( $(date +%s) - start ))s)"
fi
