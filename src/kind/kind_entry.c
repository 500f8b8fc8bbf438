/*-------------------------------------------------------------------------
 *
 * kind_entry.c
 *	  The kind layer's entries: creation of shared entries, references,
 *	  backend-local pending entries, flush with conditional locks, and
 *	  references released right after their flush.  Removal (the
 *	  refcounted free, eviction) is in kind_evict.c, readers and
 *	  maintenance in kind_maint.c.
 *
 * Life of an entry
 *	  create   admitted against the backstop by an atomic count, a body
 *			   is allocated (DSA_ALLOC_NO_OOM), filled by the kind's init
 *			   callback (before anyone can see it), then published in the
 *			   dshash under its partition lock, which settles two backends
 *			   creating the same key; the hash owns one reference, and
 *			   the entry's node goes on the eviction queue's stack of new
 *			   nodes (kind_evict.c).  No global lock, at max or below.
 *	  pending  a backend that counts something for the entry finds it under
 *			   the partition lock, takes a reference and keeps a pending
 *			   entry (key, body, kind's pending data) in its local hash.
 *	  flush    the kind's flush_pending_cb takes the body's LWLock through
 *			   pgss_ng_kind_lock_entry (without waiting unless the pending
 *			   data is older than PGSS_NG_PENDING_MAX_AGE_MS, or the flush
 *			   is forced), merges, and releases it through
 *			   pgss_ng_kind_unlock_entry; the backend then releases its
 *			   reference: release after flush.
 *	  remove   reset or eviction removes the key from the dshash under the
 *			   partition lock, marks the body removed under its LWLock and
 *			   releases the hash's reference.  Pending data flushed into a
 *			   body removed by a reset is discarded (it was counted before
 *			   the reset); into an evicted one, it is handed to the kind's
 *			   discard callback, which counts it as dropped.
 *	  evict    see kind_evict.c.
 *	  free     whoever releases the last reference frees the body, after
 *			   the kind's free callback released what the data owns
 *			   (kind_release_ref, kind_evict.c).
 *
 * Owns: PgssNgKindControl's entry counters (entries_live and
 * entries_allocated are raised here and lowered by the removals and frees of
 * kind_evict.c; next_generation, backstop_skips), the bodies' refcount and
 * generation, and the backend's pending hash.
 * Creation obeys the kind's allocation back-off (PgssNgKindControl.errlimit,
 * errlimit.c): alloc_body starts, lengthens and ends it, and the guard
 * (kind_guard.c) starts it on an out-of-memory ERROR.
 *
 * Locking rules: see kind.h.  In addition, functions here are only called
 * with no other LWLock held by the caller; the insert path relies on it to
 * recover from an out-of-memory ERROR raised inside dshash.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "kind_int.h"

/*
 * pending_hash
 *		The hash of key in the backend's pending hash: the shared hash's
 *		function (the kind's own, desc->hash_fn, when it has one), not
 *		dynahash's; every lookup of the pending hash passes it.
 */
static inline uint32
pending_hash(PgssNgKind *kind, const void *key)
{
	return kind->hash_params.hash_function(key, kind->desc->key_size, NULL);
}

/*
 * find_ref
 *		Look key up; if found, optionally take a reference (under the
 *		partition lock, which makes the refcount safe against removals) and
 *		return true with the body's pointer and address.
 */
static bool
find_ref(PgssNgKind *kind, const void *key, bool want_ref,
		 dsa_pointer *body_out, PgssNgBodyHeader **hdr_out)
{
	void	   *he;
	PgssNgBodyHeader *hdr;

	he = dshash_find(kind->hash, key, false);
	if (he == NULL)
		return false;

	*body_out = HASH_TAIL(kind, he)->body;
	hdr = dsa_get_address(kind->area, *body_out);
	if (want_ref)
		pg_atomic_fetch_add_u32(&hdr->refcount, 1);
	dshash_release_lock(kind->hash, he);
	*hdr_out = hdr;
	return true;
}

/*
 * admit_body
 *		Admission of one more body against the backstop: raise
 *		entries_allocated by one unless it has reached kind_backstop(),
 *		with a compare-and-exchange loop, so that the bound is exact
 *		without a lock however many backends create at once.  Returns
 *		false when the backstop is reached (the caller counts the skip if
 *		it gives up).  The caller gives the slot back (kind_free_body, or a
 *		decrement) if it does not publish a body.  No lock; no ERROR.
 */
static bool
admit_body(PgssNgKind *kind)
{
	PgssNgKindControl *ctl = kind->ctl;
	uint32		backstop = (uint32) kind_backstop(kind);
	uint32		n = pg_atomic_read_u32(&ctl->entries_allocated);

	do
	{
		if (n >= backstop)
			return false;
	} while (!pg_atomic_compare_exchange_u32(&ctl->entries_allocated, &n,
											 n + 1));
	return true;
}

