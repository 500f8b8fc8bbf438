/*-------------------------------------------------------------------------
 *
 * stmt_kind.c
 *	  The statement kind: what pg_stat_statements tracks, as a kind of the
 *	  kind layer.  Key (userid, dbid, queryid, toplevel); pending data is a
 *	  PgssNgCounters; shared data adds the query text and timestamps.
 *
 * This file and stmt_kind_io.c are the only code that interprets the
 * counters: counting one call, merging pending into shared counters, the
 * min/max reset, what a reader sees (entries with calls, the time
 * statistics), the snapshot copy and the saved record; stmt_errors.c adds
 * failed executions to pending counters.  It also owns the info counters
 * (PgssNgInfo) and the GUC pgss_ng.max.
 *
 * Locking: counters in shared entries are changed only by the flush
 * callback (entry lock exclusive) and the reset and update callbacks
 * (idem); the info counters by their spinlock.  Nothing here raises an
 * ERROR into the user's statement: pgss_ng_store() catches what the
 * layers below could throw and counts the lost work as dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "normalize.h"
#include "qtext.h"
#include "stmt_kind.h"
#include "stmt_kind_int.h"

/* Pending entries allowed per backend before an early flush. */
#define PGSS_NG_MAX_PENDING		256

static bool stmt_flush_pending(PgssNgEntryRef *ref, bool nowait);
static void stmt_discard_pending(PgssNgEntryRef *ref);
static void stmt_free(PgssNgKind *kind, void *shared_data);
static bool stmt_needs_room(PgssNgKind *kind);

static const PgssNgKindInfo stmt_kind_info = {
	.name = "pgss_ng",
	.key_size = sizeof(PgssNgStmtKey),
	.shared_size = sizeof(PgssNgStmtShared),
	.pending_size = sizeof(PgssNgPending),
	/* the histograms: cleared at their phase's first count (count_one) */
	.pending_zeroed = offsetof(PgssNgPending, hist),
	.max_pending = PGSS_NG_MAX_PENDING,
	.flush_pending_cb = stmt_flush_pending,
	.discard_pending_cb = stmt_discard_pending,
	.free_cb = stmt_free,
	.to_serialized_cb = pgss_ng_stmt_to_serialized,
	.from_serialized_cb = pgss_ng_stmt_from_serialized,
	.needs_room_cb = stmt_needs_room,
};

PgssNgKind *pgss_ng_stmt_kind = NULL;

const double pgss_ng_quantiles[PGSS_NG_NUM_QUANTILES] = {
	0.5, 0.9, 0.95, 0.99, 0.999
};
PgssNgInfo *pgss_ng_info_shared = NULL;

/* counted in PgssNgInfo.nattached (pgss_ng_stmt_attach) */
static bool stmt_counted_attached = false;

/* GUC pgss_ng.max: most live statement entries (eviction keeps to it) */
static int	stmt_max = 5000;

/*
 * What the init callback stores in a new entry: a normalized text, or the
 * statement's location in its source string (cut by CleanQuerytext() only
 * when an entry is really made).
 */
typedef struct StmtInitArg
{
	const char *text;			/* text to store, or the source string */
	int			location;		/* statement's offset in it (source only) */
	int			len;			/* statement's length in bytes */
	bool		normalized;		/* text is stored as it is (a normalized
								 * text, or one cut already) */
} StmtInitArg;


/*
 * stmt_assign_max
 *		GUC assign hook of pgss_ng.max, in every process that (re)loads the
 *		configuration: the statement kind evicts down to the new value at
 *		this backend's next flush.
 */
static void
stmt_assign_max(int newval, void *extra)
{
	pgss_ng_kind_set_max_entries(pgss_ng_stmt_kind, newval);
}

/*
 * pgss_ng_stmt_init
 *		Make the statement kind's handle and define pgss_ng.max.  Called
 *		from _PG_init while preloading.
 */
