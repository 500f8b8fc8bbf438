/*-------------------------------------------------------------------------
 *
 * kind.h
 *	  A small cumulative statistics kind layer, the same on PostgreSQL 15
 *	  to 18 and shaped like core's PgStat_KindInfo: a kind's shared entries
 *	  in its own dshash, backends' pending entries flushed into them without
 *	  waiting where possible; nothing of statements.  docs/design.md: "One
 *	  kind layer on every version", "Locking rules" (in short: partition
 *	  lock, then entry lock; references only under the partition lock).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_KIND_H
#define PGSS_NG_KIND_H

#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "lib/dshash.h"
#include "lib/ilist.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/resowner.h"

/* Backend-local handle of a kind; its fields are the layer's own. */
typedef struct PgssNgKind PgssNgKind;

/*
 * A backend's reference to one shared entry, with its pending data: what
 * pgss_ng_kind_get_pending() returns and a flush callback receives (core's
 * PgStat_EntryRef).  Valid until the pending data is flushed; the fields
 * after pending_since are the layer's own.  pgss_ng_kind_lock_key() fills
 * one on its caller's stack, for an entry it locked without pending data.
 */
typedef struct PgssNgEntryRef
{
	PgssNgKind *kind;
	const void *key;			/* the entry's key (key_size bytes) */
	void	   *shared_data;	/* kind data of the shared entry: read or
								 * write it only under the entry lock */
	void	   *pending;		/* this backend's pending data */
	TimestampTz pending_since;	/* when the pending data was begun */
	/* private to the layer */
	dsa_pointer body;
	struct PgssNgBodyHeader *hdr;
	bool		pinned;			/* holds a reference (always, but for
								 * pgss_ng_kind_lock_key of an entry found) */
	bool		created;		/* pgss_ng_kind_lock_key made the entry */
	uint8		removed;		/* set by pgss_ng_kind_lock_entry */
	TimestampTz flush_time;		/* the flush's time, read under the entry
								 * lock: the usage decay, the kind's stamp */
	uint32		hash;			/* the key's hash in the pending hash */
	dlist_node	node;			/* in the kind's pending_list */
} PgssNgEntryRef;

/* result of pgss_ng_kind_lock_key */
typedef enum PgssNgLockKey
{
	PGSS_NG_LOCK_KEY_LOCKED,	/* the entry lock is held */
	PGSS_NG_LOCK_KEY_BUSY,		/* busy: a reference is held instead */
	PGSS_NG_LOCK_KEY_FAILED		/* no entry could be made */
} PgssNgLockKey;

/*
 * The bytes of a body's chunk on 64-bit builds, for kind data of
 * shared_size bytes and a key of key_size: its header (48 bytes) before
 * the data, its eviction node (16) between the data and the key
 * (kind_shmem.c checks them).  For a kind to check at build time that its
 * bodies fit a DSA size class.
 */
#define PGSS_NG_BODY_SIZE_64(shared_size, key_size) \
	(48 + MAXALIGN(shared_size) + 16 + (key_size))

/*
 * Kind description, the equivalent of PgStat_KindInfo.  All callbacks are
 * called from backends attached to the kind's area; none may raise an
 * ERROR while the layer holds a lock (they run under LWLocks).
 */