/*
 * alloc_body
 *		Allocate a body, its eviction node (*node_out) at the end of its
 *		chunk, with DSA_ALLOC_NO_OOM, and zero the kind data's first
 *		shared_zeroed bytes (all by default), or return InvalidDsaPointer:
 *		shared memory ran out
 *		(which starts or lengthens the kind's allocation back-off), or it
 *		ran out a moment ago and the back-off still lasts (not even tried:
 *		a failed attempt may create and destroy a DSM segment of
 *		megabytes).  A success ends the back-off.  Called after
 *		admit_body(); no lock of this layer needed (the DSA area takes its
 *		own).  Errors: none of its own.
 */
static dsa_pointer
alloc_body(PgssNgKind *kind, dsa_pointer *node_out)
{
	PgssNgErrLimit *el = &kind->ctl->errlimit;
	Size		zeroed = kind->desc->shared_zeroed;
	dsa_pointer body;

	*node_out = InvalidDsaPointer;
	if (pgss_ng_errlimit_backing_off(el))
		return InvalidDsaPointer;
	body = dsa_allocate_extended(kind->area, KIND_CHUNK_SIZE(kind),
								 DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(body))
	{
		pgss_ng_errlimit_alloc_failed(el);
		return InvalidDsaPointer;
	}
	pgss_ng_errlimit_alloc_succeeded(el);
	/* the header and the node are filled by create_body */
	memset(PgssNgSharedData(dsa_get_address(kind->area, body)), 0,
		   zeroed > 0 ? zeroed : kind->desc->shared_size);
	*node_out = body + KIND_NODE_OFFSET(kind);
	return body;
}

/*
 * pgss_ng_kind_alloc_backing_off
 *		Whether the kind's allocation back-off lasts (shared memory ran out
 *		a moment ago: creations are not even tried).  For a caller that
 *		creates many entries in a row (a restore), to stop at the first
 *		failure.  Spinlock only; no ERROR.
 */
bool
pgss_ng_kind_alloc_backing_off(PgssNgKind *kind)
{
	return pgss_ng_errlimit_backing_off(&kind->ctl->errlimit);
}

/*
 * discard_unpublished
 *		Give back a body that was admitted, allocated and initialized but
 *		never published (init failed, the insert failed, or another backend
 *		published the same key first), with its eviction node: its data is
 *		released by the kind's free callback, its memory and its admission
 *		slot are given back.  Called with no lock of this layer held
 *		(free_cb may take the kind's own locks).
 */
static void
discard_unpublished(PgssNgKind *kind, dsa_pointer body,
					PgssNgBodyHeader *hdr)
{
	pg_atomic_write_u32(&hdr->refcount, 0);
	hdr->removed = PGSS_NG_REMOVED_BY_RESET;
	kind_free_body(kind, body, hdr);
}

/*
 * What create_body makes and publishes, and what its guarded dshash insert
 * (insert_guarded) returns.
 */
typedef struct CreateArgs
{
	PgssNgKind *kind;
	const void *key;
	PgssNgInitSharedFn init;
	void	   *arg;
	bool		want_ref;
	double		usage;
	/* set by insert_guarded */
	void	   *he;				/* the element, NULL if not inserted */
	bool		found;			/* it was there already */
} CreateArgs;

/*
 * insert_guarded
 *		dshash_find_or_insert() of ca->key, run under pgss_ng_kind_guard()
 *		by create_body, so that it does not throw into the caller (unless
 *		the caller of the outermost guarded call held LWLocks: see
 *		kind_guard.c).
 *
 * dshash raises ERROR when the DSA area cannot grow (shared memory or DSM
 * slots exhausted); it leaves the hash consistent but its partition lock(s)
 * held.  The caller holds no other LWLock (see the file header), so the
 * guard's LWLockReleaseAll() releases exactly those.  Sets ca->he, with
 * its partition lock held, and ca->found; on an ERROR the guard logs it
 * and ca->he stays NULL (all LWLocks then released).
 */
static void
insert_guarded(void *arg)
{
	CreateArgs *ca = (CreateArgs *) arg;

	ca->he = dshash_find_or_insert(ca->kind->hash, ca->key, &ca->found);
}

/*
 * create_body
 *		Admit, allocate, initialize and publish a body for ca->key.
 *
 * No global lock is needed: admission against the backstop is atomic
 * (admit_body), the allocation takes only the DSA area's lock, the init
 * callback fills a body nobody else can see yet, and the dshash insert,
 * under the key's partition lock, settles two backends creating the same
 * key at once: the loser finds the winner's element there, takes its
 * reference (still under that lock) and gives its own body back
 * (PGSS_NG_EXISTS).  The winner pushes the entry's eviction node on the
 * stack of new nodes before releasing that lock (kind_push_new: no lock,
 * a compare-and-exchange).  The caller holds no lock of this layer but
 * possibly <name>_dealloc shared (a restore).  Returns PGSS_NG_FULL at
 * the backstop, PGSS_NG_OUT_OF_MEMORY when shared memory ran out or the
 * allocation back-off lasts (every LWLock of the backend is then released
 * if the dshash insert failed: see insert_guarded).
 * Errors: an ERROR from init or dsa mapping propagates, the body given
 * back first.
 */
