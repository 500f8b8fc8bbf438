/*-------------------------------------------------------------------------
 *
 * hooks.c
 *	  The hooks that feed the statement kind, and their GUCs
 *	  (pgss_ng.track, track_utility, track_planning).
 *
 * The hooks decide *what* is recorded exactly as the server's own
 * pg_stat_statements does (1.10 on PostgreSQL 15 and 16, 1.11 on 17, 1.12
 * on 18: same nesting rules, same treatment of utility statements,
 * PREPARE/EXECUTE/DEALLOCATE, planning; where these differ by version,
 * pgver.h says how), so that counts and normalized texts agree;
 * stmt_kind.c decides *how* (pending counters, flushed at the end of each
 * top-level statement).
 *
 * Beyond pg_stat_statements, each hook call that runs a tracked statement
 * opens a failure frame (frames.c): an ERROR passing through its
 * PG_CATCH counts one failed execution of the statement, then is
 * re-thrown.
 *
 * Locking: the hooks take no lock themselves; see kind.h and stmt_kind.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "compat/settings_mirror.h"
#include "measure.h"
#include "stmt/qtext.h"
#include "frames.h"
#include "hooks.h"
#include "planid.h"
#include "stmt/stmt_kind.h"

/* Values of pgss_ng.track */
typedef enum PgssNgTrackLevel
{
	PGSS_NG_TRACK_NONE,
	PGSS_NG_TRACK_TOP,
	PGSS_NG_TRACK_ALL
} PgssNgTrackLevel;

/*
 * GUCs read by the hooks: the values in effect of pgss_ng.track, ... and
 * of pg_stat_statements' names for them (settings_mirror.c)
 */
static int	pgss_ng_track = PGSS_NG_TRACK_TOP;
static bool pgss_ng_track_utility = true;
static bool pgss_ng_track_planning = false;

static const struct config_enum_entry track_options[] =
{
	{"none", PGSS_NG_TRACK_NONE, false},
	{"top", PGSS_NG_TRACK_TOP, false},
	{"all", PGSS_NG_TRACK_ALL, false},
	{NULL, 0, false}
};

/* Nesting depth of executor / utility calls, and of planner calls. */
static int	exec_nested_level = 0;
static int	plan_nested_level = 0;

/* Saved hook values */
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Is a statement at this nesting level tracked? */
#define pgss_ng_enabled(level) \
	(!IsParallelWorker() && \
	 (pgss_ng_track == PGSS_NG_TRACK_ALL || \
	  (pgss_ng_track == PGSS_NG_TRACK_TOP && (level) == 0)))

/*
 * Utility statements whose execution is charged elsewhere: EXECUTE to the
 * prepared statement (by the executor hooks), PREPARE not at all, nor,
 * before PostgreSQL 17, DEALLOCATE.
 */
#define pgss_ng_handled_utility(n) \
	(!IsA(n, ExecuteStmt) && !IsA(n, PrepareStmt) && \
	 (PGSS_NG_TRACKS_DEALLOCATE || !IsA(n, DeallocateStmt)))

/*
 * Utility statements that raise the nesting level even when not timed
 * (PostgreSQL 17 and later; see pgver.h): all but EXECUTE, whose
 * statement is then seen at the caller's level, and PREPARE, whose parse
 * analysis is.
 */
#define pgss_ng_bumps_level_untimed(n) \
	(PGSS_NG_ONE_NESTING_LEVEL && \
	 !IsA(n, ExecuteStmt) && !IsA(n, PrepareStmt))

static void pgss_ng_post_parse_analyze(ParseState *pstate, Query *query,
									   JumbleState *jstate);
static PlannedStmt *pgss_ng_planner(Query *parse, const char *query_string,
									int cursorOptions,
									ParamListInfo boundParams);
