/*-------------------------------------------------------------------------
 *
 * kind_int.h
 *	  Internals of the kind layer, seen by its files only: the shared
 *	  structures (a body's chunk is [PgssNgBodyHeader] [kind data]
 *	  [PgssNgEvictNode] [key], a dshash element [key] [PgssNgHashEntry], a
 *	  pending entry [key] [PgssNgEntryRef] [pending data]), a kind's
 *	  backend-local handle, and what one file calls in another (grouped by
 *	  file below).  docs/design.md, "Layers" and "Shared structures".
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_KIND_INT_H
#define PGSS_NG_KIND_INT_H

#include "port/atomics.h"

#include "errlimit.h"
#include "kind.h"

/* Pending data older than this is flushed with a waiting lock (ms). */
#define PGSS_NG_PENDING_MAX_AGE_MS	1000

/* Usage (the eviction value) halves every this many ms without use. */
#define PGSS_NG_USAGE_HALF_LIFE_MS	60000

/*
 * Uses flushed within this many microseconds of an entry's last usage
 * decay are added without one: they then decay from that moment, at most
 * 1 - 2^(-10 ms / 60 s) = 0.012% more than they should.
 */
#define PGSS_NG_USAGE_DECAY_STEP_US	10000

/* Eviction frees this percentage of max at once. */
#define PGSS_NG_EVICT_PERCENT		5

/*
 * An eviction run examines at most Max(PGSS_NG_EVICT_VISIT_MIN,
 * PGSS_NG_EVICT_VISIT_FACTOR * entries it wants to evict) entries of the
 * eviction queue (kind_evict.c).
 */
#define PGSS_NG_EVICT_VISIT_MIN		256
#define PGSS_NG_EVICT_VISIT_FACTOR	3

/*
 * Allocated entries (live + removed, not yet freed) never exceed
 * max + Min(max, PGSS_NG_BACKSTOP_MAX_EXTRA).
 */
#define PGSS_NG_BACKSTOP_MAX_EXTRA	20000

/*
 * The ghosts (kind_ghost.c): what eviction remembers of each victim, the
 * 64-bit hash of its key and its value, so that the key's next entry
 * starts from that value.  A set of PGSS_NG_GHOST_WAYS ghosts (one cache
 * line) per group of key hashes; at least 2 x max ghosts at start
 * (Max(16, the power of two at or above max / 2) sets, at most
 * PGSS_NG_GHOST_SETS_MAX).
 */
#define PGSS_NG_GHOST_WAYS		4
#define PGSS_NG_GHOST_SETS_MAX	(1 << 20)

typedef struct PgssNgGhostSet
{
	pg_atomic_uint64 tag[PGSS_NG_GHOST_WAYS];	/* hash of the key, 0: none */
	pg_atomic_uint64 value[PGSS_NG_GHOST_WAYS]; /* usage as a float, and the
												 * second it was taken at */
} PgssNgGhostSet;

/* Whether, and why, an entry was removed from the hash. */
typedef enum PgssNgRemoval
{
	PGSS_NG_REMOVAL_NONE = 0,	/* in the hash */
	PGSS_NG_REMOVAL_RESET,		/* removed by a reset */
	PGSS_NG_REMOVAL_EVICTION	/* removed by eviction */
} PgssNgRemoval;

/*
 * Body of a shared entry.  The kind's data follows at
 * PGSS_NG_SHARED_DATA_OFFSET.
 */
typedef struct PgssNgBodyHeader
{
	LWLock		lock;			/* protects everything below but refcount */
	uint8		removed;		/* PgssNgRemoval; not live: awaiting free */
	pg_atomic_uint32 refcount;	/* 1 for the hash + 1 per entry ref */
	uint64		generation;		/* distinguishes incarnations of one key */
	double		usage;			/* eviction value at usage_time */
	TimestampTz usage_time;		/* when usage was last brought up to date */
} PgssNgBodyHeader;

