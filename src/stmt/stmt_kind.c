/*-------------------------------------------------------------------------
 *
 * stmt_kind.c
 *	  The statement kind as a kind of the kind layer (key userid, dbid,
 *	  queryid, toplevel): description, callbacks (flush, discard, free, needs
 *	  room, evicted), the merge of pending counters, the control block and
 *	  pgss_ng.max.  docs/design.md, "Layers".  Locking: counters under the
 *	  entry lock held exclusively, info counters under their spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/shmem.h"

#include "compat/settings_mirror.h"
#include "stmt_evicted.h"
#include "stmt_kind_int.h"
#include "stmt_read.h"

/* Pending entries allowed per backend before an early flush. */
#define PGSS_NG_MAX_PENDING		256

static bool stmt_flush_pending(PgssNgEntryRef *ref, bool nowait);
static void stmt_discard_pending(PgssNgEntryRef *ref);
static void stmt_free(PgssNgKind *kind, void *shared_data);
static bool stmt_needs_room(PgssNgKind *kind, bool starting);
static void stmt_evicted(PgssNgKind *kind, const void *key,
						 const void *shared_data);

/*
 * stmt_key_hash / stmt_key_compare
 *		The statement kind's key hash and comparison (PgssNgKindDesc's
 *		hash_fn and compare_fn): the queryid is a hash already, mixed with
 *		the other fields by a 64-bit finalizer; the fields compared one by
 *		one.
 */
static dshash_hash
stmt_key_hash(const void *key, size_t size, void *arg)
{
	const PgssNgStmtKey *k = (const PgssNgStmtKey *) key;
	uint64		h = k->queryid ^
		((((uint64) k->userid << 32) | k->dbid) * UINT64CONST(0x9E3779B97F4A7C15)) ^
		(uint64) k->toplevel;

	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	return (dshash_hash) h;
}

static int
stmt_key_compare(const void *a, const void *b, size_t size, void *arg)
{
	const PgssNgStmtKey *ka = (const PgssNgStmtKey *) a;
	const PgssNgStmtKey *kb = (const PgssNgStmtKey *) b;

	return !(ka->queryid == kb->queryid && ka->userid == kb->userid &&
			 ka->dbid == kb->dbid && ka->toplevel == kb->toplevel);
}

static const PgssNgKindDesc stmt_kind_desc = {
	.name = "pgss_ng",
	.key_size = sizeof(PgssNgStmtKey),
	.shared_size = sizeof(PgssNgStmtShared),
	.pending_size = sizeof(PgssNgPending),
	/*
	 * the plan slots: valid below their count; the histograms: cleared at
	 * their phase's first count (count_time)
	 */
	.pending_zeroed = offsetof(PgssNgPending, plans) +
	PGSS_NG_PLAN_PENDING_ZEROED,
	.max_pending = PGSS_NG_MAX_PENDING,
	.hash_fn = stmt_key_hash,
	.compare_fn = stmt_key_compare,
	.flush_pending_cb = stmt_flush_pending,
	.discard_pending_cb = stmt_discard_pending,
	.free_cb = stmt_free,
	.needs_room_cb = stmt_needs_room,
	.evicted_cb = stmt_evicted,
};

PgssNgKind *pgss_ng_stmt_kind = NULL;

/*
 * A statement's body fits DSA's 640-byte size class on 64-bit builds (616
 * bytes now); the next class takes 768, 128 more an entry.  What few
 * entries use goes in a chunk of its own, as the wait samples do.
 */
#if SIZEOF_VOID_P == 8 && MAXIMUM_ALIGNOF == 8
StaticAssertDecl(PGSS_NG_BODY_SIZE_64(sizeof(PgssNgStmtShared),
									  sizeof(PgssNgStmtKey)) <= 640,
				 "a statement entry's body must fit DSA's 640-byte size class: keep what few entries use out of PgssNgStmtShared");
#endif

const double pgss_ng_quantiles[PGSS_NG_NUM_QUANTILES] = {
	0.5, 0.9, 0.95, 0.99, 0.999
};
PgssNgStmtControl *pgss_ng_stmt_ctl = NULL;

/*
 * GUC pgss_ng.max: most live statement entries (eviction keeps to it),
 * or pg_stat_statements.max where that is in effect (settings_mirror.c).
 * This process's copy; what the kind uses is the value published in its
 * control block (pgss_ng_stmt_publish_max).
 */
static int	stmt_max = 5000;