static void pgss_ng_ExecutorStart(QueryDesc *queryDesc, int eflags);
static void pgss_ng_ExecutorRun(PGSS_NG_EXECUTOR_RUN_PARAMS);
static void pgss_ng_ExecutorFinish(QueryDesc *queryDesc);
static void pgss_ng_ExecutorEnd(QueryDesc *queryDesc);
static void pgss_ng_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
								   bool readOnlyTree,
								   ProcessUtilityContext context,
								   ParamListInfo params,
								   QueryEnvironment *queryEnv,
								   DestReceiver *dest, QueryCompletion *qc);

/*
 * pgss_ng_hooks_init
 *		Define the hooks' GUCs and install the hooks (from _PG_init, when
 *		preloaded).
 */
void
pgss_ng_hooks_init(void)
{
	pgss_ng_define_paired_enum(PGSS_NG_PAIRED_TRACK, "pgss_ng.track",
							   "Selects which statements are tracked by pgss_ng.",
							   &pgss_ng_track, PGSS_NG_TRACK_TOP,
							   track_options, PGC_SUSET);
	pgss_ng_define_paired_bool(PGSS_NG_PAIRED_TRACK_UTILITY,
							   "pgss_ng.track_utility",
							   "Selects whether utility commands are tracked by pgss_ng.",
							   &pgss_ng_track_utility, true, PGC_SUSET);
	pgss_ng_define_paired_bool(PGSS_NG_PAIRED_TRACK_PLANNING,
							   "pgss_ng.track_planning",
							   "Selects whether planning duration is tracked by pgss_ng.",
							   &pgss_ng_track_planning, false, PGC_SUSET);

	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = pgss_ng_post_parse_analyze;
	prev_planner_hook = planner_hook;
	planner_hook = pgss_ng_planner;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = pgss_ng_ExecutorStart;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = pgss_ng_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = pgss_ng_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = pgss_ng_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = pgss_ng_ProcessUtility;
}

/*
 * store_measured
 *		pgss_ng_store(s) of a planning or utility statement, with the time
 *		and usage measured around it (pgss_ng_measure_stop done).
 */
static void
store_measured(PgssNgStore *s, const PgssNgMeasure *m)
{
	s->total_time = m->duration_ms;
	s->bufusage = &m->bufusage;
	s->walusage = &m->walusage;
	s->cpu = m->cpu_sampled ? &m->cpu : NULL;
	pgss_ng_store(s);
}

/*
 * pgss_ng_post_parse_analyze
 *		Make the entry of a statement with constants, with its normalized
 *		text, and clear the queryId of the utility statements whose cost is
 *		charged elsewhere: EXECUTE (and on PostgreSQL 15 PREPARE and
 *		DEALLOCATE too; see pgver.h).  Before 16 core records no constants
 *		in utility statements, so they get no entry here.
 */
static void
pgss_ng_post_parse_analyze(ParseState *pstate, Query *query,
						   JumbleState *jstate)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);

	/* another statement's work begins: stop the idle CPU runs */
	pgss_ng_cpu_other_call();

	if (!pgss_ng_stmt_ready() || !pgss_ng_enabled(exec_nested_level))
		return;

	if (query->utilityStmt && pgss_ng_track_utility &&
		(PGSS_NG_PARSE_CLEARS_EXECUTE_ONLY ?
		 IsA(query->utilityStmt, ExecuteStmt) :
		 !pgss_ng_handled_utility(query->utilityStmt)))
	{
		query->queryId = UINT64CONST(0);
		return;
	}

	/*
	 * Without constants the normalized text is the statement's text itself,
	 * which the first execution stores: no entry is needed yet.
	 */
	if (jstate && jstate->clocations_count > 0)
	{
		PgssNgStore s = {
			.query = pstate->p_sourcetext,
			.query_location = query->stmt_location,
			.query_len = query->stmt_len,
			.queryid = query->queryId,
			.toplevel = exec_nested_level == 0,
			.jstate = jstate,
		};

		pgss_ng_store(&s);
	}
}

/*
 * next_planner / next_ProcessUtility
 *		Call the next hook in the chain, or the standard function.
 */
