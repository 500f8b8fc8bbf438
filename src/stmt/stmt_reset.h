/*-------------------------------------------------------------------------
 *
 * stmt_reset.h
 *	  The reset of statement entries (stmt_reset.c): pgss_ng_reset's filter,
 *	  and the reset itself, for the SQL functions.  docs/design.md, "Resets".
 *	  Locking: see stmt_reset.c; the caller holds none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_RESET_H
#define PGSS_NG_STMT_RESET_H

#include "datatype/timestamp.h"

#include "stmt_kind.h"

/*
 * What a reset removes (pgss_ng_reset's arguments): entries whose key
 * matches, 0 (InvalidOid) matching any.
 */
typedef struct PgssNgResetFilter
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
} PgssNgResetFilter;

/*
 * stmt_reset_match
 *		Does a reset with filter f remove the entry of key?
 */
static inline bool
stmt_reset_match(const PgssNgResetFilter *f, const PgssNgStmtKey *key)
{
	return (f->userid == InvalidOid || key->userid == f->userid) &&
		(f->dbid == InvalidOid || key->dbid == f->dbid) &&
		(f->queryid == UINT64CONST(0) || key->queryid == f->queryid);
}

extern TimestampTz pgss_ng_stmt_reset(Oid userid, Oid dbid, uint64 queryid,
									  bool minmax_only);

#endif							/* PGSS_NG_STMT_RESET_H */
