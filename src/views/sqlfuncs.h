/*-------------------------------------------------------------------------
 *
 * sqlfuncs.h
 *	  The bodies of pgss_ng's reads and reset (sqlfuncs.c, infofuncs.c)
 *	  that pgss_ng_compat's functions (compat/compat_sqlfuncs.c) share,
 *	  and the check that the library is loaded, for every view.
 *
 * Locking: see sqlfuncs.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_SQLFUNCS_H
#define PGSS_NG_SQLFUNCS_H

#include "fmgr.h"
#include "datatype/timestamp.h"

#include "resultcols.h"

/* pgss_ng_views_statements() flags */
#define PGSS_NG_VIEWS_EXECUTED	0x01	/* only entries planned or executed */

extern void pgss_ng_views_check_loaded(void);
extern Datum pgss_ng_views_statements(FunctionCallInfo fcinfo, int flags,
									  const PgssNgColumnAlias *aliases);
extern Datum pgss_ng_views_info(FunctionCallInfo fcinfo);
extern TimestampTz pgss_ng_views_reset(Oid userid, Oid dbid, uint64 queryid,
									   bool minmax_only);

#endif							/* PGSS_NG_SQLFUNCS_H */
