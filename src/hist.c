/*-------------------------------------------------------------------------
 *
 * hist.c
 *	  Log-scale time histograms: which bucket a time falls in, a bucket's
 *	  bounds, merging a backend's dense histogram into the compact pair of
 *	  a shared entry, and quantiles.  See hist.h for the bucket layout.
 *
 * The compact pair.  Two dense histograms of 201 uint32 counts would take
 * 1608 bytes; a statement's times rarely span more than a few decades, so
 * each histogram keeps only the window of buckets between its lowest and
 * its highest non-empty one, both windows in one pool of 254 counts (the
 * pair takes exactly 1 KiB).  Histogram 1 (execution) never spans more
 * than 201 buckets, so it always fits whole.  Only when the two windows
 * together would need more than the pool does histogram 0 (planning) give
 * way: its lowest buckets are folded into the lowest one it keeps (as
 * DDSketch collapses its lowest buckets), so its counts stay exact in
 * total and its quantiles above the fold keep their bound.  With
 * track_planning off histogram 0 is empty and nothing is ever folded.
 *
 * Counts saturate at PG_UINT32_MAX per bucket (never wrap).
 *
 * Locking: none; see hist.h.  Errors: none raised.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "utils/float.h"

#include "hist.h"

/* gamma = 2^(1/7); the representative value is 2 * upper / (gamma + 1) */
#define HIST_GAMMA	1.1040895136738123	/* pow(2, 1.0 / 7) */

/*
 * pgss_ng_hist_bucket
 *		The bucket of a time in ms: 0 below 10 us (and for NaN), 200 from
 *		about 1.005 h, else 1 + floor(7 * log2(ms / 0.01)).
 */
int
pgss_ng_hist_bucket(double ms)
{
	double		l;

	if (!(ms >= PGSS_NG_HIST_MIN_MS))
		return 0;
	l = log2(ms / PGSS_NG_HIST_MIN_MS) * PGSS_NG_HIST_PER_OCTAVE;
	if (l >= PGSS_NG_HIST_NBUCKETS - 2)
		return PGSS_NG_HIST_NBUCKETS - 1;
	return (int) l + 1;
}

/*
 * Upper bound (ms) of each bucket but the last, computed once per process
 * (a reader of the view asks for ten quantiles of every entry: pow() was
 * a visible part of its cost).  Bucket k > 0 spans
 * [hist_upper[k - 1], hist_upper[k]).
 */
static double hist_upper[PGSS_NG_HIST_NBUCKETS - 1];
static bool hist_upper_done = false;

/*
 * pgss_ng_hist_bounds
 *		Lower and upper bound (ms) of a bucket: [0, 0.01) for bucket 0,
 *		[~3.6e6, Infinity) for the last one.
 */
void
pgss_ng_hist_bounds(int bucket, double *lower_ms, double *upper_ms)
{
	if (!hist_upper_done)
	{
		int			k;

		for (k = 0; k < PGSS_NG_HIST_NBUCKETS - 1; k++)
			hist_upper[k] = PGSS_NG_HIST_MIN_MS *
				pow(2.0, (double) k / PGSS_NG_HIST_PER_OCTAVE);
		hist_upper_done = true;
	}
	if (bucket <= 0)
	{
		*lower_ms = 0.0;
		*upper_ms = hist_upper[0];
		return;
	}
	*lower_ms = hist_upper[Min(bucket, PGSS_NG_HIST_NBUCKETS - 1) - 1];
	if (bucket >= PGSS_NG_HIST_NBUCKETS - 1)
		*upper_ms = get_float8_infinity();
	else
		*upper_ms = hist_upper[bucket];
}

/* first pool slot of histogram which */
static inline int
slot0(const PgssNgHistPair *p, int which)
{
	return which == 0 ? 0 : PGSS_NG_HIST_POOL - p->len[1];
}

/* saturating add */
static inline uint32
add_sat(uint32 a, uint64 b)
{
	uint64		s = (uint64) a + b;

	return s > PG_UINT32_MAX ? PG_UINT32_MAX : (uint32) s;
}

/*
 * pgss_ng_hist_count
 *		The count of one bucket of histogram which of a pair.
 */
uint32
pgss_ng_hist_count(const PgssNgHistPair *p, int which, int bucket)
{
	if (bucket < p->lo[which] || bucket >= p->lo[which] + p->len[which])
		return 0;
	return p->pool[slot0(p, which) + bucket - p->lo[which]];
}

/*
 * decode / encode
 *		A pair as two dense arrays of counts, and back.  encode folds the
 *		lowest buckets of histogram 0 when both windows do not fit (see
 *		the file header).
 */
