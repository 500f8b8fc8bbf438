/*-------------------------------------------------------------------------
 *
 * waits.c
 *	  Wait-event samples of the statement kind: the key slot each backend
 *	  publishes while it runs a tracked statement, the read of every slot
 *	  with its process's wait event for the sampler, and where the samples
 *	  go: each shared entry's samples per wait event type
 *	  (PgssNgWaitSamples, a chunk made at the entry's first samples) and a
 *	  bounded table of samples per (entry, wait event), whose rows hang off
 *	  their entry's chunk.  Part of the statement kind; shares
 *	  stmt_kind_int.h.
 *
 * Owns: the GUCs pgss_ng.wait_sample_period and pgss_ng.wait_events_max,
 * the slots and the table (main shared memory), the LWLock pgss_ng_waits,
 * the entries' chunks of samples (DSA).
 *
 * Locking: a slot is written by its backend only, with no lock (see
 * pgss_ng_waits_push); an entry's chunk is made, published and written by
 * the sampler only (the writer), under the entry's partition lock held
 * shared (pgss_ng_kind_touch); the table, its free list and each entry's
 * list of rows under pgss_ng_waits, taken innermost (after a partition
 * lock, an entry lock or <name>_dealloc, never before one).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "stmt_kind.h"
#include "stmt_failures.h"
#include "stmt_kind_int.h"
#include "waits.h"

#define WAITS_LOCK_NAME		"pgss_ng_waits"

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

#define WAITS_SLOTS_OFFSET	CACHELINEALIGN(sizeof(WaitsControl))

/* each slot in cache lines of its own: no false sharing between backends */
StaticAssertDecl(sizeof(PgssNgWaitSlot) % PG_CACHE_LINE_SIZE == 0,
				 "PgssNgWaitSlot must fill whole cache lines");

/* Rows dropped at once when the table is full: a sixteenth of it. */
#define WAITS_DROP_SHARE	16

/* GUCs */
int			pgss_ng_wait_sample_period = 10;
static int	wait_events_max = -1;

PgssNgWaitSlot *pgss_ng_waits_my_slot = NULL;

static WaitsControl *waits_ctl = NULL;
static PgssNgWaitSlot *waits_slots = NULL;
static WaitEventRow *waits_rows = NULL;	/* rows[1 .. nrows] */
static LWLock *waits_lock = NULL;
static bool no_slot = false;	/* this process has none: do not retry */
static uint64 *drop_buf = NULL; /* the sampler's, for drop_least_sampled */

/*
 * pgss_ng_waits_init
 *		Define pgss_ng.wait_sample_period (reload) and
 *		pgss_ng.wait_events_max (restart).  Called from _PG_init while
 *		preloading.
 */
