/*-------------------------------------------------------------------------
 *
 * measure.c
 *	  What a planning or an execution used: wall time, buffer and WAL
 *	  usage measured around a call (pgss_ng_measure_start/stop, for the
 *	  planner and utility hooks; the executor measures its own), and CPU
 *	  time, pg_stat_kcache's meaning: the user and system time getrusage()
 *	  reports for this backend between the start and the end of a call.
 *	  Owns GUC pgss_ng.track_cpu.
 *
 * An execution is sampled at ExecutorStart and measured at ExecutorEnd;
 * its start sample waits in a CpuStart, allocated in the query's memory
 * context and found again by its QueryDesc.
 *
 * Locking: none; everything here is backend-local.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/ilist.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "measure.h"

/*
 * getrusage() of this thread where the platform has it (Linux), else of
 * the process: a backend is one thread either way.
 */
#ifdef RUSAGE_THREAD
#define PGSS_NG_RUSAGE_WHO	RUSAGE_THREAD
#else
#define PGSS_NG_RUSAGE_WHO	RUSAGE_SELF
#endif

/*
 * CPU time at the start of a tracked execution (ExecutorStart), found
 * again by its QueryDesc at ExecutorEnd.  Allocated in the query's memory
 * context; a reset callback of that context unlinks it, so an execution
 * that ends in an ERROR leaves nothing behind.
 */
typedef struct CpuStart
{
	dlist_node	node;
	QueryDesc  *queryDesc;
	struct rusage start;
	MemoryContextCallback cb;
} CpuStart;

/* the executions being timed, most recent first */
static dlist_head cpu_starts = DLIST_STATIC_INIT(cpu_starts);

/* pgss_ng.track_cpu */
static bool track_cpu = false;

/*
 * pgss_ng_cpu_init
 *		Define pgss_ng.track_cpu (reloadable).  Called from _PG_init.
 */
void
pgss_ng_cpu_init(void)
{
	DefineCustomBoolVariable("pgss_ng.track_cpu",
							 "Selects whether the CPU time of planning and "
							 "execution is tracked by pgss_ng.",
							 NULL,
							 &track_cpu,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

/* Is pgss_ng.track_cpu on? */
bool
pgss_ng_cpu_enabled(void)
{
	return track_cpu;
}

/* Take a sample of this backend's CPU time so far. */
void
pgss_ng_cpu_sample(struct rusage *sample)
{
	getrusage(PGSS_NG_RUSAGE_WHO, sample);
}

/*
 * pgss_ng_cpu_since
 *		The user and system CPU time (ms) this thread used since start,
 *		a getrusage() sample (pg_stat_kcache's meaning).
 */
void
pgss_ng_cpu_since(const struct rusage *start, PgssNgCpuTime *out)
{
	struct rusage now;

	getrusage(PGSS_NG_RUSAGE_WHO, &now);
	out->user_ms = (now.ru_utime.tv_sec - start->ru_utime.tv_sec) * 1000.0 +
		(now.ru_utime.tv_usec - start->ru_utime.tv_usec) / 1000.0;
	out->system_ms = (now.ru_stime.tv_sec - start->ru_stime.tv_sec) * 1000.0 +
		(now.ru_stime.tv_usec - start->ru_stime.tv_usec) / 1000.0;
}

/*
 * cpu_start_forget
 *		Reset callback of a timed execution's query context: unlink its
 *		CpuStart (still linked if the execution never reached
 *		ExecutorEnd, e.g. after an ERROR).
 */
static void
cpu_start_forget(void *arg)
{
	CpuStart   *cs = (CpuStart *) arg;

	if (cs->queryDesc != NULL)
		dlist_delete(&cs->node);
	cs->queryDesc = NULL;
}

/*
 * pgss_ng_cpu_start_take
 *		If the execution was timed, unlink its CpuStart, copy its start
 *		sample into *start and return true; else return false.
 */
bool
pgss_ng_cpu_start_take(QueryDesc *queryDesc, struct rusage *start)
{
	dlist_iter	it;

	dlist_foreach(it, &cpu_starts)
	{
		CpuStart   *cs = dlist_container(CpuStart, node, it.cur);

		if (cs->queryDesc == queryDesc)
		{
			dlist_delete(&cs->node);
			cs->queryDesc = NULL;
			*start = cs->start;
			return true;
		}
	}
	return false;
}

/*
 * pgss_ng_cpu_start_keep
 *		Keep the CPU time sampled before a tracked execution's start-up in
 *		a CpuStart in its query's memory context.  Without memory the
 *		execution's CPU time is not sampled.
 */
void
pgss_ng_cpu_start_keep(QueryDesc *queryDesc, const struct rusage *start)
{
	MemoryContext cxt = queryDesc->estate->es_query_cxt;
	CpuStart   *cs;

	cs = MemoryContextAllocExtended(cxt, sizeof(CpuStart), MCXT_ALLOC_NO_OOM);
	if (cs == NULL)
		return;
	cs->queryDesc = queryDesc;
	cs->start = *start;
	cs->cb.func = cpu_start_forget;
	cs->cb.arg = cs;
	MemoryContextRegisterResetCallback(cxt, &cs->cb);
	dlist_push_head(&cpu_starts, &cs->node);
}

/*
 * pgss_ng_measure_start / pgss_ng_measure_stop
 *		Measure the wall time (ms), buffer and WAL usage of a call made
 *		between them, from the backend's cumulative counters, and its CPU
 *		time when pgss_ng.track_cpu is on at the start.
 */
void
pgss_ng_measure_start(PgssNgMeasure *m)
{
	m->bufusage_start = pgBufferUsage;
	m->walusage_start = pgWalUsage;
	m->cpu_sampled = pgss_ng_cpu_enabled();
	if (m->cpu_sampled)
		pgss_ng_cpu_sample(&m->cpu_start);
	INSTR_TIME_SET_CURRENT(m->start);
}

void
pgss_ng_measure_stop(PgssNgMeasure *m)
{
	instr_time	duration;

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, m->start);
	m->duration_ms = INSTR_TIME_GET_MILLISEC(duration);
	if (m->cpu_sampled)
		pgss_ng_cpu_since(&m->cpu_start, &m->cpu);

	memset(&m->bufusage, 0, sizeof(BufferUsage));
	BufferUsageAccumDiff(&m->bufusage, &pgBufferUsage, &m->bufusage_start);
	memset(&m->walusage, 0, sizeof(WalUsage));
	WalUsageAccumDiff(&m->walusage, &pgWalUsage, &m->walusage_start);
}