typedef struct PgssNgKindDesc
{
	const char *name;			/* tranche names, memory contexts and
								 * messages ("<name> could not ...") */
	Size		key_size;		/* bytes; compared with memcmp, so callers
								 * must zero padding */
	Size		shared_size;	/* bytes of kind data in a shared entry */
	Size		shared_zeroed;	/* of which the first shared_zeroed bytes
								 * are zeroed in a new shared entry before
								 * init_cb (0: all); the kind makes the
								 * rest valid itself before reading it */
	Size		pending_size;	/* bytes of kind data in a pending entry */
	Size		pending_zeroed; /* of which the first pending_zeroed bytes
								 * are zeroed in a new pending entry (0:
								 * all); the kind makes the rest valid
								 * itself before reading it */
	int			max_pending;	/* flush early past this many pending */

	/*
	 * Optional: the hash of a key and its comparison (dshash's signatures;
	 * 0 from compare_fn when equal), for the shared and the pending hash:
	 * cheaper ones than the default (XXH3 and memcmp of the key's bytes)
	 * for a kind whose key holds a hash already.  The same in every
	 * process.
	 */
	dshash_hash_function hash_fn;
	dshash_compare_function compare_fn;

	/*
	 * Merge ref->pending into ref->shared_data.  Lock the entry with
	 * pgss_ng_kind_lock_entry(ref, nowait) first; if that returns false
	 * (busy with nowait, or the entry was removed), return false at once.
	 * Otherwise merge, then release with pgss_ng_kind_unlock_entry(ref,
	 * uses), uses being the number of uses the pending data represents
	 * (added to the entry's usage, its value for eviction), and return
	 * true.  No lock of this layer is held when it is called.
	 */
	bool		(*flush_pending_cb) (PgssNgEntryRef *ref, bool nowait);

	/*
	 * Pending data whose entry was evicted before the flush cannot be
	 * merged; this callback keeps its count with what the kind keeps of
	 * evicted entries (the statement kind: the evicted remainder).  No
	 * lock of this layer is held.
	 */
	void		(*discard_pending_cb) (PgssNgEntryRef *ref);

	/*
	 * Release what the kind data owns (e.g. a query text) when the body is
	 * freed.  Called by whoever releases the last reference: a flush (no
	 * lock held), a creation that lost the race for its key (no lock of
	 * this layer but possibly <name>_dealloc shared for a restore), or a
	 * reset or eviction (<name>_dealloc held); nobody else can see the
	 * body any more.  It may only take locks that come after those
	 * (innermost).
	 */
	void		(*free_cb) (PgssNgKind *kind, void *shared_data);

	/*
	 * Optional: an entry was evicted (not reset).  Called once per victim
	 * by the eviction run, with <name>_dealloc held and no other lock of
	 * this layer, after the entry left the hash and before free_cb: nobody
	 * else can see the entry any more, and no backend held a reference to
	 * it (eviction leaves those), so its kind data is final.  O(1); it may
	 * only take locks that come after those (innermost) and must not raise
	 * an ERROR.
	 */
	void		(*evicted_cb) (PgssNgKind *kind, const void *key,
							   const void *shared_data);

	/*
	 * Optional: whether memory the kind data owns (e.g. a query text
	 * arena) is short, so that eviction should run even with live entries
	 * at or below max (pgss_ng_kind_run_eviction).  With starting, whether
	 * it is past its high-water mark (start evicting); without, whether it
	 * is still past its low-water mark (go on evicting): the gap between
	 * the two makes evictions for room come in batches.  Called often, with no
	 * lock of this layer or with <name>_dealloc held; must be cheap and
	 * must not raise an ERROR.
	 */
	bool		(*needs_room_cb) (PgssNgKind *kind, bool starting);
} PgssNgKindDesc;

/*
 * Fills the kind data of a shared entry being created (e.g. stores its
 * query text).  Called before the entry becomes visible, with no lock of
 * this layer held but possibly <name>_dealloc shared (a restore); it
 * should not raise an ERROR, but if it does the body is given back
 * (create_body).  Returns false if something could not be stored (the
 * entry is created all the same).
 */
typedef bool (*PgssNgInitSharedFn) (PgssNgKind *kind, void *shared_data,
									void *arg);

/* result of pgss_ng_kind_create */
typedef enum PgssNgCreateResult
{
	PGSS_NG_CREATE_EXISTS,		/* somebody else created it first */
	PGSS_NG_CREATE_NEW,
	PGSS_NG_CREATE_FULL,		/* the backstop was reached */
	PGSS_NG_CREATE_OUT_OF_MEMORY	/* shared memory could not be allocated */
} PgssNgCreateResult;

/*
 * Error containment for code running inside a user's statement
 * (kind_guard.c).  Every guarded call follows one pattern: the caller puts
 * what the guarded code needs, and what it returns, in one struct (built
 * with designated initializers; for pgss_ng_stmt_count_call it is the PgssNgCall it
 * was given) and passes it to a static <name>_guarded(void *arg) that does
 * the work and writes its results back into the struct.
 */
typedef void (*PgssNgGuardedFn) (void *arg);

extern bool pgss_ng_kind_guard(PgssNgKind *kind, const char *what,
							   PgssNgGuardedFn fn, void *arg);

