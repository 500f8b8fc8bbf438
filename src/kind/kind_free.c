/*-------------------------------------------------------------------------
 *
 * kind_free.c
 *	  The end of a kind's body: its removal mark (under its entry lock),
 *	  the release of its references, and its free by whoever releases the
 *	  last one (free_cb first; no lock needed: nobody can see it), counted
 *	  out of entries_allocated.  The lowest file of the layer: it calls no
 *	  other file of it.  docs/design.md, "Life of an entry".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind_int.h"

/*
 * kind_free_body
 *		Free a removed body nobody refers to any more.  No lock needed.
 */
void
kind_free_body(PgssNgKind *kind, dsa_pointer body, PgssNgBodyHeader *hdr)
{
	Assert(pg_atomic_read_u32(&hdr->refcount) == 0);

	if (kind->desc->free_cb)
		kind->desc->free_cb(kind, PgssNgSharedData(hdr));
	dsa_free(kind->area, body);
	pg_atomic_fetch_sub_u32(&kind->ctl->entries_allocated, 1);
}

/*
 * kind_release_ref
 *		Release one reference to a body; the last one frees it.  The hash holds
 *		a reference of its own, so the last release is always of a body that
 *		was already removed.
 */
void
kind_release_ref(PgssNgKind *kind, dsa_pointer body, PgssNgBodyHeader *hdr)
{
	if (pg_atomic_sub_fetch_u32(&hdr->refcount, 1) == 0)
		kind_free_body(kind, body, hdr);
}

/*
 * kind_mark_removed
 *		Flag a body as removed for reason, under its lock, so that flushes
 *		see it.  The caller removes it from the hash and then calls
 *		kind_forget_body().
 */
void
kind_mark_removed(PgssNgBodyHeader *hdr, PgssNgRemoval reason)
{
	LWLockAcquire(&hdr->lock, LW_EXCLUSIVE);
	hdr->removed = reason;
	LWLockRelease(&hdr->lock);
}

/*
 * kind_forget_body
 *		After removal from the hash: one live entry less, and the hash's
 *		reference released (freeing the body if nobody else holds one).
 */
void
kind_forget_body(PgssNgKind *kind, dsa_pointer body, PgssNgBodyHeader *hdr)
{
	pg_atomic_fetch_sub_u32(&kind->ctl->entries_live, 1);
	kind_release_ref(kind, body, hdr);
}
