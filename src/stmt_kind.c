/*-------------------------------------------------------------------------
 *
 * stmt_kind.c
 *	  The statement kind: what pg_stat_statements tracks, as a kind of the
 *	  kind layer.  Key (userid, dbid, queryid, toplevel); pending data is a
 *	  PgssNgCounters; shared data adds the query text and timestamps.
 *
 * Locking: counters in shared entries are changed only by the flush
 * callback (entry lock exclusive) and the reset callbacks (idem); the info
 * counters by their spinlock.  Nothing here raises an ERROR into the
 * user's statement: pgss_ng_store() catches what the layers below could
 * throw and counts the lost work as dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "normalize.h"
#include "pgss_ng.h"
#include "qtext.h"

/* Pending entries allowed per backend before an early flush. */
#define PGSS_NG_MAX_PENDING		256

static double stmt_flush_pending(PgssNgKind *kind, const void *key,
								 void *shared_data, const void *pending_data,
								 TimestampTz pending_since);
static void stmt_discard_pending(PgssNgKind *kind, const void *key,
								 const void *pending_data);
static void stmt_free(PgssNgKind *kind, void *shared_data);
static void stmt_to_serialized(PgssNgKind *kind, const void *key,
							   const void *shared_data, StringInfo buf);
static bool stmt_from_serialized(PgssNgKind *kind, const char *data, Size len,
								 bool *restored);

static const PgssNgKindInfo stmt_kind_info = {
	.name = "pgss_ng",
	.key_size = sizeof(PgssNgStmtKey),
	.shared_size = sizeof(PgssNgStmtShared),
	.pending_size = sizeof(PgssNgCounters),
	.max_pending = PGSS_NG_MAX_PENDING,
	.flush_pending_cb = stmt_flush_pending,
	.discard_pending_cb = stmt_discard_pending,
	.free_cb = stmt_free,
	.to_serialized_cb = stmt_to_serialized,
	.from_serialized_cb = stmt_from_serialized,
};

PgssNgKind	pgss_ng_stmt_kind = {.info = &stmt_kind_info};
PgssNgInfo *pgss_ng_info_shared = NULL;

/*
 * What the init callback stores in a new entry: a normalized text, or the
 * statement's location in its source string (cut by CleanQuerytext() only
 * when an entry is really made).
 */
typedef struct StmtInitArg
{
	const char *text;			/* normalized text, or the source string */
	int			location;		/* statement's offset in it (source only) */
	int			len;			/* statement's length in bytes */
	bool		normalized;		/* text is a normalized text */
} StmtInitArg;


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

	pgss_ng_kind_shmem_startup(&pgss_ng_stmt_kind, "pgss_ng statements");
	pgss_ng_stmt_kind.max_entries = pgss_ng_max;
	pgss_ng_qtext_shmem_startup(pgss_ng_stmt_kind.shared->hash_tranche,
								(int64) pgss_ng_query_text_memory * 1024);

	pgss_ng_info_shared = ShmemInitStruct("pgss_ng info", sizeof(PgssNgInfo),
										  &found);
	if (!found)
	{
		SpinLockInit(&pgss_ng_info_shared->mutex);
		pgss_ng_info_shared->dropped = 0;
		pgss_ng_info_shared->stats_reset = GetCurrentTimestamp();
		pgss_ng_info_shared->loaded = false;
	}

	LWLockRelease(AddinShmemInitLock);
}

/*
 * pgss_ng_count_dropped
 *		Count n plannings/executions that could not be recorded.
 */
void
pgss_ng_count_dropped(int64 n)
{
	SpinLockAcquire(&pgss_ng_info_shared->mutex);
	pgss_ng_info_shared->dropped += n;
	SpinLockRelease(&pgss_ng_info_shared->mutex);
}

