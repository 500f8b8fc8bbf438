/*-------------------------------------------------------------------------
 *
 * plans_evict.c
 *	  Eviction of plan rows past pgss_ng.plans_max: a run keeps the most
 *	  valuable PLANS_EVICT_KEEP_PERCENT of plans_max (calls weighted by
 *	  recency) and unlinks the others under their entry locks.
 *	  docs/design.md, "Plan rows".  Locking: pgss_ng_plan_dealloc for a run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/binaryheap.h"

#include "plans_int.h"
#include "stmt_kind_int.h"

/*
 * row_value
 *		A row's value for eviction at now: its calls, weighted by the
 *		recency of its last one (halving every 60 s, as an entry's usage
 *		does): recent and frequent plans stay.  Nothing to keep up to date
 *		at a merge.
 */
static double
row_value(const PgssNgPlanRow *row, TimestampTz now)
{
	return pgss_ng_kind_decayed_usage((double) row->calls, row->last_call,
									  now);
}

/* binaryheap comparator of an eviction run: the most valuable first. */
typedef struct PlanVictim
{
	PgssNgStmtKey key;
	dsa_pointer row;
	double		value;
	TimestampTz last_call;
} PlanVictim;

static int
victim_cmp(Datum a, Datum b, void *arg)
{
	const PlanVictim *va = (const PlanVictim *) DatumGetPointer(a);
	const PlanVictim *vb = (const PlanVictim *) DatumGetPointer(b);

	if (va->value != vb->value)
		return va->value > vb->value ? 1 : -1;
	return va->last_call > vb->last_call ? 1 :
		(va->last_call < vb->last_call ? -1 : 0);
}

/* An eviction run: the least valuable rows seen so far, in a heap. */
typedef struct EvictRun
{
	TimestampTz now;
	int			wanted;
	int			n;
	PlanVictim *victims;
	binaryheap *heap;
} EvictRun;

/*
 * evict_visit
 *		pgss_ng_kind_foreach visitor of an eviction run: offer each row of
 *		the statement, valued by row_value() (ties: the least
 *		recently called goes first), to the run's bounded heap.  Entry and
 *		partition locks held shared.
 */
static bool
evict_visit(PgssNgKind *kind, const void *key, const void *shared_data,
			void *arg)
{
	const PgssNgStmtPlans *sp = &((const PgssNgStmtShared *) shared_data)->plans;
	EvictRun   *er = (EvictRun *) arg;
	dsa_area   *area = pgss_ng_kind_area(kind);
	dsa_pointer p;

	for (p = sp->rows; DsaPointerIsValid(p);)
	{
		const PgssNgPlanRow *row = ROW(area, p);
		PlanVictim	v;

		memcpy(&v.key, key, sizeof(PgssNgStmtKey));
		v.row = p;
		v.value = row_value(row, er->now);
		v.last_call = row->last_call;
		if (er->n < er->wanted)
		{
			er->victims[er->n] = v;
			binaryheap_add(er->heap, PointerGetDatum(&er->victims[er->n]));
			er->n++;
		}
		else if (victim_cmp(PointerGetDatum(&v),
							binaryheap_first(er->heap), NULL) < 0)
		{
			PlanVictim *top = (PlanVictim *)
				DatumGetPointer(binaryheap_first(er->heap));

			*top = v;
			binaryheap_replace_first(er->heap, PointerGetDatum(top));
		}
		p = row->next;
	}
	return false;
}

/*
 * unlink_victim
 *		pgss_ng_kind_update callback of an eviction run: take the victim's
 *		row (the very row examined: its pointer) off its statement's list;
 *		v->row is left invalid when it is no longer there.
 */
static void
unlink_victim(void *shared_data, void *arg)
{
	PgssNgStmtPlans *sp = &((PgssNgStmtShared *) shared_data)->plans;
	PlanVictim *v = (PlanVictim *) arg;
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	dsa_pointer *link;

	plans_map_rows(area, sp);
	for (link = &sp->rows; DsaPointerIsValid(*link);
		 link = &ROW(area, *link)->next)
	{
		if (*link == v->row)
		{
			*link = ROW(area, v->row)->next;
			sp->nrows--;
			return;
		}
	}
	v->row = InvalidDsaPointer;
}

/*
 * plans_evict_rows
 *		If rows are past plans_max and no other backend is evicting
 *		(pgss_ng_plan_dealloc, not waited for), evict the least valuable down
 *		to PLANS_EVICT_KEEP_PERCENT of it: one pass (entry locks shared) fills a
 *		bounded heap, then each victim leaves its list under its entry lock and
 *		is freed; its counts stay in its statement's.  Memory: the heap, in
 *		CurrentMemoryContext.
 */
void
plans_evict_rows(void)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	int			max = plans_max();
	int			n = (int) pg_atomic_read_u32(&plans_ctl->nrows);
	EvictRun	er;
	int			i;

	if (n <= max || !LWLockConditionalAcquire(plans_lock, LW_EXCLUSIVE))
		return;
	n = (int) pg_atomic_read_u32(&plans_ctl->nrows);
	er.wanted = n - (int) ((int64) max * PLANS_EVICT_KEEP_PERCENT / 100);
	if (er.wanted <= 0)
	{
		LWLockRelease(plans_lock);
		return;
	}
	er.now = GetCurrentTimestamp();
	er.n = 0;
	er.victims = palloc(sizeof(PlanVictim) * er.wanted);
	er.heap = binaryheap_allocate(er.wanted, victim_cmp, NULL);
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, evict_visit, NULL, &er);
	for (i = 0; i < er.n; i++)
	{
		PlanVictim *v = &er.victims[i];

		if (pgss_ng_kind_update(pgss_ng_stmt_kind, &v->key, unlink_victim, v) &&
			DsaPointerIsValid(v->row))
		{
			plans_free_row(area, v->row);
			pg_atomic_fetch_add_u64(&plans_ctl->evicted, 1);
		}
	}
	LWLockRelease(plans_lock);
	binaryheap_free(er.heap);
	pfree(er.victims);
}
