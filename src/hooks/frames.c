/*-------------------------------------------------------------------------
 *
 * frames.c
 *	  Failure frames: the tracked hook calls in progress (pushed and popped
 *	  inline, frames.h) and, when one fails, its note (stmt_failures.h): in
 *	  its hook's PG_CATCH, from the abort callbacks for the calls without a
 *	  PG_TRY (ExecutorStart, ExecutorEnd, planning before 17), or at exit for
 *	  those a FATAL left open.  docs/design.md, "Failed executions".
 *	  Raises nothing, takes no lock, touches no shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "pgver.h"
#include "frames.h"

PgssNgFrame pgss_ng_frames[PGSS_NG_MAX_FRAMES];
int			pgss_ng_nframes = 0;

/*
 * elapsed_ms
 *		How long the call of frame f ran until now (ms), now read here if
 *		needed: an executor call from its execution's totaltime (its
 *		earlier runs, plus the current one from the executor's own start
 *		mark), a timed call from its start, an ExecutorEnd its execution's
 *		run time.
 */
static double
elapsed_ms(const PgssNgFrame *f)
{
	instr_time	now;

	switch ((PgssNgFrameKind) f->kind)
	{
		case PGSS_NG_FRAME_EXEC:
			{
				Instrumentation *t = f->queryDesc->totaltime;
				double		ms = INSTR_TIME_GET_MILLISEC(t->counter);

				if (!INSTR_TIME_IS_ZERO(t->starttime))
				{
					INSTR_TIME_SET_CURRENT(now);
					INSTR_TIME_SUBTRACT(now, t->starttime);
					ms += INSTR_TIME_GET_MILLISEC(now);
				}
				return ms;
			}
		case PGSS_NG_FRAME_TIMED:
		case PGSS_NG_FRAME_PLAN:
		case PGSS_NG_FRAME_START:
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, f->start);
			return INSTR_TIME_GET_MILLISEC(now);
		case PGSS_NG_FRAME_END:
			return f->prior_ms;
	}
	return 0;
}

/*
 * note_frame
 *		Note one failed execution for frame f, now.  Runs while an ERROR is
 *		in flight, in an abort, or at exit: raises nothing, takes no lock.
 *		The text is cut out of the source string (CleanQuerytext() only
 *		moves pointers) and copied with MCXT_ALLOC_NO_OOM.
 */
static void
note_frame(const PgssNgFrame *f)
{
	PgssNgFailureNote *n;
	const char *query;
	const char *text;
	int			location;
	int			len;

	n = pgss_ng_stmt_add_note();
	if (n == NULL)
		return;
	n->userid = f->userid;
	n->dbid = MyDatabaseId;
	n->toplevel = f->toplevel;
	n->elapsed_ms = elapsed_ms(f);
	if (f->kind != PGSS_NG_FRAME_TIMED && f->kind != PGSS_NG_FRAME_PLAN)
	{
		PlannedStmt *pstmt = f->queryDesc->plannedstmt;

		n->queryid = pstmt->queryId;
		query = f->queryDesc->sourceText;
		location = pstmt->stmt_location;
		len = pstmt->stmt_len;
	}
	else
	{
		n->queryid = f->queryid;
		query = f->query;
		location = f->query_location;
		len = f->query_len;
	}

	n->text = NULL;
	n->textlen = 0;
	if (query == NULL)
		return;
	text = CleanQuerytext(query, &location, &len);
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
 * note_above
 *		Note the frames open above frame (calls without a PG_TRY whose
 *		ERROR passed through, innermost first), those past the array as
 *		lost, and close them.
 */
static void
note_above(int frame)
{
	int			i;

	if (pgss_ng_nframes > Max(frame + 1, PGSS_NG_MAX_FRAMES))
		pgss_ng_stmt_count_notes_lost(pgss_ng_nframes -
									  Max(frame + 1, PGSS_NG_MAX_FRAMES));
	for (i = Min(pgss_ng_nframes, PGSS_NG_MAX_FRAMES) - 1; i > frame; i--)
		note_frame(&pgss_ng_frames[i]);
	if (pgss_ng_nframes > frame + 1)
		pgss_ng_nframes = frame + 1;
}

/*
 * pgss_ng_frame_failed
 *		The call of frame ends in an ERROR (called from its hook's PG_CATCH,
 *		before re-throwing): note the frames left open above it, then one
 *		failed execution of its own statement, and close it.  A frame past
 *		PGSS_NG_MAX_FRAMES counts as dropped (at the next merge).  Raises
 *		nothing, takes no lock.
 */
void
pgss_ng_frame_failed(int frame)
{
	note_above(frame);
	if (frame < PGSS_NG_MAX_FRAMES)
		note_frame(&pgss_ng_frames[frame]);
	else
		pgss_ng_stmt_count_notes_lost(1);
	pgss_ng_nframes = frame;
}

/*
 * note_aborted
 *		An abort: note and close, innermost first, the frames of failed
 *		calls without a PG_TRY (PLAN, START, END) opened in subtransaction
 *		subid or later (all: InvalidSubTransactionId); nothing else can be
 *		on top then (design.md, "Failed executions").  Frames past the
 *		array: a transaction's abort counts them as lost, a
 *		subtransaction's leaves them to the calls that opened them.
 */
static void
note_aborted(SubTransactionId subid)
{
	if (pgss_ng_nframes > PGSS_NG_MAX_FRAMES)
	{
		if (subid != InvalidSubTransactionId)
			return;
		pgss_ng_stmt_count_notes_lost(pgss_ng_nframes - PGSS_NG_MAX_FRAMES);
		pgss_ng_nframes = PGSS_NG_MAX_FRAMES;
	}
	while (pgss_ng_nframes > 0)
	{
		PgssNgFrame *f = &pgss_ng_frames[pgss_ng_nframes - 1];

		if (!PGSS_NG_FRAME_ABORT_NOTED(f->kind) ||
			(subid != InvalidSubTransactionId && f->subid < subid))
			break;
		note_frame(f);
		pgss_ng_nframes--;
	}
}

/*
 * xact_callback / subxact_callback
 *		The abort callbacks: a transaction's or subtransaction's abort
 *		notes the calls without a PG_TRY it left open (note_aborted).
 *		Every other event returns at once.
 */
static void
xact_callback(XactEvent event, void *arg)
{
	if (unlikely(event == XACT_EVENT_ABORT) && pgss_ng_nframes > 0)
		note_aborted(InvalidSubTransactionId);
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && pgss_ng_nframes > 0)
		note_aborted(mySubid);
}

/*
 * pgss_ng_frames_init
 *		Register the abort callbacks (from _PG_init, when preloaded: every
 *		backend inherits them).
 */
void
pgss_ng_frames_init(void)
{
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
	pgss_ng_stmt_note_at_exit = pgss_ng_frames_note_open;
}

/*
 * pgss_ng_frames_note_open
 *		At exit (the statement kind's exit callback): the frames still open
 *		are statements that a FATAL aborted (an ERROR closes its frames on
 *		the way out); note one failed execution for each, innermost first,
 *		and close them.  Raises nothing, takes no lock.
 */
void
pgss_ng_frames_note_open(void)
{
	int			i;

	for (i = Min(pgss_ng_nframes, PGSS_NG_MAX_FRAMES) - 1; i >= 0; i--)
		note_frame(&pgss_ng_frames[i]);
	if (pgss_ng_nframes > PGSS_NG_MAX_FRAMES)
		pgss_ng_stmt_count_notes_lost(pgss_ng_nframes - PGSS_NG_MAX_FRAMES);
	pgss_ng_nframes = 0;
}
