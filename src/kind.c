/*-------------------------------------------------------------------------
 *
 * kind.c
 *	  The cumulative statistics kind layer: shared entries in a kind's own
 *	  dshash, backend-local pending entries, flush with conditional locks,
 *	  references released right after their flush, refcounted free.
 *
 * Life of an entry
 *	  create   a body is allocated (DSA_ALLOC_NO_OOM), filled by the kind's
 *			   init callback outside any lock, then published in the dshash;
 *			   the hash owns one reference.
 *	  pending  a backend that counts something for the entry finds it under
 *			   the partition lock, takes a reference and keeps a pending
 *			   entry (key, body, kind's pending data) in its local hash.
 *	  flush    the backend takes the body's LWLock (conditionally unless the
 *			   pending data is older than PGSS_NG_PENDING_MAX_AGE_MS, or the
 *			   flush is forced), merges through flush_pending_cb, releases
 *			   the lock and then its reference: release after flush.
 *	  drop     reset or eviction removes the key from the dshash under the
 *			   partition lock, marks the body dropped under its LWLock and
 *			   releases the hash's reference.  Pending data flushed into a
 *			   body dropped by a reset is discarded (it was counted before
 *			   the reset); into an evicted one, it is handed to the kind's
 *			   discard callback, which counts it as dropped.
 *	  evict    when live entries exceed max, the least valuable ~5% go.  An
 *			   entry's value is its usage: 1 at creation plus the uses its
 *			   flushes reported, halving every PGSS_NG_USAGE_HALF_LIFE_MS.
 *			   Entries some backend holds a reference to (pending data, in
 *			   use right now) are not candidates.
 *	  free     whoever releases the last reference frees the body, after
 *			   the kind's free callback released what the data owns.
 *
 * Locking rules: see kind.h.  In addition, functions here are only called
 * with no other LWLock held by the caller; the insert path relies on it to
 * recover from an out-of-memory ERROR raised inside dshash.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <xxhash.h>

#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "kind.h"

/*
 * Bytes of the DSA area created in place in main shared memory.  The
 * dshash control block and its first bucket arrays must fit in it (the
 * postmaster may not create DSM segments); entries beyond it live in DSM
 * segments that backends add on demand.
 */
#define PGSS_NG_DSA_INIT_SIZE	(256 * 1024)

/* Header of a backend-local pending entry, after the key. */
typedef struct PgssNgPendingHdr
{
	dsa_pointer body;			/* the referenced shared body */
	PgssNgSharedEntry *shared;	/* its address in this backend */
	TimestampTz since;			/* when this pending entry was made */
} PgssNgPendingHdr;

#define HASH_TAIL(kind, he) \
	((PgssNgHashEntry *) (((char *) (he)) + MAXALIGN((kind)->info->key_size)))
#define PENDING_HDR(kind, pe) \
	((PgssNgPendingHdr *) (((char *) (pe)) + MAXALIGN((kind)->info->key_size)))
#define PENDING_DATA(kind, pe) \
	((void *) (((char *) PENDING_HDR(kind, pe)) + MAXALIGN(sizeof(PgssNgPendingHdr))))

static void pgss_ng_kind_shutdown(int code, Datum arg);
static void *find_live_pending(PgssNgKind *kind, const void *key);

/* One eviction candidate. */
typedef struct EvictCandidate
{
	double		value;
	uint64		generation;
	int			keyno;			/* index into the candidate key array */
} EvictCandidate;


/*
 * hash_key
 *		dshash hash function: 64-bit XXH3 of the key bytes, folded to 32 bits.
 */
static dshash_hash
hash_key(const void *key, size_t size, void *arg)
{
	uint64		h = XXH3_64bits(key, size);

	return (dshash_hash) (h ^ (h >> 32));
}

/*
 * init_hash_params
 *		Fill the dshash parameters of a kind; identical in every process.
 */
static void
init_hash_params(PgssNgKind *kind)
{
	kind->hash_params.key_size = kind->info->key_size;
	kind->hash_params.entry_size = MAXALIGN(kind->info->key_size) +
		sizeof(PgssNgHashEntry);
	kind->hash_params.compare_function = dshash_memcmp;
	PGSS_NG_DSHASH_SET_COPY(&kind->hash_params);
	kind->hash_params.hash_function = hash_key;
	kind->hash_params.tranche_id = kind->shared->hash_tranche;
}

/*
 * raw_dsa_place
 *		Address of the kind's in-place DSA area, after its control block.
 */
static void *
raw_dsa_place(PgssNgKind *kind)
{
	return ((char *) kind->shared) + MAXALIGN(sizeof(PgssNgKindShared));
}

/*
 * lock_name
 *		"<kind name>_<what>", in TopMemoryContext (tranche names must live
 *		as long as the process).
 */
static char *
lock_name(const PgssNgKindInfo *info, const char *what)
{
	return MemoryContextStrdup(TopMemoryContext,
							   psprintf("%s_%s", info->name, what));
}

/*
 * pgss_ng_kind_shmem_request
 *		Request the kind's named LWLocks (<name>_alloc, <name>_dealloc).
 *		Called from shmem_request_hook.
 */
void
pgss_ng_kind_shmem_request(const PgssNgKindInfo *info)
{
	RequestNamedLWLockTranche(lock_name(info, "alloc"), 1);
	RequestNamedLWLockTranche(lock_name(info, "dealloc"), 1);
}