static PgssNgCreateResult
create_body(PgssNgKind *kind, CreateArgs *ca,
			dsa_pointer *body_out, PgssNgBodyHeader **hdr_out)
{
	PgssNgKindControl *ctl = kind->ctl;
	PgssNgHashEntry *tail;
	dsa_pointer body;
	PgssNgBodyHeader *hdr;
	dsa_pointer np;
	PgssNgEvictNode *node;

	if (!admit_body(kind))
		return PGSS_NG_FULL;

	body = alloc_body(kind, &np);
	if (!DsaPointerIsValid(body))
	{
		pg_atomic_fetch_sub_u32(&ctl->entries_allocated, 1);
		return PGSS_NG_OUT_OF_MEMORY;
	}

	hdr = dsa_get_address(kind->area, body);
	LWLockInitialize(&hdr->lock, ctl->entry_tranche);
	hdr->removed = PGSS_NG_LIVE;
	pg_atomic_init_u32(&hdr->refcount, ca->want_ref ? 2 : 1);
	hdr->generation = pg_atomic_fetch_add_u64(&ctl->next_generation, 1);
	hdr->usage_time = GetCurrentTimestamp();
	/* an evicted key comes back with the value it had (its ghost) */
	hdr->usage = ca->usage + kind_ghost_usage(kind, ca->key, hdr->usage_time);
	node = dsa_get_address(kind->area, np);
	node->prev = InvalidDsaPointer;
	node->next = InvalidDsaPointer;
	memcpy(PgssNgNodeKey(node), ca->key, kind->desc->key_size);

	PG_TRY();
	{
		if (ca->init)
			(void) ca->init(kind, PgssNgSharedData(hdr), ca->arg);
	}
	PG_CATCH();
	{
		/*
		 * Not published: give the body back.  Release whatever init held
		 * first, as free_cb needs it (or, under a caller's LWLock,
		 * re-throw and leave the body: see kind_release_locks_or_rethrow).
		 */
		kind_release_locks_or_rethrow();
		discard_unpublished(kind, body, hdr);
		PG_RE_THROW();
	}
	PG_END_TRY();

	ca->he = NULL;
	if (!pgss_ng_kind_guard(kind, "create a statistics entry",
							insert_guarded, ca))
	{
		/* not published; the guard released every LWLock */
		discard_unpublished(kind, body, hdr);
		return PGSS_NG_OUT_OF_MEMORY;
	}

	tail = HASH_TAIL(kind, ca->he);
	if (ca->found)
	{
		/* another backend published this key first: use its body */
		*body_out = tail->body;
		*hdr_out = dsa_get_address(kind->area, tail->body);
		if (ca->want_ref)
			pg_atomic_fetch_add_u32(&(*hdr_out)->refcount, 1);
		dshash_release_lock(kind->hash, ca->he);
		discard_unpublished(kind, body, hdr);
		return PGSS_NG_EXISTS;
	}
	tail->body = body;

	/*
	 * Count the entry before its partition lock is released: from then on
	 * a reset or an eviction may remove it and count it out
	 * (kind_forget_body), and entries_live must never go below the
	 * entries in the hash (it is unsigned: a reset of every entry would
	 * wrap it round to 2^32 - 1).
	 */
	pg_atomic_fetch_add_u32(&ctl->entries_live, 1);
	/* likewise its node: whoever removes the entry finds it on the queue */
	kind_push_new(kind, np, node);
	dshash_release_lock(kind->hash, ca->he);

	*body_out = body;
	*hdr_out = hdr;
	return PGSS_NG_CREATED;
}

/*
 * lookup_or_create
 *		Find the body for key, or create it, optionally taking a reference.
 *
 * A new entry starts with the given usage (1 for a new statement; what was
 * saved, for a restored one).  Before creating, this backend evicts if
 * live entries exceed max (e.g. after pgss_ng.max was lowered), so that a
 * workload of nothing but new statements is not stuck at the backstop, or
 * if the kind's needs_room_cb says its own memory is short (so that the
 * new entry's data, e.g. its text, finds room).  The callers evict again
 * after a creation.
 *
 * Creation takes no lock of its own (create_body), at max or below: a
 * backend that finds another one evicting goes on with its statement, and
 * the backstop bounds what is created meanwhile, exactly (admit_body).
 * Only at the backstop, with live entries past max, does a creator wait
 * for the eviction in progress (<name>_dealloc shared) and evict before
 * its second and last try; a refusal counts one backstop skip.
 * Errors: none raised by this layer; an ERROR from eviction, init or dsa
 * mapping propagates (locks released by the caller's guard).
 */