void
pgss_ng_stmt_init(void)
{
	/* first: the assign hook sets the handle's max */
	pgss_ng_stmt_kind = pgss_ng_kind_define(&stmt_kind_info);
	DefineCustomIntVariable("pgss_ng.max",
							"Sets the maximum number of statements tracked "
							"by pgss_ng.",
							NULL,
							&stmt_max,
							5000,
							100,
							INT_MAX / 4,
							PGC_SIGHUP,
							0,
							NULL, stmt_assign_max, NULL);
}

/*
 * pgss_ng_stmt_shmem_size
 *		Bytes of main shared memory the statement kind needs.
 */
Size
pgss_ng_stmt_shmem_size(void)
{
	Size		size;

	size = add_size(pgss_ng_kind_shmem_size(&stmt_kind_info),
					MAXALIGN(sizeof(PgssNgInfo)));
	return add_size(size, pgss_ng_qtext_shmem_size());
}

/*
 * pgss_ng_stmt_shmem_request
 *		Request the named LWLocks of the statement kind and its text arena
 *		(shmem_request_hook).
 */
void
pgss_ng_stmt_shmem_request(void)
{
	pgss_ng_kind_shmem_request(&stmt_kind_info);
	pgss_ng_qtext_shmem_request();
}

/*
 * pgss_ng_stmt_shmem_startup
 *		Create or find the statement kind and the info counters.  Called
 *		from shmem_startup_hook; takes AddinShmemInitLock.
 */
void
pgss_ng_stmt_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	pgss_ng_kind_shmem_startup(pgss_ng_stmt_kind, "pgss_ng statements");
	pgss_ng_kind_set_max_entries(pgss_ng_stmt_kind, stmt_max);
	pgss_ng_qtext_shmem_startup();

	pgss_ng_info_shared = ShmemInitStruct("pgss_ng info", sizeof(PgssNgInfo),
										  &found);
	if (!found)
	{
		SpinLockInit(&pgss_ng_info_shared->mutex);
		pgss_ng_info_shared->dropped = 0;
		pgss_ng_info_shared->stats_reset = GetCurrentTimestamp();
		pgss_ng_info_shared->loaded = false;
		pg_atomic_init_u32(&pgss_ng_info_shared->nattached, 0);
	}

	LWLockRelease(AddinShmemInitLock);
}

/*
 * pgss_ng_stmt_ready
 *		Is the statement kind set up (library preloaded, shared memory
 *		made)?  The hooks record nothing otherwise.
 */
bool
pgss_ng_stmt_ready(void)
{
	return pgss_ng_info_shared != NULL;
}

/*
 * stmt_detach_count
 *		before_shmem_exit callback, registered before the kind layer's own
 *		(so it runs after it, callbacks running last-in first-out): this
 *		process has flushed and detached; stop counting it.
 */
static void
stmt_detach_count(int code, Datum arg)
{
	if (stmt_counted_attached)
		pg_atomic_fetch_sub_u32(&pgss_ng_info_shared->nattached, 1);
	stmt_counted_attached = false;
}

/*
 * pgss_ng_stmt_attach
 *		Attach this backend to the statement kind's shared entries, once.
 *		False when the library was not preloaded (see pgss_ng_kind_attach).
 *
 * Counts the attached processes that the writer (persist.c) waits for at
 * shutdown, until their exit flush is done.  Not walsenders: PostgreSQL
 * stops them only after the background workers, so the writer could not
 * wait for them; they flush with a waiting lock at every statement end
 * instead (pgss_ng_flush).
 */
bool
pgss_ng_stmt_attach(void)
{
	static bool exit_registered = false;

	if (pgss_ng_info_shared == NULL)
		return false;
	if (!exit_registered)
	{
		before_shmem_exit(stmt_detach_count, (Datum) 0);
		exit_registered = true;
	}
	if (!pgss_ng_kind_attach(pgss_ng_stmt_kind))
		return false;
	/* after the layer's exit callback: runs before it */
	pgss_ng_stmt_errors_attached();
	if (!stmt_counted_attached && !am_walsender)
	{
		pg_atomic_fetch_add_u32(&pgss_ng_info_shared->nattached, 1);
		stmt_counted_attached = true;
	}
	return true;
}

