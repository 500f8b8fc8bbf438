/*-------------------------------------------------------------------------
 *
 * hooks.c
 *	  The parse analysis, planner and utility hooks (the executor's are in
 *	  hooks_exec.c) and the GUCs pgss_ng.track, track_utility and
 *	  track_planning.  They decide *what* is recorded as the server's
 *	  pg_stat_statements does (pgver.h: where versions differ), push failure
 *	  frames and publish the running key for the wait sampler; no lock.
 *	  docs/design.md, "The hooks, and pg_stat_statements 1.10".
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
#include "hooks_int.h"
#include "planid.h"
#include "stmt/stmt_kind.h"
#include "stmt/waits.h"

/*
 * GUCs read by the hooks: the values in effect of pgss_ng.track, ... and
 * of pg_stat_statements' names for them (settings_mirror.c)
 */
int			pgss_ng_track = PGSS_NG_TRACK_TOP;
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
int			pgss_ng_exec_nested_level = 0;
static int	plan_nested_level = 0;

/* Saved hook values */
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

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

/*
 * frame_source
 *		Fill the statement of a frame f (NULL past the frames kept) that is
 *		not an executor call: queryid, and where its text is.
 */
static inline void
frame_source(PgssNgFrame *f, uint64 queryid, const char *query,
			 int query_location, int query_len)
{
	if (f == NULL)
		return;
	f->queryid = queryid;
	f->query = query;
	f->query_location = query_location;
	f->query_len = query_len;
}

static void pgss_ng_post_parse_analyze(ParseState *pstate, Query *query,
									   JumbleState *jstate);
static PlannedStmt *pgss_ng_planner(Query *parse, const char *query_string,
									int cursorOptions,
									ParamListInfo boundParams);
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

	pgss_ng_frames_init();

	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = pgss_ng_post_parse_analyze;
	prev_planner_hook = planner_hook;
	planner_hook = pgss_ng_planner;
	pgss_ng_exec_hooks_init();
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = pgss_ng_ProcessUtility;
}

/*
 * store_measured
 *		pgss_ng_stmt_count_call(s) of a planning or utility statement, with the time
 *		and usage measured around it (pgss_ng_measure_stop done).
 */
