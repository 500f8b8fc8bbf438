/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  Plan rows (plans.h): set-up, the merge of pending plan counts into the
 *	  rows at the statement's flush (a plan with no row becomes a work item,
 *	  plans_make.c), min/max reset, free, counters.  docs/design.md.
 *	  Owns: PlansControl, pgss_ng.plans_max.  Locking: see plans.h; under an
 *	  entry lock, every row is mapped before anything is written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "utils/guc.h"

#include "plans_int.h"

#define PLANS_LOCK_NAME			"pgss_ng_plan_dealloc"

/* GUC pgss_ng.plans_max: -1, twice pgss_ng.max */
static int	plans_max_setting = -1;

PlansControl *plans_ctl = NULL;
LWLock	   *plans_lock = NULL;

/*
 * plans_max_check
 *		GUC check hook of pgss_ng.plans_max: -1 or at least 100.
 */
static bool
plans_max_check(int *newval, void **extra, GucSource source)
{
	if (*newval == -1 || *newval >= 100)
		return true;
	GUC_check_errdetail("pgss_ng.plans_max must be -1 (twice pgss_ng.max) or at least 100.");
	return false;
}

/*
 * pgss_ng_plans_init
 *		Define pgss_ng.plans_max, and the plan text arena's GUC.  Called
 *		from _PG_init while preloading (through pgss_ng_stmt_init).
 */
void
pgss_ng_plans_init(void)
{
	DefineCustomIntVariable("pgss_ng.plans_max",
							"Sets the maximum number of plan rows kept by "
							"pgss_ng (-1: twice pgss_ng.max).",
							NULL,
							&plans_max_setting,
							-1,
							-1,
							INT_MAX / 4,
							PGC_POSTMASTER,
							0,
							plans_max_check, NULL, NULL);
	pgss_ng_plantext_init();
}

Size
pgss_ng_plans_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(PlansControl)),
					pgss_ng_plantext_shmem_size());
}

void
pgss_ng_plans_shmem_request(void)
{
	RequestNamedLWLockTranche(PLANS_LOCK_NAME, 1);
}

/*
 * pgss_ng_plans_shmem_startup
 *		Create or find the plan rows' control block and the plan text
 *		arena's.  Called with AddinShmemInitLock held.
 */
void
pgss_ng_plans_shmem_startup(void)
{
	bool		found;

	plans_ctl = ShmemInitStruct("pgss_ng plans", sizeof(PlansControl),
								&found);
	plans_lock = &GetNamedLWLockTranche(PLANS_LOCK_NAME)->lock;
	if (!found)
	{
		pg_atomic_init_u32(&plans_ctl->nrows, 0);
		pg_atomic_init_u64(&plans_ctl->evicted, 0);
		pg_atomic_init_u64(&plans_ctl->calls_dropped, 0);
	}
	pgss_ng_plantext_shmem_startup();
}

/*
 * plans_max
 *		pgss_ng.plans_max in effect: the setting, or twice the statement
 *		kind's max as published (follows its reloads).
 */
int
plans_max(void)
{
	if (plans_max_setting >= 0)
		return plans_max_setting;
	return 2 * pgss_ng_kind_max_entries(pgss_ng_stmt_kind);
}

void
plans_count_calls_dropped(int64 n)
{
	if (n > 0)
		pg_atomic_fetch_add_u64(&plans_ctl->calls_dropped, (uint64) n);
}

/*
 * plans_map_rows
 *		Map every row of a statement's list, so that the code that writes
 *		them next under the entry lock cannot raise in dsa_get_address
 *		(a segment this backend had not mapped).  May raise an ERROR
 *		before anything is written.
 */
void
plans_map_rows(dsa_area *area, const PgssNgStmtPlans *sp)
{
	dsa_pointer p;

	for (p = sp->rows; DsaPointerIsValid(p); p = ROW(area, p)->next)
		;
}

/*
 * flush_plans
 *		pgss_ng_plans_flush() of any pending data: one pass maps every row
 *		and finds each plan's before anything is written (dsa_get_address
 *		may raise); after it nothing raises.  A plan with no row goes to a
 *		work item (pgss_ng_plans_work makes it).
 */
static void
flush_plans(dsa_area *area, PgssNgStmtPlans *sp, const PgssNgPlanPending *pp,
			const PgssNgStmtKey *key, TimestampTz now, bool fresh)
{
	PgssNgPlanRow *rows[PGSS_NG_PENDING_PLANS] = {NULL};
	dsa_pointer p;
	int			i;

	for (p = sp->rows; DsaPointerIsValid(p);)
	{
		PgssNgPlanRow *row = ROW(area, p);

		for (i = 0; i < pp->n; i++)
			if (pp->plan[i].planid == row->planid)
				rows[i] = row;
		p = row->next;
	}
	for (i = 0; i < pp->n; i++)
	{
		if (rows[i])
			pgss_ng_plans_merge_row(rows[i], &pp->plan[i], now, fresh);
		else
			plans_work_add(key, &pp->plan[i], fresh, false, NULL, 0);
	}
	plans_count_calls_dropped(pp->lost);
}

