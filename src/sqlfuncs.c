/*-------------------------------------------------------------------------
 *
 * sqlfuncs.c
 *	  SQL-callable functions: pgss_ng(showtext), pgss_ng_reset(...) and
 *	  pgss_ng_info().
 *
 * Privileges follow pg_stat_statements: every role may read the view, but
 * only superusers and roles with the privileges of pg_read_all_stats see
 * the queryid and text of other roles' statements.  pgss_ng_reset() is
 * revoked from PUBLIC in the install script.
 *
 * Locking: the view takes each dshash partition lock shared and each entry
 * lock shared just long enough to copy the entry (kind.c); tuples are
 * built after all locks are released.  Reset takes partition locks
 * exclusively (removal) or entry locks exclusively (min/max reset).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pgss_ng.h"
#include "qtext.h"

PG_FUNCTION_INFO_V1(pgss_ng);
PG_FUNCTION_INFO_V1(pgss_ng_reset);
PG_FUNCTION_INFO_V1(pgss_ng_info);

/* number of output columns of pgss_ng() */
#define PGSS_NG_COLS	45

/* A copy of one entry, taken under its lock. */
typedef struct EntrySnapshot
{
	PgssNgStmtKey key;
	PgssNgStmtShared data;
	char	   *text;			/* palloc'd copy, or NULL */
	int			textlen;		/* its length in bytes */
} EntrySnapshot;

typedef struct SnapshotState
{
	EntrySnapshot *entries;
	int			n;
	int			size;
	bool		want_text;
} SnapshotState;

/*
 * check_loaded
 *		ERROR unless the library was preloaded and this backend attached.
 */
static void
check_loaded(void)
{
	if (pgss_ng_info_shared == NULL || !pgss_ng_kind_attach(&pgss_ng_stmt_kind))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pgss_ng must be loaded via \"shared_preload_libraries\"")));
}

/*
 * snapshot_visit
 *		Copy one entry (and its text) into the snapshot array.  Runs with
 *		the entry lock and its partition lock held shared; palloc may raise
 *		an out-of-memory ERROR, which aborts the reader's transaction and
 *		releases the locks.  Memory: the caller's context.
 */
static void
snapshot_visit(PgssNgKind *kind, const void *key, const void *shared_data,
			   void *arg)
{
	SnapshotState *st = (SnapshotState *) arg;
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	EntrySnapshot *es;

	if (st->n == st->size)
	{
		st->size *= 2;
		st->entries = repalloc_huge(st->entries,
									sizeof(EntrySnapshot) * st->size);
	}
	es = &st->entries[st->n++];
	memcpy(&es->key, key, sizeof(PgssNgStmtKey));
	es->data = *sh;
	es->text = NULL;
	es->textlen = 0;
	if (st->want_text)
		es->text = pgss_ng_qtext_copy(kind->area, sh->qtext, &es->textlen);
}

/*
 * put_time_columns
 *		Emit the calls/total/min/max/mean/stddev group of one kind (plan or
 *		exec).  Times in ms.  Returns the next column index.
 */
static int
put_time_columns(Datum *values, int i, const PgssNgCounters *c, int kind)
{
	double		stddev;

	values[i++] = Int64GetDatumFast(c->calls[kind]);
	values[i++] = Float8GetDatumFast(c->total_time[kind]);
	values[i++] = Float8GetDatumFast(c->min_time[kind]);
	values[i++] = Float8GetDatumFast(c->max_time[kind]);
	values[i++] = Float8GetDatumFast(c->mean_time[kind]);
	if (c->calls[kind] > 1)
		stddev = sqrt(c->sum_var_time[kind] / c->calls[kind]);
	else
		stddev = 0.0;
	values[i++] = Float8GetDatumFast(stddev);
	return i;
}

/*
 * pgss_ng
 *		SETOF record: one row per entry with calls or plans > 0, columns as
 *		PostgreSQL 15's pg_stat_statements plus stats_since and
 *		minmax_stats_since.  The caller's own pending counters are flushed
 *		first, so a session always sees its own finished statements.
 *		Errors: library not preloaded.
 */
