/*-------------------------------------------------------------------------
 *
 * stmt_saved.c
 *	  The statement kind's side of the stats file (format: stmt_saved.h):
 *	  its entries as records for the writer, entries re-created from
 *	  records, the info block, the rows of the evicted remainder, and
 *	  whether the file was loaded.
 *
 * Owns: PgssNgStmtControl.loaded (the writer's alone).
 *
 * A reset wins over a restore: the saved statistics are older than any
 * reset since the start.  Once a full reset came (the kind layer counts
 * them), nothing more is restored, neither entries nor the info block,
 * and what was restored before it went with it.  A partial reset removed
 * what matched it of what was restored before it, and what matches it is
 * not restored after it (stmt_read.c keeps the filters of the first
 * PGSS_NG_PARTIAL_RESETS_KEPT; past those no record or remainder row is
 * restored).  The
 * kind layer's restore bracket (pgss_ng_kind_restore_begin/_end) puts a
 * reset wholly before or after each entry and the info block.
 *
 * Locking: records are made under each entry's lock held shared (the kind
 * layer's foreach); a restored entry is made, inside the restore bracket
 * (<name>_dealloc shared), under its partition lock, then stamped or
 * merged under its entry lock held exclusively (update callbacks); the
 * info counters are read and written under their spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

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
 * What stmt_restore_init copies into a restored entry, and the restore it
 * is part of, whose counts restore_guarded updates.
 */
typedef struct StmtRestore
{
	PgssNgRestore *rs;
	const PgssNgStmtRecord *rec;
	const PgssNgHistPair *hist; /* its histograms' windows */
	const char *text;			/* its text (rec->qlen bytes), or NULL */
	const char *wait_rows;		/* its rec->nwait_events rows of wait
								 * events (PgssNgWaitRow, unaligned) */
	const char *plans;			/* its plans (plans_len bytes) */
	Size		plans_len;
	bool		text_dropped;	/* set by stmt_restore_init */
} StmtRestore;

/* A restore's arguments of restore_info_guarded. */
typedef struct InfoRestore
{
	PgssNgRestore *rs;
	const PgssNgSavedInfo *in;
	const char *evicted;		/* the remainder's saved rows */
	uint32		nevicted;
} InfoRestore;

/*
 * partial_reset_removed
 *		Whether a partial reset made since shared memory was made removed
 *		the saved entry of key (for a row of the evicted remainder, row:
 *		whether one cleared that row, one with any queryid; an overflow
 *		row, whose users and databases are not known, any such one), or
 *		more partial resets were made than kept (then anything may have
 *		been: true).  In the restore bracket (<name>_dealloc shared: the resets
 *		record their filters holding it exclusively).
 */
static bool
partial_reset_removed(const PgssNgStmtKey *key, bool row)
{
	const PgssNgStmtControl *ctl = pgss_ng_stmt_ctl;
	int			i;

	if (ctl->npartial > PGSS_NG_PARTIAL_RESETS_KEPT)
		return true;
	for (i = 0; i < ctl->npartial; i++)
		if ((!row || ctl->partial[i].queryid == UINT64CONST(0)) &&
			(stmt_reset_match(&ctl->partial[i], key) ||
			 (row && key->userid == InvalidOid)))
			return true;
	return false;
}

/*
 * pgss_ng_stmt_evict_record
 *		A saved entry that is not restored because pgss_ng.max is lower
 *		than what was saved: fold its counters into the evicted remainder,
 *		as one entry, and count it in entries_evicted (the first such
 *		record one eviction run in dealloc), in the restore bracket (not if
 *		a full reset came since the restore began: rs->reset is then set;
 *		nor if a partial one removed it: counted in rs->reset_away).  The record was
 *		checked (pgss_ng_stmt_record_wellformed).  Locks: the restore
 *		bracket, then the remainder's LWLock.
 */
