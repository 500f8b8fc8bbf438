/*-------------------------------------------------------------------------
 *
 * stmt_kind.c
 *	  The statement kind: what pg_stat_statements tracks, as a kind of the
 *	  kind layer.  Key (userid, dbid, queryid, toplevel); pending data is a
 *	  PgssNgCounters; shared data adds the query text and timestamps.
 *
 * This file holds the kind itself: its description and callbacks (init,
 * flush, discard, free, needs room, evicted), the merge of pending into shared
 * counters, the lookup of a backend's pending data, the statement kind's
 * control block (PgssNgStmtControl: the info counters) and the GUC
 * pgss_ng.max, whose value the kind uses is one for every process
 * (pgss_ng_stmt_publish_max).  What a backend records (attach, one call,
 * failed executions, flush, exit) is in stmt_backend.c; what readers see and
 * resets in stmt_read.c; the saved record in stmt_saved.c.  Only these
 * files interpret the counters.
 *
 * Locking: counters in shared entries are changed only by the flush
 * callback (entry lock exclusive) and the reset and update callbacks
 * (idem); the info counters by their spinlock.  Nothing here raises an
 * ERROR into the user's statement: its callers run under
 * pgss_ng_kind_guard(), which catches what the layers below could throw.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat/settings_mirror.h"
#include "qtext.h"
#include "stmt_kind.h"
#include "stmt_kind_int.h"

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
	 * their phase's first count (count_one)
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
 * What the init callback stores in a new entry: a text already cleaned
 * (cut out of its source string by CleanQuerytext(), and perhaps
 * normalized), or the statement's location in its source string (cut
 * only when an entry is really made).
 */
