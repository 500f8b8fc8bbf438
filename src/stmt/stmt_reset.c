/*-------------------------------------------------------------------------
 *
 * stmt_reset.c
 *	  The reset (pgss_ng_reset): remove the matching entries or restart their
 *	  min/max, with the eviction log's and the remainder's rows and, for a
 *	  full reset, the info counters.  docs/design.md, "Resets".
 *	  Locking: removal under <name>_dealloc held exclusively, the min/max
 *	  reset under each entry lock; then the remainder's and the info spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/spin.h"
#include "utils/timestamp.h"

#include "qtext.h"
#include "stmt_evicted.h"
#include "stmt_failures.h"
#include "stmt_kind.h"
#include "stmt_kind_int.h"
#include "stmt_reset.h"

/* A reset of pgss_ng_stmt_reset(): its filter and its time. */
typedef struct ResetFilter
{
	PgssNgResetFilter f;
	TimestampTz now;
} ResetFilter;

/*
 * reset_match
 *		Does a key match the reset's filter (0 matching anything)?
 */
static bool
reset_match(const void *key, void *arg)
{
	return stmt_reset_match(&((const ResetFilter *) arg)->f,
							(const PgssNgStmtKey *) key);
}

/*
 * reset_minmax
 *		Update callback: restart the min/max and the histograms of plan and
 *		exec times (their chunk freed); entry lock held exclusively.  The
 *		next flushed call
 *		sets them again; a pending entry made before now brings no min/max
 *		and nothing into the histograms (stmt_flush_pending).  The entry
 *		changed (stmt_stamp_changed).
 */
static void
reset_minmax(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const ResetFilter *f = (const ResetFilter *) arg;
	int			k;

	for (k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		sh->counters.min_time[k] = 0;
		sh->counters.max_time[k] = 0;
		sh->have_minmax[k] = false;
	}
	pgss_ng_hist_store_free(pgss_ng_kind_area(pgss_ng_stmt_kind), &sh->hist,
							&pgss_ng_stmt_ctl->hist);
	pgss_ng_plans_reset_minmax(&sh->plans);
	sh->minmax_stats_since = f->now;
	sh->minmax_reset_at = f->now;
	stmt_stamp_changed(sh);
}

/*
 * reset_locked
 *		pgss_ng_kind_remove_matching's locked callback (<name>_dealloc held
 *		exclusively: no eviction in between): the eviction log's and the
 *		remainder's rows of what the reset removed, a full reset's info
 *		counters, and a partial reset's filter kept for a restore that has
 *		not finished (stmt_restore.c).  design.md, "Resets".
 */
static void
reset_locked(void *arg)
{
	const ResetFilter *r = (const ResetFilter *) arg;
	PgssNgStmtControl *ctl = pgss_ng_stmt_ctl;
	bool		partial = r->f.userid != InvalidOid ||
		r->f.dbid != InvalidOid || r->f.queryid != UINT64CONST(0);

	if (partial && ctl->npartial < PGSS_NG_PARTIAL_RESETS_KEPT)
		ctl->partial[ctl->npartial] = r->f;
	if (partial && ctl->npartial <= PGSS_NG_PARTIAL_RESETS_KEPT)
		ctl->npartial++;
	if (partial)
		pgss_ng_eviction_log_remove(&r->f);
	if (r->f.queryid == UINT64CONST(0))
		pgss_ng_evicted_clear(r->f.userid, r->f.dbid);
	if (!partial)
	{
		SpinLockAcquire(&ctl->mutex);
		ctl->dropped = 0;
		ctl->stats_reset = r->now;
		SpinLockRelease(&ctl->mutex);
		pg_atomic_write_u64(&ctl->hist.dropped, 0);
		pgss_ng_kind_reset_counters(pgss_ng_stmt_kind);
		pgss_ng_qtext_reset_dropped();
		pgss_ng_waits_reset_info();
		pgss_ng_plans_reset_counters();
	}
}

/*
 * pgss_ng_stmt_reset
 *		Remove the entries matching (userid, dbid, queryid), 0 meaning any,
 *		or with minmax_only restart their min/max and histograms; the
 *		caller's pending counts are flushed first, others' discarded at
 *		their flush.  A full reset also restarts pgss_ng_info's event
 *		counters and stops a restore.  Returns its time.  design.md, "Resets".
 */
TimestampTz
pgss_ng_stmt_reset(Oid userid, Oid dbid, uint64 queryid, bool minmax_only)
{
	ResetFilter f;
	bool		all = userid == InvalidOid && dbid == InvalidOid &&
		queryid == UINT64CONST(0);

	f.f.userid = userid;
	f.f.dbid = dbid;
	f.f.queryid = queryid;
	f.now = GetCurrentTimestamp();

	/* our own pending counts (and noted failures) predate the reset */
	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);

	if (minmax_only)
	{
		pgss_ng_kind_update_matching(pgss_ng_stmt_kind, reset_match,
									reset_minmax, &f);
		return f.now;
	}

	/* no filter for all: the kind layer counts a full reset (restores) */
	pgss_ng_kind_remove_matching(pgss_ng_stmt_kind, all ? NULL : reset_match,
								 &f, reset_locked);
	return f.now;
}
