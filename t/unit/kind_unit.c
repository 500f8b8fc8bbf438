/*-------------------------------------------------------------------------
 *
 * kind_unit.c
 *	  A fake kind on the kind layer (src/kind_*.c, src/kind.h), for the
 *	  layer's unit test t/130_kind_unit.pl, which builds it with the
 *	  layer's objects into a library of its own (t/kind_unit.mk) and
 *	  preloads that by its path.  Not part of the extension, never
 *	  installed.
 *
 * Its key is an int64 and its data a counter: a shared entry holds the
 * counts merged into it, the number of flushes that merged them and a
 * tag set at creation; pending data is a count, whose value is also the
 * uses reported to the layer (an entry counted more is worth more to
 * eviction).  Like the statement kind's query text, every entry owns a
 * chunk of the kind's DSA area, allocated by the init callback and freed
 * by the free callback.  The kind counts in shared memory of its own
 * what the layer asked of it (inits, frees, owned chunks, discarded
 * counts), and keeps the references it was given since their last flush
 * (held[]) so that the test can look at a body after its removal.  The
 * SQL functions (t/kind_unit.sql) expose the layer's API one call each;
 * those that run what a kind runs inside a user's statement (create,
 * count, flush, evict) run it under pgss_ng_kind_guard(), as the
 * statement kind does.
 *
 * Locking: the layer's (src/kind.h); the kind's own counters are atomics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "kind/kind.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* UnitShared.magic of a live body, and of one the free callback freed */
#define UNIT_MAGIC_LIVE		0x4C495645
#define UNIT_MAGIC_FREED	0x46524545

/* bytes of the kind's area each entry owns */
#define UNIT_OWNED_SIZE		64

/* references kept in held[] at most */
#define UNIT_MAX_HELD		64

/* Kind data of a shared entry. */
typedef struct UnitShared
{
	uint32		magic;			/* UNIT_MAGIC_LIVE until freed */
	int64		key;			/* a copy of the key */
	int64		tag;			/* set by the init callback */
	int64		count;			/* counts merged by flushes */
	int64		flushes;		/* flushes that merged something */
	dsa_pointer owned;			/* UNIT_OWNED_SIZE bytes of the area */
} UnitShared;

/* Pending data. */
typedef struct UnitPending
{
	int64		count;
} UnitPending;

/* The kind's own shared counters. */
typedef struct UnitControl
{
	pg_atomic_uint64 inits;		/* init callbacks run */
	pg_atomic_uint64 frees;		/* free callbacks run */
	pg_atomic_uint64 owned;		/* owned chunks allocated, not yet freed */
	pg_atomic_uint64 discarded; /* counts handed to the discard callback */
} UnitControl;

/* What the init callback does. */
typedef enum UnitInitMode
{
	UNIT_INIT_PLAIN,			/* fill the entry */
	UNIT_INIT_FAIL,				/* fill it, then raise an ERROR */
	UNIT_INIT_RACE				/* fill it, then create the same key first */
} UnitInitMode;

typedef struct UnitInit
{
	int64		key;
	int64		tag;
	UnitInitMode mode;
	PgssNgCreateResult inner;	/* UNIT_INIT_RACE: the inner creation's */
} UnitInit;

/* One guarded call of the layer (unit_call). */
typedef enum UnitOp
{
	UNIT_OP_CREATE,
	UNIT_OP_COUNT,
	UNIT_OP_FLUSH,
	UNIT_OP_EVICT
} UnitOp;

typedef struct UnitCall
{
	UnitOp		op;
	UnitInit	init;			/* CREATE, COUNT: key, tag, mode */
	int64		n;				/* COUNT: what to add */
	bool		force;			/* FLUSH */
	/* results */
	PgssNgCreateResult created; /* CREATE */
	bool		counted;		/* COUNT: a pending entry was had */
	bool		still_pending;	/* FLUSH */
} UnitCall;

static bool unit_flush_cb(PgssNgEntryRef *ref, bool nowait);
static void unit_discard_cb(PgssNgEntryRef *ref);
static void unit_free_cb(PgssNgKind *kind, void *shared_data);

static const PgssNgKindDesc unit_desc = {
	.name = "kind_unit",
	.key_size = sizeof(int64),
	.shared_size = sizeof(UnitShared),
	.pending_size = sizeof(UnitPending),
	.max_pending = 32,
	.flush_pending_cb = unit_flush_cb,
	.discard_pending_cb = unit_discard_cb,
	.free_cb = unit_free_cb,
	.needs_room_cb = NULL,
};

