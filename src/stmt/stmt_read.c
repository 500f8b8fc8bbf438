/*-------------------------------------------------------------------------
 *
 * stmt_read.c
 *	  What the SQL functions (sqlfuncs.c) read of the statement kind: the
 *	  snapshot of each entry, one entry's histograms, and the info
 *	  counters.  Part of the statement kind; shares stmt_kind_int.h.
 *
 * Locking: reads take each entry's lock shared through the kind layer's
 * foreach; the info counters are read under their spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "mb/pg_wchar.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "qtext.h"
#include "stmt_kind.h"
#include "stmt_evicted.h"
#include "stmt_failures.h"
#include "stmt_kind_int.h"
#include "stmt_read.h"

/*
 * State of a read (pgss_ng_stmt_read): what to copy, the filter, the copy
 * of the entry being read (the snapshot emit is given, and the used slots
 * of its histograms), and the growing buffer its text is copied into (a
 * text varlena, reused from entry to entry: no palloc per entry).
 */
typedef struct ReadState
{
	int			what;			/* PGSS_NG_READ_* */
	TimestampTz changed_since;	/* DT_NOBEGIN: everything */
	PgssNgStmtEmitFn emit;
	void	   *emit_arg;
	bool		have_minmax[PGSS_NG_NUMPHASE];	/* of the entry copied last */
	PgssNgHistPair hist;		/* its histograms (PGSS_NG_READ_QUANTILES) */
	bool		has_text;
	text	   *textbuf;		/* its text, if has_text */
	Size		textbuf_size;	/* bytes allocated at textbuf */
	PgssNgStmtSnapshot es;		/* what emit is given */
} ReadState;

/*
 * read_copy
 *		pgss_ng_kind_foreach visitor: copy one entry (its text, its
 *		histograms' used slots, if asked) unless it was only made at parse
 *		analysis (no calls, plans nor errors) or changed before
 *		changed_since.  Entry and partition locks held shared: it only
 *		copies; an ERROR (out of memory, mapping a segment) aborts the
 *		reader's transaction.  Memory: the reader's context.
 */
static bool
read_copy(PgssNgKind *kind, const void *key, const void *shared_data,
		  void *arg)
{
	ReadState  *st = (ReadState *) arg;
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	PgssNgStmtSnapshot *es = &st->es;
	const PgssNgWaitSamples *w;

	if (total_calls(&sh->counters) == 0 && sh->counters.errors == 0)
		return false;
	if (sh->changed_at < st->changed_since)
		return false;
	memcpy(&es->key, key, sizeof(PgssNgStmtKey));
	es->counters = sh->counters;
	memcpy(st->have_minmax, sh->have_minmax, sizeof(sh->have_minmax));
	if (st->what & PGSS_NG_READ_QUANTILES)
		pgss_ng_hist_store_copy(pgss_ng_kind_area(kind), &sh->hist,
								sh->counters.min_time, sh->counters.max_time,
								&st->hist);
	es->encoding = sh->encoding;
	es->stats_since = sh->stats_since;
	es->minmax_stats_since = sh->minmax_stats_since;
	es->last_executed = sh->last_executed;
	w = pgss_ng_waits_load(&sh->waits);
	for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
		es->wait_samples[t] = w ? w->samples[t] : 0;
	es->plans_seen = sh->plans.seen;
	es->last_plan_change = sh->plans.last_change;
	st->has_text = false;
	if ((st->what & PGSS_NG_READ_TEXT) && DsaPointerIsValid(sh->qtext))
	{
		int			len;
		const char *data = pgss_ng_qtext_data(pgss_ng_kind_area(kind),
											  sh->qtext, &len);

		if (VARHDRSZ + (Size) len > st->textbuf_size)
		{
			st->textbuf_size = Max(st->textbuf_size * 2,
								   VARHDRSZ + (Size) len);
			st->textbuf = repalloc(st->textbuf, st->textbuf_size);
		}
		memcpy(VARDATA(st->textbuf), data, len);
		SET_VARSIZE(st->textbuf, VARHDRSZ + len);
		st->has_text = true;
	}
	return true;
}

/*
 * time_stats
 *		The time group of one phase as a reader sees it: the standard
 *		deviation from the sum of squared deviations (0 below two calls).
 */
static void
time_stats(const PgssNgCounters *c, PgssNgPhase phase, PgssNgTimeStats *out)
{
	out->calls = c->calls[phase];
	out->total = c->total_time[phase];
	out->min = c->min_time[phase];
	out->max = c->max_time[phase];
	out->mean = c->mean_time[phase];
	if (c->calls[phase] > 1)
		out->stddev = sqrt(c->sum_var_time[phase] / c->calls[phase]);
	else
		out->stddev = 0.0;
}

