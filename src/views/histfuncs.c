/*-------------------------------------------------------------------------
 *
 * histfuncs.c
 *	  pgss_ng_exec_time_histogram(...) and pgss_ng_plan_time_histogram(...):
 *	  one entry's time histograms.  Another role's need the privileges of
 *	  pg_read_all_stats: they name the entry by its queryid, and an answer
 *	  would tell that the role ran a statement the caller guessed.  No lock
 *	  taken here; see pgss_ng_stmt_histograms.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"

#include "resultcols.h"
#include "sqlfuncs.h"
#include "stmt/stmt_read.h"

PG_FUNCTION_INFO_V1(pgss_ng_exec_time_histogram);
PG_FUNCTION_INFO_V1(pgss_ng_plan_time_histogram);

/*
 * histogram_srf
 *		Rows (lower_ms, upper_ms, count) of each non-empty bucket of the
 *		phase's histogram of the entry (userid, dbid, queryid, toplevel),
 *		lowest first; none for an unknown entry.  Another role's entry
 *		without pg_read_all_stats's privileges: ERROR whether it exists or
 *		not.  Errors also: library not preloaded; an undeclared column.
 */
static Datum
histogram_srf(FunctionCallInfo fcinfo, PgssNgPhase phase)
{
	static const PgssNgColumn columns[] = {
		{"lower_ms", FLOAT8OID}, {"upper_ms", FLOAT8OID}, {"count", INT8OID}
	};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgssNgResultMap rm;
	PgssNgStmtKey key;
	PgssNgHistPair hist;
	int			b;

	pgss_ng_views_check_loaded();

	memset(&key, 0, sizeof(key));
	key.userid = PG_GETARG_OID(0);
	key.dbid = PG_GETARG_OID(1);
	key.queryid = (uint64) PG_GETARG_INT64(2);
	key.toplevel = PG_GETARG_BOOL(3);

	if (key.userid != GetUserId() &&
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the time histogram of "
						"another role's statement"),
				 errdetail("Only roles with privileges of the \"%s\" role "
						   "may read it.", "pg_read_all_stats")));

	InitMaterializedSRF(fcinfo, 0);
	pgss_ng_result_map(&rm, fcinfo, rsinfo->setDesc, columns,
					   lengthof(columns), NULL);

	(void) pgss_ng_stmt_histograms(&key, &hist);
	for (b = 0; b < PGSS_NG_HIST_NBUCKETS; b++)
	{
		uint32		count = pgss_ng_hist_count(&hist, phase, b);
		Datum		values_made[lengthof(columns)];
		bool		nulls_made[lengthof(columns)] = {false, false, false};
		Datum	   *values = values_made;
		bool	   *nulls = nulls_made;
		double		lower;
		double		upper;

		if (count == 0)
			continue;
		pgss_ng_hist_bounds(b, &lower, &upper);
		values[0] = Float8GetDatum(lower);
		values[1] = Float8GetDatum(upper);
		values[2] = Int64GetDatum((int64) count);
		pgss_ng_result_project(&rm, &values, &nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	return (Datum) 0;
}

/*
 * pgss_ng_exec_time_histogram / pgss_ng_plan_time_histogram
 *		(userid, dbid, queryid, toplevel): see histogram_srf.
 */
Datum
pgss_ng_exec_time_histogram(PG_FUNCTION_ARGS)
{
	return histogram_srf(fcinfo, PGSS_NG_PHASE_EXEC);
}

Datum
pgss_ng_plan_time_histogram(PG_FUNCTION_ARGS)
{
	return histogram_srf(fcinfo, PGSS_NG_PHASE_PLAN);
}
