/*-------------------------------------------------------------------------
 *
 * kind_maint.c
 *	  Readers and maintenance: visiting every entry, removing or updating
 *	  the entries whose key matches, reading, updating or touching one, the
 *	  kind-wide counters (atomics) and max; owns nothing.  Locking:
 *	  partition lock shared, then the entry lock (shared to read, exclusive
 *	  to update), a reader's emit step between their releases; removals
 *	  take <name>_dealloc first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind_int.h"

/*
 * pgss_ng_kind_foreach
 *		For every live entry: visit() copies what it needs into arg, under
 *		the entry lock and the partition lock, both shared; if it returns
 *		true, emit(arg) (if any) does the per-entry work on the copy after
 *		the entry lock is released, the partition lock still held (so the
 *		entry lock is held only for the copy).  Neither may take locks of
 *		this kind; an ERROR in either aborts the caller's transaction,
 *		which releases these LWLocks.
 */
void
pgss_ng_kind_foreach(PgssNgKind *kind, PgssNgVisitFn visit,
					 PgssNgEmitFn emit, void *arg)
{
	dshash_seq_status status;
	void	   *he;

	dshash_seq_init(&status, kind->hash, false);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		PgssNgBodyHeader *hdr =
			dsa_get_address(kind->area, HASH_TAIL(kind, he)->body);
		bool		copied;

		LWLockAcquire(&hdr->lock, LW_SHARED);
		copied = visit(kind, he, PgssNgSharedData(hdr), arg);
		LWLockRelease(&hdr->lock);
		if (copied && emit != NULL)
			emit(arg);
	}
	dshash_seq_term(&status);
}

/*
 * pgss_ng_kind_remove_matching
 *		Remove every entry whose key matches (all: match NULL), found
 *		through the eviction queue; one created meanwhile may stay.  Returns
 *		how many.  A full reset is counted in full_resets first (stopping a
 *		restore in progress) and forgets the ghosts.  Waits for
 *		<name>_dealloc, then kind_remove_node() per entry; locked(arg), if
 *		given, runs before <name>_dealloc is released, so that the kind
 *		clears what it keeps of evicted entries with no eviction between.
 */
uint64
pgss_ng_kind_remove_matching(PgssNgKind *kind, PgssNgMatchFn match, void *arg,
							 PgssNgLockedFn locked)
{
	PgssNgKindControl *ctl = kind->ctl;
	dsa_pointer np;
	uint64		nremoved = 0;

	/* removals (eviction, reset) are serialized */
	LWLockAcquire(kind->dealloc_lock, LW_EXCLUSIVE);
	if (match == NULL)
	{
		pg_atomic_fetch_add_u64(&kind->ctl->full_resets, 1);
		kind_ghosts_forget(kind);
	}
	kind_take_new(kind);
	np = ctl->evict_front;
	while (DsaPointerIsValid(np))
	{
		PgssNgEvictNode *node = dsa_get_address(kind->area, np);
		dsa_pointer next = node->next;

		if ((match == NULL || match(PgssNgNodeKey(node), arg)) &&
			kind_remove_node(kind, np, PGSS_NG_REMOVAL_RESET))
			nremoved++;
		np = next;
	}
	if (locked)
		locked(arg);
	LWLockRelease(kind->dealloc_lock);

	return nremoved;
}

/*
 * pgss_ng_kind_update_matching
 *		Call update on the data of every matching entry (all if match is
 *		NULL), with the entry's lock held exclusively (e.g. a min/max
 *		reset).  Returns the number of entries updated.  Locks: partition
 *		locks shared, one at a time, then each entry's lock.
 */
uint64
pgss_ng_kind_update_matching(PgssNgKind *kind, PgssNgMatchFn match,
							PgssNgUpdateFn update, void *arg)
{
	dshash_seq_status status;
	void	   *he;
	uint64		nupdated = 0;

	dshash_seq_init(&status, kind->hash, false);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		PgssNgBodyHeader *hdr;

		if (match != NULL && !match(he, arg))
			continue;

		hdr = dsa_get_address(kind->area, HASH_TAIL(kind, he)->body);
		LWLockAcquire(&hdr->lock, LW_EXCLUSIVE);
		update(PgssNgSharedData(hdr), arg);
		LWLockRelease(&hdr->lock);
		nupdated++;
	}
	dshash_seq_term(&status);

	return nupdated;
}

