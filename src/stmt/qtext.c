/*-------------------------------------------------------------------------
 *
 * qtext.c
 *	  The query text arena (qtext.h): each distinct text one DSA chunk
 *	  (QtextNode: XXH3 hash, chain link, refcount, length, bytes), found
 *	  through a dedup dshash; each entry's charge is reserved against
 *	  pgss_ng.query_text_memory before the dedup hash is looked at (privacy),
 *	  and a full arena makes eviction run.  docs/design.md, "Query-text
 *	  arena".  Locking: see qtext.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <xxhash.h>

#include "lib/dshash.h"
#include "mb/pg_wchar.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "kind/kind.h"
#include "pgver.h"
#include "qtext.h"

#define QTEXT_LOCK_NAME		"pgss_ng_qtext"

/* GUC pgss_ng.query_text_memory: the arena's cap, in kB */
static int	qtext_memory_kb = 16384;

typedef struct QtextNode
{
	uint64		hash;
	dsa_pointer next;			/* next node with the same hash */
	uint32		refcount;		/* entries using this text */
	uint32		len;			/* bytes, not counting the NUL */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} QtextNode;

#define QTEXT_NODE_SIZE(len)	(offsetof(QtextNode, data) + (len) + 1)

/*
 * Share of the cap kept free by eviction, and the largest text (node size)
 * ever stored: 1/QTEXT_SHARE of the cap (32 kB at the 256 kB minimum,
 * 2 MB at the default 16 MB).
 */
#define QTEXT_SHARE				8
#define QTEXT_RESERVE(limit)	((limit) / QTEXT_SHARE)

/* element of the dedup hash */
typedef struct QtextBucket
{
	uint64		hash;			/* key */
	dsa_pointer head;			/* first QtextNode */
} QtextBucket;

typedef struct QtextControl
{
	dshash_table_handle dedup_handle;	/* InvalidDsaPointer until made;
										 * set under pgss_ng_qtext */
	uint64		limit_bytes;	/* fixed at server start */
	pg_atomic_uint64 charged;	/* node size x users, summed: capped */
	pg_atomic_uint64 bytes;		/* node sizes of the distinct texts */
	pg_atomic_uint64 allocated; /* DSA bytes of their nodes and of the
								 * dedup hash's elements */
	pg_atomic_uint64 count;		/* distinct texts */
	pg_atomic_uint64 dropped;	/* texts not stored */
} QtextControl;

static QtextControl *qtext_ctl = NULL;
static LWLock *qtext_lock = NULL;

/* this backend's attachment to the dedup hash */
static dshash_table *dedup = NULL;

/*
 * qtext_hash_fn
 *		dedup hash function: the key already is a 64-bit XXH3 hash; fold it.
 */
static dshash_hash
qtext_hash_fn(const void *key, size_t size, void *arg)
{
	uint64		h = *(const uint64 *) key;

	return (dshash_hash) (h ^ (h >> 32));
}

/*
 * dedup_params
 *		The dedup dshash's parameters, identical in every process.
 */
static const dshash_parameters *
dedup_params(void)
{
	static dshash_parameters params;

	params.key_size = sizeof(uint64);
	params.entry_size = sizeof(QtextBucket);
	params.compare_function = dshash_memcmp;
	PGSS_NG_DSHASH_SET_COPY(&params);
	params.hash_function = qtext_hash_fn;
	params.tranche_id = qtext_lock->tranche;
	return &params;
}

/*
 * pgss_ng_qtext_init
 *		Define pgss_ng.query_text_memory, the arena's cap (kB, fixed at
 *		server start).  Called from _PG_init while preloading.
 */
