#!/usr/bin/env bash
# Build pgxn_meta, PGXN's validator of META.json files (the pgxn_meta crate
# of the PGXN project: META.json against the JSON Schema of the PGXN Meta
# Spec), which scripts/test.sh runs on META.json.  Called by
# scripts/install-deps.sh; run as root; needs cargo on the PATH.
#
# The exact crate version below comes from crates.io (cargo checks each
# crate against the registry's checksum) and is built with its own
# Cargo.lock (--locked), in temporary cargo and build directories removed
# afterwards.  The binary is cached in $PGSS_NG_TOOLS_DIR (default
# /opt/pgss_ng/tools) as pgxn_meta-VERSION/bin/pgxn_meta: a version already
# there is not rebuilt.  Building it took about 2.5 minutes of CPU on this
# project's 2-core machines.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "install-pgxn-meta.sh: must run as root" >&2
    exit 1
fi

VERSION=0.7.0
TOOLS=${PGSS_NG_TOOLS_DIR:-/opt/pgss_ng/tools}
dir=$TOOLS/pgxn_meta-$VERSION

if [ -x "$dir/bin/pgxn_meta" ] && "$dir/bin/pgxn_meta" --version >/dev/null 2>&1; then
    echo "install-pgxn-meta: pgxn_meta $VERSION already in $TOOLS"
    exit 0
fi
# rustup installs cargo into ~/.cargo/bin, which a non-login shell may not
# have on its PATH
for d in "${CARGO_HOME:-$HOME/.cargo}/bin" /root/.cargo/bin; do
    command -v cargo >/dev/null || { [ -x "$d/cargo" ] && PATH=$d:$PATH; }
done
if ! command -v cargo >/dev/null; then
    echo "install-pgxn-meta: no cargo on the PATH: cargo is needed to build pgxn_meta" >&2
    exit 1
fi

work=$(mktemp -d /tmp/pgss_ng_pgxn_meta.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
echo "install-pgxn-meta: building pgxn_meta $VERSION (crates.io)"
mkdir -p "$TOOLS"
rm -rf "$dir.new"
CARGO_HOME=$work/cargo CARGO_TARGET_DIR=$work/target \
    cargo install --quiet --locked --root "$dir.new" pgxn_meta --version "=$VERSION"
"$dir.new/bin/pgxn_meta" --version
rm -f "$dir.new/.crates.toml" "$dir.new/.crates2.json"
chmod -R go+rX "$dir.new"
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "install-pgxn-meta: pgxn_meta $VERSION installed in $TOOLS ($(( $(date +%s) - start ))s)"
