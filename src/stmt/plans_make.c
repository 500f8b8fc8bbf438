/*-------------------------------------------------------------------------
 *
 * plans_make.c
 *	  Plan rows made after the statement's flush from this backend's work
 *	  items (counts of a plan with no row, a captured text), allocated with no
 *	  lock held, then linked under the entry lock; the plans this backend
 *	  knows it saw the text of.  docs/design.md, "Plan rows".
 *	  Owns: the work items and known plans (backend-local), plans_unlinked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/memutils.h"

#include "plans_int.h"
#include "stmt_kind_int.h"

/* A plan this backend has seen to the text of. */
typedef struct KnownPlan
{
	PgssNgStmtKey key;
	uint64		planid;
} KnownPlan;

static PlanWork work[PLAN_WORK_MAX];
int			pgss_ng_plans_nwork = 0;	/* plans.h */
static PlanWork working;		/* the item being made, for the error path */
static bool working_valid = false;

dsa_pointer plans_unlinked = InvalidDsaPointer;	/* rows of a link that
													 * raised, to free */

static HTAB *known = NULL;

/* raised whenever this backend forgets its known plans (plans.h) */
uint32		pgss_ng_plans_known_epoch = 0;

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
 * plans_work_add
 *		Queue a work item for the next pgss_ng_plans_work(); with no room
 *		left, its calls count as dropped and its text is freed.  No
 *		allocation, no ERROR: called under an entry lock too.
 */
void
plans_work_add(const PgssNgStmtKey *key, const PgssNgPlanCounts *pc, bool fresh,
		 bool tried, char *text, int len)
{
	PlanWork   *w;

	if (pgss_ng_plans_nwork == PLAN_WORK_MAX)
	{
		plans_count_calls_dropped(pc->calls);
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
 * plans_make_row
 *		A new row, on no list, for a work item: its counts, its text stored
 *		in the plan text arena (a text that does not fit leaves plan NULL),
 *		made now.  InvalidDsaPointer when the backstop is reached or shared
 *		memory ran out (the kind's allocation back-off included).  No lock
 *		held; an ERROR (a DSM segment that cannot be made) leaves nothing
 *		allocated.
 */
dsa_pointer
plans_make_row(dsa_area *area, const PlanWork *w, TimestampTz now)
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
 * link_rows
 *		pgss_ng_kind_update callback (entry lock exclusive): put each row of
 *		the chain on the statement's list, or merge it into the list's row of
 *		its plan (made by another backend; it takes the text if it has none and
 *		none was tried), leaving it in la->chain to free.  A new plan (not
 *		restored) counts in plans_seen and, past the first, sets
 *		last_plan_change; the statement then changed.
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

	plans_map_rows(area, sp);
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
 *		Free the rows of plans_unlinked (none linked), one at a time, plans_unlinked
 *		following: after an ERROR the rest are freed by the next call.
 */
static void
free_unlinked(void)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);

	while (DsaPointerIsValid(plans_unlinked))
	{
		dsa_pointer p = plans_unlinked;

		plans_unlinked = ROW(area, p)->next;
		plans_free_row(area, p);
	}
}

/*
 * plans_link_chain
 *		Link a chain of new rows into the statement of key (link_rows) and
 *		free what was not linked: all of it if the statement is gone.
 *		Returns the rows linked.  Until then the chain is unlinked, so
 *		that after an ERROR (link_rows maps before it writes) the next
 *		pgss_ng_plans_work() frees it.  Locks: the statement's partition
 *		lock shared and entry lock; the DSA area's to free.
 */
int
plans_link_chain(const PgssNgStmtKey *key, LinkRows *la)
{
	plans_unlinked = la->chain;
	(void) pgss_ng_kind_update(pgss_ng_stmt_kind, key, link_rows, la);
	plans_unlinked = la->chain;
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

		la.chain = plans_make_row(area, &working, GetCurrentTimestamp());
		if (!DsaPointerIsValid(la.chain))
			plans_count_calls_dropped(working.counts.calls);
		else if (plans_link_chain(&working.key, &la) > 0)
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
		plans_evict_rows();
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
	if (unlikely(DsaPointerIsValid(plans_unlinked)))
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "free plan rows",
								  free_unlinked_guarded, NULL);
	if (pgss_ng_plans_nwork == 0)
		return;
	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record plan rows",
							work_guarded, NULL) && working_valid)
	{
		working_valid = false;
		plans_count_calls_dropped(working.counts.calls);
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
	else if (sh->counters.calls[PGSS_NG_PHASE_EXEC] > 0)
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
 *		Should the EXPLAIN text of plan planid of key's statement be
 *		captured now (pgss_ng_plans_add_text)?  When this backend has not
 *		seen to it and no row of the plan had its text tried: a new plan's
 *		first execution, a new statement's second (LATER at its first).
 *		Locks: the entry's, shared.  No ERROR escapes (one answers KNOWN).
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
	plans_work_add(key, &pc, false, true, copy, copy ? len : 0);
}
