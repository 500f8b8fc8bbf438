/*-------------------------------------------------------------------------
 *
 * hist.h
 *	  Log-scale time histograms (hist.c): the bucket layout (ratio 2^(1/7)
 *	  from 8 ns: within 4.95% up to 5.3 days), the dense histogram a backend
 *	  counts into (PgssNgHistDense) and the pair a reader copies an entry's
 *	  into (PgssNgHistPair).  A leaf: nothing of statements or shared memory.
 *	  docs/design.md, "Time histograms".
 *	  Locking: none; the caller protects the histograms.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_HIST_H
#define PGSS_NG_HIST_H

/* buckets per doubling of time: gamma = 2^(1/7) */
#define PGSS_NG_HIST_PER_OCTAVE	7
/* lower edge of bucket 1, ms (8 ns) */
#define PGSS_NG_HIST_MIN_MS		0.000008
/* buckets: underflow, 320 log buckets up to ~5.3 days, overflow */
#define PGSS_NG_HIST_NBUCKETS	322

/* Two histograms: execution and planning, as PgssNgPhase numbers them. */
#define PGSS_NG_HIST_NHIST		2

/*
 * A dense histogram, for counting in a backend: counts per bucket, and the
 * range of buckets used so that a merge looks at those only.  Only the
 * counts in [lo, hi) are defined: hi = 0 (pgss_ng_hist_dense_clear, or
 * all zeroed) makes it empty whatever count[] holds, and
 * pgss_ng_hist_add() zeroes the buckets it brings into the range.
 */
typedef struct PgssNgHistDense
{
	uint32		count[PGSS_NG_HIST_NBUCKETS];
	int16		lo;				/* lowest bucket used; valid if hi > 0 */
	int16		hi;				/* highest bucket used + 1; 0: empty */
} PgssNgHistDense;

/*
 * A pair of histograms, as a reader copies an entry's and a record of the
 * stats file holds them: every bucket of both histograms has its count
 * (count[which][bucket]), and each histogram has a window [lo, lo + len)
 * of buckets (len 0: empty), so that a reader scans only the window.
 * Only the counts inside a window are ever read: a merge zeroes the
 * buckets that join the window, and outside it the counts may hold
 * anything.  Zeroed means empty.
 */
typedef struct PgssNgHistPair
{
	uint16		lo[PGSS_NG_HIST_NHIST];
	uint16		len[PGSS_NG_HIST_NHIST];
	uint32		count[PGSS_NG_HIST_NHIST][PGSS_NG_HIST_NBUCKETS];
} PgssNgHistPair;

StaticAssertDecl(sizeof(PgssNgHistPair) == 2584,
				 "a histogram pair takes 2584 bytes (see design.md)");

/*
 * pgss_ng_hist_bucket
 *		The bucket of a time in ms (negative and NaN in bucket 0).
 */
extern int	pgss_ng_hist_bucket(double ms);

/*
 * pgss_ng_hist_dense_clear
 *		Make a dense histogram empty (its count[] is left as it is: only
 *		[lo, hi) is ever read).
 */
static inline void
pgss_ng_hist_dense_clear(PgssNgHistDense *h)
{
	h->lo = 0;
	h->hi = 0;
}

/*
 * pgss_ng_hist_add
 *		Count one time (ms) in a dense histogram.  A bucket outside the
 *		range used so far, and those between it and the range, are zeroed
 *		as they join it.
 */
static inline void
pgss_ng_hist_add(PgssNgHistDense *h, double ms)
{
	int			b = pgss_ng_hist_bucket(ms);

	if (h->hi == 0)
	{
		h->count[b] = 0;
		h->lo = b;
		h->hi = b + 1;
	}
	else if (b < h->lo)
	{
		memset(&h->count[b], 0, sizeof(uint32) * (h->lo - b));
		h->lo = b;
	}
	else if (b >= h->hi)
	{
		memset(&h->count[h->hi], 0, sizeof(uint32) * (b + 1 - h->hi));
		h->hi = b + 1;
	}
	if (h->count[b] < PG_UINT32_MAX)
		h->count[b]++;
}

extern void pgss_ng_hist_bounds(int bucket, double *lower_ms,
								double *upper_ms);
extern void pgss_ng_hist_merge(PgssNgHistPair *dst, int which,
							   const PgssNgHistDense *src);
extern void pgss_ng_hist_merge_pair(PgssNgHistPair *dst,
									const PgssNgHistPair *src);
extern bool pgss_ng_hist_valid(const PgssNgHistPair *p);
extern void pgss_ng_hist_copy_used(PgssNgHistPair *dst,
								   const PgssNgHistPair *src);
extern uint64 pgss_ng_hist_total(const PgssNgHistPair *p, int which);
extern uint32 pgss_ng_hist_count(const PgssNgHistPair *p, int which,
								 int bucket);
extern void pgss_ng_hist_quantiles(const PgssNgHistPair *p, int which,
								   const double *qs, int nq, double min_ms,
								   double max_ms, double *out);
extern double pgss_ng_hist_quantile(const PgssNgHistPair *p, int which,
									double q, double min_ms, double max_ms);

#endif							/* PGSS_NG_HIST_H */
