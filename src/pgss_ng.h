/*-------------------------------------------------------------------------
 *
 * pgss_ng.h
 *	  Declarations shared by the statement-tracking parts of pgss_ng: the
 *	  statement kind's key and counters, the GUCs, the hooks' entry point
 *	  into the kind, and the info counters.
 *
 * Locking: the statement kind's shared data is protected by the entry lock
 * of the kind layer (see kind.h); PgssNgInfo by its spinlock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_H
#define PGSS_NG_H

#include "executor/instrument.h"
#include "jit/jit.h"
#include "storage/spin.h"
#include "compat.h"

#include "kind.h"

/* What a store call records. */
typedef enum PgssNgStoreKind
{
	PGSS_NG_INVALID = -1,		/* only create the entry (parse analysis) */
	PGSS_NG_PLAN = 0,			/* a planning */
	PGSS_NG_EXEC,				/* an execution */
	PGSS_NG_NUMKIND
} PgssNgStoreKind;

/* Identity of a statement entry.  Padding must be zero (memcmp'd). */
typedef struct PgssNgStmtKey
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	bool		toplevel;		/* executed at top level */
} PgssNgStmtKey;

/*
 * Counters of one statement, both in shared entries and in pending data.
 * Times are in milliseconds, block counts in blocks, wal_bytes in bytes.
 */
typedef struct PgssNgCounters
{
	int64		calls[PGSS_NG_NUMKIND]; /* plans, executions */
	double		total_time[PGSS_NG_NUMKIND];
	double		min_time[PGSS_NG_NUMKIND];
	double		max_time[PGSS_NG_NUMKIND];
	double		mean_time[PGSS_NG_NUMKIND];
	double		sum_var_time[PGSS_NG_NUMKIND];	/* sum of squared deviations */
	int64		rows;
	int64		shared_blks_hit;
	int64		shared_blks_read;
	int64		shared_blks_dirtied;
	int64		shared_blks_written;
	int64		local_blks_hit;
	int64		local_blks_read;
	int64		local_blks_dirtied;
	int64		local_blks_written;
	int64		temp_blks_read;
	int64		temp_blks_written;
	double		blk_read_time;
	double		blk_write_time;
	double		temp_blk_read_time;
	double		temp_blk_write_time;
	int64		wal_records;
	int64		wal_fpi;
	uint64		wal_bytes;
	int64		jit_functions;
	double		jit_generation_time;
	int64		jit_inlining_count;
	double		jit_inlining_time;
	int64		jit_optimization_count;
	double		jit_optimization_time;
	int64		jit_emission_count;
	double		jit_emission_time;
} PgssNgCounters;

/* Kind data of a shared statement entry. */
typedef struct PgssNgStmtShared
{
	PgssNgCounters counters;
	bool		have_minmax[PGSS_NG_NUMKIND];	/* min/max set since reset */
	dsa_pointer qtext;			/* query text (qtext.c), or InvalidDsaPointer */
	int			encoding;		/* its encoding */
	TimestampTz stats_since;	/* entry creation */
	TimestampTz minmax_stats_since; /* creation or last min/max reset */
	TimestampTz minmax_reset_at;	/* last min/max reset, 0 if none */
} PgssNgStmtShared;

/* Extension-wide counters shown by pgss_ng_info. */
typedef struct PgssNgInfo
{
	slock_t		mutex;
	int64		dropped;		/* plans/executions not recorded */
	TimestampTz stats_reset;	/* last full reset */
	bool		loaded;			/* the writer has read the stats file */
} PgssNgInfo;

/* GUC values */
typedef enum PgssNgTrackLevel
{
	PGSS_NG_TRACK_NONE,
	PGSS_NG_TRACK_TOP,
	PGSS_NG_TRACK_ALL
} PgssNgTrackLevel;

extern int	pgss_ng_max;
extern int	pgss_ng_track;
extern bool pgss_ng_track_utility;
extern bool pgss_ng_track_planning;
extern bool pgss_ng_save;
extern int	pgss_ng_query_text_memory;	/* kB */

/* the statement kind (stmt_kind.c) */
extern PgssNgKind pgss_ng_stmt_kind;
extern PgssNgInfo *pgss_ng_info_shared;

extern Size pgss_ng_stmt_shmem_size(void);
extern void pgss_ng_stmt_shmem_request(void);
extern void pgss_ng_stmt_shmem_startup(void);
extern void pgss_ng_store(const char *query, uint64 queryid,
						  int query_location, int query_len,
						  PgssNgStoreKind kind, bool toplevel,
						  double total_time, uint64 rows,
						  const BufferUsage *bufusage,
						  const WalUsage *walusage,
						  const JitInstrumentation *jitusage,
						  JumbleState *jstate);
extern void pgss_ng_flush(bool force);
extern void pgss_ng_count_dropped(int64 n);

/* persistence (persist.c) */
extern void pgss_ng_register_writer(void);

#endif							/* PGSS_NG_H */
