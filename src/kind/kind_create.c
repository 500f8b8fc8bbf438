/*-------------------------------------------------------------------------
 *
 * kind_create.c
 *	  The kind layer's creation of shared entries: admission against the
 *	  backstop, allocation of the body, its init and its publication in the
 *	  dshash; and the restore of saved entries.  References, pending data
 *	  and flush are in kind_entry.c.  docs/design.md, "Life of an entry",
 *	  says how an entry is made; locking rules: kind.h.
 *
 * Owns entries_live and entries_allocated (raised here, lowered by
 * kind_evict.c and kind_free.c), next_generation and backstop_skips; creation obeys the
 * allocation back-off (errlimit.c), which alloc_body starts and ends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "kind_int.h"

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
 * kind_lookup_or_create
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
PgssNgCreateResult
kind_lookup_or_create(PgssNgKind *kind, const void *key,
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

	r = kind_lookup_or_create(kind, key, init, arg, false, 1.0, &body,
							  &hdr);
	if (r == PGSS_NG_CREATED)
		pgss_ng_kind_evict(kind);
	return r;
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
