/*-------------------------------------------------------------------------
 *
 * sqlfuncs.c
 *	  pgss_ng(showtext, changed_since), pgss_ng_detail(...) (the same rows
 *	  with last run, quantiles, CPU and wait times), pgss_ng_evicted() and
 *	  pgss_ng_evictions(): what the statement kind gives, as tuples, each
 *	  filling the columns its SQL declares (resultcols.c).  docs/design.md,
 *	  "Privileges" and "What a reader sees".  No lock taken here: each row
 *	  is built right after the read copied its entry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "convert.h"
#include "resultcols.h"
#include "rowform.h"
#include "sqlfuncs.h"
#include "stmt/stmt_evicted.h"
#include "stmt/stmt_read.h"

PG_FUNCTION_INFO_V1(pgss_ng);
PG_FUNCTION_INFO_V1(pgss_ng_detail);
PG_FUNCTION_INFO_V1(pgss_ng_evicted);
PG_FUNCTION_INFO_V1(pgss_ng_evictions);

/* pgss_ng()'s columns: key, text, time groups, sums, since, own counters */
#define PGSS_NG_COLS \
	(5 + 6 * PGSS_NG_NUMPHASE + PGSS_NG_NUM_SUM_COUNTERS + 2 + \
	 PGSS_NG_NUM_OWN_COUNTERS)

/* pgss_ng_detail()'s: pgss_ng()'s, last run, quantiles, CPU, waits, plans */
#define PGSS_NG_DETAIL_COLS \
	(PGSS_NG_COLS + 1 + PGSS_NG_NUM_QUANTILES * PGSS_NG_NUMPHASE + \
	 2 * PGSS_NG_NUMPHASE + PGSS_NG_WAIT_NGROUPS + 2)

/*
 * The columns each function makes, by name and type, in the order of the
 * install script's OUT list (resultcols.c matches them with the calling
 * SQL's); new columns are only ever appended.  A counter's column from
 * PGSS_NG_SUM_COUNTERS / PGSS_NG_OWN_COUNTERS, by its SQL type:
 */
#define SQLTYPE_INT8 INT8OID
#define SQLTYPE_FLOAT8 FLOAT8OID
#define SQLTYPE_NUMERIC NUMERICOID
#define COUNTER_COLUMN(name, ctype, sqltype, measured) \
	{#name, SQLTYPE_##sqltype},
#define IDENTITY_COLUMNS \
	{"userid", OIDOID}, {"dbid", OIDOID}, {"toplevel", BOOLOID}, \
	{"queryid", INT8OID}, {"query", TEXTOID}
#define TIME_COLUMNS(calls, phase) \
	{calls, INT8OID}, {"total_" phase "_time", FLOAT8OID}, \
	{"min_" phase "_time", FLOAT8OID}, {"max_" phase "_time", FLOAT8OID}, \
	{"mean_" phase "_time", FLOAT8OID}, {"stddev_" phase "_time", FLOAT8OID}
/* pgss_ng_quantiles' */
#define QUANTILE_COLUMNS(phase) \
	{phase "_time_p50", FLOAT8OID}, {phase "_time_p90", FLOAT8OID}, \
	{phase "_time_p95", FLOAT8OID}, {phase "_time_p99", FLOAT8OID}, \
	{phase "_time_p999", FLOAT8OID}
#define CPU_COLUMNS \
	{"exec_user_time", FLOAT8OID}, {"exec_system_time", FLOAT8OID}, \
	{"plan_user_time", FLOAT8OID}, {"plan_system_time", FLOAT8OID}
/* pgss_ng_wait_groups' */
#define WAIT_COLUMNS \
	{"wait_cpu_time", FLOAT8OID}, {"wait_lock_time", FLOAT8OID}, \
	{"wait_lwlock_time", FLOAT8OID}, {"wait_io_time", FLOAT8OID}, \
	{"wait_ipc_time", FLOAT8OID}, {"wait_client_time", FLOAT8OID}, \
	{"wait_other_time", FLOAT8OID}

/* pgss_ng() and pgss_ng_detail(): the first PGSS_NG_COLS are pgss_ng()'s */
static const PgssNgColumn stmt_columns[] = {
	IDENTITY_COLUMNS,
	TIME_COLUMNS("plans", "plan"),
	TIME_COLUMNS("calls", "exec"),
	PGSS_NG_SUM_COUNTERS(COUNTER_COLUMN)
	{"stats_since", TIMESTAMPTZOID}, {"minmax_stats_since", TIMESTAMPTZOID},
	PGSS_NG_OWN_COUNTERS(COUNTER_COLUMN)
	{"last_executed", TIMESTAMPTZOID},
	QUANTILE_COLUMNS("exec"),
	QUANTILE_COLUMNS("plan"),
	CPU_COLUMNS,
	WAIT_COLUMNS,
	{"plans_seen", INT8OID}, {"last_plan_change", TIMESTAMPTZOID}
};
StaticAssertDecl(lengthof(stmt_columns) == PGSS_NG_DETAIL_COLS,
				 "stmt_columns must list every column of pgss_ng_detail()");
StaticAssertDecl(PGSS_NG_NUM_QUANTILES == 5,
				 "QUANTILE_COLUMNS must name every quantile");
StaticAssertDecl(PGSS_NG_WAIT_NGROUPS == 7,
				 "WAIT_COLUMNS must name every group of wait event types");

/*
 * pgss_ng_views_check_loaded
 *		ERROR unless the library was preloaded and this backend attached.
 */
void
pgss_ng_views_check_loaded(void)
{
	if (!pgss_ng_stmt_attach())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgss_ng must be loaded via \"shared_preload_libraries\"")));
}