#define PGSS_NG_SHARED_DATA_OFFSET	MAXALIGN(sizeof(PgssNgBodyHeader))
#define PgssNgSharedData(ent) \
	((void *) (((char *) (ent)) + PGSS_NG_SHARED_DATA_OFFSET))

/* Tail of a dshash element, after the key. */
typedef struct PgssNgHashEntry
{
	dsa_pointer body;			/* PgssNgBodyHeader + kind data */
} PgssNgHashEntry;

/*
 * A live entry's place in the eviction queue (kind_evict.c): at the end of
 * its body's chunk (KIND_NODE_OFFSET), made with the body, unused once
 * the entry leaves the hash and freed with the body.  Its key follows at
 * PGSS_NG_NODE_KEY_OFFSET.  The creator fills it and
 * pushes it on the stack of new nodes (next only); from then on only the
 * holder of <name>_dealloc reads or writes it.
 */
typedef struct PgssNgEvictNode
{
	dsa_pointer prev;			/* towards the queue's front */
	dsa_pointer next;			/* towards its back; on the stack: older */
} PgssNgEvictNode;

#define PGSS_NG_NODE_KEY_OFFSET		MAXALIGN(sizeof(PgssNgEvictNode))
#define PgssNgNodeKey(node) \
	((void *) (((char *) (node)) + PGSS_NG_NODE_KEY_OFFSET))

/* Kind-wide shared state, in main shared memory. */
typedef struct PgssNgKindControl
{
	dshash_table_handle hash_handle;
	int			dsa_tranche;
	int			hash_tranche;
	int			entry_tranche;
	pg_atomic_uint32 entries_live;	/* entries in the hash */
	pg_atomic_uint32 entries_allocated; /* bodies, incl. removed ones */
	pg_atomic_uint32 nattached;	/* backends attached (their share of the
								 * backstop's headroom for references:
								 * pgss_ng_kind_pending_limit) */
	pg_atomic_uint64 next_generation;
	pg_atomic_uint64 dealloc;	/* eviction runs that evicted entries */
	pg_atomic_uint64 entries_evicted;	/* entries those runs evicted */
	pg_atomic_uint64 backstop_skips;	/* creations refused at the backstop */
	pg_atomic_uint64 full_resets;	/* removals of every entry so far
									 * (pgss_ng_kind_remove_matching with no
									 * match), for restores */
	pg_atomic_uint32 max_entries;	/* max: eviction keeps live entries at
									 * or below it, the backstop is made of
									 * it; one value for every process,
									 * published by the kind's owner
									 * (pgss_ng_kind_set_max_entries) */
	pg_atomic_uint64 eviction_ns;	/* time spent in eviction runs */
	pg_atomic_uint64 last_eviction; /* TimestampTz: end of the last run
									 * that evicted, 0: none */
	dsa_pointer_atomic evict_new;	/* stack of the nodes of entries
									 * published since the last run, newest
									 * first (kind_evict.c) */
	dsa_pointer evict_front;	/* the eviction queue: both ends, and its */
	dsa_pointer evict_back;		/* nodes, under <name>_dealloc */
	PgssNgErrLimit errlimit;	/* log rate limit and allocation back-off
								 * (kind_guard.c, kind_create.c) */
	uint32		ghost_sets;		/* sets of ghosts (a power of two) */
	/* the in-place DSA area follows, MAXALIGN'd, then the ghosts */
} PgssNgKindControl;

/* Backend-local handle of one kind (pgss_ng_kind_define). */
struct PgssNgKind
{
	const PgssNgKindDesc *desc;
	PgssNgKindControl *ctl;	/* NULL until shmem startup */
	dsa_area   *area;			/* NULL until attached */
	dshash_table *hash;
	dshash_parameters hash_params;
	LWLock	   *dealloc_lock;	/* named tranche <name>_dealloc */
	HTAB	   *pending;		/* key -> [PgssNgEntryRef, pending data] */
	dlist_head	pending_list;	/* the pending entries' refs, oldest first */
	int			npending;
	bool		detaching;		/* at exit, after the last flush */
	PgssNgGhostSet *ghosts;		/* in main shared memory, after the area */
	uint32		ghost_sets;		/* as sized at the first shmem request */
};