static PgssNgCreateResult
lookup_or_create(PgssNgKind *kind, const void *key,
				 PgssNgInitSharedFn init, void *arg, bool want_ref,
				 double usage,
				 dsa_pointer *body_out, PgssNgBodyHeader **hdr_out)
{
	CreateArgs	ca = {.kind = kind, .key = key, .init = init, .arg = arg,
	.want_ref = want_ref, .usage = usage};

	PgssNgCreateResult r;

	if (find_ref(kind, key, want_ref, body_out, hdr_out))
		return PGSS_NG_EXISTS;

	pgss_ng_kind_evict(kind);
	r = create_body(kind, &ca, body_out, hdr_out);

	/*
	 * At the backstop with more live entries than max, eviction lags behind
	 * creations (many backends making entries at once, while one run
	 * evicts what was past max when it began): wait for the run in
	 * progress, evict, and try once more, rather than drop the count.
	 */
	if (r == PGSS_NG_FULL &&
		pg_atomic_read_u32(&kind->ctl->entries_live) > (uint32) kind_max(kind))
	{
		LWLockAcquire(kind->dealloc_lock, LW_SHARED);
		LWLockRelease(kind->dealloc_lock);
		pgss_ng_kind_evict(kind);
		r = create_body(kind, &ca, body_out, hdr_out);
	}
	if (r == PGSS_NG_FULL)
		pg_atomic_fetch_add_u64(&kind->ctl->backstop_skips, 1);
	return r;
}

/*
 * pgss_ng_kind_exists
 *		Is there a live entry for key: a pending entry of this backend whose
 *		shared entry is live, or a shared entry?  Read-only: a pending entry
 *		whose shared entry was removed is left for its next flush
 *		(find_live_pending), and the shared hash is looked at then.  Takes
 *		the partition lock shared for a moment.  The answer may be stale at
 *		once; callers use it only to skip work (e.g. normalizing a text
 *		that is stored).
 */
bool
pgss_ng_kind_exists(PgssNgKind *kind, const void *key)
{
	void	   *he;

	if (kind->npending > 0)
	{
		void	   *pe = hash_search_with_hash_value(kind->pending, key,
														pending_hash(kind, key),
														HASH_FIND, NULL);

		if (pe != NULL && PENDING_REF(kind, pe)->hdr->removed == PGSS_NG_LIVE)
			return true;
	}

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
	PgssNgBodyHeader *hdr;
	PgssNgCreateResult r;

	r = lookup_or_create(kind, key, init, arg, false, 1.0, &body, &hdr);
	if (r == PGSS_NG_CREATED)
		pgss_ng_kind_evict(kind);
	return r;
}

/*
 * pgss_ng_kind_pending_limit
 *		Pending entries (each holding a reference) this backend may hold
 *		before an early flush: desc->max_pending, but at most this
 *		backend's share of half the backstop's headroom (backstop - max,
 *		shared by the attached backends).  A referenced entry cannot be
 *		evicted, so the references of all backends together stay within
 *		half the headroom, and eviction keeps the bodies below the
 *		backstop however many backends hold pending counts.  0: no share
 *		at all, count straight into the shared entry (pgss_ng_kind_push).
 *		Atomic reads; no lock.
 */
int
pgss_ng_kind_pending_limit(PgssNgKind *kind)
{
	int			headroom = kind_backstop(kind) - kind_max(kind);
	uint32		nattached = pg_atomic_read_u32(&kind->ctl->nattached);

	return Min(kind->desc->max_pending,
			   headroom / (2 * (int) Max(nattached, 1)));
}

/*
 * pgss_ng_kind_lock_entry
 *		For a kind's flush callback (or the kind's own change of an entry
 *		it holds pending data for): lock the shared entry that ref refers
 *		to exclusively.  Tries without waiting first.  If the lock is busy:
 *		with nowait, returns false (the pending data stays for a later
 *		flush) unless the pending data is older than
 *		PGSS_NG_PENDING_MAX_AGE_MS; otherwise waits, except for a lock
 *		this backend holds itself (false).  Returns false, with the lock
 *		released, also when the entry was removed (reset, eviction); the
 *		layer then discards or hands over the pending data (flush_one).
 *		True: the lock is held, the entry is live and ref->flush_time is
 *		the time now, read under the lock (the kind may stamp the entry
 *		with it); release it with pgss_ng_kind_unlock_entry().
 *
 * The clock is read only under the lock, and for the age test when the
 * lock is busy: one read per flushed entry.
 */
