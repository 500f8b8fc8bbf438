/*-------------------------------------------------------------------------
 *
 * stmt_saved.c
 *	  The save into the stats file (format: stmt_saved.h, whose layout is
 *	  checked here at compile time): entries as records, the info block, the
 *	  remainder's rows, whether the file was loaded.  docs/design.md,
 *	  "Persistence".  Locking: each entry's lock held shared while copied.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"


#include "qtext.h"
#include "stmt_kind_int.h"
#include "stmt_saved.h"

/* the layout this version stands for (stmt_saved.h) */
#if SIZEOF_VOID_P == 8 && MAXIMUM_ALIGNOF == 8
StaticAssertDecl(sizeof(PgssNgSavedInfo) == PGSS_NG_SAVED_INFO_SIZE,
				 "PgssNgSavedInfo changed: bump PGSS_NG_FILE_VERSION and record its size");
StaticAssertDecl(sizeof(PgssNgStmtRecord) == PGSS_NG_STMT_RECORD_SIZE,
				 "PgssNgStmtRecord changed: bump PGSS_NG_FILE_VERSION and record its size");
StaticAssertDecl(PGSS_NG_STMT_RECORD_LAYOUT_OF_BUILD == PGSS_NG_STMT_RECORD_LAYOUT,
				 "the saved record's layout changed: bump PGSS_NG_FILE_VERSION and record its layout");
StaticAssertDecl(sizeof(PgssNgEvictedRow) == PGSS_NG_EVICTED_ROW_SIZE,
				 "PgssNgEvictedRow changed: bump PGSS_NG_FILE_VERSION and record its size");
StaticAssertDecl(sizeof(PgssNgPlanRecord) == PGSS_NG_PLAN_RECORD_SIZE,
				 "PgssNgPlanRecord changed: bump PGSS_NG_FILE_VERSION and record its size");
#endif

/*
 * State of pgss_ng_stmt_save_records: the caller's function, and the
 * buffer each record is built in.
 */
typedef struct SaveState
{
	PgssNgSavedRecordFn fn;
	void	   *arg;
	StringInfoData buf;			/* reused for each entry */
	PgssNgHistPair hist;		/* an entry's histograms, copied */
	PgssNgWaitRow *wait_rows;	/* an entry's rows of wait events */
	int			max_wait_rows;
} SaveState;

/*
 * pgss_ng_stmt_save_evicted
 *		The rows of the evicted remainder the writer saves: a palloc'd
 *		copy, *n of them (their restore is pgss_ng_stmt_restore_info's).
 */
PgssNgEvictedRow *
pgss_ng_stmt_save_evicted(int *n)
{
	return pgss_ng_evicted_copy(InvalidOid, n);
}

/*
 * pgss_ng_stmt_save_info
 *		The info counters the writer saves with the entries.
 */
void
pgss_ng_stmt_save_info(PgssNgSavedInfo *out)
{
	PgssNgKindCounters kc;

	pgss_ng_kind_counters(pgss_ng_stmt_kind, &kc);
	memset(out, 0, sizeof(*out));
	out->dealloc = kc.dealloc;
	out->entries_evicted = kc.entries_evicted;
	out->backstop_skips = kc.backstop_skips;
	out->eviction_ns = kc.eviction_ns;
	out->last_eviction = kc.last_eviction;
	SpinLockAcquire(&pgss_ng_stmt_ctl->mutex);
	out->dropped = pgss_ng_stmt_ctl->dropped;
	out->stats_reset = pgss_ng_stmt_ctl->stats_reset;
	SpinLockRelease(&pgss_ng_stmt_ctl->mutex);
}

/*
 * pgss_ng_stmt_loaded / pgss_ng_stmt_set_loaded
 *		Whether the writer has read the stats file since shared memory was
 *		made (it reads it once per life of shared memory).  Written by the
 *		writer only, read without a lock.
 */
bool
pgss_ng_stmt_loaded(void)
{
	return pgss_ng_stmt_ctl->loaded;
}

