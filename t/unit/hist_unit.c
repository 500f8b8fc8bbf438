/*-------------------------------------------------------------------------
 *
 * hist_unit.c
 *	  Unit test of src/hist.c, built and run by t/050_tracking_hist_unit.pl (not
 *	  part of the extension).  Prints one line per check, "ok <what>" or
 *	  "not ok <what>: <detail>".
 *
 * Checks: the bucket layout (ratio, edges, bucket 0 and the last one);
 * the relative-error bound of every quantile against the exact
 * nearest-rank quantile of random data merged in random chunks: spread
 * over the whole range, in the OLTP range (1 us .. 10 ms) in both
 * histograms, sub-microsecond, and wide spreads in both histograms of one
 * pair at once (execution 0.4 us .. 10 h, planning 11.5 us .. 10 s);
 * exact counts while windows grow in both directions in both histograms,
 * and with both histograms over every bucket; the extremes and zero
 * times; counts left outside a window (a pair read from a file) never
 * counted; saturation; the reader's one-pass quantiles of a copy of the
 * used slots; pgss_ng_hist_valid().  The first check says whether
 * hist.c's Assert()s are compiled in (t/050 builds with
 * -DUSE_ASSERT_CHECKING); a failed Assert prints "not ok assertion ..."
 * and exits with status 2.  The exit status is 1 when a check failed, 0
 * when all passed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "stmt/hist.h"

#undef printf
#undef snprintf
#undef qsort
#include <stdio.h>
#include <stdlib.h>

#define BOUND	0.04951			/* (g - 1) / (g + 1), g = 2^(1/7) */

static int	failures = 0;

#ifdef USE_ASSERT_CHECKING
/*
 * The server's ExceptionalCondition is not linked in: report a failed
 * Assert() of hist.c as a failed check and stop.
 */
void
ExceptionalCondition(const char *conditionName,
#if PG_VERSION_NUM < 160000
					 const char *errorType,
#endif
					 const char *fileName, int lineNumber)
{
	printf("not ok assertion \"%s\" failed at %s:%d\n", conditionName,
		   fileName, lineNumber);
	fflush(stdout);
	exit(2);
}
#endif

static void
check(bool cond, const char *what, const char *detail)
{
	if (cond)
		printf("ok %s\n", what);
	else
	{
		printf("not ok %s: %s\n", what, detail);
		failures++;
	}
}

/* xorshift64*, seeded: the same data on every run */
static uint64 rng = 88172645463325252ULL;

