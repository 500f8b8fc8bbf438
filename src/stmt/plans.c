/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  Plan rows of the statement kind (plans.h): merged by the statement's
 *	  flush, made after it from work items (counts of a plan with no row,
 *	  a captured text) with no lock held while allocating, read, reset,
 *	  saved and evicted past pgss_ng.plans_max; and what the backend knows
 *	  of the plans whose text it saw to.  Part of the statement kind.
 *	  docs/design.md, "Plan rows".
 *
 * Owns: the plan rows, PlansControl, the work items, the known plans.
 * Locking: see plans.h.  Code under an entry lock maps every row it will
 * touch before it writes anything (dsa_get_address may raise).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/binaryheap.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "plans.h"
#include "qtext.h"
#include "stmt_failures.h"
#include "stmt_kind_int.h"
#include "stmt_saved.h"

#define PLANS_LOCK_NAME			"pgss_ng_plan_dealloc"

/* Work items a backend holds between two flushes. */
#define PLAN_WORK_MAX			32

/* Plans a backend remembers having seen to the text of. */
#define KNOWN_PLANS_MAX			4096

/* Rows allocated never exceed plans_max + Min(plans_max, this). */
#define PLANS_BACKSTOP_MAX_EXTRA	20000

/* An eviction run keeps this share (percent) of plans_max. */
#define PLANS_EVICT_KEEP_PERCENT	95

/* Shared state of the plan rows, in main shared memory. */
typedef struct PlansControl
{
	pg_atomic_uint32 nrows;		/* rows allocated (linked or about to be) */
	pg_atomic_uint64 evicted;	/* rows evicted for plans_max */
	pg_atomic_uint64 calls_dropped; /* executions their row missed */
} PlansControl;

/*
 * A backend's work item: counts of a plan with no row at the flush (or
 * none), and a captured text (tried: a capture was tried; text NULL: it
 * failed).
 */
typedef struct PlanWork
{
	PgssNgStmtKey key;
	PgssNgPlanCounts counts;	/* counts.calls 0: a text alone */
	bool		fresh;			/* counts' min/max valid (no min/max reset) */
	bool		tried;
	char	   *text;			/* TopMemoryContext, or NULL */
	int			len;
} PlanWork;

/* A plan this backend has seen to the text of. */
typedef struct KnownPlan
{
	PgssNgStmtKey key;
	uint64		planid;
} KnownPlan;

/* GUC pgss_ng.plans_max: -1, twice pgss_ng.max */
static int	plans_max_setting = -1;

static PlansControl *plans_ctl = NULL;
static LWLock *plans_lock = NULL;

static PlanWork work[PLAN_WORK_MAX];
int			pgss_ng_plans_nwork = 0;	/* plans.h */
static PlanWork working;		/* the item being made, for the error path */
static bool working_valid = false;

static dsa_pointer unlinked = InvalidDsaPointer;	/* rows of a link that
												 * raised, to free */

static HTAB *known = NULL;

/* raised whenever this backend forgets its known plans (plans.h) */
uint32		pgss_ng_plans_known_epoch = 0;

#define ROW(area, p)	((PgssNgPlanRow *) dsa_get_address((area), (p)))

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
static int
plans_max(void)
{
	if (plans_max_setting >= 0)
		return plans_max_setting;
	return 2 * pgss_ng_kind_max_entries(pgss_ng_stmt_kind);
}

static void
count_calls_dropped(int64 n)
{
	if (n > 0)
		pg_atomic_fetch_add_u64(&plans_ctl->calls_dropped, (uint64) n);
}

/*
 * map_rows
 *		Map every row of a statement's list, so that the code that writes
 *		them next under the entry lock cannot raise in dsa_get_address
 *		(a segment this backend had not mapped).  May raise an ERROR
 *		before anything is written.
 */
static void
map_rows(dsa_area *area, const PgssNgStmtPlans *sp)
{
	dsa_pointer p;

	for (p = sp->rows; DsaPointerIsValid(p); p = ROW(area, p)->next)
		;
}

