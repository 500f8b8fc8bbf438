/*-------------------------------------------------------------------------
 *
 * normalize.h
 *	  Build the normalized text of one statement: its own part of the
 *	  source string, with every constant that query jumbling recorded
 *	  replaced by a $n parameter symbol.
 *
 * Locking: none; pure backend-local computation.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_NORMALIZE_H
#define PGSS_NG_NORMALIZE_H

#include "pgver.h"

/*
 * pgss_ng_normalize_query
 *		The normalized text of the statement at query (cut by
 *		CleanQuerytext(): query_len bytes, at byte offset query_loc in the
 *		source string that jstate's locations count from), palloc'd in
 *		CurrentMemoryContext, NUL-terminated; *query_len is set to its
 *		length.  Sorts jstate->clocations and fills their lengths.
 */
extern char *pgss_ng_normalize_query(JumbleState *jstate, const char *query,
									 int query_loc, int *query_len);

#endif							/* PGSS_NG_NORMALIZE_H */
