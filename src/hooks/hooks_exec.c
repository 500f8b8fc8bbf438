/*-------------------------------------------------------------------------
 *
 * hooks_exec.c
 *	  The executor hooks: instrumentation of tracked statements, their
 *	  failure frames, the running key published for the wait sampler, the
 *	  execution's CPU time, and its record at ExecutorEnd, flushing at top
 *	  level.  docs/design.md, "The hooks, and pg_stat_statements 1.10".
 *	  No lock of their own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "frames.h"
#include "hooks_int.h"
#include "measure.h"
#include "planid.h"
#include "stmt/stmt_kind.h"
#include "stmt/waits.h"

/* Saved hook values */
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

static void pgss_ng_ExecutorStart(QueryDesc *queryDesc, int eflags);
static void pgss_ng_ExecutorRun(PGSS_NG_EXECUTOR_RUN_PARAMS);
static void pgss_ng_ExecutorFinish(QueryDesc *queryDesc);
static void pgss_ng_ExecutorEnd(QueryDesc *queryDesc);

/*
 * pgss_ng_exec_hooks_init
 *		Install the executor hooks (from pgss_ng_hooks_init).
 */
void
pgss_ng_exec_hooks_init(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = pgss_ng_ExecutorStart;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = pgss_ng_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = pgss_ng_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = pgss_ng_ExecutorEnd;
}

/*
 * exec_tracked
 *		Does this executor call run a statement that ExecutorEnd will
 *		record (at the current nesting level)?
 */
static inline bool
exec_tracked(QueryDesc *queryDesc)
{
	return pgss_ng_stmt_ready() &&
		queryDesc->plannedstmt->queryId != UINT64CONST(0) &&
		queryDesc->totaltime && pgss_ng_enabled(pgss_ng_exec_nested_level);
}

/*
 * exec_frame
 *		Push the failure frame of an executor call of a tracked statement
 *		that notes no failure where the ERROR passes (ExecutorStart,
 *		ExecutorEnd), with its subtransaction for the abort (frames.c).
 *		Returns the frame (NULL: past the frames kept).
 */
static inline PgssNgFrame *
exec_frame(int *frame, PgssNgFrameKind kind, QueryDesc *queryDesc)
{
	PgssNgFrame *f;

	*frame = pgss_ng_frame_push(&f, kind, pgss_ng_exec_nested_level == 0);
	if (f != NULL)
	{
		f->queryDesc = queryDesc;
		f->subid = GetCurrentSubTransactionId();
	}
	return f;
}

/*
 * next_ExecutorStart
 *		Call the next ExecutorStart hook, or the standard function.
 */
static void
next_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/*
 * pgss_ng_ExecutorStart
 *		Ask for the instrumentation of a tracked statement (in the query's
 *		context); an ERROR in the start-up counts a failure (noted by the
 *		abort).  With track_cpu, CPU time counts from before the start-up,
 *		as pg_stat_kcache counts it.  In a parallel worker: its CPU time,
 *		for its leader.
 */
static void
pgss_ng_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		cpu;
	PgssNgCpuTime start;
	PgssNgFrame *f;
	int			frame;

	if (IsParallelWorker())
	{
		pgss_ng_cpu_worker_start(queryDesc);
		next_ExecutorStart(queryDesc, eflags);
		return;
	}

	if (!(pgss_ng_stmt_ready() && pgss_ng_enabled(pgss_ng_exec_nested_level) &&
		  queryDesc->plannedstmt->queryId != UINT64CONST(0)))
	{
		pgss_ng_cpu_other_call();
		next_ExecutorStart(queryDesc, eflags);
		return;
	}

	pgss_ng_hooks_stmt_start();
	cpu = pgss_ng_cpu_enabled();
	if (cpu)
		pgss_ng_cpu_exec_starting(&start);
	else
		pgss_ng_cpu_other_call();
	f = exec_frame(&frame, PGSS_NG_FRAME_START, queryDesc);
	if (f != NULL)
		INSTR_TIME_SET_CURRENT(f->start);
	next_ExecutorStart(queryDesc, eflags);
	pgss_ng_frame_pop(frame);

	if (queryDesc->totaltime == NULL)
	{
		MemoryContext oldcxt;

		oldcxt = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
		queryDesc->totaltime = InstrAlloc(1, INSTRUMENT_ALL, false);
		MemoryContextSwitchTo(oldcxt);
	}
	if (cpu)
		pgss_ng_cpu_exec_started(queryDesc, &start);
}

