/*-------------------------------------------------------------------------
 *
 * measure.c
 *	  What a planning or an execution used: wall time, buffer and WAL usage
 *	  around a call (the executor measures its own), and CPU time from
 *	  getrusage(), counted only while the executor runs the execution (an
 *	  idle run stopped by another statement's next hook call), plus what its
 *	  parallel workers add to their leader's slot (atomics).  Owns GUC
 *	  pgss_ng.track_cpu and the slots.  docs/design.md, "CPU time".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/resource.h>

#include "lib/ilist.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "pgver.h"
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
 * The CPU time of one tracked execution being timed.  It is counting from
 * since while counting; counted holds what it counted before.  "Idle":
 * counting but outside its executor calls (see the file header).  A reset
 * callback of its query's memory context unlinks it, so an execution that
 * ends in an ERROR leaves nothing behind.
 */
typedef struct CpuRun
{
	dlist_node	node;
	QueryDesc  *queryDesc;		/* NULL once unlinked */
	bool		counting;
	bool		in_call;		/* one of its executor calls is running */
	PgssNgCpuTime since;		/* the CPU clock when it started counting */
	PgssNgCpuTime counted;		/* ms counted before that */
	MemoryContextCallback cb;
} CpuRun;

/* the executions being timed, most recent first */
static dlist_head cpu_runs = DLIST_STATIC_INIT(cpu_runs);

/* how many of them are idle */
static int	cpu_idle = 0;

/* A parallel group's CPU slot: what its workers used, in microseconds. */
typedef struct CpuSlot
{
	pg_atomic_uint64 user_us;
	pg_atomic_uint64 system_us;
} CpuSlot;

/* the slots, one per backend (main shared memory), and how many */
static CpuSlot *cpu_slots = NULL;
static int	cpu_nslots = 0;

/* in a parallel worker: the execution it measures, and its start */
static QueryDesc *worker_query = NULL;
static struct rusage worker_start;

/* pgss_ng.track_cpu */
bool		pgss_ng_track_cpu = false;

/* the runs in cpu_runs */
int			pgss_ng_cpu_nruns = 0;

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
							 &pgss_ng_track_cpu,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

/* ms of a struct timeval */
static inline double
timeval_ms(const struct timeval *tv)
{
	return tv->tv_sec * 1000.0 + tv->tv_usec / 1000.0;
}

/*
 * cpu_now
 *		The CPU clock of this backend (ms): its own user and system time,
 *		plus what its parallel workers added to its slot.
 */
static void
cpu_now(PgssNgCpuTime *now)
{
	struct rusage ru;
	int			slot = PGSS_NG_PARALLEL_GROUP_SLOT();

	getrusage(PGSS_NG_RUSAGE_WHO, &ru);
	now->user_ms = timeval_ms(&ru.ru_utime);
	now->system_ms = timeval_ms(&ru.ru_stime);
	if (cpu_slots != NULL && slot >= 0 && slot < cpu_nslots)
	{
		/* the workers' additions, which happened before their end */
		pg_read_barrier();
		now->user_ms += pg_atomic_read_u64(&cpu_slots[slot].user_us) / 1000.0;
		now->system_ms += pg_atomic_read_u64(&cpu_slots[slot].system_us) / 1000.0;
	}
}

/*
 * run_set
 *		Set whether a run is counting and in a call, keeping cpu_idle.
 */
static void
run_set(CpuRun *r, bool counting, bool in_call)
{
	int			was_idle = r->counting && !r->in_call;

	r->counting = counting;
	r->in_call = in_call;
	cpu_idle += (counting && !in_call) - was_idle;
}

/*
 * stop_idle_runs
 *		Stop the idle runs other than except at now, the CPU clock, which is
 *		read here first unless *have_now.
 */
static void
stop_idle_runs(const CpuRun *except, PgssNgCpuTime *now, bool *have_now)
{
	dlist_iter	it;

	if (cpu_idle == 0 ||
		(cpu_idle == 1 && except && except->counting && !except->in_call))
		return;
	dlist_foreach(it, &cpu_runs)
	{
		CpuRun	   *r = dlist_container(CpuRun, node, it.cur);

		if (r == except || !r->counting || r->in_call)
			continue;
		if (!*have_now)
		{
			cpu_now(now);
			*have_now = true;
		}
		r->counted.user_ms += now->user_ms - r->since.user_ms;
		r->counted.system_ms += now->system_ms - r->since.system_ms;
		run_set(r, false, false);
	}
}

/*
 * find_run
 *		The run of an execution, or NULL when it is not timed.
 */