bool
pgss_ng_kind_lock_entry(PgssNgEntryRef *ref, bool nowait)
{
	LWLock	   *lock = &ref->hdr->lock;

	if (!LWLockConditionalAcquire(lock, LW_EXCLUSIVE))
	{
		if (nowait &&
			!TimestampDifferenceExceeds(ref->pending_since,
										GetCurrentTimestamp(),
										PGSS_NG_PENDING_MAX_AGE_MS))
			return false;
		/* never wait for a lock this backend holds itself */
		if (LWLockHeldByMe(lock))
			return false;
		LWLockAcquire(lock, LW_EXCLUSIVE);
	}
	if (ref->hdr->removed != PGSS_NG_LIVE)
	{
		ref->removed = ref->hdr->removed;
		LWLockRelease(lock);
		return false;
	}
	ref->flush_time = GetCurrentTimestamp();
	return true;
}

/*
 * pgss_ng_kind_unlock_entry
 *		After a flush callback merged ref's pending data: add uses (the
 *		uses the pending data represents) to the entry's usage, its value
 *		for eviction, decayed to the flush's time (ref->flush_time, read
 *		by pgss_ng_kind_lock_entry), and release the entry lock taken by
 *		pgss_ng_kind_lock_entry().  Within PGSS_NG_USAGE_DECAY_STEP_US of
 *		its last decay (or before it: a clock read just before ours in
 *		another backend) the uses are added to the usage as it stands, to
 *		decay from that time: a hot entry's flushes compute the decay
 *		once per step, not each.
 */
void
pgss_ng_kind_unlock_entry(PgssNgEntryRef *ref, double uses)
{
	PgssNgBodyHeader *hdr = ref->hdr;

	if (ref->flush_time - hdr->usage_time < PGSS_NG_USAGE_DECAY_STEP_US)
		hdr->usage += uses;
	else
	{
		hdr->usage = kind_decayed_usage(hdr->usage, hdr->usage_time,
										ref->flush_time) + uses;
		hdr->usage_time = ref->flush_time;
	}
	LWLockRelease(&hdr->lock);
}

/*
 * flush_one
 *		Flush one pending entry pe through the kind's flush callback, which
 *		may wait for the entry lock (nowait false) only when force is set
 *		or the pending data is older than PGSS_NG_PENDING_MAX_AGE_MS (the
 *		age test of pgss_ng_kind_lock_entry).  Returns false if the entry
 *		stays pending (its lock was busy).
 *
 * Into a live entry, the callback merges the pending data and the usage
 * is brought up to date; into one removed by a reset it is discarded (made
 * before the reset); into an evicted one it goes to the kind's discard
 * callback.  The local entry is removed and the reference released either
 * way.  Locks: the entry's LWLock (taken by the callback, through
 * pgss_ng_kind_lock_entry), none afterwards.
 */
static bool
flush_one(PgssNgKind *kind, void *pe, bool force)
{
	PgssNgEntryRef *ref = PENDING_REF(kind, pe);

	ref->removed = PGSS_NG_LIVE;
	if (!kind->desc->flush_pending_cb(ref, !force) &&
		ref->removed == PGSS_NG_LIVE)
		return false;

	if (ref->removed == PGSS_NG_REMOVED_BY_EVICTION &&
		kind->desc->discard_pending_cb)
		kind->desc->discard_pending_cb(ref);

	/*
	 * Forget the pending entry before releasing the reference: should
	 * freeing raise an ERROR, the counts are not merged a second time.
	 */
	{
		dsa_pointer body = ref->body;
		PgssNgBodyHeader *hdr = ref->hdr;

		dlist_delete(&ref->node);
		hash_search_with_hash_value(kind->pending, pe, ref->hash,
									HASH_REMOVE, NULL);
		kind->npending--;
		kind_release_ref(kind, body, hdr);
	}
	return true;
}

/*
 * find_live_pending
 *		This backend's pending entry for key (whose hash in the pending
 *		hash is hash), if its shared entry is still live.  One whose entry
 *		was removed since (reset, eviction) is flushed away first, so that
 *		counts made from now on go to a new entry: a reset separates counts
 *		made before it from those made after it, even within one long
 *		statement.  The removed flag is read without the entry lock; it is
 *		only ever set once.
 */
static void *
find_live_pending(PgssNgKind *kind, const void *key, uint32 hash)
{
	void	   *pe;

	if (kind->npending == 0)
		return NULL;
	pe = hash_search_with_hash_value(kind->pending, key, hash, HASH_FIND,
									 NULL);
	if (pe == NULL)
		return NULL;
	if (PENDING_REF(kind, pe)->hdr->removed == PGSS_NG_LIVE)
		return pe;
	flush_one(kind, pe, true);
	return NULL;
}

/*
 * make_room
 *		Before a new pending entry: flush everything pending if this
 *		backend holds its limit already (pgss_ng_kind_pending_limit, at
 *		least one entry), without waiting first, then waiting if that left
 *		too many.  Errors: those of the flush.
 */
