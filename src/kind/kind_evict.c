/*-------------------------------------------------------------------------
 *
 * kind_evict.c
 *	  What bounds a kind's entries: usage (the eviction value), the
 *	  eviction queue, eviction of the least valuable entries when live ones
 *	  exceed max or the kind's memory is short, the backstop; the removal
 *	  of an entry from the hash.  Owns the queue, dealloc, entries_evicted,
 *	  eviction_ns and last_eviction.  docs/design.md, "Eviction and the
 *	  backstop"; locking: <name>_dealloc, taken without waiting (kind.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "lib/binaryheap.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "kind_int.h"

/* One eviction candidate: an examined entry nobody held a reference to. */
typedef struct EvictCandidate
{
	double		value;
	uint64		generation;
	dsa_pointer node;			/* its node; invalid once evicted */
} EvictCandidate;

/*
 * kind_decayed_usage
 *		An entry's usage brought from its time t to now: it halves every
 *		PGSS_NG_USAGE_HALF_LIFE_MS.  Never grows (a t in the future, from a
 *		clock read just before ours in another backend, counts as now).
 */
double
kind_decayed_usage(double usage, TimestampTz t, TimestampTz now)
{
	if (now <= t)
		return usage;
	return usage * exp2(-(double) (now - t) /
						(PGSS_NG_USAGE_HALF_LIFE_MS * 1000.0));
}

/*
 * kind_backstop
 *		Most bodies (live + removed, not yet freed) that may exist at once:
 *		max + Min(max, PGSS_NG_BACKSTOP_MAX_EXTRA).
 */
int
kind_backstop(PgssNgKind *kind)
{
	int			max = kind_max(kind);

	return max + Min(max, PGSS_NG_BACKSTOP_MAX_EXTRA);
}

#define NODE(kind, np) ((PgssNgEvictNode *) dsa_get_address((kind)->area, (np)))
/* the header of the body whose chunk ends with node (mapped: same chunk) */
#define NODE_HDR(kind, node) \
	((PgssNgBodyHeader *) (((char *) (node)) - KIND_NODE_OFFSET(kind)))

/*
 * node_map
 *		Make sure node np (if valid) is mapped in this backend.
 *		dsa_get_address() raises an ERROR when it cannot map a segment, so
 *		the queue code maps every node it will write to before its first
 *		write: once the queue's links change, nothing can fail until they
 *		are consistent again.
 */
static inline void
node_map(PgssNgKind *kind, dsa_pointer np)
{
	if (DsaPointerIsValid(np))
		(void) dsa_get_address(kind->area, np);
}

/*
 * kind_push_new
 *		Put the node np (at node) of an entry being published on the stack
 *		of new nodes.  Called by the creator with the entry's partition lock
 *		held, so that a reset or an eviction, which needs that lock to
 *		remove the entry, finds its node.  No other lock: a
 *		compare-and-exchange on the stack's head.
 */
void
kind_push_new(PgssNgKind *kind, dsa_pointer np, PgssNgEvictNode *node)
{
	dsa_pointer head = dsa_pointer_atomic_read(&kind->ctl->evict_new);

	do
		node->next = head;
	while (!dsa_pointer_atomic_compare_exchange(&kind->ctl->evict_new,
												&head, np));
}

/*
 * queue_push_front
 *		Put the chain of nodes first .. last (linked by next, and by prev
 *		but for first; not in the queue) at the queue's front.
 *		<name>_dealloc held.
 */
static void
queue_push_front(PgssNgKind *kind, dsa_pointer first, dsa_pointer last)
{
	PgssNgKindControl *ctl = kind->ctl;

	NODE(kind, first)->prev = InvalidDsaPointer;
	NODE(kind, last)->next = ctl->evict_front;
	if (DsaPointerIsValid(ctl->evict_front))
		NODE(kind, ctl->evict_front)->prev = last;
	else
		ctl->evict_back = last;
	ctl->evict_front = first;
}

