/*-------------------------------------------------------------------------
 *
 * plansfuncs.c
 *	  pgss_ng_plans(showtext): one row per plan of each statement
 *	  (stmt/plans.h), with its calls, times, rows, first and last call and
 *	  EXPLAIN (COSTS OFF) text; pgss_ng_plans_info(), the plan rows'
 *	  counters.  Privileges as pgss_ng's: queryid, planid and text of
 *	  another role's statements need pg_read_all_stats's.  No lock taken
 *	  here; the read's: pgss_ng_plans_read.
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

#include "convert.h"
#include "resultcols.h"
#include "sqlfuncs.h"
#include "stmt/plans.h"
#include "stmt/stmt_kind.h"

PG_FUNCTION_INFO_V1(pgss_ng_plans);
PG_FUNCTION_INFO_V1(pgss_ng_plans_info);

/* The columns pgss_ng_plans() makes, in its install script's order. */
static const PgssNgColumn plan_columns[] = {
	{"userid", OIDOID}, {"dbid", OIDOID}, {"toplevel", BOOLOID},
	{"queryid", INT8OID}, {"planid", INT8OID}, {"calls", INT8OID},
	{"total_exec_time", FLOAT8OID}, {"min_exec_time", FLOAT8OID},
	{"max_exec_time", FLOAT8OID}, {"mean_exec_time", FLOAT8OID},
	{"rows", INT8OID}, {"first_call", TIMESTAMPTZOID},
	{"last_call", TIMESTAMPTZOID}, {"plan", TEXTOID}
};

#define PGSS_NG_PLANS_COLS	lengthof(plan_columns)

/* What a read keeps for all its rows. */
typedef struct PlanRows
{
	ReturnSetInfo *rsinfo;
	bool		showtext;
	bool		is_allowed_role;	/* privileges of pg_read_all_stats */
	Oid			userid;
	PgssNgConvert convert;		/* texts into the database's encoding */
	Datum		no_privilege;	/* "<insufficient privilege>" */
	PgssNgResultMap result;		/* the declared columns */
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
	Datum		values_made[PGSS_NG_PLANS_COLS];
	bool		nulls_made[PGSS_NG_PLANS_COLS];
	Datum	   *values = values_made;
	bool	   *nulls = nulls_made;
	int			i = 0;

	memset(nulls_made, 0, sizeof(nulls_made));
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
	pgss_ng_result_project(&pr->result, &values, &nulls);
	tuplestore_putvalues(pr->rsinfo->setResult, pr->rsinfo->setDesc, values,
						 nulls);
}

/*
 * pgss_ng_plans
 *		pgss_ng_plans(showtext): a row per plan row with calls, with the
 *		columns its SQL declares (plan NULL without showtext or a kept
 *		text), the caller's pending counts flushed first.  Errors: not
 *		preloaded; a declared column the library does not make.
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
	pgss_ng_result_map(&pr.result, fcinfo, pr.rsinfo->setDesc, plan_columns,
					   PGSS_NG_PLANS_COLS, NULL);
	pgss_ng_plans_read(pr.showtext, put_plan_row, &pr);
	return (Datum) 0;
}

/*
 * pgss_ng_plans_info
 *		One row of the plan rows' counters (pgss_ng_plans_stats) for the
 *		view pgss_ng_info, for every role: plan texts are not shared
 *		between roles, so their bytes tell nothing of another's.  Errors:
 *		not preloaded; a declared column the library does not make.
 */
Datum
pgss_ng_plans_info(PG_FUNCTION_ARGS)
{
	static const PgssNgColumn columns[] = {
		{"plan_rows", INT8OID}, {"plan_rows_max", INT8OID},
		{"plan_rows_evicted", INT8OID}, {"plan_calls_dropped", INT8OID},
		{"plan_text_bytes", INT8OID}, {"plan_text_limit_bytes", INT8OID},
		{"plan_text_dropped", INT8OID}, {"plan_text_failures", INT8OID}
	};
	TupleDesc	tupdesc;
	PgssNgResultMap rm;
	Datum		values[lengthof(columns)];
	bool		nulls[lengthof(columns)];
	PgssNgPlansStats st;
	int			i = 0;

	pgss_ng_views_check_loaded();
	tupdesc = pgss_ng_result_row_begin(&rm, fcinfo, columns, lengthof(columns));

	pgss_ng_plans_stats(&st);
	memset(nulls, 0, sizeof(nulls));
	values[i++] = Int64GetDatum(st.rows);
	values[i++] = Int64GetDatum(st.rows_max);
	values[i++] = Int64GetDatum(st.evicted);
	values[i++] = Int64GetDatum(st.calls_dropped);
	values[i++] = Int64GetDatum(st.text.bytes);
	values[i++] = Int64GetDatum(st.text.limit_bytes);
	values[i++] = Int64GetDatum(st.text.dropped);
	values[i++] = Int64GetDatum(st.text.failures);
	Assert(i == lengthof(columns));

	PG_RETURN_DATUM(pgss_ng_result_row_end(&rm, tupdesc, values, nulls));
}
