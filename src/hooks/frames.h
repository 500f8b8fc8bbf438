/*-------------------------------------------------------------------------
 *
 * frames.h
 *	  Failure frames (frames.c): the tracked hook calls in progress, pushed
 *	  and popped inline (a few writes: no clock read, no call).
 *	  Backend-local, nothing of shared memory or of the kind layer.
 *	  docs/design.md, "Failed executions".  Locking: none; nothing here
 *	  takes a lock, waits or raises an ERROR.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_FRAMES_H
#define PGSS_NG_FRAMES_H

#include "access/xact.h"
#include "executor/execdesc.h"
#include "miscadmin.h"
#include "portability/instr_time.h"

#include "stmt/stmt_failures.h"

/* Frames kept (deeper ones are not recorded: their failures count as
 * dropped). */
#define PGSS_NG_MAX_FRAMES		64

/*
 * What a frame is the call of: where its failure is noted (its hook's
 * PG_CATCH, or the abort callbacks: PGSS_NG_FRAME_ABORT_NOTED) and how long
 * it ran until then.  The executor's frames (EXEC, START, END) find their
 * statement through their QueryDesc, which outlives the abort callbacks.
 */
typedef enum PgssNgFrameKind
{
	PGSS_NG_FRAME_EXEC,			/* ExecutorRun or ExecutorFinish: PG_CATCH;
								 * the run time so far from its totaltime,
								 * earlier runs included */
	PGSS_NG_FRAME_TIMED,		/* planning with a PG_TRY (17 and later) or
								 * a utility statement: PG_CATCH; the time
								 * since start */
	PGSS_NG_FRAME_PLAN,			/* planning without a PG_TRY (before 17):
								 * the abort callback (or an enclosing
								 * frame's PG_CATCH); the time since start */
	PGSS_NG_FRAME_START,		/* ExecutorStart: as PLAN */
	PGSS_NG_FRAME_END			/* ExecutorEnd: as PLAN; the execution's
								 * run time (prior_ms) */
} PgssNgFrameKind;

/* frames noted by the abort callbacks: no PG_TRY in their hook */
#define PGSS_NG_FRAME_ABORT_NOTED(kind) ((kind) >= PGSS_NG_FRAME_PLAN)

/* A tracked hook call in progress. */
typedef struct PgssNgFrame
{
	uint8		kind;			/* PgssNgFrameKind */
	bool		toplevel;
	Oid			userid;			/* at the call's start (a SECURITY DEFINER
								 * function's ERROR leaves the user set) */
	SubTransactionId subid;		/* PLAN, START, END: the subtransaction */
	QueryDesc  *queryDesc;		/* EXEC, START, END: the statement */
	/* TIMED, PLAN: */
	uint64		queryid;
	const char *query;			/* source string, valid during the call */
	int			query_location;
	int			query_len;
	instr_time	start;			/* TIMED, PLAN, START: the call's start */
	double		prior_ms;		/* END: the execution's run time, ms */
} PgssNgFrame;

/* the frame stack (frames.c): frames open, even past the array */
extern PgssNgFrame pgss_ng_frames[PGSS_NG_MAX_FRAMES];
extern int	pgss_ng_nframes;

/*
 * pgss_ng_frame_push
 *		Open a frame of kind for a tracked call; returns its number, for
 *		pgss_ng_frame_pop() or pgss_ng_frame_failed(), and sets *f to the
 *		frame to fill (NULL past PGSS_NG_MAX_FRAMES: counted, not kept).
 *		No ERROR.
 */
static inline int
pgss_ng_frame_push(PgssNgFrame **f, PgssNgFrameKind kind, bool toplevel)
{
	int			n = pgss_ng_nframes++;

	if (unlikely(n >= PGSS_NG_MAX_FRAMES))
	{
		*f = NULL;
		return n;
	}
	*f = &pgss_ng_frames[n];
	(*f)->kind = kind;
	(*f)->toplevel = toplevel;
	(*f)->userid = GetUserId();
	return n;
}

/*
 * pgss_ng_frame_pop
 *		The call of frame returned normally: close it (and any frame above
 *		it).
 */
static inline void
pgss_ng_frame_pop(int frame)
{
	pgss_ng_nframes = frame;
}

/* in a hook's PG_CATCH: the call of frame ends in an ERROR */
extern void pgss_ng_frame_failed(int frame);

/* abort callbacks (from _PG_init) and, at exit, what a FATAL left open */
extern void pgss_ng_frames_init(void);
extern void pgss_ng_frames_note_open(void);

#endif							/* PGSS_NG_FRAMES_H */
