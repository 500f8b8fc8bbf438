/*-------------------------------------------------------------------------
 *
 * waitfuncs.c
 *	  pgss_ng_waits(): each statement's wait-event profile, a row per
 *	  (entry, wait event) with pg_stat_activity's names and one for samples
 *	  with no wait event (CPU); pgss_ng_waits_info(), the sampler's
 *	  counters for the view pgss_ng_info.  Another role's rows need
 *	  pg_read_all_stats's privileges, as in pg_stat_activity.  No lock
 *	  taken here; see pgss_ng_waits_read.
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
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "resultcols.h"
#include "sqlfuncs.h"
#include "stmt/stmt_read.h"

PG_FUNCTION_INFO_V1(pgss_ng_waits);
PG_FUNCTION_INFO_V1(pgss_ng_waits_info);

/* the columns pgss_ng_waits() makes (resultcols.c matches the declared) */
static const PgssNgColumn waits_columns[] = {
	{"userid", OIDOID}, {"dbid", OIDOID}, {"toplevel", BOOLOID},
	{"queryid", INT8OID}, {"wait_event_type", TEXTOID},
	{"wait_event", TEXTOID}, {"samples", INT8OID}, {"time", FLOAT8OID}
};

#define PGSS_NG_WAITS_COLS	lengthof(waits_columns)

/* What put_waits needs: the result and how its columns are declared. */
typedef struct WaitsResult
{
	ReturnSetInfo *rsinfo;
	PgssNgResultMap map;
} WaitsResult;

/*
 * put_waits
 *		pgss_ng_waits_read emit function: the rows of one entry, into the
 *		result's tuplestore.  A partition lock of the statement kind held
 *		shared.
 */
static void
put_waits(const PgssNgStmtKey *key, const PgssNgWaitRow *rows, int n,
		  void *arg)
{
	WaitsResult *wr = (WaitsResult *) arg;
	int			period = pgss_ng_wait_sample_period;

	for (int r = 0; r < n; r++)
	{
		Datum		values_made[PGSS_NG_WAITS_COLS];
		bool		nulls_made[PGSS_NG_WAITS_COLS];
		Datum	   *values = values_made;
		bool	   *nulls = nulls_made;
		uint32		ev = rows[r].wait_event_info;
		int			i = 0;

		memset(nulls_made, 0, sizeof(nulls_made));
		values[i++] = ObjectIdGetDatum(key->userid);
		values[i++] = ObjectIdGetDatum(key->dbid);
		values[i++] = BoolGetDatum(key->toplevel);
		values[i++] = Int64GetDatum((int64) key->queryid);
		if (ev == 0)
		{
			values[i++] = CStringGetTextDatum("CPU");
			nulls[i++] = true;
		}
		else
		{
			values[i++] = CStringGetTextDatum(pgstat_get_wait_event_type(ev));
			values[i++] = CStringGetTextDatum(pgstat_get_wait_event(ev));
		}
		values[i++] = Int64GetDatum((int64) rows[r].samples);
		if (period == 0)
			nulls[i++] = true;
		else
			values[i++] = Float8GetDatum((double) rows[r].samples * period);
		Assert(i == PGSS_NG_WAITS_COLS);
		pgss_ng_result_project(&wr->map, &values, &nulls);
		tuplestore_putvalues(wr->rsinfo->setResult, wr->rsinfo->setDesc,
							 values, nulls);
	}
}

/*
 * pgss_ng_waits
 *		pgss_ng_waits(): SETOF record (userid, dbid, toplevel, queryid,
 *		wait_event_type, wait_event, samples, time): for each entry pgss_ng
 *		shows, its samples with no wait event (wait_event_type 'CPU',
 *		wait_event NULL) and those of each wait event kept for it; time is
 *		samples x pgss_ng.wait_sample_period (ms), NULL while sampling is
 *		off.  Errors: library not preloaded.
 */
Datum
pgss_ng_waits(PG_FUNCTION_ARGS)
{
	WaitsResult wr = {.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo};
	Oid			userid = GetUserId();

	if (!pgss_ng_stmt_attach())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgss_ng must be loaded via \"shared_preload_libraries\"")));
	InitMaterializedSRF(fcinfo, 0);
	pgss_ng_result_map(&wr.map, fcinfo, wr.rsinfo->setDesc, waits_columns,
					   PGSS_NG_WAITS_COLS, NULL);
	pgss_ng_waits_read(has_privs_of_role(userid, ROLE_PG_READ_ALL_STATS) ?
					   InvalidOid : userid, put_waits, &wr);
	return (Datum) 0;
}

/*
 * pgss_ng_waits_info
 *		pgss_ng_waits_info(): one row (wait_events_dropped,
 *		wait_samples_lost, wait_samples_added): the per-event rows dropped
 *		from the full table, the samples no entry took, when the sampler
 *		last added its samples (NULL: never); see docs/reference.md.
 *		Errors: library not preloaded.
 */
Datum
pgss_ng_waits_info(PG_FUNCTION_ARGS)
{
	static const PgssNgColumn columns[] = {
		{"wait_events_dropped", INT8OID}, {"wait_samples_lost", INT8OID},
		{"wait_samples_added", TIMESTAMPTZOID}
	};
	TupleDesc	tupdesc;
	PgssNgResultMap rm;
	Datum		values[lengthof(columns)];
	bool		nulls[lengthof(columns)] = {false, false, false};
	PgssNgInfoSnapshot info;

	pgss_ng_views_check_loaded();
	tupdesc = pgss_ng_result_row_begin(&rm, fcinfo, columns, lengthof(columns));
	pgss_ng_stmt_info(&info);
	values[0] = Int64GetDatum(info.wait_events_dropped);
	values[1] = Int64GetDatum(info.wait_samples_lost);
	if (info.wait_samples_added != 0)
		values[2] = TimestampTzGetDatum(info.wait_samples_added);
	else
		nulls[2] = true;
	PG_RETURN_DATUM(pgss_ng_result_row_end(&rm, tupdesc, values, nulls));
}