/*
 * stmt_init
 *		Init callback for a new shared entry: store its query text (the
 *		normalized one, or the statement's own part of its source string)
 *		and its timestamps.  Runs under the kind's alloc lock.  A text that
 *		cannot be stored leaves the entry with query NULL.  Errors: only an
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

	if (!ia->normalized)
	{
		int			location = ia->location;

		text = CleanQuerytext(text, &location, &len);
	}
	sh->qtext = pgss_ng_qtext_store(kind->area, text, len);
	sh->encoding = GetDatabaseEncoding();
	sh->stats_since = now;
	sh->minmax_stats_since = now;
	return DsaPointerIsValid(sh->qtext);
}

/*
 * stmt_free
 *		Free callback: release the entry's query text.
 */
static void
stmt_free(PgssNgKind *kind, void *shared_data)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;

	pgss_ng_qtext_release(kind->area, sh->qtext);
	sh->qtext = InvalidDsaPointer;
}

/*
 * merge_counters
 *		Add the counters of src (pending data) into dst (shared data).
 *
 * Calls, totals and block/WAL/JIT counters add up.  Means and sums of
 * squared deviations are combined with the parallel form of Welford's
 * method (Chan et al.), so the result equals one pass over all calls up to
 * rounding.  min/max take the smaller/larger, and restart after a min/max
 * reset (have_minmax false); src's min/max are only used where
 * src_minmax[kind] is true.  Called with the entry lock held exclusively.
 */
static void
merge_counters(PgssNgStmtShared *dst_sh, const PgssNgCounters *src,
			   const bool *src_minmax)
{
	PgssNgCounters *dst = &dst_sh->counters;
	int			k;

	for (k = 0; k < PGSS_NG_NUMKIND; k++)
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

	dst->rows += src->rows;
	dst->shared_blks_hit += src->shared_blks_hit;
	dst->shared_blks_read += src->shared_blks_read;
	dst->shared_blks_dirtied += src->shared_blks_dirtied;
	dst->shared_blks_written += src->shared_blks_written;
	dst->local_blks_hit += src->local_blks_hit;
	dst->local_blks_read += src->local_blks_read;
	dst->local_blks_dirtied += src->local_blks_dirtied;
	dst->local_blks_written += src->local_blks_written;
	dst->temp_blks_read += src->temp_blks_read;
	dst->temp_blks_written += src->temp_blks_written;
	dst->blk_read_time += src->blk_read_time;
	dst->blk_write_time += src->blk_write_time;
	dst->temp_blk_read_time += src->temp_blk_read_time;
	dst->temp_blk_write_time += src->temp_blk_write_time;
	dst->wal_records += src->wal_records;
	dst->wal_fpi += src->wal_fpi;
	dst->wal_bytes += src->wal_bytes;
	dst->jit_functions += src->jit_functions;
	dst->jit_generation_time += src->jit_generation_time;
	dst->jit_inlining_count += src->jit_inlining_count;
	dst->jit_inlining_time += src->jit_inlining_time;
	dst->jit_optimization_count += src->jit_optimization_count;
	dst->jit_optimization_time += src->jit_optimization_time;
	dst->jit_emission_count += src->jit_emission_count;
	dst->jit_emission_time += src->jit_emission_time;
}

/*
 * stmt_flush_pending
 *		Flush callback of the statement kind.  Entry lock held exclusively.
 *
 * Returns the uses to add to the entry's usage: one per planning and
 * execution, less the one its creation already counted when these are the
 * entry's first (as pg_stat_statements "unsticks" an entry), so that every
 * statement run once has the same value however its entry was made.
 * Pending counts that began before the entry's last min/max reset do not
 * set its min/max.
 */
static double
stmt_flush_pending(PgssNgKind *kind, const void *key, void *shared_data,
				   const void *pending_data, TimestampTz pending_since)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const PgssNgCounters *c = (const PgssNgCounters *) pending_data;
	bool		first = sh->counters.calls[PGSS_NG_PLAN] +
		sh->counters.calls[PGSS_NG_EXEC] == 0;
	double		uses = (double) (c->calls[PGSS_NG_PLAN] + c->calls[PGSS_NG_EXEC]);
	bool		fresh = pending_since >= sh->minmax_reset_at;
	bool		minmax[PGSS_NG_NUMKIND] = {fresh, fresh};

	/*
	 * Counts begun before a min/max reset hold a call that ended before it
	 * (a pending entry is made when its first call ends): their min/max
	 * must not become the new ones.  The calls still count.
	 */
	merge_counters(sh, c, minmax);
	if (first && uses > 0)
		uses -= 1;
	return uses;
}

