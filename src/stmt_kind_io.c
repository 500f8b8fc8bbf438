/*-------------------------------------------------------------------------
 *
 * stmt_kind_io.c
 *	  The statement kind's outputs: the snapshot, reset and info counters
 *	  of the SQL functions, and the saved record and info block of the
 *	  writer (persist.c).  Part of the statement kind with stmt_kind.c
 *	  (split for size); they share stmt_kind_int.h.
 *
 * Locking: reads take each entry's lock shared through the kind layer's
 * foreach; the min/max reset and the merge of a saved record take it
 * exclusively (update callbacks); the info counters are read and written
 * under their spinlock.
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
#include "stmt_kind_int.h"

/*
 * State of a read (pgss_ng_stmt_read): the filter, the copy of the entry
 * being read, and the growing buffer its text is copied into (a text
 * varlena, reused from entry to entry: no palloc per entry).
 */
typedef struct ReadState
{
	bool		want_text;
	TimestampTz changed_since;	/* DT_NOBEGIN: everything */
	PgssNgStmtEmitFn emit;
	void	   *emit_arg;
	PgssNgStmtKey key;			/* the entry copied last */
	PgssNgStmtShared sh;		/* the part of its data read_emit uses */
	bool		has_text;
	text	   *textbuf;		/* its text, if has_text */
	Size		textbuf_size;	/* bytes allocated at textbuf */
	PgssNgStmtSnapshot es;		/* what emit is given */
} ReadState;

/*
 * read_copy
 *		pgss_ng_kind_foreach_copy copy callback: copy one entry (and its
 *		text into the text buffer), unless a reader may not see it yet (an
 *		entry with neither calls, plans nor errors was only made at parse
 *		analysis) or it has not changed since changed_since (changed_at
 *		earlier).  Returns whether it was copied.  Runs with the entry lock
 *		and its partition lock held shared, so it only copies; growing the
 *		text buffer may raise an out-of-memory ERROR, which aborts the
 *		reader's transaction and releases the locks.  Memory: the buffer
 *		lives in the reader's context.
 */
static bool
read_copy(PgssNgKind *kind, const void *key, const void *shared_data,
		  void *arg)
{
	ReadState  *st = (ReadState *) arg;
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;

	if (total_calls(&sh->counters) == 0 && sh->counters.errors == 0)
		return false;
	if (sh->changed_at < st->changed_since)
		return false;
	memcpy(&st->key, key, sizeof(PgssNgStmtKey));
	/* what read_emit uses; of the histograms only their used slots */
	st->sh.counters = sh->counters;
	memcpy(st->sh.have_minmax, sh->have_minmax, sizeof(sh->have_minmax));
	pgss_ng_hist_copy_used(&st->sh.hist, &sh->hist);
	st->sh.encoding = sh->encoding;
	st->sh.stats_since = sh->stats_since;
	st->sh.minmax_stats_since = sh->minmax_stats_since;
	st->sh.last_executed = sh->last_executed;
	st->has_text = false;
	if (st->want_text && DsaPointerIsValid(sh->qtext))
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
 *		pgss_ng_kind_foreach_copy emit callback: turn the copy of the entry
 *		into what a reader sees (time groups, the time quantiles from the
 *		histograms) and hand it to the reader's emit function.  Runs after
 *		the entry lock is released, with the partition lock still held
 *		shared.
 */
static void
read_emit(void *arg)
{
	ReadState  *st = (ReadState *) arg;
	const PgssNgStmtShared *sh = &st->sh;
	PgssNgStmtSnapshot *es = &st->es;
	int			k;

	es->key = st->key;
	es->counters = sh->counters;
	for (k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		double		min = sh->have_minmax[k] ? sh->counters.min_time[k] : 1;
		double		max = sh->have_minmax[k] ? sh->counters.max_time[k] : 0;

		time_stats(&sh->counters, k, &es->times[k]);
		pgss_ng_hist_quantiles(&sh->hist, k, pgss_ng_quantiles,
							   PGSS_NG_NUM_QUANTILES, min, max,
							   es->quantiles[k]);
	}
	es->encoding = sh->encoding;
	es->stats_since = sh->stats_since;
	es->minmax_stats_since = sh->minmax_stats_since;
	es->last_executed = sh->last_executed;
	es->query = st->has_text ? st->textbuf : NULL;
	st->emit(es, st->emit_arg);
}

/*
 * pgss_ng_stmt_read
 *		Call emit once for every entry a reader may see (with its text if
 *		want_text) and that changed at or after changed_since (DT_NOBEGIN:
 *		all of them).  This backend's noted failures are merged and its
 *		pending counters flushed first (waiting for locks), so a session
 *		always sees its own finished statements.  The snapshot emit is
 *		given, and its text, are only valid during that call.  Locks: the
 *		kind layer's foreach_copy: each entry is copied under its entry
 *		lock, held shared just for the copy; emit runs with no entry lock
 *		but the entry's partition lock held shared (it must take no lock of
 *		the statement kind).  Memory: CurrentMemoryContext, one text buffer
 *		for the whole read.  Errors: out of memory; whatever emit raises.
 */
void
pgss_ng_stmt_read(bool want_text, TimestampTz changed_since,
				  PgssNgStmtEmitFn emit, void *arg)
{
	ReadState  *st;

	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);

	/* too big for the stack: the histograms alone are 1 KiB */
	st = palloc0(sizeof(ReadState));
	st->want_text = want_text;
	st->changed_since = changed_since;
	st->emit = emit;
	st->emit_arg = arg;
	st->textbuf_size = 1024;
	st->textbuf = palloc(st->textbuf_size);
	pgss_ng_kind_foreach_copy(pgss_ng_stmt_kind, read_copy, read_emit, st);
	pfree(st->textbuf);
	pfree(st);
}

