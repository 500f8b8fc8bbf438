/*-------------------------------------------------------------------------
 *
 * plansfuncs.c
 *	  SQL-callable pgss_ng_plans(showtext): one row per plan of each
 *	  statement (stmt/plans.h), with its calls, execution times, rows,
 *	  first and last call, and its EXPLAIN (COSTS OFF) text.
 *
 * Privileges follow pgss_ng's (sqlfuncs.c): every role sees every row's
 * numbers, but which statement and plan a row is (queryid, planid) and
 * its text only for its own statements, unless it has the privileges of
 * pg_read_all_stats.
 *
 * Locking: none taken here; the read takes the statement kind's partition
 * locks and entry locks shared (pgss_ng_plans_read), each row put in the
 * tuplestore with a partition lock held shared.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "convert.h"
#include "stmt/stmt_kind.h"

PG_FUNCTION_INFO_V1(pgss_ng_plans);

#define PGSS_NG_PLANS_COLS	14

/* What a read keeps for all its rows. */
typedef struct PlanRows
{
	ReturnSetInfo *rsinfo;
	bool		showtext;
	bool		is_allowed_role;	/* privileges of pg_read_all_stats */
	Oid			userid;
	PgssNgConvert convert;		/* texts into the database's encoding */
	Datum		no_privilege;	/* "<insufficient privilege>" */
} PlanRows;

/*
 * put_plan_row
 *		pgss_ng_plans_read emit function: one row of pgss_ng_plans().  A
 *		partition lock of the statement kind held shared.  Memory: the
 *		tuplestore's; a converted text in CurrentMemoryContext.
 */
static void
put_plan_row(const PgssNgPlanSnapshot *ps, void *arg)
{
	PlanRows   *pr = (PlanRows *) arg;
	Datum		values[PGSS_NG_PLANS_COLS];
	bool		nulls[PGSS_NG_PLANS_COLS];
	int			i = 0;

	memset(nulls, 0, sizeof(nulls));
	values[i++] = ObjectIdGetDatum(ps->key->userid);
	values[i++] = ObjectIdGetDatum(ps->key->dbid);
	values[i++] = BoolGetDatum(ps->key->toplevel);
	if (pr->is_allowed_role || ps->key->userid == pr->userid)
	{
		values[i++] = Int64GetDatum((int64) ps->key->queryid);
		values[i++] = Int64GetDatum((int64) ps->planid);
	}
	else
	{
		nulls[i++] = true;
		nulls[i++] = true;
	}
	values[i++] = Int64GetDatum(ps->calls);
	values[i++] = Float8GetDatum(ps->total_time);
	values[i++] = Float8GetDatum(ps->min_time);
	values[i++] = Float8GetDatum(ps->max_time);
	values[i++] = Float8GetDatum(ps->total_time / ps->calls);
	values[i++] = Int64GetDatum(ps->rows);
	values[i++] = TimestampTzGetDatum(ps->first_call);
	values[i++] = TimestampTzGetDatum(ps->last_call);
	if (!pr->showtext)
		nulls[i++] = true;
	else if (!pr->is_allowed_role && ps->key->userid != pr->userid)
		values[i++] = pr->no_privilege;
	else if (ps->plan == NULL)
		nulls[i++] = true;
	else
	{
		int			outlen;
		const char *shown = pgss_ng_convert_text(&pr->convert, ps->plan,
												 ps->plan_len, ps->encoding,
												 &outlen);

		values[i++] = PointerGetDatum(cstring_to_text_with_len(shown, outlen));
	}
	Assert(i == PGSS_NG_PLANS_COLS);
	tuplestore_putvalues(pr->rsinfo->setResult, pr->rsinfo->setDesc, values,
						 nulls);
}

/*
 * pgss_ng_plans
 *		pgss_ng_plans(showtext): SETOF record, one row per plan row with
 *		calls: userid, dbid, toplevel, queryid, planid, calls,
 *		total_exec_time, min_exec_time, max_exec_time, mean_exec_time,
 *		rows, first_call, last_call, plan (NULL without showtext, or when
 *		its text was not kept).  The caller's pending counts are flushed
 *		first.  Errors: library not preloaded; SQL objects of another
 *		build.
 */
Datum
pgss_ng_plans(PG_FUNCTION_ARGS)
{
	PlanRows	pr;

	if (!pgss_ng_stmt_attach())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgss_ng must be loaded via \"shared_preload_libraries\"")));
	memset(&pr, 0, sizeof(pr));
	pr.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	pr.showtext = PG_GETARG_BOOL(0);
	pr.userid = GetUserId();
	pr.is_allowed_role = has_privs_of_role(pr.userid, ROLE_PG_READ_ALL_STATS);
	pgss_ng_convert_init(&pr.convert);
	pr.no_privilege = CStringGetTextDatum("<insufficient privilege>");
	InitMaterializedSRF(fcinfo, 0);
	if (pr.rsinfo->setDesc->natts != PGSS_NG_PLANS_COLS)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s returns %d columns, but the library makes %d",
						"pgss_ng_plans", pr.rsinfo->setDesc->natts,
						PGSS_NG_PLANS_COLS)));
	pgss_ng_plans_read(pr.showtext, put_plan_row, &pr);
	return (Datum) 0;
}
