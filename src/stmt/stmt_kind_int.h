/*-------------------------------------------------------------------------
 *
 * stmt_kind_int.h
 *	  What the statement kind's files share and nobody else sees: the layouts
 *	  of a shared entry (PgssNgStmtShared) and of pending data, the control
 *	  block, the lookups, counts and merge.  docs/design.md, "Shared
 *	  structures".  Locking: PgssNgStmtShared under its entry lock,
 *	  PgssNgStmtControl under its spinlock, but for the fields that say
 *	  otherwise.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_KIND_INT_H
#define PGSS_NG_STMT_KIND_INT_H

#include "port/atomics.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "hist_store.h"
#include "plans.h"
#include "stmt_kind.h"
#include "stmt_reset.h"

/* Kind data of a shared statement entry. */
typedef struct PgssNgStmtShared
{
	/* what every read copies first, together (fewer cache lines) */
	TimestampTz changed_at;		/* last change (design.md, "Incremental
								 * reads") */
	/*
	 * qtext is a failed execution's, until the first successful one
	 * replaces it.  Set before the entry is published, cleared once under
	 * the entry lock: read without it by every count into new pending data
	 * (a true read is checked again under it); next to the calls, which
	 * the flush that follows writes anyway.
	 */
	bool		qtext_failed;
	bool		have_minmax[PGSS_NG_NUMPHASE];	/* min/max set since reset */
	int			encoding;		/* the query text's encoding */
	PgssNgCounters counters;
	dsa_pointer qtext;			/* query text (qtext.c), or invalid */
	TimestampTz stats_since;	/* entry creation */
	TimestampTz minmax_stats_since; /* creation or last min/max reset */
	TimestampTz minmax_reset_at;	/* last min/max reset, 0 if none */
	TimestampTz last_executed;	/* flush of the last execution, 0: none */
	dsa_pointer waits;			/* its wait samples' chunk (waits.h), made
								 * by the sampler: no entry lock */
	PgssNgStmtPlans plans;		/* its plan rows (plans.c) */
	/* times since minmax_stats_since, by phase (hist_store.c) */
	PgssNgHistStore hist;
} PgssNgStmtShared;

/*
 * Pending data of one statement in a backend: the counters, and the
 * histograms of the plan and exec times counted since the last flush.
 */
typedef struct PgssNgPending
{
	PgssNgCounters counters;	/* zeroed in a new pending entry */
	PgssNgPlanPending plans;	/* its header zeroed too (plans.h) */
	PgssNgHistDense hist[PGSS_NG_NUMPHASE];
} PgssNgPending;

/* Partial resets kept for a restore (PgssNgStmtControl.partial). */
#define PGSS_NG_PARTIAL_RESETS_KEPT	32

/*
 * The statement kind's control block, in main shared memory: its info
 * counters (those of pgss_ng_info that are not the kind layer's or the
 * text arena's; the histograms' are atomics), whether the stats file was
 * loaded, the number of attached processes, and the partial resets made
 * since shared memory was made, which a restore must not undo
 * (stmt_reset.c records them under <name>_dealloc held exclusively,
 * stmt_restore.c reads them in the restore bracket, holding it shared).
 */
typedef struct PgssNgStmtControl
{
	slock_t		mutex;
	int64		dropped;		/* plans/executions not recorded */
	PgssNgHistStats hist;		/* the histograms' chunks (atomics) */
	TimestampTz stats_reset;	/* last full reset */
	bool		loaded;			/* the writer has read the stats file (the
								 * writer's alone: no lock) */
	pg_atomic_uint32 nattached; /* see pgss_ng_stmt_attach */
	int			npartial;		/* partial resets made, up to
								 * PGSS_NG_PARTIAL_RESETS_KEPT + 1 (more
								 * than kept) */
	PgssNgResetFilter partial[PGSS_NG_PARTIAL_RESETS_KEPT];
} PgssNgStmtControl;

extern PgssNgStmtControl *pgss_ng_stmt_ctl;

/*
 * total_calls
 *		Plannings plus executions counted in c.
 */
static inline int64
total_calls(const PgssNgCounters *c)
{
	return c->calls[PGSS_NG_PHASE_PLAN] + c->calls[PGSS_NG_PHASE_EXEC];
}

/*
 * stmt_stamp_changed_at / stmt_stamp_changed
 *		Mark the entry as changed at now, a time read under its entry lock
 *		(held exclusively), or, stmt_stamp_changed, now read here.  The
 *		clock must be read under the lock, so that an incremental read
 *		started after the stamp sees the change.  Never moves changed_at
 *		backwards (a system clock stepped back).
 */
static inline void
stmt_stamp_changed_at(PgssNgStmtShared *sh, TimestampTz now)
{
	sh->changed_at = Max(sh->changed_at, now);
}

static inline void
stmt_stamp_changed(PgssNgStmtShared *sh)
{
	stmt_stamp_changed_at(sh, GetCurrentTimestamp());
}

/* stmt_kind.c */
extern bool stmt_may_alloc_hist(void);
extern void pgss_ng_stmt_count_dropped(int64 n);
extern void pgss_ng_stmt_merge(PgssNgStmtShared *dst_sh,
							   const PgssNgCounters *src,
							   const bool *src_minmax);
extern void pgss_ng_stmt_merge_hist(PgssNgStmtShared *sh,
									const PgssNgHistAdd *add);

/* stmt_entry.c */
extern PgssNgPending *pgss_ng_stmt_pending(const PgssNgStmtKey *key,
										   const char *query, int location,
										   int len);
extern PgssNgPending *pgss_ng_stmt_pending_failed(const PgssNgStmtKey *key,
												  const char *text, int len);
extern PgssNgLockKey pgss_ng_stmt_lock(const PgssNgStmtKey *key,
									   const char *query, int location,
									   int len, PgssNgEntryRef *ref);
extern void pgss_ng_stmt_count_locked(PgssNgEntryRef *ref, PgssNgPhase phase,
									  double ms);
extern void pgss_ng_stmt_count_hist(PgssNgEntryRef *ref, PgssNgPhase phase,
									double ms);
extern PgssNgPending *pgss_ng_stmt_keep_pending(PgssNgEntryRef *ref,
												const char *query,
												int location, int len);
extern void pgss_ng_stmt_create(const PgssNgStmtKey *key, const char *text,
								int len);

#endif							/* PGSS_NG_STMT_KIND_INT_H */