/* Filter of pgss_ng_stmt_reset(); 0 matches anything. */
typedef struct ResetFilter
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	TimestampTz now;
} ResetFilter;

/*
 * reset_match
 *		Does a key match the reset's filter (0 matching anything)?
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
 *		Update callback: restart the min/max and the histograms of plan and
 *		exec times; entry lock held exclusively.  The next flushed call
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
	memset(&sh->hist, 0, sizeof(sh->hist));
	sh->minmax_stats_since = f->now;
	sh->minmax_reset_at = f->now;
	stmt_stamp_changed(sh);
}

/*
 * pgss_ng_stmt_reset
 *		Remove the entries matching (userid, dbid, queryid), 0 meaning any;
 *		with minmax_only, keep them and restart their min/max times and
 *		time histograms instead.
 *		Resetting everything also restarts the event counters of
 *		pgss_ng_info (dealloc, dropped, backstop_skips, qtext_dropped,
 *		stats_reset).  Counts still pending in other backends for removed
 *		entries are discarded when they flush: they were made before the
 *		reset.  Returns the time of the reset.  Locks: the kind layer's
 *		(see pgss_ng_kind_drop_matching, pgss_ng_kind_update_matching),
 *		then the info spinlock.
 */
TimestampTz
pgss_ng_stmt_reset(Oid userid, Oid dbid, uint64 queryid, bool minmax_only)
{
	ResetFilter f;

	f.userid = userid;
	f.dbid = dbid;
	f.queryid = queryid;
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

	pgss_ng_kind_drop_matching(pgss_ng_stmt_kind, reset_match, &f);

	if (userid == InvalidOid && dbid == InvalidOid &&
		queryid == UINT64CONST(0))
	{
		SpinLockAcquire(&pgss_ng_info_shared->mutex);
		pgss_ng_info_shared->dropped = 0;
		pgss_ng_info_shared->stats_reset = f.now;
		SpinLockRelease(&pgss_ng_info_shared->mutex);
		pgss_ng_kind_reset_counters(pgss_ng_stmt_kind);
		pgss_ng_qtext_reset_dropped();
	}
	return f.now;
}

/*
 * pgss_ng_stmt_info
 *		Copy the extension-wide counters.  Each group is read under its own
 *		lock or atomically; the whole is not one consistent snapshot.
 */
void
pgss_ng_stmt_info(PgssNgStmtInfo *out)
{
	SpinLockAcquire(&pgss_ng_info_shared->mutex);
	out->dropped = pgss_ng_info_shared->dropped;
	out->stats_reset = pgss_ng_info_shared->stats_reset;
	SpinLockRelease(&pgss_ng_info_shared->mutex);
	pgss_ng_kind_counters(pgss_ng_stmt_kind, &out->kind);
	pgss_ng_qtext_stats(&out->qtext);
}