/* The row of planid on a (mapped) list, or NULL. */
static PgssNgPlanRow *
find_row(dsa_area *area, const PgssNgStmtPlans *sp, uint64 planid)
{
	dsa_pointer p;

	for (p = sp->rows; DsaPointerIsValid(p);)
	{
		PgssNgPlanRow *row = ROW(area, p);

		if (row->planid == planid)
			return row;
		p = row->next;
	}
	return NULL;
}

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

/*
 * work_add
 *		Queue a work item for the next pgss_ng_plans_work(); with no room
 *		left, its calls count as dropped and its text is freed.  No
 *		allocation, no ERROR: called under an entry lock too.
 */
static void
work_add(const PgssNgStmtKey *key, const PgssNgPlanCounts *pc, bool fresh,
		 bool tried, char *text, int len)
{
	PlanWork   *w;

	if (pgss_ng_plans_nwork == PLAN_WORK_MAX)
	{
		count_calls_dropped(pc->calls);
		if (text)
			pfree(text);
		return;
	}
	w = &work[pgss_ng_plans_nwork++];
	memcpy(&w->key, key, sizeof(PgssNgStmtKey));
	w->counts = *pc;
	w->fresh = fresh;
	w->tried = tried;
	w->text = text;
	w->len = len;
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
			work_add(key, &pp->plan[i], fresh, false, NULL, 0);
	}
	count_calls_dropped(pp->lost);
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
 * free_row
 *		Free a row that is on no list, and its text; one row fewer.
 */
static void
free_row(dsa_area *area, dsa_pointer p)
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

		free_row(area, p);
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

	map_rows(area, sp);
	for (p = sp->rows; DsaPointerIsValid(p); p = ROW(area, p)->next)
	{
		PgssNgPlanRow *row = ROW(area, p);

		row->min_time = 0;
		row->max_time = 0;
		row->have_minmax = false;
	}
}

/*
 * admit_row
 *		Admit one more row against the backstop (plans_max +
 *		Min(plans_max, PLANS_BACKSTOP_MAX_EXTRA)), by a compare-and-exchange
 *		loop: exact without a lock.  False when it is reached.
 */
static bool
admit_row(void)
{
	int			max = plans_max();
	uint32		backstop = (uint32) (max + Min(max, PLANS_BACKSTOP_MAX_EXTRA));
	uint32		n = pg_atomic_read_u32(&plans_ctl->nrows);

	do
	{
		if (n >= backstop)
			return false;
	} while (!pg_atomic_compare_exchange_u32(&plans_ctl->nrows, &n, n + 1));
	return true;
}

/*
 * make_row
 *		A new row, on no list, for a work item: its counts, its text stored
 *		in the plan text arena (a text that does not fit leaves plan NULL),
 *		made now.  InvalidDsaPointer when the backstop is reached or shared
 *		memory ran out (the kind's allocation back-off included).  No lock
 *		held; an ERROR (a DSM segment that cannot be made) leaves nothing
 *		allocated.
 */
static dsa_pointer
make_row(dsa_area *area, const PlanWork *w, TimestampTz now)
{
	volatile dsa_pointer text = InvalidDsaPointer;
	dsa_pointer p = InvalidDsaPointer;
	PgssNgPlanRow *row;

	if (pgss_ng_kind_alloc_backing_off(pgss_ng_stmt_kind) || !admit_row())
		return InvalidDsaPointer;
	PG_TRY();
	{
		if (w->text)
			text = pgss_ng_plantext_store(area, w->text, w->len);
		p = dsa_allocate_extended(area, sizeof(PgssNgPlanRow),
								  DSA_ALLOC_NO_OOM);
	}
	PG_CATCH();
	{
		pg_atomic_fetch_sub_u32(&plans_ctl->nrows, 1);
		pgss_ng_plantext_release(area, text);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!DsaPointerIsValid(p))
	{
		pg_atomic_fetch_sub_u32(&plans_ctl->nrows, 1);
		pgss_ng_plantext_release(area, text);
		return InvalidDsaPointer;
	}
	row = ROW(area, p);
	memset(row, 0, sizeof(*row));
	row->next = InvalidDsaPointer;
	row->planid = w->counts.planid;
	row->first_call = now;
	row->text = text;
	row->encoding = GetDatabaseEncoding();
	row->text_tried = w->tried;
	pgss_ng_plans_merge_row(row, &w->counts, now, w->fresh);
	return p;
}