/*
 * pgss_ng_kind_counters
 *		Copy the kind-wide counters; each is read atomically, the set is not
 *		a consistent snapshot.  entry_bytes is the DSA memory of the bodies
 *		allocated (removed ones too, until freed) and of the live entries'
 *		hash elements, at the size DSA allocates them.
 */
void
pgss_ng_kind_counters(PgssNgKind *kind, PgssNgKindCounters *out)
{
	PgssNgKindControl *ctl = kind->ctl;

	out->entries = pg_atomic_read_u32(&ctl->entries_live);
	out->entries_allocated = pg_atomic_read_u32(&ctl->entries_allocated);
	out->entry_bytes = out->entries_allocated *
		pgss_ng_dsa_allocated_size(KIND_CHUNK_SIZE(kind)) +
		out->entries *
		pgss_ng_dshash_allocated_size(MAXALIGN(kind->desc->key_size) +
									  sizeof(PgssNgHashEntry));
	out->entries_max = kind_max(kind);
	out->dealloc = (int64) pg_atomic_read_u64(&ctl->dealloc);
	out->entries_evicted = (int64) pg_atomic_read_u64(&ctl->entries_evicted);
	out->backstop_skips = (int64) pg_atomic_read_u64(&ctl->backstop_skips);
	out->eviction_ns = (int64) pg_atomic_read_u64(&ctl->eviction_ns);
	out->last_eviction = (TimestampTz) pg_atomic_read_u64(&ctl->last_eviction);
}

/*
 * pgss_ng_kind_set_max_entries / pgss_ng_kind_max_entries
 *		Publish or read max, the number of live entries eviction keeps to
 *		(and the backstop is made of): one value in the kind's control
 *		block for every process, whatever each one's copy of the setting
 *		says, so that a change takes hold everywhere at once.  The kind's
 *		owner decides which processes publish (one at a time).  Atomic; no
 *		lock.  Only after shared memory startup.
 */
void
pgss_ng_kind_set_max_entries(PgssNgKind *kind, int max_entries)
{
	Assert(max_entries > 0);
	pg_atomic_write_u32(&kind->ctl->max_entries, (uint32) max_entries);
}

int
pgss_ng_kind_max_entries(PgssNgKind *kind)
{
	return kind_max(kind);
}

/*
 * pgss_ng_kind_restore_counters
 *		Add the event counters read back from disk (to whatever was counted
 *		since the start, if anything), or those of a restore's own
 *		eviction; the last eviction's time becomes last_eviction if that is
 *		later (a compare-and-exchange loop: runs may end meanwhile).
 */
void
pgss_ng_kind_restore_counters(PgssNgKind *kind, int64 dealloc,
							  int64 entries_evicted, int64 backstop_skips,
							  int64 eviction_ns, TimestampTz last_eviction)
{
	uint64		cur = pg_atomic_read_u64(&kind->ctl->last_eviction);

	pg_atomic_fetch_add_u64(&kind->ctl->dealloc, (uint64) dealloc);
	pg_atomic_fetch_add_u64(&kind->ctl->entries_evicted,
							(uint64) entries_evicted);
	pg_atomic_fetch_add_u64(&kind->ctl->backstop_skips,
							(uint64) backstop_skips);
	pg_atomic_fetch_add_u64(&kind->ctl->eviction_ns, (uint64) eviction_ns);
	while (cur < (uint64) last_eviction &&
		   !pg_atomic_compare_exchange_u64(&kind->ctl->last_eviction, &cur,
										   (uint64) last_eviction))
		;
}

/*
 * pgss_ng_kind_reset_counters
 *		Restart the event counters (dealloc, entries_evicted,
 *		backstop_skips, eviction time, the last eviction's time).
 */
