/*-------------------------------------------------------------------------
 *
 * kind_evict.c
 *	  How a kind's shared entries go: the removal of an entry (out of the
 *	  hash, marked, its hash reference released), the refcounted free of
 *	  its body, and what bounds the entries: the usage of an entry (its
 *	  eviction value), eviction of the least valuable entries when live
 *	  entries exceed max or the kind's own memory is short, and the
 *	  backstop on allocated bodies.  The lowest file of the layer: it
 *	  calls no other file of it.
 *
 * Usage is 1 at creation plus the uses its flushes reported, halving every
 * PGSS_NG_USAGE_HALF_LIFE_MS.  When live entries exceed max, the least
 * valuable PGSS_NG_EVICT_PERCENT percent of max go (more when the excess
 * is larger).  Below max, when the kind's needs_room_cb says memory its
 * data owns is short (a full text arena), the least valuable go, in the
 * same order, until it no longer says so, at most PGSS_NG_EVICT_PERCENT
 * percent of the live entries per call.  Entries some backend holds a
 * reference to are not candidates.  The backstop (kind_backstop) caps
 * live + removed bodies not yet freed; creation (kind_entry.c) refuses
 * bodies beyond it.
 *
 * Owns: PgssNgKindControl.dealloc (eviction runs that evicted entries,
 * pg_stat_statements' meaning) and entries_evicted (entries they
 * evicted); the usage and usage_time of bodies are written by flushes
 * (kind_entry.c) and read here.  Whoever releases the last reference to a body frees it here
 * (kind_release_ref), counting it out of entries_allocated.
 *
 * Locking: <name>_dealloc serializes removals (eviction, reset); eviction
 * takes it conditionally: a backend that finds another one evicting goes
 * on with its statement.  The victim scan holds each partition lock shared
 * only while it reads that partition (no entry lock); victims are sorted
 * with no lock but <name>_dealloc held, and removed one at a time under
 * their partition lock, then their entry lock (kind_mark_removed),
 * checking the generation so that an entry re-created meanwhile is not
 * removed.  Flushes never wait for <name>_dealloc.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "lib/binaryheap.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "kind_int.h"

/*
 * kind_free_body
 *		Free a removed body nobody refers to any more.  No lock needed.
 */
void
kind_free_body(PgssNgKind *kind, dsa_pointer body, PgssNgBodyHeader *hdr)
{
	Assert(pg_atomic_read_u32(&hdr->refcount) == 0);

	if (kind->desc->free_cb)
		kind->desc->free_cb(kind, PgssNgSharedData(hdr));
	dsa_free(kind->area, body);
	pg_atomic_fetch_sub_u32(&kind->ctl->entries_allocated, 1);
}

/*
 * kind_release_ref
 *		Release one reference to a body; the last one frees it.  The hash holds
 *		a reference of its own, so the last release is always of a body that
 *		was already removed.
 */
void
kind_release_ref(PgssNgKind *kind, dsa_pointer body, PgssNgBodyHeader *hdr)
{
	if (pg_atomic_sub_fetch_u32(&hdr->refcount, 1) == 0)
		kind_free_body(kind, body, hdr);
}

/*
 * kind_mark_removed
 *		Flag a body as removed for reason, under its lock, so that flushes
 *		see it.  The caller removes it from the hash and then calls
 *		kind_forget_body().
 */
void
kind_mark_removed(PgssNgBodyHeader *hdr, PgssNgRemoval reason)
{
	LWLockAcquire(&hdr->lock, LW_EXCLUSIVE);
	hdr->removed = reason;
	LWLockRelease(&hdr->lock);
}

/*
 * kind_forget_body
 *		After removal from the hash: one live entry less, and the hash's
 *		reference released (freeing the body if nobody else holds one).
 */
void
kind_forget_body(PgssNgKind *kind, dsa_pointer body, PgssNgBodyHeader *hdr)
{
	pg_atomic_fetch_sub_u32(&kind->ctl->entries_live, 1);
	kind_release_ref(kind, body, hdr);
}