static void
make_room(PgssNgKind *kind)
{
	int			limit = Max(1, pgss_ng_kind_pending_limit(kind));

	if (kind->npending >= limit &&
		pgss_ng_kind_flush(kind, false) &&
		kind->npending >= limit)
		pgss_ng_kind_flush(kind, true);
}

/*
 * keep_pending
 *		Make pe (just entered in the pending hash, its key's hash is hash)
 *		the pending entry of body, whose reference this backend holds, and
 *		return its ref; its pending data is left to the caller.
 */
static PgssNgEntryRef *
keep_pending(PgssNgKind *kind, void *pe, uint32 hash, dsa_pointer body,
			 PgssNgBodyHeader *hdr)
{
	PgssNgEntryRef *ref = PENDING_REF(kind, pe);

	ref->kind = kind;
	ref->key = pe;
	ref->shared_data = PgssNgSharedData(hdr);
	ref->pending = PENDING_DATA(kind, pe);
	ref->pending_since = GetCurrentTimestamp();
	ref->body = body;
	ref->hdr = hdr;
	ref->pinned = true;
	ref->created = false;
	ref->removed = PGSS_NG_LIVE;
	ref->flush_time = 0;
	ref->hash = hash;
	dlist_push_tail(&kind->pending_list, &ref->node);
	kind->npending++;
	return ref;
}

/*
 * pgss_ng_kind_find_pending
 *		This backend's pending data for key, if it holds some and its
 *		entry is live; NULL otherwise (none, or its entry was removed:
 *		pgss_ng_kind_get_pending flushes that one away).  A lookup in the
 *		backend-local pending hash only: no lock, no ERROR.
 */
void *
pgss_ng_kind_find_pending(PgssNgKind *kind, const void *key)
{
	void	   *pe;

	if (kind->npending == 0)
		return NULL;
	pe = hash_search_with_hash_value(kind->pending, key,
									 pending_hash(kind, key), HASH_FIND,
									 NULL);
	if (pe == NULL || PENDING_REF(kind, pe)->hdr->removed != PGSS_NG_LIVE)
		return NULL;
	return PENDING_DATA(kind, pe);
}

/*
 * pgss_ng_kind_lock_key
 *		Lock key's shared entry for a change made at once (e.g. one call
 *		counted straight into it), making the entry if needed (init, arg
 *		as for pgss_ng_kind_create), without waiting, into ref (the
 *		caller's, e.g. on its stack):
 *		  PGSS_NG_KEY_LOCKED  the entry lock is held, ref->shared_data is
 *							  the entry's and ref->flush_time the time read
 *							  under the lock; release with
 *							  pgss_ng_kind_unlock_key()
 *		  PGSS_NG_KEY_BUSY	  the lock is busy (or the new entry is gone
 *							  already): ref holds a reference instead, for
 *							  pgss_ng_kind_keep_pending()
 *		  PGSS_NG_KEY_FAILED  the entry could not be made (backstop, out
 *							  of shared memory): nothing held
 *
 * The path of a key whose entry exists: one lookup, the entry lock tried
 * under its partition lock, no reference (the partition lock keeps the
 * body from being freed until the entry lock is held: a removal takes
 * both), nothing allocated.  A new entry is made with a reference, then
 * locked through it.  Errors: those of DSA mapping and creation; call
 * under pgss_ng_kind_guard().
 */
PgssNgLockKey
pgss_ng_kind_lock_key(PgssNgKind *kind, const void *key,
					  PgssNgInitSharedFn init, void *arg, PgssNgEntryRef *ref)
{
	void	   *he;
	PgssNgCreateResult r;

	ref->kind = kind;
	ref->key = key;
	ref->pending = NULL;
	ref->pending_since = 0;
	ref->pinned = false;
	ref->created = false;
	ref->removed = PGSS_NG_LIVE;

	he = dshash_find(kind->hash, key, false);
	if (likely(he != NULL))
	{
		ref->body = HASH_TAIL(kind, he)->body;
		ref->hdr = dsa_get_address(kind->area, ref->body);
		if (!LWLockConditionalAcquire(&ref->hdr->lock, LW_EXCLUSIVE))
		{
			pg_atomic_fetch_add_u32(&ref->hdr->refcount, 1);
			ref->pinned = true;
		}
		dshash_release_lock(kind->hash, he);
		if (ref->pinned)
			return PGSS_NG_KEY_BUSY;
	}
	else
	{
		r = lookup_or_create(kind, key, init, arg, true, 1.0, &ref->body,
							 &ref->hdr);
		if (r == PGSS_NG_FULL || r == PGSS_NG_OUT_OF_MEMORY)
			return PGSS_NG_KEY_FAILED;
		ref->pinned = true;
		ref->created = r == PGSS_NG_CREATED;
		if (!LWLockConditionalAcquire(&ref->hdr->lock, LW_EXCLUSIVE))
			return PGSS_NG_KEY_BUSY;
		if (ref->hdr->removed != PGSS_NG_LIVE)
		{
			/* gone already: its pending data's flush discards it */
			LWLockRelease(&ref->hdr->lock);
			return PGSS_NG_KEY_BUSY;
		}
	}
	ref->shared_data = PgssNgSharedData(ref->hdr);
	ref->flush_time = GetCurrentTimestamp();
	return PGSS_NG_KEY_LOCKED;
}