Datum
pgss_ng(PG_FUNCTION_ARGS)
{
	bool		showtext = PG_GETARG_BOOL(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			userid = GetUserId();
	bool		is_allowed_role;
	SnapshotState st;
	PgssNgKindCounters kc;
	int			n;

	check_loaded();
	is_allowed_role = has_privs_of_role(userid, ROLE_PG_READ_ALL_STATS);

	InitMaterializedSRF(fcinfo, 0);

	pgss_ng_kind_flush(&pgss_ng_stmt_kind, true);

	/* room for every live entry, so the array is not copied as it grows */
	pgss_ng_kind_counters(&pgss_ng_stmt_kind, &kc);
	st.size = (int) kc.entries + 64;
	st.n = 0;
	st.entries = palloc_extended(sizeof(EntrySnapshot) * st.size,
								 MCXT_ALLOC_HUGE);
	st.want_text = showtext;
	pgss_ng_kind_foreach(&pgss_ng_stmt_kind, snapshot_visit, &st);

	for (n = 0; n < st.n; n++)
	{
		EntrySnapshot *es = &st.entries[n];
		const PgssNgCounters *c = &es->data.counters;
		Datum		values[PGSS_NG_COLS];
		bool		nulls[PGSS_NG_COLS];
		int			i = 0;
		char		buf[256];
		Datum		wal_bytes;

		/* not executed nor planned yet: made at parse analysis only */
		if (c->calls[PGSS_NG_PLAN] + c->calls[PGSS_NG_EXEC] == 0)
			continue;

		memset(values, 0, sizeof(values));
		memset(nulls, 0, sizeof(nulls));

		values[i++] = ObjectIdGetDatum(es->key.userid);
		values[i++] = ObjectIdGetDatum(es->key.dbid);
		values[i++] = BoolGetDatum(es->key.toplevel);

		if (is_allowed_role || es->key.userid == userid)
		{
			values[i++] = Int64GetDatum((int64) es->key.queryid);
			if (showtext && es->text != NULL)
			{
				char	   *enc = pg_any_to_server(es->text, es->textlen,
												   es->data.encoding);

				/* no conversion gives back the same string */
				values[i++] = PointerGetDatum(enc == es->text ?
											  cstring_to_text_with_len(enc, es->textlen) :
											  cstring_to_text(enc));
			}
			else
				nulls[i++] = true;
		}
		else
		{
			nulls[i++] = true;
			if (showtext)
				values[i++] = CStringGetTextDatum("<insufficient privilege>");
			else
				nulls[i++] = true;
		}

		/* plans, then calls (exec) */
		i = put_time_columns(values, i, c, PGSS_NG_PLAN);
		i = put_time_columns(values, i, c, PGSS_NG_EXEC);

		values[i++] = Int64GetDatumFast(c->rows);
		values[i++] = Int64GetDatumFast(c->shared_blks_hit);
		values[i++] = Int64GetDatumFast(c->shared_blks_read);
		values[i++] = Int64GetDatumFast(c->shared_blks_dirtied);
		values[i++] = Int64GetDatumFast(c->shared_blks_written);
		values[i++] = Int64GetDatumFast(c->local_blks_hit);
		values[i++] = Int64GetDatumFast(c->local_blks_read);
		values[i++] = Int64GetDatumFast(c->local_blks_dirtied);
		values[i++] = Int64GetDatumFast(c->local_blks_written);
		values[i++] = Int64GetDatumFast(c->temp_blks_read);
		values[i++] = Int64GetDatumFast(c->temp_blks_written);
		values[i++] = Float8GetDatumFast(c->blk_read_time);
		values[i++] = Float8GetDatumFast(c->blk_write_time);
		values[i++] = Float8GetDatumFast(c->temp_blk_read_time);
		values[i++] = Float8GetDatumFast(c->temp_blk_write_time);
		values[i++] = Int64GetDatumFast(c->wal_records);
		values[i++] = Int64GetDatumFast(c->wal_fpi);

		snprintf(buf, sizeof buf, UINT64_FORMAT, c->wal_bytes);
		wal_bytes = DirectFunctionCall3(numeric_in,
										CStringGetDatum(buf),
										ObjectIdGetDatum(0),
										Int32GetDatum(-1));
		values[i++] = wal_bytes;

		values[i++] = Int64GetDatumFast(c->jit_functions);
		values[i++] = Float8GetDatumFast(c->jit_generation_time);
		values[i++] = Int64GetDatumFast(c->jit_inlining_count);
		values[i++] = Float8GetDatumFast(c->jit_inlining_time);
		values[i++] = Int64GetDatumFast(c->jit_optimization_count);
		values[i++] = Float8GetDatumFast(c->jit_optimization_time);
		values[i++] = Int64GetDatumFast(c->jit_emission_count);
		values[i++] = Float8GetDatumFast(c->jit_emission_time);
		values[i++] = TimestampTzGetDatum(es->data.stats_since);
		values[i++] = TimestampTzGetDatum(es->data.minmax_stats_since);

		Assert(i == PGSS_NG_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	return (Datum) 0;
}

/* Filter of pgss_ng_reset(); 0 matches anything. */
typedef struct ResetFilter
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	TimestampTz now;
} ResetFilter;

/*
 * reset_match
 *		Does a key match pgss_ng_reset()'s filter (0 matching anything)?
 */
static bool
reset_match(const void *key, void *arg)
{
	const PgssNgStmtKey *k = (const PgssNgStmtKey *) key;
	const ResetFilter *f = (const ResetFilter *) arg;

	return (f->userid == InvalidOid || k->userid == f->userid) &&
		(f->dbid == InvalidOid || k->dbid == f->dbid) &&
		(f->queryid == UINT64CONST(0) || k->queryid == f->queryid);
}

/*
 * reset_minmax
 *		Restart the min/max of plan and exec times; entry lock held
 *		exclusively.  The next flushed call sets them again.
 */
static void
reset_minmax(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const ResetFilter *f = (const ResetFilter *) arg;
	int			k;

	for (k = 0; k < PGSS_NG_NUMKIND; k++)
	{
		sh->counters.min_time[k] = 0;
		sh->counters.max_time[k] = 0;
		sh->have_minmax[k] = false;
	}
	sh->minmax_stats_since = f->now;
	sh->minmax_reset_at = f->now;
}

/*
 * pgss_ng_reset
 *		Remove the entries matching (userid, dbid, queryid), 0 meaning any;
 *		with minmax_only, keep them and restart their min/max times instead.
 *		Resetting everything also restarts the event counters of
 *		pgss_ng_info (dealloc, dropped, backstop_skips, qtext_dropped,
 *		stats_reset).  Counts still pending in other backends for removed
 *		entries are discarded when they flush: they were made before the
 *		reset.  Returns the time of the reset.
 *		Errors: library not preloaded; EXECUTE privilege (install script).
 */
Datum
pgss_ng_reset(PG_FUNCTION_ARGS)
{
	ResetFilter f;
	bool		minmax_only = PG_GETARG_BOOL(3);

	check_loaded();

	f.userid = PG_GETARG_OID(0);
	f.dbid = PG_GETARG_OID(1);
	f.queryid = (uint64) PG_GETARG_INT64(2);
	f.now = GetCurrentTimestamp();

	/* our own pending counts predate the reset */
	pgss_ng_kind_flush(&pgss_ng_stmt_kind, true);

	if (minmax_only)
	{
		pgss_ng_kind_reset_matching(&pgss_ng_stmt_kind, reset_match,
									reset_minmax, &f);
		PG_RETURN_TIMESTAMPTZ(f.now);
	}

	pgss_ng_kind_drop_matching(&pgss_ng_stmt_kind, reset_match, &f);

	if (f.userid == InvalidOid && f.dbid == InvalidOid &&
		f.queryid == UINT64CONST(0))
	{
		SpinLockAcquire(&pgss_ng_info_shared->mutex);
		pgss_ng_info_shared->dropped = 0;
		pgss_ng_info_shared->stats_reset = f.now;
		SpinLockRelease(&pgss_ng_info_shared->mutex);
		pgss_ng_kind_reset_counters(&pgss_ng_stmt_kind);
		pgss_ng_qtext_reset_dropped();
	}

	PG_RETURN_TIMESTAMPTZ(f.now);
}

/*
 * pgss_ng_info
 *		One row of extension-wide counters: dealloc, stats_reset, entries,
 *		dropped, entries_allocated, entries_max, backstop_skips,
 *		qtext_bytes, qtext_limit_bytes, qtext_count, qtext_dropped (see
 *		README); qtext_bytes, qtext_count and qtext_dropped are NULL for
 *		roles without the privileges of pg_read_all_stats.
 *		Errors: library not preloaded.
 */
Datum
pgss_ng_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11];
	PgssNgInfo	copy;
	PgssNgKindCounters kc;
	PgssNgQtextStats qs;
	int			i = 0;

	check_loaded();

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	SpinLockAcquire(&pgss_ng_info_shared->mutex);
	copy = *pgss_ng_info_shared;
	SpinLockRelease(&pgss_ng_info_shared->mutex);
	pgss_ng_kind_counters(&pgss_ng_stmt_kind, &kc);
	pgss_ng_qtext_stats(&qs);

	memset(nulls, 0, sizeof(nulls));
	values[i++] = Int64GetDatum(kc.dealloc);
	values[i++] = TimestampTzGetDatum(copy.stats_reset);
	values[i++] = Int64GetDatum(kc.entries);
	values[i++] = Int64GetDatum(copy.dropped);
	values[i++] = Int64GetDatum(kc.entries_allocated);
	values[i++] = Int64GetDatum(kc.entries_max);
	values[i++] = Int64GetDatum(kc.backstop_skips);
	/*
	 * Texts are shared by all roles (deduplicated), so how the arena's
	 * size and count move would tell whether another role ran a guessed
	 * text: only roles allowed to read every text see them.
	 */
	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
	{
		values[i++] = Int64GetDatum(qs.bytes);
		values[i++] = Int64GetDatum(qs.limit_bytes);
		values[i++] = Int64GetDatum(qs.count);
		values[i++] = Int64GetDatum(qs.dropped);
	}
	else
	{
		nulls[i++] = true;
		values[i++] = Int64GetDatum(qs.limit_bytes);
		nulls[i++] = true;
		nulls[i++] = true;
	}
	Assert(i == lengthof(values));

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
