/*-------------------------------------------------------------------------
 *
 * stmt_kind.h
 *	  The statement kind: its key, its counters, and the entry points that
 *	  the hooks (hooks.c), the SQL functions (sqlfuncs.c) and the writer
 *	  (writer.c) use; the stats file's format and the writer's own entry
 *	  points are in stmt_saved.h.  Only the statement kind's files
 *	  interpret the counters (counting, merge, min/max reset, what a
 *	  reader sees, the saved record); the others see a snapshot or call a
 *	  function.
 *
 * Adding a counter
 *	  One line in PGSS_NG_SUM_COUNTERS below (a pg_stat_statements column)
 *	  or PGSS_NG_OWN_COUNTERS (a column of pgss_ng only) gives it a field in
 *	  PgssNgCounters, its merge (a sum), its place in the saved record and
 *	  its output column (in list order: the first list after the exec time
 *	  group, the second at the end of the view); then fill it in
 *	  count_one() (stmt_backend.c) or where it is counted (a value a hook
 *	  measures reaches count_one() as one field of PgssNgStore, set where
 *	  the hook builds it), add the column to the install script, and bump
 *	  PGSS_NG_FILE_VERSION (stmt_saved.h): the saved record changed.
 *
 * Locking: the statement kind's shared data is protected by the entry lock
 * of the kind layer (see kind.h); the info counters by a spinlock of
 * stmt_kind.c.  Nothing declared here takes a lock the caller must hold.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_KIND_H
#define PGSS_NG_STMT_KIND_H

#include "executor/instrument.h"
#include "jit/jit.h"
#include "pgver.h"

#include "hist.h"
#include "kind/kind.h"
#include "plans.h"
#include "qtext.h"
#include "waits.h"

/* What a store call records: a planning or an execution (a "phase"). */
typedef enum PgssNgPhase
{
	PGSS_NG_PLAN = 0,			/* a planning */
	PGSS_NG_EXEC,				/* an execution */
	PGSS_NG_NUMPHASE
} PgssNgPhase;

/*
 * Parallel workers of one execution (PostgreSQL 18 measures them; NULL is
 * passed where there are none to record: planning, utility statements,
 * servers before 18).
 */
typedef struct PgssNgParallelWorkers
{
	int64		to_launch;		/* workers planned */
	int64		launched;		/* workers actually launched */
} PgssNgParallelWorkers;

/* Identity of a statement entry.  Padding must be zero (memcmp'd). */
typedef struct PgssNgStmtKey
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	bool		toplevel;		/* executed at top level */
} PgssNgStmtKey;

/*
 * The counters that simply add up, in output column order (that of
 * pg_stat_statements 1.12, PostgreSQL 18):
 *	  X(name, C type, SQL type, measured)
 * SQL type is INT8, FLOAT8 or NUMERIC (a uint64 shown as numeric);
 * measured is a constant expression, false where this build of the server
 * cannot measure the counter (pgver.h's PGSS_NG_HAVE_*): the column is
 * then NULL, and the field stays 0.  Times are in milliseconds, block
 * counts in blocks, wal_bytes in bytes.  Before PostgreSQL 17,
 * shared_blk_*_time holds the server's combined shared and local block
 * time (pg_stat_statements 1.10's blk_*_time).
 */