/*
 * histograms_visit
 *		pgss_ng_kind_read visitor: copy the entry's histograms.  Entry lock
 *		and partition lock held shared.
 */
static void
histograms_visit(PgssNgKind *kind, const void *key, const void *shared_data,
				 void *arg)
{
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;

	memcpy(arg, &sh->hist, sizeof(PgssNgHistPair));
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

/*
 * pgss_ng_stmt_save_info / pgss_ng_stmt_restore_info
 *		The info counters the writer saves with the entries, and their
 *		restore at start: the event counters add to what was counted since
 *		the start, stats_reset is the saved one.
 */
void
pgss_ng_stmt_save_info(PgssNgSavedInfo *out)
{
	PgssNgKindCounters kc;

	pgss_ng_kind_counters(pgss_ng_stmt_kind, &kc);
	memset(out, 0, sizeof(*out));
	out->dealloc = kc.dealloc;
	out->backstop_skips = kc.backstop_skips;
	SpinLockAcquire(&pgss_ng_info_shared->mutex);
	out->dropped = pgss_ng_info_shared->dropped;
	out->stats_reset = pgss_ng_info_shared->stats_reset;
	SpinLockRelease(&pgss_ng_info_shared->mutex);
}

void
pgss_ng_stmt_restore_info(const PgssNgSavedInfo *in)
{
	pgss_ng_kind_restore_counters(pgss_ng_stmt_kind, in->dealloc,
								  in->backstop_skips);
	SpinLockAcquire(&pgss_ng_info_shared->mutex);
	pgss_ng_info_shared->dropped += in->dropped;
	pgss_ng_info_shared->stats_reset = in->stats_reset;
	SpinLockRelease(&pgss_ng_info_shared->mutex);
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
	return pgss_ng_info_shared->loaded;
}

void
pgss_ng_stmt_set_loaded(void)
{
	pgss_ng_info_shared->loaded = true;
}

/*
 * One saved statement entry (persist.c writes these records as they are:
 * the file is only read back by the same format version and PostgreSQL
 * major version).  qlen bytes of query text follow; qlen -1: no text.
 */
typedef struct StmtRecord
{
	PgssNgStmtKey key;
	PgssNgCounters counters;
	bool		have_minmax[PGSS_NG_NUMPHASE];
	PgssNgHistPair hist;
	int32		encoding;
	int32		qlen;
	TimestampTz stats_since;
	TimestampTz minmax_stats_since;
	TimestampTz last_executed;	/* 0: none */
	double		usage;			/* eviction value when saved */
} StmtRecord;

/* What stmt_restore_init copies into a restored entry. */
typedef struct StmtRestoreArg
{
	const StmtRecord *rec;
	const char *text;
} StmtRestoreArg;

/*
 * pgss_ng_stmt_to_serialized
 *		Append the record of one entry to buf.  Called by persist.c through
 *		pgss_ng_kind_foreach (entry lock held shared).  Memory: buf's.
 */
void
pgss_ng_stmt_to_serialized(PgssNgKind *kind, const void *key,
						   const void *shared_data, StringInfo buf)
{
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	StmtRecord	rec;
	int			qlen;
	char	   *text = pgss_ng_qtext_copy(pgss_ng_kind_area(kind), sh->qtext,
										  &qlen);

	memset(&rec, 0, sizeof(rec));
	memcpy(&rec.key, key, sizeof(PgssNgStmtKey));
	rec.counters = sh->counters;
	memcpy(rec.have_minmax, sh->have_minmax, sizeof(rec.have_minmax));
	rec.hist = sh->hist;
	rec.encoding = sh->encoding;
	rec.qlen = text ? qlen : -1;
	rec.stats_since = sh->stats_since;
	rec.minmax_stats_since = sh->minmax_stats_since;
	rec.last_executed = sh->last_executed;
	rec.usage = pgss_ng_kind_usage(shared_data);

	appendBinaryStringInfo(buf, (const char *) &rec, sizeof(rec));
	if (text)
	{
		appendBinaryStringInfo(buf, text, rec.qlen);
		pfree(text);
	}
}

/*
 * stmt_restore_init
 *		Init callback of a restored entry: counters, timestamps and text as
 *		saved; changed now (stamped again once published: see
 *		pgss_ng_stmt_from_serialized).  Runs before the entry is published,
 *		with no lock of the kind layer held, or under its alloc lock for a
 *		creation past max; never raises an ERROR.
 */
static bool
stmt_restore_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtRestoreArg *ra = (StmtRestoreArg *) arg;

	sh->counters = ra->rec->counters;
	memcpy(sh->have_minmax, ra->rec->have_minmax, sizeof(sh->have_minmax));
	sh->hist = ra->rec->hist;
	sh->encoding = ra->rec->encoding;
	sh->stats_since = ra->rec->stats_since;
	sh->minmax_stats_since = ra->rec->minmax_stats_since;
	sh->last_executed = ra->rec->last_executed;
	sh->changed_at = GetCurrentTimestamp();
	sh->qtext = ra->text ?
		pgss_ng_qtext_store(pgss_ng_kind_area(kind), ra->text, ra->rec->qlen) :
		InvalidDsaPointer;
	return true;
}