/*
 * pgss_ng_kind_shmem_size
 *		Bytes of main shared memory one kind needs: its control block plus
 *		the DSA area created in place.
 */
Size
pgss_ng_kind_shmem_size(const PgssNgKindInfo *info)
{
	return add_size(MAXALIGN(sizeof(PgssNgKindShared)), PGSS_NG_DSA_INIT_SIZE);
}

/*
 * pgss_ng_kind_shmem_startup
 *		Create (first time) or find the kind's shared state.
 *
 * Called from shmem_startup_hook with AddinShmemInitLock held, in the
 * postmaster (and again after a crash reinitialized shared memory).  The
 * first time, the DSA area is created in place and pinned, and the dshash is
 * created while the area is limited to its in-place size, so that the
 * postmaster never creates or attaches a DSM segment.  The postmaster then
 * detaches; backends attach lazily (pgss_ng_kind_attach).
 *
 * The tranche names are registered here so that every process forked from
 * the postmaster knows them (wait events show them, not "extension").
 * Memory: tranche names in TopMemoryContext.  Errors: out of shared memory.
 */
void
pgss_ng_kind_shmem_startup(PgssNgKind *kind, const char *shmem_name)
{
	bool		found;
	PgssNgKindShared *shared;

	kind->area = NULL;
	kind->hash = NULL;
	kind->pending = NULL;
	kind->npending = 0;

	shared = ShmemInitStruct(shmem_name,
							 pgss_ng_kind_shmem_size(kind->info), &found);
	kind->shared = shared;
	kind->alloc_lock =
		&GetNamedLWLockTranche(lock_name(kind->info, "alloc"))->lock;
	kind->dealloc_lock =
		&GetNamedLWLockTranche(lock_name(kind->info, "dealloc"))->lock;

	if (!found)
	{
		dsa_area   *dsa;
		dshash_table *dsh;

		shared->dsa_tranche = LWLockNewTrancheId();
		shared->hash_tranche = LWLockNewTrancheId();
		shared->entry_tranche = LWLockNewTrancheId();
		pg_atomic_init_u32(&shared->entries_live, 0);
		pg_atomic_init_u32(&shared->entries_allocated, 0);
		pg_atomic_init_u64(&shared->next_generation, 1);
		pg_atomic_init_u32(&shared->nattached, 0);
		pg_atomic_init_u64(&shared->dealloc, 0);
		pg_atomic_init_u64(&shared->backstop_skips, 0);

		dsa = dsa_create_in_place(raw_dsa_place(kind), PGSS_NG_DSA_INIT_SIZE,
								  shared->dsa_tranche, NULL);
		dsa_pin(dsa);
		dsa_set_size_limit(dsa, PGSS_NG_DSA_INIT_SIZE);
		init_hash_params(kind);
		dsh = dshash_create(dsa, &kind->hash_params, NULL);
		shared->hash_handle = dshash_get_hash_table_handle(dsh);
		dsa_set_size_limit(dsa, -1);
		dshash_detach(dsh);
		dsa_detach(dsa);
	}

	LWLockRegisterTranche(shared->dsa_tranche, lock_name(kind->info, "dsa"));
	LWLockRegisterTranche(shared->hash_tranche, lock_name(kind->info, "hash"));
	LWLockRegisterTranche(shared->entry_tranche, lock_name(kind->info, "entry"));
}

/*
 * pgss_ng_kind_attach
 *		Attach this backend to the kind's area and hash, once.
 *
 * Returns false when there is nothing to attach to (library not preloaded)
 * or the backend is already past its exit flush.  Registers the exit
 * callback that flushes everything still pending and detaches.
 * Memory: handles and the pending hash live in TopMemoryContext.
 * Errors: only can't-happen errors from dsa/dshash attach.
 */
bool
pgss_ng_kind_attach(PgssNgKind *kind)
{
	MemoryContext oldcxt;
	HASHCTL		ctl;

	if (kind->area != NULL)
		return true;
	/* never in the postmaster itself (it must not map DSM segments) */
	if (kind->shared == NULL || kind->detaching ||
		(IsPostmasterEnvironment && !IsUnderPostmaster))
		return false;

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);

	init_hash_params(kind);
	kind->area = dsa_attach_in_place(raw_dsa_place(kind), NULL);
	dsa_pin_mapping(kind->area);
	kind->hash = dshash_attach(kind->area, &kind->hash_params,
							   kind->shared->hash_handle, NULL);

	ctl.keysize = kind->info->key_size;
	ctl.entrysize = MAXALIGN(kind->info->key_size) +
		MAXALIGN(sizeof(PgssNgPendingHdr)) + kind->info->pending_size;
	ctl.hcxt = TopMemoryContext;
	kind->pending = hash_create(psprintf("%s pending", kind->info->name),
								64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	kind->npending = 0;

	MemoryContextSwitchTo(oldcxt);

	before_shmem_exit(pgss_ng_kind_shutdown, PointerGetDatum(kind));

	/*
	 * Count the attached processes the persistence writer waits for at
	 * shutdown.  Not walsenders: PostgreSQL stops them only after the
	 * background workers, so the writer could not wait for them (they
	 * flush with a waiting lock at every statement end instead).
	 */
	kind->counted_attached = !am_walsender;
	if (kind->counted_attached)
		pg_atomic_fetch_add_u32(&kind->shared->nattached, 1);
	return true;
}

/*
 * pgss_ng_kind_shutdown
 *		before_shmem_exit callback: flush everything pending, waiting for
 *		locks, then detach from the area.  Nothing counted is left behind.
 */
