/*-------------------------------------------------------------------------
 *
 * plans.h
 *	  Plan rows (plans*.c): per statement entry, one row per plan it ran, in
 *	  DSA chunks hanging from its shared data, bounded by pgss_ng.plans_max; a
 *	  known plan's execution is counted in the statement's pending data and
 *	  merged by its flush.  docs/design.md, "Plan rows".
 *	  Locking: a statement's rows are its kind data, under its entry lock;
 *	  eviction takes pgss_ng_plan_dealloc without waiting, then the kind's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_PLANS_H
#define PGSS_NG_PLANS_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/dsa.h"

#include "plantext.h"

struct PgssNgStmtKey;

/* Plans a statement's pending data counts apart before they go uncounted. */
#define PGSS_NG_PENDING_PLANS	3

/* The counts of one plan since the last flush (ms for times). */
typedef struct PgssNgPlanCounts
{
	uint64		planid;
	int64		calls;
	double		total_time;
	double		min_time;
	double		max_time;
	int64		rows;
} PgssNgPlanCounts;

/*
 * A statement's pending plan counts (part of its pending data): n and lost
 * are zeroed with the pending entry, the slots below n are valid.
 */
typedef struct PgssNgPlanPending
{
	int32		n;				/* slots in use */
	int32		lost;			/* executions whose plan found no slot */
	PgssNgPlanCounts plan[PGSS_NG_PENDING_PLANS];
} PgssNgPlanPending;

/* Bytes of a PgssNgPlanPending to zero in a new pending entry. */
#define PGSS_NG_PLAN_PENDING_ZEROED	offsetof(PgssNgPlanPending, plan)

/*
 * A statement's plans, in its shared data (zeroed at creation): its plan
 * rows, how many plan rows were made for it since it was, and when the
 * last one was made while it had one already (0: never).
 */
typedef struct PgssNgStmtPlans
{
	dsa_pointer rows;			/* first PgssNgPlanRow, or invalid */
	int32		nrows;
	int32		seen;			/* plan rows made, evicted ones included */
	TimestampTz last_change;	/* when a plan row was made past the first */
} PgssNgStmtPlans;

/* The plan rows' counters of pgss_ng_info. */
typedef struct PgssNgPlansStats
{
	int64		rows;			/* live plan rows */
	int64		rows_max;		/* pgss_ng.plans_max in effect */
	int64		evicted;		/* rows evicted to keep to it */
	int64		calls_dropped;	/* executions their plan row missed */
	PgssNgPlanTextStats text;
} PgssNgPlansStats;

/* A reader's copy of one plan row (pgss_ng_plans_read). */
typedef struct PgssNgPlanSnapshot
{
	const struct PgssNgStmtKey *key;	/* its statement's */
	uint64		planid;
	int64		calls;
	double		total_time;
	double		min_time;
	double		max_time;
	int64		rows;
	TimestampTz first_call;
	TimestampTz last_call;
	int			encoding;		/* the text's */
	const char *plan;			/* plan_len bytes (no NUL), or NULL */
	int			plan_len;
} PgssNgPlanSnapshot;

typedef void (*PgssNgPlanEmitFn) (const PgssNgPlanSnapshot *ps, void *arg);

extern PgssNgPlanCounts *pgss_ng_plans_count_slow(PgssNgPlanPending *pp,
												  uint64 planid, double ms);

/*
 * pgss_ng_plans_count
 *		Count one execution of plan planid (ms, rows) in a statement's
 *		pending data: the first plan inline, others in their slot or a new
 *		one (pgss_ng_plans_count_slow; none left: lost, counted at the
 *		flush).  Backend-local; no lock, no ERROR.
 */
static inline void
pgss_ng_plans_count(PgssNgPlanPending *pp, uint64 planid, double ms,
					uint64 rows)
{
	PgssNgPlanCounts *pc = pp->plan;

	if (likely(pp->n == 0))
	{
		pp->n = 1;
		pc->planid = planid;
		pc->calls = 1;
		pc->total_time = ms;
		pc->min_time = ms;
		pc->max_time = ms;
		pc->rows = rows;
		return;
	}
	if (unlikely(pc->planid != planid))
	{
		pc = pgss_ng_plans_count_slow(pp, planid, ms);
		if (pc == NULL)
			return;
	}
	pc->calls++;
	pc->total_time += ms;
	if (ms < pc->min_time)
		pc->min_time = ms;
	if (ms > pc->max_time)
		pc->max_time = ms;
	pc->rows += rows;
}

/* What pgss_ng_plans_text_wanted() says of a plan's text. */
typedef enum PgssNgPlanText
{
	PGSS_NG_PLAN_TEXT_KNOWN,	/* seen to: nothing to do */
	PGSS_NG_PLAN_TEXT_WANTED,	/* capture it now; seen to from then on */
	PGSS_NG_PLAN_TEXT_LATER		/* a new statement's: ask again next time */
} PgssNgPlanText;

/*
 * Work items this backend holds for pgss_ng_plans_work(): a statement's end
 * calls it only when there are.
 */
extern int	pgss_ng_plans_nwork;

/*
 * Raised whenever this backend forgets a plan it has seen to the text of
 * (a row made again without its text), or all of them: a cache of them
 * kept elsewhere (planid.c) is valid while this is unchanged.
 */
extern uint32 pgss_ng_plans_known_epoch;

/*
 * One plan row, on its statement's list (PgssNgStmtPlans.rows): a DSA
 * chunk, written under its statement's entry lock (plans.c; the merge of
 * a flush here, inline).
 */