typedef struct StmtInitArg
{
	const char *text;			/* text to store, or the source string */
	int			location;		/* statement's offset in it (source only) */
	int			len;			/* statement's length in bytes */
	bool		cleaned;		/* text is cleaned already: stored as it is */
	bool		failed;			/* text is a failed execution's */
} StmtInitArg;


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
 *		kind's max, in its control block): eviction and the backstop then
 *		follow it in every backend, whatever each one's own copy says
 *		(a busy backend reloads only at its next command).  The postmaster
 *		publishes the value it started with (pgss_ng_stmt_shmem_startup);
 *		afterwards only the writer does, at its start and at each reload
 *		(writer.c), so there is one publisher and it handles SIGHUP
 *		promptly.  Atomic; no lock.
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
 * stmt_init
 *		Init callback for a new shared entry: store its query text (the
 *		normalized one, or the statement's own part of its source string)
 *		and its timestamps.  Runs before the entry is published, with no
 *		lock of the kind layer held (see kind.h).  A text that cannot be
 *		stored leaves the entry with query NULL.  Errors: only an
 *		out-of-memory ERROR from the text arena's dedup hash.
 */
static bool
stmt_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtInitArg *ia = (StmtInitArg *) arg;
	const char *text = ia->text;
	int			len = ia->len;
	TimestampTz now = GetCurrentTimestamp();

	if (!ia->cleaned)
	{
		int			location = ia->location;

		text = CleanQuerytext(text, &location, &len);
	}
	sh->qtext = pgss_ng_qtext_store(pgss_ng_kind_area(kind), text, len,
									false);
	sh->qtext_failed = ia->failed;
	sh->encoding = GetDatabaseEncoding();
	sh->stats_since = now;
	sh->minmax_stats_since = now;
	sh->last_executed = 0;
	sh->changed_at = now;
	return DsaPointerIsValid(sh->qtext);
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
static bool
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
 *		Add the counters of src (pending data) into dst (shared data).
 *
 * Calls, totals, block/WAL/JIT counters and CPU times add up.  Means and
 * sums of squared deviations are combined with the parallel form of
 * Welford's method (Chan et al.), so the result equals one pass over all
 * calls up to rounding.  min/max take the smaller/larger, and restart
 * after a min/max reset (have_minmax false); src's min/max are only used
 * where src_minmax[phase] is true.  The time histograms are merged by the
 * caller.  Called with the entry lock held exclusively.
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
 * store_success_text
 *		Store the text of a successful planning or execution (the statement
 *		ia locates in its source string), to replace a failed execution's;
 *		invalid if it could not be stored.  Errors: an out-of-memory ERROR
 *		of the text arena, under the caller's guard.
 */
static dsa_pointer
store_success_text(const StmtInitArg *ia)
{
	int			location = ia->location;
	int			len = ia->len;
	const char *text = CleanQuerytext(ia->text, &location, &len);

	return pgss_ng_qtext_store(pgss_ng_kind_area(pgss_ng_stmt_kind), text,
							   len, false);
}

/* release_text: give a text back to the arena (nothing if invalid) */
static void
release_text(dsa_pointer text)
{
	if (DsaPointerIsValid(text))
		pgss_ng_qtext_release(pgss_ng_kind_area(pgss_ng_stmt_kind), text);
}

/*
 * stmt_flush_pending
 *		Flush callback of the statement kind: lock the entry (through the
 *		kind layer, without waiting when nowait), merge the pending
 *		counters into it, unlock.  Returns false if the entry could not be
 *		locked (busy, or removed: see PgssNgKindDesc).
 *
 * The uses added to the entry's usage: one per planning and execution,
 * less the one its creation already counted when these are the entry's
 * first (as pg_stat_statements "unsticks" an entry), so that every
 * statement run once has the same value however its entry was made.
 * Failed executions count as uses too.  Pending counts that began before
 * the entry's last min/max reset do not set its min/max nor go into its
 * time histograms, which describe the times since that reset.  The entry
 * is stamped as changed at ref->flush_time, the clock read under the lock
 * by pgss_ng_kind_lock_entry (stmt_stamp_changed_at), and last_executed
 * set to that time when executions (successful or failed) are merged.
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
		if (c->calls[PGSS_NG_PLAN] > 0)
			pgss_ng_hist_add_dense(&add, PGSS_NG_PLAN, &p->hist[PGSS_NG_PLAN]);
		if (c->calls[PGSS_NG_EXEC] > 0)
			pgss_ng_hist_add_dense(&add, PGSS_NG_EXEC, &p->hist[PGSS_NG_EXEC]);
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
	minmax[PGSS_NG_PLAN] = fresh;
	minmax[PGSS_NG_EXEC] = fresh;
	pgss_ng_stmt_merge(sh, c, minmax);
	if (first && uses > 0)
		uses -= 1;
	stmt_stamp_changed_at(sh, ref->flush_time);
	if (c->calls[PGSS_NG_EXEC] > 0 || c->errors > 0)
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
	log.calls = sh->counters.calls[PGSS_NG_EXEC];
	log.total_exec_time = sh->counters.total_time[PGSS_NG_EXEC];
	log.stats_since = sh->stats_since;
	log.evicted_at = 0;			/* set by the fold */
	pgss_ng_evicted_fold((const PgssNgStmtKey *) key, &sh->counters,
						 wait_samples, 1, &log);
}

/*
 * replace_failed_text
 *		ref's entry was made by a failed execution, with its text: give it
 *		the text of this successful planning or execution instead (the
 *		statement in the source string query), as pg_stat_statements keeps
 *		the first successful one's.  The text is stored with no lock held
 *		and swapped under the entry lock, taken as a flush without waiting
 *		takes it (busy: a later execution tries again); the one not kept
 *		is released after.
 *		Errors: an out-of-memory ERROR of the text arena, under the
 *		caller's guard.
 */
static void
replace_failed_text(PgssNgEntryRef *ref, const char *query, int location,
					int len)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;
	StmtInitArg ia = {.text = query, .location = location, .len = len};
	dsa_pointer qtext = store_success_text(&ia);
	dsa_pointer unused = qtext;

	if (!DsaPointerIsValid(qtext) || !pgss_ng_kind_lock_entry(ref, true))
	{
		release_text(unused);
		return;
	}
	if (sh->qtext_failed)
	{
		unused = sh->qtext;
		sh->qtext = qtext;
		sh->qtext_failed = false;
	}
	pgss_ng_kind_unlock_entry(ref, 0);
	release_text(unused);
}