static double
urand(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (double) ((rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* count values into histogram which of p, flushing in random chunks */
static void
feed(PgssNgHistPair *p, int which, const double *v, int n)
{
	PgssNgHistDense d;
	int			i = 0;

	while (i < n)
	{
		int			chunk = 1 + (int) (urand() * 20);

		memset(&d, 0, sizeof(d));
		for (; chunk > 0 && i < n; chunk--, i++)
			pgss_ng_hist_add(&d, v[i]);
		pgss_ng_hist_merge(p, which, &d);
	}
}

/* worst relative error of the quantiles of sorted[] (ranks >= from) */
static double
worst_error(const PgssNgHistPair *p, int which, double *sorted, int n,
			int from)
{
	static const double qs[] = {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9,
	0.95, 0.99, 0.999, 1.0};
	double		worst = 0;
	int			j;

	for (j = 0; j < (int) lengthof(qs) + 200; j++)
	{
		double		q = j < (int) lengthof(qs) ? qs[j] : urand();
		int64		rank = (int64) ceil(q * n);
		double		truth;
		double		est;

		rank = Max(rank, 1);
		if (rank < from)
			continue;
		truth = sorted[rank - 1];
		est = pgss_ng_hist_quantile(p, which, q, sorted[0], sorted[n - 1]);
		worst = Max(worst, fabs(est - truth) / truth);
	}
	return worst;
}

/* a value spread log-uniformly over [lo, hi] (ms) */
static double
log_uniform(double lo, double hi)
{
	return exp(log(lo) + urand() * (log(hi) - log(lo)));
}

/*
 * both_within_bound
 *		Count n0 planning times of log-uniform spread over [lo0, hi0] and
 *		n1 execution times over [lo1, hi1] into one pair, in random
 *		chunks, and check that both totals are exact and every quantile of
 *		both histograms lies within the bound.
 */
static void
both_within_bound(const char *what, int n0, double lo0, double hi0,
				  int n1, double lo1, double hi1)
{
	static double v0[200000];
	static double v1[200000];
	PgssNgHistPair p;
	char		buf[256];
	double		w0;
	double		w1;
	int			k;

	for (k = 0; k < n0; k++)
		v0[k] = log_uniform(lo0, hi0);
	for (k = 0; k < n1; k++)
		v1[k] = log_uniform(lo1, hi1);
	memset(&p, 0, sizeof(p));
	feed(&p, 0, v0, n0);
	feed(&p, 1, v1, n1);
	qsort(v0, n0, sizeof(double), cmp_double);
	qsort(v1, n1, sizeof(double), cmp_double);
	/* an empty histogram's quantiles are NaN */
	w0 = n0 > 0 ? worst_error(&p, 0, v0, n0, 1) :
		isnan(pgss_ng_hist_quantile(&p, 0, 0.5, 1, 0)) ? 0 : 1;
	w1 = n1 > 0 ? worst_error(&p, 1, v1, n1, 1) :
		isnan(pgss_ng_hist_quantile(&p, 1, 0.5, 1, 0)) ? 0 : 1;
	snprintf(buf, sizeof(buf),
			 "plan: total %llu of %d, worst %.5f; exec: total %llu of %d, worst %.5f",
			 (unsigned long long) pgss_ng_hist_total(&p, 0), n0, w0,
			 (unsigned long long) pgss_ng_hist_total(&p, 1), n1, w1);
	check(pgss_ng_hist_total(&p, 0) == (uint64) n0 &&
		  pgss_ng_hist_total(&p, 1) == (uint64) n1 &&
		  w0 <= BOUND && w1 <= BOUND, what, buf);
}

int
main(void)
{
	static double v[200000];
	PgssNgHistPair p;
	char		buf[256];
	int			k;
	int			n;
	int			round;
	bool		good;
	double		lo;
	double		hi;

#ifdef USE_ASSERT_CHECKING
	check(true, "asserts: hist.c's Assert()s are compiled in", "");
#else
	check(false, "asserts: hist.c's Assert()s are compiled in",
		  "built without -DUSE_ASSERT_CHECKING");
#endif

	/* --- the layout */
	good = true;
	for (k = 1; k < PGSS_NG_HIST_NBUCKETS - 1; k++)
	{
		pgss_ng_hist_bounds(k, &lo, &hi);
		if (fabs(hi / lo - pow(2.0, 1.0 / 7)) > 1e-12 ||
			pgss_ng_hist_bucket(lo * (1 + 1e-9)) != k ||
			pgss_ng_hist_bucket(hi * (1 - 1e-9)) != k)
		{
			snprintf(buf, sizeof(buf), "bucket %d [%g, %g)", k, lo, hi);
			check(false, "layout: log buckets of ratio 2^(1/7)", buf);
			good = false;
			break;
		}
	}
	if (good)
		check(true, "layout: log buckets of ratio 2^(1/7)", "");
	pgss_ng_hist_bounds(1, &lo, &hi);
	check(lo == 0.000008, "layout: bucket 1 starts at 8 ns", "");
	pgss_ng_hist_bounds(PGSS_NG_HIST_NBUCKETS - 1, &lo, &hi);
	snprintf(buf, sizeof(buf), "starts at %g ms", lo);
	check(lo >= 5.3 * 86400e3 && lo < 5.4 * 86400e3 && isinf(hi),
		  "layout: the last bucket starts at about 5.3 days, no upper bound",
		  buf);
	check(pgss_ng_hist_bucket(0.0000079) == 0 && pgss_ng_hist_bucket(0) == 0 &&
		  pgss_ng_hist_bucket(-1) == 0 && pgss_ng_hist_bucket(NAN) == 0,
		  "layout: below 8 ns, negative and NaN in bucket 0", "");
	check(pgss_ng_hist_bucket(5.4 * 86400e3) == PGSS_NG_HIST_NBUCKETS - 1 &&
		  pgss_ng_hist_bucket(INFINITY) == PGSS_NG_HIST_NBUCKETS - 1 &&
		  pgss_ng_hist_bucket(1e300) == PGSS_NG_HIST_NBUCKETS - 1,
		  "layout: from 5.3 days (and infinity) in the last bucket", "");

	/* --- the bound, on random data spread over 8 ns .. 5.3 days */
	for (round = 0; round < 20; round++)
	{
		double		w;
		uint64		total;

		n = 1 + (int) (urand() * (round < 10 ? 100 : 200000));
		for (k = 0; k < n; k++)
		{
			/* a cluster (lognormal-ish) or a log-uniform spread */
			if (round % 2)
				v[k] = log_uniform(0.000008, 5.3 * 86400e3);
			else
				v[k] = 2.0 * exp((urand() + urand() + urand() - 1.5) * 3);
		}
		memset(&p, 0, sizeof(p));
		feed(&p, 1, v, n);
		qsort(v, n, sizeof(double), cmp_double);
		total = pgss_ng_hist_total(&p, 1);
		w = worst_error(&p, 1, v, n, 1);
		snprintf(buf, sizeof(buf), "n %d, total %llu, worst %.5f", n,
				 (unsigned long long) total, w);
		check(total == (uint64) n && w <= BOUND,
			  round % 2 ? "bound: log-uniform data over 8 ns .. 5.3 days, every quantile within 4.951%"
			  : "bound: clustered data, every quantile within 4.951%", buf);
	}

	/* --- the bound in both histograms of one pair at once */
	both_within_bound("bound: OLTP range, plan and exec 1 us .. 10 ms",
					  50000, 0.001, 10, 50000, 0.001, 10);
	both_within_bound("bound: sub-microsecond, plan and exec 100 ns .. 2 us",
					  20000, 0.0001, 0.002, 20000, 0.0001, 0.002);
	both_within_bound("bound: wide spreads, plan 11.5 us .. 10 s, exec 0.4 us .. 10 h",
					  100000, 0.0115, 10000, 100000, 0.0004, 36e6);
	both_within_bound("bound: widest spreads, plan and exec 8 ns .. 5.3 days",
					  100000, 0.000008, 5.3 * 86400e3,
					  100000, 0.000008, 5.3 * 86400e3);
	/* the case: execution times between 0.425 and 1.094 us */
	both_within_bound("bound: exec times all under 10 us (0.425 .. 1.094 us)",
					  0, 1, 1, 1000, 0.000425, 0.001094);

	/* --- the extremes: rank 1 and rank n are min and max, exactly */
	{
		double		vals[] = {0.000425, 0.0007, 0.001094};
		PgssNgHistDense d;

		memset(&p, 0, sizeof(p));
		memset(&d, 0, sizeof(d));
		for (k = 0; k < 3; k++)
			pgss_ng_hist_add(&d, vals[k]);
		pgss_ng_hist_merge(&p, 1, &d);
		check(pgss_ng_hist_quantile(&p, 1, 0.001, vals[0], vals[2]) == vals[0] &&
			  pgss_ng_hist_quantile(&p, 1, 1.0, vals[0], vals[2]) == vals[2] &&
			  pgss_ng_hist_quantile(&p, 1, 0.999, vals[0], vals[2]) == vals[2],
			  "extremes: the first call is min, the last one max, exactly", "");
		check(fabs(pgss_ng_hist_quantile(&p, 1, 0.5, vals[0], vals[2]) -
				   vals[1]) / vals[1] <= BOUND,
			  "extremes: the middle call within the bound", "");
	}

	/* --- times of 0 (a coarse clock) are reported as 0 */
	{
		PgssNgHistDense d;

		memset(&p, 0, sizeof(p));
		memset(&d, 0, sizeof(d));
		for (k = 0; k < 10; k++)
			pgss_ng_hist_add(&d, 0.0);
		pgss_ng_hist_add(&d, 4.0);
		pgss_ng_hist_merge(&p, 1, &d);
		check(pgss_ng_hist_quantile(&p, 1, 0.5, 0.0, 4.0) == 0.0 &&
			  pgss_ng_hist_quantile(&p, 1, 0.9, 0.0, 4.0) == 0.0 &&
			  pgss_ng_hist_quantile(&p, 1, 0.5, 1, 0) == 0.0,
			  "zero: times of 0 give quantiles of 0", "");
	}

	/* --- windows growing both ways, both histograms, exact counts */
	{
		static uint32 ref[2][PGSS_NG_HIST_NBUCKETS];
		PgssNgHistDense d;

		memset(ref, 0, sizeof(ref));
		memset(&p, 0, sizeof(p));
		good = true;
		for (round = 0; round < 4000 && good; round++)
		{
			int			which = urand() < 0.5;
			/* centred on 1 ms (exec) or 0.1 ms (plan), spreading out over
			 * every bucket */
			double		c = which ? 1.0 : 0.1;
			double		x = c * exp((urand() - 0.5) * round / 50.0);

			memset(&d, 0, sizeof(d));
			pgss_ng_hist_add(&d, x);
			pgss_ng_hist_merge(&p, which, &d);
			ref[which][pgss_ng_hist_bucket(x)]++;
			for (k = 0; k < PGSS_NG_HIST_NBUCKETS; k++)
				if (pgss_ng_hist_count(&p, 0, k) != ref[0][k] ||
					pgss_ng_hist_count(&p, 1, k) != ref[1][k])
				{
					snprintf(buf, sizeof(buf), "round %d bucket %d", round, k);
					good = false;
					break;
				}
		}
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
				 " (windows %d and %d buckets)", p.len[0], p.len[1]);
		check(good && pgss_ng_hist_valid(&p) &&
			  p.len[0] == PGSS_NG_HIST_NBUCKETS &&
			  p.len[1] == PGSS_NG_HIST_NBUCKETS,
			  "windows: counts exact while both windows widen both ways to every bucket",
			  buf);
	}

	/* --- counts outside a window (from a file) are never counted */
	{
		PgssNgHistPair src;
		PgssNgHistDense d;

		memset(&p, 0xAB, sizeof(p));
		p.lo[0] = 100;
		p.len[0] = 1;
		p.count[0][100] = 5;
		p.lo[1] = 0;
		p.len[1] = 0;
		memset(&d, 0, sizeof(d));
		pgss_ng_hist_add(&d, 1.0);
		pgss_ng_hist_add(&d, 1e-5);
		pgss_ng_hist_merge(&p, 0, &d);
		pgss_ng_hist_merge(&p, 1, &d);
		memset(&src, 0xCD, sizeof(src));
		src.lo[0] = 10;
		src.len[0] = 1;
		src.count[0][10] = 1;
		src.lo[1] = 0;
		src.len[1] = 0;
		pgss_ng_hist_merge_pair(&p, &src);
		check(pgss_ng_hist_total(&p, 0) == 8 &&
			  pgss_ng_hist_total(&p, 1) == 2 && pgss_ng_hist_valid(&p),
			  "garbage: counts outside the windows never join them", "");
	}

	/* --- saturation */
	{
		PgssNgHistDense d;

		memset(&p, 0, sizeof(p));
		memset(&d, 0, sizeof(d));
		pgss_ng_hist_add(&d, 1.0);
		d.count[pgss_ng_hist_bucket(1.0)] = PG_UINT32_MAX - 1;
		pgss_ng_hist_merge(&p, 1, &d);
		pgss_ng_hist_merge(&p, 1, &d);
		check(pgss_ng_hist_count(&p, 1, pgss_ng_hist_bucket(1.0)) ==
			  PG_UINT32_MAX, "saturation: a count stops at 2^32 - 1", "");
	}

	/*
	 * --- the reader's path: pgss_ng_hist_quantiles (several quantiles in
	 * one pass) on a pair copied by pgss_ng_hist_copy_used (only the used
	 * counts, over garbage) gives exactly pgss_ng_hist_quantile's values on
	 * the original, for sorted quantiles with repeats
	 */
	good = true;
	for (round = 0; round < 40 && good; round++)
	{
		PgssNgHistPair copy;
		double		qs[12];
		double		got[12];
		int			nq = 0;
		int			which;

		memset(&p, 0, sizeof(p));
		for (which = 0; which < 2; which++)
		{
			n = (int) (urand() * (round < 20 ? 20 : 5000));
			for (k = 0; k < n; k++)
				v[k] = (which ? 1.0 : 0.1) *
					exp((urand() - 0.5) * (round % 4 + 1) * 4);
			feed(&p, which, v, n);
		}
		qs[nq++] = 0.001 + urand() * 0.1;
		qs[nq] = qs[nq - 1];
		nq++;
		qs[nq++] = 0.5;
		qs[nq++] = 0.9;
		qs[nq++] = 0.95;
		qs[nq++] = 0.99;
		qs[nq++] = 0.999;
		qs[nq++] = 1.0;
		qs[nq++] = 1.0;
		memset(&copy, 0xAB, sizeof(copy));
		pgss_ng_hist_copy_used(&copy, &p);
		for (which = 0; which < 2 && good; which++)
		{
			/* min/max that cut the buckets, or (max < min) that do not */
			double		mn = urand() < 0.5 ? 0.05 : 1;
			double		mx = urand() < 0.5 ? 2.0 : 0;

			pgss_ng_hist_quantiles(&copy, which, qs, nq, mn, mx, got);
			for (k = 0; k < nq; k++)
			{
				double		want = pgss_ng_hist_quantile(&p, which, qs[k],
														 mn, mx);

				if (!(got[k] == want || (isnan(got[k]) && isnan(want))))
				{
					snprintf(buf, sizeof(buf),
							 "round %d, histogram %d, q %g: %g, not %g",
							 round, which, qs[k], got[k], want);
					good = false;
					break;
				}
			}
		}
	}
	check(good, "reader: one-pass quantiles of the used counts' copy equal "
		  "each quantile of the pair", good ? "" : buf);

	/* --- valid */
	memset(&p, 0, sizeof(p));
	check(pgss_ng_hist_valid(&p), "valid: an empty pair", "");
	p.lo[1] = 0;
	p.len[1] = PGSS_NG_HIST_NBUCKETS;
	p.lo[0] = 0;
	p.len[0] = PGSS_NG_HIST_NBUCKETS;
	check(pgss_ng_hist_valid(&p), "valid: both windows over every bucket", "");
	p.lo[1] = 150;
	p.len[1] = PGSS_NG_HIST_NBUCKETS - 149;
	check(!pgss_ng_hist_valid(&p), "valid: a window past the last bucket", "");
	p.lo[1] = 0;
	p.len[1] = 0;
	p.lo[0] = PGSS_NG_HIST_NBUCKETS;
	p.len[0] = 1;
	check(!pgss_ng_hist_valid(&p), "valid: a window starting past the last bucket", "");

	/* --- empty histogram */
	memset(&p, 0, sizeof(p));
	check(isnan(pgss_ng_hist_quantile(&p, 1, 0.5, 0, 0)),
		  "empty: the quantile is NaN", "");

	return failures ? 1 : 0;
}