/*
 * kind_take_new
 *		Move the stack of new nodes to the queue's front, newest first: the
 *		stack is walked (setting prev) before a compare-and-exchange takes
 *		it, nodes pushed meanwhile walked in turn, so an ERROR while mapping
 *		leaves it whole.  One step per entry created since the last call.
 *		<name>_dealloc held.
 */
void
kind_take_new(PgssNgKind *kind)
{
	PgssNgKindControl *ctl = kind->ctl;
	dsa_pointer first = dsa_pointer_atomic_read(&ctl->evict_new);
	dsa_pointer walked = InvalidDsaPointer;	/* top of the part walked */
	dsa_pointer oldest = InvalidDsaPointer;

	if (!DsaPointerIsValid(first))
		return;
	node_map(kind, ctl->evict_front);
	do
	{
		dsa_pointer newer = InvalidDsaPointer;
		dsa_pointer np;

		for (np = first; np != walked;)
		{
			PgssNgEvictNode *node = NODE(kind, np);

			node->prev = newer;
			newer = np;
			np = node->next;
		}
		if (DsaPointerIsValid(walked))
			NODE(kind, walked)->prev = newer;
		else
			oldest = newer;
		walked = first;
	} while (!dsa_pointer_atomic_compare_exchange(&ctl->evict_new, &first,
												  InvalidDsaPointer));

	queue_push_front(kind, first, oldest);
}

/*
 * queue_unlink
 *		Take node np out of the eviction queue.  <name>_dealloc held.
 */
static void
queue_unlink(PgssNgKind *kind, dsa_pointer np)
{
	PgssNgKindControl *ctl = kind->ctl;
	PgssNgEvictNode *node = NODE(kind, np);

	if (DsaPointerIsValid(node->prev))
		NODE(kind, node->prev)->next = node->next;
	else
		ctl->evict_front = node->next;
	if (DsaPointerIsValid(node->next))
		NODE(kind, node->next)->prev = node->prev;
	else
		ctl->evict_back = node->prev;
}

/*
 * queue_front_to_back
 *		Move the queue's front up to (not including) node rest to its back,
 *		in their order: rest becomes the front.  Nothing to do when rest is
 *		invalid (the whole queue) or the front.  <name>_dealloc held.
 */
static void
queue_front_to_back(PgssNgKind *kind, dsa_pointer rest)
{
	PgssNgKindControl *ctl = kind->ctl;
	dsa_pointer first = ctl->evict_front;
	dsa_pointer last;

	if (!DsaPointerIsValid(rest) || rest == first)
		return;
	last = NODE(kind, rest)->prev;
	NODE(kind, rest)->prev = InvalidDsaPointer;
	NODE(kind, last)->next = InvalidDsaPointer;
	NODE(kind, first)->prev = ctl->evict_back;
	NODE(kind, ctl->evict_back)->next = first;
	ctl->evict_front = rest;
	ctl->evict_back = last;
}

/*
 * kind_remove_node
 *		Remove the entry of queue node np from the hash for reason (an
 *		eviction only if nobody holds a reference), unlink its node and
 *		release the hash's reference; whether it was removed.  <name>_dealloc
 *		held; takes the partition lock exclusively, then the entry lock.
 *		The neighbours are mapped first and the queue is consistent before
 *		freeing, which may raise.
 */
