/*-------------------------------------------------------------------------
 *
 * kind_create.c
 *	  Creation of shared entries: admission against the backstop, the
 *	  body's allocation, init and publication in the dshash; and restore.
 *	  Owns entries_live and entries_allocated (raised here, lowered in
 *	  kind_evict.c and kind_free.c), next_generation and backstop_skips.
 *	  docs/design.md, "Life of an entry"; locking rules: kind.h.
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
 *		Allocate a body with its eviction node (*node_out, at the chunk's
 *		end), DSA_ALLOC_NO_OOM, and zero the kind data's first
 *		shared_zeroed bytes (all by default).  InvalidDsaPointer when shared
 *		memory ran out (starting or lengthening the allocation back-off) or
 *		the back-off lasts (not even tried); a success ends it.  No lock of
 *		this layer; no ERROR of its own.
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
	hdr->removed = PGSS_NG_REMOVAL_RESET;
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
 *		dshash_find_or_insert() of ca->key under pgss_ng_kind_guard(), for
 *		create_body: sets ca->he (partition lock held) and ca->found.  When
 *		the area cannot grow, dshash raises with its partition lock held;
 *		the caller holds no other LWLock, so the guard's LWLockReleaseAll()
 *		releases just that, and ca->he stays NULL.
 */
static void
insert_guarded(void *arg)
{
	CreateArgs *ca = (CreateArgs *) arg;

	ca->he = dshash_find_or_insert(ca->kind->hash, ca->key, &ca->found);
}

/*
 * create_body
 *		Admit, allocate, initialize and publish a body for ca->key, with no
 *		global lock (docs/design.md, "Life of an entry"): the dshash insert
 *		settles a race for the key, whose loser takes the winner's entry
 *		(PGSS_NG_CREATE_EXISTS).  PGSS_NG_CREATE_FULL at the backstop,
 *		PGSS_NG_CREATE_OUT_OF_MEMORY when memory ran out or the back-off
 *		lasts.  The caller holds no lock of this layer but maybe
 *		<name>_dealloc shared (a restore).  An ERROR from init or mapping
 *		propagates, the body given back first.
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
		return PGSS_NG_CREATE_FULL;

	body = alloc_body(kind, &np);
	if (!DsaPointerIsValid(body))
	{
		pg_atomic_fetch_sub_u32(&ctl->entries_allocated, 1);
		return PGSS_NG_CREATE_OUT_OF_MEMORY;
	}

	hdr = dsa_get_address(kind->area, body);
	LWLockInitialize(&hdr->lock, ctl->entry_tranche);
	hdr->removed = PGSS_NG_REMOVAL_NONE;
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
		return PGSS_NG_CREATE_OUT_OF_MEMORY;
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
		return PGSS_NG_CREATE_EXISTS;
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
	return PGSS_NG_CREATE_NEW;
}

/*
 * kind_lookup_or_create
 *		Find the body for key or create it (starting at usage), optionally
 *		with a reference.  Evicts first if live entries exceed max or the
 *		kind's memory is short (the callers evict again after a creation).
 *		At the backstop with live entries past max, waits for the eviction
 *		in progress (<name>_dealloc shared), evicts and tries once more; a
 *		refusal counts a backstop skip.  ERRORs of eviction, init or mapping
 *		propagate (locks released by the caller's guard).
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
		return PGSS_NG_CREATE_EXISTS;

	pgss_ng_kind_run_eviction(kind);
	r = create_body(kind, &ca, body_out, hdr_out);

	/*
	 * At the backstop with more live entries than max, eviction lags behind
	 * creations (many backends making entries at once, while one run
	 * evicts what was past max when it began): wait for the run in
	 * progress, evict, and try once more, rather than drop the count.
	 */
	if (r == PGSS_NG_CREATE_FULL &&
		pg_atomic_read_u32(&kind->ctl->entries_live) > (uint32) kind_max(kind))
	{
		LWLockAcquire(kind->dealloc_lock, LW_SHARED);
		LWLockRelease(kind->dealloc_lock);
		pgss_ng_kind_run_eviction(kind);
		r = create_body(kind, &ca, body_out, hdr_out);
	}
	if (r == PGSS_NG_CREATE_FULL)
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
	if (r == PGSS_NG_CREATE_NEW)
		pgss_ng_kind_run_eviction(kind);
	return r;
}

/*
 * pgss_ng_kind_restore_begin / pgss_ng_kind_restore_end
 *		Bracket what a restore does for one entry, so that a full reset
 *		comes wholly before or after it: begin takes <name>_dealloc shared
 *		and returns false, holding nothing, if full resets came since
 *		full_resets_seen (the saved data is older than one).  Call both in
 *		one guarded call: after an ERROR the guard released the lock.
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
 *		Create an entry read back from disk with its saved usage, or return
 *		PGSS_NG_CREATE_EXISTS if a backend made it first; between
 *		pgss_ng_kind_restore_begin and _end.  Never evicts: a restore stops
 *		at max records, and the init callback drops what the kind's memory
 *		cannot hold rather than evict entries just restored.
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
		return PGSS_NG_CREATE_EXISTS;
	r = create_body(kind, &ca, &body, &hdr);
	if (r == PGSS_NG_CREATE_FULL)
		pg_atomic_fetch_add_u64(&kind->ctl->backstop_skips, 1);
	return r;
}