/*
 * pgss_ng_stmt_pending
 *		This backend's pending data for key, for a successful planning or
 *		execution, making the shared entry if needed with the statement's
 *		text: query is the source string and (location, len) the statement
 *		in it.  The first count in new pending data of an entry that a
 *		failed execution made gives it this text (replace_failed_text).
 *		NULL when the entry could not be made (backstop, out of shared
 *		memory): the caller counts what it wanted to record as dropped.
 *		Errors: those of pgss_ng_kind_get_pending() and of the text arena;
 *		call under pgss_ng_kind_guard().  Caller attached.
 */
PgssNgPending *
pgss_ng_stmt_pending(const PgssNgStmtKey *key, const char *query,
					 int location, int len)
{
	StmtInitArg ia = {.text = query, .location = location, .len = len};
	PgssNgEntryRef *ref;
	PgssNgPending *p;

	ref = pgss_ng_kind_get_pending(pgss_ng_stmt_kind, key, stmt_init, &ia);
	if (ref == NULL)
		return NULL;
	p = (PgssNgPending *) ref->pending;
	/* the first success (in this pending data) after failures only */
	if (total_calls(&p->counters) == 0 &&
		((PgssNgStmtShared *) ref->shared_data)->qtext_failed)
		replace_failed_text(ref, query, location, len);
	return p;
}

/*
 * pgss_ng_stmt_lock
 *		Lock key's shared entry to count one planning or execution straight
 *		into it (pgss_ng_kind_lock_key into ref), making the entry if needed
 *		with the statement's text: query is the source string and
 *		(location, len) the statement in it.  Locked, an entry a failed
 *		execution made gets that text first (a success is counted now;
 *		stored under the entry lock: the text arena's locks come after it).
 *		Errors: those of pgss_ng_kind_lock_key() and of the text arena;
 *		call under pgss_ng_kind_guard().  Caller attached.
 */
PgssNgLockKey
pgss_ng_stmt_lock(const PgssNgStmtKey *key, const char *query, int location,
				  int len, PgssNgEntryRef *ref)
{
	StmtInitArg ia = {.text = query, .location = location, .len = len};
	PgssNgLockKey r;
	PgssNgStmtShared *sh;

	r = pgss_ng_kind_lock_key(pgss_ng_stmt_kind, key, stmt_init, &ia, ref);
	if (r != PGSS_NG_LOCK_KEY_LOCKED)
		return r;
	sh = (PgssNgStmtShared *) ref->shared_data;
	if (unlikely(sh->qtext_failed))
	{
		dsa_pointer text = store_success_text(&ia);

		if (DsaPointerIsValid(text))
		{
			release_text(sh->qtext);
			sh->qtext = text;
			sh->qtext_failed = false;
		}
	}
	return r;
}

/*
 * pgss_ng_stmt_count_locked
 *		Count one planning or execution of phase that took ms in the entry
 *		ref locked (pgss_ng_stmt_lock), whose other counters the caller
 *		added: its calls, time, Welford's step for the mean and variance,
 *		min/max (restarted after a min/max reset: have_minmax), as a flush
 *		of pending data holding this one call would (stmt_flush_pending, a
 *		count made after any reset; its histogram is the caller's, first:
 *		pgss_ng_stmt_count_hist); then stamp it changed (and executed) at
 *		the time read under the lock and unlock it, with the use it adds
 *		to its usage.  Errors: those of pgss_ng_kind_unlock_key().
 */