/*
 * What link_rows does with a chain of rows that no list holds (made by
 * this backend, so mapped), and what it did.
 */
typedef struct LinkRows
{
	dsa_pointer chain;			/* in: the rows; out: those not linked */
	const PgssNgPlansSaved *saved;	/* a restore's plans_seen and
									 * last_plan_change, or NULL */
	int			linked;			/* rows linked as new */
	bool		linked_untried; /* of them, one whose text was never tried */
} LinkRows;

/*
 * link_rows
 *		pgss_ng_kind_update callback (entry lock held exclusively): put
 *		each row of the chain on the statement's list, or, if the list has
 *		a row of its plan already (another backend made it), merge it into
 *		that one, which takes its text if it has none and none was tried;
 *		the rows merged are left in la->chain for the caller to free.  A
 *		new plan (not a restored row) counts in plans_seen and, past the
 *		first, sets last_plan_change; the statement then changed.
 */
static void
link_rows(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	PgssNgStmtPlans *sp = &sh->plans;
	LinkRows   *la = (LinkRows *) arg;
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	dsa_pointer p = la->chain;
	dsa_pointer left = InvalidDsaPointer;
	TimestampTz now;
	bool		changed = false;

	map_rows(area, sp);
	now = GetCurrentTimestamp();
	while (DsaPointerIsValid(p))
	{
		PgssNgPlanRow *row = ROW(area, p);
		dsa_pointer next = row->next;
		PgssNgPlanRow *old = find_row(area, sp, row->planid);

		if (old)
		{
			PgssNgPlanCounts pc = {.planid = row->planid, .calls = row->calls,
				.total_time = row->total_time, .min_time = row->min_time,
			.max_time = row->max_time, .rows = row->rows};

			pgss_ng_plans_merge_row(old, &pc, now, row->have_minmax);
			old->first_call = Min(old->first_call, row->first_call);
			if (!old->text_tried && row->text_tried)
			{
				old->text = row->text;
				old->encoding = row->encoding;
				old->text_tried = true;
				row->text = InvalidDsaPointer;
			}
			row->next = left;
			left = p;
		}
		else
		{
			row->next = sp->rows;
			sp->rows = p;
			sp->nrows++;
			la->linked++;
			if (!row->text_tried)
				la->linked_untried = true;
			if (la->saved == NULL)
			{
				sp->seen++;
				if (sp->seen > 1)
					sp->last_change = now;
				changed = true;
			}
		}
		p = next;
	}
	if (la->saved)
	{
		sp->seen += la->saved->seen;
		sp->last_change = Max(sp->last_change, la->saved->last_change);
		changed = true;
	}
	if (changed)
		stmt_stamp_changed_at(sh, now);
	la->chain = left;
}

/*
 * free_unlinked
 *		Free the rows of unlinked (none linked), one at a time, unlinked
 *		following: after an ERROR the rest are freed by the next call.
 */
static void
free_unlinked(void)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);

	while (DsaPointerIsValid(unlinked))
	{
		dsa_pointer p = unlinked;

		unlinked = ROW(area, p)->next;
		free_row(area, p);
	}
}

/*
 * link_chain
 *		Link a chain of new rows into the statement of key (link_rows) and
 *		free what was not linked: all of it if the statement is gone.
 *		Returns the rows linked.  Until then the chain is unlinked, so
 *		that after an ERROR (link_rows maps before it writes) the next
 *		pgss_ng_plans_work() frees it.  Locks: the statement's partition
 *		lock shared and entry lock; the DSA area's to free.
 */
static int
link_chain(const PgssNgStmtKey *key, LinkRows *la)
{
	unlinked = la->chain;
	(void) pgss_ng_kind_update(pgss_ng_stmt_kind, key, link_rows, la);
	unlinked = la->chain;
	la->chain = InvalidDsaPointer;
	free_unlinked();
	return la->linked;
}