static CpuRun *
find_run(QueryDesc *queryDesc)
{
	dlist_iter	it;

	dlist_foreach(it, &cpu_runs)
	{
		CpuRun	   *r = dlist_container(CpuRun, node, it.cur);

		if (r->queryDesc == queryDesc)
			return r;
	}
	return NULL;
}

/*
 * run_unlink
 *		Take a run out of the list (it is no longer counting).
 */
static void
run_unlink(CpuRun *r)
{
	run_set(r, false, false);
	dlist_delete(&r->node);
	pgss_ng_cpu_nruns--;
	r->queryDesc = NULL;
}

/*
 * run_forget
 *		Reset callback of a timed execution's query context: unlink its
 *		run (still linked if the execution never reached ExecutorEnd,
 *		e.g. after an ERROR).
 */
static void
run_forget(void *arg)
{
	CpuRun	   *r = (CpuRun *) arg;

	if (r->queryDesc != NULL)
		run_unlink(r);
}

/*
 * pgss_ng_cpu_stop_idle
 *		A hook call of a statement that is not timed here begins: stop the
 *		idle runs (one getrusage() if there are any).
 */
void
pgss_ng_cpu_stop_idle(void)
{
	PgssNgCpuTime now;
	bool		have_now = false;

	stop_idle_runs(NULL, &now, &have_now);
}

/*
 * pgss_ng_cpu_exec_starting / pgss_ng_cpu_exec_started
 *		Before a tracked execution's ExecutorStart (track_cpu on): read the
 *		CPU clock into *start (stopping the idle runs there); after it:
 *		make the execution's run, counting since *start and idle.  Memory:
 *		the run lives in the query's context, allocated without an
 *		out-of-memory ERROR: without memory the execution is not timed.
 */
void
pgss_ng_cpu_exec_starting(PgssNgCpuTime *start)
{
	bool		have_now = true;

	cpu_now(start);
	stop_idle_runs(NULL, start, &have_now);
}

void
pgss_ng_cpu_exec_started(QueryDesc *queryDesc, const PgssNgCpuTime *start)
{
	MemoryContext cxt = queryDesc->estate->es_query_cxt;
	CpuRun	   *r;

	r = MemoryContextAllocExtended(cxt, sizeof(CpuRun), MCXT_ALLOC_NO_OOM);
	if (r == NULL)
		return;
	r->queryDesc = queryDesc;
	r->counting = false;
	r->in_call = false;
	r->since = *start;
	memset(&r->counted, 0, sizeof(r->counted));
	r->cb.func = run_forget;
	r->cb.arg = r;
	MemoryContextRegisterResetCallback(cxt, &r->cb);
	dlist_push_head(&cpu_runs, &r->node);
	pgss_ng_cpu_nruns++;
	run_set(r, true, false);
}

/*
 * pgss_ng_cpu_exec_enter / pgss_ng_cpu_exec_leave
 *		An executor call (ExecutorRun, ExecutorFinish) of an execution
 *		begins / returns.  Entering stops the other idle runs and starts the
 *		execution's own if it was stopped (reading the CPU clock once at
 *		most); leaving makes it idle.  For an execution not timed, entering
 *		is another statement's call (pgss_ng_cpu_other_call).
 */
void
pgss_ng_cpu_exec_enter(QueryDesc *queryDesc)
{
	CpuRun	   *r = find_run(queryDesc);
	PgssNgCpuTime now;
	bool		have_now = false;

	stop_idle_runs(r, &now, &have_now);
	if (r == NULL)
		return;
	if (!r->counting)
	{
		if (!have_now)
			cpu_now(&now);
		r->since = now;
	}
	run_set(r, true, true);
}

void
pgss_ng_cpu_exec_leave(QueryDesc *queryDesc)
{
	CpuRun	   *r = find_run(queryDesc);

	if (r != NULL)
		run_set(r, r->counting, false);
}

/*
 * pgss_ng_cpu_exec_ending / pgss_ng_cpu_exec_ended
 *		Before a tracked execution's ExecutorEnd: if it is timed, take its
 *		run out (the query's memory goes with ExecutorEnd) into *ending,
 *		counting from now if it was stopped, and return true; stop the
 *		other idle runs.  After ExecutorEnd: its whole CPU time (ms) into
 *		*out, which the CPU clock read here ends.
 */
bool
pgss_ng_cpu_exec_ending(QueryDesc *queryDesc, PgssNgCpuEnding *ending)
{
	CpuRun	   *r = find_run(queryDesc);
	PgssNgCpuTime now;
	bool		have_now = false;

	stop_idle_runs(r, &now, &have_now);
	if (r == NULL)
		return false;
	if (!r->counting)
	{
		if (!have_now)
			cpu_now(&now);
		r->since = now;
	}
	ending->counted = r->counted;
	ending->since = r->since;
	run_unlink(r);
	return true;
}