/*
 * pgss_ng_kind_unlock_key
 *		After pgss_ng_kind_lock_key() returned PGSS_NG_KEY_LOCKED: add uses
 *		to the entry's usage and release its lock (as
 *		pgss_ng_kind_unlock_entry); for a new entry, evict if its creation
 *		took live entries past max (or its text the arena past its mark)
 *		while its reference keeps it from being the victim, as a pending
 *		entry's would, then release that reference.  Errors: those of
 *		freeing and eviction, under the caller's guard.
 */
void
pgss_ng_kind_unlock_key(PgssNgEntryRef *ref, double uses)
{
	pgss_ng_kind_unlock_entry(ref, uses);
	/* while the reference keeps the new entry from being the victim */
	if (ref->created)
		pgss_ng_kind_evict(ref->kind);
	if (ref->pinned)
		kind_release_ref(ref->kind, ref->body, ref->hdr);
}

/*
 * pgss_ng_kind_keep_pending
 *		After pgss_ng_kind_lock_key() returned PGSS_NG_KEY_BUSY: make the
 *		reference ref holds this backend's pending entry for its key, with
 *		its pending data zeroed as pgss_ng_kind_get_pending() zeroes it,
 *		for the next flush.  This backend holds no live pending data for
 *		the key (pgss_ng_kind_find_pending).  Memory: the pending hash.
 *		Errors: out of memory, and those of flushing (a pending entry of
 *		the key whose entry was removed is flushed away first); the
 *		reference is released first.
 */
PgssNgEntryRef *
pgss_ng_kind_keep_pending(PgssNgEntryRef *ref)
{
	PgssNgKind *kind = ref->kind;
	uint32		hash = pending_hash(kind, ref->key);
	PgssNgEntryRef *kept = NULL;
	void	   *pe;
	bool		found;

	Assert(ref->pinned);
	PG_TRY();
	{
		(void) find_live_pending(kind, ref->key, hash);
		pe = hash_search_with_hash_value(kind->pending, ref->key, hash,
										 HASH_ENTER, &found);
	}
	PG_CATCH();
	{
		/* the reference is not recorded anywhere yet */
		kind_release_locks_or_rethrow();
		kind_release_ref(kind, ref->body, ref->hdr);
		PG_RE_THROW();
	}
	PG_END_TRY();
	Assert(!found);
	kept = keep_pending(kind, pe, hash, ref->body, ref->hdr);
	memset(kept->pending, 0, kind->desc->pending_zeroed > 0 ?
		   kind->desc->pending_zeroed : kind->desc->pending_size);
	if (ref->created)
		pgss_ng_kind_evict(kind);
	return kept;
}

/*
 * pgss_ng_kind_get_pending
 *		Return this backend's reference to the entry for key, with its
 *		pending data (zeroed when new), making the shared entry if needed;
 *		the reference is held until the pending data is flushed.
 *
 * The pending data is zeroed (its first pending_zeroed bytes when the kind
 * sets that).  Returns NULL when the entry could not be made (backstop
 * reached, or out of shared memory); the caller then counts what it wanted
 * to record as dropped.  Before adding a new pending entry past
 * pgss_ng_kind_pending_limit(), everything pending is flushed, so that a
 * backend's pending memory and the entries its references keep from
 * eviction stay bounded however many distinct keys a single statement or
 * transaction touches.  The key's hash in the pending hash is computed once, here,
 * and kept in the reference for the removal at the flush.  Memory:
 * pending entries in TopMemoryContext (the pending hash).  Errors: those
 * of lookup_or_create(); the local entry is removed first.
 */