static void
decode(const PgssNgHistPair *p, uint32 dense[][PGSS_NG_HIST_NBUCKETS])
{
	int			w;
	int			i;

	memset(dense, 0, sizeof(uint32) * PGSS_NG_HIST_NHIST *
		   PGSS_NG_HIST_NBUCKETS);
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		for (i = 0; i < p->len[w]; i++)
			dense[w][p->lo[w] + i] = p->pool[slot0(p, w) + i];
}

static void
encode(PgssNgHistPair *p, uint32 dense[][PGSS_NG_HIST_NBUCKETS])
{
	int			lo[PGSS_NG_HIST_NHIST];
	int			hi[PGSS_NG_HIST_NHIST];
	int			w;
	int			i;

	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		lo[w] = 0;
		hi[w] = 0;
		for (i = 0; i < PGSS_NG_HIST_NBUCKETS; i++)
		{
			if (dense[w][i] == 0)
				continue;
			if (hi[w] == 0)
				lo[w] = i;
			hi[w] = i + 1;
		}
	}

	/* histogram 1 fits whole (201 <= 254); fold histogram 0's lowest */
	if ((hi[0] - lo[0]) + (hi[1] - lo[1]) > PGSS_NG_HIST_POOL)
	{
		int			newlo = hi[0] - (PGSS_NG_HIST_POOL - (hi[1] - lo[1]));

		for (i = lo[0]; i < newlo; i++)
		{
			dense[0][newlo] = add_sat(dense[0][newlo], dense[0][i]);
			dense[0][i] = 0;
		}
		lo[0] = newlo;
	}

	memset(p, 0, sizeof(*p));
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		p->lo[w] = lo[w];
		p->len[w] = hi[w] - lo[w];
	}
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		for (i = 0; i < p->len[w]; i++)
			p->pool[slot0(p, w) + i] = dense[w][lo[w] + i];
}

/*
 * grow_window
 *		Widen histogram which's window to [lo, hi) (which contains the old
 *		window, if any) in place: its counts move to their new slots and
 *		the new slots are zeroed.  The caller checked that both windows
 *		then fit in the pool.
 */
static void
grow_window(PgssNgHistPair *p, int which, int lo, int hi)
{
	int			oldlen = p->len[which];
	int			oldstart = slot0(p, which);
	int			newlen = hi - lo;
	int			newstart;
	int			shift = oldlen > 0 ? p->lo[which] - lo : 0;
	uint32	   *w;

	newstart = which == 0 ? 0 : PGSS_NG_HIST_POOL - newlen;
	w = &p->pool[newstart];
	if (oldlen > 0)
		memmove(w + shift, &p->pool[oldstart], oldlen * sizeof(uint32));
	memset(w, 0, shift * sizeof(uint32));
	memset(w + shift + oldlen, 0, (newlen - shift - oldlen) * sizeof(uint32));
	p->lo[which] = lo;
	p->len[which] = newlen;
}

/*
 * pgss_ng_hist_merge
 *		Add a dense histogram into histogram which of a pair.  When the
 *		dense one's buckets lie in the pair's window (the usual case), or
 *		the window can be widened to them with both windows still in the
 *		pool, the counts are added in place; otherwise (a fold is needed)
 *		the pair is rebuilt.  Memory: 1.6 kB of stack on that last path.
 */
void
pgss_ng_hist_merge(PgssNgHistPair *dst, int which, const PgssNgHistDense *src)
{
	uint32		dense[PGSS_NG_HIST_NHIST][PGSS_NG_HIST_NBUCKETS];
	int			lo = src->lo;
	int			hi = src->hi;
	int			i;

	if (src->hi == 0)
		return;
	if (dst->len[which] > 0)
	{
		lo = Min(lo, dst->lo[which]);
		hi = Max(hi, dst->lo[which] + dst->len[which]);
	}
	if ((hi - lo) + dst->len[1 - which] <= PGSS_NG_HIST_POOL)
	{
		int			base;		/* pool slot of bucket 0, may be < 0 */

		if (lo != dst->lo[which] || hi - lo != dst->len[which])
			grow_window(dst, which, lo, hi);
		base = slot0(dst, which) - dst->lo[which];
		for (i = src->lo; i < src->hi; i++)
			dst->pool[base + i] = add_sat(dst->pool[base + i],
										  src->count[i]);
		return;
	}
	decode(dst, dense);
	for (i = src->lo; i < src->hi; i++)
		dense[which][i] = add_sat(dense[which][i], src->count[i]);
	encode(dst, dense);
}

/*
 * pgss_ng_hist_merge_pair
 *		Add both histograms of src into dst (a saved record merged into an
 *		entry).
 */
