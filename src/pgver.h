/*-------------------------------------------------------------------------
 *
 * pgver.h
 *	  Every difference between the PostgreSQL major versions pgss_ng
 *	  builds against (15, 16, 17, 18), in one place.
 *
 * The rest of the source tree is written once, against the names defined
 * here; no other file tests PG_VERSION_NUM.  Each section below says which
 * server versions differ and how.  Hook signatures that differ are given as
 * parameter-list and argument-list macros, so that no #if sits inside a
 * parameter list.
 *
 * Server-side measurements that only some versions have are announced by
 * PGSS_NG_HAVE_* macros (1 or 0), with accessors that are only defined
 * where the value exists; code that records such a value tests the macro
 * (and a column fed by it is NULL where it is 0).
 *
 * Locking: none; declarations only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_PGVER_H
#define PGSS_NG_PGVER_H

#include "access/sdir.h"
#include "executor/execdesc.h"
#include "executor/instrument.h"
#include "jit/jit.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "pgss_ng supports PostgreSQL 15, 16, 17 and 18"
#endif

/*
 * Query jumbling: JumbleState, LocationLen, CleanQuerytext() moved from
 * utils/queryjumble.h to nodes/queryjumble.h in 16.
 */
#if PG_VERSION_NUM >= 160000
#include "nodes/queryjumble.h"
#else
#include "utils/queryjumble.h"
#endif

/*
 * Normalization of squashed lists (18).  From 18 on, core jumbling
 * records a list of constants that it "squashes" (IN (1, 2, 3),
 * ARRAY[1, 2, 3]) as one LocationLen with squashed = true whose length is
 * already set (the extent of the list's elements, inside its brackets),
 * and records every PARAM_EXTERN parameter ($1) with extern_param = true.
 * pg_stat_statements 1.12 then writes a squashed list as its $n symbol
 * followed by PGSS_NG_SQUASHED_SUFFIX (a comment), and replaces external
 * parameters by renumbered $n symbols only when the statement has a
 * squashed list (JumbleState.has_squashed_lists; highest_extern_param_id
 * is then 0), keeping their text otherwise.
 * Before 18 neither exists: no entry is squashed or an external parameter.
 */
#if PG_VERSION_NUM >= 180000
#define pgss_ng_loc_squashed(loc)		((loc)->squashed)
#define pgss_ng_loc_extern_param(loc)	((loc)->extern_param)
#define pgss_ng_jstate_has_squashed(js) ((js)->has_squashed_lists)
#else
#define pgss_ng_loc_squashed(loc)		((void) (loc), false)
#define pgss_ng_loc_extern_param(loc)	((void) (loc), false)
#define pgss_ng_jstate_has_squashed(js) ((void) (js), false)
#endif

/* What a squashed list is replaced with, after its $n symbol. */
#define PGSS_NG_SQUASHED_SUFFIX			" /*, ... */"

/*
 * ExecutorRun_hook: 18 dropped the execute_once argument.  Use as
 *		static void f(PGSS_NG_EXECUTOR_RUN_PARAMS);
 *		prev(PGSS_NG_EXECUTOR_RUN_ARGS);
 */
#if PG_VERSION_NUM >= 180000
#define PGSS_NG_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define PGSS_NG_EXECUTOR_RUN_ARGS	queryDesc, direction, count
#else
#define PGSS_NG_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, \
	bool execute_once
#define PGSS_NG_EXECUTOR_RUN_ARGS	queryDesc, direction, count, execute_once
#endif

/*
 * ExecutorStart_hook, ExecutorFinish_hook, ExecutorEnd_hook,
 * ProcessUtility_hook, planner_hook, post_parse_analyze_hook: the same in
 * 15 to 18.  (An 18 development version made ExecutorStart return bool;
 * 18.0 went back to void.)
 */

