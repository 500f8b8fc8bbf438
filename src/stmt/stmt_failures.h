/*-------------------------------------------------------------------------
 *
 * stmt_failures.h
 *	  Failed executions (stmt_failures.c): the notes the failure frames
 *	  (hooks/frames.c) fill while an ERROR is in flight, and their merge into
 *	  pending counts.  Backend-local.  docs/design.md, "Failed executions".
 *	  Locking: none for the notes; the merge takes the kind layer's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_FAILURES_H
#define PGSS_NG_STMT_FAILURES_H

/*
 * A failed execution waiting to be merged: the identity of its statement
 * entry, the time it ran until the error (ms), and the statement's own
 * text, copied (TopMemoryContext, allocated without an out-of-memory
 * ERROR: NULL if the copy failed), which its taker frees.
 */
typedef struct PgssNgFailureNote
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	bool		toplevel;
	double		elapsed_ms;
	char	   *text;
	int			textlen;
} PgssNgFailureNote;

/*
 * Set when failures were noted (or lost) since the last merge, and at
 * start (the backend's exit sequence is not registered yet): the hooks
 * then call pgss_ng_stmt_flush_failures() at a statement's start.
 */
extern bool pgss_ng_stmt_attention;

/*
 * Set by the failure frames' init: notes the frames a FATAL left open,
 * the first step of the statement kind's exit sequence.  Raises nothing.
 */
extern void (*pgss_ng_stmt_note_at_exit) (void);

/* noting, while an ERROR is in flight: raise nothing, take no lock */
extern PgssNgFailureNote *pgss_ng_stmt_add_note(void);
extern void pgss_ng_stmt_count_notes_lost(int64 n);

/* the merge, where it is safe */
extern bool pgss_ng_stmt_notes_waiting(void);
extern void pgss_ng_stmt_merge_errors(void);

#endif							/* PGSS_NG_STMT_FAILURES_H */