static void
store_measured(PgssNgCall *s, const PgssNgMeasure *m)
{
	s->total_time = m->duration_ms;
	s->bufusage = &m->bufusage;
	s->walusage = &m->walusage;
	s->cpu = m->cpu_sampled ? &m->cpu : NULL;
	pgss_ng_stmt_count_call(s);
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

	if (!pgss_ng_stmt_ready() || !pgss_ng_enabled(pgss_ng_exec_nested_level))
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
		PgssNgCall s = {
			.query = pstate->p_sourcetext,
			.query_location = query->stmt_location,
			.query_len = query->stmt_len,
			.queryid = query->queryId,
			.toplevel = pgss_ng_exec_nested_level == 0,
			.jstate = jstate,
		};

		pgss_ng_stmt_count_call(&s);
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
 *		For a tracked statement (query string, non-zero queryId): a failure
 *		frame around the planning, timed (ms, its buffer and WAL usage) with
 *		track_planning.  A level is raised meanwhile (from 17 the one
 *		nesting level, timed or not; before, the planner level while timed:
 *		pgver.h), so that functions the planner evaluates are not top-level.
 */
static PlannedStmt *
pgss_ng_planner(Query *parse, const char *query_string, int cursorOptions,
				ParamListInfo boundParams)
{
	PlannedStmt *result;
	PgssNgMeasure m;
	bool		timed;
	int		   *level;
	PgssNgFrame *f;
	int			frame;

	if (!(pgss_ng_stmt_ready() &&
		  pgss_ng_enabled(plan_nested_level + pgss_ng_exec_nested_level) &&
		  query_string && parse->queryId != UINT64CONST(0)))
	{
		pgss_ng_cpu_other_call();
		if (PGSS_NG_ONE_NESTING_LEVEL)
			return next_planner_nested(&pgss_ng_exec_nested_level, parse,
									   query_string, cursorOptions,
									   boundParams);
		return next_planner(parse, query_string, cursorOptions, boundParams);
	}

	pgss_ng_hooks_stmt_start();
	timed = pgss_ng_track_planning;
	level = PGSS_NG_ONE_NESTING_LEVEL ? &pgss_ng_exec_nested_level :
		timed ? &plan_nested_level : NULL;
	if (timed)
		pgss_ng_measure_start(&m);
	else
		pgss_ng_cpu_other_call();
	frame = pgss_ng_frame_push(&f,
							   level ? PGSS_NG_FRAME_TIMED : PGSS_NG_FRAME_PLAN,
							   pgss_ng_exec_nested_level == 0);
	frame_source(f, parse->queryId, query_string, parse->stmt_location,
				 parse->stmt_len);
	if (f != NULL)
	{
		if (timed)
			f->start = m.start;
		else
			INSTR_TIME_SET_CURRENT(f->start);
		if (level == NULL)
			f->subid = GetCurrentSubTransactionId();
	}

	if (level)
	{
		(*level)++;
		PG_TRY();
		{
			result = next_planner(parse, query_string, cursorOptions,
								  boundParams);
		}
		PG_CATCH();
		{
			(*level)--;
			pgss_ng_frame_failed(frame);
			PG_RE_THROW();
		}
		PG_END_TRY();
		(*level)--;
	}
	else
		result = next_planner(parse, query_string, cursorOptions,
							  boundParams);
	pgss_ng_frame_pop(frame);
	pgss_ng_planid_planned(result);

	if (timed)
	{
		PgssNgCall s = {
			.query = query_string,
			.query_location = parse->stmt_location,
			.query_len = parse->stmt_len,
			.queryid = parse->queryId,
			.toplevel = pgss_ng_exec_nested_level == 0,
			.phase = PGSS_NG_PHASE_PLAN,
		};

		pgss_ng_measure_stop(&m);
		store_measured(&s, &m);
	}

	return result;
}

/*
 * pgss_ng_ProcessUtility
 *		Record a utility statement (ms, rows of COPY/FETCH/SELECT INTO/
 *		REFRESH MATERIALIZED VIEW, buffers, WAL; a failure noted in the
 *		PG_CATCH), flushing at top level.  A tracked one's queryId is
 *		zeroed, as pg_stat_statements does, and the next hook gets a copy
 *		that keeps it (docs/design.md, "Utility queryId").  Nothing reached
 *		through pstmt is used after the call: a COMMIT in a CALL can free
 *		the plan holding it ("Pointers used after a call").
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
	volatile bool tracked;		/* read after PG_TRY */
	PgssNgMeasure m;
	PgssNgFrame *f;
	volatile int frame = -1;	/* read in PG_CATCH */
	volatile int waitkey = -1;

	tracked = pgss_ng_stmt_ready() &&
		pgss_ng_enabled(pgss_ng_exec_nested_level) && pgss_ng_track_utility;

	if (tracked)
		pstmt->queryId = UINT64CONST(0);

	if (!tracked || !pgss_ng_handled_utility(parsetree))
	{
		pgss_ng_cpu_other_call();
		if (pgss_ng_bumps_level_untimed(parsetree))
		{
			pgss_ng_exec_nested_level++;
			PG_TRY();
			{
				next_ProcessUtility(tracked ? &next_pstmt : pstmt,
									queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
			}
			PG_FINALLY();
			{
				pgss_ng_exec_nested_level--;
			}
			PG_END_TRY();
		}
		else
			next_ProcessUtility(tracked ? &next_pstmt : pstmt, queryString,
								readOnlyTree, context, params, queryEnv,
								dest, qc);
		/* e.g. a DO block not recorded itself, whose statements were */
		if (pgss_ng_exec_nested_level == 0)
			pgss_ng_flush();
		return;
	}

	pgss_ng_hooks_stmt_start();
	pgss_ng_measure_start(&m);
	if (saved_queryId != UINT64CONST(0))
	{
		frame = pgss_ng_frame_push(&f, PGSS_NG_FRAME_TIMED,
								   pgss_ng_exec_nested_level == 0);
		frame_source(f, saved_queryId, queryString, saved_stmt_location,
					 saved_stmt_len);
		if (f != NULL)
			f->start = m.start;
		waitkey = pgss_ng_waits_push(saved_queryId, GetUserId(),
									 pgss_ng_exec_nested_level);
	}

	pgss_ng_exec_nested_level++;
	PG_TRY();
	{
		next_ProcessUtility(&next_pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
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

	pgss_ng_measure_stop(&m);
	{
		PgssNgCall s = {
			.query = queryString,
			.query_location = saved_stmt_location,
			.query_len = saved_stmt_len,
			.queryid = saved_queryId,
			.toplevel = pgss_ng_exec_nested_level == 0,
			.phase = PGSS_NG_PHASE_EXEC,
		};

		if (qc && (qc->commandTag == CMDTAG_COPY ||
				   qc->commandTag == CMDTAG_FETCH ||
				   qc->commandTag == CMDTAG_SELECT ||
				   qc->commandTag == CMDTAG_REFRESH_MATERIALIZED_VIEW))
			s.rows = qc->nprocessed;
		store_measured(&s, &m);
	}

	if (pgss_ng_exec_nested_level == 0)
		pgss_ng_flush();
}
