/*-------------------------------------------------------------------------
 *
 * stmt_read.c
 *	  What the SQL functions (sqlfuncs.c) ask of the statement kind: reads
 *	  (the snapshot of each entry, one entry's histograms), resets (of
 *	  entries, or of their min/max), and the info counters.  Part of the
 *	  statement kind; shares stmt_kind_int.h.
 *
 * Locking: reads take each entry's lock shared through the kind layer's
 * foreach; the min/max reset takes it exclusively (update callback); the
 * info counters are read and written under their spinlock.
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
 *		pgss_ng_kind_foreach visitor: copy one entry (and what
 *		the read asks for: its text into the text buffer, the used slots
 *		of its histograms), unless a reader may not see it yet (an entry
 *		with neither calls, plans nor errors was only made at parse
 *		analysis) or it has not changed since changed_since (changed_at
 *		earlier).  Returns whether it was copied.  Runs with the entry lock
 *		and its partition lock held shared, so it only copies; growing the
 *		text buffer (out of memory) or mapping the segment of a text or a
 *		histogram may raise an ERROR, which aborts the reader's transaction
 *		and releases the locks.  Memory: the buffer lives in the reader's
 *		context.
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
 *		Call emit once for every entry a reader may see and that changed at
 *		or after changed_since (DT_NOBEGIN: all of them), with what
 *		"what" asks for besides the key, the counters and the timestamps
 *		(PGSS_NG_READ_TEXT: its text; PGSS_NG_READ_QUANTILES: its time
 *		quantiles).  This backend's noted failures are merged and its
 *		pending counters flushed first (waiting for locks), so a session
 *		always sees its own finished statements.  The snapshot emit is
 *		given, and its text, are only valid during that call.  Locks: the
 *		kind layer's foreach: each entry is copied under its entry
 *		lock, held shared just for the copy; emit runs with no entry lock
 *		but the entry's partition lock held shared (it must take no lock of
 *		the statement kind).  Memory: CurrentMemoryContext, one text buffer
 *		for the whole read.  Errors: out of memory; whatever emit raises.
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

/* A reset of pgss_ng_stmt_reset(): its filter and its time. */
typedef struct ResetFilter
{
	PgssNgResetFilter f;
	TimestampTz now;
} ResetFilter;

/*
 * reset_match
 *		Does a key match the reset's filter (0 matching anything)?
 */
static bool
reset_match(const void *key, void *arg)
{
	return stmt_reset_match(&((const ResetFilter *) arg)->f,
							(const PgssNgStmtKey *) key);
}

/*
 * reset_minmax
 *		Update callback: restart the min/max and the histograms of plan and
 *		exec times (their chunk freed); entry lock held exclusively.  The
 *		next flushed call
 *		sets them again; a pending entry made before now brings no min/max
 *		and nothing into the histograms (stmt_flush_pending).  The entry
 *		changed (stmt_stamp_changed).
 */
static void
reset_minmax(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const ResetFilter *f = (const ResetFilter *) arg;
	int			k;

	for (k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		sh->counters.min_time[k] = 0;
		sh->counters.max_time[k] = 0;
		sh->have_minmax[k] = false;
	}
	pgss_ng_hist_store_free(pgss_ng_kind_area(pgss_ng_stmt_kind), &sh->hist,
							&pgss_ng_stmt_ctl->hist);
	pgss_ng_plans_reset_minmax(&sh->plans);
	sh->minmax_stats_since = f->now;
	sh->minmax_reset_at = f->now;
	stmt_stamp_changed(sh);
}

