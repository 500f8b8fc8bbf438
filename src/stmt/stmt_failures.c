/*-------------------------------------------------------------------------
 *
 * stmt_failures.c
 *	  Failed executions: the notes the failure frames (hooks/frames.c) take
 *	  while an ERROR is in flight (a static array: no ERROR, no lock; no room
 *	  counts as dropped), and their merge into pending errors and
 *	  error_exec_time counts where it is safe.  docs/design.md, "Failed
 *	  executions".  Owns: the notes (backend-local).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "stmt_failures.h"
#include "stmt_kind.h"
#include "stmt_kind_int.h"

/* Failed executions noted between two merges (more count as dropped). */
#define PGSS_NG_MAX_NOTES		64

bool		pgss_ng_stmt_attention = true;
void		(*pgss_ng_stmt_note_at_exit) (void) = NULL;

static PgssNgFailureNote notes[PGSS_NG_MAX_NOTES];
static int	nnotes = 0;
static int64 notes_lost = 0;	/* failures not noted: no room */

/* the failure note being merged, for the guard's error path */
static PgssNgFailureNote merging;
static bool merging_valid = false;

/*
 * pgss_ng_stmt_add_note
 *		A note for one failed execution, for the caller to fill, or NULL
 *		when there is no room (counted in notes_lost).  Asks for a merge
 *		(pgss_ng_stmt_attention).  Raises nothing, takes no lock.
 */
PgssNgFailureNote *
pgss_ng_stmt_add_note(void)
{
	pgss_ng_stmt_attention = true;
	if (nnotes >= PGSS_NG_MAX_NOTES)
	{
		notes_lost++;
		return NULL;
	}
	return &notes[nnotes++];
}

/*
 * pgss_ng_stmt_count_notes_lost
 *		n failures could not be noted (frames past the stack): the next
 *		merge counts them as dropped.  Raises nothing, takes no lock.
 */
void
pgss_ng_stmt_count_notes_lost(int64 n)
{
	notes_lost += n;
	pgss_ng_stmt_attention = true;
}

/*
 * pgss_ng_stmt_notes_waiting
 *		Whether failures were noted (or lost) since the last merge.
 */
bool
pgss_ng_stmt_notes_waiting(void)
{
	return nnotes > 0 || notes_lost > 0;
}

/*
 * take_note
 *		Move the last note into *note and return true, or return false if
 *		there is none.  The note leaves the array before its taker merges
 *		it, so that an ERROR during the merge cannot merge it twice; the
 *		taker owns (and frees) its text from then on.
 */
static bool
take_note(PgssNgFailureNote *note)
{
	if (nnotes == 0)
		return false;
	*note = notes[--nnotes];
	return true;
}

/*
 * take_notes_lost
 *		The number of failures that found no room since the last call (to
 *		be counted as dropped), and restart that count.
 */
static int64
take_notes_lost(void)
{
	int64		n = notes_lost;

	notes_lost = 0;
	return n;
}

/*
 * merge_note
 *		Add one noted failure to this backend's pending counters, making
 *		the entry if needed (with the noted text, or none); dropped if it
 *		cannot be made.  Errors: those of pgss_ng_stmt_pending_failed(),
 *		under the caller's guard.
 */
static void
merge_note(const PgssNgFailureNote *n)
{
	PgssNgStmtKey key;
	PgssNgPending *p;

	memset(&key, 0, sizeof(key));
	key.userid = n->userid;
	key.dbid = n->dbid;
	key.queryid = n->queryid;
	key.toplevel = n->toplevel;
	p = pgss_ng_stmt_pending_failed(&key, n->text, n->textlen);
	if (p == NULL)
		pgss_ng_stmt_count_dropped(1);
	else
	{
		p->counters.errors += 1;
		p->counters.error_exec_time += n->elapsed_ms;
	}
}

/*
 * merge_errors_guarded
 *		The body of pgss_ng_stmt_merge_errors(), run under
 *		pgss_ng_kind_guard().  Each note is taken out of the
 *		array before it is merged (in merging), so that an ERROR cannot
 *		merge it twice.
 */
static void
merge_errors_guarded(void *arg)
{
	int64		lost;

	if (!pgss_ng_stmt_attach())
		return;
	lost = take_notes_lost();
	if (lost > 0)
		pgss_ng_stmt_count_dropped(lost);
	while (take_note(&merging))
	{
		merging_valid = true;
		merge_note(&merging);
		if (merging.text)
			pfree(merging.text);
		merging_valid = false;
	}
}

/*
 * pgss_ng_stmt_merge_errors
 *		Turn the failed executions noted so far into pending counts: when
 *		the next tracked call opens its frame (flushed at once then), at
 *		every pgss_ng_flush() (the end of each top-level statement, tracked
 *		or not), before a view read or reset of this backend, and at exit.
 *		No ERROR escapes (pgss_ng_kind_guard); a note whose merge raised
 *		one counts as dropped.  Memory: the notes' texts are freed.
 */
void
pgss_ng_stmt_merge_errors(void)
{
	if (!pgss_ng_stmt_notes_waiting())
		return;
	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record failed executions",
							merge_errors_guarded, NULL) &&
		merging_valid)
	{
		merging_valid = false;
		if (merging.text)
			pfree(merging.text);
		pgss_ng_stmt_count_dropped(1);
	}
}

