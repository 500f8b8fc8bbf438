/*-------------------------------------------------------------------------
 *
 * stmt_backend.c
 *	  What a backend does with the statement kind: attach once, record
 *	  plannings and executions (pgss_ng_stmt_count_call), flush (merging failed
 *	  executions first), the writer's eviction after a reload, and the one
 *	  exit sequence (stmt_exit).  docs/design.md, "Backend side".  Shared
 *	  memory is touched under pgss_ng_kind_guard(): no ERROR escapes.
 *	  Owns: the exit callback's registration, this process's nattached count.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "normalize.h"
#include "stmt_failures.h"
#include "stmt_kind.h"
#include "stmt_kind_int.h"

/* the statement kind's exit callback is registered (stmt_exit) */
static bool exit_registered = false;

/* counted in PgssNgStmtControl.nattached (pgss_ng_stmt_attach) */
static bool counted_attached = false;

/* attached to the statement kind (pgss_ng_stmt_attach returned true) */
static bool attached = false;

static void merge_and_flush(bool force);

/*
 * stmt_exit
 *		The statement kind's before_shmem_exit callback: the whole exit
 *		sequence, in order (see the file header).  Nothing counted by this
 *		backend is left behind, unless an entry lock could not be had
 *		(held by this backend itself) or an ERROR in the merge dropped it.
 */
static void
stmt_exit(int code, Datum arg)
{
	/* a FATAL leaves the frames of the statements it aborted open */
	if (pgss_ng_stmt_note_at_exit)
		pgss_ng_stmt_note_at_exit();
	pgss_ng_stmt_merge_errors();
	if (pgss_ng_kind_has_pending(pgss_ng_stmt_kind))
		pgss_ng_kind_flush(pgss_ng_stmt_kind, true);
	pgss_ng_plans_work();
	pgss_ng_kind_detach(pgss_ng_stmt_kind);
	attached = false;
	if (counted_attached)
		pg_atomic_fetch_sub_u32(&pgss_ng_stmt_ctl->nattached, 1);
	counted_attached = false;
}

/*
 * register_exit
 *		Register stmt_exit, once per backend.
 */
static void
register_exit(void)
{
	if (exit_registered)
		return;
	before_shmem_exit(stmt_exit, (Datum) 0);
	exit_registered = true;
}

/*
 * pgss_ng_stmt_attach
 *		Attach this backend to the statement kind, once, and register the
 *		exit sequence; false when not preloaded, or at exit after the detach.
 *		Counts the process in nattached, which the writer waits for at
 *		shutdown; not walsenders (stopped after the background workers): they
 *		flush with a waiting lock at every statement end.
 */
bool
pgss_ng_stmt_attach(void)
{
	if (likely(attached))
		return true;
	if (pgss_ng_stmt_ctl == NULL ||
		!pgss_ng_kind_attach(pgss_ng_stmt_kind))
		return false;
	register_exit();
	if (!counted_attached && !am_walsender)
	{
		pg_atomic_fetch_add_u32(&pgss_ng_stmt_ctl->nattached, 1);
		counted_attached = true;
	}
	attached = true;
	return true;
}

/*
 * pgss_ng_stmt_nattached
 *		Processes attached and not yet past their exit sequence (walsenders
 *		not counted).  Read without a lock.
 */
uint32
pgss_ng_stmt_nattached(void)
{
	return pg_atomic_read_u32(&pgss_ng_stmt_ctl->nattached);
}

/*
 * pgss_ng_stmt_flush_failures
 *		At a tracked statement's start, when asked (pgss_ng_stmt_attention):
 *		register the exit sequence (a FATAL may end the very first
 *		statement), then merge and flush, waiting for entry locks, the
 *		failures noted since the last merge: a session whose statements all
 *		fail never reaches a statement end, and a loop catching errors must
 *		not fill the notes.  No ERROR escapes.
 */
void
pgss_ng_stmt_flush_failures(void)
{
	register_exit();
	pgss_ng_stmt_attention = false;
	if (pgss_ng_stmt_notes_waiting())
		merge_and_flush(true);
}

/*
 * count_time
 *		Count one call of phase that took total_time ms in pending
 *		counters: calls, total, min, max, mean and variance (Welford's
 *		method), and the phase's histogram.
 */
static void
count_time(PgssNgPending *p, PgssNgPhase phase, double total_time)
{
	PgssNgCounters *c = &p->counters;

	/* the kind layer zeroes only the counters of a new pending entry */
	if (c->calls[phase] == 0)
		pgss_ng_hist_dense_clear(&p->hist[phase]);
	pgss_ng_hist_add(&p->hist[phase], total_time);
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
}

/*
 * count_jit
 *		Add one call's JIT work to pending counters.  A JIT phase is
 *		counted in its *_count when its time is non-zero, as
 *		pg_stat_statements does.  Times in ms.
 */
static void
count_jit(PgssNgCounters *c, const JitInstrumentation *jitusage)
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