/*
 * pgss_ng_plans_area
 *		The statement kind's DSA area, where plan rows live (for plans.h's
 *		inline code).
 */
dsa_area *
pgss_ng_plans_area(void)
{
	return pgss_ng_kind_area(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_plans_flush_slow
 *		pgss_ng_plans_flush() past its one-plan case (plans.h).
 */
void
pgss_ng_plans_flush_slow(PgssNgStmtPlans *sp, const PgssNgPlanPending *pp,
						 const PgssNgStmtKey *key, TimestampTz now,
						 bool fresh)
{
	flush_plans(pgss_ng_kind_area(pgss_ng_stmt_kind), sp, pp, key, now,
				fresh);
}

/*
 * plans_free_row
 *		Free a row that is on no list, and its text; one row fewer.
 */
void
plans_free_row(dsa_area *area, dsa_pointer p)
{
	pgss_ng_plantext_release(area, ROW(area, p)->text);
	dsa_free(area, p);
	pg_atomic_fetch_sub_u32(&plans_ctl->nrows, 1);
}

/* Free every row of a chain (linked by next). */
static void
free_chain(dsa_area *area, dsa_pointer p)
{
	while (DsaPointerIsValid(p))
	{
		dsa_pointer next = ROW(area, p)->next;

		plans_free_row(area, p);
		p = next;
	}
}

/*
 * pgss_ng_plans_free
 *		Free a statement's plan rows and their texts (the statement's
 *		free callback: nobody else can see it).
 */
void
pgss_ng_plans_free(PgssNgStmtPlans *sp)
{
	free_chain(pgss_ng_kind_area(pgss_ng_stmt_kind), sp->rows);
	sp->rows = InvalidDsaPointer;
	sp->nrows = 0;
}

/*
 * pgss_ng_plans_reset_minmax
 *		Restart the min/max of a statement's plan rows (its min/max reset;
 *		entry lock held exclusively).
 */
void
pgss_ng_plans_reset_minmax(PgssNgStmtPlans *sp)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	dsa_pointer p;

	plans_map_rows(area, sp);
	for (p = sp->rows; DsaPointerIsValid(p); p = ROW(area, p)->next)
	{
		PgssNgPlanRow *row = ROW(area, p);

		row->min_time = 0;
		row->max_time = 0;
		row->have_minmax = false;
	}
}

/*
 * pgss_ng_plans_count_slow
 *		pgss_ng_plans_count() for a plan that is not the pending data's
 *		first: its slot, or a new one; none left, lost (counted at the
 *		flush) and NULL.  A new slot starts empty, its min/max at ms.
 */
PgssNgPlanCounts *
pgss_ng_plans_count_slow(PgssNgPlanPending *pp, uint64 planid, double ms)
{
	PgssNgPlanCounts *pc = pp->plan;
	PgssNgPlanCounts *end = pp->plan + pp->n;

	while (pc < end && pc->planid != planid)
		pc++;
	if (pc < end)
		return pc;
	if (pp->n == PGSS_NG_PENDING_PLANS)
	{
		pp->lost++;
		return NULL;
	}
	pp->n++;
	pc->planid = planid;
	pc->calls = 0;
	pc->total_time = 0;
	pc->min_time = ms;
	pc->max_time = ms;
	pc->rows = 0;
	return pc;
}

/*
 * pgss_ng_plans_stats
 *		The plan rows' counters of pgss_ng_info (atomic reads).
 */
void
pgss_ng_plans_stats(PgssNgPlansStats *out)
{
	out->rows = (int64) pg_atomic_read_u32(&plans_ctl->nrows);
	out->rows_max = plans_max();
	out->evicted = (int64) pg_atomic_read_u64(&plans_ctl->evicted);
	out->calls_dropped = (int64) pg_atomic_read_u64(&plans_ctl->calls_dropped);
	pgss_ng_plantext_stats(&out->text);
}

/*
 * pgss_ng_plans_reset_counters
 *		Restart the event counters of the plan rows (full reset).
 */
void
pgss_ng_plans_reset_counters(void)
{
	pg_atomic_write_u64(&plans_ctl->evicted, 0);
	pg_atomic_write_u64(&plans_ctl->calls_dropped, 0);
	pgss_ng_plantext_reset_counters();
}