/*
 * pgss_ng_stmt_init
 *		Make the statement kind's handle and define pgss_ng.max.  Called
 *		from _PG_init while preloading.
 */
void
pgss_ng_stmt_init(void)
{
	pgss_ng_stmt_kind = pgss_ng_kind_define(&stmt_kind_desc);
	pgss_ng_evicted_init();
	pgss_ng_waits_init();
	pgss_ng_plans_init();
	pgss_ng_define_paired_int(PGSS_NG_PAIRED_MAX, "pgss_ng.max",
							  "Sets the maximum number of statements tracked "
							  "by pgss_ng.",
							  &stmt_max, 5000, 100, INT_MAX / 4, PGC_SIGHUP);
}

/*
 * pgss_ng_stmt_publish_max
 *		Make this process's pgss_ng.max the one every process uses (the
 *		kind's max): eviction and the backstop follow it everywhere, though a
 *		busy backend reloads only at its next command.  The postmaster
 *		publishes its start value; then only the writer, at its start and each
 *		reload (writer.c): one publisher, prompt on SIGHUP.  Atomic; no lock.
 */
void
pgss_ng_stmt_publish_max(void)
{
	pgss_ng_kind_set_max_entries(pgss_ng_stmt_kind, stmt_max);
}

/*
 * pgss_ng_stmt_shmem_size
 *		Bytes of main shared memory the statement kind needs.
 */
Size
pgss_ng_stmt_shmem_size(void)
{
	Size		size;

	size = add_size(pgss_ng_kind_shmem_size(pgss_ng_stmt_kind, stmt_max),
					MAXALIGN(sizeof(PgssNgStmtControl)));
	size = add_size(size, pgss_ng_evicted_shmem_size());
	size = add_size(size, pgss_ng_waits_shmem_size(stmt_max));
	size = add_size(size, pgss_ng_plans_shmem_size());
	return add_size(size, pgss_ng_qtext_shmem_size());
}

/*
 * pgss_ng_stmt_shmem_request
 *		Request the named LWLocks of the statement kind, its evicted
 *		remainder, its wait samples and its text arena
 *		(shmem_request_hook).
 */
void
pgss_ng_stmt_shmem_request(void)
{
	pgss_ng_kind_shmem_request(&stmt_kind_desc);
	pgss_ng_evicted_shmem_request();
	pgss_ng_waits_shmem_request();
	pgss_ng_plans_shmem_request();
	pgss_ng_qtext_shmem_request();
}

/*
 * pgss_ng_stmt_shmem_startup
 *		Create or find the statement kind, its evicted remainder, its wait
 *		samples' slots and table, and the info counters.  Called from shmem_startup_hook (in the postmaster,
 *		whose pgss_ng.max the new kind starts with: see
 *		pgss_ng_stmt_publish_max); takes AddinShmemInitLock.
 */
void
pgss_ng_stmt_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	pgss_ng_kind_shmem_startup(pgss_ng_stmt_kind, "pgss_ng statements",
							   stmt_max);
	pgss_ng_qtext_shmem_startup();
	pgss_ng_evicted_shmem_startup();
	pgss_ng_waits_shmem_startup(stmt_max);
	pgss_ng_plans_shmem_startup();

	pgss_ng_stmt_ctl = ShmemInitStruct("pgss_ng info",
									   sizeof(PgssNgStmtControl), &found);
	if (!found)
	{
		SpinLockInit(&pgss_ng_stmt_ctl->mutex);
		pgss_ng_stmt_ctl->dropped = 0;
		pgss_ng_hist_store_stats_init(&pgss_ng_stmt_ctl->hist);
		pgss_ng_stmt_ctl->stats_reset = GetCurrentTimestamp();
		pgss_ng_stmt_ctl->loaded = false;
		pg_atomic_init_u32(&pgss_ng_stmt_ctl->nattached, 0);
		pgss_ng_stmt_ctl->npartial = 0;
	}

	LWLockRelease(AddinShmemInitLock);
}

/*
 * pgss_ng_stmt_count_dropped
 *		Count n plannings/executions (or failed executions) that could not
 *		be recorded.  Takes the info spinlock.
 */
void
pgss_ng_stmt_count_dropped(int64 n)
{
	SpinLockAcquire(&pgss_ng_stmt_ctl->mutex);
	pgss_ng_stmt_ctl->dropped += n;
	SpinLockRelease(&pgss_ng_stmt_ctl->mutex);
}

/*
 * stmt_needs_room
 *		needs_room_cb: the text arena is nearly full, evict to make room
 *		(pgss_ng_qtext_needs_room, with its high- and low-water marks).
 */
