/*-------------------------------------------------------------------------
 *
 * hist_store.c
 *	  A shared entry's time histograms stored as used (hist_store.h): none
 *	  up to two calls, then one DSA chunk with each histogram's window and
 *	  room to spare, replaced by a larger one as needed.  A merge allocates
 *	  at most one chunk, before it changes anything; without one the
 *	  histograms are lost (PgssNgHistStats.dropped).  docs/design.md, "Time
 *	  histograms".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind/kind.h"

#include "hist_store.h"

#define CHUNK_HEADER	offsetof(PgssNgHistChunk, count)

/* bytes of a chunk holding caps[] counts */
static inline Size
chunk_size(const int *caps)
{
	Size		n = 0;

	for (int w = 0; w < PGSS_NG_HIST_NHIST; w++)
		n += caps[w];
	return CHUNK_HEADER + n * sizeof(uint32);
}

/* the counts of histogram w in chunk c (count of bucket base[w] first) */
static inline uint32 *
chunk_counts(PgssNgHistChunk *c, int w)
{
	uint32	   *p = c->count;

	for (int v = 0; v < w; v++)
		p += c->cap[v];
	return p;
}

/* whether histogram w's counts are in chunk c (NULL: no chunk) */
static inline bool
in_chunk(const PgssNgHistStore *hs, const PgssNgHistChunk *c, int w)
{
	return c != NULL && c->cap[w] > 0 && !hs->lost[w];
}

/* the calls of add's histogram w */
static uint64
add_total(const PgssNgHistAdd *add, int w)
{
	uint64		n = 0;

	for (int i = 0; i < add->len[w]; i++)
		n += add->count[w][i];
	return n;
}

/* saturating add of one count */
static inline uint32
add_sat(uint32 a, uint64 b)
{
	uint64		s = (uint64) a + b;

	return s > PG_UINT32_MAX ? PG_UINT32_MAX : (uint32) s;
}

/*
 * fit_window
 *		The buckets [*base, *base + *cap) a new chunk gives a histogram
 *		whose calls lie in [lo, hi): room more, spread on both sides,
 *		inside the bucket range.
 */
static void
fit_window(int lo, int hi, int room, int *base, int *cap)
{
	int			len = hi - lo;
	int			c = Min(len + room, PGSS_NG_HIST_NBUCKETS);
	int			b = lo - (c - len) / 2;

	b = Min(b, PGSS_NG_HIST_NBUCKETS - c);
	*base = Max(b, 0);
	*cap = c;
}

/*
 * plan_chunk
 *		The rooms of a new chunk: histograms that grow (grow[w], their
 *		calls in [lo[w], hi[w])) get a quarter more, at least GROW_ROOM
 *		buckets, plus what is left of the DSA size class the chunk falls
 *		in (shared between them); the others keep theirs (base and cap as
 *		given).
 */
#define GROW_ROOM	4
static void
plan_chunk(const bool *grow, const int *lo, const int *hi, int *base,
		   int *cap)
{
	int			room[PGSS_NG_HIST_NHIST];
	int			ngrow = 0;
	int			spare;
	Size		size;
	int			w;

	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		if (grow[w])
		{
			room[w] = Max(GROW_ROOM, (hi[w] - lo[w]) / 4);
			fit_window(lo[w], hi[w], room[w], &base[w], &cap[w]);
			ngrow++;
		}
	size = chunk_size(cap);
	spare = (pgss_ng_dsa_allocated_size(size) - size) / sizeof(uint32);
	for (w = 0; w < PGSS_NG_HIST_NHIST && spare >= ngrow; w++)
		if (grow[w])
			fit_window(lo[w], hi[w], room[w] + spare / ngrow, &base[w],
					   &cap[w]);
}

/*
 * count_into
 *		Add n calls at bucket b of histogram w of chunk c, whose room holds
 *		b; the window grows to it.
 */
static inline void
count_into(PgssNgHistChunk *c, int w, int b, uint64 n)
{
	uint32	   *cnt = chunk_counts(c, w);
	int			hi = c->lo[w] + c->len[w];

	Assert(b >= c->base[w] && b < c->base[w] + c->cap[w]);
	cnt[b - c->base[w]] = add_sat(cnt[b - c->base[w]], n);
	if (c->len[w] == 0)
	{
		c->lo[w] = b;
		c->len[w] = 1;
		return;
	}
	if (b < c->lo[w])
		c->lo[w] = b;
	hi = Max(hi, b + 1);
	c->len[w] = hi - c->lo[w];
}