static void
pgss_ng_kind_shutdown(int code, Datum arg)
{
	PgssNgKind *kind = (PgssNgKind *) DatumGetPointer(arg);

	if (kind->area == NULL)
		return;

	pgss_ng_kind_flush(kind, true);
	if (kind->counted_attached)
		pg_atomic_fetch_sub_u32(&kind->shared->nattached, 1);

	kind->detaching = true;
	dshash_detach(kind->hash);
	kind->hash = NULL;
	dsa_release_in_place(raw_dsa_place(kind));
	dsa_detach(kind->area);
	kind->area = NULL;
}

/*
 * free_body
 *		Free a dropped body nobody refers to any more.  No lock needed.
 */
static void
free_body(PgssNgKind *kind, dsa_pointer body, PgssNgSharedEntry *shared)
{
	Assert(pg_atomic_read_u32(&shared->refcount) == 0);

	if (kind->info->free_cb)
		kind->info->free_cb(kind, PgssNgSharedData(shared));
	dsa_free(kind->area, body);
	pg_atomic_fetch_sub_u32(&kind->shared->entries_allocated, 1);
}

/*
 * release_ref
 *		Drop one reference to a body; the last one frees it.  The hash holds
 *		a reference of its own, so the last release is always of a body that
 *		was already dropped.
 */
static void
release_ref(PgssNgKind *kind, dsa_pointer body, PgssNgSharedEntry *shared)
{
	if (pg_atomic_sub_fetch_u32(&shared->refcount, 1) == 0)
		free_body(kind, body, shared);
}

/*
 * decayed_usage
 *		An entry's usage brought from its time t to now: it halves every
 *		PGSS_NG_USAGE_HALF_LIFE_MS.  Never grows (a t in the future, from a
 *		clock read just before ours in another backend, counts as now).
 */
static double
decayed_usage(double usage, TimestampTz t, TimestampTz now)
{
	if (now <= t)
		return usage;
	return usage * exp2(-(double) (now - t) /
						(PGSS_NG_USAGE_HALF_LIFE_MS * 1000.0));
}

/*
 * mark_dropped
 *		Flag a body as dropped for reason, under its lock, so that flushes
 *		see it.  The caller removes it from the hash and then calls
 *		forget_body().
 */
static void
mark_dropped(PgssNgSharedEntry *shared, PgssNgDropReason reason)
{
	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	shared->dropped = reason;
	LWLockRelease(&shared->lock);
}

/*
 * forget_body
 *		After removal from the hash: one live entry less, and the hash's
 *		reference released (freeing the body if nobody else holds one).
 */
static void
forget_body(PgssNgKind *kind, dsa_pointer body, PgssNgSharedEntry *shared)
{
	pg_atomic_fetch_sub_u32(&kind->shared->entries_live, 1);
	release_ref(kind, body, shared);
}

/*
 * InterruptHoldoffCount when the tracking code was entered (set by its
 * entry points, pgss_ng_tracking_begin()).  Every LWLock held raises that
 * count, so 0 means the caller held no LWLock.
 */
static uint32 tracking_holdoff = 0;

/*
 * pgss_ng_tracking_begin
 *		Called by the entry points of tracking code (hooks, the writer)
 *		before their PG_TRY: remember whether the caller holds LWLocks.
 *		Hooks nearly never run under one, but they can (an SQL function
 *		called by a btree comparison under a buffer lock, with track = all).
 */
void
pgss_ng_tracking_begin(void)
{
	tracking_holdoff = InterruptHoldoffCount;
}

/*
 * release_locks_or_rethrow
 *		In a PG_CATCH of tracking code: release every LWLock, which are then
 *		all ours, or, if the caller held LWLocks when tracking began, leave
 *		them all and re-throw the ERROR, so that the transaction's abort
 *		releases them (an ERROR reaches the user's statement then: rare, and
 *		safer than releasing a lock its caller relies on).
 */
static void
release_locks_or_rethrow(void)
{
	if (tracking_holdoff > 0)
		PG_RE_THROW();
	LWLockReleaseAll();
}

/*
 * pgss_ng_swallow_error
 *		Turn the ERROR being handled into a LOG line ("pgss_ng could not
 *		<what>: <message>") and clear it.
 *
 * For the PG_CATCH blocks of statistics code that runs inside a user's
 * statement.  When the caller held no LWLock at pgss_ng_tracking_begin(),
 * LWLockReleaseAll() releases exactly the locks this code took (partition,
 * entry, alloc, qtext...); otherwise the ERROR is re-thrown
 * (release_locks_or_rethrow).  Memory: switches back to oldcxt; the error
 * data is freed.
 */
void
pgss_ng_swallow_error(MemoryContext oldcxt, const char *what)
{
	ErrorData  *edata;

	release_locks_or_rethrow();
	MemoryContextSwitchTo(oldcxt);
	edata = CopyErrorData();
	FlushErrorState();
	/* a LOG report checks for interrupts: a cancel must not escape here */
	HOLD_INTERRUPTS();
	ereport(LOG,
			(errmsg("pgss_ng could not %s: %s", what, edata->message)));
	RESUME_INTERRUPTS();
	FreeErrorData(edata);
}