#define HASH_TAIL(kind, he) \
	((PgssNgHashEntry *) (((char *) (he)) + MAXALIGN((kind)->desc->key_size)))
#define PENDING_REF(kind, pe) \
	((PgssNgEntryRef *) (((char *) (pe)) + \
						 MAXALIGN((kind)->desc->key_size)))
#define PENDING_DATA(kind, pe) \
	((void *) (((char *) PENDING_REF(kind, pe)) + \
			   MAXALIGN(sizeof(PgssNgEntryRef))))

/*
 * A body's chunk is [PgssNgBodyHeader] [kind data] [PgssNgEvictNode] [key]:
 * where its node starts, the chunk's size, and the body a node's pointer
 * belongs to (a node's body is derived, never stored).  One allocation per
 * entry (and one free), not two.
 */
#define KIND_NODE_OFFSET(kind) \
	(PGSS_NG_SHARED_DATA_OFFSET + MAXALIGN((kind)->desc->shared_size))
#define KIND_CHUNK_SIZE(kind) \
	(KIND_NODE_OFFSET(kind) + PGSS_NG_NODE_KEY_OFFSET + (kind)->desc->key_size)
#define KIND_NODE_BODY(kind, np)	((np) - KIND_NODE_OFFSET(kind))

/* kind_create.c */
extern PgssNgCreateResult kind_lookup_or_create(PgssNgKind *kind,
												const void *key,
												PgssNgInitSharedFn init,
												void *arg, bool want_ref,
												double usage,
												dsa_pointer *body_out,
												PgssNgBodyHeader **hdr_out);

/* kind_free.c: removal mark, references released, the refcounted free */
extern void kind_free_body(PgssNgKind *kind, dsa_pointer body,
						   PgssNgBodyHeader *hdr);
extern void kind_release_ref(PgssNgKind *kind, dsa_pointer body,
							 PgssNgBodyHeader *hdr);
extern void kind_mark_removed(PgssNgBodyHeader *hdr,
							  PgssNgRemoval reason);
extern void kind_forget_body(PgssNgKind *kind, dsa_pointer body,
							 PgssNgBodyHeader *hdr);

/* kind_evict.c: usage, the eviction queue, eviction and the backstop */
extern double kind_decayed_usage(double usage, TimestampTz t,
								 TimestampTz now);
extern int	kind_backstop(PgssNgKind *kind);
extern void kind_push_new(PgssNgKind *kind, dsa_pointer np,
						  PgssNgEvictNode *node);
extern void kind_take_new(PgssNgKind *kind);
extern bool kind_remove_node(PgssNgKind *kind, dsa_pointer np,
							 PgssNgRemoval reason);

/* kind_ghost.c: the ghosts */
extern uint32 kind_ghost_sets_for(int max_entries);
extern uint64 kind_ghost_hash(PgssNgKind *kind, const void *key);
extern void kind_ghost_remember(PgssNgKind *kind, uint64 h, double value,
								TimestampTz now);
extern double kind_ghost_usage(PgssNgKind *kind, const void *key,
							   TimestampTz now);
extern void kind_ghosts_forget(PgssNgKind *kind);

/*
 * kind_max
 *		max, as every process reads it: the shared value the kind's owner
 *		published (PgssNgKindControl.max_entries), never a process's own
 *		copy of a setting.  The one place the layer reads max from.
 */
static inline int
kind_max(PgssNgKind *kind)
{
	return (int) pg_atomic_read_u32(&kind->ctl->max_entries);
}

/* kind_guard.c */
extern void kind_release_locks_or_rethrow(void);

#endif							/* PGSS_NG_KIND_INT_H */
