/*-------------------------------------------------------------------------
 *
 * planid.c
 *	  Plan identity for the plan rows (stmt/plans.c): a hash of a plan's
 *	  shape (never constants, costs or estimates), computed once per plan
 *	  (on 18 into PlannedStmt.planId by the planner hook, before at its
 *	  first execution, into a map its context's reset cleans), and its
 *	  EXPLAIN (COSTS OFF) text, captured at ExecutorEnd; GUC
 *	  pgss_ng.track_plans.  What may raise runs guarded.  docs/design.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "access/xact.h"
#include "commands/explain.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "pgver.h"
#if PGSS_NG_HAVE_EXPLAIN_STATE_H
#include "commands/explain_state.h"
#endif

#include "planid.h"
#include "stmt/plans.h"
#include "stmt/stmt_kind.h"

/* GUC pgss_ng.track_plans */
static bool track_plans = true;

/*
 * Plan nodes below this depth are not looked at (a marker is hashed
 * instead): the walk needs no stack depth check, and so never raises.
 */
#define PLAN_JUMBLE_MAX_DEPTH	500

/* Values of a plan's shape, hashed 128 at a time (XXH3, chained seeds). */
typedef struct PlanJumble
{
	const PlannedStmt *ps;
	uint64		hash;
	int			depth;			/* of the node being added */
	int			n;
	uint64		buf[128];
} PlanJumble;

static void jumble_plan(PlanJumble *j, const Plan *plan);

/*
 * pgss_ng_planid_init
 *		Define pgss_ng.track_plans.  Called from _PG_init while preloading.
 */