void
pgss_ng_kind_reset_counters(PgssNgKind *kind)
{
	pg_atomic_write_u64(&kind->ctl->dealloc, 0);
	pg_atomic_write_u64(&kind->ctl->entries_evicted, 0);
	pg_atomic_write_u64(&kind->ctl->backstop_skips, 0);
	pg_atomic_write_u64(&kind->ctl->eviction_ns, 0);
	pg_atomic_write_u64(&kind->ctl->last_eviction, 0);
}

/*
 * lock_live_entry
 *		Find the live entry for key and lock it in mode.  Returns its body,
 *		or NULL (nothing locked) if there is no such entry; on success the
 *		key's partition lock is held shared (*he is its dshash entry) and
 *		the entry lock in mode, both released by unlock_live_entry.
 */
static PgssNgBodyHeader *
lock_live_entry(PgssNgKind *kind, const void *key, LWLockMode mode,
				void **he)
{
	PgssNgBodyHeader *hdr;

	*he = dshash_find(kind->hash, key, false);
	if (*he == NULL)
		return NULL;
	hdr = dsa_get_address(kind->area, HASH_TAIL(kind, *he)->body);
	LWLockAcquire(&hdr->lock, mode);
	return hdr;
}

/* Release what lock_live_entry took. */
static void
unlock_live_entry(PgssNgKind *kind, PgssNgBodyHeader *hdr, void *he)
{
	LWLockRelease(&hdr->lock);
	dshash_release_lock(kind->hash, he);
}

/*
 * pgss_ng_kind_update
 *		Call update on the data of the live entry for key, with its entry
 *		lock held exclusively (e.g. to merge counts read back from disk into
 *		an entry a backend made first).  Returns false if there is no such
 *		entry.  Locks: the key's partition lock shared, then its entry lock.
 */
bool
pgss_ng_kind_update(PgssNgKind *kind, const void *key, PgssNgUpdateFn update,
					void *arg)
{
	void	   *he;
	PgssNgBodyHeader *hdr = lock_live_entry(kind, key, LW_EXCLUSIVE, &he);

	if (hdr == NULL)
		return false;
	update(PgssNgSharedData(hdr), arg);
	unlock_live_entry(kind, hdr, he);
	return true;
}

/*
 * pgss_ng_kind_read
 *		Call visit on the live entry for key with its entry lock held
 *		shared (a reader's copy of one entry) and return what it returns;
 *		false if there is no such entry.  Locks: the key's partition lock
 *		shared, then its entry lock shared.
 */
bool
pgss_ng_kind_read(PgssNgKind *kind, const void *key, PgssNgVisitFn visit,
				  void *arg)
{
	void	   *he;
	PgssNgBodyHeader *hdr = lock_live_entry(kind, key, LW_SHARED, &he);
	bool		r;

	if (hdr == NULL)
		return false;
	r = visit(kind, key, PgssNgSharedData(hdr), arg);
	unlock_live_entry(kind, hdr, he);
	return r;
}

/*
 * pgss_ng_kind_touch
 *		Call touch on the live entry for key with its partition lock held
 *		shared and no entry lock (see PgssNgTouchFn): the entry cannot be
 *		removed meanwhile, so what touch writes is final once the entry is
 *		removed (an evicted_cb or free_cb reads it after the partition lock
 *		was held exclusively).  False if there is no such entry.  touch
 *		must take no lock of this layer and raise no ERROR.
 */
bool
pgss_ng_kind_touch(PgssNgKind *kind, const void *key, PgssNgTouchFn touch,
				   void *arg)
{
	void	   *he = dshash_find(kind->hash, key, false);
	dsa_pointer body;

	if (he == NULL)
		return false;
	body = HASH_TAIL(kind, he)->body;
	touch(PgssNgSharedData(dsa_get_address(kind->area, body)),
		  body + PGSS_NG_SHARED_DATA_OFFSET, arg);
	dshash_release_lock(kind->hash, he);
	return true;
}
