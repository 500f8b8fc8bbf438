/*-------------------------------------------------------------------------
 *
 * kind_guard.c
 *	  Error containment: pgss_ng_kind_guard() runs statistics code so that
 *	  no ERROR from below (shared memory, DSM mapping, local memory) reaches
 *	  the user's statement, logged rate-limited (errlimit.c) as "<kind name>
 *	  could not <what>: <message>"; out of memory starts the allocation
 *	  back-off.  Owns the guards' nesting depth and the outermost's
 *	  InterruptHoldoffCount.  docs/design.md, "Error containment".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "kind_int.h"

/*
 * InterruptHoldoffCount when the outermost guarded call began.  Every
 * LWLock held raises that count, so 0 means the caller held no LWLock.
 */
uint32		pgss_ng_guard_holdoff = 0;

/* guarded calls in progress in this backend (they can nest) */
int			pgss_ng_guard_depth = 0;

/*
 * kind_release_locks_or_rethrow
 *		In a PG_CATCH of guarded code: release every LWLock, which are then
 *		all ours, or, if the caller of the outermost guarded call held
 *		LWLocks, leave them all and re-throw the ERROR (see the file
 *		header).
 */
void
kind_release_locks_or_rethrow(void)
{
	if (pgss_ng_guard_holdoff > 0)
		PG_RE_THROW();
	LWLockReleaseAll();
}

/*
 * swallow_error
 *		Turn the ERROR being handled into a rate-limited LOG line ("<kind
 *		name> could not <what>: <message>") and clear it, after releasing
 *		the locks (or re-throwing: kind_release_locks_or_rethrow); out of
 *		memory starts the allocation back-off.  Memory: back to oldcxt, the
 *		error data freed.
 */
static void
swallow_error(PgssNgKind *kind, MemoryContext oldcxt, const char *what)
{
	PgssNgErrLimit *el = kind->ctl ? &kind->ctl->errlimit : NULL;
	ErrorData  *edata;
	int64		suppressed = 0;

	kind_release_locks_or_rethrow();
	MemoryContextSwitchTo(oldcxt);
	edata = CopyErrorData();
	FlushErrorState();

	/* shared memory ran out: do not try again at once */
	if (el != NULL &&
		(edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY ||
		 edata->sqlerrcode == ERRCODE_DISK_FULL ||
		 edata->sqlerrcode == ERRCODE_INSUFFICIENT_RESOURCES))
		pgss_ng_errlimit_alloc_failed(el);

	/* no shared state yet (not after shared memory startup): always log */
	if (el == NULL || pgss_ng_errlimit_report(el, what, &suppressed))
	{
		/* a LOG report checks for interrupts: a cancel must not escape */
		HOLD_INTERRUPTS();
		if (suppressed > 0)
			ereport(LOG,
					(errmsg("%s could not %s: %s",
							kind->desc->name, what, edata->message),
					 errdetail("%lld more such messages were suppressed since the last one.",
							   (long long) suppressed)));
		else
			ereport(LOG,
					(errmsg("%s could not %s: %s",
							kind->desc->name, what, edata->message)));
		RESUME_INTERRUPTS();
	}
	FreeErrorData(edata);
}

/*
 * pgss_ng_kind_guard_caught
 *		The PG_CATCH of a guarded call (PGSS_NG_GUARD_END): restore the
 *		caller's resource owner, leave the call, and swallow the ERROR
 *		(swallow_error), switching back to oldcxt.
 */
void
pgss_ng_kind_guard_caught(PgssNgKind *kind, MemoryContext oldcxt,
						  ResourceOwner oldowner, const char *what)
{
	CurrentResourceOwner = oldowner;
	pgss_ng_guard_depth--;
	swallow_error(kind, oldcxt, what);
}

/*
 * pgss_ng_kind_guard
 *		Run fn(arg) so that no ERROR escapes: true if it returned, false
 *		after an ERROR, logged (swallow_error).  fn runs with no resource
 *		owner: a DSM segment left by a failed creation is pinned anyway and
 *		must not be reported as a leak at commit.  Guards may nest; whether
 *		the caller held LWLocks (then the ERROR is re-thrown) is judged at
 *		the outermost.  CurrentMemoryContext is restored either way.
 */
bool
pgss_ng_kind_guard(PgssNgKind *kind, const char *what, PgssNgGuardedFn fn,
				   void *arg)
{
	volatile bool ok = true;

	PGSS_NG_GUARD_BEGIN(kind);
	fn(arg);
	PGSS_NG_GUARD_END(kind, what, ok = false);
	return ok;
}
