/*-------------------------------------------------------------------------
 *
 * hist.c
 *	  Log-scale time histograms (layout: hist.h): a time's bucket, a
 *	  bucket's bounds, the merge of a dense histogram into a pair (every
 *	  bucket of both kept: nothing folded), quantiles.  Counts saturate at
 *	  PG_UINT32_MAX.  docs/design.md, "Time histograms".
 *	  Locking: none; see hist.h.  Errors: none raised.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "utils/float.h"

#include "hist.h"

/*
 * The bucket bounds the bucket of a time is found in: bucket_upper[k] is
 * the upper bound (ms) of bucket k (hist_upper below), padded past the
 * last finite one with infinities for the search's last steps.  Computed
 * once per process.
 */
#define BUCKET_PAD		8
static double bucket_upper[PGSS_NG_HIST_NBUCKETS - 1 + BUCKET_PAD];
static bool bucket_upper_done = false;

/*
 * hist_upper_bound
 *		The upper bound (ms) of bucket k, 0 <= k < PGSS_NG_HIST_NBUCKETS - 1:
 *		8 ns * 2^(k / 7), the one formula of the layout.
 */
static double
hist_upper_bound(int k)
{
	return PGSS_NG_HIST_MIN_MS * pow(2.0, (double) k / PGSS_NG_HIST_PER_OCTAVE);
}

static void
bucket_upper_init(void)
{
	int			k;

	for (k = 0; k < PGSS_NG_HIST_NBUCKETS - 1; k++)
		bucket_upper[k] = hist_upper_bound(k);
	for (; k < lengthof(bucket_upper); k++)
		bucket_upper[k] = get_float8_infinity();
	bucket_upper_done = true;
}

/*
 * pgss_ng_hist_bucket
 *		The bucket of a time in ms: 0 below 8 ns (and for NaN), 321 from
 *		about 5.3 days, else the k whose bounds (pgss_ng_hist_bounds) hold it,
 *		1 + floor(7 * log2(ms / 0.000008)) up to rounding; found without log2()
 *		from ms's binary exponent e (candidates 7e + 119 to 7e + 126: design.md,
 *		"Time histograms").
 */
