/*-------------------------------------------------------------------------
 *
 * waits_entry.c
 *	  Where the sampler's samples go: each entry's samples per wait event
 *	  type (a chunk made at its first samples) and its rows in the bounded
 *	  per-event table (the least sampled dropped when full); their copy,
 *	  save, restore and release.  docs/design.md, "Wait events".
 *	  Locking: see waits.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "stmt_kind_int.h"
#include "waits_int.h"

/* Rows dropped at once when the table is full: a sixteenth of it. */
#define WAITS_DROP_SHARE	16

static uint64 *drop_buf = NULL; /* the sampler's, for drop_least_sampled */

/* saturating a + b */
static inline uint32
add_sat32(uint32 a, uint64 b)
{
	return b >= (uint64) (PG_UINT32_MAX - a) ? PG_UINT32_MAX : a + (uint32) b;
}

/*
 * unlink_row
 *		Take row r out of the list of the entry whose samples are w and put
 *		it on the free list.  pgss_ng_waits held exclusively.
 */
static void
unlink_row(PgssNgWaitSamples *w, uint32 r)
{
	uint32	   *link = &w->rows;

	while (*link != 0 && *link != r)
		link = &waits_rows[*link].next;
	Assert(*link == r);
	if (*link == r)
		*link = waits_rows[r].next;
	waits_rows[r].next = waits_ctl->free_head;
	waits_ctl->free_head = r;
	waits_ctl->used--;
}

/* qsort comparator of uint64 */
static int
cmp_uint64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * drop_least_sampled
 *		The table is full: drop its least-sampled rows, a sixteenth of it
 *		(at least one), counted in events_dropped.  Each is taken out of
 *		its entry's list through its owner, the entry's chunk, which cannot
 *		be freed meanwhile (free_cb waits for pgss_ng_waits).  pgss_ng_waits held
 *		exclusively, by the writer (drop_buf is made before: no allocation
 *		here).  Errors: mapping an owner's segment (dsa_get_address).
 */
static void
drop_least_sampled(void)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	uint32		nrows = waits_ctl->nrows;
	uint32		want = Max(nrows / WAITS_DROP_SHARE, 1);
	uint32		n = 0;
	uint64		threshold;
	uint32		at_threshold;

	for (uint32 r = 1; r <= nrows; r++)
		if (waits_rows[r].event != 0)
			drop_buf[n++] = waits_rows[r].samples;
	if (n == 0)
		return;
	qsort(drop_buf, n, sizeof(uint64), cmp_uint64);
	want = Min(want, n);
	threshold = drop_buf[want - 1];
	/* below the threshold all go; at it, as many as make up want */
	at_threshold = want;
	for (uint32 i = 0; i < want; i++)
		if (drop_buf[i] < threshold)
			at_threshold--;
	for (uint32 r = 1; r <= nrows; r++)
	{
		WaitEventRow *row = &waits_rows[r];
		PgssNgWaitSamples *w;

		if (row->event == 0 || row->samples > threshold ||
			(row->samples == threshold && at_threshold == 0))
			continue;
		if (row->samples == threshold)
			at_threshold--;
		w = dsa_get_address(area, row->owner);
		row->event = 0;
		unlink_row(w, r);
		pg_atomic_fetch_add_u64(&waits_ctl->events_dropped, 1);
	}
}

/*
 * add_event
 *		Add samples of wait event event to its row of the entry whose
 *		chunk is w (at owner in the area), making the row if there is
 *		none; when the table is full, its least-sampled rows are dropped
 *		first.  pgss_ng_waits held exclusively, by the writer.
 */
static void
add_event(PgssNgWaitSamples *w, dsa_pointer owner, uint32 event,
		  uint64 samples)
{
	uint32		r;

	for (r = w->rows; r != 0; r = waits_rows[r].next)
		if (waits_rows[r].event == event)
		{
			waits_rows[r].samples += samples;
			return;
		}
	if (waits_ctl->free_head == 0)
		drop_least_sampled();
	r = waits_ctl->free_head;
	if (r == 0)
	{
		/* a table of no rows */
		pg_atomic_fetch_add_u64(&waits_ctl->events_dropped, 1);
		return;
	}
	waits_ctl->free_head = waits_rows[r].next;
	waits_ctl->used++;
	waits_rows[r].owner = owner;
	waits_rows[r].event = event;
	waits_rows[r].samples = samples;
	waits_rows[r].next = w->rows;
	w->rows = r;
}

