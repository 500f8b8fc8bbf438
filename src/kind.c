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
 *	  drop     reset (later: eviction) removes the key from the dshash under
 *			   the partition lock, marks the body dropped under its LWLock
 *			   and releases the hash's reference.  Pending data flushed into
 *			   a dropped body is discarded: it was counted before the drop.
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

#include <xxhash.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

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
	kind->hash_params.hash_function = hash_key;
	kind->hash_params.tranche_id = kind->shared->hash_tranche;
}

static void *
raw_dsa_place(PgssNgKind *kind)
{
	return ((char *) kind->shared) + MAXALIGN(sizeof(PgssNgKindShared));
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

	LWLockRegisterTranche(shared->dsa_tranche,
						  MemoryContextStrdup(TopMemoryContext,
											  psprintf("%s_dsa", kind->info->name)));
	LWLockRegisterTranche(shared->hash_tranche,
						  MemoryContextStrdup(TopMemoryContext,
											  psprintf("%s_hash", kind->info->name)));
	LWLockRegisterTranche(shared->entry_tranche,
						  MemoryContextStrdup(TopMemoryContext,
											  psprintf("%s_entry", kind->info->name)));
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
	if (kind->shared == NULL || kind->detaching || !IsUnderPostmaster)
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
 * insert_guarded
 *		dshash_find_or_insert() that cannot throw into the caller.
 *
 * dshash raises ERROR when the DSA area cannot grow (shared memory or DSM
 * slots exhausted); it leaves the hash consistent but its partition lock(s)
 * held.  The caller holds no other LWLock (see the file header), so
 * LWLockReleaseAll() releases exactly those.  Returns the element with its
 * partition lock held, or NULL after logging the error.
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
		ErrorData  *edata;

		LWLockReleaseAll();
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("%s could not create a statistics entry: %s",
						kind->info->name, edata->message)));
		FreeErrorData(edata);
		he = NULL;
	}
	PG_END_TRY();

	return he;
}

/*
 * lookup_or_create
 *		Find the body for key, or create it, optionally taking a reference.
 *
 * The reference is taken while the partition lock is held, which is what
 * makes the refcount safe against concurrent drops.  A new body is filled
 * by init outside any lock; if another backend published the same key in
 * the meantime, ours is freed and theirs is used.  Creation is refused when
 * the live entries reach kind->max_entries (PGSS_NG_FULL) or shared memory
 * runs out (PGSS_NG_OUT_OF_MEMORY).  Errors: none raised into the caller.
 */
static PgssNgCreateResult
lookup_or_create(PgssNgKind *kind, const void *key,
				 PgssNgInitSharedFn init, void *arg, bool want_ref,
				 dsa_pointer *body_out, PgssNgSharedEntry **shared_out)
{
	PgssNgKindShared *ks = kind->shared;
	void	   *he;
	PgssNgHashEntry *tail;
	dsa_pointer body;
	PgssNgSharedEntry *shared;
	bool		found;

	he = dshash_find(kind->hash, key, false);
	if (he != NULL)
	{
		tail = HASH_TAIL(kind, he);
		body = tail->body;
		shared = dsa_get_address(kind->area, body);
		if (want_ref)
			pg_atomic_fetch_add_u32(&shared->refcount, 1);
		dshash_release_lock(kind->hash, he);
		*body_out = body;
		*shared_out = shared;
		return PGSS_NG_EXISTS;
	}

	/* admission: reserve a live slot first */
	if (pg_atomic_fetch_add_u32(&ks->entries_live, 1) >= (uint32) kind->max_entries)
	{
		pg_atomic_fetch_sub_u32(&ks->entries_live, 1);
		return PGSS_NG_FULL;
	}

	body = dsa_allocate_extended(kind->area,
								 PGSS_NG_SHARED_DATA_OFFSET + kind->info->shared_size,
								 DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(body))
	{
		pg_atomic_fetch_sub_u32(&ks->entries_live, 1);
		return PGSS_NG_OUT_OF_MEMORY;
	}
	pg_atomic_fetch_add_u32(&ks->entries_allocated, 1);

	shared = dsa_get_address(kind->area, body);
	LWLockInitialize(&shared->lock, ks->entry_tranche);
	shared->dropped = false;
	pg_atomic_init_u32(&shared->refcount, want_ref ? 2 : 1);
	shared->generation = pg_atomic_fetch_add_u64(&ks->next_generation, 1);
	if (init)
		(void) init(kind, PgssNgSharedData(shared), arg);

	he = insert_guarded(kind, key, &found);
	if (he == NULL || found)
	{
		/* not published: nobody else can see our body */
		pg_atomic_write_u32(&shared->refcount, 0);
		shared->dropped = true;
		free_body(kind, body, shared);
		pg_atomic_fetch_sub_u32(&ks->entries_live, 1);
		if (he == NULL)
			return PGSS_NG_OUT_OF_MEMORY;

		/* lost a race: use the winner's body */
		tail = HASH_TAIL(kind, he);
		body = tail->body;
		shared = dsa_get_address(kind->area, body);
		if (want_ref)
			pg_atomic_fetch_add_u32(&shared->refcount, 1);
		dshash_release_lock(kind->hash, he);
		*body_out = body;
		*shared_out = shared;
		return PGSS_NG_EXISTS;
	}

	tail = HASH_TAIL(kind, he);
	tail->body = body;
	tail->generation = shared->generation;
	dshash_release_lock(kind->hash, he);

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

	if (kind->npending > 0 &&
		hash_search(kind->pending, key, HASH_FIND, NULL) != NULL)
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

	return lookup_or_create(kind, key, init, arg, false, &body, &shared);
}