/*
 * counter_datum_INT8 / _FLOAT8 / _NUMERIC
 *		The Datum of a counter by its SQL type (PGSS_NG_SUM_COUNTERS);
 *		NUMERIC shows a uint64 without overflow.
 */
static inline Datum
counter_datum_INT8(int64 v)
{
	return Int64GetDatum(v);
}

static inline Datum
counter_datum_FLOAT8(double v)
{
	return Float8GetDatum(v);
}

static Datum
counter_datum_NUMERIC(uint64 v)
{
	char		buf[32];

	/* the same value as from its text, without parsing it */
	if (v <= (uint64) PG_INT64_MAX)
		return NumericGetDatum(int64_to_numeric((int64) v));
	snprintf(buf, sizeof buf, UINT64_FORMAT, v);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(0), Int32GetDatum(-1));
}

/*
 * PUT_COUNTER
 *		X macro: counter name of c into values[i++], NULL where this build
 *		cannot measure it (the caller's values, nulls, i and c).
 */
#define PUT_COUNTER(name, ctype, sqltype, measured) \
	if (measured) \
		values[i++] = counter_datum_##sqltype(c->name); \
	else \
		nulls[i++] = true;

/*
 * put_time_columns
 *		calls, total, min, max, mean, stddev (ms) of one phase; next index.
 */
static int
put_time_columns(Datum *values, int i, const PgssNgTimeStats *t)
{
	values[i++] = Int64GetDatum(t->calls);
	values[i++] = Float8GetDatum(t->total);
	values[i++] = Float8GetDatum(t->min);
	values[i++] = Float8GetDatum(t->max);
	values[i++] = Float8GetDatum(t->mean);
	values[i++] = Float8GetDatum(t->stddev);
	return i;
}

/*
 * put_quantile_columns
 *		The time quantiles of one phase (ms), NULL when its histogram is
 *		empty.  Returns the next column index.
 */
static int
put_quantile_columns(Datum *values, bool *nulls, int i, const double *q)
{
	int			j;

	for (j = 0; j < PGSS_NG_NUM_QUANTILES; j++)
	{
		if (isnan(q[j]))
			nulls[i++] = true;
		else
			values[i++] = Float8GetDatum(q[j]);
	}
	return i;
}

/*
 * put_cpu_columns
 *		User and system CPU time (ms) of one phase, NULL when no call of it
 *		was sampled.  Returns the next column index.
 */
