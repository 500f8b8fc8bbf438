/*-------------------------------------------------------------------------
 *
 * hist_unit.c
 *	  Unit test of src/hist.c, built and run by t/050_tracking_hist_unit.pl (not
 *	  part of the extension).  Prints one line per check, "ok <what>" or
 *	  "not ok <what>: <detail>".
 *
 * Checks: the bucket layout (ratio, edges, bucket 0 and the last one);
 * the relative-error bound of every quantile against the exact
 * nearest-rank quantile of random data merged in random chunks; exact
 * counts while windows grow in both directions in both histograms; the
 * fold of histogram 0 when both windows do not fit (totals kept, window
 * sizes, bound kept above the fold, histogram 1 untouched); saturation;
 * the reader's one-pass quantiles of a copy of the used slots;
 * pgss_ng_hist_valid().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "hist.h"

#undef printf
#undef snprintf
#undef qsort
#include <stdio.h>
#include <stdlib.h>

#define BOUND	0.04951			/* (g - 1) / (g + 1), g = 2^(1/7) */

static int	failures = 0;

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

int
main(void)
{
	static double v[200000];
	static double v2[200000];
	PgssNgHistPair p;
	char		buf[256];
	int			k;
	int			n;
	int			round;
	bool		good;
	double		lo;
	double		hi;

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
	check(lo == 0.01, "layout: bucket 1 starts at 10 us", "");
	pgss_ng_hist_bounds(PGSS_NG_HIST_NBUCKETS - 1, &lo, &hi);
	check(lo >= 3.6e6 && lo < 3.7e6 && isinf(hi),
		  "layout: the last bucket starts at about 1 h, no upper bound", "");
	check(pgss_ng_hist_bucket(0.0099) == 0 && pgss_ng_hist_bucket(0) == 0 &&
		  pgss_ng_hist_bucket(-1) == 0 && pgss_ng_hist_bucket(NAN) == 0,
		  "layout: below 10 us, negative and NaN in bucket 0", "");
	check(pgss_ng_hist_bucket(3.7e6) == 200 &&
		  pgss_ng_hist_bucket(INFINITY) == 200 &&
		  pgss_ng_hist_bucket(1e300) == 200,
		  "layout: from 1 h (and infinity) in bucket 200", "");

	/* --- the bound, on random data spread over 10 us .. 1 h */
	for (round = 0; round < 20; round++)
	{
		double		w;
		uint64		total;

		n = 1 + (int) (urand() * (round < 10 ? 100 : 200000));
		for (k = 0; k < n; k++)
		{
			/* a cluster (lognormal-ish) or a log-uniform spread */
			if (round % 2)
				v[k] = exp(log(0.01) + urand() * log(3.6e8));
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
			  round % 2 ? "bound: log-uniform data, every quantile within 4.951%"
			  : "bound: clustered data, every quantile within 4.951%", buf);
	}

	/* --- windows growing both ways, both histograms, exact counts */
	{
		uint32		ref[2][PGSS_NG_HIST_NBUCKETS];
		PgssNgHistDense d;

		memset(ref, 0, sizeof(ref));
		memset(&p, 0, sizeof(p));
		good = true;
		for (round = 0; round < 2000 && good; round++)
		{
			int			which = urand() < 0.5;
			/* centred on 1 ms (exec) or 0.1 ms (plan), spreading out (but
			 * not so far that histogram 0 must fold) */
			double		c = which ? 1.0 : 0.1;
			double		x = c * exp((urand() - 0.5) * round / 200.0);

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
		check(good && pgss_ng_hist_valid(&p) && p.len[0] > 30 &&
			  p.len[1] > 30 && p.len[0] + p.len[1] <= PGSS_NG_HIST_POOL,
			  "windows: counts exact while both windows widen both ways",
			  buf);
	}

	/* --- the fold: histogram 1 spans every bucket, histogram 0 a wide range */
	{
		double		w0;
		double		w1;
		int			fold_rank;

		n = 20000;
		for (k = 0; k < n; k++)
			v[k] = exp(log(0.005) + urand() * log(1e9));	/* 5 us .. 1.4 h */
		for (k = 0; k < n; k++)
			v2[k] = exp(log(0.02) + urand() * log(1e5));	/* 20 us .. 2 s */
		memset(&p, 0, sizeof(p));
		feed(&p, 0, v2, n);
		feed(&p, 1, v, n);
		qsort(v, n, sizeof(double), cmp_double);
		qsort(v2, n, sizeof(double), cmp_double);
		check(p.len[1] == PGSS_NG_HIST_NBUCKETS &&
			  p.len[0] == PGSS_NG_HIST_POOL - PGSS_NG_HIST_NBUCKETS,
			  "fold: histogram 1 whole, histogram 0 keeps what is left", "");
		check(pgss_ng_hist_total(&p, 0) == (uint64) n &&
			  pgss_ng_hist_total(&p, 1) == (uint64) n,
			  "fold: both totals exact", "");
		/* within 10 us .. 1 h the bound holds for histogram 1 */
		for (fold_rank = 0; fold_rank < n && v[fold_rank] < 0.01; fold_rank++)
			;
		w1 = 0;
		for (k = 0; k < 1000; k++)
		{
			double		q = urand();
			int64		rank = Max((int64) ceil(q * n), 1);
			double		truth = v[rank - 1];

			if (truth < 0.01 || truth >= 3.6e6)
				continue;
			w1 = Max(w1, fabs(pgss_ng_hist_quantile(&p, 1, q, v[0], v[n - 1]) -
							  truth) / truth);
		}
		snprintf(buf, sizeof(buf), "worst %.5f", w1);
		check(w1 <= BOUND, "fold: histogram 1 keeps the bound", buf);
		/* histogram 0: ranks above the folded buckets keep the bound */
		pgss_ng_hist_bounds(p.lo[0] + 1, &lo, &hi);
		for (fold_rank = 0; fold_rank < n && v2[fold_rank] < lo; fold_rank++)
			;
		w0 = worst_error(&p, 0, v2, n, fold_rank + 1);
		snprintf(buf, sizeof(buf), "worst %.5f above rank %d", w0, fold_rank);
		check(w0 <= BOUND && fold_rank > 0,
			  "fold: histogram 0 keeps the bound above the fold", buf);
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
	 * slots, over garbage) gives exactly pgss_ng_hist_quantile's values on
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
			/* min/max that clamp, or (max < min) that do not */
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
	check(good, "reader: one-pass quantiles of the used slots' copy equal "
		  "each quantile of the pair", good ? "" : buf);

	/* --- valid */
	memset(&p, 0, sizeof(p));
	check(pgss_ng_hist_valid(&p), "valid: an empty pair", "");
	p.lo[1] = 150;
	p.len[1] = 52;
	check(!pgss_ng_hist_valid(&p), "valid: a window past the last bucket", "");
	p.lo[1] = 0;
	p.len[1] = 201;
	p.len[0] = 54;
	check(!pgss_ng_hist_valid(&p), "valid: windows larger than the pool", "");

	/* --- empty histogram */
	memset(&p, 0, sizeof(p));
	check(isnan(pgss_ng_hist_quantile(&p, 1, 0.5, 0, 0)),
		  "empty: the quantile is NaN", "");

	return failures ? 1 : 0;
}
