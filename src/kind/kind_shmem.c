/*-------------------------------------------------------------------------
 *
 * kind_shmem.c
 *	  Set-up of a kind: its handle, named LWLocks, control block and DSA
 *	  area in main shared memory (in the postmaster, AddinShmemInitLock
 *	  held), and a backend's attach and detach (no lock of this layer).
 *	  Owns the control block's creation and tranche ids, a handle's area,
 *	  hash and pending hash.  No exit callback of its own: the kind's owner
 *	  flushes, then calls pgss_ng_kind_detach() (kind.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "pgver.h"
#include "kind_int.h"

/*
 * Bytes of the DSA area created in place in main shared memory.  The
 * dshash control block and its first bucket arrays must fit in it (the
 * postmaster may not create DSM segments); entries beyond it live in DSM
 * segments that backends add on demand.
 */
#define PGSS_NG_DSA_INIT_SIZE	(256 * 1024)

/*
 * DSM segments the area grows by (where the server lets it choose:
 * pgver.h): PGSS_NG_DSA_SEGMENT_MIN first, each pair after it twice the
 * pair before, up to the power of two at or below
 * PGSS_NG_DSA_SEGMENT_PER_ENTRY bytes per entry of max (at least the
 * minimum).  A segment is committed whole: DSA's unbounded doubling
 * commits up to half again what is used; these leave under 64 bytes per
 * entry unused.  Below 1 MB, DSA's 64 kB superblocks would waste more.
 */
#define PGSS_NG_DSA_SEGMENT_MIN			(1024 * 1024)
#define PGSS_NG_DSA_SEGMENT_PER_ENTRY	64

/*
 * pgss_ng_kind_define
 *		Make the backend-local handle of a kind described by desc (which
 *		must live as long as the process).  Called from _PG_init; the
 *		handle is inherited by every process forked from the postmaster.
 *		Memory: TopMemoryContext.
 */
PgssNgKind *
pgss_ng_kind_define(const PgssNgKindDesc *desc)
{
	PgssNgKind *kind = MemoryContextAllocZero(TopMemoryContext,
											  sizeof(PgssNgKind));

	kind->desc = desc;
	return kind;
}

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
	kind->hash_params.key_size = kind->desc->key_size;
	kind->hash_params.entry_size = MAXALIGN(kind->desc->key_size) +
		sizeof(PgssNgHashEntry);
	kind->hash_params.compare_function =
		kind->desc->compare_fn ? kind->desc->compare_fn : dshash_memcmp;
	PGSS_NG_DSHASH_SET_COPY(&kind->hash_params);
	kind->hash_params.hash_function =
		kind->desc->hash_fn ? kind->desc->hash_fn : hash_key;
	kind->hash_params.tranche_id = kind->ctl->hash_tranche;
}

/*
 * raw_dsa_place
 *		Address of the kind's in-place DSA area, after its control block.
 */
static void *
raw_dsa_place(PgssNgKind *kind)
{
	return ((char *) kind->ctl) + MAXALIGN(sizeof(PgssNgKindControl));
}

/*
 * lock_name
 *		"<kind name>_<what>", in TopMemoryContext (tranche names must live
 *		as long as the process).
 */
static char *
lock_name(const PgssNgKindDesc *desc, const char *what)
{
	return MemoryContextStrdup(TopMemoryContext,
							   psprintf("%s_%s", desc->name, what));
}

/*
 * pgss_ng_kind_shmem_request
 *		Request the kind's named LWLock (<name>_dealloc).
 *		Called from shmem_request_hook.
 */
void
pgss_ng_kind_shmem_request(const PgssNgKindDesc *desc)
{
	RequestNamedLWLockTranche(lock_name(desc, "dealloc"), 1);
}

/*
 * ghosts_offset
 *		Where the ghosts start, from the control block: after the in-place
 *		DSA area, on a cache line (so is the control block).
 */
static Size
ghosts_offset(void)
{
	return CACHELINEALIGN(MAXALIGN(sizeof(PgssNgKindControl)) +
						  PGSS_NG_DSA_INIT_SIZE);
}

/* Bytes of the control block, the area and sets ghost sets. */
static Size
kind_shmem_bytes(uint32 sets)
{
	return add_size(ghosts_offset(),
					mul_size(sets, sizeof(PgssNgGhostSet)));
}

/*
 * pgss_ng_kind_shmem_size
 *		Bytes of main shared memory one kind needs: its control block, the
 *		DSA area created in place and the ghosts, as many as max_entries at
 *		the first call says (kind_ghost_sets_for), which every later
 *		creation of the shared state uses too (a crash's reinitialization,
 *		after a reload changed max).
 */