/* One eviction candidate. */
typedef struct EvictCandidate
{
	double		value;
	uint64		generation;
	int			keyno;			/* index into the candidate key array */
} EvictCandidate;

/*
 * kind_decayed_usage
 *		An entry's usage brought from its time t to now: it halves every
 *		PGSS_NG_USAGE_HALF_LIFE_MS.  Never grows (a t in the future, from a
 *		clock read just before ours in another backend, counts as now).
 */
double
kind_decayed_usage(double usage, TimestampTz t, TimestampTz now)
{
	if (now <= t)
		return usage;
	return usage * exp2(-(double) (now - t) /
						(PGSS_NG_USAGE_HALF_LIFE_MS * 1000.0));
}

/*
 * kind_backstop
 *		Most bodies (live + removed, not yet freed) that may exist at once:
 *		max + Min(max, PGSS_NG_BACKSTOP_MAX_EXTRA).
 */
int
kind_backstop(PgssNgKind *kind)
{
	int			max = kind_max(kind);

	return max + Min(max, PGSS_NG_BACKSTOP_MAX_EXTRA);
}

/*
 * evict_victim
 *		Evict one entry chosen by pgss_ng_kind_evict(), unless it was
 *		re-created since the scan (another generation) or a backend took a
 *		reference to it since.  Returns whether it was evicted.  Locks: its
 *		partition lock exclusively, then its entry lock.
 */
static bool
evict_victim(PgssNgKind *kind, const void *key, uint64 generation)
{
	void	   *he;
	PgssNgHashEntry *tail;
	dsa_pointer body;
	PgssNgBodyHeader *hdr;

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
	hdr = dsa_get_address(kind->area, body);

	/*
	 * Referenced since the scan: a backend is counting into it.  With the
	 * partition lock held exclusively no reference can be taken now, so
	 * this test is exact.
	 */
	if (pg_atomic_read_u32(&hdr->refcount) > 1)
	{
		dshash_release_lock(kind->hash, he);
		return false;
	}

	kind_mark_removed(hdr, PGSS_NG_REMOVED_BY_EVICTION);
	dshash_delete_entry(kind->hash, he);
	kind_forget_body(kind, body, hdr);
	return true;
}

/*
 * candidate_order
 *		Order of eviction candidates: lowest value first, and among equal
 *		values the older entry (lower generation) first.  Negative if a
 *		goes before b.
 */
static inline int
candidate_order(const EvictCandidate *a, const EvictCandidate *b)
{
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	/* older generation first: same value, created earlier */
	if (a->generation != b->generation)
		return a->generation < b->generation ? -1 : 1;
	return 0;
}

/*
 * candidate_cmp
 *		qsort comparator of the kept candidates (candidate_order).  Called
 *		only by the sort after the scan, with no partition lock held (the
 *		scan's heap has its own comparator, candidate_heap_cmp).
 */
static int
candidate_cmp(const void *a, const void *b)
{
	return candidate_order((const EvictCandidate *) a,
						   (const EvictCandidate *) b);
}

/*
 * candidate_heap_cmp
 *		binaryheap comparator of the scan's heap, whose nodes point to
 *		candidates: the most valuable candidate kept is the heap's first.
 */
static int
candidate_heap_cmp(Datum a, Datum b, void *arg)
{
	return candidate_order((const EvictCandidate *) DatumGetPointer(a),
						   (const EvictCandidate *) DatumGetPointer(b));
}

/*
 * What the victim scan of pgss_ng_kind_evict collects: the "keep" least
 * valuable unreferenced entries seen.  Candidate i is cands[i] and its key
 * is at keys + i * key_size (keyno = i); heap holds pointers to the used
 * candidates, the most valuable first (the first to be replaced by a less
 * valuable one).
 */
typedef struct EvictScan
{
	EvictCandidate *cands;		/* keep slots, ncand of them used */
	char	   *keys;			/* keep keys, key_size bytes each */
	binaryheap *heap;			/* the used slots */
	int			keep;			/* capacity */
	int			ncand;
	int			npinned;		/* entries skipped: referenced */
} EvictScan;

