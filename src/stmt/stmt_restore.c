/*-------------------------------------------------------------------------
 *
 * stmt_restore.c
 *	  The restore from the stats file (format: stmt_saved.h): the info block,
 *	  the remainder's rows, entries made or merged from checked records (past
 *	  pgss_ng.max folded into the remainder).  A reset, full or partial, wins
 *	  over a restore.  docs/design.md, "Persistence". Locking: inside the kind
 *	  layer's restore bracket (<name>_dealloc shared).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/memutils.h"

#include "qtext.h"
#include "stmt_kind_int.h"
#include "stmt_saved.h"

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
 *		Whether a partial reset since shared memory was made removed key's
 *		saved entry (row: a remainder row, cleared by one with any queryid; an
 *		overflow row by any such), or more were made than kept (then true).  In
 *		the restore bracket (<name>_dealloc shared; resets record their filters
 *		holding it exclusively).
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
 * pgss_ng_stmt_fold_record
 *		A saved entry past pgss_ng.max: fold its counters into the evicted
 *		remainder as one entry, counted in entries_evicted (the first such
 *		record one run in dealloc), in the restore bracket; not after a full
 *		reset (rs->reset), nor if a partial one removed it (rs->reset_away).
 *		The record was checked.  Locks: the restore bracket, then the
 *		remainder's LWLock.
 */
void
pgss_ng_stmt_fold_record(PgssNgRestore *rs, const char *data, Size len)
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
 *		Restore the saved info counters before the entries (event counters
 *		add to those since the start; stats_reset is the saved one: no restore
 *		follows a reset), and the nevicted saved remainder rows at evicted
 *		(added; not those a partial reset cleared).  Nothing after a full
 *		reset (rs->reset).  Locks: the restore bracket, then the remainder's
 *		LWLock, then the info spinlock.
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
 * pgss_ng_stmt_restore_max
 *		The most entries a restore may make: pgss_ng.max (the kind layer's
 *		max_entries), for the writer, which sees only this module.
 */
int
pgss_ng_stmt_restore_max(void)
{
	return pgss_ng_kind_max_entries(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_stmt_restore_backing_off
 *		Whether shared memory ran out and allocations back off now
 *		(pgss_ng_kind_alloc_backing_off): the writer stops its restore.
 */
bool
pgss_ng_stmt_restore_backing_off(void)
{
	return pgss_ng_kind_alloc_backing_off(pgss_ng_stmt_kind);
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
 *		and text as saved.  A text that would make the arena need room is
 *		dropped (text_dropped, qtext_dropped), histograms and wait samples
 *		without room lost.  Before publication, in the restore bracket;
 *		ERROR only from the dedup hash or a DSA segment (body given back).
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
 *		pgss_ng_stmt_restore_record's body, under pgss_ng_kind_guard() in the
 *		restore bracket: create r->rec's entry, or merge the record into one a
 *		backend made first, and count the outcome in r->rs; nothing after a
 *		full reset (r->rs->reset) or if a partial one removed it (reset_away).
 *		An ERROR leaves it uncounted (the caller counts it skipped).
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
 *		Re-create one entry from a well-formed record of len bytes, or merge
 *		it into one a backend made first, and count the outcome in rs: restored
 *		(texts_dropped if its text did not fit), or skipped (backstop, shared
 *		memory, a text invalid in its encoding or with a NUL byte, or an ERROR,
 *		logged, losing this entry only).  Nothing after a full reset
 *		(rs->reset).  Caller attached, holding no LWLock.
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
