/*-------------------------------------------------------------------------
 *
 * stmt_counters.h
 *	  The statement kind's counters: phases, the X-macro lists of counters
 *	  that add up, PgssNgCounters and their sum, a call's CPU time.  A leaf
 *	  (only pgver.h), for measure.h.  Adding a counter: one X line, counted in
 *	  count_one() (stmt_backend.c), a column in a new SQL version and a bumped
 *	  PGSS_NG_FILE_VERSION: docs/design.md, "Adding a counter".
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_COUNTERS_H
#define PGSS_NG_STMT_COUNTERS_H

#include "pgver.h"

/* What one call records: a planning or an execution (a "phase"). */
typedef enum PgssNgPhase
{
	PGSS_NG_PHASE_PLAN = 0,			/* a planning */
	PGSS_NG_PHASE_EXEC,				/* an execution */
	PGSS_NG_NUMPHASE
} PgssNgPhase;

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

#endif							/* PGSS_NG_STMT_COUNTERS_H */
