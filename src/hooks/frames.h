/*-------------------------------------------------------------------------
 *
 * frames.h
 *	  Failure frames and notes (frames.c): the tracked statements in
 *	  progress in the hooks, and the failed executions noted while an
 *	  ERROR is in flight, waiting to become pending counts.  Backend-local;
 *	  knows nothing of shared memory or of the kind layer: stmt_backend.c
 *	  opens the frames (pgss_ng_stmt_begin) and merges the notes.
 *
 * Locking: none.  Nothing declared here takes a lock, waits or raises an
 * ERROR.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_ERRORS_H
#define PGSS_NG_STMT_ERRORS_H

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

/* frames, from the hooks (through pgss_ng_stmt_begin for the opening) */
extern int	pgss_ng_stmt_open_frame(uint64 queryid, bool toplevel,
									const char *query, int query_location,
									int query_len, double prior_ms);
extern void pgss_ng_stmt_end(int frame);
extern void pgss_ng_stmt_failed(int frame);

/* at exit: the frames still open are statements a FATAL aborted */
extern void pgss_ng_stmt_note_open_frames(void);

/* the notes, for their merge (stmt_backend.c) */
extern bool pgss_ng_stmt_notes_waiting(void);
extern bool pgss_ng_stmt_take_note(PgssNgFailureNote *note);
extern int64 pgss_ng_stmt_take_notes_lost(void);

#endif							/* PGSS_NG_STMT_ERRORS_H */