/*
 * stmt_discard_pending
 *		Discard callback: the entry was evicted while this backend held
 *		counts for it; count its plannings and executions as dropped.
 */
static void
stmt_discard_pending(PgssNgKind *kind, const void *key,
					 const void *pending_data)
{
	const PgssNgCounters *c = (const PgssNgCounters *) pending_data;

	pgss_ng_count_dropped(c->calls[PGSS_NG_PLAN] + c->calls[PGSS_NG_EXEC]);
}

/*
 * count_one
 *		Record one planning or execution in pending counters (backend-local,
 *		no lock).  total_time in ms.  Mean and variance by Welford's method.
 */
static void
count_one(PgssNgCounters *c, PgssNgStoreKind kind, double total_time,
		  uint64 rows, const BufferUsage *bufusage, const WalUsage *walusage,
		  const JitInstrumentation *jitusage)
{
	c->calls[kind] += 1;
	c->total_time[kind] += total_time;
	if (c->calls[kind] == 1)
	{
		c->min_time[kind] = total_time;
		c->max_time[kind] = total_time;
		c->mean_time[kind] = total_time;
	}
	else
	{
		double		old_mean = c->mean_time[kind];

		c->mean_time[kind] += (total_time - old_mean) / c->calls[kind];
		c->sum_var_time[kind] +=
			(total_time - old_mean) * (total_time - c->mean_time[kind]);
		c->min_time[kind] = Min(c->min_time[kind], total_time);
		c->max_time[kind] = Max(c->max_time[kind], total_time);
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
	c->blk_read_time +=
		INSTR_TIME_GET_MILLISEC(PGSS_NG_BUF_SHARED_READ_TIME(bufusage));
	c->blk_write_time +=
		INSTR_TIME_GET_MILLISEC(PGSS_NG_BUF_SHARED_WRITE_TIME(bufusage));
	c->temp_blk_read_time += INSTR_TIME_GET_MILLISEC(bufusage->temp_blk_read_time);
	c->temp_blk_write_time += INSTR_TIME_GET_MILLISEC(bufusage->temp_blk_write_time);
	c->wal_records += walusage->wal_records;
	c->wal_fpi += walusage->wal_fpi;
	c->wal_bytes += walusage->wal_bytes;

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
	}
}

/*
 * store_internal
 *		The body of pgss_ng_store(); may raise ERRORs from below (local
 *		out-of-memory, DSM mapping failures), which the caller catches.
 *
 * With jstate (parse analysis of a statement with constants) it only makes
 * sure the entry exists, normalizing the text if it does not: the
 * normalized text can only be computed here.  Otherwise it adds one
 * planning or execution to the backend's pending counters, creating the
 * entry with the statement's own text if needed.  Memory: the normalized
 * text is palloc'd in CurrentMemoryContext and freed before returning.
 */
static void
store_internal(const char *query, uint64 queryid, int query_location,
			   int query_len, PgssNgStoreKind kind, bool toplevel,
			   double total_time, uint64 rows, const BufferUsage *bufusage,
			   const WalUsage *walusage, const JitInstrumentation *jitusage,
			   JumbleState *jstate)
{
	PgssNgKind *sk = &pgss_ng_stmt_kind;
	PgssNgStmtKey key;
	StmtInitArg ia;
	PgssNgCounters *pending;
	char	   *norm_query = NULL;

	if (!pgss_ng_kind_attach(sk))
		return;

	memset(&key, 0, sizeof(key));
	key.userid = GetUserId();
	key.dbid = MyDatabaseId;
	key.queryid = queryid;
	key.toplevel = toplevel;

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

	ia.text = query;
	ia.location = query_location;
	ia.len = query_len;
	ia.normalized = false;

	pending = pgss_ng_kind_get_pending(sk, &key, stmt_init, &ia);
	if (pending == NULL)
	{
		pgss_ng_count_dropped(1);
		return;
	}
	count_one(pending, kind, total_time, rows, bufusage, walusage, jitusage);
}