void
pgss_ng_stmt_evict_record(PgssNgRestore *rs, const char *data, Size len)
{
	PgssNgStmtRecord rec;

	if (rs->reset || len < sizeof(PgssNgStmtRecord))
		return;
	memcpy(&rec, data, sizeof(PgssNgStmtRecord));
	if (!pgss_ng_kind_restore_begin(pgss_ng_stmt_kind, rs->full_resets))
	{
		rs->reset = true;
		return;
	}
	if (partial_reset_removed(&rec.key, false))
		rs->reset_away++;
	else
	{
		pgss_ng_evicted_fold(&rec.key, &rec.counters, rec.wait_samples, 1,
							 NULL);
		/* an eviction: the records beyond max count as one run */
		pgss_ng_kind_restore_counters(pgss_ng_stmt_kind,
									  rs->evicted++ == 0 ? 1 : 0, 1, 0, 0,
									  GetCurrentTimestamp());
	}
	pgss_ng_kind_restore_end(pgss_ng_stmt_kind);
}

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
 * pgss_ng_stmt_restore_start
 *		Begin a restore: nothing done yet, and every full reset since
 *		shared memory was made (the kind layer's count starts at 0 there)
 *		wins over it, a reset that came before the writer read the file
 *		included.
 */
void
pgss_ng_stmt_restore_start(PgssNgRestore *rs)
{
	memset(rs, 0, sizeof(*rs));	/* full_resets 0: all of them win */
}

/*
 * restore_info_guarded
 *		The body of pgss_ng_stmt_restore_info, run under pgss_ng_kind_guard()
 *		(the restore bracket takes an LWLock).
 */
static void
restore_info_guarded(void *arg)
{
	InfoRestore *ir = (InfoRestore *) arg;
	uint32		i;

	if (!pgss_ng_kind_restore_begin(pgss_ng_stmt_kind, ir->rs->full_resets))
	{
		ir->rs->reset = true;
		return;
	}
	pgss_ng_kind_restore_counters(pgss_ng_stmt_kind, ir->in->dealloc,
								  ir->in->entries_evicted,
								  ir->in->backstop_skips,
								  ir->in->eviction_ns,
								  ir->in->last_eviction);
	/* the evicted remainder's rows, in the same bracket */
	for (i = 0; i < ir->nevicted; i++)
	{
		PgssNgEvictedRow row;

		memcpy(&row, ir->evicted + (Size) i * sizeof(PgssNgEvictedRow),
			   sizeof(PgssNgEvictedRow));
		if (!partial_reset_removed(&row.key, true))
			pgss_ng_evicted_restore(&row);
	}
	SpinLockAcquire(&pgss_ng_stmt_ctl->mutex);
	pgss_ng_stmt_ctl->dropped += ir->in->dropped;
	pgss_ng_stmt_ctl->stats_reset = ir->in->stats_reset;
	SpinLockRelease(&pgss_ng_stmt_ctl->mutex);
	pgss_ng_kind_restore_end(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_stmt_restore_info
 *		Restore the saved info counters, before the entries: the event
 *		counters add to what was counted since the start, stats_reset is
 *		the saved one (from then on it only moves forward: a reset sets it
 *		to its own time, and no restore comes after one), and the
 *		nevicted saved rows of the evicted remainder at evicted (added to
 *		what was evicted since the start; not those a partial reset
 *		cleared).  Not if a full reset came since the restore began
 *		(rs->reset is then set).  Locks: the restore bracket, then the
 *		remainder's LWLock, then the info spinlock.
 */
void
pgss_ng_stmt_restore_info(PgssNgRestore *rs, const PgssNgSavedInfo *in,
						  const char *evicted, uint32 nevicted)
{
	InfoRestore ir = {.rs = rs, .in = in, .evicted = evicted,
	.nevicted = nevicted};

	if (!rs->reset)
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "restore saved counters",
								  restore_info_guarded, &ir);
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

/*
 * restore_hist
 *		Add a saved record's histograms (hist, its windows) to an entry's,
 *		before its min/max take the record's in (pgss_ng_stmt_merge_hist);
 *		a histogram the record lost is lost in the entry too.  Entry lock
 *		held exclusively, or the entry not published yet.  Errors: only
 *		from dsa, before anything changed.
 */
static void
restore_hist(PgssNgStmtShared *sh, const PgssNgStmtRecord *rec,
			 const PgssNgHistPair *hist)
{
	PgssNgHistAdd add;

	pgss_ng_hist_add_pair(&add, hist);
	pgss_ng_stmt_merge_hist(sh, &add);
	for (int w = 0; w < PGSS_NG_HIST_NHIST; w++)
		if (rec->hist_lost[w])
			pgss_ng_hist_store_lose(pgss_ng_kind_area(pgss_ng_stmt_kind),
									&sh->hist, &pgss_ng_stmt_ctl->hist, w);
}

/*
 * stmt_restore_init
 *		Init callback of a restored entry: counters, histograms, timestamps
 *		and text as saved; changed now (stamped again once published: see
 *		restore_guarded).  The text is stored only where it does not make
 *		the arena need room (pgss_ng_qtext_store with restore): one that
 *		does not fit is dropped (ra->text_dropped; counted in
 *		qtext_dropped) and the entry kept; histograms without room are
 *		lost (hist_store.h), wait samples too (pgss_ng_waits_add_saved).
 *		Runs before the entry is published, inside
 *		the restore bracket (<name>_dealloc shared); raises an ERROR only
 *		if the text arena's dedup hash runs out of memory or dsa cannot
 *		make a segment (the body is given back, with what it holds).
 */
static bool
stmt_restore_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtRestore *ra = (StmtRestore *) arg;

	sh->counters = ra->rec->counters;
	memcpy(sh->have_minmax, ra->rec->have_minmax, sizeof(sh->have_minmax));
	restore_hist(sh, ra->rec, ra->hist);
	sh->encoding = ra->rec->encoding;
	sh->stats_since = ra->rec->stats_since;
	sh->minmax_stats_since = ra->rec->minmax_stats_since;
	sh->last_executed = ra->rec->last_executed;
	pgss_ng_waits_add_saved(&sh->waits, ra->rec->wait_samples);
	sh->changed_at = GetCurrentTimestamp();
	sh->qtext = ra->text ?
		pgss_ng_qtext_store(pgss_ng_kind_area(kind), ra->text,
							ra->rec->qlen, true) :
		InvalidDsaPointer;
	ra->text_dropped = ra->text && !DsaPointerIsValid(sh->qtext);
	return !ra->text_dropped;
}

/*
 * stmt_merge_saved
 *		Update callback: merge a saved record's counters and histograms
 *		into an entry that a backend made after the start but before the
 *		record was read (arg: the StmtRestore); the older stats_since and
 *		the later last_executed win; the entry changed.  Entry lock held
 *		exclusively.  Errors: as restore_hist's.
 */
static void
stmt_merge_saved(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const StmtRestore *r = (const StmtRestore *) arg;
	const PgssNgStmtRecord *rec = r->rec;

	restore_hist(sh, rec, r->hist);
	pgss_ng_stmt_merge(sh, &rec->counters, rec->have_minmax);
	sh->stats_since = Min(sh->stats_since, rec->stats_since);
	sh->minmax_stats_since = Min(sh->minmax_stats_since,
								 rec->minmax_stats_since);
	sh->last_executed = Max(sh->last_executed, rec->last_executed);
	/* the writer's, which is the one process that writes them */
	pgss_ng_waits_add_saved(&sh->waits, rec->wait_samples);
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
 * restore_wait_rows
 *		Add a restored record's rows of wait events (wait_rows, unaligned)
 *		to its entry (pgss_ng_waits_restore_rows).  In the restore bracket.
 *		Memory: an aligned copy, freed.
 */
static void
restore_wait_rows(const PgssNgStmtRecord *rec, const char *wait_rows)
{
	PgssNgWaitRow *rows;

	if (rec->nwait_events == 0)
		return;
	rows = palloc(sizeof(PgssNgWaitRow) * rec->nwait_events);
	memcpy(rows, wait_rows, sizeof(PgssNgWaitRow) * rec->nwait_events);
	(void) pgss_ng_waits_restore_rows(&rec->key, rows, rec->nwait_events);
	pfree(rows);
}

/*
 * restore_guarded
 *		The body of pgss_ng_stmt_restore_record, run under
 *		pgss_ng_kind_guard(), inside the restore bracket: create the entry
 *		of r->rec, or merge the record into the entry of a backend that
 *		made the same key first, and count the outcome in r->rs.  Nothing,
 *		and r->rs->reset set, if a full reset came since the restore began;
 *		nothing, counted in r->rs->reset_away, if a partial one removed it.
 *		An ERROR leaves the record uncounted (the caller counts it skipped).
 */
static void
restore_guarded(void *arg)
{
	StmtRestore *r = (StmtRestore *) arg;
	PgssNgKind *kind = pgss_ng_stmt_kind;
	const PgssNgStmtRecord *rec = r->rec;
	bool		restored;

	if (!pgss_ng_kind_restore_begin(kind, r->rs->full_resets))
	{
		r->rs->reset = true;
		return;
	}
	if (partial_reset_removed(&rec->key, false))
	{
		r->rs->reset_away++;
		pgss_ng_kind_restore_end(kind);
		return;
	}
	switch (pgss_ng_kind_restore(kind, &rec->key, stmt_restore_init, r,
								 rec->usage))
	{
		case PGSS_NG_CREATE_NEW:
			restored = true;
			(void) pgss_ng_kind_update(kind, &rec->key, stmt_restored_changed,
									   NULL);
			if (r->text_dropped)
				r->rs->texts_dropped++;
			break;
		case PGSS_NG_CREATE_EXISTS:
			/* a backend was faster: add the saved counts to its entry */
			restored = pgss_ng_kind_update(kind, &rec->key, stmt_merge_saved,
										   r);
			break;
		default:
			restored = false;
			break;
	}
	if (restored)
	{
		restore_wait_rows(rec, r->wait_rows);
		r->rs->restored++;
		pgss_ng_plans_restore(&rec->key, r->plans, r->plans_len);
	}
	else
		r->rs->skipped++;
	pgss_ng_kind_restore_end(kind);
}

/*
 * read_record
 *		Copy the fixed part of a record of len bytes (its histograms' counts,
 *		text, rows of wait events and plans included) into *rec, its
 *		histograms into *hist (if not NULL; only their windows are set),
 *		point *text at its text (NULL: none), *wait_rows at its rows of wait
 *		events and *plans at its plans (*plans_len bytes); false if the
 *		record is malformed.
 */
static bool
read_record(const char *data, Size len, PgssNgStmtRecord *rec,
			PgssNgHistPair *hist, const char **text,
			const char **wait_rows, const char **plans, Size *plans_len)
{
	Size		counts = 0;
	Size		fixed;
	const char *p = data + sizeof(PgssNgStmtRecord);
	int			w;

	if (len < sizeof(PgssNgStmtRecord))
		return false;
	memcpy(rec, data, sizeof(PgssNgStmtRecord));
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		if (rec->hist_lo[w] + rec->hist_len[w] > PGSS_NG_HIST_NBUCKETS)
			return false;
		counts += rec->hist_len[w] * sizeof(uint32);
	}
	if (rec->qlen < -1 || rec->nwait_events < 0 ||
		rec->nwait_events > (int32) (MaxAllocSize / sizeof(PgssNgWaitRow)) ||
		!PG_VALID_BE_ENCODING(rec->encoding))
		return false;
	fixed = sizeof(PgssNgStmtRecord) + counts + Max(rec->qlen, 0) +
		sizeof(PgssNgWaitRow) * rec->nwait_events;
	if (len < fixed ||
		!pgss_ng_plans_saved_valid(data + fixed, len - fixed))
		return false;
	for (w = 0; w < PGSS_NG_HIST_NHIST && hist != NULL; w++)
	{
		hist->lo[w] = rec->hist_lo[w];
		hist->len[w] = rec->hist_len[w];
		memcpy(&hist->count[w][rec->hist_lo[w]], p,
			   rec->hist_len[w] * sizeof(uint32));
		p += rec->hist_len[w] * sizeof(uint32);
	}
	*text = rec->qlen >= 0 ? data + sizeof(PgssNgStmtRecord) + counts : NULL;
	*wait_rows = data + sizeof(PgssNgStmtRecord) + counts + Max(rec->qlen, 0);
	/* a row of event 0 would be a free row of the table */
	for (int32 i = 0; i < rec->nwait_events; i++)
	{
		PgssNgWaitRow row;

		memcpy(&row, *wait_rows + sizeof(row) * i, sizeof(row));
		if (row.wait_event_info == 0)
			return false;
	}
	*plans = data + fixed;
	*plans_len = len - fixed;
	return true;
}

/*
 * pgss_ng_stmt_record_wellformed
 *		Whether a record of len bytes (its text included) can be read: the
 *		writer checks every record before restoring anything, and a file
 *		with a malformed one is discarded as a whole.
 */
bool
pgss_ng_stmt_record_wellformed(const char *data, Size len)
{
	PgssNgStmtRecord rec;
	const char *text;
	const char *wait_rows;
	const char *plans;
	Size		plans_len;

	return read_record(data, len, &rec, NULL, &text, &wait_rows, &plans,
					   &plans_len);
}

/*
 * pgss_ng_stmt_restore_record
 *		Re-create one entry from a well-formed record of len bytes (its text
 *		included; see pgss_ng_stmt_record_wellformed), or merge it into the
 *		entry of a backend that made the same key first, and count the
 *		outcome in rs: restored (a saved text that did not fit dropped:
 *		texts_dropped), or skipped when the backstop was reached, shared
 *		memory ran out, the text is not valid in its encoding or holds a NUL
 *		byte (pgss_ng_qtext_valid), or an ERROR was raised, which is logged
 *		(pgss_ng_kind_guard) and loses this entry only.  Nothing once a full
 *		reset came (rs->reset).  Caller attached, holding no LWLock.
 */
void
pgss_ng_stmt_restore_record(PgssNgRestore *rs, const char *data, Size len)
{
	PgssNgStmtRecord rec;
	PgssNgHistPair hist;
	StmtRestore r = {.rs = rs, .rec = &rec, .hist = &hist};
	Size		counted = rs->restored + rs->skipped;

	if (rs->reset)
		return;
	if (!read_record(data, len, &rec, &hist, &r.text, &r.wait_rows,
					 &r.plans, &r.plans_len))
		elog(ERROR, "pgss_ng restore of a malformed record");

	/* a forged or damaged text must never make the view fail: skip it */
	if (r.text && !pgss_ng_qtext_valid(r.text, rec.qlen, rec.encoding))
	{
		rs->skipped++;
		return;
	}

	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "restore a saved entry",
							restore_guarded, &r) &&
		rs->restored + rs->skipped == counted)
		rs->skipped++;
}