/*
 * insert_guarded
 *		dshash_find_or_insert() that does not throw into the caller (unless
 *		the caller held LWLocks when tracking began: see
 *		release_locks_or_rethrow).
 *
 * dshash raises ERROR when the DSA area cannot grow (shared memory or DSM
 * slots exhausted); it leaves the hash consistent but its partition lock(s)
 * held.  The caller holds only the alloc lock besides (see the file
 * header), so LWLockReleaseAll() releases exactly those.  Returns the
 * element with its partition lock held, or NULL after logging the error
 * (all LWLocks then released, the alloc lock included).
 */
static void *
insert_guarded(PgssNgKind *kind, const void *key, bool *found)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	void	   *volatile he = NULL;

	PG_TRY();
	{
		he = dshash_find_or_insert(kind->hash, key, found);
	}
	PG_CATCH();
	{
		pgss_ng_swallow_error(oldcxt, "create a statistics entry");
		he = NULL;
	}
	PG_END_TRY();

	return he;
}

/*
 * find_ref
 *		Look key up; if found, optionally take a reference (under the
 *		partition lock, which makes the refcount safe against drops) and
 *		return true with the body's pointer and address.
 */
static bool
find_ref(PgssNgKind *kind, const void *key, bool want_ref,
		 dsa_pointer *body_out, PgssNgSharedEntry **shared_out)
{
	void	   *he;
	PgssNgSharedEntry *shared;

	he = dshash_find(kind->hash, key, false);
	if (he == NULL)
		return false;

	*body_out = HASH_TAIL(kind, he)->body;
	shared = dsa_get_address(kind->area, *body_out);
	if (want_ref)
		pg_atomic_fetch_add_u32(&shared->refcount, 1);
	dshash_release_lock(kind->hash, he);
	*shared_out = shared;
	return true;
}

/*
 * backstop
 *		Most bodies (live + dropped, not yet freed) that may exist at once:
 *		max + Min(max, PGSS_NG_BACKSTOP_MAX_EXTRA).
 */
static int
backstop(PgssNgKind *kind)
{
	return kind->max_entries + Min(kind->max_entries,
								   PGSS_NG_BACKSTOP_MAX_EXTRA);
}

/*
 * lookup_or_create
 *		Find the body for key, or create it, optionally taking a reference.
 *
 * Creation is serialized by the <name>_alloc lock: under it we look again,
 * check the backstop (PGSS_NG_FULL, counted in backstop_skips), allocate
 * the body with DSA_ALLOC_NO_OOM (PGSS_NG_OUT_OF_MEMORY), let init fill it
 * and publish it.  A new entry starts with the given usage (1 for a new
 * statement; what was saved, for a restored one).  Before creating, if
 * live entries exceed max (e.g. after pgss_ng.max was lowered), this
 * backend evicts first, so that a workload of nothing but new statements
 * is not stuck at the backstop.  The callers evict again after a creation.
 * Errors: none raised by this layer; an ERROR from eviction, init or dsa
 * mapping propagates (locks released by the caller's guard).
 */
static PgssNgCreateResult
lookup_or_create(PgssNgKind *kind, const void *key,
				 PgssNgInitSharedFn init, void *arg, bool want_ref,
				 double usage,
				 dsa_pointer *body_out, PgssNgSharedEntry **shared_out)
{
	PgssNgKindShared *ks = kind->shared;
	void	   *he;
	PgssNgHashEntry *tail;
	dsa_pointer body;
	PgssNgSharedEntry *shared;
	bool		found;

	if (find_ref(kind, key, want_ref, body_out, shared_out))
		return PGSS_NG_EXISTS;

	pgss_ng_kind_evict(kind);

	LWLockAcquire(kind->alloc_lock, LW_EXCLUSIVE);

	/* created while we waited? */
	if (find_ref(kind, key, want_ref, body_out, shared_out))
	{
		LWLockRelease(kind->alloc_lock);
		return PGSS_NG_EXISTS;
	}

	if (pg_atomic_read_u32(&ks->entries_allocated) >=
		(uint32) backstop(kind))
	{
		LWLockRelease(kind->alloc_lock);
		pg_atomic_fetch_add_u64(&ks->backstop_skips, 1);
		return PGSS_NG_FULL;
	}

	body = dsa_allocate_extended(kind->area,
								 PGSS_NG_SHARED_DATA_OFFSET + kind->info->shared_size,
								 DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(body))
	{
		LWLockRelease(kind->alloc_lock);
		return PGSS_NG_OUT_OF_MEMORY;
	}
	pg_atomic_fetch_add_u32(&ks->entries_allocated, 1);

	shared = dsa_get_address(kind->area, body);
	LWLockInitialize(&shared->lock, ks->entry_tranche);
	shared->dropped = PGSS_NG_LIVE;
	pg_atomic_init_u32(&shared->refcount, want_ref ? 2 : 1);
	shared->generation = pg_atomic_fetch_add_u64(&ks->next_generation, 1);
	shared->usage = usage;
	shared->usage_time = GetCurrentTimestamp();

	PG_TRY();
	{
		if (init)
			(void) init(kind, PgssNgSharedData(shared), arg);
	}
	PG_CATCH();
	{
		/*
		 * Not published: give the body back.  Release the alloc lock and
		 * whatever init held first, as free_cb needs them (or, under a
		 * caller's LWLock, re-throw and leave the body: see
		 * release_locks_or_rethrow).
		 */
		release_locks_or_rethrow();
		pg_atomic_write_u32(&shared->refcount, 0);
		shared->dropped = PGSS_NG_DROP_RESET;
		free_body(kind, body, shared);
		PG_RE_THROW();
	}
	PG_END_TRY();

	he = insert_guarded(kind, key, &found);
	if (he == NULL)
	{
		/* not published; insert_guarded released every LWLock */
		pg_atomic_write_u32(&shared->refcount, 0);
		shared->dropped = PGSS_NG_DROP_RESET;
		free_body(kind, body, shared);
		return PGSS_NG_OUT_OF_MEMORY;
	}
	if (found)
		elog(ERROR, "%s entry was created twice", kind->info->name);

	tail = HASH_TAIL(kind, he);
	tail->body = body;
	tail->generation = shared->generation;
	dshash_release_lock(kind->hash, he);
	pg_atomic_fetch_add_u32(&ks->entries_live, 1);

	LWLockRelease(kind->alloc_lock);

	*body_out = body;
	*shared_out = shared;
	return PGSS_NG_CREATED;
}