/*
 * pgss_ng_kind_get_pending
 *		Return this backend's pending data for key (zeroed when new), making
 *		the shared entry if needed and holding a reference to it until the
 *		pending data is flushed.
 *
 * Returns NULL when the entry could not be made (*result says why); the
 * caller then counts what it wanted to record as dropped.  Before adding a
 * new pending entry past info->max_pending, everything pending is flushed,
 * so a backend's pending memory stays bounded however many distinct keys a
 * single statement or transaction touches.
 * Memory: pending entries in TopMemoryContext (the pending hash).
 */
void *
pgss_ng_kind_get_pending(PgssNgKind *kind, const void *key,
						 PgssNgInitSharedFn init, void *arg,
						 PgssNgCreateResult *result)
{
	void	   *pe;
	bool		found;
	PgssNgPendingHdr *hdr;
	PgssNgCreateResult r;
	dsa_pointer body;
	PgssNgSharedEntry *shared;

	pe = hash_search(kind->pending, key, HASH_FIND, NULL);
	if (pe != NULL)
	{
		*result = PGSS_NG_EXISTS;
		return PENDING_DATA(kind, pe);
	}

	if (kind->npending >= kind->info->max_pending &&
		pgss_ng_kind_flush(kind, false) &&
		kind->npending >= kind->info->max_pending)
		pgss_ng_kind_flush(kind, true);

	/* make the local entry first: if that fails, no reference is leaked */
	pe = hash_search(kind->pending, key, HASH_ENTER, &found);
	Assert(!found);

	r = lookup_or_create(kind, key, init, arg, true, &body, &shared);
	*result = r;
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
	TimestampTz now = 0;

	if (kind->npending == 0)
		return false;

	hash_seq_init(&status, kind->pending);
	while ((pe = hash_seq_search(&status)) != NULL)
	{
		PgssNgPendingHdr *hdr = PENDING_HDR(kind, pe);
		PgssNgSharedEntry *shared = hdr->shared;
		dsa_pointer body;

		if (!LWLockConditionalAcquire(&shared->lock, LW_EXCLUSIVE))
		{
			if (!force)
			{
				if (now == 0)
					now = GetCurrentTimestamp();
				if (!TimestampDifferenceExceeds(hdr->since, now,
												PGSS_NG_PENDING_MAX_AGE_MS))
					continue;	/* stays pending */
			}
			/* never wait for a lock this backend holds itself */
			if (LWLockHeldByMe(&shared->lock))
				continue;
			LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
		}

		if (!shared->dropped)
			kind->info->flush_pending_cb(kind, pe, PgssNgSharedData(shared),
										 PENDING_DATA(kind, pe));
		LWLockRelease(&shared->lock);

		/*
		 * Forget the pending entry before releasing the reference: should
		 * freeing raise an ERROR, the counts are not merged a second time.
		 */
		body = hdr->body;
		hash_search(kind->pending, pe, HASH_REMOVE, NULL);
		kind->npending--;
		release_ref(kind, body, shared);
	}

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
 *		entries dropped.  Locks: partition locks exclusively, one at a time,
 *		then each entry's lock to set dropped.
 */
uint64
pgss_ng_kind_drop_matching(PgssNgKind *kind, PgssNgMatchFn match, void *arg)
{
	dshash_seq_status status;
	void	   *he;
	uint64		ndropped = 0;

	dshash_seq_init(&status, kind->hash, true);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		dsa_pointer body;
		PgssNgSharedEntry *shared;

		if (match != NULL && !match(he, arg))
			continue;

		body = HASH_TAIL(kind, he)->body;
		shared = dsa_get_address(kind->area, body);

		LWLockAcquire(&shared->lock, LW_EXCLUSIVE);
		shared->dropped = true;
		LWLockRelease(&shared->lock);

		dshash_delete_current(&status);
		pg_atomic_fetch_sub_u32(&kind->shared->entries_live, 1);
		release_ref(kind, body, shared);
		ndropped++;
	}
	dshash_seq_term(&status);

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
 * pgss_ng_kind_entries
 *		Number of live entries (in the hash), read without a lock.
 */
uint32
pgss_ng_kind_entries(PgssNgKind *kind)
{
	return pg_atomic_read_u32(&kind->shared->entries_live);
}
