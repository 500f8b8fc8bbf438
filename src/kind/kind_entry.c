/*-------------------------------------------------------------------------
 *
 * kind_entry.c
 *	  References and pending data: a backend's pending entries, their flush
 *	  with conditional locks, references released right after their flush.
 *	  Owns the backend's pending hash.  docs/design.md, "Life of an entry"
 *	  and "Flush policy"; locking rules: kind.h.  Functions here are called
 *	  with no other LWLock held (creation relies on it to recover from an
 *	  out-of-memory ERROR inside dshash).
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

		if (pe != NULL &&
			PENDING_REF(kind, pe)->hdr->removed == PGSS_NG_REMOVAL_NONE)
			return true;
	}

	he = dshash_find(kind->hash, key, false);
	if (he == NULL)
		return false;
	dshash_release_lock(kind->hash, he);
	return true;
}

/*
 * pgss_ng_kind_pending_limit
 *		Pending entries (each a reference) this backend may hold before an
 *		early flush: desc->max_pending, at most its share of half the
 *		backstop's headroom among attached backends, so that entries pinned
 *		by references never push eviction past the backstop.  0: count
 *		straight into the shared entry.  Atomic reads; no lock.
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
 *		For a flush callback: lock ref's shared entry exclusively, trying
 *		without waiting first; with nowait, a busy lock gives false unless
 *		the pending data is older than PGSS_NG_PENDING_MAX_AGE_MS; never
 *		waits for a lock this backend holds.  False, unlocked, also for a
 *		removed entry (flush_one then discards or hands over the data).
 *		True: locked and live, ref->flush_time read under the lock (the one
 *		clock read per flushed entry); release with _unlock_entry().
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
	if (ref->hdr->removed != PGSS_NG_REMOVAL_NONE)
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
 *		After a flush callback merged ref's pending data: add its uses to the
 *		entry's usage decayed to ref->flush_time, and release the entry
 *		lock.  Within PGSS_NG_USAGE_DECAY_STEP_US of the last decay (or
 *		before it) the uses are added without decaying: a hot entry
 *		computes the decay once per step.
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
 *		Flush pending entry pe through the kind's flush callback (waiting
 *		for the entry lock only with force or old data: lock_entry); false
 *		if it stays pending.  Data for an entry removed by a reset is
 *		discarded, for an evicted one handed to discard_pending_cb; either
 *		way the local entry is removed and the reference released.
 */
static bool
flush_one(PgssNgKind *kind, void *pe, bool force)
{
	PgssNgEntryRef *ref = PENDING_REF(kind, pe);

	ref->removed = PGSS_NG_REMOVAL_NONE;
	if (!kind->desc->flush_pending_cb(ref, !force) &&
		ref->removed == PGSS_NG_REMOVAL_NONE)
		return false;

	if (ref->removed == PGSS_NG_REMOVAL_EVICTION &&
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
	if (PENDING_REF(kind, pe)->hdr->removed == PGSS_NG_REMOVAL_NONE)
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
	ref->removed = PGSS_NG_REMOVAL_NONE;
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
	if (pe == NULL ||
		PENDING_REF(kind, pe)->hdr->removed != PGSS_NG_REMOVAL_NONE)
		return NULL;
	return PENDING_DATA(kind, pe);
}

/*
 * pgss_ng_kind_lock_key
 *		Lock key's shared entry without waiting, making it if needed (init,
 *		arg as for pgss_ng_kind_create), into the caller's ref:
 *		_LOCKED: locked (ref->shared_data, ref->flush_time), release with
 *		_unlock_key(); _BUSY: ref holds a reference instead, for
 *		_keep_pending(); _FAILED: nothing held.  An existing entry costs one
 *		lookup, no reference (its partition lock keeps the body until the
 *		entry lock is held).  Call under the guard.
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
	ref->removed = PGSS_NG_REMOVAL_NONE;

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
			return PGSS_NG_LOCK_KEY_BUSY;
	}
	else
	{
		r = kind_lookup_or_create(kind, key, init, arg, true, 1.0,
								  &ref->body, &ref->hdr);
		if (r == PGSS_NG_CREATE_FULL || r == PGSS_NG_CREATE_OUT_OF_MEMORY)
			return PGSS_NG_LOCK_KEY_FAILED;
		ref->pinned = true;
		ref->created = r == PGSS_NG_CREATE_NEW;
		if (!LWLockConditionalAcquire(&ref->hdr->lock, LW_EXCLUSIVE))
			return PGSS_NG_LOCK_KEY_BUSY;
		if (ref->hdr->removed != PGSS_NG_REMOVAL_NONE)
		{
			/* gone already: its pending data's flush discards it */
			LWLockRelease(&ref->hdr->lock);
			return PGSS_NG_LOCK_KEY_BUSY;
		}
	}
	ref->shared_data = PgssNgSharedData(ref->hdr);
	ref->flush_time = GetCurrentTimestamp();
	return PGSS_NG_LOCK_KEY_LOCKED;
}