int
pgss_ng_hist_bucket(double ms)
{
	uint64		bits;
	int			k;

	if (!(ms >= PGSS_NG_HIST_MIN_MS))
		return 0;
	if (unlikely(!bucket_upper_done))
		bucket_upper_init();
	if (ms >= bucket_upper[PGSS_NG_HIST_NBUCKETS - 2])
		return PGSS_NG_HIST_NBUCKETS - 1;
	memcpy(&bits, &ms, sizeof(bits));
	/* ms is normal here: its biased exponent less 1023 is e */
	k = 7 * ((int) (bits >> 52) - 1023) + 119;
	Assert(k >= 0 && (k == 0 || ms >= bucket_upper[k - 1]));
	if (ms >= bucket_upper[k + 3])
		k += 4;
	if (ms >= bucket_upper[k + 1])
		k += 2;
	if (ms >= bucket_upper[k])
		k += 1;
	return k;
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
 *		Lower and upper bound (ms) of a bucket: [0, 0.000008) for bucket
 *		0, [~4.6e8, Infinity) for the last one.
 */
void
pgss_ng_hist_bounds(int bucket, double *lower_ms, double *upper_ms)
{
	if (!hist_upper_done)
	{
		int			k;

		for (k = 0; k < PGSS_NG_HIST_NBUCKETS - 1; k++)
			hist_upper[k] = hist_upper_bound(k);
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
	return p->count[which][bucket];
}

/*
 * widen_window
 *		Make histogram which's window cover [lo, hi) too: the buckets that
 *		join it are zeroed first (outside its window a pair's counts are
 *		not read, so they may hold anything).
 */
static void
widen_window(PgssNgHistPair *p, int which, int lo, int hi)
{
	uint32	   *c = p->count[which];
	int			oldlo = p->lo[which];
	int			oldhi = oldlo + p->len[which];

	if (p->len[which] == 0)
	{
		memset(&c[lo], 0, (hi - lo) * sizeof(uint32));
		oldlo = lo;
		oldhi = hi;
	}
	if (lo < oldlo)
	{
		memset(&c[lo], 0, (oldlo - lo) * sizeof(uint32));
		oldlo = lo;
	}
	if (hi > oldhi)
	{
		memset(&c[oldhi], 0, (hi - oldhi) * sizeof(uint32));
		oldhi = hi;
	}
	p->lo[which] = oldlo;
	p->len[which] = oldhi - oldlo;
}

/*
 * pgss_ng_hist_merge
 *		Add a dense histogram into histogram which of a pair: a loop over
 *		the dense one's range, after widening the pair's window to it.
 */
void
pgss_ng_hist_merge(PgssNgHistPair *dst, int which, const PgssNgHistDense *src)
{
	uint32	   *c = dst->count[which];
	int			i;

	if (src->hi == 0)
		return;
	widen_window(dst, which, src->lo, src->hi);
	for (i = src->lo; i < src->hi; i++)
		c[i] = add_sat(c[i], src->count[i]);
}

/*
 * pgss_ng_hist_merge_pair
 *		Add both histograms of src into dst (a saved record merged into an
 *		entry).
 */
void
pgss_ng_hist_merge_pair(PgssNgHistPair *dst, const PgssNgHistPair *src)
{
	int			w;
	int			i;

	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		int			lo = src->lo[w];
		int			hi = lo + src->len[w];

		if (src->len[w] == 0)
			continue;
		widen_window(dst, w, lo, hi);
		for (i = lo; i < hi; i++)
			dst->count[w][i] = add_sat(dst->count[w][i], src->count[w][i]);
	}
}

/*
 * pgss_ng_hist_valid
 *		Is a pair read from a file well formed (windows inside the bucket
 *		range)?
 */
bool
pgss_ng_hist_valid(const PgssNgHistPair *p)
{
	int			w;

	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
		if (p->lo[w] + p->len[w] > PGSS_NG_HIST_NBUCKETS)
			return false;
	return true;
}

/*
 * pgss_ng_hist_copy_used
 *		Copy the pair src into dst, but of the counts only those inside the
 *		two windows (usually a few dozen of the 644: a reader of every
 *		entry then touches a cache line or two of the histograms instead
 *		of 2.5 kB).  dst is then the same histograms as src for every
 *		function here; its other counts are left as they were.
 */
void
pgss_ng_hist_copy_used(PgssNgHistPair *dst, const PgssNgHistPair *src)
{
	int			w;

	memcpy(dst->lo, src->lo, sizeof(dst->lo));
	memcpy(dst->len, src->len, sizeof(dst->len));
	for (w = 0; w < PGSS_NG_HIST_NHIST; w++)
	{
		Assert(src->lo[w] + src->len[w] <= PGSS_NG_HIST_NBUCKETS);
		memcpy(&dst->count[w][src->lo[w]], &src->count[w][src->lo[w]],
			   src->len[w] * sizeof(uint32));
	}
}

/*
 * pgss_ng_hist_total
 *		Sum of the counts of histogram which.
 */
uint64
pgss_ng_hist_total(const PgssNgHistPair *p, int which)
{
	const uint32 *c = &p->count[which][p->lo[which]];
	uint64		n = 0;
	int			i;

	for (i = 0; i < p->len[which]; i++)
		n += c[i];
	return n;
}

/*
 * representative
 *		The value reported for a quantile in bucket [lower, upper): the
 *		bucket cut to the calls' exact [min_ms, max_ms] (max_ms < min_ms:
 *		unknown), then 2ab / (a + b), within 4.95% of anything in [a, b]
 *		(design.md, "Time histograms").  A cut that leaves nothing (an edge
 *		rounded into the next bucket) takes the whole bucket, clamped.
 */
static double
representative(double lower, double upper, double min_ms, double max_ms)
{
	double		a = lower;
	double		b = upper;
	double		v;

	if (max_ms >= min_ms)
	{
		a = Max(a, min_ms);
		b = Min(b, max_ms);
		if (a > b)
		{
			a = lower;
			b = upper;
		}
	}
	if (isinf(b))
		v = a;
	else if (a + b <= 0.0)
		v = 0.0;
	else
		v = 2.0 * a * b / (a + b);
	if (max_ms >= min_ms)
	{
		v = Max(v, min_ms);
		v = Min(v, max_ms);
	}
	return v;
}

/*
 * pgss_ng_hist_quantiles
 *		The qs[j]-quantiles (qs ascending in (0, 1]) of histogram which, in
 *		ms, into out[0 .. nq - 1], in one pass: the call of nearest rank
 *		ceil(q * n), min_ms or max_ms exactly for the first or last (when
 *		known), else its bucket's representative().  NaN when empty.
 *		Within 4.95% from 8 ns to 5.3 days; exact for 0.
 */
void
pgss_ng_hist_quantiles(const PgssNgHistPair *p, int which, const double *qs,
					   int nq, double min_ms, double max_ms, double *out)
{
	uint64		n = pgss_ng_hist_total(p, which);
	const uint32 *c = &p->count[which][p->lo[which]];
	bool		extremes = max_ms >= min_ms;
	uint64		cum = 0;
	int			i = 0;
	int			j;

	for (j = 0; j < nq; j++)
	{
		uint64		rank;
		double		lower;
		double		upper;

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
				cum += c[i];
				if (cum >= rank)
					break;
			}
		}
		if (extremes && rank == n)
			out[j] = max_ms;
		else if (extremes && rank == 1)
			out[j] = min_ms;
		else
		{
			pgss_ng_hist_bounds(p->lo[which] + i, &lower, &upper);
			out[j] = representative(lower, upper, min_ms, max_ms);
		}
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