/*
 * read_emit
 *		pgss_ng_kind_foreach emit callback: turn the copy of the entry
 *		into what a reader sees (time groups; the time quantiles from the
 *		histograms, if asked for) and hand it to the reader's emit
 *		function.  Runs after the entry lock is released, with the
 *		partition lock still held shared.
 */
static void
read_emit(void *arg)
{
	ReadState  *st = (ReadState *) arg;
	PgssNgStmtSnapshot *es = &st->es;
	const PgssNgCounters *c = &es->counters;
	int			k;

	for (k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		time_stats(c, k, &es->times[k]);
		if (st->what & PGSS_NG_READ_QUANTILES)
			pgss_ng_hist_quantiles(&st->hist, k, pgss_ng_quantiles,
								   PGSS_NG_NUM_QUANTILES,
								   st->have_minmax[k] ? c->min_time[k] : 1,
								   st->have_minmax[k] ? c->max_time[k] : 0,
								   es->quantiles[k]);
	}
	es->query = st->has_text ? st->textbuf : NULL;
	st->emit(es, st->emit_arg);
}

/*
 * pgss_ng_stmt_read
 *		Call emit for each visible entry changed at or after changed_since
 *		(DT_NOBEGIN: all), with the text and quantiles that what asks for;
 *		this backend's failures and pending counts are merged and flushed
 *		first.  The snapshot is valid only during emit, which runs with the
 *		entry's partition lock shared and must take no statement kind lock.
 *		Memory: CurrentMemoryContext.  Errors: out of memory, emit's.
 */
void
pgss_ng_stmt_read(int what, TimestampTz changed_since,
				  PgssNgStmtEmitFn emit, void *arg)
{
	ReadState  *st;

	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);
	pgss_ng_plans_work();

	/* too big for the stack: the histograms alone are 2.5 kB */
	st = palloc0(sizeof(ReadState));
	st->what = what;
	st->changed_since = changed_since;
	st->emit = emit;
	st->emit_arg = arg;
	st->textbuf_size = 1024;
	st->textbuf = palloc(st->textbuf_size);
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, read_copy, read_emit, st);
	pfree(st->textbuf);
	pfree(st);
}

/*
 * pgss_ng_stmt_info
 *		Copy the extension-wide counters.  Each group is read under its own
 *		lock or atomically; the whole is not one consistent snapshot.
 */
void
pgss_ng_stmt_info(PgssNgInfoSnapshot *out)
{
	SpinLockAcquire(&pgss_ng_stmt_ctl->mutex);
	out->dropped = pgss_ng_stmt_ctl->dropped;
	out->stats_reset = pgss_ng_stmt_ctl->stats_reset;
	SpinLockRelease(&pgss_ng_stmt_ctl->mutex);
	pgss_ng_kind_counters(pgss_ng_stmt_kind, &out->kind);
	pgss_ng_qtext_stats(&out->qtext);
	out->hist_bytes = (int64) pg_atomic_read_u64(&pgss_ng_stmt_ctl->hist.bytes);
	out->hist_dropped =
		(int64) pg_atomic_read_u64(&pgss_ng_stmt_ctl->hist.dropped);
	pgss_ng_waits_counters(&out->wait_events_dropped,
						   &out->wait_samples_lost,
						   &out->wait_samples_added);
	/* the entries' chunks of wait samples count as the entries' memory */
	out->kind.entry_bytes += pgss_ng_waits_chunk_bytes();
}

/*
 * histograms_visit
 *		pgss_ng_kind_read visitor: copy the entry's histograms.  Entry lock
 *		and partition lock held shared; mapping a segment may raise an
 *		ERROR (the reader's).
 */
static bool
histograms_visit(PgssNgKind *kind, const void *key, const void *shared_data,
				 void *arg)
{
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;

	pgss_ng_hist_store_copy(pgss_ng_kind_area(kind), &sh->hist,
							sh->counters.min_time, sh->counters.max_time,
							(PgssNgHistPair *) arg);
	return true;
}

/*
 * pgss_ng_stmt_histograms
 *		Copy the plan and exec time histograms of the entry for key into
 *		*out; false (and *out empty) when there is no such entry.  This
 *		backend's pending counters are flushed first, as for a snapshot.
 *		Locks: the key's partition lock and entry lock, shared.
 */
bool
pgss_ng_stmt_histograms(const PgssNgStmtKey *key, PgssNgHistPair *out)
{
	memset(out, 0, sizeof(*out));
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);
	return pgss_ng_kind_read(pgss_ng_stmt_kind, key, histograms_visit, out);
}
