/*-------------------------------------------------------------------------
 *
 * stmt_entry.c
 *	  A statement's entry as a backend's recording finds it: made with its
 *	  text if missing (init callback), its pending data, or its entry lock
 *	  tried to count one call straight into it; a failed execution's text
 *	  replaced by the first successful one.  docs/design.md, "Backend side".
 *	  Locking: the kind layer's; callers run under pgss_ng_kind_guard().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "qtext.h"
#include "stmt_kind_int.h"

/*
 * What the init callback stores in a new entry: a text already cleaned
 * (cut out of its source string by CleanQuerytext(), and perhaps
 * normalized), or the statement's location in its source string (cut
 * only when an entry is really made).
 */
typedef struct StmtInitArg
{
	const char *text;			/* text to store, or the source string */
	int			location;		/* statement's offset in it (source only) */
	int			len;			/* statement's length in bytes */
	bool		cleaned;		/* text is cleaned already: stored as it is */
	bool		failed;			/* text is a failed execution's */
} StmtInitArg;

/*
 * stmt_init
 *		Init callback for a new shared entry: store its query text (the
 *		normalized one, or the statement's own part of its source string)
 *		and its timestamps.  Runs before the entry is published, with no
 *		lock of the kind layer held (see kind.h).  A text that cannot be
 *		stored leaves the entry with query NULL.  Errors: only an
 *		out-of-memory ERROR from the text arena's dedup hash.
 */
static bool
stmt_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtInitArg *ia = (StmtInitArg *) arg;
	const char *text = ia->text;
	int			len = ia->len;
	TimestampTz now = GetCurrentTimestamp();

	if (!ia->cleaned)
	{
		int			location = ia->location;

		text = CleanQuerytext(text, &location, &len);
	}
	sh->qtext = pgss_ng_qtext_store(pgss_ng_kind_area(kind), text, len,
									false);
	sh->qtext_failed = ia->failed;
	sh->encoding = GetDatabaseEncoding();
	sh->stats_since = now;
	sh->minmax_stats_since = now;
	sh->last_executed = 0;
	sh->changed_at = now;
	return DsaPointerIsValid(sh->qtext);
}

/*
 * store_success_text
 *		Store the text of a successful planning or execution (the statement
 *		ia locates in its source string), to replace a failed execution's;
 *		invalid if it could not be stored.  Errors: an out-of-memory ERROR
 *		of the text arena, under the caller's guard.
 */
static dsa_pointer
store_success_text(const StmtInitArg *ia)
{
	int			location = ia->location;
	int			len = ia->len;
	const char *text = CleanQuerytext(ia->text, &location, &len);

	return pgss_ng_qtext_store(pgss_ng_kind_area(pgss_ng_stmt_kind), text,
							   len, false);
}

/* release_text: give a text back to the arena (nothing if invalid) */
static void
release_text(dsa_pointer text)
{
	if (DsaPointerIsValid(text))
		pgss_ng_qtext_release(pgss_ng_kind_area(pgss_ng_stmt_kind), text);
}

/*
 * replace_failed_text
 *		ref's entry was made by a failed execution: give it this successful
 *		call's text (the statement in source string query), as
 *		pg_stat_statements keeps the first success's.  Stored with no lock
 *		held, swapped under the entry lock taken without waiting (busy: a later
 *		call tries again); the text not kept is released.  Errors: the text
 *		arena's out of memory, under the caller's guard.
 */
static void
replace_failed_text(PgssNgEntryRef *ref, const char *query, int location,
					int len)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;
	StmtInitArg ia = {.text = query, .location = location, .len = len};
	dsa_pointer qtext = store_success_text(&ia);
	dsa_pointer unused = qtext;

	if (!DsaPointerIsValid(qtext) || !pgss_ng_kind_lock_entry(ref, true))
	{
		release_text(unused);
		return;
	}
	if (sh->qtext_failed)
	{
		unused = sh->qtext;
		sh->qtext = qtext;
		sh->qtext_failed = false;
	}
	pgss_ng_kind_unlock_entry(ref, 0);
	release_text(unused);
}

/*
 * pgss_ng_stmt_pending
 *		This backend's pending data for key, for a successful call, making the
 *		entry if needed with the statement's text (location, len in source
 *		string query); new pending data of an entry a failed execution made
 *		gives it this text.  NULL when the entry could not be made (backstop,
 *		shared memory): the caller counts a drop.  Errors: the kind layer's and
 *		the text arena's; call under pgss_ng_kind_guard(), attached.
 */
PgssNgPending *
pgss_ng_stmt_pending(const PgssNgStmtKey *key, const char *query,
					 int location, int len)
{
	StmtInitArg ia = {.text = query, .location = location, .len = len};
	PgssNgEntryRef *ref;
	PgssNgPending *p;

	ref = pgss_ng_kind_get_pending(pgss_ng_stmt_kind, key, stmt_init, &ia);
	if (ref == NULL)
		return NULL;
	p = (PgssNgPending *) ref->pending;
	/* the first success (in this pending data) after failures only */
	if (total_calls(&p->counters) == 0 &&
		((PgssNgStmtShared *) ref->shared_data)->qtext_failed)
		replace_failed_text(ref, query, location, len);
	return p;
}

/*
 * pgss_ng_stmt_lock
 *		Lock key's shared entry (into ref) to count one call straight into it,
 *		making it if needed with the statement's text (location, len in source
 *		string query); an entry a failed execution made gets that text once
 *		locked (the text arena's locks come after the entry's).  Errors:
 *		pgss_ng_kind_lock_key()'s and the text arena's; call under
 *		pgss_ng_kind_guard(), attached.
 */
