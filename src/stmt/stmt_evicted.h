/*-------------------------------------------------------------------------
 *
 * stmt_evicted.h
 *	  The evicted remainder and the eviction log (stmt_evicted.c), for the
 *	  statement kind's eviction, reset, save and restore, and the SQL
 *	  functions' copies.  docs/design.md, "Evicted remainder".
 *	  Locking: see stmt_evicted.c; the caller holds none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_EVICTED_H
#define PGSS_NG_STMT_EVICTED_H

#include "datatype/timestamp.h"

#include "stmt_counters.h"
#include "stmt_kind.h"
#include "stmt_reset.h"
#include "waits.h"

/*
 * One row of the evicted remainder (stmt_evicted.c): the sums of the
 * counters that add up over the entries of (userid, dbid, toplevel)
 * evicted since the row was made (key.queryid 0; an overflow row has
 * userid and dbid InvalidOid), how many there were and when the row was
 * made.  Of counters, only calls, total_time, the sums and the CPU fields
 * are set; then the wait samples per type.  Also the stats file's record
 * of a row (stmt_saved.h).
 */
typedef struct PgssNgEvictedRow
{
	PgssNgStmtKey key;			/* hash key: keep first */
	int64		entries;		/* entries folded in */
	TimestampTz evicted_since;	/* when the first was */
	PgssNgCounters counters;
	uint64		wait_samples[PGSS_NG_WAIT_NTYPES];
} PgssNgEvictedRow;

/* Bytes of an evicted entry's text kept in the eviction log, at most. */
#define PGSS_NG_EVICTION_LOG_TEXT	256

/*
 * One entry of the eviction log (stmt_evicted.c): an evicted entry's key,
 * the start of its text (qlen bytes, -1: it had none; maybe ending inside
 * a character until pgss_ng_eviction_log_copy() cuts it), its execution
 * calls and time (ms), creation and eviction times.
 */
typedef struct PgssNgEvictionLogEntry
{
	PgssNgStmtKey key;
	int32		encoding;		/* the text's */
	int32		qlen;
	int64		calls;
	double		total_exec_time;
	TimestampTz stats_since;
	TimestampTz evicted_at;
	char		query[PGSS_NG_EVICTION_LOG_TEXT];
} PgssNgEvictionLogEntry;

/* set-up (_PG_init, shared memory hooks) */
extern void pgss_ng_evicted_init(void);
extern void pgss_ng_evicted_shmem_request(void);
extern Size pgss_ng_evicted_shmem_size(void);
extern void pgss_ng_evicted_shmem_startup(void);

/* the statement kind's eviction, reset and restore */
extern void pgss_ng_evicted_fold(const PgssNgStmtKey *key,
								 const PgssNgCounters *c,
								 const uint32 *wait_samples, int64 entries,
								 const PgssNgEvictionLogEntry *log);
extern bool pgss_ng_eviction_log_on(void);
extern void pgss_ng_evicted_clear(Oid userid, Oid dbid);
extern void pgss_ng_eviction_log_remove(const PgssNgResetFilter *f);
extern void pgss_ng_evicted_restore(const PgssNgEvictedRow *saved);

/* the SQL functions: palloc'd copies */
extern PgssNgEvictedRow *pgss_ng_evicted_copy(Oid only_userid, int *n);
extern PgssNgEvictionLogEntry *pgss_ng_eviction_log_copy(int *n);

#endif							/* PGSS_NG_STMT_EVICTED_H */