static PgssNgKind *unit_kind = NULL;
static UnitControl *unit_ctl = NULL;
static int	unit_max = 1000;
static bool exit_registered = false;
static PgssNgEntryRef *held[UNIT_MAX_HELD];
static int	nheld = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * GUC kind_unit.max: published as the kind's one shared max
 * (pgss_ng_kind_set_max_entries) by whoever sets it, once shared memory is
 * there (the postmaster's first value goes to pgss_ng_kind_shmem_startup)
 */
static void
unit_assign_max(int newval, void *extra)
{
	if (unit_ctl != NULL)
		pgss_ng_kind_set_max_entries(unit_kind, newval);
}

/* Main shared memory and named LWLocks: the kind's and the counters. */
static void
unit_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(pgss_ng_kind_shmem_size(unit_kind, unit_max),
									MAXALIGN(sizeof(UnitControl))));
	pgss_ng_kind_shmem_request(&unit_desc);
}

static void
unit_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pgss_ng_kind_shmem_startup(unit_kind, "kind_unit", unit_max);
	unit_ctl = ShmemInitStruct("kind_unit counters", sizeof(UnitControl),
							   &found);
	if (!found)
	{
		pg_atomic_init_u64(&unit_ctl->inits, 0);
		pg_atomic_init_u64(&unit_ctl->frees, 0);
		pg_atomic_init_u64(&unit_ctl->owned, 0);
		pg_atomic_init_u64(&unit_ctl->discarded, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	unit_kind = pgss_ng_kind_define(&unit_desc);
	DefineCustomIntVariable("kind_unit.max",
							"Sets the maximum number of live entries of the fake kind in this session.",
							NULL, &unit_max, 1000, 4, INT_MAX / 4,
							PGC_SUSET, 0, NULL, unit_assign_max, NULL);
	MarkGUCPrefixReserved("kind_unit");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = unit_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = unit_shmem_startup;
}

/* Exit: flush what is pending, then detach (the owner's duty, kind.h). */
static void
unit_exit(int code, Datum arg)
{
	if (pgss_ng_kind_has_pending(unit_kind))
		pgss_ng_kind_flush(unit_kind, true);
	pgss_ng_kind_detach(unit_kind);
}

/* Attach this backend, once; an ERROR if the library was not preloaded. */
static void
unit_attach(void)
{
	if (unit_ctl == NULL || !pgss_ng_kind_attach(unit_kind))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("kind_unit must be loaded via \"shared_preload_libraries\"")));
	if (!exit_registered)
	{
		before_shmem_exit(unit_exit, (Datum) 0);
		exit_registered = true;
	}
}

/*
 * unit_init
 *		Init callback: fill the entry and allocate its owned chunk; then,
 *		as asked, raise an ERROR (the layer must give the body back), or
 *		create the same key itself (UNIT_INIT_RACE: that entry is published
 *		first, as if another backend had won the race, and this one loses
 *		it).  The nested creation is safe below max only, where creation
 *		holds no lock of the layer.
 */
static bool
unit_init(PgssNgKind *kind, void *shared_data, void *arg)
{
	UnitInit   *ia = (UnitInit *) arg;
	UnitShared *s = (UnitShared *) shared_data;

	s->magic = UNIT_MAGIC_LIVE;
	s->key = ia->key;
	s->tag = ia->tag;
	s->owned = dsa_allocate_extended(pgss_ng_kind_area(kind),
									 UNIT_OWNED_SIZE, DSA_ALLOC_NO_OOM);
	if (DsaPointerIsValid(s->owned))
		pg_atomic_fetch_add_u64(&unit_ctl->owned, 1);
	pg_atomic_fetch_add_u64(&unit_ctl->inits, 1);

	if (ia->mode == UNIT_INIT_FAIL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("kind_unit init callback failed on purpose")));
	if (ia->mode == UNIT_INIT_RACE)
	{
		UnitInit	inner = {.key = ia->key, .tag = ia->tag + 1000,
		.mode = UNIT_INIT_PLAIN};

		ia->inner = pgss_ng_kind_create(kind, &inner.key, unit_init, &inner);
	}
	return DsaPointerIsValid(s->owned);
}