void
pgss_ng_planid_init(void)
{
	DefineCustomBoolVariable("pgss_ng.track_plans",
							 "Selects whether pgss_ng keeps a row per plan of "
							 "each statement.",
							 NULL,
							 &track_plans,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

static void
jumble_add(PlanJumble *j, uint64 v)
{
	if (j->n == lengthof(j->buf))
	{
		j->hash = XXH3_64bits_withSeed(j->buf, sizeof(j->buf), j->hash);
		j->n = 0;
	}
	j->buf[j->n++] = v;
}

/* The OID of the relation a scan's range table index names, or 0. */
static Oid
scan_relid(PlanJumble *j, Index scanrelid)
{
	RangeTblEntry *rte;

	if (scanrelid == 0 || scanrelid > list_length(j->ps->rtable))
		return InvalidOid;
	rte = rt_fetch(scanrelid, j->ps->rtable);
	return rte->rtekind == RTE_RELATION ? rte->relid : InvalidOid;
}

static void
jumble_plans(PlanJumble *j, const List *plans)
{
	const ListCell *lc;

	jumble_add(j, list_length(plans));
	foreach(lc, plans)
		jumble_plan(j, (const Plan *) lfirst(lc));
}

/*
 * jumble_plan
 *		Add a plan node and its children to the jumble: what EXPLAIN
 *		(COSTS OFF) shows of its kind, and nothing it does not (see the
 *		file header); below PLAN_JUMBLE_MAX_DEPTH, a marker.  No ERROR.
 */
static void
jumble_plan(PlanJumble *j, const Plan *plan)
{
	const ListCell *lc;

	if (plan == NULL)
	{
		jumble_add(j, 0);
		return;
	}
	if (j->depth >= PLAN_JUMBLE_MAX_DEPTH)
	{
		jumble_add(j, UINT64CONST(0xdeeb));
		return;
	}
	j->depth++;
	jumble_add(j, (uint64) nodeTag(plan) |
			   ((uint64) plan->parallel_aware << 32) |
			   ((uint64) plan->async_capable << 33));
	switch (nodeTag(plan))
	{
		case T_IndexScan:
			jumble_add(j, ((const IndexScan *) plan)->indexid);
			jumble_add(j, ScanDirectionIsBackward(((const IndexScan *) plan)->indexorderdir));
			jumble_add(j, scan_relid(j, ((const Scan *) plan)->scanrelid));
			break;
		case T_IndexOnlyScan:
			jumble_add(j, ((const IndexOnlyScan *) plan)->indexid);
			jumble_add(j, ScanDirectionIsBackward(((const IndexOnlyScan *) plan)->indexorderdir));
			jumble_add(j, scan_relid(j, ((const Scan *) plan)->scanrelid));
			break;
		case T_BitmapIndexScan:
			jumble_add(j, ((const BitmapIndexScan *) plan)->indexid);
			break;
		case T_SeqScan:
		case T_SampleScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_ForeignScan:
			jumble_add(j, scan_relid(j, ((const Scan *) plan)->scanrelid));
			break;
		case T_CustomScan:
			jumble_add(j, scan_relid(j, ((const Scan *) plan)->scanrelid));
			jumble_add(j, hash_bytes((const unsigned char *) ((const CustomScan *) plan)->methods->CustomName,
									 strlen(((const CustomScan *) plan)->methods->CustomName)));
			jumble_plans(j, ((const CustomScan *) plan)->custom_plans);
			break;
		case T_SubqueryScan:
			jumble_plan(j, ((const SubqueryScan *) plan)->subplan);
			break;
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
			jumble_add(j, ((const Join *) plan)->jointype);
			break;
		case T_Agg:
			jumble_add(j, ((const Agg *) plan)->aggstrategy);
			jumble_add(j, ((const Agg *) plan)->aggsplit);
			break;
		case T_SetOp:
			jumble_add(j, ((const SetOp *) plan)->strategy);
			jumble_add(j, ((const SetOp *) plan)->cmd);
			break;
		case T_ModifyTable:
			{
				const ModifyTable *mt = (const ModifyTable *) plan;

				jumble_add(j, mt->operation);
				jumble_add(j, mt->onConflictAction);
				foreach(lc, mt->resultRelations)
					jumble_add(j, scan_relid(j, lfirst_int(lc)));
				break;
			}
		case T_Gather:
			jumble_add(j, ((const Gather *) plan)->num_workers);
			jumble_add(j, ((const Gather *) plan)->single_copy);
			break;
		case T_GatherMerge:
			jumble_add(j, ((const GatherMerge *) plan)->num_workers);
			break;
		case T_Append:
			jumble_plans(j, ((const Append *) plan)->appendplans);
			break;
		case T_MergeAppend:
			jumble_plans(j, ((const MergeAppend *) plan)->mergeplans);
			break;
		case T_BitmapAnd:
			jumble_plans(j, ((const BitmapAnd *) plan)->bitmapplans);
			break;
		case T_BitmapOr:
			jumble_plans(j, ((const BitmapOr *) plan)->bitmapplans);
			break;
		default:
			break;
	}
	/* the init plans' numbers; their trees are in the subplans */
	foreach(lc, plan->initPlan)
		jumble_add(j, ((const SubPlan *) lfirst(lc))->plan_id);
	jumble_plan(j, plan->lefttree);
	jumble_plan(j, plan->righttree);
	j->depth--;
}

/*
 * pgss_ng_planid_compute
 *		The plan id of ps (see the file header); never 0.  No ERROR.
 */
uint64
pgss_ng_planid_compute(const PlannedStmt *ps)
{
	PlanJumble	j;
	const ListCell *lc;

	j.ps = ps;
	j.hash = 0;
	j.depth = 0;
	j.n = 0;
	jumble_add(&j, ps->commandType);
	jumble_plan(&j, ps->planTree);
	/* every subplan a node uses, in order; an unused one is NULL */
	foreach(lc, ps->subplans)
		jumble_plan(&j, (const Plan *) lfirst(lc));
	j.hash = XXH3_64bits_withSeed(j.buf, j.n * sizeof(uint64), j.hash);
	return j.hash != 0 ? j.hash : 1;
}

#if PGSS_NG_HAVE_PLANNEDSTMT_PLANID

/*
 * planid_of
 *		The plan id of ps: its planId (set by this module's planner hook or
 *		another module's), or computed now and set (a plan made while
 *		pgss_ng.track_plans was off, or by a planner call not tracked).
 */
static inline uint64
planid_of(PlannedStmt *ps)
{
	uint64		planid = PGSS_NG_PLANID_GET(ps);

	if (unlikely(planid == 0))
	{
		planid = pgss_ng_planid_compute(ps);
		PGSS_NG_PLANID_SET(ps, planid);
	}
	return planid;
}

#else							/* !PGSS_NG_HAVE_PLANNEDSTMT_PLANID */

/* What compute_guarded computes, and for which PlannedStmt. */
typedef struct PlanIdCompute
{
	PlannedStmt *ps;
	uint64		planid;
} PlanIdCompute;

/* The map from a PlannedStmt to its plan id (simplehash). */
typedef struct PlanIdEntry
{
	const PlannedStmt *ps;		/* key */
	const Plan *tree;			/* its planTree then: a check */
	uint64		planid;
	char		status;
} PlanIdEntry;

#define SH_PREFIX		planid_map
#define SH_ELEMENT_TYPE	PlanIdEntry
#define SH_KEY_TYPE		const PlannedStmt *
#define SH_KEY			ps
#define SH_HASH_KEY(tb, key) \
	murmurhash32((uint32) ((uintptr_t) (key) >> 3) ^ \
				 (uint32) ((uint64) (uintptr_t) (key) >> 35))
#define SH_EQUAL(tb, a, b)	((a) == (b))
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* A reset callback of a plan's memory context: forgets its PlannedStmt. */
typedef struct PlanIdTag
{
	MemoryContextCallback cb;
	const PlannedStmt *ps;
} PlanIdTag;

static planid_map_hash *planid_map = NULL;

/* the map's entry found last (cleared with it) */
static const PlannedStmt *last_ps = NULL;
static const Plan *last_tree = NULL;
static uint64 last_planid = 0;

/*
 * planid_forget
 *		Reset callback: the memory of a PlannedStmt goes; forget its id
 *		before another PlannedStmt can take its address.
 */
static void
planid_forget(void *arg)
{
	const PlannedStmt *ps = ((PlanIdTag *) arg)->ps;

	if (planid_map)
		planid_map_delete(planid_map, ps);
	if (last_ps == ps)
		last_ps = NULL;
}

/*
 * compute_guarded
 *		Compute the plan id of a PlannedStmt, and remember it in the map
 *		with a reset callback on the memory context that holds it (none
 *		when that context has no memory left: computed again next time).
 *		Memory: the map in TopMemoryContext, the callback in the plan's
 *		context.
 */
static void
compute_guarded(void *arg)
{
	PlanIdCompute *pc = (PlanIdCompute *) arg;
	MemoryContext cxt = GetMemoryChunkContext(pc->ps);
	PlanIdTag  *tag;
	PlanIdEntry *e;
	bool		found;

	pc->planid = pgss_ng_planid_compute(pc->ps);
	tag = MemoryContextAllocExtended(cxt, sizeof(PlanIdTag),
									 MCXT_ALLOC_NO_OOM);
	if (tag == NULL)
		return;
	if (planid_map == NULL)
		planid_map = planid_map_create(TopMemoryContext, 64, NULL);
	tag->ps = pc->ps;
	tag->cb.func = planid_forget;
	tag->cb.arg = tag;
	MemoryContextRegisterResetCallback(cxt, &tag->cb);
	e = planid_map_insert(planid_map, pc->ps, &found);
	e->tree = pc->ps->planTree;
	e->planid = pc->planid;
	last_ps = pc->ps;
	last_tree = e->tree;
	last_planid = pc->planid;
}

/*
 * compute
 *		The plan id of ps, remembered (compute_guarded); 0 when that
 *		raised an ERROR (out of memory: logged, rate-limited).
 */
static uint64
compute(PlannedStmt *ps)
{
	PlanIdCompute pc = {.ps = ps};

	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "compute a plan id",
							compute_guarded, &pc))
		return 0;
	return pc.planid;
}

