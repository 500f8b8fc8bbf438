/*-------------------------------------------------------------------------
 *
 * hist_store.h
 *	  Where a shared entry keeps its two time histograms (hist_store.c):
 *	  a small handle in the entry (PgssNgHistStore) and, only once a
 *	  histogram holds more than two calls, one DSA chunk of its own with
 *	  the buckets each histogram uses (PgssNgHistChunk).  Knows the bucket
 *	  layout (hist.h) and DSA, nothing of statements: the statement kind
 *	  passes the entry's min/max and where to count bytes.
 *
 * A histogram is in one of three states:
 *	  small	 no counts stored: it holds nsmall calls (0, 1 or 2), whose
 *			 times are the exact min and max of its phase (one call: both),
 *			 so its buckets are those of min and max;
 *	  chunk	 its counts are in the chunk, for a window of buckets that
 *			 grows (the chunk is replaced by a larger one) as calls come
 *			 outside it;
 *	  lost	 a chunk could not be allocated (shared memory short): the calls
 *			 since the entry's last min/max reset are not all kept, so none
 *			 are (counted in PgssNgHistStats.dropped); empty until that
 *			 reset, which makes both histograms small and empty again.
 *
 * Locking: none of its own.  The caller holds the entry's lock (exclusive
 * to change, shared to copy); DSA takes its own, innermost.
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