/*
 * pgss_ng_stmt_attached
 *		Processes attached and not yet past their exit flush (walsenders
 *		not counted).  Read without a lock.
 */
uint32
pgss_ng_stmt_attached(void)
{
	return pg_atomic_read_u32(&pgss_ng_info_shared->nattached);
}

/*
 * pgss_ng_stmt_count_dropped
 *		Count n plannings/executions (or failed executions) that could not
 *		be recorded.  Takes the info spinlock.
 */
void
pgss_ng_stmt_count_dropped(int64 n)
{
	SpinLockAcquire(&pgss_ng_info_shared->mutex);
	pgss_ng_info_shared->dropped += n;
	SpinLockRelease(&pgss_ng_info_shared->mutex);
}

/*
 * stmt_init
 *		Init callback for a new shared entry: store its query text (the
 *		normalized one, or the statement's own part of its source string)
 *		and its timestamps.  Runs before the entry is published, with no
 *		lock of the kind layer held, or under its alloc lock for a creation
 *		past max (see kind.h).  A text that cannot be stored leaves the
 *		entry with query NULL.  Errors: only an out-of-memory ERROR from the
 *		text arena's dedup hash.
 */
static bool
stmt_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtInitArg *ia = (StmtInitArg *) arg;
	const char *text = ia->text;
	int			len = ia->len;
	TimestampTz now = GetCurrentTimestamp();

	if (!ia->normalized)
	{
		int			location = ia->location;

		text = CleanQuerytext(text, &location, &len);
	}
	sh->qtext = pgss_ng_qtext_store(pgss_ng_kind_area(kind), text, len);
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
 *		(pgss_ng_qtext_needs_room).
 */
static bool
stmt_needs_room(PgssNgKind *kind)
{
	return pgss_ng_qtext_needs_room();
}

/*
 * stmt_free
 *		Free callback: release the entry's query text.
 */
static void
stmt_free(PgssNgKind *kind, void *shared_data)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;

	pgss_ng_qtext_release(pgss_ng_kind_area(kind), sh->qtext);
	sh->qtext = InvalidDsaPointer;
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
		dst->calls[k] += nb;
		dst->total_time[k] += src->total_time[k];

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

#define MERGE_SUM(name, ctype, sqltype, measured) dst->name += src->name;
	PGSS_NG_SUM_COUNTERS(MERGE_SUM)
	PGSS_NG_OWN_COUNTERS(MERGE_SUM)
#undef MERGE_SUM

	for (k = 0; k < PGSS_NG_NUMPHASE; k++)
	{
		dst->cpu_samples[k] += src->cpu_samples[k];
		dst->user_time[k] += src->user_time[k];
		dst->system_time[k] += src->system_time[k];
	}
}

/*
 * stmt_flush_pending
 *		Flush callback of the statement kind: lock the entry (through the
 *		kind layer, without waiting when nowait), merge the pending
 *		counters into it, unlock.  Returns false if the entry could not be
 *		locked (busy, or dropped: see PgssNgKindInfo).
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
	 * must not become the new ones.  The calls still count.
	 */
	fresh = ref->pending_since >= sh->minmax_reset_at;
	minmax[PGSS_NG_PLAN] = fresh;
	minmax[PGSS_NG_EXEC] = fresh;
	pgss_ng_stmt_merge(sh, c, minmax);
	if (fresh)
	{
		/* a phase's histogram is valid once the phase has a call */
		if (c->calls[PGSS_NG_PLAN] > 0)
			pgss_ng_hist_merge(&sh->hist, PGSS_NG_PLAN,
							   &p->hist[PGSS_NG_PLAN]);
		if (c->calls[PGSS_NG_EXEC] > 0)
			pgss_ng_hist_merge(&sh->hist, PGSS_NG_EXEC,
							   &p->hist[PGSS_NG_EXEC]);
	}
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
 *		counts for it; count its plannings and executions, failed ones
 *		included, as dropped.
 */
