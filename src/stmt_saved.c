/*-------------------------------------------------------------------------
 *
 * stmt_saved.c
 *	  The statement kind's side of the stats file (format: stmt_saved.h):
 *	  its entries as records for the writer, entries re-created from
 *	  records, the info block, and whether the file was loaded.
 *
 * Owns: PgssNgStmtControl.loaded (the writer's alone).
 *
 * Locking: records are made under each entry's lock held shared (the kind
 * layer's foreach); a restored entry is made like any other (partition
 * lock, alloc lock past max), then stamped or merged under its entry lock
 * held exclusively (update callbacks); the info counters are read and
 * written under their spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "storage/spin.h"
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
} SaveState;

/*
 * What stmt_restore_init copies into a restored entry, and what
 * restore_guarded returns.
 */
typedef struct StmtRestore
{
	const PgssNgStmtRecord *rec;
	const char *text;			/* its text (rec->qlen bytes), or NULL */
	bool		restored;		/* set by restore_guarded */
} StmtRestore;

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
	out->entries_evicted = kc.entries_evicted;
	out->backstop_skips = kc.backstop_skips;
	SpinLockAcquire(&pgss_ng_stmt_ctl->mutex);
	out->dropped = pgss_ng_stmt_ctl->dropped;
	out->stats_reset = pgss_ng_stmt_ctl->stats_reset;
	SpinLockRelease(&pgss_ng_stmt_ctl->mutex);
}

void
pgss_ng_stmt_restore_info(const PgssNgSavedInfo *in)
{
	pgss_ng_kind_restore_counters(pgss_ng_stmt_kind, in->dealloc,
								  in->entries_evicted, in->backstop_skips);
	SpinLockAcquire(&pgss_ng_stmt_ctl->mutex);
	pgss_ng_stmt_ctl->dropped += in->dropped;
	pgss_ng_stmt_ctl->stats_reset = in->stats_reset;
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
 *		record of one entry, its text after it, and hand it to the caller's
 *		function with the entry's usage.  Entry lock and partition lock
 *		held shared.  Memory: the state's buffer; the text's copy is freed.
 */
static bool
save_visit(PgssNgKind *kind, const void *key, const void *shared_data,
		   void *arg)
{
	SaveState  *ss = (SaveState *) arg;
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	PgssNgStmtRecord rec;
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

	resetStringInfo(&ss->buf);
	appendBinaryStringInfo(&ss->buf, (const char *) &rec, sizeof(rec));
	if (text)
	{
		appendBinaryStringInfo(&ss->buf, text, rec.qlen);
		pfree(text);
	}
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
	SaveState	ss = {.fn = fn, .arg = arg};

	initStringInfo(&ss.buf);
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, save_visit, NULL, &ss);
	pfree(ss.buf.data);
}

/*
 * stmt_restore_init
 *		Init callback of a restored entry: counters, timestamps and text as
 *		saved; changed now (stamped again once published: see
 *		pgss_ng_stmt_restore_record).  Runs before the entry is published,
 *		with no lock of the kind layer held, or under its alloc lock for a
 *		creation past max; never raises an ERROR.
 */
static bool
stmt_restore_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtRestore *ra = (StmtRestore *) arg;

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
	const PgssNgStmtRecord *rec = (const PgssNgStmtRecord *) arg;

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
 * restore_guarded
 *		The body of pgss_ng_stmt_restore_record, run under
 *		pgss_ng_kind_guard(): create the entry of r->rec, or merge the
 *		record into the entry of a backend that made the same key first;
 *		r->restored says whether the saved counts are in.
 */
static void
restore_guarded(void *arg)
{
	StmtRestore *r = (StmtRestore *) arg;
	PgssNgKind *kind = pgss_ng_stmt_kind;
	const PgssNgStmtRecord *rec = r->rec;

	switch (pgss_ng_kind_restore(kind, &rec->key, stmt_restore_init, r,
								 rec->usage))
	{
		case PGSS_NG_CREATED:
			r->restored = true;
			(void) pgss_ng_kind_update(kind, &rec->key, stmt_restored_changed,
									   NULL);
			break;
		case PGSS_NG_EXISTS:
			/* a backend was faster: add the saved counts to its entry */
			r->restored = pgss_ng_kind_update(kind, &rec->key,
											  stmt_merge_saved,
											  unconstify(PgssNgStmtRecord *,
														 rec));
			break;
		default:
			r->restored = false;
			break;
	}
}

/*
 * pgss_ng_stmt_restore_record
 *		Re-create one entry from a record of len bytes (its text included).
 *		Returns false if the record is malformed (persist.c then discards
 *		the whole file); *restored says whether the saved counts are in
 *		(merged into the entry of a backend that made the same key first,
 *		if need be); not when the backstop was reached, shared memory ran
 *		out, the text is not valid in its encoding or holds a NUL byte (the
 *		record is then skipped: pgss_ng_qtext_valid), or an ERROR was
 *		raised, which is logged (pgss_ng_kind_guard) and loses this entry
 *		only.  Caller attached, holding no LWLock.
 */
bool
pgss_ng_stmt_restore_record(const char *data, Size len, bool *restored)
{
	PgssNgStmtRecord rec;
	StmtRestore r = {.rec = &rec};

	*restored = false;
	if (len < sizeof(PgssNgStmtRecord))
		return false;
	memcpy(&rec, data, sizeof(PgssNgStmtRecord));
	if (rec.qlen < -1 || len != sizeof(PgssNgStmtRecord) + Max(rec.qlen, 0) ||
		!PG_VALID_BE_ENCODING(rec.encoding) || !pgss_ng_hist_valid(&rec.hist))
		return false;
	r.text = rec.qlen >= 0 ? data + sizeof(PgssNgStmtRecord) : NULL;

	/* a forged or damaged text must never make the view fail: skip it */
	if (r.text && !pgss_ng_qtext_valid(r.text, rec.qlen, rec.encoding))
		return true;

	(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "restore a saved entry",
							  restore_guarded, &r);
	*restored = r.restored;
	return true;
}