static int
put_cpu_columns(Datum *values, bool *nulls, int i, const PgssNgCounters *c,
				PgssNgPhase phase)
{
	if (c->cpu_samples[phase] == 0)
	{
		nulls[i++] = true;
		nulls[i++] = true;
		return i;
	}
	values[i++] = Float8GetDatum(c->user_time[phase]);
	values[i++] = Float8GetDatum(c->system_time[phase]);
	return i;
}

/* What a read keeps for all its rows (pgss_ng, pgss_ng_detail). */
typedef struct ReadRows
{
	ReturnSetInfo *rsinfo;
	bool		detail;			/* pgss_ng_detail's own columns declared */
	bool		showtext;
	bool		is_allowed_role;	/* privileges of pg_read_all_stats */
	Oid			userid;
	PgssNgConvert convert;		/* texts into the database's encoding */
	Datum		no_privilege;	/* "<insufficient privilege>" */
	bool		executed_only;	/* skip entries never planned or executed */
	PgssNgResultMap result;		/* the declared columns */
	PgssNgRowForm *rowform;		/* builds the rows */
} ReadRows;

/*
 * put_identity_columns
 *		userid, dbid, toplevel, queryid and query (the last two for the
 *		role's own statements or with pg_read_all_stats's privileges; the
 *		text converted: convert.c).  Returns the next column index.
 */
static int
put_identity_columns(Datum *values, bool *nulls, int i,
					 const PgssNgStmtSnapshot *es, ReadRows *rr)
{
	values[i++] = ObjectIdGetDatum(es->key.userid);
	values[i++] = ObjectIdGetDatum(es->key.dbid);
	values[i++] = BoolGetDatum(es->key.toplevel);

	if (rr->is_allowed_role || es->key.userid == rr->userid)
	{
		values[i++] = Int64GetDatum((int64) es->key.queryid);
		if (rr->showtext && es->query != NULL)
		{
			const char *data = VARDATA_ANY(es->query);
			int			len = VARSIZE_ANY_EXHDR(es->query);
			int			outlen;
			const char *shown;

			shown = pgss_ng_convert_text(&rr->convert, data, len,
										 es->encoding, &outlen);
			/* a text that needs no change comes back as it is */
			values[i++] = shown == data ? PointerGetDatum(es->query) :
				PointerGetDatum(cstring_to_text_with_len(shown, outlen));
		}
		else
			nulls[i++] = true;
	}
	else
	{
		nulls[i++] = true;
		if (rr->showtext)
			values[i++] = rr->no_privilege;
		else
			nulls[i++] = true;
	}
	return i;
}

/*
 * put_wait_columns
 *		Wait times (ms: samples x pgss_ng.wait_sample_period) by type, NULL
 *		while sampling is off.  Returns the next column index.
 */
static int
put_wait_columns(Datum *values, bool *nulls, int i, const uint64 *samples)
{
	uint64		groups[PGSS_NG_WAIT_NGROUPS];
	int			period = pgss_ng_wait_sample_period;

	pgss_ng_wait_groups(samples, groups);
	for (int g = 0; g < PGSS_NG_WAIT_NGROUPS; g++)
	{
		if (period == 0)
			nulls[i++] = true;
		else
			values[i++] = Float8GetDatum((double) groups[g] * period);
	}
	return i;
}

/*
 * put_row
 *		pgss_ng_stmt_read's emit function: an entry's row of pgss_ng(), with
 *		pgss_ng_detail()'s columns if rr->detail, into the tuplestore.  A
 *		partition lock is held shared.  Memory: a converted text in
 *		CurrentMemoryContext.
 */
