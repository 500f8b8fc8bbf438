/*-------------------------------------------------------------------------
 *
 * waits_int.h
 *	  What the wait samples' files (waits.c, waits_entry.c) share and nobody
 *	  else sees.  docs/design.md, "Wait events".  Locking: see waits.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_WAITS_INT_H
#define PGSS_NG_WAITS_INT_H

#include "port/atomics.h"
#include "storage/lwlock.h"

#include "waits.h"

/*
 * One row of the per-event table: the samples of one wait event of one
 * entry.  owner is the entry's chunk of samples in the area; next links
 * the rows of one entry (from PgssNgWaitSamples.rows), or the free rows.
 * Rows are numbered from 1 (0: none).
 */
typedef struct WaitEventRow
{
	dsa_pointer owner;
	uint64		samples;
	uint32		event;			/* wait_event_info, never 0 */
	uint32		next;
} WaitEventRow;

/*
 * The shared state: the slots (one per PGPROC of a backend, by its number)
 * and the rows, after this struct.  The counters are atomics; the rest of
 * the table is pgss_ng_waits's.
 */
typedef struct WaitsControl
{
	int			nslots;
	uint32		nrows;			/* pgss_ng.wait_events_max */
	uint32		used;			/* rows in use */
	uint32		free_head;		/* first free row */
	pg_atomic_uint64 events_dropped;	/* rows dropped when full */
	pg_atomic_uint64 samples_lost;	/* samples no entry took */
	pg_atomic_uint64 added_at;	/* TimestampTz: the sampler's last adding
								 * of its samples to the entries, 0: none */
	pg_atomic_uint32 chunks;	/* entries' chunks of samples */
} WaitsControl;

extern WaitsControl *waits_ctl;
extern WaitEventRow *waits_rows;	/* rows[1 .. nrows] */
extern LWLock *waits_lock;

#endif							/* PGSS_NG_WAITS_INT_H */