void
pgss_ng_waits_init(void)
{
	DefineCustomIntVariable("pgss_ng.wait_sample_period",
							"Sets how often pgss_ng samples the wait events "
							"of running statements.",
							"0 turns sampling off.",
							&pgss_ng_wait_sample_period,
							10,
							0,
							1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pgss_ng.wait_events_max",
							"Sets the number of (statement, wait event) "
							"rows pgss_ng keeps.",
							"-1 sets it to 4 times pgss_ng.max, at most 1000000.",
							&wait_events_max,
							-1,
							-1,
							INT_MAX / 4,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
}

/* The default table: 4 rows per entry of pgss_ng.max, at most this many. */
#define WAITS_DEFAULT_ROWS_MAX	1000000

/*
 * rows_wanted
 *		The rows of the table: pgss_ng.wait_events_max, or for -1 4 x
 *		max_entries (at most WAITS_DEFAULT_ROWS_MAX, 24 MB), which then
 *		becomes its shown value.
 */
static uint32
rows_wanted(int max_entries)
{
	if (wait_events_max < 0)
	{
		char		buf[32];

		snprintf(buf, sizeof(buf), "%d",
				 Min(max_entries, WAITS_DEFAULT_ROWS_MAX / 4) * 4);
		SetConfigOption("pgss_ng.wait_events_max", buf, PGC_POSTMASTER,
						PGC_S_DYNAMIC_DEFAULT);
	}
	return (uint32) Max(wait_events_max, 0);
}

/*
 * pgss_ng_waits_shmem_size / _request / _startup
 *		The bytes of main shared memory for the slots (MaxBackends) and the
 *		table (max_entries: pgss_ng.max at start, for the default size),
 *		the pgss_ng_waits LWLock, and their creation (AddinShmemInitLock
 *		held).
 */
Size
pgss_ng_waits_shmem_size(int max_entries)
{
	Size		size = WAITS_SLOTS_OFFSET;

	size = add_size(size, mul_size(MaxBackends, sizeof(PgssNgWaitSlot)));
	return add_size(size, mul_size((Size) rows_wanted(max_entries) + 1,
								   sizeof(WaitEventRow)));
}

void
pgss_ng_waits_shmem_request(void)
{
	RequestNamedLWLockTranche(WAITS_LOCK_NAME, 1);
}

void
pgss_ng_waits_shmem_startup(int max_entries)
{
	bool		found;
	Size		size = pgss_ng_waits_shmem_size(max_entries);

	waits_ctl = ShmemInitStruct("pgss_ng waits", size, &found);
	waits_slots = (PgssNgWaitSlot *) ((char *) waits_ctl + WAITS_SLOTS_OFFSET);
	waits_rows = (WaitEventRow *) (waits_slots + MaxBackends);
	waits_lock = &GetNamedLWLockTranche(WAITS_LOCK_NAME)->lock;
	if (found)
		return;
	memset(waits_ctl, 0, size);
	waits_ctl->nslots = MaxBackends;
	waits_ctl->nrows = rows_wanted(max_entries);
	pg_atomic_init_u64(&waits_ctl->events_dropped, 0);
	pg_atomic_init_u64(&waits_ctl->samples_lost, 0);
	pg_atomic_init_u64(&waits_ctl->added_at, 0);
	pg_atomic_init_u32(&waits_ctl->chunks, 0);
	/* every row free, in order */
	for (uint32 r = 1; r <= waits_ctl->nrows; r++)
		waits_rows[r].next = r < waits_ctl->nrows ? r + 1 : 0;
	waits_ctl->free_head = waits_ctl->nrows > 0 ? 1 : 0;
}

/*
 * waits_detach
 *		on_shmem_exit callback of a backend with a slot: empty it, so that
 *		a FATAL leaves no key behind (the next backend of the PGPROC
 *		empties it too, at its first key).
 */
static void
waits_detach(int code, Datum arg)
{
	if (pgss_ng_waits_my_slot != NULL)
		pgss_ng_waits_my_slot->depth = 0;
	pgss_ng_waits_my_slot = NULL;
	no_slot = true;
}

/*
 * waits_attach
 *		This backend's slot, at its first key, when sampling is on: the
 *		one of its PGPROC, emptied, to be emptied again at exit
 *		(waits_detach).  NULL while sampling is off (tried again at the
 *		next key), or for a process that has no slot.
 */
static PgssNgWaitSlot *
waits_attach(void)
{
	PgssNgWaitSlot *s;
	int			procno;

	if (no_slot || pgss_ng_wait_sample_period == 0)
		return NULL;
	if (waits_ctl == NULL || MyProc == NULL)
	{
		no_slot = true;
		return NULL;
	}
	procno = (int) (MyProc - ProcGlobal->allProcs);
	if (procno < 0 || procno >= waits_ctl->nslots)
	{
		no_slot = true;
		return NULL;
	}
	s = &waits_slots[procno];
	s->depth = 0;
	s->dbid = MyDatabaseId;
	on_shmem_exit(waits_detach, (Datum) 0);
	pgss_ng_waits_my_slot = s;
	return s;
}

/*
 * push_attaching
 *		pgss_ng_waits_push() of a backend without its slot yet: attach it
 *		(waits_attach), then push; -1 if there is none.  Apart, so that
 *		the push of an attached backend needs no stack frame.
 */
static pg_noinline int
push_attaching(uint64 queryid, Oid userid, int level)
{
	if (waits_attach() == NULL)
		return -1;
	return pgss_ng_waits_push(queryid, userid, level);
}

/*
 * pgss_ng_waits_push
 *		Publish (queryid, userid, toplevel), userid the current user and
 *		toplevel whether the nesting level is 0, as this backend's
 *		innermost tracked statement, until pgss_ng_waits_pop() with what
 *		this returns (on the normal and the error path alike): the change
 *		counter, the key, then the depth, a few stores into this backend's
 *		own slot.  -1 when nothing was published (sampling off, or no
 *		slot).
 */
int
pgss_ng_waits_push(uint64 queryid, Oid userid, int level)
{
	PgssNgWaitSlot *s = pgss_ng_waits_my_slot;
	uint32		d;

	if (unlikely(s == NULL))
		return push_attaching(queryid, userid, level);
	d = s->depth;
	if (likely(d < PGSS_NG_WAIT_DEPTH))
	{
		s->changes++;
		pg_write_barrier();
		s->keys[d].queryid = queryid;
		s->keys[d].userid = userid;
		s->keys[d].toplevel = level == 0;
		pg_write_barrier();
	}
	s->depth = d + 1;
	return (int) d;
}

/*
 * pgss_ng_waits_max_samples
 *		The most samples one pgss_ng_waits_collect() returns.
 */
int
pgss_ng_waits_max_samples(void)
{
	return waits_ctl ? waits_ctl->nslots : 0;
}

/*
 * pgss_ng_waits_collect
 *		One sample of every backend running a tracked statement: its
 *		innermost key and its wait event (0: none, CPU), read without a
 *		lock: a key is taken only if the slot's change counter and depth
 *		were the same before and after reading it (a few tries), and the
 *		wait event between the two.  At most max.  A backend nested deeper
 *		than PGSS_NG_WAIT_DEPTH, or whose key kept changing, counts as a
 *		lost sample.
 */
int
pgss_ng_waits_collect(PgssNgWaitSample *out, int max)
{
	int			n = 0;
	int64		lost = 0;

	for (int i = 0; i < waits_ctl->nslots && n < max; i++)
	{
		volatile PgssNgWaitSlot *s = &waits_slots[i];
		volatile PGPROC *proc = &ProcGlobal->allProcs[i];
		bool		taken = false;

		if (s->depth == 0)
			continue;
		for (int tries = 0; tries < 4 && !taken; tries++)
		{
			uint32		changes = s->changes;
			uint32		depth;
			PgssNgWaitKey key;
			uint32		event;

			pg_read_barrier();
			depth = s->depth;
			if (depth == 0)
				break;
			if (depth > PGSS_NG_WAIT_DEPTH)
			{
				lost++;
				break;
			}
			key = s->keys[depth - 1];
			event = proc->wait_event_info;
			pg_read_barrier();
			if (s->changes != changes || s->depth != depth)
				continue;
			out[n].queryid = key.queryid;
			out[n].userid = key.userid;
			out[n].dbid = s->dbid;
			out[n].toplevel = key.toplevel;
			out[n].wait_event_info = event;
			n++;
			taken = true;
		}
	}
	if (lost > 0)
		pg_atomic_fetch_add_u64(&waits_ctl->samples_lost, lost);
	return n;
}

/*
 * pgss_ng_wait_groups
 *		The samples of pgss_ng_detail's and pgss_ng_evicted's wait time
 *		columns from the samples per type: CPU, Lock, LWLock, IO, IPC,
 *		Client, and the others together.
 */
void
pgss_ng_wait_groups(const uint64 *samples, uint64 *groups)
{
	static const int group_type[PGSS_NG_WAIT_NGROUPS - 1] = {
		PGSS_NG_WAIT_CPU,
		PG_WAIT_LOCK >> 24,
		PG_WAIT_LWLOCK >> 24,
		PG_WAIT_IO >> 24,
		PG_WAIT_IPC >> 24,
		PG_WAIT_CLIENT >> 24,
	};
	uint64		other = 0;

	for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
		other += samples[t];
	for (int g = 0; g < PGSS_NG_WAIT_NGROUPS - 1; g++)
	{
		groups[g] = samples[group_type[g]];
		other -= groups[g];
	}
	groups[PGSS_NG_WAIT_NGROUPS - 1] = other;
}

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
 *		until now): a write barrier, then the pointer in one store
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
 *		pgss_ng_kind_touch callback: add a batch, or saved rows, to the
 *		entry's chunk.  An entry without one takes wa->chunk, filled with
 *		the batch before it is published; without wa->chunk, need_chunk is
 *		set and nothing added (the caller makes one, with no lock held, and
 *		comes back).  Saved rows find no chunk only if their samples were
 *		lost: they are dropped with them.  Its partition lock held shared;
 *		takes pgss_ng_waits for the events.  The writer's alone.
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

