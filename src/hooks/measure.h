/*-------------------------------------------------------------------------
 *
 * measure.h
 *	  What a planning or an execution used, measured for the hooks
 *	  (measure.c): wall time, buffer and WAL usage around a call, and CPU
 *	  time (pgss_ng.track_cpu) from getrusage(), a backend's own and its
 *	  parallel workers' (added to their leader's slot, atomically).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_MEASURE_H
#define PGSS_NG_MEASURE_H

#include "executor/execdesc.h"
#include "executor/instrument.h"

#include "stmt/stmt_counters.h"

/*
 * What a planning or utility statement used, measured around the
 * call (pgss_ng_measure_start, pgss_ng_measure_stop): start values, then the
 * differences.  Times in ms.
 */
typedef struct PgssNgMeasure
{
	instr_time	start;
	BufferUsage bufusage_start;
	WalUsage	walusage_start;
	double		duration_ms;
	BufferUsage bufusage;
	WalUsage	walusage;
	bool		cpu_sampled;	/* pgss_ng.track_cpu was on at the start */
	PgssNgCpuTime cpu_start;	/* the CPU clock then */
	PgssNgCpuTime cpu;			/* valid if cpu_sampled */
} PgssNgMeasure;

/*
 * The CPU time of an execution whose ExecutorEnd is running: what it had
 * counted before, and since when it is counting (pgss_ng_cpu_exec_ending).
 */
typedef struct PgssNgCpuEnding
{
	PgssNgCpuTime counted;
	PgssNgCpuTime since;
} PgssNgCpuEnding;

extern void pgss_ng_measure_start(PgssNgMeasure *m);
extern void pgss_ng_measure_stop(PgssNgMeasure *m);

extern void pgss_ng_cpu_init(void);
extern Size pgss_ng_cpu_shmem_size(void);
extern void pgss_ng_cpu_shmem_startup(void);

/* pgss_ng.track_cpu, and the executions being timed (measure.c) */
extern bool pgss_ng_track_cpu;
extern int	pgss_ng_cpu_nruns;

/* Is pgss_ng.track_cpu on? */
static inline bool
pgss_ng_cpu_enabled(void)
{
	return pgss_ng_track_cpu;
}

/*
 * pgss_ng_cpu_timing
 *		Are executions being timed (track_cpu on now or when they started)?
 *		Without, the hooks skip every CPU call below.
 */
static inline bool
pgss_ng_cpu_timing(void)
{
	return pgss_ng_cpu_nruns > 0;
}

/* an execution's CPU time, from the executor hooks of the backend */
extern void pgss_ng_cpu_exec_starting(PgssNgCpuTime *start);
extern void pgss_ng_cpu_exec_started(QueryDesc *queryDesc,
									 const PgssNgCpuTime *start);
extern void pgss_ng_cpu_exec_enter(QueryDesc *queryDesc);
extern void pgss_ng_cpu_exec_leave(QueryDesc *queryDesc);
extern bool pgss_ng_cpu_exec_ending(QueryDesc *queryDesc,
									PgssNgCpuEnding *ending);
extern void pgss_ng_cpu_exec_ended(const PgssNgCpuEnding *ending,
								   PgssNgCpuTime *out);
extern void pgss_ng_cpu_stop_idle(void);

/*
 * pgss_ng_cpu_other_call
 *		A hook call of a statement that is not timed here begins: stop the
 *		idle runs (pgss_ng_cpu_stop_idle), if executions are timed at all.
 */
static inline void
pgss_ng_cpu_other_call(void)
{
	if (unlikely(pgss_ng_cpu_timing()))
		pgss_ng_cpu_stop_idle();
}

/* a parallel worker's CPU time, added to its leader's slot */
extern void pgss_ng_cpu_worker_start(QueryDesc *queryDesc);
extern void pgss_ng_cpu_worker_end(QueryDesc *queryDesc);

#endif							/* PGSS_NG_MEASURE_H */