/*
 * What the server's own pg_stat_statements does in its hooks, which
 * pgss_ng mirrors so that counts, "toplevel" and texts agree:
 *
 * PGSS_NG_ONE_NESTING_LEVEL: from 17 there is one nesting level.
 * Planning always raises it (timed or not), and so does every utility
 * statement but EXECUTE and PREPARE (timed or not).  In 15 and 16 a
 * separate planner level is raised only while planning is timed, and a
 * utility statement raises the level only while it is timed.
 *
 * PGSS_NG_TRACKS_DEALLOCATE: from 17 DEALLOCATE is timed and counted like
 * any utility statement (its name becomes a constant); before, it is
 * ignored like PREPARE.
 *
 * PGSS_NG_PARSE_CLEARS_EXECUTE_ONLY: after parse analysis, 15 clears the
 * queryId of every utility statement it does not time (EXECUTE, PREPARE,
 * DEALLOCATE); from 16 only that of EXECUTE, and a utility statement whose
 * constants core jumbling recorded (new in 16) gets its normalized entry
 * there, as other statements do.
 *
 * PGSS_NG_ES_ROWS: the rows of an execution: EState.es_total_processed
 * (from 16: summed over all ExecutorRun calls of the portal) rather than
 * es_processed (the last call's).
 */
#define PGSS_NG_ONE_NESTING_LEVEL		(PG_VERSION_NUM >= 170000)
#define PGSS_NG_TRACKS_DEALLOCATE		(PG_VERSION_NUM >= 170000)
#define PGSS_NG_PARSE_CLEARS_EXECUTE_ONLY (PG_VERSION_NUM >= 160000)
#if PG_VERSION_NUM >= 160000
#define PGSS_NG_ES_ROWS(es)				((es)->es_total_processed)
#else
#define PGSS_NG_ES_ROWS(es)				((es)->es_processed)
#endif

/*
 * Block I/O times (BufferUsage, track_io_timing).  Up to 16 the server
 * measures one read time and one write time for shared and local blocks
 * together (blk_read_time / blk_write_time; pg_stat_statements 1.10); from
 * 17 it measures shared and local blocks apart (shared_blk_*_time,
 * local_blk_*_time; pg_stat_statements 1.11).  PGSS_NG_BUF_SHARED_*_TIME is
 * the shared (before 17: the combined) time, an instr_time.
 */
#if PG_VERSION_NUM >= 170000
#define PGSS_NG_HAVE_LOCAL_BLK_TIME		1
#define PGSS_NG_BUF_SHARED_READ_TIME(b)		((b)->shared_blk_read_time)
#define PGSS_NG_BUF_SHARED_WRITE_TIME(b)	((b)->shared_blk_write_time)
#define PGSS_NG_BUF_LOCAL_READ_TIME(b)		((b)->local_blk_read_time)
#define PGSS_NG_BUF_LOCAL_WRITE_TIME(b)		((b)->local_blk_write_time)
#else
#define PGSS_NG_HAVE_LOCAL_BLK_TIME		0
#define PGSS_NG_BUF_SHARED_READ_TIME(b)		((b)->blk_read_time)
#define PGSS_NG_BUF_SHARED_WRITE_TIME(b)	((b)->blk_write_time)
#endif

/* WalUsage.wal_buffers_full: times the WAL buffers were full (18). */
#if PG_VERSION_NUM >= 180000
#define PGSS_NG_HAVE_WAL_BUFFERS_FULL	1
#define PGSS_NG_WAL_BUFFERS_FULL(w)		((w)->wal_buffers_full)
#else
#define PGSS_NG_HAVE_WAL_BUFFERS_FULL	0
#endif

/*
 * JitInstrumentation.deform_counter: time spent deforming tuples, included
 * in generation_counter (17).  pg_stat_statements 1.11 counts a statement
 * in jit_deform_count when this time is non-zero.
 */
#if PG_VERSION_NUM >= 170000
#define PGSS_NG_HAVE_JIT_DEFORM			1
#define PGSS_NG_JIT_DEFORM_TIME(j)		((j)->deform_counter)
#else
#define PGSS_NG_HAVE_JIT_DEFORM			0
#endif

/*
 * Parallel workers planned and launched by one execution: EState's
 * es_parallel_workers_to_launch / es_parallel_workers_launched (18).
 */
#if PG_VERSION_NUM >= 180000
#define PGSS_NG_HAVE_PARALLEL_WORKERS	1
#define PGSS_NG_PARALLEL_WORKERS_TO_LAUNCH(es) \
	((es)->es_parallel_workers_to_launch)
#define PGSS_NG_PARALLEL_WORKERS_LAUNCHED(es) \
	((es)->es_parallel_workers_launched)
#else
#define PGSS_NG_HAVE_PARALLEL_WORKERS	0
#endif