typedef struct PgssNgPlanRow
{
	dsa_pointer next;
	uint64		planid;
	int64		calls;
	double		total_time;		/* ms */
	double		min_time;
	double		max_time;
	int64		rows;
	TimestampTz first_call;		/* when the row was made */
	TimestampTz last_call;		/* flush of its last counts */
	dsa_pointer text;			/* plantext.c, or invalid */
	int32		encoding;		/* the text's */
	bool		have_minmax;
	bool		text_tried;		/* a capture of its text was tried */
} PgssNgPlanRow;

/*
 * pgss_ng_plans_merge_row
 *		Add the counts of one plan into its row (entry lock held
 *		exclusively); min/max only when fresh (made after the statement's
 *		last min/max reset).
 */
static inline void
pgss_ng_plans_merge_row(PgssNgPlanRow *row, const PgssNgPlanCounts *pc,
						TimestampTz now, bool fresh)
{
	if (pc->calls == 0)
		return;
	if (likely(fresh && row->have_minmax))
	{
		if (pc->min_time < row->min_time)
			row->min_time = pc->min_time;
		if (pc->max_time > row->max_time)
			row->max_time = pc->max_time;
	}
	else if (fresh)
	{
		row->min_time = pc->min_time;
		row->max_time = pc->max_time;
		row->have_minmax = true;
	}
	row->calls += pc->calls;
	row->total_time += pc->total_time;
	row->rows += pc->rows;
	if (now > row->last_call)
		row->last_call = now;
}

extern dsa_area *pgss_ng_plans_area(void);
extern void pgss_ng_plans_flush_slow(PgssNgStmtPlans *sp,
									 const PgssNgPlanPending *pp,
									 const struct PgssNgStmtKey *key,
									 TimestampTz now, bool fresh);

/*
 * pgss_ng_plans_flush
 *		Merge a statement's pending plan counts into its rows, from its flush
 *		callback (entry lock exclusive; key its ref->key, now the flush's
 *		time): each plan's counts to its row, or to a work item when it has
 *		none.  The common case, one plan whose row is the first, inline; the
 *		rest by pgss_ng_plans_flush_slow().  Rows are mapped before anything is
 *		written (dsa_get_address may raise).
 */
static inline void
pgss_ng_plans_flush(dsa_area *area, PgssNgStmtPlans *sp,
					const PgssNgPlanPending *pp,
					const struct PgssNgStmtKey *key, TimestampTz now,
					bool fresh)
{
	if (likely(pp->n == 1 && pp->lost == 0 && DsaPointerIsValid(sp->rows)))
	{
		PgssNgPlanRow *row = (PgssNgPlanRow *) dsa_get_address(area, sp->rows);

		if (likely(row->planid == pp->plan[0].planid))
		{
			pgss_ng_plans_merge_row(row, &pp->plan[0], now, fresh);
			return;
		}
	}
	pgss_ng_plans_flush_slow(sp, pp, key, now, fresh);
}

/*
 * pgss_ng_plans_count_locked
 *		Count one execution of plan planid (ms, rows) straight into the plan
 *		rows of a statement whose entry lock is held exclusively (a count
 *		made without pending data, at now, the time read under the lock):
 *		as a flush of pending data holding this one call would.  To call
 *		before anything of the entry is written (it maps the rows first).
 */
static inline void
pgss_ng_plans_count_locked(PgssNgStmtPlans *sp, const struct PgssNgStmtKey *key,
						   uint64 planid, double ms, uint64 rows,
						   TimestampTz now)
{
	PgssNgPlanPending pp;

	pp.n = 1;
	pp.lost = 0;
	pp.plan[0].planid = planid;
	pp.plan[0].calls = 1;
	pp.plan[0].total_time = ms;
	pp.plan[0].min_time = ms;
	pp.plan[0].max_time = ms;
	pp.plan[0].rows = rows;
	pgss_ng_plans_flush(pgss_ng_plans_area(), sp, &pp, key, now, true);
}

/* set-up */
extern void pgss_ng_plans_init(void);
extern Size pgss_ng_plans_shmem_size(void);
extern void pgss_ng_plans_shmem_request(void);
extern void pgss_ng_plans_shmem_startup(void);

/* the statement kind's free and min/max reset (entry lock held) */
extern void pgss_ng_plans_free(PgssNgStmtPlans *sp);
extern void pgss_ng_plans_reset_minmax(PgssNgStmtPlans *sp);

/* a backend, after each flush and at a new plan's first execution */
extern void pgss_ng_plans_work(void);
extern PgssNgPlanText pgss_ng_plans_text_wanted(const struct PgssNgStmtKey *key,
												uint64 planid);
extern void pgss_ng_plans_add_text(const struct PgssNgStmtKey *key,
								   uint64 planid, const char *text, int len);

/* readers, info */
extern void pgss_ng_plans_read(bool showtext, PgssNgPlanEmitFn emit,
							   void *arg);
extern void pgss_ng_plans_stats(PgssNgPlansStats *out);
extern void pgss_ng_plans_reset_counters(void);

/* the stats file (format: stmt_saved.h) */
extern void pgss_ng_plans_save(const PgssNgStmtPlans *sp, StringInfo buf);
extern bool pgss_ng_plans_saved_valid(const char *data, Size len);
extern void pgss_ng_plans_restore(const struct PgssNgStmtKey *key,
								  const char *data, Size len);

#endif							/* PGSS_NG_PLANS_H */