/* Free callback: give back the owned chunk; mark the body freed. */
static void
unit_free_cb(PgssNgKind *kind, void *shared_data)
{
	UnitShared *s = (UnitShared *) shared_data;

	if (DsaPointerIsValid(s->owned))
	{
		dsa_free(pgss_ng_kind_area(kind), s->owned);
		pg_atomic_fetch_sub_u64(&unit_ctl->owned, 1);
	}
	s->owned = InvalidDsaPointer;
	s->magic = UNIT_MAGIC_FREED;
	pg_atomic_fetch_add_u64(&unit_ctl->frees, 1);
}

/* Forget ref in held[]: it is being flushed (and may be released). */
static void
forget_held(PgssNgEntryRef *ref)
{
	int			i;

	for (i = 0; i < nheld; i++)
		if (held[i] == ref)
		{
			held[i] = held[--nheld];
			return;
		}
}

/* Flush callback: merge the pending count, report it as the uses. */
static bool
unit_flush_cb(PgssNgEntryRef *ref, bool nowait)
{
	UnitPending *p = (UnitPending *) ref->pending;
	UnitShared *s = (UnitShared *) ref->shared_data;

	forget_held(ref);
	if (!pgss_ng_kind_lock_entry(ref, nowait))
		return false;
	s->count += p->count;
	s->flushes++;
	pgss_ng_kind_unlock_entry(ref, (double) p->count);
	return true;
}

/* Discard callback: pending counts of an evicted entry. */
static void
unit_discard_cb(PgssNgEntryRef *ref)
{
	pg_atomic_fetch_add_u64(&unit_ctl->discarded,
							(uint64) ((UnitPending *) ref->pending)->count);
}

/* The body of unit_call, under pgss_ng_kind_guard(). */
static void
unit_call_guarded(void *arg)
{
	UnitCall   *c = (UnitCall *) arg;
	PgssNgEntryRef *ref;
	int			i;

	switch (c->op)
	{
		case UNIT_OP_CREATE:
			c->created = pgss_ng_kind_create(unit_kind, &c->init.key,
											 unit_init, &c->init);
			break;
		case UNIT_OP_COUNT:
			ref = pgss_ng_kind_get_pending(unit_kind, &c->init.key,
										   unit_init, &c->init);
			c->counted = ref != NULL;
			if (ref == NULL)
				break;
			((UnitPending *) ref->pending)->count += c->n;
			for (i = 0; i < nheld; i++)
				if (held[i] == ref)
					break;
			if (i == nheld && nheld < UNIT_MAX_HELD)
				held[nheld++] = ref;
			break;
		case UNIT_OP_FLUSH:
			c->still_pending = pgss_ng_kind_flush(unit_kind, c->force);
			break;
		case UNIT_OP_EVICT:
			pgss_ng_kind_run_eviction(unit_kind);
			break;
	}
}

/*
 * unit_call
 *		Run c under pgss_ng_kind_guard(), attached: false if it raised an
 *		ERROR (logged as "kind_unit could not <what>: ...").
 */
static bool
unit_call(UnitCall *c, const char *what)
{
	unit_attach();
	return pgss_ng_kind_guard(unit_kind, what, unit_call_guarded, c);
}

static const char *
result_name(PgssNgCreateResult r)
{
	switch (r)
	{
		case PGSS_NG_CREATE_EXISTS:
			return "exists";
		case PGSS_NG_CREATE_NEW:
			return "created";
		case PGSS_NG_CREATE_FULL:
			return "full";
		case PGSS_NG_CREATE_OUT_OF_MEMORY:
			return "out of memory";
	}
	return "?";
}

/*
 * unit_create
 *		pgss_ng_kind_create of key, its init callback in mode: the result's
 *		name, "error" if an ERROR was raised (and logged by the guard), and
 *		for UNIT_INIT_RACE "/" and the name of the inner creation's result.
 */
static text *
unit_create(int64 key, int64 tag, UnitInitMode mode)
{
	UnitCall	c = {.op = UNIT_OP_CREATE,
		.init = {.key = key, .tag = tag, .mode = mode,
	.inner = PGSS_NG_CREATE_OUT_OF_MEMORY}};

	if (!unit_call(&c, "create an entry"))
		return cstring_to_text("error");
	if (mode == UNIT_INIT_RACE)
		return cstring_to_text(psprintf("%s/%s", result_name(c.created),
										result_name(c.init.inner)));
	return cstring_to_text(result_name(c.created));
}

/* kind_unit_create(key, tag) */
PG_FUNCTION_INFO_V1(kind_unit_create);
Datum
kind_unit_create(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(unit_create(PG_GETARG_INT64(0), PG_GETARG_INT64(1),
								 UNIT_INIT_PLAIN));
}