/*
 * pgss_ng_hist_store_stats_init
 *		Zero the byte and drop counters (shared memory startup).
 */
void
pgss_ng_hist_store_stats_init(PgssNgHistStats *st)
{
	pg_atomic_init_u64(&st->bytes, 0);
	pg_atomic_init_u64(&st->dropped, 0);
}

/*
 * free_chunk
 *		Free a chunk and count its bytes out.
 */
static void
free_chunk(dsa_area *area, dsa_pointer dp, PgssNgHistChunk *c,
		   PgssNgHistStats *st)
{
	int			caps[PGSS_NG_HIST_NHIST];

	for (int w = 0; w < PGSS_NG_HIST_NHIST; w++)
		caps[w] = c->cap[w];
	pg_atomic_fetch_sub_u64(&st->bytes,
							pgss_ng_dsa_allocated_size(chunk_size(caps)));
	dsa_free(area, dp);
}

/*
 * lose
 *		Histogram w is lost: count its calls (in chunk c, or small) and
 *		those of add's histogram w, if add, as dropped.  Its room in the
 *		chunk stays unused until the chunk is replaced or freed.
 */
static void
lose(PgssNgHistStore *hs, PgssNgHistChunk *c, PgssNgHistStats *st, int w,
	 const PgssNgHistAdd *add)
{
	uint64		n = add ? add_total(add, w) : 0;

	if (in_chunk(hs, c, w))
	{
		const uint32 *cnt = chunk_counts(c, w);

		for (int i = 0; i < c->len[w]; i++)
			n += cnt[c->lo[w] - c->base[w] + i];
	}
	else
		n += hs->nsmall[w];
	hs->nsmall[w] = 0;
	hs->lost[w] = true;
	if (n > 0)
		pg_atomic_fetch_add_u64(&st->dropped, n);
}

/*
 * pgss_ng_hist_store_merge
 *		Add the calls of add into hs's histograms; min_ms and max_ms are each
 *		phase's min and max before this merge (a small histogram's calls).  A
 *		chunk is allocated only where a histogram outgrows its room, if
 *		may_alloc (when not NULL) says so; without one, those histograms are
 *		lost.  Entry lock held exclusively.  Errors: only dsa's (not out of
 *		memory), before anything changed.
 */