bool
kind_remove_node(PgssNgKind *kind, dsa_pointer np, PgssNgRemoval reason)
{
	PgssNgEvictNode *node = NODE(kind, np);
	void	   *he;
	dsa_pointer body = KIND_NODE_BODY(kind, np);
	PgssNgBodyHeader *hdr = NODE_HDR(kind, node);

	/* queue_unlink below writes to the neighbours */
	node_map(kind, node->prev);
	node_map(kind, node->next);
	he = dshash_find(kind->hash, PgssNgNodeKey(node), true);
	if (he == NULL || HASH_TAIL(kind, he)->body != body)
	{
		/* every queued node's entry is in the hash */
		if (he != NULL)
			dshash_release_lock(kind->hash, he);
		elog(ERROR, "%s: the entry of an eviction node is not in the hash",
			 kind->desc->name);
	}

	/*
	 * An eviction leaves an entry a backend is counting into.  With the
	 * partition lock held exclusively no reference can be taken now, so
	 * this test is exact.
	 */
	if (reason == PGSS_NG_REMOVAL_EVICTION &&
		pg_atomic_read_u32(&hdr->refcount) > 1)
	{
		dshash_release_lock(kind->hash, he);
		return false;
	}

	kind_mark_removed(hdr, reason);
	dshash_delete_entry(kind->hash, he);
	queue_unlink(kind, np);
	/* final: out of the hash, and nobody held a reference (above) */
	if (reason == PGSS_NG_REMOVAL_EVICTION && kind->desc->evicted_cb)
		kind->desc->evicted_cb(kind, PgssNgNodeKey(node),
							   PgssNgSharedData(hdr));
	/* the node goes with the body's chunk */
	kind_forget_body(kind, body, hdr);
	return true;
}

/*
 * candidate_order
 *		Order of eviction candidates: lowest value first, and among equal
 *		values the older entry (lower generation) first.  Negative if a
 *		goes before b.
 */
static inline int
candidate_order(const EvictCandidate *a, const EvictCandidate *b)
{
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	/* older generation first: same value, created earlier */
	if (a->generation != b->generation)
		return a->generation < b->generation ? -1 : 1;
	return 0;
}

/*
 * candidate_cmp
 *		qsort comparator of the kept candidates (candidate_order).  Called
 *		only by the sort after the examination (whose heap has its own
 *		comparator, candidate_heap_cmp).
 */
static int
candidate_cmp(const void *a, const void *b)
{
	return candidate_order((const EvictCandidate *) a,
						   (const EvictCandidate *) b);
}

/*
 * candidate_heap_cmp
 *		binaryheap comparator of the examination's heap, whose nodes point
 *		to candidates: the most valuable candidate kept is the heap's first.
 */
static int
candidate_heap_cmp(Datum a, Datum b, void *arg)
{
	return candidate_order((const EvictCandidate *) DatumGetPointer(a),
						   (const EvictCandidate *) DatumGetPointer(b));
}

/*
 * What a run's examination of the queue collects: the "keep" least
 * valuable unreferenced entries seen, in cands; heap holds pointers to the
 * used slots, the most valuable first (the first to be replaced by a less
 * valuable one).
 */
typedef struct EvictExam
{
	EvictCandidate *cands;		/* keep slots, ncand of them used */
	binaryheap *heap;			/* the used slots */
	int			keep;			/* capacity */
	int			ncand;
	int			nvisited;		/* entries examined */
	int			npinned;		/* of which referenced */
	dsa_pointer rest;			/* first node not examined, or invalid */
	TimestampTz now;			/* the values are decayed to this time */
} EvictExam;

/*
 * exam_offer
 *		Offer candidate c to the examination: kept while there is room,
 *		otherwise in place of the most valuable candidate kept if it is
 *		less valuable (and left out if not).
 */
static void
exam_offer(EvictExam *ex, const EvictCandidate *c)
{
	EvictCandidate *slot;

	if (ex->ncand < ex->keep)
	{
		slot = &ex->cands[ex->ncand++];
		*slot = *c;
		binaryheap_add(ex->heap, PointerGetDatum(slot));
	}
	else
	{
		slot = (EvictCandidate *)
			DatumGetPointer(binaryheap_first(ex->heap));
		if (candidate_order(c, slot) >= 0)
			return;
		*slot = *c;
		binaryheap_replace_first(ex->heap, PointerGetDatum(slot));
	}
}

/*
 * examine_queue
 *		From the queue's front, examine up to budget entries and keep the
 *		keep least valuable unreferenced ones (a bounded binaryheap),
 *		counting the referenced.  Refcount and usage are read without a
 *		lock; the bodies cannot be freed meanwhile (only the holder of
 *		<name>_dealloc removes).  Memory: CurrentMemoryContext.
 */