/* the guard's state (kind_guard.c): guarded calls in progress, and the
 * InterruptHoldoffCount seen when the outermost one began */
extern int	pgss_ng_guard_depth;
extern uint32 pgss_ng_guard_holdoff;
extern void pgss_ng_kind_guard_caught(PgssNgKind *kind, MemoryContext oldcxt,
									  ResourceOwner oldowner,
									  const char *what);

/*
 * PGSS_NG_GUARD_BEGIN(kind) ... PGSS_NG_GUARD_END(kind, what, failed)
 *		pgss_ng_kind_guard() written around a block of code instead of a
 *		function, for the hot path, where the call through a function
 *		pointer with its argument struct costs as much again as the guard
 *		(GCC does not inline a function that calls setjmp).  The block
 *		must not leave by return, break or goto; after an ERROR, logged
 *		and swallowed, the statement failed runs.  What the block sets and
 *		the code after it reads must be volatile, as in any PG_TRY.
 */
#define PGSS_NG_GUARD_BEGIN(kind) \
	do { \
		MemoryContext pgss_ng_guard_cxt_ = CurrentMemoryContext; \
		ResourceOwner pgss_ng_guard_owner_ = CurrentResourceOwner; \
		\
		if (pgss_ng_guard_depth++ == 0) \
			pgss_ng_guard_holdoff = InterruptHoldoffCount; \
		CurrentResourceOwner = NULL; \
		PG_TRY(); \
		{

#define PGSS_NG_GUARD_END(kind, what, failed) \
			CurrentResourceOwner = pgss_ng_guard_owner_; \
			pgss_ng_guard_depth--; \
		} \
		PG_CATCH(); \
		{ \
			pgss_ng_kind_guard_caught((kind), pgss_ng_guard_cxt_, \
									  pgss_ng_guard_owner_, (what)); \
			failed; \
		} \
		PG_END_TRY(); \
	} while (0)

/* set-up, in the postmaster (kind_shmem.c) */
extern PgssNgKind *pgss_ng_kind_define(const PgssNgKindDesc *desc);
extern void pgss_ng_kind_shmem_request(const PgssNgKindDesc *desc);
extern Size pgss_ng_kind_shmem_size(PgssNgKind *kind, int max_entries);
extern void pgss_ng_kind_shmem_startup(PgssNgKind *kind,
									   const char *shmem_name,
									   int max_entries);

/*
 * backends.  The layer registers no exit callback: the kind's owner
 * registers one that flushes (pgss_ng_kind_flush with force) and then
 * calls pgss_ng_kind_detach(), so that the kind's own exit work (e.g. the
 * statement kind's failure notes) comes first, in one written order.
 */
extern bool pgss_ng_kind_attach(PgssNgKind *kind);
extern void pgss_ng_kind_detach(PgssNgKind *kind);
extern dsa_area *pgss_ng_kind_area(PgssNgKind *kind);
extern Size pgss_ng_dsa_allocated_size(Size size);
extern Size pgss_ng_dshash_allocated_size(Size entry_size);
extern bool pgss_ng_kind_has_pending(PgssNgKind *kind);
extern bool pgss_ng_kind_exists(PgssNgKind *kind, const void *key);
extern PgssNgCreateResult pgss_ng_kind_create(PgssNgKind *kind,
											  const void *key,
											  PgssNgInitSharedFn init,
											  void *arg);
extern PgssNgEntryRef *pgss_ng_kind_get_pending(PgssNgKind *kind,
												 const void *key,
												 PgssNgInitSharedFn init,
												 void *arg);
extern void *pgss_ng_kind_find_pending(PgssNgKind *kind, const void *key);
extern int	pgss_ng_kind_pending_limit(PgssNgKind *kind);
extern PgssNgLockKey pgss_ng_kind_lock_key(PgssNgKind *kind, const void *key,
										   PgssNgInitSharedFn init, void *arg,
										   PgssNgEntryRef *ref);
extern void pgss_ng_kind_unlock_key(PgssNgEntryRef *ref, double uses);
extern PgssNgEntryRef *pgss_ng_kind_keep_pending(PgssNgEntryRef *ref);
extern bool pgss_ng_kind_flush(PgssNgKind *kind, bool force);
extern bool pgss_ng_kind_lock_entry(PgssNgEntryRef *ref, bool nowait);
extern void pgss_ng_kind_unlock_entry(PgssNgEntryRef *ref, double uses);