/*
 * forget_known
 *		Forget every plan this backend has seen to the text of (the hash
 *		of them is full).
 */
static void
forget_known(void)
{
	if (known)
		hash_destroy(known);
	known = NULL;
	pgss_ng_plans_known_epoch++;
}

/*
 * forget_plan
 *		Forget that this backend saw to the text of plan planid of the
 *		statement of key, if it did: its row was made again without a text
 *		(after an eviction), which its next execution captures.
 */
static void
forget_plan(const PgssNgStmtKey *key, uint64 planid)
{
	KnownPlan	k;

	if (known == NULL)
		return;
	memset(&k, 0, sizeof(k));
	memcpy(&k.key, key, sizeof(PgssNgStmtKey));
	k.planid = planid;
	if (hash_search(known, &k, HASH_REMOVE, NULL) != NULL)
		pgss_ng_plans_known_epoch++;
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

	map_rows(area, sp);
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
 * evict_rows
 *		If rows are past plans_max and no other backend is evicting them
 *		(pgss_ng_plan_dealloc, taken without waiting), evict the least valuable
 *		down to PLANS_EVICT_KEEP_PERCENT of it: one pass over the
 *		statements (their entry locks shared) keeps the victims in a
 *		bounded heap, then each is taken off its list under its entry
 *		lock and freed.  Their counts stay in their statements' (and,
 *		once evicted, in the evicted remainder).  Memory: the heap, in
 *		CurrentMemoryContext.
 */
static void
evict_rows(void)
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
			free_row(area, v->row);
			pg_atomic_fetch_add_u64(&plans_ctl->evicted, 1);
		}
	}
	LWLockRelease(plans_lock);
	binaryheap_free(er.heap);
	pfree(er.victims);
}

/*
 * take_work
 *		Take the last work item out of the array into working, with every
 *		other item of the same statement and plan merged into it (a text
 *		and counts that waited for the same row).  Returns false when there
 *		is none.
 */
static bool
take_work(void)
{
	int			i;

	if (pgss_ng_plans_nwork == 0)
		return false;
	working = work[--pgss_ng_plans_nwork];
	working_valid = true;
	for (i = pgss_ng_plans_nwork - 1; i >= 0; i--)
	{
		PlanWork   *w = &work[i];
		PgssNgPlanCounts *a = &working.counts;
		const PgssNgPlanCounts *b = &w->counts;

		if (b->planid != a->planid ||
			memcmp(&w->key, &working.key, sizeof(PgssNgStmtKey)) != 0)
			continue;
		if (b->calls > 0 && w->fresh)
		{
			a->min_time = a->calls > 0 && working.fresh ?
				Min(a->min_time, b->min_time) : b->min_time;
			a->max_time = a->calls > 0 && working.fresh ?
				Max(a->max_time, b->max_time) : b->max_time;
			working.fresh = true;
		}
		a->calls += b->calls;
		a->total_time += b->total_time;
		a->rows += b->rows;
		if (w->tried && !working.tried)
		{
			working.tried = true;
			working.text = w->text;
			working.len = w->len;
		}
		else if (w->text)
			pfree(w->text);
		work[i] = work[--pgss_ng_plans_nwork];
	}
	return true;
}

/*
 * work_guarded
 *		The body of pgss_ng_plans_work(), under pgss_ng_kind_guard(): make
 *		and link the row of each work item (or merge it into the row made
 *		meanwhile), then evict rows past plans_max.  A row made without a
 *		capture of its text tried makes this backend forget that plan if
 *		it had seen to it (forget_plan): its next execution captures it.
 */
static void
work_guarded(void *arg)
{
	dsa_area   *area;
	bool		made = false;

	if (!pgss_ng_stmt_attach())
		return;
	area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	while (take_work())
	{
		LinkRows	la = {0};

		la.chain = make_row(area, &working, GetCurrentTimestamp());
		if (!DsaPointerIsValid(la.chain))
			count_calls_dropped(working.counts.calls);
		else if (link_chain(&working.key, &la) > 0)
		{
			made = true;
			if (la.linked_untried)
				forget_plan(&working.key, working.counts.planid);
		}
		if (working.text)
			pfree(working.text);
		working_valid = false;
	}
	if (made)
		evict_rows();
}