static void
put_row(const PgssNgStmtSnapshot *es, void *arg)
{
	ReadRows   *rr = (ReadRows *) arg;
	const PgssNgCounters *c = &es->counters;
	Datum		values_made[PGSS_NG_DETAIL_COLS];
	bool		nulls_made[PGSS_NG_DETAIL_COLS];
	Datum	   *values = values_made;
	bool	   *nulls = nulls_made;
	int			i = 0;

	/* pg_stat_statements' rows: an entry that only failed is not one */
	if (rr->executed_only && es->times[PGSS_NG_PHASE_PLAN].calls == 0 &&
		es->times[PGSS_NG_PHASE_EXEC].calls == 0)
		return;

	memset(nulls_made, 0, sizeof(nulls_made));

	i = put_identity_columns(values, nulls, i, es, rr);
	/* plans, then calls (exec) */
	i = put_time_columns(values, i, &es->times[PGSS_NG_PHASE_PLAN]);
	i = put_time_columns(values, i, &es->times[PGSS_NG_PHASE_EXEC]);

	/* the counters that add up, NULL where this build cannot measure */
	PGSS_NG_SUM_COUNTERS(PUT_COUNTER)

	values[i++] = TimestampTzGetDatum(es->stats_since);
	values[i++] = TimestampTzGetDatum(es->minmax_stats_since);

	/* pgss_ng's own columns, after all of pg_stat_statements' */
	PGSS_NG_OWN_COUNTERS(PUT_COUNTER)
	Assert(i == PGSS_NG_COLS);

	/* pgss_ng_detail's: what is kept of the times beside the counters */
	if (rr->detail)
	{
		if (es->last_executed != 0)
			values[i++] = TimestampTzGetDatum(es->last_executed);
		else
			nulls[i++] = true;
		i = put_quantile_columns(values, nulls, i,
								 es->quantiles[PGSS_NG_PHASE_EXEC]);
		i = put_quantile_columns(values, nulls, i,
								 es->quantiles[PGSS_NG_PHASE_PLAN]);
		i = put_cpu_columns(values, nulls, i, c, PGSS_NG_PHASE_EXEC);
		i = put_cpu_columns(values, nulls, i, c, PGSS_NG_PHASE_PLAN);
		i = put_wait_columns(values, nulls, i, es->wait_samples);
		/* NULL for a statement no plan was identified of (utility) */
		if (es->plans_seen > 0)
			values[i++] = Int64GetDatum(es->plans_seen);
		else
			nulls[i++] = true;
		if (es->last_plan_change != 0)
			values[i++] = TimestampTzGetDatum(es->last_plan_change);
		else
			nulls[i++] = true;
		Assert(i == PGSS_NG_DETAIL_COLS);
	}

	pgss_ng_result_project(&rr->result, &values, &nulls);
	pgss_ng_rowform_put(rr->rowform, rr->rsinfo->setResult, values, nulls);
}

/*
 * read_rows_start
 *		Begin a read of statement rows: check the library, note the caller's
 *		privileges and encoding, make the tuplestore (the caller sets
 *		detail, showtext and rowform).
 */
static void
read_rows_start(ReadRows *rr, FunctionCallInfo fcinfo)
{
	pgss_ng_views_check_loaded();
	memset(rr, 0, sizeof(*rr));
	rr->rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	rr->userid = GetUserId();
	rr->is_allowed_role = has_privs_of_role(rr->userid,
											ROLE_PG_READ_ALL_STATS);
	pgss_ng_convert_init(&rr->convert);
	rr->no_privilege = CStringGetTextDatum("<insufficient privilege>");
	InitMaterializedSRF(fcinfo, 0);
}

/*
 * pgss_ng_views_statements
 *		The body of pgss_ng(), pgss_ng_detail() and pg_stat_statements(): a
 *		row per entry with calls, plans or errors (PGSS_NG_VIEWS_EXECUTED:
 *		calls or plans), changed at or after changed_since if not NULL, none
 *		for a NULL showtext; the declared columns, by name through aliases.
 *		Errors: not preloaded; a declared column the library does not make.
 */
