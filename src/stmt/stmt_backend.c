/*-------------------------------------------------------------------------
 *
 * stmt_backend.c
 *	  What a backend does with the statement kind: attach once, record
 *	  plannings and executions (pgss_ng_store) and failed executions
 *	  (pgss_ng_stmt_merge_errors turns the notes of frames.c into pending
 *	  counts), flush, the writer's eviction after a reload, and the one
 *	  exit sequence.
 *
 * A top-level statement's planning or execution is counted straight into
 * its shared entry (pgss_ng_stmt_lock: one lookup, the entry lock tried,
 * no reference, nothing allocated); only if that lock is busy is it kept
 * pending.  A nested one is counted in
 * pending data (holding a reference, within the backend's share:
 * pgss_ng_kind_pending_limit) flushed at the end of the top-level
 * statement; with no share at all it is counted straight too.  Counting into pending
 * data this backend already holds touches no shared memory and raises
 * nothing; what touches shared memory runs under pgss_ng_kind_guard(): no
 * ERROR escapes, and the lost work is counted as dropped.
 *
 * The exit sequence is one before_shmem_exit callback (stmt_exit),
 * registered by the first attach or statement of the backend, that does,
 * in this order: note the frames a FATAL left open (frames.c), merge
 * every failure noted into pending counts, flush everything pending
 * (waiting for locks), detach from the kind (pgss_ng_kind_detach), and
 * stop counting this process as attached, so that the writer, which waits
 * for attached processes at shutdown (writer.c), finds every count
 * flushed.
 *
 * Owns: whether this backend registered the exit callback and counts in
 * PgssNgStmtControl.nattached; the failure note being merged.
 *
 * Locking: none of its own; the kind layer's (kind.h), the info spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "normalize.h"
#include "hooks/frames.h"
#include "stmt_kind.h"
#include "stmt_kind_int.h"

/* the statement kind's exit callback is registered (stmt_exit) */
static bool exit_registered = false;

/* counted in PgssNgStmtControl.nattached (pgss_ng_stmt_attach) */
static bool counted_attached = false;

/* attached to the statement kind (pgss_ng_stmt_attach returned true) */
static bool attached = false;

/* the failure note being merged, for the guard's error path */
static PgssNgFailureNote merging;
static bool merging_valid = false;

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
	pgss_ng_stmt_note_open_frames();
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
 *		Attach this backend to the statement kind's shared entries, once,
 *		and register the exit sequence.  False when the library was not
 *		preloaded, or at exit after the detach (see pgss_ng_kind_attach).
 *
 * Counts the attached processes that the writer (writer.c) waits for at
 * shutdown, until their exit sequence is done.  Not walsenders: PostgreSQL
 * stops them only after the background workers, so the writer could not
 * wait for them; they flush with a waiting lock at every statement end
 * instead (pgss_ng_flush).
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
 * pgss_ng_stmt_attached
 *		Processes attached and not yet past their exit sequence (walsenders
 *		not counted).  Read without a lock.
 */
uint32
pgss_ng_stmt_attached(void)
{
	return pg_atomic_read_u32(&pgss_ng_stmt_ctl->nattached);
}

/*
 * pgss_ng_stmt_begin
 *		At the start of a tracked statement's hook call, when frames.c asks
 *		for it (pgss_ng_frames_attention): the backend's first statement
 *		registers the exit sequence (without attaching), so that it runs
 *		should a FATAL end the very first statement; failures noted since
 *		the last merge are merged and flushed, waiting for entry locks
 *		(held only for a merge or a reader's copy; merge_and_flush), so
 *		that other sessions see them by the time this call starts, even in
 *		a session whose statements all fail (their executions never end,
 *		so no statement end flushes them), and so that a loop catching
 *		errors does not fill the notes.  No ERROR escapes.
 */
void
pgss_ng_stmt_begin(void)
{
	register_exit();
	pgss_ng_frames_attention = false;
	if (pgss_ng_stmt_notes_waiting())
		merge_and_flush(true);
}

/*
 * merge_note
 *		Add one noted failure to this backend's pending counters, making
 *		the entry if needed (with the noted text, or none); dropped if it
 *		cannot be made.  Errors: those of pgss_ng_stmt_pending_failed(),
 *		under the caller's guard.
 */
static void
merge_note(const PgssNgFailureNote *n)
{
	PgssNgStmtKey key;
	PgssNgPending *p;

	memset(&key, 0, sizeof(key));
	key.userid = n->userid;
	key.dbid = n->dbid;
	key.queryid = n->queryid;
	key.toplevel = n->toplevel;
	p = pgss_ng_stmt_pending_failed(&key, n->text, n->textlen);
	if (p == NULL)
		pgss_ng_stmt_count_dropped(1);
	else
	{
		p->counters.errors += 1;
		p->counters.error_exec_time += n->elapsed_ms;
	}
}

/*
 * merge_errors_guarded
 *		The body of pgss_ng_stmt_merge_errors(), run under
 *		pgss_ng_kind_guard().  Each note is taken out of frames.c's
 *		array before it is merged (in merging), so that an ERROR cannot
 *		merge it twice.
 */
