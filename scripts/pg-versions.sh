# shellcheck shell=bash
# Sourced by scripts/*.sh and bench/run.sh: where each supported
# PostgreSQL major version is installed.
#
#   15        Debian's postgresql-15 (/usr/lib/postgresql/15), or the
#             installation whose pg_config is $PG_CONFIG (kept for
#             compatibility) or $PGSS_NG_PG_CONFIG_15;
#   16 17 18  the PyPI builds that scripts/install-deps.sh unpacks into
#             $PGSS_NG_PG_PREFIX/pgNN (default /opt/pgss_ng), or
#             $PGSS_NG_PG_CONFIG_NN.
#
# The PGSS_NG_PG_CONFIG_NN overrides let developers who work in parallel
# build and test against private copies (make install writes pgss_ng.so
# into the installation).

PGSS_NG_ALL_VERSIONS="15 16 17 18"

# pgss_ng_pg_config MAJOR: print the pg_config of that installation.
pgss_ng_pg_config() {
    local v=$1 var
    var=PGSS_NG_PG_CONFIG_$v
    if [ -n "${!var:-}" ]; then
        echo "${!var}"
        return
    fi
    case $v in
        15) echo "${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}" ;;
        16 | 17 | 18) echo "${PGSS_NG_PG_PREFIX:-/opt/pgss_ng}/pg$v/bin/pg_config" ;;
        *)
            echo "unsupported PostgreSQL major version \"$v\" (supported: $PGSS_NG_ALL_VERSIONS)" >&2
            return 1
            ;;
    esac
}