/* kind_unit_create_failing(key): a creation whose init raises an ERROR */
PG_FUNCTION_INFO_V1(kind_unit_create_failing);
Datum
kind_unit_create_failing(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(unit_create(PG_GETARG_INT64(0), 0, UNIT_INIT_FAIL));
}

/*
 * kind_unit_race(key, tag): a creation that loses the race for its key to
 * one made (tag + 1000) by its own init callback: "<outer>/<inner>".
 */
PG_FUNCTION_INFO_V1(kind_unit_race);
Datum
kind_unit_race(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(unit_create(PG_GETARG_INT64(0), PG_GETARG_INT64(1),
								 UNIT_INIT_RACE));
}

/* kind_unit_count(key, n): add n to the pending count; false if refused */
PG_FUNCTION_INFO_V1(kind_unit_count);
Datum
kind_unit_count(PG_FUNCTION_ARGS)
{
	UnitCall	c = {.op = UNIT_OP_COUNT,
		.init = {.key = PG_GETARG_INT64(0), .mode = UNIT_INIT_PLAIN},
	.n = PG_GETARG_INT64(1)};

	if (!unit_call(&c, "count"))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(c.counted);
}

/* kind_unit_flush(force): pgss_ng_kind_flush; whether something is left */
PG_FUNCTION_INFO_V1(kind_unit_flush);
Datum
kind_unit_flush(PG_FUNCTION_ARGS)
{
	UnitCall	c = {.op = UNIT_OP_FLUSH, .force = PG_GETARG_BOOL(0)};

	if (!unit_call(&c, "flush"))
		PG_RETURN_NULL();
	PG_RETURN_BOOL(c.still_pending);
}

/* kind_unit_evict(): pgss_ng_kind_run_eviction */
PG_FUNCTION_INFO_V1(kind_unit_evict);
Datum
kind_unit_evict(PG_FUNCTION_ARGS)
{
	UnitCall	c = {.op = UNIT_OP_EVICT};

	(void) unit_call(&c, "evict");
	PG_RETURN_VOID();
}

/* kind_unit_exists(key): pgss_ng_kind_exists */
PG_FUNCTION_INFO_V1(kind_unit_exists);
Datum
kind_unit_exists(PG_FUNCTION_ARGS)
{
	int64		key = PG_GETARG_INT64(0);

	unit_attach();
	PG_RETURN_BOOL(pgss_ng_kind_exists(unit_kind, &key));
}

/* A visitor's copy of one entry. */
typedef struct UnitCopy
{
	int64		key;
	UnitShared	data;
	ReturnSetInfo *rsinfo;		/* kind_unit_entries */
} UnitCopy;

static bool
unit_visit(PgssNgKind *kind, const void *key, const void *shared_data,
		   void *arg)
{
	UnitCopy   *cp = (UnitCopy *) arg;

	memcpy(&cp->key, key, sizeof(int64));
	memcpy(&cp->data, shared_data, sizeof(UnitShared));
	return true;
}

/* kind_unit_read(key): the entry's count (pgss_ng_kind_read), or NULL */
PG_FUNCTION_INFO_V1(kind_unit_read);
Datum
kind_unit_read(PG_FUNCTION_ARGS)
{
	int64		key = PG_GETARG_INT64(0);
	UnitCopy	cp;

	unit_attach();
	if (!pgss_ng_kind_read(unit_kind, &key, unit_visit, &cp))
		PG_RETURN_NULL();
	PG_RETURN_INT64(cp.data.count);
}

static void
unit_emit(void *arg)
{
	UnitCopy   *cp = (UnitCopy *) arg;
	Datum		values[4];
	bool		nulls[4] = {0};

	values[0] = Int64GetDatum(cp->key);
	values[1] = Int64GetDatum(cp->data.tag);
	values[2] = Int64GetDatum(cp->data.count);
	values[3] = Int64GetDatum(cp->data.flushes);
	tuplestore_putvalues(cp->rsinfo->setResult, cp->rsinfo->setDesc,
						 values, nulls);
}

/* kind_unit_entries(): every live entry (pgss_ng_kind_foreach) */
PG_FUNCTION_INFO_V1(kind_unit_entries);
Datum
kind_unit_entries(PG_FUNCTION_ARGS)
{
	UnitCopy	cp;

	unit_attach();
	InitMaterializedSRF(fcinfo, 0);
	cp.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	pgss_ng_kind_foreach(unit_kind, unit_visit, unit_emit, &cp);
	return (Datum) 0;
}