/* pgss_ng_kind_guard body: free_unlinked() */
static void
free_unlinked_guarded(void *arg)
{
	free_unlinked();
}

/*
 * pgss_ng_plans_work
 *		Make the rows this backend's work items wait for: after every flush
 *		of the statement kind, with no lock held.  No ERROR escapes
 *		(pgss_ng_kind_guard); the item whose row raised one counts its
 *		calls as dropped.
 */
void
pgss_ng_plans_work(void)
{
	if (unlikely(DsaPointerIsValid(unlinked)))
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "free plan rows",
								  free_unlinked_guarded, NULL);
	if (pgss_ng_plans_nwork == 0)
		return;
	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record plan rows",
							work_guarded, NULL) && working_valid)
	{
		working_valid = false;
		count_calls_dropped(working.counts.calls);
		if (working.text)
			pfree(working.text);
	}
}

/* What text_wanted_guarded looks up, and its answer. */
typedef struct TextWanted
{
	KnownPlan	k;
	PgssNgPlanText answer;
} TextWanted;

/*
 * text_wanted_visit
 *		pgss_ng_kind_read visitor of text_wanted_guarded: with a row of the
 *		plan, its text is wanted unless a capture was tried; without one,
 *		it is wanted for a statement that ran before (a new plan), and
 *		later for a new statement (its plan row does not exist yet: at its
 *		next execution).  Entry lock held shared.
 */
static bool
text_wanted_visit(PgssNgKind *kind, const void *key, const void *shared_data,
				  void *arg)
{
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	TextWanted *tw = (TextWanted *) arg;
	const PgssNgPlanRow *row = find_row(pgss_ng_kind_area(kind), &sh->plans,
										tw->k.planid);

	if (row)
		tw->answer = row->text_tried ? PGSS_NG_PLAN_TEXT_KNOWN :
			PGSS_NG_PLAN_TEXT_WANTED;
	else if (sh->counters.calls[PGSS_NG_EXEC] > 0)
		tw->answer = PGSS_NG_PLAN_TEXT_WANTED;
	else
		tw->answer = PGSS_NG_PLAN_TEXT_LATER;
	return true;
}

/*
 * text_wanted_guarded
 *		The body of pgss_ng_plans_text_wanted(), under
 *		pgss_ng_kind_guard(): the backend's known plans, then the
 *		statement's rows (text_wanted_visit; no entry: later); the plan is
 *		known from then on, unless the answer is later.  Memory: the known
 *		plans' hash in TopMemoryContext, at most KNOWN_PLANS_MAX (then
 *		started again).
 */
static void
text_wanted_guarded(void *arg)
{
	TextWanted *tw = (TextWanted *) arg;
	HASHCTL		ctl;

	if (!pgss_ng_stmt_attach())
		return;
	if (known && hash_get_num_entries(known) >= KNOWN_PLANS_MAX)
		forget_known();
	if (known == NULL)
	{
		ctl.keysize = sizeof(KnownPlan);
		ctl.entrysize = sizeof(KnownPlan);
		known = hash_create("pgss_ng known plans", 256, &ctl,
							HASH_ELEM | HASH_BLOBS);
	}
	tw->answer = PGSS_NG_PLAN_TEXT_KNOWN;
	if (hash_search(known, &tw->k, HASH_FIND, NULL) != NULL)
		return;
	if (!pgss_ng_kind_read(pgss_ng_stmt_kind, &tw->k.key, text_wanted_visit,
						   tw))
		tw->answer = PGSS_NG_PLAN_TEXT_LATER;
	if (tw->answer != PGSS_NG_PLAN_TEXT_LATER)
		(void) hash_search(known, &tw->k, HASH_ENTER, NULL);
}

