/*-------------------------------------------------------------------------
 *
 * errlimit.h
 *	  Rate limit of log lines and back-off of allocation attempts, over a
 *	  state the caller places in shared memory (one per kind, in
 *	  PgssNgKindControl).  Generic: no names, kinds or shared memory of its
 *	  own.  Locking: the state's spinlock, for a few fields only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_ERRLIMIT_H
#define PGSS_NG_ERRLIMIT_H

#include "datatype/timestamp.h"
#include "storage/spin.h"

/* At most one log line per kind of message per this many ms. */
#define PGSS_NG_ERRLIMIT_INTERVAL_MS	10000

/* Back-off after a failed allocation: from this, doubling, up to ... */
#define PGSS_NG_BACKOFF_MIN_MS		100
#define PGSS_NG_BACKOFF_MAX_MS		10000

/* kinds of message told apart; should more occur, the last is shared */
#define PGSS_NG_ERRLIMIT_SLOTS		8

typedef struct PgssNgErrLimitSlot
{
	uint32		key;			/* hash of the message kind; 0: free */
	TimestampTz last_logged;	/* when a line of this kind was logged */
	int64		suppressed;		/* lines not logged since then */
} PgssNgErrLimitSlot;

/* Shared state; zero it, then pgss_ng_errlimit_init(). */
typedef struct PgssNgErrLimit
{
	slock_t		mutex;			/* guards every field below */
	PgssNgErrLimitSlot slots[PGSS_NG_ERRLIMIT_SLOTS];
	TimestampTz backoff_until;	/* no allocation attempt before this */
	int			backoff_ms;		/* current back-off; 0: none */
} PgssNgErrLimit;

extern void pgss_ng_errlimit_init(PgssNgErrLimit *el);
extern bool pgss_ng_errlimit_report(PgssNgErrLimit *el, const char *what,
									int64 *suppressed);
extern void pgss_ng_errlimit_alloc_failed(PgssNgErrLimit *el);
extern void pgss_ng_errlimit_alloc_succeeded(PgssNgErrLimit *el);
extern bool pgss_ng_errlimit_backing_off(PgssNgErrLimit *el);

#endif							/* PGSS_NG_ERRLIMIT_H */