static void
merge_errors_guarded(void *arg)
{
	int64		lost;

	if (!pgss_ng_stmt_attach())
		return;
	lost = pgss_ng_stmt_take_notes_lost();
	if (lost > 0)
		pgss_ng_stmt_count_dropped(lost);
	while (pgss_ng_stmt_take_note(&merging))
	{
		merging_valid = true;
		merge_note(&merging);
		if (merging.text)
			pfree(merging.text);
		merging_valid = false;
	}
}

/*
 * pgss_ng_stmt_merge_errors
 *		Turn the failed executions noted so far into pending counts: when
 *		the next tracked call opens its frame (flushed at once then), at
 *		every pgss_ng_flush() (the end of each top-level statement, tracked
 *		or not), before a view read or reset of this backend, and at exit.
 *		No ERROR escapes (pgss_ng_kind_guard); a note whose merge raised
 *		one counts as dropped.  Memory: the notes' texts are freed.
 */
void
pgss_ng_stmt_merge_errors(void)
{
	if (!pgss_ng_stmt_notes_waiting())
		return;
	if (!pgss_ng_kind_guard(pgss_ng_stmt_kind, "record failed executions",
							merge_errors_guarded, NULL) &&
		merging_valid)
	{
		merging_valid = false;
		if (merging.text)
			pfree(merging.text);
		pgss_ng_stmt_count_dropped(1);
	}
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
count_sums(PgssNgCounters *c, const PgssNgStore *s)
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
count_one(PgssNgPending *p, const PgssNgStore *s)
{
	count_time(p, s->phase, s->total_time);
	count_sums(&p->counters, s);
	if (s->planid != 0)
		pgss_ng_plans_count(&p->plans, s->planid, s->total_time, s->rows);
}

/* What the guarded part of pgss_ng_store() gets, and returns. */
typedef struct StoreArgs
{
	const PgssNgStore *s;
	PgssNgStmtKey key;
	bool		dropped;		/* set: nothing could be recorded */
} StoreArgs;

/*
 * parse_guarded
 *		pgss_ng_store() at parse analysis (s->jstate), under
 *		pgss_ng_kind_guard(): make sure the entry exists, normalizing the
 *		text if it does not (the normalized text can only be computed
 *		here).  Memory: the normalized text is palloc'd in
 *		CurrentMemoryContext and freed before returning.
 */
static void
parse_guarded(void *arg)
{
	StoreArgs  *a = (StoreArgs *) arg;
	const PgssNgStore *s = a->s;
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
 *		Count s straight into its shared entry (key), making it if needed
 *		(pgss_ng_stmt_lock, pgss_ng_stmt_count_hist, then
 *		pgss_ng_stmt_count_locked), or, if the entry
 *		lock is busy, in new pending data of this backend's.  False when
 *		the entry could not be made (the caller counts it as dropped).
 *		Errors: those of the kind layer and the text arena; called under a
 *		guard.
 */
static bool
record_now(const PgssNgStmtKey *key, const PgssNgStore *s)
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
	StoreArgs  *a = (StoreArgs *) arg;
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
 * pgss_ng_store
 *		Record what s describes (see PgssNgStore): a planning or execution
 *		of a statement, or, with s->jstate, its entry with the normalized
 *		text.  Called from the hooks.  Into pending data this backend holds
 *		for the entry: counted there, nothing else.  Otherwise a top-level
 *		statement's (or any, without a share of pending references) is
 *		counted straight into its shared entry, a nested one's in new
 *		pending data (see the file header).  No ERROR escapes into the
 *		user's statement: one raised below is caught, logged, and the
 *		planning or execution counted as dropped.
 */
void
pgss_ng_store(const PgssNgStore *s)
{
	StoreArgs	a = {.s = s};
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
 * evict_guarded
 *		The body of pgss_ng_stmt_evict(), run under pgss_ng_kind_guard().
 */
static void
evict_guarded(void *arg)
{
	if (pgss_ng_stmt_attach())
		pgss_ng_kind_run_eviction(pgss_ng_stmt_kind);
}

/*
 * pgss_ng_stmt_evict
 *		Evict now if live entries exceed max (pgss_ng_kind_run_eviction), for the
 *		writer after it published a lowered pgss_ng.max, so that the table
 *		follows a reload without waiting for some backend's next flush.  No
 *		ERROR escapes (pgss_ng_kind_guard).
 */
void
pgss_ng_stmt_evict(void)
{
	(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "evict statement entries",
							  evict_guarded, NULL);
}

/*
 * merge_and_flush
 *		Merge the failed executions noted since the last merge into the
 *		pending counters (pgss_ng_stmt_merge_errors), flush this backend's
 *		pending statement counters (pgss_ng_kind_flush, waiting for entry
 *		locks with force), then evict if live entries exceed max.  An ERROR
 *		(e.g. a DSM segment that cannot be mapped while freeing) is caught
 *		and logged (pgss_ng_kind_guard); what stayed pending is retried
 *		next time.
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
	if (likely(!pgss_ng_frames_attention) &&
		!pgss_ng_kind_has_pending(pgss_ng_stmt_kind))
	{
		/* the plan rows the counts found missing, the texts captured */
		if (unlikely(pgss_ng_plans_nwork > 0))
			pgss_ng_plans_work();
		return;
	}
	register_exit();
	pgss_ng_frames_attention = false;
	/* walsenders are not waited for at shutdown: never leave anything */
	merge_and_flush(am_walsender);
}