static PlannedStmt *
next_planner(Query *parse, const char *query_string, int cursorOptions,
			 ParamListInfo boundParams)
{
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions,
								 boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

static void
next_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					bool readOnlyTree, ProcessUtilityContext context,
					ParamListInfo params, QueryEnvironment *queryEnv,
					DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/*
 * next_planner_nested
 *		next_planner() with *level raised by one while it runs (restored
 *		on error too).
 */
static PlannedStmt *
next_planner_nested(int *level, Query *parse, const char *query_string,
					int cursorOptions, ParamListInfo boundParams)
{
	PlannedStmt *result;

	(*level)++;
	PG_TRY();
	{
		result = next_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		(*level)--;
	}
	PG_END_TRY();

	return result;
}

/*
 * pgss_ng_planner
 *		For a tracked statement (query string, non-zero queryId): open a
 *		failure frame around the planning (frames.c), and time it
 *		when track_planning is on.  Duration in ms; buffer and WAL usage
 *		of the planning itself.  An ERROR raised while planning counts as
 *		a failed execution of the statement and is re-thrown.
 *
 * While planning, the planner level is raised (from PostgreSQL 17 the one
 * nesting level, timed or not; before, the planner level while timed; see
 * pgver.h), so that functions evaluated by the planner are not top-level
 * statements.
 */
static PlannedStmt *
pgss_ng_planner(Query *parse, const char *query_string, int cursorOptions,
				ParamListInfo boundParams)
{
	PlannedStmt *result;
	PgssNgMeasure m;
	bool		timed;
	int		   *level;
	int			frame;

	if (!(pgss_ng_stmt_ready() &&
		  pgss_ng_enabled(plan_nested_level + exec_nested_level) &&
		  query_string && parse->queryId != UINT64CONST(0)))
	{
		pgss_ng_cpu_other_call();
		if (PGSS_NG_ONE_NESTING_LEVEL)
			return next_planner_nested(&exec_nested_level, parse,
									   query_string, cursorOptions,
									   boundParams);
		return next_planner(parse, query_string, cursorOptions, boundParams);
	}

	timed = pgss_ng_track_planning;
	level = PGSS_NG_ONE_NESTING_LEVEL ? &exec_nested_level :
		timed ? &plan_nested_level : NULL;
	frame = pgss_ng_stmt_begin(parse->queryId, exec_nested_level == 0,
							   query_string, parse->stmt_location,
							   parse->stmt_len, 0);
	if (timed)
		pgss_ng_measure_start(&m);
	else
		pgss_ng_cpu_other_call();

	PG_TRY();
	{
		if (level)
			result = next_planner_nested(level, parse, query_string,
										 cursorOptions, boundParams);
		else
			result = next_planner(parse, query_string, cursorOptions,
								  boundParams);
	}
	PG_CATCH();
	{
		pgss_ng_stmt_failed(frame);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pgss_ng_stmt_end(frame);
	pgss_ng_planid_planned(result);

	if (timed)
	{
		PgssNgStore s = {
			.query = query_string,
			.query_location = parse->stmt_location,
			.query_len = parse->stmt_len,
			.queryid = parse->queryId,
			.toplevel = exec_nested_level == 0,
			.phase = PGSS_NG_PLAN,
		};

		pgss_ng_measure_stop(&m);
		store_measured(&s, &m);
	}

	return result;
}

/*
 * begin_exec_frame
 *		Open a failure frame (frames.c) for an executor call of a
 *		statement at the current nesting level, with the run time it had
 *		before (ms, from totaltime when there is one).
 */
static int
begin_exec_frame(QueryDesc *queryDesc)
{
	double		prior_ms = 0;

	if (queryDesc->totaltime)
		prior_ms = INSTR_TIME_GET_MILLISEC(queryDesc->totaltime->counter);
	return pgss_ng_stmt_begin(queryDesc->plannedstmt->queryId,
							  exec_nested_level == 0, queryDesc->sourceText,
							  queryDesc->plannedstmt->stmt_location,
							  queryDesc->plannedstmt->stmt_len, prior_ms);
}

/*
 * exec_tracked
 *		Does this executor call run a statement that ExecutorEnd will
 *		record (at the current nesting level)?
 */
static bool
exec_tracked(QueryDesc *queryDesc)
{
	return pgss_ng_stmt_ready() &&
		queryDesc->plannedstmt->queryId != UINT64CONST(0) &&
		queryDesc->totaltime && pgss_ng_enabled(exec_nested_level);
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
 *		Ask the executor for instrumentation of tracked statements; the
 *		Instrumentation lives in the query's memory context.  An ERROR in
 *		the executor's start-up counts as a failed execution (frame of
 *		frames.c) and is re-thrown.  With pgss_ng.track_cpu, the
 *		execution's CPU time is counted from before its start-up
 *		(pg_stat_kcache counts ExecutorStart to ExecutorEnd), only while
 *		the executor runs it (measure.c).  In a parallel worker: its CPU
 *		time, for its leader (pgss_ng_cpu_worker_start).
 */
static void
pgss_ng_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		tracked;
	bool		cpu;
	PgssNgCpuTime start;
	int			frame;

	if (IsParallelWorker())
	{
		pgss_ng_cpu_worker_start(queryDesc);
		next_ExecutorStart(queryDesc, eflags);
		return;
	}

	tracked = pgss_ng_stmt_ready() &&
		pgss_ng_enabled(exec_nested_level) &&
		queryDesc->plannedstmt->queryId != UINT64CONST(0);

	if (!tracked)
	{
		pgss_ng_cpu_other_call();
		next_ExecutorStart(queryDesc, eflags);
		return;
	}

	cpu = pgss_ng_cpu_enabled();
	if (cpu)
		pgss_ng_cpu_exec_starting(&start);
	else
		pgss_ng_cpu_other_call();
	frame = begin_exec_frame(queryDesc);
	PG_TRY();
	{
		next_ExecutorStart(queryDesc, eflags);
	}
	PG_CATCH();
	{
		pgss_ng_stmt_failed(frame);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pgss_ng_stmt_end(frame);

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
 * call_in_exec_frame
 *		Run call (the next ExecutorRun or ExecutorFinish) one nesting level
 *		deeper, the execution's CPU time counting meanwhile (measure.c).
 *		For a tracked statement, a run that ends in an ERROR (e.g. from an
 *		AFTER trigger in ExecutorFinish) counts as a failed execution, its
 *		earlier runs' time included, before the ERROR is re-thrown;
 *		otherwise the frame just ends.
 */
static void
call_in_exec_frame(QueryDesc *queryDesc,
				   void (*call) (QueryDesc *queryDesc, void *arg), void *arg)
{
	bool		tracked = exec_tracked(queryDesc);
	int			frame = tracked ? begin_exec_frame(queryDesc) : 0;

	pgss_ng_cpu_exec_enter(queryDesc);
	exec_nested_level++;
	PG_TRY();
	{
		call(queryDesc, arg);
	}
	PG_CATCH();
	{
		exec_nested_level--;
		if (tracked)
			pgss_ng_stmt_failed(frame);
		PG_RE_THROW();
	}
	PG_END_TRY();
	exec_nested_level--;
	if (tracked)
		pgss_ng_stmt_end(frame);
	pgss_ng_cpu_exec_leave(queryDesc);
}

/* call_in_exec_frame's call for ExecutorRun; arg is a PgssNgRunArgs. */
static void
call_executor_run(QueryDesc *queryDesc, void *arg)
{
	PgssNgRunArgs *run = (PgssNgRunArgs *) arg;

	if (prev_ExecutorRun)
		prev_ExecutorRun(PGSS_NG_RUN_ARGS_CALL(*run));
	else
		standard_ExecutorRun(PGSS_NG_RUN_ARGS_CALL(*run));
}

/* call_in_exec_frame's call for ExecutorFinish. */
static void
call_executor_finish(QueryDesc *queryDesc, void *arg)
{
	if (prev_ExecutorFinish)
		prev_ExecutorFinish(queryDesc);
	else
		standard_ExecutorFinish(queryDesc);
}

/*
 * pgss_ng_ExecutorRun
 *		Track nesting depth and failed executions (call_in_exec_frame).
 */
static void
pgss_ng_ExecutorRun(PGSS_NG_EXECUTOR_RUN_PARAMS)
{
	PgssNgRunArgs run;

	PGSS_NG_RUN_ARGS_SAVE(run);
	call_in_exec_frame(queryDesc, call_executor_run, &run);
}

/*
 * pgss_ng_ExecutorFinish
 *		Track nesting depth and failed executions (call_in_exec_frame).
 */
static void
pgss_ng_ExecutorFinish(QueryDesc *queryDesc)
{
	call_in_exec_frame(queryDesc, call_executor_finish, NULL);
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
 *		Record the execution (time in ms, rows, buffers, WAL, JIT, from
 *		PostgreSQL 18 parallel workers, and CPU time if it was timed) and,
 *		at top level, flush the backend's pending counters.
 *
 * What is recorded is copied from the QueryDesc and its EState before
 * the next ExecutorEnd frees them, and recorded after it: the CPU time
 * counts the executor's shut-down too, and with it the end of any
 * parallel worker still running.  An ERROR raised by the next ExecutorEnd
 * counts as a failed execution (frame of frames.c) and is
 * re-thrown.  In a parallel worker: its CPU time, for its leader
 * (pgss_ng_cpu_worker_end).
 */
static void
pgss_ng_ExecutorEnd(QueryDesc *queryDesc)
{
	PlannedStmt *pstmt = queryDesc->plannedstmt;
	EState	   *estate = queryDesc->estate;
	PgssNgCpuEnding ending;
	bool		cpu_timed;
	Instrumentation totaltime;
	JitInstrumentation jit;
	PgssNgParallelWorkers *parallel = NULL;
	PgssNgCpuTime cpu;
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

	cpu_timed = pgss_ng_cpu_exec_ending(queryDesc, &ending);
	if (!(pgss_ng_stmt_ready() && pstmt->queryId != UINT64CONST(0) &&
		  queryDesc->totaltime && pgss_ng_enabled(exec_nested_level)))
	{
		if (exec_nested_level == 0)
			pgss_ng_flush();
		next_ExecutorEnd(queryDesc);
		return;
	}

	frame = begin_exec_frame(queryDesc);
	InstrEndLoop(queryDesc->totaltime);
	totaltime = *queryDesc->totaltime;
	if (estate->es_jit)
		jit = estate->es_jit->instr;
#if PGSS_NG_HAVE_PARALLEL_WORKERS
	workers.to_launch = PGSS_NG_PARALLEL_WORKERS_TO_LAUNCH(estate);
	workers.launched = PGSS_NG_PARALLEL_WORKERS_LAUNCHED(estate);
	parallel = &workers;
#endif
	{
		PgssNgStore s = {
			.query = queryDesc->sourceText,
			.query_location = pstmt->stmt_location,
			.query_len = pstmt->stmt_len,
			.queryid = pstmt->queryId,
			.toplevel = exec_nested_level == 0,
			.phase = PGSS_NG_EXEC,
			.total_time = totaltime.total * 1000.0,
			.rows = PGSS_NG_ES_ROWS(estate),
			.bufusage = &totaltime.bufusage,
			.walusage = &totaltime.walusage,
			.jitusage = estate->es_jit ? &jit : NULL,
			.parallel = parallel,
			.planid = pgss_ng_planid_exec(queryDesc, exec_nested_level == 0),
		};

		PG_TRY();
		{
			next_ExecutorEnd(queryDesc);
		}
		PG_CATCH();
		{
			pgss_ng_stmt_failed(frame);
			PG_RE_THROW();
		}
		PG_END_TRY();
		pgss_ng_stmt_end(frame);

		if (cpu_timed)
		{
			pgss_ng_cpu_exec_ended(&ending, &cpu);
			s.cpu = &cpu;
		}
		pgss_ng_store(&s);
	}

	if (exec_nested_level == 0)
		pgss_ng_flush();
}

/*
 * pgss_ng_ProcessUtility
 *		Record utility statements (time in ms, rows of COPY/FETCH/SELECT
 *		INTO/REFRESH MATERIALIZED VIEW, buffers, WAL), flushing at top
 *		level.
 *
 * A recorded utility statement that ends in an ERROR counts as a failed
 * execution (frame of frames.c) before the ERROR is re-thrown.
 *
 * Like pg_stat_statements, a tracked utility statement's queryId is set
 * to zero before the statement runs, so that a cached PlannedStmt that is
 * executed again is not counted again (pg_stat_statements' behaviour,
 * which we keep for equal counts).  The next hook then gets a copy of the
 * PlannedStmt (on our stack) that carries the queryId it had, so that
 * a pg_stat_statements loaded before us in shared_preload_libraries (and
 * so called from inside this hook) records the statement too, and both
 * extensions can be compared in one server.  An untracked statement is
 * passed down as it is: a pg_stat_statements inside then clears the
 * queryId itself, as it would alone.
 *
 * Nothing reached through pstmt is read or written after the call: a
 * COMMIT or ROLLBACK inside a procedure (CALL) can release the cached plan
 * that holds it.  What is needed afterwards is saved before.
 */
static void
pgss_ng_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	uint64		saved_queryId = pstmt->queryId;
	int			saved_stmt_location = pstmt->stmt_location;
	int			saved_stmt_len = pstmt->stmt_len;
	PlannedStmt next_pstmt = *pstmt;	/* for the next hook, if tracked */
	bool		tracked;
	PgssNgMeasure m;
	volatile int frame;			/* read in PG_CATCH */

	tracked = pgss_ng_stmt_ready() &&
		pgss_ng_enabled(exec_nested_level) && pgss_ng_track_utility;

	if (tracked)
		pstmt->queryId = UINT64CONST(0);

	if (!tracked || !pgss_ng_handled_utility(parsetree))
	{
		pgss_ng_cpu_other_call();
		if (pgss_ng_bumps_level_untimed(parsetree))
		{
			exec_nested_level++;
			PG_TRY();
			{
				next_ProcessUtility(tracked ? &next_pstmt : pstmt,
									queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
			}
			PG_FINALLY();
			{
				exec_nested_level--;
			}
			PG_END_TRY();
		}
		else
			next_ProcessUtility(tracked ? &next_pstmt : pstmt, queryString,
								readOnlyTree, context, params, queryEnv,
								dest, qc);
		/* e.g. a DO block not recorded itself, whose statements were */
		if (exec_nested_level == 0)
			pgss_ng_flush();
		return;
	}

	frame = saved_queryId != UINT64CONST(0) ?
		pgss_ng_stmt_begin(saved_queryId, exec_nested_level == 0, queryString,
						   saved_stmt_location, saved_stmt_len, 0) : -1;
	pgss_ng_measure_start(&m);

	exec_nested_level++;
	PG_TRY();
	{
		next_ProcessUtility(&next_pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		exec_nested_level--;
		if (frame >= 0)
			pgss_ng_stmt_failed(frame);
		PG_RE_THROW();
	}
	PG_END_TRY();
	exec_nested_level--;
	if (frame >= 0)
		pgss_ng_stmt_end(frame);

	pgss_ng_measure_stop(&m);
	{
		PgssNgStore s = {
			.query = queryString,
			.query_location = saved_stmt_location,
			.query_len = saved_stmt_len,
			.queryid = saved_queryId,
			.toplevel = exec_nested_level == 0,
			.phase = PGSS_NG_EXEC,
		};

		if (qc && (qc->commandTag == CMDTAG_COPY ||
				   qc->commandTag == CMDTAG_FETCH ||
				   qc->commandTag == CMDTAG_SELECT ||
				   qc->commandTag == CMDTAG_REFRESH_MATERIALIZED_VIEW))
			s.rows = qc->nprocessed;
		store_measured(&s, &m);
	}

	if (exec_nested_level == 0)
		pgss_ng_flush();
}