/*
 * pgss_ng_store
 *		Record a planning or execution of a statement (or, with jstate,
 *		make its entry with the normalized text).  Called from the hooks.
 *
 * query/query_location/query_len locate the statement in its source
 * string; total_time is in ms.  No ERROR escapes into the user's
 * statement: one raised below is caught, logged, and the planning or
 * execution counted as dropped.
 */
void
pgss_ng_store(const char *query, uint64 queryid, int query_location,
			  int query_len, PgssNgStoreKind kind, bool toplevel,
			  double total_time, uint64 rows, const BufferUsage *bufusage,
			  const WalUsage *walusage, const JitInstrumentation *jitusage,
			  JumbleState *jstate)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;

	if (queryid == UINT64CONST(0) || pgss_ng_info_shared == NULL)
		return;

	/*
	 * No resource owner: DSM segments that DSA maps or creates here are
	 * pinned for the session anyway, and one left by a failed creation
	 * must not be reported to the user as a leak at commit.
	 */
	pgss_ng_tracking_begin();
	CurrentResourceOwner = NULL;
	PG_TRY();
	{
		store_internal(query, queryid, query_location, query_len, kind,
					   toplevel, total_time, rows, bufusage, walusage,
					   jitusage, jstate);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		CurrentResourceOwner = oldowner;
		pgss_ng_swallow_error(oldcxt, "record a statement");
		if (jstate == NULL)
			pgss_ng_count_dropped(1);
	}
	PG_END_TRY();
}

/*
 * pgss_ng_flush
 *		Flush this backend's pending statement counters (see
 *		pgss_ng_kind_flush), then evict if live entries exceed max.  Called at the end of each top-level statement
 *		(force false); the SQL functions call the kind layer directly.  An
 *		ERROR (e.g. a DSM segment that cannot be mapped while freeing) is
 *		caught and logged; what stayed pending is retried next time.
 */
void
pgss_ng_flush(bool force)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;

	if (pgss_ng_stmt_kind.area == NULL || pgss_ng_stmt_kind.npending == 0)
		return;

	pgss_ng_tracking_begin();
	CurrentResourceOwner = NULL;	/* see pgss_ng_store() */
	PG_TRY();
	{
		/* walsenders are not waited for at shutdown: never leave anything */
		pgss_ng_kind_flush(&pgss_ng_stmt_kind, force || am_walsender);
		/* after a lowered pgss_ng.max, or an eviction that found its lock busy */
		pgss_ng_kind_evict(&pgss_ng_stmt_kind);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		CurrentResourceOwner = oldowner;
		pgss_ng_swallow_error(oldcxt, "flush statement statistics");
	}
	PG_END_TRY();
}

/*
 * One saved statement entry (persist.c writes these records as they are:
 * the file is only read back by the same format version and PostgreSQL
 * major version).  qlen bytes of query text follow; qlen -1: no text.
 */
typedef struct StmtRecord
{
	PgssNgStmtKey key;
	PgssNgCounters counters;
	bool		have_minmax[PGSS_NG_NUMKIND];
	int32		encoding;
	int32		qlen;
	TimestampTz stats_since;
	TimestampTz minmax_stats_since;
	double		usage;			/* eviction value when saved */
} StmtRecord;

/* What stmt_restore_init copies into a restored entry. */
typedef struct StmtRestoreArg
{
	const StmtRecord *rec;
	const char *text;
} StmtRestoreArg;

/*
 * stmt_to_serialized
 *		Append the record of one entry to buf.  Called by persist.c through
 *		pgss_ng_kind_foreach (entry lock held shared).  Memory: buf's.
 */