static void
examine_queue(PgssNgKind *kind, EvictExam *ex, int keep, int budget)
{
	TimestampTz now = GetCurrentTimestamp();
	dsa_pointer np;
	dsa_pointer prev PG_USED_FOR_ASSERTS_ONLY = InvalidDsaPointer;

	ex->now = now;
	ex->keep = Max(keep, 1);
	ex->cands = palloc_extended(sizeof(EvictCandidate) * ex->keep,
								MCXT_ALLOC_HUGE);
	ex->heap = binaryheap_allocate(ex->keep, candidate_heap_cmp, NULL);
	ex->ncand = 0;
	ex->nvisited = 0;
	ex->npinned = 0;

	for (np = kind->ctl->evict_front;
		 DsaPointerIsValid(np) && ex->nvisited < budget;
		 np = NODE(kind, np)->next)
	{
		PgssNgEvictNode *node = NODE(kind, np);
		/* the body starts the node's chunk: no mapping to look up */
		PgssNgBodyHeader *hdr = NODE_HDR(kind, node);
		EvictCandidate c;

		Assert(node->prev == prev);
		prev = np;
		ex->nvisited++;
		/* referenced: some backend is counting into it right now */
		if (pg_atomic_read_u32(&hdr->refcount) > 1)
		{
			ex->npinned++;
			continue;
		}
		c.value = kind_decayed_usage(hdr->usage, hdr->usage_time, now);
		c.generation = hdr->generation;
		c.node = np;
		exam_offer(ex, &c);
	}
	ex->rest = np;
	/* requeue_examined writes to these two, and to examined nodes */
	node_map(kind, ex->rest);
	node_map(kind, kind->ctl->evict_back);
}

/*
 * needs_room
 *		Whether the kind says its own memory is short (needs_room_cb; false
 *		for a kind without one): past its high-water mark when starting a
 *		run, past its low-water mark when going on with one.
 */
static bool
needs_room(PgssNgKind *kind, bool starting)
{
	return kind->desc->needs_room_cb != NULL &&
		kind->desc->needs_room_cb(kind, starting);
}

/*
 * requeue_examined
 *		After the victims of a run: the candidates left (ex->cands, sorted,
 *		the evicted ones invalid) go to the queue's front, least
 *		valuable first, as the next run's pool; the other examined entries
 *		(referenced, or more valuable) go to its back, in their order.
 *		Pointer moves between nodes examine_queue mapped: no ERROR.
 *		<name>_dealloc held.
 */
static void
requeue_examined(PgssNgKind *kind, EvictExam *ex)
{
	int			i;

	for (i = 0; i < ex->ncand; i++)
		if (DsaPointerIsValid(ex->cands[i].node))
			queue_unlink(kind, ex->cands[i].node);
	queue_front_to_back(kind, ex->rest);
	for (i = ex->ncand - 1; i >= 0; i--)
		if (DsaPointerIsValid(ex->cands[i].node))
			queue_push_front(kind, ex->cands[i].node, ex->cands[i].node);
}

/*
 * pgss_ng_kind_run_eviction
 *		Evict the least valuable entries the queue shows: down to max less
 *		PGSS_NG_EVICT_PERCENT percent when live entries exceed max, or, when
 *		needs_room_cb says the kind's memory is past its high-water mark,
 *		until it is below its low-water mark (a batch at most).  Returns at
 *		once if another backend holds <name>_dealloc.  The steps and counts:
 *		docs/design.md, "A run".  Memory: a temporary context.  Errors: out
 *		of memory (the caller's guard releases the locks).
 */