#define PGSS_NG_SUM_COUNTERS(X) \
	X(rows, int64, INT8, true) \
	X(shared_blks_hit, int64, INT8, true) \
	X(shared_blks_read, int64, INT8, true) \
	X(shared_blks_dirtied, int64, INT8, true) \
	X(shared_blks_written, int64, INT8, true) \
	X(local_blks_hit, int64, INT8, true) \
	X(local_blks_read, int64, INT8, true) \
	X(local_blks_dirtied, int64, INT8, true) \
	X(local_blks_written, int64, INT8, true) \
	X(temp_blks_read, int64, INT8, true) \
	X(temp_blks_written, int64, INT8, true) \
	X(shared_blk_read_time, double, FLOAT8, true) \
	X(shared_blk_write_time, double, FLOAT8, true) \
	X(local_blk_read_time, double, FLOAT8, PGSS_NG_HAVE_LOCAL_BLK_TIME) \
	X(local_blk_write_time, double, FLOAT8, PGSS_NG_HAVE_LOCAL_BLK_TIME) \
	X(temp_blk_read_time, double, FLOAT8, true) \
	X(temp_blk_write_time, double, FLOAT8, true) \
	X(wal_records, int64, INT8, true) \
	X(wal_fpi, int64, INT8, true) \
	X(wal_bytes, uint64, NUMERIC, true) \
	X(wal_buffers_full, int64, INT8, PGSS_NG_HAVE_WAL_BUFFERS_FULL) \
	X(jit_functions, int64, INT8, true) \
	X(jit_generation_time, double, FLOAT8, true) \
	X(jit_inlining_count, int64, INT8, true) \
	X(jit_inlining_time, double, FLOAT8, true) \
	X(jit_optimization_count, int64, INT8, true) \
	X(jit_optimization_time, double, FLOAT8, true) \
	X(jit_emission_count, int64, INT8, true) \
	X(jit_emission_time, double, FLOAT8, true) \
	X(jit_deform_count, int64, INT8, PGSS_NG_HAVE_JIT_DEFORM) \
	X(jit_deform_time, double, FLOAT8, PGSS_NG_HAVE_JIT_DEFORM) \
	X(parallel_workers_to_launch, int64, INT8, PGSS_NG_HAVE_PARALLEL_WORKERS) \
	X(parallel_workers_launched, int64, INT8, PGSS_NG_HAVE_PARALLEL_WORKERS)

/*
 * The counters that add up and that pg_stat_statements does not have,
 * output after all of its columns (same X arguments):
 *	  errors: executions that ended in an ERROR (or a FATAL), counted by
 *		frames.c and stmt_backend.c; error_exec_time: ms they ran
 *		until then.
 */
#define PGSS_NG_OWN_COUNTERS(X) \
	X(errors, int64, INT8, true) \
	X(error_exec_time, double, FLOAT8, true)

#define PGSS_NG_COUNTER_FIELD(name, ctype, sqltype, measured) ctype name;
#define PGSS_NG_COUNTER_ONE(name, ctype, sqltype, measured) + 1

/* number of counters in PGSS_NG_SUM_COUNTERS */
#define PGSS_NG_NUM_SUM_COUNTERS (0 PGSS_NG_SUM_COUNTERS(PGSS_NG_COUNTER_ONE))
/* number of counters in PGSS_NG_OWN_COUNTERS */
#define PGSS_NG_NUM_OWN_COUNTERS (0 PGSS_NG_OWN_COUNTERS(PGSS_NG_COUNTER_ONE))

/*
 * Counters of one statement, both in shared entries and in pending data:
 * per phase the calls and their times (ms; mean and sum of squared
 * deviations for Welford's method), then the sums, then the CPU time of
 * the calls that were sampled (pgss_ng.track_cpu): how many, and their
 * user and system CPU time in ms.
 */
typedef struct PgssNgCounters
{
	int64		calls[PGSS_NG_NUMPHASE];	/* plans, executions */
	double		total_time[PGSS_NG_NUMPHASE];
	double		min_time[PGSS_NG_NUMPHASE];
	double		max_time[PGSS_NG_NUMPHASE];
	double		mean_time[PGSS_NG_NUMPHASE];
	double		sum_var_time[PGSS_NG_NUMPHASE]; /* sum of squared deviations */
	PGSS_NG_SUM_COUNTERS(PGSS_NG_COUNTER_FIELD)
	PGSS_NG_OWN_COUNTERS(PGSS_NG_COUNTER_FIELD)
	int64		cpu_samples[PGSS_NG_NUMPHASE];	/* calls with CPU time */
	double		user_time[PGSS_NG_NUMPHASE];	/* ms */
	double		system_time[PGSS_NG_NUMPHASE];	/* ms */
} PgssNgCounters;

