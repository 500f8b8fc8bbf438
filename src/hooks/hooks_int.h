/*-------------------------------------------------------------------------
 *
 * hooks_int.h
 *	  What hooks.c and hooks_exec.c share: pgss_ng.track, the executor's
 *	  nesting level, and when a statement at a level is tracked.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_HOOKS_INT_H
#define PGSS_NG_HOOKS_INT_H

#include "access/parallel.h"

#include "frames.h"
#include "stmt/stmt_kind.h"

/* Values of pgss_ng.track */
typedef enum PgssNgTrackLevel
{
	PGSS_NG_TRACK_NONE,
	PGSS_NG_TRACK_TOP,
	PGSS_NG_TRACK_ALL
} PgssNgTrackLevel;

/* pgss_ng.track (hooks.c) */
extern int	pgss_ng_track;

/* Nesting depth of executor / utility calls (hooks.c) */
extern int	pgss_ng_exec_nested_level;

/* Is a statement at this nesting level tracked? */
#define pgss_ng_enabled(level) \
	(!IsParallelWorker() && \
	 (pgss_ng_track == PGSS_NG_TRACK_ALL || \
	  (pgss_ng_track == PGSS_NG_TRACK_TOP && (level) == 0)))

/*
 * pgss_ng_hooks_stmt_start
 *		At the start of a tracked statement's call: the first of the
 *		backend, or the first after failures were noted, goes through
 *		pgss_ng_stmt_flush_failures() (exit sequence, merge of the notes).
 */
static inline void
pgss_ng_hooks_stmt_start(void)
{
	if (unlikely(pgss_ng_stmt_attention))
		pgss_ng_stmt_flush_failures();
}

/* hooks_exec.c */
extern void pgss_ng_exec_hooks_init(void);

#endif							/* PGSS_NG_HOOKS_INT_H */