/*
 * stmt_merge_saved
 *		Update callback: merge a saved record's counters into an entry that
 *		a backend made after the start but before the record was read; the
 *		older stats_since and the later last_executed win; the entry
 *		changed.  Entry lock held exclusively.
 */
static void
stmt_merge_saved(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const StmtRecord *rec = (const StmtRecord *) arg;

	pgss_ng_stmt_merge(sh, &rec->counters, rec->have_minmax);
	pgss_ng_hist_merge_pair(&sh->hist, &rec->hist);
	sh->stats_since = Min(sh->stats_since, rec->stats_since);
	sh->minmax_stats_since = Min(sh->minmax_stats_since,
								 rec->minmax_stats_since);
	sh->last_executed = Max(sh->last_executed, rec->last_executed);
	stmt_stamp_changed(sh);
}

/*
 * stmt_restored_changed
 *		Update callback: stamp a restored entry as changed, now that it is
 *		published (so that a read that missed it sees it changed after its
 *		start).  Entry lock held exclusively.
 */
static void
stmt_restored_changed(void *shared_data, void *arg)
{
	stmt_stamp_changed((PgssNgStmtShared *) shared_data);
}

/*
 * pgss_ng_stmt_from_serialized
 *		Re-create one entry from a record of len bytes.  Returns false if
 *		the record is malformed (persist.c then discards the whole file);
 *		*restored says whether the saved counts are in (merged into the
 *		entry of a backend that made the same key first, if need be); not
 *		when the backstop was reached, shared memory ran out, or the text
 *		is not valid in its encoding or holds a NUL byte (the record is
 *		then skipped: pgss_ng_qtext_valid).
 */
bool
pgss_ng_stmt_from_serialized(PgssNgKind *kind, const char *data, Size len,
							 bool *restored)
{
	StmtRecord	rec;
	StmtRestoreArg ra;

	if (len < sizeof(StmtRecord))
		return false;
	memcpy(&rec, data, sizeof(StmtRecord));
	if (rec.qlen < -1 || len != sizeof(StmtRecord) + Max(rec.qlen, 0) ||
		!PG_VALID_BE_ENCODING(rec.encoding) || !pgss_ng_hist_valid(&rec.hist))
		return false;

	ra.rec = &rec;
	ra.text = rec.qlen >= 0 ? data + sizeof(StmtRecord) : NULL;

	/* a forged or damaged text must never make the view fail: skip it */
	if (ra.text && !pgss_ng_qtext_valid(ra.text, rec.qlen, rec.encoding))
	{
		*restored = false;
		return true;
	}
	switch (pgss_ng_kind_restore(kind, &rec.key, stmt_restore_init, &ra,
								 rec.usage))
	{
		case PGSS_NG_CREATED:
			*restored = true;
			(void) pgss_ng_kind_update(kind, &rec.key, stmt_restored_changed,
									   NULL);
			break;
		case PGSS_NG_EXISTS:
			/* a backend was faster: add the saved counts to its entry */
			*restored = pgss_ng_kind_update(kind, &rec.key, stmt_merge_saved,
											&rec);
			break;
		default:
			*restored = false;
			break;
	}
	return true;
}