/*
 * pgss_ng_counters_add_sums
 *		Add the counters of src that add up into dst: per phase the calls,
 *		total time and CPU samples and times, then PGSS_NG_SUM_COUNTERS and
 *		PGSS_NG_OWN_COUNTERS.  Means, squared deviations and min/max are
 *		not touched: they do not add up (pgss_ng_stmt_merge combines them).
 */
static inline void
pgss_ng_counters_add_sums(PgssNgCounters *dst, const PgssNgCounters *src)
{
	for (int k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		dst->calls[k] += src->calls[k];
		dst->total_time[k] += src->total_time[k];
		dst->cpu_samples[k] += src->cpu_samples[k];
		dst->user_time[k] += src->user_time[k];
		dst->system_time[k] += src->system_time[k];
	}
#define PGSS_NG_ADD_SUM(name, ctype, sqltype, measured) dst->name += src->name;
	PGSS_NG_SUM_COUNTERS(PGSS_NG_ADD_SUM)
	PGSS_NG_OWN_COUNTERS(PGSS_NG_ADD_SUM)
#undef PGSS_NG_ADD_SUM
}

/* CPU time of one planning or execution (getrusage), ms */
typedef struct PgssNgCpuTime
{
	double		user_ms;
	double		system_ms;
} PgssNgCpuTime;

/*
 * What one pgss_ng_store() call records, built by a hook with designated
 * initializers (a field left out is 0 or NULL).  The statement is located
 * in its source string by query_location and query_len.  With jstate
 * (parse analysis of a statement with constants) only the entry is made,
 * with the normalized text, and the fields after jstate are not read;
 * otherwise one planning or execution (phase) is counted, with what it
 * used.  A counter fed by a hook is one field here, filled by the hook and
 * read by count_one() (stmt_backend.c).
 */
typedef struct PgssNgStore
{
	const char *query;			/* the source string */
	int			query_location; /* the statement's place in it */
	int			query_len;
	uint64		queryid;
	bool		toplevel;		/* executed at top level */
	JumbleState *jstate;		/* parse analysis only, or NULL */
	PgssNgPhase phase;
	double		total_time;		/* ms */
	uint64		rows;
	const BufferUsage *bufusage;
	const WalUsage *walusage;
	const JitInstrumentation *jitusage; /* or NULL: no JIT */
	const PgssNgParallelWorkers *parallel;	/* or NULL: none measured */
	const PgssNgCpuTime *cpu;	/* or NULL: not sampled */
	uint64		planid;			/* an execution's plan (plans.h), 0: none */
} PgssNgStore;

/* The quantiles shown per phase: p50, p90, p95, p99, p999. */
#define PGSS_NG_NUM_QUANTILES	5
extern const double pgss_ng_quantiles[PGSS_NG_NUM_QUANTILES];

/* The time group of one phase as a reader sees it (ms). */
typedef struct PgssNgTimeStats
{
	int64		calls;
	double		total;
	double		min;
	double		max;
	double		mean;
	double		stddev;			/* population standard deviation */
} PgssNgTimeStats;

/*
 * What a read (pgss_ng_stmt_read) copies besides the key, the counters
 * and the timestamps (flags).
 */
#define PGSS_NG_READ_TEXT		0x01	/* the query text */
#define PGSS_NG_READ_QUANTILES	0x02	/* the time quantiles */

/*
 * A reader's copy of one entry (pgss_ng_stmt_read), valid only during the
 * emit call it is given to.
 */
typedef struct PgssNgStmtSnapshot
{
	PgssNgStmtKey key;
	PgssNgTimeStats times[PGSS_NG_NUMPHASE];
	PgssNgCounters counters;	/* the sums; times are in times[] */
	/*
	 * time quantiles (ms) of pgss_ng_quantiles, NaN when no histogram;
	 * only with PGSS_NG_READ_QUANTILES
	 */
	double		quantiles[PGSS_NG_NUMPHASE][PGSS_NG_NUM_QUANTILES];
	TimestampTz stats_since;	/* entry creation */
	TimestampTz minmax_stats_since; /* creation or last min/max reset */
	TimestampTz last_executed;	/* flush of the last execution, 0: none */
	int			encoding;		/* the text's encoding */
	const text *query;			/* copy of the text (no NUL), or NULL;
								 * NULL without PGSS_NG_READ_TEXT */
	uint64		wait_samples[PGSS_NG_WAIT_NTYPES];	/* per type (waits.h) */
	int64		plans_seen;		/* plan rows made for it (plans.h) */
	TimestampTz last_plan_change;	/* the last one past the first, 0: none */
} PgssNgStmtSnapshot;