/*
 * pgss_ng_kind_exists
 *		Is there a pending or shared entry for key?  Takes the partition
 *		lock shared for a moment.  The answer may be stale at once; callers
 *		use it only to skip work (e.g. normalizing a text that is stored).
 */
bool
pgss_ng_kind_exists(PgssNgKind *kind, const void *key)
{
	void	   *he;

	if (find_live_pending(kind, key) != NULL)
		return true;

	he = dshash_find(kind->hash, key, false);
	if (he == NULL)
		return false;
	dshash_release_lock(kind->hash, he);
	return true;
}

/*
 * pgss_ng_kind_create
 *		Make sure a shared entry exists for key, without counting anything
 *		(pg_stat_statements' "sticky" entry made at parse analysis).
 */
PgssNgCreateResult
pgss_ng_kind_create(PgssNgKind *kind, const void *key,
					PgssNgInitSharedFn init, void *arg)
{
	dsa_pointer body;
	PgssNgSharedEntry *shared;
	PgssNgCreateResult r;

	r = lookup_or_create(kind, key, init, arg, false, 1.0, &body, &shared);
	if (r == PGSS_NG_CREATED)
		pgss_ng_kind_evict(kind);
	return r;
}

/*
 * max_pending
 *		Pending entries a backend may hold before an early flush:
 *		info->max_pending, but at most a quarter of max, so that a few
 *		backends holding references (which keep evicted bodies allocated)
 *		cannot fill the backstop of a small table on their own.
 */
static int
max_pending(PgssNgKind *kind)
{
	return Max(1, Min(kind->info->max_pending, kind->max_entries / 4));
}

/*
 * flush_one
 *		Flush one pending entry pe; see pgss_ng_kind_flush() for the lock
 *		policy.  now is used for the age test and the usage decay.  Returns
 *		false if the entry stays pending (its lock was busy).
 *
 * Into a live entry, the pending data is merged and the usage brought up
 * to date; into one dropped by a reset it is discarded (made before the
 * reset); into an evicted one it goes to the kind's discard callback.  The
 * local entry is removed and the reference released either way.
 */
static bool
flush_one(PgssNgKind *kind, void *pe, TimestampTz now, bool force)
{
	PgssNgPendingHdr *hdr = PENDING_HDR(kind, pe);
	PgssNgSharedEntry *shared = hdr->shared;
	dsa_pointer body;
	uint8		dropped;

	if (!LWLockConditionalAcquire(&shared->lock, LW_EXCLUSIVE))
	{
		if (!force &&
			!TimestampDifferenceExceeds(hdr->since, now,
										PGSS_NG_PENDING_MAX_AGE_MS))
			return false;
		/* never wait for a lock this backend holds itself */
		if (LWLockHeldByMe(&shared->lock))
			return false;
		LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	}

	dropped = shared->dropped;
	if (dropped == PGSS_NG_LIVE)
	{
		double		uses;

		uses = kind->info->flush_pending_cb(kind, pe, PgssNgSharedData(shared),
											PENDING_DATA(kind, pe),
											hdr->since);
		shared->usage = decayed_usage(shared->usage, shared->usage_time,
									  now) + uses;
		shared->usage_time = Max(shared->usage_time, now);
	}
	LWLockRelease(&shared->lock);

	if (dropped == PGSS_NG_DROP_EVICT && kind->info->discard_pending_cb)
		kind->info->discard_pending_cb(kind, pe, PENDING_DATA(kind, pe));

	/*
	 * Forget the pending entry before releasing the reference: should
	 * freeing raise an ERROR, the counts are not merged a second time.
	 */
	body = hdr->body;
	hash_search(kind->pending, pe, HASH_REMOVE, NULL);
	kind->npending--;
	release_ref(kind, body, shared);
	return true;
}

/*
 * find_live_pending
 *		This backend's pending entry for key, if its shared entry is still
 *		live.  One whose entry was dropped since (reset, eviction) is
 *		flushed away first, so that counts made from now on go to a new
 *		entry: a reset separates counts made before it from those made
 *		after it, even within one long statement.  The dropped flag is read
 *		without the entry lock; it is only ever set once.
 */
static void *
find_live_pending(PgssNgKind *kind, const void *key)
{
	void	   *pe;

	if (kind->npending == 0)
		return NULL;
	pe = hash_search(kind->pending, key, HASH_FIND, NULL);
	if (pe == NULL)
		return NULL;
	if (PENDING_HDR(kind, pe)->shared->dropped == PGSS_NG_LIVE)
		return pe;
	flush_one(kind, pe, GetCurrentTimestamp(), true);
	return NULL;
}