Size
pgss_ng_kind_shmem_size(PgssNgKind *kind, int max_entries)
{
	if (kind->ghost_sets == 0)
		kind->ghost_sets = kind_ghost_sets_for(max_entries);
	return kind_shmem_bytes(kind->ghost_sets);
}

/*
 * largest_segment
 *		The largest DSM segment the area of a kind of max_entries grows by
 *		(see PGSS_NG_DSA_SEGMENT_PER_ENTRY).
 */
static size_t
largest_segment(int max_entries)
{
	size_t		want = (size_t) max_entries * PGSS_NG_DSA_SEGMENT_PER_ENTRY;
	size_t		seg = PGSS_NG_DSA_SEGMENT_MIN;

	/* up to 128 MB, the largest segment DSA allows on any platform */
	while (seg * 2 <= want && seg * 2 <= ((size_t) 1 << 27))
		seg *= 2;
	return seg;
}

/*
 * pgss_ng_kind_shmem_startup
 *		Create (first time) or find the kind's shared state, with
 *		max_entries as max until the owner publishes another.  In the
 *		postmaster (again after a crash), AddinShmemInitLock held: the DSA
 *		area is made in place and the dshash while the area is limited to
 *		that, so the postmaster never makes or maps a DSM segment.  The
 *		tranche names are registered here for every forked process.
 *		Memory: names in TopMemoryContext.  Errors: out of shared memory.
 */
void
pgss_ng_kind_shmem_startup(PgssNgKind *kind, const char *shmem_name,
						   int max_entries)
{
	bool		found;
	PgssNgKindControl *ctl;

	kind->area = NULL;
	kind->hash = NULL;
	kind->pending = NULL;
	dlist_init(&kind->pending_list);
	kind->npending = 0;

	ctl = ShmemInitStruct(shmem_name,
						  pgss_ng_kind_shmem_size(kind, max_entries), &found);
	kind->ctl = ctl;
	kind->ghosts = (PgssNgGhostSet *) (((char *) ctl) + ghosts_offset());
	kind->dealloc_lock =
		&GetNamedLWLockTranche(lock_name(kind->desc, "dealloc"))->lock;

	if (!found)
	{
		dsa_area   *dsa;
		dshash_table *dsh;

		ctl->dsa_tranche = LWLockNewTrancheId();
		ctl->hash_tranche = LWLockNewTrancheId();
		ctl->entry_tranche = LWLockNewTrancheId();
		pg_atomic_init_u32(&ctl->entries_live, 0);
		pg_atomic_init_u32(&ctl->entries_allocated, 0);
		pg_atomic_init_u32(&ctl->nattached, 0);
		pg_atomic_init_u64(&ctl->next_generation, 1);
		pg_atomic_init_u64(&ctl->dealloc, 0);
		pg_atomic_init_u64(&ctl->entries_evicted, 0);
		pg_atomic_init_u64(&ctl->backstop_skips, 0);
		pg_atomic_init_u64(&ctl->full_resets, 0);
		pg_atomic_init_u32(&ctl->max_entries, (uint32) max_entries);
		pg_atomic_init_u64(&ctl->eviction_ns, 0);
		pg_atomic_init_u64(&ctl->last_eviction, 0);
		dsa_pointer_atomic_init(&ctl->evict_new, InvalidDsaPointer);
		ctl->evict_front = InvalidDsaPointer;
		ctl->evict_back = InvalidDsaPointer;
		pgss_ng_errlimit_init(&ctl->errlimit);
		ctl->ghost_sets = kind->ghost_sets;
		for (uint32 i = 0; i < ctl->ghost_sets; i++)
			for (int w = 0; w < PGSS_NG_GHOST_WAYS; w++)
			{
				pg_atomic_init_u64(&kind->ghosts[i].tag[w], 0);
				pg_atomic_init_u64(&kind->ghosts[i].value[w], 0);
			}

		dsa = pgss_ng_dsa_create_in_place(raw_dsa_place(kind),
										  PGSS_NG_DSA_INIT_SIZE,
										  ctl->dsa_tranche,
										  PGSS_NG_DSA_SEGMENT_MIN,
										  largest_segment(max_entries));
		dsa_pin(dsa);
		dsa_set_size_limit(dsa, PGSS_NG_DSA_INIT_SIZE);
		init_hash_params(kind);
		dsh = dshash_create(dsa, &kind->hash_params, NULL);
		ctl->hash_handle = dshash_get_hash_table_handle(dsh);
		dsa_set_size_limit(dsa, -1);
		dshash_detach(dsh);
		dsa_detach(dsa);
	}

	LWLockRegisterTranche(ctl->dsa_tranche, lock_name(kind->desc, "dsa"));
	LWLockRegisterTranche(ctl->hash_tranche, lock_name(kind->desc, "hash"));
	LWLockRegisterTranche(ctl->entry_tranche,
						  lock_name(kind->desc, "entry"));
}