void
pgss_ng_hist_store_merge(dsa_area *area, PgssNgHistStore *hs,
						 PgssNgHistStats *st, const PgssNgHistAdd *add,
						 const double *min_ms, const double *max_ms,
						 PgssNgHistMayAllocFn may_alloc)
{
	PgssNgHistChunk *c = NULL;
	dsa_pointer old_dp = hs->chunk;
	PgssNgHistChunk *old = NULL;
	int			need_lo[PGSS_NG_HIST_NHIST] = {0};
	int			need_hi[PGSS_NG_HIST_NHIST] = {0};
	bool		grow[PGSS_NG_HIST_NHIST];
	bool		any_grow = false;
	int			w;

	if (DsaPointerIsValid(old_dp))
		c = old = dsa_get_address(area, old_dp);

	/* what each histogram needs; nothing changes yet */
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		int			lo = add->lo[w];
		int			hi = add->lo[w] + add->len[w];

		grow[w] = false;
		if (add->len[w] == 0)
			continue;
		if (hs->lost[w])
		{
			/* lost until the next min/max reset: not kept either */
			pg_atomic_fetch_add_u64(&st->dropped, add_total(add, w));
			continue;
		}
		if (in_chunk(hs, old, w))
		{
			if (old->len[w] > 0)
			{
				lo = Min(lo, old->lo[w]);
				hi = Max(hi, old->lo[w] + old->len[w]);
			}
			grow[w] = lo < old->base[w] || hi > old->base[w] + old->cap[w];
		}
		else
		{
			int			b;

			if (hs->nsmall[w] + add_total(add, w) <= 2)
				continue;		/* stays small */
			/* the small calls' buckets join the chunk */
			for (int k = 0; k < hs->nsmall[w]; k++)
			{
				b = pgss_ng_hist_bucket(k == 0 ? min_ms[w] : max_ms[w]);
				lo = Min(lo, b);
				hi = Max(hi, b + 1);
			}
			grow[w] = true;
		}
		need_lo[w] = lo;
		need_hi[w] = hi;
		any_grow |= grow[w];
	}

	if (any_grow)
	{
		int			base[PGSS_NG_HIST_NHIST];
		int			cap[PGSS_NG_HIST_NHIST];
		dsa_pointer dp = InvalidDsaPointer;

		for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		{
			if (!grow[w] && in_chunk(hs, old, w))
			{
				base[w] = old->base[w];
				cap[w] = old->cap[w];
			}
			else
				base[w] = cap[w] = 0;
		}
		plan_chunk(grow, need_lo, need_hi, base, cap);
		if (may_alloc == NULL || may_alloc())
			dp = dsa_allocate_extended(area, chunk_size(cap),
									   DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
		if (DsaPointerIsValid(dp))
		{
			c = dsa_get_address(area, dp);
			pg_atomic_fetch_add_u64(&st->bytes,
									pgss_ng_dsa_allocated_size(chunk_size(cap)));
			/* from here on nothing raises an ERROR */
			for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
			{
				c->base[w] = base[w];
				c->cap[w] = cap[w];
				if (cap[w] > 0 && in_chunk(hs, old, w))
				{
					c->lo[w] = old->lo[w];
					c->len[w] = old->len[w];
					memcpy(chunk_counts(c, w) + (old->lo[w] - base[w]),
						   chunk_counts(old, w) + (old->lo[w] - old->base[w]),
						   old->len[w] * sizeof(uint32));
				}
			}
			hs->chunk = dp;
		}
		else
		{
			/* no room: those that needed it are lost, the others go on */
			for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
				if (grow[w])
					lose(hs, old, st, w, add);
			if (old != NULL && !in_chunk(hs, old, 0) && !in_chunk(hs, old, 1))
			{
				hs->chunk = InvalidDsaPointer;
				c = NULL;
			}
			else
				old_dp = InvalidDsaPointer; /* kept */
		}
	}

	/* count */
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		const uint32 *cnt = add->count[w];

		if (add->len[w] == 0 || hs->lost[w])
			continue;
		if (!in_chunk(hs, c, w))
		{
			hs->nsmall[w] += add_total(add, w);
			Assert(hs->nsmall[w] <= 2);
			continue;
		}
		for (int k = 0; k < hs->nsmall[w]; k++)
			count_into(c, w, pgss_ng_hist_bucket(k == 0 ? min_ms[w] : max_ms[w]),
					   1);
		hs->nsmall[w] = 0;
		for (int i = 0; i < add->len[w]; i++)
			if (cnt[i] > 0)
				count_into(c, w, add->lo[w] + i, cnt[i]);
	}

	/* a replaced chunk, or one nothing is left in */
	if (DsaPointerIsValid(old_dp) && hs->chunk != old_dp)
		free_chunk(area, old_dp, old, st);
}

/*
 * add_one_merge
 *		pgss_ng_hist_store_add_one's call as a merge of one count at
 *		bucket b (small or lost histograms, or a bucket out of the room).
 */
static pg_noinline void
add_one_merge(dsa_area *area, PgssNgHistStore *hs, PgssNgHistStats *st,
			  int w, int b, const double *min_ms, const double *max_ms,
			  PgssNgHistMayAllocFn may_alloc)
{
	static const uint32 one = 1;
	PgssNgHistAdd add = {0};

	add.lo[w] = b;
	add.len[w] = 1;
	add.count[w] = &one;
	pgss_ng_hist_store_merge(area, hs, st, &add, min_ms, max_ms, may_alloc);
}

/*
 * pgss_ng_hist_store_add_one
 *		Count one time (ms) in histogram w of hs, as a merge of that one
 *		call would (min_ms and max_ms as there), for a call counted
 *		straight into its entry.  Into a chunk whose room holds its
 *		bucket: one increment; otherwise a merge.  Entry lock held
 *		exclusively.  Errors: a merge's, before anything changed.
 */
