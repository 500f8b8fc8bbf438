/*-------------------------------------------------------------------------
 *
 * plantext.c
 *	  The plan text arena (plantext.h): one DSA chunk per plan row's text,
 *	  charged against pgss_ng.plan_text_memory; not deduplicated, not evicted
 *	  for room (a text over the cap, or over 1/8 of it, is not stored: plan
 *	  NULL, counted in plan_text_dropped); rows give their texts back when
 *	  they go.  docs/design.md, "Plan rows".  Locking: none; see plantext.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "plantext.h"

/* GUC pgss_ng.plan_text_memory: the arena's cap, in kB */
static int	plantext_memory_kb = 16384;

typedef struct PlanTextNode
{
	uint32		len;			/* bytes, not counting the NUL */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} PlanTextNode;

#define PLANTEXT_NODE_SIZE(len)	(offsetof(PlanTextNode, data) + (len) + 1)

/* The largest text stored: 1/PLANTEXT_SHARE of the cap. */
#define PLANTEXT_SHARE			8

typedef struct PlanTextControl
{
	uint64		limit_bytes;	/* fixed at server start */
	pg_atomic_uint64 bytes;		/* node sizes of the stored texts: capped */
	pg_atomic_uint64 dropped;	/* texts not stored */
	pg_atomic_uint64 failures;	/* captures that raised an ERROR */
} PlanTextControl;

static PlanTextControl *plantext_ctl = NULL;

/*
 * pgss_ng_plantext_init
 *		Define pgss_ng.plan_text_memory (kB, fixed at server start).
 *		Called from _PG_init while preloading.
 */
void
pgss_ng_plantext_init(void)
{
	DefineCustomIntVariable("pgss_ng.plan_text_memory",
							"Sets the shared memory available to the plan "
							"texts of pgss_ng.",
							NULL,
							&plantext_memory_kb,
							16384,
							64,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/*
 * pgss_ng_plantext_shmem_size
 *		Bytes of main shared memory for the arena's control block.
 */
Size
pgss_ng_plantext_shmem_size(void)
{
	return MAXALIGN(sizeof(PlanTextControl));
}

/*
 * pgss_ng_plantext_shmem_startup
 *		Create or find the arena's control block.  Called with
 *		AddinShmemInitLock held.
 */
void
pgss_ng_plantext_shmem_startup(void)
{
	bool		found;

	plantext_ctl = ShmemInitStruct("pgss_ng plan texts",
								   sizeof(PlanTextControl), &found);
	if (!found)
	{
		plantext_ctl->limit_bytes = (uint64) plantext_memory_kb * 1024;
		pg_atomic_init_u64(&plantext_ctl->bytes, 0);
		pg_atomic_init_u64(&plantext_ctl->dropped, 0);
		pg_atomic_init_u64(&plantext_ctl->failures, 0);
	}
}

/*
 * pgss_ng_plantext_store
 *		Store len bytes of text; InvalidDsaPointer (counted in dropped) if
 *		it does not fit under the cap, is over 1/PLANTEXT_SHARE of it, or
 *		shared memory ran out.  The charge is reserved before allocating,
 *		by a compare-and-exchange loop: exact without a lock.  Errors: none
 *		of its own (DSA_ALLOC_NO_OOM); a DSM segment that cannot be made
 *		raises in dsa_allocate, after the charge is given back.
 */
dsa_pointer
pgss_ng_plantext_store(dsa_area *area, const char *text, int len)
{
	Size		size = PLANTEXT_NODE_SIZE(len);
	uint64		limit = plantext_ctl->limit_bytes;
	uint64		cur = pg_atomic_read_u64(&plantext_ctl->bytes);
	dsa_pointer p = InvalidDsaPointer;
	PlanTextNode *node;

	if ((uint64) size > limit / PLANTEXT_SHARE)
	{
		pg_atomic_fetch_add_u64(&plantext_ctl->dropped, 1);
		return InvalidDsaPointer;
	}
	do
	{
		if (cur + size > limit)
		{
			pg_atomic_fetch_add_u64(&plantext_ctl->dropped, 1);
			return InvalidDsaPointer;
		}
	} while (!pg_atomic_compare_exchange_u64(&plantext_ctl->bytes, &cur,
											 cur + size));

	PG_TRY();
	{
		p = dsa_allocate_extended(area, size, DSA_ALLOC_NO_OOM);
	}
	PG_CATCH();
	{
		pg_atomic_fetch_sub_u64(&plantext_ctl->bytes, size);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!DsaPointerIsValid(p))
	{
		pg_atomic_fetch_sub_u64(&plantext_ctl->bytes, size);
		pg_atomic_fetch_add_u64(&plantext_ctl->dropped, 1);
		return InvalidDsaPointer;
	}
	node = dsa_get_address(area, p);
	node->len = len;
	memcpy(node->data, text, len);
	node->data[len] = '\0';
	return p;
}

/*
 * pgss_ng_plantext_data
 *		The bytes of a stored text (NUL-terminated, *len bytes before the
 *		NUL): valid while its plan row holds it.  No lock.
 */
const char *
pgss_ng_plantext_data(dsa_area *area, dsa_pointer text, int *len)
{
	PlanTextNode *node = dsa_get_address(area, text);

	*len = node->len;
	return node->data;
}

/*
 * pgss_ng_plantext_release
 *		Free a text (InvalidDsaPointer: nothing) and give its charge back.
 *		No lock but DSA's own.
 */
void
pgss_ng_plantext_release(dsa_area *area, dsa_pointer text)
{
	Size		size;

	if (!DsaPointerIsValid(text))
		return;
	size = PLANTEXT_NODE_SIZE(((PlanTextNode *) dsa_get_address(area, text))->len);
	dsa_free(area, text);
	pg_atomic_fetch_sub_u64(&plantext_ctl->bytes, size);
}

/*
 * pgss_ng_plantext_count_failure
 *		Count an EXPLAIN capture that raised an ERROR (planid.c).
 */
void
pgss_ng_plantext_count_failure(void)
{
	pg_atomic_fetch_add_u64(&plantext_ctl->failures, 1);
}

/*
 * pgss_ng_plantext_stats
 *		Copy the arena's counters (each read atomically).
 */
void
pgss_ng_plantext_stats(PgssNgPlanTextStats *stats)
{
	stats->bytes = (int64) pg_atomic_read_u64(&plantext_ctl->bytes);
	stats->limit_bytes = (int64) plantext_ctl->limit_bytes;
	stats->dropped = (int64) pg_atomic_read_u64(&plantext_ctl->dropped);
	stats->failures = (int64) pg_atomic_read_u64(&plantext_ctl->failures);
}

/*
 * pgss_ng_plantext_reset_counters
 *		Restart the event counters (full reset).
 */
void
pgss_ng_plantext_reset_counters(void)
{
	pg_atomic_write_u64(&plantext_ctl->dropped, 0);
	pg_atomic_write_u64(&plantext_ctl->failures, 0);
}