/*
 * pgss_ng_plans_text_wanted
 *		At an execution of plan planid of the statement of key, with this
 *		backend's cache of the plan last answered missed (it keeps it with
 *		pgss_ng_plans_known_epoch): should the plan's EXPLAIN text be
 *		captured now (pgss_ng_plans_add_text)?  Wanted when this backend
 *		has not seen to it and the statement has no row of the plan whose
 *		text was tried: at the first execution of a new plan of a statement
 *		that ran before, at the second of a new statement's (LATER at its
 *		first: a statement run once costs no EXPLAIN).  A backend-local
 *		hash first, then the statement's rows (its partition and entry
 *		locks shared).  No ERROR escapes (one answers KNOWN).
 */
PgssNgPlanText
pgss_ng_plans_text_wanted(const PgssNgStmtKey *key, uint64 planid)
{
	TextWanted	tw;

	memset(&tw, 0, sizeof(tw));
	memcpy(&tw.k.key, key, sizeof(PgssNgStmtKey));
	tw.k.planid = planid;
	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "look up a plan row",
							text_wanted_guarded, &tw))
		return PGSS_NG_PLAN_TEXT_KNOWN;
	return tw.answer;
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
 * pgss_ng_plans_add_text
 *		The EXPLAIN text of plan planid of the statement of key, captured
 *		at its execution (len bytes; NULL: the capture failed), for the
 *		plan's row: a work item.  Memory: a copy in TopMemoryContext
 *		(MCXT_ALLOC_NO_OOM: none, none kept), freed by the work.
 */
void
pgss_ng_plans_add_text(const PgssNgStmtKey *key, uint64 planid,
					   const char *text, int len)
{
	PgssNgPlanCounts pc = {.planid = planid};
	char	   *copy = NULL;

	if (text)
	{
		copy = MemoryContextAllocExtended(TopMemoryContext, len + 1,
										  MCXT_ALLOC_NO_OOM);
		if (copy)
		{
			memcpy(copy, text, len);
			copy[len] = '\0';
		}
	}
	work_add(key, &pc, false, true, copy, copy ? len : 0);
}

/*
 * What a read of plan rows keeps: the caller's function, the statement
 * copied last and its rows' copies (texts in one buffer).
 */
typedef struct PlansRead
{
	bool		showtext;
	PgssNgPlanEmitFn emit;
	void	   *emit_arg;
	PgssNgStmtKey key;
	PgssNgPlanSnapshot *rows;
	int			nrows;
	int			size;
	StringInfoData texts;
	int		   *text_off;		/* per row: offset in texts, -1: none */
} PlansRead;

/*
 * read_visit
 *		pgss_ng_kind_foreach visitor of pgss_ng_plans_read(): copy a
 *		statement's plan rows with calls (and their texts with showtext).
 *		Entry and partition locks held shared; growing the copies may raise
 *		an out-of-memory ERROR, which aborts the reader's transaction.
 */
static bool
read_visit(PgssNgKind *kind, const void *key, const void *shared_data,
		   void *arg)
{
	const PgssNgStmtPlans *sp = &((const PgssNgStmtShared *) shared_data)->plans;
	PlansRead  *pr = (PlansRead *) arg;
	dsa_area   *area = pgss_ng_kind_area(kind);
	dsa_pointer p;

	if (sp->nrows == 0)
		return false;
	memcpy(&pr->key, key, sizeof(PgssNgStmtKey));
	pr->nrows = 0;
	resetStringInfo(&pr->texts);
	if (sp->nrows > pr->size)
	{
		pr->size = Max(sp->nrows, 2 * pr->size);
		pr->rows = repalloc(pr->rows, sizeof(PgssNgPlanSnapshot) * pr->size);
		pr->text_off = repalloc(pr->text_off, sizeof(int) * pr->size);
	}
	for (p = sp->rows; DsaPointerIsValid(p) && pr->nrows < pr->size;)
	{
		const PgssNgPlanRow *row = ROW(area, p);
		PgssNgPlanSnapshot *ps = &pr->rows[pr->nrows];

		p = row->next;
		if (row->calls == 0)
			continue;
		ps->key = &pr->key;
		ps->planid = row->planid;
		ps->calls = row->calls;
		ps->total_time = row->total_time;
		ps->min_time = row->min_time;
		ps->max_time = row->max_time;
		ps->rows = row->rows;
		ps->first_call = row->first_call;
		ps->last_call = row->last_call;
		ps->encoding = row->encoding;
		ps->plan = NULL;
		ps->plan_len = 0;
		pr->text_off[pr->nrows] = -1;
		if (pr->showtext && DsaPointerIsValid(row->text))
		{
			int			len;
			const char *data = pgss_ng_plantext_data(area, row->text, &len);

			pr->text_off[pr->nrows] = pr->texts.len;
			ps->plan_len = len;
			appendBinaryStringInfo(&pr->texts, data, len);
		}
		pr->nrows++;
	}
	return pr->nrows > 0;
}