static void
stmt_discard_pending(PgssNgEntryRef *ref)
{
	const PgssNgPending *p = (const PgssNgPending *) ref->pending;
	const PgssNgCounters *c = &p->counters;

	pgss_ng_stmt_count_dropped(total_calls(c) + c->errors);
}

/*
 * count_one
 *		Record one planning or execution (phase) in pending counters
 *		(backend-local, no lock).  total_time in ms, counted in the
 *		phase's histogram too.  Mean and variance by Welford's method.  What the server does not measure (compat.h's
 *		PGSS_NG_HAVE_*) stays 0 and is shown as NULL; jitusage and
 *		parallel may be NULL (nothing to add).  A JIT phase is counted in
 *		its *_count when its time is non-zero, as pg_stat_statements does.
 *		cpu: the call's CPU time, or NULL when it was not sampled.
 */
static void
count_one(PgssNgPending *p, PgssNgPhase phase, double total_time,
		  uint64 rows, const BufferUsage *bufusage, const WalUsage *walusage,
		  const JitInstrumentation *jitusage,
		  const PgssNgParallelUsage *parallel, const PgssNgCpuUsage *cpu)
{
	PgssNgCounters *c = &p->counters;

	/* the kind layer zeroes only the counters of a new pending entry */
	if (c->calls[phase] == 0)
		pgss_ng_hist_dense_clear(&p->hist[phase]);
	pgss_ng_hist_add(&p->hist[phase], total_time);
	if (cpu)
	{
		c->cpu_samples[phase] += 1;
		c->user_time[phase] += cpu->user_ms;
		c->system_time[phase] += cpu->system_ms;
	}
	c->calls[phase] += 1;
	c->total_time[phase] += total_time;
	if (c->calls[phase] == 1)
	{
		c->min_time[phase] = total_time;
		c->max_time[phase] = total_time;
		c->mean_time[phase] = total_time;
	}
	else
	{
		double		old_mean = c->mean_time[phase];

		c->mean_time[phase] += (total_time - old_mean) / c->calls[phase];
		c->sum_var_time[phase] +=
			(total_time - old_mean) * (total_time - c->mean_time[phase]);
		c->min_time[phase] = Min(c->min_time[phase], total_time);
		c->max_time[phase] = Max(c->max_time[phase], total_time);
	}

	c->rows += rows;
	c->shared_blks_hit += bufusage->shared_blks_hit;
	c->shared_blks_read += bufusage->shared_blks_read;
	c->shared_blks_dirtied += bufusage->shared_blks_dirtied;
	c->shared_blks_written += bufusage->shared_blks_written;
	c->local_blks_hit += bufusage->local_blks_hit;
	c->local_blks_read += bufusage->local_blks_read;
	c->local_blks_dirtied += bufusage->local_blks_dirtied;
	c->local_blks_written += bufusage->local_blks_written;
	c->temp_blks_read += bufusage->temp_blks_read;
	c->temp_blks_written += bufusage->temp_blks_written;
	c->shared_blk_read_time +=
		INSTR_TIME_GET_MILLISEC(PGSS_NG_BUF_SHARED_READ_TIME(bufusage));
	c->shared_blk_write_time +=
		INSTR_TIME_GET_MILLISEC(PGSS_NG_BUF_SHARED_WRITE_TIME(bufusage));
#if PGSS_NG_HAVE_LOCAL_BLK_TIME
	c->local_blk_read_time +=
		INSTR_TIME_GET_MILLISEC(PGSS_NG_BUF_LOCAL_READ_TIME(bufusage));
	c->local_blk_write_time +=
		INSTR_TIME_GET_MILLISEC(PGSS_NG_BUF_LOCAL_WRITE_TIME(bufusage));
#endif
	c->temp_blk_read_time += INSTR_TIME_GET_MILLISEC(bufusage->temp_blk_read_time);
	c->temp_blk_write_time += INSTR_TIME_GET_MILLISEC(bufusage->temp_blk_write_time);
	c->wal_records += walusage->wal_records;
	c->wal_fpi += walusage->wal_fpi;
	c->wal_bytes += walusage->wal_bytes;
#if PGSS_NG_HAVE_WAL_BUFFERS_FULL
	c->wal_buffers_full += PGSS_NG_WAL_BUFFERS_FULL(walusage);
#endif

	if (jitusage)
	{
		double		inlining = INSTR_TIME_GET_MILLISEC(jitusage->inlining_counter);
		double		optimization = INSTR_TIME_GET_MILLISEC(jitusage->optimization_counter);
		double		emission = INSTR_TIME_GET_MILLISEC(jitusage->emission_counter);

		c->jit_functions += jitusage->created_functions;
		c->jit_generation_time += INSTR_TIME_GET_MILLISEC(jitusage->generation_counter);
		if (inlining)
			c->jit_inlining_count++;
		c->jit_inlining_time += inlining;
		if (optimization)
			c->jit_optimization_count++;
		c->jit_optimization_time += optimization;
		if (emission)
			c->jit_emission_count++;
		c->jit_emission_time += emission;
#if PGSS_NG_HAVE_JIT_DEFORM
		{
			double		deform =
				INSTR_TIME_GET_MILLISEC(PGSS_NG_JIT_DEFORM_TIME(jitusage));

			if (deform)
				c->jit_deform_count++;
			c->jit_deform_time += deform;
		}
#endif
	}

	if (parallel)
	{
		c->parallel_workers_to_launch += parallel->to_launch;
		c->parallel_workers_launched += parallel->launched;
	}
}