void
pgss_ng_hist_store_add_one(dsa_area *area, PgssNgHistStore *hs,
						   PgssNgHistStats *st, int w, double ms,
						   const double *min_ms, const double *max_ms,
						   PgssNgHistMayAllocFn may_alloc)
{
	int			b = pgss_ng_hist_bucket(ms);

	if (DsaPointerIsValid(hs->chunk) && !hs->lost[w])
	{
		PgssNgHistChunk *c = dsa_get_address(area, hs->chunk);

		/* in the room (cap 0: not in the chunk) */
		if ((unsigned) (b - c->base[w]) < c->cap[w])
		{
			count_into(c, w, b, 1);
			return;
		}
	}
	add_one_merge(area, hs, st, w, b, min_ms, max_ms, may_alloc);
}

/*
 * pgss_ng_hist_store_copy
 *		Copy the histograms of hs into dst as a pair: each one's window and
 *		the counts in it (dst's other counts are left as they were, as
 *		pgss_ng_hist_copy_used leaves them).  A small histogram's calls are
 *		put in the buckets of min_ms and max_ms; a lost one is empty.
 *		Entry lock held (shared is enough).  Errors: dsa mapping a segment.
 */
void
pgss_ng_hist_store_copy(dsa_area *area, const PgssNgHistStore *hs,
						const double *min_ms, const double *max_ms,
						PgssNgHistPair *dst)
{
	PgssNgHistChunk *c = NULL;

	if (DsaPointerIsValid(hs->chunk))
		c = dsa_get_address(area, hs->chunk);
	for (int w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		dst->lo[w] = 0;
		dst->len[w] = 0;
		if (hs->lost[w])
			continue;
		if (in_chunk(hs, c, w))
		{
			dst->lo[w] = c->lo[w];
			dst->len[w] = c->len[w];
			memcpy(&dst->count[w][c->lo[w]],
				   chunk_counts(c, w) + (c->lo[w] - c->base[w]),
				   c->len[w] * sizeof(uint32));
		}
		else if (hs->nsmall[w] > 0)
		{
			int			b0 = pgss_ng_hist_bucket(min_ms[w]);
			int			b1 = hs->nsmall[w] > 1 ?
				pgss_ng_hist_bucket(max_ms[w]) : b0;
			int			lo = Min(b0, b1);
			int			hi = Max(b0, b1) + 1;

			memset(&dst->count[w][lo], 0, (hi - lo) * sizeof(uint32));
			dst->count[w][b0]++;
			dst->count[w][b1] += hs->nsmall[w] > 1;
			dst->lo[w] = lo;
			dst->len[w] = hi - lo;
		}
	}
}

/*
 * pgss_ng_hist_store_lose
 *		Make histogram w lost (a saved record's was: its calls are not all
 *		there), counting the calls it held as dropped.  Entry lock held
 *		exclusively.  Errors: dsa mapping a segment, before any change.
 */
void
pgss_ng_hist_store_lose(dsa_area *area, PgssNgHistStore *hs,
						PgssNgHistStats *st, int w)
{
	PgssNgHistChunk *c = NULL;

	if (hs->lost[w])
		return;
	if (DsaPointerIsValid(hs->chunk))
		c = dsa_get_address(area, hs->chunk);
	lose(hs, c, st, w, NULL);
	if (c != NULL && !in_chunk(hs, c, 0) && !in_chunk(hs, c, 1))
	{
		free_chunk(area, hs->chunk, c, st);
		hs->chunk = InvalidDsaPointer;
	}
}

/*
 * pgss_ng_hist_store_free
 *		Free the chunk of hs, if any, and make both histograms small and
 *		empty (a min/max reset; the entry's free).  Entry lock held
 *		exclusively, or nobody else can see the entry.
 */
void
pgss_ng_hist_store_free(dsa_area *area, PgssNgHistStore *hs,
						PgssNgHistStats *st)
{
	if (DsaPointerIsValid(hs->chunk))
		free_chunk(area, hs->chunk, dsa_get_address(area, hs->chunk), st);
	memset(hs, 0, sizeof(*hs));
	hs->chunk = InvalidDsaPointer;
}
