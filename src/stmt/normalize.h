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
 *
 * query      the statement's own text, already cut by CleanQuerytext():
 *            it starts at the statement's first byte; the source string may
 *            continue past query_len (other statements of a multi-statement
 *            string follow), but only query_len bytes belong to this one.
 * query_loc  byte offset of the statement inside the whole source string
 *            (JumbleState locations are relative to the whole string).
 * query_len  in: length of the statement in bytes; out: length of the
 *            returned normalized text in bytes (not counting the NUL).
 *
 * Returns a palloc'd NUL-terminated string in CurrentMemoryContext.
 * jstate->clocations is sorted in place and its lengths filled in.
 */
extern char *pgss_ng_normalize_query(JumbleState *jstate, const char *query,
									 int query_loc, int *query_len);

#endif							/* PGSS_NG_NORMALIZE_H */