/*
 * run_frame
 *		Push the failure frame of an ExecutorRun or ExecutorFinish of a
 *		tracked statement, whose time the execution's totaltime gives;
 *		-1 for another statement's.
 */
static inline int
run_frame(QueryDesc *queryDesc)
{
	PgssNgFrame *f;
	int			frame;

	if (!exec_tracked(queryDesc))
		return -1;
	frame = pgss_ng_frame_push(&f, PGSS_NG_FRAME_EXEC,
							   pgss_ng_exec_nested_level == 0);
	if (f != NULL)
		f->queryDesc = queryDesc;
	return frame;
}

/*
 * pgss_ng_ExecutorRun / pgss_ng_ExecutorFinish
 *		Run the next hook a nesting level deeper, CPU time counting when
 *		timed.  For a tracked statement an ERROR (e.g. an AFTER trigger's)
 *		counts a failure, its earlier runs' time included, and its key is
 *		published for the wait sampler meanwhile (not in a SELECT's
 *		ExecutorFinish, which runs no trigger).
 */
static void
pgss_ng_ExecutorRun(PGSS_NG_EXECUTOR_RUN_PARAMS)
{
	int			frame = run_frame(queryDesc);
	int			waitkey = frame >= 0 ?
		pgss_ng_waits_push(queryDesc->plannedstmt->queryId, GetUserId(),
						   pgss_ng_exec_nested_level) : -1;

	if (pgss_ng_cpu_timing())
		pgss_ng_cpu_exec_enter(queryDesc);
	pgss_ng_exec_nested_level++;
	PG_TRY();
	{
		if (prev_ExecutorRun)
			prev_ExecutorRun(PGSS_NG_EXECUTOR_RUN_ARGS);
		else
			standard_ExecutorRun(PGSS_NG_EXECUTOR_RUN_ARGS);
	}
	PG_CATCH();
	{
		pgss_ng_exec_nested_level--;
		pgss_ng_waits_pop(waitkey);
		if (frame >= 0)
			pgss_ng_frame_failed(frame);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pgss_ng_exec_nested_level--;
	pgss_ng_waits_pop(waitkey);
	if (frame >= 0)
		pgss_ng_frame_pop(frame);
	if (pgss_ng_cpu_timing())
		pgss_ng_cpu_exec_leave(queryDesc);
}

static void
pgss_ng_ExecutorFinish(QueryDesc *queryDesc)
{
	int			frame = run_frame(queryDesc);
	int			waitkey = frame >= 0 &&
		(queryDesc->operation != CMD_SELECT ||
		 queryDesc->plannedstmt->hasModifyingCTE) ?
		pgss_ng_waits_push(queryDesc->plannedstmt->queryId, GetUserId(),
						   pgss_ng_exec_nested_level) : -1;

	if (pgss_ng_cpu_timing())
		pgss_ng_cpu_exec_enter(queryDesc);
	pgss_ng_exec_nested_level++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_CATCH();
	{
		pgss_ng_exec_nested_level--;
		pgss_ng_waits_pop(waitkey);
		if (frame >= 0)
			pgss_ng_frame_failed(frame);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pgss_ng_exec_nested_level--;
	pgss_ng_waits_pop(waitkey);
	if (frame >= 0)
		pgss_ng_frame_pop(frame);
	if (pgss_ng_cpu_timing())
		pgss_ng_cpu_exec_leave(queryDesc);
}

/*
 * next_ExecutorEnd
 *		Call the next ExecutorEnd hook, or the standard function.
 */
static void
next_ExecutorEnd(QueryDesc *queryDesc)
{
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

/*
 * pgss_ng_ExecutorEnd
 *		Record the execution (ms, rows, buffers, WAL, JIT, parallel workers
 *		from 18, CPU time if timed) and flush at top level.  Copied from the
 *		QueryDesc before the next ExecutorEnd frees it, recorded after: the
 *		CPU time counts the shut-down (and workers ending), and an ERROR in
 *		it counts a failure instead (noted by the abort).  In a parallel
 *		worker: its CPU time, for its leader.
 */
static void
pgss_ng_ExecutorEnd(QueryDesc *queryDesc)
{
	PlannedStmt *pstmt = queryDesc->plannedstmt;
	EState	   *estate = queryDesc->estate;
	Instrumentation *totaltime = queryDesc->totaltime;
	PgssNgCpuEnding ending;
	bool		cpu_timed = false;
	PgssNgCpuTime cpu;
	BufferUsage bufusage;
	WalUsage	walusage;
	JitInstrumentation jit;
	PgssNgFrame *f;
	int			frame;
#if PGSS_NG_HAVE_PARALLEL_WORKERS
	PgssNgParallelWorkers workers;
#endif

	if (IsParallelWorker())
	{
		next_ExecutorEnd(queryDesc);
		pgss_ng_cpu_worker_end(queryDesc);
		return;
	}

	if (pgss_ng_cpu_timing())
		cpu_timed = pgss_ng_cpu_exec_ending(queryDesc, &ending);
	if (!(pgss_ng_stmt_ready() && pstmt->queryId != UINT64CONST(0) &&
		  totaltime && pgss_ng_enabled(pgss_ng_exec_nested_level)))
	{
		if (pgss_ng_exec_nested_level == 0)
			pgss_ng_flush();
		next_ExecutorEnd(queryDesc);
		return;
	}

	InstrEndLoop(totaltime);
	bufusage = totaltime->bufusage;
	walusage = totaltime->walusage;
	if (estate->es_jit)
		jit = estate->es_jit->instr;
#if PGSS_NG_HAVE_PARALLEL_WORKERS
	workers.to_launch = PGSS_NG_PARALLEL_WORKERS_TO_LAUNCH(estate);
	workers.launched = PGSS_NG_PARALLEL_WORKERS_LAUNCHED(estate);
#endif
	{
		PgssNgCall s;

		/* every field, without a designated initializer's memset */
		s.query = queryDesc->sourceText;
		s.query_location = pstmt->stmt_location;
		s.query_len = pstmt->stmt_len;
		s.queryid = pstmt->queryId;
		s.toplevel = pgss_ng_exec_nested_level == 0;
		s.jstate = NULL;
		s.phase = PGSS_NG_PHASE_EXEC;
		s.total_time = totaltime->total * 1000.0;
		s.rows = PGSS_NG_ES_ROWS(estate);
		s.bufusage = &bufusage;
		s.walusage = &walusage;
		s.jitusage = estate->es_jit ? &jit : NULL;
#if PGSS_NG_HAVE_PARALLEL_WORKERS
		s.parallel = &workers;
#else
		s.parallel = NULL;
#endif
		s.cpu = NULL;
		s.planid = pgss_ng_planid_exec(queryDesc,
									   pgss_ng_exec_nested_level == 0);

		f = exec_frame(&frame, PGSS_NG_FRAME_END, queryDesc);
		if (f != NULL)
			f->prior_ms = s.total_time;
		next_ExecutorEnd(queryDesc);
		pgss_ng_frame_pop(frame);

		if (cpu_timed)
		{
			pgss_ng_cpu_exec_ended(&ending, &cpu);
			s.cpu = &cpu;
		}
		pgss_ng_stmt_count_call(&s);
	}

	if (pgss_ng_exec_nested_level == 0)
		pgss_ng_flush();
}