Datum
pgss_ng_views_statements(FunctionCallInfo fcinfo, int flags,
						 const PgssNgColumnAlias *aliases)
{
	TimestampTz changed_since = DT_NOBEGIN;
	ReadRows	rr;
	int			what = 0;
	int			i;

	read_rows_start(&rr, fcinfo);
	rr.executed_only = (flags & PGSS_NG_VIEWS_EXECUTED) != 0;
	pgss_ng_result_map(&rr.result, fcinfo, rr.rsinfo->setDesc, stmt_columns,
					   PGSS_NG_DETAIL_COLS, aliases);
	for (i = 0; i < rr.result.natts; i++)
	{
		if (rr.result.map[i] >= PGSS_NG_COLS)
			rr.detail = true;
	}
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	rr.rowform = pgss_ng_rowform_make(rr.rsinfo->setDesc);
	rr.showtext = PG_GETARG_BOOL(0);
	if (PG_NARGS() > 1 && !PG_ARGISNULL(1))
		changed_since = PG_GETARG_TIMESTAMPTZ(1);

	if (rr.showtext)
		what |= PGSS_NG_READ_TEXT;
	if (rr.detail)
		what |= PGSS_NG_READ_QUANTILES;
	pgss_ng_stmt_read(what, changed_since, put_row, &rr);

	return (Datum) 0;
}

/*
 * pgss_ng
 *		pgss_ng(showtext, changed_since): pg_stat_statements 1.12's columns
 *		on every version (NULL where the server cannot measure a counter),
 *		then errors and error_exec_time; changed_since keeps the entries
 *		created or updated (flush, min/max reset, restore) at or after it.
 *		The caller's pending counters are flushed first.  See
 *		pgss_ng_views_statements.
 */
Datum
pgss_ng(PG_FUNCTION_ARGS)
{
	return pgss_ng_views_statements(fcinfo, 0, NULL);
}

/*
 * pgss_ng_detail
 *		pgss_ng_detail(showtext, changed_since): pgss_ng()'s rows, then
 *		last_executed, time quantiles, CPU times and wait times.
 */
Datum
pgss_ng_detail(PG_FUNCTION_ARGS)
{
	return pgss_ng_views_statements(fcinfo, 0, NULL);
}

/*
 * number of output columns of pgss_ng_evicted(): identity, plans and
 * their total time, calls and theirs, the sums, the own counters, CPU
 * times, entries and evicted_since, wait times
 */
#define PGSS_NG_EVICTED_COLS \
	(3 + 2 * PGSS_NG_NUMPHASE + PGSS_NG_NUM_SUM_COUNTERS + \
	 PGSS_NG_NUM_OWN_COUNTERS + 2 * PGSS_NG_NUMPHASE + 2 + \
	 PGSS_NG_WAIT_NGROUPS)

static const PgssNgColumn evicted_columns[] = {
	{"userid", OIDOID}, {"dbid", OIDOID}, {"toplevel", BOOLOID},
	{"plans", INT8OID}, {"total_plan_time", FLOAT8OID},
	{"calls", INT8OID}, {"total_exec_time", FLOAT8OID},
	PGSS_NG_SUM_COUNTERS(COUNTER_COLUMN)
	PGSS_NG_OWN_COUNTERS(COUNTER_COLUMN)
	CPU_COLUMNS,
	{"entries", INT8OID}, {"evicted_since", TIMESTAMPTZOID},
	WAIT_COLUMNS
};
StaticAssertDecl(lengthof(evicted_columns) == PGSS_NG_EVICTED_COLS,
				 "evicted_columns must list every column of pgss_ng_evicted()");

/*
 * pgss_ng_evicted
 *		pgss_ng_evicted(): a row per (userid, dbid, toplevel) of the evicted
 *		remainder: pgss_ng's columns that add up, entries, evicted_since,
 *		wait times.  Another role's rows and the overflow rows need
 *		pg_read_all_stats's privileges.  Errors: not preloaded; a declared
 *		column the library does not make.
 */
