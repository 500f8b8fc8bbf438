/*-------------------------------------------------------------------------
 *
 * compat_sqlfuncs.c
 *	  pgss_ng_compat's functions (from its 1.1): this server version's
 *	  pg_stat_statements(showtext), _info() and _reset(...), served from
 *	  pgss_ng's reads and reset (views/sqlfuncs.h).  In C, as
 *	  pg_stat_statements' are, so that nothing in them is looked up by name
 *	  at creation or call; their columns are those the install script
 *	  declares, taken by name; the reset is guarded by EXECUTE on it alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

#include "views/sqlfuncs.h"

PG_FUNCTION_INFO_V1(pgss_ng_compat_statements);
PG_FUNCTION_INFO_V1(pgss_ng_compat_info);
PG_FUNCTION_INFO_V1(pgss_ng_compat_reset);

/*
 * pgss_ng_compat_statements
 *		pg_stat_statements(showtext): SETOF record, pgss_ng()'s rows of the
 *		entries planned or executed at least once (pg_stat_statements has
 *		no row for a statement whose executions all failed), with the
 *		declared columns.  1.10's blk_read_time and blk_write_time
 *		(PostgreSQL 15 and 16) are pgss_ng's shared_blk_read_time and
 *		shared_blk_write_time, which hold those servers' shared and local
 *		block times together.
 */
Datum
pgss_ng_compat_statements(PG_FUNCTION_ARGS)
{
	static const PgssNgColumnAlias aliases[] = {
		{"blk_read_time", "shared_blk_read_time"},
		{"blk_write_time", "shared_blk_write_time"},
		{NULL, NULL}
	};

	return pgss_ng_views_statements(fcinfo, PGSS_NG_VIEWS_EXECUTED, aliases);
}

/*
 * pgss_ng_compat_info
 *		pg_stat_statements_info(): dealloc (eviction runs) and stats_reset
 *		(the last full reset), pgss_ng_info()'s.
 */
Datum
pgss_ng_compat_info(PG_FUNCTION_ARGS)
{
	return pgss_ng_views_info(fcinfo);
}

/*
 * pgss_ng_compat_reset
 *		pg_stat_statements_reset(userid, dbid, queryid [, minmax_only]):
 *		pgss_ng_reset()'s.  1.10 (PostgreSQL 15 and 16) declares three
 *		arguments and returns void; 1.11 and 1.12 add minmax_only and
 *		return the time of the reset.
 */
Datum
pgss_ng_compat_reset(PG_FUNCTION_ARGS)
{
	bool		minmax_only = PG_NARGS() > 3 ? PG_GETARG_BOOL(3) : false;
	TimestampTz reset;

	reset = pgss_ng_views_reset(PG_GETARG_OID(0), PG_GETARG_OID(1),
								(uint64) PG_GETARG_INT64(2), minmax_only);
	if (PG_NARGS() <= 3)
		PG_RETURN_VOID();
	PG_RETURN_TIMESTAMPTZ(reset);
}