/*
 * What pgss_ng_waits_add or pgss_ng_waits_restore_rows adds to the entry
 * of key: a batch of samples, or saved rows; found says whether the entry
 * was there.  An entry without a chunk of samples gets chunk, made for it
 * when the first look found none (need_chunk).
 */
typedef struct WaitsAdd
{
	const PgssNgStmtKey *key;
	const PgssNgWaitBatch *batch;	/* or NULL: */
	const PgssNgWaitRow *rows;	/* nrows saved rows */
	int			nrows;
	bool		found;
	bool		need_chunk;		/* the entry has no chunk */
	dsa_pointer chunk;			/* a chunk made for it, zeroed, or invalid */
} WaitsAdd;

/* the samples of a batch, or of a saved record, over all types */
static uint64
samples_total(const uint32 *samples)
{
	uint64		n = 0;

	for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
		n += samples[t];
	return n;
}

/*
 * pgss_ng_waits_load
 *		The chunk of samples of an entry whose body holds *w, or NULL when
 *		it has none.  The pointer is read once, then a read barrier, which
 *		pairs with publish_chunk's write barrier: a reader beside the
 *		sampler (under the same partition lock, both shared) sees the chunk
 *		filled.  Errors: mapping its segment.
 */
PgssNgWaitSamples *
pgss_ng_waits_load(const dsa_pointer *w)
{
	dsa_pointer dp = *(const volatile dsa_pointer *) w;

	if (!DsaPointerIsValid(dp))
		return NULL;
	pg_read_barrier();
	return dsa_get_address(pgss_ng_kind_area(pgss_ng_stmt_kind), dp);
}

/*
 * new_chunk
 *		A zeroed chunk of samples, not yet any entry's, or InvalidDsaPointer
 *		when shared memory ran out (DSA_ALLOC_NO_OOM), or ran out a moment
 *		ago (the kind's allocation back-off: not even tried).  The writer's;
 *		no lock held but the restore bracket's.  Errors: dsa's, only when a
 *		DSM segment cannot be made.
 */
