/*-------------------------------------------------------------------------
 *
 * kind.h
 *	  A small "cumulative statistics kind" layer for PostgreSQL 15, shaped
 *	  like core's PgStat_KindInfo so that a kind written on top of it could
 *	  later be registered with pgstat_register_kind() on PostgreSQL 18+.
 *
 * A kind keeps its shared entries in its own dshash, inside a DSA area that
 * the postmaster creates in place in main shared memory.  Backends count
 * into backend-local *pending* entries and *flush* them into the shared
 * entries later, taking each entry's LWLock without waiting where they can.
 * Nothing in this layer knows about statements: the kind-specific parts are
 * callbacks in PgssNgKindInfo.
 *
 * Shared structures
 *	  dshash element:  [key (key_size bytes)] [PgssNgHashEntry]
 *	  entry body:      [PgssNgSharedEntry] [kind data (shared_size bytes)]
 *	  The body is a separate DSA chunk so that it can outlive its removal
 *	  from the dshash while backends still hold references to it.
 *
 * Locking rules
 *	  - The dshash partition lock protects the mapping key -> body.  A
 *		reference (refcount increment) is only taken while that lock is
 *		held, so a body that has left the hash can gain no new references.
 *	  - Removing a body from the hash (reset, eviction) marks it dropped and
 *		drops the hash's own reference; whoever brings refcount to zero
 *		frees the body (and calls the kind's free callback).
 *	  - A body's LWLock protects its kind data and its dropped flag.
 *		Flushes take it exclusively, readers take it shared.  Flushes try
 *		LWLockConditionalAcquire first.
 *	  - Never take a dshash partition lock while holding an entry lock: the
 *		order is partition lock, then entry lock.
 *	  - <name>_alloc (a named LWLock) serializes the creation of entries, so
 *		that admission against max and the backstop is exact; it is held
 *		while the body is allocated and published, never during a flush.
 *	  - <name>_dealloc serializes removals (eviction, reset).  Eviction
 *		takes it conditionally: a backend that finds another one evicting
 *		goes on with its statement; a reset waits for it.
 *		The victim scan holds each partition lock shared only while it
 *		reads that partition (it takes no entry lock); victims are sorted
 *		with no lock but this one held, and removed one at a time under
 *		their partition lock, checking the generation so that an entry
 *		re-created meanwhile is not removed.  Flushes never wait for it.
 *	  - Locks owned by a kind's callbacks (e.g. the query text arena) are
 *		taken innermost: after every lock of this layer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_KIND_H
#define PGSS_NG_KIND_H

#include "datatype/timestamp.h"
#include "lib/dshash.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"

/* Backend-local handle of a kind; its fields are the layer's own. */
typedef struct PgssNgKind PgssNgKind;

/*
 * Kind description, the equivalent of PgStat_KindInfo.  All callbacks are
 * called from backends attached to the kind's area; none may raise an
 * ERROR while the layer holds a lock (they run under LWLocks).
 */
typedef struct PgssNgKindInfo
{
	const char *name;			/* used for tranche names and messages */
	Size		key_size;		/* bytes; compared with memcmp, so callers
								 * must zero padding */
	Size		shared_size;	/* bytes of kind data in a shared entry */
	Size		pending_size;	/* bytes of kind data in a pending entry */
	int			max_pending;	/* flush early past this many pending */

	/*
	 * Merge pending data into a shared entry.  Called with the entry's lock
	 * held exclusively and only when the entry is not dropped.
	 * pending_since is when the pending entry was made (its first count).
	 * Returns the
	 * number of uses the pending data represents, added to the entry's
	 * usage (its value for eviction).
	 */
	double		(*flush_pending_cb) (PgssNgKind *kind, const void *key,
									 void *shared_data,
									 const void *pending_data,
									 TimestampTz pending_since);

	/*
	 * Pending data whose entry was evicted before the flush cannot be
	 * merged; this callback counts it as dropped.  No lock of this layer
	 * is held.
	 */
	void		(*discard_pending_cb) (PgssNgKind *kind, const void *key,
									   const void *pending_data);

	/*
	 * Release what the kind data owns (e.g. a query text) when the body is
	 * freed.  No lock is held: nobody else can see the body any more.
	 */
	void		(*free_cb) (PgssNgKind *kind, void *shared_data);

	/*
	 * Serialize an entry (appending to buf; entry lock held shared) and
	 * re-create one from its serialized form (false: malformed; *restored
	 * false: well-formed but not created, e.g. the key exists already),
	 * for persistence across restarts (persist.c).
	 */
	void		(*to_serialized_cb) (PgssNgKind *kind, const void *key,
									 const void *shared_data,
									 StringInfo buf);
	bool		(*from_serialized_cb) (PgssNgKind *kind,
									   const char *data, Size len,
									   bool *restored);
} PgssNgKindInfo;

