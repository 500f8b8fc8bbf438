/*-------------------------------------------------------------------------
 *
 * plans_int.h
 *	  What the plan rows' files (plans.c, plans_make.c, plans_evict.c,
 *	  plans_read.c) share and nobody else sees.  docs/design.md, "Plan rows".
 *	  Locking: see plans.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_PLANS_INT_H
#define PGSS_NG_PLANS_INT_H

#include "port/atomics.h"
#include "storage/lwlock.h"

#include "plans.h"
#include "stmt_kind.h"
#include "stmt_saved.h"

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

#define ROW(area, p)	((PgssNgPlanRow *) dsa_get_address((area), (p)))

extern PlansControl *plans_ctl;
extern LWLock *plans_lock;
/* rows of a link that raised (or of a restore), to free (plans_make.c) */
extern dsa_pointer plans_unlinked;

/* plans.c */
extern int	plans_max(void);
extern void plans_count_calls_dropped(int64 n);
extern void plans_map_rows(dsa_area *area, const PgssNgStmtPlans *sp);
extern void plans_free_row(dsa_area *area, dsa_pointer p);

/* plans_make.c */
extern void plans_work_add(const PgssNgStmtKey *key,
						   const PgssNgPlanCounts *pc, bool fresh,
						   bool tried, char *text, int len);
extern dsa_pointer plans_make_row(dsa_area *area, const PlanWork *w,
								  TimestampTz now);
extern int	plans_link_chain(const PgssNgStmtKey *key, LinkRows *la);

/* plans_evict.c */
extern void plans_evict_rows(void);

#endif							/* PGSS_NG_PLANS_INT_H */