/*
 * pgss_ng_kind_unlock_key
 *		After pgss_ng_kind_lock_key() returned PGSS_NG_LOCK_KEY_LOCKED: add uses
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
		pgss_ng_kind_run_eviction(ref->kind);
	if (ref->pinned)
		kind_release_ref(ref->kind, ref->body, ref->hdr);
}

/*
 * pgss_ng_kind_keep_pending
 *		After PGSS_NG_LOCK_KEY_BUSY: make ref's reference this backend's
 *		pending entry for its key (none live before), its pending data
 *		zeroed, for the next flush.  Memory: the pending hash.  Errors: out
 *		of memory and those of flushing; the reference is released first.
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
		pgss_ng_kind_run_eviction(kind);
	return kept;
}

/*
 * pgss_ng_kind_get_pending
 *		This backend's reference to key's entry, with its pending data
 *		(pending_zeroed bytes zeroed when new), making the shared entry if
 *		needed; NULL if it cannot be made (the caller counts a drop).  Past
 *		pgss_ng_kind_pending_limit() everything pending is flushed first,
 *		bounding pending memory and pinned entries.  Memory: the pending
 *		hash (TopMemoryContext).  Errors: kind_lookup_or_create()'s.
 */
PgssNgEntryRef *
pgss_ng_kind_get_pending(PgssNgKind *kind, const void *key,
						 PgssNgInitSharedFn init, void *arg)
{
	void	   *live;
	void	   *pe;
	bool		found;
	PgssNgEntryRef *ref;
	PgssNgCreateResult r = PGSS_NG_CREATE_OUT_OF_MEMORY;
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
		r = kind_lookup_or_create(kind, key, init, arg, true, 1.0, &body,
								  &hdr);
	}
	PG_CATCH();
	{
		hash_search_with_hash_value(kind->pending, key, hash, HASH_REMOVE,
									NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (r == PGSS_NG_CREATE_FULL || r == PGSS_NG_CREATE_OUT_OF_MEMORY)
	{
		hash_search_with_hash_value(kind->pending, key, hash, HASH_REMOVE,
									NULL);
		return NULL;
	}

	ref = keep_pending(kind, pe, hash, body, hdr);
	memset(ref->pending, 0, kind->desc->pending_zeroed > 0 ?
		   kind->desc->pending_zeroed : kind->desc->pending_size);

	/* only now: an ERROR in eviction must find the reference recorded */
	if (r == PGSS_NG_CREATE_NEW)
		pgss_ng_kind_run_eviction(kind);

	return ref;
}

/*
 * pgss_ng_kind_flush
 *		Merge this backend's pending entries (oldest first) into their
 *		shared entries, releasing each reference at once.  Without force a
 *		busy entry stays pending unless its data is over
 *		PGSS_NG_PENDING_MAX_AGE_MS old; with force (exit, view read, too
 *		much pending) it waits.  True if anything is still pending.
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
 * pgss_ng_kind_has_pending
 *		Does this backend hold pending data for the kind?
 */
bool
pgss_ng_kind_has_pending(PgssNgKind *kind)
{
	return kind->area != NULL && kind->npending > 0;
}
