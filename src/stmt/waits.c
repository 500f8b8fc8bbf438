/*-------------------------------------------------------------------------
 *
 * waits.c
 *	  Wait-event samples: set-up, the key slot a backend publishes while it
 *	  runs a tracked statement, the sampler's read of the slots, the counters
 *	  and the read for pgss_ng_waits() (where samples go: waits_entry.c).
 *	  Owns: pgss_ng.wait_sample_period and wait_events_max, the slots, the
 *	  table, the LWLock pgss_ng_waits.  docs/design.md, "Wait events".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "stmt_failures.h"
#include "stmt_kind_int.h"
#include "waits_int.h"

#define WAITS_LOCK_NAME		"pgss_ng_waits"

#define WAITS_SLOTS_OFFSET	CACHELINEALIGN(sizeof(WaitsControl))

/* each slot in cache lines of its own: no false sharing between backends */
StaticAssertDecl(sizeof(PgssNgWaitSlot) % PG_CACHE_LINE_SIZE == 0,
				 "PgssNgWaitSlot must fill whole cache lines");

/* GUCs */
int			pgss_ng_wait_sample_period = 10;
static int	wait_events_max = -1;

PgssNgWaitSlot *pgss_ng_waits_my_slot = NULL;

WaitsControl *waits_ctl = NULL;
static PgssNgWaitSlot *waits_slots = NULL;
WaitEventRow *waits_rows = NULL;	/* rows[1 .. nrows] */
LWLock	   *waits_lock = NULL;
static bool no_slot = false;	/* this process has none: do not retry */
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
 *		Publish (queryid, userid: the current user, toplevel: nesting level 0)
 *		as this backend's innermost tracked statement until pgss_ng_waits_pop()
 *		with what this returns (normal and error path alike): the change
 *		counter, the key, then the depth, a few writes into its own slot.  -1
 *		when nothing was published (sampling off, or no slot).
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
 *		One sample of every backend running a tracked statement: its innermost
 *		key and wait event (0: CPU), read without a lock (a key is kept only if
 *		the slot's change counter and depth were the same before and after, a
 *		few tries; the wait event is read between).  At most max.  Deeper than
 *		PGSS_NG_WAIT_DEPTH, or a key that kept changing: a lost sample.
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