/*
 * reset_locked
 *		pgss_ng_kind_remove_matching's locked callback of a reset, under
 *		<name>_dealloc held exclusively (no eviction in between), so that
 *		no reader sees what the reset removed next to counters that still
 *		count it, or rows of the evicted remainder beside counters zeroed
 *		after them: the eviction log's rows of what it removed go
 *		(pgss_ng_eviction_log_remove); with any queryid, the remainder's
 *		rows of (userid, dbid) too (pgss_ng_evicted_clear); a full reset
 *		restarts the event counters of pgss_ng_info here as well.  A
 *		partial reset's filter is kept for a restore of saved statistics
 *		that has not finished, or not begun (they are older than any reset
 *		since the start), so that what the reset removed does not come
 *		back (stmt_saved.c); a full reset stops a restore through the kind
 *		layer's count of them.
 */
static void
reset_locked(void *arg)
{
	const ResetFilter *r = (const ResetFilter *) arg;
	PgssNgStmtControl *ctl = pgss_ng_stmt_ctl;
	bool		partial = r->f.userid != InvalidOid ||
		r->f.dbid != InvalidOid || r->f.queryid != UINT64CONST(0);

	if (partial && ctl->npartial < PGSS_NG_PARTIAL_RESETS_KEPT)
		ctl->partial[ctl->npartial] = r->f;
	if (partial && ctl->npartial <= PGSS_NG_PARTIAL_RESETS_KEPT)
		ctl->npartial++;
	if (partial)
		pgss_ng_eviction_log_remove(&r->f);
	if (r->f.queryid == UINT64CONST(0))
		pgss_ng_evicted_clear(r->f.userid, r->f.dbid);
	if (!partial)
	{
		SpinLockAcquire(&ctl->mutex);
		ctl->dropped = 0;
		ctl->stats_reset = r->now;
		SpinLockRelease(&ctl->mutex);
		pg_atomic_write_u64(&ctl->hist.dropped, 0);
		pgss_ng_kind_reset_counters(pgss_ng_stmt_kind);
		pgss_ng_qtext_reset_dropped();
		pgss_ng_waits_reset_info();
		pgss_ng_plans_reset_counters();
	}
}

/*
 * pgss_ng_stmt_reset
 *		Remove the entries matching (userid, dbid, queryid), 0 meaning any;
 *		with minmax_only, keep them and restart their min/max times and
 *		time histograms instead.  The eviction log's rows of what is
 *		removed go too, and without a queryid the rows of the evicted
 *		remainder of (userid, dbid) (an overflow row, whose users and
 *		databases are mixed, when it may hold theirs).  Resetting
 *		everything also restarts the event counters of pgss_ng_info
 *		(dealloc, entries_evicted, dropped, backstop_skips, qtext_dropped,
 *		hist_dropped, eviction_time, stats_reset, wait_events_dropped,
 *		wait_samples_lost), and stops a restore in progress
 *		(stmt_saved.c).  All of it in one step under <name>_dealloc
 *		(reset_locked).  Counts still pending in other backends for
 *		removed entries are discarded when they flush: they were made
 *		before the reset.  Returns the time of the reset.  Locks: the kind
 *		layer's (see pgss_ng_kind_remove_matching,
 *		pgss_ng_kind_update_matching), then the remainder's and the info
 *		spinlock.
 */
TimestampTz
pgss_ng_stmt_reset(Oid userid, Oid dbid, uint64 queryid, bool minmax_only)
{
	ResetFilter f;
	bool		all = userid == InvalidOid && dbid == InvalidOid &&
		queryid == UINT64CONST(0);

	f.f.userid = userid;
	f.f.dbid = dbid;
	f.f.queryid = queryid;
	f.now = GetCurrentTimestamp();

	/* our own pending counts (and noted failures) predate the reset */
	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);

	if (minmax_only)
	{
		pgss_ng_kind_update_matching(pgss_ng_stmt_kind, reset_match,
									reset_minmax, &f);
		return f.now;
	}

	/* no filter for all: the kind layer counts a full reset (restores) */
	pgss_ng_kind_remove_matching(pgss_ng_stmt_kind, all ? NULL : reset_match,
								 &f, reset_locked);
	return f.now;
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