/*
 * read_emit
 *		pgss_ng_kind_foreach emit callback: hand each row copied to the
 *		reader's function (partition lock held shared, no entry lock).
 */
static void
read_emit(void *arg)
{
	PlansRead  *pr = (PlansRead *) arg;
	int			i;

	for (i = 0; i < pr->nrows; i++)
	{
		PgssNgPlanSnapshot *ps = &pr->rows[i];

		if (pr->text_off[i] >= 0)
			ps->plan = pr->texts.data + pr->text_off[i];
		pr->emit(ps, pr->emit_arg);
	}
}

/*
 * pgss_ng_plans_read
 *		Call emit for every plan row with calls, statement by statement
 *		(its text with showtext), after merging this backend's failure
 *		notes, flushing its pending counts (waiting for locks) and making
 *		the rows they wait for.  A snapshot is valid during its emit call
 *		only.  Locks: the statement kind's foreach; emit runs with a
 *		partition lock held shared.  Memory: CurrentMemoryContext.
 */
void
pgss_ng_plans_read(bool showtext, PgssNgPlanEmitFn emit, void *arg)
{
	PlansRead	pr;

	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);
	pgss_ng_plans_work();

	memset(&pr, 0, sizeof(pr));
	pr.showtext = showtext;
	pr.emit = emit;
	pr.emit_arg = arg;
	pr.size = 8;
	pr.rows = palloc(sizeof(PgssNgPlanSnapshot) * pr.size);
	pr.text_off = palloc(sizeof(int) * pr.size);
	initStringInfo(&pr.texts);
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, read_visit, read_emit, &pr);
	pfree(pr.rows);
	pfree(pr.text_off);
	pfree(pr.texts.data);
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

/*
 * pgss_ng_plans_save
 *		Append a statement's plans to its saved record (format:
 *		stmt_saved.h): PgssNgPlansSaved, then each row's PgssNgPlanRecord
 *		and text.  Entry lock held shared (the writer's foreach).  Memory:
 *		buf's.
 */
void
pgss_ng_plans_save(const PgssNgStmtPlans *sp, StringInfo buf)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	PgssNgPlansSaved head;
	int			headpos = buf->len;
	dsa_pointer p;

	memset(&head, 0, sizeof(head));
	head.seen = sp->seen;
	head.last_change = sp->last_change;
	appendBinaryStringInfo(buf, (const char *) &head, sizeof(head));
	for (p = sp->rows; DsaPointerIsValid(p);)
	{
		const PgssNgPlanRow *row = ROW(area, p);
		PgssNgPlanRecord rec;
		const char *text = NULL;
		int			len = -1;

		p = row->next;
		if (DsaPointerIsValid(row->text))
			text = pgss_ng_plantext_data(area, row->text, &len);
		memset(&rec, 0, sizeof(rec));
		rec.planid = row->planid;
		rec.calls = row->calls;
		rec.total_time = row->total_time;
		rec.min_time = row->min_time;
		rec.max_time = row->max_time;
		rec.rows = row->rows;
		rec.first_call = row->first_call;
		rec.last_call = row->last_call;
		rec.encoding = row->encoding;
		rec.textlen = len;
		rec.have_minmax = row->have_minmax;
		rec.text_tried = row->text_tried;
		appendBinaryStringInfo(buf, (const char *) &rec, sizeof(rec));
		if (text)
			appendBinaryStringInfo(buf, text, len);
		head.nrows++;
	}
	memcpy(buf->data + headpos, &head, sizeof(head));
}