/*
 * pgss_ng_waits_count_lost
 *		Count n samples that no entry took (the sampler gave up on them).
 */
void
pgss_ng_waits_count_lost(int64 n)
{
	pg_atomic_fetch_add_u64(&waits_ctl->samples_lost, (uint64) n);
}

/*
 * pgss_ng_waits_count_events_dropped
 *		Count n samples whose event row was not kept (the sampler's batch
 *		of a statement had no room for another event).
 */
void
pgss_ng_waits_count_events_dropped(int64 n)
{
	pg_atomic_fetch_add_u64(&waits_ctl->events_dropped, (uint64) n);
}

/*
 * pgss_ng_waits_set_added
 *		The sampler has added every sample it took up to at to the entries
 *		that exist (the others wait for theirs).
 */
void
pgss_ng_waits_set_added(TimestampTz at)
{
	pg_atomic_write_u64(&waits_ctl->added_at, (uint64) at);
}

/*
 * pgss_ng_waits_chunk_bytes
 *		The shared memory of the entries' chunks of samples, at the size
 *		DSA allocates them (pgss_ng_info counts them in entry_bytes).
 */
int64
pgss_ng_waits_chunk_bytes(void)
{
	return (int64) pg_atomic_read_u32(&waits_ctl->chunks) *
		(int64) pgss_ng_dsa_allocated_size(sizeof(PgssNgWaitSamples));
}