Datum
pgss_ng_evicted(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			userid = GetUserId();
	PgssNgResultMap rm;
	PgssNgEvictedRow *rows;
	int			n;
	int			r;

	pgss_ng_views_check_loaded();
	InitMaterializedSRF(fcinfo, 0);
	pgss_ng_result_map(&rm, fcinfo, rsinfo->setDesc, evicted_columns,
					   PGSS_NG_EVICTED_COLS, NULL);
	rows = pgss_ng_evicted_copy(has_privs_of_role(userid,
												  ROLE_PG_READ_ALL_STATS) ?
								InvalidOid : userid, &n);
	for (r = 0; r < n; r++)
	{
		const PgssNgCounters *c = &rows[r].counters;
		Datum		values_made[PGSS_NG_EVICTED_COLS];
		bool		nulls_made[PGSS_NG_EVICTED_COLS];
		Datum	   *values = values_made;
		bool	   *nulls = nulls_made;
		int			i = 0;
		int			k;

		memset(nulls_made, 0, sizeof(nulls_made));
		if (rows[r].key.userid == InvalidOid)
		{
			nulls[i++] = true;
			nulls[i++] = true;
		}
		else
		{
			values[i++] = ObjectIdGetDatum(rows[r].key.userid);
			values[i++] = ObjectIdGetDatum(rows[r].key.dbid);
		}
		values[i++] = BoolGetDatum(rows[r].key.toplevel);
		/* plans, then calls (exec), each with its total time */
		for (k = PGSS_NG_PHASE_PLAN; k <= PGSS_NG_PHASE_EXEC; k++)
		{
			values[i++] = Int64GetDatum(c->calls[k]);
			values[i++] = Float8GetDatum(c->total_time[k]);
		}
		PGSS_NG_SUM_COUNTERS(PUT_COUNTER)
		PGSS_NG_OWN_COUNTERS(PUT_COUNTER)
		i = put_cpu_columns(values, nulls, i, c, PGSS_NG_PHASE_EXEC);
		i = put_cpu_columns(values, nulls, i, c, PGSS_NG_PHASE_PLAN);
		values[i++] = Int64GetDatum(rows[r].entries);
		values[i++] = TimestampTzGetDatum(rows[r].evicted_since);
		i = put_wait_columns(values, nulls, i, rows[r].wait_samples);
		Assert(i == PGSS_NG_EVICTED_COLS);
		pgss_ng_result_project(&rm, &values, &nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	pfree(rows);
	return (Datum) 0;
}

/*
 * pgss_ng_evictions
 *		pgss_ng_evictions(): the eviction log, oldest first (the start of
 *		each text); queryid and query as in pgss_ng.  Errors: not
 *		preloaded; a declared column the library does not make.
 */
Datum
pgss_ng_evictions(PG_FUNCTION_ARGS)
{
	static const PgssNgColumn columns[] = {
		IDENTITY_COLUMNS,
		{"calls", INT8OID}, {"total_exec_time", FLOAT8OID},
		{"stats_since", TIMESTAMPTZOID}, {"evicted_at", TIMESTAMPTZOID}
	};
	ReadRows	rr;
	PgssNgEvictionLogEntry *log;
	PgssNgStmtSnapshot *es;
	int			n;
	int			r;

	read_rows_start(&rr, fcinfo);
	rr.showtext = true;
	pgss_ng_result_map(&rr.result, fcinfo, rr.rsinfo->setDesc, columns,
					   lengthof(columns), NULL);

	es = palloc0(sizeof(PgssNgStmtSnapshot));
	log = pgss_ng_eviction_log_copy(&n);
	for (r = 0; r < n; r++)
	{
		Datum		values_made[lengthof(columns)];
		bool		nulls_made[lengthof(columns)];
		Datum	   *values = values_made;
		bool	   *nulls = nulls_made;
		int			i;

		memset(nulls_made, 0, sizeof(nulls_made));
		es->key = log[r].key;
		es->encoding = log[r].encoding;
		es->query = log[r].qlen >= 0 ?
			cstring_to_text_with_len(log[r].query, log[r].qlen) : NULL;
		i = put_identity_columns(values, nulls, 0, es, &rr);
		values[i++] = Int64GetDatum(log[r].calls);
		values[i++] = Float8GetDatum(log[r].total_exec_time);
		values[i++] = TimestampTzGetDatum(log[r].stats_since);
		values[i++] = TimestampTzGetDatum(log[r].evicted_at);
		Assert(i == lengthof(columns));
		pgss_ng_result_project(&rr.result, &values, &nulls);
		tuplestore_putvalues(rr.rsinfo->setResult, rr.rsinfo->setDesc,
							 values, nulls);
	}
	pfree(log);
	pfree(es);
	return (Datum) 0;
}