/*
 * readers and maintenance.  A visitor copies what it needs of an entry
 * under its entry lock (held shared) and returns whether there is
 * something to emit (pgss_ng_kind_foreach) or to return
 * (pgss_ng_kind_read).
 */
typedef bool (*PgssNgVisitFn) (PgssNgKind *kind, const void *key,
							   const void *shared_data, void *arg);
typedef void (*PgssNgEmitFn) (void *arg);
typedef bool (*PgssNgMatchFn) (const void *key, void *arg);
typedef void (*PgssNgUpdateFn) (void *shared_data, void *arg);
typedef void (*PgssNgLockedFn) (void *arg);

extern void pgss_ng_kind_foreach(PgssNgKind *kind, PgssNgVisitFn visit,
								 PgssNgEmitFn emit, void *arg);
extern uint64 pgss_ng_kind_remove_matching(PgssNgKind *kind,
										   PgssNgMatchFn match, void *arg,
										   PgssNgLockedFn locked);
extern uint64 pgss_ng_kind_update_matching(PgssNgKind *kind,
										   PgssNgMatchFn match,
										   PgssNgUpdateFn update, void *arg);
/* kind-wide counters, read without a lock */
typedef struct PgssNgKindCounters
{
	int64		entries;		/* live entries */
	int64		entries_allocated;	/* live + removed not yet freed */
	int64		entry_bytes;	/* their bodies and hash elements (DSA) */
	int64		entries_max;	/* max, as published (one value for all) */
	int64		dealloc;		/* eviction runs that evicted entries */
	int64		backstop_skips; /* creations refused at the backstop */
	int64		entries_evicted;	/* entries evicted */
	int64		eviction_ns;	/* time spent in eviction runs */
	TimestampTz last_eviction;	/* end of the last run that evicted, 0:
								 * none since the last reset */
} PgssNgKindCounters;

extern void pgss_ng_kind_counters(PgssNgKind *kind, PgssNgKindCounters *out);
extern void pgss_ng_kind_set_max_entries(PgssNgKind *kind, int max_entries);
extern int	pgss_ng_kind_max_entries(PgssNgKind *kind);
extern void pgss_ng_kind_reset_counters(PgssNgKind *kind);
extern void pgss_ng_kind_restore_counters(PgssNgKind *kind, int64 dealloc,
										  int64 entries_evicted,
										  int64 backstop_skips,
										  int64 eviction_ns,
										  TimestampTz last_eviction);
extern void pgss_ng_kind_run_eviction(PgssNgKind *kind);
extern bool pgss_ng_kind_alloc_backing_off(PgssNgKind *kind);

/* persistence: a restore brackets what it does for each entry */
extern bool pgss_ng_kind_restore_begin(PgssNgKind *kind,
									   uint64 full_resets_seen);
extern PgssNgCreateResult pgss_ng_kind_restore(PgssNgKind *kind,
											   const void *key,
											   PgssNgInitSharedFn init,
											   void *arg, double usage);
extern void pgss_ng_kind_restore_end(PgssNgKind *kind);
extern double pgss_ng_kind_usage(const void *shared_data);
extern double pgss_ng_kind_decayed_usage(double usage, TimestampTz t,
										 TimestampTz now);
extern bool pgss_ng_kind_read(PgssNgKind *kind, const void *key,
							  PgssNgVisitFn visit, void *arg);
extern bool pgss_ng_kind_update(PgssNgKind *kind, const void *key,
								PgssNgUpdateFn update, void *arg);

/*
 * Data a kind writes from one process only, outside the entry lock (e.g.
 * the statement kind's wait samples): the callback gets the entry's kind
 * data and where it is in the area (shared_dp, valid in every process
 * until the body is freed), with the partition lock held shared and no
 * entry lock.
 */
typedef void (*PgssNgTouchFn) (void *shared_data, dsa_pointer shared_dp,
							   void *arg);
extern bool pgss_ng_kind_touch(PgssNgKind *kind, const void *key,
							   PgssNgTouchFn touch, void *arg);

#endif							/* PGSS_NG_KIND_H */