void
pgss_ng_stmt_set_loaded(void)
{
	pgss_ng_stmt_ctl->loaded = true;
}

/*
 * save_visit
 *		pgss_ng_kind_foreach visitor of pgss_ng_stmt_save_records: build the
 *		record of one entry, its histograms' counts and its text after it,
 *		and hand it to the caller's function with the entry's usage.  Entry
 *		lock and partition lock held shared.  Memory: the state's buffer;
 *		the text's copy is freed.
 */
static bool
save_visit(PgssNgKind *kind, const void *key, const void *shared_data,
		   void *arg)
{
	SaveState  *ss = (SaveState *) arg;
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	const PgssNgWaitSamples *ws = pgss_ng_waits_load(&sh->waits);
	PgssNgStmtRecord rec;
	int			qlen;
	int			w;
	char	   *text = pgss_ng_qtext_copy(pgss_ng_kind_area(kind), sh->qtext,
										  &qlen);

	memset(&rec, 0, sizeof(rec));
	memcpy(&rec.key, key, sizeof(PgssNgStmtKey));
	rec.counters = sh->counters;
	memcpy(rec.have_minmax, sh->have_minmax, sizeof(rec.have_minmax));
	pgss_ng_hist_store_copy(pgss_ng_kind_area(kind), &sh->hist,
							sh->counters.min_time, sh->counters.max_time,
							&ss->hist);
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		rec.hist_lost[w] = sh->hist.lost[w];
		rec.hist_lo[w] = ss->hist.lo[w];
		rec.hist_len[w] = ss->hist.len[w];
	}
	rec.encoding = sh->encoding;
	rec.qlen = text ? qlen : -1;
	rec.stats_since = sh->stats_since;
	rec.minmax_stats_since = sh->minmax_stats_since;
	rec.last_executed = sh->last_executed;
	rec.usage = pgss_ng_kind_usage(shared_data);
	if (ws != NULL)
		memcpy(rec.wait_samples, ws->samples, sizeof(rec.wait_samples));
	rec.nwait_events = pgss_ng_waits_copy_rows(ws, ss->wait_rows,
											   ss->max_wait_rows);

	resetStringInfo(&ss->buf);
	appendBinaryStringInfo(&ss->buf, (const char *) &rec, sizeof(rec));
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		appendBinaryStringInfo(&ss->buf,
							   (const char *) &ss->hist.count[w][rec.hist_lo[w]],
							   rec.hist_len[w] * sizeof(uint32));
	if (text)
	{
		appendBinaryStringInfo(&ss->buf, text, rec.qlen);
		pfree(text);
	}
	appendBinaryStringInfo(&ss->buf, (const char *) ss->wait_rows,
						   sizeof(PgssNgWaitRow) * rec.nwait_events);
	pgss_ng_plans_save(&sh->plans, &ss->buf);
	ss->fn(ss->buf.data, ss->buf.len, rec.usage, ss->arg);
	return false;				/* nothing to emit */
}

/*
 * pgss_ng_stmt_save_records
 *		Call fn with the record (stmt_saved.h) and the usage of every live
 *		entry, for the writer.  fn must copy what it keeps: the buffer is
 *		reused.  Locks: the kind layer's foreach (each entry's lock and
 *		partition lock held shared); fn runs under them.  Memory:
 *		CurrentMemoryContext.
 */
void
pgss_ng_stmt_save_records(PgssNgSavedRecordFn fn, void *arg)
{
	/* too big for the stack: the histograms' copy is 2.5 kB */
	SaveState  *ss = palloc(sizeof(SaveState));

	ss->fn = fn;
	ss->arg = arg;
	initStringInfo(&ss->buf);
	ss->max_wait_rows = pgss_ng_waits_rows_max();
	/* zeroed: the rows' padding is written too */
	ss->wait_rows = palloc0(sizeof(PgssNgWaitRow) * Max(ss->max_wait_rows, 1));
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, save_visit, NULL, ss);
	pfree(ss->wait_rows);
	pfree(ss->buf.data);
	pfree(ss);
}
