/*-------------------------------------------------------------------------
 *
 * waitfuncs.c
 *	  pgss_ng_waits(): the wait-event profile of each statement entry, one
 *	  row per (entry, wait event) the statement kind keeps, with the
 *	  server's own names of the events (pg_stat_activity's), and a row for
 *	  the samples of the entry running with no wait event (CPU).
 *
 * Privileges: as pg_stat_activity shows another role's wait events only
 * to roles with the privileges of pg_read_all_stats, a role without them
 * sees its own statements' rows only.
 *
 * Locking: none taken here; see pgss_ng_waits_read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"

#include "stmt/stmt_kind.h"

PG_FUNCTION_INFO_V1(pgss_ng_waits);

#define PGSS_NG_WAITS_COLS	8

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
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	int			period = pgss_ng_wait_sample_period;

	for (int r = 0; r < n; r++)
	{
		Datum		values[PGSS_NG_WAITS_COLS];
		bool		nulls[PGSS_NG_WAITS_COLS];
		uint32		ev = rows[r].wait_event_info;
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));
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
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
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
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			userid = GetUserId();

	if (!pgss_ng_stmt_attach())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgss_ng must be loaded via \"shared_preload_libraries\"")));
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != PGSS_NG_WAITS_COLS)
		elog(ERROR, "pgss_ng_waits declares %d columns, the library makes %d",
			 rsinfo->setDesc->natts, PGSS_NG_WAITS_COLS);
	pgss_ng_waits_read(has_privs_of_role(userid, ROLE_PG_READ_ALL_STATS) ?
					   InvalidOid : userid, put_waits, rsinfo);
	return (Datum) 0;
}