void
pgss_ng_hist_merge_pair(PgssNgHistPair *dst, const PgssNgHistPair *src)
{
	uint32		a[PGSS_NG_HIST_NHIST][PGSS_NG_HIST_NBUCKETS];
	uint32		b[PGSS_NG_HIST_NHIST][PGSS_NG_HIST_NBUCKETS];
	int			w;
	int			i;

	decode(dst, a);
	decode(src, b);
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		for (i = 0; i < PGSS_NG_HIST_NBUCKETS; i++)
			a[w][i] = add_sat(a[w][i], b[w][i]);
	encode(dst, a);
}

/*
 * pgss_ng_hist_valid
 *		Is a pair read from a file well formed (windows inside the bucket
 *		range, together inside the pool)?
 */
bool
pgss_ng_hist_valid(const PgssNgHistPair *p)
{
	int			w;

	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		if (p->lo[w] + p->len[w] > PGSS_NG_HIST_NBUCKETS)
			return false;
	return p->len[0] + p->len[1] <= PGSS_NG_HIST_POOL;
}

/*
 * pgss_ng_hist_copy_used
 *		Copy the pair src into dst, but of the pool only the slots the two
 *		windows use (usually a few of the 254: a reader of every entry
 *		then touches a cache line or two of the histograms instead of
 *		1 KiB).  dst is then the same histograms as src for every function
 *		here; its unused slots are left as they were.
 */
void
pgss_ng_hist_copy_used(PgssNgHistPair *dst, const PgssNgHistPair *src)
{
	int			len0 = src->len[0];
	int			len1 = src->len[1];

	Assert(len0 + len1 <= PGSS_NG_HIST_POOL);
	memcpy(dst->lo, src->lo, sizeof(dst->lo));
	memcpy(dst->len, src->len, sizeof(dst->len));
	memcpy(&dst->pool[0], &src->pool[0], len0 * sizeof(uint32));
	memcpy(&dst->pool[PGSS_NG_HIST_POOL - len1],
		   &src->pool[PGSS_NG_HIST_POOL - len1], len1 * sizeof(uint32));
}

/*
 * pgss_ng_hist_total
 *		Sum of the counts of histogram which.
 */
uint64
pgss_ng_hist_total(const PgssNgHistPair *p, int which)
{
	uint64		n = 0;
	int			i;

	for (i = 0; i < p->len[which]; i++)
		n += p->pool[slot0(p, which) + i];
	return n;
}

/*
 * pgss_ng_hist_quantiles
 *		The qs[j]-quantiles (0 < qs[j] <= 1, qs ascending) of histogram
 *		which, in ms, into out[0 .. nq - 1], in one pass over the buckets:
 *		for each, the representative value of the bucket holding the call
 *		of rank ceil(q * n) (nearest rank, n the total count), brought into
 *		[min_ms, max_ms] when max_ms >= min_ms (the exact extremes, which
 *		can only move it closer to the true value).  NaN when empty.
 *
 * Within 4.95% of the true value when that lies in 10 us .. 1 h (and,
 * for histogram 0, above any folded buckets).
 */
void
pgss_ng_hist_quantiles(const PgssNgHistPair *p, int which, const double *qs,
					   int nq, double min_ms, double max_ms, double *out)
{
	uint64		n = pgss_ng_hist_total(p, which);
	const uint32 *pool = &p->pool[slot0(p, which)];
	uint64		cum = 0;
	int			i = 0;
	int			j;

	for (j = 0; j < nq; j++)
	{
		uint64		rank;
		double		lower;
		double		upper;
		double		v;

		if (n == 0)
		{
			out[j] = get_float8_nan();
			continue;
		}
		Assert(j == 0 || qs[j] >= qs[j - 1]);
		rank = (uint64) ceil(qs[j] * (double) n);
		rank = Max(rank, 1);
		rank = Min(rank, n);
		/* cum counts the window up to bucket i; the ranks only grow */
		if (j == 0 || cum < rank)
		{
			if (j > 0)
				i++;
			for (; i < p->len[which]; i++)
			{
				cum += pool[i];
				if (cum >= rank)
					break;
			}
		}
		pgss_ng_hist_bounds(p->lo[which] + i, &lower, &upper);
		if (isinf(upper))
			v = lower;
		else if (lower == 0.0)
			v = upper;
		else
			v = 2.0 * upper / (HIST_GAMMA + 1.0);
		if (max_ms >= min_ms)
		{
			v = Max(v, min_ms);
			v = Min(v, max_ms);
		}
		out[j] = v;
	}
}

/*
 * pgss_ng_hist_quantile
 *		The q-quantile of histogram which: see pgss_ng_hist_quantiles.
 */
double
pgss_ng_hist_quantile(const PgssNgHistPair *p, int which, double q,
					  double min_ms, double max_ms)
{
	double		v;

	pgss_ng_hist_quantiles(p, which, &q, 1, min_ms, max_ms, &v);
	return v;
}
