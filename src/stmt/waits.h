/*-------------------------------------------------------------------------
 *
 * waits.h
 *	  Wait-event samples of the statement kind (waits.c, waits_entry.c): the
 *	  key each backend publishes while it runs a tracked statement, each
 *	  entry's samples per wait event type, and the bounded table of samples
 *	  per (entry, wait event); the sampler (writer/sampler.c) adds them.
 *	  Locking: own key slot, no lock; an entry's chunk by the sampler alone;
 *	  the table under pgss_ng_waits, innermost.  docs/design.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_WAITS_H
#define PGSS_NG_WAITS_H

#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/dsa.h"

/*
 * Wait event types, by the class byte of a wait_event_info (its top
 * byte), so that a sample's type is one shift: 0 is a backend running with
 * no wait event (CPU), class 2 (which no server uses) holds the classes
 * this build does not know (a later server's).
 */
#define PGSS_NG_WAIT_CPU		0
#define PGSS_NG_WAIT_OTHER		2
#define PGSS_NG_WAIT_NTYPES		12	/* classes up to InjectionPoint (0x0B) */

/* The type (index in PgssNgWaitSamples.samples) of a wait_event_info. */
static inline int
pgss_ng_wait_type(uint32 wait_event_info)
{
	uint32		c = wait_event_info >> 24;

	return (c < PGSS_NG_WAIT_NTYPES && c != PGSS_NG_WAIT_OTHER) ?
		(int) c : PGSS_NG_WAIT_OTHER;
}

/*
 * An entry's wait samples, in a DSA chunk of its own (52 bytes, in DSA's
 * 56-byte class) that the sampler makes at the entry's first samples: most
 * entries never get any.  The samples of each type (saturating at
 * PG_UINT32_MAX) and the first of the entry's rows in the per-event table
 * (0: none).  The body holds the chunk's dsa_pointer
 * (PgssNgStmtShared.waits; InvalidDsaPointer: no samples), set once,
 * after the chunk is filled, and freed with the body.
 */
typedef struct PgssNgWaitSamples
{
	uint32		samples[PGSS_NG_WAIT_NTYPES];
	uint32		rows;			/* pgss_ng_waits lock */
} PgssNgWaitSamples;

/*
 * The wait time columns of pgss_ng_detail and pgss_ng_evicted, groups of
 * types: CPU, Lock, LWLock, IO, IPC, Client, and the other types together.
 */
#define PGSS_NG_WAIT_NGROUPS	7
extern void pgss_ng_wait_groups(const uint64 *samples, uint64 *groups);

/*
 * The published key of one backend: the innermost tracked statement it is
 * running, as a stack (keys[0 .. depth - 1]; past PGSS_NG_WAIT_DEPTH the
 * deeper keys are not kept and the sampler skips the backend).  changes
 * is raised before a key is written, so a reader that saw it unchanged
 * around its read of depth and the key read them whole.
 */
#define PGSS_NG_WAIT_DEPTH		15	/* a slot is then 256 bytes */

typedef struct PgssNgWaitKey
{
	uint64		queryid;
	Oid			userid;
	bool		toplevel;
} PgssNgWaitKey;

typedef struct PgssNgWaitSlot
{
	uint32		changes;		/* read through a volatile pointer */
	volatile uint32 depth;
	Oid			dbid;			/* its backend's, set at its first key */
	uint32		unused;
	PgssNgWaitKey keys[PGSS_NG_WAIT_DEPTH];
} PgssNgWaitSlot;

/* this backend's slot, NULL until its first key (pgss_ng_waits_push) */
extern PGDLLIMPORT PgssNgWaitSlot *pgss_ng_waits_my_slot;

/*
 * pgss_ng_waits_push publishes a key until pgss_ng_waits_pop() with what it
 * returned (waits.c); out of line, so that the hooks that call it keep
 * their small frames.
 */
extern int	pgss_ng_waits_push(uint64 queryid, Oid userid, int level);

/*
 * pgss_ng_waits_pop
 *		Restore the key published before pgss_ng_waits_push() returned
 *		token.  One write; nothing for -1.
 */
static inline void
pgss_ng_waits_pop(int token)
{
	if (token >= 0)
		pgss_ng_waits_my_slot->depth = (uint32) token;
}

/* One sample: the statement a backend was in and its wait event. */
typedef struct PgssNgWaitSample
{
	uint64		queryid;
	Oid			userid;
	Oid			dbid;
	bool		toplevel;
	uint32		wait_event_info;	/* 0: CPU */
} PgssNgWaitSample;

struct PgssNgStmtKey;

/*
 * Samples of one statement to add (pgss_ng_waits_add): per type, and per
 * wait event (not CPU) those that fit in PGSS_NG_WAIT_MAX_EVENTS.
 */
#define PGSS_NG_WAIT_MAX_EVENTS	32

typedef struct PgssNgWaitBatch
{
	uint32		samples[PGSS_NG_WAIT_NTYPES];
	int			nevents;
	struct
	{
		uint32		event;
		uint32		count;
	}			events[PGSS_NG_WAIT_MAX_EVENTS];
} PgssNgWaitBatch;

/* One row of pgss_ng_waits as a reader copies it. */
typedef struct PgssNgWaitRow
{
	uint32		wait_event_info;	/* 0: the CPU row */
	uint64		samples;
} PgssNgWaitRow;

/* set-up: GUCs, shared memory */
extern void pgss_ng_waits_init(void);
extern Size pgss_ng_waits_shmem_size(int max_entries);
extern void pgss_ng_waits_shmem_request(void);
extern void pgss_ng_waits_shmem_startup(int max_entries);

/* pgss_ng.wait_sample_period, ms (0: off) */
extern int	pgss_ng_wait_sample_period;

/* the sampler (writer/sampler.c) */
extern int	pgss_ng_waits_collect(PgssNgWaitSample *out, int max);
extern int	pgss_ng_waits_max_samples(void);
extern bool pgss_ng_waits_add(const struct PgssNgStmtKey *key,
							  const PgssNgWaitBatch *b);
extern void pgss_ng_waits_count_lost(int64 n);
extern void pgss_ng_waits_count_events_dropped(int64 n);
extern void pgss_ng_waits_set_added(TimestampTz at);

/* the statement kind: its entries' samples (w: the body's pointer) */
extern PgssNgWaitSamples *pgss_ng_waits_load(const dsa_pointer *w);
extern void pgss_ng_waits_add_saved(dsa_pointer *w, const uint32 *samples);
extern void pgss_ng_waits_release(dsa_pointer *w);
extern int	pgss_ng_waits_rows_max(void);
extern int	pgss_ng_waits_copy_rows(const PgssNgWaitSamples *w,
									PgssNgWaitRow *out, int max);
extern int	pgss_ng_waits_restore_rows(const struct PgssNgStmtKey *key,
									   const PgssNgWaitRow *rows, int n);

/* pgss_ng_info's counters */
extern void pgss_ng_waits_counters(int64 *events_dropped,
								   int64 *samples_lost,
								   TimestampTz *added_at);
extern int64 pgss_ng_waits_chunk_bytes(void);
extern void pgss_ng_waits_reset_info(void);

/*
 * pgss_ng_waits' rows of one entry (waits.c): the CPU row (event 0) first
 * if it has CPU samples, then one per wait event kept.
 */
typedef void (*PgssNgWaitsEmitFn) (const struct PgssNgStmtKey *key,
								   const PgssNgWaitRow *rows, int n,
								   void *arg);
extern void pgss_ng_waits_read(Oid only_userid, PgssNgWaitsEmitFn emit,
							   void *arg);

#endif							/* PGSS_NG_WAITS_H */