/*
 * count_sums
 *		Add what the planning or execution that s describes used to
 *		counters c (pending, or a shared entry's under its lock): all but
 *		its calls and time (count_time, pgss_ng_stmt_count_locked).  What
 *		the server does not measure (pgver.h's PGSS_NG_HAVE_*) stays 0 and
 *		is shown as NULL; jitusage, parallel and cpu may be NULL (nothing
 *		to add).
 */
static void
count_sums(PgssNgCounters *c, const PgssNgCall *s)
{
	const BufferUsage *bufusage = s->bufusage;
	const WalUsage *walusage = s->walusage;

	if (s->cpu)
	{
		c->cpu_samples[s->phase] += 1;
		c->user_time[s->phase] += s->cpu->user_ms;
		c->system_time[s->phase] += s->cpu->system_ms;
	}
	c->rows += s->rows;
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
	if (s->jitusage)
		count_jit(c, s->jitusage);
	if (s->parallel)
	{
		c->parallel_workers_to_launch += s->parallel->to_launch;
		c->parallel_workers_launched += s->parallel->launched;
	}
}

/*
 * count_one
 *		Record the planning or execution that s describes in pending
 *		counters (backend-local, no lock): its time (count_time) and what
 *		it used (count_sums).
 */
static void
count_one(PgssNgPending *p, const PgssNgCall *s)
{
	count_time(p, s->phase, s->total_time);
	count_sums(&p->counters, s);
	if (s->planid != 0)
		pgss_ng_plans_count(&p->plans, s->planid, s->total_time, s->rows);
}

/* What the guarded part of pgss_ng_stmt_count_call() gets, and returns. */
typedef struct CountArgs
{
	const PgssNgCall *s;
	PgssNgStmtKey key;
	bool		dropped;		/* set: nothing could be recorded */
} CountArgs;

/*
 * parse_guarded
 *		pgss_ng_stmt_count_call() at parse analysis (s->jstate), under
 *		pgss_ng_kind_guard(): make sure the entry exists, normalizing the
 *		text if it does not (the normalized text can only be computed
 *		here).  Memory: the normalized text is palloc'd in
 *		CurrentMemoryContext and freed before returning.
 */
static void
parse_guarded(void *arg)
{
	CountArgs  *a = (CountArgs *) arg;
	const PgssNgCall *s = a->s;
	const char *query = s->query;
	int			query_location = s->query_location;
	int			query_len = s->query_len;
	char	   *norm_query;

	if (!pgss_ng_stmt_attach() ||
		pgss_ng_kind_exists(pgss_ng_stmt_kind, &a->key))
		return;
	query = CleanQuerytext(query, &query_location, &query_len);
	norm_query = pgss_ng_normalize_query(s->jstate, query, query_location,
										 &query_len);
	pgss_ng_stmt_create(&a->key, norm_query, query_len);
	pfree(norm_query);
}

/*
 * record_now
 *		Count s straight into its shared entry (key), made if needed
 *		(pgss_ng_stmt_lock, then the histogram, the plan rows and
 *		pgss_ng_stmt_count_locked), or, if the entry lock is busy, in new
 *		pending data.  False when the entry could not be made (the caller
 *		counts a drop).  Errors: the kind layer's and the text arena's, under
 *		a guard.
 */
static bool
record_now(const PgssNgStmtKey *key, const PgssNgCall *s)
{
	PgssNgEntryRef ref;

	if (!pgss_ng_stmt_attach())
		return true;
	switch (pgss_ng_stmt_lock(key, s->query, s->query_location, s->query_len,
							  &ref))
	{
		case PGSS_NG_LOCK_KEY_LOCKED:
			/*
			 * The histogram, then the plan rows: only they may raise an
			 * ERROR (a chunk's allocation, a mapping), each before it writes.
			 */
			pgss_ng_stmt_count_hist(&ref, s->phase, s->total_time);
			if (s->planid != 0)
				pgss_ng_plans_count_locked(&((PgssNgStmtShared *) ref.shared_data)->plans,
										   key, s->planid, s->total_time,
										   s->rows, ref.flush_time);
			count_sums(&((PgssNgStmtShared *) ref.shared_data)->counters, s);
			pgss_ng_stmt_count_locked(&ref, s->phase, s->total_time);
			return true;
		case PGSS_NG_LOCK_KEY_BUSY:
			count_one(pgss_ng_stmt_keep_pending(&ref, s->query,
												s->query_location,
												s->query_len), s);
			return true;
		case PGSS_NG_LOCK_KEY_FAILED:
			break;
	}
	return false;
}

/*
 * pending_guarded
 *		Count a->s in this backend's pending data for the entry, making the
 *		entry if needed with the statement's own text, or giving that text
 *		to an entry a failed execution made (pgss_ng_stmt_pending), under
 *		pgss_ng_kind_guard().
 */