static dsa_pointer
new_chunk(void)
{
	if (pgss_ng_kind_alloc_backing_off(pgss_ng_stmt_kind))
		return InvalidDsaPointer;
	return dsa_allocate_extended(pgss_ng_kind_area(pgss_ng_stmt_kind),
								 sizeof(PgssNgWaitSamples),
								 DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
}

/*
 * publish_chunk
 *		Make the filled chunk dp the entry's, whose body holds *w (invalid
 *		until now): a write barrier, then the pointer in one write
 *		(pgss_ng_waits_load).  Counted in the chunks' bytes until
 *		pgss_ng_waits_release.  The writer's.
 */
static void
publish_chunk(dsa_pointer *w, dsa_pointer dp)
{
	Assert(!DsaPointerIsValid(*w));
	pg_write_barrier();
	*(volatile dsa_pointer *) w = dp;
	pg_atomic_fetch_add_u32(&waits_ctl->chunks, 1);
}

/*
 * add_touch
 *		pgss_ng_kind_touch callback (partition lock shared; the writer's
 *		alone): add a batch or saved rows to the entry's chunk.  An entry
 *		without one takes wa->chunk, filled before it is published; with none,
 *		need_chunk is set (the caller makes one, no lock held, and comes back);
 *		saved rows that find none are dropped (their samples were lost).  Takes
 *		pgss_ng_waits for the events.
 */
static void
add_touch(void *shared_data, dsa_pointer shared_dp, void *arg)
{
	dsa_pointer *wp = &((PgssNgStmtShared *) shared_data)->waits;
	WaitsAdd   *wa = (WaitsAdd *) arg;
	const PgssNgWaitBatch *b = wa->batch;
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	dsa_pointer owner = *wp;	/* this process is its one writer */
	PgssNgWaitSamples *w;

	if (DsaPointerIsValid(owner))
	{
		w = dsa_get_address(area, owner);
		if (b != NULL)
			for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
				w->samples[t] = add_sat32(w->samples[t], b->samples[t]);
	}
	else if (b == NULL)
		return;
	else if (!DsaPointerIsValid(wa->chunk))
	{
		wa->need_chunk = true;
		return;
	}
	else
	{
		owner = wa->chunk;
		wa->chunk = InvalidDsaPointer;
		w = dsa_get_address(area, owner);
		memcpy(w->samples, b->samples, sizeof(w->samples));
		publish_chunk(wp, owner);
	}
	if (b != NULL ? b->nevents == 0 : wa->nrows == 0)
		return;
	LWLockAcquire(waits_lock, LW_EXCLUSIVE);
	if (b != NULL)
		for (int e = 0; e < b->nevents; e++)
			add_event(w, owner, b->events[e].event, b->events[e].count);
	else
		for (int e = 0; e < wa->nrows; e++)
			add_event(w, owner, wa->rows[e].wait_event_info,
					  wa->rows[e].samples);
	LWLockRelease(waits_lock);
}

/*
 * add_guarded
 *		The body of add_to_entry under pgss_ng_kind_guard(): add_touch, and
 *		for an entry's first samples again with a chunk made in between,
 *		with no lock held (the touch must not allocate: see
 *		pgss_ng_kind_touch).  No chunk to be had: the batch's samples are
 *		lost (counted), the entry found.  A chunk the entry did not take
 *		(it went meanwhile) is freed.
 */
static void
add_guarded(void *arg)
{
	WaitsAdd   *wa = (WaitsAdd *) arg;

	wa->found = pgss_ng_kind_touch(pgss_ng_stmt_kind, wa->key, add_touch, wa);
	if (!wa->found || !wa->need_chunk)
		return;
	wa->need_chunk = false;
	wa->chunk = new_chunk();
	if (!DsaPointerIsValid(wa->chunk))
	{
		pgss_ng_waits_count_lost((int64) samples_total(wa->batch->samples));
		return;
	}
	wa->found = pgss_ng_kind_touch(pgss_ng_stmt_kind, wa->key, add_touch, wa);
	if (DsaPointerIsValid(wa->chunk))
	{
		dsa_free(pgss_ng_kind_area(pgss_ng_stmt_kind), wa->chunk);
		wa->chunk = InvalidDsaPointer;
	}
}

/* add_to_entry's guarded free of a chunk an ERROR left it holding */
static void
free_guarded(void *arg)
{
	WaitsAdd   *wa = (WaitsAdd *) arg;

	dsa_free(pgss_ng_kind_area(pgss_ng_stmt_kind), wa->chunk);
	wa->chunk = InvalidDsaPointer;
}

/*
 * add_to_entry
 *		add_touch on the live entry of wa->key, the buffer of
 *		drop_least_sampled made first (once, TopMemoryContext: no
 *		allocation under the lock).  Whether the entry was found; false too
 *		when an ERROR was caught and logged (pgss_ng_kind_guard), after
 *		which a chunk made and not yet published is freed.
 */
static bool
add_to_entry(WaitsAdd *wa)
{
	if (drop_buf == NULL && waits_ctl->nrows > 0)
		drop_buf = MemoryContextAlloc(TopMemoryContext,
									  sizeof(uint64) * waits_ctl->nrows);
	wa->found = false;
	wa->need_chunk = false;
	wa->chunk = InvalidDsaPointer;
	if (pgss_ng_kind_guard(pgss_ng_stmt_kind, "add wait samples",
						   add_guarded, wa))
		return wa->found;
	if (DsaPointerIsValid(wa->chunk))
		(void) pgss_ng_kind_guard(pgss_ng_stmt_kind, "add wait samples",
								  free_guarded, wa);
	return false;
}

/*
 * pgss_ng_waits_add
 *		Add a batch of samples to the live entry of key: per type into its
 *		chunk, made at its first samples, per event into its rows.  False
 *		if there is no such entry (yet: the sampler tries again) or an
 *		ERROR was caught; true, the samples counted lost, when the entry
 *		has no chunk and none can be made.  The sampler's (the writer's)
 *		alone: nothing else writes an entry's samples per type.
 */
bool
pgss_ng_waits_add(const struct PgssNgStmtKey *key, const PgssNgWaitBatch *b)
{
	WaitsAdd	wa = {.key = key, .batch = b};

	return add_to_entry(&wa);
}

/*
 * pgss_ng_waits_add_saved
 *		Add a saved record's samples per type to an entry whose body holds
 *		*w, making its chunk if it has none; when none can be made, they
 *		count as lost (wait_samples_lost).  The writer's, restoring: the
 *		entry not yet published, or its entry lock held exclusively (the
 *		sampler, its other writer, is this process).  Errors: dsa's, a DSM
 *		segment that cannot be made, before anything changed.
 */
void
pgss_ng_waits_add_saved(dsa_pointer *w, const uint32 *samples)
{
	uint64		total = samples_total(samples);
	PgssNgWaitSamples *ws;
	dsa_pointer dp;

	if (total == 0)
		return;
	ws = pgss_ng_waits_load(w);
	if (ws != NULL)
	{
		for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
			ws->samples[t] = add_sat32(ws->samples[t], samples[t]);
		return;
	}
	dp = new_chunk();
	if (!DsaPointerIsValid(dp))
	{
		pgss_ng_waits_count_lost((int64) total);
		return;
	}
	ws = dsa_get_address(pgss_ng_kind_area(pgss_ng_stmt_kind), dp);
	memcpy(ws->samples, samples, sizeof(ws->samples));
	publish_chunk(w, dp);
}

/*
 * pgss_ng_waits_restore_rows
 *		Add n saved per-event rows to the live entry of key (its samples
 *		per type come with the record: pgss_ng_waits_add_saved).  The
 *		writer's, restoring the stats file, in the restore bracket.
 *		Returns the rows added: n, or 0 when the entry is not there.
 */
int
pgss_ng_waits_restore_rows(const struct PgssNgStmtKey *key,
						   const PgssNgWaitRow *rows, int n)
{
	WaitsAdd	wa = {.key = key, .rows = rows, .nrows = n};

	if (n == 0)
		return 0;
	return add_to_entry(&wa) ? n : 0;
}

/*
 * pgss_ng_waits_release
 *		The entry whose body holds *w is being freed (the statement kind's
 *		free_cb): give its rows back to the free list and free its chunk.
 *		Nobody can add a row to it any more (it left the hash), so a list
 *		read empty without the lock stays empty.  Takes pgss_ng_waits
 *		exclusively.
 */
void
pgss_ng_waits_release(dsa_pointer *w)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	dsa_pointer dp = *w;
	PgssNgWaitSamples *ws;

	if (!DsaPointerIsValid(dp))
		return;
	ws = dsa_get_address(area, dp);
	if (ws->rows != 0)
	{
		LWLockAcquire(waits_lock, LW_EXCLUSIVE);
		while (ws->rows != 0)
		{
			waits_rows[ws->rows].event = 0;
			unlink_row(ws, ws->rows);
		}
		LWLockRelease(waits_lock);
	}
	*w = InvalidDsaPointer;
	dsa_free(area, dp);
	pg_atomic_fetch_sub_u32(&waits_ctl->chunks, 1);
}

/*
 * pgss_ng_waits_rows_max
 *		The most rows one entry can have: those of the table.
 */
int
pgss_ng_waits_rows_max(void)
{
	return (int) waits_ctl->nrows;
}

/*
 * pgss_ng_waits_copy_rows
 *		Copy the rows of the entry whose chunk is w (NULL: none) into out,
 *		at most max; returns how many.  Under the entry's partition lock
 *		(it cannot be freed); takes pgss_ng_waits shared.
 */
int
pgss_ng_waits_copy_rows(const PgssNgWaitSamples *w, PgssNgWaitRow *out,
						int max)
{
	int			n = 0;

	if (w == NULL || w->rows == 0)
		return 0;
	LWLockAcquire(waits_lock, LW_SHARED);
	for (uint32 r = w->rows; r != 0 && n < max; r = waits_rows[r].next)
	{
		out[n].wait_event_info = waits_rows[r].event;
		out[n].samples = waits_rows[r].samples;
		n++;
	}
	LWLockRelease(waits_lock);
	return n;
}