/*
 * Fills the kind data of a shared entry being created (e.g. stores its
 * query text).  Called with the kind's <name>_alloc lock held, before the
 * entry becomes visible; it should not raise an ERROR, but if it does the
 * body is given back (lookup_or_create).  Returns false if something could
 * not be stored (the entry is created all the same).
 */
typedef bool (*PgssNgInitSharedFn) (PgssNgKind *kind, void *shared_data,
									void *arg);

/* result of pgss_ng_kind_create */
typedef enum PgssNgCreateResult
{
	PGSS_NG_EXISTS,				/* somebody else created it first */
	PGSS_NG_CREATED,
	PGSS_NG_FULL,				/* the backstop was reached */
	PGSS_NG_OUT_OF_MEMORY		/* shared memory could not be allocated */
} PgssNgCreateResult;

/* error containment for code running inside a user's statement */
typedef void (*PgssNgGuardedFn) (void *arg);
extern bool pgss_ng_kind_guard(PgssNgKind *kind, const char *what,
							   PgssNgGuardedFn fn, void *arg);

/* set-up, in the postmaster (kind_shmem.c) */
extern PgssNgKind *pgss_ng_kind_define(const PgssNgKindInfo *info);
extern void pgss_ng_kind_shmem_request(const PgssNgKindInfo *info);
extern Size pgss_ng_kind_shmem_size(const PgssNgKindInfo *info);
extern void pgss_ng_kind_shmem_startup(PgssNgKind *kind,
									   const char *shmem_name);

/* backends */
extern bool pgss_ng_kind_attach(PgssNgKind *kind);
extern dsa_area *pgss_ng_kind_area(PgssNgKind *kind);
extern int	pgss_ng_kind_hash_tranche(PgssNgKind *kind);
extern bool pgss_ng_kind_has_pending(PgssNgKind *kind);
extern bool pgss_ng_kind_exists(PgssNgKind *kind, const void *key);
extern PgssNgCreateResult pgss_ng_kind_create(PgssNgKind *kind,
											  const void *key,
											  PgssNgInitSharedFn init,
											  void *arg);
extern void *pgss_ng_kind_get_pending(PgssNgKind *kind, const void *key,
									  PgssNgInitSharedFn init, void *arg);
extern bool pgss_ng_kind_flush(PgssNgKind *kind, bool force);

/* readers and maintenance */
typedef void (*PgssNgVisitFn) (PgssNgKind *kind, const void *key,
							   const void *shared_data, void *arg);
typedef bool (*PgssNgMatchFn) (const void *key, void *arg);
typedef void (*PgssNgUpdateFn) (void *shared_data, void *arg);

extern void pgss_ng_kind_foreach(PgssNgKind *kind, PgssNgVisitFn visit,
								 void *arg);
extern uint64 pgss_ng_kind_drop_matching(PgssNgKind *kind,
										 PgssNgMatchFn match, void *arg);
extern uint64 pgss_ng_kind_update_matching(PgssNgKind *kind,
										   PgssNgMatchFn match,
										   PgssNgUpdateFn update, void *arg);
/* kind-wide counters, read without a lock */
typedef struct PgssNgKindCounters
{
	int64		entries;		/* live entries */
	int64		entries_allocated;	/* live + dropped not yet freed */
	int64		entries_max;	/* max as this backend sees it */
	int64		dealloc;		/* entries evicted */
	int64		backstop_skips; /* creations refused at the backstop */
} PgssNgKindCounters;

extern void pgss_ng_kind_counters(PgssNgKind *kind, PgssNgKindCounters *out);
extern void pgss_ng_kind_set_max_entries(PgssNgKind *kind, int max_entries);
extern int	pgss_ng_kind_max_entries(PgssNgKind *kind);
extern void pgss_ng_kind_reset_counters(PgssNgKind *kind);
extern void pgss_ng_kind_restore_counters(PgssNgKind *kind, int64 dealloc,
										  int64 backstop_skips);
extern void pgss_ng_kind_evict(PgssNgKind *kind);

/* persistence */
extern PgssNgCreateResult pgss_ng_kind_restore(PgssNgKind *kind,
											   const void *key,
											   PgssNgInitSharedFn init,
											   void *arg, double usage);
extern double pgss_ng_kind_usage(const void *shared_data);
extern bool pgss_ng_kind_update(PgssNgKind *kind, const void *key,
								PgssNgUpdateFn update, void *arg);
extern void pgss_ng_kind_to_serialized(PgssNgKind *kind, const void *key,
									   const void *shared_data,
									   StringInfo buf);
extern bool pgss_ng_kind_from_serialized(PgssNgKind *kind, const char *data,
										 Size len, bool *restored);

#endif							/* PGSS_NG_KIND_H */