void
pgss_ng_stmt_count_locked(PgssNgEntryRef *ref, PgssNgPhase phase, double ms)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;
	PgssNgCounters *c = &sh->counters;
	bool		first = total_calls(c) == 0 && c->errors == 0;
	double		old_mean = c->mean_time[phase];
	int64		n = ++c->calls[phase];

	c->total_time[phase] += ms;
	if (n == 1)
		c->mean_time[phase] = ms;
	else
	{
		c->mean_time[phase] += (ms - old_mean) / n;
		c->sum_var_time[phase] += (ms - old_mean) * (ms - c->mean_time[phase]);
	}
	if (!sh->have_minmax[phase])
	{
		c->min_time[phase] = ms;
		c->max_time[phase] = ms;
		sh->have_minmax[phase] = true;
	}
	else
	{
		c->min_time[phase] = Min(c->min_time[phase], ms);
		c->max_time[phase] = Max(c->max_time[phase], ms);
	}

	stmt_stamp_changed_at(sh, ref->flush_time);
	if (phase == PGSS_NG_EXEC)
		sh->last_executed = sh->changed_at;
	pgss_ng_kind_unlock_key(ref, first ? 0 : 1);
}

/*
 * pgss_ng_stmt_count_hist
 *		Count one planning or execution of phase that took ms in the
 *		histogram of the entry ref locked (pgss_ng_stmt_lock), before
 *		anything else of it is counted: a histogram of up to two calls
 *		keeps none but the entry's min and max, and only this step may
 *		raise an ERROR (its chunk's allocation), with nothing changed yet.
 */
void
pgss_ng_stmt_count_hist(PgssNgEntryRef *ref, PgssNgPhase phase, double ms)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) ref->shared_data;

	pgss_ng_hist_store_add_one(pgss_ng_kind_area(pgss_ng_stmt_kind),
							   &sh->hist, &pgss_ng_stmt_ctl->hist, phase, ms,
							   sh->counters.min_time, sh->counters.max_time,
							   stmt_may_alloc_hist);
}

/*
 * pgss_ng_stmt_keep_pending
 *		After pgss_ng_stmt_lock() found the entry lock busy: this backend's
 *		new pending data for the entry (pgss_ng_kind_keep_pending), given
 *		the statement's text first if a failed execution made it, as
 *		pgss_ng_stmt_pending() does.  Errors and locks as
 *		pgss_ng_stmt_pending().
 */
PgssNgPending *
pgss_ng_stmt_keep_pending(PgssNgEntryRef *ref, const char *query,
						  int location, int len)
{
	PgssNgEntryRef *kept = pgss_ng_kind_keep_pending(ref);

	if (((PgssNgStmtShared *) kept->shared_data)->qtext_failed)
		replace_failed_text(kept, query, location, len);
	return (PgssNgPending *) kept->pending;
}

/*
 * pgss_ng_stmt_pending_failed
 *		This backend's pending data for key, for a failed execution
 *		(stmt_backend.c's merge of the failure notes), making the shared
 *		entry if needed with text (len bytes, cleaned already: stored as
 *		it is).  Such a text is kept only until the entry's first
 *		successful planning or execution (pgss_ng_stmt_pending).  NULL,
 *		errors and locks as pgss_ng_stmt_pending().
 */
PgssNgPending *
pgss_ng_stmt_pending_failed(const PgssNgStmtKey *key, const char *text,
							int len)
{
	StmtInitArg ia = {.text = text, .len = len, .cleaned = true,
	.failed = true};
	PgssNgEntryRef *ref;

	ref = pgss_ng_kind_get_pending(pgss_ng_stmt_kind, key, stmt_init, &ia);
	return ref ? (PgssNgPending *) ref->pending : NULL;
}

/*
 * pgss_ng_stmt_create
 *		Make sure a shared entry exists for key, with text (len bytes,
 *		stored as it is: the normalized text made at parse analysis),
 *		without counting anything (pg_stat_statements' "sticky" entry).
 *		Nothing happens if the entry cannot be made (backstop, out of
 *		shared memory).  Errors: those of pgss_ng_kind_create(); call
 *		under pgss_ng_kind_guard().  Caller attached.
 */
void
pgss_ng_stmt_create(const PgssNgStmtKey *key, const char *text, int len)
{
	StmtInitArg ia = {.text = text, .len = len, .cleaned = true};

	(void) pgss_ng_kind_create(pgss_ng_stmt_kind, key, stmt_init, &ia);
}