/*
 * pgss_ng_stmt_pending
 *		This backend's pending counters for key, making the shared entry if
 *		needed with the statement's text: text is the source string and
 *		(location, len) the statement in it, or, with cleaned, the text to
 *		store as it is (len bytes).  NULL when the entry could not be made
 *		(backstop, out of shared memory): the caller counts what it wanted
 *		to record as dropped.  Errors: those of pgss_ng_kind_get_pending();
 *		call under pgss_ng_kind_guard().  Caller attached.
 */
PgssNgCounters *
pgss_ng_stmt_pending(const PgssNgStmtKey *key, const char *text,
					 int location, int len, bool cleaned)
{
	StmtInitArg ia;
	PgssNgEntryRef *ref;

	ia.text = text;
	ia.location = location;
	ia.len = len;
	ia.normalized = cleaned;
	ref = pgss_ng_kind_get_pending(pgss_ng_stmt_kind, key, stmt_init, &ia);
	return ref ? (PgssNgCounters *) ref->pending : NULL;
}

/* What pgss_ng_store() records, for store_internal under the guard. */
typedef struct StoreArgs
{
	const char *query;			/* the source string */
	uint64		queryid;
	int			query_location; /* the statement's place in it */
	int			query_len;
	PgssNgPhase phase;
	bool		toplevel;
	double		total_time;		/* ms */
	uint64		rows;
	const BufferUsage *bufusage;
	const WalUsage *walusage;
	const JitInstrumentation *jitusage; /* or NULL */
	const PgssNgParallelUsage *parallel;	/* or NULL */
	const PgssNgCpuUsage *cpu;	/* or NULL */
	JumbleState *jstate;		/* parse analysis only, or NULL */
} StoreArgs;

/*
 * store_internal
 *		The body of pgss_ng_store(), run under pgss_ng_kind_guard(); may
 *		raise ERRORs from below (local out-of-memory, DSM mapping
 *		failures), which the guard catches.
 *
 * With jstate (parse analysis of a statement with constants) it only makes
 * sure the entry exists, normalizing the text if it does not: the
 * normalized text can only be computed here.  Otherwise it adds one
 * planning or execution to the backend's pending counters, creating the
 * entry with the statement's own text if needed.  Memory: the normalized
 * text is palloc'd in CurrentMemoryContext and freed before returning.
 */