/*
 * planid_of
 *		The plan id of ps: the last one found, or the map's (whose entry
 *		must have ps's planTree: an address freed without a reset of its
 *		context and taken again is not trusted), or computed now.
 */
static inline uint64
planid_of(PlannedStmt *ps)
{
	PlanIdEntry *e;

	if (ps == last_ps && ps->planTree == last_tree)
		return last_planid;
	e = planid_map ? planid_map_lookup(planid_map, ps) : NULL;
	if (e == NULL || e->tree != ps->planTree)
		return compute(ps);
	last_ps = ps;
	last_tree = e->tree;
	last_planid = e->planid;
	return e->planid;
}

#endif							/* PGSS_NG_HAVE_PLANNEDSTMT_PLANID */

/*
 * pgss_ng_planid_planned
 *		The planner hook's part, for a tracked statement's plan: on 18, set
 *		PlannedStmt.planId when nobody did, so that the server reports it
 *		and a cached plan's copy keeps it.  Before 18, nothing: the id is
 *		computed at the plan's first execution (see the file header).
 */
void
pgss_ng_planid_planned(PlannedStmt *ps)
{
#if PGSS_NG_HAVE_PLANNEDSTMT_PLANID
	if (track_plans && ps->commandType != CMD_UTILITY &&
		PGSS_NG_PLANID_GET(ps) == 0)
		PGSS_NG_PLANID_SET(ps, pgss_ng_planid_compute(ps));
#endif
}