PgssNgEntryRef *
pgss_ng_kind_get_pending(PgssNgKind *kind, const void *key,
						 PgssNgInitSharedFn init, void *arg)
{
	void	   *live;
	void	   *pe;
	bool		found;
	PgssNgEntryRef *ref;
	PgssNgCreateResult r = PGSS_NG_OUT_OF_MEMORY;
	dsa_pointer body;
	PgssNgBodyHeader *hdr;
	uint32		hash = pending_hash(kind, key);

	live = find_live_pending(kind, key, hash);
	if (live != NULL)
		return PENDING_REF(kind, live);

	make_room(kind);

	/* make the local entry first: if that fails, no reference is leaked */
	pe = hash_search_with_hash_value(kind->pending, key, hash, HASH_ENTER,
									 &found);
	Assert(!found);

	PG_TRY();
	{
		r = lookup_or_create(kind, key, init, arg, true, 1.0, &body, &hdr);
	}
	PG_CATCH();
	{
		hash_search_with_hash_value(kind->pending, key, hash, HASH_REMOVE,
									NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (r == PGSS_NG_FULL || r == PGSS_NG_OUT_OF_MEMORY)
	{
		hash_search_with_hash_value(kind->pending, key, hash, HASH_REMOVE,
									NULL);
		return NULL;
	}

	ref = keep_pending(kind, pe, hash, body, hdr);
	memset(ref->pending, 0, kind->desc->pending_zeroed > 0 ?
		   kind->desc->pending_zeroed : kind->desc->pending_size);

	/* only now: an ERROR in eviction must find the reference recorded */
	if (r == PGSS_NG_CREATED)
		pgss_ng_kind_evict(kind);

	return ref;
}

/*
 * pgss_ng_kind_flush
 *		Merge this backend's pending entries into their shared entries.
 *
 * Without force, each entry's lock is tried without waiting; an entry
 * whose lock is busy stays pending for the next flush, unless its pending
 * data is older than PGSS_NG_PENDING_MAX_AGE_MS, in which case we wait.
 * With force (exit, view read, too much pending) we always wait.  Each
 * flushed entry's reference is released at once.  The entries are walked
 * in kind->pending_list (oldest first), not by a scan of the pending
 * hash's buckets.  Returns true if anything is still pending.  Locks:
 * each entry's LWLock, one at a time.
 */
bool
pgss_ng_kind_flush(PgssNgKind *kind, bool force)
{
	dlist_mutable_iter it;

	if (kind->npending == 0)
		return false;

	dlist_foreach_modify(it, &kind->pending_list)
	{
		PgssNgEntryRef *ref = dlist_container(PgssNgEntryRef, node, it.cur);

		(void) flush_one(kind, (void *) ref->key, force);
	}

	return kind->npending > 0;
}

/*
 * pgss_ng_kind_restore_begin / pgss_ng_kind_restore_end
 *		Bracket what a restore does for one entry (pgss_ng_kind_restore and
 *		the updates that go with it), so that a full reset comes wholly
 *		before or wholly after it: begin takes <name>_dealloc shared (a
 *		reset holds it exclusively while it counts itself and removes) and
 *		checks that the full resets since shared memory was made are still
 *		full_resets_seen, those the saved data is newer than (0 for data
 *		saved before this server started).  If another came, begin returns
 *		false with nothing held: the saved data is older than that reset,
 *		and none of it may outlive it.  Evictions, which take
 *		the lock without waiting, skip their turn meanwhile.  Call both in
 *		one guarded call: after an ERROR the guard has released the lock,
 *		and end has nothing left to release.
 */
bool
pgss_ng_kind_restore_begin(PgssNgKind *kind, uint64 full_resets_seen)
{
	LWLockAcquire(kind->dealloc_lock, LW_SHARED);
	if (pg_atomic_read_u64(&kind->ctl->full_resets) == full_resets_seen)
		return true;
	LWLockRelease(kind->dealloc_lock);
	return false;
}

void
pgss_ng_kind_restore_end(PgssNgKind *kind)
{
	if (LWLockHeldByMe(kind->dealloc_lock))
		LWLockRelease(kind->dealloc_lock);
}

/*
 * pgss_ng_kind_restore
 *		Create an entry read back from disk, with the usage it was saved
 *		with (so eviction ranks it as before the restart), or return
 *		PGSS_NG_EXISTS if a backend made it first.  Between
 *		pgss_ng_kind_restore_begin and _end.  Unlike pgss_ng_kind_create()
 *		it never evicts, for max or for room: a restore stops at max
 *		records (writer.c), and what the kind's memory cannot hold its init
 *		callback drops, rather than evicting entries restored a moment ago.
 *		Errors: those of create_body.
 */
PgssNgCreateResult
pgss_ng_kind_restore(PgssNgKind *kind, const void *key,
					 PgssNgInitSharedFn init, void *arg, double usage)
{
	CreateArgs	ca = {.kind = kind, .key = key, .init = init, .arg = arg,
	.want_ref = false, .usage = usage};
	dsa_pointer body;
	PgssNgBodyHeader *hdr;

	PgssNgCreateResult r;

	Assert(LWLockHeldByMeInMode(kind->dealloc_lock, LW_SHARED));
	if (find_ref(kind, key, false, &body, &hdr))
		return PGSS_NG_EXISTS;
	r = create_body(kind, &ca, &body, &hdr);
	if (r == PGSS_NG_FULL)
		pg_atomic_fetch_add_u64(&kind->ctl->backstop_skips, 1);
	return r;
}


/*
 * pgss_ng_kind_has_pending
 *		Does this backend hold pending data for the kind?
 */
bool
pgss_ng_kind_has_pending(PgssNgKind *kind)
{
	return kind->area != NULL && kind->npending > 0;
}
