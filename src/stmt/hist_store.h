/*-------------------------------------------------------------------------
 *
 * hist_store.h
 *	  Where a shared entry keeps its two time histograms (hist_store.c): a
 *	  handle in the entry (PgssNgHistStore) and, past two calls, one DSA chunk
 *	  (PgssNgHistChunk).  A histogram is small (nsmall calls, 0-2: its phase's
 *	  min and max), in the chunk, or lost (no chunk could be had: empty until
 *	  the entry's next min/max reset).  docs/design.md, "Time histograms".
 *	  Locking: the caller holds the entry lock; DSA's own is innermost.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_HIST_STORE_H
#define PGSS_NG_HIST_STORE_H

#include "port/atomics.h"
#include "utils/dsa.h"

#include "hist.h"

/* The handle kept in a shared entry; zeroed means both small and empty. */
typedef struct PgssNgHistStore
{
	dsa_pointer chunk;			/* PgssNgHistChunk, or InvalidDsaPointer */
	uint8		nsmall[PGSS_NG_HIST_NHIST]; /* calls of a small histogram */
	bool		lost[PGSS_NG_HIST_NHIST];	/* see the file header */
} PgssNgHistStore;

/*
 * The chunk: histogram w holds the counts of buckets [base[w], base[w] +
 * cap[w]) (cap 0: it is not in the chunk), those of histogram 0 first in
 * count[], and its calls lie in the window [lo[w], lo[w] + len[w]) of
 * them; counts outside the window are zero.
 */
typedef struct PgssNgHistChunk
{
	uint16		base[PGSS_NG_HIST_NHIST];
	uint16		cap[PGSS_NG_HIST_NHIST];
	uint16		lo[PGSS_NG_HIST_NHIST];
	uint16		len[PGSS_NG_HIST_NHIST];
	uint32		count[FLEXIBLE_ARRAY_MEMBER];
} PgssNgHistChunk;

/* What the chunks take, in shared memory where the caller keeps it. */
typedef struct PgssNgHistStats
{
	pg_atomic_uint64 bytes;		/* chunks' allocated bytes */
	pg_atomic_uint64 dropped;	/* calls not kept (lost histograms) */
} PgssNgHistStats;

/*
 * What one merge adds to each histogram: the counts of its buckets
 * [lo[w], lo[w] + len[w]), count[w][0] being bucket lo[w]'s (len 0:
 * nothing).
 */
typedef struct PgssNgHistAdd
{
	int			lo[PGSS_NG_HIST_NHIST];
	int			len[PGSS_NG_HIST_NHIST];
	const uint32 *count[PGSS_NG_HIST_NHIST];
} PgssNgHistAdd;

/*
 * pgss_ng_hist_add_dense
 *		Make add's histogram w the calls counted in a dense histogram.
 */
static inline void
pgss_ng_hist_add_dense(PgssNgHistAdd *add, int w, const PgssNgHistDense *d)
{
	add->lo[w] = d->lo;
	add->len[w] = d->hi > 0 ? d->hi - d->lo : 0;
	add->count[w] = &d->count[d->lo];
}

/*
 * pgss_ng_hist_add_pair
 *		Make add both histograms of a pair (a saved record's).
 */
static inline void
pgss_ng_hist_add_pair(PgssNgHistAdd *add, const PgssNgHistPair *p)
{
	for (int w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		add->lo[w] = p->lo[w];
		add->len[w] = p->len[w];
		add->count[w] = &p->count[w][p->lo[w]];
	}
}

/* whether a new chunk may be tried now (the caller's allocation back-off) */
typedef bool (*PgssNgHistMayAllocFn) (void);

extern void pgss_ng_hist_store_stats_init(PgssNgHistStats *st);
extern void pgss_ng_hist_store_merge(dsa_area *area, PgssNgHistStore *hs,
									 PgssNgHistStats *st,
									 const PgssNgHistAdd *add,
									 const double *min_ms,
									 const double *max_ms,
									 PgssNgHistMayAllocFn may_alloc);
extern void pgss_ng_hist_store_add_one(dsa_area *area, PgssNgHistStore *hs,
									   PgssNgHistStats *st, int w, double ms,
									   const double *min_ms,
									   const double *max_ms,
									   PgssNgHistMayAllocFn may_alloc);
extern void pgss_ng_hist_store_copy(dsa_area *area,
									const PgssNgHistStore *hs,
									const double *min_ms,
									const double *max_ms,
									PgssNgHistPair *dst);
extern void pgss_ng_hist_store_lose(dsa_area *area, PgssNgHistStore *hs,
									PgssNgHistStats *st, int w);
extern void pgss_ng_hist_store_free(dsa_area *area, PgssNgHistStore *hs,
									PgssNgHistStats *st);

#endif							/* PGSS_NG_HIST_STORE_H */