/*
 * pgss_ng_kind_get_pending
 *		Return this backend's pending data for key (zeroed when new), making
 *		the shared entry if needed and holding a reference to it until the
 *		pending data is flushed.
 *
 * Returns NULL when the entry could not be made (backstop reached, or out
 * of shared memory); the caller then counts what it wanted to record as dropped.  Before adding a
 * new pending entry past max_pending(), everything pending is flushed,
 * so a backend's pending memory stays bounded however many distinct keys a
 * single statement or transaction touches.
 * Memory: pending entries in TopMemoryContext (the pending hash).
 * Errors: those of lookup_or_create(); the local entry is removed first.
 */
void *
pgss_ng_kind_get_pending(PgssNgKind *kind, const void *key,
						 PgssNgInitSharedFn init, void *arg)
{
	void	   *live;
	void	   *pe;
	bool		found;
	PgssNgPendingHdr *hdr;
	PgssNgCreateResult r = PGSS_NG_OUT_OF_MEMORY;
	dsa_pointer body;
	PgssNgSharedEntry *shared;

	live = find_live_pending(kind, key);
	if (live != NULL)
	{
		return PENDING_DATA(kind, live);
	}

	if (kind->npending >= max_pending(kind) &&
		pgss_ng_kind_flush(kind, false) &&
		kind->npending >= max_pending(kind))
		pgss_ng_kind_flush(kind, true);

	/* make the local entry first: if that fails, no reference is leaked */
	pe = hash_search(kind->pending, key, HASH_ENTER, &found);
	Assert(!found);

	PG_TRY();
	{
		r = lookup_or_create(kind, key, init, arg, true, 1.0, &body, &shared);
	}
	PG_CATCH();
	{
		hash_search(kind->pending, key, HASH_REMOVE, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (r == PGSS_NG_FULL || r == PGSS_NG_OUT_OF_MEMORY)
	{
		hash_search(kind->pending, key, HASH_REMOVE, NULL);
		return NULL;
	}

	hdr = PENDING_HDR(kind, pe);
	hdr->body = body;
	hdr->shared = shared;
	hdr->since = GetCurrentTimestamp();
	memset(PENDING_DATA(kind, pe), 0, kind->info->pending_size);
	kind->npending++;

	/* only now: an ERROR in eviction must find the reference recorded */
	if (r == PGSS_NG_CREATED)
		pgss_ng_kind_evict(kind);

	return PENDING_DATA(kind, pe);
}

/*
 * pgss_ng_kind_flush
 *		Merge this backend's pending entries into their shared entries.
 *
 * Without force, each entry's lock is tried without waiting; an entry
 * whose lock is busy stays pending for the next flush, unless its pending
 * data is older than PGSS_NG_PENDING_MAX_AGE_MS, in which case we wait.
 * With force (exit, view read, too much pending) we always wait.  Each
 * flushed entry's reference is released at once.  Returns true if
 * anything is still pending.  Locks: each entry's LWLock, one at a time.
 */
bool
pgss_ng_kind_flush(PgssNgKind *kind, bool force)
{
	HASH_SEQ_STATUS status;
	void	   *pe;
	TimestampTz now;

	if (kind->npending == 0)
		return false;

	now = GetCurrentTimestamp();
	hash_seq_init(&status, kind->pending);
	while ((pe = hash_seq_search(&status)) != NULL)
		(void) flush_one(kind, pe, now, force);

	return kind->npending > 0;
}

/*
 * pgss_ng_kind_foreach
 *		Call visit for every live shared entry, with the entry's lock held
 *		shared (so the data is not torn) and its partition lock held shared
 *		(so it cannot be freed).  visit must only copy; it must not raise an
 *		ERROR or take other locks of this kind.
 */
void
pgss_ng_kind_foreach(PgssNgKind *kind, PgssNgVisitFn visit, void *arg)
{
	dshash_seq_status status;
	void	   *he;

	dshash_seq_init(&status, kind->hash, false);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		PgssNgSharedEntry *shared =
			dsa_get_address(kind->area, HASH_TAIL(kind, he)->body);

		LWLockAcquire(&shared->lock, LW_SHARED);
		visit(kind, he, PgssNgSharedData(shared), arg);
		LWLockRelease(&shared->lock);
	}
	dshash_seq_term(&status);
}

/*
 * pgss_ng_kind_drop_matching
 *		Remove every entry whose key matches (all if match is NULL) from the
 *		hash and release the hash's reference; bodies still referenced by
 *		pending data are freed by their last holder.  Returns the number of
 *		entries dropped.  Locks: <name>_dealloc (waiting: a reset waits for
 *		a running eviction), then partition locks exclusively, one at a
 *		time, then each entry's lock to set dropped.
 */
uint64
pgss_ng_kind_drop_matching(PgssNgKind *kind, PgssNgMatchFn match, void *arg)
{
	dshash_seq_status status;
	void	   *he;
	uint64		ndropped = 0;

	/* removals (eviction, reset) are serialized */
	LWLockAcquire(kind->dealloc_lock, LW_EXCLUSIVE);
	dshash_seq_init(&status, kind->hash, true);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		dsa_pointer body;
		PgssNgSharedEntry *shared;

		if (match != NULL && !match(he, arg))
			continue;

		body = HASH_TAIL(kind, he)->body;
		shared = dsa_get_address(kind->area, body);

		mark_dropped(shared, PGSS_NG_DROP_RESET);
		dshash_delete_current(&status);
		forget_body(kind, body, shared);
		ndropped++;
	}
	dshash_seq_term(&status);
	LWLockRelease(kind->dealloc_lock);

	return ndropped;
}