static bool
stmt_needs_room(PgssNgKind *kind, bool starting)
{
	return pgss_ng_qtext_needs_room(starting);
}

/*
 * stmt_free
 *		Free callback: release the entry's query text, its wait samples
 *		(their chunk and rows) and its plan rows, and free its histograms'
 *		chunk.
 */
static void
stmt_free(PgssNgKind *kind, void *shared_data)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;

	pgss_ng_qtext_release(pgss_ng_kind_area(kind), sh->qtext);
	sh->qtext = InvalidDsaPointer;
	pgss_ng_waits_release(&sh->waits);
	pgss_ng_plans_free(&sh->plans);
	pgss_ng_hist_store_free(pgss_ng_kind_area(kind), &sh->hist,
							&pgss_ng_stmt_ctl->hist);
}

/*
 * stmt_may_alloc_hist
 *		Whether a histogram chunk may be tried now: not while the kind's
 *		allocation back-off lasts (shared memory ran out a moment ago).
 */
bool
stmt_may_alloc_hist(void)
{
	return !pgss_ng_kind_alloc_backing_off(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_stmt_merge_hist
 *		Add the calls of add to the entry's time histograms (hist_store.c),
 *		before its min/max take those calls in: a histogram of up to two
 *		calls keeps none but them.  Entry lock held exclusively.
 *		Errors: only from dsa, before anything changed.
 */
void
pgss_ng_stmt_merge_hist(PgssNgStmtShared *sh, const PgssNgHistAdd *add)
{
	pgss_ng_hist_store_merge(pgss_ng_kind_area(pgss_ng_stmt_kind), &sh->hist,
							 &pgss_ng_stmt_ctl->hist, add,
							 sh->counters.min_time, sh->counters.max_time,
							 stmt_may_alloc_hist);
}

/*
 * pgss_ng_stmt_merge
 *		Add pending counters src into shared dst (entry lock held
 *		exclusively): sums add up; means and squared deviations combine by the
 *		parallel form of Welford's method (Chan et al.), as one pass over all
 *		calls would up to rounding; min/max restart after a min/max reset
 *		(have_minmax false) and take src's only where src_minmax[phase].  The
 *		caller merges the time histograms.
 */
void
pgss_ng_stmt_merge(PgssNgStmtShared *dst_sh, const PgssNgCounters *src,
			   const bool *src_minmax)
{
	PgssNgCounters *dst = &dst_sh->counters;
	int			k;

	for (k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		int64		na = dst->calls[k];
		int64		nb = src->calls[k];
		double		n;
		double		delta;

		if (nb == 0)
			continue;
		n = (double) (na + nb);
		delta = src->mean_time[k] - dst->mean_time[k];

		dst->mean_time[k] += delta * nb / n;
		dst->sum_var_time[k] += src->sum_var_time[k] +
			delta * delta * ((double) na * (double) nb / n);

		if (!src_minmax[k])
			continue;
		if (!dst_sh->have_minmax[k])
		{
			dst->min_time[k] = src->min_time[k];
			dst->max_time[k] = src->max_time[k];
			dst_sh->have_minmax[k] = true;
		}
		else
		{
			dst->min_time[k] = Min(dst->min_time[k], src->min_time[k]);
			dst->max_time[k] = Max(dst->max_time[k], src->max_time[k]);
		}
	}

	/* calls and the rest that adds up, after the means used dst's calls */
	pgss_ng_counters_add_sums(dst, src);
}

/*
 * stmt_flush_pending
 *		Flush callback: lock the entry (without waiting when nowait), merge
 *		the pending counters, unlock; false if it could not be locked.  Adds
 *		one use per planning and execution, failed ones too (less the
 *		creation's at the entry's first: design.md, "Eviction and the
 *		backstop"); counts older than the last min/max reset set no min/max
 *		and no histogram.  Stamps changed_at and last_executed at flush_time.
 */
static bool
stmt_flush_pending(PgssNgEntryRef *ref, bool nowait)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;
	const PgssNgPending *p = (const PgssNgPending *) ref->pending;
	const PgssNgCounters *c = &p->counters;
	bool		first;
	double		uses;
	bool		fresh;
	bool		minmax[PGSS_NG_NUMPHASE];

	if (!pgss_ng_kind_lock_entry(ref, nowait))
		return false;

	first = total_calls(&sh->counters) == 0 && sh->counters.errors == 0;
	uses = (double) (total_calls(c) + c->errors);

	/*
	 * Counts begun before a min/max reset hold a call that ended before it
	 * (a pending entry is made when its first call ends): their min/max
	 * must not become the new ones, nor their times the histograms'.  The
	 * calls still count.  The histograms first: only they may raise an
	 * ERROR (a chunk's allocation), and then nothing has changed.
	 */
	fresh = ref->pending_since >= sh->minmax_reset_at;
	if (fresh && total_calls(c) > 0)
	{
		PgssNgHistAdd add = {0};

		/* a phase's dense histogram is valid once the phase has a call */
		if (c->calls[PGSS_NG_PHASE_PLAN] > 0)
			pgss_ng_hist_add_dense(&add, PGSS_NG_PHASE_PLAN, &p->hist[PGSS_NG_PHASE_PLAN]);
		if (c->calls[PGSS_NG_PHASE_EXEC] > 0)
			pgss_ng_hist_add_dense(&add, PGSS_NG_PHASE_EXEC, &p->hist[PGSS_NG_PHASE_EXEC]);
		pgss_ng_stmt_merge_hist(sh, &add);
	}
	/*
	 * Then the plan rows: mapping them may raise too, before they are
	 * written (a mapping failure here, rare, leaves the histograms one
	 * flush ahead of the counters).
	 */
	if (p->plans.n > 0 || p->plans.lost > 0)
		pgss_ng_plans_flush(pgss_ng_kind_area(ref->kind), &sh->plans,
							&p->plans, ref->key, ref->flush_time, fresh);
	minmax[PGSS_NG_PHASE_PLAN] = fresh;
	minmax[PGSS_NG_PHASE_EXEC] = fresh;
	pgss_ng_stmt_merge(sh, c, minmax);
	if (first && uses > 0)
		uses -= 1;
	stmt_stamp_changed_at(sh, ref->flush_time);
	if (c->calls[PGSS_NG_PHASE_EXEC] > 0 || c->errors > 0)
		sh->last_executed = sh->changed_at;

	pgss_ng_kind_unlock_entry(ref, uses);
	return true;
}

/*
 * stmt_discard_pending
 *		Discard callback: the entry was evicted while this backend held
 *		counts for it; they go to the evicted remainder, where the entry's
 *		own counts went (no entry is counted: the eviction counted it).
 *		No lock of the kind layer held; takes the remainder's.
 */
static void
stmt_discard_pending(PgssNgEntryRef *ref)
{
	const PgssNgPending *p = (const PgssNgPending *) ref->pending;

	pgss_ng_evicted_fold((const PgssNgStmtKey *) ref->key, &p->counters,
						 NULL, 0, NULL);
}

/*
 * stmt_evicted
 *		evicted_cb: fold the final counters and wait samples per type (if
 *		it has any) of an evicted entry into the evicted remainder and,
 *		with pgss_ng.evicted_log on, write it to the eviction log with the
 *		start of its text (at most PGSS_NG_EVICTION_LOG_TEXT - 1 bytes; a
 *		read cuts it at a character boundary).  <name>_dealloc held (the
 *		eviction run); O(1).
 */
static void
stmt_evicted(PgssNgKind *kind, const void *key, const void *shared_data)
{
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	const PgssNgWaitSamples *w = pgss_ng_waits_load(&sh->waits);
	const uint32 *wait_samples = w ? w->samples : NULL;
	PgssNgEvictionLogEntry log;

	if (!pgss_ng_eviction_log_on())
	{
		pgss_ng_evicted_fold((const PgssNgStmtKey *) key, &sh->counters,
							 wait_samples, 1, NULL);
		return;
	}
	memcpy(&log.key, key, sizeof(PgssNgStmtKey));
	log.encoding = sh->encoding;
	log.qlen = -1;
	if (DsaPointerIsValid(sh->qtext))
	{
		int			len;
		const char *data = pgss_ng_qtext_data(pgss_ng_kind_area(kind),
											  sh->qtext, &len);

		log.qlen = Min(len, PGSS_NG_EVICTION_LOG_TEXT - 1);
		memcpy(log.query, data, log.qlen);
	}
	log.calls = sh->counters.calls[PGSS_NG_PHASE_EXEC];
	log.total_exec_time = sh->counters.total_time[PGSS_NG_PHASE_EXEC];
	log.stats_since = sh->stats_since;
	log.evicted_at = 0;			/* set by the fold */
	pgss_ng_evicted_fold((const PgssNgStmtKey *) key, &sh->counters,
						 wait_samples, 1, &log);
}