void
pgss_ng_qtext_init(void)
{
	DefineCustomIntVariable("pgss_ng.query_text_memory",
							"Sets the shared memory available to the query "
							"texts of pgss_ng.",
							NULL,
							&qtext_memory_kb,
							16384,
							256,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/*
 * pgss_ng_qtext_shmem_request
 *		Request the pgss_ng_qtext named LWLock (shmem_request_hook).
 */
void
pgss_ng_qtext_shmem_request(void)
{
	RequestNamedLWLockTranche(QTEXT_LOCK_NAME, 1);
}

/*
 * pgss_ng_qtext_shmem_size
 *		Bytes of main shared memory for the arena's control block.
 */
Size
pgss_ng_qtext_shmem_size(void)
{
	return MAXALIGN(sizeof(QtextControl));
}

/*
 * pgss_ng_qtext_shmem_startup
 *		Create or find the arena's control block; pgss_ng.query_text_memory
 *		caps the arena.  Called with AddinShmemInitLock held.
 */
void
pgss_ng_qtext_shmem_startup(void)
{
	bool		found;

	qtext_ctl = ShmemInitStruct("pgss_ng query texts",
								sizeof(QtextControl), &found);
	qtext_lock = &GetNamedLWLockTranche(QTEXT_LOCK_NAME)->lock;
	dedup = NULL;
	if (!found)
	{
		qtext_ctl->dedup_handle = InvalidDsaPointer;
		qtext_ctl->limit_bytes = (uint64) qtext_memory_kb * 1024;
		pg_atomic_init_u64(&qtext_ctl->charged, 0);
		pg_atomic_init_u64(&qtext_ctl->bytes, 0);
		pg_atomic_init_u64(&qtext_ctl->allocated, 0);
		pg_atomic_init_u64(&qtext_ctl->count, 0);
		pg_atomic_init_u64(&qtext_ctl->dropped, 0);
	}
}

/*
 * attach_dedup
 *		Make sure this backend is attached to the dedup hash, creating it
 *		if no backend has yet.  Once per backend, under pgss_ng_qtext
 *		exclusively (the only use of that lock itself).  Memory: the
 *		dshash handle in TopMemoryContext.  Errors: dshash creation can
 *		fail with out of memory (the caller's guard releases the lock).
 */
static void
attach_dedup(dsa_area *area)
{
	MemoryContext oldcxt;

	if (dedup != NULL)
		return;

	LWLockAcquire(qtext_lock, LW_EXCLUSIVE);
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	if (qtext_ctl->dedup_handle == InvalidDsaPointer)
	{
		dedup = dshash_create(area, dedup_params(), NULL);
		qtext_ctl->dedup_handle = dshash_get_hash_table_handle(dedup);
	}
	else
		dedup = dshash_attach(area, dedup_params(),
							  qtext_ctl->dedup_handle, NULL);
	MemoryContextSwitchTo(oldcxt);
	LWLockRelease(qtext_lock);
}

/*
 * room_floor
 *		The charged bytes past which the arena needs room (eviction makes
 *		some: pgss_ng_qtext_needs_room): the cap minus QTEXT_RESERVE.
 */
static uint64
room_floor(void)
{
	uint64		limit = qtext_ctl->limit_bytes;

	return limit - QTEXT_RESERVE(limit);
}

/*
 * charge
 *		Reserve size charged bytes up to upto (the cap, or less), with a
 *		compare-and-exchange loop (exact without a lock).  False, with
 *		nothing reserved, if upto would be passed or size is over
 *		QTEXT_RESERVE.  No lock; no ERROR.
 */
static bool
charge(Size size, uint64 upto)
{
	uint64		cur = pg_atomic_read_u64(&qtext_ctl->charged);

	if ((uint64) size > QTEXT_RESERVE(qtext_ctl->limit_bytes))
		return false;
	do
	{
		if (cur + size > upto)
			return false;
	} while (!pg_atomic_compare_exchange_u64(&qtext_ctl->charged, &cur,
											 cur + size));
	return true;
}

/*
 * uncharge
 *		Give back size charged bytes.  No lock; no ERROR.
 */
static void
uncharge(Size size)
{
	pg_atomic_fetch_sub_u64(&qtext_ctl->charged, (int64) size);
}

/*
 * qtext_allocated_size
 *		The DSA bytes of a node of size bytes, and of its chain's dedup
 *		element if it is the only node of its chain.
 */
static Size
qtext_allocated_size(Size size, bool alone)
{
	Size		n = pgss_ng_dsa_allocated_size(size);

	if (alone)
		n += pgss_ng_dshash_allocated_size(sizeof(QtextBucket));
	return n;
}

/*
 * pgss_ng_qtext_store
 *		Store len bytes of text, or share the identical text stored; the
 *		charge is checked against the cap first, so the outcome never
 *		depends on other entries' texts.  Invalid when it does not fit, is
 *		over 1/QTEXT_SHARE of the cap, or shared memory ran out (counted in
 *		qtext_dropped); a restored text only up to room_floor().  Locks: its
 *		hash's dedup partition lock; an ERROR gives the charge back first.
 */
dsa_pointer
pgss_ng_qtext_store(dsa_area *area, const char *text, int len, bool restore)
{
	uint64		hash = XXH3_64bits(text, len);
	Size		size = QTEXT_NODE_SIZE(len);
	QtextBucket *bucket = NULL;
	bool		found;
	dsa_pointer p;
	QtextNode  *node;
	Size		allocated;

	/* the cap first, as if the text were new: see the file header */
	if (!charge(size, restore ? room_floor() : qtext_ctl->limit_bytes))
	{
		pg_atomic_fetch_add_u64(&qtext_ctl->dropped, 1);
		return InvalidDsaPointer;
	}

	PG_TRY();
	{
		attach_dedup(area);
		bucket = dshash_find_or_insert(dedup, &hash, &found);
	}
	PG_CATCH();
	{
		uncharge(size);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!found)
		bucket->head = InvalidDsaPointer;

	for (p = bucket->head; DsaPointerIsValid(p); p = node->next)
	{
		node = dsa_get_address(area, p);
		if (node->len == (uint32) len && memcmp(node->data, text, len) == 0)
		{
			node->refcount++;
			dshash_release_lock(dedup, bucket);
			return p;
		}
	}

	p = dsa_allocate_extended(area, size, DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(p))
	{
		if (!DsaPointerIsValid(bucket->head))
			dshash_delete_entry(dedup, bucket);
		else
			dshash_release_lock(dedup, bucket);
		uncharge(size);
		pg_atomic_fetch_add_u64(&qtext_ctl->dropped, 1);
		return InvalidDsaPointer;
	}

	node = dsa_get_address(area, p);
	node->hash = hash;
	node->next = bucket->head;
	node->refcount = 1;
	node->len = len;
	memcpy(node->data, text, len);
	node->data[len] = '\0';
	/* a chain's first node keeps its dedup element */
	allocated = qtext_allocated_size(size, !DsaPointerIsValid(bucket->head));
	bucket->head = p;
	dshash_release_lock(dedup, bucket);

	pg_atomic_fetch_add_u64(&qtext_ctl->bytes, size);
	pg_atomic_fetch_add_u64(&qtext_ctl->allocated, allocated);
	pg_atomic_fetch_add_u64(&qtext_ctl->count, 1);
	return p;
}

/*
 * pgss_ng_qtext_valid
 *		Whether len bytes read from outside (the stats file) may become a
 *		stored text: valid in the given encoding, with no NUL byte (which
 *		pg_verify_mbstr rejects in every encoding), as every text the
 *		server stores from a statement is.  The view's conversion
 *		(convert.c) relies on both; it shows any such text in any reader's
 *		encoding.  No lock, no allocation; never raises an ERROR.
 */
bool
pgss_ng_qtext_valid(const char *text, int len, int encoding)
{
	return PG_VALID_BE_ENCODING(encoding) &&
		pg_verify_mbstr(encoding, text, len, true);
}

/*
 * pgss_ng_qtext_data
 *		The bytes of a stored text (NUL-terminated, *len bytes before the
 *		NUL), in shared memory: valid, and unchanging, as long as the
 *		caller's entry holds its reference (see qtext.h).  No lock.
 */
const char *
pgss_ng_qtext_data(dsa_area *area, dsa_pointer text, int *len)
{
	QtextNode  *node = dsa_get_address(area, text);

	Assert(DsaPointerIsValid(text));
	*len = node->len;
	return node->data;
}

/*
 * pgss_ng_qtext_copy
 *		palloc a NUL-terminated copy of a stored text in CurrentMemoryContext
 *		and set *len to its length in bytes; NULL (and *len 0) if there is
 *		no text.  No lock (see qtext.h).
 */
char *
pgss_ng_qtext_copy(dsa_area *area, dsa_pointer text, int *len)
{
	const char *data;
	char	   *copy;

	*len = 0;
	if (!DsaPointerIsValid(text))
		return NULL;
	data = pgss_ng_qtext_data(area, text, len);
	copy = palloc(*len + 1);
	memcpy(copy, data, *len + 1);
	return copy;
}

/*
 * pgss_ng_qtext_release
 *		An entry stops using a text (and its charge); the last user
 *		frees it.  InvalidDsaPointer is accepted and ignored.  Locks: the
 *		partition lock of the text's hash in the dedup hash, exclusively;
 *		the node's memory is freed after it is released.
 */
void
pgss_ng_qtext_release(dsa_area *area, dsa_pointer text)
{
	QtextNode  *node;
	QtextBucket *bucket;
	dsa_pointer *link;
	Size		size;
	Size		allocated;

	if (!DsaPointerIsValid(text))
		return;

	node = dsa_get_address(area, text);
	size = QTEXT_NODE_SIZE(node->len);	/* hash and len never change */
	attach_dedup(area);
	bucket = dshash_find(dedup, &node->hash, true);
	if (bucket == NULL)
		elog(ERROR, "pgss_ng query text not found in its hash");
	Assert(node->refcount > 0);
	if (--node->refcount > 0)
	{
		dshash_release_lock(dedup, bucket);
		uncharge(size);
		return;
	}

	/* unlink the node from its chain */
	for (link = &bucket->head; *link != text;
		 link = &((QtextNode *) dsa_get_address(area, *link))->next)
		Assert(DsaPointerIsValid(*link));
	*link = node->next;

	allocated = qtext_allocated_size(size, !DsaPointerIsValid(bucket->head));
	if (!DsaPointerIsValid(bucket->head))
		dshash_delete_entry(dedup, bucket);
	else
		dshash_release_lock(dedup, bucket);

	dsa_free(area, text);
	pg_atomic_fetch_sub_u64(&qtext_ctl->bytes, (int64) size);
	pg_atomic_fetch_sub_u64(&qtext_ctl->allocated, allocated);
	pg_atomic_fetch_sub_u64(&qtext_ctl->count, 1);
	uncharge(size);
}

/*
 * pgss_ng_qtext_needs_room
 *		The kind's needs_room_cb: with starting, whether the charged bytes are
 *		past the cap minus QTEXT_RESERVE; without, whether still past the cap
 *		minus twice that, so an eviction for room frees about QTEXT_RESERVE at
 *		once.  One atomic read: a hint, checked again at every call; never
 *		raises an ERROR.
 */
bool
pgss_ng_qtext_needs_room(bool starting)
{
	uint64		mark = room_floor();	/* the high-water mark */

	if (!starting)				/* the low-water mark */
		mark -= QTEXT_RESERVE(qtext_ctl->limit_bytes);
	return pg_atomic_read_u64(&qtext_ctl->charged) > mark;
}

/*
 * pgss_ng_qtext_stats
 *		Copy the arena's counters (atomic reads, each exact, not a snapshot
 *		of all of them at one instant).
 */
void
pgss_ng_qtext_stats(PgssNgQtextStats *stats)
{
	stats->bytes = (int64) pg_atomic_read_u64(&qtext_ctl->bytes);
	stats->allocated_bytes = (int64) pg_atomic_read_u64(&qtext_ctl->allocated);
	stats->limit_bytes = (int64) qtext_ctl->limit_bytes;
	stats->count = (int64) pg_atomic_read_u64(&qtext_ctl->count);
	stats->dropped = (int64) pg_atomic_read_u64(&qtext_ctl->dropped);
}

/*
 * pgss_ng_qtext_reset_dropped
 *		Restart the qtext_dropped counter (full reset).
 */
void
pgss_ng_qtext_reset_dropped(void)
{
	pg_atomic_write_u64(&qtext_ctl->dropped, 0);
}