static void
pending_guarded(void *arg)
{
	CountArgs  *a = (CountArgs *) arg;
	PgssNgPending *p;

	if (!pgss_ng_stmt_attach())
		return;
	p = pgss_ng_stmt_pending(&a->key, a->s->query, a->s->query_location,
							 a->s->query_len);
	if (p == NULL)
		a->dropped = true;
	else
		count_one(p, a->s);
}

/*
 * pgss_ng_stmt_count_call
 *		Record what s describes (PgssNgCall), from the hooks: a planning or
 *		execution, or with s->jstate the entry and its normalized text.  Into
 *		pending data this backend holds for the entry if any; else a top-level
 *		statement's (or any, with no share of pending references) straight into
 *		its entry, a nested one's into new pending data.  No ERROR escapes: one
 *		raised is logged and the call counted as dropped.
 */
void
pgss_ng_stmt_count_call(const PgssNgCall *s)
{
	CountArgs	a = {.s = s};
	PgssNgPending *p;

	if (s->queryid == UINT64CONST(0) || pgss_ng_stmt_ctl == NULL)
		return;

	memset(&a.key, 0, sizeof(a.key));
	a.key.userid = GetUserId();
	a.key.dbid = MyDatabaseId;
	a.key.queryid = s->queryid;
	a.key.toplevel = s->toplevel;

	if (s->jstate != NULL)
	{
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "record a statement",
								  parse_guarded, &a);
		return;
	}

	p = pgss_ng_kind_find_pending(pgss_ng_stmt_kind, &a.key);
	if (p != NULL)
	{
		count_one(p, s);
		return;
	}
	if (s->toplevel || pgss_ng_kind_pending_limit(pgss_ng_stmt_kind) == 0)
	{
		/* the hot path: its guard written out, not through a function */
		volatile bool recorded = false;

		PGSS_NG_GUARD_BEGIN(pgss_ng_stmt_kind);
		recorded = record_now(&a.key, s);
		PGSS_NG_GUARD_END(pgss_ng_stmt_kind, "record a statement", );
		if (!recorded)
			pgss_ng_stmt_count_dropped(1);
	}
	else if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record a statement",
								 pending_guarded, &a) || a.dropped)
		pgss_ng_stmt_count_dropped(1);
}

/*
 * flush_guarded
 *		The flush of merge_and_flush(), run under pgss_ng_kind_guard(); arg
 *		points to whether to wait for entry locks (pgss_ng_kind_flush's
 *		force).
 */
static void
flush_guarded(void *arg)
{
	pgss_ng_kind_flush(pgss_ng_stmt_kind, *(bool *) arg);
	/* after a lowered pgss_ng.max, or an eviction that found its lock busy */
	pgss_ng_kind_run_eviction(pgss_ng_stmt_kind);
}

/*
 * enforce_max_guarded
 *		The body of pgss_ng_stmt_enforce_max(), run under pgss_ng_kind_guard().
 */
static void
enforce_max_guarded(void *arg)
{
	if (pgss_ng_stmt_attach())
		pgss_ng_kind_run_eviction(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_stmt_enforce_max
 *		Evict now if live entries exceed max (pgss_ng_kind_run_eviction), for the
 *		writer after it published a lowered pgss_ng.max, so that the table
 *		follows a reload without waiting for some backend's next flush.  No
 *		ERROR escapes (pgss_ng_kind_guard).
 */
void
pgss_ng_stmt_enforce_max(void)
{
	(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "evict statement entries",
							  enforce_max_guarded, NULL);
}

/*
 * merge_and_flush
 *		Merge the failures noted since the last merge, flush this backend's
 *		pending counters (waiting for entry locks with force), then run an
 *		eviction if live entries exceed max.  An ERROR (e.g. a DSM segment
 *		that cannot be mapped) is caught and logged (pgss_ng_kind_guard); what
 *		stayed pending is retried next time.
 */
static void
merge_and_flush(bool force)
{
	pgss_ng_stmt_merge_errors();
	if (pgss_ng_kind_has_pending(pgss_ng_stmt_kind))
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind,
								  "flush statement statistics",
								  flush_guarded, &force);
	/* the plan rows the counts found missing, the texts captured */
	pgss_ng_plans_work();
}

/*
 * pgss_ng_flush
 *		merge_and_flush() at the end of each top-level statement, if
 *		failures were noted or anything is pending: entry locks are tried
 *		without waiting (walsenders wait: see pgss_ng_stmt_attach).  The SQL
 *		functions flush, waiting, through pgss_ng_stmt_read() and
 *		pgss_ng_stmt_reset().
 */
void
pgss_ng_flush(void)
{
	if (likely(!pgss_ng_stmt_attention) &&
		!pgss_ng_kind_has_pending(pgss_ng_stmt_kind))
	{
		/* the plan rows the counts found missing, the texts captured */
		if (unlikely(pgss_ng_plans_nwork > 0))
			pgss_ng_plans_work();
		return;
	}
	register_exit();
	pgss_ng_stmt_attention = false;
	/* walsenders are not waited for at shutdown: never leave anything */
	merge_and_flush(am_walsender);
}