PgssNgLockKey
pgss_ng_stmt_lock(const PgssNgStmtKey *key, const char *query, int location,
				  int len, PgssNgEntryRef *ref)
{
	StmtInitArg ia = {.text = query, .location = location, .len = len};
	PgssNgLockKey r;
	PgssNgStmtShared *sh;

	r = pgss_ng_kind_lock_key(pgss_ng_stmt_kind, key, stmt_init, &ia, ref);
	if (r != PGSS_NG_LOCK_KEY_LOCKED)
		return r;
	sh = (PgssNgStmtShared *) ref->shared_data;
	if (unlikely(sh->qtext_failed))
	{
		dsa_pointer text = store_success_text(&ia);

		if (DsaPointerIsValid(text))
		{
			release_text(sh->qtext);
			sh->qtext = text;
			sh->qtext_failed = false;
		}
	}
	return r;
}

/*
 * pgss_ng_stmt_count_locked
 *		Count one call of phase that took ms in the entry ref locked
 *		(pgss_ng_stmt_lock; the caller added the other counters and, first,
 *		the histogram): calls, time, Welford's step, min/max (restarted after
 *		a min/max reset), as a flush of that one call would; then stamp it
 *		changed (and executed) at the time read under the lock, add its use to
 *		its usage and unlock.  Errors: pgss_ng_kind_unlock_key()'s.
 */
void
pgss_ng_stmt_count_locked(PgssNgEntryRef *ref, PgssNgPhase phase, double ms)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;
	PgssNgCounters *c = &sh->counters;
	bool		first = total_calls(c) == 0 && c->errors == 0;
	double		old_mean = c->mean_time[phase];
	int64		n = ++c->calls[phase];

	c->total_time[phase] += ms;
	if (n == 1)
		c->mean_time[phase] = ms;
	else
	{
		c->mean_time[phase] += (ms - old_mean) / n;
		c->sum_var_time[phase] += (ms - old_mean) * (ms - c->mean_time[phase]);
	}
	if (!sh->have_minmax[phase])
	{
		c->min_time[phase] = ms;
		c->max_time[phase] = ms;
		sh->have_minmax[phase] = true;
	}
	else
	{
		c->min_time[phase] = Min(c->min_time[phase], ms);
		c->max_time[phase] = Max(c->max_time[phase], ms);
	}

	stmt_stamp_changed_at(sh, ref->flush_time);
	if (phase == PGSS_NG_PHASE_EXEC)
		sh->last_executed = sh->changed_at;
	pgss_ng_kind_unlock_key(ref, first ? 0 : 1);
}

/*
 * pgss_ng_stmt_count_hist
 *		Count one planning or execution of phase that took ms in the
 *		histogram of the entry ref locked (pgss_ng_stmt_lock), before
 *		anything else of it is counted: a histogram of up to two calls
 *		keeps none but the entry's min and max, and only this step may
 *		raise an ERROR (its chunk's allocation), with nothing changed yet.
 */
void
pgss_ng_stmt_count_hist(PgssNgEntryRef *ref, PgssNgPhase phase, double ms)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;

	pgss_ng_hist_store_add_one(pgss_ng_kind_area(pgss_ng_stmt_kind),
							   &sh->hist, &pgss_ng_stmt_ctl->hist, phase, ms,
							   sh->counters.min_time, sh->counters.max_time,
							   stmt_may_alloc_hist);
}

/*
 * pgss_ng_stmt_keep_pending
 *		After pgss_ng_stmt_lock() found the entry lock busy: this backend's
 *		new pending data for the entry (pgss_ng_kind_keep_pending), given
 *		the statement's text first if a failed execution made it, as
 *		pgss_ng_stmt_pending() does.  Errors and locks as
 *		pgss_ng_stmt_pending().
 */
PgssNgPending *
pgss_ng_stmt_keep_pending(PgssNgEntryRef *ref, const char *query,
						  int location, int len)
{
	PgssNgEntryRef *kept = pgss_ng_kind_keep_pending(ref);

	if (((PgssNgStmtShared *) kept->shared_data)->qtext_failed)
		replace_failed_text(kept, query, location, len);
	return (PgssNgPending *) kept->pending;
}

/*
 * pgss_ng_stmt_pending_failed
 *		This backend's pending data for key, for a failed execution
 *		(stmt_backend.c's merge of the failure notes), making the shared
 *		entry if needed with text (len bytes, cleaned already: stored as
 *		it is).  Such a text is kept only until the entry's first
 *		successful planning or execution (pgss_ng_stmt_pending).  NULL,
 *		errors and locks as pgss_ng_stmt_pending().
 */
PgssNgPending *
pgss_ng_stmt_pending_failed(const PgssNgStmtKey *key, const char *text,
							int len)
{
	StmtInitArg ia = {.text = text, .len = len, .cleaned = true,
	.failed = true};
	PgssNgEntryRef *ref;

	ref = pgss_ng_kind_get_pending(pgss_ng_stmt_kind, key, stmt_init, &ia);
	return ref ? (PgssNgPending *) ref->pending : NULL;
}

/*
 * pgss_ng_stmt_create
 *		Make sure a shared entry exists for key, with text (len bytes,
 *		stored as it is: the normalized text made at parse analysis),
 *		without counting anything (pg_stat_statements' "sticky" entry).
 *		Nothing happens if the entry cannot be made (backstop, out of
 *		shared memory).  Errors: those of pgss_ng_kind_create(); call
 *		under pgss_ng_kind_guard().  Caller attached.
 */
void
pgss_ng_stmt_create(const PgssNgStmtKey *key, const char *text, int len)
{
	StmtInitArg ia = {.text = text, .len = len, .cleaned = true};

	(void) pgss_ng_kind_create(pgss_ng_stmt_kind, key, stmt_init, &ia);
}