/*
 * pgss_ng_kind_attach
 *		Attach this backend to the kind's area and hash, once.
 *
 * Returns false when there is nothing to attach to (library not preloaded)
 * or the backend has detached (pgss_ng_kind_detach, at exit).
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
	if (kind->ctl == NULL || kind->detaching ||
		(IsPostmasterEnvironment && !IsUnderPostmaster))
		return false;

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);

	init_hash_params(kind);
	kind->area = dsa_attach_in_place(raw_dsa_place(kind), NULL);
	dsa_pin_mapping(kind->area);
	kind->hash = dshash_attach(kind->area, &kind->hash_params,
							   kind->ctl->hash_handle, NULL);

	ctl.keysize = kind->desc->key_size;
	ctl.entrysize = MAXALIGN(kind->desc->key_size) +
		MAXALIGN(sizeof(PgssNgEntryRef)) + kind->desc->pending_size;
	ctl.hcxt = TopMemoryContext;
	kind->pending = hash_create(psprintf("%s pending", kind->desc->name),
								64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	dlist_init(&kind->pending_list);
	kind->npending = 0;
	pg_atomic_fetch_add_u32(&kind->ctl->nattached, 1);

	MemoryContextSwitchTo(oldcxt);
	return true;
}

/*
 * pgss_ng_kind_detach
 *		Detach this backend from the kind's area and hash, for good (a
 *		later pgss_ng_kind_attach() returns false).  Called by the kind's
 *		owner from its exit callback, after its last flush
 *		(pgss_ng_kind_flush with force): pending data still held then is
 *		lost, with the references it holds.  Nothing to do if never
 *		attached.  No lock of this layer.
 */
void
pgss_ng_kind_detach(PgssNgKind *kind)
{
	kind->detaching = true;
	if (kind->area == NULL)
		return;

	pg_atomic_fetch_sub_u32(&kind->ctl->nattached, 1);
	dshash_detach(kind->hash);
	kind->hash = NULL;
	dsa_release_in_place(raw_dsa_place(kind));
	dsa_detach(kind->area);
	kind->area = NULL;
}

/*
 * pgss_ng_kind_area
 *		The kind's DSA area in this backend (NULL until attached), for the
 *		kind's own shared allocations (e.g. query texts).
 */
dsa_area *
pgss_ng_kind_area(PgssNgKind *kind)
{
	return kind->area;
}

/* PGSS_NG_BODY_SIZE_64 (kind.h) follows the body's layout */
#if SIZEOF_VOID_P == 8 && MAXIMUM_ALIGNOF == 8
StaticAssertDecl(PGSS_NG_SHARED_DATA_OFFSET == 48 &&
				 PGSS_NG_NODE_KEY_OFFSET == 16,
				 "a body's header or eviction node changed size: update PGSS_NG_BODY_SIZE_64");
#endif

/*
 * DSA's size classes up to its largest (the bytes an allocation of up to
 * that size takes in a superblock of its class); larger allocations take
 * whole pages.  The same on PostgreSQL 15 to 18.
 */
static const uint16 dsa_classes[] = {
	8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256,
	320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1560, 1816, 2048,
	2616, 3120, 3640, 4096, 5456, 6552, 7280, 8192
};
#define DSA_PAGE_BYTES	4096

/*
 * pgss_ng_dsa_allocated_size
 *		The bytes a DSA allocation of size bytes takes: its size class, or
 *		whole pages past the largest one.  For counting what shared memory
 *		holds (pgss_ng_info), not for allocating.
 */
Size
pgss_ng_dsa_allocated_size(Size size)
{
	int			lo = 0;
	int			hi = lengthof(dsa_classes);

	if (size > dsa_classes[hi - 1])
		return TYPEALIGN(DSA_PAGE_BYTES, size);
	/* the first class >= size */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (dsa_classes[mid] < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	return dsa_classes[lo];
}

/*
 * pgss_ng_dshash_allocated_size
 *		The bytes a dshash element of entry_size bytes (its key and data)
 *		takes in DSA: its own allocation, after a header holding the next
 *		element of its bucket and the key's hash.
 */
Size
pgss_ng_dshash_allocated_size(Size entry_size)
{
	return pgss_ng_dsa_allocated_size(MAXALIGN(sizeof(dsa_pointer) +
											   sizeof(dshash_hash)) +
									  entry_size);
}
