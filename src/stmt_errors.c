/*-------------------------------------------------------------------------
 *
 * stmt_errors.c
 *	  Failed executions of the statement kind: the errors and
 *	  error_exec_time counters.  Part of the statement kind (with
 *	  stmt_kind.c and stmt_kind_io.c; they share stmt_kind_int.h).
 *
 * The hooks (pgss_ng.c) open a *frame* around each call that runs a
 * tracked statement with a queryid (planner, ExecutorStart, ExecutorRun,
 * ExecutorFinish, ProcessUtility) and close it when the call returns.  A
 * call that ends in an ERROR closes its frame with pgss_ng_stmt_failed()
 * from its PG_CATCH, on the way out: the statement that raised and every
 * enclosing tracked statement the ERROR passes through each note one
 * failed execution.  A FATAL (terminate, lost client connection) jumps
 * to process exit without running the PG_CATCH blocks: the frames still
 * open then are the statements it aborted, noted at exit.
 *
 * While an ERROR is in flight nothing here may raise an ERROR or wait for
 * a lock: pgss_ng_stmt_failed() only writes into the static arrays below
 * and copies the statement's text with a no-OOM allocation (the text is
 * needed should the entry have to be made; NULL if the copy fails).  The
 * notes become pending counts in pgss_ng_stmt_merge_errors(), where that
 * is safe: when the next tracked call opens its frame (so a session whose
 * statements all fail, or a loop catching errors, does not fill the
 * notes), at every pgss_ng_flush() (the end of each top-level statement,
 * tracked or not), before a view read or reset of this backend, and at
 * exit (a before_shmem_exit callback that runs before the kind layer's
 * exit flush).  A note that finds no room, or whose entry cannot be
 * made, counts in dropped.
 *
 * Owns: the frame stack and the notes (backend-local, static).
 *
 * Locking: none while noting.  Merging takes what pgss_ng_stmt_pending()
 * takes (partition lock, alloc lock for a creation past max) and the info
 * spinlock, under pgss_ng_kind_guard().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "stmt_kind.h"
#include "stmt_kind_int.h"

/* Frames kept (deeper nesting is not recorded: its failures drop). */
#define PGSS_NG_MAX_FRAMES		64

/* Failed executions noted between two merges (more count as dropped). */
#define PGSS_NG_MAX_NOTES		64

/* A tracked statement in progress in one of the hooks. */
typedef struct StmtFrame
{
	uint64		queryid;
	Oid			userid;			/* at the call's start (a SECURITY DEFINER
								 * function's ERROR leaves the user set) */
	bool		toplevel;
	const char *query;			/* source string, valid during the call */
	int			query_location;
	int			query_len;
	double		prior_ms;		/* run time before this call (a cursor's
								 * earlier fetches), ms */
	instr_time	start;			/* the call's start */
} StmtFrame;

/* A failed execution waiting to be merged. */
typedef struct StmtNote
{
	PgssNgStmtKey key;
	double		elapsed_ms;		/* time it ran until the error */
	char	   *text;			/* the statement's text (TopMemoryContext,
								 * no-OOM), NULL if it could not be copied */
	int			textlen;
} StmtNote;

static StmtFrame frames[PGSS_NG_MAX_FRAMES];
static int	nframes = 0;		/* frames open, even past the array */

static StmtNote notes[PGSS_NG_MAX_NOTES];
static int	nnotes = 0;
static int64 notes_lost = 0;	/* failures not noted: no room */

/* the note being merged, for the guard's error path */
static StmtNote merging;
static bool merging_valid = false;

static bool exit_registered = false;

/*
 * attach_internal
 *		Guarded function of pgss_ng_stmt_begin(): attach this backend.
 */
static void
attach_internal(void *arg)
{
	(void) pgss_ng_stmt_attach();
}

/*
 * pgss_ng_stmt_begin
 *		Open a frame for a tracked call of a statement (queryid non-zero):
 *		the source string and the statement's place in it, the run time
 *		it had before this call (ms).  Returns the frame's number, for
 *		pgss_ng_stmt_end() or pgss_ng_stmt_failed().  Called on the
 *		hooks' normal path only, never while an ERROR is in flight.
 *
 * The first call in a backend attaches it (under pgss_ng_kind_guard, so
 * no ERROR escapes), so that the exit callback is there should a FATAL
 * end its very first statement.  Failures noted since the last merge are
 * merged first (pgss_ng_stmt_merge_errors: guarded, may take the locks of
 * a store); otherwise it takes no lock and raises nothing.
 */
int
pgss_ng_stmt_begin(uint64 queryid, bool toplevel, const char *query,
				   int query_location, int query_len, double prior_ms)
{
	int			frame;

	if (unlikely(!exit_registered))
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "attach",
								  attach_internal, NULL);
	if (unlikely(nnotes > 0 || notes_lost > 0))
		pgss_ng_stmt_merge_errors();
	frame = nframes++;

	if (frame < PGSS_NG_MAX_FRAMES)
	{
		StmtFrame  *f = &frames[frame];

		f->queryid = queryid;
		f->userid = GetUserId();
		f->toplevel = toplevel;
		f->query = query;
		f->query_location = query_location;
		f->query_len = query_len;
		f->prior_ms = prior_ms;
		INSTR_TIME_SET_CURRENT(f->start);
	}
	return frame;
}

/*
 * pgss_ng_stmt_end
 *		The call of frame returned normally: close it (and any frame above
 *		it).
 */