static void
stmt_to_serialized(PgssNgKind *kind, const void *key, const void *shared_data,
				   StringInfo buf)
{
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	StmtRecord	rec;
	int			qlen;
	char	   *text = pgss_ng_qtext_copy(kind->area, sh->qtext, &qlen);

	memset(&rec, 0, sizeof(rec));
	memcpy(&rec.key, key, sizeof(PgssNgStmtKey));
	rec.counters = sh->counters;
	memcpy(rec.have_minmax, sh->have_minmax, sizeof(rec.have_minmax));
	rec.encoding = sh->encoding;
	rec.qlen = text ? qlen : -1;
	rec.stats_since = sh->stats_since;
	rec.minmax_stats_since = sh->minmax_stats_since;
	rec.usage = pgss_ng_kind_usage(shared_data);

	appendBinaryStringInfo(buf, (const char *) &rec, sizeof(rec));
	if (text)
	{
		appendBinaryStringInfo(buf, text, rec.qlen);
		pfree(text);
	}
}

/*
 * stmt_restore_init
 *		Init callback of a restored entry: counters, timestamps and text as
 *		saved.  Runs under the kind's alloc lock; never raises an ERROR.
 */
static bool
stmt_restore_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	StmtRestoreArg *ra = (StmtRestoreArg *) arg;

	sh->counters = ra->rec->counters;
	memcpy(sh->have_minmax, ra->rec->have_minmax, sizeof(sh->have_minmax));
	sh->encoding = ra->rec->encoding;
	sh->stats_since = ra->rec->stats_since;
	sh->minmax_stats_since = ra->rec->minmax_stats_since;
	sh->qtext = ra->text ?
		pgss_ng_qtext_store(kind->area, ra->text, ra->rec->qlen) :
		InvalidDsaPointer;
	return true;
}

/*
 * stmt_merge_saved
 *		Update callback: merge a saved record's counters into an entry that
 *		a backend made after the start but before the record was read; the
 *		older stats_since wins.  Entry lock held exclusively.
 */
static void
stmt_merge_saved(void *shared_data, void *arg)
{
	PgssNgStmtShared *sh = (PgssNgStmtShared *) shared_data;
	const StmtRecord *rec = (const StmtRecord *) arg;

	merge_counters(sh, &rec->counters, rec->have_minmax);
	sh->stats_since = Min(sh->stats_since, rec->stats_since);
	sh->minmax_stats_since = Min(sh->minmax_stats_since,
								 rec->minmax_stats_since);
}

/*
 * stmt_from_serialized
 *		Re-create one entry from a record of len bytes.  Returns false if
 *		the record is malformed (persist.c then discards the whole file);
 *		*restored says whether the saved counts are in (merged into the
 *		entry of a backend that made the same key first, if need be); not
 *		when the backstop was reached or shared memory ran out.
 */
static bool
stmt_from_serialized(PgssNgKind *kind, const char *data, Size len,
					 bool *restored)
{
	StmtRecord	rec;
	StmtRestoreArg ra;

	if (len < sizeof(StmtRecord))
		return false;
	memcpy(&rec, data, sizeof(StmtRecord));
	if (rec.qlen < -1 || len != sizeof(StmtRecord) + Max(rec.qlen, 0) ||
		!PG_VALID_BE_ENCODING(rec.encoding))
		return false;

	ra.rec = &rec;
	ra.text = rec.qlen >= 0 ? data + sizeof(StmtRecord) : NULL;
	switch (pgss_ng_kind_restore(kind, &rec.key, stmt_restore_init, &ra,
								 rec.usage))
	{
		case PGSS_NG_CREATED:
			*restored = true;
			break;
		case PGSS_NG_EXISTS:
			/* a backend was faster: add the saved counts to its entry */
			*restored = pgss_ng_kind_update(kind, &rec.key, stmt_merge_saved,
											&rec);
			break;
		default:
			*restored = false;
			break;
	}
	return true;
}
