/*-------------------------------------------------------------------------
 *
 * frames.c
 *	  Failed executions of the statement kind, as they happen: the frames
 *	  of the tracked statements in progress and the notes of those that
 *	  failed.  The notes become the errors and error_exec_time counters
 *	  when stmt_backend.c merges them.
 *
 * The hooks (hooks.c) open a *frame* around each call that runs a
 * tracked statement with a queryid (planner, ExecutorStart, ExecutorRun,
 * ExecutorFinish, ProcessUtility), through pgss_ng_stmt_begin(), and close
 * it when the call returns.  A call that ends in an ERROR closes its frame
 * with pgss_ng_stmt_failed() from its PG_CATCH, on the way out: the
 * statement that raised and every enclosing tracked statement the ERROR
 * passes through each note one failed execution.  A FATAL (terminate, lost
 * client connection) jumps to process exit without running the PG_CATCH
 * blocks: the frames still open then are the statements it aborted, noted
 * by the statement kind's exit callback (pgss_ng_stmt_note_open_frames).
 *
 * While an ERROR is in flight nothing here may raise an ERROR or wait for
 * a lock: pgss_ng_stmt_failed() only writes into the static arrays below
 * and copies the statement's text with a no-OOM allocation (the text is
 * needed should the entry have to be made; NULL if the copy fails).  So
 * this file touches no shared memory at all: stmt_backend.c takes the
 * notes (pgss_ng_stmt_take_note) and makes them pending counts where that
 * is safe (see pgss_ng_stmt_merge_errors).  A failure that finds no room
 * is counted in notes_lost, which the merge counts as dropped.
 *
 * Owns: the frame stack and the notes (backend-local, static).
 *
 * Locking: none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "pgver.h"
#include "frames.h"

/* Frames kept (deeper nesting is not recorded: its failures count as
 * dropped). */
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

static StmtFrame frames[PGSS_NG_MAX_FRAMES];
static int	nframes = 0;		/* frames open, even past the array */

static PgssNgFailureNote notes[PGSS_NG_MAX_NOTES];
static int	nnotes = 0;
static int64 notes_lost = 0;	/* failures not noted: no room */

/*
 * pgss_ng_stmt_open_frame
 *		Open a frame for a tracked call of a statement (queryid non-zero):
 *		the source string and the statement's place in it, the run time
 *		it had before this call (ms).  Returns the frame's number, for
 *		pgss_ng_stmt_end() or pgss_ng_stmt_failed().  Called through
 *		pgss_ng_stmt_begin() on the hooks' normal path, never while an
 *		ERROR is in flight.  A frame past PGSS_NG_MAX_FRAMES is counted
 *		but not kept.
 */
int
pgss_ng_stmt_open_frame(uint64 queryid, bool toplevel, const char *query,
						int query_location, int query_len, double prior_ms)
{
	int			frame = nframes++;

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
	PgssNgFailureNote *n;
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
	n->userid = f->userid;
	n->dbid = MyDatabaseId;
	n->queryid = f->queryid;
	n->toplevel = f->toplevel;
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
 * pgss_ng_stmt_note_open_frames
 *		At exit (the statement kind's exit callback): the frames still open
 *		are statements that a FATAL aborted (an ERROR closes its frames on
 *		the way out); note one failed execution for each, innermost first,
 *		and close them.  Raises nothing, takes no lock.
 */
void
pgss_ng_stmt_note_open_frames(void)
{
	int			i;

	for (i = Min(nframes, PGSS_NG_MAX_FRAMES) - 1; i >= 0; i--)
		note_frame(&frames[i]);
	if (nframes > PGSS_NG_MAX_FRAMES)
		notes_lost += nframes - PGSS_NG_MAX_FRAMES;
	nframes = 0;
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
 * pgss_ng_stmt_take_note
 *		Move the last note into *note and return true, or return false if
 *		there is none.  The note leaves the array before its taker merges
 *		it, so that an ERROR during the merge cannot merge it twice; the
 *		taker owns (and frees) its text from then on.
 */
bool
pgss_ng_stmt_take_note(PgssNgFailureNote *note)
{
	if (nnotes == 0)
		return false;
	*note = notes[--nnotes];
	return true;
}

/*
 * pgss_ng_stmt_take_notes_lost
 *		The number of failures that found no room since the last call (to
 *		be counted as dropped), and restart that count.
 */
int64
pgss_ng_stmt_take_notes_lost(void)
{
	int64		n = notes_lost;

	notes_lost = 0;
	return n;
}
