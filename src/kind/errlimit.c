/*-------------------------------------------------------------------------
 *
 * errlimit.c
 *	  Keeps contained errors from flooding the log, and exhausted shared
 *	  memory from being retried at every statement: one LOG line per "what"
 *	  per PGSS_NG_ERRLIMIT_INTERVAL_MS, the suppressed counted into the next
 *	  (told apart by a hash in a small table, its last slot shared if
 *	  full); an allocation back-off from PGSS_NG_BACKOFF_MIN_MS doubling up
 *	  to _MAX_MS, ended by a success.  Spinlock only; no ERROR.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/timestamp.h"

#include "errlimit.h"

/*
 * pgss_ng_errlimit_init
 *		Initialize a zeroed state (shared memory creation, by its owner).
 */
void
pgss_ng_errlimit_init(PgssNgErrLimit *el)
{
	memset(el, 0, sizeof(PgssNgErrLimit));
	SpinLockInit(&el->mutex);
}

/*
 * pgss_ng_errlimit_report
 *		Whether a line of the kind "what" may be logged now.  If so,
 *		*suppressed is set to the number of lines of that kind not logged
 *		since the last one (to be reported with it); if not, this one is
 *		counted as suppressed.  Spinlock only.
 */
bool
pgss_ng_errlimit_report(PgssNgErrLimit *el, const char *what,
						int64 *suppressed)
{
	uint32		key = hash_bytes((const unsigned char *) what,
								 strlen(what)) | 1;
	TimestampTz now = GetCurrentTimestamp();
	PgssNgErrLimitSlot *slot = NULL;
	bool		log_it;
	int			i;

	*suppressed = 0;
	SpinLockAcquire(&el->mutex);
	for (i = 0; i < PGSS_NG_ERRLIMIT_SLOTS; i++)
	{
		slot = &el->slots[i];
		if (slot->key == key || slot->key == 0 ||
			i == PGSS_NG_ERRLIMIT_SLOTS - 1)
			break;
	}
	if (slot->key != key)
	{
		/* a new kind (or the shared last slot) */
		slot->key = key;
		slot->last_logged = 0;
	}
	log_it = slot->last_logged == 0 ||
		TimestampDifferenceExceeds(slot->last_logged, now,
								   PGSS_NG_ERRLIMIT_INTERVAL_MS);
	if (log_it)
	{
		*suppressed = slot->suppressed;
		slot->suppressed = 0;
		slot->last_logged = now;
	}
	else
		slot->suppressed++;
	SpinLockRelease(&el->mutex);
	return log_it;
}

/*
 * pgss_ng_errlimit_alloc_failed
 *		An allocation failed: start or lengthen the back-off.  Spinlock
 *		only.
 */
void
pgss_ng_errlimit_alloc_failed(PgssNgErrLimit *el)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&el->mutex);
	if (el->backoff_ms == 0)
		el->backoff_ms = PGSS_NG_BACKOFF_MIN_MS;
	else
		el->backoff_ms = Min(el->backoff_ms * 2, PGSS_NG_BACKOFF_MAX_MS);
	el->backoff_until = TimestampTzPlusMilliseconds(now, el->backoff_ms);
	SpinLockRelease(&el->mutex);
}

/*
 * pgss_ng_errlimit_alloc_succeeded
 *		An allocation worked: end the back-off.  Reads the state without
 *		the lock first, so the usual case (no back-off) costs nothing.
 */
void
pgss_ng_errlimit_alloc_succeeded(PgssNgErrLimit *el)
{
	if (el->backoff_ms == 0)
		return;
	SpinLockAcquire(&el->mutex);
	el->backoff_ms = 0;
	el->backoff_until = 0;
	SpinLockRelease(&el->mutex);
}

/*
 * pgss_ng_errlimit_backing_off
 *		Whether allocations should not even be tried now.  An unlocked read
 *		of the fast case; a stale answer only shifts the back-off by one
 *		attempt.
 */
bool
pgss_ng_errlimit_backing_off(PgssNgErrLimit *el)
{
	TimestampTz until;

	if (el->backoff_ms == 0)
		return false;
	SpinLockAcquire(&el->mutex);
	until = el->backoff_until;
	SpinLockRelease(&el->mutex);
	return GetCurrentTimestamp() < until;
}