/*
 * pgss_ng_kind_reset_matching
 *		Call reset on the data of every matching entry, with the entry's
 *		lock held exclusively.  Returns the number of entries reset.
 */
uint64
pgss_ng_kind_reset_matching(PgssNgKind *kind, PgssNgMatchFn match,
							PgssNgResetFn reset, void *arg)
{
	dshash_seq_status status;
	void	   *he;
	uint64		nreset = 0;

	dshash_seq_init(&status, kind->hash, false);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		PgssNgSharedEntry *shared;

		if (match != NULL && !match(he, arg))
			continue;

		shared = dsa_get_address(kind->area, HASH_TAIL(kind, he)->body);
		LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
		reset(PgssNgSharedData(shared), arg);
		LWLockRelease(&shared->lock);
		nreset++;
	}
	dshash_seq_term(&status);

	return nreset;
}

/*
 * pgss_ng_kind_counters
 *		Copy the kind-wide counters; each is read atomically, the set is not
 *		a consistent snapshot.
 */
void
pgss_ng_kind_counters(PgssNgKind *kind, PgssNgKindCounters *out)
{
	PgssNgKindShared *ks = kind->shared;

	out->entries = pg_atomic_read_u32(&ks->entries_live);
	out->entries_allocated = pg_atomic_read_u32(&ks->entries_allocated);
	out->entries_max = kind->max_entries;
	out->dealloc = (int64) pg_atomic_read_u64(&ks->dealloc);
	out->backstop_skips = (int64) pg_atomic_read_u64(&ks->backstop_skips);
}

/*
 * pgss_ng_kind_restore_counters
 *		Add the event counters read back from disk (to whatever was counted
 *		since the start, if anything).
 */
void
pgss_ng_kind_restore_counters(PgssNgKind *kind, int64 dealloc,
							  int64 backstop_skips)
{
	pg_atomic_fetch_add_u64(&kind->shared->dealloc, (uint64) dealloc);
	pg_atomic_fetch_add_u64(&kind->shared->backstop_skips,
							(uint64) backstop_skips);
}

/*
 * pgss_ng_kind_reset_counters
 *		Restart the event counters (dealloc, backstop_skips).
 */
void
pgss_ng_kind_reset_counters(PgssNgKind *kind)
{
	pg_atomic_write_u64(&kind->shared->dealloc, 0);
	pg_atomic_write_u64(&kind->shared->backstop_skips, 0);
}

/*
 * drop_victim
 *		Evict one entry chosen by pgss_ng_kind_evict(), unless it was
 *		re-created since the scan (another generation) or a backend took a
 *		reference to it since.  Returns whether it was evicted.  Locks: its partition lock exclusively, then its entry
 *		lock.
 */
static bool
drop_victim(PgssNgKind *kind, const void *key, uint64 generation)
{
	void	   *he;
	PgssNgHashEntry *tail;
	dsa_pointer body;
	PgssNgSharedEntry *shared;

	he = dshash_find(kind->hash, key, true);
	if (he == NULL)
		return false;
	tail = HASH_TAIL(kind, he);
	if (tail->generation != generation)
	{
		dshash_release_lock(kind->hash, he);
		return false;
	}
	body = tail->body;
	shared = dsa_get_address(kind->area, body);

	/*
	 * Referenced since the scan: a backend is counting into it.  With the
	 * partition lock held exclusively no reference can be taken now, so
	 * this test is exact.
	 */
	if (pg_atomic_read_u32(&shared->refcount) > 1)
	{
		dshash_release_lock(kind->hash, he);
		return false;
	}

	mark_dropped(shared, PGSS_NG_DROP_EVICT);
	dshash_delete_entry(kind->hash, he);
	forget_body(kind, body, shared);
	return true;
}

/*
 * candidate_cmp
 *		qsort comparator of eviction candidates: lowest value first, and
 *		among equal values the older entry (lower generation) first.
 */
static int
candidate_cmp(const void *a, const void *b)
{
	const EvictCandidate *ca = (const EvictCandidate *) a;
	const EvictCandidate *cb = (const EvictCandidate *) b;

	if (ca->value != cb->value)
		return ca->value < cb->value ? -1 : 1;
	/* older generation first: same value, created earlier */
	if (ca->generation != cb->generation)
		return ca->generation < cb->generation ? -1 : 1;
	return 0;
}

/*
 * pgss_ng_kind_evict
 *		If live entries exceed max, evict the least valuable ones down to
 *		max minus PGSS_NG_EVICT_PERCENT percent.
 *
 * Serialized by <name>_dealloc, taken without waiting: if another backend
 * is evicting, return at once (the backstop bounds what is allocated
 * meanwhile).  The scan copies (key, generation, decayed usage) of every
 * entry nobody holds a reference to, holding each partition lock shared
 * only while reading it and no entry lock (usage is read unlocked: a
 * heuristic may read a value a flush is updating); the sort runs with no
 * lock but <name>_dealloc; victims are then removed one by one
 * (drop_victim).  Each eviction counts in dealloc.
 * Memory: a temporary context under CurrentMemoryContext, deleted before
 * returning.  Errors: out of memory (caller's guard releases the locks).
 */