void
pgss_ng_stmt_end(int frame)
{
	nframes = frame;
}

/*
 * note_frame
 *		Note one failed execution for frame f, now.  Runs while an ERROR is
 *		in flight, or at exit: raises nothing, takes no lock.  The text is
 *		cut out of the source string (CleanQuerytext() only moves pointers)
 *		and copied with MCXT_ALLOC_NO_OOM.
 */
static void
note_frame(const StmtFrame *f)
{
	StmtNote   *n;
	instr_time	now;
	const char *text;
	int			location = f->query_location;
	int			len = f->query_len;

	if (nnotes >= PGSS_NG_MAX_NOTES)
	{
		notes_lost++;
		return;
	}
	n = &notes[nnotes++];
	memset(&n->key, 0, sizeof(n->key));
	n->key.userid = f->userid;
	n->key.dbid = MyDatabaseId;
	n->key.queryid = f->queryid;
	n->key.toplevel = f->toplevel;
	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, f->start);
	n->elapsed_ms = f->prior_ms + INSTR_TIME_GET_MILLISEC(now);

	n->text = NULL;
	n->textlen = 0;
	if (f->query == NULL)
		return;
	text = CleanQuerytext(f->query, &location, &len);
	if (len < 0 || (Size) len >= MaxAllocSize)
		return;
	n->text = MemoryContextAllocExtended(TopMemoryContext, len + 1,
										 MCXT_ALLOC_NO_OOM);
	if (n->text == NULL)
		return;
	memcpy(n->text, text, len);
	n->text[len] = '\0';
	n->textlen = len;
}

/*
 * pgss_ng_stmt_failed
 *		The call of frame ends in an ERROR (called from its PG_CATCH, before
 *		re-throwing): note one failed execution of its statement, with the
 *		time since the call began plus the run time before it, and close
 *		the frame.  A frame past PGSS_NG_MAX_FRAMES counts as dropped (at
 *		the next merge).  Raises nothing, takes no lock.
 */
void
pgss_ng_stmt_failed(int frame)
{
	if (frame < PGSS_NG_MAX_FRAMES)
		note_frame(&frames[frame]);
	else
		notes_lost++;
	nframes = frame;
}

/*
 * merge_note
 *		Add one noted failure to this backend's pending counters, making
 *		the entry if needed (with the noted text, or none); dropped if it
 *		cannot be made.  Frees the text.  Errors: those of
 *		pgss_ng_stmt_pending(), under the caller's guard.
 */
static void
merge_note(StmtNote *n)
{
	PgssNgCounters *c;

	c = pgss_ng_stmt_pending(&n->key, n->text, 0, n->textlen, true);
	if (c == NULL)
		pgss_ng_stmt_count_dropped(1);
	else
	{
		c->errors += 1;
		c->error_exec_time += n->elapsed_ms;
	}
}

/*
 * merge_errors_internal
 *		The body of pgss_ng_stmt_merge_errors(), run under
 *		pgss_ng_kind_guard().  Each note leaves the array before it is
 *		merged (in merging), so that an ERROR cannot merge it twice.
 */
static void
merge_errors_internal(void *arg)
{
	if (!pgss_ng_stmt_attach())
		return;
	if (notes_lost > 0)
	{
		pgss_ng_stmt_count_dropped(notes_lost);
		notes_lost = 0;
	}
	while (nnotes > 0)
	{
		merging = notes[--nnotes];
		merging_valid = true;
		merge_note(&merging);
		if (merging.text)
			pfree(merging.text);
		merging_valid = false;
	}
}

/*
 * pgss_ng_stmt_merge_errors
 *		Turn the failed executions noted so far into pending counts (see the
 *		file header for when).  No ERROR escapes (pgss_ng_kind_guard); a
 *		note whose merge raised one counts as dropped.  Memory: the notes'
 *		texts are freed.
 */
void
pgss_ng_stmt_merge_errors(void)
{
	if (nnotes == 0 && notes_lost == 0)
		return;
	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record failed executions",
							merge_errors_internal, NULL) &&
		merging_valid)
	{
		merging_valid = false;
		if (merging.text)
			pfree(merging.text);
		pgss_ng_stmt_count_dropped(1);
	}
}

/*
 * stmt_errors_exit
 *		before_shmem_exit callback, run before the kind layer's exit flush
 *		(registered after it): the frames still open are statements that a
 *		FATAL aborted (an ERROR closes its frames on the way out); note
 *		them, and merge everything noted, which the exit flush then
 *		flushes.
 */
static void
stmt_errors_exit(int code, Datum arg)
{
	int			i;

	for (i = Min(nframes, PGSS_NG_MAX_FRAMES) - 1; i >= 0; i--)
		note_frame(&frames[i]);
	if (nframes > PGSS_NG_MAX_FRAMES)
		notes_lost += nframes - PGSS_NG_MAX_FRAMES;
	nframes = 0;
	pgss_ng_stmt_merge_errors();
}

/*
 * pgss_ng_stmt_errors_attached
 *		Called once this backend is attached to the kind, after the layer
 *		registered its exit flush: register stmt_errors_exit so that it
 *		runs before that flush (callbacks run last-in first-out).
 */
void
pgss_ng_stmt_errors_attached(void)
{
	if (exit_registered)
		return;
	before_shmem_exit(stmt_errors_exit, (Datum) 0);
	exit_registered = true;
}