/*
 * The number of a parallel group's leader, which a parallel worker knows
 * and a leader has as its own: a ProcNumber from 17 (0 .. MaxBackends - 1
 * for backends), a BackendId before (1 .. MaxBackends).  Core names it for
 * the temporary relations a group shares.
 */
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#define PGSS_NG_PARALLEL_GROUP_SLOT()	((int) ProcNumberForTempRelations())
#else
#include "storage/backendid.h"
#define PGSS_NG_PARALLEL_GROUP_SLOT()	((int) BackendIdForTempRelations())
#endif

/*
 * dshash: 17 added dshash_parameters.copy_function, which dshash uses to
 * copy keys in; a zero-filled pointer would crash.
 */
#if PG_VERSION_NUM >= 170000
#define PGSS_NG_DSHASH_SET_COPY(params) \
	((params)->copy_function = dshash_memcpy)
#else
#define PGSS_NG_DSHASH_SET_COPY(params)	((void) (params))
#endif

/*
 * DSA segment sizes: from 17 an area can be made with its own first and
 * largest DSM segment sizes (dsa_create_in_place_ext); before, every area
 * grows by segments of 1 MB, 2 MB, 2 MB, 4 MB, 4 MB... (the sizes are
 * ignored).  PGSS_NG_DSA_SIZES_SET says whether they are used.
 */
#if PG_VERSION_NUM >= 170000
#define PGSS_NG_DSA_SIZES_SET	1
#define pgss_ng_dsa_create_in_place(place, size, tranche, first, largest) \
	dsa_create_in_place_ext((place), (size), (tranche), NULL, (first), \
							(largest))
#else
#define PGSS_NG_DSA_SIZES_SET	0
#define pgss_ng_dsa_create_in_place(place, size, tranche, first, largest) \
	((void) (first), (void) (largest), \
	 dsa_create_in_place((place), (size), (tranche), NULL))
#endif

/*
 * The postmaster's list of registered background workers
 * (postmaster/bgworker_internals.h, which the user includes): an slist up
 * to 17, a dlist from 18.  PGSS_NG_BGWORKER_ITER declares an iterator,
 * PGSS_NG_BGWORKER_FOREACH walks the list with it.
 */
#if PG_VERSION_NUM >= 180000
#define PGSS_NG_BGWORKER_ITER	dlist_iter
#define PGSS_NG_BGWORKER_FOREACH(iter) \
	dlist_foreach(iter, &BackgroundWorkerList)
#else
#define PGSS_NG_BGWORKER_ITER	slist_iter
#define PGSS_NG_BGWORKER_FOREACH(iter) \
	slist_foreach(iter, &BackgroundWorkerList)
#endif

/*
 * A GUC check hook's extra: allocated with malloc() before 16, with
 * guc_malloc() (the GUC memory context) from 16 on, as the GUC machinery
 * frees it accordingly.
 */
#if PG_VERSION_NUM >= 160000
#define PGSS_NG_GUC_EXTRA_ALLOC(size)	guc_malloc(LOG, (size))
#else
#define PGSS_NG_GUC_EXTRA_ALLOC(size)	malloc(size)
#endif

/*
 * Plan identity (18).  PlannedStmt.planId (int64) holds a plan identifier
 * that a module may set in its planner hook; the server reports it
 * (pgstat_report_plan_id(), from planner() and ExecutorStart()), and a
 * cached plan's copy keeps it.  Before 18 there is no such field: pgss_ng
 * keeps a backend-local map from each PlannedStmt to its id (planid.c).
 * PGSS_NG_PLANID_GET / _SET read and write it where it exists.
 *
 * EXPLAIN's state: NewExplainState() and ExplainState moved from
 * commands/explain.h to commands/explain_state.h in 18.
 */
#if PG_VERSION_NUM >= 180000
#define PGSS_NG_HAVE_PLANNEDSTMT_PLANID	1
#define PGSS_NG_PLANID_GET(ps)			((uint64) (ps)->planId)
#define PGSS_NG_PLANID_SET(ps, id)		((ps)->planId = (int64) (id))
#define PGSS_NG_HAVE_EXPLAIN_STATE_H	1
#else
#define PGSS_NG_HAVE_PLANNEDSTMT_PLANID	0
#define PGSS_NG_HAVE_EXPLAIN_STATE_H	0
#endif

#endif							/* PGSS_NG_PGVER_H */