/*
 * next_saved_row
 *		Read the saved plan row at *pos of data (len bytes) into *rec and
 *		point *text at its text (NULL: none); false if it is malformed.
 */
static bool
next_saved_row(const char *data, Size len, Size *pos, PgssNgPlanRecord *rec,
			   const char **text)
{
	if (len - *pos < sizeof(PgssNgPlanRecord))
		return false;
	memcpy(rec, data + *pos, sizeof(PgssNgPlanRecord));
	*pos += sizeof(PgssNgPlanRecord);
	if (rec->textlen < -1 || rec->calls < 0 ||
		(rec->textlen >= 0 && (len - *pos < (Size) rec->textlen ||
							   !PG_VALID_BE_ENCODING(rec->encoding))))
		return false;
	*text = rec->textlen >= 0 ? data + *pos : NULL;
	*pos += Max(rec->textlen, 0);
	return true;
}

/*
 * pgss_ng_plans_saved_valid
 *		Whether data (len bytes, the end of a saved record after its query
 *		text) is a statement's plans, exactly.
 */
bool
pgss_ng_plans_saved_valid(const char *data, Size len)
{
	PgssNgPlansSaved head;
	Size		pos = sizeof(head);
	int			i;

	if (len < sizeof(head))
		return false;
	memcpy(&head, data, sizeof(head));
	if (head.nrows < 0 || head.seen < 0)
		return false;
	for (i = 0; i < head.nrows; i++)
	{
		PgssNgPlanRecord rec;
		const char *text;

		if (!next_saved_row(data, len, &pos, &rec, &text))
			return false;
	}
	return pos == len;
}

/*
 * pgss_ng_plans_restore
 *		Re-create the saved plans (data, len bytes: checked by
 *		pgss_ng_plans_saved_valid) of the statement of key, restored or
 *		merged just before: make its rows (a saved text that is not valid
 *		in its encoding, or does not fit, is left out), link them
 *		(link_rows: a row of the same plan made meanwhile takes its
 *		counts) and add its plans_seen and last_plan_change.  Rows past
 *		the backstop, or beyond shared memory, are not restored.  Inside
 *		the restore bracket (<name>_dealloc shared), under its guard.
 */
void
pgss_ng_plans_restore(const PgssNgStmtKey *key, const char *data, Size len)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	PgssNgPlansSaved head;
	LinkRows	la = {0};
	Size		pos = sizeof(head);
	int			i;

	memcpy(&head, data, sizeof(head));
	/* made on unlinked: after an ERROR, the next work frees them */
	Assert(!DsaPointerIsValid(unlinked));
	for (i = 0; i < head.nrows; i++)
	{
		PgssNgPlanRecord rec;
		const char *text;
		PlanWork	w = {0};
		dsa_pointer p;
		PgssNgPlanRow *row;

		if (!next_saved_row(data, len, &pos, &rec, &text))
			break;				/* checked: cannot happen */
		if (text && !pgss_ng_qtext_valid(text, rec.textlen, rec.encoding))
			text = NULL;
		w.counts.planid = rec.planid;
		w.tried = rec.text_tried;
		w.text = unconstify(char *, text);
		w.len = Max(rec.textlen, 0);
		p = make_row(area, &w, rec.first_call);
		if (!DsaPointerIsValid(p))
			break;
		row = ROW(area, p);
		row->calls = rec.calls;
		row->total_time = rec.total_time;
		row->min_time = rec.min_time;
		row->max_time = rec.max_time;
		row->rows = rec.rows;
		row->last_call = rec.last_call;
		row->encoding = rec.encoding;
		row->have_minmax = rec.have_minmax;
		row->next = unlinked;
		unlinked = p;
	}
	la.chain = unlinked;
	la.saved = &head;
	/* with no row left, what was seen still counts */
	if (DsaPointerIsValid(la.chain) || head.seen > 0)
		(void) link_chain(key, &la);
}