void
pgss_ng_kind_run_eviction(PgssNgKind *kind)
{
	PgssNgKindControl *ctl = kind->ctl;
	int			max = kind_max(kind);
	int			batch;
	int			nwant;
	int			nevicted = 0;
	int			i;
	bool		for_room = false;
	EvictExam	ex;
	MemoryContext cxt;
	MemoryContext oldcxt;
	instr_time	start;
	instr_time	duration;

	if (pg_atomic_read_u32(&ctl->entries_live) <= (uint32) max)
	{
		/* below max: evict only if the kind's own memory is short */
		if (!needs_room(kind, true))
			return;
		for_room = true;
	}
	if (!LWLockConditionalAcquire(kind->dealloc_lock, LW_EXCLUSIVE))
		return;
	INSTR_TIME_SET_CURRENT(start);

	batch = Max(1, (int) ((int64) max * PGSS_NG_EVICT_PERCENT / 100));
	if (for_room)
		nwant = batch;			/* at most, until there is room */
	else
		nwant = (int) pg_atomic_read_u32(&ctl->entries_live) - (max - batch);
	if (nwant <= 0)
	{
		LWLockRelease(kind->dealloc_lock);
		return;
	}

	cxt = AllocSetContextCreate(CurrentMemoryContext, "kind eviction",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSetIdentifier(cxt, kind->desc->name);
	oldcxt = MemoryContextSwitchTo(cxt);

	kind_take_new(kind);
	/* a quarter more than wanted: some may be in use by then */
	examine_queue(kind, &ex, nwant + nwant / 4 + 16,
				  Max(PGSS_NG_EVICT_VISIT_MIN,
					  (int) Min((int64) nwant * PGSS_NG_EVICT_VISIT_FACTOR,
								PG_INT32_MAX)));
	qsort(ex.cands, ex.ncand, sizeof(EvictCandidate), candidate_cmp);

	/*
	 * Entries pinned by references cannot go: count them as kept, so that
	 * many pinned entries do not make us evict every unpinned one, however
	 * valuable.  Evict one batch, or more when the excess is not pinned
	 * (e.g. pgss_ng.max was just lowered).
	 */
	if (!for_room)
		nwant = Min(nwant,
					Max(batch, (int) pg_atomic_read_u32(&ctl->entries_live) -
						max - ex.npinned));

	for (i = 0; i < ex.ncand && nevicted < nwant; i++)
	{
		uint64		h;

		/* evicting for room: stop as soon as there is enough */
		if (for_room && !needs_room(kind, false))
			break;
		/* the key goes with the body: hash it first */
		h = kind_ghost_hash(kind,
							PgssNgNodeKey(NODE(kind, ex.cands[i].node)));
		if (kind_remove_node(kind, ex.cands[i].node, PGSS_NG_REMOVAL_EVICTION))
		{
			kind_ghost_remember(kind, h, ex.cands[i].value, ex.now);
			ex.cands[i].node = InvalidDsaPointer;
			nevicted++;
		}
	}
	requeue_examined(kind, &ex);
	if (nevicted > 0)
	{
		pg_atomic_fetch_add_u64(&ctl->dealloc, 1);
		pg_atomic_fetch_add_u64(&ctl->entries_evicted, nevicted);
		pg_atomic_write_u64(&ctl->last_eviction,
							(uint64) GetCurrentTimestamp());
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	pg_atomic_fetch_add_u64(&ctl->eviction_ns,
							(uint64) (INSTR_TIME_GET_DOUBLE(duration) * 1e9));
	LWLockRelease(kind->dealloc_lock);
}

/*
 * pgss_ng_kind_usage
 *		The usage of the entry whose kind data is shared_data, decayed to
 *		now.  For pgss_ng_kind_foreach() visitors (entry lock held).
 */
double
pgss_ng_kind_usage(const void *shared_data)
{
	const PgssNgBodyHeader *hdr = (const PgssNgBodyHeader *)
		((const char *) shared_data - PGSS_NG_SHARED_DATA_OFFSET);

	return kind_decayed_usage(hdr->usage, hdr->usage_time,
						 GetCurrentTimestamp());
}

/*
 * pgss_ng_kind_decayed_usage
 *		A value of the kind's own that decays as usage does (halving every
 *		PGSS_NG_USAGE_HALF_LIFE_MS), brought from its time t to now: for a
 *		kind that ranks parts of its entries the way eviction ranks
 *		entries (the statement kind's plan rows).
 */
double
pgss_ng_kind_decayed_usage(double usage, TimestampTz t, TimestampTz now)
{
	return kind_decayed_usage(usage, t, now);
}