/* Keys lo .. hi, for the matching functions. */
typedef struct UnitRange
{
	int64		lo;
	int64		hi;
} UnitRange;

static bool
unit_match(const void *key, void *arg)
{
	UnitRange  *r = (UnitRange *) arg;
	int64		k;

	memcpy(&k, key, sizeof(int64));
	return k >= r->lo && k <= r->hi;
}

/* kind_unit_remove(lo, hi): pgss_ng_kind_remove_matching (NULLs: all) */
PG_FUNCTION_INFO_V1(kind_unit_remove);
Datum
kind_unit_remove(PG_FUNCTION_ARGS)
{
	UnitRange	r;

	unit_attach();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_INT64((int64) pgss_ng_kind_remove_matching(unit_kind,
															 NULL, NULL,
															 NULL));
	r.lo = PG_GETARG_INT64(0);
	r.hi = PG_GETARG_INT64(1);
	PG_RETURN_INT64((int64) pgss_ng_kind_remove_matching(unit_kind,
														 unit_match, &r,
														 NULL));
}

static void
unit_zero(void *shared_data, void *arg)
{
	((UnitShared *) shared_data)->count = 0;
}

/* kind_unit_zero(lo, hi): pgss_ng_kind_update_matching, count := 0 */
PG_FUNCTION_INFO_V1(kind_unit_zero);
Datum
kind_unit_zero(PG_FUNCTION_ARGS)
{
	UnitRange	r = {.lo = PG_GETARG_INT64(0), .hi = PG_GETARG_INT64(1)};

	unit_attach();
	PG_RETURN_INT64((int64) pgss_ng_kind_update_matching(unit_kind,
														 unit_match,
														 unit_zero, &r));
}

/*
 * kind_unit_held_intact(): of the references this backend was given and
 * has not flushed since, how many still point to a body the free callback
 * did not free, with its own key (a removed body must outlive its removal
 * while referenced).
 */
PG_FUNCTION_INFO_V1(kind_unit_held_intact);
Datum
kind_unit_held_intact(PG_FUNCTION_ARGS)
{
	int			n = 0;
	int			i;

	unit_attach();
	for (i = 0; i < nheld; i++)
	{
		const UnitShared *s = (const UnitShared *) held[i]->shared_data;
		int64		key;

		memcpy(&key, held[i]->key, sizeof(int64));
		if (s->magic == UNIT_MAGIC_LIVE && s->key == key)
			n++;
	}
	PG_RETURN_INT32(n);
}

/*
 * kind_unit_counters(): the layer's kind-wide counters
 * (pgss_ng_kind_counters), then the fake kind's own.
 */
PG_FUNCTION_INFO_V1(kind_unit_counters);
Datum
kind_unit_counters(PG_FUNCTION_ARGS)
{
	PgssNgKindCounters kc;
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};

	unit_attach();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	pgss_ng_kind_counters(unit_kind, &kc);
	values[0] = Int64GetDatum(kc.entries);
	values[1] = Int64GetDatum(kc.entries_allocated);
	values[2] = Int64GetDatum(kc.entries_max);
	values[3] = Int64GetDatum(kc.dealloc);
	values[4] = Int64GetDatum(kc.entries_evicted);
	values[5] = Int64GetDatum(kc.backstop_skips);
	values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&unit_ctl->inits));
	values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&unit_ctl->frees));
	values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&unit_ctl->owned));
	values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&unit_ctl->discarded));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values,
													  nulls)));
}

/* kind_unit_reset_counters(): pgss_ng_kind_reset_counters */
PG_FUNCTION_INFO_V1(kind_unit_reset_counters);
Datum
kind_unit_reset_counters(PG_FUNCTION_ARGS)
{
	unit_attach();
	pgss_ng_kind_reset_counters(unit_kind);
	PG_RETURN_VOID();
}

/*
 * kind_unit_restore_counters(dealloc, entries_evicted, skips):
 * pgss_ng_kind_restore_counters (no eviction time, no last eviction)
 */
PG_FUNCTION_INFO_V1(kind_unit_restore_counters);
Datum
kind_unit_restore_counters(PG_FUNCTION_ARGS)
{
	unit_attach();
	pgss_ng_kind_restore_counters(unit_kind, PG_GETARG_INT64(0),
								  PG_GETARG_INT64(1), PG_GETARG_INT64(2),
								  0, 0);
	PG_RETURN_VOID();
}