/*
 * scan_offer
 *		Offer candidate c, whose key is key, to the scan: kept while there
 *		is room, otherwise in place of the most valuable candidate kept if
 *		it is less valuable (and left out if not).
 */
static void
scan_offer(EvictScan *scan, const EvictCandidate *c, const void *key,
		   Size ksz)
{
	EvictCandidate *slot;

	if (scan->ncand < scan->keep)
	{
		slot = &scan->cands[scan->ncand];
		*slot = *c;
		slot->keyno = scan->ncand++;
		binaryheap_add(scan->heap, PointerGetDatum(slot));
	}
	else
	{
		slot = (EvictCandidate *)
			DatumGetPointer(binaryheap_first(scan->heap));
		if (candidate_order(c, slot) >= 0)
			return;
		*slot = *c;
		slot->keyno = slot - scan->cands;
		binaryheap_replace_first(scan->heap, PointerGetDatum(slot));
	}
	memcpy(scan->keys + ksz * slot->keyno, key, ksz);
}

/*
 * scan_candidates
 *		Keep (key, generation, decayed usage) of the keep least valuable
 *		entries nobody holds a reference to in scan (a bounded heap,
 *		PostgreSQL's binaryheap: one eviction wants a batch of a few
 *		percent of the entries, so a full sort of all of them is not
 *		needed), and count the referenced ones.  Holds each partition lock
 *		shared only while reading it and no entry lock (usage is read
 *		unlocked: a heuristic may read a value a flush is updating).
 *		Memory: CurrentMemoryContext.  Errors: out of memory.
 */
static void
scan_candidates(PgssNgKind *kind, EvictScan *scan, int keep)
{
	Size		ksz = kind->desc->key_size;
	dshash_seq_status status;
	void	   *he;
	TimestampTz now = GetCurrentTimestamp();

	/* never more than there can be entries */
	keep = Min(keep,
			   (int) pg_atomic_read_u32(&kind->ctl->entries_allocated) + 64);
	scan->keep = Max(keep, 1);
	scan->cands = palloc_extended(sizeof(EvictCandidate) * scan->keep,
								  MCXT_ALLOC_HUGE);
	scan->keys = palloc_extended(ksz * scan->keep, MCXT_ALLOC_HUGE);
	scan->heap = binaryheap_allocate(scan->keep, candidate_heap_cmp, NULL);
	scan->ncand = 0;
	scan->npinned = 0;

	dshash_seq_init(&status, kind->hash, false);
	while ((he = dshash_seq_next(&status)) != NULL)
	{
		PgssNgHashEntry *tail = HASH_TAIL(kind, he);
		PgssNgBodyHeader *hdr = dsa_get_address(kind->area, tail->body);
		EvictCandidate c;

		/* referenced: some backend is counting into it right now */
		if (pg_atomic_read_u32(&hdr->refcount) > 1)
		{
			scan->npinned++;
			continue;
		}

		c.value = kind_decayed_usage(hdr->usage, hdr->usage_time, now);
		c.generation = tail->generation;
		scan_offer(scan, &c, he, ksz);
	}
	dshash_seq_term(&status);
}

/*
 * needs_room
 *		Whether the kind says its own memory is short (needs_room_cb; false
 *		for a kind without one).
 */
static bool
needs_room(PgssNgKind *kind)
{
	return kind->desc->needs_room_cb != NULL &&
		kind->desc->needs_room_cb(kind);
}