/* what pgss_ng_stmt_read calls for each entry */
typedef void (*PgssNgStmtEmitFn) (const PgssNgStmtSnapshot *es, void *arg);

/* A reader's copy of the info counters, as pgss_ng_info shows them. */
typedef struct PgssNgInfoSnapshot
{
	PgssNgKindCounters kind;	/* entries, dealloc, entries_evicted... */
	int64		dropped;		/* plannings/executions not recorded */
	TimestampTz stats_reset;	/* last full reset */
	PgssNgQtextStats qtext;		/* the text arena */
	int64		hist_bytes;		/* the time histograms' chunks */
	int64		hist_dropped;	/* times not kept in a histogram */
	int64		wait_events_dropped;	/* per-event rows dropped (waits.c) */
	int64		wait_samples_lost;	/* wait samples no entry took */
	TimestampTz wait_samples_added;	/* the sampler's last adding, 0: none */
} PgssNgInfoSnapshot;

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

/* the statement kind's handle in the kind layer */
extern PgssNgKind *pgss_ng_stmt_kind;

/* set-up (_PG_init, shared memory hooks): stmt_kind.c */
extern void pgss_ng_stmt_init(void);
extern Size pgss_ng_stmt_shmem_size(void);
extern void pgss_ng_stmt_shmem_request(void);
extern void pgss_ng_stmt_shmem_startup(void);
extern void pgss_ng_stmt_publish_max(void);

/*
 * pgss_ng_stmt_ready
 *		Is the statement kind set up (library preloaded, shared memory
 *		made)?  The hooks record nothing otherwise.
 */
struct PgssNgStmtControl;
extern struct PgssNgStmtControl *pgss_ng_stmt_ctl;

static inline bool
pgss_ng_stmt_ready(void)
{
	return pgss_ng_stmt_ctl != NULL;
}

/* a backend's attachment, with its exit sequence: stmt_backend.c */
extern bool pgss_ng_stmt_attach(void);
extern uint32 pgss_ng_stmt_attached(void);

/* the hooks: stmt_backend.c */
extern void pgss_ng_store(const PgssNgStore *s);
extern void pgss_ng_flush(void);

/* the writer, after a reload: stmt_backend.c */
extern void pgss_ng_stmt_evict(void);

/*
 * failed executions: at a tracked statement's start, when frames.h's
 * pgss_ng_frames_attention asks for it
 */
extern void pgss_ng_stmt_begin(void);

/* the SQL functions: stmt_read.c */
extern void pgss_ng_stmt_read(int what, TimestampTz changed_since,
							  PgssNgStmtEmitFn emit, void *arg);
extern TimestampTz pgss_ng_stmt_reset(Oid userid, Oid dbid, uint64 queryid,
									  bool minmax_only);
extern void pgss_ng_stmt_info(PgssNgInfoSnapshot *out);
extern PgssNgEvictedRow *pgss_ng_evicted_copy(Oid only_userid, int *n);
extern PgssNgEvictionLogEntry *pgss_ng_eviction_log_copy(int *n);
extern bool pgss_ng_stmt_histograms(const PgssNgStmtKey *key,
									PgssNgHistPair *out);

/*
 * pgss_ng_waits' rows of one entry (waits.c): the CPU row (event 0) first
 * if it has CPU samples, then one per wait event kept.
 */
typedef void (*PgssNgWaitsEmitFn) (const PgssNgStmtKey *key,
								   const PgssNgWaitRow *rows, int n,
								   void *arg);
extern void pgss_ng_waits_read(Oid only_userid, PgssNgWaitsEmitFn emit,
							   void *arg);

#endif							/* PGSS_NG_STMT_KIND_H */