/*
 * pgss_ng_waits_counters / pgss_ng_waits_reset_info
 *		pgss_ng_info's counters: rows dropped from the full table, samples
 *		lost, when the sampler last added its samples (0: never); and the
 *		counters' restart by a full reset.  Atomics, no lock.
 */
void
pgss_ng_waits_counters(int64 *events_dropped, int64 *samples_lost,
					   TimestampTz *added_at)
{
	*events_dropped = (int64) pg_atomic_read_u64(&waits_ctl->events_dropped);
	*samples_lost = (int64) pg_atomic_read_u64(&waits_ctl->samples_lost);
	*added_at = (TimestampTz) pg_atomic_read_u64(&waits_ctl->added_at);
}

void
pgss_ng_waits_reset_info(void)
{
	pg_atomic_write_u64(&waits_ctl->events_dropped, 0);
	pg_atomic_write_u64(&waits_ctl->samples_lost, 0);
}

/* State of pgss_ng_waits_read: the filter, the emit function, one copy. */
typedef struct WaitsRead
{
	Oid			only_userid;	/* InvalidOid: every role's */
	PgssNgWaitsEmitFn emit;
	void	   *emit_arg;
	PgssNgStmtKey key;			/* the entry copied last */
	PgssNgWaitRow *rows;		/* its rows */
	int			nrows;
	int			maxrows;
} WaitsRead;

/*
 * read_visit
 *		pgss_ng_kind_foreach visitor of pgss_ng_waits_read: copy the key
 *		and rows of an entry a reader may see (as pgss_ng's: one with
 *		calls, plans or errors), its CPU row first.  Entry and partition
 *		locks held shared; takes pgss_ng_waits shared (copy_rows).
 */
static bool
read_visit(PgssNgKind *kind, const void *key, const void *shared_data,
		   void *arg)
{
	WaitsRead  *wr = (WaitsRead *) arg;
	const PgssNgStmtShared *sh = (const PgssNgStmtShared *) shared_data;
	const PgssNgStmtKey *k = (const PgssNgStmtKey *) key;
	const PgssNgWaitSamples *w;
	int			n = 0;

	if (wr->only_userid != InvalidOid && k->userid != wr->only_userid)
		return false;
	if (total_calls(&sh->counters) == 0 && sh->counters.errors == 0)
		return false;
	w = pgss_ng_waits_load(&sh->waits);
	if (w == NULL)
		return false;
	if (w->samples[PGSS_NG_WAIT_CPU] > 0)
	{
		wr->rows[0].wait_event_info = 0;
		wr->rows[0].samples = w->samples[PGSS_NG_WAIT_CPU];
		n = 1;
	}
	n += pgss_ng_waits_copy_rows(w, wr->rows + n, wr->maxrows - n);
	if (n == 0)
		return false;
	wr->key = *k;
	wr->nrows = n;
	return true;
}

/* pgss_ng_kind_foreach emit callback of pgss_ng_waits_read. */
static void
read_emit(void *arg)
{
	WaitsRead  *wr = (WaitsRead *) arg;

	wr->emit(&wr->key, wr->rows, wr->nrows, wr->emit_arg);
}

/*
 * pgss_ng_waits_read
 *		Call emit with the rows of every entry that has some (of only_userid
 *		only, unless InvalidOid) and that pgss_ng shows: its CPU samples,
 *		then its samples per wait event.  This backend's pending counts are
 *		flushed first, as for pgss_ng.  Locks: the kind layer's foreach
 *		(emit runs with the partition lock held shared), and pgss_ng_waits
 *		shared for each copy.  Memory: CurrentMemoryContext.
 */
void
pgss_ng_waits_read(Oid only_userid, PgssNgWaitsEmitFn emit, void *arg)
{
	WaitsRead	wr = {.only_userid = only_userid, .emit = emit,
	.emit_arg = arg};

	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);
	wr.maxrows = pgss_ng_waits_rows_max() + 1;
	wr.rows = palloc(sizeof(PgssNgWaitRow) * wr.maxrows);
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, read_visit, read_emit, &wr);
	pfree(wr.rows);
}