void
pgss_ng_kind_evict(PgssNgKind *kind)
{
	PgssNgKindShared *ks = kind->shared;
	Size		ksz = kind->info->key_size;
	int			max = kind->max_entries;
	int			batch;
	int			keep;
	int			nwant;
	int			npinned = 0;
	int			ncand = 0;
	int			size;
	int			nevicted = 0;
	int			i;
	EvictCandidate *cands;
	char	   *keys;
	dshash_seq_status status;
	void	   *he;
	TimestampTz now;
	MemoryContext cxt;
	MemoryContext oldcxt;

	if (pg_atomic_read_u32(&ks->entries_live) <= (uint32) max)
		return;
	if (!LWLockConditionalAcquire(kind->dealloc_lock, LW_EXCLUSIVE))
		return;

	batch = Max(1, (int) ((int64) max * PGSS_NG_EVICT_PERCENT / 100));
	keep = max - batch;
	nwant = (int) pg_atomic_read_u32(&ks->entries_live) - keep;
	if (nwant <= 0)
	{
		LWLockRelease(kind->dealloc_lock);
		return;
	}

	cxt = AllocSetContextCreate(CurrentMemoryContext, "pgss_ng eviction",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);

	size = (int) pg_atomic_read_u32(&ks->entries_allocated) + 64;
	cands = palloc_extended(sizeof(EvictCandidate) * size, MCXT_ALLOC_HUGE);
	keys = palloc_extended(ksz * size, MCXT_ALLOC_HUGE);
	now = GetCurrentTimestamp();

	dshash_seq_init(&status, kind->hash, false);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		PgssNgHashEntry *tail = HASH_TAIL(kind, he);
		PgssNgSharedEntry *shared = dsa_get_address(kind->area, tail->body);

		/* referenced: some backend is counting into it right now */
		if (pg_atomic_read_u32(&shared->refcount) > 1)
		{
			npinned++;
			continue;
		}

		if (ncand == size)
		{
			size *= 2;
			cands = repalloc_huge(cands, sizeof(EvictCandidate) * size);
			keys = repalloc_huge(keys, ksz * size);
		}
		cands[ncand].value = decayed_usage(shared->usage, shared->usage_time,
										   now);
		cands[ncand].generation = tail->generation;
		cands[ncand].keyno = ncand;
		memcpy(keys + ksz * ncand, he, ksz);
		ncand++;
	}
	dshash_seq_term(&status);

	qsort(cands, ncand, sizeof(EvictCandidate), candidate_cmp);

	/*
	 * Entries pinned by references cannot go: count them as kept, so that
	 * many pinned entries do not make us evict every unpinned one, however
	 * valuable.  Evict one batch, or more when the excess is not pinned
	 * (e.g. pgss_ng.max was just lowered).
	 */
	nwant = Min(nwant, Max(batch,
						   (int) pg_atomic_read_u32(&ks->entries_live) - max - npinned));

	for (i = 0; i < ncand && nevicted < nwant; i++)
	{
		if (drop_victim(kind, keys + ksz * cands[i].keyno,
						cands[i].generation))
			nevicted++;
	}
	pg_atomic_fetch_add_u64(&ks->dealloc, nevicted);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	LWLockRelease(kind->dealloc_lock);
}

/*
 * pgss_ng_kind_restore
 *		Create an entry read back from disk, with the usage it was saved
 *		with (so eviction ranks it as before the restart).  Like
 *		pgss_ng_kind_create() otherwise.
 */
PgssNgCreateResult
pgss_ng_kind_restore(PgssNgKind *kind, const void *key,
					 PgssNgInitSharedFn init, void *arg, double usage)
{
	dsa_pointer body;
	PgssNgSharedEntry *shared;

	return lookup_or_create(kind, key, init, arg, false, usage, &body, &shared);
}

/*
 * pgss_ng_kind_usage
 *		The usage of the entry whose kind data is shared_data, decayed to
 *		now.  For pgss_ng_kind_foreach() visitors (entry lock held).
 */
double
pgss_ng_kind_usage(const void *shared_data)
{
	const PgssNgSharedEntry *shared = (const PgssNgSharedEntry *)
		((const char *) shared_data - PGSS_NG_SHARED_DATA_OFFSET);

	return decayed_usage(shared->usage, shared->usage_time,
						 GetCurrentTimestamp());
}

/*
 * pgss_ng_kind_attached
 *		Number of processes attached to the kind's area (a backend detaches
 *		after its exit flush).  Read without a lock.
 */
uint32
pgss_ng_kind_attached(PgssNgKind *kind)
{
	return pg_atomic_read_u32(&kind->shared->nattached);
}

/*
 * pgss_ng_kind_update
 *		Call update on the data of the live entry for key, with its entry
 *		lock held exclusively (e.g. to merge counts read back from disk into
 *		an entry a backend made first).  Returns false if there is no such
 *		entry.  Locks: the key's partition lock shared, then its entry lock.
 */
bool
pgss_ng_kind_update(PgssNgKind *kind, const void *key, PgssNgResetFn update,
					void *arg)
{
	void	   *he;
	PgssNgSharedEntry *shared;

	he = dshash_find(kind->hash, key, false);
	if (he == NULL)
		return false;
	shared = dsa_get_address(kind->area, HASH_TAIL(kind, he)->body);
	LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
	update(PgssNgSharedData(shared), arg);
	LWLockRelease(&shared->lock);
	dshash_release_lock(kind->hash, he);
	return true;
}