/* What capture_guarded captures, and for which plan row. */
typedef struct PlanCapture
{
	QueryDesc  *queryDesc;
	const PgssNgStmtKey *key;
	uint64		planid;
} PlanCapture;

/*
 * explain_plan
 *		EXPLAIN (COSTS OFF) of the plan being ended, without its final
 *		newline, handed to the plan's row (pgss_ng_plans_add_text).
 *		Memory: a context of its own, deleted.
 */
static void
explain_plan(PlanCapture *c)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "pgss_ng plan text",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	ExplainState *es = NewExplainState();
	int			len;

	es->costs = false;
	es->format = EXPLAIN_FORMAT_TEXT;
	ExplainPrintPlan(es, c->queryDesc);
	len = es->str->len;
	while (len > 0 && es->str->data[len - 1] == '\n')
		len--;
	MemoryContextSwitchTo(oldcxt);
	pgss_ng_plans_add_text(c->key, c->planid, es->str->data, len);
	MemoryContextDelete(cxt);
}

/*
 * capture_guarded
 *		explain_plan() in a subtransaction of its own (EXPLAIN reads the
 *		catalogs: locks, buffer pins, a resource owner), under
 *		pgss_ng_kind_guard(): after an ERROR the subtransaction is rolled
 *		back, which releases what EXPLAIN held, and the ERROR re-thrown to
 *		the guard, which logs it.  Memory: the caller's context is
 *		restored; the error data is copied there.
 */
static void
capture_guarded(void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		explain_plan((PlanCapture *) arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		ReThrowError(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
}

/*
 * The plan whose text this backend saw to last: its id and its
 * statement's key parts (dbid is the backend's), valid while
 * pgss_ng_plans_known_epoch is unchanged.
 */
static struct
{
	uint64		planid;
	uint64		queryid;
	Oid			userid;
	bool		toplevel;
	bool		valid;
	uint32		epoch;
}			seen_to;

/*
 * pgss_ng_planid_exec
 *		ExecutorEnd's part for a tracked statement: its plan id (0 with
 *		track_plans off or when not computed), and its EXPLAIN (COSTS OFF)
 *		text when pgss_ng_plans_text_wanted() asks (the last plan asked
 *		about is answered from seen_to).  A failed capture is logged and
 *		counted (plan_text_failures).  Nothing is captured outside a live
 *		transaction or in parallel mode.
 */
uint64
pgss_ng_planid_exec(QueryDesc *queryDesc, bool toplevel)
{
	PlannedStmt *ps = queryDesc->plannedstmt;
	uint64		planid;
	Oid			userid;
	PgssNgStmtKey key;
	PgssNgPlanText text;

	if (!track_plans)
		return 0;
	planid = planid_of(ps);
	if (planid == 0)
		return 0;
	userid = GetUserId();
	if (likely(seen_to.valid && seen_to.planid == planid &&
			   seen_to.queryid == (uint64) ps->queryId &&
			   seen_to.userid == userid && seen_to.toplevel == toplevel &&
			   seen_to.epoch == pgss_ng_plans_known_epoch))
		return planid;

	memset(&key, 0, sizeof(key));
	key.userid = userid;
	key.dbid = MyDatabaseId;
	key.queryid = ps->queryId;
	key.toplevel = toplevel;
	text = pgss_ng_plans_text_wanted(&key, planid);
	if (text == PGSS_NG_PLAN_TEXT_WANTED &&
		IsTransactionState() && !IsInParallelMode())
	{
		PlanCapture c = {.queryDesc = queryDesc, .key = &key,
		.planid = planid};

		if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "capture a plan text",
								capture_guarded, &c))
		{
			pgss_ng_plantext_count_failure();
			pgss_ng_plans_add_text(&key, planid, NULL, 0);
		}
	}
	seen_to.valid = text != PGSS_NG_PLAN_TEXT_LATER;
	seen_to.planid = planid;
	seen_to.queryid = ps->queryId;
	seen_to.userid = userid;
	seen_to.toplevel = toplevel;
	seen_to.epoch = pgss_ng_plans_known_epoch;
	return planid;
}
