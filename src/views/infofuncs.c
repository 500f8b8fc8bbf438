/*-------------------------------------------------------------------------
 *
 * infofuncs.c
 *	  pgss_ng_info() and pgss_ng_info_memory() (the view pgss_ng_info) and
 *	  pgss_ng_reset(), whose bodies pgss_ng_compat's shares (sqlfuncs.h);
 *	  each fills the columns its SQL declares, by name (resultcols.c).  No
 *	  lock taken here; see pgss_ng_stmt_info and pgss_ng_stmt_reset.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/timestamp.h"

#include "resultcols.h"
#include "sqlfuncs.h"
#include "stmt/stmt_read.h"
#include "stmt/stmt_reset.h"

PG_FUNCTION_INFO_V1(pgss_ng_reset);
PG_FUNCTION_INFO_V1(pgss_ng_info);
PG_FUNCTION_INFO_V1(pgss_ng_info_memory);

/*
 * pgss_ng_views_reset
 *		The statement kind's reset (pgss_ng_stmt_reset(), which says what
 *		is removed or restarted); returns its time.  The body of
 *		pgss_ng_reset() and of pgss_ng_compat's pg_stat_statements_reset().
 *		Errors: library not preloaded.
 */
TimestampTz
pgss_ng_views_reset(Oid userid, Oid dbid, uint64 queryid, bool minmax_only)
{
	pgss_ng_views_check_loaded();
	return pgss_ng_stmt_reset(userid, dbid, queryid, minmax_only);
}

/*
 * pgss_ng_reset
 *		pgss_ng_reset(userid, dbid, queryid, minmax_only): see
 *		pgss_ng_views_reset.  Returns the time of the reset.
 *		Errors: library not preloaded; EXECUTE privilege (install script).
 */
Datum
pgss_ng_reset(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(pgss_ng_views_reset(PG_GETARG_OID(0),
											  PG_GETARG_OID(1),
											  (uint64) PG_GETARG_INT64(2),
											  PG_GETARG_BOOL(3)));
}

/*
 * pgss_ng_views_info
 *		One row of extension-wide counters (docs/reference.md), the body of
 *		pgss_ng_info() and of pg_stat_statements_info() (its first two
 *		columns); the qtext_ columns but the limit are NULL without
 *		pg_read_all_stats's privileges.  Errors: not preloaded; a declared
 *		column the library does not make.
 */
Datum
pgss_ng_views_info(FunctionCallInfo fcinfo)
{
	static const PgssNgColumn columns[] = {
		{"dealloc", INT8OID}, {"stats_reset", TIMESTAMPTZOID},
		{"entries", INT8OID}, {"dropped", INT8OID},
		{"entries_allocated", INT8OID}, {"entries_max", INT8OID},
		{"backstop_skips", INT8OID}, {"qtext_bytes", INT8OID},
		{"qtext_limit_bytes", INT8OID}, {"qtext_count", INT8OID},
		{"qtext_dropped", INT8OID}, {"entries_evicted", INT8OID},
		{"eviction_time", FLOAT8OID}, {"last_eviction", TIMESTAMPTZOID}
	};
	TupleDesc	tupdesc;
	PgssNgResultMap rm;
	Datum		values[lengthof(columns)];
	bool		nulls[lengthof(columns)];
	PgssNgInfoSnapshot info;
	int			i = 0;

	pgss_ng_views_check_loaded();

	tupdesc = pgss_ng_result_row_begin(&rm, fcinfo, columns, lengthof(columns));

	pgss_ng_stmt_info(&info);

	memset(nulls, 0, sizeof(nulls));
	values[i++] = Int64GetDatum(info.kind.dealloc);
	values[i++] = TimestampTzGetDatum(info.stats_reset);
	values[i++] = Int64GetDatum(info.kind.entries);
	values[i++] = Int64GetDatum(info.dropped);
	values[i++] = Int64GetDatum(info.kind.entries_allocated);
	values[i++] = Int64GetDatum(info.kind.entries_max);
	values[i++] = Int64GetDatum(info.kind.backstop_skips);
	/*
	 * Texts are shared by all roles (deduplicated), so how the arena's
	 * size and count move would tell whether another role ran a guessed
	 * text: only roles allowed to read every text see them.
	 */
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
	{
		values[i++] = Int64GetDatum(info.qtext.bytes);
		values[i++] = Int64GetDatum(info.qtext.limit_bytes);
		values[i++] = Int64GetDatum(info.qtext.count);
		values[i++] = Int64GetDatum(info.qtext.dropped);
	}
	else
	{
		nulls[i++] = true;
		values[i++] = Int64GetDatum(info.qtext.limit_bytes);
		nulls[i++] = true;
		nulls[i++] = true;
	}
	values[i++] = Int64GetDatum(info.kind.entries_evicted);
	values[i++] = Float8GetDatum((double) info.kind.eviction_ns / 1e6);
	if (info.kind.last_eviction != 0)
		values[i++] = TimestampTzGetDatum(info.kind.last_eviction);
	else
		nulls[i++] = true;
	Assert(i == lengthof(columns));

	PG_RETURN_DATUM(pgss_ng_result_row_end(&rm, tupdesc, values, nulls));
}

/*
 * pgss_ng_info
 *		pgss_ng_info(): see pgss_ng_views_info.
 */
Datum
pgss_ng_info(PG_FUNCTION_ARGS)
{
	return pgss_ng_views_info(fcinfo);
}

/*
 * pgss_ng_info_memory
 *		One row: the shared memory pgss_ng's data takes (entry_bytes,
 *		qtext_allocated_bytes, hist_bytes) and the times not kept in a
 *		histogram (hist_dropped); the view pgss_ng_info shows them after
 *		pgss_ng_info()'s columns.  qtext_allocated_bytes is NULL for roles
 *		without the privileges of pg_read_all_stats, as qtext_bytes is.
 *		Errors: library not preloaded; a declaration of other columns.
 */
Datum
pgss_ng_info_memory(PG_FUNCTION_ARGS)
{
	static const PgssNgColumn columns[] = {
		{"entry_bytes", INT8OID}, {"qtext_allocated_bytes", INT8OID},
		{"hist_bytes", INT8OID}, {"hist_dropped", INT8OID}
	};
	TupleDesc	tupdesc;
	PgssNgResultMap rm;
	Datum		values[lengthof(columns)];
	bool		nulls[lengthof(columns)];
	PgssNgInfoSnapshot info;

	pgss_ng_views_check_loaded();

	tupdesc = pgss_ng_result_row_begin(&rm, fcinfo, columns, lengthof(columns));

	pgss_ng_stmt_info(&info);

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int64GetDatum(info.kind.entry_bytes);
	/* the texts': see pgss_ng_views_info */
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		values[1] = Int64GetDatum(info.qtext.allocated_bytes);
	else
		nulls[1] = true;
	values[2] = Int64GetDatum(info.hist_bytes);
	values[3] = Int64GetDatum(info.hist_dropped);

	PG_RETURN_DATUM(pgss_ng_result_row_end(&rm, tupdesc, values, nulls));
}