void
pgss_ng_cpu_exec_ended(const PgssNgCpuEnding *ending, PgssNgCpuTime *out)
{
	PgssNgCpuTime now;
	bool		have_now = true;

	cpu_now(&now);
	stop_idle_runs(NULL, &now, &have_now);
	out->user_ms = ending->counted.user_ms + now.user_ms - ending->since.user_ms;
	out->system_ms = ending->counted.system_ms + now.system_ms -
		ending->since.system_ms;
}

/*
 * pgss_ng_measure_start / pgss_ng_measure_stop
 *		Measure the wall time (ms), buffer and WAL usage of a call made
 *		between them, from the backend's cumulative counters, and its CPU
 *		time when pgss_ng.track_cpu is on at the start.  The CPU clock
 *		read at either end stops the idle runs too.
 */
void
pgss_ng_measure_start(PgssNgMeasure *m)
{
	m->bufusage_start = pgBufferUsage;
	m->walusage_start = pgWalUsage;
	m->cpu_sampled = pgss_ng_cpu_enabled();
	if (m->cpu_sampled)
	{
		bool		have_now = true;

		cpu_now(&m->cpu_start);
		stop_idle_runs(NULL, &m->cpu_start, &have_now);
	}
	else
		pgss_ng_cpu_other_call();
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
	{
		PgssNgCpuTime now;
		bool		have_now = true;

		cpu_now(&now);
		stop_idle_runs(NULL, &now, &have_now);
		m->cpu.user_ms = now.user_ms - m->cpu_start.user_ms;
		m->cpu.system_ms = now.system_ms - m->cpu_start.system_ms;
	}

	memset(&m->bufusage, 0, sizeof(BufferUsage));
	BufferUsageAccumDiff(&m->bufusage, &pgBufferUsage, &m->bufusage_start);
	memset(&m->walusage, 0, sizeof(WalUsage));
	WalUsageAccumDiff(&m->walusage, &pgWalUsage, &m->walusage_start);
}

/*
 * pgss_ng_cpu_shmem_size / pgss_ng_cpu_shmem_startup
 *		The parallel workers' CPU slots: one per backend (MaxBackends + 1,
 *		for the backend numbers of 15 and 16, which start at 1), in main
 *		shared memory.  Startup (shmem_startup_hook) takes
 *		AddinShmemInitLock.
 */
Size
pgss_ng_cpu_shmem_size(void)
{
	return mul_size(MaxBackends + 1, sizeof(CpuSlot));
}

void
pgss_ng_cpu_shmem_startup(void)
{
	bool		found;
	int			i;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	cpu_nslots = MaxBackends + 1;
	cpu_slots = ShmemInitStruct("pgss_ng parallel CPU",
								pgss_ng_cpu_shmem_size(), &found);
	if (!found)
		for (i = 0; i < cpu_nslots; i++)
		{
			pg_atomic_init_u64(&cpu_slots[i].user_us, 0);
			pg_atomic_init_u64(&cpu_slots[i].system_us, 0);
		}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * pgss_ng_cpu_worker_start / pgss_ng_cpu_worker_end
 *		In a parallel worker, around its execution (the outermost one, that
 *		of the leader's plan): sample its CPU time before ExecutorStart, and
 *		after ExecutorEnd add what it used since to its leader's slot.
 *		Always (whatever track_cpu says): two getrusage() calls per worker.
 */
void
pgss_ng_cpu_worker_start(QueryDesc *queryDesc)
{
	if (worker_query != NULL || cpu_slots == NULL)
		return;
	worker_query = queryDesc;
	getrusage(PGSS_NG_RUSAGE_WHO, &worker_start);
}

void
pgss_ng_cpu_worker_end(QueryDesc *queryDesc)
{
	struct rusage now;
	int			slot = PGSS_NG_PARALLEL_GROUP_SLOT();
	int64		user_us;
	int64		system_us;

	if (queryDesc != worker_query)
		return;
	worker_query = NULL;
	getrusage(PGSS_NG_RUSAGE_WHO, &now);
	if (slot < 0 || slot >= cpu_nslots)
		return;
	user_us = (now.ru_utime.tv_sec - worker_start.ru_utime.tv_sec) * INT64CONST(1000000) +
		(now.ru_utime.tv_usec - worker_start.ru_utime.tv_usec);
	system_us = (now.ru_stime.tv_sec - worker_start.ru_stime.tv_sec) * INT64CONST(1000000) +
		(now.ru_stime.tv_usec - worker_start.ru_stime.tv_usec);
	pg_atomic_fetch_add_u64(&cpu_slots[slot].user_us, Max(user_us, 0));
	pg_atomic_fetch_add_u64(&cpu_slots[slot].system_us, Max(system_us, 0));
}