static void
store_internal(void *arg)
{
	StoreArgs  *sa = (StoreArgs *) arg;
	const char *query = sa->query;
	int			query_location = sa->query_location;
	int			query_len = sa->query_len;
	JumbleState *jstate = sa->jstate;
	PgssNgKind *sk = pgss_ng_stmt_kind;
	PgssNgStmtKey key;
	StmtInitArg ia;
	PgssNgCounters *c;
	char	   *norm_query = NULL;

	if (!pgss_ng_stmt_attach())
		return;

	memset(&key, 0, sizeof(key));
	key.userid = GetUserId();
	key.dbid = MyDatabaseId;
	key.queryid = sa->queryid;
	key.toplevel = sa->toplevel;

	if (jstate != NULL && pgss_ng_kind_exists(sk, &key))
		return;

	if (jstate != NULL)
	{
		query = CleanQuerytext(query, &query_location, &query_len);
		norm_query = pgss_ng_normalize_query(jstate, query, query_location,
											 &query_len);
		ia.text = norm_query;
		ia.location = 0;
		ia.len = query_len;
		ia.normalized = true;
		(void) pgss_ng_kind_create(sk, &key, stmt_init, &ia);
		pfree(norm_query);
		return;
	}

	c = pgss_ng_stmt_pending(&key, query, query_location, query_len, false);
	if (c == NULL)
	{
		pgss_ng_stmt_count_dropped(1);
		return;
	}
	/* c is the first member of the pending entry (PgssNgPending) */
	count_one((PgssNgPending *) c, sa->phase, sa->total_time, sa->rows,
			  sa->bufusage, sa->walusage, sa->jitusage, sa->parallel,
			  sa->cpu);
}

/*
 * pgss_ng_store
 *		Record a planning or execution of a statement (or, with jstate,
 *		make its entry with the normalized text).  Called from the hooks.
 *
 * query/query_location/query_len locate the statement in its source
 * string; total_time is in ms; cpu is the call's CPU time, NULL if it was
 * not sampled.  No ERROR escapes into the user's
 * statement: one raised below is caught, logged, and the planning or
 * execution counted as dropped.
 */
void
pgss_ng_store(const char *query, uint64 queryid, int query_location,
			  int query_len, PgssNgPhase phase, bool toplevel,
			  double total_time, uint64 rows, const BufferUsage *bufusage,
			  const WalUsage *walusage, const JitInstrumentation *jitusage,
			  const PgssNgParallelUsage *parallel,
			  const PgssNgCpuUsage *cpu, JumbleState *jstate)
{
	/* in StoreArgs' order */
	StoreArgs	sa = {query, queryid, query_location, query_len, phase,
					  toplevel, total_time, rows, bufusage, walusage,
					  jitusage, parallel, cpu, jstate};

	if (queryid == UINT64CONST(0) || pgss_ng_info_shared == NULL)
		return;

	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record a statement",
							store_internal, &sa) &&
		jstate == NULL)
		pgss_ng_stmt_count_dropped(1);
}

/*
 * flush_internal
 *		The body of pgss_ng_flush(), run under pgss_ng_kind_guard(); arg
 *		points to its force argument.
 */
static void
flush_internal(void *arg)
{
	bool		force = *(bool *) arg;

	/* walsenders are not waited for at shutdown: never leave anything */
	pgss_ng_kind_flush(pgss_ng_stmt_kind, force || am_walsender);
	/* after a lowered pgss_ng.max, or an eviction that found its lock busy */
	pgss_ng_kind_evict(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_flush
 *		Merge the failed executions noted since the last flush into the
 *		pending counters (pgss_ng_stmt_merge_errors), flush this backend's
 *		pending statement counters (see pgss_ng_kind_flush), then evict if
 *		live entries exceed max.  Called
 *		at the end of each top-level statement (force false); the SQL
 *		functions flush through pgss_ng_stmt_read() and
 *		pgss_ng_stmt_reset().  An ERROR (e.g. a DSM segment that cannot be
 *		mapped while freeing) is caught and logged (pgss_ng_kind_guard);
 *		what stayed pending is retried next time.
 */
void
pgss_ng_flush(bool force)
{
	pgss_ng_stmt_merge_errors();
	if (!pgss_ng_kind_has_pending(pgss_ng_stmt_kind))
		return;

	(void) pgss_ng_kind_guard(pgss_ng_stmt_kind,
							  "flush statement statistics",
							  flush_internal, &force);
}