/*
 * pgss_ng_kind_evict
 *		If live entries exceed max, evict the least valuable ones down to
 *		max minus PGSS_NG_EVICT_PERCENT percent.  Below max, if the kind
 *		says its own memory is short (needs_room_cb, e.g. a full text
 *		arena), evict the least valuable ones too, in the same order, until
 *		it no longer says so or PGSS_NG_EVICT_PERCENT percent of the live
 *		entries are gone (bounded work per call).
 *
 * Serialized by <name>_dealloc, taken without waiting: if another backend
 * is evicting, return at once (the backstop bounds what is allocated
 * meanwhile).  The scan (scan_candidates) holds one partition lock at a
 * time, shared, and keeps the least valuable entries, a quarter more
 * than wanted (a victim may be gone or in use by the time it is
 * removed; if more than that are, this round evicts fewer and a later
 * one the rest); their sort runs with no lock but <name>_dealloc;
 * victims are then removed one by one (evict_victim).  A run that
 * evicted entries counts one in dealloc, and each entry it evicted one in
 * entries_evicted.
 * Memory: a temporary context under CurrentMemoryContext, deleted before
 * returning.  Errors: out of memory (caller's guard releases the locks).
 */
void
pgss_ng_kind_evict(PgssNgKind *kind)
{
	PgssNgKindControl *ctl = kind->ctl;
	Size		ksz = kind->desc->key_size;
	int			max = kind_max(kind);
	int			batch;
	int			nwant;
	int			nevicted = 0;
	int			i;
	bool		for_room = false;
	EvictScan	scan;
	MemoryContext cxt;
	MemoryContext oldcxt;

	if (pg_atomic_read_u32(&ctl->entries_live) <= (uint32) max)
	{
		/* below max: evict only if the kind's own memory is short */
		if (!needs_room(kind))
			return;
		for_room = true;
	}
	if (!LWLockConditionalAcquire(kind->dealloc_lock, LW_EXCLUSIVE))
		return;

	batch = Max(1, (int) ((int64) max * PGSS_NG_EVICT_PERCENT / 100));
	if (for_room)
	{
		/* at most a batch of the live entries, until there is room */
		nwant = Max(1, (int) ((int64) pg_atomic_read_u32(&ctl->entries_live) *
							  PGSS_NG_EVICT_PERCENT / 100));
	}
	else
		nwant = (int) pg_atomic_read_u32(&ctl->entries_live) - (max - batch);
	if (nwant <= 0)
	{
		LWLockRelease(kind->dealloc_lock);
		return;
	}

	cxt = AllocSetContextCreate(CurrentMemoryContext, "kind eviction",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSetIdentifier(cxt, kind->desc->name);
	oldcxt = MemoryContextSwitchTo(cxt);

	/* a quarter more than wanted: some may be gone or in use by then */
	scan_candidates(kind, &scan, nwant + nwant / 4 + 16);
	qsort(scan.cands, scan.ncand, sizeof(EvictCandidate), candidate_cmp);

	/*
	 * Entries pinned by references cannot go: count them as kept, so that
	 * many pinned entries do not make us evict every unpinned one, however
	 * valuable.  Evict one batch, or more when the excess is not pinned
	 * (e.g. pgss_ng.max was just lowered).
	 */
	if (!for_room)
		nwant = Min(nwant,
					Max(batch, (int) pg_atomic_read_u32(&ctl->entries_live) -
						max - scan.npinned));

	for (i = 0; i < scan.ncand && nevicted < nwant; i++)
	{
		if (evict_victim(kind, scan.keys + ksz * scan.cands[i].keyno,
						 scan.cands[i].generation))
			nevicted++;
		/* evicting for room: stop as soon as there is enough */
		if (for_room && !needs_room(kind))
			break;
	}
	if (nevicted > 0)
	{
		pg_atomic_fetch_add_u64(&ctl->dealloc, 1);
		pg_atomic_fetch_add_u64(&ctl->entries_evicted, nevicted);
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	LWLockRelease(kind->dealloc_lock);
}

/*
 * pgss_ng_kind_usage
 *		The usage of the entry whose kind data is shared_data, decayed to
 *		now.  For pgss_ng_kind_foreach() visitors (entry lock held).
 */
double
pgss_ng_kind_usage(const void *shared_data)
{
	const PgssNgBodyHeader *hdr = (const PgssNgBodyHeader *)
		((const char *) shared_data - PGSS_NG_SHARED_DATA_OFFSET);

	return kind_decayed_usage(hdr->usage, hdr->usage_time,
						 GetCurrentTimestamp());
}
